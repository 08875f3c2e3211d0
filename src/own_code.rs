//! mlf-build's own C (the support library and the runtime headers), embedded
//! in the library as cxx-build embeds `cxx.h`: a build reads no file from the
//! crate's source directory, and editing one rebuilds mlf-build itself. Also
//! the names the generated glue defines, which the archive's C must not. The
//! files are returned as data; the Builder writes them.

use crate::input::c::parser::parse::parse;

macro_rules! embed {
    ($path:literal) => {
        ($path, include_bytes!(concat!("../build-support/", $path)).as_slice())
    };
}

/// Every file of `build-support/`, by its path below it.
const FILES: &[(&str, &[u8])] = &[
    embed!("include/mlf_support.h"),
    embed!("include/tvm/runtime/crt/internal/aot_executor/aot_executor.h"),
    embed!("include/tvm_model.h"),
    embed!("runtime-include/dlpack/dlpack.h"),
    embed!("runtime-include/tvm/runtime/c_backend_api.h"),
    embed!("runtime-include/tvm/runtime/c_runtime_api.h"),
    embed!("runtime-include/tvm/runtime/crt/error_codes.h"),
    embed!("runtime-include/tvm/runtime/crt/logging.h"),
    embed!("runtime-include/tvm/runtime/crt/module.h"),
    embed!("runtime-include/tvm/runtime/crt/platform.h"),
    embed!("runtime-include/tvm/runtime/metadata_types.h"),
    embed!("src/arena.c"),
    embed!("src/backend.c"),
    embed!("src/call.c"),
    embed!("src/log.c"),
    embed!("src/mlf_support.c"),
    embed!("src/registry.c"),
];

/// The platform layer's one source (it includes the others), below [`FILES`]' `src/`.
pub(crate) const LIBRARY_SOURCE: &str = "src/mlf_support.c";

/// `TVMBackendAllocWorkspace` on the static arena, for archives without a runtime of their own.
pub(crate) const BACKEND_SOURCE: &str = "src/backend.c";

/// Whether a source of the support code (`src/`) defines the function `name`
/// with external linkage (read from the sources themselves, as the archive's C is).
fn defines(name: &str) -> bool {
    static DEFINED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    DEFINED
        .get_or_init(|| {
            let mut names = Vec::new();
            for (path, bytes) in FILES.iter().filter(|(path, _)| path.starts_with("src/") && path.ends_with(".c")) {
                let text = String::from_utf8_lossy(bytes);
                let source = parse(path, &text).unwrap_or_else(|error| panic!("mlf-build's own {path}: {error}"));
                names.extend(source.functions.iter().filter(|function| !function.is_static).map(|function| function.name.to_string()));
            }
            names
        })
        .iter()
        .any(|defined| defined == name)
}

/// The prefix of every symbol the glue defines (`mlf_<m>_invoke`, `mlf_<m>_model` ...).
pub(crate) const GLUE_PREFIX: &str = "mlf_";

/// The hooks `-finstrument-functions` calls, which a profiled module's glue defines.
pub(crate) const PROFILE_HOOKS: [&str; 2] = ["__cyg_profile_func_enter", "__cyg_profile_func_exit"];

/// Whether `name` is a function mlf-build's support code (`build-support/src`)
/// or the generated glue of one of `modules` (`mlf_<m>_...`, the profiling
/// hooks) defines: the archive's C must not define it too.
pub(crate) fn is_own_symbol(name: &str, modules: &[&str]) -> bool {
    let glue = name
        .strip_prefix(GLUE_PREFIX)
        .is_some_and(|rest| modules.iter().any(|module| rest.strip_prefix(module).is_some_and(|after| after.starts_with('_'))));
    glue || PROFILE_HOOKS.contains(&name) || defines(name)
}

/// Whether mlf-build's support code puts `header` on the archive's include
/// path (`mlf_support.h`, TVM's runtime headers), or writes it there (`crt_config.h`).
pub(crate) fn supplies_header(header: &str) -> bool {
    header == "crt_config.h"
        || FILES.iter().any(|(path, _)| ["include/", "runtime-include/"].iter().any(|dir| path.strip_prefix(dir) == Some(header)))
}

/// Every file as (path below the support directory, bytes): the Builder
/// writes them there, and hashes them into the keys of what compiles with them.
pub(crate) fn files() -> impl Iterator<Item = (&'static str, &'static [u8])> {
    FILES.iter().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file added to `build-support/` but not to [`FILES`] would be missing from every build.
    #[test]
    fn every_file_of_build_support_is_embedded() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("build-support");
        let mut on_disk = Vec::new();
        let mut pending = vec![root.clone()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    on_disk.push(path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"));
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(name, _)| name.to_string()).collect();
        embedded.sort();
        assert_eq!(on_disk, embedded);
        for source in [LIBRARY_SOURCE, BACKEND_SOURCE] {
            assert!(embedded.iter().any(|name| name == source), "{source}");
        }
    }

    /// What the support code defines is read from its sources: the library's
    /// exports, the backend's allocator, and no `static` helper.
    #[test]
    fn defines_what_its_sources_define() {
        for name in ["TVMPlatformAbort", "TVMLogf", "mlf_support_call", "TVMBackendAllocWorkspace", "TVMBackendFreeWorkspace"] {
            assert!(defines(name), "{name}");
        }
        assert!(!defines("try_enter") && !defines("put") && !defines("TVMSystemLibEntryPoint"));
    }
}
