//! Every environment variable the crate reads goes through here, so Cargo
//! reruns the build script exactly when one of them changes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::error::{Error, ErrorKind, Result};

/// Reads `name`, telling Cargo to rerun the build script when it changes
/// (once per name and build script run).
pub(crate) fn var(name: &str) -> Option<String> {
    static TRACKED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let mut tracked = TRACKED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !tracked.contains(name) {
        // A name Cargo cannot track is not read at all, so no read goes untracked.
        crate::cargo::directive::rerun_if_env_changed(name).ok()?;
        tracked.insert(name.to_string());
    }
    cargo_provided(name)
}

/// Reads a variable Cargo sets for build scripts (`OUT_DIR`, `TARGET`, `HOST`,
/// `OPT_LEVEL`, `DEBUG`, `PROFILE`, `RUSTC`): Cargo reruns the script when
/// they change by itself, and tracking them would rerun it needlessly.
pub(crate) fn cargo_provided(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Reads a variable Cargo always sets for build scripts.
pub(crate) fn cargo_var(name: &str) -> Result<String> {
    cargo_provided(name).ok_or_else(|| {
        Error::new(ErrorKind::Config, format!("environment variable {name} is not set"))
            .help("call mlf_build::Builder from a build script (build.rs), or set OUT_DIR, TARGET and HOST yourself")
    })
}

pub(crate) fn out_dir() -> Result<PathBuf> {
    cargo_var("OUT_DIR").map(PathBuf::from)
}
