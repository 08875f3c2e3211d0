//! TVM's `.params` binary format: the named weight tensors of a graph module.
//!
//! Layout (little-endian): list magic, reserved word, the names, then one
//! NDArray record per name. Every read is bounds-checked: a damaged file is
//! an error naming the byte offset, never a panic.

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};

/// What to do about a `.params` file that cannot be read.
const PARAMS_DAMAGED: &str = "the file is damaged and the weights cannot be read from it: pass the archive's original .params file";

const LIST_MAGIC: u64 = 0xF7E5_8D4F_0504_9CB7;
const ARRAY_MAGIC: u64 = 0xDD5E_40F0_96B4_A13F;
/// Far above any real tensor rank; catches garbage read as a rank.
const MAX_NDIM: i32 = 32;

/// One named tensor of a `.params` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub data: Vec<u8>,
    /// DLPack device type the tensor was saved from (1 = CPU).
    pub device_type: i32,
}

/// Parses a whole `.params` file; `file` names it in errors. Parameters come in file order.
pub(crate) fn parse(bytes: &[u8], file: &str) -> Result<Vec<Param>> {
    let mut reader = Reader { bytes, pos: 0, file };
    let magic = reader.u64("the list magic")?;
    if magic != LIST_MAGIC {
        return Err(reader.error_at(0, format!("expected list magic 0x{LIST_MAGIC:016X}, found 0x{magic:016X}")));
    }
    reader.u64("the reserved word")?;

    let name_count = reader.u64("the name count")?;
    // No capacity from the untrusted count: each name needs 8 bytes, so a
    // bogus count fails as truncation after at most len/8 iterations.
    let mut names = Vec::new();
    for i in 0..name_count {
        let len = reader.u64(&format!("the length of name {i}"))?;
        let at = reader.pos;
        let raw = reader.take(len, &format!("name {i}"))?;
        let name = std::str::from_utf8(raw).map_err(|_| reader.error_at(at, format!("name {i} is not UTF-8")))?;
        names.push(name.to_string());
    }

    let at = reader.pos;
    let array_count = reader.u64("the array count")?;
    if array_count != names.len() as u64 {
        return Err(reader.error_at(at, format!("the file names {} parameters but holds {array_count} arrays", names.len())));
    }
    let params = names.into_iter().map(|name| reader.array(name)).collect::<Result<Vec<_>>>()?;

    if reader.pos != bytes.len() {
        let extra = bytes.len() - reader.pos;
        return Err(reader.error_at(reader.pos, format!("{extra} unexpected bytes after the last array")));
    }
    Ok(params)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    file: &'a str,
}

impl<'a> Reader<'a> {
    fn error_at(&self, at: usize, message: String) -> Error {
        damaged(self.file, format!("at byte {at}: {message}"))
    }

    /// The next `len` bytes; `what` says what they were meant to be.
    fn take(&mut self, len: u64, what: &str) -> Result<&'a [u8]> {
        let remaining = self.bytes.len() - self.pos;
        match usize::try_from(len) {
            Ok(n) if n <= remaining => {
                let slice = &self.bytes[self.pos..self.pos + n];
                self.pos += n;
                Ok(slice)
            }
            _ => Err(damaged(
                self.file,
                format!("truncated at byte {}: needed {len} bytes for {what}, file has {}", self.pos, self.bytes.len()),
            )),
        }
    }

    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N as u64, what)?);
        Ok(out)
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        self.fixed(what).map(u64::from_le_bytes)
    }

    fn i64(&mut self, what: &str) -> Result<i64> {
        self.fixed(what).map(i64::from_le_bytes)
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        self.fixed(what).map(i32::from_le_bytes)
    }

    /// One NDArray record, for the parameter called `name`.
    fn array(&mut self, name: String) -> Result<Param> {
        let at = self.pos;
        let magic = self.u64(&format!("the array magic of `{name}`"))?;
        if magic != ARRAY_MAGIC {
            return Err(self.error_at(at, format!("expected array magic 0x{ARRAY_MAGIC:016X}, found 0x{magic:016X} (parameter `{name}`)")));
        }
        self.u64("the reserved word")?;
        let device_type = self.i32("the device type")?;
        self.i32("the device id")?;

        let at = self.pos;
        let ndim = self.i32("the number of dimensions")?;
        if !(0..=MAX_NDIM).contains(&ndim) {
            return Err(self.error_at(at, format!("parameter `{name}` has {ndim} dimensions; expected 0 to {MAX_NDIM}")));
        }

        let at = self.pos;
        let [code, bits, lanes_lo, lanes_hi] = self.fixed::<4>("the dtype")?;
        let lanes = u16::from_le_bytes([lanes_lo, lanes_hi]);
        if lanes != 1 {
            return Err(self.error_at(at, format!("parameter `{name}` is a vector type with {lanes} lanes; expected 1")));
        }
        let dtype = DType::from_dl(code, bits)
            .ok_or_else(|| self.error_at(at, format!("parameter `{name}` has unknown dtype (type code {code}, {bits} bits)")))?;

        let mut shape = Vec::new();
        for _ in 0..ndim {
            let at = self.pos;
            let dim = self.i64(&format!("the shape of `{name}`"))?;
            if dim < 0 {
                return Err(self.error_at(at, format!("parameter `{name}` has negative dimension {dim}")));
            }
            shape.push(dim);
        }

        let at = self.pos;
        let nbytes = self.i64("the tensor byte count")?;
        let expected =
            shape.iter().try_fold(dtype.size_bytes() as u64, |acc, &dim| acc.checked_mul(dim as u64)).and_then(|n| i64::try_from(n).ok());
        if expected != Some(nbytes) {
            let needs = expected.map_or_else(|| "more than fits in 64 bits".to_string(), |n| format!("{n} bytes"));
            return Err(
                self.error_at(at, format!("parameter `{name}` stores {nbytes} bytes, but shape {shape:?} of {dtype} needs {needs}"))
            );
        }
        let data = self.take(nbytes as u64, &format!("the data of `{name}`"))?.to_vec();
        Ok(Param { name, dtype, shape, data, device_type })
    }
}

fn damaged(file: &str, message: String) -> Error {
    Error::new(ErrorKind::Metadata, message).in_file(file).help(PARAMS_DAMAGED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::graph;
    use crate::input::graph::tests::{corpus_member, GRAPH_CASES};

    /// One hand-made array record.
    struct Raw {
        name: String,
        code: u8,
        bits: u8,
        lanes: u16,
        shape: Vec<i64>,
        nbytes: i64,
    }

    impl Raw {
        fn f32(name: &str, shape: &[i64]) -> Raw {
            let nbytes = shape.iter().product::<i64>() * 4;
            Raw { name: name.to_string(), code: 2, bits: 32, lanes: 1, shape: shape.to_vec(), nbytes }
        }
    }

    fn build(arrays: &[Raw]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(LIST_MAGIC.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend((arrays.len() as u64).to_le_bytes());
        for a in arrays {
            out.extend((a.name.len() as u64).to_le_bytes());
            out.extend(a.name.as_bytes());
        }
        out.extend((arrays.len() as u64).to_le_bytes());
        for a in arrays {
            out.extend(ARRAY_MAGIC.to_le_bytes());
            out.extend(0u64.to_le_bytes());
            out.extend(1i32.to_le_bytes());
            out.extend(0i32.to_le_bytes());
            out.extend((a.shape.len() as i32).to_le_bytes());
            out.extend([a.code, a.bits]);
            out.extend(a.lanes.to_le_bytes());
            for dim in &a.shape {
                out.extend(dim.to_le_bytes());
            }
            out.extend(a.nbytes.to_le_bytes());
            out.extend((0..a.nbytes.max(0)).map(|i| i as u8));
        }
        out
    }

    fn error_text(bytes: &[u8]) -> String {
        let error = parse(bytes, "parameters/default.params").expect_err("should be rejected");
        assert_eq!(error.help_text(), Some(PARAMS_DAMAGED));
        assert_eq!(error.file(), Some("parameters/default.params"));
        error.to_string()
    }

    #[test]
    fn parses_hand_built_file() {
        let bytes = build(&[Raw::f32("p0", &[2, 3]), Raw { code: 0, bits: 8, nbytes: 1, ..Raw::f32("scalar", &[]) }]);
        let params = parse(&bytes, "x.params").unwrap();
        assert_eq!(params.len(), 2);
        assert_eq!(params[0].name, "p0");
        assert_eq!(params[0].shape, [2, 3]);
        assert_eq!(params[0].dtype.to_string(), "float32");
        assert_eq!(params[0].data, (0..24).collect::<Vec<u8>>());
        assert_eq!(params[0].device_type, 1);
        assert_eq!(params[1].name, "scalar");
        assert!(params[1].shape.is_empty());
        assert_eq!(params[1].dtype.to_string(), "int8");
        assert_eq!(params[1].data.len(), 1);
    }

    #[test]
    fn empty_list_is_valid() {
        let bytes = build(&[]);
        assert_eq!(bytes.len(), 32);
        assert!(parse(&bytes, "x.params").unwrap().is_empty());
    }

    #[test]
    fn every_truncation_is_an_error_naming_the_offset() {
        let bytes = build(&[Raw::f32("p0", &[2, 2]), Raw::f32("p1", &[3])]);
        for len in 0..bytes.len() {
            let text = error_text(&bytes[..len]);
            assert!(text.contains("truncated at byte "), "{len}: {text}");
            assert!(text.contains(&format!("file has {len}")), "{len}: {text}");
        }
    }

    #[test]
    fn truncation_says_what_was_expected() {
        let bytes = build(&[Raw::f32("p0", &[2, 2])]);
        // List header 24, name "p0" 10, array count 8; then the array's fixed header 32 and 2 dims.
        let nbytes_at = 24 + 10 + 8 + 32 + 16;
        let text = error_text(&bytes[..nbytes_at + 3]);
        assert!(
            text.contains(&format!("truncated at byte {nbytes_at}: needed 8 bytes for the tensor byte count, file has {}", nbytes_at + 3)),
            "{text}"
        );
        let text = error_text(&bytes[..20]);
        assert!(text.contains("truncated at byte 16: needed 8 bytes for the name count, file has 20"), "{text}");
        let text = error_text(&bytes[..33]);
        assert!(text.contains("truncated at byte 32: needed 2 bytes for name 0, file has 33"), "{text}");
        let text = error_text(&bytes[..bytes.len() - 1]);
        assert!(text.contains("needed 16 bytes for the data of `p0`"), "{text}");
    }

    #[test]
    fn rejects_bad_magics() {
        let mut bytes = build(&[Raw::f32("p0", &[1])]);
        bytes[0] ^= 0xFF;
        let text = error_text(&bytes);
        assert!(
            text.contains("parameters/default.params: at byte 0: expected list magic 0xF7E58D4F05049CB7, found 0xF7E58D4F05049C48"),
            "{text}"
        );

        let mut bytes = build(&[Raw::f32("p0", &[1])]);
        bytes[42..50].copy_from_slice(&7u64.to_le_bytes());
        let text = error_text(&bytes);
        assert!(text.contains("at byte 42: expected array magic 0xDD5E40F096B4A13F, found 0x0000000000000007 (parameter `p0`)"), "{text}");
    }

    #[test]
    fn rejects_nbytes_mismatch() {
        let bytes = build(&[Raw { nbytes: 12, ..Raw::f32("p0", &[2, 2]) }]);
        let text = error_text(&bytes);
        assert!(text.contains("at byte 90: parameter `p0` stores 12 bytes, but shape [2, 2] of float32 needs 16 bytes"), "{text}");

        let huge = Raw { name: "huge".into(), code: 2, bits: 32, lanes: 1, shape: vec![i64::MAX, 4], nbytes: 0 };
        let bytes = build(&[huge]);
        assert!(error_text(&bytes).contains("needs more than fits in 64 bits"));
    }

    #[test]
    fn rejects_bad_headers() {
        let bytes = build(&[Raw { lanes: 4, ..Raw::f32("v", &[2]) }]);
        assert!(error_text(&bytes).contains("parameter `v` is a vector type with 4 lanes"));

        let bytes = build(&[Raw { code: 3, ..Raw::f32("p0", &[2]) }]);
        assert!(error_text(&bytes).contains("at byte 70: parameter `p0` has unknown dtype (type code 3, 32 bits)"));

        let mut bytes = build(&[Raw::f32("p0", &[2])]);
        bytes[66..70].copy_from_slice(&(-1i32).to_le_bytes());
        assert!(error_text(&bytes).contains("at byte 66: parameter `p0` has -1 dimensions; expected 0 to 32"));

        let bytes = build(&[Raw { nbytes: 0, ..Raw::f32("neg", &[-2]) }]);
        assert!(error_text(&bytes).contains("parameter `neg` has negative dimension -2"));

        // Two names, one array.
        let mut bytes = build(&[Raw::f32("a", &[1]), Raw::f32("b", &[1])]);
        bytes[42..50].copy_from_slice(&1u64.to_le_bytes());
        assert!(error_text(&bytes).contains("at byte 42: the file names 2 parameters but holds 1 arrays"));

        let mut bytes = build(&[Raw::f32("p0", &[1])]);
        bytes.extend([0, 0, 0]);
        assert!(error_text(&bytes).contains("at byte 94: 3 unexpected bytes after the last array"));

        let mut bytes = build(&[Raw::f32("p0", &[1])]);
        bytes[32] = 0xFF;
        assert!(error_text(&bytes).contains("at byte 32: name 0 is not UTF-8"));
    }

    #[test]
    fn parses_corpus_params() {
        let mut seen = 0;
        for (archive, graph_path) in GRAPH_CASES {
            let Some(bytes) = corpus_member(archive, "parameters/default.params") else { continue };
            seen += 1;
            let params = parse(&bytes, "parameters/default.params").unwrap_or_else(|e| panic!("{archive}: {e}"));
            let graph_bytes = corpus_member(archive, graph_path).unwrap_or_else(|| panic!("{archive}: no {graph_path}"));
            let graph = graph::parse(&graph_bytes, graph_path).unwrap_or_else(|e| panic!("{archive}: {e}"));
            // Every weight is a null arg node of the same shape and dtype.
            for param in &params {
                assert!(param.name.starts_with('p') && param.name[1..].parse::<u32>().is_ok(), "{archive}: {}", param.name);
                assert_eq!(param.device_type, 1, "{archive}: {}", param.name);
                let node = graph.arg_nodes.iter().copied().find(|&n| graph.nodes[n].name == param.name);
                let node = node.unwrap_or_else(|| panic!("{archive}: `{}` is no arg node", param.name));
                let entry = &graph.entries[graph.entry_id(graph::EntryRef { node, index: 0 })];
                assert_eq!((&entry.shape, entry.dtype), (&param.shape, param.dtype), "{archive}: {}", param.name);
            }
            let mut names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), params.len(), "{archive}: duplicate names");
            match *archive {
                "tvm-0.18/kws_int8-graph_linked" => assert!(params.is_empty()),
                "tvm-0.18/mobilenet_f32-graph" => assert_eq!(params.len(), 137),
                _ => assert!(!params.is_empty(), "{archive}"),
            }
        }
        if seen > 0 {
            assert_eq!(seen, GRAPH_CASES.len());
        }
    }

    #[test]
    fn cnn_params_are_the_weight_arg_nodes() {
        let archive = "tvm-0.18/cnn_f32-graph";
        let (Some(params), Some(graph)) =
            (corpus_member(archive, "parameters/default.params"), corpus_member(archive, "executor-config/graph/default.graph"))
        else {
            return;
        };
        let params = parse(&params, "parameters/default.params").unwrap();
        let graph = graph::parse(&graph, "executor-config/graph/default.graph").unwrap();
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["p0", "p1", "p2"]);
        let weights: Vec<&str> =
            graph.arg_nodes.iter().map(|&n| graph.nodes[n].name.as_str()).filter(|name| names.contains(name)).collect();
        assert_eq!(weights, names);
        assert_eq!(graph.input_nodes(&names).len(), 1);
        assert_eq!(params[2].shape, [5, 256]);
        assert_eq!(params[2].data.len(), 5 * 256 * 4);
    }
}
