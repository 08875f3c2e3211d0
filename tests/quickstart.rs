//! The firmware quickstart (`docs/src/firmware-quickstart.md`) as a reader
//! follows it: each command of its `sh` blocks is run (or, for the install
//! commands, checked) in order, the firmware they build runs under QEMU, and
//! its output is compared with the corpus case's `expected/` and with the
//! output the chapter quotes. The chapter must quote every file of
//! `examples/firmware-quickstart`, and QEMU's message without `-Tlink.x`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CHAPTER: &str = "docs/src/firmware-quickstart.md";
const EXAMPLE: &str = "examples/firmware-quickstart";
/// The corpus case the example builds (its `build.rs` and `src/main.rs` name it).
const CASE: &str = "kws_int8-aot_c_usmp";
/// Shared with tests/corpus_qemu.rs: the host mlf-build and the Cortex-M4F
/// crates are built once for both.
const TARGET_DIR: &str = "corpus-qemu";
/// The most a build and run may take before `timeout` ends it, QEMU included.
const TIMEOUT_SECONDS: &str = "900";

/// A fenced block of the chapter: its language and its lines.
struct Block {
    language: String,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for line in text.lines() {
        match (line.strip_prefix("```"), open.take()) {
            (Some(_), Some(block)) => found.push(block),
            (Some(language), None) => open = Some(Block { language: language.trim().to_string(), lines: Vec::new() }),
            (None, Some(mut block)) => {
                block.lines.push(line.to_string());
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    found
}

/// The commands of the `sh` blocks: `\` continuations joined, comments and blank lines left out.
fn sh_commands(blocks: &[Block]) -> Vec<String> {
    let mut commands = Vec::new();
    for block in blocks.iter().filter(|block| block.language == "sh") {
        let mut pending = String::new();
        for line in &block.lines {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.strip_suffix('\\') {
                Some(start) => pending.push_str(start),
                None => {
                    pending.push_str(line);
                    commands.push(pending.split_whitespace().collect::<Vec<_>>().join(" "));
                    pending.clear();
                }
            }
        }
    }
    commands
}

/// Whether what `apt-get install <package>` provides is here; `None` for a package the test does not know.
fn installed(package: &str) -> Option<bool> {
    let runs = |program: &str, arguments: &[&str]| Command::new(program).args(arguments).output().is_ok_and(|o| o.status.success());
    match package {
        "gcc-arm-none-eabi" => Some(runs("arm-none-eabi-gcc", &["--version"])),
        "qemu-system-arm" => Some(runs("qemu-system-arm", &["--version"])),
        // gcc answers with the bare name when no multilib directory holds it.
        "libnewlib-arm-none-eabi" => Some(
            Command::new("arm-none-eabi-gcc")
                .arg("-print-file-name=libc.a")
                .output()
                .is_ok_and(|o| Path::new(String::from_utf8_lossy(&o.stdout).trim()).is_file()),
        ),
        _ => None,
    }
}

fn target_installed(triple: &str) -> bool {
    Command::new("rustc")
        .args(["--print", "target-libdir", "--target", triple])
        .output()
        .is_ok_and(|o| o.status.success() && Path::new(String::from_utf8_lossy(&o.stdout).trim()).is_dir())
}

/// `cargo <arguments>` in `dir`, as a reader types it, within [`TIMEOUT_SECONDS`]
/// (`timeout` ends QEMU too: it signals its whole process group).
fn cargo(dir: &Path, arguments: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new("timeout")
        .arg(TIMEOUT_SECONDS)
        .arg(env!("CARGO"))
        .args(arguments)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", common::repo_root().join("target").join(TARGET_DIR))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .envs(env.iter().copied())
        .output()
        .expect("timeout and cargo run")
}

/// The values of the firmware's `output: [..]` line as the tensor's bytes.
fn output_bytes(line: &str, dtype: &str) -> Vec<u8> {
    let list = line.strip_prefix("output: [").and_then(|rest| rest.strip_suffix(']')).unwrap_or_else(|| panic!("unexpected line `{line}`"));
    let values = list.split(',').map(|value| value.trim());
    match dtype {
        "int8" => values.map(|value| value.parse::<i8>().expect("an i8").to_le_bytes()[0]).collect(),
        "uint8" => values.map(|value| value.parse::<u8>().expect("a u8")).collect(),
        "float32" => values.flat_map(|value| value.parse::<f32>().expect("an f32").to_le_bytes()).collect(),
        other => panic!("the test reads no {other} output"),
    }
}

#[test]
fn the_firmware_quickstart_runs_as_the_chapter_says() {
    let root = common::repo_root();
    let chapter = std::fs::read_to_string(root.join(CHAPTER)).expect("the chapter");
    let blocks = blocks(&chapter);

    // The chapter's text is the example: it quotes each of the crate's files.
    for file in ["Cargo.toml", "memory.x", ".cargo/config.toml", "build.rs", "src/main.rs"] {
        let include = format!("{{{{#include ../../{EXAMPLE}/{file}}}}}");
        assert!(chapter.contains(&include), "{CHAPTER} does not quote {EXAMPLE}/{file} (`{include}`)");
        assert!(root.join(EXAMPLE).join(file).is_file(), "{EXAMPLE}/{file} is missing");
    }

    let Some(case_dir) = common::corpus_case(CASE) else { return };
    let case = common::case_at(&case_dir);
    let expected = &case.modules[0].vectors[0].expected[0];

    // Every command shown, in order: the install commands checked, `cd` and `cargo` run.
    let mut dir: PathBuf = root.clone();
    let mut printed = None;
    for command in sh_commands(&blocks) {
        let words: Vec<&str> = command.split(' ').collect();
        match words.as_slice() {
            ["rustup", "target", "add", triples @ ..] => {
                if let Some(missing) = triples.iter().find(|triple| !target_installed(triple)) {
                    return common::skip(&format!("the Rust target {missing} is not installed (`{command}`)"));
                }
            }
            ["sudo", "apt-get", "install", packages @ ..] => {
                for package in packages {
                    match installed(package) {
                        Some(true) => {}
                        Some(false) => return common::skip(&format!("{package} is not installed (`{command}`)")),
                        None => panic!("{CHAPTER} installs `{package}`, which this test cannot check: teach `installed` about it"),
                    }
                }
            }
            ["cd", to] => dir = dir.join(to),
            ["cargo", arguments @ ..] => {
                let output = cargo(&dir, arguments, &[]);
                let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
                assert!(
                    output.status.success(),
                    "`{command}` in {} failed ({}):\n{}\n{stdout}",
                    dir.display(),
                    output.status,
                    common::failure_text(&output)
                );
                printed = Some(stdout);
            }
            _ => panic!("{CHAPTER} shows `{command}`, which this test neither runs nor checks"),
        }
    }
    let printed = printed.unwrap_or_else(|| panic!("{CHAPTER} shows no cargo command that runs the firmware"));
    let line =
        printed.lines().find(|line| line.starts_with("output: ")).unwrap_or_else(|| panic!("the firmware printed no output:\n{printed}"));
    if let Err(why) = common::compare(expected, &output_bytes(line, &expected.dtype), case.rtol, case.atol) {
        panic!("the quickstart's output differs from {CASE}'s expected/: {why}");
    }
    let quoted = blocks.iter().filter(|block| block.language == "text").flat_map(|block| &block.lines).any(|quoted| quoted == line);
    assert!(quoted, "{CHAPTER} does not quote the firmware's output `{line}`");

    // Without cortex-m-rt's linker script: the chapter's quoted QEMU message.
    let lockup = "qemu: fatal: Lockup: can't escalate 3 to HardFault (current priority -1)";
    assert!(chapter.contains(lockup), "{CHAPTER} does not quote QEMU's message without -Tlink.x: `{lockup}`");
    let unlinked = cargo(&dir, &["run", "--release"], &[("RUSTFLAGS", "")]);
    let stderr = String::from_utf8_lossy(&unlinked.stderr);
    assert!(
        !unlinked.status.success() && stderr.lines().any(|line| line == lockup),
        "without -Tlink.x the firmware was expected to stop QEMU with `{lockup}`; it exited {}:\n{stderr}",
        unlinked.status
    );
}
