//! JSON without dependencies: the reader of the archive's JSON (metadata.json,
//! the graph) and of mlf-build's own cache files, and the writer of the
//! reports (`mlf/<module>.json`, `mlf-build inspect --json`).
//!
//! It replaces serde_json, whose crates (serde, serde_core, itoa, zmij and
//! their build scripts) every user's first build compiled before mlf-build,
//! and behaves as serde_json 1.0 without features does: RFC 8259 strictly
//! (no comments, trailing commas, `NaN`, leading zeros, byte order mark,
//! unescaped control characters, lone surrogates or invalid UTF-8), objects
//! with sorted keys where the last of duplicate keys wins, the same
//! integer/float split of numbers, errors `... at line L column C`, and
//! output byte for byte the same (floats: shortest round trip). Floats are
//! read correctly rounded, as serde_json with its `float_roundtrip` feature
//! reads them (without it, serde_json can be one unit in the last place off).

mod read;
mod write;

use std::collections::BTreeMap;
use std::ops::{Index, IndexMut};

pub use read::{parse, Error};
pub(crate) use read::{parse_tree, Tree};
pub use write::to_string_pretty;

/// A JSON object: keys sorted, as serde_json's default `Map`.
pub type Map = BTreeMap<String, Value>;

/// A JSON value, as serde_json's `Value` (without `preserve_order`).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// `null`.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object.
    Object(Map),
}

/// A JSON number: a non-negative integer, a negative one, or a finite float;
/// as in serde_json, `1.0` is a float and `-0` is the float `-0.0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// An integer from 0 to `u64::MAX`.
    PosInt(u64),
    /// An integer below 0, down to `i64::MIN`.
    NegInt(i64),
    /// Any other number, finite.
    Float(f64),
}

impl Number {
    fn from_i64(n: i64) -> Number {
        u64::try_from(n).map_or(Number::NegInt(n), Number::PosInt)
    }
}

impl Value {
    /// An object of `entries`; the last of duplicate keys wins.
    pub fn object<K: Into<String>>(entries: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Object(entries.into_iter().map(|(key, value)| (key.into(), value)).collect())
    }

    /// The member `key` of an object, or the item `index` of an array.
    pub fn get(&self, index: impl Key) -> Option<&Value> {
        index.get(self)
    }

    /// [`Value::get`], mutable.
    pub fn get_mut(&mut self, index: impl Key) -> Option<&mut Value> {
        index.get_mut(self)
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// The integer, if this is one from 0 to `u64::MAX` (not a float, even `1.0`).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(Number::PosInt(n)) => Some(*n),
            _ => None,
        }
    }

    /// The integer, if this is one from `i64::MIN` to `i64::MAX` (not a float).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::PosInt(n)) => i64::try_from(*n).ok(),
            Value::Number(Number::NegInt(n)) => Some(*n),
            _ => None,
        }
    }

    /// Any number, as the nearest `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::PosInt(n)) => Some(*n as f64),
            Value::Number(Number::NegInt(n)) => Some(*n as f64),
            Value::Number(Number::Float(n)) => Some(*n),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The items, if this is an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// [`Value::as_array`], mutable.
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The members, if this is an object.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// [`Value::as_object`], mutable.
    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

/// What indexes a [`Value`]: a `&str` (an object's key) or a `usize` (an array's item).
pub trait Key: sealed::Sealed {
    #[doc(hidden)]
    fn get(self, value: &Value) -> Option<&Value>;
    #[doc(hidden)]
    fn get_mut(self, value: &mut Value) -> Option<&mut Value>;
    /// For `value[key] = ...`: `null` becomes an empty object, as in serde_json.
    #[doc(hidden)]
    fn get_or_insert(self, value: &mut Value) -> &mut Value;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for &str {}
    impl Sealed for usize {}
}

impl Key for &str {
    fn get(self, value: &Value) -> Option<&Value> {
        value.as_object()?.get(self)
    }

    fn get_mut(self, value: &mut Value) -> Option<&mut Value> {
        value.as_object_mut()?.get_mut(self)
    }

    fn get_or_insert(self, value: &mut Value) -> &mut Value {
        if value.is_null() {
            *value = Value::Object(Map::new());
        }
        match value {
            Value::Object(map) => map.entry(self.to_string()).or_insert(Value::Null),
            other => panic!("cannot index {} with the key {self:?}", other.kind()),
        }
    }
}

impl Key for usize {
    fn get(self, value: &Value) -> Option<&Value> {
        value.as_array()?.get(self)
    }

    fn get_mut(self, value: &mut Value) -> Option<&mut Value> {
        value.as_array_mut()?.get_mut(self)
    }

    fn get_or_insert(self, value: &mut Value) -> &mut Value {
        match value {
            Value::Array(items) => {
                let len = items.len();
                items.get_mut(self).unwrap_or_else(|| panic!("index {self} out of range for an array of {len}"))
            }
            other => panic!("cannot index {} with {self}", other.kind()),
        }
    }
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// `Null` for what is not there, as serde_json.
impl<K: Key> Index<K> for Value {
    type Output = Value;

    fn index(&self, key: K) -> &Value {
        static NULL: Value = Value::Null;
        key.get(self).unwrap_or(&NULL)
    }
}

/// Inserts a missing key (into `null` too); panics on an array index out of range, as serde_json.
impl<K: Key> IndexMut<K> for Value {
    fn index_mut(&mut self, key: K) -> &mut Value {
        key.get_or_insert(self)
    }
}

/// A Rust value as JSON, as serde_json serializes it (`None` is `null`).
pub trait ToValue {
    /// The value as JSON.
    fn to_value(&self) -> Value;
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::String(self.to_string())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::String(self.clone())
    }
}

macro_rules! unsigned_to_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Number(Number::PosInt(u64::from(*self)))
            }
        }
    )*};
}
unsigned_to_value!(u8, u16, u32, u64);

macro_rules! signed_to_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Number(Number::from_i64(i64::from(*self)))
            }
        }
    )*};
}
signed_to_value!(i8, i16, i32, i64);

impl ToValue for usize {
    fn to_value(&self) -> Value {
        // usize is at most 64 bits on every target Rust supports.
        Value::Number(Number::PosInt(*self as u64))
    }
}

/// NaN and the infinities are `null`, as serde_json's `json!` makes them.
impl ToValue for f64 {
    fn to_value(&self) -> Value {
        if self.is_finite() {
            Value::Number(Number::Float(*self))
        } else {
            Value::Null
        }
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

impl<T: ToValue> ToValue for [T] {
    fn to_value(&self) -> Value {
        Value::Array(self.iter().map(ToValue::to_value).collect())
    }
}

impl<T: ToValue> ToValue for Vec<T> {
    fn to_value(&self) -> Value {
        self.as_slice().to_value()
    }
}

impl<T: ToValue + ?Sized> From<&T> for Value {
    fn from(value: &T) -> Value {
        value.to_value()
    }
}

macro_rules! from_owned {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(value: $t) -> Value {
                value.to_value()
            }
        }
    )*};
}
from_owned!(bool, u8, u16, u32, u64, usize, i8, i16, i32, i64, f64);

impl From<String> for Value {
    fn from(text: String) -> Value {
        Value::String(text)
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::Array(items)
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Value {
        Value::Object(map)
    }
}

impl From<Option<Value>> for Value {
    fn from(value: Option<Value>) -> Value {
        value.unwrap_or(Value::Null)
    }
}

/// A [`Value`] written as JSON, the forms mlf-build uses of serde_json's
/// macro: `null`, `[items]`, `{"key": value}` (keys are string literals),
/// nesting, and any Rust expression whose type is [`ToValue`] (taken by
/// reference).
macro_rules! json {
    (@array [$($done:expr,)*]) => { vec![$($done,)*] };
    (@array [$($done:expr,)*] null $(, $($rest:tt)*)?) => {
        $crate::json::json!(@array [$($done,)* $crate::json::Value::Null,] $($($rest)*)?)
    };
    (@array [$($done:expr,)*] [$($inner:tt)*] $(, $($rest:tt)*)?) => {
        $crate::json::json!(@array [$($done,)* $crate::json::json!([$($inner)*]),] $($($rest)*)?)
    };
    (@array [$($done:expr,)*] {$($inner:tt)*} $(, $($rest:tt)*)?) => {
        $crate::json::json!(@array [$($done,)* $crate::json::json!({$($inner)*}),] $($($rest)*)?)
    };
    (@array [$($done:expr,)*] $next:expr $(, $($rest:tt)*)?) => {
        $crate::json::json!(@array [$($done,)* $crate::json::json!($next),] $($($rest)*)?)
    };

    (@object [$(($key:expr, $value:expr))*]) => {{
        #[allow(unused_mut)]
        let mut map = $crate::json::Map::new();
        $(map.insert($key.to_string(), $value);)*
        map
    }};
    (@object [$($done:tt)*] $key:literal : null $(, $($rest:tt)*)?) => {
        $crate::json::json!(@object [$($done)* ($key, $crate::json::Value::Null)] $($($rest)*)?)
    };
    (@object [$($done:tt)*] $key:literal : [$($inner:tt)*] $(, $($rest:tt)*)?) => {
        $crate::json::json!(@object [$($done)* ($key, $crate::json::json!([$($inner)*]))] $($($rest)*)?)
    };
    (@object [$($done:tt)*] $key:literal : {$($inner:tt)*} $(, $($rest:tt)*)?) => {
        $crate::json::json!(@object [$($done)* ($key, $crate::json::json!({$($inner)*}))] $($($rest)*)?)
    };
    (@object [$($done:tt)*] $key:literal : $value:expr $(, $($rest:tt)*)?) => {
        $crate::json::json!(@object [$($done)* ($key, $crate::json::json!($value))] $($($rest)*)?)
    };

    (null) => { $crate::json::Value::Null };
    ([ $($items:tt)* ]) => { $crate::json::Value::Array($crate::json::json!(@array [] $($items)*)) };
    ({ $($entries:tt)* }) => { $crate::json::Value::Object($crate::json::json!(@object [] $($entries)*)) };
    ($value:expr) => { $crate::json::ToValue::to_value(&$value) };
}
pub(crate) use json;

#[cfg(test)]
mod tests;
