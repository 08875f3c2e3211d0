//! Plans a graph-executor module at build time: the work TVM's graph runtime
//! does on the device (parse the JSON, allocate storage, load weights, look up
//! operators) done once here, leaving a fixed call sequence over static memory.
//!
//! Every entry (node output) gets a place: a caller's input or output buffer,
//! a weight, a weight linked into the C code, or a region of the static
//! storage. `__nop` outputs (reshapes TVM does not compute) share the place of
//! their input. The storage is planned from liveness: intermediate tensors and
//! operator workspaces share bytes when the calls they are live across do not
//! overlap (TVM's storage ids are not used for that: they are a coarser plan).

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ident::CIdent;
use crate::input::graph::{EntryRef, Graph, NodeOp};
use crate::input::metadata::Storage;
use crate::input::params::Param;
use crate::plan::model::{round_up, Call, CopyOut, Holds, Place, Schedule, Slot, Tensor, TensorArg};
use crate::plan::Warnings;

/// The function name TVM's graph runtime skips: its output aliases its input.
const NOP: &str = "__nop";
/// DLPack's `kDLCPU`: the only device the generated C code runs on.
const CPU: i32 = 1;

/// What the planner knows besides the graph.
pub(crate) struct Inputs<'a> {
    /// Where the graph came from, for errors and docs.
    pub graph_path: &'a str,
    pub params_path: &'a str,
    pub params: &'a [Param],
    /// Storage ids the C code links weights for, and the lookup symbol.
    pub linked: Option<(String, Vec<usize>)>,
    /// The metadata's storage table (empty when it has none).
    pub sids: &'a [Storage],
    /// Model input names the metadata lists (empty before TVM 0.11).
    pub metadata_inputs: Vec<String>,
    /// Model output names the metadata lists (empty before TVM 0.11).
    pub metadata_outputs: Vec<String>,
    /// The sizes metadata.json states for those outputs, in the same order.
    pub metadata_output_bytes: Vec<u64>,
    /// How far each operator function's code reaches into its tensor arguments.
    pub reaches: BTreeMap<String, CodeReach>,
    /// Workspace bytes per operator function, as its code requests them
    /// (each request rounded to the alignment): the region its call gets.
    pub workspaces: BTreeMap<String, u64>,
    /// Workspace bytes, as metadata.json states them, of an operator whose
    /// code does not say (0 when the code allocates no workspace at all).
    pub default_workspace: u64,
    pub alignment: u64,
}

/// How far an operator's code reaches into each tensor argument (inputs then
/// outputs, in the order the graph passes them), in bytes, where it shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CodeReach {
    /// The source defining the operator, for messages.
    pub file: String,
    pub bytes: Vec<Option<ArgumentReach>>,
}

/// The bytes an operator's code reaches in one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArgumentReach {
    pub bytes: u64,
    /// Every guard and index followed; else `bytes` is an upper bound.
    pub exact: bool,
}

/// The most bytes the code reaches in a storage root, and the call that reaches them.
#[derive(Debug, Clone)]
struct Reached {
    bytes: u64,
    node: usize,
    argument: usize,
}

/// The schedule and the model's inputs and outputs.
pub(crate) fn schedule(graph: &Graph, with: &Inputs<'_>, warnings: &mut Warnings) -> Result<(Schedule, Vec<Tensor>, Vec<Tensor>)> {
    let graph_error = |message: String| {
        Error::new(ErrorKind::Unsupported, message)
            .in_file(with.graph_path)
            .help("mlf-build runs graphs of CPU operators with one input and one output per `__nop`; this graph needs more, so the archive cannot be built")
    };
    if let Some(entry) = graph.entries.iter().position(|e| e.device_index != CPU) {
        return Err(graph_error(format!("entry {entry} is on device type {}, not the CPU", graph.entries[entry].device_index)));
    }
    // The graph is what TVM's own executor runs; the metadata's table is only a report.
    for disagreement in sids_disagreements(graph, with) {
        warnings.push(format!(
            "metadata.json's storage table disagrees with the graph `{}` ({disagreement}); the graph is used",
            with.graph_path
        ));
    }

    let params: BTreeMap<&str, &Param> = with.params.iter().map(|p| (p.name.as_str(), p)).collect();
    let (lookup_symbol, linked_sids) = match &with.linked {
        Some((symbol, sids)) => (Some(CIdent::new("linked-weight lookup function", symbol)?), sids.as_slice()),
        None => (None, &[][..]),
    };

    // Places of the arg nodes: linked weights, `.params` weights, else model inputs.
    let mut root_place: BTreeMap<usize, Place> = BTreeMap::new();
    let mut blob = Vec::new();
    let mut inputs = Vec::new();
    let mut linked_params = 0;
    for &node in &graph.arg_nodes {
        let entry = graph.entry_id(EntryRef { node, index: 0 });
        let attr = &graph.entries[entry];
        let name = &graph.nodes[node].name;
        let place = if linked_sids.contains(&attr.storage_id) {
            linked_params += 1;
            Place::Linked(attr.storage_id)
        } else if let Some(param) = params.get(name.as_str()) {
            let bytes = byte_size(&attr.shape, attr.dtype);
            if param.dtype != attr.dtype || param.data.len() as u64 != bytes {
                return Err(Error::new(
                    ErrorKind::Metadata,
                    format!(
                        "weight `{name}` is {} bytes of {}, but the graph `{}` wants {:?} of {} ({bytes} bytes)",
                        param.data.len(),
                        param.dtype,
                        with.graph_path,
                        attr.shape,
                        attr.dtype
                    ),
                )
                .in_file(with.params_path)
                .help("the .params file and the graph disagree on this weight, so it cannot be placed: pass the archive's original .params file, written with this graph"));
            }
            let offset = round_up(blob.len() as u64, with.alignment);
            blob.resize(offset as usize, 0);
            blob.extend_from_slice(&param.data);
            Place::Param(offset)
        } else {
            inputs.push(Tensor {
                name: name.clone(),
                dtype: attr.dtype,
                size_bytes: byte_size(&attr.shape, attr.dtype),
                shape: attr.shape.iter().map(|&d| d as u64).collect(),
                source: format!("the graph `{}`, node {node}", with.graph_path),
                padding: 0,
            });
            Place::Input(inputs.len() - 1)
        };
        root_place.insert(entry, place);
    }
    check_inputs(&inputs, with)?;

    // Each entry's root: itself, or for `__nop` outputs the root of its input.
    let mut root: Vec<usize> = (0..graph.entries.len()).collect();
    for (node_id, node) in graph.nodes.iter().enumerate() {
        if let NodeOp::TvmOp { func_name, .. } = &node.op {
            if func_name == NOP {
                let ([input], first) = (node.inputs.as_slice(), graph.node_row_ptr[node_id]) else {
                    return Err(graph_error(format!("node {node_id} `{}` is a `__nop` with {} inputs", node.name, node.inputs.len())));
                };
                if graph.node_row_ptr[node_id + 1] - first != 1 {
                    return Err(graph_error(format!("node {node_id} `{}` is a `__nop` with several outputs", node.name)));
                }
                let source = root[graph.entry_id(*input)];
                if byte_size_of(graph, source) != byte_size_of(graph, first) {
                    return Err(graph_error(format!("node {node_id} `{}` is a `__nop` that changes the tensor's size", node.name)));
                }
                root[first] = source;
            }
        }
    }

    // Every buffer the C code reaches into is at least as large as the code
    // reaches exactly: where the graph states less, the code decides, with a
    // warning. Upper bounds past that pad (below): the graph's sizes stand.
    let operators = operator_nodes(graph);
    let heads = graph.outputs();
    let reached = code_reach(graph, with, &operators, &root, true)?;
    let bounds = code_reach(graph, with, &operators, &root, false)?;
    let mut grown: BTreeMap<usize, u64> = BTreeMap::new();
    for (&r, reach) in &reached {
        if reach.bytes > byte_size_of(graph, r) {
            grown.insert(r, reach.bytes);
        }
    }
    let size_of = |r: usize| grown.get(&r).copied().unwrap_or_else(|| byte_size_of(graph, r));
    // The bytes behind root `r`: its size, or an upper bound of the code's reach past it.
    let buffer_of = |r: usize| bounds.get(&r).map_or(0, |bound| bound.bytes).max(size_of(r));
    for (&r, bound) in bounds.iter().filter(|(&r, bound)| bound.bytes > size_of(r)) {
        let place = match root_place.get(&r) {
            Some(Place::Input(_)) => "the input stays its size, and the code runs on a copy padded to it",
            Some(Place::Param(offset)) => {
                // Bytes past a weight are the next weights, then zeros up to the furthest bound.
                let end = offset.saturating_add(bound.bytes);
                if end > crate::plan::limits::MAX_BYTES {
                    let limit = crate::plan::limits::MAX_BYTES;
                    return Err(Error::new(
                        ErrorKind::Metadata,
                        format!("{}: the weights would be padded past mlf-build's limit of {limit} bytes (MAX_BYTES)", disagreement(graph, with, r, bound)),
                    )
                    .in_file(with.graph_path)
                    .help("check that this is the right archive: the limits are far above what a real model for a device needs (see README.md, Untrusted archives)"));
                }
                blob.resize(blob.len().max(end as usize), 0);
                "the weights are padded after their end to it"
            }
            Some(Place::Linked(_)) => continue,
            _ if heads.iter().any(|&head| root[head] == r) => "the output stays its size, and the code runs on a buffer padded to it",
            _ => "its storage is padded to it",
        };
        warnings.push(format!(
            "{} (an upper bound: a guard or index mlf-build does not follow exactly); {place}",
            disagreement(graph, with, r, bound)
        ));
    }
    for (&entry, place) in &root_place {
        if let Place::Input(i) = place {
            inputs[*i].padding = buffer_of(entry) - size_of(entry);
        }
        let Some(reach) = grown.get(&entry).and(reached.get(&entry)) else { continue };
        let lie = disagreement(graph, with, entry, reach);
        match place {
            Place::Input(i) => {
                warnings.push(format!("{lie}; the input buffer is {} bytes", reach.bytes));
                grow(&mut inputs[*i], reach.bytes, &lie);
            }
            Place::Param(_) => {
                return Err(Error::new(ErrorKind::Metadata, format!("{lie}, more than the weight holds"))
                    .in_file(with.graph_path)
                    .help("the graph, the .params file and the C code come from different exports, and the operator would read past the weight: pass the archive as TVM wrote it"));
            }
            // Linked weights are the C code's own arrays; outputs are placed below.
            Place::Linked(_) | Place::Output(_) | Place::Storage(_) => {}
        }
    }

    // Outputs: an operator's result goes straight into the caller's buffer when
    // no other output shares it; anything else is copied after the last call.
    let output_names = output_names(&with.metadata_outputs, heads.len());
    let mut outputs = Vec::new();
    let mut direct = Vec::new();
    for (index, &entry) in heads.iter().enumerate() {
        let attr = &graph.entries[entry];
        let mut output = Tensor {
            name: output_names[index].clone(),
            dtype: attr.dtype,
            size_bytes: byte_size(&attr.shape, attr.dtype),
            shape: attr.shape.iter().map(|&d| d as u64).collect(),
            source: format!("the graph `{}`, head {index}", with.graph_path),
            padding: 0,
        };
        let stated = (with.metadata_output_bytes.len() == heads.len()).then(|| with.metadata_output_bytes[index]);
        match reached.get(&root[entry]) {
            Some(reach) if size_of(root[entry]) > output.size_bytes => {
                let lie = disagreement(graph, with, root[entry], reach);
                let agrees = match stated {
                    Some(bytes) if bytes == reach.bytes => format!(", as metadata.json says ({bytes} bytes)"),
                    _ => String::new(),
                };
                warnings.push(format!("{lie}; output `{}` is {} bytes{agrees}", output.name, reach.bytes));
                grow(&mut output, size_of(root[entry]), &lie);
            }
            Some(_) => {}
            None => {
                if let Some(bytes) = stated.filter(|&bytes| bytes != output.size_bytes) {
                    return Err(Error::new(
                        ErrorKind::Metadata,
                        format!(
                            "output `{}` is {} bytes in the graph `{}` (head {index}, shape {:?} of {}), but {bytes} bytes in metadata.json, and the code does not show how far the operator writes",
                            output.name, output.size_bytes, with.graph_path, attr.shape, attr.dtype
                        ),
                    )
                    .in_file(with.graph_path)
                    .help("one of these files was edited or comes from another export: restore the graph JSON and metadata.json from the original archive; mlf-build will not guess a buffer size the C code may write past"));
                }
            }
        }
        let r = root[entry];
        let shared = heads.iter().filter(|&&other| root[other] == r).count() > 1;
        if !root_place.contains_key(&r) && !shared {
            root_place.insert(r, Place::Output(index));
            direct.push(index);
            output.padding = buffer_of(r).saturating_sub(output.size_bytes);
        }
        outputs.push(output);
    }

    for (&r, &bytes) in &grown {
        if !root_place.contains_key(&r) && !heads.iter().any(|&head| root[head] == r) {
            warnings.push(format!("{}; its storage is {bytes} bytes", disagreement(graph, with, r, &reached[&r])));
        }
    }

    // Storage: every remaining root and every operator workspace gets a region,
    // shared with others that are not live during the same call.
    let mut demands = liveness(graph, &operators, &root, |r| root_place.contains_key(&r), buffer_of, &heads, &direct);
    let mut workspaces = Vec::new();
    for (step, &node_id) in operators.iter().enumerate() {
        let NodeOp::TvmOp { func_name, .. } = &graph.nodes[node_id].op else { continue };
        // A request the code states is what the allocator takes; the fallback is
        // sized as TVM's allocator asks, rounded to the alignment plus one
        // alignment for the base, as the arena used to be.
        let region = match (with.workspaces.get(func_name), with.default_workspace) {
            (Some(&exact), _) => exact,
            (None, 0) => 0,
            (None, bytes) => checked_round_up(bytes, with.alignment)
                .and_then(|b| b.checked_add(with.alignment))
                .ok_or_else(|| graph_error(format!("operator `{func_name}` states a workspace of {bytes} bytes, too many")))?,
        };
        workspaces.push(region);
        if region > 0 {
            demands.push(Demand { holds: Holds::Workspace(step), bytes: region, live: (step, step) });
        }
    }
    let too_big = |what: &str| graph_error(format!("the graph's {what} overflows 64-bit sizes"));
    let (slots, storage_bytes) = place(&demands, with.alignment).ok_or_else(|| too_big("static storage"))?;
    let tvm_plan_bytes = tvm_plan(graph, &root, |r| root_place.contains_key(&r), buffer_of, &workspaces, with.alignment)
        .ok_or_else(|| too_big("storage by storage id"))?;
    let region_of = |holds: Holds| slots.iter().find(|s| s.holds == holds).map(|s| (s.offset, s.bytes));
    let place_of = |entry: usize| -> Place {
        let r = root[entry];
        match root_place.get(&r) {
            Some(place) => place.clone(),
            None => Place::Storage(region_of(Holds::Tensor(r)).map_or(0, |(offset, _)| offset)),
        }
    };
    for (what, bytes) in [("static storage", storage_bytes), ("weights", blob.len() as u64)] {
        if bytes > u64::from(u32::MAX) {
            return Err(graph_error(format!("the graph's {what} take {bytes} bytes, more than 4 GiB")));
        }
    }

    let mut tensors: Vec<TensorArg> = Vec::new();
    let mut tensor_index = |arg: TensorArg| -> usize {
        match tensors.iter().position(|t| *t == arg) {
            Some(index) => index,
            None => {
                tensors.push(arg);
                tensors.len() - 1
            }
        }
    };
    let describe = |entry: usize, flatten: bool| {
        let attr = &graph.entries[entry];
        let shape = if flatten { vec![attr.shape.iter().fold(1i64, |acc, &dim| acc.saturating_mul(dim))] } else { attr.shape.clone() };
        TensorArg { entry, place: place_of(entry), dtype: attr.dtype, shape }
    };
    let mut calls = Vec::new();
    for (node_id, node) in graph.nodes.iter().enumerate() {
        let NodeOp::TvmOp { func_name, num_outputs, flatten_data, .. } = &node.op else { continue };
        if func_name == NOP {
            continue;
        }
        let what = format!("node {node_id} `{}`: operator", crate::error::printable(&node.name));
        let func_name = CIdent::new(&what, func_name).map_err(|error| error.in_file(with.graph_path))?;
        let first = graph.node_row_ptr[node_id];
        let entries = node.inputs.iter().map(|&r| graph.entry_id(r)).chain(first..first + num_outputs);
        let args = entries.map(|entry| tensor_index(describe(entry, *flatten_data))).collect();
        let workspace = region_of(Holds::Workspace(calls.len()));
        calls.push(Call { node: node_id, func_name, args, workspace });
    }
    let mut copies = Vec::new();
    for (index, &entry) in heads.iter().enumerate() {
        if !direct.contains(&index) {
            let from = tensor_index(describe(entry, false));
            copies.push(CopyOut { output: index, from, bytes: outputs[index].size_bytes });
        }
    }
    let schedule = Schedule { tensors, calls, copies, slots, storage_bytes, tvm_plan_bytes, params: blob, linked_params, lookup_symbol };
    Ok((schedule, inputs, outputs))
}

/// For every storage root some call's code shows its reach into, the most
/// bytes any call reaches, rounded up to whole elements of the root's type:
/// counting only exact reaches, or only upper bounds (`exact` false).
/// A call whose code reads more arguments than the graph passes is refused:
/// it would read past the argument array.
fn code_reach(graph: &Graph, with: &Inputs<'_>, operators: &[usize], root: &[usize], exact: bool) -> Result<BTreeMap<usize, Reached>> {
    let mut reached: BTreeMap<usize, Reached> = BTreeMap::new();
    for &node_id in operators {
        let node = &graph.nodes[node_id];
        let NodeOp::TvmOp { func_name, .. } = &node.op else { continue };
        let Some(reach) = with.reaches.get(func_name) else { continue };
        let first = graph.node_row_ptr[node_id];
        let entries: Vec<usize> = node.inputs.iter().map(|&r| graph.entry_id(r)).chain(first..graph.node_row_ptr[node_id + 1]).collect();
        if reach.bytes.len() > entries.len() {
            return Err(Error::new(
                ErrorKind::Metadata,
                format!(
                    "node {node_id} `{}` passes {} tensors to `{func_name}`, but its code in {} reads {} arguments",
                    crate::error::printable(&node.name),
                    entries.len(),
                    reach.file,
                    reach.bytes.len()
                ),
            )
            .in_file(with.graph_path)
            .help("the graph and the C code come from different exports, and the operator would read past its arguments: pass the archive as TVM wrote it"));
        }
        for (argument, (&entry, bytes)) in entries.iter().zip(&reach.bytes).enumerate() {
            let Some(bytes) = bytes.filter(|reach| reach.exact == exact).map(|reach| reach.bytes) else { continue };
            let element = graph.entries[root[entry]].dtype.size_bytes() as u64;
            let Some(bytes) = bytes.checked_next_multiple_of(element) else { continue };
            let best = reached.entry(root[entry]).or_insert(Reached { bytes, node: node_id, argument });
            if bytes > best.bytes {
                *best = Reached { bytes, node: node_id, argument };
            }
        }
    }
    Ok(reached)
}

/// What the graph states for storage root `r` against what the code reaches.
fn disagreement(graph: &Graph, with: &Inputs<'_>, r: usize, reach: &Reached) -> String {
    let attr = &graph.entries[r];
    let node = &graph.nodes[reach.node];
    let (function, file) = match &node.op {
        NodeOp::TvmOp { func_name, .. } => (func_name.as_str(), with.reaches.get(func_name).map_or("", |c| c.file.as_str())),
        NodeOp::Null => ("", ""),
    };
    format!(
        "the graph `{}` gives entry {r} shape {:?} of {} ({} bytes), but the code of `{function}` in {file}, which node {} `{}` calls with it as argument {}, reaches {} bytes of it",
        with.graph_path,
        attr.shape,
        attr.dtype,
        byte_size(&attr.shape, attr.dtype),
        reach.node,
        crate::error::printable(&node.name),
        reach.argument,
        reach.bytes
    )
}

/// A caller's buffer made as large as the code reaches: `[elements]`, sized and documented from the code.
fn grow(tensor: &mut Tensor, bytes: u64, why: &str) {
    tensor.size_bytes = bytes;
    tensor.shape = vec![bytes / tensor.dtype.size_bytes() as u64];
    tensor.source = format!("the code, not the graph: {why}");
}

/// Nodes that make a call, in graph order: operators other than `__nop`.
fn operator_nodes(graph: &Graph) -> Vec<usize> {
    let is_call = |node: &&crate::input::graph::Node| matches!(&node.op, NodeOp::TvmOp { func_name, .. } if func_name != NOP);
    graph.nodes.iter().enumerate().filter(|(_, node)| is_call(node)).map(|(id, _)| id).collect()
}

/// Something that needs bytes of the storage while calls `live.0..=live.1` run.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Demand {
    holds: Holds,
    bytes: u64,
    live: (usize, usize),
}

/// The storage roots (entries that have no other place) and the calls they are
/// live during: from the call that writes them to the last that reads them, or
/// to the copies after the last call for outputs that are copied. A call's
/// inputs and outputs are all live during it, so an operator never writes
/// over what it reads (only `__nop`s alias, through their root).
fn liveness(
    graph: &Graph,
    operators: &[usize],
    root: &[usize],
    placed: impl Fn(usize) -> bool,
    size_of: impl Fn(usize) -> u64,
    heads: &[usize],
    direct: &[usize],
) -> Vec<Demand> {
    let mut spans: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let mut touch = |entry: usize, step: usize| {
        let r = root[entry];
        if !placed(r) {
            let span = spans.entry(r).or_insert((step, step));
            *span = (span.0.min(step), span.1.max(step));
        }
    };
    for (step, &node_id) in operators.iter().enumerate() {
        let outputs = graph.node_row_ptr[node_id]..graph.node_row_ptr[node_id + 1];
        for entry in graph.nodes[node_id].inputs.iter().map(|&r| graph.entry_id(r)).chain(outputs) {
            touch(entry, step);
        }
    }
    for (index, &entry) in heads.iter().enumerate() {
        if !direct.contains(&index) {
            touch(entry, operators.len());
        }
    }
    spans.into_iter().map(|(r, live)| Demand { holds: Holds::Tensor(r), bytes: size_of(r), live }).collect()
}

/// Places every demand at the lowest aligned offset where it overlaps no
/// demand live during a common call, largest first. `None` on overflow.
fn place(demands: &[Demand], alignment: u64) -> Option<(Vec<Slot>, u64)> {
    let mut order: Vec<&Demand> = demands.iter().collect();
    order.sort_by_key(|d| (Reverse(d.bytes), d.live, d.holds_key()));
    let mut slots: Vec<Slot> = Vec::new();
    let mut end = 0u64;
    for demand in order {
        let (first, last) = demand.live;
        let mut taken: Vec<(u64, u64)> = slots
            .iter()
            .filter(|s| s.live.0 <= last && first <= s.live.1)
            .map(|s| Some((s.offset, s.offset.checked_add(s.bytes)?)))
            .collect::<Option<_>>()?;
        taken.sort_unstable();
        let mut offset = 0u64;
        for (start, stop) in taken {
            if offset.checked_add(demand.bytes)? <= start {
                break;
            }
            offset = offset.max(checked_round_up(stop, alignment)?);
        }
        end = end.max(offset.checked_add(demand.bytes)?);
        slots.push(Slot { holds: demand.holds, offset, bytes: demand.bytes, live: demand.live });
    }
    slots.sort_by_key(|s| (s.offset, s.live));
    Some((slots, checked_round_up(end, alignment)?))
}

impl Demand {
    /// A total order on what a demand holds, for a deterministic plan.
    fn holds_key(&self) -> (u8, usize) {
        match self.holds {
            Holds::Tensor(entry) => (0, entry),
            Holds::Workspace(step) => (1, step),
        }
    }
}

/// TVM's own plan, for comparison: one aligned slot per storage id of the
/// storage roots, plus an arena for the largest operator workspace.
fn tvm_plan(
    graph: &Graph,
    root: &[usize],
    placed: impl Fn(usize) -> bool,
    size_of: impl Fn(usize) -> u64,
    workspaces: &[u64],
    alignment: u64,
) -> Option<u64> {
    let mut slot_bytes: BTreeMap<usize, u64> = BTreeMap::new();
    for (entry, &r) in root.iter().enumerate() {
        if entry == r && !placed(r) {
            let slot = slot_bytes.entry(graph.entries[r].storage_id).or_insert(0);
            *slot = (*slot).max(size_of(r));
        }
    }
    let mut storage = 0u64;
    for bytes in slot_bytes.values() {
        storage = checked_round_up(storage, alignment)?.checked_add(*bytes)?;
    }
    checked_round_up(storage, alignment)?.checked_add(workspaces.iter().copied().max().unwrap_or(0))
}

fn checked_round_up(value: u64, alignment: u64) -> Option<u64> {
    value.checked_next_multiple_of(alignment)
}

/// Where the metadata's storage table disagrees with the graph on the number
/// of storage ids, the id of a bound input or weight, or a model input's size.
/// (Its other sizes are computed before TVM plans the graph and do not
/// describe the graph's storage; 2021 exports also put sizes on the wrong ids.)
fn sids_disagreements(graph: &Graph, with: &Inputs<'_>) -> Vec<String> {
    let mut found = Vec::new();
    if with.sids.is_empty() {
        return found;
    }
    let count = graph.storage_sizes().len();
    if with.sids.len() != count {
        found.push(format!("it lists {} storage ids, the graph uses {count}", with.sids.len()));
    }
    for sid in with.sids {
        let Some(binding) = sid.input_binding.as_deref() else { continue };
        let node = graph.arg_nodes.iter().copied().find(|&n| graph.nodes[n].name == binding);
        let Some(node) = node else {
            found.push(format!("storage id {} is bound to `{binding}`, which is not an input of the graph", sid.storage_id));
            continue;
        };
        let entry = graph.entry_id(EntryRef { node, index: 0 });
        let attr = &graph.entries[entry];
        if attr.storage_id as u64 != u64::from(sid.storage_id) {
            found.push(format!("`{binding}` has storage id {} in the graph, {} in the metadata", attr.storage_id, sid.storage_id));
            continue;
        }
        let is_weight =
            with.params.iter().any(|p| p.name == binding) || with.linked.as_ref().is_some_and(|(_, sids)| sids.contains(&attr.storage_id));
        let bytes = byte_size(&attr.shape, attr.dtype);
        if !is_weight && bytes != sid.size_bytes {
            found.push(format!("input `{binding}` is {bytes} bytes in the graph, {} in the metadata", sid.size_bytes));
        }
    }
    found
}

/// The graph's inputs (arg nodes that are not weights) are the ones the metadata names, when it names any.
fn check_inputs(inputs: &[Tensor], with: &Inputs<'_>) -> Result<()> {
    if with.metadata_inputs.is_empty() {
        return Ok(());
    }
    let mut graph_names: Vec<&str> = inputs.iter().map(|t| t.name.as_str()).collect();
    let mut metadata_names: Vec<&str> = with.metadata_inputs.iter().map(String::as_str).collect();
    graph_names.sort_unstable();
    metadata_names.sort_unstable();
    if graph_names == metadata_names {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Metadata,
        format!("the graph's inputs that are not weights are {graph_names:?}, but metadata.json lists the model inputs {metadata_names:?}"),
    )
    .in_file(with.params_path)
    .help("every weight of the graph must be in the .params file or linked into the C code; pass the archive's original .params file, written with this graph, or the archive cannot be built"))
}

/// Output names from the metadata when it has one per head, else `output` / `output<i>`.
fn output_names(metadata: &[String], count: usize) -> Vec<String> {
    if metadata.len() == count {
        return metadata.to_vec();
    }
    if count == 1 {
        return vec!["output".to_string()];
    }
    (0..count).map(|i| format!("output{i}")).collect()
}

fn byte_size(shape: &[i64], dtype: DType) -> u64 {
    // `graph::parse` rejected shapes whose size overflows.
    shape.iter().fold(dtype.size_bytes() as u64, |acc, &d| acc.saturating_mul(d as u64))
}

fn byte_size_of(graph: &Graph, entry: usize) -> u64 {
    let attr = &graph.entries[entry];
    byte_size(&attr.shape, attr.dtype)
}

#[cfg(test)]
mod tests {
    use crate::json::{json, Value};

    use super::*;
    use crate::input::graph;

    const GRAPH: &str = "executor-config/graph/default.graph";
    const PARAMS: &str = "parameters/default.params";

    /// `y = b(reshape(a(x, p0)))`: `a` writes storage 2, the reshape is a
    /// `__nop` in the same storage, and `b` writes storage 0, which the input had.
    fn sample() -> Value {
        let op = |name: &str, func: &str, inputs: Value, flatten: &str| {
            json!({"op": "tvm_op", "name": name, "inputs": inputs,
                   "attrs": {"func_name": func, "num_inputs": inputs.as_array().unwrap().len().to_string(), "num_outputs": "1", "flatten_data": flatten}})
        };
        json!({
            "nodes": [
                {"op": "null", "name": "x", "inputs": []},
                {"op": "null", "name": "p0", "inputs": []},
                op("a", "tvmgen_default_a", json!([[0, 0, 0], [1, 0, 0]]), "0"),
                op("reshape", "__nop", json!([[2, 0, 0]]), "0"),
                op("b", "tvmgen_default_b", json!([[3, 0, 0]]), "1"),
            ],
            "arg_nodes": [0, 1],
            "heads": [[4, 0, 0]],
            "node_row_ptr": [0, 1, 2, 3, 4, 5],
            "attrs": {
                "storage_id": ["list_int", [0, 1, 2, 2, 0]],
                "shape": ["list_shape", [[2, 3], [3], [2, 3], [6], [2, 3]]],
                "dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32"]]
            }
        })
    }

    fn p0() -> Param {
        Param { name: "p0".to_string(), dtype: DType::parse("float32").unwrap(), shape: vec![3], data: vec![7; 12], device_type: 1 }
    }

    fn sid(storage_id: u32, size_bytes: u64, binding: Option<&str>) -> Storage {
        Storage { storage_id, size_bytes, input_binding: binding.map(str::to_string) }
    }

    /// Inputs with no storage table, metadata names or workspaces, 16-byte aligned.
    /// What the code of `function` in `default_lib1.c` reaches of each argument, exactly or as an upper bound.
    fn code_reach(function: &str, bytes: &[Option<u64>], exact: bool) -> (String, CodeReach) {
        let bytes = bytes.iter().map(|bytes| bytes.map(|bytes| ArgumentReach { bytes, exact })).collect();
        (function.to_string(), CodeReach { file: "codegen/host/src/default_lib1.c".to_string(), bytes })
    }

    fn plain_inputs(params: &[Param]) -> Inputs<'_> {
        Inputs {
            graph_path: GRAPH,
            params_path: PARAMS,
            params,
            linked: None,
            sids: &[],
            metadata_inputs: Vec::new(),
            metadata_outputs: Vec::new(),
            metadata_output_bytes: Vec::new(),
            reaches: BTreeMap::new(),
            workspaces: BTreeMap::new(),
            default_workspace: 0,
            alignment: 16,
        }
    }

    fn run(value: &Value, params: &[Param], sids: &[Storage], linked: Option<Vec<usize>>) -> Result<(Schedule, Vec<Tensor>, Vec<Tensor>)> {
        let graph = graph::parse(value.to_string().as_bytes(), GRAPH).unwrap();
        let with = Inputs { linked: linked.map(|sids| ("_lookup_linked_param".to_string(), sids)), sids, ..plain_inputs(params) };
        schedule(&graph, &with, &mut Warnings::default())
    }

    fn places(schedule: &Schedule) -> Vec<(usize, Place)> {
        schedule.tensors.iter().map(|t| (t.entry, t.place.clone())).collect()
    }

    #[test]
    fn places_inputs_weights_storage_and_outputs() {
        let sids = [sid(0, 24, Some("x")), sid(1, 999, Some("p0")), sid(2, 24, None)];
        let (schedule, inputs, outputs) = run(&sample(), &[p0()], &sids, None).unwrap();
        assert_eq!(inputs.iter().map(|t| (t.name.as_str(), t.size_bytes, t.shape.clone())).collect::<Vec<_>>(), [("x", 24, vec![2, 3])]);
        assert_eq!(outputs.iter().map(|t| (t.name.as_str(), t.size_bytes)).collect::<Vec<_>>(), [("output", 24)]);
        // Storage 0 held the input and holds the output: both use the caller's buffers, so only `a`'s result
        // (and its reshape) takes storage, live from `a` to `b`.
        assert_eq!(schedule.slots, [Slot { holds: Holds::Tensor(2), offset: 0, bytes: 24, live: (0, 1) }]);
        assert_eq!((schedule.storage_bytes, schedule.tvm_plan_bytes), (32, 32));
        assert_eq!(schedule.params, vec![7; 12]);
        assert_eq!(
            places(&schedule),
            [(0, Place::Input(0)), (1, Place::Param(0)), (2, Place::Storage(0)), (3, Place::Storage(0)), (4, Place::Output(0))]
        );
        // The `__nop` is not called; `b` flattens its arguments.
        assert_eq!(
            schedule.calls.iter().map(|c| (c.func_name.as_str(), c.args.clone())).collect::<Vec<_>>(),
            [("tvmgen_default_a", vec![0, 1, 2]), ("tvmgen_default_b", vec![3, 4])]
        );
        assert_eq!(schedule.tensors[3].shape, [6]);
        assert!(schedule.copies.is_empty());
    }

    #[test]
    fn shared_or_passthrough_outputs_are_copied() {
        let mut value = sample();
        value["heads"] = json!([[4, 0, 0], [4, 0, 0], [0, 0, 0]]);
        let (schedule, _, outputs) = run(&value, &[p0()], &[], None).unwrap();
        assert_eq!(outputs.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["output0", "output1", "output2"]);
        // Two heads share `b`'s result, so it lives in storage until the copies, beside `a`'s result it is
        // computed from; each head and the input are copied out.
        let regions: Vec<(Holds, u64, (usize, usize))> = schedule.slots.iter().map(|s| (s.holds, s.offset, s.live)).collect();
        assert_eq!(regions, [(Holds::Tensor(2), 0, (0, 1)), (Holds::Tensor(4), 32, (1, 2))]);
        let copies: Vec<(usize, Place, u64)> =
            schedule.copies.iter().map(|c| (c.output, schedule.tensors[c.from].place.clone(), c.bytes)).collect();
        assert_eq!(copies, [(0, Place::Storage(32), 24), (1, Place::Storage(32), 24), (2, Place::Input(0), 24)]);
    }

    #[test]
    fn linked_weights_are_looked_up_by_storage_id() {
        let (schedule, inputs, _) = run(&sample(), &[p0()], &[], Some(vec![1])).unwrap();
        assert_eq!(schedule.tensors[1].place, Place::Linked(1));
        assert_eq!((schedule.linked_params, schedule.params.len(), inputs.len()), (1, 0, 1));
        assert_eq!(schedule.lookup_symbol.as_deref(), Some("_lookup_linked_param"));
    }

    #[test]
    fn storage_table_disagreements_are_reported_not_refused() {
        let cases: &[(&[Storage], &str)] = &[
            (&[sid(0, 24, Some("x"))], "it lists 1 storage ids, the graph uses 3"),
            (&[sid(0, 24, None), sid(1, 12, None), sid(2, 24, Some("x"))], "`x` has storage id 0 in the graph, 2 in the metadata"),
            (&[sid(0, 20, Some("x")), sid(1, 12, None), sid(2, 24, None)], "input `x` is 24 bytes in the graph, 20 in the metadata"),
            (
                &[sid(0, 24, Some("y")), sid(1, 12, None), sid(2, 24, None)],
                "storage id 0 is bound to `y`, which is not an input of the graph",
            ),
        ];
        let graph = graph::parse(sample().to_string().as_bytes(), GRAPH).unwrap();
        for (sids, expected) in cases {
            let params = [p0()];
            let with = Inputs { sids, ..plain_inputs(&params) };
            assert_eq!(sids_disagreements(&graph, &with), [expected.to_string()]);
            let mut warnings = Warnings::default();
            schedule(&graph, &with, &mut warnings).unwrap();
            assert_eq!(warnings.0.len(), 1, "{:?}", warnings.0);
            assert!(warnings.0[0].contains(expected), "{:?}", warnings.0);
        }
    }

    #[test]
    fn weights_must_fit_their_entries() {
        let short = Param { data: vec![0; 8], shape: vec![2], ..p0() };
        let error = run(&sample(), &[short], &[], None).unwrap_err();
        assert_eq!(error.file(), Some(PARAMS));
        assert!(error.to_string().contains("weight `p0` is 8 bytes of float32, but the graph"), "{error}");
    }

    #[test]
    fn missing_weights_show_as_unexpected_inputs() {
        let graph = graph::parse(sample().to_string().as_bytes(), GRAPH).unwrap();
        let with = Inputs { metadata_inputs: vec!["x".to_string()], metadata_outputs: vec!["y".to_string()], ..plain_inputs(&[]) };
        let error = schedule(&graph, &with, &mut Warnings::default()).unwrap_err();
        assert!(error.to_string().contains(r#"are ["p0", "x"], but metadata.json lists the model inputs ["x"]"#), "{error}");
    }

    /// The corpus's cnn graph with its operators' workspaces from their code:
    /// the largest workspace shares no byte with the first convolution's
    /// output, and the rest fit around them, below TVM's own plan.
    #[test]
    fn cnn_f32_graph_schedule() {
        let archive = "tvm-0.18/cnn_f32-graph";
        let Some(bytes) = graph::tests::corpus_member(archive, GRAPH) else { return };
        let graph = graph::parse(&bytes, GRAPH).unwrap();
        let params = crate::input::params::parse(&graph::tests::corpus_member(archive, PARAMS).unwrap(), PARAMS).unwrap();
        // What the operators' code requests (TVMBackendAllocWorkspace in default_lib1.c).
        let workspaces = [("conv2d_nn_relu", 3888), ("conv2d_nn_relu_1", 3200)];
        let with = Inputs {
            metadata_inputs: vec!["image".to_string()],
            metadata_outputs: vec!["output".to_string()],
            workspaces: workspaces.iter().map(|(f, b)| (format!("tvmgen_default_fused_nn_{f}"), *b)).collect(),
            ..plain_inputs(&params)
        };
        let (schedule, inputs, outputs) = schedule(&graph, &with, &mut Warnings::default()).unwrap();
        assert_eq!((inputs[0].name.as_str(), inputs[0].shape.clone()), ("image", vec![1, 16, 16, 3]));
        assert_eq!((outputs[0].name.as_str(), outputs[0].size_bytes), ("output", 20));
        assert_eq!(schedule.calls.len(), 6, "seven operators, one a __nop");
        // TVM: storage ids 2 (8,192 B) and 3 (2,048 B) plus an arena for the largest workspace.
        assert_eq!(schedule.tvm_plan_bytes, 10240 + 3888);
        // The first call's output (8,192 B) and workspace are the peak.
        assert_eq!(schedule.storage_bytes, 8192 + 3888);
        let workspaces: Vec<Option<u64>> = schedule.calls.iter().map(|c| c.workspace.map(|(_, bytes)| bytes)).collect();
        assert_eq!(workspaces, [Some(3888), None, Some(3200), None, None, None]);
        assert_sound(&graph, &schedule);
        // Three weights at 16-byte offsets.
        assert_eq!(schedule.params.len(), 864 + 4608 + 5120);
        assert!(schedule.copies.is_empty());
    }

    /// Runs the schedule over the storage byte by byte, each byte tagged with
    /// the entry that last wrote it (or a call's workspace): every operator
    /// must read its storage inputs as their producers wrote them, and every
    /// copied output must still hold its producer's bytes after the last call.
    fn assert_sound(graph: &Graph, schedule: &Schedule) {
        #[derive(Clone, Copy, PartialEq, Debug)]
        enum Tag {
            Free,
            Entry(usize),
            Workspace(usize),
        }
        // The entry that computes each entry's bytes: itself, or through `__nop`s the one it aliases.
        let mut producer: Vec<usize> = (0..graph.entries.len()).collect();
        for (node_id, node) in graph.nodes.iter().enumerate() {
            if matches!(&node.op, NodeOp::TvmOp { func_name, .. } if func_name == NOP) {
                producer[graph.node_row_ptr[node_id]] = producer[graph.entry_id(node.inputs[0])];
            }
        }
        let mut bytes = vec![Tag::Free; schedule.storage_bytes as usize];
        let range = |arg: &TensorArg| match arg.place {
            Place::Storage(offset) => Some(offset as usize..(offset + byte_size_of(graph, arg.entry)) as usize),
            _ => None,
        };
        let check = |bytes: &[Tag], arg: &TensorArg, when: &str| {
            if let Some(range) = range(arg) {
                let expected = Tag::Entry(producer[arg.entry]);
                assert!(bytes[range.clone()].iter().all(|&t| t == expected), "{when}: entry {} at {range:?} was overwritten", arg.entry);
            }
        };
        for (step, call) in schedule.calls.iter().enumerate() {
            let first_output = graph.node_row_ptr[call.node];
            let (reads, writes): (Vec<&TensorArg>, Vec<&TensorArg>) =
                call.args.iter().map(|&a| &schedule.tensors[a]).partition(|t| t.entry < first_output);
            for arg in &reads {
                check(&bytes, arg, &format!("call {step}"));
            }
            if let Some((offset, len)) = call.workspace {
                let region = offset as usize..(offset + len) as usize;
                assert!(region.end <= bytes.len(), "workspace of call {step} outside the storage");
                for arg in reads.iter().chain(&writes) {
                    if let Some(range) = range(arg) {
                        assert!(
                            range.end <= region.start || region.end <= range.start,
                            "workspace of call {step} overlaps entry {}",
                            arg.entry
                        );
                    }
                }
                bytes[region].fill(Tag::Workspace(step));
            }
            for arg in &writes {
                if let Some(range) = range(arg) {
                    bytes[range].fill(Tag::Entry(arg.entry));
                }
            }
            for arg in &reads {
                check(&bytes, arg, &format!("after call {step}, an output overlapping an input"));
            }
        }
        for copy in &schedule.copies {
            check(&bytes, &schedule.tensors[copy.from], "copy");
        }
        for slot in &schedule.slots {
            assert_eq!(slot.offset % 16, 0, "{slot:?} is not aligned");
            assert!(slot.offset + slot.bytes <= schedule.storage_bytes, "{slot:?} outside the storage");
        }
    }

    /// A graph of `ops` random operators (a fixed generator, so the test is
    /// repeatable): each reads one or two earlier entries or weights, some are
    /// `__nop`s, some need workspace, and some results are outputs twice.
    fn random_graph(seed: u64, ops: usize) -> (Value, BTreeMap<String, u64>, Vec<Param>) {
        let mut state = seed;
        let mut next = |bound: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % bound
        };
        let mut nodes = vec![json!({"op": "null", "name": "x", "inputs": []}), json!({"op": "null", "name": "w", "inputs": []})];
        let mut shapes = vec![vec![4u64], vec![2u64]];
        let mut workspaces = BTreeMap::new();
        for op in 0..ops {
            let pick = |r: u64| json!([r, 0, 0]);
            let elements = 1 + next(40);
            let is_nop = op > 0 && next(4) == 0;
            let (func, inputs, shape) = if is_nop {
                let input = 2 + next(op as u64);
                (NOP.to_string(), vec![pick(input)], vec![1, shapes[input as usize].iter().product()])
            } else {
                let count = 1 + next(2);
                let inputs = (0..count).map(|_| pick(next(nodes.len() as u64))).collect();
                let func = format!("op{op}");
                if next(2) == 0 {
                    // As inspect reports them: each request rounded to the alignment.
                    workspaces.insert(func.clone(), (1 + next(100)).next_multiple_of(16));
                }
                (func, inputs, vec![elements])
            };
            let inputs = Value::Array(inputs);
            let count = inputs.as_array().unwrap().len().to_string();
            nodes.push(json!({"op": "tvm_op", "name": format!("n{op}"), "inputs": inputs,
                              "attrs": {"func_name": func, "num_inputs": count, "num_outputs": "1", "flatten_data": "0"}}));
            shapes.push(shape);
        }
        let last = nodes.len() - 1;
        let heads = json!([[last, 0, 0], [2 + next(ops as u64), 0, 0], [last, 0, 0]]);
        let n = nodes.len();
        let value = json!({
            "nodes": nodes,
            "arg_nodes": [0, 1],
            "heads": heads,
            "node_row_ptr": (0..=n).collect::<Vec<_>>(),
            "attrs": {
                "storage_id": ["list_int", (0..n).collect::<Vec<_>>()],
                "shape": ["list_shape", shapes],
                "dltype": ["list_str", vec!["float32"; n]]
            }
        });
        let w = Param { name: "w".to_string(), dtype: DType::parse("float32").unwrap(), shape: vec![2], data: vec![1; 8], device_type: 1 };
        (value, workspaces, vec![w])
    }

    #[test]
    fn planned_storage_never_overwrites_live_tensors() {
        for seed in 0..200 {
            let (value, workspaces, params) = random_graph(seed, 3 + (seed as usize % 30));
            let graph = graph::parse(value.to_string().as_bytes(), GRAPH).unwrap();
            let with = Inputs { workspaces, ..plain_inputs(&params) };
            let (schedule, _, _) = schedule(&graph, &with, &mut Warnings::default()).unwrap();
            assert_sound(&graph, &schedule);
            assert!(schedule.storage_bytes <= schedule.tvm_plan_bytes, "seed {seed}: worse than one slot per entry");
        }
    }

    /// A `__nop` keeps its input's bytes alive for as long as the reshape is read,
    /// and the reshape is never given bytes of its own.
    #[test]
    fn nop_aliases_extend_their_input_lifetime() {
        let op = |name: &str, func: &str, inputs: Value| {
            json!({"op": "tvm_op", "name": name, "inputs": inputs,
                   "attrs": {"func_name": func, "num_inputs": inputs.as_array().unwrap().len().to_string(), "num_outputs": "1", "flatten_data": "0"}})
        };
        // a = f(x); r = reshape(a); b = g(x); c = h(b); y = k(r, c)
        let value = json!({
            "nodes": [
                {"op": "null", "name": "x", "inputs": []},
                op("a", "f", json!([[0, 0, 0]])),
                op("r", NOP, json!([[1, 0, 0]])),
                op("b", "g", json!([[0, 0, 0]])),
                op("c", "h", json!([[3, 0, 0]])),
                op("y", "k", json!([[2, 0, 0], [4, 0, 0]])),
            ],
            "arg_nodes": [0],
            "heads": [[5, 0, 0]],
            "node_row_ptr": [0, 1, 2, 3, 4, 5, 6],
            "attrs": {
                "storage_id": ["list_int", [0, 1, 1, 2, 3, 4]],
                "shape": ["list_shape", [[8], [8], [2, 4], [8], [8], [8]]],
                "dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32", "float32"]]
            }
        });
        let (schedule, _, _) = run(&value, &[], &[], None).unwrap();
        let regions: Vec<(Holds, (usize, usize))> = schedule.slots.iter().map(|s| (s.holds, s.live)).collect();
        // `a` (entry 1) is live from f to k through its reshape; `b` dies at h, so `c` cannot take its bytes
        // (h reads b while writing c) but neither may take a's.
        assert!(regions.contains(&(Holds::Tensor(1), (0, 3))), "{regions:?}");
        assert!(!schedule.slots.iter().any(|s| s.holds == Holds::Tensor(2)), "the reshape got storage of its own");
        let place = |entry: usize| schedule.tensors.iter().find(|t| t.entry == entry).map(|t| t.place.clone());
        assert_eq!(place(2), place(1));
        assert_eq!(schedule.storage_bytes, 3 * 32);
        let graph = graph::parse(value.to_string().as_bytes(), GRAPH).unwrap();
        assert_sound(&graph, &schedule);
    }

    /// Where the code reaches further than the graph states, the buffers are
    /// as large as the code reaches; a weight read past its end, or more
    /// arguments read than the graph passes, are refused.
    #[test]
    fn buffers_are_as_large_as_the_code_reaches() {
        let graph = graph::parse(sample().to_string().as_bytes(), GRAPH).unwrap();
        let params = [p0()];
        let reach = |function: &str, bytes: &[Option<u64>]| code_reach(function, bytes, true);
        // `a` reads 40 bytes of x (24 stated) and writes 30 into its result (24, rounded up to 32);
        // `b` writes 48 into the output (24).
        let reaches = [reach("tvmgen_default_a", &[Some(40), Some(12), Some(30)]), reach("tvmgen_default_b", &[None, Some(48)])];
        let with = Inputs { reaches: reaches.into_iter().collect(), metadata_output_bytes: vec![48], ..plain_inputs(&params) };
        let (plan, inputs, outputs) = schedule(&graph, &with, &mut Warnings::default()).unwrap();
        assert_eq!((inputs[0].size_bytes, inputs[0].shape.clone()), (40, vec![10]));
        assert_eq!((outputs[0].size_bytes, outputs[0].shape.clone()), (48, vec![12]));
        assert!(outputs[0].source.starts_with("the code, not the graph: the graph `executor-config/graph/default.graph` gives entry 4"));
        assert_eq!(plan.slots, [Slot { holds: Holds::Tensor(2), offset: 0, bytes: 32, live: (0, 1) }]);

        let past_weight = [reach("tvmgen_default_a", &[None, Some(16), None])];
        let with = Inputs { reaches: past_weight.into_iter().collect(), ..plain_inputs(&params) };
        let error = schedule(&graph, &with, &mut Warnings::default()).unwrap_err().to_string();
        assert!(error.contains("gives entry 1 shape [3] of float32 (12 bytes), but the code of `tvmgen_default_a`"), "{error}");
        assert!(error.contains("reaches 16 bytes of it, more than the weight holds"), "{error}");

        let too_many = [reach("tvmgen_default_b", &[None, None, None])];
        let with = Inputs { reaches: too_many.into_iter().collect(), ..plain_inputs(&params) };
        let error = schedule(&graph, &with, &mut Warnings::default()).unwrap_err().to_string();
        assert!(
            error.contains(
                "node 4 `b` passes 2 tensors to `tvmgen_default_b`, but its code in codegen/host/src/default_lib1.c reads 3 arguments"
            ),
            "{error}"
        );

        // With no code to tell, an output size metadata.json and the graph disagree on is refused.
        let with = Inputs { metadata_output_bytes: vec![48], ..plain_inputs(&params) };
        let error = schedule(&graph, &with, &mut Warnings::default()).unwrap_err().to_string();
        assert!(error.contains("output `output` is 24 bytes in the graph") && error.contains("but 48 bytes in metadata.json"), "{error}");
    }

    /// Where the code's reach is only an upper bound past what the graph
    /// states, the graph's sizes stand: inputs and outputs get padding (the
    /// glue's copies), weights zeros after their end, storage the bound.
    #[test]
    fn upper_bounds_pad_and_keep_the_graphs_sizes() {
        let graph = graph::parse(sample().to_string().as_bytes(), GRAPH).unwrap();
        let params = [p0()];
        let bound = |function: &str, bytes: &[Option<u64>]| code_reach(function, bytes, false);
        let reaches = [bound("tvmgen_default_a", &[Some(40), Some(16), Some(30)]), bound("tvmgen_default_b", &[None, Some(48)])];
        let with = Inputs { reaches: reaches.into_iter().collect(), metadata_output_bytes: vec![24], ..plain_inputs(&params) };
        let (plan, inputs, outputs) = schedule(&graph, &with, &mut Warnings::default()).unwrap();
        assert_eq!((inputs[0].size_bytes, inputs[0].shape.clone(), inputs[0].padding), (24, vec![2, 3], 16));
        assert_eq!((outputs[0].size_bytes, outputs[0].shape.clone(), outputs[0].padding), (24, vec![2, 3], 24));
        assert!(outputs[0].source.starts_with("the graph"), "{}", outputs[0].source);
        assert_eq!(plan.params.len(), 16, "the weight's 12 bytes and 4 of padding");
        assert_eq!(plan.slots, [Slot { holds: Holds::Tensor(2), offset: 0, bytes: 32, live: (0, 1) }]);
        assert_sound(&graph, &plan);
    }

    /// Each operator's workspace is a region not live with anything its call
    /// touches; workspaces of different calls share bytes.
    #[test]
    fn workspaces_share_bytes_not_live_during_their_call() {
        let value = sample();
        let graph = graph::parse(value.to_string().as_bytes(), GRAPH).unwrap();
        let params = [p0()];
        let with = Inputs {
            workspaces: [("tvmgen_default_b".to_string(), 8)].into_iter().collect(),
            default_workspace: 100,
            ..plain_inputs(&params)
        };
        let (schedule, _, _) = schedule(&graph, &with, &mut Warnings::default()).unwrap();
        // a's workspace (unlisted: the default, 100 -> 112 + 16) comes first, a's result (read by b) after
        // it; b's (8, as its code requests) takes the bytes of a's workspace.
        let workspaces: Vec<Option<(u64, u64)>> = schedule.calls.iter().map(|c| c.workspace).collect();
        assert_eq!(workspaces, [Some((0, 128)), Some((0, 8))]);
        assert_eq!(schedule.tensors[2].place, Place::Storage(128));
        assert_eq!((schedule.storage_bytes, schedule.tvm_plan_bytes), (160, 32 + 128));
        assert_sound(&graph, &schedule);
    }
}
