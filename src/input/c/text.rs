//! The C text primitives the scanners of C sources share: comments and
//! literals blanked (through the [lexer](super::lexer)), integer literals,
//! function definitions and the calls in a body, brackets matched and
//! arguments split. Each works on text and returns slices of it; none knows
//! what the code means.

use std::collections::HashMap;

use crate::ident;
use crate::input::c::lexer::{lex, Kind};

/// `text` with every comment and the inside of every string and character
/// literal replaced by spaces (line breaks kept), so each byte stays where it
/// was and no scanner takes `f(` or `//` in a literal for code. An
/// `#include`'s header name stays.
pub(crate) fn strip_comments(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    let blank = |out: &mut Vec<u8>, mut from: usize, to: usize| {
        while from < to {
            if out[from] != b'\n' {
                out[from] = b' ';
            }
            from += 1;
        }
    };
    for token in lex(text) {
        let (start, end) = (token.start, token.end);
        match token.kind {
            Kind::Comment => blank(&mut out, start, end),
            Kind::Literal => {
                // After its prefix, between its quotes (to its end when unclosed).
                let open = start + text[start..end].find(['"', '\'']).unwrap_or(0);
                let closed = end > open + 1 && text.as_bytes()[end - 1] == text.as_bytes()[open];
                blank(&mut out, open + 1, if closed { end - 1 } else { end });
            }
            _ => {}
        }
    }
    // Only ASCII bytes were written, each over a whole character's bytes.
    String::from_utf8(out).unwrap_or_default()
}

/// A C integer literal (`42`, `0x2a`, `052`, `16u`, `(64)`): decimal, hex or
/// octal, with unsigned and long suffixes and enclosing parentheses.
pub(crate) fn integer(text: &str) -> Option<u64> {
    let text = text.trim().trim_start_matches('(').trim_end_matches(')').trim();
    let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
    match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if digits.len() > 1 && digits.starts_with('0') => u64::from_str_radix(&digits[1..], 8).ok(),
        None => digits.parse().ok(),
    }
}

/// Where the identifier `text` ends with begins (`text.len()` when it ends with none).
/// Counted in ASCII bytes, so always a character boundary whatever precedes it.
pub(crate) fn trailing_identifier_start(text: &str) -> usize {
    text.len() - text.bytes().rev().take_while(|b| ident::is_identifier_byte(*b)).count()
}

/// Open index → close index of every `open` bracket of `code` that is closed.
fn bracket_pairs(code: &str, open: u8, close: u8) -> HashMap<usize, usize> {
    let mut pairs = HashMap::new();
    let mut opened = Vec::new();
    for (at, byte) in code.bytes().enumerate() {
        if byte == open {
            opened.push(at);
        } else if byte == close {
            if let Some(start) = opened.pop() {
                pairs.insert(start, at);
            }
        }
    }
    pairs
}

/// `(name, body)` of every function `code` (without comments and literals)
/// defines: the body between its braces, or to the end of `code` when
/// unclosed. Control statements are not functions, and nothing inside a body
/// is taken for one. One pass: each bracket is matched once.
pub(crate) fn function_definitions(code: &str) -> impl Iterator<Item = (&str, &str)> {
    definitions(code).into_iter().map(|(name, _, body)| (name, body))
}

/// `(name, parameter list, body)` of every function `code` defines (see [`function_definitions`]).
fn definitions(code: &str) -> Vec<(&str, &str, &str)> {
    const STATEMENTS: &[&str] = &["if", "for", "while", "switch", "return", "sizeof", "do", "else"];
    let parens = bracket_pairs(code, b'(', b')');
    let braces = bracket_pairs(code, b'{', b'}');
    let mut found = Vec::new();
    let mut resume = 0;
    for (at, _) in code.match_indices('(') {
        if at < resume {
            continue;
        }
        let head = code[..at].trim_end_matches([' ', '\t']);
        let name = &head[trailing_identifier_start(head)..];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || STATEMENTS.contains(&name) {
            continue;
        }
        let Some(&close) = parens.get(&at) else { continue };
        let after = code[close + 1..].trim_start();
        if !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let end = braces.get(&open).copied().unwrap_or(code.len());
        found.push((name, &code[at + 1..close], &code[open + 1..end]));
        resume = end;
    }
    found
}

/// Where each function of a text is defined (its first definition), found in
/// one pass, so looking one up costs nothing more.
#[derive(Debug, Clone, Default)]
pub(crate) struct FunctionIndex {
    spans: HashMap<String, (std::ops::Range<usize>, std::ops::Range<usize>)>,
}

impl FunctionIndex {
    /// The functions `code` (without comments and literals) defines.
    pub fn of(code: &str) -> FunctionIndex {
        let mut spans = HashMap::new();
        let offset = |part: &str| part.as_ptr() as usize - code.as_ptr() as usize;
        for (name, params, body) in definitions(code) {
            let (params, body) = (offset(params)..offset(params) + params.len(), offset(body)..offset(body) + body.len());
            spans.entry(name.to_string()).or_insert((params, body));
        }
        FunctionIndex { spans }
    }

    /// `(parameter list, body)` of `name` in `code`, the text the index was made of.
    pub fn get<'c>(&self, code: &'c str, name: &str) -> Option<(&'c str, &'c str)> {
        let (params, body) = self.spans.get(name)?;
        Some((code.get(params.clone())?, code.get(body.clone())?))
    }

    /// The corpus test of the parser compares its functions with these.
    #[cfg(test)]
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.spans.keys().map(String::as_str)
    }
}

/// Whether the definition whose name is `name`, a slice of `code`, is `static`:
/// the words since the previous declaration's end say so.
#[cfg(test)]
pub(crate) fn is_static(code: &str, name: &str) -> bool {
    let at = (name.as_ptr() as usize).saturating_sub(code.as_ptr() as usize).min(code.len());
    let declaration = &code[code[..at].rfind([';', '}', '#']).map_or(0, |end| end + 1)..at];
    declaration.split(|c: char| !ident::is_identifier_char(c)).any(|word| word == "static")
}

/// Identifiers followed by `(` in a function body: the functions it calls (and
/// some keywords and macros, which are no defined function's name).
pub(crate) fn called_functions(body: &str) -> impl Iterator<Item = &str> {
    body.match_indices('(').filter_map(move |(at, _)| {
        let head = body[..at].trim_end_matches([' ', '\t']);
        let start = trailing_identifier_start(head);
        Some(&head[start..]).filter(|name| !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The index of the `close` that ends a bracket opened just before `text`.
pub(crate) fn closing(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// `text` split at the commas outside brackets: a call's arguments.
pub(crate) fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_in_every_base_and_suffix() {
        for (text, value) in [("42", 42), ("0x2a", 42), ("052", 42), ("16u", 16), ("(64)", 64), (" 7UL ", 7), ("0", 0)] {
            assert_eq!(integer(text), Some(value), "{text}");
        }
        for text in ["", "x", "0x", "09", "-1", "1.5"] {
            assert_eq!(integer(text), None, "{text}");
        }
    }

    #[test]
    fn comments_and_literals_are_blanked_where_they_are() {
        let text = "char* s = \"a // b /* c\"; int f(void) { return '\"' + '\\''; } // f(\n#include \"x.h\"\nx = 1'000; y = u8R\"d(\"f( )\")d\"; z = \"open\nw /* \"*/ = 2;";
        let code = strip_comments(text);
        assert_eq!(code.len(), text.len());
        assert_eq!(code.lines().count(), text.lines().count());
        assert!(code.starts_with(&format!("char* s = \"{}\"; int f(void) {{ return ' ' + '  '; }}", " ".repeat(11))), "{code}");
        assert!(code.contains("\n#include \"x.h\"\n"), "{code}");
        assert!(code.contains("x = 1'000; y = u8R\"") && !code.contains("f( )"), "{code}");
        assert!(code.ends_with("z = \"    \nw        = 2;"), "{code}");
        let names: Vec<&str> = function_definitions(&code).map(|(name, _)| name).collect();
        assert_eq!(names, ["f"]);
    }

    /// `//` and `/*` inside string literals, `"` in a character literal,
    /// characters of several bytes in comments and literals, and a `//`
    /// comment continued by a `\` are each told apart from code.
    #[test]
    fn comment_openers_in_literals_and_multibyte_text() {
        let text = "s = \"x // y\"; t = \"/* z\"; f(a); q = '\"'; g(b); /* é€ \"*/ h(c); // ü \\\n i(d);\nj(e); r = \"π\";";
        let code = strip_comments(text);
        assert_eq!(code.len(), text.len());
        assert_eq!(called_functions(&code).collect::<Vec<_>>(), ["f", "g", "h", "j"], "{code}");
        assert!(code.starts_with("s = \"      \"; t = \"    \"; f(a); q = ' '; g(b);"), "{code}");
        assert!(code.ends_with("\nj(e); r = \"  \";"), "{code}");
    }

    /// A character of several bytes just before an identifier (the fuzzer's
    /// `front_end` find, fuzz/regressions/front_end/) is not cut in two.
    #[test]
    fn identifiers_after_multibyte_characters() {
        assert_eq!(trailing_identifier_start("a é€f_1"), "a é€".len());
        assert_eq!(trailing_identifier_start("€"), "€".len());
        let names: Vec<&str> = function_definitions("int \u{fffd}f(int x) { return x; }\n€(){}").map(|(name, _)| name).collect();
        assert_eq!(names, ["f"]);
    }
}
