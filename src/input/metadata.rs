//! Reads `metadata.json` of every Model Library Format version (1 to 7), flat
//! or with `modules`, into one model the later stages use without knowing
//! versions. Shapes are recognised by the keys present where TVM added fields
//! without bumping the version; file locations follow the version.

use std::fmt;

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ident;
use crate::json::{self, Number, Tree};

const FILE: &str = "metadata.json";
const OLDEST: u32 = 1;
const NEWEST: u32 = 7;
/// TVM's default `mod_name`, used for archives that do not name their module.
const DEFAULT_MODULE: &str = "default";

const INTEGER: &str = "a non-negative integer";
const STRING: &str = "a string";
const ARRAY: &str = "an array";
const OBJECT: &str = "an object";

/// The whole `metadata.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Metadata {
    pub version: u32,
    /// Sorted by name.
    pub modules: Vec<ModuleMeta>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// A whole Relay model (`style: "full-model"`, or no `style` before v4).
    FullModel,
    /// A single `tvm.build` operator (`style: "operator"`).
    Operator,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Executor {
    Aot,
    Graph,
}

/// One compilation target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The DLPack device type the map form (v1 to v5) keys the target by.
    pub device_type: Option<u32>,
    /// The target string, trimmed: `c -keys=cpu -model=host`.
    pub target: String,
}

impl Target {
    /// The value of the `-key=value` option of the target string, e.g.
    /// `option("mcpu")` or `option("workspace-byte-alignment")`.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.target.split_whitespace().find_map(|word| word.strip_prefix('-')?.strip_prefix(key)?.strip_prefix('='))
    }

    /// The target kind, the first word: `c`, `llvm`.
    #[cfg(test)]
    pub fn kind(&self) -> &str {
        self.target.split_whitespace().next().unwrap_or("")
    }
}

/// One module of the archive (one `tvmgen_<name>_*` prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModuleMeta {
    /// The key under `modules` (v7), else `default`.
    pub name: String,
    pub model_name: String,
    pub style: Style,
    /// Empty for operator-style exports.
    pub executors: Vec<Executor>,
    pub targets: Vec<Target>,
    /// `memory.functions.main`, one entry per device (v2 on).
    pub main: Vec<MainMemory>,
    /// `memory.functions.operator_functions`.
    pub operators: Vec<OperatorWorkspace>,
    /// Graph storage: `memory` itself in v1, `memory.sids` later.
    pub sids: Vec<Storage>,
    /// The functions of an operator-style export, in document order.
    pub operator_functions: Vec<OperatorFunction>,
    pub export_datetime: Option<String>,
    /// `external_dependencies` names TVM's standalone C runtime (shipped under `runtime/`).
    pub has_runtime_dependency: bool,
    /// Where this version keeps the graph JSON, for graph-executor modules.
    pub graph_json_path: Option<String>,
    /// Where this version keeps the Relay text, for full-model modules.
    pub relay_path: Option<String>,
}

impl ModuleMeta {
    /// The largest workspace over all devices; 0 without `main` entries.
    pub fn workspace_size_bytes(&self) -> u64 {
        self.main.iter().map(|m| m.workspace_size_bytes).max().unwrap_or(0)
    }

    /// The largest constants size over all devices; 0 without `main` entries.
    pub fn constants_size_bytes(&self) -> u64 {
        self.main.iter().map(|m| m.constants_size_bytes).max().unwrap_or(0)
    }

    /// The largest `io_size_bytes` over all devices; 0 without `main` entries.
    pub fn io_size_bytes(&self) -> u64 {
        self.main.iter().map(|m| m.io_size_bytes).max().unwrap_or(0)
    }

    pub fn main_for_device(&self, device: u32) -> Option<&MainMemory> {
        self.main.iter().find(|m| m.device == device)
    }

    pub fn is_operator(&self) -> bool {
        self.style == Style::Operator
    }
}

/// One `memory.functions.main` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MainMemory {
    pub device: u32,
    pub workspace_size_bytes: u64,
    pub constants_size_bytes: u64,
    pub io_size_bytes: u64,
    /// In declaration order; empty before TVM 0.11.
    pub inputs: Vec<TensorMeta>,
    /// In declaration order; empty before TVM 0.11.
    pub outputs: Vec<TensorMeta>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TensorMeta {
    /// The name as TVM recorded it (see [`sanitize`] for the header's form).
    pub name: String,
    pub dtype: DType,
    pub size_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OperatorWorkspace {
    pub function_name: String,
    /// `(device, bytes)` pairs.
    pub workspace: Vec<(u32, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Storage {
    pub storage_id: u32,
    pub size_bytes: u64,
    pub input_binding: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OperatorFunction {
    pub name: String,
    pub params: Vec<OperatorParam>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OperatorParam {
    pub size_bytes: u64,
    pub shape: Vec<u64>,
    pub dtype: DType,
    pub input_binding: Option<String>,
}

/// The C-sanitized form of a tensor name TVM uses in headers:
/// `serving_default_input_1:0` becomes `serving_default_input_1_0`.
pub(crate) fn sanitize(name: &str) -> String {
    // Byte by byte, as TVM's `SanitizeName` (`std::isalnum` on each `char`) does.
    name.bytes().map(|b| if ident::is_identifier_byte(b) { char::from(b) } else { '_' }).collect()
}

/// Parses `metadata.json`; every error names the file.
pub(crate) fn parse(bytes: &[u8]) -> Result<Metadata> {
    parse_document(bytes).map_err(|e| e.in_file(FILE))
}

fn parse_document(bytes: &[u8]) -> Result<Metadata> {
    let document: Json = json::parse_tree(bytes).map_err(|e| {
        Error::new(ErrorKind::Metadata, format!("not valid JSON: {e}"))
            .help("put back the metadata.json TVM wrote; or remove it: an AOT archive with its interface header is then read from the header and the code")
    })?;
    let root = At { node: &document, path: String::new() };
    if !matches!(document, Json::Object(_)) {
        return Err(Error::new(ErrorKind::Metadata, format!("the top level should be an object, found {}", document.describe())));
    }
    let version = version(&root)?;
    let mut modules = match root.opt("modules")? {
        Some(modules) => {
            let entries = modules.entries()?;
            if entries.is_empty() {
                return Err(modules.error("is empty; expected at least one module"));
            }
            let mut parsed = Vec::with_capacity(entries.len());
            for (name, module) in entries {
                check_module_name(name, &modules)?;
                parsed.push(module_meta(name, &module, version)?);
            }
            parsed
        }
        // Before v7, and operator-style exports in v7, describe one unnamed module.
        None => vec![module_meta(DEFAULT_MODULE, &root, version)?],
    };
    modules.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(pair) = modules.windows(2).find(|pair| pair[0].name == pair[1].name) {
        return Err(Error::new(ErrorKind::Metadata, format!("module `{}` appears twice under `modules`", pair[0].name)));
    }
    Ok(Metadata { version, modules })
}

fn version(root: &At<'_>) -> Result<u32> {
    let Some(field) = root.opt("version")? else {
        return Err(Error::new(ErrorKind::Metadata, "`version` is missing; expected the MLF version number")
            .help("is this the metadata.json of a Model Library Format archive? TVM writes `\"version\": 7`"));
    };
    let found = field.as_u64()?;
    match u32::try_from(found) {
        Ok(version) if (OLDEST..=NEWEST).contains(&version) => Ok(version),
        _ => Err(Error::new(
            ErrorKind::UnsupportedVersion,
            format!("Model Library Format version {found} is not supported (supported: {OLDEST} to {NEWEST})"),
        )
        .help(format!(
            "mlf-build reads versions {OLDEST} to {NEWEST}, all that TVM wrote (2021 to TVM 0.18): file an issue against mlf-build with this metadata.json"
        ))),
    }
}

/// Module names become C identifiers and file names: refuse anything else.
fn check_module_name(name: &str, modules: &At<'_>) -> Result<()> {
    if crate::ident::is_c_identifier(name) {
        return Ok(());
    }
    Err(modules.error(format!("has a module named {name:?}; expected a C identifier ({})", crate::ident::C_IDENTIFIER_RULE)))
}

fn module_meta(name: &str, at: &At<'_>, version: u32) -> Result<ModuleMeta> {
    let style = match at.opt("style")? {
        None => Style::FullModel,
        Some(field) => match field.as_str()? {
            "full-model" => Style::FullModel,
            "operator" => Style::Operator,
            other => return Err(field.error(format!("is `{other}`; expected \"full-model\" or \"operator\""))),
        },
    };
    let executors = executors(at, style, version)?;
    let targets = targets(at)?;
    let memory = at.field("memory", "an object (or an array in version 1)")?;
    let memory = match style {
        Style::Operator => Memory { operator_functions: operator_functions(&memory)?, ..Memory::default() },
        Style::FullModel => full_model_memory(&memory)?,
    };
    let has_runtime_dependency = match at.opt("external_dependencies")? {
        Some(list) => list
            .items()?
            .iter()
            .map(|dependency| dependency.opt_string("short_name"))
            .collect::<Result<Vec<_>>>()?
            .iter()
            .any(|name| name.as_deref() == Some("tvm_standalone_crt")),
        None => false,
    };
    let graph_json_path = executors.contains(&Executor::Graph).then(|| match version {
        ..=4 => "runtime-config/graph/graph.json".to_string(),
        5 | 6 => "executor-config/graph/graph.json".to_string(),
        _ => format!("executor-config/graph/{name}.graph"),
    });
    let relay_path = (style == Style::FullModel).then(|| match version {
        ..=3 => "relay.txt".to_string(),
        4..=6 => "src/relay.txt".to_string(),
        _ => format!("src/{name}.relay"),
    });
    Ok(ModuleMeta {
        name: name.to_string(),
        // Informational only: fall back to the module name rather than fail.
        model_name: at.opt_string("model_name")?.unwrap_or_else(|| name.to_string()),
        style,
        executors,
        targets,
        main: memory.main,
        operators: memory.operators,
        sids: memory.sids,
        operator_functions: memory.operator_functions,
        export_datetime: at.opt_string("export_datetime")?,
        has_runtime_dependency,
        graph_json_path,
        relay_path,
    })
}

fn executors(at: &At<'_>, style: Style, version: u32) -> Result<Vec<Executor>> {
    // v5 renamed `runtimes` to `executors`; accept either so a mislabelled version still reads.
    let Some(list) = at.opt("executors")?.or(at.opt("runtimes")?) else {
        if style == Style::Operator {
            return Ok(Vec::new());
        }
        let key = if version < 5 { "runtimes" } else { "executors" };
        return Err(at.missing(key, "a list such as [\"aot\"] or [\"graph\"]"));
    };
    list.items()?
        .iter()
        .map(|item| match item.as_str()? {
            "aot" => Ok(Executor::Aot),
            "graph" => Ok(Executor::Graph),
            other => Err(item.error(format!("names the unknown executor `{other}`; expected \"aot\" or \"graph\""))),
        })
        .collect()
}

/// `{"<device type>": "<target>"}` up to v5, a list of strings from v6 on.
fn targets(at: &At<'_>) -> Result<Vec<Target>> {
    let field = at.field("target", "a list of target strings")?;
    let target = |value: &At<'_>| value.as_str().map(|s| s.trim().to_string());
    match field.node {
        Json::Array(_) => field.items()?.iter().map(|item| Ok(Target { device_type: None, target: target(item)? })).collect(),
        Json::Object(_) => field
            .entries()?
            .iter()
            .map(|(key, value)| {
                let device_type = key.trim().parse().map_err(|_| value.error("should be keyed by a DLPack device type number"))?;
                Ok(Target { device_type: Some(device_type), target: target(value)? })
            })
            .collect(),
        _ => Err(field.wrong("a list of target strings or a {\"<device type>\": \"<target>\"} object")),
    }
}

/// The normalized contents of `memory`.
#[derive(Default)]
struct Memory {
    main: Vec<MainMemory>,
    operators: Vec<OperatorWorkspace>,
    sids: Vec<Storage>,
    operator_functions: Vec<OperatorFunction>,
}

fn full_model_memory(memory: &At<'_>) -> Result<Memory> {
    // Version 1: `memory` is the graph's storage list itself.
    if let Json::Array(_) = memory.node {
        return Ok(Memory { sids: storage(memory)?, ..Memory::default() });
    }
    let functions = memory.field("functions", OBJECT)?;
    let main = functions.field("main", ARRAY)?.items()?.iter().map(main_memory).collect::<Result<_>>()?;
    let operators = match functions.opt("operator_functions")? {
        Some(list) => list.items()?.iter().map(operator_workspace).collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let sids = match memory.opt("sids")? {
        Some(list) => storage(&list)?,
        None => Vec::new(),
    };
    Ok(Memory { main, operators, sids, operator_functions: Vec::new() })
}

fn main_memory(at: &At<'_>) -> Result<MainMemory> {
    let tensors = |key: &str| match at.opt(key)? {
        Some(map) => map.entries()?.iter().map(|(name, tensor)| tensor_meta(name, tensor)).collect(),
        None => Ok(Vec::new()),
    };
    Ok(MainMemory {
        device: at.field("device", INTEGER)?.as_u32()?,
        workspace_size_bytes: at.u64("workspace_size_bytes")?,
        constants_size_bytes: at.u64("constants_size_bytes")?,
        io_size_bytes: at.u64("io_size_bytes")?,
        inputs: tensors("inputs")?,
        outputs: tensors("outputs")?,
    })
}

fn tensor_meta(name: &str, at: &At<'_>) -> Result<TensorMeta> {
    crate::ident::check_text("tensor name", name)?;
    Ok(TensorMeta { name: name.to_string(), dtype: at.dtype("dtype")?, size_bytes: at.u64("size")? })
}

fn operator_workspace(at: &At<'_>) -> Result<OperatorWorkspace> {
    let workspace = at
        .field("workspace", ARRAY)?
        .items()?
        .iter()
        .map(|entry| Ok((entry.field("device", INTEGER)?.as_u32()?, entry.u64("workspace_size_bytes")?)))
        .collect::<Result<_>>()?;
    Ok(OperatorWorkspace { function_name: at.string("function_name")?, workspace })
}

fn storage(list: &At<'_>) -> Result<Vec<Storage>> {
    list.items()?
        .iter()
        .map(|entry| {
            Ok(Storage {
                storage_id: entry.field("storage_id", INTEGER)?.as_u32()?,
                size_bytes: entry.u64("size_bytes")?,
                input_binding: entry.opt_string("input_binding")?,
            })
        })
        .collect()
}

/// Operator style: `memory` is `{<function>: [{size_bytes, shape, dtype, input_binding}]}`.
fn operator_functions(memory: &At<'_>) -> Result<Vec<OperatorFunction>> {
    memory
        .entries()?
        .iter()
        .map(|(name, params)| {
            let params = params.items()?.iter().map(operator_param).collect::<Result<_>>()?;
            Ok(OperatorFunction { name: name.to_string(), params })
        })
        .collect()
}

fn operator_param(at: &At<'_>) -> Result<OperatorParam> {
    let shape = at.field("shape", ARRAY)?.items()?.iter().map(At::as_u64).collect::<Result<_>>()?;
    Ok(OperatorParam {
        size_bytes: at.u64("size_bytes")?,
        shape,
        dtype: at.dtype("dtype")?,
        input_binding: at.opt_string("input_binding")?,
    })
}

/// A JSON value that keeps object keys in document order: `json::Value`
/// sorts them, and input/output order matters.
#[derive(Debug)]
enum Json {
    Null,
    Bool(bool),
    UInt(u64),
    /// Only negative integers: non-negative ones are `UInt`.
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn describe(&self) -> String {
        match self {
            Json::Null => "null".to_string(),
            Json::Bool(b) => format!("`{b}`"),
            Json::UInt(n) => format!("the number {n}"),
            Json::Int(n) => format!("the number {n}"),
            Json::Float(n) => format!("the number {n}"),
            Json::Str(s) => format!("the string {s:?}"),
            Json::Array(_) => "an array".to_string(),
            Json::Object(_) => "an object".to_string(),
        }
    }
}

impl Tree for Json {
    fn null() -> Json {
        Json::Null
    }

    fn bool(value: bool) -> Json {
        Json::Bool(value)
    }

    fn number(value: Number) -> Json {
        match value {
            Number::PosInt(n) => Json::UInt(n),
            Number::NegInt(n) => Json::Int(n),
            Number::Float(n) => Json::Float(n),
        }
    }

    fn string(value: String) -> Json {
        Json::Str(value)
    }

    fn array(items: Vec<Json>) -> Json {
        Json::Array(items)
    }

    fn object(members: Vec<(String, Json)>) -> Json {
        Json::Object(members)
    }
}

/// A JSON value and its path from the top (`modules.default.memory`), for errors.
struct At<'a> {
    node: &'a Json,
    path: String,
}

impl<'a> At<'a> {
    fn join(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn error(&self, message: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Metadata, format!("`{}` {message}", self.path))
    }

    fn wrong(&self, expected: &str) -> Error {
        self.error(format!("should be {expected}, found {}", self.node.describe()))
    }

    fn missing(&self, key: &str, expected: &str) -> Error {
        Error::new(ErrorKind::Metadata, format!("`{}` is missing; expected {expected}", self.join(key)))
    }

    fn entries(&self) -> Result<Vec<(&'a str, At<'a>)>> {
        let Json::Object(entries) = self.node else { return Err(self.wrong(OBJECT)) };
        Ok(entries.iter().map(|(key, node)| (key.as_str(), At { node, path: self.join(key) })).collect())
    }

    fn items(&self) -> Result<Vec<At<'a>>> {
        let Json::Array(items) = self.node else { return Err(self.wrong(ARRAY)) };
        Ok(items.iter().enumerate().map(|(i, node)| At { node, path: format!("{}[{i}]", self.path) }).collect())
    }

    /// The member `key`; absent and `null` both read as `None`.
    fn opt(&self, key: &str) -> Result<Option<At<'a>>> {
        let Json::Object(entries) = self.node else { return Err(self.wrong(OBJECT)) };
        // The last of duplicate keys wins, as in `json::Value`.
        Ok(entries
            .iter()
            .rev()
            .find(|(k, node)| k == key && !matches!(node, Json::Null))
            .map(|(_, node)| At { node, path: self.join(key) }))
    }

    fn field(&self, key: &str, expected: &str) -> Result<At<'a>> {
        self.opt(key)?.ok_or_else(|| self.missing(key, expected))
    }

    fn as_str(&self) -> Result<&'a str> {
        match self.node {
            Json::Str(s) => Ok(s),
            _ => Err(self.wrong(STRING)),
        }
    }

    fn as_u64(&self) -> Result<u64> {
        match *self.node {
            Json::UInt(n) => Ok(n),
            // A whole float (`240.0`) is still a count; 2^64 itself does not fit.
            Json::Float(f) if f >= 0.0 && f.fract() == 0.0 && f < 18_446_744_073_709_551_616.0 => Ok(f as u64),
            _ => Err(self.wrong(INTEGER)),
        }
    }

    fn as_u32(&self) -> Result<u32> {
        u32::try_from(self.as_u64()?).map_err(|_| self.wrong("an integer below 2^32"))
    }

    fn u64(&self, key: &str) -> Result<u64> {
        self.field(key, INTEGER)?.as_u64()
    }

    fn string(&self, key: &str) -> Result<String> {
        Ok(self.field(key, STRING)?.as_str()?.to_string())
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>> {
        self.opt(key)?.map(|field| field.as_str().map(str::to_string)).transpose()
    }

    fn dtype(&self, key: &str) -> Result<DType> {
        let field = self.field(key, "a tensor dtype such as \"int8\"")?;
        let name = field.as_str()?;
        DType::parse(name).map_err(|e| {
            let error = field.error(format!("is `{name}`, not a tensor dtype mlf-build knows"));
            match e.help_text() {
                Some(help) => error.help(help),
                None => error,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::TypeCode;
    use crate::test_support::corpus_dir;
    use std::io::Read;
    use std::path::Path;

    /// `metadata.json` of a corpus case: from `model.tar`, or from a committed `model/` tree.
    fn corpus_metadata(case_dir: &Path) -> Vec<u8> {
        let tree = case_dir.join("model/metadata.json");
        if tree.is_file() {
            return std::fs::read(tree).unwrap();
        }
        let tar_path = case_dir.join("model.tar");
        let mut archive = tar::Archive::new(std::fs::File::open(&tar_path).unwrap());
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            if entry.path().unwrap().to_string_lossy().trim_start_matches("./") == "metadata.json" {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                return bytes;
            }
        }
        panic!("{} has no metadata.json", tar_path.display());
    }

    fn corpus_case(root: &Path, case: &str) -> Metadata {
        let dir = ["tvm-0.18", "real-world"].iter().map(|group| root.join(group).join(case)).find(|dir| dir.is_dir());
        let dir = dir.unwrap_or_else(|| panic!("corpus case {case} is missing"));
        parse(&corpus_metadata(&dir)).unwrap_or_else(|e| panic!("{case}: {e}"))
    }

    fn only_module(metadata: &Metadata) -> &ModuleMeta {
        assert_eq!(metadata.modules.len(), 1, "{metadata:#?}");
        &metadata.modules[0]
    }

    fn tensor(name: &str, dtype: &str, size_bytes: u64) -> TensorMeta {
        TensorMeta { name: name.to_string(), dtype: DType::parse(dtype).unwrap(), size_bytes }
    }

    fn module_names(metadata: &Metadata) -> Vec<&str> {
        metadata.modules.iter().map(|m| m.name.as_str()).collect()
    }

    #[test]
    fn every_corpus_metadata_parses() {
        let Some(root) = corpus_dir() else { return };
        let mut count = 0;
        for group in ["tvm-0.18", "real-world"] {
            for case in std::fs::read_dir(root.join(group)).unwrap() {
                let dir = case.unwrap().path();
                if !(dir.join("model.tar").is_file() || dir.join("model/metadata.json").is_file()) {
                    continue;
                }
                let metadata = parse(&corpus_metadata(&dir)).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
                assert!(!metadata.modules.is_empty(), "{}", dir.display());
                count += 1;
            }
        }
        assert!(count >= 29, "only {count} corpus cases found");
    }

    #[test]
    fn corpus_aot_c_interface_facts() {
        let Some(root) = corpus_dir() else { return };
        let kws = corpus_case(&root, "kws_int8-aot_c");
        assert_eq!(kws.version, 7);
        let m = only_module(&kws);
        assert_eq!((m.name.as_str(), m.model_name.as_str()), ("default", "default"));
        assert_eq!(m.style, Style::FullModel);
        assert_eq!(m.executors, [Executor::Aot]);
        assert_eq!(m.targets, [Target { device_type: None, target: "c -keys=cpu -model=host".to_string() }]);
        assert_eq!(m.targets[0].kind(), "c");
        assert_eq!((m.workspace_size_bytes(), m.constants_size_bytes(), m.io_size_bytes()), (17794, 272, 12658));
        let main = m.main_for_device(1).unwrap();
        assert_eq!(main.inputs, [tensor("input_1", "int8", 240)]);
        assert_eq!(main.outputs, [tensor("output", "int8", 6)]);
        assert!(m.main_for_device(2).is_none());
        assert_eq!(m.operators.len(), 11);
        assert!(m.sids.is_empty() && m.operator_functions.is_empty());
        assert!(m.has_runtime_dependency);
        assert_eq!(m.export_datetime.as_deref(), Some("2026-11-22 12:04:29Z"));
        assert_eq!(m.graph_json_path, None);
        assert_eq!(m.relay_path.as_deref(), Some("src/default.relay"));

        let two = corpus_case(&root, "two_outputs_f32-aot_c");
        let main = &only_module(&two).main[0];
        assert_eq!(main.inputs, [tensor("a", "float32", 128), tensor("b", "float32", 32)]);
        assert_eq!(main.outputs, [tensor("output0", "float32", 128), tensor("output1", "float32", 16)]);

        let multi = corpus_case(&root, "multi-kws_mlp-aot_c");
        assert_eq!(module_names(&multi), ["kws", "mlp"]);
        let mlp = &multi.modules[1];
        assert_eq!(mlp.model_name, "mlp");
        assert_eq!(mlp.main[0].inputs, [tensor("input", "float32", 256)]);
        assert_eq!(mlp.relay_path.as_deref(), Some("src/mlp.relay"));
        assert_eq!(multi.modules[0].workspace_size_bytes(), 17794);

        let named = corpus_case(&root, "cnn_f32-aot_c-named");
        let vision = only_module(&named);
        assert_eq!((vision.name.as_str(), vision.model_name.as_str()), ("vision", "vision"));
        assert_eq!(vision.relay_path.as_deref(), Some("src/vision.relay"));

        let riot = corpus_case(&root, "riot-ml-mnist-cm7-tvm011");
        let input = &only_module(&riot).main[0].inputs[0];
        assert_eq!(input.name, "serving_default_input:0");
        assert_eq!(sanitize(&input.name), "serving_default_input_0");
        assert_eq!(only_module(&riot).targets[0].option("mcpu"), Some("cortex-m7"));
    }

    #[test]
    fn corpus_graph_facts() {
        let Some(root) = corpus_dir() else { return };
        let cifar = corpus_case(&root, "arduino-cifar-resnet-v2-20210602");
        assert_eq!(cifar.version, 2);
        let m = only_module(&cifar);
        assert_eq!(m.name, "default");
        assert_eq!(m.style, Style::FullModel);
        assert_eq!(m.executors, [Executor::Graph]);
        assert_eq!(m.graph_json_path.as_deref(), Some("runtime-config/graph/graph.json"));
        assert_eq!(m.relay_path.as_deref(), Some("relay.txt"));
        assert_eq!(m.sids.len(), 61);
        assert_eq!(m.sids[0], Storage { storage_id: 0, size_bytes: 3072, input_binding: Some("input_1_int8".to_string()) });
        assert_eq!(m.sids[2], Storage { storage_id: 2, size_bytes: 6144, input_binding: None });
        assert_eq!(m.targets[0].device_type, Some(1));
        assert_eq!(m.targets[0].option("mcpu"), Some("cortex-m33"));
        assert_eq!(m.targets[0].option("system-lib"), Some("1"));
        assert_eq!(m.workspace_size_bytes(), 119108);
        assert!(m.main[0].inputs.is_empty());
        assert_eq!(m.operators.len(), 16);
        assert_eq!(m.operators[1], OperatorWorkspace { function_name: "fused_nn_avg_pool2d_cast".to_string(), workspace: vec![(1, 256)] });
        assert!(!m.has_runtime_dependency);

        let speech = corpus_case(&root, "arduino-microspeech-graph-v5-executorconfig");
        assert_eq!(speech.version, 5);
        let m = only_module(&speech);
        assert_eq!(m.graph_json_path.as_deref(), Some("executor-config/graph/graph.json"));
        assert_eq!(m.relay_path.as_deref(), Some("src/relay.txt"));
        assert_eq!(m.sids.len(), 14);
        assert_eq!(m.sids[0].input_binding.as_deref(), Some("Reshape_1"));

        let hannah = corpus_case(&root, "hannah-magicwand-graph-syslib");
        assert_eq!(hannah.version, 7);
        let m = only_module(&hannah);
        assert_eq!(m.executors, [Executor::Graph]);
        assert_eq!(m.graph_json_path.as_deref(), Some("executor-config/graph/default.graph"));
        assert_eq!(m.sids.len(), 13);
        assert_eq!(m.main[0].inputs, [tensor("conv2d_input", "float32", 1536)]);
        assert_eq!(m.main[0].outputs, [tensor("Identity", "float32", 16)]);

        let nitesh = corpus_case(&root, "nitesh-llvm-aarch64-sve-conv1d");
        let target = &only_module(&nitesh).targets[0];
        assert_eq!(target.kind(), "llvm");
        assert_eq!(target.option("mtriple"), Some("aarch64-linux-gnu"));
        assert_eq!(target.option("mattr"), Some("+sve"));
    }

    #[test]
    fn corpus_operator_and_old_aot_facts() {
        let Some(root) = corpus_dir() else { return };
        let add = corpus_case(&root, "operator-add_f32");
        assert_eq!(add.version, 7);
        let m = only_module(&add);
        assert_eq!((m.name.as_str(), m.model_name.as_str()), ("default", "add"));
        assert!(m.is_operator());
        assert!(m.executors.is_empty() && m.main.is_empty() && m.sids.is_empty());
        let param = OperatorParam { size_bytes: 64, shape: vec![16], dtype: DType::parse("float32").unwrap(), input_binding: None };
        assert_eq!(m.operator_functions, [OperatorFunction { name: "add".to_string(), params: vec![param; 3] }]);
        assert_eq!((m.relay_path.as_deref(), m.graph_json_path.as_deref()), (None, None));
        assert_eq!(m.workspace_size_bytes(), 0);

        let sine = corpus_case(&root, "linaro-tfm-sine");
        assert_eq!(sine.version, 5);
        let m = only_module(&sine);
        assert_eq!(m.executors, [Executor::Aot]);
        assert_eq!(m.targets[0].option("mcpu"), Some("cortex-m33"));
        assert!(m.has_runtime_dependency);

        let etiss = corpus_case(&root, "etiss-kws-rv32-tvm0160");
        let m = only_module(&etiss);
        assert_eq!(m.targets[0].option("workspace-byte-alignment"), Some("16"));
        assert_eq!(m.targets[0].option("mcpu"), Some("generic-rv32"));
        assert_eq!(m.main[0].outputs, [tensor("Identity", "int8", 12)]);

        let packed = corpus_case(&root, "arduino-microspeech-aot-tvm_model_t-v5");
        let m = only_module(&packed);
        assert_eq!(m.executors, [Executor::Aot]);
        assert_eq!(m.targets[0].option("executor"), Some("aot"));
        assert_eq!(m.workspace_size_bytes(), 21312);
    }

    fn parse_str(text: &str) -> Result<Metadata> {
        parse(text.as_bytes())
    }

    fn error_text(text: &str) -> String {
        parse_str(text).unwrap_err().to_string()
    }

    #[test]
    fn version_1_flat_graph() {
        let metadata = parse_str(
            r#"{"version": 1, "model_name": "sine", "export_datetime": "2021-03-01 10:00:00Z",
                "memory": [{"storage_id": 0, "size_bytes": 4, "input_binding": "x"}, {"storage_id": 1, "size_bytes": 16}],
                "target": {"1": "c -keys=cpu -runtime=c -system-lib=1 "}, "runtimes": ["graph"]}"#,
        )
        .unwrap();
        assert_eq!(metadata.version, 1);
        let m = only_module(&metadata);
        assert_eq!((m.name.as_str(), m.model_name.as_str()), ("default", "sine"));
        assert_eq!(m.style, Style::FullModel);
        assert_eq!(m.executors, [Executor::Graph]);
        assert_eq!(m.targets, [Target { device_type: Some(1), target: "c -keys=cpu -runtime=c -system-lib=1".to_string() }]);
        assert!(m.main.is_empty() && m.operators.is_empty());
        assert_eq!(
            m.sids,
            [
                Storage { storage_id: 0, size_bytes: 4, input_binding: Some("x".to_string()) },
                Storage { storage_id: 1, size_bytes: 16, input_binding: None },
            ]
        );
        assert_eq!(m.graph_json_path.as_deref(), Some("runtime-config/graph/graph.json"));
        assert_eq!(m.relay_path.as_deref(), Some("relay.txt"));
        assert_eq!((m.workspace_size_bytes(), m.io_size_bytes()), (0, 0));
    }

    #[test]
    fn versions_3_and_4_flat_aot() {
        let memory = r#"{"functions": {"main": [{"device": 1, "workspace_size_bytes": 100, "constants_size_bytes": 8, "io_size_bytes": 12}],
                         "operator_functions": [{"function_name": "f", "workspace": [{"device": 1, "workspace_size_bytes": 32}]}]}}"#;
        let v3 = parse_str(&format!(
            r#"{{"version": 3, "model_name": "m", "memory": {memory}, "target": {{"1": "c -executor=aot"}}, "runtimes": ["aot"]}}"#
        ))
        .unwrap();
        let m = only_module(&v3);
        assert_eq!(m.style, Style::FullModel);
        assert_eq!(m.executors, [Executor::Aot]);
        assert_eq!(m.main[0].device, 1);
        assert_eq!((m.workspace_size_bytes(), m.constants_size_bytes(), m.io_size_bytes()), (100, 8, 12));
        assert_eq!(m.operators, [OperatorWorkspace { function_name: "f".to_string(), workspace: vec![(1, 32)] }]);
        assert_eq!(m.relay_path.as_deref(), Some("relay.txt"));
        assert_eq!(m.graph_json_path, None);
        assert_eq!(m.export_datetime, None);

        let v4 = parse_str(&format!(
            r#"{{"version": 4, "model_name": "m", "style": "full-model", "memory": {memory}, "target": {{"1": "c"}}, "runtimes": ["graph"]}}"#
        ))
        .unwrap();
        let m = only_module(&v4);
        assert_eq!(m.relay_path.as_deref(), Some("src/relay.txt"));
        assert_eq!(m.graph_json_path.as_deref(), Some("runtime-config/graph/graph.json"));
    }

    #[test]
    fn version_6_target_list_and_tensor_order() {
        let metadata = parse_str(
            r#"{"version": 6, "model_name": "m", "style": "full-model", "executors": ["aot"],
                "external_dependencies": [{"short_name": "tvm_standalone_crt", "url": "./runtime"}],
                "memory": {"functions": {"main": [
                    {"device": 1, "workspace_size_bytes": 7, "constants_size_bytes": 0, "io_size_bytes": 3,
                     "inputs": {"zeta": {"dtype": "int8", "size": 1}, "alpha:0": {"dtype": "uint8", "size": 2}},
                     "outputs": {"out": {"dtype": "float32", "size": 4.0}}},
                    {"device": 2, "workspace_size_bytes": 9, "constants_size_bytes": 5, "io_size_bytes": 0}]}},
                "target": ["  c -keys=arm_cpu,cpu -mcpu=cortex-m55  ", "c"], "future_field": {"anything": [1, 2]}}"#,
        )
        .unwrap();
        let m = only_module(&metadata);
        assert_eq!(m.targets[0], Target { device_type: None, target: "c -keys=arm_cpu,cpu -mcpu=cortex-m55".to_string() });
        assert_eq!(m.targets[0].option("mcpu"), Some("cortex-m55"));
        assert_eq!(m.targets[0].option("keys"), Some("arm_cpu,cpu"));
        assert_eq!(m.targets[0].option("m"), None);
        assert_eq!(m.targets[1].kind(), "c");
        assert!(m.has_runtime_dependency);
        // Document order, not sorted order.
        assert_eq!(m.main[0].inputs, [tensor("zeta", "int8", 1), tensor("alpha:0", "uint8", 2)]);
        assert_eq!(m.main[0].outputs[0].dtype, DType { code: TypeCode::Float, bits: 32 });
        assert_eq!(m.workspace_size_bytes(), 9);
        assert_eq!(m.constants_size_bytes(), 5);
        assert_eq!(m.main_for_device(2).unwrap().workspace_size_bytes, 9);
        assert_eq!(m.relay_path.as_deref(), Some("src/relay.txt"));
    }

    #[test]
    fn version_7_modules_are_sorted() {
        let module = r#"{"model_name": "x", "executors": ["graph"], "target": ["c"],
            "memory": {"functions": {"main": []}, "sids": [{"storage_id": 0, "size_bytes": 8, "input_binding": null}]}}"#;
        let metadata = parse_str(&format!(r#"{{"version": 7, "modules": {{"zz": {module}, "aa": {module}}}}}"#)).unwrap();
        assert_eq!(module_names(&metadata), ["aa", "zz"]);
        assert_eq!(metadata.modules[1].graph_json_path.as_deref(), Some("executor-config/graph/zz.graph"));
        assert_eq!(metadata.modules[0].sids[0].input_binding, None);
    }

    #[test]
    fn unsupported_versions() {
        for version in ["8", "0", "4294967296"] {
            let error = parse_str(&format!(r#"{{"version": {version}, "modules": {{}}}}"#)).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::UnsupportedVersion);
            assert_eq!(error.file(), Some("metadata.json"));
            let text = error.to_string();
            assert!(text.contains(&format!("version {version} ")) && text.contains("supported: 1 to 7"), "{text}");
            assert!(error.help_text().unwrap().contains("versions 1 to 7, all that TVM wrote"), "{text}");
        }
    }

    #[test]
    fn malformed_documents_name_the_problem() {
        let error = parse_str(r#"{"modules": {}}"#).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Metadata);
        assert!(error.to_string().contains("`version` is missing"), "{error}");

        let error = parse_str("{\"version\": 7,\n  \"modules\": }").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Metadata);
        assert_eq!(error.file(), Some("metadata.json"));
        assert!(error.to_string().contains("line 2 column"), "{error}");

        assert!(error_text("[]").contains("top level should be an object"));
        assert!(error_text(r#"{"version": "7"}"#).contains("`version` should be a non-negative integer, found the string \"7\""));
        assert!(error_text(r#"{"version": 7, "modules": {}}"#).contains("`modules` is empty"));
        assert!(error_text(r#"{"version": 7, "modules": {"../x": {}}}"#).contains("module named \"../x\""));
    }

    #[test]
    fn missing_and_mistyped_fields_name_their_path() {
        let v7 = |main: &str| {
            format!(
                r#"{{"version": 7, "modules": {{"default": {{"model_name": "m", "executors": ["aot"], "target": ["c"],
                    "memory": {{"functions": {{"main": [{main}]}}}}}}}}}}"#
            )
        };
        let error = parse_str(&v7(r#"{"device": 1, "constants_size_bytes": 0, "io_size_bytes": 0}"#)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Metadata);
        assert!(
            error
                .to_string()
                .contains("`modules.default.memory.functions.main[0].workspace_size_bytes` is missing; expected a non-negative integer"),
            "{error}"
        );
        let text = error_text(&v7(r#"{"device": 1, "workspace_size_bytes": -1, "constants_size_bytes": 0, "io_size_bytes": 0}"#));
        assert!(
            text.contains(
                "`modules.default.memory.functions.main[0].workspace_size_bytes` should be a non-negative integer, found the number -1"
            ),
            "{text}"
        );
        let text = error_text(&v7(
            r#"{"device": 1, "workspace_size_bytes": 0, "constants_size_bytes": 0, "io_size_bytes": 0, "inputs": {"x": {"dtype": "int7", "size": 1}}}"#,
        ));
        assert!(text.contains("`modules.default.memory.functions.main[0].inputs.x.dtype` is `int7`"), "{text}");
        assert!(text.contains("help: supported dtypes"), "{text}");

        let flat = |fields: &str| format!(r#"{{"version": 5, "model_name": "m", {fields}}}"#);
        let memory = r#""memory": {"functions": {"main": []}}"#;
        let text = error_text(&flat(&format!(r#"{memory}, "target": {{"1": "c"}}"#)));
        assert!(text.contains("`executors` is missing"), "{text}");
        let text = error_text(&flat(&format!(r#"{memory}, "target": {{"1": "c"}}, "executors": ["vm"]"#)));
        assert!(text.contains("`executors[0]` names the unknown executor `vm`"), "{text}");
        let text = error_text(&flat(&format!(r#"{memory}, "executors": ["aot"]"#)));
        assert!(text.contains("`target` is missing"), "{text}");
        let text = error_text(&flat(&format!(r#"{memory}, "executors": ["aot"], "target": {{"cpu": "c"}}"#)));
        assert!(text.contains("`target.cpu` should be keyed by a DLPack device type"), "{text}");
        let text = error_text(&flat(r#""memory": {"sids": []}, "executors": ["aot"], "target": ["c"]"#));
        assert!(text.contains("`memory.functions` is missing; expected an object"), "{text}");
        let text =
            error_text(r#"{"version": 7, "style": "operator", "target": ["c"], "memory": {"f": [{"size_bytes": 4, "dtype": "int8"}]}}"#);
        assert!(text.contains("`memory.f[0].shape` is missing; expected an array"), "{text}");
        let text = error_text(r#"{"version": 4, "style": "kernel", "target": ["c"], "memory": []}"#);
        assert!(text.contains("`style` is `kernel`"), "{text}");
    }

    #[test]
    fn sanitizes_like_tvm() {
        assert_eq!(sanitize("serving_default_input_1:0"), "serving_default_input_1_0");
        assert_eq!(sanitize("a.b-c d/E9"), "a_b_c_d_E9");
        assert_eq!(sanitize("é"), "__");
    }
}
