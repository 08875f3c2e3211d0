//! The reader: RFC 8259, iterative (an explicit stack, never recursion), with
//! serde_json's nesting limit, error messages and positions.

use std::fmt;

use super::{Map, Number, Value};

/// An array or object nested this deep is an error before it is read further,
/// as in serde_json (which reads at most 127 levels).
pub(crate) const DEPTH_LIMIT: usize = 128;

/// What a document is read into: [`Value`], or a caller's own tree (metadata.json
/// keeps object members in document order).
pub(crate) trait Tree: Sized {
    fn null() -> Self;
    fn bool(value: bool) -> Self;
    fn number(value: Number) -> Self;
    fn string(value: String) -> Self;
    fn array(items: Vec<Self>) -> Self;
    /// Members in document order, duplicates included.
    fn object(members: Vec<(String, Self)>) -> Self;
}

impl Tree for Value {
    fn null() -> Value {
        Value::Null
    }

    fn bool(value: bool) -> Value {
        Value::Bool(value)
    }

    fn number(value: Number) -> Value {
        Value::Number(value)
    }

    fn string(value: String) -> Value {
        Value::String(value)
    }

    fn array(items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    /// The last of duplicate keys wins.
    fn object(members: Vec<(String, Value)>) -> Value {
        Value::Object(members.into_iter().collect::<Map>())
    }
}

/// Why a document is not JSON, and where: serde_json's message and position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    problem: Problem,
    line: usize,
    column: usize,
}

impl Error {
    /// The line of the problem, from 1.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The column of the problem on its line: the byte count up to and
    /// including the offending byte (0 for a problem at a line's start).
    pub fn column(&self) -> usize {
        self.column
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    EofInList,
    EofInObject,
    EofInString,
    EofInValue,
    ExpectedColon,
    ExpectedListCommaOrEnd,
    ExpectedObjectCommaOrEnd,
    ExpectedIdent,
    ExpectedValue,
    InvalidEscape,
    InvalidNumber,
    NumberOutOfRange,
    InvalidUnicode,
    ControlCharacter,
    KeyMustBeString,
    LoneSurrogate,
    UnpairedSurrogate,
    TrailingComma,
    TrailingCharacters,
    TooDeep,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = match self.problem {
            Problem::EofInList => "EOF while parsing a list",
            Problem::EofInObject => "EOF while parsing an object",
            Problem::EofInString => "EOF while parsing a string",
            Problem::EofInValue => "EOF while parsing a value",
            Problem::ExpectedColon => "expected `:`",
            Problem::ExpectedListCommaOrEnd => "expected `,` or `]`",
            Problem::ExpectedObjectCommaOrEnd => "expected `,` or `}`",
            Problem::ExpectedIdent => "expected ident",
            Problem::ExpectedValue => "expected value",
            Problem::InvalidEscape => "invalid escape",
            Problem::InvalidNumber => "invalid number",
            Problem::NumberOutOfRange => "number out of range",
            Problem::InvalidUnicode => "invalid unicode code point",
            Problem::ControlCharacter => "control character (\\u0000-\\u001F) found while parsing a string",
            Problem::KeyMustBeString => "key must be a string",
            // serde_json's words for a trailing surrogate first and for a leading one without its pair.
            Problem::LoneSurrogate => "lone leading surrogate in hex escape",
            Problem::UnpairedSurrogate => "unexpected end of hex escape",
            Problem::TrailingComma => "trailing comma",
            Problem::TrailingCharacters => "trailing characters",
            Problem::TooDeep => "recursion limit exceeded",
        };
        write!(f, "{message} at line {} column {}", self.line, self.column)
    }
}

impl std::error::Error for Error {}

/// Reads one JSON document (whitespace around it allowed, nothing else).
///
/// # Errors
/// Where `bytes` are not JSON, or nest arrays and objects 128 deep.
pub fn parse(bytes: &[u8]) -> Result<Value, Error> {
    parse_tree(bytes)
}

/// An array or object being read: its items so far, and for an object the
/// key whose value comes next.
enum Open<T> {
    Array(Vec<T>),
    Object(Vec<(String, T)>, String),
}

/// [`parse`] into any [`Tree`].
pub(crate) fn parse_tree<T: Tree>(bytes: &[u8]) -> Result<T, Error> {
    let mut reader = Reader { bytes, index: 0 };
    let mut open: Vec<Open<T>> = Vec::new();
    'value: loop {
        let mut value = match reader.skip_whitespace() {
            None => return Err(reader.at_end(Problem::EofInValue)),
            Some(b'[') => {
                reader.check_depth(open.len())?;
                reader.index += 1;
                match reader.skip_whitespace() {
                    None => return Err(reader.at_end(Problem::EofInList)),
                    Some(b']') => {
                        reader.index += 1;
                        T::array(Vec::new())
                    }
                    Some(_) => {
                        open.push(Open::Array(Vec::new()));
                        continue 'value;
                    }
                }
            }
            Some(b'{') => {
                reader.check_depth(open.len())?;
                reader.index += 1;
                match reader.skip_whitespace() {
                    None => return Err(reader.at_end(Problem::EofInObject)),
                    Some(b'}') => {
                        reader.index += 1;
                        T::object(Vec::new())
                    }
                    Some(b'"') => {
                        let key = reader.key()?;
                        open.push(Open::Object(Vec::new(), key));
                        continue 'value;
                    }
                    Some(_) => return Err(reader.here(Problem::KeyMustBeString)),
                }
            }
            Some(b'"') => {
                reader.index += 1;
                T::string(reader.string()?)
            }
            Some(b't') => reader.ident(b"true").map(|()| T::bool(true))?,
            Some(b'f') => reader.ident(b"false").map(|()| T::bool(false))?,
            Some(b'n') => reader.ident(b"null").map(|()| T::null())?,
            Some(b'-' | b'0'..=b'9') => T::number(reader.number()?),
            Some(_) => return Err(reader.here(Problem::ExpectedValue)),
        };
        // `value` is complete: it ends every array and object it closes.
        loop {
            match open.last_mut() {
                None => {
                    return match reader.skip_whitespace() {
                        None => Ok(value),
                        Some(_) => Err(reader.here(Problem::TrailingCharacters)),
                    }
                }
                Some(Open::Array(items)) => {
                    items.push(value);
                    match reader.skip_whitespace() {
                        None => return Err(reader.at_end(Problem::EofInList)),
                        Some(b',') => {
                            reader.index += 1;
                            if reader.skip_whitespace() == Some(b']') {
                                return Err(reader.here(Problem::TrailingComma));
                            }
                            continue 'value;
                        }
                        Some(b']') => reader.index += 1,
                        Some(_) => return Err(reader.here(Problem::ExpectedListCommaOrEnd)),
                    }
                }
                Some(Open::Object(members, key)) => {
                    members.push((std::mem::take(key), value));
                    match reader.skip_whitespace() {
                        None => return Err(reader.at_end(Problem::EofInObject)),
                        Some(b',') => {
                            reader.index += 1;
                            match reader.skip_whitespace() {
                                None => return Err(reader.at_end(Problem::EofInValue)),
                                Some(b'"') => {
                                    *key = reader.key()?;
                                    continue 'value;
                                }
                                Some(b'}') => return Err(reader.here(Problem::TrailingComma)),
                                Some(_) => return Err(reader.here(Problem::KeyMustBeString)),
                            }
                        }
                        Some(b'}') => reader.index += 1,
                        Some(_) => return Err(reader.here(Problem::ExpectedObjectCommaOrEnd)),
                    }
                }
            }
            value = match open.pop() {
                Some(Open::Array(items)) => T::array(items),
                Some(Open::Object(members, _)) => T::object(members),
                None => unreachable!("a value closed an array or object that was open"),
            };
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    /// The next byte to read.
    index: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.index).copied()
    }

    /// The next byte that is not JSON whitespace, not consumed.
    fn skip_whitespace(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.index += 1;
        }
        self.peek()
    }

    /// An error at the byte at `index` (serde_json's position: line, and bytes
    /// of the line up to and including that byte).
    fn error_at(&self, index: usize, problem: Problem) -> Error {
        let end = (index + 1).min(self.bytes.len());
        let line_start = self.bytes[..end].iter().rposition(|&b| b == b'\n').map_or(0, |newline| newline + 1);
        let line = 1 + self.bytes[..line_start].iter().filter(|&&b| b == b'\n').count();
        Error { problem, line, column: end - line_start }
    }

    /// An error at the next byte.
    fn here(&self, problem: Problem) -> Error {
        self.error_at(self.index, problem)
    }

    /// An error for input that ended too soon.
    fn at_end(&self, problem: Problem) -> Error {
        self.error_at(self.bytes.len(), problem)
    }

    /// Before opening one more array or object inside `depth` open ones.
    fn check_depth(&self, depth: usize) -> Result<(), Error> {
        if depth + 1 >= DEPTH_LIMIT {
            return Err(self.here(Problem::TooDeep));
        }
        Ok(())
    }

    fn ident(&mut self, word: &[u8]) -> Result<(), Error> {
        for &expected in word {
            match self.peek() {
                None => return Err(self.at_end(Problem::EofInValue)),
                Some(byte) if byte != expected => return Err(self.here(Problem::ExpectedIdent)),
                Some(_) => self.index += 1,
            }
        }
        Ok(())
    }

    /// An object key at the opening quote, and the colon after it.
    fn key(&mut self) -> Result<String, Error> {
        self.index += 1;
        let key = self.string()?;
        match self.skip_whitespace() {
            None => Err(self.at_end(Problem::EofInObject)),
            Some(b':') => {
                self.index += 1;
                Ok(key)
            }
            Some(_) => Err(self.here(Problem::ExpectedColon)),
        }
    }

    /// The rest of a string whose opening quote was read. As in serde_json,
    /// invalid UTF-8 is reported when the string ends, after any other problem.
    fn string(&mut self) -> Result<String, Error> {
        let mut text = Vec::new();
        let mut first_invalid = None;
        loop {
            let run_start = self.index;
            while let Some(byte) = self.peek() {
                if byte == b'"' || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.index += 1;
            }
            // Runs end at ASCII bytes, so no character spans two of them.
            let run = &self.bytes[run_start..self.index];
            if let (None, Err(e)) = (first_invalid, std::str::from_utf8(run)) {
                first_invalid = Some(run_start + e.valid_up_to());
            }
            text.extend_from_slice(run);
            match self.peek() {
                None => return Err(self.at_end(Problem::EofInString)),
                Some(b'"') => {
                    if let Some(at) = first_invalid {
                        return Err(self.error_at(at, Problem::InvalidUnicode));
                    }
                    self.index += 1;
                    // Every run is UTF-8, and escapes add whole characters.
                    return Ok(String::from_utf8(text).expect("checked UTF-8"));
                }
                Some(b'\\') => {
                    self.index += 1;
                    self.escape(&mut text)?;
                }
                Some(_) => return Err(self.here(Problem::ControlCharacter)),
            }
        }
    }

    /// The escape after a backslash.
    fn escape(&mut self, text: &mut Vec<u8>) -> Result<(), Error> {
        let Some(byte) = self.peek() else { return Err(self.at_end(Problem::EofInString)) };
        let plain = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                self.index += 1;
                let c = self.unicode_escape()?;
                text.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                return Ok(());
            }
            _ => return Err(self.here(Problem::InvalidEscape)),
        };
        self.index += 1;
        text.push(plain);
        Ok(())
    }

    /// The character of `\uXXXX` after its `\u`, with its pair if it is a surrogate.
    fn unicode_escape(&mut self) -> Result<char, Error> {
        let first = self.hex4()?;
        if (0xDC00..=0xDFFF).contains(&first) {
            return Err(self.error_at(self.index - 1, Problem::LoneSurrogate));
        }
        if !(0xD800..=0xDBFF).contains(&first) {
            return Ok(char::from_u32(u32::from(first)).expect("not a surrogate"));
        }
        for expected in [b'\\', b'u'] {
            match self.peek() {
                None => return Err(self.at_end(Problem::EofInString)),
                Some(byte) if byte != expected => return Err(self.here(Problem::UnpairedSurrogate)),
                Some(_) => self.index += 1,
            }
        }
        let second = self.hex4()?;
        if !(0xDC00..=0xDFFF).contains(&second) {
            return Err(self.error_at(self.index - 1, Problem::LoneSurrogate));
        }
        let code = 0x1_0000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00);
        Ok(char::from_u32(code).expect("a surrogate pair is a character"))
    }

    fn hex4(&mut self) -> Result<u16, Error> {
        let Some(digits) = self.bytes.get(self.index..self.index + 4) else { return Err(self.at_end(Problem::EofInString)) };
        self.index += 4;
        let mut value = 0u16;
        for &digit in digits {
            let Some(nibble) = (digit as char).to_digit(16) else { return Err(self.error_at(self.index - 1, Problem::InvalidEscape)) };
            value = value << 4 | nibble as u16;
        }
        Ok(value)
    }

    /// A number at its first byte (`-` or a digit).
    fn number(&mut self) -> Result<Number, Error> {
        let start = self.index;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.index += 1;
        }
        match self.peek() {
            None => return Err(self.at_end(Problem::EofInValue)),
            Some(b'0') => {
                self.index += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.here(Problem::InvalidNumber));
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            Some(_) => return Err(self.here(Problem::InvalidNumber)),
        }
        let integer_end = self.index;
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.index += 1;
            self.required_digit()?;
            self.digits();
            float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            let mantissa_is_zero = self.bytes[start..self.index].iter().all(|&b| matches!(b, b'-' | b'0' | b'.'));
            self.index += 1;
            let negative_exponent = self.peek() == Some(b'-');
            if let Some(b'+' | b'-') = self.peek() {
                self.index += 1;
            }
            self.required_digit()?;
            // serde_json's place for an exponent beyond i32 that makes the number infinite: its first digit too many.
            let mut exponent = 0i32;
            while let Some(digit @ b'0'..=b'9') = self.peek() {
                self.index += 1;
                exponent = match exponent.checked_mul(10).and_then(|e| e.checked_add(i32::from(digit - b'0'))) {
                    Some(exponent) => exponent,
                    None if !mantissa_is_zero && !negative_exponent => return Err(self.error_at(self.index - 1, Problem::NumberOutOfRange)),
                    None => i32::MAX,
                };
            }
            float = true;
        }
        let text = std::str::from_utf8(&self.bytes[start..self.index]).expect("ASCII digits and signs");
        if !float {
            let digits = &self.bytes[start + usize::from(negative)..integer_end];
            // serde_json: `-0` is a float, and integers beyond u64/i64 are floats.
            let magnitude = digits.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')));
            match (negative, magnitude) {
                (false, Some(n)) => return Ok(Number::PosInt(n)),
                (true, Some(n)) if n > 0 && n <= 1 << 63 => return Ok(Number::NegInt(0i64.wrapping_sub_unsigned(n))),
                _ => {}
            }
        }
        let value: f64 = text.parse().expect("a JSON number is a Rust float");
        if value.is_infinite() {
            return Err(self.error_at(self.index - 1, Problem::NumberOutOfRange));
        }
        Ok(Number::Float(value))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.index += 1;
        }
    }

    /// The digit that must follow `.`, `e` or the exponent's sign.
    fn required_digit(&mut self) -> Result<(), Error> {
        match self.peek() {
            None => Err(self.at_end(Problem::EofInValue)),
            Some(b'0'..=b'9') => Ok(()),
            Some(_) => Err(self.here(Problem::InvalidNumber)),
        }
    }
}
