//! Every integration test of this crate, in one binary: each `tests/*.rs`
//! file is a module here (`autotests = false` in Cargo.toml). Each binary
//! links the whole dependency graph, and one per file was most of the
//! suite's build time on 2-core CI machines; in one binary the slow tests
//! also run side by side instead of one file after another.
//!
//! Adding a test file `tests/foo.rs`: add `mod foo;` below (in name order)
//! and, in the file, `use crate::common;` instead of `mod common;`. Run it
//! alone with `cargo test -p lock-testkit --test integration foo::`.
//! `every_test_file_is_a_module` fails for a file neither listed here nor a
//! `[[test]]` target of Cargo.toml (cargo would not build it at all).

mod cancelled_waits;
mod client_records;
#[cfg(feature = "fixtures")]
mod cluster_fixture;
mod conformance;
mod crashed_clients;
mod fault_fuzz;
mod live_waits;
#[cfg(feature = "fixtures")]
mod lua_vs_redis;
mod memory_latch_faults;
mod memory_redlock_faults;
mod memory_retries_and_outages;
mod memory_transport;
mod observability;
mod outages;
mod own_attempts;
#[cfg(feature = "fixtures")]
mod proxy_fixture;
#[cfg(feature = "fixtures")]
mod redis_fixture;
mod redisson_semaphore_scenarios;
mod redlock_contention;
mod renew_batches;
mod run_locked;
mod self_deadlock;
mod semaphore_faults;
#[cfg(feature = "fixtures")]
mod sentinel_fixture;
mod shutdown;
mod store_clock;
mod wait_bounds;
mod write_refusals;

/// Every `tests/*.rs` file is listed above (or is its own `[[test]]`
/// target): cargo builds no file it is not told about.
#[cfg(feature = "fixtures")]
#[test]
fn every_test_file_is_a_module() {
    lock_testkit::fixtures::assert_test_files_mounted(env!("CARGO_MANIFEST_DIR"));
}
