//! Plain data kept in the build's cache files (toolchain answers, object
//! records, stack bounds) as JSON, written and read through `json::Value`
//! rather than serde's derive, whose proc-macro tree (with a `syn` of its own)
//! every user's first build would otherwise compile.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::json::{self, Value};

/// A value a cache file holds; `from_json` is `None` for anything not written by `to_json`.
pub(crate) trait Record: Sized {
    fn to_json(&self) -> Value;
    fn from_json(value: &Value) -> Option<Self>;
}

/// Implements [`Record`] for a struct as a JSON object of the named fields.
macro_rules! record_struct {
    ($name:ident { $($field:ident),* $(,)? }) => {
        impl $crate::cargo::record::Record for $name {
            fn to_json(&self) -> $crate::json::Value {
                let mut fields = $crate::json::Map::new();
                $(fields.insert(stringify!($field).to_string(), $crate::cargo::record::Record::to_json(&self.$field));)*
                $crate::json::Value::Object(fields)
            }

            fn from_json(value: &$crate::json::Value) -> Option<Self> {
                let fields = value.as_object()?;
                Some($name { $($field: $crate::cargo::record::Record::from_json(fields.get(stringify!($field))?)?),* })
            }
        }
    };
}
pub(crate) use record_struct;

/// `value` as the bytes of a cache file.
pub(crate) fn to_bytes(value: &impl Record) -> Vec<u8> {
    value.to_json().to_string().into_bytes()
}

/// The value a cache file's `bytes` hold, if they are one.
pub(crate) fn from_bytes<T: Record>(bytes: &[u8]) -> Option<T> {
    T::from_json(&json::parse(bytes).ok()?)
}

impl Record for String {
    fn to_json(&self) -> Value {
        Value::String(self.clone())
    }

    fn from_json(value: &Value) -> Option<Self> {
        value.as_str().map(str::to_string)
    }
}

impl Record for u64 {
    fn to_json(&self) -> Value {
        Value::from(*self)
    }

    fn from_json(value: &Value) -> Option<Self> {
        value.as_u64()
    }
}

impl Record for bool {
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }

    fn from_json(value: &Value) -> Option<Self> {
        value.as_bool()
    }
}

/// UTF-8 as a string; other bytes (Unix) as an array of them. Elsewhere a name
/// that is not UTF-8 is written as `null`, which reads as nothing: not cached.
impl Record for OsString {
    fn to_json(&self) -> Value {
        if let Some(text) = self.to_str() {
            return Value::String(text.to_string());
        }
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            Value::Array(self.as_bytes().iter().map(|byte| Value::from(*byte)).collect())
        }
        #[cfg(not(unix))]
        Value::Null
    }

    fn from_json(value: &Value) -> Option<Self> {
        match value {
            Value::String(text) => Some(OsString::from(text)),
            #[cfg(unix)]
            Value::Array(bytes) => {
                use std::os::unix::ffi::OsStringExt;
                let bytes: Option<Vec<u8>> = bytes.iter().map(|byte| byte.as_u64().and_then(|byte| u8::try_from(byte).ok())).collect();
                Some(OsString::from_vec(bytes?))
            }
            _ => None,
        }
    }
}

impl Record for PathBuf {
    fn to_json(&self) -> Value {
        self.as_os_str().to_os_string().to_json()
    }

    fn from_json(value: &Value) -> Option<Self> {
        OsString::from_json(value).map(PathBuf::from)
    }
}

impl<T: Record> Record for Option<T> {
    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, Record::to_json)
    }

    fn from_json(value: &Value) -> Option<Self> {
        match value {
            Value::Null => Some(None),
            value => T::from_json(value).map(Some),
        }
    }
}

impl<T: Record> Record for Vec<T> {
    fn to_json(&self) -> Value {
        Value::Array(self.iter().map(Record::to_json).collect())
    }

    fn from_json(value: &Value) -> Option<Self> {
        value.as_array()?.iter().map(T::from_json).collect()
    }
}

impl<A: Record, B: Record> Record for (A, B) {
    fn to_json(&self) -> Value {
        Value::Array(vec![self.0.to_json(), self.1.to_json()])
    }

    fn from_json(value: &Value) -> Option<Self> {
        match value.as_array()?.as_slice() {
            [a, b] => Some((A::from_json(a)?, B::from_json(b)?)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Sample {
        name: String,
        count: u64,
        flag: bool,
        paths: Vec<(PathBuf, Option<String>)>,
        program: OsString,
    }
    record_struct!(Sample { name, count, flag, paths, program });

    #[test]
    fn records_read_back_what_was_written_and_nothing_else() {
        #[cfg(unix)]
        let program = {
            use std::os::unix::ffi::OsStringExt;
            OsString::from_vec(vec![b'c', 0xff, b'c'])
        };
        #[cfg(not(unix))]
        let program = OsString::from("cc");
        let sample = Sample {
            name: "a\"b".to_string(),
            count: u64::MAX,
            flag: true,
            paths: vec![(PathBuf::from("/x y"), None), (PathBuf::from("z"), Some("1 2".to_string()))],
            program,
        };
        assert_eq!(from_bytes::<Sample>(&to_bytes(&sample)), Some(sample));
        for broken in [&b"{}"[..], b"[]", b"{\"name\":1}", b"not json"] {
            assert_eq!(from_bytes::<Sample>(broken), None);
        }
    }
}
