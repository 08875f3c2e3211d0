//! Cross-builds corpus archives into `examples/cortex-m-runner` for Cortex-M
//! triples, runs the firmware under QEMU (the runner in .cargo/config.toml,
//! wrapped in `timeout`) and compares its outputs with the ones TVM computed.

mod common;

use common::{Case, Verdict};

/// Each case and the triples it must pass on.
const MATRIX: &[(&str, &[&str])] = &[
    ("kws_int8-aot_c-cortex_m4", &[V7EM_HF]),
    ("kws_int8-aot_c_usmp", &[V7EM_HF, V6M]),
    ("cnn_f32-aot_c_pools", &[V7EM_HF]),
    ("mlp_f32-aot_c", &[V7EM_HF]),
    ("two_outputs_f32-aot_c", &[V7EM_HF]),
    ("kws_int8-aot_c", &[V7M]),
    ("cnn_f32-aot_c", &[V7M]),
    ("riot-ml-mnist-cm7-tvm011", &[V7EM_HF]),
    ("etiss-kws-rv32-tvm0160", &[V7EM_HF]),
    ("cnn_f32-graph", &[V7EM_HF]),
    ("kws_int8-graph_linked", &[V7EM_HF]),
    ("arduino-microspeech-graph-v5-executorconfig", &[V7EM_HF]),
    ("arduino-yesno-aot-packed-v5", &[V7EM_HF]),
    ("arduino-microspeech-aot-tvm_model_t-v5", &[V7EM_HF]),
    ("multi-kws_mlp-aot_c", &[V7EM_HF]),
];

const V7EM_HF: &str = "thumbv7em-none-eabihf";
const V7M: &str = "thumbv7m-none-eabi";
const V6M: &str = "thumbv6m-none-eabi";

const TARGET_DIR: &str = "corpus-qemu";

#[test]
fn corpus_cases_on_emulated_cortex_m_boards() {
    let Some(root) = common::corpus_root() else { return };
    let cases = common::cases(&root);
    let mut failed = Vec::new();
    for (name, triples) in MATRIX {
        let Some(case) = cases.iter().find(|case| case.name == *name) else {
            failed.push(format!("{name}: not in the corpus"));
            continue;
        };
        for triple in *triples {
            if common::report(name, triple, &qemu_verdict(case, triple)) {
                failed.push(format!("{name} [{triple}]"));
            }
        }
    }
    assert!(failed.is_empty(), "corpus cases failed under QEMU: {failed:?}");
}

fn qemu_verdict(case: &Case, triple: &str) -> Verdict {
    let mut runs = 0;
    for module in &case.modules {
        if module.vectors.is_empty() {
            // No reference data: the firmware must still build and run on zeros.
            if let Err(why) = run_firmware(case, module.module.as_deref(), &[], triple) {
                return Verdict::Fail(why);
            }
            runs += 1;
        }
        for (index, vector) in module.vectors.iter().enumerate() {
            let outputs = match run_firmware(case, module.module.as_deref(), &vector.inputs, triple) {
                Ok(outputs) => outputs,
                Err(why) => return Verdict::Fail(why),
            };
            if let Err(why) = common::check_vector(case, index, vector, &outputs) {
                return Verdict::Fail(why);
            }
            runs += 1;
        }
    }
    let checked = if case.modules.iter().all(|m| m.vectors.is_empty()) { "ran on zeros" } else { "outputs match" };
    if case.name.contains("graph") {
        if let Err(why) = runtime_free(triple) {
            return Verdict::Fail(why);
        }
        return Verdict::Pass(format!("{runs} run(s) under QEMU, {checked}; no heap, JSON or graph runtime linked"));
    }
    Verdict::Pass(format!("{runs} run(s) under QEMU, {checked}"))
}

/// A heap's functions, as newlib names them.
const HEAP_SYMBOLS: &[&str] = &["malloc", "free", "calloc", "realloc", "_malloc_r", "_free_r", "_sbrk", "_sbrk_r"];
/// Parts of names a JSON reader or TVM's graph executor would bring in (lowercase).
const RUNTIME_NAME_PARTS: &[&str] = &["json", "graphexecutor", "pagememorymanager"];

/// The firmware just run holds no heap, JSON reader or graph executor (bare
/// metal has no std that would bring a heap of its own).
fn runtime_free(triple: &str) -> Result<(), String> {
    let elf = common::repo_root().join("target").join(TARGET_DIR).join(triple).join("release/cortex-m-runner");
    let output = std::process::Command::new("arm-none-eabi-nm").arg(&elf).output().map_err(|e| format!("arm-none-eabi-nm: {e}"))?;
    if !output.status.success() {
        return Err(format!("arm-none-eabi-nm {}: {}", elf.display(), String::from_utf8_lossy(&output.stderr).trim()));
    }
    let symbols = String::from_utf8_lossy(&output.stdout);
    let found: Vec<&str> = symbols
        .lines()
        .filter_map(|line| line.split_whitespace().last())
        .filter(|name| HEAP_SYMBOLS.contains(name) || RUNTIME_NAME_PARTS.iter().any(|part| name.to_lowercase().contains(part)))
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!("the firmware links {found:?}"))
    }
}

/// Builds and runs the firmware; returns the bytes of each `output<i>:` line.
fn run_firmware(case: &Case, module: Option<&str>, inputs: &[std::path::PathBuf], triple: &str) -> Result<Vec<Vec<u8>>, String> {
    let list: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let mut command = common::cargo(TARGET_DIR);
    command
        .args(["run", "--release", "--quiet", "-p", "cortex-m-runner", "--target", triple])
        .env("MLF_ARCHIVE", &case.archive)
        .env("MLF_INPUTS", list.join(","))
        .env("MLF_MODULE", module.unwrap_or_default());
    let output = command.output().map_err(|e| format!("cargo: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let why = match output.status.code() {
            Some(124) => "QEMU timed out".to_string(),
            _ => common::failure_text(&output).lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().to_string(),
        };
        return Err(format!("firmware failed: {why} {}", stdout.lines().last().unwrap_or_default()));
    }
    let mut outputs = Vec::new();
    for (index, line) in stdout.lines().filter(|line| line.starts_with("output")).enumerate() {
        let hex = line.strip_prefix(&format!("output{index}: ")).ok_or_else(|| format!("unexpected line `{line}`"))?;
        outputs.push(decode_hex(hex).ok_or_else(|| format!("output{index} is not hex"))?);
    }
    Ok(outputs)
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let digits = hex.trim().as_bytes();
    if digits.len() % 2 != 0 {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}
