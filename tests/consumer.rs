//! Builds consumer crates that include generated modules in a `no_std`
//! library under `#![deny(warnings, missing_docs)]` (one under
//! `clippy -D warnings -W clippy::pedantic` too) and runs them.

mod common;

use std::path::Path;

/// Runs the fixture crate `tests/fixtures/<name>` with `env` set and returns its stdout; panics when it fails.
fn run_fixture(name: &str, env: &[(&str, &Path)]) -> String {
    fixture_cargo(name, name, &["run", "--release", "--quiet"], env)
}

/// `cargo <args>` on the fixture crate `tests/fixtures/<name>` in `target/<target_dir>`, with
/// `env` set; returns its stdout, panics with its output when it fails.
fn fixture_cargo(name: &str, target_dir: &str, args: &[&str], env: &[(&str, &Path)]) -> String {
    let manifest = common::repo_root().join("tests/fixtures").join(name).join("Cargo.toml");
    let mut command = common::cargo(target_dir);
    // Before any `--`, past which the arguments are the compiler's.
    command.arg(args[0]).arg("--manifest-path").arg(&manifest).args(&args[1..]).envs(env.iter().copied());
    let output = command.output().expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{name}: cargo {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

#[test]
fn demo_module_builds_no_std_warning_free_and_runs() {
    let stdout = run_fixture("typed-consumer", &[]);
    assert!(stdout.contains("output = [0.0, 8.0, 0.75]"), "{stdout}");
}

#[test]
fn a_second_build_reruns_no_build_script() {
    let manifest = common::repo_root().join("tests/fixtures/typed-consumer/Cargo.toml");
    let build = || {
        let output = common::cargo("typed-consumer-noop")
            .args(["build", "--release", "-v", "--manifest-path"])
            .arg(&manifest)
            .output()
            .expect("cargo runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    // A fresh build.rs makes the first build run the build script even in a warm target directory.
    let build_rs = common::repo_root().join("tests/fixtures/typed-consumer/build.rs");
    std::fs::File::options()
        .write(true)
        .open(&build_rs)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()))
        .expect("touch build.rs");
    let first = build();
    assert!(first.contains("build-script-build"), "the first build runs the build script:\n{first}");
    let second = build();
    let reruns: Vec<&str> = second.lines().filter(|line| line.contains("Running") && line.contains("build-script")).collect();
    assert!(reruns.is_empty(), "a no-op build reran build scripts: {reruns:?}");

    // A rerun with identical inputs (build.rs touched) after a fresh first
    // build compiles nothing: the compiled libraries keep their bytes' times.
    let clean = common::cargo("typed-consumer-noop")
        .args(["clean", "--release", "-p", "typed-consumer", "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo runs");
    assert!(clean.status.success(), "{}", String::from_utf8_lossy(&clean.stderr));
    build();
    let compiled = compiled_files(&common::repo_root().join("target/typed-consumer-noop/release/build"));
    assert!(compiled.len() >= 2, "the support and model libraries are built: {compiled:?}");
    std::fs::File::options()
        .write(true)
        .open(&build_rs)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()))
        .expect("touch build.rs");
    let rerun = build();
    assert!(rerun.contains("build-script-build"), "the build script reruns:\n{rerun}");
    assert_eq!(
        compiled_files(&common::repo_root().join("target/typed-consumer-noop/release/build")),
        compiled,
        "a rerun with identical inputs compiled again"
    );
}

/// Every object and static library below the build scripts' `OUT_DIR`s, with its modification time.
fn compiled_files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "o" || ext == "a") && path.to_string_lossy().contains("/out/mlf/") {
                let modified = entry.metadata().and_then(|m| m.modified()).expect("file time");
                found.push((path, modified));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn several_archives_in_one_crate_run_by_type_and_by_descriptor() {
    let Some(corpus) = common::corpus_dir() else { return };
    let stdout = run_fixture("multi-archive", &[("MLF_TEST_CORPUS", &corpus)]);
    assert!(
        stdout.contains("speech: `yes` -> class 2")
            && stdout.contains("generic: demo_copy and mlp")
            && stdout.contains("multi-archive: ok"),
        "{stdout}"
    );
}

/// One crate with a module of every kind (AOT C interface, graph, packed API,
/// legacy `tvm_model_t`, USMP pools, operator export): clippy's pedantic lints
/// as errors on a `#![no_std]` library under `#![deny(warnings, missing_docs)]`,
/// then a binary whose `main` returns `Box<dyn Error>` and runs each with `?`.
#[test]
fn every_kind_of_module_is_clippy_pedantic_clean_and_a_std_error() {
    let Some(corpus) = common::corpus_dir() else { return };
    let env = [("MLF_TEST_CORPUS", corpus.as_path())];
    // Shares multi-archive's target directory: the same dependencies, built once.
    let clippy = ["clippy", "--release", "--quiet", "--all-targets"];
    fixture_cargo("strict-consumer", "multi-archive", &[&clippy[..], &["--", "-D", "warnings", "-W", "clippy::pedantic"]].concat(), &env);
    let stdout = fixture_cargo("strict-consumer", "multi-archive", &["run", "--release", "--quiet"], &env);
    for line in [
        "tvm-0.18/mlp_f32-aot_c: ok",
        "tvm-0.18/mlp_f32-graph: ok",
        "tvm-0.18/mlp_f32-aot_packed: ok",
        "real-world/arduino-microspeech-aot-tvm_model_t-v5 `yes`: ok",
        "tvm-0.18/kws_int8-aot_c_pools: ok",
        "operator add: ok",
        "packed profiled: 5 operator calls timed",
        "graph profiled: 5 operator calls timed",
        "refused: got 0 input buffers, model `aot` takes 1",
    ] {
        assert!(stdout.lines().any(|l| l == line), "no line `{line}`:\n{stdout}");
    }
}
