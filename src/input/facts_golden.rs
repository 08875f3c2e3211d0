//! The facts snapshot (issue 33): what the C scanners (`sources`, `loops`,
//! `c::text`, `kernel_library`, `plan::profile`'s operator calls and
//! `codegen::kernel_probe`'s evaluation) answer today, for every corpus case,
//! both shared CMSIS-NN checkouts and the hostile snippets of their unit
//! tests, printed under `tests/golden/facts/` and compared byte for byte. A
//! step that replaces a scanner proves it answers the same by leaving these
//! files unchanged. After an intended change, regenerate and review the diff:
//!
//! ```text
//! MLF_BUILD_BLESS=1 cargo test --release --locked --lib golden
//! ```
//!
//! Values print as `Debug`, hash containers sorted; bulky values (constant
//! pool bytes, the scratch probe's program) as their length and a digest.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::codegen::kernel_probe::{self, KernelPath};
use crate::input::archive::Tree;
use crate::input::c::text::is_static;
use crate::input::c::{self, called_functions, function_definitions};
use crate::input::code::ModuleCode;
use crate::input::graph;
use crate::input::kernel_library::{self, KernelLibrary, ScratchCall};
use crate::input::loops::{self, Reach, Use};
use crate::input::metadata::{self, ModuleMeta};
use crate::input::sources::{self, InterfaceHeader, Sources};

/// The first 16 hex digits of the SHA-256 of `bytes`, with their length.
fn digest(bytes: &[u8]) -> String {
    let mut hasher = crate::sha256::Sha256::new();
    hasher.update(bytes);
    let hash = hasher.finalize();
    let hex: String = hash.iter().take(8).map(|byte| format!("{byte:02x}")).collect();
    format!("<{} bytes, sha256 {hex}>", bytes.len())
}

/// `text` as written when short, else its digest.
fn short(text: &str) -> String {
    if text.len() <= 160 {
        format!("{text:?}")
    } else {
        digest(text.as_bytes())
    }
}

fn answer<T: std::fmt::Debug>(result: crate::error::Result<T>) -> String {
    match result {
        Ok(value) => format!("Ok({value:?})"),
        Err(error) => format!("Err({:?})", error.to_string()),
    }
}

/// `[240 int8, 12 float32 (upper bound), None]`.
fn reaches(found: &[Option<Reach>]) -> String {
    let each = found.iter().map(|reach| match reach {
        Some(Reach { elements, dtype, exact }) => format!("{elements} {dtype}{}", if *exact { "" } else { " (upper bound)" }),
        None => "None".to_string(),
    });
    format!("[{}]", each.collect::<Vec<_>>().join(", "))
}

/// Text written line by line.
#[derive(Default)]
struct Facts(String);

impl Facts {
    fn line(&mut self, text: impl std::fmt::Display) {
        let _ = writeln!(self.0, "{text}");
    }
}

/// The modules the archive names: metadata.json's, else the headers', else `default`.
fn module_metas(tree: &Tree) -> Vec<ModuleMeta> {
    let parsed = tree.get("metadata.json").and_then(|bytes| metadata::parse(bytes).ok());
    let texts = c::CTexts::of(tree);
    let inferred = || headerless_metadata(tree, &c::CFiles::parse(&texts).ok()?);
    parsed.or_else(inferred).map(|metadata| metadata.modules).unwrap_or_default()
}

/// The metadata of a tree without metadata.json, as planning infers it: the
/// headers' modules, then the workspace their code takes.
fn headerless_metadata(tree: &Tree, files: &c::CFiles<'_>) -> Option<metadata::Metadata> {
    let mut inferred = sources::metadata_from_headers(tree).ok()??;
    sources::workspace_from_code(&mut inferred, tree, files);
    Some(inferred)
}

/// Every question `plan/`, `builder/` and `codegen/` ask of a tree's C, per file and per module.
/// `cmsis_nn`: the folder of the CMSIS-NN checkouts the scratch probe asks.
fn tree_facts(out: &mut Facts, tree: &Tree, metas: &[ModuleMeta], cmsis_nn: Option<&Path>) {
    let texts = c::CTexts::of(tree);
    let files = c::CFiles::parse(&texts);
    let checked = match &files {
        Ok(_) => "Ok(())".to_string(),
        Err(error) => format!("Err({:?})", error.to_string()),
    };
    out.line(format!("check_c_text: {checked}"));
    // What follows reads the C as the build does: only once it passes its checks.
    let Ok(files) = files else { return };
    match headerless_metadata(tree, &files) {
        Some(inferred) => {
            out.line("metadata_from_headers:");
            for module in &inferred.modules {
                out.line(format!("  {module:?}"));
            }
        }
        None => out.line("metadata_from_headers: None"),
    }
    let sources = Sources::new(tree, &files);
    let paths: Vec<&str> = tree.files_under(sources::SRC_DIR).collect();
    out.line("");
    out.line("## sources (as Sources reads them: comments, literals and numeric initializers left out)");
    for path in &paths {
        if !is_source(path) {
            continue;
        }
        let text = sources.text(path);
        out.line(format!("{path}:"));
        let included: Vec<&str> =
            files.get(path).map(|source| source.includes.iter().map(|include| include.header).collect()).unwrap_or_default();
        out.line(format!("  included_headers: {included:?}"));
        let mut seen = BTreeSet::new();
        for (name, body) in function_definitions(text) {
            let first = seen.insert(name);
            let (params, _) = sources.definition(path, name).unwrap_or_default();
            out.line(format!(
                "  fn {name}{}: static {}, param_names {:?}, packed_arg_count {}",
                if first { "" } else { " (again: the first definition counts)" },
                is_static(text, name),
                sources::param_names(params),
                sources::packed_arg_count(body),
            ));
            out.line(format!("    called: {:?}", called_functions(body).collect::<Vec<_>>()));
        }
    }
    let names: Vec<&str> = metas.iter().map(|meta| meta.name.as_str()).collect();
    let modules: Vec<&str> = if names.is_empty() { vec!["default"] } else { names.clone() };
    for module in &modules {
        out.line("");
        out.line(format!("## module {module}"));
        let meta = metas.iter().find(|meta| meta.name == *module);
        module_facts(out, tree, (&sources, &files), (module, &modules, meta), cmsis_nn);
    }
}

fn is_source(path: &str) -> bool {
    path.rsplit_once('.').is_some_and(|(_, ext)| matches!(ext, "c" | "cc" | "cpp" | "cxx"))
}

/// `which`: the module, every module of the archive, and its metadata.
fn module_facts(
    out: &mut Facts,
    tree: &Tree,
    parsed: (&Sources<'_>, &c::CFiles<'_>),
    which: (&str, &[&str], Option<&ModuleMeta>),
    cmsis_nn: Option<&Path>,
) {
    let (module, modules, meta) = which;
    let (sources, files) = parsed;
    let codegen = sources::codegen_for(tree, module, modules);
    let code = ModuleCode::new(tree, files, &codegen);
    out.line(format!("codegen_for: {codegen:?}"));
    out.line(format!("check_own_symbols: {}", answer(crate::plan::checks::check_own_symbols(&code, modules))));
    let header_path = InterfaceHeader::path_for(module);
    let header = files.get(&header_path).map(|header| InterfaceHeader::from(module, header));
    match &header {
        None => out.line("InterfaceHeader::parse: no header"),
        Some(Err(error)) => out.line(format!("InterfaceHeader::parse: Err({:?})", error.to_string())),
        Some(Ok(header)) => header_facts(out, header),
    }
    out.line(format!("headerless_entry: {:?}", sources::headerless_entry(&code, module)));
    out.line(format!("main_parameter_types: {:?}", code.main_parameter_types(module)));
    let first = sources::entry_argument_types(sources, &codegen, module, 0);
    for inputs in 0..=first.len() {
        out.line(format!("entry_argument_types(inputs {inputs}): {:?}", sources::entry_argument_types(sources, &codegen, module, inputs)));
    }
    out.line(format!("linked_params: {:?}", sources::linked_params(&code)));
    out.line(format!("allocates_workspace: {}", code.allocates_workspace()));
    out.line(format!("static_workspace: {:?}", code.static_workspace()));

    // The module's functions, in file then text order, and the names its code calls.
    let mut functions: Vec<&str> = Vec::new();
    let mut called: BTreeSet<&str> = BTreeSet::new();
    for path in codegen.c_sources.iter().chain(&codegen.cxx_sources) {
        let text = sources.text(path);
        for (name, body) in function_definitions(text) {
            if !functions.contains(&name) {
                functions.push(name);
            }
            called.extend(called_functions(body));
        }
    }
    let entries = [format!("tvmgen_{module}_run"), format!("tvmgen_{module}_run_model"), format!("tvmgen_{module}___tvm_main__")];
    let graph_functions: Vec<String> = meta
        .and_then(|meta| meta.graph_json_path.as_deref())
        .and_then(|path| graph::parse(tree.get(path)?, path).ok())
        .map(|graph| {
            graph
                .nodes
                .into_iter()
                .filter_map(|node| match node.op {
                    graph::NodeOp::TvmOp { func_name, .. } => Some(func_name),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut asked: BTreeSet<&str> = functions.iter().copied().chain(called.iter().copied()).collect();
    asked.extend(entries.iter().map(String::as_str));
    asked.extend(graph_functions.iter().map(String::as_str));
    let (defined, undefined): (Vec<&str>, Vec<&str>) = asked.into_iter().partition(|name| code.defines(name));
    let defined: Vec<&str> = defined.into_iter().filter(|name| !functions.contains(name)).collect();
    out.line(format!("Definitions::defines true (besides the functions above): {defined:?}"));
    out.line(format!("Definitions::defines false: {undefined:?}"));
    for entry in &entries {
        out.line(format!("parameter_count({entry}): {:?}", code.parameter_count(entry)));
    }
    for function in &functions {
        let workspace = |alignment| code.workspace_bytes(function, alignment);
        out.line(format!("fn {function}: workspace_bytes (align 16) {:?}, (align 1) {:?}", workspace(16), workspace(1)));
        // Both name the file defining the function: printed only where it is another.
        let file = sources.defining(&codegen.c_sources, function).map(|(path, ..)| path.clone());
        let in_file = |found: Option<(String, String)>| match found {
            Some((path, value)) if Some(&path) == file.as_ref() => value,
            other => format!("{other:?}"),
        };
        let args = sources::operator_args(&code, function).map(|(path, args)| {
            let args: Vec<String> = args.iter().map(|arg| format!("{}{}", arg.name, if arg.written { " (written)" } else { "" })).collect();
            (path, format!("{args:?}"))
        });
        let reach = sources::packed_operator_reach(sources, &codegen, function).map(|(path, found)| (path, reaches(&found)));
        out.line(format!("  operator_args {}, packed_operator_reach {}", in_file(args), in_file(reach)));
    }
    // Every position of the model function: its parameters, or the packed arguments it reads.
    let tensors = entries[1..]
        .iter()
        .filter_map(|entry| sources.defining(&codegen.c_sources, entry))
        .map(|(_, params, body)| sources::param_names(params).len().max(sources::packed_arg_count(body)))
        .next()
        .unwrap_or(0);
    let entry = sources::entry_reach(sources, &codegen, module, tensors).map(|(entry, found)| format!("{entry}: {}", reaches(&found)));
    out.line(format!("entry_reach(tensors {tensors}): {}", entry.as_deref().unwrap_or("None")));
    if let Some(Ok(header)) = &header {
        for pool in &header.pools {
            let pool = format!("workspace_pools->{pool}");
            out.line(format!("pool_reach({pool}): {:?}", sources::pool_reach(sources, &codegen, module, &pool)));
        }
    }
    needs_facts(out, &sources::code_needs(tree, &code), cmsis_nn);
    if let Some(path) = meta.and_then(|meta| meta.relay_path.as_deref()) {
        let signature = tree.get(path).map(|text| sources::relay_signature(&String::from_utf8_lossy(text)));
        out.line(format!("relay_signature({path}): {signature:?}"));
    }
}

fn header_facts(out: &mut Facts, header: &InterfaceHeader) {
    let InterfaceHeader { path, inputs, outputs, pools, devices, macros, maps_inputs, direct_entry } = header;
    out.line(format!(
        "InterfaceHeader::parse: path {path:?}, inputs {inputs:?}, outputs {outputs:?}, pools {pools:?}, devices {devices:?}"
    ));
    out.line(format!("  maps_inputs {maps_inputs}, direct_entry {direct_entry:?}"));
    for (name, value) in macros {
        let bytes = sources::parse_byte_list(value).map(|bytes| digest(&bytes));
        out.line(format!("  #define {name} {}: macro_u64 {:?}, parse_byte_list {bytes:?}", short(value), header.macro_u64(name)));
    }
}

fn needs_facts(out: &mut Facts, needs: &sources::CodeNeeds, checkouts: Option<&Path>) {
    // `includes` are the files' includes, printed with each file above.
    let sources::CodeNeeds { workspace_allocator, arm_only, dsp, mve, cmsis_nn, unshipped_headers, includes: _ } = needs;
    out.line(format!("code_needs: workspace_allocator {workspace_allocator}, arm_only {arm_only:?}, dsp {dsp:?}, mve {mve:?}"));
    out.line(format!("  unshipped_headers: {unshipped_headers:?}"));
    let Some(kernels) = cmsis_nn else {
        out.line("  cmsis_nn: None");
        return;
    };
    out.line(format!("  cmsis_nn: file {:?}, header {:?}", kernels.file, kernels.header));
    out.line(format!("  undefined: {:?}", kernels.undefined));
    scratch_facts(out, &kernels.scratch, checkouts);
}

/// The scratch calls, each function's locals once with their values, and
/// what the probe asks of both shared CMSIS-NN checkouts on each code path.
fn scratch_facts(out: &mut Facts, calls: &[ScratchCall], cmsis_nn: Option<&Path>) {
    let mut locals_printed = BTreeSet::new();
    for call in calls {
        let ScratchCall { file, function, kernel, reserved, buffered, args, locals } = call;
        out.line(format!("  scratch call {file} {function} -> {kernel}: reserved {reserved}, buffered {buffered}, args {args:?}"));
        if locals_printed.insert((file.clone(), function.clone())) {
            for (local, value) in locals.iter().zip(kernel_probe::evaluate_locals(locals)) {
                out.line(format!("    local {} {} = {{{}}}: {}", local.type_name, local.name, local.init, evaluated(&value)));
            }
        }
    }
    if calls.is_empty() {
        return;
    }
    let Some(dir) = cmsis_nn else { return };
    let refs: Vec<&ScratchCall> = calls.iter().collect();
    for version in CMSIS_NN_VERSIONS {
        let Ok(library) = KernelLibrary::read_cmsis_nn(&dir.join(version)) else { continue };
        let called: BTreeSet<String> = calls.iter().map(|call| call.kernel.clone()).collect();
        out.line(format!("  CMSIS-NN {version} select(kernels called with scratch): {:?}", library.select(&called)));
        for path in [KernelPath::Portable, KernelPath::Dsp, KernelPath::Mve] {
            let probe = kernel_probe::scratch_probe(&refs, &library.declarations, path);
            out.line(format!(
                "  CMSIS-NN {version} {path:?} probe: program {:?}",
                probe.source.as_deref().map(|source| digest(source.as_bytes()))
            ));
            out.line(format!("    asked {:?}", probe.asked));
            out.line(format!("    unasked {:?}", probe.unasked));
            out.line(format!("    unreadable {:?}", probe.unreadable));
        }
    }
}

/// A local's value as `Ok({1, {2, 3}})`, or why it has none.
fn evaluated(value: &Result<kernel_probe::Value, String>) -> String {
    // Iterative: one frame per open list.
    fn render(value: &kernel_probe::Value) -> String {
        let mut text = String::new();
        let mut stack = vec![std::slice::from_ref(value).iter()];
        let mut first = true;
        while let Some(items) = stack.last_mut() {
            match items.next() {
                Some(item) => {
                    if !first {
                        text.push_str(", ");
                    }
                    first = false;
                    match item {
                        kernel_probe::Value::Number(number) => text.push_str(&number.to_string()),
                        kernel_probe::Value::List(list) => {
                            text.push('{');
                            first = true;
                            stack.push(list.iter());
                        }
                    }
                }
                None => {
                    stack.pop();
                    if !stack.is_empty() {
                        text.push('}');
                    }
                    first = false;
                }
            }
        }
        text
    }
    match value {
        Ok(value) => format!("Ok({})", render(value)),
        Err(why) => format!("Err({why:?})"),
    }
}

const CMSIS_NN_VERSIONS: [&str; 2] = ["v4.1.0", "v7.0.0"];

/// A corpus case's facts, the archive planned last (for the profile's operator calls).
fn case_facts(archive: &Path, case: &str, cmsis_nn: &Path) -> String {
    let mut out = Facts::default();
    out.line(format!("# facts of corpus case {case}"));
    let tree = match Tree::load(archive, Default::default()) {
        Ok(tree) => tree,
        Err(error) => {
            out.line(format!("Tree::load: Err({:?})", error.to_string()));
            return out.0;
        }
    };
    let metas = module_metas(&tree);
    tree_facts(&mut out, &tree, &metas, Some(cmsis_nn));
    out.line("");
    out.line("## plan and profile::operator_calls");
    match crate::plan::plan_tree(tree, &Default::default()) {
        Err(error) => out.line(format!("plan: Err({:?})", error.to_string())),
        Ok(planned) => {
            let texts = c::CTexts::of(&planned.tree);
            let Ok(files) = c::CFiles::parse(&texts) else { return out.0 };
            for module in &planned.plan.modules {
                let code = ModuleCode::new(&planned.tree, &files, &module.codegen);
                let calls = crate::plan::profile::operator_calls(&code, module).map(|profile| {
                    let names = |list: &[crate::ident::CIdent]| list.iter().map(|name| name.to_string()).collect::<Vec<_>>();
                    format!("calls {:?}, source {:?}, untimed {:?}", names(&profile.calls), profile.source, names(&profile.untimed))
                });
                let calls = calls.unwrap_or_else(|error| format!("Err({:?})", error.to_string()));
                out.line(format!("operator_calls({}): {calls}", module.name));
            }
        }
    }
    out.0
}

/// A CMSIS-NN library's facts: revision, declarations, guards, definitions and calls.
fn library_facts(out: &mut Facts, library: &KernelLibrary) {
    out.line(format!("version: {:?}", library.version));
    out.line("## declarations (name: parameters)");
    for (name, params) in &library.declarations {
        out.line(format!("{name}: {params}"));
    }
    out.line("## guards (functions and function-like macros: the extension every definition needs)");
    for (name, guard) in &library.guards {
        out.line(format!("{name}: {guard:?}"));
    }
    out.line("## header functions and function-like macros: what they call");
    for (name, calls) in &library.header_calls {
        out.line(format!("{name}: {calls:?}"));
    }
    out.line("## sources: what each calls, and the functions defined in it");
    let mut defines: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for (name, files) in &library.defined_in {
        for &index in files {
            defines.entry(index).or_default().push(name);
        }
    }
    for (index, source) in library.sources.iter().enumerate() {
        out.line(format!("{}: defines {:?}", source.path, defines.get(&index).cloned().unwrap_or_default()));
        out.line(format!("  calls {:?}", source.calls));
    }
    let several: Vec<(&String, Vec<&str>)> = library
        .defined_in
        .iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(name, files)| (name, files.iter().map(|&index| library.sources[index].path.as_str()).collect()))
        .collect();
    out.line(format!("## defined in several sources: {several:?}"));
}

fn cmsis_nn_facts(root: &Path, version: &str) -> String {
    let mut out = Facts::default();
    out.line(format!("# facts of CMSIS-NN {version} (../shared/third-party/CMSIS-NN/{version})"));
    match KernelLibrary::read_cmsis_nn(root) {
        Err(error) => out.line(format!("read_cmsis_nn: Err({:?})", error.to_string())),
        Ok(library) => {
            library_facts(&mut out, &library);
            // What the corpus's CMSIS-NN archive and TVM's native Arm schedules call.
            for called in [&["arm_convolve_wrapper_s8", "arm_avgpool_s8", "arm_softmax_s8"][..], &["read_and_pad", "SMLAD", "SXTB16"]] {
                let called: BTreeSet<String> = called.iter().map(|name| name.to_string()).collect();
                out.line(format!("select({called:?}): {:?}", library.select(&called)));
            }
        }
    }
    out.0
}

fn tree_of(files: &[(&str, &str)]) -> Tree {
    Tree::from_files(files.iter().map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()))).expect("a tree")
}

fn lib(name: &str) -> String {
    format!("codegen/host/src/{name}")
}

/// The hostile and telling C of the scanners' unit tests, asked every question.
fn snippet_facts() -> String {
    let mut out = Facts::default();
    out.line("# facts of the scanners' unit-test snippets");
    let workspace = "int32_t op_compute_(float* x) {\n\
          void* a = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)100, 2, 32);\n\
          void* b = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)16, 2, 32);\n\
          return 0;\n}\n\
        int32_t op(void* args, int32_t* codes, int32_t n, void* r, int32_t* rc, void* h) {\n\
          /* TVMBackendAllocWorkspace(1, 0, (uint64_t)1000000, 2, 32) */\n\
          void* c = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)8, 2, 32);\n\
          return op_compute_((float*)args);\n}\n\
        int32_t dynamic(void* args) { void* w = TVMBackendAllocWorkspace(1, 0, (uint64_t)n * 4, 2, 32); return 0; }\n\
        int32_t loop_a(void* x) { return loop_b(x); }\n\
        int32_t loop_b(void* x) { void* w = TVMBackendAllocWorkspace(1, 0, (uint64_t)4, 2, 32); return loop_a(x); }\n";
    // The deep-call test's shapes, shortened: still past MAX_CALL_DEPTH.
    let alloc = "void* w = TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 2, 32);";
    let chain: String = (0..12).map(|i| format!("int32_t c{i}(void) {{ {alloc} return c{}(); }}\n", i + 1)).collect();
    let doubling: String = (0..12).map(|i| format!("int32_t d{i}(void) {{ {alloc} d{n}(); return d{n}(); }}\n", n = i + 1)).collect();
    let deep = format!("{chain}{doubling}int32_t c12(void) {{ return 0; }}\nint32_t d12(void) {{ return 0; }}\n");
    let skeleton = "static const float w[4] = {\n  0x1.8p-3f, -2.5e+1f, 7, 0x0p+0f\n};\n\
        const int nested[2][2] = { {1, 2}, {3, 4} };\n\
        tvm_model_t network = { .num_input_tensors = 1, .run = &run };\n\
        const char* s = \"{1, 2}\";\n\
        int f(int x) { int local[2] = {1, 2}; return x == 1 ? 0 : 1; }\n\
        int open = { 1, 2";
    let header = "#define TVMGEN_DEFAULT_INPUT_1_SIZE 240\n/*! doc */\nstruct tvmgen_default_inputs {\n  void* input_1;\n};\n\
        struct tvmgen_default_outputs {\n  void* output;\n};\nstruct tvmgen_default_workspace_pools {\n  void* flash;\n  void* sram;\n};\n\
        int32_t tvmgen_default_run(\n  struct tvmgen_default_inputs* inputs\n);\n\
        #define TVMGEN_DEFAULT_FLASH_CONSTANT_POOL_DATA \\\n    0xee, 0x19, \\\n    0x00\\\n\n#define TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE 17778\n";
    let typed = "int32_t f_in(void* arg0, void* arg1) {\n  void* placeholder = arg0;\n  for (int i = 0; i < 4; ++i) {\n    ((float*)arg1)[i] = (float)((int8_t*)placeholder)[i];\n  }\n  return 0;\n}\n\
        int32_t f_out(float* p, void* arg1) {\n  void* T_cast = arg1;\n  ((int8_t*)T_cast)[0] = (int8_t)p[0];\n  return 0;\n}\n\
        TVM_DLL int32_t tvmgen_default_run_model(void* arg0, void* arg1) {\n  void* input = arg0;\n  void* output = arg1;\n  void* sid_1 = TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 0, 8);\n\
        \x20 (void)f_in(input, sid_1);\n  (void)f_out(sid_1, output);\n  return 0;\n}\n";
    let linked0 =
        "TVM_DLL int32_t _lookup_linked_param(TVMValue* args, int* type_code, int num_args, TVMValue* out_value, int* out_type_code);\n";
    let linked1 = "static const int16_t __tvm_param__p7[2] = {1, 2};\n\
        TVM_DLL int32_t _lookup_linked_param(void* args, int* arg_type_ids, int num_args, void* out_ret_value, int* out_ret_tcode, void* resource_handle) {\n\
        \x20   switch (((int64_t*) args)[0]) {\n    default:\n        out_ret_tcode[0] = 4;\n        return 0;\n\
        \x20   case 10:\n        ((uint64_t*)out_ret_value)[0] = (uint64_t) (uintptr_t) __tvm_param__p7;\n\
        \x20   case 3:\n        return 0;\n    }\n}\nint after(void) {\n  case 99:\n}\n";
    let needs = "#include <stdint.h>\n#  include <arm_acle.h>\n#include \"arm_mve.h\"\n#include \"missing/x.h\"\n#include <cstdint>\n/*\n#include <commented.h>\n*/\n\
        int32_t g(int32_t a, int32_t b, int32_t acc) { int __smlad_count = 0; acc = __ror(a, 8); return __SXTB16(__smlad(a, b, acc)); }\n";
    let trees: [(&str, Vec<(String, &str)>); 8] = [
        ("workspace_bytes_follow_the_code", vec![(lib("default_lib1.c"), workspace)]),
        ("workspace_bytes_of_deep_and_doubling_calls (shortened)", vec![(lib("default_lib1.c"), deep.as_str())]),
        ("skeleton_leaves_out_only_numeric_initializers", vec![(lib("default_lib0.c"), skeleton)]),
        (
            "parses_interface_header_with_pools_and_byte_data",
            vec![("codegen/host/include/tvmgen_default.h".to_string(), header), (lib("default_lib0.c"), "")],
        ),
        (
            "header_without_run_function_is_an_error",
            vec![("codegen/host/include/tvmgen_default.h".to_string(), "struct tvmgen_default_inputs {};")],
        ),
        ("finds_definitions_and_the_types_the_entry_passes", vec![(lib("default_lib1.c"), typed)]),
        ("finds_linked_param_storage_ids", vec![(lib("default_lib0.c"), linked0), (lib("default_lib1.c"), linked1)]),
        ("headers, DSP intrinsics and Helium", vec![(lib("default_lib0.c"), needs)]),
    ];
    for (name, files) in &trees {
        out.line("");
        out.line(format!("# snippet tree: {name}"));
        let files: Vec<(&str, &str)> = files.iter().map(|(path, text)| (path.as_str(), *text)).collect();
        let tree = tree_of(&files);
        tree_facts(&mut out, &tree, &module_metas(&tree), None);
    }
    out.line("");
    out.line("# relay_signature");
    for text in [
        "def @main(%input_1: Tensor[(1, 49, 10, 1), int8] /* span=input_1:0:0 */, %w: Tensor[(10), int32]) -> (Tensor[(1, 12), int8], Tensor[(3), float32]) {\n  %0\n}\n",
        "def @main(%x: Tensor[(1, 4), float32]) {\n  %0 = f(%x);\n  g(%0) /* ty=Tensor[(1, 6), int8] */\n}\n",
        "def @main(%x: Tensor[(1, 4), float32]) {\n  nn.dense(%x, %w, units=None, out_dtype=\"int8\")\n}\n",
    ] {
        out.line(format!("{:?}", sources::relay_signature(text)));
    }
    loops_facts(&mut out);
    kernel_snippet_facts(&mut out);
    out.0
}

fn none(_: &str, _: usize) -> Option<Use> {
    None
}

/// `loops::use_of` of every parameter of the `loops` unit tests' bodies.
fn loops_facts(out: &mut Facts) {
    out.line("");
    out.line("# loops::use_of (callee unknown unless said)");
    let split = |guard: &str| {
        format!(
            "for (int32_t ax0 = 0; ax0 < 49; ++ax0) {{\n  for (int32_t ax3_outer = 0; ax3_outer < 3; ++ax3_outer) {{\n\
             for (int32_t ax3_inner = 0; ax3_inner < 4; ++ax3_inner) {{\n  if ({guard}) {{\n\
             int32_t cse_var_1 = (((ax0 * 10) + (ax3_outer * 4)) + ax3_inner);\n  x[cse_var_1] = (int8_t)1;\n  }}\n  }}\n  }}\n}}\n"
        )
    };
    let nest = |guard: &str| {
        format!(
            "for (int32_t o1 = 0; o1 < 2; ++o1) {{\n for (int32_t o2 = 0; o2 < 2; ++o2) {{\n for (int32_t i = 0; i < 4; ++i) {{\n\
             if ({guard}) {{\n x[(((o1 * 8) + (o2 * 4)) + i)] = (int8_t)0;\n }}\n }}\n }}\n}}\n"
        )
    };
    let chained = |step: &str, extent: u32, guarded: bool| {
        let mut body = format!("for (int32_t i = 0; i < {extent}; ++i) {{\n  int32_t t0 = i;\n");
        for level in 1..=60 {
            body += &format!("  int32_t t{level} = {};\n", step.replace('p', &format!("t{}", level - 1)));
        }
        body += if guarded { "  if (t60 < 3) {\n    x[t60] = (int8_t)0;\n  }\n}\n" } else { "  x[t60] = (int8_t)0;\n}\n" };
        body
    };
    let mut many_guards = String::from("for (int32_t i = 0; i < 64; ++i) {\n for (int32_t j = 0; j < 64; ++j) {\n");
    for level in 0..20 {
        let guard = |a: i64, b: i64| format!("((((i * {a}) + (j * {b})) + {level}) < 1000)");
        many_guards += &format!("if ({} && {} && {} && {}) {{\n", guard(2, 1), guard(1, 2), guard(3, 1), guard(1, 3));
    }
    many_guards += &format!("x[((i * 64) + j)] = (int8_t)0;\n{}", "}\n".repeat(22));
    let cases: Vec<(&str, String)> = vec![
        ("int8_t* p0, int16_t* T_subtract, uint8_t* global_const_workspace_2_var", "for (int32_t ax0_ax1_fused = 0; ax0_ax1_fused < 24; ++ax0_ax1_fused) {\n\
          for (int32_t ax2 = 0; ax2 < 10; ++ax2) {\n  int32_t cse_var_1 = ((ax0_ax1_fused * 10) + ax2);\n\
          T_subtract[cse_var_1] = (((int16_t)p0[cse_var_1]) - (int16_t)-3);\n  }\n}\n  return 0;\n".to_string()),
        ("float* p0, int8_t* in8, int8_t* out, uint8_t* ws", "void* pad_temp_let = (&(ws[8192]));\n\
            for (int32_t i0 = 0; i0 < 18; ++i0) {\n  for (int32_t i2 = 0; i2 < 18; ++i2) {\n    for (int32_t i3 = 0; i3 < 3; ++i3) {\n\
              int32_t cse_var_1 = (i2 * 3);\n      float condval;\n\
              if (((((1 <= i0) && (i0 < 17)) && (1 <= i2)) && (i2 < 17))) {\n        condval = p0[((((i0 * 48) + cse_var_1) + i3) - 51)];\n\
              } else {\n        condval = 0.000000e+00f;\n      }\n\
              ((float*)pad_temp_let)[(((i0 * 54) + cse_var_1) + i3)] = condval;\n    }\n  }\n}\n\
            for (int32_t i = 0; i < 490; ++i) {\n  out[i] = (((10 <= i) && (i < 480)) ? in8[(i - 10)] : (int8_t)0);\n}\n".to_string()),
        ("void* arg0, void* arg1", "void* placeholder = arg0;\n\
            for (int32_t f = 0; f < 256; ++f) {\n  for (int32_t rc = 0; rc < 3; ++rc) {\n\
              ((float*)arg1)[((((f >> 4) * 54) + ((f & 15) * 3)) + rc)] = (float)((int8_t*)placeholder)[((f / 4) * 3) + (f % 4)];\n  }\n}\n".to_string()),
        ("int8_t* input_, int8_t* output_", "cmsis_nn_context context= {ctx,128};\n  cmsis_nn_dims input_dims = {1,96,96,3};\n  cmsis_nn_dims output_dims = {1,48,48,8};\n\
            arm_cmsis_nn_status status = arm_convolve_wrapper_s8(&context, &conv_params, &quant_params, &input_dims, input_, &output_dims, output_);\n\
            switch (!status) {\n  case ARM_CMSIS_NN_SUCCESS: break;\n  case ARM_CMSIS_NN_ARG_ERROR: return -1;\n  }\n  return 0;\n".to_string()),
        ("int8_t* input_, int8_t* output_", "arm_softmax_s8(input_, 1, 2, 2011586560, 20, -1984, output_);\n  return 0;\n".to_string()),
        ("int8_t* input_, int8_t* output_", "arm_other_s8(input_, 4);\n".to_string()),
        ("uint8_t* pool", "void* fused_constant_let = (&(pool[9728]));\n  void* pad_temp_let = (&(pool[8192]));\n\
            for (int32_t i = 0; i < 972; ++i) {\n  ((float*)pad_temp_let)[i] = 0.0f;\n}\n\
            for (int32_t j = 0; j < 8; ++j) {\n  void* acc_let = (&(pool[12080]));\n  ((int32_t*)acc_let)[0] = ((int16_t*)fused_constant_let)[j];\n}\n".to_string()),
        ("uint8_t* pool", "((float*)(pool + 6))[1] = 0.0f;\n".to_string()),
        ("float* x", "float* y = x + 4;\n y[0] = 1.0f;\n".to_string()),
        ("uint8_t* pool", "((int8_t*)((void*)(((uint8_t*)pool) + 100)))[3] = 1;\n".to_string()),
        ("float* x", "((int8_t*)x)[0] = 1;\n x[1] = 0.0f;\n".to_string()),
        ("int8_t* x, int32_t n", split("((ax3_outer * 4) + ax3_inner) < 10")),
        ("int8_t* x, int32_t n", split("(ax3_inner + (ax3_outer * 4)) <= 9")),
        ("int8_t* x, int32_t n", split("10 > ((ax3_outer * 4) + ax3_inner)")),
        ("int8_t* x, int32_t n", split("((ax3_outer * 2) + (ax3_inner >> 1)) < 5")),
        ("int8_t* x, int32_t n", split("((ax3_outer * 2) + (ax3_inner / 2)) < 5")),
        ("int8_t* x, int32_t n", split("(((ax3_outer * 4) + ax3_inner) >> 1) < 5")),
        ("int8_t* x, int32_t n", split("(ax3_outer < 2) || (ax3_inner < 2)")),
        ("int8_t* x, int32_t n", split("1")),
        ("int8_t* x, int32_t n", "for (int32_t o = 0; o < 3; ++o) {\n for (int32_t i = 0; i < 4; ++i) {\n int32_t cse_var_2 = ((o * 4) + i);\n\
                    if (cse_var_2 < 10) {\n x[cse_var_2] = (int8_t)0;\n }\n }\n}\n".to_string()),
        ("int8_t* x, int8_t* y, int32_t n", "for (int32_t o = 0; o < 3; ++o) {\n for (int32_t i = 0; i < 4; ++i) {\n\
                    y[((o * 4) + i)] = ((((o * 2) + (i >> 1)) < 5) ? x[((o * 4) + i)] : (int8_t)0);\n }\n}\n".to_string()),
        ("int8_t* x, int32_t n", "for (int32_t c = 0; c < 32; ++c) {\n for (int32_t h = 0; h < 56; ++h) {\n\
                    for (int32_t ax3_outer = 0; ax3_outer < 4; ++ax3_outer) {\n for (int32_t ax3_inner = 0; ax3_inner < 16; ++ax3_inner) {\n\
                    if (((ax3_outer * 2) + (ax3_inner >> 3)) < 7) {\n\
                    int32_t cse_var_1 = ((((c * 3136) + (h * 56)) + (ax3_outer * 16)) + ax3_inner);\n\
                    x[cse_var_1] = (int8_t)0;\n }\n }\n }\n }\n}\n".to_string()),
        ("int8_t* x, int32_t n", nest("((((o1 * 2) + o2) < 4) && ((((o1 * 8) + (o2 * 4)) + i) < 13))")),
        ("int8_t* x, int32_t n", nest("((((o1 * 4) + (o2 * 2)) + (i >> 1)) < 7)")),
        ("int8_t* x, int32_t n", nest("((((o1 * 2) + ((o2 * 4 + i) >> 2)) * 2) < 7)")),
        ("int8_t* x, int32_t n", "for (int32_t f = 0; f < 147; ++f) {\n for (int32_t i = 0; i < 4; ++i) {\n\
                     if ((((f % 3) * 4) + i) < 10) {\n x[((((f / 3) * 10) + ((f % 3) * 4)) + i)] = (int8_t)0;\n }\n }\n}\n".to_string()),
        ("int8_t* x, int32_t n", "for (int32_t o = 0; o < 3; ++o) {\n for (int32_t i = 0; i < 4; ++i) {\n\
                     x[min(((o * 4) + i), 9)] = (int8_t)0;\n x[((((o * 4) + i) < 7) ? ((o * 4) + i) : 7)] = (int8_t)0;\n }\n}\n".to_string()),
        ("int8_t* x, int32_t n", "for (int32_t f = 0; f < 100000; ++f) {\n for (int32_t i = 0; i < 8; ++i) {\n\
                    if ((((f % 7) * 8) + i) < 50) {\n x[((f * 8) + i)] = (int8_t)0;\n }\n }\n}\n".to_string()),
        ("int8_t* x, int32_t n", "for (int32_t i = 0; i < 8; ++i) {\n if (i != n) {\n x[i] = (int8_t)0;\n }\n}\n".to_string()),
        ("int8_t* x, int32_t n", "for (int32_t i = 0; i < n; ++i) { x[i] = (int8_t)0; }\n".to_string()),
        ("int8_t* x, int32_t n", chained("((p + p) - p)", 4, true)),
        ("int8_t* x, int32_t n", chained("((p < 2) ? p : p)", 4, false)),
        ("int8_t* x, int32_t n", chained("((p >> 1) + (p >> 2))", 4096, false)),
        ("int8_t* x, int32_t n", format!("x[{}0] = (int8_t)0;\n", "1 + ".repeat(20_000))),
        ("int8_t* x, int32_t n", format!("if ({}1) {{ x[0] = (int8_t)0; }}\n", "1 && ".repeat(20_000))),
        ("int8_t* x, int32_t n", format!("x[0]{} = 1;\n", "[0]".repeat(20_000))),
        ("int8_t* x, int32_t n", many_guards),
        ("int8_t* x, int32_t n", format!("x[{}0{}] = (int8_t)0;\n", "(".repeat(10_000), ")".repeat(10_000))),
        ("float* x, int32_t n", "for (int32_t i = 0; i < n; ++i) { x[i] = 0.0f; }\n".to_string()),
        ("float* x, int32_t n", "float* y = x + n;\n y[0] = 1.0f;\n".to_string()),
        ("float* x, int32_t n", "float* y = x + 4;\n y = y + 1;\n y[0] = 1.0f;\n".to_string()),
        ("float* x, int32_t n", "float* y = x - 4;\n y[2] = 1.0f;\n".to_string()),
        ("float* x, int32_t n", "store(&(x[n]));\n".to_string()),
        ("float* x, int32_t n", "int32_t k = 0;\nfor (int32_t i = 0; i < 4; ++i) { x[k] = 0.0f; k = k + 8; }\n".to_string()),
        ("float* x, int32_t n", "for (int32_t i = 0; i < 4; ++i) { x[i - 1] = 0.0f; }\n".to_string()),
        ("float* x, int32_t n", "for (int64_t i = 0; i < 9223372036854775807; ++i) { x[i * 4] = 0.0f; }\n".to_string()),
        ("float* x, int32_t n", "x[0] = 1.0f; @\n".to_string()),
    ];
    for (index, (params, body)) in cases.iter().enumerate() {
        let names = sources::param_names(params);
        let uses: Vec<String> = names.iter().map(|name| format!("{name}: {:?}", loops::use_of(params, body, name, &none))).collect();
        out.line(format!("body {index} ({}): {}", digest(body.as_bytes()), uses.join(", ")));
    }
    let reaches = |elements: u64, dtype: &str| {
        crate::dtype::DType::parse(dtype).ok().map(|dtype| Use::Reaches(Reach { elements, dtype, exact: true }))
    };
    let callee = |function: &str, position: usize| match (function, position) {
        ("op_a", 0) => reaches(240, "int8"),
        ("op_b", 1) => reaches(100, "int8"),
        ("op_d", 0) => Some(Use::Untouched),
        ("op", 0) => reaches(10, "float32"),
        _ => None,
    };
    for (params, body) in [
        (
            "int8_t* x_buffer_var, uint8_t* ws",
            "if (op_a(x_buffer_var, sid_1_let, ws) != 0 ) return -1;\n  if (op_b(sid_1_let, x_buffer_var) != 0 ) return -1;\n  return 0;\n",
        ),
        ("int8_t* x_buffer_var", "op_c(x_buffer_var);\n"),
        ("int8_t* x_buffer_var", "op_d(x_buffer_var);\n op_b(0, x_buffer_var);\n"),
        ("int8_t* x", "op_d(x);\n"),
        ("uint8_t* pool", "void* sid_1_let = (&(pool[5120]));\n op(sid_1_let);\n"),
    ] {
        let uses: Vec<String> =
            sources::param_names(params).iter().map(|name| format!("{name}: {:?}", loops::use_of(params, body, name, &callee))).collect();
        out.line(format!("with callees, {:?}: {}", short(body), uses.join(", ")));
    }
    for declaration in ["float* x", "const int8_t* p", "void* v", "unsigned char* u", "double", "int64_t *w", "size_t* s"] {
        out.line(format!("pointer_dtype({declaration:?}): {:?}", loops::pointer_dtype(declaration)));
    }
}

/// `kernel_library`'s and `kernel_probe`'s test snippets: a small library, guards, scratch calls.
fn kernel_snippet_facts(out: &mut Facts) {
    let text = |path: &str, code: &str| (path.to_string(), code.to_string());
    out.line("");
    out.line("# kernel_library::from_texts: the unit tests' library");
    let headers = [text(
        "Include/arm_nnfunctions.h",
        "/*\n * $Date:        1 May 2023\n * $Revision:    V.1.2.3\n */\n\
         int32_t arm_conv(const cmsis_nn_context *ctx, const cmsis_nn_dims *input_dims);\n\
         int32_t arm_conv_get_buffer_size(const cmsis_nn_dims *input_dims);\n\
         static inline int helper(int x) { return arm_support(x); }\n\
         #define CALLS_TABLE(x) arm_table_lookup(x)\n",
    )];
    let sources = [
        text("Source/Conv/arm_conv.c", "int32_t arm_conv(const cmsis_nn_context *ctx) { return helper(1) + CALLS_TABLE(2); }"),
        text("Source/Support/arm_support.c", "int arm_support(int x) { return x; }"),
        text("Source/Support/arm_table.c", "int arm_table_lookup(int x) { return memcpy(0, 0, x); }"),
        text("Source/Other/arm_unused.c", "int arm_unused(void) { return arm_conv(0); }"),
    ];
    let library = KernelLibrary::from_texts(Path::new("lib"), &headers, &sources);
    library_facts(out, &library);
    out.line(format!("select([arm_conv]): {:?}", library.select(&["arm_conv".to_string()].into())));
    out.line("");
    out.line("# kernel_library::from_texts: guards");
    let header = "#ifndef GUARD_H\n#define GUARD_H\n\
         #if (defined(__ARM_FEATURE_DSP) && (__ARM_FEATURE_DSP == 1))\n  #define HAS_DSP 1\n#endif\n\
         #if defined(ARM_MATH_DSP)\nstatic inline int widen(int x) { return x; }\n#define PAIR(a, b) widen(a)\n\
         #if defined(ARM_MATH_MVEI) && !defined(SOME_ICE)\nstatic inline int lanes(int x) { return x; }\n#endif\n#endif\n\
         #if !defined(ARM_MATH_DSP)\nstatic inline int plain(int x) { return x; }\n#elif defined(__ARM_FEATURE_MVE)\n\
         static inline int vector(int x) { return x; }\n#else\nstatic inline int scalar(int x) { return x; }\n#endif\n\
         #if defined(ARM_MATH_DSP) || defined(PORTABLE_TOO)\nstatic inline int either(int x) { return x; }\n#endif\n#endif\n";
    let sources = [
        text(
            "Source/arm_both.c",
            "#ifdef ARM_MATH_DSP\nint arm_both(int x) { return x; }\n#else\nint arm_both(int x) { return -x; }\n#endif\n",
        ),
        text(
            "Source/arm_dsp_only.c",
            "#if defined(ARM_MATH_DSP)\nint arm_dsp_only(int x) {\n#if defined(ARM_MATH_MVEI)\n  x++;\n#endif\n  return x;\n}\n#endif\n",
        ),
    ];
    library_facts(out, &KernelLibrary::from_texts(Path::new("lib"), &[text("Include/guard.h", header)], &sources));

    out.line("");
    out.line("# kernel_library::scratch_calls and kernel_probe (the unit tests' declarations)");
    let declarations: BTreeMap<String, String> = [
        ("arm_avgpool_s8", "const cmsis_nn_context *ctx, const cmsis_nn_pool_params *pool_params, const cmsis_nn_dims *input_dims, const int8_t *src, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims, int8_t *dst"),
        ("arm_avgpool_s8_get_buffer_size_dsp", "const int output_x, const int ch_src"),
    ]
    .into_iter()
    .map(|(name, params)| (name.to_string(), params.to_string()))
    .collect();
    let calls = "int32_t f(int8_t* in, int8_t* out) {\n  cmsis_nn_context context= {NULL,0};\n  \
        cmsis_nn_tile stride = {3,3};\n  cmsis_nn_pool_params pool_params = {stride};\n  cmsis_nn_dims input_dims = {1,3,3,256};\n  \
        cmsis_nn_dims filter_dims = {1,3,3,1};\n  cmsis_nn_dims output_dims = {1,1,1,256};\n  \
        arm_status s = arm_avgpool_s8(&context, &pool_params, &input_dims, in, &filter_dims, &output_dims, out);\n  return 0;\n}";
    let mut chain = String::from("cmsis_nn_dims c0 = {1,1};\n");
    for level in 1..40 {
        chain.push_str(&format!("  cmsis_nn_dims c{level} = {{c{0},c{0}}};\n", level - 1));
    }
    let mut codes = vec![
        "int32_t f(int8_t* in, uint8_t* ws) {\n  void* buf = (&(ws[64]));\n  cmsis_nn_context context= {buf,4464};\n  \
         cmsis_nn_tile stride = {1,1};\n  cmsis_nn_conv_params conv_params = {0, 0, stride};\n  \
         cmsis_nn_dims input_dims = {1,8,8,3};\n  arm_status s = arm_conv(&context, &conv_params, &input_dims, in);\n  return 0;\n}"
            .to_string(),
        calls.to_string(),
        calls.replace(
            "cmsis_nn_dims output_dims = {1,1,1,256};",
            "cmsis_nn_tile t = {1, -0x10};\n  cmsis_nn_dims output_dims = {t, 3, NULL};",
        ),
        calls.replace("{1,1,1,256}", "{1,1,1,system(\"x\")}"),
        calls.replace("{1,1,1,256}", "{1,1,1,\n#include \"/etc/passwd\"\n}"),
        calls.replace("{1,1,1,256}", "{1,1,1,\"*/\"}"),
        calls.replace("&output_dims, out", "&output_dims[0], out"),
        calls.replace("{1,1,1,256}", "{remove(in),fopen(out,in),popen(in,out),1}")
            + "\nint32_t g(void) { cmsis_nn_dims remove = {1}; cmsis_nn_dims fopen = {2}; cmsis_nn_dims popen = {3}; return 0; }",
        calls.replace("{1,1,1,256}", "{remove,fopen,popen,1}").replace(
            "cmsis_nn_context context",
            "cmsis_nn_dims remove = {1};\n  cmsis_nn_dims fopen = {1};\n  cmsis_nn_dims popen = {1};\n  cmsis_nn_context context",
        ),
        calls.replace("cmsis_nn_dims output_dims", "cmsis_nn_dims/**/output_dims"),
        calls.replace("{1,1,1,256}", "{1,1,1,2147483648}"),
        calls.replace("{1,1,1,256}", "{1,1,1,1+1}"),
        calls.replace("cmsis_nn_dims output_dims = {1,1,1,256};", &format!("{chain}  cmsis_nn_dims output_dims = {{c39}};")),
        calls.replace("{1,1,1,256}", &format!("{}1{}", "{".repeat(100), "}".repeat(100))),
    ];
    for init in ["NULL,0", "((void*)0), 0", "(void *) NULL,0", "buf,0", "p0,16"] {
        codes.push(format!("int32_t f(int8_t* in) {{\n  cmsis_nn_context ctx = {{{init}}};\n  arm_pool(&ctx, in);\n  return 0;\n}}"));
    }
    for (index, code) in codes.iter().enumerate() {
        let code = c::strip_comments(code);
        let found = kernel_library::scratch_calls("lib2.c", &code);
        out.line(format!("snippet {index} ({}): {} scratch call(s)", digest(code.as_bytes()), found.len()));
        scratch_facts_with(out, &found, &declarations);
    }
}

/// As [`scratch_facts`], against the given declarations instead of CMSIS-NN's.
fn scratch_facts_with(out: &mut Facts, calls: &[ScratchCall], declarations: &BTreeMap<String, String>) {
    for call in calls {
        let ScratchCall { file, function, kernel, reserved, buffered, args, locals } = call;
        out.line(format!("  scratch call {file} {function} -> {kernel}: reserved {reserved}, buffered {buffered}, args {args:?}"));
        for (local, value) in locals.iter().zip(kernel_probe::evaluate_locals(locals)) {
            out.line(format!("    local {} {} = {}: {}", local.type_name, local.name, short(&local.init), short(&evaluated(&value))));
        }
    }
    let refs: Vec<&ScratchCall> = calls.iter().collect();
    for path in [KernelPath::Portable, KernelPath::Dsp, KernelPath::Mve] {
        let probe = kernel_probe::scratch_probe(&refs, declarations, path);
        out.line(format!("  {path:?} probe: asked {:?}, unasked {:?}, unreadable {:?}", probe.asked, probe.unasked, probe.unreadable));
        if let Some(source) = probe.source {
            for line in source.lines().filter(|line| line.starts_with("        ")) {
                out.line(format!("    {}", line.trim()));
            }
        }
    }
}

/// Every facts file: `(name, text)`.
/// Every facts file, `(name, text)`, and whether all are there: the corpus's
/// and CMSIS-NN's need both (a CMSIS-NN archive's facts say what the probe
/// asks of the checkouts); the snippets' need neither.
fn all_facts() -> (Vec<(String, String)>, bool) {
    let mut files = vec![("snippets.txt".to_string(), snippet_facts())];
    let (Some(corpus), Some(cmsis_nn)) = (crate::test_support::corpus_dir(), crate::test_support::third_party("CMSIS-NN")) else {
        return (files, false);
    };
    let mut cases: Vec<(String, PathBuf)> = Vec::new();
    for group in ["tvm-0.18", "real-world"] {
        let Ok(entries) = std::fs::read_dir(corpus.join(group)) else { continue };
        for entry in entries.flatten() {
            let dir = entry.path();
            let archive = [dir.join("model.tar"), dir.join("model")].into_iter().find(|path| path.exists());
            if let Some(archive) = archive {
                cases.push((entry.file_name().to_string_lossy().into_owned(), archive));
            }
        }
    }
    cases.sort();
    for (case, archive) in &cases {
        assert!(files.iter().all(|(name, _)| *name != format!("{case}.txt")), "two corpus cases named {case}");
        files.push((format!("{case}.txt"), case_facts(archive, case, &cmsis_nn)));
    }
    for version in CMSIS_NN_VERSIONS {
        files.push((format!("cmsis-nn-{version}.txt"), cmsis_nn_facts(&cmsis_nn.join(version), version)));
    }
    (files, true)
}

#[test]
fn c_facts_match_golden_files() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/facts");
    let bless = std::env::var_os("MLF_BUILD_BLESS").is_some_and(|value| value != "0");
    let (files, complete) = all_facts();
    if bless {
        if complete {
            // Rewritten whole, so a case no longer in the corpus does not linger.
            let _ = std::fs::remove_dir_all(&golden);
        }
        std::fs::create_dir_all(&golden).expect("create the facts directory");
        for (name, text) in &files {
            std::fs::write(golden.join(name), text).expect("write a facts file");
        }
        return;
    }
    let mut failures = Vec::new();
    if complete {
        let mut expected: Vec<String> = std::fs::read_dir(&golden)
            .map(|entries| entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        expected.sort();
        let mut generated: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
        generated.sort();
        if expected != generated {
            failures.push(format!("facts files {expected:?}, generated {generated:?}"));
        }
    }
    for (name, text) in &files {
        let path = golden.join(name);
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        if expected != *text {
            failures.push(format!("{} differs at {}", path.display(), crate::codegen::golden::first_difference(&expected, text)));
        }
    }
    assert!(
        failures.is_empty(),
        "the C scanners' answers differ from tests/golden/facts:\n{}\nif the change is intended, run `MLF_BUILD_BLESS=1 cargo test --release --locked --lib golden` and review the diff",
        failures.join("\n")
    );
}
