//! In-memory backend, conformance suite and fixtures (being built).
#![deny(missing_docs)]

#[cfg(feature = "fixtures")]
pub mod fixtures;
