// The crate's documentation is README.md, so its Rust snippets are doctests.
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
// README's build.rs snippets are whole build scripts, `fn main` included.
#![allow(clippy::needless_doctest_main)]

// The pipeline, one folder per stage: `input` reads the archive, `plan`
// decides what to build, `codegen` writes the C glue and the Rust,
// `toolchain` compiles and binds, `cargo` talks to Cargo and the output directory.
mod builder;
mod cargo;
mod codegen;
mod dtype;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod ident;
mod input;
mod plan;
#[cfg(test)]
mod test_support;
mod toolchain;

pub use builder::{Builder, GeneratedModule, Output};
pub use dtype::{DType, TypeCode};
pub use error::{Error, ErrorKind, Result};
pub use plan::fit::{memory_fit, FitPart, MemoryFit, RegionFit};
pub use plan::model::{MemoryNeeds, StackBound, StackFrame};
pub use plan::report::{inspect, inspect_with_cmsis_nn, Inspection, ModuleReport, Need, TensorData, SCHEMA};
pub use toolchain::measure::{Footprint, Sizes};
pub use toolchain::sections::Storage;
