//! Single-node Redis backend (being built).
#![deny(missing_docs)]
