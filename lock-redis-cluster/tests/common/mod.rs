#![allow(dead_code)]
pub(crate) mod cluster;
pub(crate) mod fake_node;
