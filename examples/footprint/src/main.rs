//! Builds `examples/cortex-m-runner` from an archive and prints the
//! firmware's flash and RAM next to what the model itself needs by its
//! metadata, and the difference: what mlf-build's runtime and the runner add.
//!
//! `cargo run --release -p footprint -- [--target TRIPLE] [--cpu CORE] [--module NAME] [--opt-level LEVEL] [--instructions] [ARCHIVE]`
//! (default: the demo archive on thumbv7em-none-eabihf). `--cpu` is passed as
//! `-C target-cpu`, which mlf-build turns into the C compiler's core;
//! `--opt-level` is the release profile's (the C is compiled at it too);
//! `--instructions` runs the firmware under QEMU and counts one inference's instructions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

struct Args {
    target: String,
    cpu: Option<String>,
    module: Option<String>,
    opt_level: Option<String>,
    instructions: bool,
    archive: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args =
        Args { target: "thumbv7em-none-eabihf".to_string(), cpu: None, module: None, opt_level: None, instructions: false, archive: None };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--target" => args.target = iter.next().ok_or("--target needs a triple")?,
            "--cpu" => args.cpu = Some(iter.next().ok_or("--cpu needs a core, e.g. cortex-m7")?),
            "--module" => args.module = Some(iter.next().ok_or("--module needs a name")?),
            "--opt-level" => args.opt_level = Some(iter.next().ok_or("--opt-level needs a level: 0-3, s or z")?),
            "--instructions" => args.instructions = true,
            "-h" | "--help" => {
                return Err(
                    "usage: footprint [--target TRIPLE] [--cpu CORE] [--module NAME] [--opt-level LEVEL] [--instructions] [ARCHIVE]\n\
                     ARCHIVE (default: the demo) is a path relative to the workspace root (where you\n\
                     run cargo), as for every runner. --opt-level sets the release profile's opt-level\n\
                     (CARGO_PROFILE_RELEASE_OPT_LEVEL: the C's -O too); --instructions runs the firmware\n\
                     on the target's QEMU board and counts one inference's instructions."
                        .to_string(),
                )
            }
            // As given: the runner's build script takes it from the workspace root,
            // and keeps the text in the firmware, whose size so does not depend on the checkout's place.
            path => args.archive = Some(PathBuf::from(path)),
        }
    }
    Ok(args)
}

/// What the firmware build produced: the ELF and the runner's build-script output directory.
struct Firmware {
    elf: PathBuf,
    out_dir: PathBuf,
}

fn build_firmware(args: &Args) -> Result<Firmware, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut command = Command::new(cargo);
    if let Some(cpu) = &args.cpu {
        // Added to .cargo/config.toml's rustflags, which RUSTFLAGS would replace.
        command.arg("--config").arg(format!("target.\"{}\".rustflags=[\"-C\", \"target-cpu={cpu}\"]", args.target));
    }
    if let Some(level) = &args.opt_level {
        command.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", level);
    }
    command
        .current_dir(&root)
        .args(["build", "--release", "-p", "cortex-m-runner", "--message-format=json-render-diagnostics", "--target"])
        .arg(&args.target)
        .env("CARGO_TARGET_DIR", target_dir(&root))
        .env("MLF_INPUTS", "")
        // The runner's stepped run is the suite's check, not part of a firmware that runs a model.
        .env("MLF_STEPPED", "0")
        .env("MLF_MODULE", args.module.as_deref().unwrap_or_default())
        .env("MLF_ARCHIVE", args.archive.as_deref().map(Path::as_os_str).unwrap_or_default());
    let output = command.stderr(std::process::Stdio::inherit()).output().map_err(|e| format!("cargo: {e}"))?;
    if !output.status.success() {
        return Err("building cortex-m-runner failed (see above)".to_string());
    }
    let (mut elf, mut out_dir) = (None, None);
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let is_runner = message["package_id"].as_str().is_some_and(|id| id.contains("cortex-m-runner"));
        match message["reason"].as_str() {
            Some("compiler-artifact") if is_runner => elf = message["executable"].as_str().map(PathBuf::from).or(elf),
            Some("build-script-executed") if is_runner => out_dir = message["out_dir"].as_str().map(PathBuf::from),
            _ => {}
        }
    }
    Ok(Firmware { elf: elf.ok_or("cargo named no firmware executable")?, out_dir: out_dir.ok_or("cargo named no build-script output")? })
}

/// The instructions one inference executes under QEMU: from the entry of
/// the glue's `mlf_<module>_invoke` to the instruction after the runner's one
/// call of it, callees included (start-up, input copying and output left out).
/// `.cargo/qemu-runner` starts the target's board with the counting plugin
/// of examples/buildbench/cmsis-nn, compiled next to the firmware.
fn count_instructions(target: &str, elf: &Path, module: &str, symbol_prefix: &str) -> Result<u64, String> {
    let invoke = format!("{symbol_prefix}mlf_{module}_invoke");
    let symbols = tool(target, "nm", &[elf])?;
    let start = symbols
        .lines()
        .find_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            [address, _, name] if name == invoke => u64::from_str_radix(address, 16).ok(),
            _ => None,
        })
        .ok_or_else(|| format!("the firmware has no `{invoke}`"))?;
    // The instruction after the call site is where the count stops.
    let code = tool(target, "objdump", &[Path::new("-d"), elf])?;
    let addresses: Vec<(u64, &str)> = code
        .lines()
        .filter_map(|line| {
            let (address, rest) = line.split_once(":\t")?;
            Some((u64::from_str_radix(address.trim(), 16).ok()?, rest))
        })
        .collect();
    let calls: Vec<usize> = (0..addresses.len()).filter(|&i| addresses[i].1.ends_with(&format!("<{invoke}>"))).collect();
    let [call] = calls[..] else { return Err(format!("the firmware has {} calls of `{invoke}`, not one", calls.len())) };
    let stop = addresses.get(call + 1).map(|&(address, _)| address).ok_or("no instruction after the call")?;

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let source = root.join("examples/buildbench/cmsis-nn/insns-in-call.c");
    let plugin = target_dir(&root).join("footprint-insns-in-call.so");
    let compiled = Command::new("gcc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .args([plugin.as_os_str(), source.as_os_str()])
        .status()
        .map_err(|e| format!("gcc: {e}"))?;
    if !compiled.success() {
        return Err(format!("gcc could not compile {}", source.display()));
    }
    // The Thumb bit is not part of the address QEMU executes.
    let plugin_arg = format!("{},start={},stop={stop}", plugin.display(), start & !1);
    let output = Command::new(root.join(".cargo/qemu-runner"))
        .arg(elf)
        .env("MLF_QEMU_PLUGIN", plugin_arg)
        .output()
        .map_err(|e| format!(".cargo/qemu-runner: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("the firmware failed under QEMU: {}", stderr.trim()));
    }
    let count = stderr.lines().find_map(|line| line.strip_prefix("insns: "));
    count.and_then(|n| n.trim().parse().ok()).ok_or_else(|| format!("the plugin counted nothing: {}", stderr.trim()))
}

/// Where the firmware is built: `CARGO_TARGET_DIR` when set (as for the
/// `cargo run` that started footprint, so a test shares its firmware tests'
/// directory), else `target/footprint`, away from the workspace's own lock.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => std::env::current_dir().map(|cwd| cwd.join(&dir)).unwrap_or_else(|_| PathBuf::from(dir)),
        None => root.join("target/footprint"),
    }
}

/// A tool of the target's GNU toolchain (`arm-none-eabi-*` or
/// `riscv64-unknown-elf-*`) and the Debian package that installs it.
fn tool_name(target: &str, name: &str) -> (String, &'static str) {
    if target.starts_with("riscv") {
        (format!("riscv64-unknown-elf-{name}"), "gcc-riscv64-unknown-elf")
    } else {
        (format!("arm-none-eabi-{name}"), "gcc-arm-none-eabi")
    }
}

/// The first line `program args` prints: the versions the sizes come from.
fn first_line(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program).args(args).output().map_err(|e| format!("{program}: {e}"))?;
    Ok(String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or_default().trim().to_string())
}

/// binutils for the target.
fn tool(target: &str, name: &str, args: &[&Path]) -> Result<String, String> {
    let (name, package) = tool_name(target, name);
    let output = Command::new(&name).args(args).output().map_err(|e| format!("{name}: {e} (install {package})"))?;
    if !output.status.success() {
        return Err(format!("{name} failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Section sizes from `size -A`.
fn sections(target: &str, elf: &Path) -> Result<BTreeMap<String, u64>, String> {
    let text = tool(target, "size", &[Path::new("-A"), elf])?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let name = fields.next()?.to_string();
            let size = fields.next()?.parse().ok()?;
            name.starts_with('.').then_some((name, size))
        })
        .collect())
}

/// Sizes of the code symbols whose names, less the crate's `symbol_prefix`, `select` picks, from `nm -S`.
fn code_bytes(target: &str, elf: &Path, symbol_prefix: &str, select: impl Fn(&str) -> bool) -> Result<u64, String> {
    let text = tool(target, "nm", &[Path::new("-S"), Path::new("--defined-only"), elf])?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [_, size, kind, name] = fields[..] else { return None };
            (matches!(kind, "T" | "t") && select(name.strip_prefix(symbol_prefix).unwrap_or(name)))
                .then(|| u64::from_str_radix(size, 16).ok())
                .flatten()
        })
        .sum())
}

fn main() -> ExitCode {
    match footprint() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("footprint: {error}");
            ExitCode::FAILURE
        }
    }
}

fn footprint() -> Result<(), String> {
    let args = parse_args()?;
    let firmware = build_firmware(&args)?;
    let needs_text = std::fs::read_to_string(firmware.out_dir.join("model-needs.txt")).map_err(|e| format!("model-needs.txt: {e}"))?;
    let needs: BTreeMap<&str, &str> = needs_text.lines().filter_map(|line| line.split_once(' ')).collect();
    let need = |key: &str| needs.get(key).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let module = needs.get("module").copied().unwrap_or("default");
    // The runner crate's tag on every symbol of its model (mlf-build's symbol privacy).
    let symbol_prefix = needs.get("symbol_prefix").copied().unwrap_or_default();

    let sections = sections(&args.target, &firmware.elf)?;
    let section = |name: &str| sections.get(name).copied().unwrap_or(0);
    // .data occupies flash (its initial image) and RAM; riscv-rt's startup is in .init.
    let flash = section(".vector_table") + section(".init") + section(".text") + section(".rodata") + section(".data");
    let ram = section(".data") + section(".bss") + section(".uninit");

    let prefix = format!("tvmgen_{module}_");
    let model_code = code_bytes(&args.target, &firmware.elf, symbol_prefix, |name| name.starts_with(&prefix))?;
    let support_code = code_bytes(&args.target, &firmware.elf, symbol_prefix, |name| {
        name.starts_with("mlf_") || name.starts_with("TVM") || name.contains("setjmp") || name.contains("longjmp")
    })?;
    let model_flash = model_code + need("constants") + need("constant_pools");
    let model_ram = need("workspace") + need("io") + need("pools");

    let archive = args.archive.as_deref().map_or_else(|| "the demo archive".to_string(), |p| p.display().to_string());
    let core = args.cpu.as_deref().map_or_else(String::new, |cpu| format!("/{cpu}"));
    let opt_level = args.opt_level.as_deref().map_or_else(String::new, |level| format!(", opt-level {level}"));
    println!("footprint of {archive}, module `{module}`, in cortex-m-runner for {}{core}{opt_level}", args.target);
    println!("{:<6} {:>10} {:>12} {:>11}", "", "firmware", "model needs", "difference");
    println!("{:<6} {flash:>10} {model_flash:>12} {:>11}", "flash", flash as i64 - model_flash as i64);
    println!("{:<6} {ram:>10} {model_ram:>12} {:>11}", "RAM", ram as i64 - model_ram as i64);
    println!(
        "model needs: flash = code {model_code} (tvmgen_{module}_* functions) + constants {} + constant pools {}; \
         RAM = workspace {} + inputs/outputs {} + pools {}",
        need("constants"),
        need("constant_pools"),
        need("workspace"),
        need("io"),
        need("pools")
    );
    if need("tvm_graph_plan") > 0 {
        println!(
            "graph static RAM: {} planned by mlf-build from liveness (tensors and operator workspaces sharing bytes) \
             vs {} by TVM's plan (one slot per storage id + an arena for the largest operator workspace)",
            need("workspace"),
            need("tvm_graph_plan")
        );
    }
    if args.instructions {
        println!(
            "instructions: {} (one inference under QEMU, from `mlf_{module}_invoke`'s entry to its return)",
            count_instructions(&args.target, &firmware.elf, module, symbol_prefix)?
        );
    }
    println!("toolchain: {}; {}", first_line("rustc", &["-V"])?, first_line(&tool_name(&args.target, "gcc").0, &["--version"])?);
    println!("firmware: flash = vector table + .text + .rodata + .data image; RAM = .data + .bss (no heap; stack not counted)");
    println!(
        "difference: the runner's startup, semihosting output and formatting, its {} bytes of inputs (kept in flash, not RAM), \
         and mlf-build's C support ({support_code} bytes of code) and call tables",
        need("inputs")
    );
    Ok(())
}
