//! `examples/embassy-steps` under QEMU, on the Cortex-M4F and on RISC-V: the
//! model runs with `run_async` in one embassy task while another counts its
//! own polls. The outputs must be the corpus case's `expected/` (within the
//! case's tolerance for floats), and
//! the counter must have run in every executor pass of the run but the first
//! (`polls >= OPERATOR_CALLS - 1`), which shows the run handed the executor
//! back between its steps. Prints `async: <case> [<triple>] PASS (...)`:
//! an AOT USMP, a graph and a CMSIS-NN case on the Cortex-M4F, one case on RISC-V.

mod common;

use std::io::Write as _;
use std::process::Command;

/// The corpus cases the test builds into the example on the Cortex-M4F: AOT with USMP, graph, CMSIS-NN.
const ARM_CASES: &[&str] = &["kws_int8-aot_c_usmp", "cnn_f32-graph", "kws_int8-aot_c-cortex_m4"];
/// And on RISC-V.
const RISCV_CASES: &[&str] = &["kws_int8-aot_c_usmp"];
/// Shared with tests/corpus_qemu.rs: the host mlf-build and the target crates are built once for both.
const TARGET_DIR: &str = "corpus-qemu";

#[test]
fn embassy_steps_on_the_cortex_m4f() {
    run_on("thumbv7em-none-eabihf", "qemu-system-arm", ARM_CASES);
}

#[test]
fn embassy_steps_on_risc_v() {
    run_on("riscv32imac-unknown-none-elf", "qemu-system-riscv32", RISCV_CASES);
}

/// The book's "On embassy" quotes every file of the example and states the rule the test checks.
#[test]
fn the_book_quotes_the_example() {
    let section: String = common::doc_section("stepping.md", "## On embassy").into_iter().map(|(_, line)| line + "\n").collect();
    for file in ["Cargo.toml", "build.rs", "src/main.rs"] {
        let include = format!("{{{{#include ../../examples/embassy-steps/{file}}}}}");
        assert!(section.contains(&include), "stepping.md's \"On embassy\" does not quote examples/embassy-steps/{file} (`{include}`)");
        assert!(common::repo_root().join("examples/embassy-steps").join(file).is_file(), "examples/embassy-steps/{file} is missing");
    }
    assert!(section.contains("`polls >= OPERATOR_CALLS - 1`"), "stepping.md's \"On embassy\" does not state the rule the test checks");
}

fn runs(program: &str, arguments: &[&str]) -> bool {
    Command::new(program).args(arguments).output().is_ok_and(|output| output.status.success())
}

/// Builds and runs the example for `triple` (QEMU `qemu` through `.cargo/qemu-runner`) with each of `cases`.
fn run_on(triple: &str, qemu: &str, cases: &[&str]) {
    if !runs("rustc", &["--print", "target-libdir", "--target", triple]) {
        return common::skip(&format!("the Rust target {triple} is not installed (rustup target add {triple})"));
    }
    if !runs(qemu, &["--version"]) {
        return common::skip(&format!("{qemu} is not installed"));
    }
    for name in cases {
        let Some(case_dir) = common::corpus_case(name) else { return };
        run_case(triple, &common::case_at(&case_dir));
    }
}

/// Builds and runs the example with `case` and checks what it printed.
fn run_case(triple: &str, case: &common::Case) {
    let name = &case.name;
    let libraries = match case.library_env() {
        Ok(libraries) => libraries,
        Err(common::Verdict::Skip(why)) => return common::skip(&format!("embassy-steps with {name}: {why}")),
        Err(other) => panic!("embassy-steps with {name}: {other:?}"),
    };
    let vector = &case.modules[0].vectors[0];
    let output = common::cargo(TARGET_DIR)
        .args(["run", "--release", "--locked", "--quiet", "-p", "embassy-steps", "--target", triple])
        .envs(libraries)
        .env("MLF_ARCHIVE", &case.archive)
        .env("MLF_INPUT", &vector.inputs[0])
        // The runner's board is the target's usual one, the one build.rs writes memory.x for.
        .env_remove("MLF_BOARD")
        .env_remove("MLF_QEMU_ICOUNT")
        .env_remove("MLF_QEMU_PLUGIN")
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "embassy-steps with {name} on {triple} failed ({}):\n{}\n{stdout}",
        output.status,
        common::failure_text(&output)
    );

    let number = |key: &str| -> usize {
        let value = stdout.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix(": "));
        value.and_then(|value| value.parse().ok()).unwrap_or_else(|| panic!("embassy-steps printed no `{key}: <number>` line:\n{stdout}"))
    };
    let operator_calls = number("operator_calls");
    let polls = number("polls");
    assert!(operator_calls >= 1, "a run has at least one step; the firmware printed operator_calls: {operator_calls}");
    assert!(
        polls >= operator_calls - 1,
        "the counter task was polled {polls} times during a run of {operator_calls} steps: run_async did not hand the executor back between steps"
    );

    let outputs: Vec<Vec<u8>> = stdout
        .lines()
        .filter(|line| line.starts_with("output"))
        .enumerate()
        .map(|(index, line)| {
            let hex = line.strip_prefix(&format!("output{index}: ")).unwrap_or_else(|| panic!("unexpected line `{line}`"));
            common::decode_hex(hex).unwrap_or_else(|| panic!("output{index} is not hex: `{line}`"))
        })
        .collect();
    // Byte for byte where the case says so, within its tolerance for floats (case.json).
    if let Err(why) = common::check_vector(case, 0, vector, &outputs) {
        panic!("embassy-steps' outputs with {name} on {triple} are not expected/: {why}");
    }

    // Straight to stdout, past libtest's capture: CI's log shows the line.
    let _ = writeln!(std::io::stdout().lock(), "async: {name} [{triple}] PASS ({operator_calls} steps, {polls} polls of the other task)");
}
