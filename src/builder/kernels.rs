//! CMSIS-NN for archives whose code calls it: where the library is, which of
//! its sources to compile, and the wrappers those sources compile through.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::cargo::cache;
use crate::cargo::env::Env;
use crate::cargo::write::write_if_changed;
use crate::codegen::kernel_probe::{self, KernelPath, ScratchProbe};
use crate::codegen::{self, GeneratedFile};
use crate::error::{printable, Error, ErrorKind, Result};
use crate::input::kernel_library::{self, Extension, Guard, KernelLibrary, ScratchCall, MAX_LIBRARY_FILE_BYTES};
use crate::input::user_path;
use crate::plan::limits;
use crate::plan::model::Plan;
use crate::plan::report::listed;
use crate::toolchain::target::{CoreIsa, Target};

/// The environment variable naming a CMSIS-NN checkout when `Builder::cmsis_nn` is not called.
pub(super) const CMSIS_NN_PATH: &str = "CMSIS_NN_PATH";

/// CMSIS-NN as one build compiles it.
#[derive(Debug)]
pub(super) struct KernelCode {
    pub library: KernelLibrary,
    /// The library's `Include/`.
    pub include_dir: PathBuf,
    /// The library's sources the archive needs, as found.
    pub originals: Vec<PathBuf>,
    /// What is compiled for each original, relative to the glue directory.
    pub wrappers: Vec<GeneratedFile>,
}

/// CMSIS-NN for `plan`: `None` when its code calls none, or includes it from
/// a directory the user added with `Builder::include_dir`.
pub(super) fn cmsis_nn(plan: &Plan, given: Option<&Path>, env: &Env, include_dirs: &[PathBuf]) -> Result<Option<KernelCode>> {
    let calls: Vec<_> = plan.modules.iter().filter_map(|module| module.needs.cmsis_nn.as_ref()).collect();
    let Some(first) = calls.first() else { return Ok(None) };
    let undefined: BTreeSet<String> = calls.iter().flat_map(|calls| calls.undefined.keys().cloned()).collect();
    let kernels = kernel_library::kernels_among(&undefined);
    let dir = match given.map(Path::to_path_buf).or_else(|| env.var(CMSIS_NN_PATH).map(PathBuf::from)) {
        Some(dir) => dir,
        None if include_dirs.iter().any(|dir| dir.join(&first.header).is_file()) => return Ok(None),
        None => {
            // Code calling only the headers' inline helpers (TVM's native Arm schedules) names no kernel.
            let calls = if kernels.is_empty() { String::new() } else { format!(" calls CMSIS-NN ({}) and", listed(&kernels)) };
            return Err(Error::new(
                ErrorKind::Config,
                format!("this archive{calls} includes CMSIS-NN's <{}>, but no CMSIS-NN was given", first.header),
            )
            .in_file(first.file.clone())
            .help(format!(
                "pass the folder holding CMSIS-NN's Include/ and Source/ with Builder::cmsis_nn(dir) or the {CMSIS_NN_PATH} environment variable \
                 (TVM 0.14-0.18 were tested against CMSIS-NN v4.1.0: git clone --branch v4.1.0 https://github.com/ARM-software/CMSIS-NN)"
            )));
        }
    };
    let library = KernelLibrary::read_cmsis_nn(&dir)?;
    let selection = library.select(&undefined);
    let missing = selection.missing(&kernels);
    if !missing.is_empty() {
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "the archive calls {} which CMSIS-NN at `{}` ({}) does not define",
                listed(&missing),
                dir.display(),
                library.version.as_deref().unwrap_or("revision unknown")
            ),
        )
        .in_file(first.file.clone())
        .help("the archive was compiled against another CMSIS-NN release: pass that one (TVM 0.14-0.18 used v4.1.0)"));
    }
    let root = library.root.clone();
    let wrappers = codegen::kernel_wrappers(&root, &selection.sources)?;
    let originals = selection.sources.iter().map(|source| root.join(source)).collect();
    Ok(Some(KernelCode { include_dir: root.join("Include"), library, originals, wrappers }))
}

/// Refuses calls to what CMSIS-NN defines only for cores with an extension the
/// build's core (`isa`) lacks, such as the DSP helpers `read_and_pad` and `SMLAD`
/// that TVM's native Arm schedules call from its headers: the library's `#if`s
/// leave them undefined there, and the compiler would fail on them less clearly.
pub(super) fn check_extensions(code: &KernelCode, plan: &Plan, isa: CoreIsa, target: &Target) -> Result<()> {
    for module in &plan.modules {
        let Some(calls) = &module.needs.cmsis_nn else { continue };
        let absent: Vec<(&str, &str, &Guard)> = calls
            .undefined
            .iter()
            .filter_map(|(name, file)| Some((name.as_str(), file.as_str(), code.library.guard(name)?)))
            .filter(|(_, _, guard)| !isa.runs(needed(guard.extension)))
            .collect();
        // A core with the largest extension missing has the smaller ones too: its advice covers them all.
        let Some(extension) = absent.iter().map(|(_, _, guard)| guard.extension).max() else { continue };
        let absent: Vec<_> = absent.into_iter().filter(|(_, _, guard)| guard.extension == extension).collect();
        let (first, file, guard) = absent[0];
        let names: Vec<&str> = absent.iter().map(|(name, _, _)| *name).collect();
        let lacking = isa.missing(needed(extension));
        let build = if target.is_arm32() {
            match &target.cpu {
                Some(cpu) => format!("the build's core `{cpu}` (from {}) lacks it", target.cpu_source),
                None => format!("the core of `{}` lacks it", target.triple),
            }
        } else {
            format!("`{}` is not an Arm Cortex-M target", target.triple)
        };
        let core = match extension {
            Extension::Dsp => {
                "a Cortex-M4, M7 or M33-class core, e.g. `cargo build --target thumbv7em-none-eabihf` (Cortex-M4F; \
                               `-C target-cpu=cortex-m7` or Builder::cpu(\"cortex-m7\") for a Cortex-M7)"
            }
            Extension::Mve => {
                "a Cortex-M55-class core, e.g. `cargo build --target thumbv8m.main-none-eabihf` \
                               with `-C target-cpu=cortex-m55` or Builder::cpu(\"cortex-m55\")"
            }
        };
        return Err(Error::new(
            ErrorKind::WrongTarget,
            format!(
                "module `{}` calls {}, which CMSIS-NN at `{}` ({}) defines only for cores with {lacking} \
                 ({first} under `{}` in {}), but {build}",
                module.name,
                listed(&names),
                code.library.root.display(),
                code.library.version.as_deref().unwrap_or("revision unknown"),
                guard.condition,
                guard.file
            ),
        )
        .in_file(file)
        .help(format!(
            "the archive's code was generated for a core with {lacking} and calls CMSIS-NN's helpers for it directly: \
             build for {core}, with arm-none-eabi-gcc installed"
        )));
    }
    Ok(())
}

/// What a core needs to compile the library's code for `extension`.
fn needed(extension: Extension) -> CoreIsa {
    CoreIsa { thumb2: true, dsp: true, mve: extension == Extension::Mve }
}

/// A kernel call the archive gives no scratch buffer (`{NULL,0}`) although
/// CMSIS-NN's code for the compiled core needs one: mlf-build supplies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ScratchSupply {
    /// Index of the module in the plan.
    pub module: usize,
    pub file: String,
    pub kernel: String,
    pub bytes: u64,
}

/// What the scratch contract asks of the build.
#[derive(Debug)]
pub(super) struct ScratchCheck {
    /// One per call the library cannot be asked about, and one per supplied call.
    pub warnings: Vec<String>,
    pub supplies: Vec<ScratchSupply>,
}

/// Checks each call's scratch buffer against what CMSIS-NN's code for the
/// compiled core needs, asking the library itself (a host program calling its
/// `*_get_buffer_size` functions). A buffer that is too small is refused; a
/// call given none (TVM's `{NULL,0}` for a core whose code needs none) is
/// supplied one by the build, with a warning.
pub(super) fn check_scratch(code: &KernelCode, plan: &Plan, isa: Option<CoreIsa>, host: &str, dir: &Path) -> Result<ScratchCheck> {
    let calls: Vec<(usize, &ScratchCall)> = plan
        .modules
        .iter()
        .enumerate()
        .filter_map(|(index, module)| module.needs.cmsis_nn.as_ref().map(|kernels| (index, kernels)))
        .flat_map(|(index, kernels)| kernels.scratch.iter().map(move |call| (index, call)))
        .collect();
    let path = match isa {
        Some(isa) if isa.mve => KernelPath::Mve,
        Some(isa) if isa.dsp => KernelPath::Dsp,
        _ => KernelPath::Portable,
    };
    let call_refs: Vec<&ScratchCall> = calls.iter().map(|(_, call)| *call).collect();
    let probe = kernel_probe::scratch_probe(&call_refs, &code.library.declarations, path);
    let version = code.library.version.as_deref().unwrap_or("revision unknown");
    let describe = |index: usize| {
        let call = call_refs[index];
        format!("{}'s call to {} ({} bytes)", call.function, call.kernel, call.reserved)
    };
    if let Some((first, _)) = probe.unreadable.first() {
        let listed: Vec<String> =
            probe.unreadable.iter().map(|(index, why)| format!("{} in {}: {why}", describe(*index), call_refs[*index].file)).collect();
        return Err(Error::new(
            ErrorKind::Metadata,
            format!("the scratch of the archive's CMSIS-NN calls cannot be checked against CMSIS-NN {version}: {}", listed.join("; ")),
        )
        .in_file(call_refs[*first].file.clone())
        .help(
            "TVM writes every CMSIS-NN structure as integer constants; mlf-build evaluates them itself and passes only the numbers to \
             the library's size functions (it never compiles the archive's expressions into a program it runs): this archive's \
             code was not written that way",
        ));
    }
    let warnings = probe
        .unasked
        .iter()
        .map(|(index, why)| format!("{}: the scratch of {} is not checked: {why}", call_refs[*index].file, describe(*index)))
        .collect();
    let mut check = ScratchCheck { warnings, supplies: Vec::new() };
    let Some(source) = &probe.source else { return Ok(check) };
    let needed = match run_probe(code, &probe, source, host, dir)? {
        ProbeRun::Sizes(needed) => needed,
        ProbeRun::NoHostCompiler(why) => {
            check.warnings.push(format!("the scratch sizes of the archive's CMSIS-NN calls are not checked: {why}"));
            return Ok(check);
        }
        // Only the library's code and the calls' integers reach the probe, so
        // this is the archive's doing: refused, never a check switched off.
        ProbeRun::Failed(why) => {
            let first = call_refs[probe.asked[0].0];
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "CMSIS-NN {version} could not say how much scratch the archive's kernel calls need in its {} code: {why}",
                    path.describe()
                ),
            )
            .in_file(first.file.clone())
            .help("the calls' structures hold dimensions the library's size functions do not accept: check that this archive was generated for CMSIS-NN"));
        }
    };
    let mut short: Vec<(usize, &ScratchCall, &str, u64)> = Vec::new();
    for ((index, function), needed) in probe.asked.iter().zip(needed) {
        let (module, call) = calls[*index];
        let refuse = |what: String| {
            Error::new(
                ErrorKind::Config,
                format!("{}'s call to {} {what} ({function} of CMSIS-NN {version}, {} code)", call.function, call.kernel, path.describe()),
            )
            .in_file(call.file.clone())
            .help("the call's structures hold dimensions the kernel cannot run with: check that this archive was generated for CMSIS-NN")
        };
        let needed = u64::try_from(needed).map_err(|_| refuse(format!("is invalid: the library answers {needed} bytes of scratch")))?;
        if needed > limits::MAX_BYTES {
            return Err(refuse(format!(
                "needs {needed} bytes of scratch, over mlf-build's limit of {} bytes (MAX_BYTES)",
                limits::MAX_BYTES
            )));
        }
        if needed > call.reserved {
            short.push((module, call, function.as_str(), needed));
        }
    }
    let (unbuffered, buffered): (Vec<_>, Vec<_>) = short.into_iter().partition(|(_, call, _, _)| !call.buffered);
    if let Some((_, first, _, _)) = buffered.first() {
        let listed: Vec<String> = buffered
            .iter()
            .map(|(_, call, function, needed)| {
                format!("{} ({}) gives {} {} bytes where {function} says {needed}", call.function, call.file, call.kernel, call.reserved)
            })
            .collect();
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "the archive's CMSIS-NN calls reserve less scratch than CMSIS-NN {version} needs in its {} code, which this core compiles: {}",
                path.describe(),
                listed.join("; ")
            ),
        )
        .in_file(first.file.clone())
        .help(
            "TVM placed these buffers in the workspace for the core and CMSIS-NN release it compiled for: build for that kind of core \
             (one with the same DSP or Helium extensions) or with that release; a smaller buffer makes the kernel fail or write past it",
        ));
    }
    for (module, call, function, needed) in unbuffered {
        check.warnings.push(format!(
            "{}: {} calls {} with no scratch buffer, but on this core CMSIS-NN {version} runs its {} code, which needs {needed} bytes ({function}): \
             mlf-build supplies a static buffer (KERNEL_SCRATCH_BYTES in the module's memory map)",
            call.file,
            call.function,
            call.kernel,
            path.describe()
        ));
        check.supplies.push(ScratchSupply { module, file: call.file.clone(), kernel: call.kernel.clone(), bytes: needed });
    }
    Ok(check)
}

/// What running the probe gave.
enum ProbeRun {
    /// The bytes each asked call needs (the library's signed answers).
    Sizes(Vec<i64>),
    /// The build machine has no C compiler to run it with.
    NoHostCompiler(String),
    /// The compiler refused it, or it failed or printed no sizes: the calls' numbers, why.
    Failed(String),
}

/// Compiles and runs the probe on the host (cached by its inputs). What
/// fails to be read, written or started in `dir` is an I/O error, not the archive's.
fn run_probe(code: &KernelCode, probe: &ScratchProbe, source: &str, host: &str, dir: &Path) -> Result<ProbeRun> {
    let selection = code.library.select(&probe.size_functions());
    let root = &code.library.root;
    let compiler =
        match cc::Build::new().cargo_metadata(false).target(host).host(host).opt_level(0).debug(false).warnings(false).try_get_compiler() {
            Ok(compiler) => compiler,
            Err(e) => return Ok(ProbeRun::NoHostCompiler(format!("no C compiler for the host {host}: {e}"))),
        };
    let mut key_parts: Vec<Vec<u8>> = vec![source.as_bytes().to_vec(), format!("{:?} {:?}", compiler.path(), compiler.args()).into_bytes()];
    for original in &selection.sources {
        let path = root.join(original);
        let bytes = user_path::read_regular(&path, MAX_LIBRARY_FILE_BYTES, "a CMSIS-NN source")?;
        key_parts.push(bytes);
    }
    let stamp = cache::Stamp { path: dir.join("stamp"), key: cache::key(&key_parts.iter().map(Vec::as_slice).collect::<Vec<_>>()) };
    let sizes_file = dir.join("sizes.txt");
    let output = if stamp.is_current() && sizes_file.is_file() {
        std::fs::read_to_string(&sizes_file).map_err(|e| Error::io("read", &sizes_file, e))?
    } else {
        let wrappers = codegen::kernel_wrappers(root, &selection.sources)?;
        let output = match compile_and_run(&compiler, source, &wrappers, &code.include_dir, dir)? {
            Ok(output) => output,
            Err(why) => return Ok(ProbeRun::Failed(why)),
        };
        write_if_changed(&sizes_file, output.as_bytes())?;
        stamp.record()?;
        output
    };
    let sizes = output.lines().map(|line| line.trim().parse::<i64>()).collect::<std::result::Result<Vec<_>, _>>();
    Ok(match sizes {
        Err(e) => ProbeRun::Failed(format!("the probe printed `{}`: {e}", printable(output.trim()))),
        Ok(sizes) if sizes.len() != probe.asked.len() => {
            ProbeRun::Failed(format!("the probe printed {} sizes for {} calls", sizes.len(), probe.asked.len()))
        }
        Ok(sizes) => ProbeRun::Sizes(sizes),
    })
}

fn compile_and_run(
    compiler: &cc::Tool,
    source: &str,
    wrappers: &[GeneratedFile],
    include_dir: &Path,
    dir: &Path,
) -> Result<std::result::Result<String, String>> {
    let main = dir.join("probe.c");
    write_if_changed(&main, source.as_bytes())?;
    let mut command = compiler.to_command();
    let executable = dir.join(if cfg!(windows) { "probe.exe" } else { "probe" });
    if compiler.is_like_msvc() {
        command
            .arg(format!("/I{}", include_dir.display()))
            .arg(format!("/Fe{}", executable.display()))
            .arg(format!("/Fo{}\\", dir.display()));
    } else {
        command.arg("-I").arg(include_dir).arg("-o").arg(&executable);
    }
    command.arg(&main);
    for wrapper in wrappers {
        let path = dir.join(&wrapper.path);
        write_if_changed(&path, &wrapper.bytes)?;
        command.arg(path);
    }
    let built = command.output().map_err(|e| {
        Error::new(
            ErrorKind::Toolchain,
            format!("could not start the host C compiler {:?} for the CMSIS-NN scratch probe: {e}", compiler.path()),
        )
        .help("install a C compiler for the build machine, or name one with HOST_CC")
        .with_source(e)
    })?;
    if !built.status.success() {
        return Ok(Err(format!(
            "the host compiler failed: {}",
            String::from_utf8_lossy(&built.stderr).lines().take(5).collect::<Vec<_>>().join(" | ")
        )));
    }
    // In its own directory, so that nothing it does lands outside OUT_DIR.
    let ran = std::process::Command::new(&executable).current_dir(dir).output().map_err(|e| {
        Error::new(ErrorKind::Io, format!("could not run the CMSIS-NN scratch probe `{}`: {e}", executable.display()))
            .help("the build runs this program it compiled in OUT_DIR: OUT_DIR must be on a file system that allows running programs")
            .with_source(e)
    })?;
    if !ran.status.success() {
        return Ok(Err(format!("{} failed: {}", executable.display(), ran.status)));
    }
    Ok(Ok(String::from_utf8_lossy(&ran.stdout).into_owned()))
}
