//! Shared by the integration tests: where `../shared` is, scratch
//! directories, SKIP lines, finding corpus cases, building runner crates with
//! Cargo, comparing outputs and printing conformance lines.

#![allow(dead_code)] // each test binary uses a different part

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use serde_json::Value;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared` next to the repository: the corpus the tests read.
pub fn shared_dir() -> PathBuf {
    repo_root().join("../shared")
}

/// `../shared/mlf-corpus`, or `None` (after a SKIP line) when it is absent.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = shared_dir().join("mlf-corpus");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(&format!("the corpus {} is absent", dir.display()));
        None
    }
}

/// The directory of corpus case `name` (in `tvm-0.18/` or `real-world/`), or
/// `None` (after a SKIP line) when the corpus is absent; panics when the
/// corpus lacks the case, which the test names on purpose.
pub fn corpus_case(name: &str) -> Option<PathBuf> {
    let root = corpus_dir()?;
    let dir = ["tvm-0.18", "real-world"].iter().map(|group| root.join(group).join(name)).find(|dir| dir.is_dir());
    Some(dir.unwrap_or_else(|| panic!("the corpus {} has no case `{name}`", root.display())))
}

thread_local! {
    /// libtest runs each test on a thread of its own: one SKIP line per test.
    static SKIPPED: Cell<bool> = const { Cell::new(false) };
}

/// Prints `SKIP <test>: <why>` for the running test, once: straight to
/// stdout, so it shows with `--nocapture` and in CI logs.
pub fn skip(why: &str) {
    if !SKIPPED.replace(true) {
        let thread = std::thread::current();
        let test = thread.name().unwrap_or("<unnamed test>");
        let _ = writeln!(std::io::stdout().lock(), "SKIP {test}: {why}");
    }
}

/// Set in the child process [`in_child_with`] starts.
pub const CHILD: &str = "MLF_BUILD_TEST_CHILD";

/// Whether the calling test should run its body here: in the test process it
/// runs the test again in a child process with `vars` added to its
/// environment, waits for it to pass and returns false; in that child it
/// returns true. The compiler variables (`CC_<target>`, `CFLAGS_<target>`) are
/// read from the process environment, which a test must not change under its
/// siblings.
pub fn in_child_with(vars: &[(&str, &str)]) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let test = std::thread::current().name().expect("tests run on named threads").to_string();
    let status = Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .envs(vars.iter().copied())
        .status()
        .unwrap();
    assert!(status.success(), "{test} failed in a child process with {vars:?}: its output is above");
    false
}

/// A fresh, empty directory for a test's files, unique per call:
/// `target/tmp/<test binary>/<name>-<n>`. The first call of a run removes
/// what the previous run of the same test binary left.
pub fn scratch(name: &str) -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    // A child of `in_child_with` runs beside its parent's siblings: it clears
    // nothing, and its names differ from theirs.
    let in_child = std::env::var_os(CHILD).is_some();
    let root = ROOT.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(env!("CARGO_CRATE_NAME"));
        if !in_child {
            let _ = std::fs::remove_dir_all(&root);
        }
        root
    });
    let child = if in_child { "-child" } else { "" };
    let dir = root.join(format!("{name}{child}-{}", CALLS.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// One run of a module: input files and the expected output files.
#[derive(Debug, Clone)]
pub struct Vector {
    pub inputs: Vec<PathBuf>,
    pub expected: Vec<Expected>,
}

#[derive(Debug, Clone)]
pub struct Expected {
    pub file: PathBuf,
    pub dtype: String,
}

#[derive(Debug, Clone)]
pub struct ModuleCase {
    /// `None` for single-module archives.
    pub module: Option<String>,
    pub vectors: Vec<Vector>,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub archive: PathBuf,
    pub modules: Vec<ModuleCase>,
    pub rtol: f64,
    pub atol: f64,
    /// Real-world cases: the top-1 class each vector must give.
    pub reference_top1: Vec<usize>,
    /// External libraries the archive's code calls (`needs` in case.json): the
    /// library's name (`CMSIS-NN`) and the text naming its folder under `../shared`.
    pub needs: Vec<(String, String)>,
}

impl Case {
    /// The environment variables that give the Builder the libraries the case
    /// needs (`CMSIS_NN_PATH`), or why they cannot be given.
    pub fn library_env(&self) -> Result<Vec<(&'static str, PathBuf)>, Verdict> {
        self.needs
            .iter()
            .map(|(name, text)| {
                // `"../shared/third-party/CMSIS-NN/v4.1.0 (why)"`: a path from the repository root first.
                let dir = repo_root().join(text.split_whitespace().next().unwrap_or_default());
                match name.as_str() {
                    _ if !dir.is_dir() => Err(Verdict::Skip(format!("needs {name} at {}, which is absent", dir.display()))),
                    "CMSIS-NN" => Ok(("CMSIS_NN_PATH", dir)),
                    _ => Err(Verdict::Fail(format!("needs {name}, a library mlf-build does not know"))),
                }
            })
            .collect()
    }
}

fn load_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

/// The case in `dir`, a folder of `tvm-0.18/` or `real-world/`.
pub fn case_at(dir: &Path) -> Case {
    load_case(dir, dir.parent().is_some_and(|group| group.ends_with("real-world")))
}

/// Every case of the corpus, `tvm-0.18/` then `real-world/`, sorted by name.
pub fn cases(root: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    for group in ["tvm-0.18", "real-world"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(group))
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("case.json").is_file()).collect())
            .unwrap_or_default();
        dirs.sort();
        cases.extend(dirs.iter().map(|dir| load_case(dir, group == "real-world")));
    }
    cases
}

fn load_case(dir: &Path, real_world: bool) -> Case {
    let json = load_json(&dir.join("case.json"));
    let name = str_field(&json, "name").to_string();
    let archive = match json["archive"].as_str() {
        Some(path) => dir.join(path.trim_end_matches('/')),
        None => dir.join("model.tar"),
    };
    let tolerance = &json["tolerance"]["float32"];
    let mut case = Case {
        name,
        archive,
        modules: Vec::new(),
        rtol: tolerance["rtol"].as_f64().unwrap_or(1e-4),
        atol: tolerance["atol"].as_f64().unwrap_or(1e-5),
        reference_top1: json["reference_top1"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_u64()).map(|v| v as usize).collect())
            .unwrap_or_default(),
        needs: json["needs"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, text)| (name.clone(), text.as_str().unwrap_or_default().to_string()))
            .collect(),
    };
    if real_world {
        let dtype = str_field(&json["output"], "dtype").to_string();
        let vectors = json["vectors"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|v| Vector {
                        inputs: vec![dir.join(str_field(v, "file"))],
                        expected: vec![Expected { file: dir.join(str_field(v, "expected")), dtype: dtype.clone() }],
                    })
                    .collect()
            })
            .unwrap_or_default();
        case.modules.push(ModuleCase { module: None, vectors });
    } else {
        let modules = json["modules"].as_array().cloned().unwrap_or_default();
        let several = modules.len() > 1;
        for module in &modules {
            let inputs =
                module["inputs"].as_array().map(|l| l.iter().map(|i| dir.join(str_field(i, "file"))).collect()).unwrap_or_default();
            let expected = module["outputs"]
                .as_array()
                .map(|l| {
                    l.iter().map(|o| Expected { file: dir.join(str_field(o, "file")), dtype: str_field(o, "dtype").to_string() }).collect()
                })
                .unwrap_or_default();
            let vectors =
                if module["outputs"].as_array().is_some_and(|l| !l.is_empty()) { vec![Vector { inputs, expected }] } else { Vec::new() };
            case.modules.push(ModuleCase { module: several.then(|| str_field(module, "module").to_string()), vectors });
        }
    }
    case
}

/// Compares `got` with `expected` bytes: integers exactly, floats within tolerance.
pub fn compare(expected: &Expected, got: &[u8], rtol: f64, atol: f64) -> Result<(), String> {
    let want = std::fs::read(&expected.file).map_err(|e| format!("{}: {e}", expected.file.display()))?;
    if want.len() != got.len() {
        return Err(format!("{}: {} bytes expected, got {}", expected.file.display(), want.len(), got.len()));
    }
    if expected.dtype != "float32" {
        return match want.iter().zip(got).position(|(a, b)| a != b) {
            None => Ok(()),
            Some(at) => Err(format!("{}: byte {at} differs ({} expected, got {})", expected.file.display(), want[at], got[at])),
        };
    }
    let floats = |bytes: &[u8]| bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect::<Vec<_>>();
    let (want, got) = (floats(&want), floats(got));
    for (index, (w, g)) in want.iter().zip(&got).enumerate() {
        if (w - g).abs() > atol + rtol * w.abs() || g.is_nan() != w.is_nan() {
            return Err(format!("{}: element {index} is {g}, expected {w} (rtol {rtol}, atol {atol})", expected.file.display()));
        }
    }
    Ok(())
}

/// Checks one run's outputs against the vector's expected files and, for
/// real-world cases, the reference top-1 class.
pub fn check_vector(case: &Case, index: usize, vector: &Vector, outputs: &[Vec<u8>]) -> Result<(), String> {
    if outputs.len() != vector.expected.len() {
        return Err(format!("vector {index}: {} outputs, expected {}", outputs.len(), vector.expected.len()));
    }
    for (expected, got) in vector.expected.iter().zip(outputs) {
        compare(expected, got, case.rtol, case.atol)?;
        if let Some(&want) = case.reference_top1.get(index) {
            let top = top1(got, &expected.dtype);
            if top != want {
                return Err(format!("vector {index}: top-1 class {top}, reference {want}"));
            }
        }
    }
    Ok(())
}

/// The index of the largest element (first on ties), reading `dtype` elements.
pub fn top1(bytes: &[u8], dtype: &str) -> usize {
    let values: Vec<f64> = match dtype {
        "int8" => bytes.iter().map(|&b| b as i8 as f64).collect(),
        "uint8" => bytes.iter().map(|&b| b as f64).collect(),
        _ => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
    };
    values.iter().enumerate().fold(0, |best, (i, v)| if *v > values[best] { i } else { best })
}

#[derive(Debug)]
pub enum Verdict {
    Pass(String),
    Fail(String),
    Skip(String),
}

/// Prints the conformance line and returns whether it failed.
pub fn report(case: &str, triple: &str, verdict: &Verdict) -> bool {
    let (word, why, failed) = match verdict {
        Verdict::Pass(why) => ("PASS", why, false),
        Verdict::Fail(why) => ("FAIL", why, true),
        Verdict::Skip(why) => ("SKIP", why, false),
    };
    let why = why.lines().next().unwrap_or_default();
    // Straight to stdout, past libtest's capture: the lines are the suite's report, passing or not.
    let _ = writeln!(std::io::stdout().lock(), "corpus: {case} [{triple}] {word} ({why})");
    failed
}

/// A Cargo command for building example crates in a target directory of their
/// own, so it never waits on the outer `cargo test`'s lock.
pub fn cargo(target_dir: &str) -> Command {
    let mut command = Command::new(env!("CARGO"));
    command.current_dir(repo_root()).env("CARGO_TARGET_DIR", repo_root().join("target").join(target_dir));
    command
}

/// `cargo run --release --quiet` of the fixture crate `tests/fixtures/<fixture>`, in `target/<target_dir>`.
pub fn run_fixture(target_dir: &str, fixture: &str) -> Command {
    let mut command = cargo(target_dir);
    command
        .args(["run", "--release", "--quiet", "--manifest-path"])
        .arg(repo_root().join("tests/fixtures").join(fixture).join("Cargo.toml"));
    command
}

/// The host's target triple, as rustc reports it.
pub fn host_triple() -> String {
    let output = Command::new("rustc").arg("-vV").output().expect("rustc runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: ").map(str::to_string))
        .expect("rustc -vV names the host")
}

/// stderr of a failed command, without Cargo's progress lines.
pub fn failure_text(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let interesting: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            !(trimmed.starts_with("Compiling")
                || trimmed.starts_with("Finished")
                || trimmed.starts_with("Running")
                || trimmed.starts_with("warning: build failed"))
        })
        .collect();
    interesting.join("\n")
}

/// A firmware build of `examples/cortex-m-runner`: the Rust target, the core
/// given as `-C target-cpu` (`None`: the triple's usual one), the QEMU board
/// (`None`: the target's usual one) and the Cargo target directory under `target/`.
pub struct Firmware<'a> {
    pub triple: &'a str,
    pub target_cpu: Option<&'a str>,
    pub board: Option<&'a str>,
    pub target_dir: &'a str,
    /// More of the build's environment (`MLF_MEMORY_X`, `MLF_LINK_SECTIONS`).
    pub env: &'a [(&'a str, &'a str)],
}

impl Firmware<'_> {
    /// Builds `case.archive` (a tar or a directory) into the firmware with
    /// `inputs` and runs it under QEMU; returns the bytes of each `output<i>:` line.
    pub fn run(&self, case: &Case, module: Option<&str>, inputs: &[PathBuf]) -> Result<Vec<Vec<u8>>, String> {
        self.run_measured(case, module, inputs).map(|run| run.outputs)
    }

    /// [`Firmware::run`], with the stack the run took and the module's bound.
    pub fn run_measured(&self, case: &Case, module: Option<&str>, inputs: &[PathBuf]) -> Result<FirmwareRun, String> {
        let list: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
        let mut command = cargo(self.target_dir);
        // Appended to the rustflags of .cargo/config.toml's `cfg` table for the
        // architecture: Cargo takes a target's rustflags from one table only, so
        // a `target.<triple>` table would be passed over (RUSTFLAGS would replace them).
        let arch = if self.triple.starts_with("riscv") { "riscv32" } else { "arm" };
        let cpu_flags = self.target_cpu.map(|cpu| {
            format!("target.'cfg(all(target_arch = \"{arch}\", target_os = \"none\"))'.rustflags=[\"-C\", \"target-cpu={cpu}\"]")
        });
        if let Some(flags) = &cpu_flags {
            command.args(["--config", flags]);
        }
        command
            .args(["run", "--release", "--quiet", "-p", "cortex-m-runner", "--target", self.triple])
            .env("MLF_ARCHIVE", &case.archive)
            .env("MLF_INPUTS", list.join(","))
            .env("MLF_MODULE", module.unwrap_or_default())
            .env("MLF_BOARD", self.board.unwrap_or_default())
            .env("MLF_MEMORY_X", "")
            .env("MLF_LINK_SECTIONS", "")
            .env("MLF_PROFILE", "")
            .env("MLF_STEPPED", "")
            .env("MLF_QEMU_ICOUNT", "")
            .envs(case.library_env().unwrap_or_default())
            .envs(self.env.iter().copied());
        let output = command.output().map_err(|e| format!("cargo: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            let why = match output.status.code() {
                Some(124) => "QEMU timed out".to_string(),
                // mlf-build's own message when it refused, else the last line.
                _ => {
                    let text = failure_text(&output);
                    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
                    let refusal = text.lines().map(str::trim).find(|line| line.starts_with("mlf-build:"));
                    refusal.or_else(|| lines.next_back()).unwrap_or_default().to_string()
                }
            };
            return Err(format!("firmware failed: {why} {}", stdout.lines().last().unwrap_or_default()));
        }
        let mut outputs = Vec::new();
        for (index, line) in stdout.lines().filter(|line| line.starts_with("output")).enumerate() {
            let hex = line.strip_prefix(&format!("output{index}: ")).ok_or_else(|| format!("unexpected line `{line}`"))?;
            outputs.push(decode_hex(hex).ok_or_else(|| format!("output{index} is not hex"))?);
        }
        let line = stdout.lines().find_map(|line| line.strip_prefix("stack: ")).ok_or("the firmware printed no `stack:` line")?;
        let (measured, bound) = line.split_once(" bound ").ok_or_else(|| format!("unexpected line `stack: {line}`"))?;
        let measured = measured.parse().map_err(|_| format!("unexpected line `stack: {line}`"))?;
        let bound = bound.parse().map_err(|_| bound.to_string());
        Ok(FirmwareRun { outputs, stack: Stack { measured, bound }, stdout: stdout.into_owned() })
    }
}

/// What one firmware run gave.
pub struct FirmwareRun {
    /// The bytes of each `output<i>:` line.
    pub outputs: Vec<Vec<u8>>,
    pub stack: Stack,
    /// Everything the firmware printed (`profile:` lines of a profiled build).
    pub stdout: String,
}

/// The stack a firmware run took (measured by painting) and the module's `STACK_BYTES`.
#[derive(Debug, Clone)]
pub struct Stack {
    pub measured: u64,
    /// The bound, or `unknown (<why>)`.
    pub bound: Result<u64, String>,
}

/// The bytes of a firmware's hex line (two digits a byte), or `None` for anything else.
pub fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let digits = hex.trim().as_bytes();
    if digits.len() % 2 != 0 {
        return None;
    }
    digits.chunks(2).map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()).collect()
}

/// What a host build and run of an archive gave: the outputs, and the build's stderr.
pub struct HostRun {
    pub outputs: Vec<Vec<u8>>,
    pub build_stderr: String,
}

/// One runner binary per target directory: builds and runs must not interleave.
static HOST_RUNNER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Builds `archive` into examples/host-runner in `target_dir`, with `env` in
/// the build's environment (`CMSIS_NN_PATH`, `MLF_LINK_SECTIONS`), and runs it on `inputs`.
pub fn run_on_host<V: AsRef<std::ffi::OsStr>>(
    target_dir: &str,
    archive: &Path,
    env: &[(&str, V)],
    inputs: &[PathBuf],
    outputs: usize,
) -> Result<HostRun, String> {
    let _guard = HOST_RUNNER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let build = cargo(target_dir)
        .args(["build", "--release", "-p", "host-runner"])
        .env("MLF_ARCHIVE", archive)
        .env_remove("MLF_LINK_SECTIONS")
        .envs(env.iter().map(|(name, value)| (name, value)))
        .output()
        .unwrap();
    let build_stderr = String::from_utf8_lossy(&build.stderr).into_owned();
    if !build.status.success() {
        return Err(failure_text(&build));
    }
    let out = archive.with_file_name("outputs");
    let binary = repo_root().join("target").join(target_dir).join("release/host-runner");
    let run = Command::new(binary).args(inputs).arg("--out").arg(&out).output().unwrap();
    if !run.status.success() {
        return Err(format!("host-runner failed: {}", String::from_utf8_lossy(&run.stderr)));
    }
    let outputs = (0..outputs).map(|i| std::fs::read(out.join(format!("output{i}.bin"))).unwrap()).collect();
    Ok(HostRun { outputs, build_stderr })
}

/// A line's place in the documentation, shown as `docs/src/firmware.md:12`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub page: String,
    pub line: usize,
}

impl std::fmt::Display for Place {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}:{}", self.page, self.line)
    }
}

/// The file of a documentation page: `README.md` (the front page) or a
/// chapter of the book (`firmware.md` is `docs/src/firmware.md`).
pub fn doc_path(page: &str) -> PathBuf {
    if page == "README.md" {
        repo_root().join(page)
    } else {
        repo_root().join("docs/src").join(page)
    }
}

/// A chapter of the book (`memory.md`), or README.md, as text.
pub fn book_chapter(page: &str) -> String {
    let path = doc_path(page);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A page's lines, each with its place.
pub fn doc_lines(page: &str) -> Vec<(Place, String)> {
    let shown = doc_path(page).strip_prefix(repo_root()).map_or_else(|_| page.to_string(), |path| path.display().to_string());
    book_chapter(page).lines().enumerate().map(|(index, line)| (Place { page: shown.clone(), line: index + 1 }, line.to_string())).collect()
}

/// The lines of the section of `page` headed `heading` (`## Footprint`), up
/// to the next heading of its level or above; `#` lines in code blocks are not headings.
pub fn doc_section(page: &str, heading: &str) -> Vec<(Place, String)> {
    let level = |line: &str| {
        let hashes = line.len() - line.trim_start_matches('#').len();
        (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
    };
    let wanted = level(heading).expect("a heading starts with #");
    let (mut in_code, mut inside, mut section) = (false, false, Vec::new());
    for (place, line) in doc_lines(page) {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        let heading_level = if in_code { None } else { level(&line) };
        if inside && heading_level.is_some_and(|l| l <= wanted) {
            break;
        }
        if line == heading {
            inside = true;
        } else if inside {
            section.push((place, line));
        }
    }
    assert!(inside, "{page} has no `{heading}` section");
    section
}

/// The rows of the first table after the line of `lines` containing `anchor`.
pub fn table_after(lines: &[(Place, String)], anchor: &str) -> Vec<(Place, String)> {
    let start = lines.iter().position(|(_, line)| line.contains(anchor)).unwrap_or(lines.len());
    lines[start..].iter().skip_while(|(_, line)| !line.starts_with('|')).take_while(|(_, line)| line.starts_with('|')).cloned().collect()
}

/// The integers of `text` in order, thousands separators read: `3,972 (code
/// 3,700 + constants 272)` gives 3972, 3700, 272; a `−` or `-` just before one
/// makes it negative. Digits inside a word (`v4`, `x86_64`) are not numbers.
pub fn numbers(text: &str) -> Vec<i64> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let starts_word = index == 0 || !(chars[index - 1].is_alphanumeric() || chars[index - 1] == '_');
        if !(chars[index].is_ascii_digit() && starts_word) {
            index += 1;
            continue;
        }
        let negative = index > 0 && matches!(chars[index - 1], '−' | '-');
        let mut value = 0i64;
        while index < chars.len() {
            match chars[index] {
                digit @ '0'..='9' => value = value * 10 + i64::from(digit.to_digit(10).unwrap_or_default()),
                ',' if chars.get(index + 1).is_some_and(char::is_ascii_digit) => {}
                _ => break,
            }
            index += 1;
        }
        found.push(if negative { -value } else { value });
    }
    found
}

/// `value` as the documentation writes it: thousands separated by commas, `−` for minus.
pub fn doc_number(value: i64) -> String {
    let digits = value.unsigned_abs().to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if value < 0 {
        format!("−{grouped}")
    } else {
        grouped
    }
}

/// Figures of the documentation (README.md and the book) compared with what
/// a command measured; every mismatch is collected, so one run names all the
/// lines to update.
#[derive(Default)]
pub struct DocFigures {
    wrong: Vec<String>,
}

impl DocFigures {
    /// The row of `table` whose first cell is `first_cell` must state
    /// `measured`, in order, as its numbers (the first cell's aside).
    pub fn row(&mut self, table: &[(Place, String)], first_cell: &str, measured: &[i64], command: &str) {
        let row = table.iter().find(|(_, line)| line.split('|').nth(1).is_some_and(|cell| cell.trim() == first_cell));
        let Some((number, line)) = row else {
            return self.wrong.push(format!("the documentation has no `| {first_cell} |` row where {command} measured {measured:?}"));
        };
        let stated = numbers(line.split('|').skip(2).collect::<Vec<_>>().join("|").as_str());
        if stated != measured {
            let measured: Vec<String> = measured.iter().map(|&value| doc_number(value)).collect();
            self.wrong.push(format!("{number}: `{line}`\n  states {stated:?}; {command} measured {}", measured.join(", ")));
        }
    }

    /// The number right after `anchor` on a line of `lines` must be `measured`.
    pub fn after(&mut self, lines: &[(Place, String)], anchor: &str, measured: i64, command: &str) {
        let found = lines.iter().find_map(|(number, line)| line.find(anchor).map(|at| (number, line, &line[at + anchor.len()..])));
        let Some((number, line, rest)) = found else {
            return self
                .wrong
                .push(format!("the documentation has no line with `{anchor}` where {command} measured {}", doc_number(measured)));
        };
        let rest = rest.trim_start();
        let stated = if rest.starts_with(|c: char| c.is_ascii_digit() || c == '−') { numbers(rest).first().copied() } else { None };
        if stated != Some(measured) {
            self.wrong.push(format!(
                "{number}: `{line}`\n  states {} after `{anchor}`; {command} measured {}",
                stated.map_or_else(|| "no number".to_string(), doc_number),
                doc_number(measured)
            ));
        }
    }

    /// `text` must be on a line of `lines` (a toolchain, a quoted message).
    pub fn quoted(&mut self, lines: &[(Place, String)], text: &str, why: &str) {
        if !lines.iter().any(|(_, line)| line.contains(text)) {
            self.wrong.push(format!("the documentation does not show {why}:\n  {text}"));
        }
    }

    /// Every documentation line that differs from what was measured, for a test that reports them with others.
    pub fn result(self) -> Result<(), String> {
        if self.wrong.is_empty() {
            Ok(())
        } else {
            Err(format!("the documentation states figures the commands do not print:\n{}", self.wrong.join("\n")))
        }
    }

    /// Fails naming every documentation line that differs from what was measured.
    pub fn check(self) {
        assert!(self.wrong.is_empty(), "the documentation states figures the commands do not print:\n{}", self.wrong.join("\n"));
    }
}

impl DocFigures {
    /// The row of `table` whose first cells are `first_cells` must state
    /// `measured`, in order, as the numbers of its other cells.
    pub fn row_of(&mut self, table: &[(Place, String)], first_cells: &[&str], measured: &[i64], command: &str) {
        let cells = |line: &str| line.split('|').skip(1).map(|cell| cell.trim().to_string()).collect::<Vec<_>>();
        let row = table
            .iter()
            .find(|(_, line)| cells(line).iter().zip(first_cells).filter(|(cell, first)| cell == *first).count() == first_cells.len());
        let Some((number, line)) = row else {
            return self.wrong.push(format!(
                "the documentation has no row starting `| {} |` where {command} measured {measured:?}",
                first_cells.join(" | ")
            ));
        };
        let stated = numbers(&cells(line)[first_cells.len()..].join("|"));
        if stated != measured {
            let measured: Vec<String> = measured.iter().map(|&value| doc_number(value)).collect();
            self.wrong.push(format!("{number}: `{line}`\n  states {stated:?}; {command} measured {}", measured.join(", ")));
        }
    }
}
