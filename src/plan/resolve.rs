//! Decides what to build for each module: merges the normalized metadata with
//! what the sources say, resolves every tensor's type and size, and lays out
//! the static memory. Nothing after this stage looks at versions or files.

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ident::CIdent;
use crate::input::archive::Tree;
use crate::input::c::parser::syntax::CSource;
use crate::input::c::CFiles;
use crate::input::code::ModuleCode;
use crate::input::graph;
use crate::input::loops::Reach;
use crate::input::metadata::{self, Executor, Metadata, ModuleMeta};
use crate::input::params;
use crate::input::sources::{self, Codegen, InterfaceHeader, RelaySignature, Sources};
use crate::plan::model::{round_up, Entry, MemoryMap, ModulePlan, OperatorSlot, Plan, Pool, Steps, Tensor};
use crate::plan::{checks, schedule, steps, Warnings};

/// Alignment TVM uses for workspaces and pools unless the target says otherwise.
const DEFAULT_ALIGNMENT: u64 = 16;

pub(crate) fn plan(tree: &Tree, files: &CFiles<'_>, metadata: &Metadata, warnings: &mut Warnings) -> Result<Plan> {
    let sources = &sources::Sources::new(tree, files);
    let mut modules = metadata
        .modules
        .iter()
        .map(|module| plan_module(sources, files, module, &metadata.modules.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), warnings))
        .collect::<Result<Vec<_>>>()?;
    for module in &mut modules {
        module.entry_split = steps::for_module(sources, files, module);
        if let Some(Steps::Whole { why }) = &module.entry_split {
            warnings.push(format!("module `{}`: {why}", module.name));
        }
    }
    let crt_config_template = ["templates/crt_config.h.template", "runtime/template/crt_config-template.h"]
        .into_iter()
        .find(|path| tree.contains(path))
        .map(str::to_string);
    Ok(Plan { modules, has_runtime: tree.contains(BACKEND_API_SOURCE), crt_config_template })
}

/// A source of TVM's C runtime: its presence means the archive ships `runtime/`.
pub(crate) const BACKEND_API_SOURCE: &str = "runtime/src/runtime/crt/common/crt_backend_api.c";

fn plan_module(
    sources: &Sources<'_>,
    files: &CFiles<'_>,
    meta: &ModuleMeta,
    modules: &[&str],
    warnings: &mut Warnings,
) -> Result<ModulePlan> {
    let tree = sources.tree;
    let name = meta.name.clone();
    let codegen = sources::codegen_for(tree, &name, modules);
    let code = &ModuleCode::new(tree, files, &codegen);
    checks::check_own_symbols(code, modules)?;
    if codegen.c_sources.is_empty() && codegen.cxx_sources.is_empty() && codegen.objects.is_empty() {
        return Err(Error::new(ErrorKind::NotMlf, format!("module `{name}` has no generated code under codegen/host"))
            .in_file(sources::SRC_DIR)
            .help("there is nothing to compile: pass the complete archive, with the C sources TVM wrote under codegen/host/src (or its objects under codegen/host/lib)"));
    }
    if meta.is_operator() {
        return plan_operator(sources, code, meta, codegen, warnings);
    }
    let header_path = InterfaceHeader::path_for(&name);
    if let Some(header) = files.get(&header_path) {
        return plan_c_interface(sources, code, meta, codegen, header, warnings);
    }
    if meta.executors.contains(&Executor::Aot) {
        if let Some(entry) = sources::headerless_entry(code, &name) {
            return plan_headerless(sources, code, meta, codegen, entry, warnings);
        }
    }
    match meta.graph_json_path.as_deref() {
        Some(graph_path) if meta.executors.contains(&Executor::Graph) => plan_graph(sources, code, meta, codegen, graph_path, warnings),
        _ => Err(unsupported_kind(meta, &header_path)),
    }
}

fn plan_c_interface(
    sources: &Sources<'_>,
    code: &ModuleCode<'_, '_>,
    meta: &ModuleMeta,
    codegen: Codegen,
    header: &CSource<'_>,
    warnings: &mut Warnings,
) -> Result<ModulePlan> {
    let tree = sources.tree;
    let name = meta.name.clone();
    let header_path = header.path;
    let mut interface = InterfaceHeader::from(&name, header)?;
    interface.direct_entry = undefined_run_replacement(code, &interface, &name, warnings)?;
    if interface.maps_inputs {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!("module `{name}` was built with tir.usmp.use_workspace_io: inputs live inside the workspace pool"),
        )
        .in_file(header_path.to_string())
        .help(format!("mlf-build gives inputs and outputs buffers of their own and cannot place them where `tvmgen_{name}_map_inputs` says; no Builder option changes that, so this archive cannot be built")));
    }
    let relay = relay_of(tree, meta);
    let main_types = code.main_parameter_types(&name);
    let code_types =
        if main_types.is_empty() { sources::entry_argument_types(sources, &codegen, &name, interface.inputs.len()) } else { Vec::new() };
    let (input_names, output_names) = (member_names(&interface.inputs), member_names(&interface.outputs));
    let resolver = TensorResolver {
        meta,
        main: main_memory(meta),
        header: Some(&interface),
        file: header_path,
        input_names: &input_names,
        output_names: &output_names,
        relay: &relay,
        main_types: &main_types,
        code_types: &code_types,
        sources,
        codegen: &codegen,
        reach: std::cell::OnceCell::new(),
    };
    let (inputs, outputs) = resolver.resolve(warnings)?;
    let mut pools = interface.pools.iter().map(|pool| plan_pool(&interface, &name, pool)).collect::<Result<Vec<_>>>()?;
    // A single workspace pool is at least the workspace metadata.json states, the larger figure winning.
    let workspace = meta.workspace_size_bytes();
    let single = pools.iter().filter(|pool| pool.constant_data.is_none()).count() == 1;
    let stated_by = |pool: &Pool| match (&pool.constant_data, single) {
        (None, true) => format!("{header_path} ({} bytes) and metadata.json's workspace ({workspace} bytes)", pool.size_bytes),
        _ => format!("{header_path} ({} bytes)", pool.size_bytes),
    };
    let stated_by: Vec<String> = pools.iter().map(stated_by).collect();
    if let [pool] = &mut pools.iter_mut().filter(|pool| pool.constant_data.is_none()).collect::<Vec<_>>()[..] {
        if pool.size_bytes < workspace {
            warnings.push(format!(
                "{header_path} gives workspace pool `{}` {} bytes, but metadata.json states a workspace of {workspace} bytes; the pool is {workspace} bytes",
                pool.name, pool.size_bytes
            ));
            pool.size_bytes = workspace;
        }
    }
    for (pool, stated_by) in pools.iter_mut().zip(&stated_by) {
        at_least_code_reach(sources, &codegen, &name, (header_path, stated_by), pool, warnings)?;
    }
    finish_plan((sources, code), meta, codegen, Entry::CInterface(interface), inputs, outputs, pools)
}

fn member_names(members: &[CIdent]) -> Vec<String> {
    members.iter().map(CIdent::to_string).collect()
}

/// `None` when a source or object defines the `tvmgen_<m>_run` the header
/// declares; else the defined model function that takes the buffers directly
/// (`tvmgen_<m>_run_model` or `tvmgen_<m>___tvm_main__` with one parameter per
/// tensor), or a refusal naming the undefined function.
fn undefined_run_replacement(
    code: &ModuleCode<'_, '_>,
    interface: &InterfaceHeader,
    name: &str,
    warnings: &mut Warnings,
) -> Result<Option<CIdent>> {
    let run = format!("tvmgen_{name}_run");
    if code.defines(&run) {
        return Ok(None);
    }
    let tensors = interface.inputs.len() + interface.outputs.len();
    let direct = [format!("tvmgen_{name}_run_model"), format!("tvmgen_{name}___tvm_main__")]
        .into_iter()
        .find(|function| code.defines(function) && code.parameter_count(function) == Some(tensors));
    match direct {
        Some(function) if interface.pools.is_empty() && interface.devices.is_empty() => {
            warnings.push(format!(
                "{} declares `{run}`, which no source defines; calling the defined `{function}` with the {tensors} tensor buffers instead",
                interface.path
            ));
            CIdent::new(&format!("module `{name}`: model function"), &function).map(Some)
        }
        _ => Err(Error::new(
            ErrorKind::Metadata,
            format!(
                "the header declares `{run}`, but no source or object of module `{name}` defines it, nor a `tvmgen_{name}_run_model` or `tvmgen_{name}___tvm_main__` taking the {tensors} tensors"
            ),
        )
        .in_file(interface.path.clone())
        .help("the archive lacks the code of its entry point, so it cannot be built as it is: pass the complete archive, with every source TVM wrote under codegen/host/src")),
    }
}

fn target_alignment(meta: &ModuleMeta) -> u64 {
    meta.targets
        .iter()
        .find_map(|target| target.option("workspace-byte-alignment"))
        .and_then(|value| value.parse().ok())
        .filter(|value: &u64| value.is_power_of_two())
        .unwrap_or(DEFAULT_ALIGNMENT)
}

/// A graph-executor module: the graph JSON and `.params` become a fixed call sequence.
fn plan_graph(
    sources: &Sources<'_>,
    code: &ModuleCode<'_, '_>,
    meta: &ModuleMeta,
    codegen: Codegen,
    graph_path: &str,
    warnings: &mut Warnings,
) -> Result<ModulePlan> {
    let tree = sources.tree;
    let name = meta.name.clone();
    let graph_bytes = tree.get(graph_path).ok_or_else(|| {
        Error::new(ErrorKind::NotMlf, format!("module `{name}` uses the graph executor, but the archive has no graph JSON"))
            .in_file(graph_path)
            .help("the graph JSON is what mlf-build plans the calls from, so the archive cannot be built without it: pass the complete archive")
    })?;
    let graph = graph::parse(graph_bytes, graph_path)?;
    let params_path = params_path(tree, &name);
    let params = match tree.get(&params_path) {
        Some(bytes) => params::parse(bytes, &params_path)?,
        // Linked weights, or none: the schedule checks every weight has a source.
        None => Vec::new(),
    };
    let linked = sources::linked_params(code);
    let main = main_memory(meta);
    let names = |list: Option<&Vec<metadata::TensorMeta>>| list.map(|l| l.iter().map(|t| t.name.clone()).collect()).unwrap_or_default();
    let alignment = target_alignment(meta);
    // Graph operators take their workspace one call at a time, each from a region
    // of the storage the schedule places: exactly what the operator's code
    // requests. Where the code does not say (a size computed at run time), the
    // largest figure metadata.json states for any operator (else the module's
    // whole workspace): some archives' per-operator figures fall short of what
    // their code allocates.
    let allocates = code.allocates_workspace();
    let largest = meta.operators.iter().flat_map(|op| op.workspace.iter().map(|&(_, bytes)| bytes)).max();
    let largest = largest.unwrap_or_else(|| meta.workspace_size_bytes());
    let mut workspaces = std::collections::BTreeMap::new();
    if allocates {
        for node in &graph.nodes {
            let graph::NodeOp::TvmOp { func_name, .. } = &node.op else { continue };
            if let Some(bytes) = code.workspace_bytes(func_name, alignment) {
                workspaces.insert(func_name.clone(), bytes);
            }
        }
    }
    // What each operator's code reaches in its tensors, so no buffer it reaches is sized from the graph alone.
    let mut reaches = std::collections::BTreeMap::new();
    for node in &graph.nodes {
        let graph::NodeOp::TvmOp { func_name, .. } = &node.op else { continue };
        if reaches.contains_key(func_name) {
            continue;
        }
        if let Some((file, found)) = sources::packed_operator_reach(sources, &codegen, func_name) {
            let bytes = found
                .into_iter()
                .map(|reach| reach.and_then(|reach| Some(schedule::ArgumentReach { bytes: reach.bytes()?, exact: reach.exact })))
                .collect();
            reaches.insert(func_name.clone(), schedule::CodeReach { file, bytes });
        }
    }
    let with = schedule::Inputs {
        graph_path,
        params_path: &params_path,
        params: &params,
        linked: linked.map(|l| (l.symbol, l.storage_ids)),
        sids: &meta.sids,
        metadata_inputs: names(main.map(|m| &m.inputs)),
        metadata_outputs: names(main.map(|m| &m.outputs)),
        metadata_output_bytes: main.map(|m| m.outputs.iter().map(|t| t.size_bytes).collect()).unwrap_or_default(),
        reaches,
        workspaces,
        default_workspace: if allocates { largest } else { 0 },
        alignment,
    };
    check_bound_weights(&graph, &with, &relay_of(tree, meta), meta)?;
    let (schedule, inputs, outputs) = schedule::schedule(&graph, &with, warnings)?;
    if let Some(call) = schedule.calls.iter().find(|call| !code.defines(&call.func_name)) {
        let node = graph.nodes.get(call.node).map_or("", |n| n.name.as_str());
        return Err(Error::new(
            ErrorKind::Metadata,
            format!(
                "the graph's node {} `{node}` calls `{}`, which no source or object of module `{name}` defines",
                call.node, call.func_name
            ),
        )
        .in_file(graph_path)
        .help("the archive lacks the operator's code, so it cannot be built as it is: pass the complete archive, with every source TVM wrote under codegen/host/src"));
    }
    finish_plan((sources, code), meta, codegen, Entry::Graph(schedule), inputs, outputs, Vec::new())
}

/// Argument nodes that are not parameters of the Relay `@main` are weights
/// TVM bound at build time (`p0..pN`): each must come from the `.params` file
/// or the C code, never become a model input.
fn check_bound_weights(graph: &graph::Graph, with: &schedule::Inputs<'_>, relay: &RelaySignature, meta: &ModuleMeta) -> Result<()> {
    if relay.params.is_empty() {
        return Ok(());
    }
    let linked = with.linked.as_ref().map(|(_, sids)| sids.as_slice()).unwrap_or_default();
    let unbound: Vec<&str> = graph
        .arg_nodes
        .iter()
        .filter(|&&node| {
            let name = graph.nodes[node].name.as_str();
            let storage_id = graph.entries[graph.entry_id(graph::EntryRef { node, index: 0 })].storage_id;
            !relay.params.iter().any(|(param, _)| param == name)
                && !with.params.iter().any(|p| p.name == name)
                && !linked.contains(&storage_id)
        })
        .map(|&node| graph.nodes[node].name.as_str())
        .collect();
    let Some(first) = unbound.first() else { return Ok(()) };
    let relay_path = meta.relay_path.as_deref().unwrap_or("the Relay text");
    let what = if with.params.is_empty() { "the archive has no weights file" } else { "the weights file does not hold them" };
    Err(Error::new(
        ErrorKind::Metadata,
        format!(
            "the graph `{}` takes {} weight(s) bound at build time (`{first}`{}; not parameters of @main in {relay_path}), but {what} and the C code links none",
            with.graph_path,
            unbound.len(),
            if unbound.len() > 1 { format!(" to `{}`", unbound[unbound.len() - 1]) } else { String::new() },
        ),
    )
    .in_file(with.params_path)
    .help(format!("put back `{}` from the same export: without it the model would run on zeroed weights", with.params_path)))
}

/// `parameters/<module>.params`, or the only `.params` file when older exports named it otherwise.
fn params_path(tree: &Tree, module: &str) -> String {
    let expected = format!("parameters/{module}.params");
    if tree.contains(&expected) {
        return expected;
    }
    let mut found = tree.files_under("parameters").filter(|path| path.ends_with(".params"));
    match (found.next(), found.next()) {
        (Some(only), None) => only.to_string(),
        _ => expected,
    }
}

fn relay_of(tree: &Tree, meta: &ModuleMeta) -> RelaySignature {
    meta.relay_path
        .as_deref()
        .and_then(|path| tree.get(path))
        .map(|text| sources::relay_signature(&String::from_utf8_lossy(text)))
        .unwrap_or_default()
}

fn main_memory(meta: &ModuleMeta) -> Option<&metadata::MainMemory> {
    meta.main_for_device(1).or(meta.main.first())
}

/// Packed `tvmgen_<m>_run` or a legacy descriptor: no header names the tensors, so
/// names and counts come from the metadata (TVM >= 0.11), the descriptor, the
/// packed wrapper's argument count and the Relay text.
fn plan_headerless(
    sources: &Sources<'_>,
    code: &ModuleCode<'_, '_>,
    meta: &ModuleMeta,
    codegen: Codegen,
    found: sources::HeaderlessEntry,
    warnings: &mut Warnings,
) -> Result<ModulePlan> {
    let tree = sources.tree;
    let name = meta.name.clone();
    let relay = relay_of(tree, meta);
    let main = main_memory(meta);
    let (entry, file, declared) = match found {
        sources::HeaderlessEntry::Descriptor { symbol, file, inputs, outputs } => {
            let declared = inputs.zip(outputs);
            let symbol = CIdent::new(&format!("module `{name}`: descriptor"), &symbol)?;
            (Entry::LegacyDescriptor { symbol, file: file.clone() }, file, declared)
        }
        sources::HeaderlessEntry::Packed { function, file, arguments } => {
            let outputs = match main {
                Some(main) if !main.outputs.is_empty() => main.outputs.len(),
                // A Relay function returns one tensor unless its type says it is a tuple.
                _ => relay.results.len().max(1),
            };
            let declared = (arguments > outputs).then(|| (arguments - outputs, outputs));
            let function = CIdent::new(&format!("module `{name}`: function"), &function)?;
            (Entry::Packed { function, file: file.clone() }, file, declared)
        }
    };
    let (input_names, output_names) = match main {
        Some(main) if !main.inputs.is_empty() && !main.outputs.is_empty() => (
            main.inputs.iter().map(|t| metadata::sanitize(&t.name)).collect::<Vec<_>>(),
            main.outputs.iter().map(|t| metadata::sanitize(&t.name)).collect::<Vec<_>>(),
        ),
        _ => {
            let Some((n_in, n_out)) = declared else {
                return Err(Error::new(
                    ErrorKind::Metadata,
                    format!("cannot tell how many inputs and outputs module `{name}` has (read: metadata.json, which lists none in `main`; the Relay text; the entry point's parameters)"),
                )
                .in_file(file)
                .help("when the archive came with a metadata.json listing `inputs` and `outputs` in `main`, put it back; otherwise this module cannot be built"));
            };
            // Relay lists the model inputs first, then the weights.
            let inputs: Vec<String> = (0..n_in)
                .map(|i| relay.params.get(i).map_or_else(|| format!("input{i}"), |(param, _)| metadata::sanitize(param)))
                .collect();
            let outputs = (0..n_out).map(|i| if n_out == 1 { "output".to_string() } else { format!("output{i}") }).collect();
            (inputs, outputs)
        }
    };
    let main_types = code.main_parameter_types(&name);
    let code_types = sources::entry_argument_types(sources, &codegen, &name, input_names.len());
    let resolver = TensorResolver {
        meta,
        main,
        header: None,
        file: &file,
        input_names: &input_names,
        output_names: &output_names,
        relay: &relay,
        main_types: &main_types,
        code_types: &code_types,
        sources,
        codegen: &codegen,
        reach: std::cell::OnceCell::new(),
    };
    let (inputs, outputs) = resolver.resolve(warnings)?;
    finish_plan((sources, code), meta, codegen, entry, inputs, outputs, Vec::new())
}

/// A `tvm.build` operator: tensors from the metadata's memory map; which are
/// written (outputs) from the generated code.
fn plan_operator(
    sources: &Sources<'_>,
    code: &ModuleCode<'_, '_>,
    meta: &ModuleMeta,
    codegen: Codegen,
    warnings: &mut Warnings,
) -> Result<ModulePlan> {
    let function = match meta.operator_functions.as_slice() {
        [function] => function,
        [] => {
            return Err(Error::new(ErrorKind::Metadata, "an operator export whose `memory` lists no function")
                .in_file("metadata.json")
                .help("metadata.json's `memory` names the operator's function and its tensors, so without them the archive cannot be built: pass the archive's original metadata.json"))
        }
        several => {
            let names: Vec<&str> = several.iter().map(|f| f.name.as_str()).collect();
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("operator export with several functions ({}): mlf-build wraps one function per archive", names.join(", ")),
            )
            .in_file("metadata.json")
            .help("no Builder option picks one of the functions, so this archive cannot be built"));
        }
    };
    let Some((file, args)) = sources::operator_args(code, &function.name) else {
        return Err(Error::new(ErrorKind::Metadata, format!("no generated source defines operator `{}`", function.name))
            .in_file(sources::SRC_DIR)
            .help("metadata.json and the sources do not describe the same operator: pass the archive as TVM wrote it, with both files of one export"));
    };
    if args.len() != function.params.len() {
        return Err(Error::new(
            ErrorKind::Metadata,
            format!("operator `{}` reads {} arguments, metadata.json lists {}", function.name, args.len(), function.params.len()),
        )
        .in_file(file)
        .help("metadata.json and the sources do not describe the same operator: pass the archive as TVM wrote it, with both files of one export"));
    }
    // TVM puts outputs last; when the code shows no store, the last argument is the output.
    let any_written = args.iter().any(|arg| arg.written);
    let reaches = sources::packed_operator_reach(sources, &codegen, &function.name).map(|(_, reaches)| reaches).unwrap_or_default();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut slots = Vec::new();
    for (index, (arg, param)) in args.iter().zip(&function.params).enumerate() {
        let is_output = if any_written { arg.written } else { index + 1 == args.len() };
        let how = if any_written { "the generated code stores into it" } else { "the last argument" };
        let mut tensor = Tensor {
            name: arg.name.clone(),
            dtype: param.dtype,
            size_bytes: param.size_bytes,
            shape: if param.shape.is_empty() { vec![param.size_bytes / param.dtype.size_bytes() as u64] } else { param.shape.clone() },
            source: if is_output {
                format!("metadata.json memory.{}[{index}]; an output because {how}", function.name)
            } else {
                format!("metadata.json memory.{}[{index}]", function.name)
            },
            padding: 0,
        };
        // The caller's buffer is at least what the code reaches exactly: where
        // metadata.json states less, the code decides. An upper bound past it pads.
        let element = param.dtype.size_bytes() as u64;
        let reach = reaches.get(index).copied().flatten();
        let reached = reach.and_then(Reach::bytes).and_then(|bytes| bytes.checked_next_multiple_of(element));
        match reached.filter(|&bytes| bytes > tensor.size_bytes) {
            Some(bytes) if reach.is_some_and(|reach| reach.exact) => {
                let why = format!(
                    "metadata.json memory.{}[{index}] states {} bytes, but the code of `{}` in {file} reaches {bytes} bytes of `{}`",
                    function.name, tensor.size_bytes, function.name, arg.name
                );
                warnings.push(format!("{why}; {bytes} bytes are used"));
                tensor.size_bytes = bytes;
                tensor.shape = vec![bytes / element];
                tensor.source = format!("the code, not metadata.json: {why}");
            }
            Some(bytes) => {
                let what = format!("the padded copy of `{}` (the upper bound of the code of `{}` in {file})", arg.name, function.name);
                crate::plan::limits::check_bytes(&meta.name, &what, bytes).map_err(|e| e.in_file(file.clone()))?;
                warnings.push(format!(
                    "metadata.json memory.{}[{index}] states {} bytes, and the code of `{}` in {file} reaches at most {bytes} bytes of `{}` \
                     (an upper bound: a guard or index mlf-build does not follow exactly); the tensor stays {} bytes, and the code runs on a copy padded to {bytes} bytes",
                    function.name, tensor.size_bytes, function.name, arg.name, tensor.size_bytes
                ));
                tensor.padding = bytes - tensor.size_bytes;
            }
            None => {}
        }
        if is_output {
            slots.push(OperatorSlot::Output(outputs.len()));
            outputs.push(tensor);
        } else {
            slots.push(OperatorSlot::Input(inputs.len()));
            inputs.push(tensor);
        }
    }
    let function = CIdent::new(&format!("module `{}`: function", meta.name), &function.name)?;
    let entry = Entry::Operator { function, file, args: slots };
    finish_plan((sources, code), meta, codegen, entry, inputs, outputs, Vec::new())
}

fn finish_plan(
    (sources, code): (&Sources<'_>, &ModuleCode<'_, '_>),
    meta: &ModuleMeta,
    codegen: Codegen,
    entry: Entry,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    pools: Vec<Pool>,
) -> Result<ModulePlan> {
    let needs = sources::code_needs(sources.tree, code);
    let alignment = target_alignment(meta);
    let memory = MemoryMap {
        workspace_bytes: meta.workspace_size_bytes(),
        constants_bytes: meta.constants_size_bytes(),
        io_bytes: meta.io_size_bytes(),
    };
    // A graph's operator workspaces are regions of its storage (see `schedule`).
    // TVM's planner sizes each request rounded to the alignment; the extra
    // alignment covers the arena base, as TVM's own allocator assumes.
    let arena_bytes = match &entry {
        Entry::Graph(_) => 0,
        _ if needs.workspace_allocator => round_up(memory.workspace_bytes, alignment).saturating_add(alignment),
        _ => 0,
    };
    Ok(ModulePlan {
        name: CIdent::new("module name", &meta.name)?,
        entry,
        codegen,
        needs,
        inputs,
        outputs,
        pools,
        memory,
        alignment,
        arena_bytes,
        targets: meta.targets.iter().map(|target| target.target.clone()).collect(),
        profile: None,
        entry_split: None,
        arena_group: None,
    })
}

fn unsupported_kind(meta: &ModuleMeta, header_path: &str) -> Error {
    let m = &meta.name;
    match meta.executors.first() {
        Some(Executor::Graph) => Error::new(
            ErrorKind::Metadata,
            format!("module `{m}` uses the graph executor, but metadata.json gives no place for its graph JSON"),
        )
        .in_file("metadata.json")
        .help(format!("the graph JSON (executor-config/graph/{m}.graph) is what mlf-build plans the calls from: pass the complete archive, or metadata.json as TVM wrote it")),
        _ => Error::new(
            ErrorKind::Metadata,
            format!(
                "module `{m}` is an AOT build, but it has neither the interface header, a `tvm_model_t tvmgen_{m}_network` descriptor nor a packed `tvmgen_{m}_run` definition"
            ),
        )
        .in_file(header_path)
        .help("mlf-build runs an AOT module through one of these, so the archive cannot be built as it is: pass the complete archive, with every file TVM wrote under codegen/host"),
    }
}

/// A pool is at least what the code reaches into it: a workspace pool the
/// files state smaller is grown to the code's reach (warning); a constant pool
/// the code reads past the end of is refused, since its bytes are nowhere else.
/// Where the code does not show its reach, the stated size stands. `files`:
/// the interface header, and the files that state the pool's size.
fn at_least_code_reach(
    sources: &Sources<'_>,
    codegen: &Codegen,
    module: &str,
    files: (&str, &str),
    pool: &mut Pool,
    warnings: &mut Warnings,
) -> Result<()> {
    let (header_path, stated_by) = files;
    let Some((bytes, entry, file)) = sources::pool_reach(sources, codegen, module, &format!("workspace_pools->{}", pool.name)) else {
        return Ok(());
    };
    if bytes <= pool.size_bytes {
        return Ok(());
    }
    let name = &pool.name;
    if pool.constant_data.is_some() {
        return Err(Error::new(
            ErrorKind::Metadata,
            format!("the code of `{entry}` in {file} reads {bytes} bytes of constant pool `{name}`, but {header_path} gives it {} bytes of data", pool.size_bytes),
        )
        .in_file(header_path)
        .help("the constant data and the code come from different exports, or one was edited: restore the interface header from the archive TVM wrote with these sources; mlf-build will not let the code read past the constants it has"));
    }
    crate::plan::limits::check_bytes(module, &format!("workspace pool `{name}` (the reach of `{entry}` in {file})"), bytes)
        .map_err(|e| e.in_file(file.clone()))?;
    warnings.push(format!(
        "workspace pool `{name}` of module `{module}`: {stated_by} state less, but the code of `{entry}` in {file} reaches {bytes} bytes; the pool is {bytes} bytes"
    ));
    pool.size_bytes = bytes;
    Ok(())
}

fn plan_pool(header: &InterfaceHeader, module: &str, pool: &CIdent) -> Result<Pool> {
    let prefix = format!("TVMGEN_{}_{}", module.to_uppercase(), pool.to_uppercase());
    if let Some(size) = header.macro_u64(&format!("{prefix}_WORKSPACE_POOL_SIZE")) {
        return Ok(Pool { name: pool.clone(), size_bytes: size, constant_data: None });
    }
    let missing = |what: &str| {
        Error::new(ErrorKind::Metadata, format!("pool `{pool}` has no {what} macro `{prefix}_…`")).in_file(&header.path).help(format!(
            "the header TVM wrote with these sources defines `{prefix}_WORKSPACE_POOL_SIZE` (a workspace pool) or \
                 `{prefix}_CONSTANT_POOL_SIZE` and `_DATA` (a constant pool, whose bytes are nowhere else): pass that header; \
                 a workspace pool's size can also be stated in {}: `#define {prefix}_WORKSPACE_POOL_SIZE <bytes>`",
            header.path
        ))
    };
    let size = header.macro_u64(&format!("{prefix}_CONSTANT_POOL_SIZE")).ok_or_else(|| missing("size"))?;
    let data_macro = format!("{prefix}_CONSTANT_POOL_DATA");
    let data = header.macros.get(&data_macro).ok_or_else(|| missing("data"))?;
    let mut data = sources::parse_byte_list(data)
        .ok_or_else(|| Error::new(ErrorKind::Metadata, format!("`{data_macro}` is not a list of byte values")).in_file(&header.path))?;
    if (data.len() as u64) < size {
        return Err(Error::new(ErrorKind::Metadata, format!("`{data_macro}` has {} bytes, the pool size says {size}", data.len()))
            .in_file(&header.path));
    }
    // TVM pads constant data to the alignment; the pool itself is `size` bytes.
    data.truncate(usize::try_from(size).unwrap_or(usize::MAX));
    Ok(Pool { name: pool.clone(), size_bytes: size, constant_data: Some(data) })
}

/// Finds each header tensor's type and size in the best source the archive has:
/// metadata (TVM >= 0.11), header size macros, the Relay text, the generated
/// `__tvm_main__` prototype, and last the metadata's I/O total (older archives).
struct TensorResolver<'a> {
    meta: &'a ModuleMeta,
    main: Option<&'a metadata::MainMemory>,
    /// The interface header, for its size macros; `None` for header-less archives.
    header: Option<&'a InterfaceHeader>,
    /// The file that names the tensors, for errors.
    file: &'a str,
    input_names: &'a [String],
    output_names: &'a [String],
    relay: &'a RelaySignature,
    main_types: &'a [Option<DType>],
    /// Element types the operators the entry calls use for its arguments.
    code_types: &'a [Option<DType>],
    sources: &'a Sources<'a>,
    codegen: &'a Codegen,
    /// How far the code reaches into each entry argument, read on first need.
    reach: std::cell::OnceCell<Option<(String, Vec<Option<Reach>>)>>,
}

#[derive(Clone)]
struct Partial {
    name: String,
    dtype: Option<(DType, String)>,
    size: Option<(u64, String)>,
    shape: Option<Vec<u64>>,
    /// Bytes past the size the code may reach (an upper bound): see [`Tensor::padding`].
    padding: u64,
}

impl TensorResolver<'_> {
    fn resolve(&self, warnings: &mut Warnings) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
        let mut inputs =
            self.input_names.iter().enumerate().map(|(i, n)| self.partial(n, i, true, warnings)).collect::<Result<Vec<_>>>()?;
        let mut outputs =
            self.output_names.iter().enumerate().map(|(i, n)| self.partial(n, i, false, warnings)).collect::<Result<Vec<_>>>()?;
        self.fill_from_io_total(&mut inputs, &mut outputs);
        let finish = |list: Vec<Partial>| list.into_iter().map(|p| self.finish(p)).collect::<Result<Vec<_>>>();
        Ok((finish(inputs)?, finish(outputs)?))
    }

    fn partial(&self, name: &str, position: usize, is_input: bool, warnings: &mut Warnings) -> Result<Partial> {
        let mut partial = Partial { name: name.to_string(), dtype: None, size: None, shape: None, padding: 0 };
        let kind = if is_input { "inputs" } else { "outputs" };
        // Every size the archive states for this tensor, reconciled below.
        let mut sizes: Vec<(u64, String)> = Vec::new();
        if let Some(main) = self.main {
            let list = if is_input { &main.inputs } else { &main.outputs };
            let names = if is_input { self.input_names } else { self.output_names };
            // Exports whose header names tensors differently from the metadata
            // (TVM >= 0.11's `output_tensor_names`) keep the order: match by position.
            let by_position = || {
                let none_named = !list.iter().any(|t| names.contains(&metadata::sanitize(&t.name)));
                (none_named && list.len() == names.len()).then(|| list.get(position)).flatten()
            };
            if let Some(tensor) = list.iter().find(|t| metadata::sanitize(&t.name) == name).or_else(by_position) {
                let path = format!("metadata.json memory.functions.main.{kind}.{}", tensor.name);
                partial.dtype = Some((tensor.dtype, path.clone()));
                sizes.push((tensor.size_bytes, path));
            }
        }
        let size_macro = format!("TVMGEN_{}_{}_SIZE", self.meta.name.to_uppercase(), name.to_uppercase());
        if let Some(header) = self.header {
            if let Some(size) = header.macro_u64(&size_macro) {
                sizes.push((size, format!("{size_macro} in {}", header.path)));
            }
        }
        let relay_type = if is_input {
            self.relay.params.iter().find(|(param, _)| metadata::sanitize(param) == name).map(|(_, ty)| ty)
        } else if self.relay.results.len() == self.output_names.len() {
            self.relay.results.get(position)
        } else {
            None
        };
        if let Some(ty) = relay_type {
            let path = self.meta.relay_path.clone().unwrap_or_default();
            partial.dtype.get_or_insert_with(|| (ty.dtype, format!("the Relay signature in {path}")));
            let bytes = ty.shape.iter().fold(ty.dtype.size_bytes() as u64, |acc, &dim| acc.saturating_mul(dim));
            sizes.push((bytes, format!("the Relay signature in {path}")));
            partial.shape = Some(ty.shape.clone());
        }
        let main_position = if is_input { position } else { self.input_names.len() + position };
        let agreed = self.reconcile(if is_input { "input" } else { "output" }, name, sizes, main_position, warnings)?;
        if let Some(agreed) = agreed {
            let (size, padding) = self.at_least_reach(name, agreed, main_position, warnings)?;
            partial.size = Some(size);
            partial.padding = padding;
        }
        if let Some(Some(dtype)) = self.main_types.get(main_position) {
            partial.dtype.get_or_insert_with(|| (*dtype, format!("the `tvmgen_{}___tvm_main__` definition", self.meta.name)));
        }
        if let Some(Some(dtype)) = self.code_types.get(main_position) {
            let how = if is_input { "the first operator" } else { "the last operator" };
            partial.dtype.get_or_insert_with(|| (*dtype, format!("{how} the entry of module `{}` passes it to", self.meta.name)));
        }
        if let (false, [_], Some(dtype)) = (is_input, self.output_names, self.relay.result_dtype) {
            let path = self.meta.relay_path.clone().unwrap_or_default();
            partial.dtype.get_or_insert_with(|| (dtype, format!("the `out_dtype` of the final expression in {path}")));
        }
        if partial.dtype.is_none() {
            partial.dtype = self.code_size(main_position).map(|(_, dtype, source)| (dtype, source));
        }
        Ok(partial)
    }

    /// The bytes the code reaches in entry argument `position`, the element type it
    /// reaches them as, and how that was read. Read once, for every tensor, on first need.
    fn code_size(&self, position: usize) -> Option<(u64, DType, String)> {
        let tensors = self.input_names.len() + self.output_names.len();
        let found = self.reach.get_or_init(|| sources::entry_reach(self.sources, self.codegen, &self.meta.name, tensors));
        let (entry, reaches) = found.as_ref()?;
        let reach = (*reaches.get(position)?)?;
        let source = format!("the code: the loops, indices and kernel dimensions of the operators `{entry}` passes it to");
        Some((reach.bytes()?, reach.dtype, source))
    }

    /// Whether the code's reach into entry argument `position` is exact (every
    /// guard and index around it followed), not an upper bound.
    fn reach_is_exact(&self, position: usize) -> bool {
        self.reach.get().and_then(|found| *found.as_ref()?.1.get(position)?).is_some_and(|reach| reach.exact)
    }

    /// A tensor no file sizes, whose code shows only an upper bound: a size
    /// from it would be a guess, so the user is asked to state one.
    fn no_size_but_a_bound(&self, kind: &str, name: &str, bound: u64) -> Error {
        let entry = self.entry_name();
        let size_macro = format!("TVMGEN_{}_{}_SIZE", self.meta.name.to_uppercase(), name.to_uppercase());
        Error::new(
            ErrorKind::Metadata,
            format!(
                "{kind} `{name}` of module `{}` has no size in any file, and the code of the operators `{entry}` passes it to \
                 reaches at most {bound} bytes into it, an upper bound (a guard or index mlf-build does not follow exactly)",
                self.meta.name
            ),
        )
        .in_file(self.file)
        .help(format!("state the tensor's size in bytes in the interface header: `#define {size_macro} <bytes>`"))
    }

    /// One size from the sizes the sources state: the one they all give, or
    /// the one all but one give (the odd one is reported); otherwise a refusal
    /// naming each value and its source, since a buffer sized from the wrong
    /// one would let the C code write past it.
    fn reconcile(
        &self,
        kind: &str,
        name: &str,
        mut sizes: Vec<(u64, String)>,
        position: usize,
        warnings: &mut Warnings,
    ) -> Result<Option<(u64, String)>> {
        let stated = sizes.len();
        if stated == 0 {
            if let Some((bytes, _, source)) = self.code_size(position) {
                if !self.reach_is_exact(position) {
                    return Err(self.no_size_but_a_bound(kind, name, bytes));
                }
                sizes.push((bytes, source));
            }
        }
        // A size no target can hold is refused as such, before sources are compared.
        for (size, source) in &sizes {
            crate::plan::limits::check_bytes(&self.meta.name, &format!("{kind} `{name}` (from {source})"), *size)
                .map_err(|e| e.in_file(self.file))?;
        }
        let Some(first) = sizes.first().cloned() else { return Ok(None) };
        let agreeing = |value: u64| sizes.iter().filter(|(size, _)| *size == value).count();
        if let ([only], 1) = (&sizes[..], stated) {
            return Ok(Some(self.checked_by_code(name, only, position, warnings)));
        }
        if agreeing(first.0) == sizes.len() {
            return Ok(Some(first));
        }
        let listed: Vec<String> = sizes.iter().map(|(size, source)| format!("{size} bytes from {source}")).collect();
        let best = sizes.iter().find(|(size, _)| sizes.len() >= 3 && agreeing(*size) + 1 == sizes.len());
        match best {
            Some((value, _)) => {
                let sources: Vec<&str> = sizes.iter().filter(|(size, _)| size == value).map(|(_, source)| source.as_str()).collect();
                warnings.push(format!(
                    "tensor `{name}` of module `{}`: the archive's sizes disagree ({}); using {value} bytes, which the others agree on",
                    self.meta.name,
                    listed.join(", ")
                ));
                Ok(Some((*value, sources.join(", agreed by "))))
            }
            None => self.settle_by_code(name, &sizes, position, warnings),
        }
    }

    /// The agreed size, or the code's where the code reaches further exactly:
    /// files telling the same lie must not outvote what the C code reads and
    /// writes. An upper bound past the agreed size keeps the size and asks
    /// for padding (the second value): the bound may be the reader's, not the code's.
    fn at_least_reach(&self, name: &str, agreed: (u64, String), position: usize, warnings: &mut Warnings) -> Result<((u64, String), u64)> {
        let Some((bytes, _, code_source)) = self.code_size(position).filter(|(bytes, ..)| *bytes > agreed.0) else {
            return Ok((agreed, 0));
        };
        let m = &self.meta.name;
        if self.reach_is_exact(position) {
            return Ok((self.code_wins(name, &agreed, bytes, &code_source, warnings), 0));
        }
        let what = format!("the padded copy of tensor `{name}` (the upper bound of {code_source})");
        crate::plan::limits::check_bytes(m, &what, bytes).map_err(|e| e.in_file(self.file))?;
        warnings.push(format!(
            "tensor `{name}` of module `{m}`: {} states {} bytes, and the code of the operators `{}` passes it to reaches at most {bytes} bytes \
             (an upper bound: a guard or index mlf-build does not follow exactly); the tensor stays {} bytes, and the code runs on a copy padded to {bytes} bytes",
            agreed.1,
            agreed.0,
            self.entry_name(),
            agreed.0
        ));
        let padding = bytes - agreed.0;
        Ok((agreed, padding))
    }

    /// The function whose operators the code's reach was read from.
    fn entry_name(&self) -> String {
        self.reach.get().and_then(|found| Some(found.as_ref()?.0.clone())).unwrap_or_default()
    }

    /// A size one file states, against how far the code reaches into the
    /// tensor: where they differ and the reach is exact the code decides (a
    /// stated size alone may be one of TVM 0.11's `_SIZE` macros, which are not
    /// byte sizes), with a warning; an upper bound leaves the stated size.
    fn checked_by_code(&self, name: &str, stated: &(u64, String), position: usize, warnings: &mut Warnings) -> (u64, String) {
        match self.code_size(position) {
            Some((bytes, _, code_source)) if bytes != stated.0 && self.reach_is_exact(position) => {
                self.code_wins(name, stated, bytes, &code_source, warnings)
            }
            _ => stated.clone(),
        }
    }

    /// The size the code reaches exactly, `bytes`, instead of the one `stated`, with a warning naming both.
    fn code_wins(&self, name: &str, stated: &(u64, String), bytes: u64, code_source: &str, warnings: &mut Warnings) -> (u64, String) {
        warnings.push(format!(
            "tensor `{name}` of module `{}`: {} states {} bytes, but the code reaches {bytes} bytes; {bytes} bytes are used",
            self.meta.name, stated.1, stated.0
        ));
        (bytes, format!("{code_source}, not {} ({} bytes)", stated.1, stated.0))
    }

    /// Two sources disagree and no majority decides: the code does, when its
    /// reach is exact and one of the stated sizes (TVM 0.11's `_SIZE` macros
    /// are not byte sizes); otherwise the build is refused naming every value.
    fn settle_by_code(
        &self,
        name: &str,
        sizes: &[(u64, String)],
        position: usize,
        warnings: &mut Warnings,
    ) -> Result<Option<(u64, String)>> {
        let m = &self.meta.name;
        let listed: Vec<String> = sizes.iter().map(|(size, source)| format!("{size} bytes from {source}")).collect();
        let code = self.code_size(position);
        let exact = self.reach_is_exact(position);
        if let Some((bytes, _, code_source)) = code.as_ref().filter(|_| exact) {
            if let Some((_, source)) = sizes.iter().find(|(size, _)| size == bytes) {
                let lost: Vec<String> =
                    sizes.iter().filter(|(size, _)| size != bytes).map(|(size, source)| format!("{size} bytes from {source}")).collect();
                warnings.push(format!(
                    "tensor `{name}` of module `{m}`: the archive's sizes disagree; the code reaches {bytes} bytes, as {source} says, so {bytes} bytes are used and {} {} not",
                    lost.join(" and "),
                    if lost.len() == 1 { "is" } else { "are" }
                ));
                return Ok(Some((*bytes, format!("{source}, agreed by {code_source}"))));
            }
        }
        let code_says = match &code {
            Some((bytes, _, _)) if exact => format!("the code reaches {bytes} bytes, which none of them states"),
            Some((bytes, _, _)) => format!(
                "the code reaches at most {bytes} bytes, an upper bound (a guard or index mlf-build does not follow exactly), which cannot tell which is right"
            ),
            None => "the code does not show how far it reaches into it".to_string(),
        };
        Err(Error::new(ErrorKind::Metadata, format!("the sizes of tensor `{name}` of module `{m}` disagree: {}; {code_says}", listed.join("; ")))
            .in_file(self.file)
            .help("one of these files was edited or comes from another export: restore metadata.json and the interface header from the original archive, or correct the wrong value by hand; mlf-build will not guess a buffer size the C code may write past"))
    }

    /// Archives before TVM 0.11 record only the I/O total; one unknown size is what remains of it.
    fn fill_from_io_total(&self, inputs: &mut [Partial], outputs: &mut [Partial]) {
        let all: Vec<&mut Partial> = inputs.iter_mut().chain(outputs.iter_mut()).collect();
        let unknown: Vec<usize> = all.iter().enumerate().filter(|(_, p)| p.size.is_none()).map(|(i, _)| i).collect();
        let [index] = unknown[..] else { return };
        let known: u64 = all.iter().filter_map(|p| p.size.as_ref().map(|(size, _)| *size)).sum();
        let io = self.meta.io_size_bytes();
        let mut all = all;
        if io > known {
            all[index].size = Some((io - known, "metadata.json io_size_bytes minus the other tensors".to_string()));
        }
    }

    fn finish(&self, partial: Partial) -> Result<Tensor> {
        let missing = |what: &str| {
            let m = &self.meta.name;
            let mut read = vec!["metadata.json (memory.functions.main)".to_string()];
            if let Some(header) = self.header {
                read.push(format!("the _SIZE macros of {}", header.path));
            }
            read.push(
                self.meta
                    .relay_path
                    .as_ref()
                    .map_or_else(|| "no Relay text (none in the archive)".to_string(), |p| format!("the Relay @main of {p}")),
            );
            read.push(format!(
                "the code of `tvmgen_{m}___tvm_main__` / `tvmgen_{m}_run_model` and of the operators they pass it to (parameter types, casts, loop bounds, indices, cmsis_nn_dims)"
            ));
            let size_macro = format!("TVMGEN_{}_{}_SIZE", m.to_uppercase(), partial.name.to_uppercase());
            let help = match self.header {
                Some(header) if what == "size" => format!(
                    "restore metadata.json from the original archive, or state the size in the header: `#define {size_macro} <bytes>` in {}",
                    header.path
                ),
                _ => format!(
                    "when the archive came with a metadata.json listing `{}` in `main`, put it back; otherwise this module cannot be built: mlf-build does not guess a tensor's {what}",
                    partial.name
                ),
            };
            Error::new(
                ErrorKind::Metadata,
                format!(
                    "cannot tell the {what} of tensor `{}` of module `{m}`: no file states it and the code does not show it (read: {})",
                    partial.name,
                    read.join("; ")
                ),
            )
            .in_file(self.file)
            .help(help)
        };
        let (dtype, dtype_source) = partial.dtype.clone().ok_or_else(|| missing("element type"))?;
        let (size_bytes, size_source) = partial.size.clone().ok_or_else(|| missing("size"))?;
        if size_bytes % dtype.size_bytes() as u64 != 0 {
            return Err(Error::new(
                ErrorKind::Metadata,
                format!("tensor `{}` is {size_bytes} bytes, not a whole number of {dtype} elements", partial.name),
            )
            .in_file(self.file));
        }
        let elements = size_bytes / dtype.size_bytes() as u64;
        let shape = partial
            .shape
            .filter(|shape| shape.iter().try_fold(1u64, |acc, &dim| acc.checked_mul(dim)) == Some(elements))
            .unwrap_or_else(|| vec![elements]);
        let source =
            if size_source == dtype_source { size_source } else { format!("size from {size_source}; element type from {dtype_source}") };
        Ok(Tensor { name: partial.name, dtype, size_bytes, shape, source, padding: partial.padding })
    }
}

#[cfg(test)]
mod tests {
    use crate::input::archive::Tree;
    use crate::plan::{plan_tree, PlanOptions, Planned};

    const SOFTMAX: &str = "for (int32_t i1_1 = 0; i1_1 < 10; ++i1_1) {\n    T_softmax_norm[i1_1] = (((float*)T_softmax_exp_let)[i1_1] / ((float*)T_softmax_expsum_let)[0]);\n  }";
    const EXACT: &str = "((o * 2) + (i >> 1)) < 5";
    /// Also reaches element 11: an upper bound of 48 bytes.
    const BOUND: &str = "(((o * 4) + i) < 10) || (i == 3)";
    const HEADER: &str = "codegen/host/include/tvmgen_default.h";

    /// `mlp_f32-aot_c` (output: 10 floats, 40 bytes) with its softmax split by
    /// 4 under `guard`, without the Relay text, each file through `edit`
    /// (`None`: left out), planned.
    fn mlp_split(guard: &str, edit: impl Fn(&str, String) -> Option<String>) -> Option<crate::Result<Planned>> {
        let archive = crate::test_support::corpus_dir()?.join("tvm-0.18/mlp_f32-aot_c/model.tar");
        let tree = crate::plan::read_and_plan(&archive, &PlanOptions::default()).unwrap().tree;
        let split = format!(
            "for (int32_t o = 0; o < 3; ++o) {{\n    for (int32_t i = 0; i < 4; ++i) {{\n      if ({guard}) {{\n        int32_t cse_var_1 = ((o * 4) + i);\n        \
             T_softmax_norm[cse_var_1] = (((float*)T_softmax_exp_let)[cse_var_1] / ((float*)T_softmax_expsum_let)[0]);\n      }}\n    }}\n  }}"
        );
        let files: Vec<(String, Vec<u8>)> = tree
            .into_files()
            .into_iter()
            .filter(|(path, _)| !path.ends_with(".relay"))
            .filter_map(|(path, bytes)| {
                let text = edit(&path, String::from_utf8_lossy(&bytes).replace(SOFTMAX, &split))?;
                Some((path, text.into_bytes()))
            })
            .collect();
        Some(plan_tree(Tree::from_files(files).unwrap(), &PlanOptions::default()))
    }

    fn output(planned: &Planned) -> (u64, u64) {
        let output = &planned.plan.modules[0].outputs[0];
        (output.size_bytes, output.padding)
    }

    /// Two files disagree on the output's size: an exact reach settles it, an
    /// upper bound cannot, and the refusal says so.
    #[test]
    fn only_an_exact_reach_settles_sizes_that_disagree() {
        let lie =
            |path: &str, text: String| Some(if path == "metadata.json" { text.replace("\"size\": 40", "\"size\": 44") } else { text });
        let Some(planned) = mlp_split(EXACT, lie) else { return };
        let planned = planned.unwrap();
        assert_eq!(output(&planned), (40, 0));
        assert!(
            planned.warnings.iter().any(|w| w.contains("the code reaches 40 bytes, as TVMGEN_DEFAULT_OUTPUT_SIZE")),
            "{:?}",
            planned.warnings
        );
        let error = mlp_split(BOUND, lie).unwrap().err().expect("refused").to_string();
        assert!(
            error.contains("44 bytes from metadata.json")
                && error.contains("40 bytes from TVMGEN_DEFAULT_OUTPUT_SIZE")
                && error.contains("the code reaches at most 48 bytes, an upper bound"),
            "{error}"
        );
    }

    /// A size one file alone states (the header's macro, no metadata.json)
    /// loses to an exact reach, never to an upper bound: the tensor keeps it
    /// and gets padding up to the bound.
    #[test]
    fn a_lone_stated_size_loses_only_to_an_exact_reach() {
        let macro_says = |bytes: u64| {
            move |path: &str, text: String| match path {
                "metadata.json" => None,
                HEADER => Some(text.replace("TVMGEN_DEFAULT_OUTPUT_SIZE 40", &format!("TVMGEN_DEFAULT_OUTPUT_SIZE {bytes}"))),
                _ => Some(text),
            }
        };
        let Some(planned) = mlp_split(BOUND, macro_says(40)) else { return };
        assert_eq!(output(&planned.unwrap()), (40, 8));
        let planned = mlp_split(EXACT, macro_says(24)).unwrap().unwrap();
        assert_eq!(output(&planned), (40, 0), "the macro lies and the code reaches exactly");
        let planned = mlp_split(BOUND, macro_says(24)).unwrap().unwrap();
        assert_eq!(output(&planned), (24, 24), "an upper bound does not outvote the macro");
        let warning = planned.warnings.iter().find(|w| w.contains("reaches at most 48 bytes")).expect("a warning");
        assert!(warning.contains("states 24 bytes") && warning.contains("`tvmgen_default___tvm_main__`"), "{warning}");
    }
}
