//! The writer: serde_json's compact (`Display`) and pretty output, byte for byte.

use std::fmt::{self, Write};

use super::{Number, Value};

/// Compact: no whitespace, as serde_json's `to_string`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        write_value(&mut out, self, None);
        f.write_str(&out)
    }
}

/// Indented by two spaces, `"key": value`, as serde_json's `to_string_pretty`.
pub fn to_string_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(0));
    out
}

/// `indent`: the nesting depth when pretty, `None` when compact. Recursion
/// follows the value's nesting, which the reader caps at 127 levels and
/// mlf-build's own values keep small.
fn write_value(out: &mut String, value: &Value, indent: Option<usize>) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, *n),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            write_items(out, ('[', ']'), items.iter().map(|item| (None, item)), items.is_empty(), indent);
        }
        Value::Object(map) => {
            write_items(out, ('{', '}'), map.iter().map(|(key, item)| (Some(key.as_str()), item)), map.is_empty(), indent);
        }
    }
}

fn write_items<'a>(
    out: &mut String,
    (open, close): (char, char),
    items: impl Iterator<Item = (Option<&'a str>, &'a Value)>,
    empty: bool,
    indent: Option<usize>,
) {
    out.push(open);
    let inner = indent.map(|depth| depth + 1);
    for (i, (key, item)) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        if let Some(depth) = inner {
            out.push('\n');
            push_indent(out, depth);
        }
        if let Some(key) = key {
            write_string(out, key);
            out.push_str(if inner.is_some() { ": " } else { ":" });
        }
        write_value(out, item, inner);
    }
    if let (Some(depth), false) = (indent, empty) {
        out.push('\n');
        push_indent(out, depth);
    }
    out.push(close);
}

fn push_indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, n: Number) {
    let _ = match n {
        Number::PosInt(n) => write!(out, "{n}"),
        Number::NegInt(n) => write!(out, "{n}"),
        Number::Float(f) => {
            write_float(out, f);
            Ok(())
        }
    };
}

/// The shortest decimal that reads back as `f`, laid out as serde_json (zmij)
/// does: plain for decimal exponents -5 to 15 (`0.00001`, `1e15` as
/// `1000000000000000.0`), else `1e-6`, `1.5e+16`; whole numbers end in `.0`.
fn write_float(out: &mut String, f: f64) {
    if !f.is_finite() {
        out.push_str("null");
        return;
    }
    let (digits, exponent) = shortest_digits(f.abs());
    let sign = if f.is_sign_negative() { "-" } else { "" };
    out.push_str(sign);
    if (-5..=15).contains(&exponent) {
        let point = exponent + 1;
        if point <= 0 {
            out.push_str("0.");
            push_zeros(out, point.unsigned_abs());
            out.push_str(&digits);
        } else {
            let point = point.unsigned_abs() as usize;
            if digits.len() <= point {
                out.push_str(&digits);
                push_zeros(out, (point - digits.len()) as u32);
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{}", if exponent < 0 { "-" } else { "+" }, exponent.unsigned_abs());
    }
}

fn push_zeros(out: &mut String, count: u32) {
    for _ in 0..count {
        out.push('0');
    }
}

/// The shortest digits that read back as `f` (positive), and the decimal
/// exponent of the first: Rust's, except that of two shortest decimals
/// exactly as near to `f`, the one ending in an even digit (zmij's choice).
fn shortest_digits(f: f64) -> (String, i32) {
    let (digits, exponent) = scientific(&format!("{f:e}"));
    // Exact: no f64 has more than 767 significant digits.
    let (exact, exact_exponent) = scientific(&format!("{f:.767e}"));
    let n = digits.len();
    let halfway = exact_exponent == exponent && exact.as_bytes()[n] == b'5' && exact.bytes().skip(n + 1).all(|d| d == b'0');
    if halfway && digits.as_bytes()[n - 1] % 2 == 1 {
        let below = &exact[..n];
        let other = if below == digits { increment(below) } else { below.to_string() };
        let (other, other_exponent) = if other.len() > n { ("1".to_string(), exponent + 1) } else { (other, exponent) };
        if format!("{other}e{}", other_exponent - (other.len() as i32 - 1)).parse::<f64>() == Ok(f) {
            return (other, other_exponent);
        }
    }
    (digits, exponent)
}

/// `d.ddde±x` as its digits and exponent.
fn scientific(text: &str) -> (String, i32) {
    let (mantissa, exponent) = text.split_once('e').expect("`{:e}` writes an exponent");
    (mantissa.chars().filter(|&c| c != '.').collect(), exponent.parse().expect("`{:e}` writes an integer exponent"))
}

/// A string of decimal digits plus one in its last place.
fn increment(digits: &str) -> String {
    let mut bytes = digits.as_bytes().to_vec();
    for byte in bytes.iter_mut().rev() {
        if *byte == b'9' {
            *byte = b'0';
        } else {
            *byte += 1;
            return String::from_utf8(bytes).expect("digits");
        }
    }
    bytes.insert(0, b'1');
    String::from_utf8(bytes).expect("digits")
}
