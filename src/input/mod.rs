//! Reading an archive: its files (`archive`), the metadata of every MLF
//! version (`metadata`), a graph executor's JSON and weights (`graph`,
//! `params`), what the generated C sources say (`sources`), and what a kernel
//! library the code calls defines (`kernel_library`); `loops` reads how far
//! the code's loops reach into a buffer, and `c_text` holds the C text
//! primitives they share; `user_path` finds the paths users give. Each reader
//! returns data and refuses what it cannot verify; none decides what to build.

pub(crate) mod archive;
pub(crate) mod c_text;
pub(crate) mod graph;
pub(crate) mod kernel_library;
pub(crate) mod loops;
pub(crate) mod memory_x;
pub(crate) mod metadata;
pub(crate) mod params;
pub(crate) mod sources;
pub(crate) mod user_path;
