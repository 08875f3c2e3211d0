//! Measures what building an archive costs, for the book's tables (docs/src/performance.md):
//!
//! - the cold build script of a consumer crate (fresh `OUT_DIR`): its own
//!   wall time and peak RSS (`VmHWM`), and the whole `cargo build`;
//! - a plain-gcc build of the same sources: one `gcc -c` over
//!   `codegen/host/src/*.c` and a minimal `main`, the recipe of TVM's AOT test
//!   harness, with the include paths mlf-build gives the compiler; with
//!   `--cmsis-nn DIR` (passed to the build as `CMSIS_NN_PATH`) also the
//!   CMSIS-NN sources mlf-build compiled, and `-I DIR/Include`;
//! - the rerun after a same-bytes `touch` of the archive;
//! - for firmware targets, the flash and static RAM of `examples/cortex-m-runner`.
//!
//! `cargo run --release -p buildbench -- ARCHIVE [--target TRIPLE] [--runs N] [--opt-level L] [--cmsis-nn DIR]`
//!
//! With `--first-build` it measures instead a new user's first `cargo build`
//! (dev profile, empty target folder, dependencies included) of README's "Use
//! it" crate against a crate whose build script uses only `cc` and `bindgen`
//! on the same archive, unpacked (see `first_build`).
//!
//! Each measure runs N times (default 5), interleaved; min and median are printed.
//! The consumer crate and the archive's copy live under `target/buildbench/`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

struct Args {
    archive: PathBuf,
    target: Option<String>,
    runs: usize,
    /// The profile's `opt-level`, which sets the C compiler's `-O` (default: release's 3).
    opt_level: Option<String>,
    /// A CMSIS-NN checkout for archives that call it.
    cmsis_nn: Option<PathBuf>,
    /// Measure a new user's first `cargo build` instead (see `first_build`).
    first_build: bool,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: buildbench ARCHIVE [--target TRIPLE] [--runs N] [--opt-level 0|1|2|3|s|z] [--cmsis-nn DIR] [--first-build]";
    let (mut archive, mut target, mut runs, mut opt_level, mut cmsis_nn, mut first_build) = (None, None, 5, None, None, false);
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--target" => target = Some(iter.next().ok_or("--target needs a triple")?),
            "--runs" => runs = iter.next().and_then(|n| n.parse().ok()).filter(|&n| n > 0).ok_or("--runs needs a positive number")?,
            "--opt-level" => opt_level = Some(iter.next().ok_or("--opt-level needs a level")?),
            "--cmsis-nn" => {
                let dir = iter.next().ok_or("--cmsis-nn needs a directory")?;
                cmsis_nn = Some(std::fs::canonicalize(&dir).map_err(|e| format!("{dir}: {e}"))?);
            }
            "--first-build" => first_build = true,
            "-h" | "--help" => return Err(usage.to_string()),
            path => archive = Some(std::path::absolute(path).map_err(|e| format!("{path}: {e}"))?),
        }
    }
    Ok(Args { archive: archive.ok_or(usage)?, target, runs, opt_level, cmsis_nn, first_build })
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("buildbench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(command: &mut Command) -> Result<(), String> {
    let output = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed:\n{}", String::from_utf8_lossy(&output.stderr)))
    }
}

fn timed(command: &mut Command) -> Result<f64, String> {
    let start = Instant::now();
    run(command)?;
    Ok(start.elapsed().as_secs_f64())
}

/// A consumer crate whose build script builds the archive and reports its own
/// time, peak RSS and `OUT_DIR` to `report`.
const BUILD_RS: &str = r##"use std::fmt::Write;
fn main() {
    let start = std::time::Instant::now();
    println!("cargo:rerun-if-env-changed=BUILDBENCH_ARCHIVE");
    let archive = std::env::var("BUILDBENCH_ARCHIVE").expect("set by buildbench");
    let output = mlf_build::Builder::new(&archive).build().unwrap_or_else(|error| panic!("{error}"));
    let mut modules = String::new();
    for (index, module) in output.modules.iter().enumerate() {
        writeln!(modules, "#[allow(dead_code)]\npub mod m{index} {{ include!({:?}); }}", module.rust_file).unwrap();
    }
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out_dir.join("modules.rs"), modules).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak_kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()).unwrap_or(0);
    std::fs::write(std::env::var("BUILDBENCH_REPORT").unwrap(), format!("{seconds} {peak_kb} {}", out_dir.display())).unwrap();
}
"##;

fn write_consumer(dir: &Path, root: &Path) -> Result<(), String> {
    let root = std::path::absolute(root).map_err(|e| e.to_string())?;
    let manifest = format!(
        "[package]\nname = \"buildbench-consumer\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[build-dependencies]\nmlf-build = {{ path = {:?} }}\n",
        root.display().to_string()
    );
    let files = [
        ("Cargo.toml", manifest.as_str()),
        ("build.rs", BUILD_RS),
        ("src/lib.rs", "#![no_std]\ninclude!(concat!(env!(\"OUT_DIR\"), \"/modules.rs\"));\n"),
    ];
    std::fs::create_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
    for (name, text) in files {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    // The repository's lock keeps the build offline and on the same versions.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).map_err(|e| format!("Cargo.lock: {e}"))?;
    Ok(())
}

struct Samples(Vec<f64>);

impl Samples {
    fn min_median(&self) -> (f64, f64) {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        (sorted.first().copied().unwrap_or(0.0), sorted.get(sorted.len() / 2).copied().unwrap_or(0.0))
    }
}

/// The C compiler and flags of a plain build for the target (host: `gcc`).
fn plain_compiler(target: Option<&str>) -> (String, Vec<&'static str>) {
    match target {
        Some(t) if t.starts_with("thumbv6m") => ("arm-none-eabi-gcc".into(), vec!["-mcpu=cortex-m0", "-mthumb"]),
        Some(t) if t.starts_with("thumbv7m") => ("arm-none-eabi-gcc".into(), vec!["-mcpu=cortex-m3", "-mthumb"]),
        Some(t) if t.starts_with("thumbv7em") && t.ends_with("hf") => {
            ("arm-none-eabi-gcc".into(), vec!["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"])
        }
        Some(t) if t.starts_with("thumbv7em") => ("arm-none-eabi-gcc".into(), vec!["-mcpu=cortex-m4", "-mthumb"]),
        Some(t) if t.starts_with("thumbv8m") => ("arm-none-eabi-gcc".into(), vec!["-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard"]),
        Some(t) if t.starts_with("riscv32") => ("riscv64-unknown-elf-gcc".into(), vec!["-march=rv32imac", "-mabi=ilp32"]),
        _ => ("gcc".into(), vec![]),
    }
}

/// The CMSIS-NN sources the build compiled (absolute): mlf-build compiles each
/// through a wrapper at the source's own path under `gen/kernels/` of the
/// module's work folder, so the selection is read back, not made again.
fn compiled_kernels(out_dir: &Path, cmsis_nn: &Path) -> Result<Vec<PathBuf>, String> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(&path, found)?;
            } else if path.extension().is_some_and(|x| x == "c") {
                found.push(path);
            }
        }
        Ok(())
    }
    let modules = out_dir.join("mlf/build");
    let mut sources = Vec::new();
    for module in std::fs::read_dir(&modules).map_err(|e| format!("{}: {e}", modules.display()))? {
        let kernels = module.map_err(|e| e.to_string())?.path().join("gen/kernels");
        let mut wrappers = Vec::new();
        if kernels.is_dir() {
            walk(&kernels, &mut wrappers).map_err(|e| format!("{}: {e}", kernels.display()))?;
        }
        sources.extend(wrappers.iter().filter_map(|w| w.strip_prefix(&kernels).ok()).map(|rel| cmsis_nn.join(rel)));
    }
    sources.sort();
    sources.dedup();
    if sources.is_empty() {
        return Err(format!("--cmsis-nn: the build compiled no CMSIS-NN source (nothing under {}/*/gen/kernels)", modules.display()));
    }
    Ok(sources)
}

/// One `gcc -c` over the archive's C sources, `extra` sources and a minimal `main`.
fn plain_gcc(
    unpacked: &Path,
    root: &Path,
    target: Option<&str>,
    opt: &str,
    extra: &[PathBuf],
    cmsis_nn: Option<&Path>,
) -> Result<Command, String> {
    let src = unpacked.join("codegen/host/src");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    let main = unpacked.join("buildbench_main.c");
    std::fs::write(&main, "int main(void) { return 0; }\n").map_err(|e| e.to_string())?;
    sources.push(main);
    sources.extend(extra.iter().cloned());
    let objects = unpacked.join("objects");
    std::fs::create_dir_all(&objects).map_err(|e| e.to_string())?;
    let (compiler, flags) = plain_compiler(target);
    let mut command = Command::new(compiler);
    command.current_dir(&objects).arg(format!("-O{opt}")).args(flags).args(["-w", "-c"]);
    for include in [
        unpacked.join("codegen/host/include"),
        unpacked.join("runtime/include"),
        root.join("build-support/include"),
        root.join("build-support/runtime-include"),
    ] {
        command.arg("-I").arg(include);
    }
    if let Some(dir) = cmsis_nn {
        // CMSIS-NN v4.1.0's headers use `uint32_t` before including <stdint.h> off Arm.
        command.arg("-I").arg(dir.join("Include")).args(["-include", "stdint.h"]);
    }
    command.args(sources);
    Ok(command)
}

/// Flash and static RAM of `examples/cortex-m-runner` built from the archive.
fn firmware(root: &Path, archive: &Path, target: &str, opt_level: Option<&str>, cmsis_nn: Option<&Path>) -> Result<(u64, u64), String> {
    let mut command = cargo();
    command
        .current_dir(root)
        .args(["build", "--release", "--quiet", "-p", "cortex-m-runner", "--target", target])
        .env("CARGO_TARGET_DIR", root.join("target/buildbench/firmware"))
        .env("MLF_INPUTS", "")
        .env("MLF_ARCHIVE", archive);
    if let Some(level) = opt_level {
        command.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", level);
    }
    if let Some(dir) = cmsis_nn {
        command.env("CMSIS_NN_PATH", dir);
    }
    run(&mut command)?;
    let elf = root.join("target/buildbench/firmware").join(target).join("release/cortex-m-runner");
    let output = Command::new("arm-none-eabi-size").arg("-A").arg(&elf).output().map_err(|e| format!("arm-none-eabi-size: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let section = |name: &str| {
        text.lines()
            .filter_map(|line| line.split_whitespace().collect::<Vec<_>>().get(..2).map(|f| (f[0].to_string(), f[1].to_string())))
            .find(|(n, _)| n == name)
            .and_then(|(_, size)| size.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let flash = section(".vector_table") + section(".text") + section(".rodata") + section(".data");
    let ram = section(".data") + section(".bss") + section(".uninit");
    Ok((flash, ram))
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()))
}

fn bench() -> Result<(), String> {
    let args = parse_args()?;
    let root = std::path::absolute(repo_root()).map_err(|e| e.to_string())?;
    let work = root.join("target/buildbench");
    let consumer = work.join("consumer");
    write_consumer(&consumer, &root)?;

    // A private copy, so touching it disturbs no one else's builds.
    let name = args.archive.file_name().ok_or("the archive has no file name")?;
    let copy_dir = work.join("archive");
    let _ = std::fs::remove_dir_all(&copy_dir);
    std::fs::create_dir_all(&copy_dir).map_err(|e| e.to_string())?;
    run(Command::new("cp").arg("-r").arg(&args.archive).arg(&copy_dir))?;
    let archive = copy_dir.join(name);
    let unpacked = work.join("unpacked");
    let _ = std::fs::remove_dir_all(&unpacked);
    std::fs::create_dir_all(&unpacked).map_err(|e| e.to_string())?;
    if archive.is_dir() {
        run(Command::new("cp").arg("-rT").arg(&archive).arg(&unpacked))?;
    } else {
        run(Command::new("tar").arg("-xf").arg(&archive).arg("-C").arg(&unpacked))?;
    }

    if args.first_build {
        return first_build(&args, &root, &work.join("first"), &archive, &unpacked);
    }

    let report = work.join("report.txt");
    let build = || {
        let mut command = cargo();
        command
            .current_dir(&consumer)
            .args(["build", "--release", "--offline", "--quiet"])
            .env("CARGO_TARGET_DIR", work.join("target"))
            .env("BUILDBENCH_ARCHIVE", &archive)
            .env("BUILDBENCH_REPORT", &report);
        if let Some(target) = &args.target {
            command.args(["--target", target]);
        }
        if let Some(level) = &args.opt_level {
            command.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", level);
        }
        if let Some(dir) = &args.cmsis_nn {
            command.env("CMSIS_NN_PATH", dir);
        }
        command
    };
    let read_report = || -> Result<(f64, f64, PathBuf), String> {
        let text = std::fs::read_to_string(&report).map_err(|e| format!("{}: {e}", report.display()))?;
        let mut fields = text.splitn(3, ' ');
        let mut number = || fields.next().and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
        let (seconds, peak_kb) = (number(), number());
        Ok((seconds, peak_kb / 1024.0, PathBuf::from(fields.next().unwrap_or_default())))
    };
    // Dependencies once; each cold run then rebuilds only the consumer.
    run(&mut build())?;
    let kernels = match &args.cmsis_nn {
        Some(dir) => compiled_kernels(&read_report()?.2, dir)?,
        None => Vec::new(),
    };
    let gcc_opt = match args.opt_level.as_deref() {
        None => "3",
        Some(level) => level,
    };

    let (mut script, mut rss, mut cold, mut touch_script, mut touch, mut gcc) =
        (Samples(vec![]), Samples(vec![]), Samples(vec![]), Samples(vec![]), Samples(vec![]), Samples(vec![]));
    for _ in 0..args.runs {
        let mut clean = cargo();
        clean
            .current_dir(&consumer)
            .args(["clean", "--release", "--offline", "-p", "buildbench-consumer"])
            .env("CARGO_TARGET_DIR", work.join("target"));
        if let Some(target) = &args.target {
            clean.args(["--target", target]);
        }
        run(&mut clean)?;
        cold.0.push(timed(&mut build())?);
        let (seconds, peak_mb, _) = read_report()?;
        script.0.push(seconds);
        rss.0.push(peak_mb);

        run(Command::new("touch").arg(&archive))?;
        touch.0.push(timed(&mut build())?);
        touch_script.0.push(read_report()?.0);

        gcc.0.push(timed(&mut plain_gcc(&unpacked, &root, args.target.as_deref(), gcc_opt, &kernels, args.cmsis_nn.as_deref())?)?);
    }

    println!(
        "buildbench: {}, target {}, {} runs, release profile{}{}",
        args.archive.display(),
        args.target.as_deref().unwrap_or("host"),
        args.runs,
        args.opt_level.as_deref().map(|l| format!(", opt-level {l}")).unwrap_or_default(),
        args.cmsis_nn.as_ref().map(|d| format!(", {} CMSIS-NN sources from {}", kernels.len(), d.display())).unwrap_or_default()
    );
    println!("{:<46} {:>10} {:>10}", "measure", "min", "median");
    let gcc_row = format!("plain `gcc -O{gcc_opt} -c` of the same sources (s)");
    let rows = [
        ("cold build script (s)", &script, 3),
        ("cold `cargo build` of the consumer (s)", &cold, 3),
        ("build script peak RSS (MB)", &rss, 1),
        (gcc_row.as_str(), &gcc, 3),
        ("same-bytes touch: build script (s)", &touch_script, 3),
        ("same-bytes touch: `cargo build` (s)", &touch, 3),
    ];
    for (name, samples, digits) in rows {
        let (min, median) = samples.min_median();
        println!("{name:<46} {min:>10.digits$} {median:>10.digits$}");
    }
    if let Some(target) = args.target.as_deref().filter(|t| t.starts_with("thumb")) {
        let (flash, ram) = firmware(&root, &args.archive, target, args.opt_level.as_deref(), args.cmsis_nn.as_deref())?;
        println!("cortex-m-runner firmware: flash {flash} B, static RAM {ram} B (.data + .bss)");
    }
    Ok(())
}

/// The Rust snippets of README's "Use it" section, by their first line
/// (`// build.rs`, `// src/main.rs`): the crate a new user builds first.
fn use_it_files(root: &Path) -> Result<Vec<(String, String)>, String> {
    let readme = std::fs::read_to_string(root.join("README.md")).map_err(|e| format!("README.md: {e}"))?;
    let section = readme.split("\n## Use it\n").nth(1).ok_or("README.md has no `## Use it` section")?;
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut files = Vec::new();
    for block in section.split("```rust").skip(1) {
        let body = block.split_once('\n').map_or("", |(_, body)| body);
        let body = body.split("\n```").next().unwrap_or_default();
        if let Some(name) = body.lines().next().and_then(|first| first.strip_prefix("// ")) {
            files.push((name.to_string(), format!("{body}\n")));
        }
    }
    match files.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>()[..] {
        ["build.rs", "src/main.rs"] => Ok(files),
        ref found => Err(format!("README.md's Use it snippets are {found:?}, not build.rs and src/main.rs")),
    }
}

/// The build script of the comparison crate: what a user writes with only
/// `cc` and `bindgen`, on the archive unpacked beside it as `model/`.
const CC_BINDGEN_BUILD_RS: &str = r##"fn main() {
    let model = std::path::Path::new("model");
    println!("cargo:rerun-if-changed=model");
    let sources = std::fs::read_dir(model.join("codegen/host/src")).unwrap().map(|entry| entry.unwrap().path());
    cc::Build::new()
        .files(sources.filter(|path| path.extension().is_some_and(|x| x == "c")))
        .include(model.join("codegen/host/include"))
        .include(model.join("runtime/include"))
        .warnings(false)
        .compile("model");
    let header = std::fs::read_dir(model.join("codegen/host/include")).unwrap().map(|entry| entry.unwrap().path());
    let header = header.filter(|path| path.file_name().unwrap().to_string_lossy().starts_with("tvmgen_")).next().unwrap();
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    bindgen::Builder::default().header(header.to_string_lossy()).use_core().generate().unwrap().write_to_file(out_dir.join("bindings.rs")).unwrap();
}
"##;

/// Its `main`: the bindings included and the entry function linked.
const CC_BINDGEN_MAIN_RS: &str = r##"#[allow(dead_code, non_camel_case_types, non_snake_case, non_upper_case_globals)]
mod model {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}

fn main() {
    println!("entry at {:p}", model::tvmgen_default_run as *const ());
}
"##;

/// Children's user + system CPU seconds so far (`/proc/self/stat`).
fn children_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(") ").map_or("", |(_, rest)| rest).split(' ').collect();
    let ticks = |index: usize| fields.get(index).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // cutime and cstime are fields 16 and 17; the rest starts at field 3. Linux counts 100 ticks a second.
    (ticks(13) + ticks(14)) / 100.0
}

/// A new user's first `cargo build` (dev profile, empty target folder,
/// every dependency compiled) of README's "Use it" crate, against the same
/// archive built by a crate whose build script uses only `cc` and `bindgen`
/// (the same versions and features mlf-build uses), interleaved.
fn first_build(args: &Args, root: &Path, work: &Path, archive: &Path, unpacked: &Path) -> Result<(), String> {
    if archive.is_dir() || args.target.is_some() || args.cmsis_nn.is_some() || args.opt_level.is_some() {
        return Err("--first-build takes a .tar archive, for the host, with no other option".into());
    }
    let header = unpacked.join("codegen/host/include/tvmgen_default.h");
    if !header.is_file() {
        return Err(format!(
            "--first-build's cc + bindgen crate needs an AOT archive of module `default` ({} is missing)",
            header.display()
        ));
    }
    let use_it = work.join("use-it");
    let plain = work.join("cc-bindgen");
    let _ = std::fs::remove_dir_all(work);
    let package = |name: &str, dependencies: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[build-dependencies]\n{dependencies}")
    };
    let use_it_manifest = package("use-it", &format!("mlf-build = {{ path = {:?} }}\n", root.display().to_string()));
    let plain_manifest = package(
        "cc-bindgen",
        "cc = { version = \"1.2\", features = [\"parallel\"] }\nbindgen = { version = \"0.72\", default-features = false, features = [\"runtime\", \"prettyplease\"] }\n",
    );
    let mut use_it_files = use_it_files(root)?;
    use_it_files.push(("Cargo.toml".into(), use_it_manifest));
    let plain_files = [
        ("Cargo.toml".to_string(), plain_manifest),
        ("build.rs".into(), CC_BINDGEN_BUILD_RS.into()),
        ("src/main.rs".into(), CC_BINDGEN_MAIN_RS.into()),
    ];
    for (dir, files) in [(&use_it, &use_it_files[..]), (&plain, &plain_files[..])] {
        std::fs::create_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
        for (name, text) in files {
            std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))?;
        }
        // The repository's lock keeps the builds offline and on the same versions.
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).map_err(|e| format!("Cargo.lock: {e}"))?;
    }
    std::fs::copy(archive, use_it.join("model.tar")).map_err(|e| format!("model.tar: {e}"))?;
    run(Command::new("cp").arg("-r").arg(unpacked).arg(plain.join("model")))?;

    let cold_build = |dir: &Path, extra: &[&str]| -> Result<(f64, f64), String> {
        let _ = std::fs::remove_dir_all(dir.join("target"));
        let cpu = children_cpu_seconds();
        let seconds = timed(
            cargo().current_dir(dir).args(["build", "--offline", "--quiet"]).args(extra).env("CARGO_TARGET_DIR", dir.join("target")),
        )?;
        Ok((seconds, children_cpu_seconds() - cpu))
    };
    let (mut mine, mut mine_cpu, mut theirs, mut theirs_cpu) = (Samples(vec![]), Samples(vec![]), Samples(vec![]), Samples(vec![]));
    for _ in 0..args.runs {
        let (seconds, cpu) = cold_build(&use_it, &[])?;
        mine.0.push(seconds);
        mine_cpu.0.push(cpu);
        let (seconds, cpu) = cold_build(&plain, &[])?;
        theirs.0.push(seconds);
        theirs_cpu.0.push(cpu);
    }
    // Once more with Cargo's timings, for the units on the critical path.
    cold_build(&use_it, &["--timings"])?;

    println!("buildbench --first-build: {}, host, {} runs, dev profile, empty target folder", args.archive.display(), args.runs);
    println!("{:<52} {:>8} {:>8} {:>12}", "first `cargo build`", "min", "median", "CPU median");
    let rows = [("README's Use it crate (mlf-build)", &mine, &mine_cpu), ("the same archive with only cc + bindgen", &theirs, &theirs_cpu)];
    for (name, wall, cpu) in rows {
        let ((min, median), (_, cpu)) = (wall.min_median(), cpu.min_median());
        println!("{name:<52} {min:>7.1}s {median:>7.1}s {cpu:>11.1}s");
    }
    let (ratio_min, ratio_median) = (mine.min_median().0 / theirs.min_median().0, mine.min_median().1 / theirs.min_median().1);
    println!("{:<52} {ratio_min:>7.2}× {ratio_median:>7.2}×", "ratio");
    let timings = use_it.join("target/cargo-timings/cargo-timing.html");
    let html = std::fs::read_to_string(&timings).map_err(|e| format!("{}: {e}", timings.display()))?;
    println!("slowest units of the Use it build (cargo --timings):");
    for (name, start, duration) in slowest_units(&html, 8) {
        println!("  {name:<44} starts {start:>5.1}s  takes {duration:>5.1}s");
    }
    Ok(())
}

/// The `n` longest units in a `cargo --timings` report: (name, start, duration).
fn slowest_units(html: &str, n: usize) -> Vec<(String, f64, f64)> {
    let data = html.split("const UNIT_DATA = ").nth(1).and_then(|rest| rest.split("\n];").next()).unwrap_or_default();
    let units: Vec<serde_json::Value> = serde_json::from_str(&format!("{data}\n]")).unwrap_or_default();
    let mut units: Vec<(String, f64, f64)> = units
        .iter()
        .filter_map(|unit| {
            let name = format!("{}{}", unit["name"].as_str()?, unit["target"].as_str().unwrap_or_default());
            Some((name, unit["start"].as_f64()?, unit["duration"].as_f64()?))
        })
        .collect();
    units.sort_by(|a, b| b.2.total_cmp(&a.2));
    units.truncate(n);
    units
}
