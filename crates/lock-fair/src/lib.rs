//! # lock-fair
//!
//! Will hold the fair (FIFO) lock: Redisson-compatible queue and timeout
//! scripts over the Redis transports. Nothing is implemented yet.
#![deny(missing_docs)]
