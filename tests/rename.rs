//! `Builder::rename_module` on every kind of archive: one consumer crate
//! (tests/fixtures/renamed-kinds) builds a module of each kind under a new
//! name, beside an AOT module that keeps TVM's name `default`, and runs them
//! all on the host against the corpus's expected outputs.

mod common;

use std::sync::OnceLock;

/// The fixture's stdout (built and run once for all the tests), or `None`
/// (after a SKIP line) without the corpus.
fn fixture_output() -> Option<&'static str> {
    static STDOUT: OnceLock<String> = OnceLock::new();
    let corpus = common::corpus_dir()?;
    let stdout = STDOUT.get_or_init(|| {
        // Shares the other consumer fixtures' target directory: the same dependencies, built once.
        let output = common::run_fixture("multi-archive", "renamed-kinds").env("MLF_TEST_CORPUS", &corpus).output().expect("cargo runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "renamed-kinds failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        stdout
    });
    Some(stdout)
}

/// The fixture printed each of `lines`: those modules ran renamed and gave the expected outputs.
fn ran(lines: &[&str]) {
    let Some(stdout) = fixture_output() else { return };
    for line in lines {
        assert!(stdout.lines().any(|l| l == *line), "no line `{line}`:\n{stdout}");
    }
}

#[test]
fn a_graph_module_renamed_runs_beside_an_aot_module_keeping_its_name() {
    ran(&["graph: ok", "aot named default: ok"]);
}

#[test]
fn a_graph_module_of_mlf_v5_renamed_runs() {
    ran(&["graph v5 `no`: ok", "graph v5 `yes`: ok"]);
}

#[test]
fn a_packed_api_module_renamed_runs() {
    ran(&["aot_packed: ok"]);
}

#[test]
fn a_tvm_model_t_module_renamed_runs() {
    ran(&["tvm_model_t `no`: ok", "tvm_model_t `yes`: ok"]);
}

#[test]
fn both_modules_of_a_multi_module_archive_renamed_run() {
    ran(&["multi-module kws: ok", "multi-module mlp: ok"]);
}

#[test]
fn an_operator_export_renamed_runs() {
    ran(&["operator: ok"]);
}
