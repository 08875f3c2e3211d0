//! What a build script meets besides a clean run: an edit to one source, a
//! same-bytes rerun, a SIGKILL mid-build, a full disk and a compiler that
//! fails silently. Each test builds `tests/fixtures/fault-consumer` (its build
//! script builds the archive `MLF_FAULTS_ARCHIVE` names) in one shared target
//! directory, one test at a time, through a compiler wrapper (`CC`) that logs
//! every process it starts.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// The tests share the fixture's `OUT_DIR`: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn manifest() -> PathBuf {
    common::repo_root().join("tests/fixtures/fault-consumer/Cargo.toml")
}

/// `cargo build` of the fixture for `archive`, with `CC` set to `cc`.
fn cargo_build(archive: &Path, cc: &Path) -> Command {
    let mut command = common::cargo("faults");
    command.args(["build", "--release", "--manifest-path"]).arg(manifest()).env("MLF_FAULTS_ARCHIVE", archive).env("CC", cc);
    command
}

fn run(mut command: Command) -> Output {
    command.output().expect("cargo runs")
}

fn succeeded(output: &Output) {
    assert!(output.status.success(), "the build failed:\n{}", String::from_utf8_lossy(&output.stderr));
}

/// The fixture's `OUT_DIR`.
fn out_dir() -> PathBuf {
    let build = common::repo_root().join("target/faults/release/build");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&build)
        .expect("a build ran")
        .flatten()
        .map(|entry| entry.path().join("out"))
        .filter(|dir| dir.parent().is_some_and(|p| p.to_string_lossy().contains("fault-consumer-")) && dir.join("mlf").is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "one OUT_DIR: {dirs:?}");
    dirs[0].clone()
}

/// Makes Cargo rerun the fixture's build script with the same inputs.
fn touch_build_script() {
    let build_rs = common::repo_root().join("tests/fixtures/fault-consumer/build.rs");
    std::fs::File::options()
        .write(true)
        .open(&build_rs)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()))
        .expect("touch build.rs");
}

/// A copy of the demo model to edit, and a wrapper compiler logging each run
/// (`<ppid> <args>`) to `<dir>/log` before running `gcc`; `hook` runs first.
struct Setup {
    dir: PathBuf,
    archive: PathBuf,
    cc: PathBuf,
    log: PathBuf,
}

impl Setup {
    fn new(name: &str, hook: &str) -> Setup {
        let dir = common::scratch(name);
        let archive = dir.join("demo-model");
        copy_dir(&common::repo_root().join("examples/demo-model"), &archive);
        let log = dir.join("log");
        let cc = dir.join("cc");
        let script = format!("#!/bin/sh\necho \"$PPID $*\" >> {log}\n{hook}\nexec gcc \"$@\"\n", log = log.display());
        std::fs::write(&cc, script).unwrap();
        make_executable(&cc);
        Setup { dir, archive, cc, log }
    }

    fn build(&self) -> Output {
        run(cargo_build(&self.archive, &self.cc))
    }

    /// The compiler runs logged since the last call, and clears the log.
    fn runs(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        text.lines().map(str::to_string).collect()
    }

    fn edit(&self, source: &str, comment: &str) {
        let path = self.archive.join("codegen/host/src").join(source);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&format!("/* {comment} */\n"));
        std::fs::write(&path, text).unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn compiles(runs: &[String]) -> Vec<&String> {
    runs.iter().filter(|run| run.split(' ').any(|arg| arg == "-c")).collect()
}

#[test]
fn an_edit_compiles_that_source_only_and_a_same_bytes_rerun_starts_no_compiler() {
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let setup = Setup::new("one-edit", "");
    succeeded(&setup.build());
    setup.runs();
    setup.edit("default_lib1.c", "one byte more");
    succeeded(&setup.build());
    let runs = setup.runs();
    let compiled = compiles(&runs);
    assert_eq!(compiled.len(), 1, "one edited source, one compile: {runs:#?}");
    assert!(compiled[0].contains("default_lib1.c"), "{compiled:?}");
    assert_eq!(runs.len(), 1, "no probe either: {runs:#?}");
    touch_build_script();
    let rerun = setup.build();
    succeeded(&rerun);
    assert!(String::from_utf8_lossy(&rerun.stderr).contains("fault-consumer"), "the build script reran");
    assert_eq!(setup.runs(), Vec::<String>::new(), "a same-bytes rerun starts no compiler process");
}

/// The paths whose bytes differ between two snapshots, or that only one has.
fn differing_files(a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    a.keys()
        .chain(b.keys())
        .filter(|path| a.get(*path) != b.get(*path))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Every file under `OUT_DIR/mlf` by path, but the records that hold times:
/// each object's (`.inputs`) and the stack bound's cache (`.stack.json`).
fn snapshot(out_dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![out_dir.join("mlf")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if !(path.extension().is_some_and(|ext| ext == "inputs") || path.to_string_lossy().ends_with(".stack.json")) {
                files.insert(path.strip_prefix(out_dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Processes whose command line names `marker`.
fn processes_naming(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| stat.contains(") Z "));
        if cmdline.contains(marker) && !zombie {
            found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

fn clean_fixture() {
    let mut clean = common::cargo("faults");
    clean.args(["clean", "--release", "-p", "fault-consumer", "--manifest-path"]).arg(manifest());
    succeeded(&run(clean));
}

#[test]
fn a_killed_build_leaves_no_compiler_running_and_the_next_build_is_whole() {
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // From compile number `stop-at` on the wrapper names its build script in
    // `kill-me` and, like a compiler driver with its cc1, waits on a child;
    // from number `kill-after` on it names it once gcc is done.
    let marker = format!("mlf-faults-compiler-{}", std::process::id());
    let hook = format!(
        "case \" $* \" in *\" -c \"*)\n  dir=$(dirname \"$0\")\n  n=$(grep -c -- ' -c ' \"$dir/log\")\n  \
         if [ -e \"$dir/stop-at\" ] && [ \"$n\" -ge \"$(cat \"$dir/stop-at\")\" ]; then echo $PPID > \"$dir/kill-me.tmp\"; mv \"$dir/kill-me.tmp\" \"$dir/kill-me\"; sh -c 'sleep 1000; :' {marker}; fi\n  \
         if [ -e \"$dir/kill-after\" ] && [ \"$n\" -ge \"$(cat \"$dir/kill-after\")\" ]; then gcc \"$@\"; status=$?; echo $PPID > \"$dir/kill-me.tmp\"; mv \"$dir/kill-me.tmp\" \"$dir/kill-me\"; exit $status; fi\n;;\nesac"
    );
    let setup = Setup::new("kill", &hook);
    clean_fixture();
    succeeded(&setup.build());
    let clean = snapshot(&out_dir());
    // The support library and the model's three sources: four compiles.
    let moments = [
        ("stop-at", "1", "as the first compile starts, after the probes"),
        ("stop-at", "3", "while compiling"),
        ("kill-after", "4", "after the last compile"),
    ];
    for (mode, number, when) in moments {
        clean_fixture();
        setup.runs();
        std::fs::write(setup.dir.join(mode), number).unwrap();
        let kill_me = setup.dir.join("kill-me");
        let mut cargo =
            cargo_build(&setup.archive, &setup.cc).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        while !kill_me.is_file() {
            assert!(cargo.try_wait().unwrap().is_none(), "the build ended before the kill {when}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let pid = std::fs::read_to_string(&kill_me).unwrap().trim().to_string();
        assert!(Command::new("kill").args(["-KILL", &pid]).status().unwrap().success(), "kill {pid}");
        assert!(!cargo.wait().unwrap().success(), "the killed build fails");
        std::fs::remove_file(&kill_me).unwrap();
        std::fs::remove_file(setup.dir.join(mode)).unwrap();
        // SIGKILL is asynchronous: the kernel takes a moment to end what it hits.
        let mut alive = processes_naming(&marker);
        for _ in 0..100 {
            if alive.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            alive = processes_naming(&marker);
        }
        assert!(alive.is_empty(), "killed {when}, compilers still run: {alive:?}");
        succeeded(&setup.build());
        let out_dir = out_dir();
        let differing = differing_files(&snapshot(&out_dir), &clean);
        assert!(differing.is_empty(), "killed {when}, the next build differs from a clean one in {differing:#?}");
        // And the next same-bytes rerun compiles nothing and hashes nothing: the tree's digest is recorded.
        let digest = out_dir.join("mlf/build/default/tree.digest");
        assert!(digest.is_file(), "killed {when}: no tree.digest");
        setup.runs();
        touch_build_script();
        succeeded(&setup.build());
        assert_eq!(setup.runs(), Vec::<String>::new(), "killed {when}: the rerun started compilers");
    }
    // A kill while the tree is written leaves no digest record: the next
    // cached build hashes once and records it again.
    let digest = out_dir().join("mlf/build/default/tree.digest");
    std::fs::remove_file(&digest).unwrap();
    touch_build_script();
    succeeded(&setup.build());
    assert!(digest.is_file(), "a cached build records a missing tree.digest");
}

#[test]
fn a_compiler_exiting_without_output_is_said_to_with_its_command_line() {
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let setup = Setup::new("silent-compiler", "");
    let output = run(cargo_build(&setup.archive, Path::new("/bin/false")));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the C compiler exited with status 1 and printed nothing, compiling `"), "{stderr}");
    assert!(stderr.contains(": /bin/false ") && stderr.contains(" -c "), "the command line is shown: {stderr}");
    assert!(stderr.contains("help: run that command to see what the compiler does"), "{stderr}");
}

/// Runs `command` with writes beyond `bytes` failing with EFBIG (`prlimit
/// --fsize`; SIGXFSZ ignored, as its default action would kill the writer).
fn with_file_size_limit(command: Command, bytes: u64) -> Output {
    let mut limited = Command::new("sh");
    limited.args(["-c", "trap '' XFSZ; exec prlimit --fsize=\"$0\" \"$@\"", &bytes.to_string()]);
    limited.arg(command.get_program()).args(command.get_args());
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            limited.env(name, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        limited.current_dir(dir);
    }
    run(limited)
}

/// Files a finished build must not leave: probes and temporaries.
fn leftovers(out_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![out_dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                pending.push(path);
            } else if name.contains("probe") || name.contains(".mlf-tmp-") || name.contains("detect_compiler_family") {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn a_full_disk_is_an_io_error_naming_the_file_and_the_next_build_recovers() {
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if Command::new("prlimit").arg("--version").output().is_err() {
        common::skip("prlimit (util-linux) is not installed");
        return;
    }
    let setup = Setup::new("full-disk", "");
    succeeded(&setup.build());
    let lib = out_dir().join("mlf/build/default/lib");
    let object_of = |stem: &str| {
        let entry = std::fs::read_dir(&lib).unwrap().flatten().find(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.starts_with(&format!("{stem}-")) && name.ends_with(".o") && !name.contains(".mlf-tmp-")
        });
        entry.expect("the object").path()
    };
    let library = lib.join("libmlf_default.a");
    let cases = [
        // Smaller than the object, larger than its source: the compiler or assembler fails.
        ("the compiler's output", std::fs::metadata(object_of("default_lib0")).unwrap().len() - 1),
        // Smaller than the library only: mlf-build's own write fails.
        ("the library", std::fs::metadata(&library).unwrap().len() - 1),
    ];
    for (index, (what, limit)) in cases.into_iter().enumerate() {
        setup.edit("default_lib0.c", &format!("full disk {index}"));
        let output = with_file_size_limit(cargo_build(&setup.archive, &setup.cc), limit);
        assert!(!output.status.success(), "{what}: the build passed under a {limit}-byte file size limit");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let named = match what {
            "the library" => stderr.contains(&format!("could not write `{}`: file too large", library.display())),
            _ => stderr.contains("the C compiler could not write a file compiling `") && stderr.contains("File too large"),
        };
        assert!(named, "{what}: the error names the write that failed:\n{stderr}");
        assert!(
            stderr.contains("help: raise the file size limit (`ulimit -f`) or free space, then build again")
                && stderr.contains("no `cargo clean` needed"),
            "{what}: the error says what to do:\n{stderr}"
        );
        assert_eq!(leftovers(&out_dir()), Vec::<PathBuf>::new(), "{what}: the failed build left files");
        succeeded(&setup.build());
        assert_eq!(leftovers(&out_dir()), Vec::<PathBuf>::new(), "{what}: the recovered build left files");
    }
}

#[test]
fn a_target_directory_copied_from_elsewhere_is_rebuilt_not_trusted() {
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let setup = Setup::new("moved-target", "");
    succeeded(&setup.build());
    // What a target directory copied from another checkout holds: object lists naming the old place.
    let elsewhere = setup.dir.join("old-checkout");
    let mut lists = Vec::new();
    let mut pending = vec![out_dir().join("mlf")];
    while let Some(dir) = pending.pop() {
        for path in std::fs::read_dir(&dir).unwrap().flatten().map(|entry| entry.path()) {
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "objects") {
                lists.push(path);
            }
        }
    }
    assert!(!lists.is_empty(), "the build lists its objects");
    for list in &lists {
        let text = std::fs::read_to_string(list).unwrap();
        let moved: Vec<String> = text
            .lines()
            .map(|line| if line.is_empty() { String::new() } else { elsewhere.join(line.trim_start_matches('/')).display().to_string() })
            .collect();
        std::fs::write(list, moved.join("\n")).unwrap();
    }
    touch_build_script();
    succeeded(&setup.build());
    for list in &lists {
        let text = std::fs::read_to_string(list).unwrap();
        assert!(!text.contains(&elsewhere.display().to_string()), "{} still names the old place:\n{text}", list.display());
    }
}

/// A failing build script prints the `mlf_build::Error` block alone: the
/// Builder holds its `cargo:rerun-if-*` and link lines until it succeeds, and
/// Cargo runs a failed build script again anyway, so the fix is picked up.
#[test]
fn a_failing_build_prints_its_error_without_cargo_lines_and_the_fix_is_picked_up() {
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let setup = Setup::new("error-alone", "");
    let source = setup.archive.join("codegen/host/src/default_lib1.c");
    let good = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, format!("{good}\nthis is not C;\n")).unwrap();
    let failed = setup.build();
    assert!(!failed.status.success(), "a source that is not C fails the build");
    let stderr = String::from_utf8_lossy(&failed.stderr);
    // The fixture's own line is all its stdout holds; none of mlf-build's.
    let fixture_line = "cargo:rerun-if-env-changed=MLF_FAULTS_ARCHIVE";
    let directives: Vec<&str> = stderr.lines().map(str::trim).filter(|line| line.contains("cargo:") && *line != fixture_line).collect();
    assert!(directives.is_empty(), "a failing build printed mlf-build's cargo: lines {directives:?}:\n{stderr}");
    // The script's stderr is the error block, from its first line to its help.
    let block: Vec<&str> = stderr.lines().skip_while(|line| line.trim() != "--- stderr").skip(1).map(str::trim).collect();
    assert!(
        block.first().is_some_and(|line| line.starts_with("Error: mlf-build: ")),
        "the error block does not start the script's stderr:\n{stderr}"
    );
    let help = block.iter().position(|line| line.starts_with("help: "));
    assert!(help.is_some_and(|at| block[..at].iter().all(|line| !line.is_empty())), "the error block is not one piece:\n{stderr}");

    // The fix alone reruns the script (Cargo reruns one that failed), and a
    // success prints the held lines, the archive's among them.
    std::fs::write(&source, good).unwrap();
    succeeded(&setup.build());
    // Cargo keeps what a build script printed in `output` beside its OUT_DIR.
    let archive_line = format!("cargo:rerun-if-changed={}", setup.archive.display());
    let printed = std::fs::read_dir(common::repo_root().join("target/faults/release/build"))
        .expect("a build ran")
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("output")).ok())
        .any(|output| output.lines().any(|line| line == archive_line));
    assert!(printed, "the successful build printed no `{archive_line}`");
}
