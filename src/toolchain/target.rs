//! The build target and its C toolchain: the triple from Cargo's `TARGET` (or
//! a Builder option), the flags `cc` does not add by itself, and what bindgen
//! needs to see the target's headers and layouts.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use crate::cargo::directive::Directives;
use crate::cargo::env::{self, Env};
use crate::cargo::record::record_struct;
use crate::error::{Error, ErrorKind, Result};
use crate::objects::Machine;
use crate::toolchain::{answers, joined};

#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub triple: String,
    pub host: String,
    /// `arm`, `riscv32`, `x86_64`...: Cargo's `CARGO_CFG_TARGET_ARCH`, else from the triple.
    arch: String,
    /// `none` on bare metal: Cargo's `CARGO_CFG_TARGET_OS`, else from the triple.
    os: String,
    /// `eabi`, `eabihf`, or empty: Cargo's `CARGO_CFG_TARGET_ABI`, else from the triple.
    abi: String,
    /// Cargo's `CARGO_CFG_TARGET_FEATURE` (RISC-V: `m`, `a`, `c`, `f`, `d`), else the triple's letters.
    features: Vec<String>,
    /// The core: `Builder::cpu`, else `-C target-cpu` in the Rust flags, else the triple's usual core.
    pub cpu: Option<String>,
    /// Where [`Target::cpu`] came from, for error messages.
    pub cpu_source: &'static str,
}

impl Target {
    /// `triple` built on `host`, its details from Cargo's `CARGO_CFG_*` variables
    /// and Rust flags when Cargo builds for that same triple, else from the triple.
    pub fn new(triple: String, host: String, cpu: Option<&str>, env: &Env) -> Target {
        // Cargo's cfg values and Rust flags describe Cargo's target, not a Builder::target override.
        let from_cargo = env::cargo_provided("TARGET").as_deref() == Some(triple.as_str());
        let cargo_cfg = |name: &str| if from_cargo { env.var(name) } else { None };
        let (triple_arch, triple_os, triple_abi, triple_features) = parse_triple(&triple);
        let features = match cargo_cfg("CARGO_CFG_TARGET_FEATURE") {
            Some(list) => list.split(',').map(str::to_string).collect(),
            None => triple_features,
        };
        let rust_cpu = if from_cargo { env.var("CARGO_ENCODED_RUSTFLAGS").and_then(|flags| rustc_target_cpu(&flags)) } else { None };
        let (cpu, cpu_source) = match (cpu, rust_cpu) {
            (Some(cpu), _) => (Some(cpu.to_string()), "Builder::cpu"),
            (None, Some(cpu)) => (Some(cpu), "`-C target-cpu` in the Rust flags"),
            (None, None) => (default_cpu(&triple).map(str::to_string), "the triple's usual core"),
        };
        Target {
            arch: cargo_cfg("CARGO_CFG_TARGET_ARCH").unwrap_or(triple_arch),
            os: cargo_cfg("CARGO_CFG_TARGET_OS").unwrap_or(triple_os),
            abi: cargo_cfg("CARGO_CFG_TARGET_ABI").unwrap_or(triple_abi),
            features,
            triple,
            host,
            cpu,
            cpu_source,
        }
    }

    /// 32-bit Arm (Cortex-M/A/R): the targets whose toolchains have the DSP intrinsics of `arm_acle.h`.
    pub fn is_arm32(&self) -> bool {
        self.arch == "arm"
    }

    fn is_riscv(&self) -> bool {
        self.arch.starts_with("riscv")
    }

    fn is_cross(&self) -> bool {
        self.triple != self.host
    }

    /// No operating system: the C library comes from the cross toolchain.
    fn is_bare_metal(&self) -> bool {
        self.os == "none"
    }

    /// Bare-metal Arm with newlib: `arm-none-eabi-gcc`.
    fn is_arm_none_eabi(&self) -> bool {
        self.is_arm32() && self.is_bare_metal()
    }

    /// The float ABI the Rust code uses, which the C objects must share.
    fn float_abi(&self) -> FloatAbi {
        let has = |feature: &str| self.features.iter().any(|f| f == feature);
        if self.is_arm32() {
            if self.abi == "eabihf" {
                FloatAbi::Hard
            } else {
                FloatAbi::Soft
            }
        } else if self.is_riscv() && self.is_bare_metal() {
            if has("d") {
                FloatAbi::Double
            } else if has("f") {
                FloatAbi::Single
            } else {
                FloatAbi::Soft
            }
        } else {
            FloatAbi::Native
        }
    }

    /// ELF `e_machine` of objects for this target, for checking prebuilt objects.
    pub fn elf_machine(&self) -> Option<Machine> {
        match self.arch.as_str() {
            "x86_64" => Some(Machine::X86_64),
            "aarch64" => Some(Machine::Aarch64),
            "x86" => Some(Machine::X86),
            _ if self.is_riscv() => Some(Machine::Riscv),
            _ if self.is_arm32() => Some(Machine::Arm),
            _ => None,
        }
    }

    /// Whether this target's objects are ELF64 (`None` when not known).
    pub fn elf_is_64(&self) -> Option<bool> {
        // x32 and ILP32 ABIs put a 64-bit machine's code in ELF32 objects.
        if self.abi.contains("x32") || self.abi.contains("ilp32") {
            return Some(false);
        }
        match self.arch.as_str() {
            "x86_64" | "aarch64" | "riscv64" => Some(true),
            "x86" | "arm" | "riscv32" => Some(false),
            _ => None,
        }
    }

    /// The size of a C pointer on this target, in bytes (`None` when not known):
    /// the ABIs that make objects ELF32 are those with 32-bit pointers.
    pub fn pointer_bytes(&self) -> Option<u64> {
        self.elf_is_64().map(|wide| if wide { 8 } else { 4 })
    }

    /// Whether this target's compilers write ELF objects: not Apple's (Mach-O),
    /// Windows' and UEFI's (COFF) or WebAssembly's.
    pub fn writes_elf_objects(&self) -> bool {
        !["apple", "windows", "wasm", "uefi"].iter().any(|other| self.triple.contains(other))
    }

    /// The Debian packages that provide this target's C cross toolchain.
    fn toolchain_packages(&self) -> &'static str {
        if self.is_arm32() {
            "gcc-arm-none-eabi libnewlib-arm-none-eabi"
        } else if self.is_riscv() {
            "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf"
        } else {
            "gcc"
        }
    }
}

/// Architecture, OS, ABI and (RISC-V) extension letters as Cargo would give them for `triple`.
fn parse_triple(triple: &str) -> (String, String, String, Vec<String>) {
    let parts: Vec<&str> = triple.split('-').collect();
    let first = parts.first().copied().unwrap_or_default();
    let arch = if first.starts_with("thumb") || first.starts_with("arm") {
        "arm".to_string()
    } else if let Some(rest) = first.strip_prefix("riscv32").or_else(|| first.strip_prefix("riscv64")) {
        first[..first.len() - rest.len()].to_string()
    } else if matches!(first, "i586" | "i686") {
        "x86".to_string()
    } else {
        first.to_string()
    };
    let os = if parts.contains(&"none") { "none" } else { parts.get(2).copied().unwrap_or_default() };
    let abi = parts.last().filter(|last| last.starts_with("eabi")).copied().unwrap_or_default();
    let features = if arch.starts_with("riscv") {
        let letters = first.trim_start_matches(arch.as_str());
        let letters = if letters.starts_with('g') { letters.replacen('g', "imafd", 1) } else { letters.to_string() };
        letters.chars().map(String::from).collect()
    } else {
        Vec::new()
    };
    (arch, os.to_string(), abi.to_string(), features)
}

/// The last `-C target-cpu=` in Cargo's `\x1f`-separated Rust flags (`generic`/`native` name no core).
fn rustc_target_cpu(encoded: &str) -> Option<String> {
    let flags: Vec<&str> = encoded.split('\x1f').collect();
    let mut cpu = None;
    for (index, flag) in flags.iter().enumerate() {
        let option = match *flag {
            "-C" | "--codegen" => flags.get(index + 1).copied(),
            _ => flag.strip_prefix("-C").or_else(|| flag.strip_prefix("--codegen=")),
        };
        if let Some(value) = option.and_then(|option| option.strip_prefix("target-cpu=")) {
            cpu = Some(value);
        }
    }
    cpu.filter(|cpu| !matches!(*cpu, "generic" | "native" | "")).map(str::to_string)
}

/// The core `-mcpu` names for a Cortex-M triple; `cc` adds `-march` only.
fn default_cpu(triple: &str) -> Option<&'static str> {
    let arch = triple.split('-').next().unwrap_or_default();
    Some(match arch {
        "thumbv6m" => "cortex-m0plus",
        "thumbv7m" => "cortex-m3",
        "thumbv7em" => "cortex-m4",
        "thumbv8m.base" => "cortex-m23",
        "thumbv8m.main" => "cortex-m33",
        _ => return None,
    })
}

/// How floats are passed between functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FloatAbi {
    /// In integer registers (Arm `eabi`, RISC-V `ilp32`).
    Soft,
    /// In FPU registers (Arm `eabihf`).
    Hard,
    /// RISC-V `ilp32f`.
    Single,
    /// RISC-V `ilp32d`.
    Double,
    /// A hosted target: the system compiler's own ABI.
    Native,
}

impl FloatAbi {
    fn describe(self) -> &'static str {
        match self {
            FloatAbi::Soft => "soft-float (floats in integer registers)",
            FloatAbi::Hard => "hard-float (floats in FPU registers)",
            FloatAbi::Single => "single-precision hard-float (ilp32f)",
            FloatAbi::Double => "double-precision hard-float (ilp32d)",
            FloatAbi::Native => "the system's",
        }
    }
}

/// An Arm Cortex-M core: the gcc architecture that gives all of it, and what code built for it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArmCore {
    pub name: &'static str,
    /// `-march` for the core (after cc's own `-march`, which would otherwise win over `-mcpu`).
    march: &'static str,
    /// The `-march` extensions of the core's FPU, for hard-float targets.
    fpu: &'static str,
    pub isa: CoreIsa,
}

/// What C code compiled for a core may use: Thumb-2, the DSP extension, Helium.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CoreIsa {
    pub thumb2: bool,
    pub dsp: bool,
    pub mve: bool,
}
record_struct!(CoreIsa { thumb2, dsp, mve });

impl CoreIsa {
    /// Whether a core with `self` runs all code written for a core with `needed`.
    pub fn runs(self, needed: CoreIsa) -> bool {
        (self.thumb2 || !needed.thumb2) && (self.dsp || !needed.dsp) && (self.mve || !needed.mve)
    }

    /// The first extension `needed` has that `self` lacks.
    pub fn missing(self, needed: CoreIsa) -> &'static str {
        if needed.mve && !self.mve {
            "Helium (MVE)"
        } else if needed.dsp && !self.dsp {
            "the DSP extension"
        } else {
            "Thumb-2"
        }
    }
}

const fn isa(thumb2: bool, dsp: bool, mve: bool) -> CoreIsa {
    CoreIsa { thumb2, dsp, mve }
}

/// The Cortex-M cores, by their `-mcpu` names.
const ARM_CORES: &[ArmCore] = &[
    ArmCore { name: "cortex-m0", march: "armv6s-m", fpu: "", isa: isa(false, false, false) },
    ArmCore { name: "cortex-m0plus", march: "armv6s-m", fpu: "", isa: isa(false, false, false) },
    ArmCore { name: "cortex-m1", march: "armv6s-m", fpu: "", isa: isa(false, false, false) },
    ArmCore { name: "cortex-m23", march: "armv8-m.base", fpu: "", isa: isa(false, false, false) },
    ArmCore { name: "cortex-m3", march: "armv7-m", fpu: "", isa: isa(true, false, false) },
    ArmCore { name: "cortex-m4", march: "armv7e-m", fpu: "+fp", isa: isa(true, true, false) },
    ArmCore { name: "cortex-m7", march: "armv7e-m", fpu: "+fp.dp", isa: isa(true, true, false) },
    ArmCore { name: "cortex-m33", march: "armv8-m.main+dsp", fpu: "+fp", isa: isa(true, true, false) },
    ArmCore { name: "cortex-m35p", march: "armv8-m.main+dsp", fpu: "+fp", isa: isa(true, true, false) },
    ArmCore { name: "cortex-m55", march: "armv8.1-m.main+mve", fpu: "+mve.fp+fp.dp", isa: isa(true, true, true) },
    ArmCore { name: "cortex-m85", march: "armv8.1-m.main+mve", fpu: "+mve.fp+fp.dp", isa: isa(true, true, true) },
];

/// The Cortex-M core `-mcpu=<name>` names; `+no<ext>` suffixes take extensions away.
pub(crate) fn arm_core(mcpu: &str) -> Option<ArmCore> {
    let mut parts = mcpu.split('+');
    let name = parts.next().unwrap_or_default();
    let mut core = *ARM_CORES.iter().find(|core| core.name == name)?;
    for extension in parts {
        match extension {
            "nodsp" => core.isa.dsp = false,
            "nomve" => core.isa.mve = false,
            _ => {}
        }
    }
    Some(core)
}

/// The C compiler setup for one target, shared by every library of a build.
#[derive(Clone)]
pub(crate) struct Toolchain {
    /// The user's `cc::Build` (or a new one) with the target's flags added.
    pub build: cc::Build,
    /// What bindgen's clang needs besides the headers: the target and its system include directories.
    pub clang_args: Vec<String>,
    /// The C library archives a bare-metal target links (the multilib's `libm.a`, `libc.a`):
    /// rustc links Rust with no C library of its own there.
    pub system_libs: Vec<PathBuf>,
    /// What the configured C compiler generates code for, as it predefines it (bare-metal targets).
    pub compiled_isa: Option<CoreIsa>,
    /// What the answers kept on disk are keyed by (mlf-build's default
    /// `cc::Build` only): answers derived from the toolchain's are kept under it too.
    pub answers_key: Option<String>,
    /// The static libraries the final link takes library functions from, in
    /// link order, for the stack bound to read their code: on bare metal
    /// [`Toolchain::system_libs`], then Rust's `compiler_builtins` (the
    /// compiler runtime on Arm, where no `libgcc.a` is linked). Empty on a
    /// hosted target, whose C library is a shared object.
    pub stack_libraries: Vec<PathBuf>,
}

impl Toolchain {
    /// Prints the link directives for [`Toolchain::system_libs`].
    pub fn link(&self, directives: &Directives) -> Result<()> {
        for lib in &self.system_libs {
            let (Some(dir), Some(name)) = (lib.parent(), lib.file_stem().and_then(|stem| stem.to_str())) else { continue };
            directives.link_static(dir, name.trim_start_matches("lib"))?;
        }
        Ok(())
    }
}

/// Variables besides the compiler environment that change what `cc`
/// resolves: where programs are found, the wrapper it puts before the
/// compiler, the Rust flags and profile it derives C flags from.
const ANSWER_VARIABLES: &[&str] = &[
    "PATH",
    "RUSTC_WRAPPER",
    "CC_KNOWN_WRAPPER_CUSTOM",
    "CARGO_ENCODED_RUSTFLAGS",
    "OPT_LEVEL",
    "DEBUG",
    "PROFILE",
    "CC_SHELL_ESCAPED_FLAGS",
    "CC_FORCE_DISABLE",
];

/// [`toolchain`] from mlf-build's default `base` (the same for every build of
/// a process), probed once per process for each target and compiler
/// `environment` (what `cc` reads): a build script that builds several
/// archives asks the compiler once. The answers are kept in `answers_dir`:
/// a rerun with the same environment and compiler asks nothing.
pub(crate) fn default_toolchain(base: &cc::Build, target: &Target, environment: &[String], answers_dir: &Path) -> Result<Toolchain> {
    static PROBED: Mutex<Vec<(String, Toolchain)>> = Mutex::new(Vec::new());
    let keying = ANSWER_VARIABLES.iter().map(|name| format!("{name}={:?}", env::keying_only(name)));
    let key = format!("{}\n{target:?}\n{}\n{}", env!("CARGO_PKG_VERSION"), environment.join("\n"), keying.collect::<Vec<_>>().join("\n"));
    let known = PROBED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .find(|(probed_for, _)| *probed_for == key)
        .map(|(_, toolchain)| toolchain.clone());
    if let Some(toolchain) = known {
        return Ok(toolchain);
    }
    let toolchain = match answers::load::<Answers>(answers_dir, &key) {
        Some(answers) => {
            let mut build = for_target(base, target);
            answers.added.apply(&mut build);
            Toolchain {
                build,
                clang_args: answers.clang_args,
                system_libs: answers.system_libs,
                compiled_isa: answers.compiled_isa,
                answers_key: None,
                stack_libraries: answers.stack_libraries,
            }
        }
        None => {
            // Not held while probing: another archive's build may probe another target meanwhile.
            let (toolchain, answers) = probe(base, target)?;
            // Stale too when a library the stack bound reads goes (a Rust update renames compiler_builtins).
            let programs: Vec<PathBuf> = std::iter::once(&answers.compiler).chain(&answers.stack_libraries).cloned().collect();
            answers::store(answers_dir, &key, &programs, &answers)?;
            toolchain
        }
    };
    let toolchain = Toolchain { answers_key: Some(key.clone()), ..toolchain };
    PROBED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push((key, toolchain.clone()));
    Ok(toolchain)
}

/// Completes `base` for `target` and checks that the toolchain is there and
/// compiles for the Rust target's float ABI.
pub(crate) fn toolchain(base: &cc::Build, target: &Target) -> Result<Toolchain> {
    probe(base, target).map(|(toolchain, _)| toolchain)
}

fn probe(base: &cc::Build, target: &Target) -> Result<(Toolchain, Answers)> {
    std::thread::scope(|scope| {
        // rustc starts as slowly as a compiler probe: it is asked beside them.
        let rust_target = scope.spawn(|| if target.is_cross() { check_rust_target(target).map(Some) } else { Ok(None) });
        let toolchain = probe_toolchain(base, target);
        let rust_libdir = joined(rust_target)?;
        let (mut toolchain, mut answers) = toolchain?;
        if target.is_bare_metal() {
            toolchain.stack_libraries = toolchain.system_libs.clone();
            toolchain.stack_libraries.extend(rust_libdir.as_deref().and_then(compiler_builtins));
            answers.stack_libraries = toolchain.stack_libraries.clone();
        }
        Ok((toolchain, answers))
    })
}

/// `base` set up for `target`, before any probe.
fn for_target(base: &cc::Build, target: &Target) -> cc::Build {
    let mut build = base.clone();
    // mlf-build prints the rerun lines for the variables cc reads itself, once each (see `env`).
    // Probing prints nothing: a failure becomes mlf-build's own error.
    build.target(&target.triple).host(&target.host).cargo_metadata(false).cargo_warnings(false).emit_rerun_if_env_changed(false);
    build
}

fn probe_toolchain(base: &cc::Build, target: &Target) -> Result<(Toolchain, Answers)> {
    let mut build = for_target(base, target);
    let compiler = build.try_get_compiler().map_err(|e| missing_compiler(target, &e.to_string()))?;
    let user_args: Vec<String> = compiler.args().iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let float_abi = target.float_abi();
    if let Some(flag) = user_args.iter().find(|a| changes_float_abi(a, float_abi)) {
        return Err(Error::new(
            ErrorKind::Config,
            format!("`{flag}` would change the float ABI of `{}`, whose Rust code is {}", target.triple, float_abi.describe()),
        )
        .help("remove the flag from CFLAGS / the cc::Build, or build for the triple whose float ABI you want (e.g. thumbv7em-none-eabi for soft-float)"));
    }
    // What the probes add to `build`, kept as data so a cached answer can add it again.
    let mut added = Additions::default();
    if target.is_arm32() {
        add_arm_flags(&mut added.flags, target, &user_args, float_abi)?;
    }
    if target.is_riscv() && target.is_bare_metal() && !user_args.iter().any(|a| a.starts_with("-march=")) {
        // cc adds these too, but not under CRATE_CC_NO_DEFAULTS.
        added.flags.push(format!("-march={}{}", target.arch.replace("riscv", "rv"), riscv_extensions(&target.features)));
        added.flags.push(format!("-mabi={}", riscv_abi(&target.arch, float_abi)));
    }
    for flag in ["-ffunction-sections", "-fdata-sections"] {
        if !user_args.iter().any(|a| a == flag) {
            added.flags.push(flag.to_string());
        }
    }
    if target.is_arm_none_eabi() {
        // newlib 3.3 with gcc 12 leaves PRIu64 undefined without it.
        added.defines.push(("__int64_t_defined".to_string(), "1".to_string()));
    }
    added.apply(&mut build);
    let compiler = build.try_get_compiler().map_err(|e| missing_compiler(target, &e.to_string()))?;
    let path = crate::toolchain::spawn::find_program(compiler.path())
        .ok_or_else(|| missing_compiler(target, &format!("`{}` is not installed", compiler.path().display())))?;
    if target.is_riscv() && target.is_bare_metal() {
        // picolibc's headers and libraries exist for gcc only through its specs file.
        let specs = print_file_name(&path, compiler.args(), "picolibc.specs", target)?;
        if specs.is_some() {
            let specs = Additions { flags: vec!["--specs=picolibc.specs".to_string()], defines: Vec::new() };
            specs.apply(&mut build);
            added.flags.extend(specs.flags);
        }
    }
    let compiler = build.try_get_compiler().map_err(|e| missing_compiler(target, &e.to_string()))?;
    let args = compiler.args();
    // Debian's rv32 libm.a is a placeholder; picolibc keeps the maths in libc.a,
    // built with -msave-restore, whose helpers (`__riscv_save_*`) are in libgcc.a.
    let lib_names: &[&str] = match (target.is_bare_metal(), target.is_arm32()) {
        (false, _) => &[],
        (true, true) => &["libm.a", "libc.a"],
        (true, false) => &["libc.a", "libgcc.a"],
    };
    // The probes ask the compiler independent questions: they run side by side.
    let (compiled_isa, include_dirs, printed_libs) = std::thread::scope(|scope| {
        let isa = scope.spawn(|| target.is_bare_metal().then(|| check_float_abi(&path, args, target, float_abi)).transpose());
        let dirs = scope.spawn(|| if target.is_cross() { system_include_dirs(&path, args, target) } else { Ok(Vec::new()) });
        let libs: Vec<_> = lib_names.iter().map(|name| scope.spawn(|| print_file_name(&path, args, name, target))).collect();
        (joined(isa), joined(dirs), libs.into_iter().map(joined).collect::<Vec<_>>())
    });
    let compiled_isa = compiled_isa?;
    let include_dirs = include_dirs?;
    let mut clang_args = Vec::new();
    if target.is_cross() {
        if !include_dirs.iter().any(|dir| dir.join("math.h").is_file() && dir.join("string.h").is_file()) {
            return Err(Error::new(
                ErrorKind::Toolchain,
                format!(
                    "the C library headers for `{}` (math.h, string.h) are missing: `{}` searches {}",
                    target.triple,
                    path.display(),
                    list(&include_dirs)
                ),
            )
            .help(format!("install them: `apt-get install --no-install-recommends {}`", target.toolchain_packages())));
        }
        // clang knows RISC-V triples by their base architecture only (`riscv32-unknown-none-elf`).
        let clang_triple = if target.is_riscv() {
            target.triple.replacen(&target.triple[..target.triple.find('-').unwrap_or(0)], &target.arch, 1)
        } else {
            target.triple.clone()
        };
        clang_args.push(format!("--target={clang_triple}"));
        for dir in &include_dirs {
            clang_args.push("-isystem".to_string());
            clang_args.push(dir.display().to_string());
        }
    }
    let mut system_libs = Vec::new();
    for (name, printed) in lib_names.iter().zip(printed_libs) {
        system_libs.push(multilib_file(&path, args, name, printed?, target, &include_dirs)?);
    }
    let answers = Answers { compiler: path, added, clang_args, system_libs, compiled_isa, stack_libraries: Vec::new() };
    Ok((
        Toolchain {
            build,
            clang_args: answers.clang_args.clone(),
            system_libs: answers.system_libs.clone(),
            compiled_isa,
            answers_key: None,
            stack_libraries: Vec::new(),
        },
        answers,
    ))
}

/// What [`probe_toolchain`] learnt, as data ([`crate::toolchain::answers`]).
struct Answers {
    /// The compiler's path, whose changes make the answers stale.
    compiler: PathBuf,
    added: Additions,
    clang_args: Vec<String>,
    system_libs: Vec<PathBuf>,
    compiled_isa: Option<CoreIsa>,
    stack_libraries: Vec<PathBuf>,
}
record_struct!(Answers { compiler, added, clang_args, system_libs, compiled_isa, stack_libraries });

/// What `probe_toolchain` adds to the user's `cc::Build`.
#[derive(Debug, Clone, Default)]
struct Additions {
    flags: Vec<String>,
    defines: Vec<(String, String)>,
}
record_struct!(Additions { flags, defines });

impl Additions {
    fn apply(&self, build: &mut cc::Build) {
        for flag in &self.flags {
            build.flag(flag);
        }
        for (name, value) in &self.defines {
            build.define(name, value.as_str());
        }
    }
}

/// `-mthumb`, the core and the float ABI, whatever cc added (or did not, under
/// CRATE_CC_NO_DEFAULTS): the core's own `-march` follows `-mcpu`, since cc's
/// `-march` would otherwise win over it (no Helium on a Cortex-M55).
fn add_arm_flags(flags: &mut Vec<String>, target: &Target, user_args: &[String], float_abi: FloatAbi) -> Result<()> {
    if target.triple.starts_with("thumb") {
        flags.push("-mthumb".to_string());
    }
    // cc never adds -mcpu: one in the arguments is the user's, and names the core.
    let user_cpu = user_args.iter().any(|a| a.starts_with("-mcpu="));
    if let (false, Some(cpu)) = (user_cpu, &target.cpu) {
        flags.push(format!("-mcpu={cpu}"));
        if let Some(core) = arm_core(cpu) {
            let mut march = core.march.to_string();
            let mut fpu = core.fpu.to_string();
            if !core.isa.mve {
                march = march.replace("+mve", "");
                fpu = fpu.replace("+mve.fp", "");
            }
            if !core.isa.dsp {
                march = march.replace("+dsp", "");
            }
            if float_abi == FloatAbi::Hard {
                if fpu.is_empty() {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!("core `{cpu}` (from {}) has no FPU, but `{}` passes floats in FPU registers", target.cpu_source, target.triple),
                    )
                    .help("name a core with an FPU (Builder::cpu or -C target-cpu), or build for the soft-float triple (e.g. thumbv7m-none-eabi)"));
                }
                march.push_str(&fpu);
            }
            flags.push(format!("-march={march}"));
            if float_abi == FloatAbi::Hard {
                // The core's whole FPU rather than cc's lowest common one.
                flags.push("-mfpu=auto".to_string());
            }
        }
    }
    if float_abi == FloatAbi::Hard {
        flags.push("-mfloat-abi=hard".to_string());
    }
    Ok(())
}

/// RISC-V extension letters in the order `-march` wants them.
fn riscv_extensions(features: &[String]) -> String {
    let mut letters = "i".to_string();
    for letter in ["m", "a", "f", "d", "c"] {
        if features.iter().any(|f| f == letter) {
            letters.push_str(letter);
        }
    }
    letters
}

fn riscv_abi(arch: &str, float_abi: FloatAbi) -> String {
    let base = if arch == "riscv64" { "lp64" } else { "ilp32" };
    match float_abi {
        FloatAbi::Single => format!("{base}f"),
        FloatAbi::Double => format!("{base}d"),
        _ => base.to_string(),
    }
}

/// Asks the configured compiler what it generates (its predefined macros) and
/// refuses a float ABI other than the Rust target's: such objects link and compute garbage.
fn check_float_abi(compiler: &Path, args: &[std::ffi::OsString], target: &Target, expected: FloatAbi) -> Result<CoreIsa> {
    let output = Command::new(compiler)
        .args(args)
        .args(["-dM", "-E", "-xc", "-"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| missing_compiler(target, &format!("`{}` did not run: {e}", compiler.display())))?;
    let shown_args = args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
    if !output.status.success() {
        return Err(Error::new(
            ErrorKind::Toolchain,
            format!(
                "`{}` refuses the flags for `{}` ({shown_args}): {}",
                compiler.display(),
                target.triple,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        )
        .help("check the core (Builder::cpu, -C target-cpu) and CFLAGS / the cc::Build flags against what the compiler supports"));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let macros: Vec<(&str, &str)> =
        text.lines().filter_map(|line| line.strip_prefix("#define ")).map(|line| line.split_once(' ').unwrap_or((line, ""))).collect();
    let defined = |name: &str| macros.iter().any(|(macro_name, _)| *macro_name == name);
    let compiled = if target.is_arm32() {
        if defined("__ARM_PCS_VFP") {
            FloatAbi::Hard
        } else {
            FloatAbi::Soft
        }
    } else if defined("__riscv_float_abi_double") {
        FloatAbi::Double
    } else if defined("__riscv_float_abi_single") {
        FloatAbi::Single
    } else {
        FloatAbi::Soft
    };
    if compiled != expected {
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "the C compiler `{}` builds {} objects for `{}`, whose Rust code is {}: linked together they would compute garbage (compiler flags: {shown_args})",
                compiler.display(),
                compiled.describe(),
                target.triple,
                expected.describe()
            ),
        )
        .help("remove what changes the float ABI from CC / CFLAGS / the cc::Build (a wrapper script, -mfloat-abi, -mabi), or build for the triple whose float ABI you want"));
    }
    Ok(CoreIsa {
        thumb2: macros.iter().any(|(name, value)| *name == "__ARM_ARCH_ISA_THUMB" && *value == "2"),
        dsp: defined("__ARM_FEATURE_DSP"),
        mve: defined("__ARM_FEATURE_MVE"),
    })
}

/// `gcc -print-file-name=<name>`: the file's path, or `None` when gcc has no such file.
fn print_file_name(compiler: &Path, args: &[std::ffi::OsString], name: &str, target: &Target) -> Result<Option<PathBuf>> {
    let output = Command::new(compiler)
        .args(args)
        .arg(format!("-print-file-name={name}"))
        .stderr(Stdio::null())
        .output()
        .map_err(|e| missing_compiler(target, &format!("`{}` did not run: {e}", compiler.display())))?;
    let found = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    // gcc echoes the bare name when it has no such file.
    Ok((found.is_absolute() && found.is_file()).then_some(found))
}

/// The multilib variant of `name` gcc links for these flags (FPU, Thumb level):
/// gcc's own answer, else `<include dir>/../lib/<multilib dir>/<name>` as
/// picolibc lays it out (its specs add that directory only at link time).
/// `name` (a C library archive) where the compiler printed it (`printed`),
/// else in the multilib directory beside the system include directories.
fn multilib_file(
    compiler: &Path,
    args: &[std::ffi::OsString],
    name: &str,
    printed: Option<PathBuf>,
    target: &Target,
    include_dirs: &[PathBuf],
) -> Result<PathBuf> {
    if let Some(found) = printed {
        return Ok(found);
    }
    let output = Command::new(compiler).args(args).arg("-print-multi-directory").stderr(Stdio::null()).output();
    let multi_dir = output.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    let candidates: Vec<PathBuf> =
        include_dirs.iter().filter_map(|dir| dir.parent()).map(|root| root.join("lib").join(&multi_dir).join(name)).collect();
    if let Some(found) = candidates.iter().find(|path| path.is_file()) {
        return Ok(found.clone());
    }
    Err(Error::new(
        ErrorKind::Toolchain,
        format!(
            "the C library for `{}` ({name}) is missing: `{}` does not find it, nor is it in {}",
            target.triple,
            compiler.display(),
            list(&candidates)
        ),
    )
    .help(format!("install it: `apt-get install --no-install-recommends {}`", target.toolchain_packages())))
}

/// A flag that sets a float ABI other than `abi` (soft-float Arm targets take `softfp` too: same calls).
fn changes_float_abi(flag: &str, abi: FloatAbi) -> bool {
    let arm_abi = flag.strip_prefix("-mfloat-abi=").or((flag == "-msoft-float").then_some("soft"));
    match (abi, arm_abi) {
        (FloatAbi::Hard, Some(set)) => set != "hard",
        (FloatAbi::Soft, Some(set)) => set == "hard",
        _ => false,
    }
}

fn missing_compiler(target: &Target, detail: &str) -> Error {
    Error::new(ErrorKind::Toolchain, format!("no C compiler for `{}`: {detail}", target.triple)).help(format!(
        "install the cross compiler (`apt-get install --no-install-recommends {}`), or name one with CC_{}",
        target.toolchain_packages(),
        target.triple.replace(['-', '.'], "_")
    ))
}

/// The Rust compiler a build script is given (`RUSTC`), else `rustc`.
fn rustc() -> String {
    env::cargo_provided("RUSTC").unwrap_or_else(|| "rustc".to_string())
}

/// The host triple as rustc names it, for a Builder run outside Cargo (which sets `HOST`).
pub(crate) fn rustc_host() -> Result<String> {
    let rustc = rustc();
    let output = Command::new(&rustc).arg("-vV").stderr(Stdio::null()).output();
    output
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().find_map(|l| l.strip_prefix("host: ").map(str::to_string)))
        .ok_or_else(|| {
            Error::new(ErrorKind::Toolchain, format!("`{rustc} -vV` did not name the host triple"))
                .help("set the host with Builder::host(\"<triple>\"), or install Rust so that `rustc` runs")
        })
}

/// Rust's compiler runtime for a target, in its library directory: `libcompiler_builtins-<hash>.rlib`.
fn compiler_builtins(libdir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(libdir)
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("libcompiler_builtins-") && name.ends_with(".rlib"))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

/// A missing Rust target fails deep inside Cargo; say it plainly first.
/// Returns the target's library directory.
fn check_rust_target(target: &Target) -> Result<PathBuf> {
    let rustc = rustc();
    let output = Command::new(&rustc).args(["--print", "target-libdir", "--target", &target.triple]).stderr(Stdio::null()).output();
    let libdir = output.ok().filter(|o| o.status.success()).map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(libdir) = libdir.filter(|dir| dir.read_dir().is_ok_and(|mut entries| entries.next().is_some())) {
        return Ok(libdir);
    }
    Err(Error::new(ErrorKind::Toolchain, format!("the Rust target `{}` is not installed for `{rustc}`", target.triple))
        .help(format!("install it: `rustup target add {}`", target.triple)))
}

/// The directories the cross compiler searches for `<...>` headers, less its
/// own (clang brings its own `stddef.h` and friends).
fn system_include_dirs(compiler: &Path, args: &[std::ffi::OsString], target: &Target) -> Result<Vec<PathBuf>> {
    let output = Command::new(compiler)
        .args(args)
        .args(["-xc", "-E", "-v", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| missing_compiler(target, &format!("`{}` did not run: {e}", compiler.display())))?;
    let text = String::from_utf8_lossy(&output.stderr);
    let dirs = text
        .lines()
        .skip_while(|line| !line.starts_with("#include <...> search starts here"))
        .skip(1)
        .take_while(|line| !line.starts_with("End of search list"))
        .filter_map(|line| PathBuf::from(line.trim()).canonicalize().ok())
        .filter(|dir| !dir.starts_with("/usr/lib/gcc") && !dir.starts_with("/usr/lib/gcc-cross"))
        .collect();
    Ok(dirs)
}

fn list(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "no directories".to_string();
    }
    dirs.iter().map(|d| format!("`{}`", d.display())).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cortex_m_triples_get_their_usual_core() {
        assert_eq!(default_cpu("thumbv6m-none-eabi"), Some("cortex-m0plus"));
        assert_eq!(default_cpu("thumbv7em-none-eabihf"), Some("cortex-m4"));
        assert_eq!(default_cpu("x86_64-unknown-linux-gnu"), None);
    }

    #[test]
    fn only_flags_changing_the_float_abi_are_refused() {
        assert!(changes_float_abi("-mfloat-abi=soft", FloatAbi::Hard));
        assert!(changes_float_abi("-mfloat-abi=softfp", FloatAbi::Hard));
        assert!(changes_float_abi("-msoft-float", FloatAbi::Hard));
        assert!(!changes_float_abi("-mfloat-abi=hard", FloatAbi::Hard));
        assert!(!changes_float_abi("-mfpu=fpv4-sp-d16", FloatAbi::Hard));
        assert!(changes_float_abi("-mfloat-abi=hard", FloatAbi::Soft));
        assert!(!changes_float_abi("-mfloat-abi=softfp", FloatAbi::Soft));
    }

    #[test]
    fn the_target_cpu_is_the_last_one_in_the_rust_flags() {
        assert_eq!(rustc_target_cpu("-C\x1ftarget-cpu=cortex-m7"), Some("cortex-m7".to_string()));
        assert_eq!(
            rustc_target_cpu("-Ctarget-cpu=cortex-m4\x1f-Copt-level=s\x1f--codegen=target-cpu=cortex-m55"),
            Some("cortex-m55".to_string())
        );
        assert_eq!(rustc_target_cpu("-Clink-arg=-Tlink.x"), None);
        assert_eq!(rustc_target_cpu("-Ctarget-cpu=generic"), None);
    }

    #[test]
    fn triples_give_cargo_cfg_values() {
        let (arch, os, abi, features) = parse_triple("riscv32imac-unknown-none-elf");
        assert_eq!((arch.as_str(), os.as_str(), abi.as_str()), ("riscv32", "none", ""));
        assert_eq!(riscv_extensions(&features), "imac");
        let (arch, os, abi, _) = parse_triple("thumbv8m.main-none-eabihf");
        assert_eq!((arch.as_str(), os.as_str(), abi.as_str()), ("arm", "none", "eabihf"));
        assert_eq!(parse_triple("x86_64-unknown-linux-gnu").1, "linux");
    }

    #[test]
    fn a_core_runs_code_for_cores_with_fewer_extensions() {
        let isa = |name: &str| arm_core(name).unwrap().isa;
        assert!(isa("cortex-m7").runs(isa("cortex-m4")));
        assert!(isa("cortex-m33").runs(isa("cortex-m4")));
        assert!(isa("cortex-m55").runs(isa("cortex-m33")));
        assert!(!isa("cortex-m0plus").runs(isa("cortex-m4")));
        assert!(!isa("cortex-m33").runs(isa("cortex-m55")));
        assert!(!isa("cortex-m33+nodsp").runs(isa("cortex-m4")));
        assert_eq!(isa("cortex-m3").missing(isa("cortex-m4")), "the DSP extension");
        assert!(arm_core("generic-rv32").is_none());
    }
}
