//! Facts read from the archive's files rather than its metadata: the interface
//! header, which sources belong to which module, what the generated code
//! needs at link time, and the tensor types the Relay text declares.

use std::collections::BTreeMap;

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ident::{self, CIdent};
use crate::input::archive::Tree;
use crate::input::c::parser::syntax::{walk, CSource, Expr, Init, Initializer, Member, Node, Span, Stmt, StmtKind};
use crate::input::c::{self, closing, split_top_level, strip_comments, CFiles, FunctionIndex};
use crate::input::code::{packed_arguments, ModuleCode, MAX_CALL_DEPTH};
use crate::input::kernel_library::{scratch_calls, ScratchCall, CMSIS_NN_HEADERS};
use crate::input::loops::{pointer_dtype, Reach, Use};
use crate::input::metadata::{Executor, MainMemory, Metadata, ModuleMeta, Style};

pub(crate) const SRC_DIR: &str = "codegen/host/src";
pub(crate) const LIB_DIR: &str = "codegen/host/lib";
pub(crate) const INCLUDE_DIR: &str = "codegen/host/include";

/// Headers that exist only in Arm toolchains (compiler intrinsics and CMSIS-Core's
/// compiler layer): code including them was generated for an Arm target. Kernel
/// library APIs (CMSIS-NN's `arm_nnfunctions.h`, CMSIS-DSP's `arm_math.h`) are not
/// here: portable builds of them exist (muRISCV-NN, host builds), so they are
/// external code the user supplies like any BYOC library.
const ARM_ONLY_HEADERS: &[&str] = &[
    "arm_acle.h",
    "arm_mve.h",
    "arm_neon.h",
    "arm_sve.h",
    "arm_fp16.h",
    "arm_cmse.h",
    "cmsis_compiler.h",
    "cmsis_gcc.h",
    "cmsis_armcc.h",
    "cmsis_armclang.h",
    "cmsis_iccarm.h",
];

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

/// The module of `modules` a file `<m>_lib<N>.c` belongs to: the longest name
/// `m` it starts with followed by `_`, so `kws_mlp_lib0.c` is `kws_mlp`'s even
/// beside a module `kws`. `None` when no module's name prefixes it.
pub(crate) fn owner<'a>(file: &str, modules: &[&'a str]) -> Option<&'a str> {
    modules.iter().copied().filter(|m| file.strip_prefix(m).is_some_and(|rest| rest.starts_with('_'))).max_by_key(|m| m.len())
}

/// Splits `codegen/host/{src,lib}` among `modules`: each file goes to its [`owner`];
/// unprefixed files belong to the only module.
pub(crate) fn codegen_for(tree: &Tree, module: &str, modules: &[&str]) -> Codegen {
    let mut codegen = Codegen::default();
    for path in tree.files_under(SRC_DIR).chain(tree.files_under(LIB_DIR)) {
        let file = path.rsplit('/').next().unwrap_or(path);
        let relative = &path[path.find("codegen/host/").map_or(0, |i| i + "codegen/host/".len())..];
        let nested = relative.matches('/').count() > 1;
        if modules.len() > 1 && owner(file, modules) != Some(module) {
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

/// The archive's C and C++ sources as inspect's questions read them, each
/// read once: numeric brace initializers (weights tables, most of a weights
/// source's bytes) are left out, as they hold no name any question asks about.
pub(crate) struct Sources<'t> {
    pub tree: &'t Tree,
    /// Each source without comments, literals' contents and numeric initializers, with its functions.
    texts: BTreeMap<String, (String, FunctionIndex)>,
}

impl<'t> Sources<'t> {
    /// The sources of `tree`, as `files` (parsed from it) read them.
    pub fn new(tree: &'t Tree, files: &CFiles<'_>) -> Sources<'t> {
        let texts = tree
            .files_under(SRC_DIR)
            .filter(|path| is_source(path))
            .map(|path| {
                let text = files.get(path).map(skeleton_of).unwrap_or_default();
                let index = FunctionIndex::of(&text);
                (path.to_string(), (text, index))
            })
            .collect();
        Sources { tree, texts }
    }

    /// The source's text without comments, literals and numeric initializers; empty for a file the tree lacks.
    #[cfg(test)]
    pub(crate) fn text(&self, path: &str) -> &str {
        self.texts.get(path).map_or("", |(text, _)| text.as_str())
    }

    /// `(parameter list, body)` of the definition of `function` in the source `path`.
    pub(crate) fn definition(&self, path: &str, function: &str) -> Option<(&str, &str)> {
        let (text, index) = self.texts.get(path)?;
        index.get(text, function)
    }

    /// The first of `paths` defining `function`, with its parameter list and body.
    pub(crate) fn defining<'p>(&self, paths: &'p [String], function: &str) -> Option<(&'p String, &str, &str)> {
        paths.iter().find_map(|path| self.definition(path, function).map(|(params, body)| (path, params, body)))
    }
}

/// Whether `path` names a C or C++ source.
fn is_source(path: &str) -> bool {
    path.rsplit_once('.').is_some_and(|(_, ext)| matches!(ext, "c" | "cc" | "cpp" | "cxx"))
}

/// The text of `source` without comments, literals' contents and numeric
/// brace initializers ([`skeleton`]). The numeric lists the parser counted at
/// file scope (weights: most of a weights source's bytes) are left out
/// first, so only the rest is lexed again; [`skeleton`] then finds the
/// others (in bodies and macros, or after a comment) as before.
fn skeleton_of(source: &CSource<'_>) -> String {
    let text = source.text();
    let mut lists: Vec<Span> = Vec::new();
    let mut trees: Vec<&Initializer<'_>> = Vec::new();
    for variable in &source.variables {
        match &variable.init {
            Some(Init::Numeric { span, .. }) => lists.push(*span),
            Some(Init::Tree(tree)) => trees.push(tree),
            _ => {}
        }
    }
    while let Some(tree) = trees.pop() {
        match tree {
            Initializer::Numeric { span, .. } => lists.push(*span),
            Initializer::List(items) => trees.extend(items.iter().map(|(_, item)| item)),
            Initializer::Expr(_) => {}
        }
    }
    lists.sort_by_key(|span| span.start);
    let mut kept = String::new();
    let mut copied = 0;
    for span in lists {
        let range = span.range();
        // Only where `skeleton` would take it: a closed list after `=` and spaces.
        let after_equals = text[..range.start].trim_end_matches([' ', '\t', '\r', '\n']).ends_with('=');
        if range.start < copied || !after_equals || !text[range.clone()].ends_with('}') {
            continue;
        }
        kept.push_str(&text[copied..range.start]);
        kept.push_str("{}");
        copied = range.end;
    }
    kept.push_str(&text[copied..]);
    let code = strip_comments(&kept);
    String::from_utf8_lossy(&skeleton(code.as_bytes())).into_owned()
}

/// `code` with every numeric brace initializer (`= { 0x1p-3f, -2, { 4 } }`)
/// replaced by `= {}`. One pass; each byte is looked at most twice.
fn skeleton(code: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    while i < code.len() {
        if code[i] == b'=' {
            let mut open = i + 1;
            while open < code.len() && matches!(code[open], b' ' | b'\t' | b'\r' | b'\n') {
                open += 1;
            }
            if let Some(close) = numeric_group_end(code, open) {
                out.extend_from_slice(&code[copied..open]);
                out.extend_from_slice(b"{}");
                copied = close + 1;
                i = close + 1;
                continue;
            }
        }
        i += 1;
    }
    out.extend_from_slice(&code[copied..]);
    out
}

/// The index of the `}` closing the group that opens at `open`, when all it
/// holds is numbers, signs, commas, whitespace and nested groups. A failing
/// scan stops at the first other byte (`=` among them).
fn numeric_group_end(code: &[u8], open: usize) -> Option<usize> {
    if code.get(open) != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    let mut i = open;
    while i < code.len() {
        match code[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' | b'x' | b'X' | b'p' | b'P' | b'u' | b'U' | b'l' | b'L' => {}
            b'.' | b'+' | b'-' | b',' | b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => return None,
        }
        i += 1;
    }
    None
}

/// The parts of `tvmgen_<m>.h` the build needs.
#[derive(Debug, Clone, Default)]
pub(crate) struct InterfaceHeader {
    pub path: String,
    /// Members of `struct tvmgen_<m>_inputs`, in declaration order.
    pub inputs: Vec<CIdent>,
    pub outputs: Vec<CIdent>,
    /// Members of `struct tvmgen_<m>_workspace_pools` (pools the application supplies).
    pub pools: Vec<CIdent>,
    /// Members of `struct tvmgen_<m>_devices` (BYOC device handles).
    pub devices: Vec<CIdent>,
    /// `#define NAME value` lines, continuation lines joined.
    pub macros: BTreeMap<String, String>,
    /// Whether `tvmgen_<m>_map_inputs` exists (USMP `use_workspace_io`).
    pub maps_inputs: bool,
    /// The defined function to call with the buffers (inputs then outputs)
    /// when no source defines the `tvmgen_<m>_run` the header declares.
    pub direct_entry: Option<CIdent>,
}

impl InterfaceHeader {
    pub fn path_for(module: &str) -> String {
        format!("{INCLUDE_DIR}/tvmgen_{module}.h")
    }

    /// The interface of `module` its parsed header `header` declares: its
    /// structs' members, its object-like macros, whether it names
    /// `tvmgen_<m>_map_inputs`, and that it names `tvmgen_<m>_run`.
    pub fn from(module: &str, header: &CSource<'_>) -> Result<InterfaceHeader> {
        let path = header.path;
        // Members become C designators in the glue: each must pass the identifier rule,
        // and be a pointer, which the glue sets to a buffer and the bindings type as one.
        let struct_members = |suffix: &str| -> Result<Vec<CIdent>> {
            let name = format!("tvmgen_{module}_{suffix}");
            let members = header.structs.iter().find(|found| found.name == name).map_or(&[][..], |found| &found.members[..]);
            let member = |member: &Member<'_>| {
                if !member.pointer {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!("member `{}` of `struct {name}` is not a pointer: mlf-build passes every buffer, pool and device through a pointer member", member.name),
                    )
                    .in_file(path)
                    .help("TVM declares each member as `void* name;`: pass the header TVM wrote"));
                }
                CIdent::new(&format!("module `{module}`: struct member in {path}"), member.name)
            };
            members.iter().map(member).collect()
        };
        let interface = InterfaceHeader {
            path: path.to_string(),
            inputs: struct_members("inputs")?,
            outputs: struct_members("outputs")?,
            pools: struct_members("workspace_pools")?,
            devices: struct_members("devices")?,
            macros: macros(header),
            maps_inputs: header.mentions(&format!("tvmgen_{module}_map_inputs")),
            direct_entry: None,
        };
        if !header.mentions(&format!("tvmgen_{module}_run")) {
            return Err(Error::new(ErrorKind::Metadata, format!("declares no `tvmgen_{module}_run` entry point"))
                .in_file(path)
                .help(format!("mlf-build runs the model through `tvmgen_{module}_run`, which the header TVM writes declares: pass that header (the archive as TVM wrote it)")));
        }
        Ok(interface)
    }

    /// A `#define` value parsed as an unsigned integer.
    pub fn macro_u64(&self, name: &str) -> Option<u64> {
        c::integer(self.macros.get(name)?)
    }
}

/// What an archive without `metadata.json` (codegen-only trees) says about its
/// modules: one AOT module per interface header `codegen/host/include/tvmgen_<m>.h`
/// (each header parsed alone: only the module names and what the header
/// states are read here), its workspace from the header's `_WORKSPACE_SIZE`
/// macro, else 0 until [`workspace_from_code`] reads the code. Tensors are
/// left to the planner, which reads them from the header and the typed sources.
pub(crate) fn metadata_from_headers(tree: &Tree) -> Result<Option<Metadata>> {
    let mut modules = Vec::new();
    for path in tree.files_under(INCLUDE_DIR) {
        let Some(file) = path.strip_prefix(INCLUDE_DIR).and_then(|rest| rest.strip_prefix('/')) else { continue };
        let Some(name) = file.strip_prefix("tvmgen_").and_then(|rest| rest.strip_suffix(".h")) else { continue };
        if !crate::ident::is_c_identifier(name) {
            continue;
        }
        let text = String::from_utf8_lossy(tree.get(path).unwrap_or_default());
        let header = crate::input::c::parser::parse::parse(path, &text)?;
        let inputs = format!("tvmgen_{name}_inputs");
        if !header.structs.iter().any(|found| found.name == inputs) {
            continue;
        }
        let relay_path = [format!("src/{name}.relay"), "src/relay.txt".to_string()].into_iter().find(|p| tree.contains(p));
        modules.push(ModuleMeta {
            name: name.to_string(),
            model_name: name.to_string(),
            style: Style::FullModel,
            executors: vec![Executor::Aot],
            targets: Vec::new(),
            main: vec![MainMemory {
                device: 1,
                workspace_size_bytes: stated_workspace(name, &header).unwrap_or(0),
                constants_size_bytes: 0,
                io_size_bytes: 0,
                inputs: Vec::new(),
                outputs: Vec::new(),
            }],
            operators: Vec::new(),
            sids: Vec::new(),
            operator_functions: Vec::new(),
            export_datetime: None,
            has_runtime_dependency: false,
            graph_json_path: None,
            relay_path,
        });
    }
    modules.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((!modules.is_empty()).then_some(Metadata { version: 0, modules }))
}

/// The workspace `module`'s interface header states (`TVMGEN_<M>_WORKSPACE_SIZE`).
fn stated_workspace(module: &str, header: &CSource<'_>) -> Option<u64> {
    macros(header).get(&format!("TVMGEN_{}_WORKSPACE_SIZE", module.to_uppercase())).and_then(|value| c::integer(value))
}

/// For the modules of [`metadata_from_headers`] whose header states no
/// workspace, the workspace their code takes: USMP's static pool arrays,
/// else what the model function asks `TVMBackendAllocWorkspace` for.
/// Read once the archive's C is parsed (and renamed: `files` is of `tree`).
pub(crate) fn workspace_from_code(metadata: &mut Metadata, tree: &Tree, files: &CFiles<'_>) {
    let names: Vec<String> = metadata.modules.iter().map(|m| m.name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for module in &mut metadata.modules {
        let stated = files.get(&InterfaceHeader::path_for(&module.name)).and_then(|header| stated_workspace(&module.name, header));
        if stated.is_some() {
            continue;
        }
        let codegen = codegen_for(tree, &module.name, &names);
        let code = ModuleCode::new(tree, files, &codegen);
        let entry = format!("tvmgen_{}___tvm_main__", module.name);
        if let (Some(main), Some(bytes)) = (module.main.first_mut(), code.static_workspace().or_else(|| code.workspace_bytes(&entry, 16))) {
            main.workspace_size_bytes = bytes;
        }
    }
}

/// The object-like macros `header` defines, with their values (the last
/// definition of a name wins, as the preprocessor takes it).
fn macros(header: &CSource<'_>) -> BTreeMap<String, String> {
    header.defines.iter().filter(|define| define.params.is_none()).map(|define| (define.name.to_string(), define.value(header))).collect()
}

/// Parses a `NAME_DATA` macro body (`0x12, 0x34, ...`) into bytes.
pub(crate) fn parse_byte_list(text: &str) -> Option<Vec<u8>> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| c::integer(item).and_then(|value| u8::try_from(value).ok()))
        .collect()
}

/// The highest `args)[i]` index used in `body`, plus one: how many packed arguments it reads.
pub(crate) fn packed_arg_count(body: &str) -> usize {
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

/// Finds the legacy descriptor (a file-scope `tvm_model_t`, its tensor
/// counts from its designated initializer) or the packed `tvmgen_<m>_run`
/// (six parameters) among the module's C sources.
pub(crate) fn headerless_entry(code: &ModuleCode<'_, '_>, module: &str) -> Option<HeaderlessEntry> {
    let run = format!("tvmgen_{module}_run");
    let mut packed = None;
    for source in code.c_sources() {
        for symbol in [format!("tvmgen_{module}_network"), "network".to_string()] {
            let descriptor = source.variables.iter().find(|found| found.name == symbol && found.type_words.contains(&"tvm_model_t"));
            let Some(descriptor) = descriptor else { continue };
            let count = |field: &str| match &descriptor.init {
                Some(Init::Tree(Initializer::List(items))) => items.iter().find_map(|(designator, item)| match item {
                    Initializer::Expr(Expr::Int(value)) if *designator == Some(field) => usize::try_from(*value).ok(),
                    _ => None,
                }),
                _ => None,
            };
            return Some(HeaderlessEntry::Descriptor {
                inputs: count("num_input_tensors"),
                outputs: count("num_output_tensors"),
                symbol,
                file: source.path.to_string(),
            });
        }
        if packed.is_none() {
            if let Some(function) = source.function(&run).filter(|function| function.params.len() == 6) {
                let arguments = packed_arguments(function.body(source));
                packed = Some(HeaderlessEntry::Packed { function: run.clone(), file: source.path.to_string(), arguments });
            }
        }
    }
    packed
}

/// One parameter of a generated operator: its name and whether the operator writes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OperatorArg {
    pub name: String,
    pub written: bool,
}

/// The parameters of packed operator `function` in the order it reads them
/// from `args` (`void* T_add = (((TVMValue*)args)[3].v_handle);`), and which
/// of them it stores into, at any depth, through the tensor's data
/// (`void* T_add_1 = (((DLTensor*)T_add)[0].data);`, then `((float*)T_add_1)[i] = ...`
/// or a compound assignment), with the file defining it. `None` when a
/// parameter is not declared so, or a statement of a function that takes
/// parameters so is not read (a store may hide in it).
pub(crate) fn operator_args(code: &ModuleCode<'_, '_>, function: &str) -> Option<(String, Vec<OperatorArg>)> {
    let (source, function) = code.c_function(function)?;
    let body = function.body(source);
    let nodes = walk(&body.statements);
    let count = packed_arguments(body);
    if count > 0 && nodes.iter().any(|node| matches!(node, Node::Stmt(Stmt { kind: StmtKind::Unparsed, .. }))) {
        return None;
    }
    let mut args = Vec::new();
    for index in 0..count {
        let index = i64::try_from(index).ok()?;
        let handle = |expr: &Expr<'_>| member_of_cast(expr, "v_handle", "TVMValue", "args", index);
        let name = declared_as(&nodes, handle)?;
        let data = declared_as(&nodes, |expr| member_of_cast(expr, "data", "DLTensor", name, 0)).unwrap_or(name);
        let written = nodes.iter().any(|node| match node {
            Node::Expr(Expr::Assign(_, target, _)) => {
                matches!(target.unparenthesized(), Expr::Index(of, _) if of.cast_pointer().is_some_and(|(_, variable)| variable == data))
            }
            _ => false,
        });
        args.push(OperatorArg { name: name.to_string(), written });
    }
    Some((source.path.to_string(), args))
}

/// `(((T*)variable)[index].field)`.
fn member_of_cast(expr: &Expr<'_>, field: &str, ty: &str, variable: &str, index: i64) -> bool {
    match expr.unparenthesized() {
        Expr::Member { of, field: found, arrow: false } if *found == field => match of.unparenthesized() {
            Expr::Index(array, at) => **at == Expr::Int(index) && array.cast_pointer() == Some((&[ty][..], variable)),
            _ => false,
        },
        _ => false,
    }
}

/// The variable a `void* name = <value>;` declares, for the first value
/// `is_value` accepts; `None` when that value is not such a declaration's.
fn declared_as<'c>(nodes: &[Node<'_, 'c>], is_value: impl Fn(&Expr<'c>) -> bool) -> Option<&'c str> {
    for node in nodes {
        match node {
            Node::Stmt(Stmt { kind: StmtKind::Decl { type_words, declarators, .. }, .. }) => {
                for declarator in declarators {
                    if matches!(&declarator.init, Some(Initializer::Expr(value)) if is_value(value)) {
                        return (type_words[..] == ["void"] && declarator.pointer).then_some(declarator.name);
                    }
                }
            }
            Node::Expr(expr) if is_value(expr) => return None,
            _ => {}
        }
    }
    None
}

/// The variable a packed function's body declares for its argument `index`
/// (`void* T_add = (((TVMValue*)args)[3].v_handle);`), and the one it
/// declares for that tensor's data (`void* T_add_1 = (((DLTensor*)T_add)[0].data);`).
fn packed_tensor(body: &str, index: usize) -> Option<(String, Option<String>)> {
    let declared_as = |at: usize| {
        let line = &body[body[..at].rfind('\n').map_or(0, |i| i + 1)..at];
        line.trim().strip_prefix("void*").and_then(|rest| rest.trim().strip_suffix('=')).map(|name| name.trim().to_string())
    };
    let name = declared_as(body.find(&format!("(((TVMValue*)args)[{index}].v_handle)"))?)?;
    let data = body.find(&format!("(((DLTensor*){name})[0].data)")).and_then(declared_as);
    Some((name, data))
}

/// How far packed operator `function` (the graph executor's calling
/// convention: argument `i` is a `DLTensor*` in `args[i]`) reaches into the
/// data of each of its tensor arguments, in argument order (see `loops`),
/// with the file defining it. `None` when no source defines it.
pub(crate) fn packed_operator_reach(sources: &Sources<'_>, codegen: &Codegen, function: &str) -> Option<(String, Vec<Option<Reach>>)> {
    let (path, ..) = sources.defining(&codegen.c_sources, function)?;
    let code = CodeReader { sources, codegen, texts: std::cell::RefCell::new(BTreeMap::new()) };
    let reaches = code.definition(function, |_, body| (0..packed_arg_count(body)).map(|index| code.packed_reach(body, index)).collect())?;
    Some((path.clone(), reaches))
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
    /// What the code calls of CMSIS-NN, when it includes CMSIS-NN's headers.
    pub cmsis_nn: Option<KernelCalls>,
    /// Headers the sources include that the archive does not ship, each with
    /// the first source including it: not found beside that source, in
    /// `codegen/host/include` or `runtime/include`, and not the C library's,
    /// an Arm toolchain's ([`CodeNeeds::arm_only`]) or CMSIS-NN's ([`CodeNeeds::cmsis_nn`]).
    pub unshipped_headers: BTreeMap<String, String>,
    /// `(file, header)` of every `#include` of the sources, in order: what a
    /// failed compile's diagnosis checks.
    pub includes: Vec<(String, String)>,
}

/// The C standard library's headers (C17), which every toolchain has.
const C_LIBRARY_HEADERS: &[&str] = &[
    "assert.h",
    "complex.h",
    "ctype.h",
    "errno.h",
    "fenv.h",
    "float.h",
    "inttypes.h",
    "iso646.h",
    "limits.h",
    "locale.h",
    "math.h",
    "setjmp.h",
    "signal.h",
    "stdalign.h",
    "stdarg.h",
    "stdatomic.h",
    "stdbool.h",
    "stddef.h",
    "stdint.h",
    "stdio.h",
    "stdlib.h",
    "stdnoreturn.h",
    "string.h",
    "tgmath.h",
    "threads.h",
    "time.h",
    "uchar.h",
    "wchar.h",
    "wctype.h",
];

/// Whether `header`, included by `source`, is found in the archive: beside
/// the source (a quoted include) or in its include directories.
fn ships(tree: &Tree, source: &str, header: &str) -> bool {
    let own_dir = source.rsplit_once('/').map_or("", |(dir, _)| dir);
    [own_dir, INCLUDE_DIR, "runtime/include"].iter().any(|dir| tree.contains(&format!("{dir}/{header}")))
}

/// A kernel library the code includes, and what the code calls without defining it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelCalls {
    /// The first source including one of the library's headers, and that header.
    pub file: String,
    pub header: String,
    /// Functions (and function-like macros) the module's sources call but do not
    /// define, each with the first source calling it: the library's among them,
    /// and the C library's (`memset`, `expf`).
    pub undefined: BTreeMap<String, String>,
    /// The calls that give a kernel a scratch buffer, and its size.
    pub scratch: Vec<ScratchCall>,
}

/// ACLE / CMSIS intrinsics of the Arm DSP extension (lowercase; CMSIS spells them in capitals):
/// code calling them runs only on cores with the extension (Cortex-M4, M7, M33, M55 ...).
const DSP_INTRINSICS: &[&str] = &[
    "__smlad",
    "__smladx",
    "__smlsd",
    "__smlsdx",
    "__smlald",
    "__smlaldx",
    "__smlsld",
    "__smlsldx",
    "__smuad",
    "__smuadx",
    "__smusd",
    "__smusdx",
    "__sxtb16",
    "__sxtab16",
    "__uxtb16",
    "__uxtab16",
    "__pkhbt",
    "__pkhtb",
    "__qadd8",
    "__qadd16",
    "__qsub8",
    "__qsub16",
    "__qasx",
    "__qsax",
    "__sadd8",
    "__sadd16",
    "__ssub8",
    "__ssub16",
    "__uadd8",
    "__uadd16",
    "__usub8",
    "__usub16",
    "__shadd8",
    "__shadd16",
    "__ssat16",
    "__usat16",
    "__sel",
    "__usad8",
    "__usada8",
];

/// What `code`'s sources (C, then C++) need from their surroundings; `tree`
/// says which included headers the archive ships.
pub(crate) fn code_needs(tree: &Tree, code: &ModuleCode<'_, '_>) -> CodeNeeds {
    let mut needs = CodeNeeds { workspace_allocator: code.allocates_workspace(), ..CodeNeeds::default() };
    for source in code.sources() {
        let path = source.path;
        let found = |header: &str| Some((path.to_string(), header.to_string()));
        for include in &source.includes {
            let header = include.header;
            needs.includes.push((path.to_string(), header.to_string()));
            if needs.arm_only.is_none() && ARM_ONLY_HEADERS.contains(&header) {
                needs.arm_only = found(header);
            }
            if needs.mve.is_none() && header == "arm_mve.h" {
                needs.mve = found(header);
            }
            // C++'s own headers have no extension (<cstdint>).
            let library = C_LIBRARY_HEADERS.contains(&header) || ARM_ONLY_HEADERS.contains(&header) || CMSIS_NN_HEADERS.contains(&header);
            if !(library || !header.contains('.') || ships(tree, path, header)) {
                needs.unshipped_headers.entry(header.to_string()).or_insert_with(|| path.to_string());
            }
            if needs.cmsis_nn.is_none() && CMSIS_NN_HEADERS.contains(&header) {
                needs.cmsis_nn = Some(KernelCalls {
                    file: path.to_string(),
                    header: header.to_string(),
                    undefined: Default::default(),
                    scratch: Vec::new(),
                });
            }
        }
        if needs.dsp.is_none() {
            let dsp = |name: &str| name.starts_with("__") && DSP_INTRINSICS.iter().any(|intrinsic| intrinsic.eq_ignore_ascii_case(name));
            needs.dsp = source.names().iter().find(|name| dsp(name)).and_then(|name| found(name));
        }
    }
    if let Some(kernels) = &mut needs.cmsis_nn {
        for source in code.sources() {
            for name in source.called().filter(|name| !code.defines(name)) {
                kernels.undefined.entry(name.to_string()).or_insert_with(|| source.path.to_string());
            }
            // The scratch sizes follow from the structures' numbers, read from the text (plan33 step 13).
            kernels.scratch.extend(scratch_calls(source.path, &strip_comments(source.text())));
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

/// The first function of the module's C sources named `*_lookup_linked_param`,
/// with the storage ids of its `case`s in text order.
pub(crate) fn linked_params(code: &ModuleCode<'_, '_>) -> Option<LinkedParams> {
    code.c_sources().iter().find_map(|source| {
        let function = source.functions.iter().find(|function| function.name.ends_with("_lookup_linked_param"))?;
        let storage_ids = walk(&function.body(source).statements)
            .into_iter()
            .filter_map(|node| match node {
                Node::Stmt(Stmt { kind: StmtKind::Label { case: Some(Expr::Int(id)) }, .. }) => usize::try_from(*id).ok(),
                _ => None,
            })
            .collect();
        Some(LinkedParams { symbol: function.name.to_string(), storage_ids })
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
    let mut results = tail[..body_start].find("->").map(|arrow| parse_tensor_types(&tail[arrow + 2..body_start])).unwrap_or_default();
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

fn parse_tensor_type(text: &str) -> Option<RelayTensor> {
    let inner = text.trim().strip_prefix("Tensor[")?;
    let inner = &inner[..inner.rfind(']')?];
    let (shape, dtype) = inner.rsplit_once(',')?;
    let shape = shape.trim().strip_prefix('(')?.strip_suffix(')')?;
    let shape = shape.split(',').map(str::trim).filter(|dim| !dim.is_empty()).map(|dim| dim.parse().ok()).collect::<Option<Vec<u64>>>()?;
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

/// How far the code reaches into each of the first `tensors` parameters of the
/// model function (`tvmgen_<m>___tvm_main__`, else `tvmgen_<m>_run_model`):
/// read from the operators it passes them to (see `loops`). With the function's name.
pub(crate) fn entry_reach(sources: &Sources<'_>, codegen: &Codegen, module: &str, tensors: usize) -> Option<(String, Vec<Option<Reach>>)> {
    let code = CodeReader { sources, codegen, texts: std::cell::RefCell::new(BTreeMap::new()) };
    let entry = [format!("tvmgen_{module}___tvm_main__"), format!("tvmgen_{module}_run_model")]
        .into_iter()
        .find(|name| code.definition(name, |_, _| ()).is_some())?;
    let packed = code.definition(&entry, |_, body| body.contains("(((TVMValue*)args)[")).unwrap_or(false);
    let reaches = (0..tensors)
        .map(|position| if packed { code.packed_entry_reach(&entry, position) } else { code.reach(&entry, position) })
        .collect();
    Some((entry, reaches))
}

/// How far the code reaches into a pool `tvmgen_<m>_run` passes to the model
/// function (`___tvm_main__` or `_run_model`) as the argument `pool`, maybe
/// cast (`workspace_pools->sram`, USMP's `&global_workspace`): the model
/// function passes it, or pointers at constant offsets into it, to its
/// operators (see `loops`). The bytes reached, with the model function and the
/// file defining it; `None` when the code does not show it (the pool passed
/// some other way, or used in a way the reader does not follow).
pub(crate) fn pool_reach(sources: &Sources<'_>, codegen: &Codegen, module: &str, pool: &str) -> Option<(u64, String, String)> {
    let code = CodeReader { sources, codegen, texts: std::cell::RefCell::new(BTreeMap::new()) };
    let entry = [format!("tvmgen_{module}___tvm_main__"), format!("tvmgen_{module}_run_model")]
        .into_iter()
        .find(|name| code.definition(name, |_, _| ()).is_some())?;
    let position = code.definition(&format!("tvmgen_{module}_run"), |_, body| {
        let call = body.find(&format!("{entry}("))? + entry.len() + 1;
        let close = c::closing(&body[call..], '(', ')')?;
        let args = c::split_top_level(&body[call..call + close]);
        // The argument is the pool itself, maybe cast: `((uint8_t*)workspace_pools->sram)`.
        let bare =
            |arg: &str| arg.trim_start_matches(['(', ' ']).trim_end_matches([')', ' ']).rsplit(')').next().map(str::trim) == Some(pool);
        let mut matching = args.iter().enumerate().filter(|(_, arg)| arg.contains(pool));
        match (matching.next(), matching.next()) {
            (Some((position, arg)), None) if bare(arg) => Some(position),
            _ => None,
        }
    })??;
    let bytes = code.reach(&entry, position)?.bytes()?;
    let file = sources.defining(&codegen.c_sources, &entry)?.0.clone();
    Some((bytes, entry, file))
}

/// The module's sources as written (the skeleton drops the `cmsis_nn_dims`
/// initializers), each file read once and only when it defines a function asked for.
struct CodeReader<'s, 't> {
    sources: &'s Sources<'t>,
    codegen: &'s Codegen,
    texts: std::cell::RefCell<BTreeMap<String, std::rc::Rc<(String, FunctionIndex)>>>,
}

impl CodeReader<'_, '_> {
    fn definition<T>(&self, function: &str, read: impl FnOnce(&str, &str) -> T) -> Option<T> {
        let (path, ..) = self.sources.defining(&self.codegen.c_sources, function)?;
        let file = self
            .texts
            .borrow_mut()
            .entry(path.clone())
            .or_insert_with(|| {
                let text = strip_comments(&String::from_utf8_lossy(self.sources.tree.get(path).unwrap_or_default()));
                let index = FunctionIndex::of(&text);
                std::rc::Rc::new((text, index))
            })
            .clone();
        let (params, body) = file.1.get(&file.0, function)?;
        Some(read(params, body))
    }

    /// How far the operators a packed entry (TVM's packed-API `__tvm_main__`) calls
    /// reach into the data of its tensor argument `position`: each call's stack of
    /// `DLTensor`s is followed to the argument that points at it, and that
    /// operator's reach into the argument is taken. `None` when a call cannot be read.
    fn packed_entry_reach(&self, entry: &str, position: usize) -> Option<Reach> {
        let segments = self.definition(entry, |_, body| {
            let (_, data) = packed_tensor(body, position)?;
            let data = data?;
            let mut found: Vec<(String, usize)> = Vec::new();
            let mut arrays: Vec<usize> = Vec::new();
            let mut values: BTreeMap<usize, usize> = BTreeMap::new();
            for line in body.lines().map(str::trim) {
                let index_after = |prefix: &str| line.strip_prefix(prefix).and_then(|rest| rest.split(']').next()?.parse::<usize>().ok());
                if let Some(array) = index_after("(((DLTensor*)stack_array)[") {
                    if line.ends_with(&format!(".data) = {data};")) {
                        arrays.push(array);
                    } else if line.contains(".data) = ") {
                        arrays.retain(|&a| a != array);
                    }
                } else if let Some(value) = index_after("(((TVMValue*)stack_value)[") {
                    let array = line.rsplit("stack_array) + ").next()?.trim_end_matches(");").trim().parse().ok()?;
                    values.insert(value, array);
                } else if line.contains("( (TVMValue*) stack_value ,") {
                    let callee = line.trim_start_matches("if (").split('(').next()?.trim().to_string();
                    for (&value, array) in &values {
                        if arrays.contains(array) {
                            found.push((callee.clone(), value));
                        }
                    }
                    values.clear();
                }
            }
            // The buffer is stored into the stack only to be passed: it is passed somewhere.
            (!arrays.is_empty() || !found.is_empty()).then_some(found)
        })??;
        let mut reached: Option<Reach> = None;
        for (callee, value) in segments {
            let reach = self.definition(&callee, |_, body| self.packed_reach(body, value))??;
            match reached {
                Some(seen) if seen.dtype != reach.dtype => return None,
                Some(seen) if seen.elements >= reach.elements => {}
                _ => reached = Some(reach),
            }
        }
        reached
    }

    /// How far a packed function's `body` reaches into the data of its tensor argument `index`.
    fn packed_reach(&self, body: &str, index: usize) -> Option<Reach> {
        let (handle, data) = packed_tensor(body, index)?;
        let data = data?;
        // The data pointer read as a parameter: its declaration goes, so nothing shadows it.
        let body = body.replacen(&format!("void* {data} = (((DLTensor*){handle})[0].data);"), "", 1);
        crate::input::loops::reach(&format!("void* {data}"), &body, &data, &|callee, at| self.use_of(callee, at, 1))
    }

    fn reach(&self, function: &str, position: usize) -> Option<Reach> {
        match self.use_of(function, position, 0)? {
            Use::Reaches(reach) => Some(reach),
            Use::Untouched => None,
        }
    }

    fn use_of(&self, function: &str, position: usize, depth: usize) -> Option<Use> {
        if depth > MAX_CALL_DEPTH {
            return None;
        }
        self.definition(function, |params, body| {
            let name = param_names(params).get(position).cloned()?;
            crate::input::loops::use_of(params, body, &name, &|callee, at| self.use_of(callee, at, depth + 1))
        })?
    }
}

/// Element types of the model entry's tensor arguments as the code uses them,
/// for archives whose entry takes `void*` (2021 `tvmgen_<m>_run_model`): an
/// input's type from the first operator the entry passes it to, an output's
/// from the last, each read from that operator's typed parameter or from the
/// casts its body uses on it (`((int8_t*)T_cast)[i] = ...`).
pub(crate) fn entry_argument_types(sources: &Sources<'_>, codegen: &Codegen, module: &str, inputs: usize) -> Vec<Option<DType>> {
    let find = |name: &str| sources.defining(&codegen.c_sources, name).map(|(_, params, body)| (params, body));
    let entries = [format!("tvmgen_{module}___tvm_main__"), format!("tvmgen_{module}_run_model")];
    let Some((params, body)) = entries.iter().find_map(|name| find(name)) else { return Vec::new() };
    let calls = calls_in(body);
    param_names(params)
        .iter()
        .enumerate()
        .map(|(position, param)| {
            let names = aliases(body, param);
            let passes = |(_, args): &&(&str, Vec<&str>)| args.iter().any(|arg| names.contains(arg));
            let call = if position < inputs { calls.iter().find(passes) } else { calls.iter().rev().find(passes) };
            let (callee, args) = call?;
            let at = args.iter().position(|arg| names.contains(arg))?;
            let (callee_params, callee_body) = find(callee)?;
            let callee_param = param_names(callee_params).get(at).cloned()?;
            let declared = callee_params.split(',').nth(at).and_then(pointer_dtype);
            declared.or_else(|| aliases(callee_body, &callee_param).iter().find_map(|name| cast_type(callee_body, name)))
        })
        .collect()
}

/// Parameter names of a C parameter list: the last identifier of each.
pub(crate) fn param_names(params: &str) -> Vec<String> {
    params
        .split(',')
        .filter_map(|param| {
            let name = param.trim().rsplit(|c: char| !ident::is_identifier_char(c)).next()?;
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// `name` and the variables a body copies it into (`void* input = arg0;`).
fn aliases<'t>(body: &'t str, name: &'t str) -> Vec<&'t str> {
    let mut names = vec![name];
    for line in body.lines() {
        let Some((left, right)) = line.trim().strip_suffix(';').and_then(|l| l.split_once('=')) else { continue };
        if right.trim() == name {
            if let Some(alias) = left.trim().rsplit(|c: char| !ident::is_identifier_char(c)).next().filter(|a| !a.is_empty()) {
                names.push(alias);
            }
        }
    }
    names
}

/// `(function, arguments)` of each plain call statement `f(a, b);` in a body, in order.
fn calls_in(body: &str) -> Vec<(&str, Vec<&str>)> {
    body.lines()
        .filter_map(|line| {
            let statement = line.trim().trim_start_matches("(void)").trim_start();
            let statement = statement.split_once('=').filter(|(left, _)| !left.contains('(')).map_or(statement, |(_, right)| right.trim());
            let open = statement.find('(')?;
            let name = statement[..open].trim();
            if name.is_empty() || !name.chars().all(ident::is_identifier_char) {
                return None;
            }
            let close = closing(&statement[open + 1..], '(', ')')?;
            let args = split_top_level(&statement[open + 1..open + 1 + close]).into_iter().map(str::trim).collect();
            Some((name, args))
        })
        .collect()
}

/// The element type `body` casts `name` to: `((float*)name)`.
fn cast_type(body: &str, name: &str) -> Option<DType> {
    body.match_indices(&format!("*){name})")).find_map(|(at, _)| {
        let open = body[..at].rfind("((")?;
        pointer_dtype(&format!("{}*", &body[open + 2..at]))
    })
}

/// The sources of `tree`, parsed (its C text must pass its checks).
#[cfg(test)]
pub(crate) fn sources_of(tree: &Tree) -> Sources<'_> {
    let texts = c::CTexts::of(tree);
    let files = CFiles::parse(&texts).unwrap_or_else(|error| panic!("{error}"));
    Sources::new(tree, &files)
}

#[cfg(test)]
mod tests {
    #[test]
    fn skeleton_leaves_out_only_numeric_initializers() {
        let code = "static const float w[4] = {\n  0x1.8p-3f, -2.5e+1f, 7, 0x0p+0f\n};\n\
                    const int nested[2][2] = { {1, 2}, {3, 4} };\n\
                    tvm_model_t network = { .num_input_tensors = 1, .run = &run };\n\
                    const char* s = \"{1, 2}\";\n\
                    int f(int x) { int local[2] = {1, 2}; return x == 1 ? 0 : 1; }\n\
                    int open = { 1, 2";
        let out = String::from_utf8(skeleton(code.as_bytes())).unwrap();
        assert!(out.starts_with("static const float w[4] = {};\n"), "{out}");
        assert!(out.contains("const int nested[2][2] = {};"), "{out}");
        assert!(out.contains("tvm_model_t network = { .num_input_tensors = 1, .run = &run };"), "{out}");
        assert!(out.contains("\"{1, 2}\""), "{out}");
        assert!(out.contains("int local[2] = {}; return x == 1 ? 0 : 1; }"), "{out}");
        assert!(out.ends_with("int open = { 1, 2"), "{out}");
    }

    use super::*;
    use crate::input::c::parser::parse::parse;

    #[test]
    fn parses_interface_header_with_pools_and_byte_data() {
        let text = "#define TVMGEN_DEFAULT_INPUT_1_SIZE 240\n/*! doc */\nstruct tvmgen_default_inputs {\n  void* input_1;\n};\n\
            struct tvmgen_default_outputs {\n  void* output;\n};\nstruct tvmgen_default_workspace_pools {\n  void* flash;\n  void* sram;\n};\n\
            int32_t tvmgen_default_run(\n  struct tvmgen_default_inputs* inputs\n);\n\
            #define TVMGEN_DEFAULT_FLASH_CONSTANT_POOL_DATA \\\n    0xee, 0x19, \\\n    0x00\\\n\n#define TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE 17778\n";
        let header = InterfaceHeader::from("default", &parse("h", text).unwrap()).unwrap();
        assert_eq!(header.inputs, ["input_1"]);
        assert_eq!(header.outputs, ["output"]);
        assert_eq!(header.pools, ["flash", "sram"]);
        assert_eq!(header.macro_u64("TVMGEN_DEFAULT_INPUT_1_SIZE"), Some(240));
        assert_eq!(header.macro_u64("TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE"), Some(17778));
        let data = &header.macros["TVMGEN_DEFAULT_FLASH_CONSTANT_POOL_DATA"];
        assert_eq!(parse_byte_list(data), Some(vec![0xee, 0x19, 0x00]));
    }

    /// The glue sets each member to a buffer: a member that is no pointer
    /// (a scalar, an array, an array of pointers) is refused by name.
    #[test]
    fn header_struct_member_that_is_no_pointer_is_an_error() {
        let path = "codegen/host/include/tvmgen_default.h";
        for (member, name) in [("int a[4];", "a"), ("int b;", "b"), ("void* c[2];", "c"), ("void *d, e;", "e")] {
            let text = format!("struct tvmgen_default_inputs {{\n  void* ok;\n  {member}\n}};\nint32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs);\n");
            let err = InterfaceHeader::from("default", &parse(path, &text).unwrap()).unwrap_err();
            let message = err.to_string();
            assert!(message.contains(&format!("member `{name}` of `struct tvmgen_default_inputs` is not a pointer")), "{message}");
            assert_eq!(err.file(), Some(path));
        }
    }

    #[test]
    fn header_without_run_function_is_an_error() {
        let path = "codegen/host/include/tvmgen_default.h";
        // Named only inside a comment or a longer name is not named.
        let text = "struct x {};\n/* tvmgen_default_run */ int32_t tvmgen_default_run_model(void);\n";
        let err = InterfaceHeader::from("default", &parse(path, text).unwrap()).unwrap_err();
        assert!(err.to_string().contains("tvmgen_default_run"), "{err}");
        assert_eq!(err.file(), Some(path));
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
        let codegen = codegen_for(&tree, "default", &["default"]);
        let names: Vec<_> = codegen.c_sources.iter().map(|p| p.rsplit('/').next().unwrap()).collect();
        assert_eq!(names, ["lib0.c", "lib2.c", "lib10.c"]);
        assert_eq!(codegen.ignored.len(), 3);
    }

    #[test]
    fn files_go_to_the_module_of_exactly_their_name() {
        let modules = ["kws", "kws_mlp"];
        assert_eq!(owner("kws_lib0.c", &modules), Some("kws"));
        assert_eq!(owner("kws_mlp_lib0.c", &modules), Some("kws_mlp"));
        assert_eq!(owner("mlp_lib0.c", &modules), None);
    }

    #[test]
    fn finds_definitions_and_the_types_the_entry_passes() {
        let lib1 = "int32_t f_in(void* arg0, void* arg1) {\n  void* placeholder = arg0;\n  for (int i = 0; i < 4; ++i) {\n    ((float*)arg1)[i] = (float)((int8_t*)placeholder)[i];\n  }\n  return 0;\n}\n\
            int32_t f_out(float* p, void* arg1) {\n  void* T_cast = arg1;\n  ((int8_t*)T_cast)[0] = (int8_t)p[0];\n  return 0;\n}\n\
            TVM_DLL int32_t tvmgen_default_run_model(void* arg0, void* arg1) {\n  void* input = arg0;\n  void* output = arg1;\n  void* sid_1 = TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 0, 8);\n\
            \x20 (void)f_in(input, sid_1);\n  (void)f_out(sid_1, output);\n  return 0;\n}\n";
        let tree = Tree::from_files([("codegen/host/src/default_lib1.c".to_string(), lib1.as_bytes().to_vec())]).unwrap();
        let codegen = codegen_for(&tree, "default", &["default"]);
        let types: Vec<String> =
            entry_argument_types(&sources_of(&tree), &codegen, "default", 1).iter().map(|t| format!("{t:?}")).collect();
        assert_eq!(types, [format!("{:?}", DType::parse("int8").ok()), format!("{:?}", DType::parse("int8").ok())]);
        let texts = c::CTexts::of(&tree);
        let files = CFiles::parse(&texts).unwrap();
        let code = ModuleCode::new(&tree, &files, &codegen);
        assert!(code.defines("f_in") && code.defines("tvmgen_default_run_model"));
        assert!(!code.defines("for") && !code.defines("TVMBackendAllocWorkspace"));
        assert_eq!(code.parameter_count("tvmgen_default_run_model"), Some(2));
    }

    /// DSP intrinsics in either spelling (the first named, not a longer
    /// name), Arm-only and MVE headers, unshipped headers (a C++ library
    /// header has no extension; a commented-out include is none), and every
    /// include kept for the diagnosis of a failed compile.
    #[test]
    fn code_needs_from_names_and_includes() {
        let lib0 = "#include <stdint.h>\n#  include <arm_acle.h>\n/* #include <commented.h> */\nint __smlad_count = 0;\n\
                    int32_t f(int32_t a) { return __SXTB16(__ror(a, 8)) + __smlad(a, a, 0); }\n";
        let lib1 = "#include \"missing/x.h\"\n#include <arm_mve.h>\n#include <cstdint>\n#include \"shipped.h\"\n";
        let tree = Tree::from_files([
            ("codegen/host/src/default_lib0.c".to_string(), lib0.as_bytes().to_vec()),
            ("codegen/host/src/default_lib1.c".to_string(), lib1.as_bytes().to_vec()),
            ("codegen/host/include/shipped.h".to_string(), Vec::new()),
        ])
        .unwrap();
        let texts = c::CTexts::of(&tree);
        let files = CFiles::parse(&texts).unwrap();
        let code = ModuleCode::new(&tree, &files, &codegen_for(&tree, "default", &["default"]));
        let needs = code_needs(&tree, &code);
        let (lib0, lib1) = ("codegen/host/src/default_lib0.c".to_string(), "codegen/host/src/default_lib1.c".to_string());
        assert_eq!(needs.dsp, Some((lib0.clone(), "__SXTB16".to_string())));
        assert_eq!(needs.arm_only, Some((lib0.clone(), "arm_acle.h".to_string())));
        assert_eq!(needs.mve, Some((lib1.clone(), "arm_mve.h".to_string())));
        assert_eq!(needs.unshipped_headers, BTreeMap::from([("missing/x.h".to_string(), lib1.clone())]));
        let headers: Vec<&str> = needs.includes.iter().map(|(_, header)| header.as_str()).collect();
        assert_eq!(headers, ["stdint.h", "arm_acle.h", "missing/x.h", "arm_mve.h", "cstdint", "shipped.h"]);
        assert!(!needs.workspace_allocator && needs.cmsis_nn.is_none());
    }

    /// A packed operator's parameters from their declarations, written
    /// through their data at any depth or by a compound assignment; a body
    /// with a statement not read answers nothing.
    #[test]
    fn operator_args_read_declarations_and_stores_at_any_depth() {
        let lib1 = "int32_t op(void* args, int32_t* codes, int32_t n, void* r, int32_t* rc, void* h) {\n\
            \x20 void* a = (((TVMValue*)args)[0].v_handle);\n  void* b = (((TVMValue*)args)[1].v_handle);\n\
            \x20 void* c = (((TVMValue*)args)[2].v_handle);\n  void* b_1 = (((DLTensor*)b)[0].data);\n\
            \x20 for (int i = 0; i < 4; ++i) { if (i > 0) { ((float*)b_1)[i] += ((float*)a)[i]; } }\n\
            \x20 ((float*)c)[0] = ((float*)a)[0] == 1.0f;\n  return 0;\n}\n\
            int32_t hidden(void* args, int32_t* codes, int32_t n, void* r, int32_t* rc, void* h) {\n\
            \x20 void* a = (((TVMValue*)args)[0].v_handle);\n  goto out;\n  return 0;\n}\n";
        let tree = Tree::from_files([("codegen/host/src/default_lib1.c".to_string(), lib1.as_bytes().to_vec())]).unwrap();
        let texts = c::CTexts::of(&tree);
        let files = CFiles::parse(&texts).unwrap();
        let code = ModuleCode::new(&tree, &files, &codegen_for(&tree, "default", &["default"]));
        let (file, args) = operator_args(&code, "op").unwrap();
        assert_eq!(file, "codegen/host/src/default_lib1.c");
        let found: Vec<(&str, bool)> = args.iter().map(|arg| (arg.name.as_str(), arg.written)).collect();
        assert_eq!(found, [("a", false), ("b", true), ("c", true)]);
        assert_eq!(operator_args(&code, "hidden"), None);
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
        let linked = |tree: &Tree| {
            let texts = c::CTexts::of(tree);
            let files = CFiles::parse(&texts).unwrap();
            linked_params(&ModuleCode::new(tree, &files, &codegen_for(tree, "default", &["default"])))
        };
        assert_eq!(linked(&tree), Some(LinkedParams { symbol: "_lookup_linked_param".to_string(), storage_ids: vec![10, 3] }));
        let plain = Tree::from_files([("codegen/host/src/default_lib0.c".to_string(), lib0.as_bytes().to_vec())]).unwrap();
        assert_eq!(linked(&plain), None);
    }
}

#[cfg(test)]
mod graph_reach_tests {
    use super::*;
    use crate::input::graph;

    /// The code of every operator of the corpus's graphs shows how far it
    /// reaches into each tensor: exactly the graph's size for what it writes,
    /// at most that for what it reads (a broadcast reads one element).
    #[test]
    fn corpus_graph_operators_reach_what_their_graph_says() {
        for (archive, path) in graph::tests::GRAPH_CASES {
            let Some(dir) = crate::test_support::corpus_dir() else { return };
            let tree = Tree::load(&dir.join(archive).join("model.tar"), Default::default()).unwrap();
            let graph = graph::parse(tree.get(path).unwrap(), path).unwrap();
            let codegen = codegen_for(&tree, "default", &["default"]);
            let sources = sources_of(&tree);
            for (id, node) in graph.nodes.iter().enumerate() {
                let graph::NodeOp::TvmOp { func_name, num_outputs, .. } = &node.op else { continue };
                if func_name == "__nop" {
                    continue;
                }
                let first = graph.node_row_ptr[id];
                let entries: Vec<usize> = node.inputs.iter().map(|&r| graph.entry_id(r)).chain(first..first + num_outputs).collect();
                let (_, reaches) = packed_operator_reach(&sources, &codegen, func_name).expect(func_name);
                assert_eq!(reaches.len(), entries.len(), "{archive}: {func_name}");
                for (argument, (&entry, reach)) in entries.iter().zip(&reaches).enumerate() {
                    let attr = &graph.entries[entry];
                    let stated = attr.shape.iter().product::<i64>() as u64 * attr.dtype.size_bytes() as u64;
                    let bytes = reach.and_then(Reach::bytes).unwrap_or_else(|| panic!("{archive}: {func_name} argument {argument}"));
                    if argument < node.inputs.len() {
                        assert!(bytes <= stated, "{archive}: {func_name} reads {bytes} bytes of entry {entry} ({stated})");
                    } else {
                        assert_eq!(bytes, stated, "{archive}: {func_name} writes entry {entry}");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod pool_reach_tests {
    use super::*;

    /// Every pool of the corpus's AOT archives is read by the code: how far it
    /// reaches is the size the interface header (or USMP's static array) states.
    #[test]
    fn corpus_pools_are_reached_as_far_as_they_are_stated() {
        let Some(dir) = crate::test_support::corpus_dir() else { return };
        let tars: Vec<_> = glob::glob(&format!("{}/**/model.tar", dir.display())).unwrap().map(|p| p.unwrap()).collect();
        let mut checked = Vec::new();
        for tar in &tars {
            let tree = Tree::load(tar, Default::default()).unwrap();
            let Some(Ok(metadata)) = tree.get("metadata.json").map(crate::input::metadata::parse) else { continue };
            let modules: Vec<&str> = metadata.modules.iter().map(|m| m.name.as_str()).collect();
            for module in &modules {
                let codegen = codegen_for(&tree, module, &modules);
                let sources = sources_of(&tree);
                let path = InterfaceHeader::path_for(module);
                let texts = c::CTexts::of(&tree);
                let files = CFiles::parse(&texts).unwrap();
                let Some(header) = files.get(&path) else { continue };
                let header = InterfaceHeader::from(module, header).unwrap();
                for pool in &header.pools {
                    let prefix = format!("TVMGEN_{}_{}", module.to_uppercase(), pool.to_uppercase());
                    let stated =
                        ["WORKSPACE", "CONSTANT"].iter().find_map(|kind| header.macro_u64(&format!("{prefix}_{kind}_POOL_SIZE"))).unwrap();
                    let (bytes, ..) = pool_reach(&sources, &codegen, module, &format!("workspace_pools->{pool}"))
                        .unwrap_or_else(|| panic!("{}: pool `{pool}`", tar.display()));
                    assert_eq!(bytes, stated, "{}: pool `{pool}`", tar.display());
                    checked.push(format!("{}:{pool}", tar.display()));
                }
            }
        }
        assert!(checked.len() >= 4, "{checked:?}");
    }
}
