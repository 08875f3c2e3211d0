//! Facts read from the archive's files rather than its metadata: the interface
//! header, which sources belong to which module, what the generated code
//! needs at link time, and the tensor types the Relay text declares.

use std::collections::BTreeMap;

use crate::archive::Tree;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};

pub(crate) const SRC_DIR: &str = "codegen/host/src";
pub(crate) const LIB_DIR: &str = "codegen/host/lib";
pub(crate) const INCLUDE_DIR: &str = "codegen/host/include";

/// Headers that exist only in Arm toolchains: code including them was generated for an Arm target.
const ARM_ONLY_HEADERS: &[&str] = &["arm_acle.h", "arm_math.h", "arm_mve.h", "arm_nnfunctions.h", "arm_nn_types.h", "cmsis_compiler.h"];

/// What `codegen/host/` holds for one module.
#[derive(Debug, Clone, Default)]
pub(crate) struct Codegen {
    /// C sources, numeric-aware sorted (`lib2` before `lib10`).
    pub c_sources: Vec<String>,
    /// C++ sources (BYOC code generators may emit them).
    pub cxx_sources: Vec<String>,
    /// Prebuilt objects (llvm target).
    pub objects: Vec<String>,
    /// Files in `src/` or `lib/` that are not sources or objects: junk left by users.
    pub ignored: Vec<String>,
}

/// Splits `codegen/host/{src,lib}` among the modules: `<m>_lib<N>.c` belongs to `m`;
/// unprefixed files belong to the only module.
pub(crate) fn codegen_for(tree: &Tree, module: &str, module_count: usize) -> Codegen {
    let prefix = format!("{module}_");
    let mut codegen = Codegen::default();
    for path in tree.files_under(SRC_DIR).chain(tree.files_under(LIB_DIR)) {
        let file = path.rsplit('/').next().unwrap_or(path);
        let relative = &path[path.find("codegen/host/").map_or(0, |i| i + "codegen/host/".len())..];
        let nested = relative.matches('/').count() > 1;
        if module_count > 1 && !file.starts_with(&prefix) {
            continue;
        }
        let extension = file.rsplit_once('.').map(|(_, ext)| ext);
        let in_src = path.starts_with(SRC_DIR);
        let list = match extension {
            _ if nested || file.starts_with('.') => &mut codegen.ignored,
            Some("c") if in_src => &mut codegen.c_sources,
            Some("cc" | "cpp" | "cxx") if in_src => &mut codegen.cxx_sources,
            Some("o") if !in_src => &mut codegen.objects,
            _ => &mut codegen.ignored,
        };
        list.push(path.to_string());
    }
    for list in [&mut codegen.c_sources, &mut codegen.cxx_sources, &mut codegen.objects] {
        list.sort_by_key(|path| natural_key(path));
    }
    codegen
}

/// Sort key that orders digit runs by value.
fn natural_key(name: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let mut number = c.to_digit(10).map_or(0, u64::from);
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                number = number.saturating_mul(10).saturating_add(u64::from(d));
                chars.next();
            }
            key.push((std::mem::take(&mut text), number));
        } else {
            text.push(c);
        }
    }
    key.push((text, 0));
    key
}

/// The parts of `tvmgen_<m>.h` the build needs.
#[derive(Debug, Clone, Default)]
pub(crate) struct InterfaceHeader {
    pub path: String,
    /// Members of `struct tvmgen_<m>_inputs`, in declaration order.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// Members of `struct tvmgen_<m>_workspace_pools` (pools the application supplies).
    pub pools: Vec<String>,
    /// Members of `struct tvmgen_<m>_devices` (BYOC device handles).
    pub devices: Vec<String>,
    /// `#define NAME value` lines, continuation lines joined.
    pub macros: BTreeMap<String, String>,
    /// Whether `tvmgen_<m>_map_inputs` exists (USMP `use_workspace_io`).
    pub maps_inputs: bool,
}

impl InterfaceHeader {
    pub fn path_for(module: &str) -> String {
        format!("{INCLUDE_DIR}/tvmgen_{module}.h")
    }

    pub fn parse(module: &str, path: &str, text: &str) -> Result<InterfaceHeader> {
        let code = strip_comments(text);
        let struct_members = |suffix: &str| struct_fields(&code, &format!("tvmgen_{module}_{suffix}"));
        let header = InterfaceHeader {
            path: path.to_string(),
            inputs: struct_members("inputs").unwrap_or_default(),
            outputs: struct_members("outputs").unwrap_or_default(),
            pools: struct_members("workspace_pools").unwrap_or_default(),
            devices: struct_members("devices").unwrap_or_default(),
            macros: macros(&code),
            maps_inputs: code.contains(&format!("tvmgen_{module}_map_inputs")),
        };
        if !code.contains(&format!("tvmgen_{module}_run")) {
            return Err(Error::new(ErrorKind::Metadata, format!("declares no `tvmgen_{module}_run` entry point"))
                .in_file(path)
                .help("the header must come from the same export as the sources; re-export the archive"));
        }
        Ok(header)
    }

    /// A `#define` value parsed as an unsigned integer.
    pub fn macro_u64(&self, name: &str) -> Option<u64> {
        parse_c_integer(self.macros.get(name)?)
    }
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start + 2..].find("*/").map_or("", |end| &rest[start + 2 + end + 2..]);
    }
    out.push_str(rest);
    out.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Field names of `struct <name> { void* a; void* b; };`.
fn struct_fields(code: &str, name: &str) -> Option<Vec<String>> {
    let start = code.find(&format!("struct {name} {{")).or_else(|| code.find(&format!("struct {name}{{")))?;
    let body_start = start + code[start..].find('{')? + 1;
    let body = &code[body_start..body_start + code[body_start..].find('}')?];
    Some(
        body.split(';')
            .filter_map(|decl| {
                let ident = decl.trim().rsplit(|c: char| c == '*' || c.is_whitespace()).next()?;
                (!ident.is_empty()).then(|| ident.to_string())
            })
            .collect(),
    )
}

fn macros(code: &str) -> BTreeMap<String, String> {
    let joined = code.replace("\\\r\n", " ").replace("\\\n", " ");
    joined
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("#define")?.trim_start();
            let (name, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            (!name.contains('(')).then(|| (name.to_string(), value.trim().to_string()))
        })
        .collect()
}

pub(crate) fn parse_c_integer(text: &str) -> Option<u64> {
    let text = text.trim().trim_start_matches('(').trim_end_matches(')');
    let text = text.trim_end_matches(['u', 'U', 'l', 'L']);
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Parses a `NAME_DATA` macro body (`0x12, 0x34, ...`) into bytes.
pub(crate) fn parse_byte_list(text: &str) -> Option<Vec<u8>> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| parse_c_integer(item).and_then(|value| u8::try_from(value).ok()))
        .collect()
}

/// The body (between the braces) of the C function `name` defined in `text`.
fn function_body<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let needle = format!("{name}(");
    for (at, _) in text.match_indices(&needle) {
        // A whole identifier, not the tail of a longer one.
        if text[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let after = &text[at + needle.len()..];
        let Some(close) = after.find(')') else { continue };
        let rest = after[close + 1..].trim_start();
        if !rest.starts_with('{') {
            continue;
        }
        let body = &rest[1..];
        if let Some(end) = closing(body, '{', '}') {
            return Some(&body[..end]);
        }
    }
    None
}

/// The index of the `close` that ends a bracket opened just before `text`.
fn closing(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The parameter list of the definition of `name` in `text`.
fn function_params<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let body = function_body(text, name)?;
    let body_at = body.as_ptr() as usize - text.as_ptr() as usize;
    let head = &text[..body_at];
    let open = head.rfind(&format!("{name}("))? + name.len() + 1;
    Some(&head[open..open + head[open..].find(')')?])
}

/// The highest `args)[i]` index used in `body`, plus one: how many packed arguments it reads.
fn packed_arg_count(body: &str) -> usize {
    body.match_indices("args)[")
        .filter_map(|(at, _)| {
            let digits: String = body[at + "args)[".len()..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<usize>().ok()
        })
        .map(|index| index + 1)
        .max()
        .unwrap_or(0)
}

/// A module's entry point when it has no interface header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HeaderlessEntry {
    /// `const tvm_model_t <symbol> = {...}` (2021 main-branch builds).
    Descriptor { symbol: String, file: String, inputs: Option<usize>, outputs: Option<usize> },
    /// `tvmgen_<m>_run` with the packed signature; `arguments` packed arguments it forwards.
    Packed { function: String, file: String, arguments: usize },
}

/// Finds the legacy descriptor or the packed `tvmgen_<m>_run` among the module's sources.
pub(crate) fn headerless_entry(tree: &Tree, codegen: &Codegen, module: &str) -> Option<HeaderlessEntry> {
    let run = format!("tvmgen_{module}_run");
    let mut packed = None;
    for path in &codegen.c_sources {
        let text = String::from_utf8_lossy(tree.get(path).unwrap_or_default());
        let code = strip_comments(&text);
        for symbol in [format!("tvmgen_{module}_network"), "network".to_string()] {
            let Some(at) = code.find(&format!("tvm_model_t {symbol} ")).or_else(|| code.find(&format!("tvm_model_t {symbol}="))) else {
                continue;
            };
            let init = &code[at..];
            let init = &init[..init.find("};").unwrap_or(init.len())];
            let count = |field: &str| {
                let value = init[init.find(field)? + field.len()..].trim_start().strip_prefix('=')?;
                let digits: String = value.trim_start().chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            };
            return Some(HeaderlessEntry::Descriptor {
                symbol,
                file: path.clone(),
                inputs: count(".num_input_tensors"),
                outputs: count(".num_output_tensors"),
            });
        }
        if packed.is_none() {
            if let (Some(params), Some(body)) = (function_params(&code, &run), function_body(&code, &run)) {
                if params.split(',').count() == 6 {
                    packed = Some(HeaderlessEntry::Packed { function: run.clone(), file: path.clone(), arguments: packed_arg_count(body) });
                }
            }
        }
    }
    packed
}

/// Whether `line` is a store `((T*)data)[index] = ...` (or `+=` and friends).
fn stores_into(line: &str, data: &str) -> bool {
    let Some(cast) = line.trim_start().strip_prefix("((") else { return false };
    let Some(type_end) = cast.find(')') else { return false };
    let Some(index) = cast[type_end + 1..].strip_prefix(data).and_then(|rest| rest.strip_prefix(")[")) else {
        return false;
    };
    let Some(end) = closing(index, '[', ']') else { return false };
    match index[end + 1..].trim_start().as_bytes() {
        [b'=', b'=', ..] => false,
        [b'=', ..] => true,
        [op, b'=', ..] => b"+-*/%&|^".contains(op),
        _ => false,
    }
}

/// One parameter of a generated operator: its name and whether the operator writes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OperatorArg {
    pub name: String,
    pub written: bool,
}

/// The parameters of packed operator `function` in the order it reads them from `args`,
/// and which of them it stores into (`((T*)x_1)[i] = ...` through the tensor's data).
pub(crate) fn operator_args(tree: &Tree, codegen: &Codegen, function: &str) -> Option<(String, Vec<OperatorArg>)> {
    for path in &codegen.c_sources {
        let text = String::from_utf8_lossy(tree.get(path).unwrap_or_default());
        let Some(body) = function_body(&text, function) else { continue };
        let mut args = Vec::new();
        for index in 0..packed_arg_count(body) {
            let needle = format!("(((TVMValue*)args)[{index}].v_handle)");
            let at = body.find(&needle)?;
            let line = &body[body[..at].rfind('\n').map_or(0, |i| i + 1)..at];
            let name = line.trim().strip_prefix("void*")?.trim().strip_suffix('=')?.trim().to_string();
            let data = body
                .find(&format!("(((DLTensor*){name})[0].data)"))
                .and_then(|at| {
                    let line = &body[body[..at].rfind('\n').map_or(0, |i| i + 1)..at];
                    line.trim().strip_prefix("void*")?.trim().strip_suffix('=').map(|v| v.trim().to_string())
                })
                .unwrap_or_else(|| name.clone());
            let written = body.lines().any(|line| stores_into(line, &data));
            args.push(OperatorArg { name, written });
        }
        return Some((path.clone(), args));
    }
    None
}

/// What the generated C needs from its surroundings.
#[derive(Debug, Clone, Default)]
pub(crate) struct CodeNeeds {
    /// Calls `TVMBackendAllocWorkspace`: an allocator and arena must be supplied.
    pub workspace_allocator: bool,
    /// `(file, header)` of the first Arm-only header included.
    pub arm_only: Option<(String, String)>,
    /// `(file, intrinsic)` of the first Arm DSP-extension intrinsic used (`__smlad`, `__SXTB16`, ...).
    pub dsp: Option<(String, String)>,
    /// `(file, header)` where Helium (MVE) intrinsics come in: `arm_mve.h`.
    pub mve: Option<(String, String)>,
}

/// ACLE / CMSIS intrinsics of the Arm DSP extension (lowercase; CMSIS spells them in capitals):
/// code calling them runs only on cores with the extension (Cortex-M4, M7, M33, M55 ...).
const DSP_INTRINSICS: &[&str] = &[
    "__smlad", "__smladx", "__smlsd", "__smlsdx", "__smlald", "__smlaldx", "__smlsld", "__smlsldx", "__smuad", "__smuadx",
    "__smusd", "__smusdx", "__sxtb16", "__sxtab16", "__uxtb16", "__uxtab16", "__pkhbt", "__pkhtb", "__qadd8", "__qadd16",
    "__qsub8", "__qsub16", "__qasx", "__qsax", "__sadd8", "__sadd16", "__ssub8", "__ssub16", "__uadd8", "__uadd16",
    "__usub8", "__usub16", "__shadd8", "__shadd16", "__ssat16", "__usat16", "__sel", "__usad8", "__usada8",
];

/// The first DSP intrinsic named in `text`, as written.
fn dsp_intrinsic(text: &str) -> Option<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|word| word.starts_with("__") && DSP_INTRINSICS.iter().any(|name| name.eq_ignore_ascii_case(word)))
}

pub(crate) fn code_needs(tree: &Tree, codegen: &Codegen) -> CodeNeeds {
    let mut needs = CodeNeeds::default();
    for path in codegen.c_sources.iter().chain(&codegen.cxx_sources) {
        let text = String::from_utf8_lossy(tree.get(path).unwrap_or_default());
        needs.workspace_allocator |= text.contains("TVMBackendAllocWorkspace");
        if needs.arm_only.is_none() {
            needs.arm_only = included_headers(&text)
                .find(|header| ARM_ONLY_HEADERS.contains(header))
                .map(|header| (path.clone(), header.to_string()));
        }
        if needs.dsp.is_none() {
            needs.dsp = dsp_intrinsic(&text).map(|name| (path.clone(), name.to_string()));
        }
        if needs.mve.is_none() {
            needs.mve = included_headers(&text).find(|header| *header == "arm_mve.h").map(|header| (path.clone(), header.to_string()));
        }
    }
    needs
}

/// The function TVM generates for linked weights (`-link-params`): a packed
/// call from a storage id to the weight's address, one `case <sid>:` each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkedParams {
    pub symbol: String,
    pub storage_ids: Vec<usize>,
}

/// Finds the definition of `_lookup_linked_param` in the module's C sources.
pub(crate) fn linked_params(tree: &Tree, codegen: &Codegen) -> Option<LinkedParams> {
    const SUFFIX: &str = "_lookup_linked_param(";
    for path in &codegen.c_sources {
        let text = String::from_utf8_lossy(tree.get(path).unwrap_or_default());
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(at) = line.find(SUFFIX) else { continue };
            // A definition, not the registry's declaration: the line opens the body.
            if !line.trim_end().ends_with('{') {
                continue;
            }
            let start = line[..at].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
            let symbol = format!("{}_lookup_linked_param", &line[start..at]);
            let mut storage_ids = Vec::new();
            for body in lines.by_ref() {
                if body.starts_with('}') {
                    break;
                }
                let case = body.trim().strip_prefix("case ").and_then(|rest| rest.strip_suffix(':'));
                if let Some(id) = case.and_then(|id| id.trim().parse().ok()) {
                    storage_ids.push(id);
                }
            }
            return Some(LinkedParams { symbol, storage_ids });
        }
    }
    None
}

/// Header names of `#include <x>` / `#include "x"` lines.
pub(crate) fn included_headers(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?.trim();
        let (open, close) = match rest.chars().next()? {
            '<' => ('<', '>'),
            '"' => ('"', '"'),
            _ => return None,
        };
        let inner = rest.strip_prefix(open)?;
        Some(&inner[..inner.find(close)?])
    })
}

/// A tensor type written in Relay text: `Tensor[(1, 49, 10, 1), int8]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RelayTensor {
    pub shape: Vec<u64>,
    pub dtype: DType,
}

/// The `@main` signature of the Relay text, as far as it is typed.
#[derive(Debug, Clone, Default)]
pub(crate) struct RelaySignature {
    /// `(name without %, type)` of every parameter: inputs and weights.
    pub params: Vec<(String, RelayTensor)>,
    /// Result types from `-> ...` or the final expression's `ty=` annotation.
    pub results: Vec<RelayTensor>,
    /// The `out_dtype` of the final expression when no result type is written (2021 archives).
    pub result_dtype: Option<DType>,
}

pub(crate) fn relay_signature(text: &str) -> RelaySignature {
    let Some(start) = text.find("def @main(") else { return RelaySignature::default() };
    let after = &text[start + "def @main(".len()..];
    let Some(close) = unmatched_close(after) else { return RelaySignature::default() };
    let params = split_top_level(&after[..close])
        .into_iter()
        .filter_map(|param| {
            let (name, ty) = param.trim().strip_prefix('%')?.split_once(':')?;
            Some((name.trim().to_string(), parse_tensor_type(ty)?))
        })
        .collect();
    let tail = &after[close + 1..];
    let body_start = tail.find('{').unwrap_or(tail.len());
    let mut results = tail[..body_start]
        .find("->")
        .map(|arrow| parse_tensor_types(&tail[arrow + 2..body_start]))
        .unwrap_or_default();
    let mut result_dtype = None;
    if results.is_empty() {
        results = final_expression_type(&tail[body_start..]);
        result_dtype = final_expression_out_dtype(&tail[body_start..]);
    }
    RelaySignature { params, results, result_dtype }
}

/// The index of the first bracket that closes one opened before `text`.
fn unmatched_close(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth > 0 => depth -= 1,
            ')' | ']' => return Some(i),
            _ => {}
        }
    }
    None
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_tensor_type(text: &str) -> Option<RelayTensor> {
    let inner = text.trim().strip_prefix("Tensor[")?;
    let inner = &inner[..inner.rfind(']')?];
    let (shape, dtype) = inner.rsplit_once(',')?;
    let shape = shape.trim().strip_prefix('(')?.strip_suffix(')')?;
    let shape = shape
        .split(',')
        .map(str::trim)
        .filter(|dim| !dim.is_empty())
        .map(|dim| dim.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    Some(RelayTensor { shape, dtype: DType::parse(dtype.trim()).ok()? })
}

/// Every `Tensor[...]` in `text`, in order (a tuple result lists several).
fn parse_tensor_types(text: &str) -> Vec<RelayTensor> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("Tensor[") {
        let candidate = &rest[start..];
        let end = unmatched_close(&candidate["Tensor[".len()..]).map_or(candidate.len(), |e| e + "Tensor[".len() + 1);
        found.extend(parse_tensor_type(&candidate[..end]));
        rest = &candidate[end..];
    }
    found
}

/// The `ty=` annotation of the last expression of the `@main` body, if it has one.
fn final_expression_type(body: &str) -> Vec<RelayTensor> {
    let end = body.find("\n}").unwrap_or(body.len());
    let last = body[..end].trim_end().rsplit('\n').next().unwrap_or("");
    last.rfind("ty=").map(|at| parse_tensor_types(&last[at..])).unwrap_or_default()
}

/// `out_dtype="int8"` of the last expression of the `@main` body.
fn final_expression_out_dtype(body: &str) -> Option<DType> {
    let end = body.find("\n}").unwrap_or(body.len());
    let last = body[..end].trim_end().rsplit('\n').next().unwrap_or("");
    let value = &last[last.rfind("out_dtype=\"")? + "out_dtype=\"".len()..];
    DType::parse(&value[..value.find('"')?]).ok()
}

/// Element types of `tvmgen_<m>___tvm_main__`'s parameters, from its definition
/// (`float* x_buffer_var, ...`); `None` for untyped (`void*`) parameters.
pub(crate) fn main_parameter_types(tree: &Tree, codegen: &Codegen, module: &str) -> Vec<Option<DType>> {
    let needle = format!("tvmgen_{module}___tvm_main__(");
    for path in &codegen.c_sources {
        let text = String::from_utf8_lossy(tree.get(path).unwrap_or_default());
        for (at, _) in text.match_indices(&needle) {
            let params_text = &text[at + needle.len()..];
            let Some(close) = params_text.find(')') else { continue };
            let types: Vec<Option<DType>> = params_text[..close].split(',').map(c_pointer_dtype).collect();
            if types.iter().any(Option::is_some) {
                return types;
            }
        }
    }
    Vec::new()
}

fn c_pointer_dtype(param: &str) -> Option<DType> {
    let ty = param.trim().split('*').next()?.trim();
    let name = match ty {
        "int8_t" => "int8",
        "uint8_t" => "uint8",
        "int16_t" => "int16",
        "uint16_t" => "uint16",
        "int32_t" => "int32",
        "uint32_t" => "uint32",
        "int64_t" => "int64",
        "uint64_t" => "uint64",
        "float" => "float32",
        "double" => "float64",
        _ => return None,
    };
    DType::parse(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_interface_header_with_pools_and_byte_data() {
        let text = "#define TVMGEN_DEFAULT_INPUT_1_SIZE 240\n/*! doc */\nstruct tvmgen_default_inputs {\n  void* input_1;\n};\n\
            struct tvmgen_default_outputs {\n  void* output;\n};\nstruct tvmgen_default_workspace_pools {\n  void* flash;\n  void* sram;\n};\n\
            int32_t tvmgen_default_run(\n  struct tvmgen_default_inputs* inputs\n);\n\
            #define TVMGEN_DEFAULT_FLASH_CONSTANT_POOL_DATA \\\n    0xee, 0x19, \\\n    0x00\\\n\n#define TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE 17778\n";
        let header = InterfaceHeader::parse("default", "h", text).unwrap();
        assert_eq!(header.inputs, ["input_1"]);
        assert_eq!(header.outputs, ["output"]);
        assert_eq!(header.pools, ["flash", "sram"]);
        assert_eq!(header.macro_u64("TVMGEN_DEFAULT_INPUT_1_SIZE"), Some(240));
        assert_eq!(header.macro_u64("TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE"), Some(17778));
        let data = &header.macros["TVMGEN_DEFAULT_FLASH_CONSTANT_POOL_DATA"];
        assert_eq!(parse_byte_list(data), Some(vec![0xee, 0x19, 0x00]));
    }

    #[test]
    fn header_without_run_function_is_an_error() {
        let err = InterfaceHeader::parse("default", "codegen/host/include/tvmgen_default.h", "struct x {};").unwrap_err();
        assert!(err.to_string().contains("tvmgen_default_run"), "{err}");
    }

    #[test]
    fn reads_relay_signature_and_result_types() {
        let text = "def @main(%input_1: Tensor[(1, 49, 10, 1), int8] /* span=input_1:0:0 */, %w: Tensor[(10), int32]) -> (Tensor[(1, 12), int8], Tensor[(3), float32]) {\n  %0\n}\n";
        let sig = relay_signature(text);
        assert_eq!(sig.params[0].0, "input_1");
        assert_eq!(sig.params[0].1.shape, [1, 49, 10, 1]);
        assert_eq!(sig.results.len(), 2);
        assert_eq!(sig.results[1].dtype.to_string(), "float32");

        let annotated = "def @main(%x: Tensor[(1, 4), float32]) {\n  %0 = f(%x);\n  g(%0) /* ty=Tensor[(1, 6), int8] */\n}\n";
        assert_eq!(relay_signature(annotated).results[0].shape, [1, 6]);
    }

    #[test]
    fn sorts_sources_numerically_and_skips_junk() {
        let files = ["lib10.c", "lib2.c", "lib0.c", ".DS_Store", "notes.txt", ".vscode/settings.json"]
            .map(|name| (format!("{SRC_DIR}/{name}"), Vec::new()));
        let tree = Tree::from_files(files).unwrap();
        let codegen = codegen_for(&tree, "default", 1);
        let names: Vec<_> = codegen.c_sources.iter().map(|p| p.rsplit('/').next().unwrap()).collect();
        assert_eq!(names, ["lib0.c", "lib2.c", "lib10.c"]);
        assert_eq!(codegen.ignored.len(), 3);
    }

    #[test]
    fn finds_dsp_intrinsics_in_either_spelling() {
        assert_eq!(dsp_intrinsic("acc = __smlad(a, b, acc);"), Some("__smlad"));
        assert_eq!(dsp_intrinsic("x = __SXTB16(__ror(y, 8));"), Some("__SXTB16"));
        assert_eq!(dsp_intrinsic("x = __ror(y, 8); int __smlad_count = 0;"), None);
    }

    #[test]
    fn finds_arm_only_headers() {
        let text = "#include <stdint.h>\n#  include <arm_acle.h>\n";
        assert!(included_headers(text).any(|h| h == "arm_acle.h"));
    }

    #[test]
    fn finds_linked_param_storage_ids() {
        let lib0 = "TVM_DLL int32_t _lookup_linked_param(TVMValue* args, int* type_code, int num_args, TVMValue* out_value, int* out_type_code);\n";
        let lib1 = "static const int16_t __tvm_param__p7[2] = {1, 2};\n\
            TVM_DLL int32_t _lookup_linked_param(void* args, int* arg_type_ids, int num_args, void* out_ret_value, int* out_ret_tcode, void* resource_handle) {\n\
            \x20   switch (((int64_t*) args)[0]) {\n    default:\n        out_ret_tcode[0] = 4;\n        return 0;\n\
            \x20   case 10:\n        ((uint64_t*)out_ret_value)[0] = (uint64_t) (uintptr_t) __tvm_param__p7;\n\
            \x20   case 3:\n        return 0;\n    }\n}\nint after(void) {\n  case 99:\n}\n";
        let tree = Tree::from_files([
            ("codegen/host/src/default_lib0.c".to_string(), lib0.as_bytes().to_vec()),
            ("codegen/host/src/default_lib1.c".to_string(), lib1.as_bytes().to_vec()),
        ])
        .unwrap();
        let codegen = codegen_for(&tree, "default", 1);
        let linked = linked_params(&tree, &codegen).unwrap();
        assert_eq!(linked, LinkedParams { symbol: "_lookup_linked_param".to_string(), storage_ids: vec![10, 3] });
        let plain = Tree::from_files([("codegen/host/src/default_lib0.c".to_string(), lib0.as_bytes().to_vec())]).unwrap();
        assert_eq!(linked_params(&plain, &codegen_for(&plain, "default", 1)), None);
    }
}
