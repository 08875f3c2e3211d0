//! The reader and writer against serde_json, which they replace (a dev-dependency).

use super::*;

fn to_serde(value: &Value) -> serde_json::Value {
    match value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(Number::PosInt(n)) => (*n).into(),
        Value::Number(Number::NegInt(n)) => (*n).into(),
        Value::Number(Number::Float(f)) => serde_json::Number::from_f64(*f).expect("finite").into(),
        Value::String(text) => text.as_str().into(),
        Value::Array(items) => items.iter().map(to_serde).collect(),
        Value::Object(map) => map.iter().map(|(key, item)| (key.clone(), to_serde(item))).collect::<serde_json::Map<_, _>>().into(),
    }
}

fn serde_parse(bytes: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// Asserts both read `bytes` alike: the same value or the same error message,
/// position included except for invalid UTF-8, which serde_json places only
/// roughly once a string has escapes.
fn assert_read_alike(bytes: &[u8]) {
    let without_place = |message: String| match message.split_once(" at line ") {
        Some(("invalid unicode code point", _)) => "invalid unicode code point".to_string(),
        _ => message,
    };
    let ours = parse(bytes).map(|v| to_serde(&v)).map_err(|e| without_place(e.to_string()));
    assert_eq!(ours, serde_parse(bytes).map_err(without_place), "{:?}", String::from_utf8_lossy(bytes));
}

/// splitmix64: reproducible without a dependency.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_value(random: &mut Random, depth: usize) -> Value {
    let pick = if depth == 0 { random.below(6) } else { random.below(8) };
    match pick {
        0 => Value::Null,
        1 => Value::Bool(random.below(2) == 1),
        2 => Value::Number(Number::PosInt(random.next() >> random.below(64))),
        3 => Value::Number(Number::from_i64((random.next() >> random.below(64)) as i64 | i64::MIN)),
        4 => loop {
            let f = f64::from_bits(random.next());
            if f.is_finite() {
                break Value::Number(Number::Float(f));
            }
        },
        5 => {
            let chars = ['a', 'é', '"', '\\', '/', '\n', '\u{0}', '\u{1f}', '\u{7f}', '\u{2028}', '😀', ' '];
            Value::String((0..random.below(6)).map(|_| chars[random.below(chars.len() as u64) as usize]).collect())
        }
        6 => Value::Array((0..random.below(4)).map(|_| random_value(random, depth - 1)).collect()),
        _ => Value::object((0..random.below(4)).map(|i| (format!("k{}", (i * 7 + random.below(3)) % 5), random_value(random, depth - 1)))),
    }
}

#[test]
fn floats_are_written_as_serde_json_writes_them() {
    let (mut random, mut other) = (Random(1), Random(11));
    let chosen =
        [0.0, -0.0, 1.0, 1.5, 0.1, 1e-7, 1e-5, 1e-6, 1.5e-5, 1e15, 1e16, 2.5e16, 1e20, 1e21, 123456.0, 5e-324, f64::MAX, f64::MIN_POSITIVE];
    let random_bits = (0..200_000).map(|_| f64::from_bits(random.next()));
    // Small exponents and few digits, where plain and exponent forms meet.
    let short = (0..20_000).map(|_| (other.below(2000) as f64 - 1000.0) * 10f64.powi(other.below(50) as i32 - 25));
    for f in chosen.into_iter().chain(random_bits).chain(short).filter(|f| f.is_finite()) {
        let ours = Value::Number(Number::Float(f)).to_string();
        assert_eq!(ours, serde_json::to_string(&f).unwrap(), "{f:e} ({:#x})", f.to_bits());
        assert_eq!(parse(ours.as_bytes()).unwrap().as_f64(), Some(f), "{ours} reads back");
    }
}

#[test]
fn compact_and_pretty_output_match_serde_json_and_read_back() {
    let mut random = Random(2);
    for _ in 0..3000 {
        let value = random_value(&mut random, 4);
        let theirs = to_serde(&value);
        let compact = value.to_string();
        assert_eq!(compact, serde_json::to_string(&theirs).unwrap());
        assert_eq!(to_string_pretty(&value), serde_json::to_string_pretty(&theirs).unwrap());
        assert_eq!(parse(compact.as_bytes()).unwrap(), value, "{compact}");
        assert_eq!(parse(to_string_pretty(&value).as_bytes()).unwrap(), value);
    }
}

/// Accepted and rejected alike, the same value or the same message (line and column included).
#[test]
fn reads_as_serde_json_reads() {
    let inputs: &[&[u8]] = &[
        b"0",
        b"-0",
        b"-0.0",
        b"1.0",
        b"1.5E3",
        b"0.1e1",
        b"3e2",
        b"-1.0",
        b"1e-400",
        b"18446744073709551615",
        b"18446744073709551616",
        b"-9223372036854775808",
        b"-9223372036854775809",
        b"123456789012345678901234567890",
        b" [1, 2.5, -3, true, false, null, \"x\"] ",
        b"{\"b\": 1, \"a\": [{}], \"a\": 2}",
        b"\"\\u00e9\\uD83D\\uDE00\\/\\b\"",
        b"\"\xc3\xa9\"",
        b"{\"a\":\n  {\"b\": [\r\n\t1]}}",
        b"",
        b" ",
        b"\n\n",
        b"[",
        b"{",
        b"[1",
        b"[1,",
        b"{\"a\"",
        b"{\"a\":",
        b"{\"a\":1",
        b"{\"a\":1,",
        b"\"abc",
        b"\"\\",
        b"\"\\u12",
        b"\"\\u12\"",
        b"-",
        b"1.",
        b"1e",
        b"1e+",
        b"tru",
        b"nul",
        b"[1,]",
        b"{\"a\":1,}",
        b"[1 2]",
        b"{\"a\" 1}",
        b"{1:2}",
        b"{\"a\":1 \"b\"}",
        b"{\"a\":1,2}",
        b"01",
        b"-01",
        b"2.e3",
        b"1ex",
        b"-a",
        b".5",
        b"+1",
        b"1e400",
        b"-1e400",
        b"NaN",
        b"Infinity",
        b"trux",
        b"[1] x",
        b"1 x",
        b"\"\t\"",
        b"\"a\nb\"",
        b"\"\\x\"",
        b"\"\\uzzzz\"",
        b"[\"\\ud800\"]",
        b"[\"\\udc00\"]",
        b"\"\\ud800\\u0041\"",
        b"\"\\ud800\\\\\"",
        b"\"\\ud800\\n\"",
        b"\"\\ud800",
        b"\"\\ud800\\",
        b"/* c */ 1",
        b"[1] // c",
        b"\xef\xbb\xbf1",
        b"\"\xff\"",
        b"[\"a\xed\xa0\x80\"]",
        b"\xff",
        b"[}",
        b"{]",
        b"[\n1\n,\n]",
    ];
    for input in inputs {
        assert_read_alike(input);
    }
}

#[test]
fn numbers_keep_serde_json_s_integer_and_float_kinds() {
    let read = |text: &str| parse(text.as_bytes()).unwrap();
    assert_eq!(read("1.0").as_u64(), None);
    assert_eq!(read("1.0").as_f64(), Some(1.0));
    assert_eq!(read("7").as_u64(), Some(7));
    assert_eq!(read("-7").as_u64(), None);
    assert_eq!(read("-7").as_i64(), Some(-7));
    assert_eq!(read("9223372036854775808").as_i64(), None);
    assert_eq!(read("9223372036854775808").as_u64(), Some(1 << 63));
    assert_eq!(read("18446744073709551616"), Value::Number(Number::Float(18446744073709551616.0)));
    assert_eq!(read("-0"), Value::Number(Number::Float(-0.0)));
    assert_eq!(read("-9223372036854775808").as_i64(), Some(i64::MIN));
}

#[test]
fn huge_numbers_and_deep_nesting_are_errors_at_their_place() {
    let error = |bytes: &[u8]| parse(bytes).unwrap_err().to_string();
    assert_eq!(error(&vec![b'9'; 400]), "number out of range at line 1 column 400");
    assert_eq!(parse(format!("1{}e-999999999999", "0".repeat(1000)).as_bytes()).unwrap().as_f64(), Some(0.0));
    for open in ["[", "{\"a\":", " [ "] {
        let deep = open.repeat(100_000);
        let text = error(deep.as_bytes());
        assert!(text.starts_with("recursion limit exceeded at line 1 column"), "{text}");
        assert_eq!(text, serde_parse(deep.as_bytes()).unwrap_err());
    }
    let limit = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
    assert!(parse(limit(read::DEPTH_LIMIT - 1).as_bytes()).is_ok());
    assert_eq!(error(limit(read::DEPTH_LIMIT).as_bytes()), "recursion limit exceeded at line 1 column 128");
}

#[test]
fn strings_reject_what_is_not_unicode() {
    let error = |bytes: &[u8]| parse(bytes).unwrap_err().to_string();
    assert_eq!(error(b"\xef\xbb\xbf{}"), "expected value at line 1 column 1", "no byte order mark");
    assert_eq!(error(b"\"ab\xc3\""), "invalid unicode code point at line 1 column 4");
    assert_eq!(error(b"\"\xed\xa0\x80\""), "invalid unicode code point at line 1 column 2", "a surrogate in UTF-8");
    assert_eq!(error(b"\"\\udfff\""), "lone leading surrogate in hex escape at line 1 column 7");
    assert_eq!(error(b"\"\\ud800x\""), "unexpected end of hex escape at line 1 column 8");
    assert_eq!(error(b"\"\x1f\""), "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 2");
    assert_eq!(parse(b"\"\\u0000\\uDBFF\\uDFFF\x7f\"").unwrap(), Value::String("\u{0}\u{10ffff}\u{7f}".to_string()));
}

#[test]
fn random_bytes_read_as_serde_json_reads_them() {
    let mut random = Random(3);
    let alphabet = b"[]{}\",:0123456789-+.eE \n\\utrfalsn\x00\xc3\xa9\xff";
    for _ in 0..20_000 {
        let mut bytes: Vec<u8> = (0..random.below(24)).map(|_| alphabet[random.below(alphabet.len() as u64) as usize]).collect();
        if random.below(2) == 0 {
            // Mostly valid: a written value, one byte changed.
            bytes = random_value(&mut random, 3).to_string().into_bytes();
            let at = random.below(bytes.len() as u64) as usize;
            bytes[at] = alphabet[random.below(alphabet.len() as u64) as usize];
        }
        assert_read_alike(&bytes);
    }
}

#[test]
fn values_index_as_serde_json_values_do() {
    let mut value = json!({"a": [1, {"b": null}], "n": -1, "f": 2.5, "s": "x", "t": true, "o": Some("y"), "none": None::<u64>});
    assert_eq!(value["a"][1]["b"], Value::Null);
    assert_eq!(value["missing"]["deeper"][3], Value::Null);
    assert_eq!(value["a"][0].as_u64(), Some(1));
    assert_eq!(value["n"].as_i64(), Some(-1));
    assert_eq!(value["f"].as_f64(), Some(2.5));
    assert_eq!((value["s"].as_str(), value["t"].as_bool(), value["o"].as_str()), (Some("x"), Some(true), Some("y")));
    assert!(value["none"].is_null() && value.get("none").is_some() && value.get("absent").is_none());
    value["a"][1]["b"] = json!([null, [], {}]);
    value["new"]["inner"] = json!("made");
    value.as_object_mut().unwrap().remove("f");
    let expected = r#"{"a":[1,{"b":[null,[],{}]}],"n":-1,"new":{"inner":"made"},"none":null,"o":"y","s":"x","t":true}"#;
    assert_eq!(value.to_string(), expected);
    assert_eq!(json!([f64::NAN, i64::MIN, u64::MAX, "a\"b"]).to_string(), r#"[null,-9223372036854775808,18446744073709551615,"a\"b"]"#);
}
