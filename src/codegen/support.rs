//! mlf-build's own C (the support library and the runtime headers), embedded
//! in the library as cxx-build embeds `cxx.h`: a build reads no file from the
//! crate's source directory, and editing one rebuilds mlf-build itself.

use std::path::Path;

use crate::cargo::write::write_if_changed;
use crate::error::Result;
use crate::input::c;

macro_rules! embed {
    ($path:literal) => {
        ($path, include_bytes!(concat!("../../build-support/", $path)).as_slice())
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
pub(crate) fn defines(name: &str) -> bool {
    static DEFINED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    DEFINED
        .get_or_init(|| {
            let mut names = Vec::new();
            for (_, bytes) in FILES.iter().filter(|(path, _)| path.starts_with("src/") && path.ends_with(".c")) {
                let code = c::strip_comments(&String::from_utf8_lossy(bytes));
                names.extend(
                    c::function_definitions(&code).filter(|(name, _)| !c::is_static(&code, name)).map(|(name, _)| name.to_string()),
                );
            }
            names
        })
        .iter()
        .any(|defined| defined == name)
}

/// Whether mlf-build's support code puts `header` on the archive's include
/// path (`mlf_support.h`, TVM's runtime headers), or writes it there (`crt_config.h`).
pub(crate) fn supplies_header(header: &str) -> bool {
    header == "crt_config.h"
        || FILES.iter().any(|(path, _)| ["include/", "runtime-include/"].iter().any(|dir| path.strip_prefix(dir) == Some(header)))
}

/// Writes the files below `dir` (only those whose bytes changed).
pub(crate) fn write(dir: &Path) -> Result<()> {
    for (path, bytes) in FILES {
        write_if_changed(&dir.join(path), bytes)?;
    }
    Ok(())
}

/// A hash of every embedded file and its path, for the cache keys of what is compiled with them.
pub(crate) fn digest() -> String {
    let parts: Vec<&[u8]> = FILES.iter().flat_map(|(path, bytes)| [path.as_bytes(), bytes]).collect();
    crate::cargo::cache::key(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file added to `build-support/` but not to [`FILES`] would be missing from every build.
    #[test]
    fn every_file_of_build_support_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("build-support");
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
