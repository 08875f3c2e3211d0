//! The graph executor's JSON: operator nodes, their outputs ("entries") and
//! the storage the entries share.
//!
//! Parsed from `json::Value` by hand rather than derived, so every
//! error can say which node or entry is wrong and how.

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::json::{self, Map, Value};

/// What to do about a graph JSON that cannot be read.
const GRAPH_DAMAGED: &str = "the graph JSON is damaged, and mlf-build plans every call from it: pass the archive's original file";

/// A validated graph: every index in it is in range.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Graph {
    /// In execution order: inputs refer only to earlier nodes.
    pub nodes: Vec<Node>,
    /// The `null` nodes fed from outside: model inputs and weights.
    pub arg_nodes: Vec<usize>,
    /// The model outputs.
    pub heads: Vec<EntryRef>,
    /// Entry id of each node's first output; one extra element holds the entry count.
    pub node_row_ptr: Vec<usize>,
    /// Per entry id.
    pub entries: Vec<EntryAttr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub name: String,
    pub op: NodeOp,
    pub inputs: Vec<EntryRef>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NodeOp {
    /// An input or a weight.
    Null,
    /// A call of an operator function exported by the generated code.
    TvmOp { func_name: String, num_inputs: usize, num_outputs: usize, flatten_data: bool },
}

/// Output `index` of node `node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryRef {
    pub node: usize,
    pub index: usize,
}

/// What the graph says about one entry (one node output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryAttr {
    pub storage_id: usize,
    pub shape: Vec<i64>,
    pub dtype: DType,
    /// DLPack device type; 1 (CPU) when the graph does not say.
    pub device_index: i32,
}

impl Node {
    fn num_outputs(&self) -> usize {
        match self.op {
            NodeOp::Null => 1,
            NodeOp::TvmOp { num_outputs, .. } => num_outputs,
        }
    }
}

impl Graph {
    pub fn entry_id(&self, r: EntryRef) -> usize {
        self.node_row_ptr[r.node] + r.index
    }

    /// The arg nodes that are not weights, in `arg_nodes` order: the model inputs.
    #[cfg(test)]
    pub fn input_nodes(&self, param_names: &[&str]) -> Vec<usize> {
        let is_param = |node: usize| param_names.contains(&self.nodes[node].name.as_str());
        self.arg_nodes.iter().copied().filter(|&node| !is_param(node)).collect()
    }

    /// Entry ids of the model outputs, in order.
    pub fn outputs(&self) -> Vec<usize> {
        self.heads.iter().map(|&r| self.entry_id(r)).collect()
    }

    /// Bytes of each storage id: the largest entry placed in it.
    pub fn storage_sizes(&self) -> Vec<u64> {
        let mut sizes = Vec::new();
        for entry in &self.entries {
            if sizes.len() <= entry.storage_id {
                sizes.resize(entry.storage_id + 1, 0);
            }
            // `parse` rejected entries whose size overflows.
            let bytes = byte_size(&entry.shape, entry.dtype).unwrap_or(u64::MAX);
            sizes[entry.storage_id] = sizes[entry.storage_id].max(bytes);
        }
        sizes
    }
}

/// Parses and validates graph executor JSON; `file` names it in errors.
pub(crate) fn parse(bytes: &[u8], file: &str) -> Result<Graph> {
    let invalid = |message: String| Error::new(ErrorKind::Metadata, message).in_file(file).help(GRAPH_DAMAGED);
    let root = json::parse(bytes).map_err(|e| invalid(format!("not valid JSON: {e}")).with_source(e))?;
    from_json(&root).map_err(invalid)
}

/// A reason the graph is invalid; `parse` adds the file and advice.
type Check<T> = std::result::Result<T, String>;

fn from_json(root: &Value) -> Check<Graph> {
    let root = as_object(root).map_err(|m| format!("the graph: {m}"))?;
    let nodes = get(root, "nodes", as_array)?.iter().enumerate().map(|(i, node)| parse_node(i, node)).collect::<Check<Vec<_>>>()?;

    for (i, node) in nodes.iter().enumerate() {
        for (k, &input) in node.inputs.iter().enumerate() {
            check_ref(input, &nodes, i).map_err(|m| format!("{}: input {k}: {m}", describe(i, &nodes)))?;
        }
    }

    let arg_nodes = get(root, "arg_nodes", as_index_list)?;
    for (k, &arg) in arg_nodes.iter().enumerate() {
        let Some(node) = nodes.get(arg) else {
            return Err(format!("arg_nodes[{k}] is node {arg}, but the graph has {} nodes", nodes.len()));
        };
        if node.op != NodeOp::Null {
            return Err(format!("arg_nodes[{k}] is {}, an operator, not an input", describe(arg, &nodes)));
        }
        if arg_nodes[..k].contains(&arg) {
            return Err(format!("arg_nodes lists {} twice", describe(arg, &nodes)));
        }
    }

    let heads = get(root, "heads", as_array)?
        .iter()
        .enumerate()
        .map(|(k, head)| {
            let r = as_entry_ref(head).map_err(|m| format!("heads[{k}]: {m}"))?;
            check_ref(r, &nodes, nodes.len()).map_err(|m| format!("heads[{k}]: {m}"))?;
            Ok(r)
        })
        .collect::<Check<Vec<_>>>()?;
    if heads.is_empty() {
        return Err("heads is empty: the graph has no outputs".to_string());
    }

    let node_row_ptr = match root.get("node_row_ptr") {
        Some(value) => {
            let ptr = as_index_list(value).map_err(|m| format!("`node_row_ptr`: {m}"))?;
            check_row_ptr(&ptr, &nodes)?;
            ptr
        }
        // Graphs written before node_row_ptr existed: one row per output.
        None => {
            let mut ptr = vec![0];
            let mut total = 0usize;
            for node in &nodes {
                total = total.checked_add(node.num_outputs()).ok_or("the graph has more entries than fit in memory")?;
                ptr.push(total);
            }
            ptr
        }
    };

    let attrs = get(root, "attrs", as_object)?;
    let entries = parse_entries(attrs, &node_row_ptr, &nodes)?;
    Ok(Graph { nodes, arg_nodes, heads, node_row_ptr, entries })
}

fn parse_node(i: usize, value: &Value) -> Check<Node> {
    let obj = as_object(value).map_err(|m| format!("node {i}: {m}"))?;
    let name = get(obj, "name", as_str).map_err(|m| format!("node {i}: {m}"))?;
    let at = format!("node {i} `{name}`");
    let op = match get(obj, "op", as_str).map_err(|m| format!("{at}: {m}"))? {
        "null" => NodeOp::Null,
        "tvm_op" => parse_tvm_op(obj).map_err(|m| format!("{at}: {m}"))?,
        other => return Err(format!("{at}: unknown op {other:?}; expected \"null\" or \"tvm_op\"")),
    };
    let inputs = get(obj, "inputs", as_array)
        .map_err(|m| format!("{at}: {m}"))?
        .iter()
        .enumerate()
        .map(|(k, input)| as_entry_ref(input).map_err(|m| format!("{at}: input {k}: {m}")))
        .collect::<Check<Vec<_>>>()?;
    match op {
        NodeOp::Null if !inputs.is_empty() => {
            return Err(format!("{at}: a null node (an input or weight) has {} inputs", inputs.len()));
        }
        NodeOp::TvmOp { num_inputs, .. } if num_inputs != inputs.len() => {
            return Err(format!("{at}: attrs say num_inputs is {num_inputs}, but it lists {} inputs", inputs.len()));
        }
        _ => {}
    }
    Ok(Node { name: name.to_string(), op, inputs })
}

fn parse_tvm_op(node: &Map) -> Check<NodeOp> {
    let attrs = get(node, "attrs", as_object)?;
    let in_attrs = |m: String| format!("attrs: {m}");
    let func_name = get(attrs, "func_name", as_str).map_err(in_attrs)?.to_string();
    let num_inputs = get(attrs, "num_inputs", as_count).map_err(in_attrs)?;
    let num_outputs = get(attrs, "num_outputs", as_count).map_err(in_attrs)?;
    let flatten_data = get(attrs, "flatten_data", as_flag).map_err(in_attrs)?;
    if num_outputs == 0 {
        return Err("attrs say num_outputs is 0".to_string());
    }
    Ok(NodeOp::TvmOp { func_name, num_inputs, num_outputs, flatten_data })
}

/// `r` names an existing output of a node before node `before`.
fn check_ref(r: EntryRef, nodes: &[Node], before: usize) -> Check<()> {
    let Some(node) = nodes.get(r.node) else {
        return Err(format!("refers to node {}, but the graph has {} nodes", r.node, nodes.len()));
    };
    if r.node >= before {
        return Err(format!("refers to {}, which does not come before it", describe(r.node, nodes)));
    }
    if r.index >= node.num_outputs() {
        return Err(format!("refers to output {} of {}, which has {} outputs", r.index, describe(r.node, nodes), node.num_outputs()));
    }
    Ok(())
}

fn check_row_ptr(ptr: &[usize], nodes: &[Node]) -> Check<()> {
    if ptr.len() != nodes.len() + 1 {
        return Err(format!("node_row_ptr has {} items; expected one per node plus one ({})", ptr.len(), nodes.len() + 1));
    }
    if ptr[0] != 0 {
        return Err(format!("node_row_ptr starts at {}, not 0", ptr[0]));
    }
    for (i, node) in nodes.iter().enumerate() {
        let rows = ptr[i + 1].checked_sub(ptr[i]);
        if rows != Some(node.num_outputs()) {
            return Err(format!(
                "node_row_ptr gives {} rows {}..{}, but it has {} outputs",
                describe(i, nodes),
                ptr[i],
                ptr[i + 1],
                node.num_outputs()
            ));
        }
    }
    Ok(())
}

fn parse_entries(attrs: &Map, node_row_ptr: &[usize], nodes: &[Node]) -> Check<Vec<EntryAttr>> {
    let count = node_row_ptr.last().copied().unwrap_or(0);
    let required = |key: &str, tag: &str| typed_list(attrs, key, tag, count)?.ok_or_else(|| format!("attrs: `{key}` is missing"));
    let storage_ids = required("storage_id", "list_int")?;
    let shapes = required("shape", "list_shape")?;
    let dtypes = required("dltype", "list_str")?;
    let devices = typed_list(attrs, "device_index", "list_int", count)?;

    let mut entries = Vec::with_capacity(count);
    for e in 0..count {
        let at = || describe_entry(e, node_row_ptr, nodes);
        let storage_id = as_index(&storage_ids[e]).map_err(|m| format!("{}: storage_id: {m}", at()))?;
        // Storage ids are dense, so there are never more of them than entries.
        if storage_id >= count {
            return Err(format!("{}: storage_id {storage_id} is out of range; the graph has only {count} entries", at()));
        }
        let shape = as_shape(&shapes[e]).map_err(|m| format!("{}: shape: {m}", at()))?;
        let dtype_name = as_str(&dtypes[e]).map_err(|m| format!("{}: dltype: {m}", at()))?;
        let dtype = DType::parse(dtype_name).map_err(|_| format!("{}: unknown dtype {dtype_name:?}", at()))?;
        let device_index = match devices {
            Some(devices) => as_i32(&devices[e]).map_err(|m| format!("{}: device_index: {m}", at()))?,
            None => 1,
        };
        if byte_size(&shape, dtype).is_none() {
            return Err(format!("{}: shape {shape:?} of {dtype} is too large", at()));
        }
        entries.push(EntryAttr { storage_id, shape, dtype, device_index });
    }
    Ok(entries)
}

/// `attrs[key]` as `[tag, [items]]` (or a bare `[items]`) of exactly `count` items; `None` when absent.
fn typed_list<'a>(attrs: &'a Map, key: &str, tag: &str, count: usize) -> Check<Option<&'a [Value]>> {
    let Some(value) = attrs.get(key) else { return Ok(None) };
    let items = match as_array(value).map_err(|m| format!("attrs: `{key}`: {m}"))? {
        [Value::String(found), Value::Array(items)] if found.starts_with("list_") => {
            if found != tag {
                return Err(format!("attrs: `{key}`: expected a {tag:?} list, found {found:?}"));
            }
            items.as_slice()
        }
        items => items,
    };
    if items.len() != count {
        return Err(format!("attrs: `{key}` has {} items, but the graph has {count} entries", items.len()));
    }
    Ok(Some(items))
}

/// Elements times element size, if that fits in a u64.
fn byte_size(shape: &[i64], dtype: DType) -> Option<u64> {
    shape.iter().try_fold(dtype.size_bytes() as u64, |acc, &dim| acc.checked_mul(u64::try_from(dim).ok()?))
}

fn describe(node: usize, nodes: &[Node]) -> String {
    match nodes.get(node) {
        Some(n) => format!("node {node} `{}`", n.name),
        None => format!("node {node}"),
    }
}

fn describe_entry(entry: usize, node_row_ptr: &[usize], nodes: &[Node]) -> String {
    // The owning node is the last whose first row is at or before `entry`.
    let node = node_row_ptr.partition_point(|&row| row <= entry).saturating_sub(1);
    let index = entry - node_row_ptr.get(node).copied().unwrap_or(0);
    format!("entry {entry} (output {index} of {})", describe(node, nodes))
}

/// `obj[key]` converted by `convert`.
fn get<'a, T>(obj: &'a Map, key: &str, convert: impl FnOnce(&'a Value) -> Check<T>) -> Check<T> {
    let value = obj.get(key).ok_or_else(|| format!("`{key}` is missing"))?;
    convert(value).map_err(|m| format!("`{key}`: {m}"))
}

fn as_object(value: &Value) -> Check<&Map> {
    value.as_object().ok_or_else(|| expected("an object", value))
}

fn as_array(value: &Value) -> Check<&[Value]> {
    value.as_array().map(Vec::as_slice).ok_or_else(|| expected("an array", value))
}

fn as_str(value: &Value) -> Check<&str> {
    value.as_str().ok_or_else(|| expected("a string", value))
}

fn as_index(value: &Value) -> Check<usize> {
    value.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| expected("a non-negative integer", value))
}

fn as_i32(value: &Value) -> Check<i32> {
    value.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(|| expected("a 32-bit integer", value))
}

fn as_index_list(value: &Value) -> Check<Vec<usize>> {
    as_array(value)?.iter().map(as_index).collect()
}

fn as_shape(value: &Value) -> Check<Vec<i64>> {
    let dim = |v: &Value| v.as_i64().filter(|&d| d >= 0).ok_or_else(|| expected("a non-negative dimension", v));
    as_array(value)?.iter().map(dim).collect()
}

/// `[node, index]` or `[node, index, version]`.
fn as_entry_ref(value: &Value) -> Check<EntryRef> {
    match as_array(value)? {
        [node, index] | [node, index, _] => Ok(EntryRef { node: as_index(node)?, index: as_index(index)? }),
        items => Err(format!("expected [node, index, version], found {} items", items.len())),
    }
}

/// Node attrs hold numbers as strings (`"num_inputs": "1"`); plain numbers are accepted too.
fn as_count(value: &Value) -> Check<usize> {
    match value {
        Value::String(s) => s.trim().parse().map_err(|_| expected("a count", value)),
        _ => as_index(value).map_err(|_| expected("a count", value)),
    }
}

fn as_flag(value: &Value) -> Check<bool> {
    match as_count(value).map_err(|_| expected("\"0\" or \"1\"", value))? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(expected("\"0\" or \"1\"", value)),
    }
}

fn expected(what: &str, found: &Value) -> String {
    let found = match found {
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
        scalar => scalar.to_string(),
    };
    format!("expected {what}, found {found}")
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Read;

    use crate::json::json;

    use super::*;
    use crate::input::params;
    use crate::test_support;

    /// Graph archives of the shared corpus and where each keeps its graph.
    pub(crate) const GRAPH_CASES: &[(&str, &str)] = &[
        ("tvm-0.18/cnn_f32-graph", "executor-config/graph/default.graph"),
        ("tvm-0.18/mlp_f32-graph", "executor-config/graph/default.graph"),
        ("tvm-0.18/kws_int8-graph_linked", "executor-config/graph/default.graph"),
        ("tvm-0.18/mobilenet_f32-graph", "executor-config/graph/default.graph"),
        ("real-world/arduino-cifar-resnet-v2-20210602", "runtime-config/graph/graph.json"),
        ("real-world/arduino-microspeech-graph-v5-executorconfig", "executor-config/graph/graph.json"),
        ("real-world/hannah-magicwand-graph-syslib", "executor-config/graph/default.graph"),
    ];

    /// A file of a corpus archive, read straight from its tar; `None` when
    /// the corpus is absent (after a SKIP line) or the archive lacks the file.
    pub(crate) fn corpus_member(archive: &str, path: &str) -> Option<Vec<u8>> {
        let tar_path = test_support::corpus_dir()?.join(archive).join("model.tar");
        let file = std::fs::File::open(&tar_path).unwrap_or_else(|e| panic!("{}: {e}", tar_path.display()));
        let mut tar = tar::Archive::new(file);
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().to_string_lossy().into_owned();
            if name.trim_start_matches("./") == path {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                return Some(bytes);
            }
        }
        None
    }

    fn corpus_params(archive: &str) -> Vec<params::Param> {
        let bytes = corpus_member(archive, "parameters/default.params").unwrap();
        params::parse(&bytes, "parameters/default.params").unwrap()
    }

    fn sids(metadata: &Value) -> &[Value] {
        let memory = metadata["modules"]["default"].get("memory").or_else(|| metadata.get("memory")).unwrap();
        memory["sids"].as_array().unwrap()
    }

    #[test]
    fn parses_every_corpus_graph() {
        for (archive, path) in GRAPH_CASES {
            let Some(bytes) = corpus_member(archive, path) else { continue };
            let graph = parse(&bytes, path).unwrap_or_else(|e| panic!("{archive}: {e}"));
            let params = corpus_params(archive);
            let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(graph.input_nodes(&names).len(), 1, "{archive}");
            assert_eq!(graph.arg_nodes.len(), params.len() + 1, "{archive}");
            assert_eq!(graph.outputs().len(), 1, "{archive}");
            assert_eq!(graph.entries.len(), graph.node_row_ptr[graph.nodes.len()], "{archive}");
            assert!(graph.entries.iter().all(|e| e.device_index == 1), "{archive}");
            let sizes = graph.storage_sizes();
            assert!(sizes.iter().all(|&size| size > 0), "{archive}: unused storage id");

            let metadata = json::parse(&corpus_member(archive, "metadata.json").unwrap()).unwrap();
            check_against_metadata(archive, &graph, &sizes, sids(&metadata), &params);
        }
    }

    /// `memory.sids` agrees with the graph on storage ids and bindings, and on
    /// the sizes of model inputs. Its other sizes do not describe the graph's
    /// storage (TVM computes them before the graph is planned), so weight
    /// sizes are checked against the `.params` data instead.
    fn check_against_metadata(archive: &str, graph: &Graph, sizes: &[u64], sids: &[Value], params: &[params::Param]) {
        assert_eq!(sids.len(), sizes.len(), "{archive}");
        for sid in sids {
            let storage_id = sid["storage_id"].as_u64().unwrap() as usize;
            let Some(binding) = sid.get("input_binding").and_then(Value::as_str) else { continue };
            let node = graph.arg_nodes.iter().copied().find(|&n| graph.nodes[n].name == binding).unwrap();
            let entry = &graph.entries[graph.entry_id(EntryRef { node, index: 0 })];
            assert_eq!(entry.storage_id, storage_id, "{archive}: {binding}");
            match params.iter().find(|p| p.name == binding) {
                Some(param) => assert_eq!(sizes[storage_id], param.data.len() as u64, "{archive}: {binding}"),
                None => assert_eq!(sizes[storage_id], sid["size_bytes"].as_u64().unwrap(), "{archive}: {binding}"),
            }
        }
    }

    #[test]
    fn cnn_f32_graph_structure() {
        let archive = "tvm-0.18/cnn_f32-graph";
        let Some(bytes) = corpus_member(archive, "executor-config/graph/default.graph") else { return };
        let graph = parse(&bytes, "executor-config/graph/default.graph").unwrap();
        assert_eq!(graph.nodes.len(), 11);
        let inputs = graph.input_nodes(&["p0", "p1", "p2"]);
        assert_eq!(inputs.iter().map(|&n| graph.nodes[n].name.as_str()).collect::<Vec<_>>(), ["image"]);
        assert_eq!(graph.outputs(), [10]);
        assert_eq!(graph.entries[10].shape, [1, 5]);
        assert_eq!(graph.storage_sizes(), [3072, 864, 8192, 2048, 4608, 5120, 20]);
        let NodeOp::TvmOp { func_name, num_inputs, num_outputs, flatten_data } = &graph.nodes[2].op else {
            panic!("node 2 is an operator")
        };
        assert_eq!(func_name, "tvmgen_default_fused_nn_conv2d_nn_relu");
        assert_eq!((*num_inputs, *num_outputs, *flatten_data), (2, 1, false));
        assert_eq!(graph.nodes[2].inputs, [EntryRef { node: 0, index: 0 }, EntryRef { node: 1, index: 0 }]);

        let metadata = json::parse(&corpus_member(archive, "metadata.json").unwrap()).unwrap();
        let sids = sids(&metadata);
        // The input's storage is the one place the metadata's size is the graph's.
        assert_eq!(sids[0]["input_binding"].as_str(), Some("image"));
        assert_eq!(sids[0]["size_bytes"].as_u64(), Some(3072));
        assert_eq!(sids.len(), graph.storage_sizes().len());
    }

    /// A small graph: `split(x, p0)` makes two outputs, `add` sums them.
    fn sample() -> Value {
        json!({
            "nodes": [
                {"op": "null", "name": "x", "inputs": []},
                {"op": "null", "name": "p0", "inputs": []},
                {"op": "tvm_op", "name": "split", "inputs": [[0, 0, 0], [1, 0, 0]],
                 "attrs": {"func_name": "tvmgen_default_split", "num_inputs": "2", "num_outputs": "2", "flatten_data": "0",
                           "hash": "ab"}},
                {"op": "tvm_op", "name": "add", "inputs": [[2, 0, 0], [2, 1, 0]],
                 "attrs": {"func_name": "tvmgen_default_add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "1"}}
            ],
            "arg_nodes": [0, 1],
            "heads": [[3, 0, 0], [2, 1, 0]],
            "attrs": {
                "storage_id": ["list_int", [0, 1, 2, 3, 0]],
                "shape": ["list_shape", [[2, 3], [2, 3], [1, 3], [1, 3], [2, 3]]],
                "dltype": ["list_str", ["float32", "float32", "int8", "float32", "float32"]],
                "device_index": ["list_int", [1, 1, 1, 1, 1]]
            },
            "node_row_ptr": [0, 1, 2, 4, 5],
            "metadata": {"ignored": true}
        })
    }

    fn parse_value(value: &Value) -> Result<Graph> {
        parse(value.to_string().as_bytes(), "executor-config/graph/default.graph")
    }

    #[test]
    fn parses_sample_with_multi_output_node() {
        let graph = parse_value(&sample()).unwrap();
        assert_eq!(graph.outputs(), [4, 3]);
        assert_eq!(graph.entry_id(EntryRef { node: 2, index: 1 }), 3);
        assert_eq!(graph.input_nodes(&["p0"]), [0]);
        assert_eq!(graph.storage_sizes(), [24, 24, 3, 12]);
        assert!(matches!(graph.nodes[3].op, NodeOp::TvmOp { flatten_data: true, .. }));
    }

    #[test]
    fn accepts_older_spellings() {
        let mut value = sample();
        remove(&mut value, "node_row_ptr");
        remove(&mut value["attrs"], "device_index");
        value["attrs"]["storage_id"] = json!([0, 1, 2, 3, 0]);
        value["nodes"][2]["inputs"] = json!([[0, 0], [1, 0]]);
        value["nodes"][2]["attrs"]["num_outputs"] = json!(2);
        let graph = parse_value(&value).unwrap();
        assert_eq!(graph.node_row_ptr, [0, 1, 2, 4, 5]);
        assert!(graph.entries.iter().all(|e| e.device_index == 1));
        assert_eq!(graph, parse_value(&sample()).unwrap());
    }

    /// The error text for `sample()` after `edit`.
    fn corrupt(edit: impl FnOnce(&mut Value)) -> String {
        let mut value = sample();
        edit(&mut value);
        let error = parse_value(&value).expect_err("should be rejected");
        assert_eq!(error.kind(), ErrorKind::Metadata);
        assert_eq!(error.file(), Some("executor-config/graph/default.graph"));
        error.to_string()
    }

    /// A change that breaks `sample()`.
    type Edit = fn(&mut Value);

    fn remove(value: &mut Value, key: &str) {
        value.as_object_mut().unwrap().remove(key);
    }

    #[test]
    fn corrupt_graphs_name_what_is_wrong() {
        let cases: &[(Edit, &str)] = &[
            (|v| v["nodes"][3]["inputs"][0] = json!([7, 0, 0]), "node 3 `add`: input 0: refers to node 7, but the graph has 4 nodes"),
            (
                |v| v["nodes"][3]["inputs"][1] = json!([2, 2, 0]),
                "node 3 `add`: input 1: refers to output 2 of node 2 `split`, which has 2 outputs",
            ),
            (
                |v| v["nodes"][2]["inputs"][0] = json!([3, 0, 0]),
                "node 2 `split`: input 0: refers to node 3 `add`, which does not come before it",
            ),
            (|v| v["nodes"][3]["inputs"][0] = json!([-1, 0, 0]), "node 3 `add`: input 0: expected a non-negative integer, found -1"),
            (|v| v["nodes"][3]["inputs"][0] = json!([2]), "node 3 `add`: input 0: expected [node, index, version], found 1 items"),
            (|v| remove(&mut v["nodes"][3], "attrs"), "node 3 `add`: `attrs` is missing"),
            (|v| remove(&mut v["nodes"][3]["attrs"], "func_name"), "node 3 `add`: attrs: `func_name` is missing"),
            (|v| v["nodes"][3]["attrs"]["num_inputs"] = json!("two"), "node 3 `add`: attrs: `num_inputs`: expected a count, found \"two\""),
            (|v| v["nodes"][3]["attrs"]["num_inputs"] = json!("3"), "node 3 `add`: attrs say num_inputs is 3, but it lists 2 inputs"),
            (
                |v| v["nodes"][3]["attrs"]["flatten_data"] = json!("2"),
                "node 3 `add`: attrs: `flatten_data`: expected \"0\" or \"1\", found \"2\"",
            ),
            (|v| v["nodes"][3]["attrs"]["num_outputs"] = json!("0"), "node 3 `add`: attrs say num_outputs is 0"),
            (|v| v["nodes"][3]["op"] = json!("relu"), "node 3 `add`: unknown op \"relu\""),
            (|v| remove(&mut v["nodes"][1], "name"), "node 1: `name` is missing"),
            (|v| v["nodes"][1]["inputs"] = json!([[0, 0, 0]]), "node 1 `p0`: a null node (an input or weight) has 1 inputs"),
            (|v| v["arg_nodes"] = json!([0, 3]), "arg_nodes[1] is node 3 `add`, an operator, not an input"),
            (|v| v["arg_nodes"] = json!([0, 9]), "arg_nodes[1] is node 9, but the graph has 4 nodes"),
            (|v| v["arg_nodes"] = json!([0, 0]), "arg_nodes lists node 0 `x` twice"),
            (|v| v["heads"] = json!([[3, 1, 0]]), "heads[0]: refers to output 1 of node 3 `add`, which has 1 outputs"),
            (|v| v["heads"] = json!([]), "heads is empty"),
            (|v| v["node_row_ptr"] = json!([0, 1, 2, 3, 4]), "node_row_ptr gives node 2 `split` rows 2..3, but it has 2 outputs"),
            (|v| v["node_row_ptr"] = json!([0, 1, 2, 4]), "node_row_ptr has 4 items; expected one per node plus one (5)"),
            (
                |v| v["attrs"]["storage_id"] = json!(["list_int", [0, 1, 2, 3]]),
                "attrs: `storage_id` has 4 items, but the graph has 5 entries",
            ),
            (
                |v| v["attrs"]["storage_id"] = json!(["list_str", [0, 1, 2, 3, 0]]),
                "attrs: `storage_id`: expected a \"list_int\" list, found \"list_str\"",
            ),
            (|v| v["attrs"]["storage_id"][1][3] = json!(99), "entry 3 (output 1 of node 2 `split`): storage_id 99 is out of range"),
            (
                |v| v["attrs"]["shape"][1][4] = json!([2, -3]),
                "entry 4 (output 0 of node 3 `add`): shape: expected a non-negative dimension, found -3",
            ),
            (
                |v| v["attrs"]["shape"][1][0] = json!([i64::MAX, 4]),
                "entry 0 (output 0 of node 0 `x`): shape [9223372036854775807, 4] of float32 is too large",
            ),
            (|v| v["attrs"]["dltype"][1][1] = json!("complex64"), "entry 1 (output 0 of node 1 `p0`): unknown dtype \"complex64\""),
            (
                |v| v["attrs"]["device_index"][1][2] = json!("cpu"),
                "entry 2 (output 0 of node 2 `split`): device_index: expected a 32-bit integer, found \"cpu\"",
            ),
            (|v| remove(&mut v["attrs"], "dltype"), "attrs: `dltype` is missing"),
            (|v| remove(v, "nodes"), "`nodes` is missing"),
            (|v| *v = json!([1, 2]), "the graph: expected an object, found an array"),
        ];
        for (edit, expected) in cases {
            let text = corrupt(edit);
            assert!(text.contains(expected), "expected `{expected}` in:\n{text}");
        }
    }

    #[test]
    fn rejects_invalid_json() {
        let error = parse(b"{\"nodes\": [", "graph.json").unwrap_err();
        assert!(error.to_string().contains("graph.json: not valid JSON: EOF while parsing"), "{error}");
        assert_eq!(error.help_text(), Some(GRAPH_DAMAGED));
    }
}
