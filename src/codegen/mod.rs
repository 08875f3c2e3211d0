//! Generating code from a plan: the C glue between the archive's entry point
//! and Rust (`glue`), mlf-build's own C (`support`) and the Rust module (`rust`).

pub(crate) mod glue;
pub(crate) mod rust;
pub(crate) mod support;
