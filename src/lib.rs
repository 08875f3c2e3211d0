//! Builds an Apache TVM **Model Library Format** archive (the `.tar` that
//! `tvmc compile --output-format mlf` writes) into part of your Rust program
//! or firmware, from `build.rs`: mlf-build unpacks the archive safely,
//! compiles its C with `cc`, binds it with `bindgen` and writes a `no_std`
//! Rust module with typed buffers, the memory map as constants, static
//! workspace and a safe `run`, and no heap.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), mlf_build::Error> {
//!     mlf_build::Builder::new("model.tar").build()?;
//!     Ok(())
//! }
//! ```
//!
//! ```ignore
//! // src/main.rs
//! mod model {
//!     include!(concat!(env!("OUT_DIR"), "/mlf/default.rs"));
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let input = std::fs::read("input.bin")?; // the first input's raw bytes
//!     let mut inputs = model::Inputs::zeroed();
//!     let buffer = inputs.bytes_mut(0).filter(|buffer| buffer.len() == input.len()).ok_or("not the input's size")?;
//!     buffer.copy_from_slice(&input);
//!     let mut outputs = model::Outputs::zeroed();
//!     model::run(&inputs, &mut outputs)?;
//!     println!("{:?}", outputs.bytes(0));
//!     Ok(())
//! }
//! ```
//!
//! [`Builder`] holds the options (target and core, CMSIS-NN, `memory.x`,
//! linker sections, profiling, renaming); [`inspect`] reads an archive
//! without compiling it. Everything else is in the book:
//! [Using it](https://github.com/mlf-build/mlf-build/blob/main/docs/src/using-it.md),
//! [firmware quickstart](https://github.com/mlf-build/mlf-build/blob/main/docs/src/firmware-quickstart.md),
//! [what archives work](https://github.com/mlf-build/mlf-build/blob/main/docs/src/archives.md),
//! [the memory contract and stack](https://github.com/mlf-build/mlf-build/blob/main/docs/src/memory.md),
//! [errors](https://github.com/mlf-build/mlf-build/blob/main/docs/src/errors.md),
//! [untrusted archives](https://github.com/mlf-build/mlf-build/blob/main/docs/src/untrusted.md) and
//! [the rest](https://github.com/mlf-build/mlf-build/blob/main/docs/src/SUMMARY.md).
#![warn(missing_docs)]
// The build.rs snippets (here and in the book) are whole build scripts, `fn main` included.
#![allow(clippy::needless_doctest_main)]

// The pipeline, one folder per stage: `input` reads the archive, `own_code`
// holds mlf-build's own C, `plan` decides what to build, `codegen` generates
// the C glue and the Rust, `toolchain` compiles and binds, `cargo` talks to
// Cargo and the output directory, `builder` runs them and writes the files.
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
pub mod json;
mod objects;
mod own_code;
mod plan;
mod sha256;
pub mod slot;
#[cfg(test)]
mod test_support;
mod toolchain;

pub use builder::{Builder, GeneratedModule, Output};
pub use dtype::{DType, TypeCode};
pub use error::{Error, ErrorKind, Result};
pub use objects::sections::Storage;
pub use objects::sizes::{Footprint, Sizes};
pub use objects::stack::{StackBound, StackFrame};
pub use plan::fit::{memory_fit, FitPart, MemoryFit, RegionFit};
pub use plan::model::MemoryNeeds;
pub use plan::report::{
    inspect, inspect_arena_group, inspect_with_cmsis_nn, ArenaGroupReport, GroupMember, Inspection, ModuleReport, Need, TensorData, SCHEMA,
};

/// README.md and the book's chapters, seen only when doctests are collected:
/// their Rust snippets compile (or run) with `cargo test`.
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../README.md")]
    struct FrontPage;
    #[doc = include_str!("../docs/src/using-it.md")]
    struct UsingIt;
    #[doc = include_str!("../docs/src/archives.md")]
    struct Archives;
    #[doc = include_str!("../docs/src/inspect.md")]
    struct Inspect;
    #[doc = include_str!("../docs/src/firmware.md")]
    struct Firmware;
    #[doc = include_str!("../docs/src/memory.md")]
    struct Memory;
    #[doc = include_str!("../docs/src/profiling.md")]
    struct Profiling;
    #[doc = include_str!("../docs/src/stepping.md")]
    struct Stepping;
    #[doc = include_str!("../docs/src/arena-groups.md")]
    struct ArenaGroups;
    #[doc = include_str!("../docs/src/slots.md")]
    struct Slots;
    #[doc = include_str!("../docs/src/cmsis-nn.md")]
    struct CmsisNn;
    #[doc = include_str!("../docs/src/crates.md")]
    struct Crates;
    #[doc = include_str!("../docs/src/rebuilds.md")]
    struct Rebuilds;
    #[doc = include_str!("../docs/src/errors.md")]
    struct Errors;
    #[doc = include_str!("../docs/src/untrusted.md")]
    struct Untrusted;
    #[doc = include_str!("../docs/src/performance.md")]
    struct Performance;
    #[doc = include_str!("../docs/src/internals.md")]
    struct Internals;
}
