//! The Builder: the shell around the pure stages. `build` is a short list of
//! named steps: read and plan the archive (`crate::plan::read_and_plan`),
//! probe the toolchain, compile and bind, generate the Rust, write it under
//! the output directory and tell Cargo.

mod diagnose;
mod kernels;
mod libraries;
mod registry;
pub(crate) mod unpack;

use std::path::{Path, PathBuf};

use crate::cargo::cache;
use crate::cargo::directive::Directives;
use crate::cargo::env::{self, Env};
use crate::cargo::write::write_if_changed;
use crate::codegen::{self, glue, redirect, rust as emit, stepper};
use crate::error::{Error, ErrorKind, Result};
use crate::ident::CIdent;
use crate::input::archive::{digest_hex, Limits, Tree};
use crate::input::memory_x::MemoryLayout;
use crate::input::metadata::Metadata;
use crate::input::user_path::Base;
use crate::objects::elf;
use crate::objects::sections::Storage;
use crate::objects::stack::{self, StackBound};
use crate::plan::checks::check_core;
use crate::plan::fit::{self, FitModule, MemoryFit, Placing};
use crate::plan::model::{ArenaGroup, Compiled, MemoryNeeds, ModulePlan, Plan, STATE};
use crate::plan::report::{ModuleReport, TensorData};
use crate::plan::{PlanOptions, Planned};
use crate::toolchain::compile::{Compilers, Library, STACK_FLAGS};
use crate::toolchain::target::{self, CoreIsa, Target, Toolchain};
use crate::toolchain::{bindings, joined, spawn, stack_bound};
use kernels::KernelCode;
use libraries::{CompileConfig, ExtraCode, Privacy};

/// Builds one Model Library Format archive into the crate being compiled.
///
/// Options are plain data; [`Builder::build`] does the work.
#[derive(Debug, Clone)]
pub struct Builder {
    archive: PathBuf,
    show_warnings: Option<bool>,
    cc: Option<cc::Build>,
    out_dir: Option<PathBuf>,
    target: Option<String>,
    host: Option<String>,
    cargo_metadata: bool,
    cpu: Option<String>,
    renames: Vec<(String, String)>,
    include_dirs: Vec<PathBuf>,
    sources: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    cmsis_nn: Option<PathBuf>,
    limits: Limits,
    mlf_rt: bool,
    memory_x: Option<PathBuf>,
    link_sections: Vec<(Storage, String)>,
    app_places_io_buffers: bool,
    profile: bool,
    share_support_runtime: bool,
    arena_group: Option<String>,
}

/// What [`Builder::build`] produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Output {
    /// One entry per module of the archive, sorted by name.
    pub modules: Vec<GeneratedModule>,
    /// What the build printed as `cargo:warning` lines (or would have, with
    /// [`Builder::cargo_metadata`] off): e.g. a module inferred without metadata.json.
    pub warnings: Vec<String>,
    /// How the model fits the regions of the `memory.x` it was checked
    /// against ([`Builder::memory_x`]), code measured; `None` without one.
    pub memory_fit: Option<MemoryFit>,
    /// The prefix every symbol of the crate's libraries carries in the linked
    /// program (its name and version, `my_model_0_1_0_`), empty when they keep
    /// their C names (outside Cargo, non-ELF targets). See "Models as crates" in the README.
    pub symbol_prefix: String,
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
    /// A builder for the archive at `path`: a `.tar` or an extracted directory.
    /// A relative path (here and in every option) is taken from the package
    /// root, `CARGO_MANIFEST_DIR` (outside Cargo: the current directory); a
    /// path that leads nowhere is an error naming it normalised, and that base.
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
            out_dir: None,
            target: None,
            host: None,
            cargo_metadata: true,
            cpu: None,
            renames: Vec::new(),
            include_dirs: Vec::new(),
            sources: Vec::new(),
            defines: Vec::new(),
            cmsis_nn: None,
            limits: Limits::default(),
            mlf_rt: false,
            memory_x: None,
            link_sections: Vec::new(),
            app_places_io_buffers: false,
            profile: false,
            share_support_runtime: false,
            arena_group: None,
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

    /// Writes under `dir` instead of Cargo's `OUT_DIR`: the generated files go
    /// to `dir/mlf/`. Needed when the Builder runs outside a build script.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").out_dir("target/model").cargo_metadata(false).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Builder {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The triple of the machine the build runs on, instead of Cargo's `HOST`
    /// (outside a build script: the host `rustc -vV` names).
    pub fn host(mut self, triple: impl Into<String>) -> Builder {
        self.host = Some(triple.into());
        self
    }

    /// Whether to print `cargo:` lines (link libraries, rerun conditions,
    /// warnings) on standard output; default: on, as a build script needs.
    /// Off, nothing is printed and [`Output::warnings`] still lists the warnings.
    pub fn cargo_metadata(mut self, print: bool) -> Builder {
        self.cargo_metadata = print;
        self
    }

    /// Builds for `triple` instead of Cargo's `TARGET` (outside a build script: the host).
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

    /// The CMSIS-NN to compile with an archive whose code calls it (TVM's
    /// `cmsis-nn` target): the folder holding its `Include/` and `Source/`,
    /// relative to the package root. Default: the `CMSIS_NN_PATH` environment
    /// variable. Only the sources defining what the archive calls, and what
    /// those call, are compiled, with the same core flags as the model, so
    /// CMSIS-NN picks its DSP, MVE or portable code for the core.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("vww_cmsis_nn.tar").cmsis_nn("third_party/CMSIS-NN").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn cmsis_nn(mut self, dir: impl AsRef<Path>) -> Builder {
        self.cmsis_nn = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The cortex-m-rt style `memory.x` the model must fit, relative to the
    /// package root. The build fails with [`ErrorKind::DoesNotFit`] when the
    /// model's static RAM (workspace, arena, pools, CMSIS-NN scratch, plus one
    /// set of input and output buffers unless [`Builder::app_places_io_buffers`])
    /// exceeds the region it goes to, or its constants and code exceed FLASH.
    /// Regions come from [`Builder::link_section`] when `memory.x` places the
    /// section (`> SRAM2`), else `RAM` and `FLASH` (or riscv-rt's `REGION_BSS`
    /// and `REGION_RODATA` aliases). Only what the model adds is counted: the
    /// modules of this Builder and, since one program links them all, the RAM
    /// and constants of those the build script's earlier Builders built (their
    /// code is not measured again), an arena group's arena once, at its largest
    /// member so far; so the last Builder's check is the complete one.
    ///
    /// Default: the package's own `memory.x` (cortex-m-rt's convention) when
    /// building for a bare-metal target (`*-none*`); this call wins.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").memory_x("boards/nucleo-f446/memory.x").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn memory_x(mut self, path: impl AsRef<Path>) -> Builder {
        self.memory_x = Some(path.as_ref().to_path_buf());
        self
    }

    /// Puts the model's `storage` in the linker section `section`, for the
    /// application's linker script to place (DTCM, a second SRAM bank,
    /// external RAM or flash). Works on the objects the archive's C and
    /// mlf-build's glue compile to, by renaming their sections (ELF targets:
    /// Linux hosts and bare metal); the archive's sources are not edited.
    /// [`Storage::Workspace`] holds zero-initialised data the model writes
    /// before reading, so the section can be `NOLOAD`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// // memory.x: SECTIONS { .sram2 (NOLOAD) : { *(.sram2 .sram2.*) } > SRAM2 } INSERT AFTER .bss;
    /// mlf_build::Builder::new("model.tar").link_section(mlf_build::Storage::Workspace, ".sram2").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn link_section(mut self, storage: Storage, section: impl Into<String>) -> Builder {
        self.link_sections.push((storage, section.into()));
        self
    }

    /// Says the application places the model's input and output buffers
    /// itself, so [`Builder::memory_x`] does not count them in RAM (default: counted).
    pub fn app_places_io_buffers(mut self, places: bool) -> Builder {
        self.app_places_io_buffers = places;
        self
    }

    /// Times each operator call of a run: the generated module gains `pub mod profile`
    /// with `OPERATORS` (the operator functions, in call order, one per call) and
    /// `run_profiled(&inputs, &mut outputs, clock, &mut ticks)`, which reads the
    /// application's `clock: fn() -> u32` around every call. Off by default, and
    /// then nothing is added to the code. README.md, "Profiling", says how calls
    /// are timed and which archives cannot be.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("model.tar").profile(true).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn profile(mut self, profile: bool) -> Builder {
        self.profile = profile;
        self
    }

    /// Keeps mlf-build's support runtime (`mlf_support_*`, `TVMPlatform*`,
    /// `TVMLogf`) under its C names, so every crate of a program that asks
    /// for it links one copy of it instead of its own (default: each crate's
    /// own, under its tag). Those crates then share its abort guard: one
    /// model runs at a time across them.
    pub fn share_support_runtime(mut self, share: bool) -> Builder {
        self.share_support_runtime = share;
        self
    }

    /// Puts every module of this archive in the arena group `name`: all
    /// modules of the build script's Builders given the same name share one
    /// static arena for their scratch (USMP's workspace, the workspace arena,
    /// workspace pools, a graph's storage, CMSIS-NN scratch), of the largest member's size.
    /// Members take turns: a run while another member's run, or stepped run,
    /// is in progress returns `Busy`. `name` is a C identifier. The book's
    /// "Arena groups" chapter says what is shared (USMP's workspace too,
    /// through an edited copy of its source), what is not and what is refused.
    /// A member's `STATIC_RAM_BYTES` and [`Builder::memory_x`]'s check count
    /// the arena once, for the group; [`Builder::link_section`] with
    /// `Storage::Workspace` places it.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mlf_build::Error> {
    /// mlf_build::Builder::new("kws.tar").arena_group("turns").build()?;
    /// mlf_build::Builder::new("vww.tar").arena_group("turns").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn arena_group(mut self, name: impl Into<String>) -> Builder {
        self.arena_group = Some(name.into());
        self
    }

    /// Unpacks, compiles and generates bindings and Rust for every module.
    ///
    /// Writes only below `$OUT_DIR/mlf/` (or [`Builder::out_dir`]); an
    /// unchanged archive is not unpacked, compiled or bound again.
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
        let base = Base::package_root(env::cargo_provided("CARGO_MANIFEST_DIR"));
        let archive = base.resolve(&self.archive);
        // Held until the build succeeded: a failing build script prints its error alone.
        let directives = Directives::new(self.cargo_metadata);
        let output = self.run(&base, &directives).map_err(|error| error.in_archive(&archive))?;
        directives.flush();
        Ok(output)
    }

    fn run(self, base: &Base, directives: &Directives) -> Result<Output> {
        let settings = self.settings(base, directives)?;
        settings.env.directives.rerun_if_changed(&settings.paths.archive)?;
        let (toolchain, mut prepared) = self.probe_and_prepare(&settings)?;
        check_core(&prepared.plan, &settings.target, &prepared.metadata, toolchain.compiled_isa)?;
        check_kernel_extensions(&settings, &toolchain, &prepared)?;
        let mut warnings = prepared.warnings.clone();
        warnings.extend(check_kernel_scratch(&settings, &toolchain, &mut prepared)?);
        // Before compiling: a model that cannot fit fails in a second, not after the compile.
        check_fit(&settings, &prepared, None)?;
        let support = self.compile_and_bind(&settings, &toolchain, &prepared)?;
        measure_stepping(&mut prepared)?;
        let code = [prepared.model.archives(), support.archives()].concat();
        let memory_fit = check_fit(&settings, &prepared, Some(&code))?;
        for warning in memory_fit.iter().flat_map(|fit| &fit.warnings) {
            settings.env.directives.warning(warning);
            warnings.push(warning.clone());
        }
        bound_stacks(&mut prepared, &support, &toolchain)?;
        prepared.model.link()?;
        support.link()?;
        toolchain.link(&settings.env.directives)?;
        let modules = self.write_modules(&settings, &prepared)?;
        registry::remove_stale_modules(&settings.out_dir, &settings.paths.archive, &self.renames, &prepared.plan)?;
        registry::record_built(&settings.out_dir, &prepared.plan, &prepared.compiled, &settings.placing);
        registry::write_module_index(&settings.out_dir, &prepared.plan, self.mlf_rt)?;
        let symbol_prefix = settings.privacy.as_ref().map_or_else(String::new, |privacy| privacy.tag.clone());
        Ok(Output { modules, warnings, memory_fit, symbol_prefix })
    }

    /// Where to write, what for, and what to print: the Builder's options, else Cargo's variables.
    fn settings(&self, base: &Base, directives: &Directives) -> Result<Settings> {
        let paths = self.user_paths(base)?;
        let env = Env { directives: directives.clone() };
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => env::cargo_provided("OUT_DIR").map(PathBuf::from).ok_or_else(|| {
                Error::new(ErrorKind::Config, "no output directory: OUT_DIR is not set")
                    .help("call mlf_build::Builder from a build script (build.rs), or give it one with Builder::out_dir(..)")
            })?,
        };
        let host = match &self.host {
            Some(host) => host.clone(),
            None => env::cargo_provided("HOST").map_or_else(target::rustc_host, Ok)?,
        };
        let triple = self.target.clone().or_else(|| env::cargo_provided("TARGET")).unwrap_or_else(|| host.clone());
        let target = Target::new(triple, host, self.cpu.as_deref(), &env);
        let show_warnings = self.show_warnings.unwrap_or_else(|| env.var("MLF_BUILD_SHOW_WARNINGS").is_some_and(|v| v != "0"));
        // Names this crate's glue symbol: deterministic, unlike the output directory.
        let package = env::cargo_provided("CARGO_PKG_NAME").unwrap_or_default();
        let support_dir = out_dir.join("mlf").join("build-support");
        let mut placing = Placing { app_places_io_buffers: self.app_places_io_buffers, ..Placing::default() };
        for (storage, section) in &self.link_sections {
            placing.sections.set(*storage, section)?;
        }
        let memory_x = match &self.memory_x {
            Some(path) => Some(base.file(path, "the path given to Builder::memory_x(..)")?),
            // cortex-m-rt's convention, only where its linker script would read it too.
            None if target.triple.contains("-none") => {
                // Whatever is there is read, so a FIFO or a device is refused, not skipped.
                env::cargo_provided("CARGO_MANIFEST_DIR")
                    .map(|dir| Path::new(&dir).join("memory.x"))
                    .filter(|path| path.symlink_metadata().is_ok())
            }
            None => None,
        };
        let memory = match memory_x {
            Some(path) => {
                env.directives.rerun_if_changed(&path)?;
                let layout = fit::read(&path)?;
                Some((path, layout))
            }
            None => None,
        };
        let privacy = Privacy::of_crate(&target, self.share_support_runtime);
        let arena_group = self.arena_group.as_deref().map(|group| arena_group_name(group, &target)).transpose()?;
        Ok(Settings { paths, out_dir, target, env, show_warnings, package, support_dir, placing, memory, privacy, arena_group })
    }

    /// The archive and the files and directories of the options, taken from
    /// `base` and checked to exist, so a wrong one is reported with the base.
    fn user_paths(&self, base: &Base) -> Result<UserPaths> {
        Ok(UserPaths {
            archive: base.archive(&self.archive, "the path given to Builder::new(..)")?,
            include_dirs: self
                .include_dirs
                .iter()
                .map(|dir| base.dir(dir, "the path given to Builder::include_dir(..)"))
                .collect::<Result<_>>()?,
            sources: self.sources.iter().map(|file| base.file(file, "the path given to Builder::source(..)")).collect::<Result<_>>()?,
            cmsis_nn: self.cmsis_nn.as_ref().map(|dir| base.dir(dir, "the path given to Builder::cmsis_nn(..)")).transpose()?,
        })
    }

    fn extra_code<'a>(&'a self, settings: &'a Settings, kernels: Option<&'a KernelCode>) -> ExtraCode<'a> {
        ExtraCode {
            include_dirs: &settings.paths.include_dirs,
            sources: &settings.paths.sources,
            defines: &self.defines,
            support_dir: &settings.support_dir,
            kernels,
            directives: settings.env.directives.clone(),
        }
    }

    /// The toolchain probes (compiler runs) and preparing the archive's C need
    /// nothing from each other: they run side by side.
    fn probe_and_prepare(&self, settings: &Settings) -> Result<(Toolchain, Prepared)> {
        // libclang (~80 MB resident) loads while the toolchain is probed, unless
        // the archive is large: then only once its files are out of memory.
        let small = std::fs::metadata(&settings.paths.archive).is_ok_and(|m| m.is_file() && m.len() <= PRELOAD_MAX_ARCHIVE_BYTES);
        if small {
            // Not joined: bindgen waits for the library itself if it is still loading.
            std::thread::spawn(bindings::preload);
        }
        let target = &settings.target;
        let (toolchain, prepared) = std::thread::scope(|scope| {
            let toolchain = scope.spawn(|| match &self.cc {
                Some(user_build) => target::toolchain(user_build, target),
                None => target::default_toolchain(
                    &default_cc(),
                    target,
                    &libraries::compiler_environment(target, &settings.env),
                    &answers_dir(&settings.out_dir),
                ),
            });
            let prepared = self.prepare(settings, small);
            (joined(toolchain), prepared)
        });
        Ok((toolchain?, prepared?))
    }

    /// Everything the compile needs that the toolchain does not decide: the
    /// archive read, planned and written under the output directory,
    /// mlf-build's own C and the generated glue.
    fn prepare(&self, settings: &Settings, small: bool) -> Result<Prepared> {
        let options = PlanOptions { renames: &self.renames, limits: self.limits, target: Some(&settings.target), profile: self.profile };
        let Planned { mut tree, metadata, mut plan, warnings } = crate::plan::read_and_plan(&settings.paths.archive, &options)?;
        if let Some(group) = &settings.arena_group {
            join_arena_group(&mut plan, group, &tree)?;
        }
        // Printed now: they explain a compile that fails later.
        for warning in &warnings {
            settings.env.directives.warning(warning);
        }
        let paths = &settings.paths;
        let kernels = kernels::cmsis_nn(&plan, paths.cmsis_nn.as_deref(), &settings.env, &paths.include_dirs)?;
        registry::claim_symbols(&settings.out_dir, &paths.archive, &plan)?;
        // Module names are unique within a build script (claim_symbols), so the
        // first names this archive's work directory and library.
        let stem = plan.modules.first().map_or_else(|| "model".to_string(), |m| m.name.to_string());
        let work = settings.out_dir.join("mlf").join("build").join(&stem);
        let tree_dir = work.join("tree");
        unpack::write_tree(&tree, &tree_dir)?;
        tree.release();
        if !small {
            std::thread::spawn(bindings::preload);
        }
        libraries::write_own_code(&settings.support_dir)?;
        let extra = self.extra_code(settings, kernels.as_ref());
        let (model, generated_c) = libraries::model_library(
            &plan,
            &stem,
            &work,
            &settings.package,
            &settings.placing.sections,
            &extra,
            settings.privacy.as_ref(),
        )?;
        let compiled = vec![Compiled::not_compiled(); plan.modules.len()];
        Ok(Prepared { tree, metadata, plan, compiled, warnings, stem, work, model, generated_c, kernels })
    }

    /// Compiles the model's library and runs bindgen on its headers, unless an
    /// identical build is cached; returns the support library, compiled too.
    fn compile_and_bind(&self, settings: &Settings, toolchain: &Toolchain, prepared: &Prepared) -> Result<Library> {
        let Prepared { tree, plan, work, model, generated_c, kernels, .. } = prepared;
        let base = &toolchain.build;
        let compilers = Compilers::answered(
            base,
            settings.show_warnings,
            !model.cxx_sources.is_empty(),
            toolchain.answers_key.as_deref().map(|key| (answers_dir(&settings.out_dir), key)),
        )?;
        crate::plan::profile::check_compiler(plan, compilers.c.msvc)?;
        let compilers = &compilers;
        let config = CompileConfig {
            base,
            compilers,
            show_warnings: settings.show_warnings,
            target: &settings.target,
            env: &settings.env,
            privacy: settings.privacy.as_ref(),
        };
        let extra = self.extra_code(settings, kernels.as_ref());
        let (tree_dir, gen_dir) = (work.join("tree"), work.join("gen"));
        let extra_fingerprint = extra.fingerprint()?;
        let key = || -> Result<String> {
            Ok(cache::key(&[
                unpack::digest(tree, &tree_dir)?.as_slice(),
                env!("CARGO_PKG_VERSION").as_bytes(),
                libraries::own_code_digest().as_bytes(),
                &config.fingerprint(),
                generated_c,
                &extra_fingerprint,
                format!("{:?}", settings.placing.sections).as_bytes(),
                STACK_FLAGS.join(" ").as_bytes(),
            ]))
        };
        let stamp = |key| cache::Stamp { path: work.join("stamp"), key };
        // Without a stamp nothing is cached, and hashing a new tree waits until the C compiles.
        let cached = work.join("stamp").is_file()
            && stamp(key()?).is_current()
            && model.is_built()
            && plan.modules.iter().all(|m| bindings_file(work, m).is_file());
        // The support library and the model's C build side by side; bindgen
        // (libclang, inside this process) reads the archive's headers only
        // after the glue that includes them compiled under the compiler's
        // limits, so a header no estimate caught cannot exhaust this process,
        // and then beside the model's other sources.
        let (support, built) = std::thread::scope(|scope| {
            let support = scope.spawn(|| libraries::support_library(&settings.out_dir, &settings.support_dir, &config));
            let built = if cached {
                Ok(None)
            } else {
                stamp(String::new()).invalidate()?;
                let key = scope.spawn(|| spawn::in_job_slot(key));
                let bindgen = || {
                    plan.modules
                        .iter()
                        .map(|module| {
                            let spec = libraries::bindings_spec(
                                module,
                                plan,
                                &tree_dir,
                                &gen_dir,
                                &extra,
                                &toolchain.clang_args,
                                settings.privacy.as_ref(),
                            );
                            Ok((bindings_file(work, module), bindings::generate(&spec)?))
                        })
                        .collect::<Result<Vec<_>>>()
                };
                let (headers_compiled, glue_compiled) = std::sync::mpsc::channel();
                let bound = scope.spawn(move || glue_compiled.recv().ok().map(|()| spawn::in_job_slot(bindgen)));
                let compiled = model.compile(compilers, base, move || {
                    let _ = headers_compiled.send(());
                });
                // Nothing was sent when the glue did not compile: then bindgen never ran.
                let bound = joined(bound);
                match compiled {
                    Ok(()) => {
                        let bound = bound.ok_or_else(|| Error::new(ErrorKind::Compile, "the glue compiled but bindgen was not started"))?;
                        let key = joined(key);
                        Ok(Some((bound?, key?)))
                    }
                    // Only a compile error can come from a missing header (not a full disk).
                    Err(error) if error.kind() == ErrorKind::Compile => {
                        Err(diagnose::missing_header(plan, &tree_dir, model, compilers).unwrap_or(error))
                    }
                    Err(error) => Err(error),
                }
            };
            Ok::<_, Error>((joined(support), built))
        })?;
        let support = support?;
        match built? {
            Some((bound, key)) => {
                for (path, text) in bound {
                    write_if_changed(&path, text.as_bytes())?;
                }
                unpack::record_digest(&tree_dir, &unpack::digest(tree, &tree_dir)?)?;
                stamp(key).record()?;
            }
            // A run killed while writing the tree left no record: the digest
            // just computed is kept, or every rerun would hash the tree again.
            None => unpack::record_missing_digest(tree, &tree_dir)?,
        }
        if let (Some(group), Some(section)) = (&settings.arena_group, &settings.placing.sections.workspace) {
            place_group_arena(settings, prepared, group, section, &config)?;
        }
        Ok(support)
    }

    /// The Rust module and the JSON report of every module, written under
    /// `mlf/`.
    fn write_modules(&self, settings: &Settings, prepared: &Prepared) -> Result<Vec<GeneratedModule>> {
        let Prepared { tree, metadata, plan, compiled, stem, work, .. } = prepared;
        let archive_name = settings.paths.archive.file_name().map_or_else(|| stem.clone(), |name| name.to_string_lossy().into_owned());
        let digest_hex = digest_hex(&unpack::digest(tree, &work.join("tree"))?);
        let provenance = emit::Provenance { archive_name: &archive_name, digest_hex: &digest_hex, package: &settings.package };
        let bindings = plan
            .modules
            .iter()
            .map(|module| {
                let path = bindings_file(work, module);
                std::fs::read_to_string(&path).map_err(|e| Error::io("read", &path, e))
            })
            .collect::<Result<Vec<_>>>()?;
        let rust_files = codegen::rust_files(plan, compiled, &bindings, &provenance, self.mlf_rt)?;
        let mut modules = Vec::new();
        for ((module, compiled), file) in plan.modules.iter().zip(compiled).zip(rust_files) {
            let rust_file = settings.out_dir.join(&file.path);
            write_if_changed(&rust_file, &file.bytes)?;
            let report = ModuleReport::new(module, compiled, metadata.version, prepared.kernels.as_ref().map(|kernels| &kernels.library));
            let json = codegen::report_file(&report);
            let json_file = settings.out_dir.join(&json.path);
            write_if_changed(&json_file, &json.bytes)?;
            modules.push(GeneratedModule {
                name: module.name.to_string(),
                rust_file,
                memory: module.memory_needs(compiled),
                inputs: report.inputs.clone(),
                outputs: report.outputs.clone(),
                report,
                json_file,
            });
        }
        Ok(modules)
    }
}

/// Each module's stack bound, in the plan's order, from the objects of the
/// model's and the support library (on disk for a cached build too) and the
/// toolchain's libraries they call into, kept in `prepared.compiled` (the
/// plan does not change).
fn bound_stacks(prepared: &mut Prepared, support: &Library, toolchain: &Toolchain) -> Result<()> {
    // Per module its roots: a run (`invoke`), then a stepped run's start and step.
    let mut roots: Vec<String> = Vec::new();
    for module in &prepared.plan.modules {
        let [start, step, _] = glue::stepping_symbols(&module.name);
        roots.extend([glue::invoke_symbol(&module.name), start, step]);
    }
    let lists = [prepared.model.object_list(), support.object_list()];
    let bounds = stack_bound::analyse(&lists, &toolchain.stack_libraries, &roots)?;
    // Cargo's opt-level and architecture for the crate, which compiles the Rust; outside a build script they are not known.
    let optimised = env::cargo_provided("OPT_LEVEL").is_some_and(|level| level != "0");
    let abi = env::cargo_provided("CARGO_CFG_TARGET_ARCH").filter(|_| optimised).and_then(|arch| stack::RustAbi::of(&arch));
    let mut bounds = bounds.into_iter();
    for (module, compiled) in prepared.plan.modules.iter().zip(&mut prepared.compiled) {
        let (Some(run), Some(start), Some(step)) = (bounds.next(), bounds.next(), bounds.next()) else { break };
        let tensors = module.inputs.len() + module.outputs.len();
        let [start, step] = [start, step].map(|root| stepping_wrapper(root, tensors, abi));
        compiled.stack = deepest([stack::with_rust_wrapper(run, tensors, abi), start, step]);
    }
    Ok(())
}

/// Each module's stepped-run state as its compiled objects reserve it (on
/// disk for a cached build too): the glue's `stepped_*` statics and a split
/// entry's `mlf_steps` (`codegen::stepper`'s first copy holds it), kept in
/// `prepared.compiled`; 0 for objects that are not ELF.
fn measure_stepping(prepared: &mut Prepared) -> Result<()> {
    let gen_dir = prepared.work.join("gen");
    let size = |source: &Path, wanted: &dyn Fn(&[u8]) -> bool| -> Result<u64> {
        let object = prepared.model.object_path(source);
        let file = std::fs::File::open(&object).map_err(|e| Error::io("read", &object, e))?;
        Ok(elf::data_objects_size(&object::ReadCache::new(file), wanted).unwrap_or(0))
    };
    for (module, compiled) in prepared.plan.modules.iter().zip(&mut prepared.compiled) {
        let mut bytes = size(&gen_dir.join(glue::source_name(module)), &|name| name.starts_with(glue::STEPPED_PREFIX.as_bytes()))?;
        if let Some(copy) = stepper::sources(&module.name, module.entry_split.as_ref()).first() {
            // The source an arena group edits carries the step code in its edited copy.
            let edited = module.arena_group.as_ref().and_then(|group| group.code_workspace.as_ref()).filter(|w| w.file == copy.original);
            let path = edited.map_or_else(|| copy.path.clone(), |workspace| redirect::copy_path(&workspace.file));
            bytes = bytes.saturating_add(size(&gen_dir.join(path), &|name| name == STATE.as_bytes())?);
        }
        compiled.stepping_bytes = bytes;
    }
    Ok(())
}

/// The generated Rust's frames above a stepped run's C: the same allowance
/// as a run's (`stack::with_rust_wrapper`: `run_with` or the future's poll,
/// then `Inference::step`, which holds less than `run`), named for stepping.
fn stepping_wrapper(bound: StackBound, tensors: usize, abi: Option<stack::RustAbi>) -> StackBound {
    let mut bound = stack::with_rust_wrapper(bound, tensors, abi);
    if let Some(first) = bound.path.first_mut() {
        first.function = first.function.replacen("Rust run/run_raw", "Rust start/step", 1);
    }
    bound
}

/// The deepest of a module's roots: its stack must hold any of them; unknown when one is.
fn deepest(roots: [StackBound; 3]) -> StackBound {
    if let Some(unknown) = roots.iter().find(|root| root.bytes.is_none()) {
        return unknown.clone();
    }
    // A tie keeps the run's path, the first.
    roots.into_iter().rev().max_by_key(|root| root.bytes).unwrap_or_else(|| StackBound::unknown("no root"))
}

/// Calls to CMSIS-NN code for core extensions the compiled core lacks
/// (`kernels::check_extensions`). Off Arm no core has them; an Arm target whose
/// compiler was not asked (not bare metal) is left to the compiler.
fn check_kernel_extensions(settings: &Settings, toolchain: &Toolchain, prepared: &Prepared) -> Result<()> {
    let Some(kernels) = &prepared.kernels else { return Ok(()) };
    let isa = match toolchain.compiled_isa {
        Some(isa) => isa,
        None if !settings.target.is_arm32() => CoreIsa::default(),
        None => return Ok(()),
    };
    kernels::check_extensions(kernels, &prepared.plan, isa, &settings.target)
}

/// The name given to `Builder::arena_group`, checked with what the other
/// options allow, before anything is read or compiled.
fn arena_group_name(group: &str, target: &Target) -> Result<CIdent> {
    let name = arena_group_ident(group)?;
    // MSVC's C compiler has no common definitions, which the group's arena is.
    if target.triple.ends_with("-msvc") {
        return Err(Error::new(ErrorKind::Unsupported, format!("arena group `{name}`: MSVC targets cannot share an arena yet"))
            .help("its arena is a common symbol, which MSVC's C compiler cannot define: build the modules without Builder::arena_group"));
    }
    Ok(name)
}

/// Arena group `group`'s arena placed in the workspace `section`: its one
/// definition, grown to this Builder's members, compiled into the group's
/// library, which the group's first placing Builder links.
fn place_group_arena(settings: &Settings, prepared: &Prepared, group: &CIdent, section: &str, config: &CompileConfig<'_>) -> Result<()> {
    let members = prepared.plan.modules.iter().zip(&prepared.compiled);
    let (bytes, alignment) = members.fold((0, 1), |(bytes, alignment), (module, compiled)| {
        (bytes.max(module.memory_needs(compiled).group_scratch), alignment.max(module.alignment))
    });
    let arena = registry::place_group_arena(&settings.out_dir, group.as_str(), section, bytes, alignment)?;
    let library =
        libraries::group_arena_library(&settings.out_dir, group, arena.bytes, arena.alignment, &settings.placing.sections, config)?;
    if arena.first {
        settings.env.directives.link_static_whole(&library.out_dir, &library.name)?;
    }
    Ok(())
}

/// An arena group's name, which must be a C identifier (it names the arena's symbol).
pub(crate) fn arena_group_ident(group: &str) -> Result<CIdent> {
    if !crate::ident::is_c_identifier(group) {
        return Err(Error::new(ErrorKind::Config, format!("the arena group name {group:?} is not a C identifier"))
            .help("name the group with letters, digits and `_`, not starting with a digit: Builder::arena_group(\"turns\")"));
    }
    CIdent::new("arena group", group)
}

/// Lays out each module's scratch in arena group `name`, USMP's workspace
/// among it (redirected by an edited copy of its source, `codegen::redirect`),
/// or refuses, naming the module and why, a module whose scratch cannot move.
pub(crate) fn join_arena_group(plan: &mut Plan, name: &CIdent, tree: &Tree) -> Result<()> {
    for module in &mut plan.modules {
        let code_workspace = module.memory_needs(&Compiled::not_compiled()).code_workspace;
        let found = if code_workspace > 0 { redirect::find(&module.name, &module.codegen.c_sources, tree)? } else { None };
        if code_workspace > 0 && found.is_none() {
            let objects = module.codegen.objects.join(", ");
            let reason = if objects.is_empty() {
                "no C source of the archive defines it as a file-scope array".to_string()
            } else {
                format!("no C source defines it; a prebuilt object ({objects}) may, which mlf-build cannot edit")
            };
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "module `{}` cannot join arena group `{name}`: its workspace ({code_workspace} bytes, USMP's `{}`) is static memory of the archive's code, and {reason}",
                    module.name,
                    redirect::WORKSPACE
                ),
            )
            .help("build the module without Builder::arena_group (book: \"Arena groups\")"));
        }
        let overflow = || {
            Error::new(
                ErrorKind::Unsupported,
                format!("module `{}`: its scratch overflows a 64-bit size in arena group `{name}`", module.name),
            )
        };
        let (mut layout, offset) =
            ArenaGroup::lay_out(name.clone(), module, found.as_ref().map(|found| (found.bytes, found.alignment))).ok_or_else(overflow)?;
        if let (Some(found), Some(offset)) = (found, offset) {
            let alignment = module.alignment.max(found.alignment);
            let edits = redirect::edits(&found, &glue::group_arena_symbol(name), offset, alignment)?;
            layout.code_workspace = Some(found.into_plan(offset, edits));
        }
        module.arena_group = Some(layout);
    }
    Ok(())
}

/// The CMSIS-NN scratch contract (`kernels::check_scratch`) for the core the
/// compiler really builds for: too small a buffer is refused, calls given none
/// that need one get mlf-build's; its warnings, already printed.
fn check_kernel_scratch(settings: &Settings, toolchain: &Toolchain, prepared: &mut Prepared) -> Result<Vec<String>> {
    let Some(kernels) = &prepared.kernels else { return Ok(Vec::new()) };
    let probe_dir = prepared.work.join("kernel-probe");
    let check = kernels::check_scratch(kernels, &prepared.plan, toolchain.compiled_isa, &settings.target.host, &probe_dir)?;
    for warning in &check.warnings {
        settings.env.directives.warning(warning);
    }
    let Prepared { model, generated_c, plan, compiled, work, .. } = prepared;
    libraries::supply_scratch(model, generated_c, plan, compiled, &check.supplies, work)?;
    Ok(check.warnings)
}

/// The model laid onto the regions of the build's `memory.x`, if it has one:
/// planned sizes, with the earlier Builders' modules (`registry::built_before`),
/// plus the compiled code once `libraries` (model and support) exist. Fails
/// when a region is too small.
fn check_fit(settings: &Settings, prepared: &Prepared, libraries: Option<&[PathBuf]>) -> Result<Option<MemoryFit>> {
    let Some((path, layout)) = &settings.memory else { return Ok(None) };
    let plan = &prepared.plan;
    let needs: Vec<MemoryNeeds> =
        plan.modules.iter().zip(&prepared.compiled).map(|(module, compiled)| module.memory_needs(compiled)).collect();
    // One program links every module of the build script: the earlier Builders' count too.
    let earlier = registry::built_before(&settings.out_dir, plan);
    let mut modules: Vec<FitModule> = earlier.iter().map(registry::BuiltModule::fit_module).collect();
    for (module, needs) in plan.modules.iter().zip(&needs) {
        let group = module.arena_group.as_ref().map(|group| group.name.as_str());
        modules.push(FitModule { name: module.name.as_str(), needs, group, placing: &settings.placing });
    }
    let code = match libraries {
        Some(libraries) => {
            let sizes = crate::objects::sizes::library_sizes(libraries)?;
            Some(sizes.text.saturating_add(sizes.data))
        }
        None => None,
    };
    let fit = fit::fit(path, layout, &modules, code)?;
    fit.check()?;
    Ok(Some(fit))
}

/// The largest archive file whose bytes may be in memory beside libclang
/// (see `Builder::probe_and_prepare`): a graph archive's weights are held up to three times
/// (read, parsed, laid out), so this keeps the growth under 16 MB.
const PRELOAD_MAX_ARCHIVE_BYTES: u64 = 4 << 20;

/// The Builder's options and Cargo's variables, resolved once per build.
struct Settings {
    paths: UserPaths,
    /// `Builder::out_dir`, else `OUT_DIR`.
    out_dir: PathBuf,
    target: Target,
    /// How the environment is read and where `cargo:` lines go.
    env: Env,
    show_warnings: bool,
    /// `CARGO_PKG_NAME`: names the glue's symbols.
    package: String,
    /// `<out_dir>/mlf/build-support`: mlf-build's own C, written out.
    support_dir: PathBuf,
    /// Where the model's memory goes.
    placing: Placing,
    /// The `memory.x` the model must fit, read.
    memory: Option<(PathBuf, MemoryLayout)>,
    /// How the crate's symbols are made its own.
    privacy: Option<Privacy>,
    /// `Builder::arena_group`, checked.
    arena_group: Option<CIdent>,
}

/// The paths of [`Builder::new`], [`Builder::include_dir`], [`Builder::source`]
/// and [`Builder::cmsis_nn`], absolute and normalised.
struct UserPaths {
    archive: PathBuf,
    include_dirs: Vec<PathBuf>,
    sources: Vec<PathBuf>,
    cmsis_nn: Option<PathBuf>,
}

/// What [`Builder::prepare`] made ready for the compile.
struct Prepared {
    tree: Tree,
    metadata: Metadata,
    plan: Plan,
    /// What only building shows of each module (plan order): the CMSIS-NN
    /// scratch once the core is known, the stack once the C is compiled.
    compiled: Vec<Compiled>,
    /// From planning, for [`Output::warnings`].
    warnings: Vec<String>,
    /// Names the work directory and the model's library.
    stem: String,
    /// `<out_dir>/mlf/build/<stem>`: the tree, the generated C and the library.
    work: PathBuf,
    model: Library,
    /// The text of everything generated, part of the cache key.
    generated_c: Vec<u8>,
    /// CMSIS-NN, when the archive's code calls it.
    kernels: Option<KernelCode>,
}

/// `<out_dir>/mlf/toolchain`: the toolchain probes' answers (`toolchain::answers`).
fn answers_dir(out_dir: &Path) -> PathBuf {
    out_dir.join("mlf").join("toolchain")
}

/// `<work>/gen/<module>_bindings.rs`: bindgen's output, kept for cached rebuilds.
fn bindings_file(work: &Path, module: &ModulePlan) -> PathBuf {
    work.join("gen").join(format!("{}_bindings.rs", module.name))
}

/// The `cc::Build` every build starts from unless the user gives one. Outside
/// a build script, where Cargo sets no `OPT_LEVEL` or `DEBUG`, it compiles as
/// Cargo's release profile does.
fn default_cc() -> cc::Build {
    let mut build = cc::Build::new();
    if env::cargo_provided("OPT_LEVEL").is_none() {
        build.opt_level(3);
    }
    if env::cargo_provided("DEBUG").is_none() {
        build.debug(false);
    }
    build
}
