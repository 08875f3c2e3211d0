//! Every `cargo:` line the crate prints goes through [`print`]: a value with a
//! line break or another control character could end the line and start a
//! directive of its own (`cargo:rustc-link-arg=...`), so such values are refused
//! (paths, names) or escaped (warnings) here and nowhere else.

use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// Prints `cargo:<key>=<value>`, refusing a value Cargo would read as more than one line.
fn print(key: &str, value: &str) -> Result<()> {
    if let Some(bad) = value.chars().find(|c| c.is_control()) {
        return Err(Error::new(
            ErrorKind::Config,
            format!("`{}` contains the control character {bad:?} and cannot be passed to Cargo in `cargo:{key}`", value.escape_debug()),
        )
        .help("rename the file or directory so its path has no line breaks or control characters"));
    }
    println!("cargo:{key}={value}");
    Ok(())
}

fn path_text<'a>(key: &str, path: &'a Path) -> Result<&'a str> {
    path.to_str().ok_or_else(|| {
        Error::new(ErrorKind::Config, format!("`{}` is not UTF-8 and cannot be passed to Cargo in `cargo:{key}`", path.display()))
            .help("use a path made of UTF-8 characters")
    })
}

/// `cargo:rerun-if-changed=<path>`.
pub(crate) fn rerun_if_changed(path: &Path) -> Result<()> {
    print("rerun-if-changed", path_text("rerun-if-changed", path)?)
}

/// `cargo:rerun-if-env-changed=<name>`.
pub(crate) fn rerun_if_env_changed(name: &str) -> Result<()> {
    print("rerun-if-env-changed", name)
}

/// `cargo:rustc-link-search=native=<dir>` then `cargo:rustc-link-lib=static=<name>`.
pub(crate) fn link_static(dir: &Path, name: &str) -> Result<()> {
    print("rustc-link-search", &format!("native={}", path_text("rustc-link-search", dir)?))?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.') {
        return Err(Error::new(ErrorKind::Config, format!("`{}` is not a library name Cargo can link", name.escape_debug())));
    }
    print("rustc-link-lib", &format!("static={name}"))
}

/// `cargo:warning=mlf-build: <text>`, control characters written as escapes.
pub(crate) fn warning(text: &str) {
    let escaped = crate::error::printable(text);
    // Cannot fail: the escaped text has no control characters left.
    let _ = print("warning", &format!("mlf-build: {escaped}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_never_starts_a_directive() {
        let error = rerun_if_changed(Path::new("model.tar\ncargo:rustc-link-arg=-o/tmp/x")).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.to_string().contains("model.tar\\ncargo:rustc-link-arg"), "{error}");
        assert!(rerun_if_env_changed("A\rB").is_err());
        assert!(link_static(Path::new("/lib"), "a\nb").is_err());
    }
}
