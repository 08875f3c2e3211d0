//! The libraries a build compiles (the model's and mlf-build's support code),
//! what goes into each, and the settings that key their rebuilds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::sha256::Sha256;

use crate::cargo::cache;
use crate::cargo::directive::Directives;
use crate::cargo::env::{self, Env};
use crate::cargo::write::{write_if_changed, write_streamed_if_changed};
use crate::codegen::kernel_scratch::{self, ScratchFiles};
use crate::codegen::{self, glue, redirect, stepper};
use crate::error::{Error, ErrorKind, Result};
use crate::ident::CIdent;
use crate::input::{sources, user_path};
use crate::objects::rename::{self, Private};
use crate::objects::sections::SectionNames;
use crate::own_code;
use crate::plan::model::{Compiled, ModulePlan, Plan};
use crate::plan::profile;
use crate::toolchain::bindings;
use crate::toolchain::compile::{Compilers, Library, STACK_FLAGS};
use crate::toolchain::target::Target;

use super::kernels::{KernelCode, ScratchSupply};

/// Settings that change compiled code, shared by the model and support libraries.
pub(super) struct CompileConfig<'a> {
    pub base: &'a cc::Build,
    pub compilers: &'a Compilers,
    pub show_warnings: bool,
    pub target: &'a Target,
    pub env: &'a Env,
    /// How the crate's symbols are made its own; `None`: they keep their names.
    pub privacy: Option<&'a Privacy>,
}

/// The names mlf-build's support library defines (`build-support/src`; a test
/// compares them with the compiled library): the model's library calls them
/// under the crate's tag unless the support runtime is shared.
pub(crate) const SUPPORT_EXPORTS: [&str; 14] = [
    "TVMFuncRegisterGlobal",
    "TVMLogf",
    "TVMPlatformAbort",
    "TVMPlatformMemoryAllocate",
    "TVMPlatformMemoryFree",
    "mlf_support_arena_place",
    "mlf_support_arena_reset",
    "mlf_support_call",
    "mlf_support_emit_log",
    "mlf_support_enter",
    "mlf_support_leave",
    "mlf_support_set_log_hook",
    "mlf_support_step",
    "mlf_support_workspace_peak",
];

/// How a crate's symbols are made its own: its tag, and whether the support
/// runtime keeps its names, so crates that all share it link one copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Privacy {
    pub tag: String,
    pub shared_support: bool,
}

impl Privacy {
    /// The privacy of the crate Cargo is building (`CARGO_PKG_NAME`,
    /// `CARGO_PKG_VERSION`) for `target`. `None` outside Cargo (no crate to
    /// be private to) and for targets whose objects are not ELF (Apple's,
    /// Windows', WebAssembly), whose symbol tables mlf-build does not rewrite.
    pub fn of_crate(target: &Target, shared_support: bool) -> Option<Privacy> {
        if !target.writes_elf_objects() {
            return None;
        }
        let package = env::cargo_provided("CARGO_PKG_NAME")?;
        let version = env::cargo_provided("CARGO_PKG_VERSION").unwrap_or_default();
        Some(Privacy { tag: rename::crate_tag(&package, &version), shared_support })
    }

    /// The support library's renaming: none when it is shared.
    fn support(&self) -> Option<Private> {
        (!self.shared_support).then(|| Private { tag: self.tag.clone(), imports: Vec::new() })
    }

    /// The model library's renaming: its own names and the support library's when that is private.
    fn model(&self) -> Private {
        let imports = if self.shared_support { Vec::new() } else { SUPPORT_EXPORTS.map(String::from).to_vec() };
        Private { tag: self.tag.clone(), imports }
    }
}

/// Environment variables `cc` reads, each also as `<NAME>_<target>` and
/// `TARGET_<NAME>` (`HOST_<NAME>` when not cross-compiling).
const CC_VARIABLES: &[&str] = &["CC", "CFLAGS", "CXX", "CXXFLAGS", "AR", "ARFLAGS"];

/// `NAME=value` of every variable that changes the compilers `cc` and bindgen
/// use for `target` or their arguments.
pub(super) fn compiler_environment(target: &Target, env: &Env) -> Vec<String> {
    let triple = &target.triple;
    let underscored = triple.replace('-', "_");
    let kind = if target.triple == target.host { "HOST" } else { "TARGET" };
    let mut variables = vec!["CRATE_CC_NO_DEFAULTS".to_string()];
    for name in CC_VARIABLES {
        variables.extend([name.to_string(), format!("{name}_{triple}"), format!("{name}_{underscored}"), format!("{kind}_{name}")]);
    }
    // bindgen's extra clang arguments, by its own naming of the per-target variants.
    let bindgen = "BINDGEN_EXTRA_CLANG_ARGS";
    variables.extend([bindgen.to_string(), format!("{bindgen}_{triple}"), format!("{bindgen}_{underscored}")]);
    variables.iter().map(|name| format!("{name}={:?}", env.var(name))).collect()
}

/// Variables Cargo sets and tracks itself that change what `cc` passes the compiler.
const CARGO_VARIABLES: &[&str] = &["OPT_LEVEL", "DEBUG", "PROFILE"];

impl CompileConfig<'_> {
    /// Everything besides the sources that determines the compiled objects, as
    /// explicit data: the target, the compilers and archiver `cc` resolved with
    /// their arguments, and the environment they were resolved from.
    pub fn fingerprint(&self) -> Vec<u8> {
        let triple = &self.target.triple;
        let mut lines =
            vec![format!("target={triple}"), format!("host={}", self.target.host), format!("show_warnings={}", self.show_warnings)];
        lines.extend(compiler_environment(self.target, self.env));
        for name in CARGO_VARIABLES {
            lines.push(format!("{name}={:?}", env::cargo_provided(name)));
        }
        lines.push(self.compilers.identity.clone());
        lines.push(format!("privacy={:?}", self.privacy));
        lines.join("\n").into_bytes()
    }
}

/// Writes mlf-build's own C below `dir` (each file only when its bytes changed).
pub(super) fn write_own_code(dir: &Path) -> Result<()> {
    for (path, bytes) in own_code::files() {
        write_if_changed(&dir.join(path), bytes)?;
    }
    Ok(())
}

/// A hash of mlf-build's own C, paths and bytes, for the cache keys of what compiles with it.
pub(super) fn own_code_digest() -> String {
    let parts: Vec<&[u8]> = own_code::files().flat_map(|(path, bytes)| [path.as_bytes(), bytes]).collect();
    cache::key(&parts)
}

/// The crate's platform layer, built once per output directory and build
/// script run however many archives it builds.
pub(super) fn support_library(out_dir: &Path, support: &Path, config: &CompileConfig<'_>) -> Result<Library> {
    // Held while building, so a second archive's build waits for the first's.
    static BUILT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let shared = config.privacy.is_some_and(|privacy| privacy.shared_support);
    // A shared runtime keeps its names: a library of its own, beside a private one of the same crate.
    let (name, dir) = if shared { ("mlf_support_shared", "support-shared") } else { ("mlf_support", "support") };
    let library = Library {
        name: name.to_string(),
        c_sources: vec![support.join(own_code::LIBRARY_SOURCE)],
        cxx_sources: Vec::new(),
        objects: Vec::new(),
        include_dirs: vec![support.join("include"), support.join("runtime-include")],
        defines: Vec::new(),
        out_dir: out_dir.join("mlf").join(dir),
        root: out_dir.join("mlf"),
        directives: config.env.directives.clone(),
        sections: SectionNames::default(),
        external_sources: Vec::new(),
        instrumented: Vec::new(),
        untimed_functions: Vec::new(),
        private: config.privacy.and_then(Privacy::support),
        header_sources: Vec::new(),
        including: Vec::new(),
    };
    let mut built = BUILT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !built.contains(&library.out_dir) {
        let key = cache::key(&[
            env!("CARGO_PKG_VERSION").as_bytes(),
            own_code_digest().as_bytes(),
            &config.fingerprint(),
            STACK_FLAGS.join(" ").as_bytes(),
        ]);
        let stamp = cache::Stamp { path: library.out_dir.join("stamp"), key };
        if !(stamp.is_current() && library.is_built()) {
            stamp.invalidate()?;
            library.compile(config.compilers, config.base, || ())?;
            stamp.record()?;
        }
        built.insert(library.out_dir.clone());
    }
    Ok(library)
}

/// With `link_section(Storage::Workspace, ..)`, arena group `group`'s arena
/// as one real definition, which can be placed (a common symbol has no
/// section): `OUT_DIR/mlf/group-<group>/libmlf_group_<group>.a`, holding the
/// arena at `bytes` and `alignment`, the largest and strictest of the members
/// built so far. Each member's Builder rewrites it, so when the program links
/// it holds the whole group's; it links whole, and the members' common
/// definitions merge into it (docs/src/arena-groups.md).
pub(super) fn group_arena_library(
    out_dir: &Path,
    group: &CIdent,
    bytes: u64,
    alignment: u64,
    sections: &SectionNames,
    config: &CompileConfig<'_>,
) -> Result<Library> {
    let symbol = glue::group_arena_symbol(group);
    let dir = out_dir.join("mlf").join(format!("group-{group}"));
    let source = dir.join(format!("{symbol}.c"));
    // `.bss.*`: zero-initialised and never common; placing renames it to the workspace section.
    let text = format!(
        "/* @generated by mlf-build: the one definition of arena group `{group}`'s arena, placed with\n   \
         Builder::link_section(Storage::Workspace, ..): the largest member's scratch so far, at the\n   \
         strictest member's alignment. Each member's Builder rewrites it. */\n\
         __attribute__((section(\".bss.{symbol}\"), aligned({alignment}))) unsigned char {symbol}[{bytes}];\n"
    );
    write_if_changed(&source, text.as_bytes())?;
    let library = Library {
        name: format!("mlf_group_{group}"),
        c_sources: vec![source],
        cxx_sources: Vec::new(),
        objects: Vec::new(),
        include_dirs: Vec::new(),
        defines: Vec::new(),
        out_dir: dir.clone(),
        root: out_dir.join("mlf"),
        directives: config.env.directives.clone(),
        sections: sections.clone(),
        external_sources: Vec::new(),
        instrumented: Vec::new(),
        untimed_functions: Vec::new(),
        // Renamed as the members' references are.
        private: config.privacy.map(Privacy::model),
        header_sources: Vec::new(),
        including: Vec::new(),
    };
    let key = cache::key(&[text.as_bytes(), &config.fingerprint(), format!("{sections:?}").as_bytes()]);
    let stamp = cache::Stamp { path: dir.join("stamp"), key };
    if !(stamp.is_current() && library.is_built()) {
        stamp.invalidate()?;
        library.compile(config.compilers, config.base, || ())?;
        stamp.record()?;
    }
    Ok(library)
}

/// The archive's code, its runtime sources and the generated glue, as one
/// library, and the text of everything generated (part of the cache key).
pub(super) fn model_library(
    plan: &Plan,
    stem: &str,
    work: &Path,
    package: &str,
    sections: &SectionNames,
    extra: &ExtraCode<'_>,
    privacy: Option<&Privacy>,
) -> Result<(Library, Vec<u8>)> {
    let (tree_dir, gen_dir) = (&work.join("tree"), &work.join("gen"));
    let mut generated = Vec::new();
    let mut c_sources = Vec::new();
    let mut cxx_sources = Vec::new();
    let mut objects = Vec::new();
    let mut instrumented = Vec::new();
    let mut untimed_functions = Vec::new();
    let mut including = Vec::new();
    for module in &plan.modules {
        c_sources.extend(module.codegen.c_sources.iter().map(|p| tree_dir.join(p)));
        cxx_sources.extend(module.codegen.cxx_sources.iter().map(|p| tree_dir.join(p)));
        if let Some(timed) = module.profile.as_ref().filter(|_| profile::is_instrumented(module)) {
            instrumented.extend(module.codegen.c_sources.iter().chain(&module.codegen.cxx_sources).map(|p| tree_dir.join(p)));
            untimed_functions.extend(timed.untimed.iter().map(ToString::to_string));
        }
        objects.extend(module.codegen.objects.iter().map(|p| tree_dir.join(p)));
        let workspace = module.arena_group.as_ref().and_then(|group| group.code_workspace.as_ref());
        let mut appended_to_edited = String::new();
        // A split run's sources compile as copies that include the originals and append the step code.
        for copy in stepper::sources(&module.name, module.entry_split.as_ref()) {
            // The source an arena group edits carries the step code in its one copy.
            if workspace.is_some_and(|workspace| workspace.file == copy.original) {
                appended_to_edited = copy.appended;
                continue;
            }
            let bytes = copy.text(&copy.original_included())?;
            write_if_changed(&gen_dir.join(&copy.path), &bytes)?;
            generated.extend(&bytes);
            let original = tree_dir.join(&copy.original);
            for source in c_sources.iter_mut().chain(&mut instrumented).filter(|source| **source == original) {
                *source = gen_dir.join(&copy.path);
            }
            including.push((gen_dir.join(&copy.path), original));
        }
        if let Some(workspace) = workspace {
            let original = tree_dir.join(&workspace.file);
            let text = std::fs::read_to_string(&original).map_err(|e| Error::io("read", &original, e))?;
            let bytes = redirect::apply(&workspace.file, &text, &workspace.edits, &appended_to_edited)?.into_bytes();
            let path = gen_dir.join(redirect::copy_path(&workspace.file));
            write_if_changed(&path, &bytes)?;
            generated.extend(&bytes);
            for source in c_sources.iter_mut().chain(&mut instrumented).filter(|source| **source == original) {
                *source = path.clone();
            }
        }
        if let Some((path, write)) = codegen::params_source(module) {
            // Not part of the key: it follows from the `.params` bytes (in the
            // tree's digest) and the layout the glue states.
            write_streamed_if_changed(&gen_dir.join(&path), write)?;
            c_sources.push(gen_dir.join(path));
        }
    }
    for file in codegen::c_files(plan, package) {
        write_if_changed(&gen_dir.join(&file.path), &file.bytes)?;
        if file.is_c_source() {
            c_sources.push(gen_dir.join(&file.path));
        }
        generated.extend(file.bytes);
    }
    let mut external_sources = Vec::new();
    let allocates = plan.modules.iter().any(|m| m.needs.workspace_allocator);
    // The crate's own backend even when the archive ships TVM's: the runtime's
    // `assert()` pulls the C library's stdio and syscalls into bare-metal builds.
    if allocates {
        external_sources.push(extra.support_dir.join(own_code::BACKEND_SOURCE));
    }
    let crt_config = match &plan.crt_config_template {
        Some(path) => std::fs::read(tree_dir.join(path)).map_err(|e| Error::io("read", &tree_dir.join(path), e))?,
        None => DEFAULT_CRT_CONFIG.as_bytes().to_vec(),
    };
    write_if_changed(&gen_dir.join("crt_config.h"), &crt_config)?;
    generated.extend(&crt_config);
    if let Some(kernels) = extra.kernels {
        for wrapper in &kernels.wrappers {
            write_if_changed(&gen_dir.join(&wrapper.path), &wrapper.bytes)?;
            external_sources.push(gen_dir.join(&wrapper.path));
        }
    }
    let alignment = plan.modules.iter().map(|m| m.alignment).max().unwrap_or(16);
    for source in extra.sources {
        extra.directives.rerun_if_changed(source)?;
        match source.extension().and_then(|e| e.to_str()) {
            Some("c" | "cc" | "cpp" | "cxx") => external_sources.push(source.clone()),
            _ => {
                return Err(Error::new(ErrorKind::Config, format!("Builder::source(\"{}\"): not a C or C++ source", source.display()))
                    .help("pass .c, .cc, .cpp or .cxx files; headers go in a directory given to Builder::include_dir"))
            }
        }
    }
    let (external_cxx, external_c): (Vec<PathBuf>, Vec<PathBuf>) =
        external_sources.iter().cloned().partition(|source| source.extension().is_some_and(|e| e != "c"));
    c_sources.extend(external_c);
    cxx_sources.extend(external_cxx);
    let mut defines = vec![("TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES".to_string(), Some(alignment.to_string()))];
    defines.extend(extra.defines.iter().cloned());
    let library = Library {
        name: format!("mlf_{stem}"),
        c_sources,
        cxx_sources,
        objects,
        include_dirs: include_dirs(plan, tree_dir, gen_dir, extra),
        defines,
        out_dir: work.join("lib"),
        // `work` is `OUT_DIR/mlf/build/<stem>`.
        root: work.ancestors().nth(2).unwrap_or(work).to_path_buf(),
        directives: extra.directives.clone(),
        sections: sections.clone(),
        external_sources,
        instrumented,
        untimed_functions,
        private: privacy.map(Privacy::model),
        header_sources: plan.modules.iter().map(|module| gen_dir.join(glue::source_name(module))).collect(),
        including,
    };
    Ok((library, generated))
}

/// Gives the calls `supplies` names mlf-build's scratch: each module's buffer
/// joins the model's library, each calling file is compiled through its
/// wrapper instead, and the module's memory map counts the buffer. The
/// generated text extends `generated` (the cache key).
pub(super) fn supply_scratch(
    model: &mut Library,
    generated: &mut Vec<u8>,
    plan: &Plan,
    compiled: &mut [Compiled],
    supplies: &[ScratchSupply],
    work: &Path,
) -> Result<()> {
    let (tree_dir, gen_dir) = (work.join("tree"), work.join("gen"));
    for ((index, module), compiled) in plan.modules.iter().enumerate().zip(compiled) {
        let own: Vec<&ScratchSupply> = supplies.iter().filter(|supply| supply.module == index).collect();
        let Some(bytes) = own.iter().map(|supply| supply.bytes).max() else { continue };
        let mut calls: BTreeMap<String, BTreeSet<CIdent>> = BTreeMap::new();
        for supply in own {
            calls.entry(supply.file.clone()).or_default().insert(CIdent::new("CMSIS-NN kernel", &supply.kernel)?);
        }
        let group =
            module.arena_group.as_ref().map(|group| (glue::group_arena_symbol(&group.name), group.kernel_scratch_offset(module.alignment)));
        let edited = module.arena_group.as_ref().and_then(|group| group.code_workspace.as_ref()).map(|workspace| workspace.file.as_str());
        let code = kernel_scratch::files(&ScratchFiles { module: &module.name, bytes, alignment: module.alignment, calls, group, edited })?;
        write_if_changed(&gen_dir.join(&code.buffer.path), &code.buffer.bytes)?;
        generated.extend(&code.buffer.bytes);
        model.c_sources.push(gen_dir.join(&code.buffer.path));
        for (file, wrapper) in code.wrappers {
            write_if_changed(&gen_dir.join(&wrapper.path), &wrapper.bytes)?;
            generated.extend(&wrapper.bytes);
            // The edited copy of a source an arena group edits is what compiles (and holds any step code).
            let original = match edited {
                Some(edited) if edited == file => gen_dir.join(redirect::copy_path(&file)),
                _ => tree_dir.join(&file),
            };
            // A split run's copy of the file includes the wrapper instead of the original.
            let copied = |copy: &stepper::SteppedSource| model.including.iter().any(|(source, _)| *source == gen_dir.join(&copy.path));
            if let Some(copy) =
                stepper::sources(&module.name, module.entry_split.as_ref()).into_iter().find(|copy| copy.original == file && copied(copy))
            {
                let bytes = copy.text(&Path::new("gen").join(&wrapper.path))?;
                write_if_changed(&gen_dir.join(&copy.path), &bytes)?;
                generated.extend(&bytes);
                continue;
            }
            let source = model.c_sources.iter_mut().chain(&mut model.cxx_sources).find(|source| **source == original);
            let source = source.ok_or_else(|| {
                Error::new(ErrorKind::Unsupported, "a source calling CMSIS-NN is not among the sources the build compiles")
                    .in_file(file.clone())
            })?;
            *source = gen_dir.join(&wrapper.path);
            for instrumented in model.instrumented.iter_mut().filter(|instrumented| **instrumented == original) {
                *instrumented = gen_dir.join(&wrapper.path);
            }
        }
        compiled.kernel_scratch_bytes = bytes;
    }
    Ok(())
}

/// `crt_config.h` for archives that ship no template: TVM's documented defaults, logging errors only.
const DEFAULT_CRT_CONFIG: &str = "/* crt_config.h written by mlf-build: TVM's defaults. */
#ifndef TVM_RUNTIME_CRT_CONFIG_H_
#define TVM_RUNTIME_CRT_CONFIG_H_
#define TVM_CRT_LOG_LEVEL 1
#define TVM_CRT_DEBUG 0
#define TVM_CRT_MAX_NDIM 6
#define TVM_CRT_MAX_ARGS 10
#define TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES 512
#define TVM_CRT_MAX_REGISTERED_MODULES 2
#define TVM_CRT_MAX_PACKET_SIZE_BYTES 2048
#define TVM_CRT_MAX_STRLEN_DLTYPE 10
#define TVM_CRT_MAX_STRLEN_FUNCTION_NAME 120
#define TVM_CRT_MAX_STRLEN_PARAM_NAME 80
#define TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES 120
#endif
";

/// The include path of the archive's C, the glue and bindgen alike: the
/// archive's headers, the generated ones, the runtime headers (the archive's
/// own, else mlf-build's), mlf-build's support headers, then the user's.
fn include_dirs(plan: &Plan, tree_dir: &Path, gen_dir: &Path, extra: &ExtraCode<'_>) -> Vec<PathBuf> {
    let support = extra.support_dir;
    let runtime_include = if plan.has_runtime { tree_dir.join("runtime/include") } else { support.join("runtime-include") };
    let mut dirs = vec![tree_dir.join(sources::INCLUDE_DIR), gen_dir.to_path_buf(), runtime_include, support.join("include")];
    dirs.extend(extra.include_dirs.iter().cloned());
    dirs.extend(extra.kernels.map(|kernels| kernels.include_dir.clone()));
    dirs
}

pub(super) fn bindings_spec(
    module: &ModulePlan,
    plan: &Plan,
    tree_dir: &Path,
    gen_dir: &Path,
    extra: &ExtraCode<'_>,
    target_clang_args: &[String],
    privacy: Option<&Privacy>,
) -> bindings::BindingsSpec {
    let m = &module.name;
    bindings::BindingsSpec {
        header: gen_dir.join(glue::header_name(module)),
        include_dirs: include_dirs(plan, tree_dir, gen_dir, extra),
        clang_args: extra
            .defines
            .iter()
            .map(|(name, value)| value.as_ref().map_or_else(|| format!("-D{name}"), |value| format!("-D{name}={value}")))
            .chain(target_clang_args.iter().cloned())
            .collect(),
        allow: vec![
            format!("tvmgen_{m}_.*"),
            format!("TVMGEN_{}_.*", m.to_uppercase()),
            format!("mlf_{m}_.*"),
            "mlf_support_(call|workspace_peak|set_log_hook)".to_string(),
            "mlf_status_t|MLF_STATUS_.*".to_string(),
            // The descriptor and what a generic runner needs to call it.
            "tvm_model_t|TVMValue|DLTensor|DLDevice|DLDataType|DLDeviceType|TVMArgTypeCode".to_string(),
        ],
        link_prefix: privacy.map(|privacy| privacy.tag.clone()),
        unprefixed: match privacy {
            Some(privacy) if privacy.shared_support => SUPPORT_EXPORTS.map(String::from).to_vec(),
            _ => Vec::new(),
        },
    }
}

/// External code for the archive (BYOC): Builder options as plain data, and
/// where mlf-build's own C was written.
pub(super) struct ExtraCode<'a> {
    pub include_dirs: &'a [PathBuf],
    pub sources: &'a [PathBuf],
    pub defines: &'a [(String, Option<String>)],
    pub support_dir: &'a Path,
    /// CMSIS-NN, when the archive's code calls it.
    pub kernels: Option<&'a KernelCode>,
    /// Where the rerun lines for the sources and include directories go.
    pub directives: Directives,
}

impl ExtraCode<'_> {
    /// Everything about the external code that changes the compiled library:
    /// paths, defines, the sources' bytes and the include directories' file list and times.
    pub fn fingerprint(&self) -> Result<Vec<u8>> {
        let mut text = format!("{:?}|{:?}|{:?}", self.include_dirs, self.sources, self.defines).into_bytes();
        let kernel_sources = self.kernels.iter().flat_map(|kernels| &kernels.originals);
        for source in self.sources.iter().chain(kernel_sources.clone()) {
            // Hashed as it is read: a source of any size costs no memory.
            let (file, length) = user_path::open_regular(source)?;
            let mut hasher = Sha256::new();
            std::io::copy(&mut std::io::Read::take(file, length), &mut hasher).map_err(|e| Error::io("read", source, e))?;
            text.extend(hasher.finalize());
        }
        for source in kernel_sources {
            self.directives.rerun_if_changed(source)?;
        }
        for dir in self.include_dirs.iter().chain(self.kernels.map(|kernels| &kernels.include_dir)) {
            self.directives.rerun_if_changed(dir)?;
            if !dir.is_dir() {
                return Err(Error::new(ErrorKind::Config, format!("Builder::include_dir(\"{}\"): no such directory", dir.display()))
                    .help("include directories are relative to the package root"));
            }
            for entry in user_path::files_below(dir, "the include directory", |_| true)? {
                if let Ok(meta) = std::fs::metadata(&entry) {
                    let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                    text.extend(format!("{}|{}|{:?}\n", entry.display(), meta.len(), modified).into_bytes());
                }
            }
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::rename::Tables;
    use crate::test_support::{run_ok, scratch};

    /// [`SUPPORT_EXPORTS`] are exactly what the compiled support library defines.
    #[test]
    fn support_exports_are_what_the_support_library_defines() {
        let dir = scratch("support-exports");
        write_own_code(&dir).unwrap();
        let object = dir.join("support.o");
        run_ok(
            std::process::Command::new("cc")
                .args(["-c", "-I"])
                .arg(dir.join("include"))
                .arg("-I")
                .arg(dir.join("runtime-include"))
                .arg(dir.join(own_code::LIBRARY_SOURCE))
                .arg("-o")
                .arg(&object),
        );
        let mut defined: Vec<String> =
            Tables::read(&object).unwrap().unwrap().defined().unwrap().into_iter().map(|name| String::from_utf8(name).unwrap()).collect();
        defined.sort();
        assert_eq!(defined, SUPPORT_EXPORTS);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
