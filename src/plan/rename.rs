//! `Builder::rename_module`: builds a module under another name, as if TVM had
//! exported it with that `mod_name`. TVM prefixes every symbol and file of
//! module `m` with `tvmgen_m_` / `TVMGEN_M_` / `m_`, so renaming rewrites those
//! prefixes in the module's generated sources and header, in the function
//! names its graph JSON and metadata.json give, and in its `.params` file name.

use crate::json::{self, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::ident::{self, is_c_identifier, CIdent, MAX_NAME_BYTES};
use crate::input::archive::Tree;
use crate::input::metadata::{Executor, Metadata};
use crate::input::sources;
use crate::plan::Warnings;

/// The function name TVM's graph runtime skips (see `schedule`): no symbol.
const NOP: &str = "__nop";

/// Applies each `(from, to)` rename to the tree and the metadata.
pub(crate) fn apply(tree: Tree, metadata: &mut Metadata, renames: &[(String, String)], warnings: &mut Warnings) -> Result<Tree> {
    if renames.is_empty() {
        return Ok(tree);
    }
    let mut files = tree.into_files();
    for (from, to) in renames {
        let names: Vec<&str> = metadata.modules.iter().map(|m| m.name.as_str()).collect();
        if !names.contains(&from.as_str()) {
            return Err(Error::new(ErrorKind::Config, format!("rename_module(\"{from}\", \"{to}\"): the archive has no module `{from}`"))
                .help(format!("its modules are: {}", names.join(", "))));
        }
        if !is_c_identifier(to) {
            return Err(Error::new(ErrorKind::Config, format!("rename_module(\"{from}\", \"{to}\"): `{to}` is not a C identifier"))
                .help(format!("use {}, at most {} bytes", crate::ident::C_IDENTIFIER_RULE, MAX_NAME_BYTES)));
        }
        if names.contains(&to.as_str()) && from != to {
            return Err(Error::new(
                ErrorKind::Config,
                format!("rename_module(\"{from}\", \"{to}\"): the archive already has a module `{to}`"),
            ));
        }
        let single = names.len() == 1;
        let owned = |file: &str| single || sources::owner(file, &names) == Some(from.as_str());
        let header = format!("tvmgen_{from}.h");
        let mut renamed = std::collections::BTreeMap::new();
        for (path, bytes) in std::mem::take(&mut files) {
            let (dir, file) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            let in_src = dir == sources::SRC_DIR;
            let is_header = dir == sources::INCLUDE_DIR && file == header;
            if dir == sources::LIB_DIR && owned(file) {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "rename_module(\"{from}\", \"{to}\"): module `{from}` comes with prebuilt objects, whose symbols cannot be renamed"
                    ),
                )
                .in_file(path.clone())
                .help(format!("build module `{from}` under its own name (no rename_module for it), and rename the other archive's module, whose symbols come from sources, if the two clash")));
            }
            if !(is_header || in_src && owned(file)) {
                renamed.insert(path, bytes);
                continue;
            }
            let new_file = if is_header {
                format!("tvmgen_{to}.h")
            } else {
                file.strip_prefix(&format!("{from}_")).map_or_else(|| file.to_string(), |rest| format!("{to}_{rest}"))
            };
            let text = String::from_utf8_lossy(&bytes);
            renamed.insert(format!("{dir}/{new_file}"), rename_symbols(&text, from, to).map_err(|e| e.in_file(path.clone()))?.into_bytes());
        }
        files = renamed;
        rename_params_file(&mut files, from, to)?;
        for module in metadata.modules.iter_mut().filter(|m| &m.name == from) {
            for operator in &mut module.operators {
                if let Some(name) = rename_symbol(&operator.function_name, from, to)? {
                    operator.function_name = name.as_str().to_string();
                }
            }
            let graph_path = module.graph_json_path.as_deref().filter(|_| module.executors.contains(&Executor::Graph));
            if let Some((path, bytes)) = graph_path.and_then(|path| files.get_mut(path).map(|bytes| (path, bytes))) {
                rename_graph(bytes, from, to, warnings).map_err(|e| e.in_file(path))?;
            }
            module.name = to.clone();
        }
    }
    metadata.modules.sort_by(|a, b| a.name.cmp(&b.name));
    Tree::from_files(files)
}

/// `parameters/<from>.params` becomes `parameters/<to>.params`, where the
/// graph planner looks for module `to`'s weights.
fn rename_params_file(files: &mut std::collections::BTreeMap<String, Vec<u8>>, from: &str, to: &str) -> Result<()> {
    let Some(bytes) = files.remove(&format!("parameters/{from}.params")) else { return Ok(()) };
    let target = format!("parameters/{to}.params");
    if files.contains_key(&target) {
        return Err(Error::new(
            ErrorKind::Config,
            format!("rename_module(\"{from}\", \"{to}\"): the archive already has `{target}`, the weights file module `{to}` would read"),
        )
        .in_file(target.clone())
        .help(format!("remove `{target}` from the archive (no module `{to}` uses it), or choose another name")));
    }
    files.insert(target, bytes);
    Ok(())
}

/// `tvmgen_<to>_<rest>` for a symbol `tvmgen_<from>_<rest>` of the module; `None`
/// for a name without the module's prefix, which keeps its name, and for a
/// name that is no identifier, which planning refuses as the archive spells it.
fn rename_symbol(name: &str, from: &str, to: &str) -> Result<Option<CIdent>> {
    let Some(rest) = name.strip_prefix(&format!("tvmgen_{from}_")).filter(|_| is_c_identifier(name)) else {
        return Ok(None);
    };
    let renamed = format!("tvmgen_{to}_{rest}");
    CIdent::new("", &renamed).map(Some).map_err(|_| too_long(from, to, name, &renamed))
}

/// The error for a name of the module's that renaming would make longer than an identifier may be.
fn too_long(from: &str, to: &str, name: &str, renamed: &str) -> Error {
    Error::new(
        ErrorKind::Config,
        format!(
            "rename_module(\"{from}\", \"{to}\"): the module's `{name}` would be called `{renamed}`, longer than {MAX_NAME_BYTES} bytes"
        ),
    )
    .help(format!("choose a name at least {} bytes shorter than `{to}`", renamed.len() - MAX_NAME_BYTES))
}

/// Renames the functions the graph JSON's operator nodes call (`attrs.func_name`)
/// and the nodes TVM named after them. A graph that is not JSON with a `nodes`
/// array is left as it is: planning reports what is wrong with it.
fn rename_graph(bytes: &mut Vec<u8>, from: &str, to: &str, warnings: &mut Warnings) -> Result<()> {
    let Ok(mut root) = json::parse(bytes) else { return Ok(()) };
    let Some(nodes) = root.get_mut("nodes").and_then(Value::as_array_mut) else { return Ok(()) };
    let mut unprefixed = Vec::new();
    let prefix = format!("tvmgen_{from}_");
    for node in nodes.iter_mut().filter(|node| node.get("op").and_then(Value::as_str) == Some("tvm_op")) {
        if let Some(name) = node.get_mut("name") {
            rename_string(name, from, to)?;
        }
        if let Some(func_name) = node.get_mut("attrs").and_then(|attrs| attrs.get_mut("func_name")) {
            let name = func_name.as_str().unwrap_or(NOP);
            if !name.starts_with(&prefix) && name != NOP && !unprefixed.iter().any(|kept| kept == name) {
                unprefixed.push(name.to_string());
            }
            rename_string(func_name, from, to)?;
        }
    }
    *bytes = root.to_string().into_bytes();
    if let Some(first) = unprefixed.first() {
        warnings.push(format!(
            "module `{to}` (renamed from `{from}`): its graph calls {} function(s) TVM named without the module prefix `tvmgen_{from}_` (`{first}`{}), which keep their names: another archive defining them cannot be linked into the same program",
            unprefixed.len(),
            if unprefixed.len() > 1 { ", …" } else { "" }
        ));
    }
    Ok(())
}

/// Renames the symbol a JSON string holds, if it is one of the module's.
fn rename_string(value: &mut Value, from: &str, to: &str) -> Result<()> {
    if let Some(renamed) = value.as_str().map(|name| rename_symbol(name, from, to)).transpose()?.flatten() {
        *value = Value::String(renamed.as_str().to_string());
    }
    Ok(())
}

/// Replaces the identifier prefixes `tvmgen_<from>` (before `_` or `.`) and
/// `TVMGEN_<FROM>_`; refuses to make an identifier longer than one may be.
fn rename_symbols(text: &str, from: &str, to: &str) -> Result<String> {
    let pairs = [
        (format!("tvmgen_{from}"), format!("tvmgen_{to}"), ['_', '.']),
        (format!("TVMGEN_{}", from.to_uppercase()), format!("TVMGEN_{}", to.to_uppercase()), ['_', '_']),
    ];
    let mut out = text.to_string();
    for (old, new, followers) in pairs {
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(&old) {
            let before = rest[..at].chars().next_back().or_else(|| result.chars().next_back());
            let after = rest[at + old.len()..].chars().next();
            let starts_identifier = !before.is_some_and(ident::is_identifier_char);
            result.push_str(&rest[..at]);
            if starts_identifier && after.is_some_and(|c| followers.contains(&c)) {
                let length = rest[at..].find(|c: char| !ident::is_identifier_char(c)).unwrap_or(rest.len() - at);
                let identifier = &rest[at..at + length];
                if identifier.len() <= MAX_NAME_BYTES && identifier.len() - old.len() + new.len() > MAX_NAME_BYTES {
                    return Err(too_long(from, to, identifier, &format!("{new}{}", &identifier[old.len()..])));
                }
                result.push_str(&new);
            } else {
                result.push_str(&old);
            }
            rest = &rest[at + old.len()..];
        }
        result.push_str(rest);
        out = result;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::Entry;
    use crate::plan::{plan_tree, read_and_plan, PlanOptions, Planned};

    fn plan_renamed(case: &str, renames: &[(&str, &str)]) -> Option<Planned> {
        let archive = crate::test_support::corpus_dir()?.join(case).join("model.tar");
        let renames: Vec<(String, String)> = renames.iter().map(|(from, to)| (from.to_string(), to.to_string())).collect();
        Some(read_and_plan(&archive, &PlanOptions { renames: &renames, ..Default::default() }).unwrap_or_else(|e| panic!("{case}: {e}")))
    }

    /// The archive's C may not define the glue's symbols as the glue names
    /// them: after the module's rename, not before.
    #[test]
    fn the_glue_symbols_an_archive_may_not_define_are_the_renamed_modules() {
        let Some(corpus) = crate::test_support::corpus_dir() else { return };
        let with_definition = |symbol: &str| {
            let archive = corpus.join("tvm-0.18/mlp_f32-aot_c/model.tar");
            let mut files = Tree::load(&archive, Default::default()).unwrap().into_files();
            let source = files.get_mut("codegen/host/src/default_lib1.c").unwrap();
            source.extend(format!("\nint {symbol}(void) {{ return 0; }}\n").bytes());
            Tree::from_files(files).unwrap()
        };
        let renames = vec![("default".to_string(), "speech".to_string())];
        let renamed = PlanOptions { renames: &renames, ..Default::default() };
        let error = plan_tree(with_definition("mlf_speech_invoke"), &renamed).err().expect("the renamed glue's symbol is refused");
        assert!(error.to_string().contains("defines `mlf_speech_invoke`"), "{error}");
        // The name TVM gave the module is the glue's only without the rename.
        assert!(plan_tree(with_definition("mlf_default_invoke"), &renamed).is_ok());
        assert!(plan_tree(with_definition("mlf_default_invoke"), &PlanOptions::default()).is_err());
    }

    #[test]
    fn a_graph_calls_the_renamed_functions() {
        for case in ["tvm-0.18/mlp_f32-graph", "real-world/arduino-microspeech-graph-v5-executorconfig", "tvm-0.18/kws_int8-graph_linked"] {
            let Some(Planned { plan, metadata, warnings, .. }) = plan_renamed(case, &[("default", "speech")]) else { return };
            let module = &plan.modules[0];
            assert_eq!(module.name.as_str(), "speech");
            let Entry::Graph(schedule) = &module.entry else { panic!("{case}: {:?}", module.entry.kind()) };
            assert!(!schedule.calls.is_empty());
            for call in &schedule.calls {
                assert!(call.func_name.starts_with("tvmgen_speech_"), "{case}: {}", call.func_name);
            }
            assert!(metadata.modules[0].operators.iter().all(|op| op.function_name.starts_with("tvmgen_speech_")), "{case}");
            assert!(warnings.is_empty(), "{case}: {warnings:?}");
        }
    }

    #[test]
    fn a_graph_with_unprefixed_functions_builds_and_says_they_keep_their_names() {
        let Some(Planned { plan, warnings, .. }) = plan_renamed("real-world/arduino-cifar-resnet-v2-20210602", &[("default", "cifar")])
        else {
            return;
        };
        let Entry::Graph(schedule) = &plan.modules[0].entry else { panic!("a graph") };
        assert!(schedule.calls.iter().all(|call| call.func_name.starts_with("fused_")));
        assert!(
            warnings.iter().any(|w| w.starts_with("module `cifar` (renamed from `default`): its graph calls 16 function(s) TVM named without the module prefix `tvmgen_default_`")),
            "{warnings:?}"
        );
    }

    #[test]
    fn one_module_of_several_is_renamed_alone() {
        let Some(Planned { plan, .. }) = plan_renamed("tvm-0.18/multi-kws_mlp-aot_c", &[("mlp", "dense")]) else { return };
        let names: Vec<&str> = plan.modules.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["dense", "kws"]);
    }

    #[test]
    fn a_name_too_long_once_renamed_is_refused_before_planning() {
        let Some(corpus) = crate::test_support::corpus_dir() else { return };
        let long = "m".repeat(MAX_NAME_BYTES - 10);
        let renames = [("default".to_string(), long.clone())];
        for case in ["tvm-0.18/mlp_f32-graph", "tvm-0.18/mlp_f32-aot_c", "real-world/arduino-microspeech-aot-tvm_model_t-v5"] {
            let archive = corpus.join(case).join("model.tar");
            let error = read_and_plan(&archive, &PlanOptions { renames: &renames, ..Default::default() }).err().expect("refused");
            let text = error.to_string();
            assert!(text.contains(&format!("rename_module(\"default\", \"{long}\"): the module's `tvmgen_default_")), "{case}: {text}");
            assert!(text.contains("longer than 255 bytes"), "{case}: {text}");
        }
    }

    #[test]
    fn renames_whole_prefixes_only() {
        let text = "#include \"tvmgen_default.h\"\nint32_t tvmgen_default_run(void);\n#define TVMGEN_DEFAULT_X_SIZE 4\nmy_tvmgen_default_x tvmgen_defaults_y";
        let renamed = rename_symbols(text, "default", "kws").unwrap();
        assert_eq!(
            renamed,
            "#include \"tvmgen_kws.h\"\nint32_t tvmgen_kws_run(void);\n#define TVMGEN_KWS_X_SIZE 4\nmy_tvmgen_default_x tvmgen_defaults_y"
        );
    }
}
