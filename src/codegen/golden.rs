//! Golden files: the generated Rust and C glue of a few corpus archives,
//! checked in under `tests/golden/<case>/` and compared byte for byte, so a
//! change to code generation shows up as a reviewable diff.
//!
//! After an intended change, regenerate them and review the diff:
//!
//! ```text
//! MLF_BUILD_BLESS=1 cargo test --release --locked --lib golden
//! ```
//!
//! The Rust is generated without bindings (`pub mod ffi {}`), so the files do
//! not depend on libclang; a graph module's weights C is left out (it is the
//! `.params` bytes). The corpus lives outside the repository; without it the
//! test prints a SKIP line and passes.

use std::path::{Path, PathBuf};

use super::{c_files, module_index, rust::Provenance, rust_files, ArenaGroups, GeneratedFile};
use crate::ident::CIdent;
use crate::objects::stack::{self, StackBound, StackFrame};
use crate::plan::model::{ArenaGroup, Compiled};
use crate::plan::{read_and_plan, PlanOptions};

/// `(golden directory, corpus case, implements mlf_rt::Model, profiled, arena
/// group)`: one case per entry kind, the two ways a profiled run is timed, and
/// members of an arena group (workspace pools; a graph's storage).
const CASES: &[(&str, &str, bool, bool, Option<&str>)] = &[
    ("aot_c_usmp", "tvm-0.18/kws_int8-aot_c_usmp", false, false, None),
    ("aot_c_pools", "tvm-0.18/kws_int8-aot_c_pools", false, false, None),
    ("aot_packed", "tvm-0.18/mlp_f32-aot_packed", false, false, None),
    ("tvm_model_t", "real-world/arduino-microspeech-aot-tvm_model_t-v5", false, false, None),
    ("graph", "tvm-0.18/mlp_f32-graph", false, false, None),
    ("multi_module", "tvm-0.18/multi-kws_mlp-aot_c", true, false, None),
    ("operator", "tvm-0.18/operator-add_f32", false, false, None),
    ("aot_c_usmp_profiled", "tvm-0.18/kws_int8-aot_c_usmp", false, true, None),
    ("graph_profiled", "tvm-0.18/mlp_f32-graph", false, true, None),
    ("aot_c_pools_grouped", "tvm-0.18/kws_int8-aot_c_pools", false, false, Some("turns")),
    ("graph_grouped", "tvm-0.18/mlp_f32-graph", false, false, Some("turns")),
];

/// The Cargo package name the glue symbols of the golden files name.
const PACKAGE: &str = "golden";

fn generate(archive: &Path, mlf_rt: bool, profiled: bool, group: Option<&str>, stack: Option<&StackBound>) -> Vec<GeneratedFile> {
    let options = PlanOptions { profile: profiled, ..Default::default() };
    let mut planned = read_and_plan(archive, &options).unwrap_or_else(|e| panic!("{}: {e}", archive.display()));
    let mut groups = ArenaGroups::new();
    if let Some(group) = group {
        let name = CIdent::new("arena group", group).unwrap();
        for module in &mut planned.plan.modules {
            let (layout, _) = ArenaGroup::lay_out(name.clone(), module, None).expect("corpus sizes fit");
            groups.entry(group.to_string()).or_default().insert(module.name.to_string(), layout.bytes);
            module.arena_group = Some(layout);
        }
    }
    let plan = &planned.plan;
    let mut compiled = vec![Compiled::not_compiled(); plan.modules.len()];
    if let Some(stack) = stack {
        compiled[0].stack = stack.clone();
    }
    let digest_hex = crate::input::archive::digest_hex(&planned.tree.digest().expect("an unreleased tree has a digest"));
    let provenance = Provenance { archive_name: "model.tar", digest_hex: &digest_hex, package: PACKAGE };
    let no_bindings = vec![String::new(); plan.modules.len()];
    let mut files = c_files(plan, PACKAGE);
    files.extend(rust_files(plan, &compiled, &no_bindings, &provenance, mlf_rt).expect("rust files"));
    if plan.modules.len() > 1 || !groups.is_empty() {
        let modules = plan.modules.iter().map(|module| (module.name.to_string(), mlf_rt)).collect();
        files.push(module_index(&modules, &groups));
    }
    files
}

/// Where the first difference is, with both lines, for the failure message.
pub(crate) fn first_difference(expected: &str, actual: &str) -> String {
    let (mut expected_lines, mut actual_lines) = (expected.lines(), actual.lines());
    for number in 1.. {
        match (expected_lines.next(), actual_lines.next()) {
            (None, None) => break,
            (expected, actual) if expected != actual => {
                return format!("line {number}:\n  golden:    {}\n  generated: {}", expected.unwrap_or("<end>"), actual.unwrap_or("<end>"))
            }
            _ => {}
        }
    }
    "only line endings differ".to_string()
}

#[test]
fn generated_code_matches_golden_files() {
    let Some(corpus) = crate::test_support::corpus_dir() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("MLF_BUILD_BLESS").is_some_and(|value| value != "0");
    let mut failures = Vec::new();
    for &(name, case, mlf_rt, profiled, group) in CASES {
        let golden = root.join("tests/golden").join(name);
        // One case as a build bounds it (its thumbv7em-none-eabihf figures), the others as planning leaves them.
        let stack = (name == "aot_c_usmp").then(|| {
            let c_path: Vec<StackFrame> = [
                ("mlf_default_invoke", 24),
                ("mlf_support_call", 120),
                ("entry", 16),
                ("tvmgen_default_run", 0),
                ("tvmgen_default___tvm_main__", 64),
                ("tvmgen_default_fused_nn_conv2d_expand_dims_add_fixed_point_multiply_add_clip", 72),
                ("memset (C library allowance)", 32),
            ]
            .into_iter()
            .map(|(function, bytes)| StackFrame { function: function.to_string(), bytes })
            .collect();
            let c_bound = StackBound { bytes: Some(c_path.iter().map(|frame| frame.bytes).sum()), unknown: None, path: c_path };
            stack::with_rust_wrapper(c_bound, 2, stack::RustAbi::of("arm"))
        });
        let files = generate(&corpus.join(case).join("model.tar"), mlf_rt, profiled, group, stack.as_ref());
        let golden_path = |file: &GeneratedFile| golden.join(file.path.file_name().expect("a file name"));
        if bless {
            // Rewritten whole, so a file no longer generated does not linger.
            let _ = std::fs::remove_dir_all(&golden);
            std::fs::create_dir_all(&golden).expect("create the golden directory");
            for file in &files {
                std::fs::write(golden_path(file), &file.bytes).expect("write a golden file");
            }
            continue;
        }
        let mut expected_names: Vec<PathBuf> =
            std::fs::read_dir(&golden).map(|entries| entries.flatten().map(|entry| entry.path()).collect()).unwrap_or_default();
        expected_names.sort();
        let mut generated_names: Vec<PathBuf> = files.iter().map(golden_path).collect();
        generated_names.sort();
        if expected_names != generated_names {
            failures.push(format!("{name}: golden files {expected_names:?}, generated {generated_names:?}"));
            continue;
        }
        for file in &files {
            let path = golden_path(file);
            let expected = std::fs::read(&path).unwrap_or_default();
            if expected != file.bytes {
                let difference = first_difference(&String::from_utf8_lossy(&expected), &String::from_utf8_lossy(&file.bytes));
                failures.push(format!("{} differs at {difference}", path.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "generated code differs from tests/golden:\n{}\nif the change is intended, run `MLF_BUILD_BLESS=1 cargo test --release --locked --lib golden` and review the diff",
        failures.join("\n")
    );
}
