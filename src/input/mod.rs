//! Reading an archive: its files (`archive`), the metadata of every MLF
//! version (`metadata`), a graph executor's JSON and weights (`graph`,
//! `params`), and what the generated C sources say (`sources`). Each reader
//! returns data and refuses what it cannot verify; none decides what to build.

pub(crate) mod archive;
pub(crate) mod graph;
pub(crate) mod loops;
pub(crate) mod metadata;
pub(crate) mod params;
pub(crate) mod sources;
