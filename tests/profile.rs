//! `Builder::profile` (issue 21): the host runner's per-operator lines for
//! two AOT archives (one calling CMSIS-NN) and a graph archive, a refusal as the Builder reports it, and
//! profiling off leaving the model's library byte for byte as without it.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use mlf_build::{Builder, ErrorKind};

/// The host runner's own target directory: builds with MLF_PROFILE=1 do not rebuild corpus_host's.
const TARGET_DIR: &str = "profile-host";

/// `(case, operator calls a run makes)`: an AOT archive timed through
/// `-finstrument-functions`, a graph archive timed by the glue, and an AOT
/// archive whose operators call CMSIS-NN (compiled without the flag: its time is theirs).
const CASES: &[(&str, usize)] =
    &[("tvm-0.18/kws_int8-aot_c_usmp", 11), ("tvm-0.18/cnn_f32-graph", 6), ("real-world/etiss-vww-muriscvnn-rvv-tvm017", 30)];

/// `profile: <name> <ticks>` lines of the runner's stdout, in order.
fn profile_lines(stdout: &str) -> Vec<(String, u64)> {
    stdout
        .lines()
        .filter_map(|line| {
            let (name, ticks) = line.strip_prefix("profile: ")?.rsplit_once(' ')?;
            Some((name.to_string(), ticks.parse().unwrap_or_else(|_| panic!("not a tick count: {line}"))))
        })
        .collect()
}

#[test]
fn the_host_runner_prints_every_operator_call_glue_and_total() {
    let Some(corpus) = common::corpus_dir() else { return };
    for &(name, calls) in CASES {
        let case = common::case_at(&corpus.join(name));
        let libraries = match case.library_env() {
            Ok(libraries) => libraries,
            Err(common::Verdict::Skip(why)) => {
                common::skip(&format!("{name}: {why}"));
                continue;
            }
            Err(common::Verdict::Fail(why) | common::Verdict::Pass(why)) => panic!("{name}: {why}"),
        };
        let build = common::cargo(TARGET_DIR)
            .args(["build", "--release", "--quiet", "-p", "host-runner"])
            .env("MLF_ARCHIVE", &case.archive)
            .env("MLF_PROFILE", "1")
            .env_remove("MLF_LINK_SECTIONS")
            .envs(libraries)
            .output()
            .expect("cargo runs");
        assert!(build.status.success(), "{name}: {}", common::failure_text(&build));
        let vector = &case.modules[0].vectors[0];
        let out = common::scratch("profile-outputs");
        let binary = common::repo_root().join("target").join(TARGET_DIR).join("release/host-runner");
        let run = std::process::Command::new(&binary).args(&vector.inputs).arg("--profile").arg("--out").arg(&out).output().unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{name}: {}\n{stdout}", String::from_utf8_lossy(&run.stderr));
        // The plain run's outputs are TVM's, and the runner checked the profiled run gives the same.
        let outputs: Vec<Vec<u8>> =
            (0..vector.expected.len()).map(|i| std::fs::read(out.join(format!("output{i}.bin"))).unwrap()).collect();
        common::check_vector(&case, 0, vector, &outputs).unwrap_or_else(|why| panic!("{name}: {why}"));

        let lines = profile_lines(&stdout);
        assert_eq!(lines.len(), calls + 2, "{name}: one line per operator call, then glue and total:\n{stdout}");
        let (operators, rest) = lines.split_at(calls);
        assert_eq!(rest[0].0, "glue", "{name}:\n{stdout}");
        assert_eq!(rest[1].0, "total", "{name}:\n{stdout}");
        for (operator, ticks) in operators {
            assert!(operator.starts_with("tvmgen_default_"), "{name}: `{operator}` is not one of the archive's operators");
            assert!(*ticks > 0, "{name}: call of `{operator}` not timed:\n{stdout}");
        }
        let timed: u64 = operators.iter().map(|(_, ticks)| ticks).sum();
        let (glue, total) = (rest[0].1, rest[1].1);
        assert_eq!(timed + glue, total, "{name}: the operators and the glue add up to the total:\n{stdout}");
        // Operators are the work; outside them are only the calls and the argument setup.
        assert!(timed * 2 > total, "{name}: the operators take {timed} of {total} ns, not most of the run:\n{stdout}");
    }
}

/// Builds `archive` for the host into `out_dir`, as a build script would but printing nothing.
fn build_in(out_dir: &Path, builder: Builder) -> mlf_build::Result<mlf_build::Output> {
    builder.out_dir(out_dir).target(common::host_triple()).host(common::host_triple()).cargo_metadata(false).build()
}

/// The model library's objects by source name (without the hash of the
/// source's path, which tells the output directories apart), with their bytes.
fn objects(out_dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let lib = out_dir.join("mlf/build/default/lib");
    std::fs::read_dir(&lib)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "o"))
        .map(|path| {
            let stem = path.file_stem().unwrap().to_string_lossy();
            let source = stem.rsplit_once('-').map_or(stem.to_string(), |(source, _)| source.to_string());
            (source, std::fs::read(&path).unwrap())
        })
        .collect()
}

/// The same objects, byte for byte, as a build that never heard of
/// profiling: no hook, no instrumented call, no `profile` module. (The
/// generated C and Rust with profiling off are also held by the golden files,
/// and the footprint figures in the book by tests/readme.rs.)
#[test]
fn profiling_off_leaves_the_objects_and_rust_unchanged() {
    let Some(corpus) = common::corpus_dir() else { return };
    let archive = corpus.join("tvm-0.18/kws_int8-aot_c_usmp/model.tar");
    let contains = |bytes: &[u8], text: &str| bytes.windows(text.len()).any(|window| window == text.as_bytes());
    let (default, off, on) = (common::scratch("profile-default"), common::scratch("profile-off"), common::scratch("profile-on"));
    let built_default = build_in(&default, Builder::new(&archive)).unwrap();
    let built_off = build_in(&off, Builder::new(&archive).profile(false)).unwrap();
    let built_on = build_in(&on, Builder::new(&archive).profile(true)).unwrap();
    let (default_objects, off_objects, on_objects) = (objects(&default), objects(&off), objects(&on));
    assert_eq!(default_objects.keys().collect::<Vec<_>>(), ["default_lib0", "default_lib1", "mlf_default_glue"]);
    for (source, bytes) in &off_objects {
        assert!(default_objects[source] == *bytes, "profile(false) changed the bytes of {source}.o");
        assert!(!contains(bytes, "__cyg_profile_func_enter"), "{source}.o calls the profiling hooks without profiling");
    }
    // The operators' file calls the hooks, which the glue defines.
    assert!(contains(&on_objects["default_lib1"], "__cyg_profile_func_enter"), "profile(true) did not instrument the archive's C");
    assert!(contains(&on_objects["mlf_default_glue"], "mlf_default_invoke_profiled"));
    let rust = |output: &mlf_build::Output| std::fs::read_to_string(&output.modules[0].rust_file).unwrap();
    assert_eq!(rust(&built_default), rust(&built_off));
    assert!(!rust(&built_off).contains("pub mod profile"));
    assert!(rust(&built_on).contains("pub mod profile"));
    // The hooks only compare the addresses they are given: the stack is still bounded, hooks included.
    let (off_stack, on_stack) = (built_off.modules[0].report.stack.bytes, built_on.modules[0].report.stack.bytes);
    let (off_stack, on_stack) = (off_stack.expect("a bound without profiling"), on_stack.expect("a bound with profiling"));
    assert!(on_stack >= off_stack, "profiled {on_stack} bytes, plain {off_stack}");
}

/// The Builder's refusal names the archive, why and what to do.
#[test]
fn an_archive_of_several_modules_is_refused() {
    let Some(corpus) = common::corpus_dir() else { return };
    let archive = corpus.join("tvm-0.18/multi-kws_mlp-aot_c/model.tar");
    let error = build_in(&common::scratch("profile-multi"), Builder::new(&archive).profile(true)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    let text = error.to_string();
    assert!(text.contains("multi-kws_mlp-aot_c") && text.contains("2 modules") && text.contains("profile one module at a time"), "{text}");
}

/// On Cortex-M too the instrumented code and the hooks compile and the stack stays bounded.
#[test]
fn a_profiled_aot_module_for_cortex_m_keeps_its_stack_bound() {
    let Some(corpus) = common::corpus_dir() else { return };
    if std::process::Command::new("arm-none-eabi-gcc").arg("--version").output().is_err() {
        common::skip("arm-none-eabi-gcc is absent");
        return;
    }
    let archive = corpus.join("tvm-0.18/kws_int8-aot_c_usmp/model.tar");
    let build = |name: &str, profile: bool| {
        let out = common::scratch(name);
        let builder = Builder::new(&archive).profile(profile).target("thumbv7em-none-eabihf").host(common::host_triple());
        builder.out_dir(&out).cargo_metadata(false).build().unwrap()
    };
    let (off, on) = (build("profile-m-off", false), build("profile-m-on", true));
    let (off, on) = (off.modules[0].report.stack.clone(), on.modules[0].report.stack.clone());
    let (off_bytes, on_bytes) = (off.bytes.expect("a bound without profiling"), on.bytes.unwrap_or_else(|| panic!("no bound: {on:?}")));
    assert!(on_bytes >= off_bytes, "profiled {on_bytes} bytes, plain {off_bytes}");
}
