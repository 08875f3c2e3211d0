//! The one rule for names an archive brings (module, tensor, pool and function
//! names), before any of them reaches generated C, generated Rust, a file name
//! or a message. Names used as C symbols or members are [`CIdent`]s, which only
//! the rule constructs, so generated code can only interpolate checked names;
//! tensor names, which only appear in docs and string literals, must be
//! printable and short ([`check_text`]) and become Rust names through
//! [`RustIdent::snake`]. Text from the archive that appears in comments goes
//! through [`c_comment`] or [`rust_doc`].

use std::fmt;

use crate::error::{printable, Error, ErrorKind, Result};

/// Longest name accepted, in bytes; TVM's own names are far shorter.
pub(crate) const MAX_NAME_BYTES: usize = 255;

/// The C identifier rule: an ASCII letter or `_`, then letters, digits and
/// `_`, at most [`MAX_NAME_BYTES`]. Such a name is also a Rust identifier
/// (raw when it is a keyword).
pub(crate) fn is_c_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= MAX_NAME_BYTES
        && bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// What the rule says about a name it refuses, for messages.
pub(crate) const C_IDENTIFIER_RULE: &str = "letters, digits and `_`, not starting with a digit";

/// A name from the archive (or the user) checked by [`is_c_identifier`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct CIdent(String);

impl CIdent {
    /// `name` as an identifier, or an error naming `what` it is and why it is refused.
    pub fn new(what: &str, name: &str) -> Result<CIdent> {
        if is_c_identifier(name) {
            return Ok(CIdent(name.to_string()));
        }
        let why = if name.len() > MAX_NAME_BYTES {
            format!("is longer than {MAX_NAME_BYTES} bytes")
        } else {
            format!("is not a C identifier ({C_IDENTIFIER_RULE})")
        };
        Err(refuse(what, name, &why))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for CIdent {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CIdent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Lets `format_ident!("mlf_{}_invoke", name)` take a checked name.
impl quote::IdentFragment for CIdent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<&str> for CIdent {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<CIdent> for String {
    fn eq(&self, other: &CIdent) -> bool {
        *self == other.0
    }
}

fn refuse(what: &str, name: &str, rule: &str) -> Error {
    let shown: String = printable(name).chars().take(MAX_NAME_BYTES).collect();
    Error::new(ErrorKind::Metadata, format!("{what} `{shown}` {rule}"))
        .help("mlf-build builds only names made of letters, digits and `_`, as TVM writes them: other names could inject code into the generated Rust and C, so this archive cannot be built as it is")
}

/// Checks a name that only appears as text (tensor names): short and without control characters.
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

/// Rust's reserved words that `r#` cannot escape.
const UNRAWABLE: &[&str] = &["self", "Self", "super", "crate", "_"];
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false", "fn", "for", "gen", "if", "impl", "in",
    "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try", "typeof", "unsized", "virtual",
    "yield",
];

/// A snake_case Rust identifier, raw when it is a keyword. Made only by
/// [`RustIdent::snake`], whose output is an identifier whatever the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RustIdent {
    name: String,
    raw: bool,
}

impl RustIdent {
    /// The snake_case identifier for a tensor, pool, module or function name
    /// (`PartitionedCall_0` → `partitioned_call_0`, `input:0` → `input_0`).
    pub fn snake(text: &str) -> RustIdent {
        let mut snake = String::new();
        let mut previous_lower = false;
        for c in text.chars() {
            if c.is_ascii_uppercase() {
                if previous_lower {
                    snake.push('_');
                }
                snake.push(c.to_ascii_lowercase());
                previous_lower = false;
            } else if c.is_ascii_alphanumeric() {
                snake.push(c);
                previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            } else {
                snake.push('_');
                previous_lower = false;
            }
        }
        if snake.is_empty() || snake.starts_with(|c: char| c.is_ascii_digit()) {
            snake.insert_str(0, "t_");
        }
        if UNRAWABLE.contains(&snake.as_str()) {
            snake.push('_');
        }
        let raw = KEYWORDS.contains(&snake.as_str());
        RustIdent { name: snake, raw }
    }

    /// Distinct identifiers for a list of names, in order (a clash gets its index appended).
    pub fn unique<'n>(texts: impl IntoIterator<Item = &'n str>) -> Vec<RustIdent> {
        let mut seen: Vec<RustIdent> = Vec::new();
        for (index, text) in texts.into_iter().enumerate() {
            let mut ident = RustIdent::snake(text);
            if seen.contains(&ident) {
                ident = RustIdent { name: format!("{}_{index}", ident.name), raw: false };
            }
            seen.push(ident);
        }
        seen
    }

    /// The name without `r#`, as docs show it.
    pub fn bare(&self) -> &str {
        &self.name
    }

    /// `op_<name>` when the name is one of `reserved`.
    pub fn avoiding(self, reserved: &[&str]) -> RustIdent {
        if reserved.contains(&self.name.as_str()) {
            RustIdent { name: format!("op_{}", self.name), raw: false }
        } else {
            self
        }
    }
}

impl quote::ToTokens for RustIdent {
    fn to_tokens(&self, tokens: &mut proc_macro2::TokenStream) {
        let span = proc_macro2::Span::call_site();
        let ident = if self.raw { proc_macro2::Ident::new_raw(&self.name, span) } else { proc_macro2::Ident::new(&self.name, span) };
        tokens.extend([proc_macro2::TokenTree::Ident(ident)]);
    }
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    use super::*;

    fn shown(ident: &RustIdent) -> String {
        ident.to_token_stream().to_string()
    }

    #[test]
    fn comments_cannot_be_closed_or_broken() {
        assert_eq!(c_comment("a*/ b\nc"), "a* / b\\nc");
        assert_eq!(rust_doc("x\n#[no_mangle]"), "x\\n#[no_mangle]");
    }

    #[test]
    fn c_identifiers_follow_one_rule() {
        assert!(is_c_identifier("_a1") && !is_c_identifier("1a") && !is_c_identifier("a-b") && !is_c_identifier(""));
        assert!(is_c_identifier(&"a".repeat(MAX_NAME_BYTES)) && !is_c_identifier(&"a".repeat(MAX_NAME_BYTES + 1)));
        assert!(!is_c_identifier("é"));
        let error = CIdent::new("module name", "1x").unwrap_err();
        assert!(error.to_string().contains("module name `1x` is not a C identifier"), "{error}");
        let error = CIdent::new("pool name", &"p".repeat(300)).unwrap_err();
        assert!(error.to_string().contains("is longer than 255 bytes"), "{error}");
        assert_eq!(CIdent::new("module name", "kws_2").unwrap().as_str(), "kws_2");
    }

    #[test]
    fn snake_idents_are_valid_rust() {
        assert_eq!(shown(&RustIdent::snake("PartitionedCall_0")), "partitioned_call_0");
        assert_eq!(shown(&RustIdent::snake("serving_default_input_1_0")), "serving_default_input_1_0");
        assert_eq!(shown(&RustIdent::snake("Identity")), "identity");
        assert_eq!(shown(&RustIdent::snake("input:0")), "input_0");
        assert_eq!(shown(&RustIdent::snake("type")), "r#type");
        assert_eq!(RustIdent::snake("type").bare(), "type");
        assert_eq!(shown(&RustIdent::snake("self")), "self_");
        assert_eq!(shown(&RustIdent::snake("0abc")), "t_0abc");
        assert_eq!(shown(&RustIdent::snake("")), "t_");
        let unique: Vec<String> = RustIdent::unique(["a_0", "a:0", "type", "type"]).iter().map(shown).collect();
        assert_eq!(unique, ["a_0", "a_0_1", "r#type", "type_3"]);
        assert_eq!(shown(&RustIdent::snake("run").avoiding(&["run"])), "op_run");
    }
}
