//! The stack bound of a build: the objects its libraries list (each with the
//! `.su` file its compiler wrote beside it), read and bounded by
//! [`objects::stack`](crate::objects::stack), the bounds kept beside the
//! lists so a rebuild of the same objects reads none of them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cargo::cache;
use crate::cargo::record::{self, record_struct};
use crate::cargo::write::write_if_changed;
use crate::error::{Error, ErrorKind, Result};
use crate::objects::elf::strong_definitions;
use crate::objects::library::Archive;
use crate::objects::stack::{Program, StackBound, StackFrame};
use crate::toolchain::compile::{self, Provenance};
use crate::toolchain::inputs;

/// The bound of each root in `roots` over the objects the lists name (each a
/// file of object paths, one per line, as [`crate::toolchain::compile::Library`]
/// writes it), with their `.su` files beside them, and the functions they
/// use from the toolchain's `libraries` (in link order). The bounds are kept
/// beside the first list (`lib<name>.stack.json`) with the key of what they
/// were computed from: a rebuild of the same objects reads none of them.
pub(crate) fn analyse(object_lists: &[PathBuf], libraries: &[PathBuf], roots: &[String]) -> Result<Vec<StackBound>> {
    let cache = object_lists.first().map(|list| list.with_extension("stack.json"));
    let key = cache_key(object_lists, libraries, roots)?;
    if let Some(bounds) = cache.as_deref().and_then(|cache| read_cache(cache, &key)) {
        return Ok(bounds);
    }
    let mut program = Program::default();
    let mut definitions = Definitions::default();
    for list in object_lists {
        let text = std::fs::read_to_string(list).map_err(|e| Error::io("read", list, e))?;
        for (provenance, object) in listed(list, &text)? {
            let bytes = std::fs::read(object).map_err(|e| Error::io("read", object, e))?;
            definitions.add(object, provenance, &bytes)?;
            // Only this build's compiler writes a `.su` file to trust: one beside a
            // prebuilt object is the archive's, and its frames come from its code.
            let stack_usage = match provenance {
                Provenance::Compiled => std::fs::read_to_string(object.with_extension("su")).ok(),
                Provenance::Prebuilt => None,
            };
            let label = object.file_name().map_or_else(String::new, |name| name.to_string_lossy().into_owned());
            program.add_object(&label, &bytes, stack_usage.as_deref())?;
        }
    }
    let archives: Vec<Arc<Archive>> = libraries.iter().filter_map(|path| Archive::open(path)).collect();
    program.add_library_code(&archives);
    let bounds: Vec<StackBound> = roots.iter().map(|root| program.bound(root)).collect();
    if let Some(cache) = &cache {
        let stored = CachedBounds {
            key,
            bounds: bounds
                .iter()
                .map(|bound| CachedBound {
                    bytes: bound.bytes,
                    unknown: bound.unknown.clone(),
                    path: bound.path.iter().map(|step| (step.function.clone(), step.bytes)).collect(),
                })
                .collect(),
        };
        write_if_changed(cache, &record::to_bytes(&stored))?;
    }
    Ok(bounds)
}

/// The symbols the build's objects define, by where they come from: a
/// prebuilt object must define none that mlf-build's own code (its support
/// runtime, the glue, the archive's C it compiled) defines, which would fail at link time.
#[derive(Default)]
struct Definitions {
    compiled: HashMap<String, PathBuf>,
    prebuilt: HashMap<String, PathBuf>,
}

impl Definitions {
    fn add(&mut self, object: &Path, provenance: Provenance, bytes: &[u8]) -> Result<()> {
        for name in strong_definitions(bytes) {
            let (own, other) = match provenance {
                Provenance::Compiled => (&mut self.compiled, &self.prebuilt),
                Provenance::Prebuilt => (&mut self.prebuilt, &self.compiled),
            };
            if let Some(elsewhere) = other.get(&name) {
                let (prebuilt, compiled) = match provenance {
                    Provenance::Compiled => (elsewhere.as_path(), object),
                    Provenance::Prebuilt => (object, elsewhere.as_path()),
                };
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("the prebuilt object defines `{name}`, which mlf-build's own code defines too (in `{}`)", compiled.display()),
                )
                .in_file(prebuilt.display().to_string())
                .help("objects under codegen/host/lib must not define mlf-build's support or glue symbols: pass the archive's original objects, as TVM wrote them"));
            }
            own.entry(name).or_insert_with(|| object.to_path_buf());
        }
        Ok(())
    }
}

/// The objects object list `list` (its text) names, with where each comes from.
fn listed<'t>(list: &Path, text: &'t str) -> Result<Vec<(Provenance, &'t Path)>> {
    compile::listed_objects(text).collect::<Option<Vec<_>>>().ok_or_else(|| {
        Error::new(ErrorKind::Toolchain, format!("`{}` is not an object list this version of mlf-build wrote", list.display()))
            .help("remove the build's output directory (cargo clean) and build again")
    })
}

/// What [`analyse`] keeps of its bounds, and the key they were computed for.
struct CachedBounds {
    key: String,
    bounds: Vec<CachedBound>,
}
record_struct!(CachedBounds { key, bounds });

struct CachedBound {
    bytes: Option<u64>,
    unknown: Option<String>,
    path: Vec<(String, u64)>,
}
record_struct!(CachedBound { bytes, unknown, path });

/// The bounds kept in `cache` when their key is `key`.
fn read_cache(cache: &Path, key: &str) -> Option<Vec<StackBound>> {
    let stored: CachedBounds = record::from_bytes(&std::fs::read(cache).ok()?)?;
    (stored.key == key).then(|| {
        stored
            .bounds
            .into_iter()
            .map(|bound| StackBound {
                bytes: bound.bytes,
                unknown: bound.unknown,
                path: bound.path.into_iter().map(|(function, bytes)| StackFrame { function, bytes }).collect(),
            })
            .collect()
    })
}

/// What the bounds depend on, without reading an object: the lists, each
/// object's and `.su` file's and library's size and time, the roots, and the
/// program computing them (the build script, rebuilt when mlf-build changes).
fn cache_key(object_lists: &[PathBuf], libraries: &[PathBuf], roots: &[String]) -> Result<String> {
    let stamp = |path: &Path| format!("{}\t{:?}\n", path.display(), inputs::stat(path));
    let mut parts = vec![env!("CARGO_PKG_VERSION").to_string(), roots.join("\n")];
    parts.extend(std::env::current_exe().ok().map(|exe| stamp(&exe)));
    for list in object_lists {
        let text = std::fs::read_to_string(list).map_err(|e| Error::io("read", list, e))?;
        for (_, object) in listed(list, &text)? {
            parts.push(stamp(object));
            parts.push(stamp(&object.with_extension("su")));
        }
        parts.push(text);
    }
    parts.extend(libraries.iter().map(|library| stamp(library)));
    Ok(cache::key(&parts.iter().map(|part| part.as_bytes()).collect::<Vec<_>>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second bound of the same objects comes from `lib<name>.stack.json`
    /// without reading them; a changed object is read again.
    #[test]
    fn a_rebuild_of_the_same_objects_reads_none() {
        let dir = crate::test_support::scratch("stack-cache");
        std::fs::write(dir.join("root.c"), "int root(int n) { volatile char buf[32]; buf[n & 31] = 1; return buf[0]; }\n").unwrap();
        let status =
            std::process::Command::new("cc").args(["-O1", "-fstack-usage", "-c", "root.c", "-o", "root.o"]).current_dir(&dir).status();
        if !status.is_ok_and(|status| status.success()) {
            crate::test_support::skip("no host C compiler (cc)");
            return;
        }
        let object = dir.join("root.o");
        let list = dir.join("libmodel.objects");
        std::fs::write(&list, format!("compiled\t{}\n", object.display())).unwrap();
        let roots = ["root".to_string()];
        let first = analyse(std::slice::from_ref(&list), &[], &roots).unwrap();
        assert!(first[0].bytes.is_some(), "{first:?}");
        assert!(dir.join("libmodel.stack.json").is_file());
        // Same size and time, other bytes: only a read would notice.
        let modified = std::fs::metadata(&object).unwrap().modified().unwrap();
        let garbage = vec![0u8; std::fs::metadata(&object).unwrap().len() as usize];
        std::fs::write(&object, &garbage).unwrap();
        std::fs::File::options().write(true).open(&object).unwrap().set_modified(modified).unwrap();
        assert_eq!(analyse(std::slice::from_ref(&list), &[], &roots).unwrap(), first);
        std::fs::File::options().write(true).open(&object).unwrap().set_modified(modified + std::time::Duration::from_secs(1)).unwrap();
        let again = analyse(std::slice::from_ref(&list), &[], &roots).unwrap();
        assert!(again[0].unknown.as_deref().is_some_and(|why| why.contains("root.o")), "{again:?}");
    }

    /// A `.su` file beside a prebuilt object is the archive's: the frames come
    /// from the object's code (unknown for x86-64), never from the file.
    #[test]
    fn a_prebuilt_objects_stack_usage_file_is_not_read() {
        let flags = ["-mthumb", "-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"];
        let source = "int root(int n) { volatile char buf[4096]; buf[n & 4095] = 1; return buf[n / 2]; }\n";
        for (compiler, flags) in [("cc", &[][..]), ("arm-none-eabi-gcc", &flags[..])] {
            let dir = crate::test_support::scratch(&format!("stack-prebuilt-{compiler}"));
            std::fs::write(dir.join("root.c"), source).unwrap();
            let status = std::process::Command::new(compiler)
                .args(flags)
                .args(["-O1", "-ffunction-sections", "-c", "root.c", "-o", "root.o"])
                .current_dir(&dir)
                .status();
            if !status.is_ok_and(|status| status.success()) {
                crate::test_support::skip(&format!("no {compiler}"));
                continue;
            }
            // The archive's lie: an 8-byte frame.
            std::fs::write(dir.join("root.su"), "root.c:2:5:root\t8\tstatic\n").unwrap();
            let list = dir.join("libmodel.objects");
            std::fs::write(&list, format!("prebuilt\t{}\n", dir.join("root.o").display())).unwrap();
            let bound = analyse(std::slice::from_ref(&list), &[], &["root".to_string()]).unwrap().remove(0);
            if compiler == "cc" {
                let why = bound.unknown.unwrap_or_default();
                assert!(why.contains("machine code is not read") || why.contains("not read from its code"), "{why}");
            } else {
                assert!(bound.path[0].bytes >= 4096, "{bound:?}");
            }
            // Listed as this build's compile, the same file is the compiler's.
            std::fs::write(&list, format!("compiled\t{}\n", dir.join("root.o").display())).unwrap();
            let trusted = analyse(std::slice::from_ref(&list), &[], &["root".to_string()]).unwrap().remove(0);
            assert_eq!(trusted.path.first().map(|step| step.bytes), Some(8), "{trusted:?}");
        }
    }

    /// A prebuilt object defining a symbol this build's own code defines is refused, naming both.
    #[test]
    fn a_prebuilt_object_defining_mlf_builds_symbols_is_refused() {
        let text = ".text\n.globl TVMPlatformAbort\n.type TVMPlatformAbort,@function\nTVMPlatformAbort:\nret\n";
        let Some(object) = crate::test_support::assembled("stack-collision", text) else { return };
        let dir = crate::test_support::scratch("stack-collision-lists");
        let (ours, theirs) = (dir.join("support.o"), dir.join("default_lib0.o"));
        std::fs::write(&ours, &object).unwrap();
        std::fs::write(&theirs, &object).unwrap();
        let (model, support) = (dir.join("libmodel.objects"), dir.join("libsupport.objects"));
        std::fs::write(&model, format!("prebuilt\t{}\n", theirs.display())).unwrap();
        std::fs::write(&support, format!("compiled\t{}\n", ours.display())).unwrap();
        let error = analyse(&[model, support], &[], &["TVMPlatformAbort".to_string()]).unwrap_err().to_string();
        assert!(error.contains("defines `TVMPlatformAbort`") && error.contains("default_lib0.o") && error.contains("support.o"), "{error}");
    }
}
