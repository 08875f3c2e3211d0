//! Every corpus case the host builds, run a step at a time through
//! `examples/host-runner` (docs/src/stepping.md): stepped outputs equal a plain
//! run's and TVM's, a run cancelled after any number of steps (every number
//! for a small model, a spread for a large one) leaves nothing for the next,
//! `run_async` returns to its executor once per step, a run tried during a
//! stepped one is refused, and a dropped inference releases the guard.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Case, Verdict};

/// corpus_host.rs's target directory: the runner's dependencies are built once for both.
const TARGET_DIR: &str = "corpus-host";

/// Words of the refusals a host build of some corpus cases gives (corpus_host.rs checks them).
const HOST_REFUSALS: &[&str] = &["compiled for an Arm", "prebuilt object is for", "not supported"];

#[test]
fn corpus_cases_step_on_the_host() {
    let Some(root) = common::corpus_dir() else { return };
    let mut failed = Vec::new();
    for case in common::cases(&root) {
        let verdict = stepping_verdict(&case);
        let (word, why) = match &verdict {
            Verdict::Pass(why) => ("PASS", why),
            Verdict::Fail(why) => ("FAIL", why),
            Verdict::Skip(why) => ("SKIP", why),
        };
        // Past the test harness's capture, as the `corpus:` lines, so CI logs show them.
        let line = format!("step: {} [host] {word} ({})", case.name, why.lines().next().unwrap_or_default());
        let _ = writeln!(std::io::stdout().lock(), "{line}");
        if matches!(verdict, Verdict::Fail(_)) {
            failed.push(case.name.clone());
        }
    }
    assert!(failed.is_empty(), "corpus cases failed stepping on the host: {failed:?}");
}

/// A module (`None`: the archive's one) and the vector it runs (`None`: zeros).
type Run<'a> = (Option<&'a str>, Option<(usize, &'a common::Vector)>);

fn stepping_verdict(case: &Case) -> Verdict {
    let libraries = match case.library_env() {
        Ok(libraries) => libraries,
        Err(verdict) => return verdict,
    };
    let build = common::cargo(TARGET_DIR)
        .args(["build", "--release", "--quiet", "-p", "host-runner"])
        .env("MLF_ARCHIVE", &case.archive)
        .env_remove("MLF_PROFILE")
        .env_remove("MLF_LINK_SECTIONS")
        .envs(libraries)
        .output()
        .expect("cargo runs");
    if !build.status.success() {
        let stderr = common::failure_text(&build);
        let why = stderr.lines().find(|line| line.contains("mlf-build:")).unwrap_or(stderr.trim()).to_string();
        return match HOST_REFUSALS.iter().any(|words| stderr.contains(words)) {
            true => Verdict::Skip(format!("the host refuses it: {why}")),
            false => Verdict::Fail(format!("build failed: {why}")),
        };
    }
    let binary = common::repo_root().join("target").join(TARGET_DIR).join("release/host-runner");
    let mut steps = Vec::new();
    let zeros = [(None, None)];
    let modules: Vec<Run> = if case.modules.is_empty() {
        zeros.to_vec()
    } else {
        case.modules
            .iter()
            .flat_map(|module| {
                let name = module.module.as_deref();
                let vectors: Vec<_> = module.vectors.iter().enumerate().map(move |(index, vector)| (name, Some((index, vector)))).collect();
                if vectors.is_empty() {
                    vec![(name, None)]
                } else {
                    vectors
                }
            })
            .collect()
    };
    for (module, vector) in modules {
        match check_module(case, &binary, module, vector) {
            Ok(count) => steps.push((module, count)),
            Err(why) => return Verdict::Fail(format!("module {}: {why}", module.unwrap_or("(the one)"))),
        }
    }
    // One figure per module, however many vectors it ran.
    steps.dedup_by_key(|(module, _)| *module);
    let counts: Vec<String> = steps
        .iter()
        .map(|(module, count)| match module {
            Some(module) => format!("{module}: {count}"),
            None => count.to_string(),
        })
        .collect();
    Verdict::Pass(format!("{} steps", counts.join(", ")))
}

/// Checks one module on one vector (or zeros): `--check-stepping`, then
/// `--steps` and `--cancel-at` against the expected outputs, or the checked
/// run's where the case has none. Returns the module's steps.
fn check_module(case: &Case, binary: &Path, module: Option<&str>, vector: Option<(usize, &common::Vector)>) -> Result<usize, String> {
    let inputs: &[PathBuf] = vector.map_or(&[], |(_, vector)| &vector.inputs);
    let label = format!("{}-{}-{}", case.name, module.unwrap_or("m"), vector.map_or(0, |(index, _)| index));
    let checked = common::scratch(&format!("step-{label}-checked"));
    let stdout = run(binary, module, inputs, &["--check-stepping"], &checked)?;
    let summary = stdout.lines().find_map(|line| line.strip_prefix("stepping: ")).ok_or("no `stepping:` line")?;
    let count: usize =
        summary.split_whitespace().next().and_then(|n| n.parse().ok()).ok_or_else(|| format!("unreadable `stepping: {summary}`"))?;
    let reference = match vector {
        Some((index, vector)) => {
            compare(case, index, vector, &checked)?;
            None
        }
        None => Some(read_outputs(&checked)?),
    };

    let stepped = common::scratch(&format!("step-{label}-stepped"));
    let stdout = run(binary, module, inputs, &["--steps"], &stepped)?;
    let indices: Vec<usize> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("step: "))
        .map(|rest| rest.split_whitespace().next().and_then(|index| index.parse().ok()).ok_or_else(|| format!("unreadable `step: {rest}`")))
        .collect::<Result<_, _>>()?;
    if indices != (0..count).collect::<Vec<_>>() {
        return Err(format!("--steps printed steps {indices:?}, not 0..{count}"));
    }

    let cancelled = common::scratch(&format!("step-{label}-cancelled"));
    let k = (count / 2).to_string();
    let stdout = run(binary, module, inputs, &["--cancel-at", &k], &cancelled)?;
    if !stdout.contains(&format!("cancel: after {k} of {count} steps")) {
        return Err(format!("--cancel-at {k} printed no `cancel: after {k} of {count} steps`"));
    }
    for out in [&stepped, &cancelled] {
        match (vector, &reference) {
            (Some((index, vector)), _) => compare(case, index, vector, out)?,
            (None, Some(reference)) if read_outputs(out)? != *reference => {
                return Err(format!("{} differs from the checked run's outputs", out.display()))
            }
            _ => {}
        }
    }
    Ok(count)
}

/// Runs the runner with `flags`, writing outputs to `out`; its stdout.
fn run(binary: &Path, module: Option<&str>, inputs: &[PathBuf], flags: &[&str], out: &Path) -> Result<String, String> {
    let mut command = Command::new(binary);
    if let Some(module) = module {
        command.args(["--module", module]);
    }
    let output = command.args(flags).args(inputs).arg("--out").arg(out).output().map_err(|e| format!("{}: {e}", binary.display()))?;
    if !output.status.success() {
        return Err(format!("host-runner {} failed: {}", flags.join(" "), String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The `output<i>.bin` files in `out`, in order.
fn read_outputs(out: &Path) -> Result<Vec<Vec<u8>>, String> {
    (0..)
        .map(|i| out.join(format!("output{i}.bin")))
        .take_while(|path| path.is_file())
        .map(|path| std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

fn compare(case: &Case, index: usize, vector: &common::Vector, out: &Path) -> Result<(), String> {
    let outputs = read_outputs(out)?;
    common::check_vector(case, index, vector, &outputs).map_err(|why| format!("{}: {why}", out.display()))
}
