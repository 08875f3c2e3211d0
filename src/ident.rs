//! The one rule for names an archive brings (module, tensor, pool and function
//! names), before any of them reaches generated C, generated Rust, a file name
//! or a message; `plan::names` applies it to a whole plan. Names used as C
//! symbols or members must be C identifiers; tensor names, which only appear in
//! docs and string literals, must be printable and short. Text from the archive
//! that appears in comments goes through [`c_comment`] or [`rust_doc`].

use crate::error::{printable, Error, ErrorKind, Result};

/// Longest name accepted, in bytes; TVM's own names are far shorter.
pub(crate) const MAX_NAME_BYTES: usize = 255;

/// Whether `name` is a C identifier (also a valid Rust one once prefixed).
pub(crate) fn is_c_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn refuse(what: &str, name: &str, rule: &str) -> Error {
    let shown: String = printable(name).chars().take(MAX_NAME_BYTES).collect();
    Error::new(ErrorKind::Metadata, format!("{what} `{shown}` {rule}"))
        .help("re-export the model with names made of letters, digits and `_` (TVM's own naming); mlf-build does not build archives whose names could inject code")
}

pub(crate) fn check_identifier(what: &str, name: &str) -> Result<()> {
    if name.len() > MAX_NAME_BYTES {
        return Err(refuse(what, name, &format!("is longer than {MAX_NAME_BYTES} bytes")));
    }
    if !is_c_identifier(name) {
        return Err(refuse(what, name, "is not a C identifier (letters, digits and `_`, not starting with a digit)"));
    }
    Ok(())
}

pub(crate) fn check_text(what: &str, name: &str) -> Result<()> {
    if name.len() > MAX_NAME_BYTES {
        return Err(refuse(what, name, &format!("is longer than {MAX_NAME_BYTES} bytes")));
    }
    if name.chars().any(char::is_control) {
        return Err(refuse(what, name, "contains a control character (such as a line break)"));
    }
    Ok(())
}

/// Archive text inside a C block comment: control characters escaped, `*/` broken up.
pub(crate) fn c_comment(text: &str) -> String {
    printable(text).replace("*/", "* /")
}

/// Archive text inside a `///` line: control characters escaped, so it stays one line.
pub(crate) fn rust_doc(text: &str) -> String {
    printable(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_cannot_be_closed_or_broken() {
        assert_eq!(c_comment("a*/ b\nc"), "a* / b\\nc");
        assert_eq!(rust_doc("x\n#[no_mangle]"), "x\\n#[no_mangle]");
        assert!(is_c_identifier("_a1") && !is_c_identifier("1a") && !is_c_identifier("a-b") && !is_c_identifier(""));
    }
}
