//! Every `cargo:` line the crate prints goes through [`line`]: a value with a
//! line break or another control character could end the line and start a
//! directive of its own (`cargo:rustc-link-arg=...`), so such values are refused
//! (paths, names) or escaped (warnings) here and nowhere else.

use std::path::Path;

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

/// Where a build's `cargo:` lines go: to Cargo on standard output, or nowhere
/// (`Builder::cargo_metadata(false)`: the CLI, tests, a tool driving the Builder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Directives {
    pub print: bool,
}

impl Directives {
    /// `cargo:rerun-if-changed=<path>`.
    pub fn rerun_if_changed(self, path: &Path) -> Result<()> {
        self.emit("rerun-if-changed", path_text("rerun-if-changed", path)?)
    }

    /// `cargo:rerun-if-env-changed=<name>`.
    pub fn rerun_if_env_changed(self, name: &str) -> Result<()> {
        self.emit("rerun-if-env-changed", name)
    }

    /// `cargo:rustc-link-search=native=<dir>` then `cargo:rustc-link-lib=static=<name>`.
    pub fn link_static(self, dir: &Path, name: &str) -> Result<()> {
        self.emit("rustc-link-search", &format!("native={}", path_text("rustc-link-search", dir)?))?;
        if name.is_empty() || !name.bytes().all(|b| ident::is_identifier_byte(b) || b == b'-' || b == b'.') {
            return Err(Error::new(ErrorKind::Config, format!("`{}` is not a library name Cargo can link", name.escape_debug())));
        }
        self.emit("rustc-link-lib", &format!("static={name}"))
    }

    /// `cargo:warning=mlf-build: <text>`, control characters written as escapes.
    pub fn warning(self, text: &str) {
        let escaped = crate::error::printable(text);
        // Cannot fail: the escaped text has no control characters left.
        let _ = self.emit("warning", &format!("mlf-build: {escaped}"));
    }

    /// Checks the line even when it is not printed, so a value is refused the same way either way.
    fn emit(self, key: &str, value: &str) -> Result<()> {
        let line = line(key, value)?;
        if self.print {
            println!("{line}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_never_starts_a_directive() {
        let quiet = Directives { print: false };
        let error = quiet.rerun_if_changed(Path::new("model.tar\ncargo:rustc-link-arg=-o/tmp/x")).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.to_string().contains("model.tar\\ncargo:rustc-link-arg"), "{error}");
        assert!(quiet.rerun_if_env_changed("A\rB").is_err());
        assert!(quiet.link_static(Path::new("/lib"), "a\nb").is_err());
    }
}
