//! Cross-builds corpus archives into `examples/cortex-m-runner` for Cortex-M
//! and RISC-V targets, runs the firmware under QEMU (`.cargo/qemu-runner`,
//! wrapped in `timeout`) and compares its outputs with the ones TVM computed;
//! prints the stack each module's run took beside its `STACK_BYTES` bound.

mod common;

use std::io::Write as _;

use common::{Case, Verdict};

/// A firmware build: the Rust target, the core given as `-C target-cpu`
/// (`None`: the triple's usual one), the QEMU board, and whether the
/// conformance line names the core after the triple.
#[derive(Clone, Copy)]
struct Build {
    triple: &'static str,
    target_cpu: Option<&'static str>,
    board: Option<&'static str>,
    core_label: Option<&'static str>,
}

impl Build {
    fn label(&self) -> String {
        match self.core_label {
            Some(core) => format!("{}/{core}", self.triple),
            None => self.triple.to_string(),
        }
    }
}

const fn on(triple: &'static str) -> Build {
    Build { triple, target_cpu: None, board: None, core_label: None }
}

const V7EM_HF: Build = on("thumbv7em-none-eabihf");
const V7M: Build = on("thumbv7m-none-eabi");
const V6M: Build = on("thumbv6m-none-eabi");
const M7: Build =
    Build { triple: "thumbv7em-none-eabihf", target_cpu: Some("cortex-m7"), board: Some("mps2-an500"), core_label: Some("cortex-m7") };
const M33: Build =
    Build { triple: "thumbv8m.main-none-eabihf", target_cpu: None, board: Some("mps2-an505"), core_label: Some("cortex-m33") };
const M55: Build = Build {
    triple: "thumbv8m.main-none-eabihf",
    target_cpu: Some("cortex-m55"),
    board: Some("mps3-an547"),
    core_label: Some("cortex-m55"),
};
const RV32: Build = Build { triple: "riscv32imac-unknown-none-elf", target_cpu: None, board: Some("virt"), core_label: None };

/// Each case and the builds it must pass on. Builds are grouped by core (in
/// the order of [`BUILDS`]) so the target crates are built once per core.
const MATRIX: &[(&str, &[Build])] = &[
    ("kws_int8-aot_c-cortex_m4", &[V7EM_HF, M7, M33, M55]),
    ("kws_int8-aot_c_usmp", &[V7EM_HF, V6M, M55, RV32]),
    ("cnn_f32-aot_c_pools", &[V7EM_HF, M7, M55]),
    ("mlp_f32-aot_c", &[V7EM_HF, RV32]),
    ("two_outputs_f32-aot_c", &[V7EM_HF, M33]),
    ("kws_int8-aot_c", &[V7M]),
    ("cnn_f32-aot_c", &[V7M]),
    ("riot-ml-mnist-cm7-tvm011", &[V7EM_HF, M7]),
    ("etiss-kws-rv32-tvm0160", &[V7EM_HF, RV32]),
    ("cnn_f32-graph", &[V7EM_HF, M7, RV32]),
    ("kws_int8-graph_linked", &[V7EM_HF]),
    ("arduino-microspeech-graph-v5-executorconfig", &[V7EM_HF, M33]),
    ("arduino-yesno-aot-packed-v5", &[V7EM_HF]),
    ("arduino-microspeech-aot-tvm_model_t-v5", &[V7EM_HF]),
    ("multi-kws_mlp-aot_c", &[V7EM_HF, RV32]),
    ("mlp_f32-aot_packed", &[M7]),
    ("linaro-tfm-sine", &[M33]),
    ("arduino-cifar-resnet-v2-20210602", &[M33]),
    ("etiss-vww-muriscvnn-rvv-tvm017", &[V7EM_HF, M7, M33, M55, RV32]),
];

/// The order builds run in: one core after another.
const BUILDS: &[Build] = &[V7EM_HF, V7M, V6M, M7, M33, M55, RV32];

const TARGET_DIR: &str = "corpus-qemu";

#[test]
fn corpus_cases_on_emulated_cortex_m_boards() {
    let Some(root) = common::corpus_dir() else { return };
    let cases = common::cases(&root);
    let mut failed = Vec::new();
    let started = std::time::Instant::now();
    // While working on one case or core: `MLF_QEMU_ONLY='[riscv32'` runs only the lines containing it.
    let only = std::env::var("MLF_QEMU_ONLY").ok().filter(|only| !only.is_empty());
    for build in BUILDS {
        for (name, builds) in MATRIX {
            let selected = only.as_deref().is_none_or(|only| format!("{name} [{}]", build.label()).contains(only));
            if !selected || !builds.iter().any(|b| b.label() == build.label()) {
                continue;
            }
            let Some(case) = cases.iter().find(|case| case.name == *name) else {
                failed.push(format!("{name}: not in the corpus"));
                continue;
            };
            if common::report(name, &build.label(), &qemu_verdict(case, build)) {
                failed.push(format!("{name} [{}]", build.label()));
            }
        }
    }
    let _ = writeln!(
        std::io::stdout().lock(),
        "corpus-qemu: the QEMU cases took {} s (a timing note, not a conformance line)",
        started.elapsed().as_secs()
    );
    assert!(failed.is_empty(), "corpus cases failed under QEMU: {failed:?}");
}

fn qemu_verdict(case: &Case, build: &Build) -> Verdict {
    if let Err(verdict) = case.library_env() {
        return verdict;
    }
    let mut runs = 0;
    for module in &case.modules {
        // The deepest of the module's runs.
        let mut stack: Option<common::Stack> = None;
        let mut keep = |measured: common::Stack| {
            if stack.as_ref().is_none_or(|deepest| measured.measured > deepest.measured) {
                stack = Some(measured);
            }
        };
        if module.vectors.is_empty() {
            // No reference data: the firmware must still build and run on zeros.
            match run_firmware(case, module.module.as_deref(), &[], build) {
                Ok(run) => keep(run.stack),
                Err(why) => return Verdict::Fail(why),
            }
            runs += 1;
        }
        for (index, vector) in module.vectors.iter().enumerate() {
            let run = match run_firmware(case, module.module.as_deref(), &vector.inputs, build) {
                Ok(run) => run,
                Err(why) => return Verdict::Fail(why),
            };
            if let Err(why) = common::check_vector(case, index, vector, &run.outputs) {
                return Verdict::Fail(why);
            }
            keep(run.stack);
            runs += 1;
        }
        if let Some(stack) = stack {
            let name = match &module.module {
                Some(module) => format!("{}/{module}", case.name),
                None => case.name.clone(),
            };
            if let Err(why) = stack_line(&name, build, &stack) {
                return Verdict::Fail(why);
            }
        }
    }
    let checked = if case.modules.iter().all(|m| m.vectors.is_empty()) { "ran on zeros" } else { "outputs match" };
    if case.name.contains("graph") {
        if let Err(why) = runtime_free(build.triple) {
            return Verdict::Fail(why);
        }
        return Verdict::Pass(format!("{runs} run(s) under QEMU, {checked}, stack within bound; no heap, JSON or graph runtime linked"));
    }
    Verdict::Pass(format!("{runs} run(s) under QEMU, {checked}, stack within bound"))
}

/// Prints `stack: <case> [<label>] measured <N> bound <M>` (or `bound unknown (<why>)`);
/// an error when the run went deeper than the bound or there is none.
fn stack_line(name: &str, build: &Build, stack: &common::Stack) -> Result<(), String> {
    let measured = stack.measured;
    let bound = match &stack.bound {
        Ok(bound) => bound.to_string(),
        Err(why) => format!("unknown {why}"),
    };
    let _ = writeln!(std::io::stdout().lock(), "stack: {name} [{}] measured {measured} bound {bound}", build.label());
    let readme = readme_stack_row(name, &build.label());
    // The last column, rounded as README rounds it; README says every bound is within 25%.
    let above = stack.bound.clone().ok().and_then(|bound| Some((bound.checked_sub(measured)? * 100 + measured / 2) / measured.max(1)));
    if readme != Some((measured, stack.bound.clone().ok(), above)) {
        return Err(format!(
            "README's stack table says {readme:?} for `{name}` [{}]; this run measured {measured} with bound {bound}: update the row",
            build.label()
        ));
    }
    match stack.bound {
        Ok(bound) if above.is_some_and(|percent| percent > 25) => {
            Err(format!("the bound {bound} is more than 25% above the {measured} bytes measured, which README says none is"))
        }
        Ok(bound) if measured <= bound => Ok(()),
        Ok(bound) => Err(format!("the run took {measured} bytes of stack, more than STACK_BYTES = {bound}")),
        Err(_) => Err(format!("the stack bound is {bound}")),
    }
}

/// The measured stack, bound and percentage above README's table (under "How
/// deep is its stack?") states for `name` on `label`, so the table stays what the suite measures.
fn readme_stack_row(name: &str, label: &str) -> Option<(u64, Option<u64>, Option<u64>)> {
    let readme = std::fs::read_to_string(common::repo_root().join("README.md")).ok()?;
    let section = readme.split("### How deep is its stack?").nth(1)?.split("\n## ").next()?;
    section.lines().find_map(|line| {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let number = |cell: &str| cell.replace(',', "").parse::<u64>().ok();
        match cells.as_slice() {
            ["", case, target, measured, bound, above, ..] if case.trim_matches('`') == name && *target == label => {
                Some((number(measured)?, number(bound), number(above.trim_end_matches('%'))))
            }
            _ => None,
        }
    })
}

/// A heap's functions, as newlib names them.
const HEAP_SYMBOLS: &[&str] = &["malloc", "free", "calloc", "realloc", "_malloc_r", "_free_r", "_sbrk", "_sbrk_r"];
/// Parts of names a JSON reader or TVM's graph executor would bring in (lowercase).
const RUNTIME_NAME_PARTS: &[&str] = &["json", "graphexecutor", "pagememorymanager"];

/// The firmware just run holds no heap, JSON reader or graph executor (bare
/// metal has no std that would bring a heap of its own).
fn runtime_free(triple: &str) -> Result<(), String> {
    let elf = common::repo_root().join("target").join(TARGET_DIR).join(triple).join("release/cortex-m-runner");
    let nm = if triple.starts_with("riscv") { "riscv64-unknown-elf-nm" } else { "arm-none-eabi-nm" };
    let output = std::process::Command::new(nm).arg(&elf).output().map_err(|e| format!("{nm}: {e}"))?;
    if !output.status.success() {
        return Err(format!("{nm} {}: {}", elf.display(), String::from_utf8_lossy(&output.stderr).trim()));
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

/// Builds and runs the firmware; returns its outputs and stack.
fn run_firmware(case: &Case, module: Option<&str>, inputs: &[std::path::PathBuf], build: &Build) -> Result<common::FirmwareRun, String> {
    let firmware =
        common::Firmware { triple: build.triple, target_cpu: build.target_cpu, board: build.board, target_dir: TARGET_DIR, env: &[] };
    firmware.run_measured(case, module, inputs)
}
