//! The Builder: the shell around the pure stages. It reads and plans the
//! archive, probes the toolchain, compiles, binds and writes under `OUT_DIR`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::cargo::cache;
use crate::cargo::directive;
use crate::cargo::env;
use crate::cargo::write::{write_if_changed, write_streamed_if_changed};
use crate::codegen::{self, glue, rust as emit, support};
use crate::error::{Error, ErrorKind, Result};
use crate::input::archive::{Limits, Tree};
use crate::input::{metadata, sources};
use crate::plan::checks::check_core;
use crate::plan::model::{ModulePlan, Plan};
use crate::plan::report::ModuleReport;
use crate::plan::{PlanOptions, Planned};
use crate::toolchain::compile::Library;
use crate::toolchain::target::{self, Target};
use crate::toolchain::{bindings, joined};
use crate::MemoryNeeds;
use crate::TensorData;

/// Builds one Model Library Format archive into the crate being compiled.
///
/// Options are plain data; [`Builder::build`] does the work.
#[derive(Debug, Clone)]
pub struct Builder {
    archive: PathBuf,
    show_warnings: Option<bool>,
    cc: Option<cc::Build>,
    target: Option<String>,
    cpu: Option<String>,
    renames: Vec<(String, String)>,
    include_dirs: Vec<PathBuf>,
    sources: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    limits: Limits,
    mlf_rt: bool,
}

/// What [`Builder::build`] produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Output {
    /// One entry per module of the archive, sorted by name.
    pub modules: Vec<GeneratedModule>,
}

/// The generated Rust of one module.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GeneratedModule {
    /// The module name (`default` unless the archive was exported with another).
    pub name: String,
    /// The file to `include!`: `$OUT_DIR/mlf/<name>.rs`.
    pub rust_file: PathBuf,
    /// What the module needs in bytes, as its generated constants state it:
    /// for linker scripts or RAM budgets checked in `build.rs`.
    pub memory: MemoryNeeds,
    /// The module's inputs, in its order.
    pub inputs: Vec<TensorData>,
    /// The module's outputs, in its order.
    pub outputs: Vec<TensorData>,
    /// Everything `mlf-build inspect` reports on the module, as written to [`GeneratedModule::json_file`].
    pub report: ModuleReport,
    /// `$OUT_DIR/mlf/<name>.json`: [`GeneratedModule::report`] as JSON (schema in README.md).
    pub json_file: PathBuf,
}

impl Builder {
    /// A builder for the archive at `path`: a `.tar` or an extracted directory,
    /// relative to the package root (the build script's working directory).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(path: impl AsRef<Path>) -> Builder {
        Builder {
            archive: path.as_ref().to_path_buf(),
            show_warnings: None,
            cc: None,
            target: None,
            cpu: None,
            renames: Vec::new(),
            include_dirs: Vec::new(),
            sources: Vec::new(),
            defines: Vec::new(),
            limits: Limits::default(),
            mlf_rt: false,
        }
    }

    /// Makes each generated module also define `pub struct Model` implementing
    /// the companion crate's `mlf_rt::Model` (add `mlf-rt` to `[dependencies]`),
    /// and `$OUT_DIR/mlf/mod.rs` a `visit_models` function, for code generic over
    /// models. Off by default: the generated module then needs no dependency.
    pub fn implement_mlf_rt(mut self, implement: bool) -> Builder {
        self.mlf_rt = implement;
        self
    }

    /// Shows the C compiler's warnings on generated code (default: silenced;
    /// the `MLF_BUILD_SHOW_WARNINGS=1` environment variable turns them on too).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").show_warnings(true).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn show_warnings(mut self, show: bool) -> Builder {
        self.show_warnings = Some(show);
        self
    }

    /// Starts every C compilation from `build` instead of `cc::Build::new()`,
    /// for flags, defines or a compiler of your choice.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// let mut build = cc::Build::new();
    /// build.flag("-O2").define("NDEBUG", None);
    /// mlf_build::Builder::new("model.tar").cc_build(build).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn cc_build(mut self, build: cc::Build) -> Builder {
        self.cc = Some(build);
        self
    }

    /// Builds for `triple` instead of Cargo's `TARGET`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").target("thumbv7em-none-eabihf").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn target(mut self, triple: impl Into<String>) -> Builder {
        self.target = Some(triple.into());
        self
    }

    /// The Arm core to compile for (`-mcpu`), e.g. `cortex-m7`; default: the
    /// `-C target-cpu` of the Rust flags (`CARGO_ENCODED_RUSTFLAGS`), else the
    /// triple's usual core (`cortex-m0plus`, `cortex-m3`, `cortex-m4`, `cortex-m33`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").cpu("cortex-m7").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn cpu(mut self, cpu: impl Into<String>) -> Builder {
        self.cpu = Some(cpu.into());
        self
    }

    /// Builds module `from` of the archive as `to`, as if TVM had exported it with
    /// `mod_name="to"`: the Rust file is `$OUT_DIR/mlf/<to>.rs` and the C symbols
    /// are `tvmgen_<to>_*` and `mlf_<to>_*`. Two archives whose modules have the
    /// same name (usually `default`) can only be built into one crate this way.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// // src: mod kws { include!(concat!(env!("OUT_DIR"), "/mlf/kws.rs")); }
    /// mlf_build::Builder::new("kws.tar").rename_module("default", "kws").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn rename_module(mut self, from: impl Into<String>, to: impl Into<String>) -> Builder {
        self.renames.push((from.into(), to.into()));
        self
    }

    /// Adds a directory to the include path of the archive's C code, for headers
    /// of external code the archive was compiled against (BYOC, e.g. CMSIS-NN's `Include`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").include_dir("third_party/CMSIS-NN/Include").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn include_dir(mut self, dir: impl AsRef<Path>) -> Builder {
        self.include_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// Compiles a C or C++ source file (`.c`, `.cc`, `.cpp`) into the model's
    /// library, for external code the archive calls (BYOC, e.g. CMSIS-NN's kernels).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar")
    ///     .include_dir("third_party/CMSIS-NN/Include")
    ///     .source("third_party/CMSIS-NN/Source/ConvolutionFunctions/arm_convolve_s8.c")
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn source(mut self, file: impl AsRef<Path>) -> Builder {
        self.sources.push(file.as_ref().to_path_buf());
        self
    }

    /// Defines a preprocessor macro for the archive's C code and the sources added with [`Builder::source`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").define("ARM_MATH_DSP", None).define("TVM_CRT_LOG_LEVEL", Some("0")).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn define(mut self, name: impl Into<String>, value: Option<&str>) -> Builder {
        self.defines.push((name.into(), value.map(str::to_string)));
        self
    }

    /// Unpacks, compiles and generates bindings and Rust for every module.
    ///
    /// Writes only below `$OUT_DIR/mlf/`; an unchanged archive is not
    /// unpacked, compiled or bound again.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// let output = mlf_build::Builder::new("model.tar").build()?;
    /// // A RAM budget, checked before anything links.
    /// for module in &output.modules {
    ///     assert!(module.memory.workspace <= 64 * 1024, "{}: workspace too large", module.name);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn build(self) -> Result<Output> {
        let archive = self.archive.clone();
        self.build_inner().map_err(|error| error.in_archive(&archive))
    }

    /// Everything the compile needs that the toolchain does not decide: the
    /// archive read, planned and written under `OUT_DIR`, mlf-build's own C
    /// and the generated glue.
    fn prepare(
        &self,
        target: &Target,
        out_dir: &Path,
        extra: &ExtraCode<'_>,
        package: &str,
        show_warnings: bool,
        small: bool,
    ) -> Result<Prepared> {
        let options = PlanOptions { renames: &self.renames, limits: self.limits, target: Some(target) };
        let Planned { mut tree, metadata, plan, warnings } = crate::plan::read_and_plan(&self.archive, &options)?;
        for warning in &warnings {
            directive::warning(warning);
        }
        claim_symbols(out_dir, &self.archive, &plan)?;
        // Module names are unique within a build script (claim_symbols), so the
        // first names this archive's work directory and library.
        let stem = plan.modules.first().map_or_else(|| "model".to_string(), |m| m.name.to_string());
        let work = out_dir.join("mlf").join("build").join(&stem);
        let tree_dir = work.join("tree");
        tree.write_to(&tree_dir)?;
        tree.release(&tree_dir);
        if !small {
            std::thread::spawn(bindings::preload);
        }
        support::write(extra.support_dir)?;
        let (model, generated_c) = model_library(&plan, &stem, &work, package, show_warnings, extra)?;
        Ok(Prepared { tree, metadata, plan, stem, work, model, generated_c })
    }

    fn build_inner(self) -> Result<Output> {
        directive::rerun_if_changed(&self.archive)?;
        // libclang (~80 MB resident) loads while the toolchain is probed, unless
        // the archive is large: then only once its files are out of memory.
        let small = std::fs::metadata(&self.archive).is_ok_and(|m| m.is_file() && m.len() <= PRELOAD_MAX_ARCHIVE_BYTES);
        if small {
            // Not joined: bindgen waits for the library itself if it is still loading.
            std::thread::spawn(bindings::preload);
        }
        let out_dir = env::out_dir()?;
        let target = Target::from_env(self.target.as_deref(), self.cpu.as_deref())?;
        let show_warnings = self.show_warnings.unwrap_or_else(|| env::var("MLF_BUILD_SHOW_WARNINGS").is_some_and(|v| v != "0"));
        let support_dir = out_dir.join("mlf").join("build-support");
        let extra =
            ExtraCode { include_dirs: &self.include_dirs, sources: &self.sources, defines: &self.defines, support_dir: &support_dir };
        // Names this crate's glue symbol: deterministic, unlike OUT_DIR.
        let package = env::cargo_provided("CARGO_PKG_NAME").unwrap_or_default();
        // The toolchain probes (compiler runs) and preparing the archive's C
        // need nothing from each other: they run side by side.
        let (toolchain, prepared) = std::thread::scope(|scope| {
            let toolchain = scope.spawn(|| match &self.cc {
                Some(user_build) => target::toolchain(user_build, &target),
                None => target::default_toolchain(&target, &compiler_environment(&target)),
            });
            let prepared = self.prepare(&target, &out_dir, &extra, &package, show_warnings, small);
            (joined(toolchain), prepared)
        });
        let toolchain = toolchain?;
        let Prepared { tree, metadata, plan, stem, work, model, generated_c } = prepared?;
        check_core(&plan, &target, &metadata, toolchain.compiled_isa)?;
        let base = &toolchain.build;
        let config = CompileConfig { base, show_warnings, target: &target };
        let (tree_dir, gen_dir) = (work.join("tree"), work.join("gen"));

        let extra_fingerprint = extra.fingerprint()?;
        let key = || -> Result<String> {
            Ok(cache::key(&[
                tree.digest()?.as_slice(),
                env!("CARGO_PKG_VERSION").as_bytes(),
                support::digest().as_bytes(),
                &config.fingerprint(!model.cxx_sources.is_empty()),
                &generated_c,
                &extra_fingerprint,
            ]))
        };
        let stamp = |key| cache::Stamp { path: work.join("stamp"), key };
        let bindings_file = |module: &ModulePlan| gen_dir.join(format!("{}_bindings.rs", module.name));
        // Without a stamp nothing is cached, and hashing a new tree waits until the C compiles.
        let cached = work.join("stamp").is_file()
            && stamp(key()?).is_current()
            && model.is_built()
            && plan.modules.iter().all(|m| bindings_file(m).is_file());
        // The support library, bindgen (which reads only headers) and the
        // model's C build side by side.
        let (support, built) = std::thread::scope(|scope| {
            let support = scope.spawn(|| support_library(&out_dir, &support_dir, &config));
            let built = if cached {
                Ok(None)
            } else {
                stamp(String::new()).invalidate()?;
                let key = scope.spawn(key);
                let bindgen = scope.spawn(|| {
                    plan.modules
                        .iter()
                        .map(|module| {
                            let spec = bindings_spec(module, &plan, &tree_dir, &gen_dir, &extra, &toolchain.clang_args);
                            Ok((bindings_file(module), bindings::generate(&spec)?))
                        })
                        .collect::<Result<Vec<_>>>()
                });
                match model.compile(base) {
                    Ok(()) => {
                        let bound = joined(bindgen);
                        let key = joined(key);
                        Ok(Some((bound?, key?)))
                    }
                    Err(error) => Err(missing_header(&plan, &tree_dir, &model, base).unwrap_or(error)),
                }
            };
            Ok::<_, Error>((joined(support), built))
        })?;
        let support = support?;
        if let Some((bound, key)) = built? {
            for (path, text) in bound {
                write_if_changed(&path, text.as_bytes())?;
            }
            tree.record_digest(&tree_dir)?;
            stamp(key).record()?;
        }
        model.link()?;
        support.link()?;
        toolchain.link()?;

        let archive_name = self.archive.file_name().map_or_else(|| stem.clone(), |name| name.to_string_lossy().into_owned());
        let digest_hex = tree.digest_hex()?;
        let provenance = emit::Provenance { archive_name: &archive_name, digest_hex: &digest_hex, package: &package };
        let bindings = plan
            .modules
            .iter()
            .map(|module| {
                let path = bindings_file(module);
                std::fs::read_to_string(&path).map_err(|e| Error::io("read", &path, e))
            })
            .collect::<Result<Vec<_>>>()?;
        let rust_files = codegen::rust_files(&plan, &bindings, &provenance, self.mlf_rt)?;
        let mut modules = Vec::new();
        for (module, file) in plan.modules.iter().zip(rust_files) {
            let rust_file = out_dir.join(&file.path);
            write_if_changed(&rust_file, &file.bytes)?;
            let report = ModuleReport::new(module, metadata.version);
            let json_file = out_dir.join("mlf").join(format!("{}.json", module.name));
            let json = serde_json::to_string_pretty(&report.to_json()).map_err(|e| Error::new(ErrorKind::Config, e.to_string()))?;
            write_if_changed(&json_file, json.as_bytes())?;
            modules.push(GeneratedModule {
                name: module.name.to_string(),
                rust_file,
                memory: module.memory_needs(),
                inputs: report.inputs.clone(),
                outputs: report.outputs.clone(),
                report,
                json_file,
            });
        }
        remove_stale_modules(&out_dir, &self.archive, &self.renames, &plan)?;
        write_module_index(&out_dir, &plan, self.mlf_rt)?;
        Ok(Output { modules })
    }
}

/// What [`Builder::prepare`] made ready for the compile.
struct Prepared {
    tree: Tree,
    metadata: metadata::Metadata,
    plan: Plan,
    /// Names the work directory and the model's library.
    stem: String,
    /// `$OUT_DIR/mlf/build/<stem>`: the tree, the generated C and the library.
    work: PathBuf,
    model: Library,
    /// The text of everything generated, part of the cache key.
    generated_c: Vec<u8>,
}

/// Every module built into each OUT_DIR so far, and whether it implements `mlf_rt::Model`.
static MODULE_INDEX: Mutex<BTreeMap<PathBuf, BTreeMap<String, bool>>> = Mutex::new(BTreeMap::new());

/// `$OUT_DIR/mlf/mod.rs`: one `pub mod` per module this build script has built,
/// so several archives are included with one line.
fn write_module_index(out_dir: &Path, plan: &Plan, mlf_rt: bool) -> Result<()> {
    let mut index = MODULE_INDEX.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let modules = index.entry(out_dir.to_path_buf()).or_default();
    for module in &plan.modules {
        modules.insert(module.name.to_string(), mlf_rt);
    }
    let index = codegen::module_index(modules);
    write_if_changed(&out_dir.join(&index.path), &index.bytes).map(drop)
}

/// Settings that change compiled code, shared by the model and support libraries.
struct CompileConfig<'a> {
    base: &'a cc::Build,
    show_warnings: bool,
    target: &'a Target,
}

/// Environment variables `cc` reads, each also as `<NAME>_<target>` and
/// `TARGET_<NAME>` (`HOST_<NAME>` when not cross-compiling).
const CC_VARIABLES: &[&str] = &["CC", "CFLAGS", "CXX", "CXXFLAGS", "AR", "ARFLAGS"];

/// `NAME=value` of every variable that changes the compilers `cc` and bindgen
/// use for `target` or their arguments.
fn compiler_environment(target: &Target) -> Vec<String> {
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
    variables.iter().map(|name| format!("{name}={:?}", env::var(name))).collect()
}

/// Variables Cargo sets and tracks itself that change what `cc` passes the compiler.
const CARGO_VARIABLES: &[&str] = &["OPT_LEVEL", "DEBUG", "PROFILE"];

impl CompileConfig<'_> {
    /// Everything besides the sources that determines the compiled objects, as
    /// explicit data: the target, the compilers and archiver `cc` resolved with
    /// their arguments, and the environment they were resolved from. The C++
    /// compiler only when there is C++ to compile: resolving it runs probes.
    fn fingerprint(&self, with_cxx: bool) -> Vec<u8> {
        let triple = &self.target.triple;
        let mut lines =
            vec![format!("target={triple}"), format!("host={}", self.target.host), format!("show_warnings={}", self.show_warnings)];
        lines.extend(compiler_environment(self.target));
        for name in CARGO_VARIABLES {
            lines.push(format!("{name}={:?}", env::cargo_provided(name)));
        }
        let tool = |tool: std::result::Result<cc::Tool, cc::Error>| match tool {
            Ok(tool) => format!("{:?} {:?}", tool.path(), tool.args()),
            Err(error) => format!("unavailable: {error}"),
        };
        lines.push(format!("cc={}", tool(self.base.try_get_compiler())));
        if with_cxx {
            lines.push(format!("c++={}", tool(self.base.clone().cpp(true).try_get_compiler())));
        }
        let archiver =
            self.base.try_get_archiver().map(|command| format!("{:?} {:?}", command.get_program(), command.get_args().collect::<Vec<_>>()));
        lines.push(format!("ar={}", archiver.unwrap_or_else(|error| format!("unavailable: {error}"))));
        lines.join("\n").into_bytes()
    }
}

/// The crate's platform layer, built once per build script run however many archives it builds.
fn support_library(out_dir: &Path, support: &Path, config: &CompileConfig<'_>) -> Result<Library> {
    // Held while building, so a second archive's build waits for the first's.
    static BUILT: Mutex<bool> = Mutex::new(false);
    let library = Library {
        name: "mlf_support".to_string(),
        c_sources: vec![support.join(support::LIBRARY_SOURCE)],
        cxx_sources: Vec::new(),
        objects: Vec::new(),
        include_dirs: vec![support.join("include"), support.join("runtime-include")],
        defines: Vec::new(),
        out_dir: out_dir.join("mlf").join("support"),
        show_warnings: config.show_warnings,
    };
    let mut built = BUILT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !*built {
        let key = cache::key(&[env!("CARGO_PKG_VERSION").as_bytes(), support::digest().as_bytes(), &config.fingerprint(false)]);
        let stamp = cache::Stamp { path: library.out_dir.join("stamp"), key };
        if !(stamp.is_current() && library.is_built()) {
            stamp.invalidate()?;
            library.compile(config.base)?;
            stamp.record()?;
        }
        *built = true;
    }
    Ok(library)
}

/// The archive's code, its runtime sources and the generated glue, as one
/// library, and the text of everything generated (part of the cache key).
fn model_library(
    plan: &Plan,
    stem: &str,
    work: &Path,
    package: &str,
    show_warnings: bool,
    extra: &ExtraCode<'_>,
) -> Result<(Library, Vec<u8>)> {
    let (tree_dir, gen_dir) = (&work.join("tree"), &work.join("gen"));
    let mut generated = Vec::new();
    let mut c_sources = Vec::new();
    let mut cxx_sources = Vec::new();
    let mut objects = Vec::new();
    for module in &plan.modules {
        c_sources.extend(module.codegen.c_sources.iter().map(|p| tree_dir.join(p)));
        cxx_sources.extend(module.codegen.cxx_sources.iter().map(|p| tree_dir.join(p)));
        objects.extend(module.codegen.objects.iter().map(|p| tree_dir.join(p)));
        for path in &module.codegen.ignored {
            directive::warning(&format!("ignoring `{path}`: not a C/C++ source or object"));
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
    let allocates = plan.modules.iter().any(|m| m.needs.workspace_allocator);
    // The crate's own backend even when the archive ships TVM's: the runtime's
    // `assert()` pulls the C library's stdio and syscalls into bare-metal builds.
    if allocates {
        c_sources.push(extra.support_dir.join(support::BACKEND_SOURCE));
    }
    let crt_config = match &plan.crt_config_template {
        Some(path) => std::fs::read(tree_dir.join(path)).map_err(|e| Error::io("read", &tree_dir.join(path), e))?,
        None => DEFAULT_CRT_CONFIG.as_bytes().to_vec(),
    };
    write_if_changed(&gen_dir.join("crt_config.h"), &crt_config)?;
    generated.extend(&crt_config);
    let alignment = plan.modules.iter().map(|m| m.alignment).max().unwrap_or(16);
    for source in extra.sources {
        directive::rerun_if_changed(source)?;
        match source.extension().and_then(|e| e.to_str()) {
            Some("c") => c_sources.push(source.clone()),
            Some("cc" | "cpp" | "cxx") => cxx_sources.push(source.clone()),
            _ => {
                return Err(Error::new(ErrorKind::Config, format!("Builder::source(\"{}\"): not a C or C++ source", source.display()))
                    .help("pass .c, .cc, .cpp or .cxx files; headers go in a directory given to Builder::include_dir"))
            }
        }
    }
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
        show_warnings,
    };
    Ok((library, generated))
}

/// The largest archive file whose bytes may be in memory beside libclang
/// (see `build_inner`): a graph archive's weights are held up to three times
/// (read, parsed, laid out), so this keeps the growth under 16 MB.
const PRELOAD_MAX_ARCHIVE_BYTES: u64 = 4 << 20;

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
    dirs
}

fn bindings_spec(
    module: &ModulePlan,
    plan: &Plan,
    tree_dir: &Path,
    gen_dir: &Path,
    extra: &ExtraCode<'_>,
    target_clang_args: &[String],
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
    }
}

/// External code for the archive (BYOC): Builder options as plain data, and
/// where mlf-build's own C was written.
struct ExtraCode<'a> {
    include_dirs: &'a [PathBuf],
    sources: &'a [PathBuf],
    defines: &'a [(String, Option<String>)],
    support_dir: &'a Path,
}

impl ExtraCode<'_> {
    /// Everything about the external code that changes the compiled library:
    /// paths, defines, the sources' bytes and the include directories' file list and times.
    fn fingerprint(&self) -> Result<Vec<u8>> {
        let mut text = format!("{:?}|{:?}|{:?}", self.include_dirs, self.sources, self.defines).into_bytes();
        for source in self.sources {
            text.extend(
                std::fs::read(source)
                    .map_err(|e| Error::io("read", source, e).help("Builder::source paths are relative to the package root"))?,
            );
        }
        for dir in self.include_dirs {
            directive::rerun_if_changed(dir)?;
            if !dir.is_dir() {
                return Err(Error::new(ErrorKind::Config, format!("Builder::include_dir(\"{}\"): no such directory", dir.display()))
                    .help("include directories are relative to the package root"));
            }
            for entry in glob::glob(&format!("{}/**/*", glob::Pattern::escape(&dir.to_string_lossy()))).into_iter().flatten().flatten() {
                if let Ok(meta) = entry.metadata() {
                    let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                    text.extend(format!("{}|{}|{:?}\n", entry.display(), meta.len(), modified).into_bytes());
                }
            }
        }
        Ok(text)
    }
}

/// Which archive claimed each module name and unprefixed C symbol, per OUT_DIR:
/// two archives in one build script must not define the same symbols.
static CLAIMS: Mutex<BTreeMap<(PathBuf, String), PathBuf>> = Mutex::new(BTreeMap::new());

fn claim_symbols(out_dir: &Path, archive: &Path, plan: &Plan) -> Result<()> {
    let mut claims = CLAIMS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for module in &plan.modules {
        let m = &module.name;
        let mut symbols = vec![(format!("module `{m}`"), None)];
        match &module.entry {
            crate::plan::model::Entry::Operator { function, .. } => {
                symbols.push((format!("C function `{function}`"), Some(function.to_string())));
                symbols.push(("C function `__tvm_main__`".to_string(), Some("__tvm_main__".to_string())));
            }
            crate::plan::model::Entry::LegacyDescriptor { symbol, .. } if !symbol.starts_with("tvmgen_") => {
                symbols.push((format!("C descriptor `{symbol}`"), Some(symbol.to_string())));
            }
            _ => {}
        }
        for (what, unprefixed) in symbols {
            let key = (out_dir.to_path_buf(), what.clone());
            match claims.get(&key) {
                Some(other) if other != archive => {
                    let (message, help) = match unprefixed {
                        None => (
                            format!("{what} is also built from `{}` by this build script: both would write `mlf/{m}.rs` and define the C symbols `tvmgen_{m}_*` and `mlf_{m}_*`", other.display()),
                            format!("give one of them another name: Builder::new(\"{}\").rename_module(\"{m}\", \"another_name\")", archive.display()),
                        ),
                        Some(symbol) => (
                            format!("{what} is also defined by `{}`, built by this build script: the two would clash at link time", other.display()),
                            format!("TVM wrote `{symbol}` without a module prefix, so renaming cannot help: build the archives in separate crates, or re-export one under another function name"),
                        ),
                    };
                    return Err(Error::new(ErrorKind::Config, message).help(help));
                }
                _ => {
                    claims.insert(key, archive.to_path_buf());
                }
            }
        }
    }
    Ok(())
}

/// Removes what an earlier run of this Builder (same archive path and renames)
/// generated for modules the archive no longer has, unless another Builder of
/// this build script generates them now: a stale `mlf/<m>.rs` would fail later, at link time.
fn remove_stale_modules(out_dir: &Path, archive: &Path, renames: &[(String, String)], plan: &Plan) -> Result<()> {
    let mlf = out_dir.join("mlf");
    let builder_key = cache::key(&[archive.to_string_lossy().as_bytes(), format!("{renames:?}").as_bytes()]);
    let manifest = mlf.join("manifests").join(format!("{builder_key}.txt"));
    let current: Vec<&str> = plan.modules.iter().map(|m| m.name.as_str()).collect();
    let previous = std::fs::read_to_string(&manifest).unwrap_or_default();
    let claims = CLAIMS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for name in previous.lines().filter(|name| crate::ident::is_c_identifier(name) && !current.contains(name)) {
        if claims.contains_key(&(out_dir.to_path_buf(), format!("module `{name}`"))) {
            continue;
        }
        for file in [mlf.join(format!("{name}.rs")), mlf.join(format!("{name}.json"))] {
            if file.is_file() {
                std::fs::remove_file(&file).map_err(|e| Error::io("remove", &file, e))?;
            }
        }
        let work = mlf.join("build").join(name);
        if work.is_dir() {
            std::fs::remove_dir_all(&work).map_err(|e| Error::io("remove", &work, e))?;
        }
    }
    write_if_changed(&manifest, current.join("\n").as_bytes())?;
    Ok(())
}

/// After a failed compile: every header the archive's sources include that
/// neither the archive, mlf-build, the Builder's include directories nor the
/// compiler has, each named with the files that want it, and the options that help.
fn missing_header(plan: &Plan, tree_dir: &Path, model: &Library, base: &cc::Build) -> Option<Error> {
    let mut found: BTreeMap<String, bool> = BTreeMap::new();
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for module in &plan.modules {
        for path in module.codegen.c_sources.iter().chain(&module.codegen.cxx_sources) {
            let bytes = std::fs::read(tree_dir.join(path)).ok()?;
            let text = String::from_utf8_lossy(&bytes);
            let own_dir = tree_dir.join(path).parent().map(Path::to_path_buf).unwrap_or_default();
            for header in sources::included_headers(&text) {
                let in_own_dir = own_dir.join(header).is_file();
                let known = *found.entry(header.to_string()).or_insert_with(|| {
                    model.include_dirs.iter().any(|dir| dir.join(header).is_file()) || model.compiler_finds(base, header)
                });
                if !(in_own_dir || known) {
                    let files = missing.entry(header.to_string()).or_default();
                    if !files.contains(path) {
                        files.push(path.clone());
                    }
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
