//! Cross-builds corpus archives into `examples/cortex-m-runner` for Cortex-M
//! and RISC-V targets, runs the firmware under QEMU (`.cargo/qemu-runner`,
//! wrapped in `timeout`) and compares its outputs with the ones TVM computed;
//! prints the stack each module's run took beside its `STACK_BYTES` bound.
//! A few cases are built again with MLF_PROFILE=1 and their per-operator
//! profile is checked against a TCG plugin's instruction counts. Every
//! firmware also runs its inputs a step at a time; the same plugin counts
//! what stepping adds over `run` and its longest step (the book's Stepping).

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

/// The cases built once more with profiling, and on which of their builds:
/// an AOT, a graph and a CMSIS-NN archive, on Arm and RISC-V; the book's
/// table under "On the device" shows the CMSIS-NN one on the M4F and the M55.
const PROFILED: &[(&str, &[Build])] =
    &[("kws_int8-aot_c-cortex_m4", &[V7EM_HF, M55]), ("kws_int8-aot_c_usmp", &[RV32]), ("cnn_f32-graph", &[V7EM_HF])];

/// The most an operator's instructions may differ from the plugin's count of
/// its call, in percent of that count (of 1% of the run for a smaller operator).
const MAX_DEVIATION_PERCENT: f64 = 5.0;

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
            let mut stepped = Vec::new();
            if common::report(name, &build.label(), &qemu_verdict(case, build, &mut stepped)) {
                failed.push(format!("{name} [{}]", build.label()));
                continue;
            }
            for (module, costs) in stepped {
                if let Err(why) = costs.and_then(|costs| costs.check(&module, build)) {
                    let _ = writeln!(std::io::stdout().lock(), "steps: {module} [{}] FAIL ({why})", build.label());
                    failed.push(format!("steps {module} [{}]", build.label()));
                }
            }
            if PROFILED.iter().any(|(profiled, builds)| profiled == name && builds.iter().any(|b| b.label() == build.label())) {
                if let Err(why) = profile_check(case, build) {
                    let _ = writeln!(std::io::stdout().lock(), "profile: {name} [{}] FAIL ({why})", build.label());
                    failed.push(format!("profile {name} [{}]", build.label()));
                }
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

/// The verdict of `case` on `build`; `stepped` gets, for each module, what
/// stepping cost in its last run (see [`SteppingCosts`]).
fn qemu_verdict(case: &Case, build: &Build, stepped: &mut Vec<(String, Result<SteppingCosts, String>)>) -> Verdict {
    if let Err(verdict) = case.library_env() {
        return verdict;
    }
    let mut runs = 0;
    for module in &case.modules {
        // The firmware run last, which the plugin runs again.
        let mut last = String::new();
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
                Ok(run) => {
                    keep(run.stack);
                    last = run.stdout;
                }
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
            last = run.stdout;
            runs += 1;
        }
        let name = match &module.module {
            Some(module) => format!("{}/{module}", case.name),
            None => case.name.clone(),
        };
        if let Some(stack) = stack {
            if let Err(why) = stack_line(&name, build, &stack) {
                return Verdict::Fail(why);
            }
        }
        stepped.push((name, SteppingCosts::measure(&last, build)));
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
    // The last column, rounded as the book rounds it; the book says every bound is within 25%.
    let above = stack.bound.clone().ok().and_then(|bound| Some((bound.checked_sub(measured)? * 100 + measured / 2) / measured.max(1)));
    if readme != Some((measured, stack.bound.clone().ok(), above)) {
        return Err(format!(
            "memory.md's stack table says {readme:?} for `{name}` [{}]; this run measured {measured} with bound {bound}: update the row",
            build.label()
        ));
    }
    match stack.bound {
        Ok(bound) if above.is_some_and(|percent| percent > 25) => {
            Err(format!("the bound {bound} is more than 25% above the {measured} bytes measured, which memory.md says none is"))
        }
        Ok(bound) if measured <= bound => Ok(()),
        Ok(bound) => Err(format!("the run took {measured} bytes of stack, more than STACK_BYTES = {bound}")),
        Err(_) => Err(format!("the stack bound is {bound}")),
    }
}

/// The measured stack, bound and percentage above the book's table (under "How
/// deep is its stack?") states for `name` on `label`, so the table stays what the suite measures.
fn readme_stack_row(name: &str, label: &str) -> Option<(u64, Option<u64>, Option<u64>)> {
    let chapter = common::book_chapter("memory.md");
    let section = chapter.split("### How deep is its stack?").nth(1)?.split("\n## ").next()?;
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

/// What a stepped run costs over `run`, as the call-windows plugin counts the
/// glue's C calls in a firmware that ran both (examples/cortex-m-runner): `run`
/// is `mlf_<m>_invoke`'s instructions, a stepped run `mlf_<m>_start`'s and
/// those of every `mlf_<m>_step`, callees included.
struct SteppingCosts {
    steps: usize,
    /// Instructions the stepped run adds over `run`, per step (rounded; negative when it takes fewer).
    added_per_step: i64,
    /// The most instructions of one `mlf_<m>_step`: the longest time between two yields.
    longest: u64,
    /// `longest` in percent of `run` (rounded).
    longest_percent: u64,
}

impl SteppingCosts {
    /// Runs the firmware just built, whose output was `stdout`, once more under the plugin.
    fn measure(stdout: &str, build: &Build) -> Result<SteppingCosts, String> {
        let module = stdout
            .lines()
            .find_map(|line| line.strip_prefix("model `")?.split('`').next())
            .ok_or("the firmware printed no `model` line")?;
        let printed = |stdout: &str| stdout.lines().find_map(|line| line.strip_prefix("steps: ")?.parse::<usize>().ok());
        let steps = printed(stdout).ok_or("the firmware printed no `steps: <n>` line")?;
        let elf = common::repo_root().join("target").join(TARGET_DIR).join(build.triple).join("release/cortex-m-runner");
        let symbols = function_symbols(&elf, build.triple)?;
        let entry = |what: &str| {
            let name = format!("mlf_{module}_{what}");
            symbols
                .iter()
                .find(|(symbol, _)| *symbol == name)
                .map(|&(_, entry)| entry)
                .ok_or(format!("the firmware has no function `{name}`"))
        };
        let entries = [entry("invoke")?, entry("start")?, entry("step")?];
        let counted = run_with_plugin(&elf, build, &call_windows_plugin()?, &entries)?;
        if printed(&counted.stdout) != Some(steps) {
            return Err("the run under the plugin printed another `steps:` line".to_string());
        }
        let calls = |entry: u64| -> Vec<u64> {
            counted.windows.iter().filter(|window| window.entry == entry).map(|window| window.closed - window.opened).collect()
        };
        let (run, start, step_calls) = match (calls(entries[0]).as_slice(), calls(entries[1]).as_slice(), calls(entries[2])) {
            ([run], [start], step_calls) => (*run, *start, step_calls),
            (runs, starts, _) => {
                return Err(format!("the plugin saw {} run(s) and {} start(s), not one of each", runs.len(), starts.len()))
            }
        };
        if step_calls.len() != steps {
            return Err(format!("the plugin saw {} calls of `mlf_{module}_step`; the firmware took {steps} steps", step_calls.len()));
        }
        let stepped = start + step_calls.iter().sum::<u64>();
        let added = (stepped as f64 - run as f64) / steps.max(1) as f64;
        let longest = step_calls.iter().copied().max().unwrap_or_default();
        Ok(SteppingCosts { steps, added_per_step: added.round() as i64, longest, longest_percent: (longest * 100 + run / 2) / run.max(1) })
    }

    /// An error when the book's Stepping table does not state these figures
    /// for `module` on `build`; else prints `steps: <module> [<label>] PASS (...)`.
    fn check(&self, module: &str, build: &Build) -> Result<(), String> {
        let SteppingCosts { steps, added_per_step, longest, longest_percent } = *self;
        let section = common::doc_section("stepping.md", "## What stepping costs");
        let table = common::table_after(&section, "| case |");
        let mut figures = common::DocFigures::default();
        let command = format!("corpus_qemu's stepped run of {module} on {}", build.label());
        let measured = [steps as i64, added_per_step, longest as i64, longest_percent as i64];
        figures.row_of(&table, &[&format!("`{module}`"), &build.label()], &measured, &command);
        figures.result()?;
        let _ = writeln!(
            std::io::stdout().lock(),
            "steps: {module} [{}] PASS ({steps} steps, {added_per_step:+} instructions per step over run, longest step {longest} instructions = {longest_percent}% of the run)",
            build.label()
        );
        Ok(())
    }
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

/// The profiled build of `case` on `build`, run under `-icount shift=0`: its
/// `profile:` lines against the plugin's count of each operator call, and
/// the instructions the profiling hooks and clock reads take per call.
/// Prints `profile: <case> [<label>] <N> operators, <P>% of the run, max
/// deviation <D>% vs plugin`.
fn profile_check(case: &Case, build: &Build) -> Result<(), String> {
    let inputs = case.modules.first().and_then(|module| module.vectors.last()).map(|vector| vector.inputs.clone()).unwrap_or_default();
    let plugin = call_windows_plugin()?;
    let elf = common::repo_root().join("target").join(TARGET_DIR).join(build.triple).join("release/cortex-m-runner");

    let env = [("MLF_PROFILE", "1"), ("MLF_QEMU_ICOUNT", "1")];
    let firmware =
        common::Firmware { triple: build.triple, target_cpu: build.target_cpu, board: build.board, target_dir: TARGET_DIR, env: &env };
    let run = firmware.run_measured(case, case.modules.first().and_then(|m| m.module.as_deref()), &inputs)?;
    if let Some(vector) = case.modules.first().and_then(|module| module.vectors.last()) {
        common::check_vector(case, 0, vector, &run.outputs).map_err(|why| format!("the profiled run's outputs: {why}"))?;
    }
    let profile = Profile::parse(&run.stdout)?;
    let symbols = function_symbols(&elf, build.triple)?;
    let mut entries = vec![function_like(&symbols, "5stack5paint")?, function_like(&symbols, "5stack4used")?];
    // What profiling adds: the generated `read_clock` (the clock's one caller)
    // and, for AOT code, the `-finstrument-functions` hooks.
    let added_entries: Vec<u64> = symbols
        .iter()
        .filter(|(name, _)| name.contains("7profile10read_clock") || name.starts_with("__cyg_profile_func_"))
        .map(|&(_, entry)| entry)
        .collect();
    entries.extend(&added_entries);
    let mut operator_entries = Vec::new();
    for (name, _) in &profile.calls {
        let entry = symbols.iter().find(|(symbol, _)| symbol == name).map(|&(_, address)| address);
        let entry = entry.ok_or_else(|| format!("the profiled firmware has no function `{name}`, which it printed a time for"))?;
        operator_entries.push(entry);
        entries.push(entry);
    }
    let counted = run_with_plugin(&elf, build, &plugin, &entries)?;
    if Profile::parse(&counted.stdout)? != profile {
        return Err("two runs of the profiled firmware under -icount printed different profiles".to_string());
    }
    let (run_from, run_to) = run_between(&counted.windows, entries[0], entries[1])?;
    let in_run = |window: &&Window| window.opened >= run_from && window.closed <= run_to;
    let added_windows: Vec<&Window> =
        counted.windows.iter().filter(in_run).filter(|window| added_entries.contains(&window.entry)).collect();
    // Outermost only: the hooks call `read_clock`.
    let added: u64 = added_windows
        .iter()
        .filter(|inner| !added_windows.iter().any(|outer| outer.opened < inner.opened && inner.closed <= outer.closed))
        .map(|window| window.closed - window.opened)
        .sum();
    // Each call the plugin saw, in order; an operator the compiler inlined into
    // its caller has no call to see (the firmware times it through its hooks).
    // In the timed run: the firmware's stepped run, after it, calls them again.
    let mut windows = counted.windows.iter().filter(in_run).filter(|window| operator_entries.contains(&window.entry)).peekable();
    // The clock reads every `1e9 / CLOCK_HZ` instructions (40 on the mps2 boards) and
    // the hooks around a call take a few dozen: an operator under 1% of the run is
    // held to 0.05% of the run instead of 5% of itself.
    let floor = profile.total as f64 / 100.0;
    let (mut deviation, mut seen): (f64, usize) = (0.0, 0);
    for (index, (_, measured)) in profile.calls.iter().enumerate() {
        let Some(window) = windows.next_if(|window| window.entry == operator_entries[index]) else { continue };
        let counted = (window.closed - window.opened) as f64;
        deviation = deviation.max((*measured as f64 - counted).abs() * 100.0 / counted.max(floor));
        seen += 1;
    }
    if let Some(window) = windows.next() {
        return Err(format!("the plugin saw a call of {:#x} the firmware's profile has no place for", window.entry));
    }
    if seen == 0 {
        return Err("the plugin saw none of the operators called".to_string());
    }
    let calls = profile.calls.len();
    let off_by = readings_check(&profile, &counted.windows, &symbols, (run_from, run_to), build)?;
    let operators: u64 = profile.calls.iter().map(|(_, spent)| spent).sum();
    let share = operators as f64 * 100.0 / profile.total.max(1) as f64;
    let per_call = (added + calls as u64 / 2) / calls as u64;
    let _ = writeln!(
        std::io::stdout().lock(),
        "profile: {} [{}] {calls} operators, {share:.1}% of the run, max deviation {deviation:.2}% vs plugin ({seen} calls seen, {} inlined; every reading within {off_by} instructions of the plugin's); profiling adds {per_call} instructions per call",
        case.name,
        build.label(),
        calls - seen
    );
    if deviation > MAX_DEVIATION_PERCENT {
        return Err(format!(
            "an operator's instructions differ from the plugin's count by {deviation:.2}%, more than {MAX_DEVIATION_PERCENT}%"
        ));
    }
    readme_profile(case, build, &profile, per_call)
}

/// Instructions per tick of the clock the firmware reads on `build`'s board
/// (examples/cortex-m-runner/build.rs's `BOARDS`: 10^9 / the clock's rate).
fn instructions_per_tick(build: &Build) -> f64 {
    let board = build.board.unwrap_or(match build.triple.split('-').next().unwrap_or_default() {
        "thumbv6m" | "thumbv7m" => "mps2-an385",
        "thumbv8m.main" => "mps2-an505",
        _ => "mps2-an386",
    });
    match board {
        "mps2-an505" => 50.0,
        "mps3-an547" => 31.25,
        "virt" => 1.0,
        _ => 40.0,
    }
}

/// Every call's figure against the instructions the plugin counted between
/// the two clock reads it came from (the calls of the generated `read_clock`
/// in the run: a graph's glue reads it twice a call; an AOT call begins at
/// the read in the entry hook and ends at the last read in an exit hook
/// before the next entry hook's), which holds inlined operators too. Each must
/// be within one tick; returns the largest difference, in instructions.
fn readings_check(
    profile: &Profile,
    windows: &[Window],
    symbols: &[(String, u64)],
    (from, to): (u64, u64),
    build: &Build,
) -> Result<u64, String> {
    let entry_of = |name: &str| symbols.iter().find(|(symbol, _)| symbol == name).map(|&(_, entry)| entry);
    let read_clock = function_like(symbols, "7profile10read_clock")?;
    let in_run = |window: &&Window| window.opened >= from && window.closed <= to;
    let hooks: Vec<&Window> = windows
        .iter()
        .filter(in_run)
        .filter(|window| {
            Some(window.entry) == entry_of("__cyg_profile_func_enter") || Some(window.entry) == entry_of("__cyg_profile_func_exit")
        })
        .collect();
    let mut calls: Vec<(u64, u64)> = Vec::new();
    let mut open: Option<u64> = None;
    for read in windows.iter().filter(in_run).filter(|window| window.entry == read_clock) {
        let hook = hooks.iter().find(|hook| hook.opened < read.opened && read.closed <= hook.closed);
        match hook.map(|hook| Some(hook.entry) == entry_of("__cyg_profile_func_enter")) {
            // A graph's glue: the reads pair up.
            None => match open.take() {
                Some(start) => calls.push((start, read.opened)),
                None => open = Some(read.opened),
            },
            Some(true) => open = Some(read.opened),
            Some(false) => match (open, calls.last_mut()) {
                (Some(start), _) => {
                    calls.push((start, read.opened));
                    open = None;
                }
                // A later exit in the same call (an operator's own callee returned first).
                (None, Some(last)) => last.1 = read.opened,
                (None, None) => return Err("the plugin saw the exit hook read the clock before any entry hook".to_string()),
            },
        }
    }
    if calls.len() != profile.calls.len() {
        return Err(format!("the plugin saw the clock read around {} calls; the firmware timed {}", calls.len(), profile.calls.len()));
    }
    let tick = instructions_per_tick(build);
    let mut largest = 0;
    for ((name, measured), (start, end)) in profile.calls.iter().zip(&calls) {
        let counted = end - start;
        let off = measured.abs_diff(counted);
        if off as f64 > tick {
            return Err(format!("`{name}` reads {measured} instructions; the plugin counted {counted} between its clock reads, more than a tick ({tick}) apart"));
        }
        largest = largest.max(off);
    }
    Ok(largest)
}

/// A profiled run's `profile:` lines: each call's operator and instructions, and the total.
#[derive(Debug, PartialEq)]
struct Profile {
    calls: Vec<(String, u64)>,
    glue: u64,
    total: u64,
}

impl Profile {
    fn parse(stdout: &str) -> Result<Profile, String> {
        let mut profile = Profile { calls: Vec::new(), glue: 0, total: 0 };
        for line in stdout.lines().filter_map(|line| line.strip_prefix("profile: ")) {
            let parsed = line.rsplit_once(' ').and_then(|(name, value)| Some((name, value.parse::<u64>().ok()?)));
            match parsed {
                Some(("glue", value)) => profile.glue = value,
                Some(("total", value)) => profile.total = value,
                Some((name, value)) => profile.calls.push((name.to_string(), value)),
                None => return Err(format!("unexpected line `profile: {line}`")),
            }
        }
        let operators: u64 = profile.calls.iter().map(|(_, spent)| spent).sum();
        if profile.calls.is_empty() || operators + profile.glue != profile.total {
            return Err(format!("the firmware's profile is not operator lines, glue and a total that adds up: {profile:?}"));
        }
        Ok(profile)
    }
}

/// Builds examples/cortex-m-runner/qemu-plugin/call-windows.c once per run of the suite.
fn call_windows_plugin() -> Result<std::path::PathBuf, String> {
    static PLUGIN: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    PLUGIN
        .get_or_init(|| {
            let source = common::repo_root().join("examples/cortex-m-runner/qemu-plugin/call-windows.c");
            let plugin = common::repo_root().join("target").join(TARGET_DIR).join("libcall-windows.so");
            let output = std::process::Command::new("gcc")
                .args(["-O2", "-shared", "-fPIC", "-o"])
                .arg(&plugin)
                .arg(&source)
                .output()
                .map_err(|e| format!("gcc: {e}"))?;
            if !output.status.success() {
                return Err(format!("gcc {}: {}", source.display(), String::from_utf8_lossy(&output.stderr).trim()));
            }
            Ok(plugin)
        })
        .clone()
}

/// The ELF's functions: name and entry (the Thumb bit cleared).
/// The firmware's functions, named as in C and Rust: the tag the runner
/// crate's build gives the symbols it compiled (the book, "Models as crates":
/// its name and version, each byte not a letter or digit as `_`, each followed
/// by `_`) is taken off.
fn function_symbols(elf: &std::path::Path, triple: &str) -> Result<Vec<(String, u64)>, String> {
    let manifest = std::fs::read_to_string(common::repo_root().join("examples/cortex-m-runner/Cargo.toml")).map_err(|e| e.to_string())?;
    let field = |key: &str| {
        manifest.lines().find_map(|line| line.strip_prefix(key)?.trim().strip_prefix('=')?.trim().strip_prefix('"')?.strip_suffix('"'))
    };
    let tag: String = [field("name"), field("version")]
        .iter()
        .map(|part| part.map(|part| part.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect::<String>() + "_"))
        .collect::<Option<String>>()
        .ok_or("examples/cortex-m-runner/Cargo.toml names no name and version")?;
    let nm = if triple.starts_with("riscv") { "riscv64-unknown-elf-nm" } else { "arm-none-eabi-nm" };
    let output = std::process::Command::new(nm).arg(elf).output().map_err(|e| format!("{nm}: {e}"))?;
    if !output.status.success() {
        return Err(format!("{nm} {}: {}", elf.display(), String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            [address, "T" | "t", name] => {
                Some((name.strip_prefix(tag.as_str()).unwrap_or(name).to_string(), u64::from_str_radix(address, 16).ok()? & !1))
            }
            _ => None,
        })
        .collect())
}

/// The entry of the function whose (mangled) name contains `part`.
fn function_like(symbols: &[(String, u64)], part: &str) -> Result<u64, String> {
    symbols
        .iter()
        .find(|(name, _)| name.contains(part))
        .map(|&(_, entry)| entry)
        .ok_or_else(|| format!("the firmware has no function named like `{part}`"))
}

/// One call the plugin saw: the function's entry, and the instructions run before it started and before it returned.
struct Window {
    entry: u64,
    opened: u64,
    closed: u64,
}

/// What a run with the plugin gave.
struct Counted {
    stdout: String,
    windows: Vec<Window>,
}

/// Runs `elf` through .cargo/qemu-runner under `-icount shift=0` with the plugin watching calls of `entries`.
fn run_with_plugin(elf: &std::path::Path, build: &Build, plugin: &std::path::Path, entries: &[u64]) -> Result<Counted, String> {
    let arguments: String = entries.iter().map(|entry| format!(",entry={entry:#x}")).collect();
    let output = std::process::Command::new(common::repo_root().join(".cargo/qemu-runner"))
        .arg(elf)
        .env("MLF_BOARD", build.board.unwrap_or_default())
        .env("MLF_QEMU_ICOUNT", "1")
        .env("MLF_QEMU_PLUGIN", format!("{}{arguments}", plugin.display()))
        .output()
        .map_err(|e| format!("qemu-runner: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("{} under the plugin: {} {}", elf.display(), stderr.trim(), stdout.lines().last().unwrap_or_default()));
    }
    let mut windows = Vec::new();
    for line in stderr.lines().filter_map(|line| line.strip_prefix("window ")) {
        let window = match line.split(' ').collect::<Vec<_>>().as_slice() {
            [entry, opened, closed] => (|| {
                Some(Window {
                    entry: u64::from_str_radix(entry.strip_prefix("0x")?, 16).ok()?,
                    opened: opened.parse().ok()?,
                    closed: closed.parse().ok()?,
                })
            })(),
            _ => None,
        };
        windows.push(
            window.ok_or_else(|| format!("the plugin printed `window {line}`: a call that did not return, or a line it does not write"))?,
        );
    }
    Ok(Counted { stdout, windows })
}

/// The instruction counts at the return of `paint` and at the entry of `used`: the model's run is between.
fn run_between(windows: &[Window], paint: u64, used: u64) -> Result<(u64, u64), String> {
    let painted = windows.iter().find(|window| window.entry == paint).map(|window| window.closed);
    let measured = windows.iter().find(|window| window.entry == used).map(|window| window.opened);
    match (painted, measured) {
        (Some(from), Some(to)) if to >= from => Ok((from, to)),
        _ => Err("the plugin did not see the stack painted and then measured around the run".to_string()),
    }
}

/// The book's "On the device" (profiling.md): the table after "`<case>` on `<label>`:" (every
/// call's instructions and share of the run, glue and total) and the number
/// after "`<case>` on `<label>` profiling adds", where the book shows them.
fn readme_profile(case: &Case, build: &Build, profile: &Profile, per_call: u64) -> Result<(), String> {
    let section = common::doc_section("profiling.md", "## On the device");
    let named = format!("`{}` on `{}`", case.name, build.label());
    let (table_anchor, added_anchor) = (format!("{named}:"), format!("{named} profiling adds"));
    let shows = |anchor: &str| section.iter().any(|(_, line)| line.contains(anchor));
    let command = format!("corpus_qemu's profiled run of {} on {}", case.name, build.label());
    let mut figures = common::DocFigures::default();
    if shows(&table_anchor) {
        let table = common::table_after(&section, &table_anchor);
        let share = |spent: u64| ((spent * 1000 / profile.total.max(1) + 5) / 10) as i64;
        for (index, (name, spent)) in profile.calls.iter().enumerate() {
            figures.row_of(&table, &[&(index + 1).to_string(), &format!("`{name}`")], &[*spent as i64, share(*spent)], &command);
        }
        figures.row_of(&table, &["", "glue"], &[profile.glue as i64, share(profile.glue)], &command);
        figures.row_of(&table, &["", "total"], &[profile.total as i64, 100], &command);
    }
    if shows(&added_anchor) {
        figures.after(&section, &added_anchor, per_call as i64, &command);
    }
    figures.result()
}
