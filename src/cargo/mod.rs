//! Talking to Cargo and the output directory: `cargo:` directives
//! (`directive`), the environment (`env`), rebuild keys (`cache`), the data
//! cache files hold (`record`) and files written only when their bytes change
//! (`write`).

pub(crate) mod cache;
pub(crate) mod directive;
pub(crate) mod env;
pub(crate) mod record;
pub(crate) mod write;
