//! Compiles C and C++ into static libraries and tells Cargo to link them.
//! `cc` resolves the compiler and its flags; the compiles run here (`spawn`),
//! each object kept while what it was compiled from is unchanged (`inputs`).
//! Objects and libraries are written under temporary names and renamed into
//! place only when complete, so a killed build leaves no half-written file
//! under a name a later build reads.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use crate::cargo::directive::Directives;
use crate::cargo::env::Env;
use crate::cargo::record::record_struct;
use crate::cargo::write::{remove_temporaries, rename, temporary, write_replacing};
use crate::error::{out_of_space_help, printable, Error, ErrorKind, Result};
use crate::objects::ar;
use crate::objects::elf;
use crate::objects::rename::{Private, Renaming};
use crate::objects::sections::{self, SectionNames};
use crate::toolchain::answers;
use crate::toolchain::inputs::{self, Digests};
use crate::toolchain::spawn::{self, CompilerCommand, Limits, Ran};

/// Flags a compile gets for the stack bound (`objects::stack`), the first
/// only when no wrapper runs the compiler; part of the cache keys.
pub(crate) const STACK_FLAGS: [&str; 2] = ["-fstack-usage", "-ffunction-sections"];

/// The compilers a build's libraries use, as `cc` resolved them, and what
/// identifies them (the keys of the compiled objects).
#[derive(Debug, Clone)]
pub(crate) struct Compilers {
    pub c: CompilerCommand,
    /// Only when a library has C++ to compile: resolving it runs probes.
    pub cxx: Option<CompilerCommand>,
    /// The commands, each program's size and modification time, and the
    /// archiver (used for objects that are not ELF).
    pub identity: String,
}
record_struct!(Compilers { c, cxx, identity });

impl Compilers {
    /// [`Compilers::resolve`], or the answers kept under `answers` (a
    /// directory and what the toolchain's answers are keyed by) when their
    /// programs are unchanged; without `answers` `cc` is asked every time.
    pub fn answered(base: &cc::Build, show_warnings: bool, with_cxx: bool, answers: Option<(PathBuf, &str)>) -> Result<Compilers> {
        let resolve = || {
            Compilers::resolve(base, show_warnings, with_cxx)
                .map_err(|e| Error::new(ErrorKind::Toolchain, format!("no C compiler: {e}")).help("install one, or name it with CC"))
        };
        let Some((dir, key)) = answers else { return resolve() };
        let key = format!("{key}\ncompilers show_warnings={show_warnings} with_cxx={with_cxx}");
        if let Some(compilers) = answers::load::<Compilers>(&dir, &key) {
            return Ok(compilers);
        }
        let compilers = resolve()?;
        answers::store(&dir, &key, &compilers.programs(), &compilers)?;
        Ok(compilers)
    }

    /// The programs the commands run: a wrapper and the compiler after it.
    fn programs(&self) -> Vec<PathBuf> {
        let commands = std::iter::once(&self.c).chain(&self.cxx);
        commands.flat_map(|command| std::iter::once(command.program.clone()).chain(command.wrapped())).collect()
    }

    /// The compilers `base` resolves to, warnings shown or silenced as asked.
    pub fn resolve(base: &cc::Build, show_warnings: bool, with_cxx: bool) -> std::result::Result<Compilers, cc::Error> {
        let mut build = base.clone();
        build.cargo_metadata(false).cargo_warnings(false).warnings(show_warnings).extra_warnings(false);
        let c = CompilerCommand::from_tool(&build.try_get_compiler()?);
        let archiver = build.try_get_archiver()?;
        let archiver = format!("archiver: {:?} {:?}", archiver.get_program(), archiver.get_args().collect::<Vec<_>>());
        let cxx = if with_cxx { Some(CompilerCommand::from_tool(&build.cpp(true).try_get_compiler()?)) } else { None };
        let mut identity: Vec<String> = std::iter::once(&c).chain(&cxx).map(CompilerCommand::identity).collect();
        identity.push(archiver);
        Ok(Compilers { c, cxx, identity: identity.join("\n") })
    }
}

impl CompilerCommand {
    /// The command line and the size and modification time of its program
    /// and of the compiler a wrapper runs (its first argument).
    fn identity(&self) -> String {
        let mut text = format!("{:?} {:?} {:?}", self.program, self.args, self.env);
        for program in std::iter::once(self.program.clone()).chain(self.wrapped()) {
            text.push_str(&format!("\n{}: {:?}", program.display(), answers::stamp(&program)));
        }
        text
    }

    /// The compiler a wrapper (sccache) runs: its first argument, when that is a path.
    fn wrapped(&self) -> Option<PathBuf> {
        self.args.first().map(PathBuf::from).filter(|first| first.is_absolute())
    }
}

/// The address space each process of a compile may use: this much, plus
/// [`ADDRESS_SPACE_PER_INPUT_BYTE`] per byte of C it reads. gcc `-O3` on a
/// 261 KB operator source peaks at 220 MB (host, Arm and RISC-V alike) where
/// this allows 639 MiB; code needs about 540 bytes per byte of such C, weights
/// (51 MB, peak under 1.6 GB) far less. A small hostile source stops near the base.
const BASE_ADDRESS_SPACE_BYTES: u64 = 384 << 20;
const ADDRESS_SPACE_PER_INPUT_BYTE: u64 = 1024;
/// The CPU time each process of a compile may use: this much, plus
/// [`CPU_SECONDS_PER_INPUT_MIB`] per MiB of C it reads (gcc `-O3` takes 8 s
/// on the 51 MB source, allowed 1,630 s, and 5 s on the 261 KB one, allowed 30 s).
const BASE_CPU_SECONDS: u64 = 30;
const CPU_SECONDS_PER_INPUT_MIB: u64 = 32;
/// The variables that set the limits instead (a number, `0` for none).
pub(crate) const ADDRESS_SPACE_VARIABLE: &str = "MLF_BUILD_CC_MEMORY_MIB";
pub(crate) const CPU_TIME_VARIABLE: &str = "MLF_BUILD_CC_CPU_SECONDS";

/// A backstop for C the checks of `input::c` let through that would
/// still exhaust the compiler (macros built by `##` pasting, passed as
/// arguments): the limits of compiles, scaled to the C each reads unless
/// the variables above set them.
struct LimitSettings {
    /// From [`ADDRESS_SPACE_VARIABLE`]: `Some(0)` is no limit, `None` scaled.
    address_space_mib: Option<u64>,
    /// From [`CPU_TIME_VARIABLE`]: `Some(0)` is no limit, `None` scaled.
    cpu_seconds: Option<u64>,
}

impl LimitSettings {
    fn read(env: &Env) -> Result<LimitSettings> {
        let setting = |name: &str| -> Result<Option<u64>> {
            env.var(name)
                .map(|value| {
                    value.trim().parse::<u64>().map_err(|_| {
                        Error::new(ErrorKind::Config, format!("{name}={} is not a number", printable(&value)))
                            .help(format!("set {name} to a whole number, or 0 for no limit"))
                    })
                })
                .transpose()
        };
        Ok(LimitSettings { address_space_mib: setting(ADDRESS_SPACE_VARIABLE)?, cpu_seconds: setting(CPU_TIME_VARIABLE)? })
    }

    /// The limits of a compile reading `input_bytes` of C.
    fn limits(&self, input_bytes: u64) -> Limits {
        let address_space = match self.address_space_mib {
            Some(mib) => (mib > 0).then(|| mib.saturating_mul(1 << 20)),
            None => Some(BASE_ADDRESS_SPACE_BYTES.saturating_add(input_bytes.saturating_mul(ADDRESS_SPACE_PER_INPUT_BYTE))),
        };
        let cpu = match self.cpu_seconds {
            Some(seconds) => (seconds > 0).then_some(seconds),
            None => Some(BASE_CPU_SECONDS.saturating_add((input_bytes >> 20).saturating_mul(CPU_SECONDS_PER_INPUT_MIB))),
        };
        Limits { address_space_bytes: address_space, cpu_seconds: cpu }
    }
}

/// Calls the profiling hooks on entry to and exit from every function of the
/// source (`Builder::profile`): GCC and Clang alike, inlined functions included.
pub(crate) const PROFILE_FLAG: &str = "-finstrument-functions";

/// One static library to build.
pub(crate) struct Library {
    /// `lib<name>.a`.
    pub name: String,
    pub c_sources: Vec<PathBuf>,
    pub cxx_sources: Vec<PathBuf>,
    pub objects: Vec<PathBuf>,
    pub include_dirs: Vec<PathBuf>,
    pub defines: Vec<(String, Option<String>)>,
    /// Where objects and the archive go.
    pub out_dir: PathBuf,
    /// The directory the compiles run in (`OUT_DIR/mlf`): paths under it
    /// reach the compiler relative, so neither the commands (what a compiler
    /// cache hashes) nor the objects depend on where the checkout is.
    pub root: PathBuf,
    /// Where the link lines and the compiler's warnings go.
    pub directives: Directives,
    /// The linker sections the model's memory goes to (`Builder::link_section`).
    pub sections: SectionNames,
    /// Sources that are not the model's (kernels, the user's, mlf-build's
    /// runtime): their objects keep their sections.
    pub external_sources: Vec<PathBuf>,
    /// Sources compiled with `-finstrument-functions` (`Builder::profile`): the archive's own C of an AOT module.
    pub instrumented: Vec<PathBuf>,
    /// Functions of the instrumented sources that are no operator: gcc leaves
    /// them uninstrumented, so a kernel's helpers add no hook calls to its time
    /// (Clang has no such list; its hooks find no operator and return).
    pub untimed_functions: Vec<String>,
    /// The crate's tag its symbols are renamed with, when they are made its own.
    pub private: Option<Private>,
    /// Sources that include every header bindgen reads (the glue): once they
    /// compiled, under the limits, those headers are safe for libclang ([`Library::compile`]).
    pub header_sources: Vec<PathBuf>,
    /// `(source, original)`: a generated source that includes an archive's
    /// source (a split run's copy): its compile reads both, so its limits and
    /// its place in the largest-first order count both.
    pub including: Vec<(PathBuf, PathBuf)>,
}

/// The sources of [`Library::header_sources`] still compiling, and what to call when none is left.
struct HeaderGate<'a, F> {
    waiting: Mutex<(HashSet<&'a Path>, Option<F>)>,
}

impl<F: FnOnce()> HeaderGate<'_, F> {
    /// `source` compiled (`None`: nothing new); when none is left waiting, the call is made, once.
    fn compiled(&self, source: Option<&Path>) {
        let call = {
            let mut waiting = self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(source) = source {
                waiting.0.remove(source);
            }
            if waiting.0.is_empty() {
                waiting.1.take()
            } else {
                None
            }
        };
        if let Some(call) = call {
            call();
        }
    }
}

/// One source to compile and where its object goes.
struct Unit<'a> {
    source: &'a Path,
    compiler: &'a CompilerCommand,
    object: PathBuf,
    /// `<object>.inputs`: what the object was compiled from.
    record: PathBuf,
    key: String,
}

/// A compile under way: the temporaries it writes.
struct Started<'a> {
    unit: &'a Unit<'a>,
    object: PathBuf,
    depfile: PathBuf,
    command: Command,
    limits: Limits,
}

impl Library {
    /// Compiles what changed since the last build and writes the libraries.
    /// `headers_compiled` is called once every [`Library::header_sources`]
    /// compiled (or was up to date), while the other sources may still compile.
    pub fn compile(&self, compilers: &Compilers, base: &cc::Build, headers_compiled: impl FnOnce() + Send) -> Result<()> {
        std::fs::create_dir_all(&self.out_dir).map_err(|e| Error::io("create", &self.out_dir, e))?;
        remove_temporaries(&self.out_dir)?;
        let digests = Digests::default();
        let units = self.units(compilers)?;
        // Largest first, so the longest compile does not start last and leave the other jobs idle.
        let mut stale: Vec<(u64, &Unit<'_>)> = units
            .iter()
            .filter(|unit| !(unit.object.is_file() && inputs::holds(&unit.record, &unit.key, unit.source, &digests)))
            .map(|unit| {
                let included = self.including.iter().filter(|(source, _)| source == unit.source).map(|(_, original)| original.as_path());
                let bytes = std::iter::once(unit.source).chain(included).map(|path| std::fs::metadata(path).map_or(0, |m| m.len()));
                (bytes.fold(0u64, u64::saturating_add), unit)
            })
            .collect();
        stale.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.source.cmp(b.1.source)));
        let compiled = !stale.is_empty();
        if compiled {
            // The list marks the libraries complete: gone until they are rewritten.
            inputs::forget(&self.object_list())?;
        }
        let header_bytes = self.archive_header_bytes();
        // A wrapper compiles elsewhere (sccache's server, distcc): limits would hold its client only.
        let limited = stale.iter().any(|(_, unit)| !unit.compiler.under_wrapper);
        let settings = limited.then(|| LimitSettings::read(&Env { directives: self.directives.clone() })).transpose()?;
        let waiting: HashSet<&Path> =
            stale.iter().map(|(_, unit)| unit.source).filter(|source| self.header_sources.iter().any(|header| header == source)).collect();
        let gate = HeaderGate { waiting: Mutex::new((waiting, Some(headers_compiled))) };
        gate.compiled(None);
        let started: Vec<Started<'_>> = stale
            .iter()
            .map(|(source_bytes, unit)| {
                let limits = match &settings {
                    Some(settings) if !unit.compiler.under_wrapper => settings.limits(source_bytes.saturating_add(header_bytes)),
                    _ => Limits::default(),
                };
                self.start(unit, limits)
            })
            .collect();
        let result = self.finish_all(started, &digests, &|unit: &Unit<'_>| gate.compiled(Some(unit.source)));
        remove_temporaries(&self.out_dir)?;
        result?;
        if !compiled && self.is_built() {
            return Ok(());
        }
        let is_cxx = |unit: &&Unit<'_>| self.cxx_sources.iter().any(|source| source == unit.source);
        let cxx_objects: Vec<PathBuf> = units.iter().filter(is_cxx).map(|unit| unit.object.clone()).collect();
        let mut objects: Vec<PathBuf> = units.iter().filter(|unit| !is_cxx(unit)).map(|unit| unit.object.clone()).collect();
        for object in &self.objects {
            check_prebuilt(object)?;
        }
        for (index, object) in self.objects.iter().enumerate() {
            if self.sections.is_empty() {
                objects.push(object.clone());
            } else {
                // The archive's own objects: placed in copies, the tree stays as unpacked.
                let placed = sections::placed_copy(object, &self.out_dir, index);
                sections::place(object, &placed, &self.sections)?;
                objects.push(placed);
            }
        }
        let all_objects = [cxx_objects.as_slice(), objects.as_slice()].concat();
        let renaming = self.private.as_ref().map(|private| private.renaming(&all_objects)).transpose()?;
        if !self.cxx_sources.is_empty() {
            self.archive(base, &format!("{}_cxx", self.name), &cxx_objects, renaming.as_ref())?;
        }
        self.archive(base, &self.name, &objects, renaming.as_ref())?;
        write_replacing(&self.privacy_record(), Private::record(self.private.as_ref()).as_bytes())?;
        // For the stack bound, which a cached build reads again: what this build compiled
        // (whose `.su` files its compiler wrote) apart from the archive's prebuilt objects.
        let compiled: HashSet<&PathBuf> = units.iter().map(|unit| &unit.object).collect();
        let mut list: Vec<String> = cxx_objects
            .iter()
            .chain(&objects)
            .map(|path| {
                let provenance = if compiled.contains(path) { Provenance::Compiled } else { Provenance::Prebuilt };
                format!("{}\t{}", provenance.marker(), path.display())
            })
            .collect();
        list.push(String::new());
        write_replacing(&self.object_list(), list.join("\n").as_bytes())
    }

    /// Every source with its object, record and key.
    fn units<'a>(&'a self, compilers: &'a Compilers) -> Result<Vec<Unit<'a>>> {
        let cxx = self.cxx_sources.iter().map(|source| (source, true));
        let mut units = Vec::new();
        for (source, is_cxx) in self.c_sources.iter().map(|source| (source, false)).chain(cxx) {
            let compiler = if is_cxx {
                compilers.cxx.as_ref().ok_or_else(|| Error::new(ErrorKind::Toolchain, "the C++ compiler was not resolved"))?
            } else {
                &compilers.c
            };
            let object = self.object_path(source);
            let placed = !self.sections.is_empty() && !self.external_sources.contains(source);
            let key = crate::cargo::cache::key(&[
                env!("CARGO_PKG_VERSION").as_bytes(),
                compilers.identity.as_bytes(),
                format!("{:?}", self.arguments(compiler, source)).as_bytes(),
                format!("{:?}", placed.then_some(&self.sections)).as_bytes(),
            ]);
            units.push(Unit { source, compiler, record: object.with_extension("inputs"), object, key });
        }
        Ok(units)
    }

    /// `<out_dir>/<stem>-<hash of the source's path as given>.o`: stable, the
    /// same from any checkout (a library's member names), and distinct for
    /// sources of the same name in different directories.
    pub fn object_path(&self, source: &Path) -> PathBuf {
        let stem = source.file_stem().map_or_else(|| "source".into(), |stem| stem.to_string_lossy().into_owned());
        let hash = crate::cargo::cache::key(&[self.given(source).as_os_str().as_encoded_bytes()]);
        self.out_dir.join(format!("{stem}-{}.o", &hash[..16]))
    }

    /// `path` as the compiler is given it: relative to [`Library::root`] when under it.
    fn given(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(relative) if relative.as_os_str().is_empty() => PathBuf::from("."),
            Ok(relative) => relative.to_path_buf(),
            Err(_) => path.to_path_buf(),
        }
    }

    /// `command` run in [`Library::root`]. On Linux
    /// `PWD` names the directory as `/proc/self/cwd`: gcc and clang take the
    /// debug information's compilation directory (and gcc's preprocessed
    /// output, which sccache hashes, its line naming it) from `PWD` when it
    /// names the directory they run in, so that too is the same from any checkout.
    fn in_root(&self, mut command: Command) -> Command {
        command.current_dir(&self.root);
        if cfg!(target_os = "linux") && Path::new("/proc/self/cwd").is_dir() {
            command.env("PWD", "/proc/self/cwd");
        }
        command
    }

    /// The compiler's arguments for `source`, less where the outputs go.
    fn arguments(&self, compiler: &CompilerCommand, source: &Path) -> Vec<OsString> {
        let mut args = compiler.args.clone();
        for dir in &self.include_dirs {
            args.push("-I".into());
            args.push(self.given(dir).into());
        }
        if !compiler.msvc {
            // Each function's frame in a `.su` file and each function in a section of
            // its own (cc's default too), for the stack bound; the code is unchanged.
            // A compiler cache refuses `-fstack-usage` (sccache) or drops its file
            // (sccache 0.4): under a wrapper the bound reads the frames from the code.
            let [stack_usage, function_sections] = STACK_FLAGS;
            if !compiler.under_wrapper {
                args.push(stack_usage.into());
            }
            args.push(function_sections.into());
            if self.sections.workspace.is_some() {
                // Tentative definitions would be COMMON symbols, in no section to rename.
                args.push("-fno-common".into());
            }
            if self.instrumented.iter().any(|instrumented| instrumented == source) {
                args.push(PROFILE_FLAG.into());
                if !compiler.clang && !self.untimed_functions.is_empty() {
                    args.push(format!("-finstrument-functions-exclude-function-list={}", self.untimed_functions.join(",")).into());
                }
            }
        }
        for (name, value) in &self.defines {
            args.push(match value {
                Some(value) => format!("-D{name}={value}").into(),
                None => format!("-D{name}").into(),
            });
        }
        args.push(if compiler.msvc { "/c" } else { "-c" }.into());
        args.push(self.given(source).into());
        args
    }

    /// The size of the headers directly in the include directories under
    /// [`Library::root`] (the archive's, unpacked there): what any compile may read besides its source.
    fn archive_header_bytes(&self) -> u64 {
        let own = self.include_dirs.iter().filter(|dir| dir.starts_with(&self.root));
        let files = own.filter_map(|dir| std::fs::read_dir(dir).ok()).flatten().filter_map(|entry| entry.ok()?.metadata().ok());
        files.filter(std::fs::Metadata::is_file).fold(0u64, |total, metadata| total.saturating_add(metadata.len()))
    }

    /// The command compiling `unit` to temporaries, run under `limits`.
    fn start<'a>(&self, unit: &'a Unit<'a>, limits: Limits) -> Started<'a> {
        let object = temporary(&unit.object);
        let depfile = object.with_extension("d");
        let mut command = self.in_root(unit.compiler.program_command());
        command.args(self.arguments(unit.compiler, unit.source));
        if unit.compiler.msvc {
            let mut out = OsString::from("/Fo");
            out.push(self.given(&object));
            command.arg(out);
        } else {
            command.arg("-MD").arg("-MF").arg(self.given(&depfile)).arg("-o").arg(self.given(&object));
        }
        Started { unit, object, depfile, command, limits }
    }

    /// Runs the compiles; every object compiled is renamed into place with
    /// its record, even when another failed (the next build compiles only
    /// the failed ones). The first failure is the error.
    fn finish_all(&self, started: Vec<Started<'_>>, digests: &Digests, compiled: &(dyn Fn(&Unit<'_>) + Sync)) -> Result<()> {
        let commands: Vec<(Command, Limits)> = started.iter().map(|s| (clone_command(&s.command), s.limits)).collect();
        let ran = spawn::run_all(commands, &|index| compiled(started[index].unit));
        let mut first_error = None;
        for (started, ran) in started.iter().zip(ran) {
            let result = match ran {
                None => Ok(()),
                Some(Ran::NotStarted(e)) => Err(Error::new(
                    ErrorKind::Toolchain,
                    format!("could not start the C compiler `{}`: {e}", started.unit.compiler.program.display()),
                )
                .help("install the compiler, or name one with CC (CC_<target>)")
                .with_source(e)),
                Some(Ran::Exited(output)) if output.status.success() => self.place(started, digests),
                Some(Ran::Exited(output)) => Err(self.failure(started, &output)),
            };
            if let Err(error) = result {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Moves a compiled object (with its `.su` file) into place and records what it was compiled from.
    fn place(&self, started: &Started<'_>, digests: &Digests) -> Result<()> {
        let unit = started.unit;
        if !self.sections.is_empty() && !self.external_sources.iter().any(|source| source == unit.source) {
            sections::place(&started.object, &started.object, &self.sections)?;
        }
        let inputs = if unit.compiler.msvc {
            Vec::new()
        } else {
            let text = std::fs::read_to_string(&started.depfile).map_err(|e| Error::io("read", &started.depfile, e))?;
            // Named as the compiler was given them: relative to the directory it ran in.
            inputs::depfile_inputs(&text).iter().map(|input| self.root.join(input)).collect()
        };
        // The old record goes first: an object renamed in under it would be taken for the old one.
        inputs::forget(&unit.record)?;
        let stack_usage = started.object.with_extension("su");
        if stack_usage.is_file() {
            rename(&stack_usage, &unit.object.with_extension("su"))?;
        } else {
            // An earlier compile's frames are not this object's.
            inputs::forget(&unit.object.with_extension("su"))?;
        }
        rename(&started.object, &unit.object)?;
        if inputs.is_empty() {
            // Without the headers it read (MSVC) the object is not kept across builds.
            return Ok(());
        }
        inputs::record(&unit.record, &unit.key, &inputs, digests)
    }

    /// The error for a compile that failed: a write the compiler could not
    /// do is an I/O error, silence is said to be silence, else the compiler's first error lines.
    fn failure(&self, started: &Started<'_>, output: &Output) -> Error {
        const MAX_LINES: usize = 20;
        let source = started.unit.source;
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let status = match output.status.code() {
            Some(code) => format!("exited with status {code}"),
            None => format!("was killed ({})", output.status),
        };
        // Its paths are relative to the directory it ran in.
        let command_line = printable(&format!("{} (run in {})", CompilerCommand::shown(&started.command), self.root.display()));
        if let Some((line, kind)) = out_of_space(&stderr) {
            return Error::new(
                ErrorKind::Io,
                format!("the C compiler could not write a file compiling `{}`: {}", source.display(), printable(line.trim())),
            )
            .help(out_of_space_help(kind).unwrap_or_default());
        }
        if let Some(limit) = limit_reached(&started.limits, output, &stderr) {
            return Error::new(ErrorKind::Compile, format!("the C compiler reached {limit}, its limit for this source, and was stopped"))
                .in_file(source.display().to_string())
                .help(format!(
                "the limits (set to the size of the C a compile reads) are far above what TVM's generated code needs: C that reaches one \
                 most likely expands macros without bound (`##` pasting, macros passed as arguments); pass the archive as TVM wrote it, \
                 or, for C you trust, raise the limits with {ADDRESS_SPACE_VARIABLE}=<MiB> and {CPU_TIME_VARIABLE}=<seconds> (0 for none)"
            ));
        }
        let text = if stderr.trim().is_empty() { stdout } else { stderr };
        let lines: Vec<String> = text.lines().filter(|line| !line.trim().is_empty()).take(MAX_LINES).map(printable).collect();
        if lines.is_empty() {
            return Error::new(
                ErrorKind::Compile,
                format!("the C compiler {status} and printed nothing, compiling `{}`: {command_line}", source.display()),
            )
            .help("run that command to see what the compiler does; check CC / CFLAGS (or the cc::Build given to Builder::cc_build)");
        }
        Error::new(
            ErrorKind::Compile,
            format!("compiling `{}` failed in `{}` (the compiler {status}):\n{}", self.name, source.display(), lines.join("\n")),
        )
        .help("the compiler's first error lines are above; Builder::show_warnings(true) shows every diagnostic")
    }

    /// `lib<name>.objects`: the path of every object in the library, one per
    /// line (`-fstack-usage` writes each one's `.su` file beside it, when no wrapper runs the compiler). Written
    /// last: while it is missing the libraries are not complete.
    pub fn object_list(&self) -> PathBuf {
        self.out_dir.join(format!("lib{}.objects", self.name))
    }

    /// `lib<name>.private`: the privacy the libraries were archived with.
    fn privacy_record(&self) -> PathBuf {
        self.out_dir.join(format!("lib{}.private", self.name))
    }

    /// The static libraries [`Library::compile`] writes.
    pub fn archives(&self) -> Vec<PathBuf> {
        let mut names = vec![self.name.clone()];
        if !self.cxx_sources.is_empty() {
            names.push(format!("{}_cxx", self.name));
        }
        names.iter().map(|name| self.out_dir.join(format!("lib{name}.a"))).collect()
    }

    /// `lib<name>.a` of `objects`, written to a temporary and renamed into
    /// place: here when they are ELF, else by the toolchain's archiver through `cc`.
    fn archive(&self, base: &cc::Build, name: &str, objects: &[PathBuf], renaming: Option<&Renaming>) -> Result<()> {
        let library = self.out_dir.join(format!("lib{name}.a"));
        let partial = temporary(&library);
        let written = ar::write_elf_library(&partial, objects, renaming);
        let written = match written {
            Ok(true) => Ok(()),
            Ok(false) => {
                let partial_name = partial.file_stem().and_then(|stem| stem.to_str()).unwrap_or_default().trim_start_matches("lib");
                let mut build = base.clone();
                build.out_dir(&self.out_dir).cargo_metadata(false).cargo_warnings(false).cargo_output(self.directives.print);
                build.objects(objects);
                build.try_compile(partial_name).map_err(|e| {
                    Error::new(ErrorKind::Toolchain, format!("the archiver failed writing `{}`: {e}", library.display()))
                        .help("check AR / ARFLAGS")
                })
            }
            // Named by the library, not the temporary, when writing it failed.
            Err(error) => Err(match error.io_kind() {
                Some(kind) => Error::io("write", &library, kind.into()),
                None => error,
            }),
        };
        match written {
            Ok(()) => rename(&partial, &library),
            Err(error) => {
                let _ = std::fs::remove_file(&partial);
                Err(error)
            }
        }
    }

    /// Prints the link directives; done by us rather than `cc` so a cached build can replay them.
    pub fn link(&self) -> Result<()> {
        self.directives.link_static(&self.out_dir, &self.name)?;
        if !self.cxx_sources.is_empty() {
            self.directives.link_static(&self.out_dir, &format!("{}_cxx", self.name))?;
        }
        Ok(())
    }

    /// Whether the compiler, configured as for this library, finds `header`
    /// (asked by preprocessing a one-line probe file, removed again whatever happens).
    pub fn compiler_finds(&self, compilers: &Compilers, header: &str) -> bool {
        let probe = temporary(&self.out_dir.join("mlf_header_probe.c"));
        let written = std::fs::create_dir_all(&self.out_dir).and_then(|()| std::fs::write(&probe, format!("#include <{header}>\n")));
        let found = written.is_err() || {
            let compiler = &compilers.c;
            let mut command = self.in_root(compiler.program_command());
            let mut args = self.arguments(compiler, &probe);
            // `-c <probe>` becomes `-E <probe>`: preprocess only.
            let flag = args.len() - 2;
            args[flag] = if compiler.msvc { "/E" } else { "-E" }.into();
            command.args(args).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
            command.status().is_ok_and(|status| status.success())
        };
        let _ = std::fs::remove_file(&probe);
        found
    }

    /// Whether the libraries of an earlier build are there, complete.
    pub fn is_built(&self) -> bool {
        // A list naming objects elsewhere (its target directory moved or copied) is not this build's.
        let listed_here = std::fs::read_to_string(self.object_list()).is_ok_and(|list| {
            listed_objects(&list).all(|listed| {
                listed.is_some_and(|(_, object)| object.starts_with(&self.out_dir) || self.objects.iter().any(|own| own == object))
            })
        });
        let same_privacy = std::fs::read(self.privacy_record()).is_ok_and(|text| text == Private::record(self.private.as_ref()).as_bytes());
        listed_here && same_privacy && self.archives().iter().all(|library| library.is_file())
    }
}

/// Checks a prebuilt object's tables before it is archived and linked ([`elf::validate`]).
fn check_prebuilt(object: &Path) -> Result<()> {
    let bytes = std::fs::read(object).map_err(|e| Error::io("read", object, e))?;
    match elf::validate(&bytes) {
        Some(Err(malformed)) => Err(Error::new(ErrorKind::Compile, format!("the prebuilt object is malformed: {}", malformed.what()))
            .in_file(object.display().to_string())
            .help("objects under codegen/host/lib are linked as they are: pass the archive's original objects, as TVM wrote them")),
        _ => Ok(()),
    }
}

/// Where an object of a library's list ([`Library::object_list`]) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provenance {
    /// Compiled by this build: a `.su` file beside it is its compiler's.
    Compiled,
    /// The archive's own machine code (`codegen/host/lib`): anything beside it is the archive's.
    Prebuilt,
}

impl Provenance {
    fn marker(self) -> &'static str {
        match self {
            Provenance::Compiled => "compiled",
            Provenance::Prebuilt => "prebuilt",
        }
    }
}

/// The objects of a list [`Library::compile`] wrote, each with where it comes
/// from; `None` for a line that is not `<provenance>\t<path>` (a list of
/// another version, which names no `.su` file to trust).
pub(crate) fn listed_objects(list: &str) -> impl Iterator<Item = Option<(Provenance, &Path)>> {
    list.lines().filter(|line| !line.is_empty()).map(|line| {
        let (marker, path) = line.split_once('\t')?;
        let provenance = [Provenance::Compiled, Provenance::Prebuilt].into_iter().find(|p| p.marker() == marker)?;
        Some((provenance, Path::new(path)))
    })
}

/// A copy of `command`'s program, arguments and variables (`Command` is not `Clone`).
fn clone_command(command: &Command) -> Command {
    let mut copy = Command::new(command.get_program());
    copy.args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        copy.current_dir(dir);
    }
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => copy.env(name, value),
            None => copy.env_remove(name),
        };
    }
    copy
}

/// Which of `limits` a failed compile reached, said as a limit: the compiler
/// (`cc1`, `clang`) stopped by SIGXCPU at its CPU time, as its driver or its
/// status says, or an allocation the address space refused.
fn limit_reached(limits: &Limits, output: &Output, stderr: &str) -> Option<String> {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&output.status);
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    const SIGXCPU: i32 = 24;
    let out_of_memory = ["out of memory", "virtual memory exhausted", "memory exhausted", "Cannot allocate memory", "std::bad_alloc"];
    if let Some(seconds) = limits.cpu_seconds {
        if signal == Some(SIGXCPU) || stderr.contains("CPU time limit exceeded") {
            return Some(format!("{seconds} s of CPU time"));
        }
    }
    let bytes = limits.address_space_bytes?;
    out_of_memory.iter().any(|text| stderr.contains(text)).then(|| format!("{} MiB of address space", bytes >> 20))
}

/// The first line of a compiler's or assembler's stderr saying a write failed
/// for want of room, and which kind of failure it names.
fn out_of_space(stderr: &str) -> Option<(&str, std::io::ErrorKind)> {
    use std::io::ErrorKind::{FileTooLarge, QuotaExceeded, ReadOnlyFilesystem, StorageFull};
    let kinds = [
        ("No space left on device", StorageFull),
        ("Disk quota exceeded", QuotaExceeded),
        ("File too large", FileTooLarge),
        ("Read-only file system", ReadOnlyFilesystem),
    ];
    stderr.lines().find_map(|line| kinds.iter().find(|(text, _)| line.contains(text)).map(|(_, kind)| (line, *kind)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_compile_stopped_at_a_limit_names_the_limit() {
        use std::os::unix::process::ExitStatusExt;
        let limits = Limits { address_space_bytes: Some(1 << 30), cpu_seconds: Some(60) };
        let output = |raw: i32| Output { status: std::process::ExitStatus::from_raw(raw), stdout: Vec::new(), stderr: Vec::new() };
        // Killed by SIGXCPU (signal 24) itself, or its driver saying so.
        assert_eq!(limit_reached(&limits, &output(24), ""), Some("60 s of CPU time".to_string()));
        let driver = "gcc: fatal error: CPU time limit exceeded signal terminated program cc1";
        assert_eq!(limit_reached(&limits, &output(1 << 8), driver), Some("60 s of CPU time".to_string()));
        let allocation = "cc1: out of memory allocating 268435408 bytes after a total of 555003904 bytes";
        assert_eq!(limit_reached(&limits, &output(1 << 8), allocation), Some("1024 MiB of address space".to_string()));
        assert_eq!(limit_reached(&limits, &output(1 << 8), "a.c:1:1: error: unknown type name 'x'"), None);
        assert_eq!(limit_reached(&Limits::default(), &output(24), allocation), None);
    }

    #[test]
    fn recognises_writes_that_found_no_room() {
        let assembler = "/usr/bin/as: /out/a.mlf-tmp-1.o: can't write 3888 bytes to section .rodata.tvm: File too large\n";
        assert_eq!(out_of_space(assembler).map(|(_, kind)| kind), Some(std::io::ErrorKind::FileTooLarge));
        let full = "cc1: fatal error: /out/a.s: No space left on device\ncompilation terminated.";
        assert_eq!(out_of_space(full), Some(("cc1: fatal error: /out/a.s: No space left on device", std::io::ErrorKind::StorageFull)));
        assert_eq!(out_of_space("a.c:1:1: error: unknown type name 'x'"), None);
    }
}
