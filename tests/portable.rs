//! The same archive built from two checkouts at different paths, each with its
//! own target directory: the generated files and static libraries are the
//! same bytes, none names where the checkout is; under sccache with a Redis
//! cache the second checkout's C compiles are all cache hits; and under a
//! compiler wrapper a firmware's stack bound is the one without.

mod common;

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use serde_json::Value;

/// The corpus case the checkouts build: small, AOT, one input and one output.
const CASE: &str = "mlp_f32-aot_c";

/// Files under `OUT_DIR/mlf` that are the build's own state, naming the
/// paths it read (the book's crates.md, "Compiler caching with sccache"): what each
/// object was compiled from, the object lists, the stack bounds' cache, the
/// stamps and digests, the module registry and the toolchain's answers.
fn is_build_state(relative: &Path) -> bool {
    let name = relative.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    let first = relative.components().next().and_then(|c| c.as_os_str().to_str()).unwrap_or_default();
    ["manifests", "toolchain"].contains(&first)
        || ["stamp", "tree.digest"].contains(&name)
        || [".inputs", ".objects", ".stack.json"].iter().any(|end| name.ends_with(end))
}

fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(output.status.success(), "{command:?} failed:\n{}", common::failure_text(&output));
    output
}

/// A consumer crate at `dir` (README's build.rs, a main running the model
/// once) with the archive as `model.tar` beside its manifest.
fn checkout(dir: &Path, archive: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("src")).expect("checkout dir");
    let manifest = format!(
        "[package]\nname = \"portable-consumer\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[build-dependencies]\nmlf-build = {{ path = {:?} }}\n",
        common::repo_root().display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("write Cargo.toml");
    let build_rs = "fn main() -> Result<(), mlf_build::Error> {\n    mlf_build::Builder::new(\"model.tar\").build()?;\n    Ok(())\n}\n";
    std::fs::write(dir.join("build.rs"), build_rs).expect("write build.rs");
    let main_rs = "mod model {\n    include!(concat!(env!(\"OUT_DIR\"), \"/mlf/default.rs\"));\n}\n\nfn main() {\n    let inputs = model::Inputs::zeroed();\n    let mut outputs = model::Outputs::zeroed();\n    model::run(&inputs, &mut outputs).expect(\"the model runs\");\n    println!(\"{:?}\", outputs.bytes(0));\n}\n";
    std::fs::write(dir.join("src/main.rs"), main_rs).expect("write main.rs");
    std::fs::copy(common::repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
    std::fs::copy(archive, dir.join("model.tar")).expect("copy the archive");
    dir.to_path_buf()
}

/// Builds the checkout in its own `target` with `vars`, runs it; returns its
/// `OUT_DIR` and what it printed.
fn build(checkout: &Path, vars: &[(&str, &str)]) -> (PathBuf, String) {
    let target = checkout.join("target");
    run(Command::new(env!("CARGO")).current_dir(checkout).arg("build").env("CARGO_TARGET_DIR", &target).envs(vars.iter().copied()));
    let printed = run(&mut Command::new(target.join("debug/portable-consumer")));
    let build_dirs = std::fs::read_dir(target.join("debug/build")).expect("Cargo's build directories");
    let out_dir = build_dirs
        .map(|entry| entry.expect("a build directory").path().join("out"))
        .find(|out| out.join("mlf/default.rs").is_file())
        .expect("an OUT_DIR holding mlf/default.rs");
    (out_dir, String::from_utf8_lossy(&printed.stdout).into_owned())
}

/// Every file under `OUT_DIR/mlf` that is an output (not [`is_build_state`]), by path relative to it.
fn outputs(out_dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let root = out_dir.join("mlf");
    let mut files = BTreeMap::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a directory") {
            let path = entry.expect("a directory entry").path();
            let relative = path.strip_prefix(&root).expect("under mlf").to_path_buf();
            if path.is_dir() {
                pending.push(path);
            } else if !is_build_state(&relative) {
                files.insert(relative, std::fs::read(&path).expect("read an output"));
            }
        }
    }
    files
}

/// Where the compiles of a build ran.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compiler {
    /// Run by mlf-build: nothing names a checkout.
    Direct,
    /// Run by sccache, which drops `PWD` from the compiler's environment:
    /// the debug information's compilation directory (`DW_AT_comp_dir`) is
    /// the absolute directory the first checkout compiled in, and the
    /// second's objects, served from the cache, are the first's.
    Sccache,
}

/// The two builds' outputs are the same files with the same bytes, and no
/// output holds the path of either checkout (under sccache: but the objects
/// the first's compilation directory).
fn assert_same_outputs(first: (&Path, &Path), second: (&Path, &Path), compiler: Compiler) {
    let (a, b) = (outputs(first.1), outputs(second.1));
    let names = |files: &BTreeMap<PathBuf, Vec<u8>>| files.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "the two checkouts wrote different files");
    for wanted in ["default.rs", "build/default/lib/libmlf_default.a", "support/libmlf_support.a", "build/default/gen/default_bindings.rs"]
    {
        assert!(a.contains_key(Path::new(wanted)), "no {wanted} among {:?}", names(&a));
    }
    let different: Vec<&PathBuf> = a.iter().filter(|(path, bytes)| b.get(*path) != Some(*bytes)).map(|(path, _)| path).collect();
    assert!(different.is_empty(), "from {} and {}, these differ: {different:?}", first.0.display(), second.0.display());
    let is_object = |path: &Path| path.extension().is_some_and(|ext| ext == "o" || ext == "a");
    for (checkout, files) in [(first.0, &a), (second.0, &b)] {
        let needle = checkout.to_str().expect("a UTF-8 scratch path").as_bytes();
        let naming: Vec<&PathBuf> = files
            .iter()
            .filter(|(path, bytes)| {
                bytes.windows(needle.len()).any(|w| w == needle)
                    && !(compiler == Compiler::Sccache && checkout == first.0 && is_object(path))
            })
            .map(|(path, _)| path)
            .collect();
        assert!(naming.is_empty(), "these outputs name the checkout {}: {naming:?}", checkout.display());
    }
}

/// Two checkouts of different path lengths, so no path can stand in for the other.
fn two_checkouts(name: &str, archive: &Path) -> (PathBuf, PathBuf) {
    let work = common::scratch(name);
    (checkout(&work.join("one"), archive), checkout(&work.join("second/checkout/elsewhere"), archive))
}

#[test]
fn two_checkouts_write_the_same_generated_files_and_libraries() {
    let Some(case) = common::corpus_case(CASE) else { return };
    let (one, two) = two_checkouts("checkouts", &case.join("model.tar"));
    let (out_one, printed_one) = build(&one, &[]);
    let (out_two, printed_two) = build(&two, &[]);
    assert_eq!(printed_one, printed_two, "the two builds' programs printed different outputs");
    assert_same_outputs((&one, &out_one), (&two, &out_two), Compiler::Direct);
}

fn available(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).output().is_ok_and(|output| output.status.success())
}

/// The programs of `needed` (each with an argument it answers) that do not
/// run, if any: in CI, where `.ci/run` installs them all, that fails the test.
fn missing_programs(needed: &[(&str, &str)]) -> Option<Vec<String>> {
    let missing: Vec<String> =
        needed.iter().filter(|(program, arg)| !available(program, arg)).map(|(program, _)| program.to_string()).collect();
    assert!(missing.is_empty() || std::env::var_os("CI").is_none(), "{missing:?} not installed (.ci/run installs them)");
    Some(missing).filter(|missing| !missing.is_empty())
}

/// A Redis server: the one on 127.0.0.1:6379 (`.ci/run` starts it), else
/// one of this test's own on a port of its own, stopped when dropped.
struct Redis {
    url: String,
    own: Option<Child>,
}

impl Redis {
    fn start(port: u16) -> Redis {
        if TcpStream::connect(("127.0.0.1", 6379)).is_ok() {
            return Redis { url: "redis://127.0.0.1:6379".to_string(), own: None };
        }
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server starts");
        // Listening once it accepts a connection; redis-server exits at once if it cannot.
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            std::thread::yield_now();
        }
        Redis { url: format!("redis://127.0.0.1:{port}"), own: Some(child) }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(child) = &mut self.own {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An sccache server of this test's own: its port and directory (and Redis, when named).
struct Sccache {
    vars: Vec<(&'static str, String)>,
}

/// An sccache server started, stopped when dropped.
struct Running(Sccache);

impl std::ops::Deref for Running {
    type Target = Sccache;
    fn deref(&self) -> &Sccache {
        &self.0
    }
}

impl Sccache {
    fn command(&self) -> Command {
        let mut command = Command::new("sccache");
        command.envs(self.vars.iter().map(|(name, value)| (name, value)));
        command
    }

    fn stats(&self) -> Value {
        let output = run(self.command().args(["--show-stats", "--stats-format", "json"]));
        serde_json::from_slice(&output.stdout).expect("sccache prints JSON stats")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.command().arg("--stop-server").output();
    }
}

/// The variable naming sccache's Redis URL: `SCCACHE_REDIS` before 0.8, `SCCACHE_REDIS_ENDPOINT` since.
fn redis_variable() -> &'static str {
    let output = run(Command::new("sccache").arg("--version"));
    let version = String::from_utf8_lossy(&output.stdout);
    let numbers: Vec<u64> =
        version.split_whitespace().nth(1).unwrap_or_default().split(['.', '-']).take(2).filter_map(|n| n.parse().ok()).collect();
    if numbers < vec![0, 8] {
        "SCCACHE_REDIS"
    } else {
        "SCCACHE_REDIS_ENDPOINT"
    }
}

fn count(stats: &Value, counter: &str, language: &str) -> u64 {
    stats["stats"][counter]["counts"][language].as_u64().unwrap_or(0)
}

#[test]
fn sccache_over_redis_serves_every_c_compile_of_a_second_checkout() {
    let Some(case) = common::corpus_case(CASE) else { return };
    if let Some(missing) = missing_programs(&[("sccache", "--version"), ("redis-server", "--version")]) {
        common::skip(&format!("{missing:?} not installed (apt-get install --no-install-recommends sccache redis-server)"));
        return;
    }
    let (one, two) = two_checkouts("sccache-redis", &case.join("model.tar"));
    let port = 20000 + (std::process::id() % 20000) as u16;
    let redis = Redis::start(port + 1);
    let sccache = Sccache {
        vars: vec![
            ("SCCACHE_SERVER_PORT", port.to_string()),
            ("SCCACHE_DIR", one.parent().expect("scratch").join("sccache").display().to_string()),
            (redis_variable(), redis.url.clone()),
            ("SCCACHE_IDLE_TIMEOUT", "0".to_string()),
        ],
    };
    let started = sccache.command().arg("--start-server").output().expect("sccache runs");
    // Stopped when dropped, the test failing or not.
    let sccache = Running(sccache);
    let said = String::from_utf8_lossy(&started.stderr);
    if said.contains("cache type is not enabled") {
        // Debian's sccache 0.4 is built without Redis.
        assert!(std::env::var_os("CI").is_none(), "sccache has no Redis support (.ci/run installs one that has)");
        common::skip("the installed sccache has no Redis support (`cargo install sccache --locked` has)");
        return;
    }
    assert!(started.status.success(), "sccache --start-server failed: {said}");
    let backend = sccache.stats()["cache_location"].as_str().unwrap_or_default().to_string();
    assert!(backend.to_lowercase().contains("redis"), "sccache does not store into Redis: {backend}");
    let mut vars: Vec<(&str, &str)> = sccache.vars.iter().map(|(name, value)| (*name, value.as_str())).collect();
    // Incremental compilation is not cacheable.
    vars.extend([("RUSTC_WRAPPER", "sccache"), ("CARGO_INCREMENTAL", "0")]);

    let (out_one, printed_one) = build(&one, &vars);
    run(sccache.command().arg("--zero-stats"));
    let (out_two, printed_two) = build(&two, &vars);
    let stats = sccache.stats();
    let (hits, misses) = (count(&stats, "cache_hits", "C/C++"), count(&stats, "cache_misses", "C/C++"));
    assert!(hits > 0 && misses == 0, "the second checkout compiled C anew: {stats:#}");
    assert_eq!(printed_one, printed_two);
    assert_same_outputs((&one, &out_one), (&two, &out_two), Compiler::Sccache);
    // Under the wrapper no compile writes a `.su` file; the host's frames are not read from x86-64 code.
    for out_dir in [&out_one, &out_two] {
        let report: Value = serde_json::from_slice(&std::fs::read(out_dir.join("mlf/default.json")).expect("the module's report"))
            .expect("the report is JSON");
        let why = report["stack_unknown"].as_str().unwrap_or_default();
        assert!(report["stack_bytes"].is_null() && why.contains("without -fstack-usage"), "{report:#}");
    }
    drop(sccache);
    drop(redis);
}

/// The stack bound of [`CASE`] built for `thumbv7em-none-eabihf` into `out_dir` through the Builder.
fn firmware_bound(out_dir: &Path) -> mlf_build::StackBound {
    let case = common::corpus_case(CASE).expect("the corpus");
    let built = mlf_build::Builder::new(case.join("model.tar"))
        .out_dir(out_dir)
        .target(FIRMWARE)
        .host(common::host_triple())
        .cargo_metadata(false)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    built.modules[0].report.stack.clone()
}

/// Every `.su` file under `dir`.
fn stack_usage_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for path in std::fs::read_dir(&dir).expect("read a directory").map(|entry| entry.expect("an entry").path()) {
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "su") {
                found.push(path);
            }
        }
    }
    found
}

/// The firmware target the wrapper test builds for.
const FIRMWARE: &str = "thumbv7em-none-eabihf";

/// Names the bound a build without the wrapper gives, for the child process.
const BOUND_WITHOUT_WRAPPER: &str = "MLF_BUILD_TEST_BOUND_WITHOUT_WRAPPER";

/// Names the output directory of that build, for the child process.
const OUT_DIR_WITHOUT_WRAPPER: &str = "MLF_BUILD_TEST_OUT_DIR_WITHOUT_WRAPPER";

/// Under a compiler wrapper (`CC="sccache arm-none-eabi-gcc"`, a local cache)
/// the C compiles get no `-fstack-usage`, which sccache refuses or whose
/// file it drops on a hit: the frames are read from the Thumb code instead,
/// and the bound is the one a build without the wrapper gives, both when
/// sccache compiles and when it serves every compile from its cache; built
/// over the build without it, no `.su` file of that one is left.
#[test]
fn a_firmware_stack_bound_under_a_compiler_wrapper_is_the_one_without() {
    let Some(_) = common::corpus_case(CASE) else { return };
    if let Some(missing) = missing_programs(&[("sccache", "--version"), ("arm-none-eabi-gcc", "--version")]) {
        common::skip(&format!("{missing:?} not installed"));
        return;
    }
    let work = common::scratch("wrapper-firmware");
    let expected = match std::env::var(BOUND_WITHOUT_WRAPPER) {
        Ok(bound) => bound,
        Err(_) => {
            let without = firmware_bound(&work.join("without"));
            assert!(without.bytes.is_some(), "{without:?}");
            assert!(!stack_usage_files(&work.join("without")).is_empty(), "no .su file without the wrapper");
            format!("{without:?}")
        }
    };
    // The child takes the parent's server port and directory, which its compiles inherit.
    let inherited =
        |name: &str, own: String| if std::env::var_os(common::CHILD).is_some() { std::env::var(name).unwrap_or(own) } else { own };
    let port = inherited("SCCACHE_SERVER_PORT", (21000 + std::process::id() % 20000).to_string());
    let dir = inherited("SCCACHE_DIR", work.join("sccache").display().to_string());
    let sccache = Sccache { vars: vec![("SCCACHE_SERVER_PORT", port), ("SCCACHE_DIR", dir)] };
    let mut vars: Vec<(&str, &str)> = sccache.vars.iter().map(|(name, value)| (*name, value.as_str())).collect();
    let without = work.join("without").display().to_string();
    vars.extend([
        ("CC_thumbv7em_none_eabihf", "sccache arm-none-eabi-gcc"),
        (BOUND_WITHOUT_WRAPPER, expected.as_str()),
        (OUT_DIR_WITHOUT_WRAPPER, without.as_str()),
    ]);
    if !common::in_child_with(&vars) {
        return;
    }
    run(sccache.command().arg("--start-server"));
    let sccache = Running(sccache);
    let first = firmware_bound(&work.join("compiled"));
    run(sccache.command().arg("--zero-stats"));
    let second = firmware_bound(&work.join("served"));
    let stats = sccache.stats();
    let (hits, misses) = (count(&stats, "cache_hits", "C/C++"), count(&stats, "cache_misses", "C/C++"));
    assert!(hits > 0 && misses == 0, "the second build compiled C anew: {stats:#}");
    let over = PathBuf::from(std::env::var(OUT_DIR_WITHOUT_WRAPPER).expect("set by the parent"));
    let third = firmware_bound(&over);
    for (bound, dir) in [(first, work.join("compiled")), (second, work.join("served")), (third, over)] {
        assert_eq!(format!("{bound:?}"), expected, "{}", dir.display());
        assert!(stack_usage_files(&dir).is_empty(), "{}: a .su file under the wrapper", dir.display());
    }
}
