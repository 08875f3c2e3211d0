#![no_main]

use libfuzzer_sys::fuzz_target;
use mlf_build::json::{Number, Value};

/// The same value as serde_json's.
fn to_serde(value: &Value) -> serde_json::Value {
    match value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(Number::PosInt(n)) => (*n).into(),
        Value::Number(Number::NegInt(n)) => (*n).into(),
        Value::Number(Number::Float(f)) => serde_json::Number::from_f64(*f).expect("a read float is finite").into(),
        Value::String(text) => text.as_str().into(),
        Value::Array(items) => items.iter().map(to_serde).collect(),
        Value::Object(map) => map.iter().map(|(key, item)| (key.clone(), to_serde(item))).collect::<serde_json::Map<_, _>>().into(),
    }
}

/// An error message without its place for invalid UTF-8, which serde_json
/// places only roughly once a string has escapes.
fn comparable(message: String) -> String {
    match message.split_once(" at line ") {
        Some(("invalid unicode code point", _)) => "invalid unicode code point".to_string(),
        _ => message,
    }
}

// mlf-build's reader round-trips what it reads (an error is expected, a
// panic is a finding), and reads every input as serde_json does.
fuzz_target!(|bytes: &[u8]| {
    let _ = mlf_build::fuzzing::json(bytes);
    let ours = mlf_build::json::parse(bytes).map_err(|e| comparable(e.to_string()));
    let theirs = serde_json::from_slice::<serde_json::Value>(bytes).map_err(|e| comparable(e.to_string()));
    assert_eq!(ours.clone().map(|value| to_serde(&value)), theirs, "{:?}", String::from_utf8_lossy(bytes));
    if let (Ok(ours), Ok(theirs)) = (&ours, &theirs) {
        assert_eq!(ours.to_string(), theirs.to_string());
        assert_eq!(mlf_build::json::to_string_pretty(ours), serde_json::to_string_pretty(theirs).unwrap());
    }
});
