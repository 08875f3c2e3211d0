//! Every environment variable the crate reads goes through here, so Cargo
//! reruns the build script exactly when one of them changes.

use crate::cargo::directive::Directives;

/// The process environment as one build reads it.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    pub directives: Directives,
}

impl Env {
    /// Reads `name`, telling Cargo to rerun the build script when it changes.
    pub fn var(&self, name: &str) -> Option<String> {
        // A name Cargo cannot track is not read at all, so no read goes untracked.
        self.directives.rerun_if_env_changed(name).ok()?;
        cargo_provided(name)
    }
}

/// Reads a variable Cargo sets for build scripts (`OUT_DIR`, `TARGET`, `HOST`,
/// `OPT_LEVEL`, `DEBUG`, `PROFILE`, `RUSTC`, `CARGO_PKG_NAME`): Cargo reruns
/// the script when they change by itself, and tracking them would rerun it needlessly.
pub(crate) fn cargo_provided(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Reads a variable that only keys answers kept on disk (`PATH`, what `cc`
/// reads besides the compiler variables): a change makes them stale without
/// rerunning the build script, so it is not tracked.
pub(crate) fn keying_only(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The directories `PATH` lists, where programs named without a path are
/// found: untracked for the reason of [`keying_only`], and read as the
/// operating system's bytes, which need not be UTF-8.
pub(crate) fn program_search_path() -> Vec<std::path::PathBuf> {
    std::env::var_os("PATH").map(|path| std::env::split_paths(&path).collect()).unwrap_or_default()
}
