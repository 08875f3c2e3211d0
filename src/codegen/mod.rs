//! Generating code from a plan: the C glue between the archive's entry point
//! and Rust (`glue`) and the Rust module (`rust`).
//!
//! The functions here return files as data and touch no disk, environment or
//! Cargo: the Builder decides where they go and when they are rewritten.

pub(crate) mod glue;
pub(crate) mod kernel_probe;
pub(crate) mod kernel_scratch;
pub(crate) mod redirect;
pub(crate) mod rust;
pub(crate) mod stepper;

#[cfg(test)]
pub(crate) mod golden;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::{Error, ErrorKind, Result};
use crate::plan::model::{Compiled, ModulePlan, Plan};
use crate::plan::report::ModuleReport;

/// One generated file: where it goes, relative to the directory the producing function names, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GeneratedFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

impl GeneratedFile {
    /// Whether the file is a C source to compile (else a header).
    pub fn is_c_source(&self) -> bool {
        self.path.extension().is_some_and(|extension| extension == "c")
    }
}

/// Every module's glue header and source for the package (crate) `package`,
/// module by module, relative to the glue directory (the include directory of
/// the glue and of bindgen). A graph module's weights are not among them: see
/// [`params_source`].
pub(crate) fn c_files(plan: &Plan, package: &str) -> Vec<GeneratedFile> {
    plan.modules
        .iter()
        .flat_map(|module| {
            let glue = glue::generate(module, package);
            [
                GeneratedFile { path: glue.header_name.into(), bytes: glue.header.into_bytes() },
                GeneratedFile { path: glue.source_name.into(), bytes: glue.source.into_bytes() },
            ]
        })
        .collect()
}

/// A graph module's weights as a C source of their own, relative to the glue
/// directory, and what writes it: the weights can be tens of megabytes, so
/// they are streamed to the file rather than held as text.
pub(crate) fn params_source(module: &ModulePlan) -> Option<(PathBuf, impl Fn(&mut dyn std::io::Write) -> std::io::Result<()> + '_)> {
    let path = glue::params_file_name(module)?;
    Some((path.into(), move |out: &mut dyn std::io::Write| glue::write_params_source(module, out)))
}

/// Each module's Rust (`mlf/<m>.rs`, relative to `OUT_DIR`), in the plan's
/// order, over what the compiled code of each module showed and its bindgen
/// text (same order); with `mlf_rt` each module also implements `mlf_rt::Model`.
pub(crate) fn rust_files(
    plan: &Plan,
    compiled: &[Compiled],
    bindings: &[String],
    provenance: &rust::Provenance<'_>,
    mlf_rt: bool,
) -> Result<Vec<GeneratedFile>> {
    assert_eq!(plan.modules.len(), bindings.len(), "one bindings text per module");
    assert_eq!(plan.modules.len(), compiled.len(), "one compiled value per module");
    plan.modules
        .iter()
        .zip(compiled.iter().zip(bindings))
        .map(|(module, (compiled, bindings))| {
            let text = rust::module_rust(module, compiled, bindings, provenance, mlf_rt)?;
            Ok(GeneratedFile { path: rust_path(module), bytes: text.into_bytes() })
        })
        .collect()
}

fn rust_path(module: &ModulePlan) -> PathBuf {
    ["mlf", &format!("{}.rs", module.name)].iter().collect()
}

/// `mlf/mod.rs` (relative to `OUT_DIR`): a `pub mod` for each module built
/// into this `OUT_DIR` so far, by name, with whether it implements `mlf_rt::Model`.
/// The module of `mod.rs` that holds one module per arena group.
pub(crate) const ARENA_GROUPS_MODULE: &str = "arena_groups";

/// Arena groups of a build script: group -> member module -> the bytes of the group's arena it uses.
pub(crate) type ArenaGroups = BTreeMap<String, BTreeMap<String, u64>>;

pub(crate) fn module_index(modules: &BTreeMap<String, bool>, groups: &ArenaGroups) -> GeneratedFile {
    GeneratedFile { path: ["mlf", "mod.rs"].iter().collect(), bytes: rust::module_index(modules, groups).into_bytes() }
}

/// `mlf/<m>.json` (relative to `OUT_DIR`): the module's report as `mlf-build
/// inspect --json` prints it (schema in README.md).
pub(crate) fn report_file(report: &ModuleReport) -> GeneratedFile {
    let json = crate::json::to_string_pretty(&report.to_json());
    GeneratedFile { path: ["mlf", &format!("{}.json", report.name)].iter().collect(), bytes: json.into_bytes() }
}

/// One C file per kernel library source (`sources`, relative to `root`, an
/// absolute path), relative to the glue directory: each includes `<stdint.h>`
/// and then the source, because CMSIS-NN v4.1.0's `Internal/arm_nn_compiler.h`
/// uses `uint32_t` before anything includes `<stdint.h>` off Arm. The user's
/// copy of the library is never edited.
pub(crate) fn kernel_wrappers(root: &std::path::Path, sources: &[String]) -> Result<Vec<GeneratedFile>> {
    sources
        .iter()
        .map(|source| {
            let original = root.join(source);
            let text = includable(&original)?;
            let bytes = format!("/* Written by mlf-build: {source} with <stdint.h> first. */\n#include <stdint.h>\n#include \"{text}\"\n");
            Ok(GeneratedFile { path: ["kernels", source.as_str()].iter().collect(), bytes: bytes.into_bytes() })
        })
        .collect()
}

/// `path` as the text of a `#include "..."`: a header name ends at `"` or a
/// line end and has no escapes.
pub(crate) fn includable(path: &std::path::Path) -> Result<&str> {
    match path.to_str() {
        Some(text) if !text.contains(['"', '\n', '\r']) => Ok(text),
        _ => Err(Error::new(ErrorKind::Config, format!("`{}`: a path C cannot #include", path.display()))
            .help("move it to a folder whose path has no `\"`, line break or non-UTF-8 byte")),
    }
}
