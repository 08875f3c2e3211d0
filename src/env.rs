//! Every environment variable the crate reads goes through here, so Cargo
//! reruns the build script exactly when one of them changes.

use std::path::PathBuf;

use crate::error::{Error, ErrorKind, Result};

/// Reads `name`, telling Cargo to rerun the build script when it changes.
pub(crate) fn var(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Reads a variable Cargo always sets for build scripts.
pub(crate) fn cargo_var(name: &str) -> Result<String> {
    var(name).ok_or_else(|| {
        Error::new(ErrorKind::Config, format!("environment variable {name} is not set"))
            .help("call mlf_build::Builder from a build script (build.rs), or set OUT_DIR, TARGET and HOST yourself")
    })
}

pub(crate) fn out_dir() -> Result<PathBuf> {
    cargo_var("OUT_DIR").map(PathBuf::from)
}
