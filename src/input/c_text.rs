//! The C text primitives every scanner of C sources shares: comments
//! stripped, integer literals, function definitions and the calls in a body,
//! brackets matched and arguments split. Each works on text and returns
//! slices of it; none knows what the code means.

/// `text` without `/* */` and `//` comments.
pub(crate) fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start + 2..].find("*/").map_or("", |end| &rest[start + 2 + end + 2..]);
    }
    out.push_str(rest);
    out.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
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
    text.len() - text.bytes().rev().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count()
}

/// `(name, body)` of every function `code` defines (the body between its braces,
/// or to the end of `code` when unclosed). Control statements are not functions.
pub(crate) fn function_definitions(code: &str) -> impl Iterator<Item = (&str, &str)> {
    const STATEMENTS: &[&str] = &["if", "for", "while", "switch", "return", "sizeof", "do", "else"];
    code.match_indices('(').filter_map(move |(at, _)| {
        let head = code[..at].trim_end_matches([' ', '\t']);
        let start = trailing_identifier_start(head);
        let name = &head[start..];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || STATEMENTS.contains(&name) {
            return None;
        }
        let after = &code[at + 1..];
        let close = closing(after, '(', ')')?;
        let body = after[close + 1..].trim_start().strip_prefix('{')?;
        Some((name, closing(body, '{', '}').map_or(body, |end| &body[..end])))
    })
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
