//! Tensor element types as TVM names them (`int8`, `float32`, ...).

use std::fmt;

use crate::error::{Error, ErrorKind, Result};

/// DLPack type code: signed integer, unsigned integer, IEEE float or bfloat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TypeCode {
    /// Signed two's-complement integer (`int8`, ...; DLPack `kDLInt`).
    Int,
    /// Unsigned integer (`uint8`, ..., and `bool`; DLPack `kDLUInt`).
    UInt,
    /// IEEE 754 float (`float32`, ...; DLPack `kDLFloat`).
    Float,
    /// bfloat16 (DLPack `kDLBfloat`).
    BFloat,
}

impl TypeCode {
    /// The numeric code DLPack uses (`kDLInt` = 0, ...).
    pub fn dl_code(self) -> u8 {
        match self {
            TypeCode::Int => 0,
            TypeCode::UInt => 1,
            TypeCode::Float => 2,
            TypeCode::BFloat => 4,
        }
    }
}

/// A scalar element type: code and bit width (lanes are always 1 in MLF archives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DType {
    /// What kind of number an element is.
    pub code: TypeCode,
    /// The width of one element in bits.
    pub bits: u8,
}

impl DType {
    /// Parses TVM's spelling: `int8`, `uint16`, `float32`, `bfloat16`, `bool`.
    pub fn parse(name: &str) -> Result<DType> {
        let name = name.trim();
        if name == "bool" {
            return Ok(DType { code: TypeCode::UInt, bits: 8 });
        }
        let (code, bits) = if let Some(bits) = name.strip_prefix("uint") {
            (TypeCode::UInt, bits)
        } else if let Some(bits) = name.strip_prefix("int") {
            (TypeCode::Int, bits)
        } else if let Some(bits) = name.strip_prefix("bfloat") {
            (TypeCode::BFloat, bits)
        } else if let Some(bits) = name.strip_prefix("float") {
            (TypeCode::Float, bits)
        } else {
            return Err(unknown(name));
        };
        let bits: u8 = bits.parse().map_err(|_| unknown(name))?;
        let valid = match code {
            TypeCode::Int | TypeCode::UInt => matches!(bits, 8 | 16 | 32 | 64),
            TypeCode::Float => matches!(bits, 16 | 32 | 64),
            TypeCode::BFloat => bits == 16,
        };
        if valid {
            Ok(DType { code, bits })
        } else {
            Err(unknown(name))
        }
    }

    /// From DLPack's code and bits, as stored in `.params` files.
    pub fn from_dl(code: u8, bits: u8) -> Option<DType> {
        let code = match code {
            0 => TypeCode::Int,
            1 => TypeCode::UInt,
            2 => TypeCode::Float,
            4 => TypeCode::BFloat,
            _ => return None,
        };
        DType::parse(&DType { code, bits }.to_string()).ok()
    }

    /// Bytes of one element.
    pub fn size_bytes(self) -> usize {
        usize::from(self.bits / 8)
    }

    /// The Rust element type a buffer of this dtype holds (`f16`/`bf16` as raw `u16`).
    pub fn rust_type(self) -> &'static str {
        match (self.code, self.bits) {
            (TypeCode::Int, 8) => "i8",
            (TypeCode::Int, 16) => "i16",
            (TypeCode::Int, 32) => "i32",
            (TypeCode::Int, 64) => "i64",
            (TypeCode::UInt, 8) => "u8",
            (TypeCode::UInt, 16) => "u16",
            (TypeCode::UInt, 32) => "u32",
            (TypeCode::UInt, 64) => "u64",
            (TypeCode::Float, 32) => "f32",
            (TypeCode::Float, 64) => "f64",
            (TypeCode::Float | TypeCode::BFloat, _) => "u16",
            (_, _) => "u8",
        }
    }

    /// The C element type, for generated C.
    pub fn c_type(self) -> &'static str {
        match (self.code, self.bits) {
            (TypeCode::Int, 8) => "int8_t",
            (TypeCode::Int, 16) => "int16_t",
            (TypeCode::Int, 32) => "int32_t",
            (TypeCode::Int, 64) => "int64_t",
            (TypeCode::UInt, 16) => "uint16_t",
            (TypeCode::UInt, 32) => "uint32_t",
            (TypeCode::UInt, 64) => "uint64_t",
            (TypeCode::Float, 32) => "float",
            (TypeCode::Float, 64) => "double",
            (TypeCode::Float | TypeCode::BFloat, _) => "uint16_t",
            (_, _) => "uint8_t",
        }
    }
}

fn unknown(name: &str) -> Error {
    Error::new(ErrorKind::Metadata, format!("unknown tensor dtype `{name}`"))
        .help("supported dtypes: int8/16/32/64, uint8/16/32/64, float16/32/64, bfloat16, bool")
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.code {
            TypeCode::Int => "int",
            TypeCode::UInt => "uint",
            TypeCode::Float => "float",
            TypeCode::BFloat => "bfloat",
        };
        write!(f, "{prefix}{}", self.bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_tvm_names() {
        for name in ["int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64", "bfloat16"] {
            assert_eq!(DType::parse(name).unwrap().to_string(), name);
        }
        assert_eq!(DType::parse("bool").unwrap(), DType { code: TypeCode::UInt, bits: 8 });
        assert_eq!(DType::parse("float32").unwrap().rust_type(), "f32");
        assert_eq!(DType::parse("int8").unwrap().size_bytes(), 1);
    }

    #[test]
    fn rejects_unknown_names() {
        for name in ["int7", "float8", "complex64", "", "int"] {
            assert!(DType::parse(name).is_err(), "{name}");
        }
    }
}
