//! Deciding what to build: the plan model (`model`), resolved from the
//! archive's files (`resolve`, `schedule` for graph executors), renamed on
//! request (`rename`), checked (`names`, `limits`, `checks`), reported
//! (`report`), laid onto the memory regions of a `memory.x` (`fit`) and, on
//! request, given the operator calls a profiled run times (`profile`).
//!
//! [`read_and_plan`] is the one door into the pipeline: `Builder::build`,
//! `inspect` and the fuzz targets all go through it, so whatever one accepts
//! the others accept with the same numbers, and whatever one refuses the
//! others refuse with the same error.

pub(crate) mod checks;
pub(crate) mod fit;
pub(crate) mod limits;
pub(crate) mod model;
pub(crate) mod names;
pub(crate) mod profile;
pub(crate) mod rename;
pub(crate) mod report;
pub(crate) mod resolve;
pub(crate) mod schedule;
pub(crate) mod steps;

use std::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::input::archive::{Limits, Tree};
use crate::input::c::{CFiles, CTexts};
use crate::input::metadata::{self, Metadata};
use crate::input::sources;
use crate::plan::model::Plan;
use crate::toolchain::target::Target;

/// What planning takes besides the archive.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlanOptions<'a> {
    /// `Builder::rename_module` pairs, applied in order.
    pub renames: &'a [(String, String)],
    /// Caps on the archive's entries.
    pub limits: Limits,
    /// The build target, when there is one: its checks then apply too.
    pub target: Option<&'a Target>,
    /// `Builder::profile`: each module also gets the operator calls a profiled run times.
    pub profile: bool,
}

/// An archive read and planned.
pub(crate) struct Planned {
    /// The archive's files, renamed.
    pub tree: Tree,
    /// Its normalized metadata, read or inferred from the headers.
    pub metadata: Metadata,
    /// What to build, checked.
    pub plan: Plan,
    /// What the user should know but that does not stop the build.
    pub warnings: Vec<String>,
}

/// Reads the archive at `path` (a `.tar` or a directory) and plans it.
pub(crate) fn read_and_plan(path: &Path, options: &PlanOptions<'_>) -> Result<Planned> {
    plan_tree(Tree::load(path, options.limits)?, options)
}

/// What the user should know about the archive but that does not stop the
/// build, in the order planning found it: each stage that has something to say
/// is handed the collector, and [`plan_tree`] returns it in
/// [`Planned::warnings`] (planning prints nothing itself).
#[derive(Debug, Default)]
pub(crate) struct Warnings(Vec<String>);

impl Warnings {
    pub(crate) fn push(&mut self, text: String) {
        self.0.push(text);
    }
}

/// Plans an archive already read: every inference, cross-check, name check and limit.
pub(crate) fn plan_tree(tree: Tree, options: &PlanOptions<'_>) -> Result<Planned> {
    let mut warnings = Warnings::default();
    let (tree, metadata, plan) = plan_checked(tree, options, &mut warnings)?;
    Ok(Planned { tree, metadata, plan, warnings: warnings.0 })
}

fn plan_checked(tree: Tree, options: &PlanOptions<'_>, warnings: &mut Warnings) -> Result<(Tree, Metadata, Plan)> {
    let from_headers = !tree.contains("metadata.json");
    let mut metadata = match tree.get("metadata.json") {
        Some(bytes) => metadata::parse(bytes).map_err(|e| e.in_file("metadata.json"))?,
        None => {
            // The module names only: the workspace the headers do not state is read from the code below.
            let inferred = sources::metadata_from_headers(&tree)?.ok_or_else(|| {
                Error::new(
                    ErrorKind::NotMlf,
                    "not a Model Library Format archive: it has neither metadata.json nor an interface header codegen/host/include/tvmgen_<module>.h to infer the model from",
                )
                .help("pass the archive written by tvmc compile --output-format mlf or tvm.micro.export_model_library_format")
            })?;
            for module in &inferred.modules {
                warnings.push(format!(
                    "the archive has no metadata.json: module `{}` is inferred from {} (tensor names, _SIZE and pool macros) and the sources' typed signatures",
                    module.name,
                    sources::InterfaceHeader::path_for(&module.name)
                ));
            }
            inferred
        }
    };
    // Before planning: an object for another architecture is the clearest thing to report.
    if let Some(target) = options.target {
        checks::check_objects(&tree, target)?;
    }
    let tree = rename::apply(tree, &mut metadata, options.renames, warnings)?;
    let plan = {
        // Before any scanner reads the archive's C: each file parsed once, its limits checked.
        let texts = CTexts::of(&tree);
        let files = CFiles::parse(&texts)?;
        if from_headers {
            sources::workspace_from_code(&mut metadata, &tree, &files);
        }
        let mut plan = resolve::plan(&tree, &files, &metadata, warnings)?;
        for path in plan.modules.iter().flat_map(|module| &module.codegen.ignored) {
            warnings.push(format!("ignoring `{path}`: not a C/C++ source or object"));
        }
        names::check_plan(&plan)?;
        limits::check_plan(&plan)?;
        if let Some(target) = options.target {
            checks::check_target(&plan, target, &metadata)?;
        }
        if options.profile {
            profile::apply(&tree, &files, &mut plan)?;
        }
        plan
    };
    Ok((tree, metadata, plan))
}
