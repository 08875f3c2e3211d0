//! Models as crates (the book's "Models as crates", crates.md): two crates that each build
//! an archive's `default` module, neither renamed, link into one program on
//! the host and as Cortex-M firmware under QEMU, and each runs its own model;
//! a model crate packages with its archive and builds as a dependency.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The cases the two model crates build: one AOT, one graph.
const KWS: &str = "kws_int8-aot_c";
const MLP: &str = "mlp_f32-graph";
/// The Cargo target directory the fixture copies share (mlf-build and its
/// dependencies compiled once), apart from the outer `cargo test`'s.
fn target_dir(kind: &str) -> PathBuf {
    common::repo_root().join("target/crates").join(kind)
}

/// The firmware target and the tools it needs.
const FIRMWARE: &str = "thumbv7em-none-eabihf";

fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(output.status.success(), "{command:?} failed:\n{}", common::failure_text(&output));
    output
}

/// A copy of tests/fixtures/model-crates in `work`, each model crate with
/// its case's archive as `model.tar` and mlf-build's path made absolute.
fn fixture(work: &Path, kws: &Path, mlp: &Path, edit_build_rs: impl Fn(&str) -> String) -> PathBuf {
    let copy = work.join("model-crates");
    run(Command::new("cp").arg("-r").arg(common::repo_root().join("tests/fixtures/model-crates")).arg(&copy));
    let repo = common::repo_root().display().to_string();
    for (crate_dir, case) in [("model-kws", kws), ("model-mlp", mlp)] {
        let dir = copy.join(crate_dir);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), manifest.replace("path = \"../../../..\"", &format!("path = {repo:?}"))).unwrap();
        let build_rs = std::fs::read_to_string(dir.join("build.rs")).unwrap();
        std::fs::write(dir.join("build.rs"), edit_build_rs(&build_rs)).unwrap();
        std::fs::copy(case.join("model.tar"), dir.join("model.tar")).unwrap();
    }
    // The versions this repository tests with.
    std::fs::copy(common::repo_root().join("Cargo.lock"), copy.join("Cargo.lock")).unwrap();
    copy
}

fn cases() -> Option<(PathBuf, PathBuf)> {
    Some((common::corpus_case(KWS)?, common::corpus_case(MLP)?))
}

/// `cargo <args>` in the fixture copy, with the embedded inputs named.
fn cargo(fixture: &Path, target: &Path, kws: &Path, mlp: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(fixture)
        .args(args)
        .env("CARGO_TARGET_DIR", target)
        .env("MLF_TEST_KWS_INPUT", kws.join("inputs/input_1.bin"))
        .env("MLF_TEST_MLP_INPUT", mlp.join("inputs/input.bin"));
    command
}

/// Each model's printed output is its case's expected one.
fn check_outputs(stdout: &str, kws: &Path, mlp: &Path) {
    let line = |name: &str| {
        let hex = stdout
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no `{name}:` line:\n{stdout}"));
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or_else(|_| panic!("{name}: {hex}")))
            .collect::<Vec<u8>>()
    };
    assert_eq!(line("kws"), std::fs::read(kws.join("expected/output0.bin")).unwrap(), "kws's output");
    let expected = common::Expected { file: mlp.join("expected/output0.bin"), dtype: "float32".to_string() };
    common::compare(&expected, &line("mlp"), 1e-4, 1e-5).unwrap_or_else(|e| panic!("mlp's output: {e}"));
}

/// The global symbols `elf` defines (an upper-case `nm` type), by `nm`.
fn symbols(nm: &str, elf: &Path) -> Vec<String> {
    let output = run(Command::new(nm).arg("--defined-only").arg(elf));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            [_, kind, name] if kind.chars().all(|c| c.is_ascii_uppercase()) => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

/// Each crate's glue, support runtime and model under its own tag, none under its C name.
fn check_private(symbols: &[String]) {
    for tag in ["model_kws_0_1_0_", "model_mlp_0_2_0_"] {
        for name in ["mlf_default_invoke", "mlf_support_call"] {
            assert!(symbols.iter().any(|symbol| *symbol == format!("{tag}{name}")), "no `{tag}{name}` in {symbols:?}");
        }
        let operators = format!("{tag}tvmgen_default_");
        assert!(symbols.iter().any(|symbol| symbol.starts_with(&operators)), "no `{operators}*` in {symbols:?}");
    }
    let public: Vec<&String> =
        symbols.iter().filter(|s| s.starts_with("mlf_") || s.starts_with("tvmgen_") || s.starts_with("TVM")).collect();
    assert!(public.is_empty(), "symbols under their C names: {public:?}");
}

#[test]
fn two_model_crates_with_default_modules_run_on_the_host() {
    let Some((kws, mlp)) = cases() else { return };
    let work = common::scratch("crates-host");
    let fixture = fixture(&work, &kws, &mlp, str::to_string);
    let target = target_dir("host");
    let ran = run(&mut cargo(&fixture, &target, &kws, &mlp, &["run", "--release", "--quiet"]));
    check_outputs(&String::from_utf8_lossy(&ran.stdout), &kws, &mlp);
    check_private(&symbols("nm", &target.join("release/two-model-crates")));

    // Shared, the support runtime is linked once, under its C names, and both models still run.
    let shared = work.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let fixture = self::fixture(&shared, &kws, &mlp, |text| text.replace(".build()", ".share_support_runtime(true).build()"));
    let ran = run(&mut cargo(&fixture, &target, &kws, &mlp, &["run", "--release", "--quiet"]));
    check_outputs(&String::from_utf8_lossy(&ran.stdout), &kws, &mlp);
    let linked = symbols("nm", &target.join("release/two-model-crates"));
    assert_eq!(linked.iter().filter(|symbol| symbol.ends_with("mlf_support_call")).collect::<Vec<_>>(), ["mlf_support_call"]);
    assert!(
        linked.iter().any(|s| s == "model_kws_0_1_0_mlf_default_invoke")
            && linked.iter().any(|s| s == "model_mlp_0_2_0_mlf_default_invoke")
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// Why the firmware test cannot run here, if it cannot.
fn firmware_missing() -> Option<String> {
    let installed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    if !installed.is_ok_and(|output| String::from_utf8_lossy(&output.stdout).lines().any(|line| line == FIRMWARE)) {
        return Some(format!("the Rust target {FIRMWARE} is not installed"));
    }
    ["arm-none-eabi-gcc", "arm-none-eabi-nm", "arm-none-eabi-size", "qemu-system-arm"]
        .into_iter()
        .find(|tool| Command::new(tool).arg("--version").output().is_err())
        .map(|tool| format!("{tool} is not installed"))
}

/// The firmware's flash: `.text`, `.rodata` and `.data`'s image, by `size -A`.
fn flash_bytes(elf: &Path) -> u64 {
    let output = run(Command::new("arm-none-eabi-size").arg("-A").arg(elf));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            [".vector_table" | ".text" | ".rodata" | ".data", size, _] => size.parse::<u64>().ok(),
            _ => None,
        })
        .sum()
}

#[test]
fn two_model_crates_with_default_modules_run_as_firmware() {
    let Some((kws, mlp)) = cases() else { return };
    if let Some(why) = firmware_missing() {
        common::skip(&format!("two model crates as firmware: {why}"));
        return;
    }
    let work = common::scratch("crates-firmware");
    let target = target_dir("firmware");
    // The copy lies under this repository (target/tmp), so .cargo/config.toml's
    // runner (.cargo/qemu-runner) and cortex-m-rt's link.x apply to it.
    let firmware = |fixture: &Path| {
        let mut command = cargo(fixture, &target, &kws, &mlp, &["run", "--release", "--quiet", "--target", FIRMWARE]);
        let ran = run(&mut command);
        check_outputs(&String::from_utf8_lossy(&ran.stdout), &kws, &mlp);
        target.join(FIRMWARE).join("release/two-model-crates")
    };
    let private = firmware(&fixture(&work, &kws, &mlp, str::to_string));
    check_private(&symbols("arm-none-eabi-nm", &private));
    let private_flash = flash_bytes(&private);

    let shared_dir = work.join("shared");
    std::fs::create_dir_all(&shared_dir).unwrap();
    let shared = firmware(&fixture(&shared_dir, &kws, &mlp, |text| text.replace(".build()", ".share_support_runtime(true).build()")));
    let saved = private_flash as i64 - flash_bytes(&shared) as i64;
    // The book's figure for what sharing the support runtime saves.
    let lines = common::doc_section("crates.md", "## Models as crates");
    let mut figures = common::DocFigures::default();
    figures.after(&lines, "sharing it saves", saved, "cargo test --release --locked --test crates -- firmware");
    figures.check();
    let _ = std::fs::remove_dir_all(&work);
}

/// `cargo package` of a model crate ships its archive, and the `.crate`
/// builds as a registry crate would: a dependency of a new program, which runs it.
#[test]
fn a_model_crate_packages_with_its_archive_and_builds_as_a_dependency() {
    let Some((kws, mlp)) = cases() else { return };
    let work = common::scratch("crates-package");
    let fixture = fixture(&work, &kws, &mlp, str::to_string);
    let target = target_dir("package");
    let listed = run(Command::new(env!("CARGO"))
        .current_dir(&fixture)
        .args(["package", "--no-verify", "--allow-dirty", "--list", "-p", "model-kws"])
        .env("CARGO_TARGET_DIR", &target));
    let list = String::from_utf8_lossy(&listed.stdout);
    for file in ["Cargo.toml", "build.rs", "model.tar", "src/lib.rs"] {
        assert!(list.lines().any(|line| line == file), "the package lacks {file}:\n{list}");
    }
    // No lockfile: resolving one would look for this checkout's mlf-build on crates.io.
    run(Command::new(env!("CARGO"))
        .current_dir(&fixture)
        .args(["package", "--no-verify", "--allow-dirty", "--exclude-lockfile", "-p", "model-kws"])
        .env("CARGO_TARGET_DIR", &target));
    let crate_file = target.join("package/model-kws-0.1.0.crate");
    let size = std::fs::metadata(&crate_file).unwrap().len();
    assert!(size < 10 * 1024 * 1024, "{} is {size} bytes, over crates.io's 10 MB", crate_file.display());
    run(Command::new("tar").arg("-xzf").arg(&crate_file).arg("-C").arg(&work));

    // A new program using the unpacked crate as crates.io would give it, mlf-build patched to this checkout.
    let app = work.join("app");
    std::fs::create_dir_all(app.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"app\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\nmodel-kws = {{ path = {:?} }}\n\n[patch.crates-io]\nmlf-build = {{ path = {:?} }}\n",
        work.join("model-kws-0.1.0").display().to_string(),
        common::repo_root().display().to_string()
    );
    std::fs::write(app.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(common::repo_root().join("Cargo.lock"), app.join("Cargo.lock")).unwrap();
    let main = "fn main() {\n    #[repr(C, align(16))]\n    struct Aligned<const N: usize>([u8; N]);\n    use model_kws::model;\n    let mut input = Aligned([0u8; model::INPUT_BYTES]);\n    input.0.copy_from_slice(include_bytes!(env!(\"MLF_TEST_KWS_INPUT\")));\n    let mut output = Aligned([0u8; model::OUTPUT_BYTES]);\n    model::run_raw(&[&input.0], &mut [&mut output.0]).unwrap();\n    let hex: String = output.0.iter().map(|b| format!(\"{b:02x}\")).collect();\n    println!(\"kws: {hex}\");\n}\n";
    std::fs::write(app.join("src/main.rs"), main).unwrap();
    let ran = run(Command::new(env!("CARGO"))
        .current_dir(&app)
        .args(["run", "--release", "--quiet"])
        .env("CARGO_TARGET_DIR", &target)
        .env("MLF_TEST_KWS_INPUT", kws.join("inputs/input_1.bin")));
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let hex = stdout.lines().find_map(|line| line.strip_prefix("kws: ")).unwrap_or_else(|| panic!("{stdout}"));
    let expected: String = std::fs::read(kws.join("expected/output0.bin")).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, expected);
    let _ = std::fs::remove_dir_all(&work);
}
