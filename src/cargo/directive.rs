//! Every `cargo:` line the crate prints goes through [`line`]: a value with a
//! line break or another control character could end the line and start a
//! directive of its own (`cargo:rustc-link-arg=...`), so such values are refused
//! (paths, names) or escaped (warnings) here and nowhere else.
//!
//! The `rerun-if-*` and link lines are held until the build succeeds, so a
//! failing build script's output is the error alone. Cargo runs a build
//! script that failed again on the next build whatever changed, so nothing
//! is lost by not printing them then.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Error, ErrorKind, Result};
use crate::ident;

/// `cargo:<key>=<value>`, refusing a value Cargo would read as more than one line.
fn line(key: &str, value: &str) -> Result<String> {
    if let Some(bad) = value.chars().find(|c| c.is_control()) {
        return Err(Error::new(
            ErrorKind::Config,
            format!("`{}` contains the control character {bad:?} and cannot be passed to Cargo in `cargo:{key}`", value.escape_debug()),
        )
        .help("rename the file or directory so its path has no line breaks or control characters"));
    }
    Ok(format!("cargo:{key}={value}"))
}

fn path_text<'a>(key: &str, path: &'a Path) -> Result<&'a str> {
    path.to_str().ok_or_else(|| {
        Error::new(ErrorKind::Config, format!("`{}` is not UTF-8 and cannot be passed to Cargo in `cargo:{key}`", path.display()))
            .help("use a path made of UTF-8 characters")
    })
}

/// Where a build's `cargo:` lines go: to Cargo on standard output once the
/// build succeeded ([`Directives::flush`]), or nowhere
/// (`Builder::cargo_metadata(false)`: the CLI, tests, a tool driving the Builder).
#[derive(Debug, Clone)]
pub(crate) struct Directives {
    pub print: bool,
    /// The lines held for [`Directives::flush`], in order; shared by every part of one build.
    held: Arc<Mutex<Vec<String>>>,
}

impl Directives {
    pub fn new(print: bool) -> Directives {
        Directives { print, held: Arc::default() }
    }

    /// `cargo:rerun-if-changed=<path>`.
    pub fn rerun_if_changed(&self, path: &Path) -> Result<()> {
        self.hold("rerun-if-changed", path_text("rerun-if-changed", path)?)
    }

    /// `cargo:rerun-if-env-changed=<name>`.
    pub fn rerun_if_env_changed(&self, name: &str) -> Result<()> {
        self.hold("rerun-if-env-changed", name)
    }

    /// `cargo:rustc-link-search=native=<dir>` then `cargo:rustc-link-lib=static=<name>`.
    pub fn link_static(&self, dir: &Path, name: &str) -> Result<()> {
        self.hold("rustc-link-search", &format!("native={}", path_text("rustc-link-search", dir)?))?;
        if name.is_empty() || !name.bytes().all(|b| ident::is_identifier_byte(b) || b == b'-' || b == b'.') {
            return Err(Error::new(ErrorKind::Config, format!("`{}` is not a library name Cargo can link", name.escape_debug())));
        }
        self.hold("rustc-link-lib", &format!("static={name}"))
    }

    /// `cargo:rustc-link-search=native=<dir>` then
    /// `cargo:rustc-link-lib=static:+whole-archive=<name>`: every object of
    /// the library links, whether or not a symbol pulls it.
    pub fn link_static_whole(&self, dir: &Path, name: &str) -> Result<()> {
        self.hold("rustc-link-search", &format!("native={}", path_text("rustc-link-search", dir)?))?;
        if name.is_empty() || !name.bytes().all(|b| ident::is_identifier_byte(b) || b == b'-' || b == b'.') {
            return Err(Error::new(ErrorKind::Config, format!("`{}` is not a library name Cargo can link", name.escape_debug())));
        }
        self.hold("rustc-link-lib", &format!("static:+whole-archive={name}"))
    }

    /// `cargo:warning=mlf-build: <text>`, control characters written as
    /// escapes; printed at once, as it may explain a failure that follows.
    pub fn warning(&self, text: &str) {
        let escaped = crate::error::printable(text);
        // Cannot fail: the escaped text has no control characters left.
        if let Ok(line) = line("warning", &format!("mlf-build: {escaped}")) {
            if self.print {
                println!("{line}");
            }
        }
    }

    /// Prints the held lines, once the build succeeded. A `rerun-if` line an
    /// earlier build of this process printed is not printed again.
    pub fn flush(&self) {
        static PRINTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(PoisonError::into_inner));
        let mut printed = PRINTED.lock().unwrap_or_else(PoisonError::into_inner);
        for line in held {
            // Link lines keep their order and repeats: the linker reads them in turn.
            if !line.starts_with("cargo:rerun-if-") || printed.insert(line.clone()) {
                println!("{line}");
            }
        }
    }

    /// Checks the line even when it is not printed, so a value is refused the
    /// same way either way; a `rerun-if` line already held is not held twice.
    fn hold(&self, key: &str, value: &str) -> Result<()> {
        let line = line(key, value)?;
        if self.print {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            if !(key.starts_with("rerun-if-") && held.contains(&line)) {
                held.push(line);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_never_starts_a_directive() {
        let quiet = Directives::new(false);
        let error = quiet.rerun_if_changed(Path::new("model.tar\ncargo:rustc-link-arg=-o/tmp/x")).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.to_string().contains("model.tar\\ncargo:rustc-link-arg"), "{error}");
        assert!(quiet.rerun_if_env_changed("A\rB").is_err());
        assert!(quiet.link_static(Path::new("/lib"), "a\nb").is_err());
    }

    #[test]
    fn lines_are_held_in_order_and_a_rerun_line_once() {
        let directives = Directives::new(true);
        directives.rerun_if_env_changed("CC").unwrap();
        directives.link_static(Path::new("/lib"), "model").unwrap();
        directives.rerun_if_env_changed("CC").unwrap();
        directives.link_static(Path::new("/lib"), "model").unwrap();
        let held = directives.held.lock().unwrap().clone();
        let link = ["cargo:rustc-link-search=native=/lib", "cargo:rustc-link-lib=static=model"];
        assert_eq!(held, [&["cargo:rerun-if-env-changed=CC"][..], &link, &link].concat());
        // Nothing is held when nothing is to be printed.
        let quiet = Directives::new(false);
        quiet.rerun_if_env_changed("CC").unwrap();
        assert!(quiet.held.lock().unwrap().is_empty());
    }
}
