//! Every integration test of this crate, in one binary: each `tests/*.rs`
//! file is a module here (`autotests = false` in Cargo.toml). Each binary
//! links the whole dependency graph, and one per file was most of the
//! suite's build time on 2-core CI machines; in one binary the slow tests
//! also run side by side instead of one file after another.
//!
//! Adding a test file `tests/foo.rs`: add `mod foo;` below (in name order)
//! and, in the file, `use crate::common;` instead of `mod common;`. Run it
//! alone with `cargo test -p lock-redis --test integration foo::`.
//! `every_test_file_is_a_module` fails for a file neither listed here nor a
//! `[[test]]` target of Cargo.toml (cargo would not build it at all).
//!
//! A few files that ran alone and time things stay binaries of their own:
//! the `[[test]]` targets at the end of Cargo.toml.

mod acl;
mod commands;
mod common;
mod config_files;
mod config_from_redis;
mod conformance;
mod connections;
mod credentials;
mod faults;
mod late_requests;
mod lazy_connect;
mod lean_interop;
mod out_of_memory;
mod outage;
mod partition;
mod polling_without_subscribe;
mod pubsub;
mod redisson_latch;
mod redisson_layout;
mod redisson_non_reentrant;
mod redisson_rwlock;
mod redisson_semaphore;
mod redlock_faults;
mod registry;
mod replica_sync;
mod replica_sync_default;
mod scripts;
mod sentinel;
mod server_restarts_and_pubsub_loss;
mod shutdown;
mod slot_checking_proxy;
mod stuck_requests;
mod tls;
mod write_refusals;

/// Every `tests/*.rs` file is listed above (or is its own `[[test]]`
/// target): cargo builds no file it is not told about.
#[test]
fn every_test_file_is_a_module() {
    lock_testkit::fixtures::assert_test_files_mounted(env!("CARGO_MANIFEST_DIR"));
}
