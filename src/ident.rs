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
    name.len() <= MAX_NAME_BYTES && bytes.next().is_some_and(is_identifier_start) && bytes.all(is_identifier_byte)
}

/// Whether `byte` may be part of a C identifier: an ASCII letter, digit or
/// `_`. The one identifier-character rule: every scanner of names and C
/// text (the lexer in `input/c/` first) asks it.
pub(crate) const fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Whether a C identifier may start with `byte`: an identifier byte, not a digit.
pub(crate) fn is_identifier_start(byte: u8) -> bool {
    is_identifier_byte(byte) && !byte.is_ascii_digit()
}

/// [`is_identifier_byte`] for a character (none outside ASCII is one).
pub(crate) fn is_identifier_char(c: char) -> bool {
    u8::try_from(c).is_ok_and(is_identifier_byte)
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
    let shown: String = escaped(name).chars().take(MAX_NAME_BYTES).collect();
    Error::new(ErrorKind::Metadata, format!("{what} `{shown}` {rule}"))
        .help("mlf-build builds only names made of letters, digits and `_`, as TVM writes them: other names could inject code into the generated Rust and C, so this archive cannot be built as it is")
}

/// Checks a name that only appears as text (tensor names): short, without
/// control characters and without invisible ones ([`is_invisible`]).
pub(crate) fn check_text(what: &str, name: &str) -> Result<()> {
    if name.len() > MAX_NAME_BYTES {
        return Err(refuse(what, name, &format!("is longer than {MAX_NAME_BYTES} bytes")));
    }
    if name.chars().any(char::is_control) {
        return Err(refuse(what, name, "contains a control character (such as a line break)"));
    }
    if let Some(c) = name.chars().find(|&c| is_invisible(c)) {
        return Err(refuse(
            what,
            name,
            &format!(
                "contains the invisible character {} (a bidirectional control or other format character): the name would not read as it is",
                c.escape_unicode()
            ),
        ));
    }
    Ok(())
}

/// Unicode's format characters (general category Cf: bidirectional controls
/// U+202A–U+202E and U+2066–U+2069, marks U+200E/U+200F and U+061C, zero
/// widths U+200B–U+200D, U+2060 and U+FEFF, tags ...), the line and paragraph
/// separators and the other characters that show nothing (fillers, variation
/// selectors, the grapheme joiner): text holding one may read otherwise than it is.
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x034F
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// `text` with control and invisible characters escaped (`\u{202e}`), for messages and comments.
fn escaped(text: &str) -> String {
    printable(text).chars().flat_map(|c| if is_invisible(c) { c.escape_unicode().collect::<Vec<_>>() } else { vec![c] }).collect()
}

/// Archive text inside a C block comment: control and invisible characters escaped, `*/` broken up.
pub(crate) fn c_comment(text: &str) -> String {
    escaped(text).replace("*/", "* /")
}

/// Archive text inside a `///` line: control and invisible characters escaped, so it stays one line and reads as it is.
pub(crate) fn rust_doc(text: &str) -> String {
    escaped(text)
}

/// What a transformation makes of a name, and what it turns it into.
pub(crate) type NameTransform = (&'static str, fn(&str) -> String);

/// Refuses two of `names` (module or pool names, `what`) that become the same
/// after one of `transforms` (snake_case Rust names, upper-case C macros,
/// file names on a file system that ignores case), naming both.
pub(crate) fn check_distinct<'n>(what: &str, names: impl IntoIterator<Item = &'n str>, transforms: &[NameTransform]) -> Result<()> {
    let names: Vec<&str> = names.into_iter().collect();
    for (became, transform) in transforms {
        let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
        for &name in &names {
            if let Some(first) = seen.insert(transform(name), name) {
                if first != name {
                    return Err(Error::new(
                        ErrorKind::Metadata,
                        format!("{what}s `{}` and `{}` become the same {became} `{}`", escaped(first), escaped(name), transform(name)),
                    )
                    .help("mlf-build would generate two items of one name: rename one (Builder::rename_module for modules), or pass the archive as TVM wrote it"));
                }
            }
        }
    }
    Ok(())
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

    /// Distinct identifiers for a list of names, in order: one whose
    /// identifier is taken gets `_<its index>` appended, again until it is free
    /// (`a_0`, `a:0`, `a_0_1` → `a_0`, `a_0_1`, `a_0_1_2`).
    pub fn unique<'n>(texts: impl IntoIterator<Item = &'n str>) -> Vec<RustIdent> {
        let mut taken = std::collections::HashSet::new();
        let mut idents = Vec::new();
        for (index, text) in texts.into_iter().enumerate() {
            let mut ident = RustIdent::snake(text);
            while taken.contains(&ident.name) {
                ident = RustIdent { name: format!("{}_{index}", ident.name), raw: false };
            }
            taken.insert(ident.name.clone());
            idents.push(ident);
        }
        idents
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
    fn invisible_characters_are_refused_and_escaped() {
        for c in ['\u{202e}', '\u{2066}', '\u{200f}', '\u{61c}', '\u{200b}', '\u{feff}', '\u{2060}', '\u{e0041}', '\u{2028}'] {
            let name = format!("input{c}_1");
            let error = check_text("module `default`: tensor name", &name).unwrap_err().to_string();
            assert!(error.contains(&format!("`input{}_1`", c.escape_unicode())) && !error.contains(c), "{error}");
            assert!(!rust_doc(&name).contains(c) && !c_comment(&name).contains(c));
        }
        check_text("tensor name", "entrée:0 ü").unwrap();
        let lower: &[NameTransform] = &[("file name", |name| name.to_ascii_lowercase())];
        let error = check_distinct("module name", ["kws", "Kws"], lower).unwrap_err();
        assert!(error.to_string().contains("module names `kws` and `Kws` become the same file name `kws`"), "{error}");
        check_distinct("module name", ["kws", "kws_mlp"], lower).unwrap();
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
        // Three names whose identifiers meet: each stays distinct.
        let unique: Vec<String> = RustIdent::unique(["a_0_2", "a_0", "a:0", "A_0"]).iter().map(shown).collect();
        assert_eq!(unique, ["a_0_2", "a_0", "a_0_2_2", "a_0_3"]);
        assert_eq!(shown(&RustIdent::snake("run").avoiding(&["run"])), "op_run");
    }
}
