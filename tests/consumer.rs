//! Builds a consumer crate that includes the demo module in a `no_std`
//! library under `#![deny(warnings, missing_docs)]` and runs it.

mod common;

/// Runs the fixture crate `tests/fixtures/<name>` and returns its stdout; panics when it fails.
fn run_fixture(name: &str) -> String {
    let manifest = common::repo_root().join("tests/fixtures").join(name).join("Cargo.toml");
    let output = common::cargo(name)
        .args(["run", "--release", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{name} failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

#[test]
fn demo_module_builds_no_std_warning_free_and_runs() {
    let stdout = run_fixture("typed-consumer");
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
    std::fs::File::options().write(true).open(&build_rs).and_then(|f| f.set_modified(std::time::SystemTime::now())).expect("touch build.rs");
    let first = build();
    assert!(first.contains("build-script-build"), "the first build runs the build script:\n{first}");
    let second = build();
    let reruns: Vec<&str> = second.lines().filter(|line| line.contains("Running") && line.contains("build-script")).collect();
    assert!(reruns.is_empty(), "a no-op build reran build scripts: {reruns:?}");
}

#[test]
fn several_archives_in_one_crate_run_by_type_and_by_descriptor() {
    if common::corpus_root().is_none() {
        return;
    }
    let stdout = run_fixture("multi-archive");
    assert!(stdout.contains("speech: `yes` -> class 2") && stdout.contains("multi-archive: ok"), "{stdout}");
}
