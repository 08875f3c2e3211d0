//! Explaining a failed compile in the archive's terms.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, ErrorKind};
use crate::plan::model::Plan;
use crate::toolchain::compile::{Compilers, Library};

/// After a failed compile: every header the archive's sources include that
/// neither the archive, mlf-build, the Builder's include directories nor the
/// compiler has, each named with the files that want it, and the options that help.
pub(super) fn missing_header(plan: &Plan, tree_dir: &Path, model: &Library, compilers: &Compilers) -> Option<Error> {
    let mut found: BTreeMap<String, bool> = BTreeMap::new();
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for module in &plan.modules {
        for (path, header) in &module.needs.includes {
            let in_own_dir = tree_dir.join(path).parent().is_some_and(|dir| dir.join(header).is_file());
            let known = *found.entry(header.clone()).or_insert_with(|| {
                model.include_dirs.iter().any(|dir| dir.join(header).is_file()) || model.compiler_finds(compilers, header)
            });
            if !(in_own_dir || known) {
                let files = missing.entry(header.clone()).or_default();
                if !files.contains(path) {
                    files.push(path.clone());
                }
            }
        }
    }
    let first_file = missing.values().next()?.first()?.clone();
    let list: Vec<String> = missing.iter().map(|(header, files)| format!("<{header}> (included by {})", files.join(", "))).collect();
    let headers: Vec<String> = missing.keys().map(|header| format!("<{header}>")).collect();
    Some(
        Error::new(
            ErrorKind::Compile,
            format!(
                "the archive's code includes {} header(s) that are not in the archive, mlf-build's headers, the include directories given or the compiler's include path: {}",
                missing.len(),
                list.join("; ")
            ),
        )
        .in_file(first_file)
        .help(format!(
            "the model was compiled against external code (BYOC, e.g. CMSIS-NN or a port of it): add the directories holding {} with Builder::include_dir(..), the library's sources with Builder::source(..) and its macros with Builder::define(..)",
            headers.join(", ")
        )),
    )
}
