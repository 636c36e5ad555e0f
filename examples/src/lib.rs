//! Runnable examples. The README's examples are compiled here as doctests.
#![doc = include_str!("../../README.md")]
