//! The lexer's additions for the parser: starting at an offset (a body
//! lexed again from its span), and the fast path over brace lists of numbers
//! (weights) with the same rule over tokens ([`NumericList`]).

use crate::input::c::lexer::{lex, Kind, Lexer, IDENTIFIER_BYTES};

/// The tokens of `text` from byte `start` (a token's start) on line `line`:
/// a function body lexed again from its span.
pub(crate) fn lex_at(text: &str, start: usize, line: usize) -> Lexer<'_> {
    // A `#` opens a directive when only spaces precede it on its line.
    let before = text.as_bytes()[..start.min(text.len())].iter().rev().find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\x0c'));
    let line_start = matches!(before, None | Some(b'\n'));
    let mut lexer = lex(text);
    (lexer.at, lexer.line, lexer.line_start) = (start.min(text.len()), line, line_start);
    lexer
}

/// What a byte is to [`Lexer::skip_numeric_list`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum NumericByte {
    /// Not in a numeric list's fast path: the tokens decide.
    Other,
    Space,
    LineBreak,
    Open,
    Close,
    Comma,
    Sign,
    Digit,
    Dot,
    /// A letter that may appear inside a number: hex digits, `x`, `p`, suffixes.
    NumberLetter,
}

static NUMERIC_BYTES: [NumericByte; 256] = {
    let mut table = [NumericByte::Other; 256];
    let mut byte = 0;
    while byte < table.len() {
        table[byte] = match byte as u8 {
            b' ' | b'\t' | b'\r' => NumericByte::Space,
            b'\n' => NumericByte::LineBreak,
            b'{' => NumericByte::Open,
            b'}' => NumericByte::Close,
            b',' => NumericByte::Comma,
            b'+' | b'-' => NumericByte::Sign,
            b'0'..=b'9' => NumericByte::Digit,
            b'.' => NumericByte::Dot,
            b'a'..=b'f' | b'A'..=b'F' | b'x' | b'X' | b'p' | b'P' | b'u' | b'U' | b'l' | b'L' => NumericByte::NumberLetter,
            _ => NumericByte::Other,
        };
        byte += 1;
    }
    table
};

/// Where an item of a numeric brace list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumericItem {
    /// Nothing of it yet.
    Start,
    /// `+` and `-` signs only.
    Signs,
    /// A number or a brace list: complete.
    Done,
}

impl<'t> Lexer<'t> {
    /// The byte the next token starts at.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// The line the next token starts on.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The fast path for weights: just after a `{` (the last token given),
    /// a brace list of numbers only (signed numbers of the bytes
    /// `0-9a-fA-FxXpPuUlL.`, commas, spaces and nested lists at most
    /// `nesting_room` levels deeper) is passed over in one byte loop, lines
    /// counted, to after its closing `}`. Returns how many items its outer
    /// level holds; `None` (nothing consumed) for any other byte, a comment
    /// among them: the tokens then decide, by the same rule ([`NumericList`]).
    pub fn skip_numeric_list(&mut self, nesting_room: usize) -> Option<u64> {
        let bytes = self.text.as_bytes();
        let (mut at, mut lines, mut depth, mut elements, mut item) = (self.at, 0usize, 1usize, 0u64, NumericItem::Start);
        // Indexing and a table, not iterator adapters: build scripts run this unoptimised.
        while at < bytes.len() {
            let byte = bytes[at];
            match NUMERIC_BYTES[byte as usize] {
                NumericByte::Space => {}
                NumericByte::LineBreak => lines += 1,
                NumericByte::Comma => {
                    if item != NumericItem::Done {
                        return None;
                    }
                    elements += u64::from(depth == 1);
                    item = NumericItem::Start;
                }
                NumericByte::Sign if item != NumericItem::Done => item = NumericItem::Signs,
                NumericByte::Digit | NumericByte::Dot if item != NumericItem::Done => {
                    if byte == b'.' && !bytes.get(at + 1).is_some_and(u8::is_ascii_digit) {
                        return None;
                    }
                    at = numeric_number_end(bytes, at)?;
                    item = NumericItem::Done;
                    continue;
                }
                NumericByte::Open if item == NumericItem::Start => {
                    if depth > nesting_room {
                        return None;
                    }
                    depth += 1;
                }
                NumericByte::Close if item != NumericItem::Signs => {
                    if depth == 1 {
                        elements += u64::from(item == NumericItem::Done);
                        self.at = at + 1;
                        self.line += lines;
                        self.line_start = false;
                        return Some(elements);
                    }
                    depth -= 1;
                    item = NumericItem::Done;
                }
                _ => return None,
            }
            at += 1;
        }
        None
    }
}

/// The end of the number at `start` as [`number_end`] reads it, `None` when
/// it holds a byte outside [`Lexer::skip_numeric_list`]'s alphabet.
fn numeric_number_end(bytes: &[u8], start: usize) -> Option<usize> {
    let hex = matches!(&bytes[start..], [b'0', b'x' | b'X', ..]);
    let mut at = start;
    while at < bytes.len() {
        let byte = bytes[at];
        match NUMERIC_BYTES[byte as usize] {
            NumericByte::Digit | NumericByte::Dot | NumericByte::NumberLetter => {}
            NumericByte::Sign if matches!(bytes[at - 1], b'p' | b'P') || (!hex && matches!(bytes[at - 1], b'e' | b'E')) => {}
            // Any other identifier byte or a digit separator would continue the number.
            _ if IDENTIFIER_BYTES[byte as usize] || byte == b'\'' => return None,
            _ => return Some(at),
        }
        at += 1;
    }
    Some(at)
}

/// Whether a number token's text is one [`Lexer::skip_numeric_list`] passes over.
pub(crate) fn is_plain_number(number: &str) -> bool {
    number.bytes().all(|byte| {
        matches!(NUMERIC_BYTES[byte as usize], NumericByte::Digit | NumericByte::Dot | NumericByte::NumberLetter | NumericByte::Sign)
    })
}

/// [`Lexer::skip_numeric_list`]'s rule over tokens: fed the significant
/// tokens of a brace list after its `{`, says when it closes whether it held
/// numbers only, and how many items.
#[derive(Debug, Clone)]
pub(crate) struct NumericList {
    /// Per open level, the state of its current item.
    items: Vec<NumericItem>,
    elements: u64,
    numeric: bool,
}

impl NumericList {
    pub fn new() -> NumericList {
        NumericList { items: vec![NumericItem::Start], elements: 0, numeric: true }
    }

    /// Feeds a nested list [`Lexer::skip_numeric_list`] passed over.
    pub fn feed_numeric_list(&mut self) {
        if let Some(item) = self.items.last_mut() {
            self.numeric &= *item == NumericItem::Start;
            *item = NumericItem::Done;
        }
    }

    /// Feeds one token (not a space or comment); `Some((numeric, elements))`
    /// when its `}` closes the list (braces only are counted: the caller
    /// knows where an initializer ends).
    pub fn feed(&mut self, kind: Kind, text: &str) -> Option<(bool, u64)> {
        let item = self.items.last_mut()?;
        match kind {
            Kind::Punctuator("{") => {
                self.numeric &= *item == NumericItem::Start;
                self.items.push(NumericItem::Start);
            }
            Kind::Punctuator("}") => {
                self.numeric &= *item != NumericItem::Signs;
                let closed = self.items.pop().unwrap_or(NumericItem::Start);
                match self.items.last_mut() {
                    Some(parent) => *parent = NumericItem::Done,
                    None => {
                        self.elements += u64::from(closed == NumericItem::Done);
                        return Some((self.numeric, self.elements));
                    }
                }
            }
            Kind::Punctuator(",") => {
                self.numeric &= *item == NumericItem::Done;
                *item = NumericItem::Start;
                self.elements += u64::from(self.items.len() == 1);
            }
            // The lexer reads `--1` as `--` then `1`: two signs.
            Kind::Punctuator("+" | "-" | "++" | "--") => {
                self.numeric &= *item != NumericItem::Done;
                *item = NumericItem::Signs;
            }
            Kind::Number => {
                self.numeric &= *item != NumericItem::Done && is_plain_number(text);
                *item = NumericItem::Done;
            }
            _ => self.numeric = false,
        }
        None
    }
}
