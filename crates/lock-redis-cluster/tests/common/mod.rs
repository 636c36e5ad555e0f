pub(crate) mod fake_node;
pub(crate) mod harness;
