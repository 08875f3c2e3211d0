//! Reading an archive: its files (`archive`), the metadata of every MLF
//! version (`metadata`), a graph executor's JSON and weights (`graph`,
//! `params`), what the generated C sources say (`sources`), and what a kernel
//! library the code calls defines (`kernel_library`); `loops` reads how far
//! the code's loops reach into a buffer, and `c` is the C front end they
//! share (its lexer and text primitives); `user_path` finds the paths users give. Each reader
//! returns data and refuses what it cannot verify; none decides what to build.

pub(crate) mod archive;
pub(crate) mod c;
pub(crate) mod code;
#[cfg(test)]
mod facts_golden;
pub(crate) mod graph;
pub(crate) mod kernel_library;
pub(crate) mod loops;
pub(crate) mod memory_x;
pub(crate) mod metadata;
pub(crate) mod params;
pub(crate) mod sources;
pub(crate) mod user_path;
