//! The heap counts of feature `count-alloc`: bytes allocated and not freed,
//! and their peak, so W4 can tell what a renewal tick allocates per lock
//! from what the allocator keeps (RSS alone mixes both, and is noisy).
//! `peak_alloc` counts; it reallocates by copying, so RSS figures of a
//! build with the feature are not comparable with one without.

use peak_alloc::PeakAlloc;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// Bytes allocated and not yet freed.
pub(crate) fn live() -> usize {
    ALLOC.current_usage()
}

/// Starts a new peak at the current live bytes; returns them.
pub(crate) fn reset_peak() -> usize {
    ALLOC.reset_peak_usage();
    live()
}

/// The most bytes live at once since [`reset_peak`].
pub(crate) fn peak() -> usize {
    ALLOC.peak_usage()
}
