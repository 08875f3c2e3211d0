//! The one C lexer: an archive's C text as tokens, each with its byte span
//! and line, that together cover the text (spaces and comments are tokens
//! too). It knows comments, string and character literals (encoding
//! prefixes and C++ raw strings included), preprocessor lines and their
//! header names, line continuations and text of any UTF-8 characters. One
//! pass: each byte is looked at a bounded number of times.

use crate::ident;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Spaces, tabs and line continuations (`\` ending a line), up to and
    /// with the first line break that ends a line.
    Space,
    /// `// ...` (continued by a `\` ending its line) or `/* ... */` (to the
    /// end of the text when unclosed).
    Comment,
    Identifier,
    /// A preprocessing number: `42`, `0x2a`, `1.5e-3f`, `0x1p+3`, `1'000`.
    Number,
    /// A string or character literal with its encoding prefix (`L`, `u`,
    /// `U`, `u8`) or raw string prefix (`R`, `u8R` ...); an unterminated
    /// one ends with its line.
    Literal,
    /// The `"name.h"` of an `#include` (`#include_next`, `#import`): a file
    /// name, not a literal.
    HeaderName,
    Punctuator(&'static str),
    /// A character C has no token for (`@`, `$`, a lone `\`, any character outside ASCII).
    Other,
}

/// One token of a text: `text[start..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    /// The line of its first byte, from 1.
    pub line: usize,
    /// Part of a preprocessor line: from a `#` first on its line to the
    /// line break no `\` continues.
    pub preprocessor: bool,
}

impl Token {
    pub fn text<'t>(&self, source: &'t str) -> &'t str {
        &source[self.start..self.end]
    }
}

/// [`ident::is_identifier_byte`] of every byte, for the lexer's inner loops.
pub(super) static IDENTIFIER_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < table.len() {
        table[byte] = ident::is_identifier_byte(byte as u8);
        byte += 1;
    }
    table
};

/// The length of the run of identifier bytes `bytes` starts with.
fn identifier_run(bytes: &[u8]) -> usize {
    // Indexing, not iterator adapters: build scripts run this unoptimised.
    let mut length = 0;
    while length < bytes.len() && IDENTIFIER_BYTES[bytes[length] as usize] {
        length += 1;
    }
    length
}

/// How many line breaks `bytes` holds.
fn line_breaks(bytes: &[u8]) -> usize {
    let (mut count, mut at) = (0, 0);
    while at < bytes.len() {
        count += usize::from(bytes[at] == b'\n');
        at += 1;
    }
    count
}

/// Where the lexer is in a preprocessor line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Outside,
    /// After the `#`, before the directive's name.
    Hash,
    /// After the name of an `#include`: a `"` opens a header name.
    Include,
    Other,
}

/// The tokens of `text`, in order, covering it.
pub(crate) fn lex(text: &str) -> Lexer<'_> {
    Lexer { text, at: 0, line: 1, line_start: true, directive: Directive::Outside }
}

pub(crate) struct Lexer<'t> {
    pub(super) text: &'t str,
    pub(super) at: usize,
    pub(super) line: usize,
    /// Only spaces and comments since the last line break: a `#` here opens a directive.
    pub(super) line_start: bool,
    directive: Directive,
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let (text, bytes, start) = (self.text, self.text.as_bytes(), self.at);
        let &byte = bytes.get(start)?;
        let next = bytes.get(start + 1).copied();
        // A space token's line breaks, and whether the last ends a line.
        let (mut breaks, mut ends_line) = (None, false);
        let (kind, end) = match byte {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => {
                let end;
                (end, breaks, ends_line) = space_end(bytes, start);
                (Kind::Space, end)
            }
            b'0'..=b'9' => (Kind::Number, number_end(bytes, start)),
            b'.' if next.is_some_and(|b| b.is_ascii_digit()) => (Kind::Number, number_end(bytes, start)),
            b'/' if next == Some(b'/') => (Kind::Comment, line_comment_end(bytes, start)),
            b'/' if next == Some(b'*') => (Kind::Comment, text[start + 2..].find("*/").map_or(bytes.len(), |at| start + 2 + at + 2)),
            b'"' if self.directive == Directive::Include => (Kind::HeaderName, literal_end(bytes, start, b'"')),
            b'"' | b'\'' => (Kind::Literal, literal_end(bytes, start, byte)),
            b'\\' if continues_line(&bytes[start..]) => {
                let end;
                (end, breaks, ends_line) = space_end(bytes, start);
                (Kind::Space, end)
            }
            _ if ident::is_identifier_start(byte) => {
                let word_end = start + identifier_run(&bytes[start..]);
                // A literal's prefix, or an identifier.
                match bytes.get(word_end) {
                    Some(&quote @ (b'"' | b'\'')) => match &text[start..word_end] {
                        "R" | "u8R" | "uR" | "UR" | "LR" if quote == b'"' => {
                            (Kind::Literal, raw_string_end(text, word_end).unwrap_or_else(|| literal_end(bytes, word_end, b'"')))
                        }
                        "L" | "u" | "U" | "u8" => (Kind::Literal, literal_end(bytes, word_end, quote)),
                        _ => (Kind::Identifier, word_end),
                    },
                    _ => (Kind::Identifier, word_end),
                }
            }
            _ => match punctuator(&bytes[start..]) {
                Some(punctuator) => (Kind::Punctuator(punctuator), start + punctuator.len()),
                None => (Kind::Other, start + text[start..].chars().next().map_or(1, char::len_utf8)),
            },
        };
        // Past a `\` at the text's end: the text's end.
        let end = end.min(bytes.len());
        if byte == b'#' && end == start + 1 && self.line_start && self.directive == Directive::Outside {
            self.directive = Directive::Hash;
        } else if self.directive == Directive::Hash && !matches!(kind, Kind::Space | Kind::Comment) {
            let include = kind == Kind::Identifier && matches!(&text[start..end], "include" | "include_next" | "import");
            self.directive = if include { Directive::Include } else { Directive::Other };
        }
        let token = Token { kind, start, end, line: self.line, preprocessor: self.directive != Directive::Outside };
        self.line += match (kind, breaks) {
            (_, Some(breaks)) => breaks,
            (Kind::Comment | Kind::Literal | Kind::HeaderName, _) => line_breaks(&bytes[start..end]),
            _ => 0,
        };
        if ends_line {
            (self.line_start, self.directive) = (true, Directive::Outside);
        } else if !matches!(kind, Kind::Space | Kind::Comment) {
            self.line_start = false;
        }
        self.at = end;
        Some(token)
    }
}

/// Whether `bytes` starts with a line continuation: `\` before a line break.
fn continues_line(bytes: &[u8]) -> bool {
    matches!(bytes, [b'\\', b'\n', ..] | [b'\\', b'\r', b'\n', ..])
}

/// The end of the spaces and continuations from `start`, after the first
/// line break that ends a line; how many line breaks it holds, and whether
/// the last ends a line.
fn space_end(bytes: &[u8], start: usize) -> (usize, Option<usize>, bool) {
    let (mut end, mut breaks) = (start, 0);
    loop {
        match &bytes[end..] {
            [b'\n', ..] => return (end + 1, Some(breaks + 1), true),
            [b'\\', b'\n', ..] => (end, breaks) = (end + 2, breaks + 1),
            [b'\\', b'\r', b'\n', ..] => (end, breaks) = (end + 3, breaks + 1),
            [byte, ..] if byte.is_ascii_whitespace() => end += 1,
            _ => return (end, Some(breaks), false),
        }
    }
}

/// The end of the `//` comment at `start`: its line's break, unless a `\` continues the line.
fn line_comment_end(bytes: &[u8], start: usize) -> usize {
    let mut end = start + 2;
    while end < bytes.len() && bytes[end] != b'\n' {
        end += if continues_line(&bytes[end..]) {
            if bytes[end + 1] == b'\r' {
                3
            } else {
                2
            }
        } else {
            1
        };
    }
    end
}

/// The index after the literal opening at `open` with `quote`: its closing
/// quote, else the end of its line (an unterminated literal is no longer than a line).
fn literal_end(bytes: &[u8], open: usize, quote: u8) -> usize {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index after the C++ raw string `R"delim(...)delim"` whose `"` is at
/// `quote` (to the text's end when unclosed); `None` when no valid delimiter
/// and `(` follow the quote.
fn raw_string_end(text: &str, quote: usize) -> Option<usize> {
    let after = &text[quote + 1..];
    let open = after.bytes().take(17).position(|b| b == b'(')?;
    let delimiter = &after[..open];
    if delimiter.bytes().any(|b| b.is_ascii_whitespace() || matches!(b, b'\\' | b')' | b'"')) {
        return None;
    }
    let close = format!("){delimiter}\"");
    let end = after[open..].find(&close).map_or(text.len(), |at| quote + 1 + open + at + close.len());
    Some(end)
}

/// The end of the preprocessing number at `start`: digits, letters, `_`
/// and `.`, an exponent's sign (`1e-05f`, `0x1p+3`) and a `'` in a word
/// that starts with a digit (`1'000`, a digit separator).
fn number_end(bytes: &[u8], start: usize) -> usize {
    let hex = matches!(&bytes[start..], [b'0', b'x' | b'X', ..]);
    let mut end = start;
    // Whether the word being read (since `.` or a sign) starts with a digit.
    let mut digit_word = None;
    loop {
        let word = end;
        end += identifier_run(&bytes[end..]);
        if end > word {
            digit_word = digit_word.or(Some(bytes[word].is_ascii_digit()));
        }
        let exponent = end > start && (matches!(bytes[end - 1], b'p' | b'P') || (!hex && matches!(bytes[end - 1], b'e' | b'E')));
        match bytes.get(end) {
            Some(b'.') => (end, digit_word) = (end + 1, None),
            Some(b'\'') if digit_word == Some(true) => end += 1,
            Some(b'+' | b'-') if exponent => (end, digit_word) = (end + 1, None),
            _ => return end,
        }
    }
}

/// The punctuator `rest` starts with, the longest (digraphs are not TVM's).
fn punctuator(rest: &[u8]) -> Option<&'static str> {
    let second = if rest.len() > 1 { rest[1] } else { 0 };
    let third = if rest.len() > 2 { rest[2] } else { 0 };
    Some(match (*rest.first()?, second, third) {
        (b'<', b'<', b'=') => "<<=",
        (b'>', b'>', b'=') => ">>=",
        (b'.', b'.', b'.') => "...",
        (b'-', b'>', _) => "->",
        (b'+', b'+', _) => "++",
        (b'-', b'-', _) => "--",
        (b'<', b'<', _) => "<<",
        (b'>', b'>', _) => ">>",
        (b'&', b'&', _) => "&&",
        (b'|', b'|', _) => "||",
        (b'#', b'#', _) => "##",
        (b'<', b'=', _) => "<=",
        (b'>', b'=', _) => ">=",
        (b'=', b'=', _) => "==",
        (b'!', b'=', _) => "!=",
        (b'+', b'=', _) => "+=",
        (b'-', b'=', _) => "-=",
        (b'*', b'=', _) => "*=",
        (b'/', b'=', _) => "/=",
        (b'%', b'=', _) => "%=",
        (b'&', b'=', _) => "&=",
        (b'|', b'=', _) => "|=",
        (b'^', b'=', _) => "^=",
        (b',', ..) => ",",
        (b'(', ..) => "(",
        (b')', ..) => ")",
        (b'[', ..) => "[",
        (b']', ..) => "]",
        (b'{', ..) => "{",
        (b'}', ..) => "}",
        (b';', ..) => ";",
        (b'?', ..) => "?",
        (b':', ..) => ":",
        (b'~', ..) => "~",
        (b'=', ..) => "=",
        (b'<', ..) => "<",
        (b'>', ..) => ">",
        (b'+', ..) => "+",
        (b'-', ..) => "-",
        (b'*', ..) => "*",
        (b'/', ..) => "/",
        (b'%', ..) => "%",
        (b'&', ..) => "&",
        (b'|', ..) => "|",
        (b'^', ..) => "^",
        (b'!', ..) => "!",
        (b'.', ..) => ".",
        (b'#', ..) => "#",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, &str)> {
        lex(text).filter(|token| token.kind != Kind::Space).map(|token| (token.kind, token.text(text))).collect()
    }

    /// The tokens of every text cover it in order, each a slice on character boundaries.
    fn assert_covers(text: &str) {
        let mut at = 0;
        let mut line = 1;
        for token in lex(text) {
            assert_eq!(token.start, at, "{text:?}");
            assert!(token.end > token.start && text.is_char_boundary(token.end), "{text:?}: {token:?}");
            assert_eq!(token.line, line, "{text:?}: {token:?}");
            line += token.text(text).matches('\n').count();
            at = token.end;
        }
        assert_eq!(at, text.len(), "{text:?}");
    }

    /// `//` and `/*` inside string literals are text, as is `"` in a character literal.
    #[test]
    fn comment_openers_inside_literals_are_text() {
        let text = "char* s = \"a // b /* c\"; char q = '\"'; int f(void) { return '\\''; } // f(\n";
        assert_covers(text);
        let tokens = kinds(text);
        assert!(tokens.contains(&(Kind::Literal, "\"a // b /* c\"")), "{tokens:?}");
        assert!(tokens.contains(&(Kind::Literal, "'\"'")), "{tokens:?}");
        assert!(tokens.contains(&(Kind::Literal, "'\\''")), "{tokens:?}");
        assert_eq!(tokens.iter().filter(|(kind, _)| *kind == Kind::Comment).collect::<Vec<_>>(), [&(Kind::Comment, "// f(")]);
        assert!(tokens.contains(&(Kind::Identifier, "f")) && tokens.contains(&(Kind::Punctuator("{"), "{")));
    }

    #[test]
    fn prefixes_raw_strings_numbers_and_punctuators() {
        let text =
            "x = u8R\"d(\"f( )\")d\" + L'a' + u\"b\" + R\"(\n)\" + Rx\"c\"; y = 1'000 + 0x1p+3f + 1e-05f + .5 + 0xe+1; a->b <<= c...;";
        assert_covers(text);
        let tokens = kinds(text);
        for literal in ["u8R\"d(\"f( )\")d\"", "L'a'", "u\"b\"", "R\"(\n)\"", "\"c\""] {
            assert!(tokens.contains(&(Kind::Literal, literal)), "{literal}: {tokens:?}");
        }
        assert!(tokens.contains(&(Kind::Identifier, "Rx")), "{tokens:?}");
        for number in ["1'000", "0x1p+3f", "1e-05f", ".5", "0xe"] {
            assert!(tokens.contains(&(Kind::Number, number)), "{number}: {tokens:?}");
        }
        for punctuator in ["->", "<<=", "..."] {
            assert!(tokens.contains(&(Kind::Punctuator(punctuator), punctuator)), "{punctuator}: {tokens:?}");
        }
    }

    /// A `\` ending a `//` comment's line continues the comment; one ending a
    /// directive's line continues the directive; lines are counted through
    /// both. A line break inside a comment ends no line: the `#` after it is no directive.
    #[test]
    fn line_continuations() {
        let text = "// a comment \\\n f(x);\n#define A(x) \\\r\n  (x)\nint a; /* two\nlines */ #pragma once\nb;";
        assert_covers(text);
        let tokens: Vec<Token> = lex(text).filter(|token| token.kind != Kind::Space).collect();
        assert_eq!((tokens[0].kind, tokens[0].text(text)), (Kind::Comment, "// a comment \\\n f(x);"));
        let preprocessor: Vec<&str> = tokens.iter().filter(|token| token.preprocessor).map(|token| token.text(text)).collect();
        assert_eq!(preprocessor, ["#", "define", "A", "(", "x", ")", "(", "x", ")"]);
        let lines: Vec<(&str, usize)> =
            tokens.iter().map(|token| (token.text(text), token.line)).filter(|(text, _)| text.len() == 1).collect();
        assert_eq!(lines.last(), Some(&(";", 7)), "{lines:?}");
        assert!(lines.contains(&("(", 4)) && lines.contains(&("a", 5)), "{lines:?}");
    }

    #[test]
    fn header_names_only_in_includes() {
        let text = "#include \"a//b.h\"\n#define S \"x//y\"\n#  include_next \"c.h\"\nchar* s = \"d.h\";";
        assert_covers(text);
        let header: Vec<&str> = lex(text).filter(|token| token.kind == Kind::HeaderName).map(|token| token.text(text)).collect();
        assert_eq!(header, ["\"a//b.h\"", "\"c.h\""]);
    }

    /// Characters of several bytes in comments, literals and code are whole
    /// tokens' parts or tokens of their own, never cut.
    #[test]
    fn multibyte_text() {
        let text = "/* é€ */ int f(void) { return \"π\\é\"[0] + 'ü'; } // ✓\n€x = 1; \u{fffd}\\";
        assert_covers(text);
        let tokens = kinds(text);
        assert!(tokens.contains(&(Kind::Comment, "/* é€ */")) && tokens.contains(&(Kind::Comment, "// ✓")), "{tokens:?}");
        assert!(tokens.contains(&(Kind::Literal, "\"π\\é\"")) && tokens.contains(&(Kind::Literal, "'ü'")), "{tokens:?}");
        assert!(tokens.contains(&(Kind::Other, "€")) && tokens.contains(&(Kind::Identifier, "x")), "{tokens:?}");
        assert_eq!(tokens.last(), Some(&(Kind::Other, "\\")));
        for cut in ["\"é", "'\\€", "R\"(€", "u8R\"", "/*€", "//€\\", "1'€", "#include \"€", "\\\r"] {
            assert_covers(cut);
        }
    }
}
