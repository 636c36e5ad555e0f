//! # lock-redis-cluster
//!
//! Will hold the Redis Cluster transport for the lock scripts of `lock-redis`
//! and `lock-fair`: CRC16 slot routing with hash tags, `-MOVED`/`-ASK`
//! redirects, topology refresh, failover and sharded pub/sub. Nothing is
//! implemented yet; depend on `lock-redis` for a single Redis node.
#![deny(missing_docs)]
