//! Archives as they are found in the wild, constructed here from corpus
//! archives (a definition deleted, a macro corrupted, metadata.json removed...):
//! each must run with the outputs TVM computed, or be refused naming the cause.

mod common;

use common::HostRun;

use std::path::{Path, PathBuf};

use mlf_build::{Builder, ErrorKind};

/// Shared with tests/corpus_host.rs: one build of the runner's dependencies.
const TARGET_DIR: &str = "corpus-host";
/// The QEMU firmware shares tests/corpus_qemu.rs's target directory.
const QEMU_TARGET_DIR: &str = "corpus-qemu";

/// The case's `model.tar` unpacked into a fresh directory, to be edited.
fn unpack(case_dir: &Path, name: &str) -> PathBuf {
    let dir = common::scratch(name).join("model");
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::File::open(case_dir.join("model.tar")).unwrap();
    tar::Archive::new(file).unpack(&dir).unwrap();
    dir
}

fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let edited = f(text.clone());
    assert_ne!(edited, text, "{}: the edit changed nothing", path.display());
    std::fs::write(path, edited).unwrap();
}

fn edit_json(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut value);
    std::fs::write(path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
}

/// Builds `archive` into examples/host-runner, with `env` (e.g. `CMSIS_NN_PATH`), and runs it on `inputs`.
fn run_on_host(archive: &Path, env: &[(&str, PathBuf)], inputs: &[PathBuf], outputs: usize) -> Result<HostRun, String> {
    common::run_on_host(TARGET_DIR, archive, env, inputs, outputs)
}

/// Runs `archive` on the input files of a tvm-0.18 case and compares with its `expected/`.
fn assert_matches_tvm(case_dir: &Path, archive: &Path) -> HostRun {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(case_dir.join("case.json")).unwrap()).unwrap();
    let module = &json["modules"][0];
    let inputs: Vec<PathBuf> = module["inputs"].as_array().unwrap().iter().map(|i| case_dir.join(i["file"].as_str().unwrap())).collect();
    let expected: Vec<common::Expected> = module["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| common::Expected { file: case_dir.join(o["file"].as_str().unwrap()), dtype: o["dtype"].as_str().unwrap().to_string() })
        .collect();
    let run = run_on_host(archive, &[], &inputs, expected.len()).unwrap_or_else(|why| panic!("{}: {why}", archive.display()));
    for (want, got) in expected.iter().zip(&run.outputs) {
        common::compare(want, got, 1e-4, 1e-5).unwrap();
    }
    run
}

/// Runs `archive` on every vector of a real-world case, with the libraries
/// the case needs, and compares with its expected bytes.
fn assert_matches_vectors(case_dir: &Path, archive: &Path) -> HostRun {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(case_dir.join("case.json")).unwrap()).unwrap();
    let libraries = common::case_at(case_dir).library_env().unwrap_or_else(|verdict| panic!("{}: {verdict:?}", case_dir.display()));
    let mut last = None;
    for vector in json["vectors"].as_array().unwrap() {
        let input = case_dir.join(vector["file"].as_str().unwrap());
        let run = run_on_host(archive, &libraries, &[input], 1).unwrap_or_else(|why| panic!("{}: {why}", archive.display()));
        let want = std::fs::read(case_dir.join(vector["expected"].as_str().unwrap())).unwrap();
        assert_eq!(run.outputs[0], want, "{}: {}", archive.display(), vector["file"]);
        last = Some(run);
    }
    last.expect("the case has vectors")
}

/// `Builder::build` in-process, as a build script on the host would call it, printing nothing.
fn build_in_process(archive: &Path) -> mlf_build::Result<mlf_build::Output> {
    let host = common::host_triple();
    Builder::new(archive).out_dir(archive.with_file_name("out")).target(&host).host(host).cargo_metadata(false).build()
}

// Issue 9.3: a kernel library's API headers are external code, not an Arm target
// (CMSIS-NN's are named by tests/cmsis_nn.rs).
#[test]
fn kernel_library_headers_are_external_code_named_all_at_once() {
    let Some(case) = common::corpus_case("mlp_f32-aot_c") else { return };
    let archive = unpack(&case, "kernel-headers");
    let src = archive.join("codegen/host/src");
    std::fs::write(
        src.join("default_lib8.c"),
        "#include <arm_math.h>\n#include <arm_const_structs.h>\nint mlf_wild_a(void) { return 0; }\n",
    )
    .unwrap();
    std::fs::write(src.join("default_lib9.c"), "#include \"arm_math.h\"\nint mlf_wild_b(void) { return 0; }\n").unwrap();
    let error = build_in_process(&archive).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Compile, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("2 header(s)")
            && text.contains("<arm_const_structs.h> (included by codegen/host/src/default_lib8.c)")
            && text.contains("<arm_math.h> (included by codegen/host/src/default_lib8.c, codegen/host/src/default_lib9.c)")
            && text.contains("Builder::include_dir")
            && text.contains("Builder::source")
            && text.contains("Builder::define"),
        "{text}"
    );
    // Intrinsic headers still mean an Arm-only build.
    std::fs::write(src.join("default_lib9.c"), "#include <arm_mve.h>\nint mlf_wild_b(void) { return 0; }\n").unwrap();
    let error = build_in_process(&archive).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::WrongTarget, "{error}");
    assert!(error.to_string().contains("<arm_mve.h>"), "{error}");
}

// Issue 9.5: the graph JSON is what runs; the metadata's storage table is a report.
#[test]
fn graph_runs_when_metadata_storage_sizes_are_on_the_wrong_ids() {
    let Some(case) = common::corpus_case("arduino-microspeech-graph-v5-executorconfig") else { return };
    let archive = unpack(&case, "graph-shifted-sids");
    edit_json(&archive.join("metadata.json"), |json| {
        let sids = json["memory"]["sids"].as_array_mut().unwrap();
        let sizes: Vec<serde_json::Value> = sids.iter().map(|sid| sid["size_bytes"].clone()).collect();
        for (index, sid) in sids.iter_mut().enumerate() {
            sid["size_bytes"] = sizes[(index + 1) % sizes.len()].clone();
        }
    });
    let run = assert_matches_vectors(&case, &archive);
    assert!(
        run.build_stderr.contains("metadata.json's storage table disagrees with the graph")
            && run.build_stderr.contains("input `Reshape_1` is 1960 bytes in the graph, 2 in the metadata); the graph is used"),
        "{}",
        run.build_stderr
    );
}

// Issue 9.5: weights bound at build time never turn into model inputs.
#[test]
fn graph_without_its_params_file_is_refused_naming_it() {
    let Some(case) = common::corpus_case("arduino-cifar-resnet-v2-20210602") else { return };
    let archive = unpack(&case, "graph-no-params");
    std::fs::remove_dir_all(archive.join("parameters")).unwrap();
    let error = build_in_process(&archive).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Metadata, "{error}");
    assert_eq!(error.file(), Some("parameters/default.params"));
    let text = error.to_string();
    assert!(text.contains("takes 55 weight(s) bound at build time (`p0` to `p54`") && text.contains("has no weights file"), "{text}");
}

// Issue 8.7: a graph calling a function no source defines is named before the linker.
#[test]
fn graph_calling_an_undefined_operator_names_function_and_node() {
    let Some(case) = common::corpus_case("arduino-microspeech-graph-v5-executorconfig") else { return };
    let archive = unpack(&case, "graph-undefined-operator");
    let function = "tvmgen_default_fused_nn_softmax";
    edit(&archive.join("codegen/host/src/default_lib1.c"), |text| text.replace(&format!("{function}("), "mlf_wild_renamed_softmax("));
    let error = build_in_process(&archive).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Metadata, "{error}");
    assert!(error.file().is_some_and(|file| file.ends_with("graph.json")), "{error}");
    let text = error.to_string();
    assert!(
        text.contains(&format!("`{function}`, which no source or object of module `default` defines")) && text.contains("node "),
        "{text}"
    );
}

// Issue 9.6: an archive shipping TVM's runtime that allocates its workspace links on bare metal.
#[test]
fn runtime_archive_with_workspace_allocation_runs_on_bare_metal() {
    let Some(case) = common::corpus_case("kws_int8-aot_c_nousmp") else { return };
    let triple = "thumbv7em-none-eabihf";
    let output = common::cargo(QEMU_TARGET_DIR)
        .args(["run", "--release", "--quiet", "-p", "cortex-m-runner", "--target", triple])
        .env("MLF_ARCHIVE", case.join("model.tar"))
        .env("MLF_INPUTS", case.join("inputs/input_1.bin"))
        .env("MLF_MODULE", "")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", common::failure_text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().find_map(|line| line.strip_prefix("output0: ")).unwrap_or_else(|| panic!("{stdout}"));
    let want: String = std::fs::read(case.join("expected/output0.bin")).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(line.trim(), want);
}

// Issue 9.1: a 2021 packed archive whose Relay text does not type the result:
// the output's element type is the one the last operator the entry calls writes.
#[test]
fn untyped_2021_output_takes_its_type_from_the_last_operator() {
    let Some(case) = common::corpus_case("arduino-yesno-aot-packed-v5") else { return };
    let archive = unpack(&case, "untyped-output");
    edit(&archive.join("src/relay.txt"), |text| text.replace(", out_dtype=\"int8\")\n}", ")\n}"));
    assert_matches_vectors(&case, &archive);
    let output = build_in_process(&archive).unwrap();
    let rust = std::fs::read_to_string(&output.modules[0].rust_file).unwrap();
    assert!(rust.contains("element type from the last operator the entry of module `default` passes it to"), "{rust}");
}

/// Removes the definition of `tvmgen_default_run` (the header still declares it).
fn delete_run_definition(archive: &Path) {
    edit(&archive.join("codegen/host/src/default_lib0.c"), |text| {
        text.replace("int32_t tvmgen_default_run(struct", "static int32_t mlf_wild_deleted_run(struct")
    });
}

// Issue 9.2: the header declares an entry no source defines; the defined model function runs.
#[test]
fn header_entry_without_definition_calls_the_defined_model_function() {
    let Some(case) = common::corpus_case("kws_int8-aot_c_nousmp") else { return };
    let archive = unpack(&case, "undefined-run");
    delete_run_definition(&archive);
    let run = assert_matches_tvm(&case, &archive);
    assert!(
        run.build_stderr
            .contains("declares `tvmgen_default_run`, which no source defines; calling the defined `tvmgen_default___tvm_main__`"),
        "{}",
        run.build_stderr
    );
}

// Issue 9.2: ... and when none takes the buffers alone, the undefined function is named.
#[test]
fn header_entry_without_definition_or_replacement_is_refused_naming_it() {
    let Some(case) = common::corpus_case("mlp_f32-aot_c") else { return };
    let archive = unpack(&case, "undefined-run-usmp");
    delete_run_definition(&archive);
    let error = build_in_process(&archive).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Metadata, "{error}");
    assert_eq!(error.file(), Some("codegen/host/include/tvmgen_default.h"));
    assert!(
        error.to_string().contains("the header declares `tvmgen_default_run`, but no source or object of module `default` defines it"),
        "{error}"
    );
}

/// Renames every tensor of `main` in a TVM >= 0.11 metadata.json, keeping the order.
fn rename_metadata_tensors(archive: &Path) {
    edit_json(&archive.join("metadata.json"), |json| {
        for main in json["modules"]["default"]["memory"]["functions"]["main"].as_array_mut().unwrap() {
            for kind in ["inputs", "outputs"] {
                let renamed: serde_json::Map<String, serde_json::Value> =
                    main[kind].as_object().unwrap().values().enumerate().map(|(i, t)| (format!("renamed_{kind}_{i}"), t.clone())).collect();
                main[kind] = serde_json::Value::Object(renamed);
            }
        }
    });
}

// Issue 9.4 and 8.2: names differ between metadata and header, and a `_SIZE`
// macro holds garbage: tensors match by position, and the size the other
// sources agree on sizes the buffer.
#[test]
fn garbage_size_macro_is_outvoted_when_names_differ() {
    let Some(case) = common::corpus_case("kws_int8-aot_c") else { return };
    let archive = unpack(&case, "garbage-size-macro");
    rename_metadata_tensors(&archive);
    edit(&archive.join("codegen/host/include/tvmgen_default.h"), |text| {
        text.replace("#define TVMGEN_DEFAULT_OUTPUT_SIZE 6", "#define TVMGEN_DEFAULT_OUTPUT_SIZE 40747632")
    });
    let output = build_in_process(&archive).unwrap();
    assert_eq!((output.modules[0].memory.inputs, output.modules[0].memory.outputs), (240, 6));
    let run = assert_matches_tvm(&case, &archive);
    assert!(
        run.build_stderr.contains(
            "tensor `output` of module `default`: the archive's sizes disagree (6 bytes from metadata.json memory.functions.main.outputs.renamed_outputs_0, 40747632 bytes from TVMGEN_DEFAULT_OUTPUT_SIZE"
        ),
        "{}",
        run.build_stderr
    );
}

// Issue 8.2 and 19.3: a metadata size that disagrees with what the code uses is
// outvoted by the header and the Relay shapes; with no third source, the code
// settles it (with a warning naming the value that lost); when the code reaches
// neither value, the build is refused naming both, never run with a buffer the
// C code writes past.
#[test]
fn shrunk_metadata_size_is_outvoted_or_refused() {
    let Some(case) = common::corpus_case("kws_int8-aot_c") else { return };
    let archive = unpack(&case, "shrunk-metadata-size");
    edit_json(&archive.join("metadata.json"), |json| {
        json["modules"]["default"]["memory"]["functions"]["main"][0]["outputs"]["output"]["size"] = serde_json::json!(2);
    });
    let output = build_in_process(&archive).unwrap();
    assert_eq!(output.modules[0].memory.outputs, 6);
    std::fs::remove_file(archive.join("src/default.relay")).unwrap();
    let output = build_in_process(&archive).unwrap();
    assert_eq!(output.modules[0].memory.outputs, 6);
    assert!(
        output.warnings.iter().any(|w| w.contains("the code reaches 6 bytes")
            && w.contains("2 bytes from metadata.json memory.functions.main.outputs.output is not")),
        "{:?}",
        output.warnings
    );
    edit(&archive.join("codegen/host/include/tvmgen_default.h"), |text| {
        text.replace("#define TVMGEN_DEFAULT_OUTPUT_SIZE 6", "#define TVMGEN_DEFAULT_OUTPUT_SIZE 8")
    });
    let error = build_in_process(&archive).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Metadata, "{error}");
    assert_eq!(error.file(), Some("codegen/host/include/tvmgen_default.h"));
    assert!(
        error.to_string().contains(
            "the sizes of tensor `output` of module `default` disagree: 2 bytes from metadata.json memory.functions.main.outputs.output; 8 bytes from TVMGEN_DEFAULT_OUTPUT_SIZE in codegen/host/include/tvmgen_default.h; the code reaches 6 bytes, which none of them states"
        ),
        "{error}"
    );
}

// Issue 19.3: TVM 0.11's `_SIZE` macros are not byte sizes. metadata.json and
// the code agree, so the macros lose, each named in a warning; the build runs
// with the code's sizes.
#[test]
fn tvm011_size_macros_lose_to_metadata_and_the_code() {
    let Some(case) = common::corpus_case("cnn_f32-aot_c") else { return };
    let archive = unpack(&case, "tvm011-size-macros");
    std::fs::remove_file(archive.join("src/default.relay")).unwrap();
    edit(&archive.join("codegen/host/include/tvmgen_default.h"), |text| {
        text.replace("#define TVMGEN_DEFAULT_IMAGE_SIZE 3072", "#define TVMGEN_DEFAULT_IMAGE_SIZE 28332256")
            .replace("#define TVMGEN_DEFAULT_OUTPUT_SIZE 20", "#define TVMGEN_DEFAULT_OUTPUT_SIZE 40747632")
    });
    let run = assert_matches_tvm(&case, &archive);
    for (name, bytes, lost) in [("image", 3072, 28332256), ("output", 20, 40747632)] {
        let macro_name = format!("TVMGEN_DEFAULT_{}_SIZE", name.to_uppercase());
        let want = format!(
            "tensor `{name}` of module `default`: the archive's sizes disagree; the code reaches {bytes} bytes, as metadata.json memory.functions.main"
        );
        let lost_line =
            format!("so {bytes} bytes are used and {lost} bytes from {macro_name} in codegen/host/include/tvmgen_default.h is not");
        assert!(run.build_stderr.contains(&want) && run.build_stderr.contains(&lost_line), "{}", run.build_stderr);
        // The book's archive table (archives.md) gives the input's pair as its example.
        if name == "image" {
            let example = format!("({} for a {}-byte input", common::doc_number(lost), common::doc_number(bytes));
            let section = common::doc_section("archives.md", "# What archives work");
            assert!(
                section.iter().any(|(_, line)| line.contains("TVM 0.11 `_SIZE` macros") && line.contains(&example)),
                "archives.md's row on TVM 0.11 `_SIZE` macros must say `{example}`, as this build warned"
            );
        }
    }
}

// Issue 19.3: a codegen-only tree whose only stated sizes are TVM 0.11's
// `_SIZE` macros (not byte sizes): one file's word is checked against what the
// code does, and the code wins, naming the value that lost.
#[test]
fn a_lone_size_macro_that_lies_loses_to_the_code() {
    let Some(case) = common::corpus_case("cnn_f32-aot_c") else { return };
    let archive = unpack(&case, "tvm011-codegen-only");
    std::fs::remove_file(archive.join("metadata.json")).unwrap();
    std::fs::remove_dir_all(archive.join("src")).unwrap();
    edit(&archive.join("codegen/host/include/tvmgen_default.h"), |text| {
        text.replace("#define TVMGEN_DEFAULT_IMAGE_SIZE 3072", "#define TVMGEN_DEFAULT_IMAGE_SIZE 28332256")
            .replace("#define TVMGEN_DEFAULT_OUTPUT_SIZE 20", "#define TVMGEN_DEFAULT_OUTPUT_SIZE 16")
    });
    let run = assert_matches_tvm(&case, &archive);
    for (name, bytes, lost) in [("image", 3072, 28332256), ("output", 20, 16)] {
        let macro_name = format!("TVMGEN_DEFAULT_{}_SIZE", name.to_uppercase());
        let want = format!("tensor `{name}` of module `default`: {macro_name} in codegen/host/include/tvmgen_default.h states {lost} bytes, but the code reaches {bytes} bytes; {bytes} bytes are used");
        assert!(run.build_stderr.contains(&want), "{want}\n{}", run.build_stderr);
    }
}

/// Removes metadata.json, the Relay text and every `_SIZE` macro of the
/// interface header: a codegen-only tree as MLPerf Tiny v1.0 submissions ship.
fn strip_to_codegen(archive: &Path) {
    std::fs::remove_file(archive.join("metadata.json")).unwrap();
    std::fs::remove_dir_all(archive.join("src")).unwrap();
    edit(&archive.join("codegen/host/include/tvmgen_default.h"), |text| {
        // `#define TVMGEN_<M>_<NAME>_SIZE <n>`, the workspace's included.
        let size_macro =
            |line: &str| line.starts_with("#define TVMGEN_") && line.split_whitespace().nth(1).is_some_and(|n| n.ends_with("_SIZE"));
        text.lines().filter(|line| !size_macro(line)).map(|line| format!("{line}\n")).collect()
    });
}

// Issue 19.2: without metadata.json and `_SIZE` macros, element types come from
// the typed definitions (lib0.c's `void*` prototype of `__tvm_main__` is not one)
// and sizes from the loops of the operators that read the inputs and write the
// outputs; the workspace from the static pool or the allocations. int8 and
// float, USMP and not, one and two outputs.
#[test]
fn codegen_only_trees_run_from_what_the_code_does() {
    for name in ["kws_int8-aot_c_usmp", "kws_int8-aot_c_nousmp", "cnn_f32-aot_c", "mlp_f32-aot_c", "two_outputs_f32-aot_c"] {
        let Some(case) = common::corpus_case(name) else { return };
        let archive = unpack(&case, &format!("codegen-only-{name}"));
        let lib0 = std::fs::read_to_string(archive.join("codegen/host/src/default_lib0.c")).unwrap();
        assert!(lib0.contains("tvmgen_default___tvm_main__(void*"), "{name}: lib0.c no longer declares main with void*");
        let original = build_in_process(&unpack(&case, &format!("codegen-only-original-{name}"))).unwrap();
        strip_to_codegen(&archive);
        assert_matches_tvm(&case, &archive);
        let output = build_in_process(&archive).unwrap();
        let (built, want) = (&output.modules[0].memory, &original.modules[0].memory);
        assert_eq!((built.inputs, built.outputs), (want.inputs, want.outputs), "{name}");
        let rust = std::fs::read_to_string(&output.modules[0].rust_file).unwrap();
        assert!(
            rust.contains("the code: the loops, indices and kernel dimensions of the operators `tvmgen_default___tvm_main__`"),
            "{name}: {rust}"
        );
        assert!(rust.contains("the `tvmgen_default___tvm_main__` definition"), "{name}: {rust}");
    }
}

// Issue 19.2: when the code does not show a tensor's size, the error names the
// fact, the files read, and how to state it.
#[test]
fn codegen_only_tree_whose_code_hides_a_size_is_refused_naming_the_fix() {
    let Some(case) = common::corpus_case("mlp_f32-aot_c") else { return };
    let archive = unpack(&case, "codegen-only-hidden");
    strip_to_codegen(&archive);
    // The softmax that writes the output now takes its bound at run time.
    edit(&archive.join("codegen/host/src/default_lib1.c"), |text| {
        text.replace(
            "i1_1 < 10; ++i1_1) {\n    T_softmax_norm",
            "i1_1 < (int32_t)global_workspace_11_var[0]; ++i1_1) {\n    T_softmax_norm",
        )
    });
    let error = build_in_process(&archive).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Metadata, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("cannot tell the size of tensor `output` of module `default`: no file states it and the code does not show it")
            && text.contains("loop bounds")
            && text.contains("#define TVMGEN_DEFAULT_OUTPUT_SIZE <bytes>")
            && !text.contains("re-export"),
        "{text}"
    );
}

// Issue 32: in a codegen-only tree the code's reach sizes a tensor only when it
// is exact: an output written through TVM's split-loop tail guard (a loop of 10
// split by 4) is sized exactly and runs; the same loop under a guard the
// reader cannot follow exactly gives an upper bound, which is refused naming
// the `#define` that would state the size.
#[test]
fn a_codegen_only_output_written_through_a_split_loop_guard_is_sized_exactly() {
    let Some(case) = common::corpus_case("mlp_f32-aot_c") else { return };
    let softmax = "for (int32_t i1_1 = 0; i1_1 < 10; ++i1_1) {\n    T_softmax_norm[i1_1] = (((float*)T_softmax_exp_let)[i1_1] / ((float*)T_softmax_expsum_let)[0]);\n  }";
    let split = |guard: &str| {
        format!(
            "for (int32_t o = 0; o < 3; ++o) {{\n    for (int32_t i = 0; i < 4; ++i) {{\n      if ({guard}) {{\n        int32_t cse_var_1 = ((o * 4) + i);\n        \
             T_softmax_norm[cse_var_1] = (((float*)T_softmax_exp_let)[cse_var_1] / ((float*)T_softmax_expsum_let)[0]);\n      }}\n    }}\n  }}"
        )
    };
    let archive = unpack(&case, "codegen-only-split");
    strip_to_codegen(&archive);
    edit(&archive.join("codegen/host/src/default_lib1.c"), |text| {
        assert!(text.contains(softmax), "the softmax loop changed");
        text.replace(softmax, &split("((o * 2) + (i >> 1)) < 5"))
    });
    assert_matches_tvm(&case, &archive);
    assert_eq!(build_in_process(&archive).unwrap().modules[0].memory.outputs, 40);
    let archive = unpack(&case, "codegen-only-split-bound");
    strip_to_codegen(&archive);
    edit(&archive.join("codegen/host/src/default_lib1.c"), |text| text.replace(softmax, &split("(((o * 4) + i) < 10) && (i != 7)")));
    let text = build_in_process(&archive).unwrap_err().to_string();
    assert!(
        text.contains("output `output` of module `default` has no size in any file")
            && text.contains("upper bound")
            && text.contains("#define TVMGEN_DEFAULT_OUTPUT_SIZE <bytes>"),
        "{text}"
    );
}

// Issue 32.2: where the code's reach is only an upper bound past the size the
// archive declares (a guard the reader does not follow exactly), the declared
// size stays the interface (LEN, BYTES, the caller's buffer) and the code runs
// on a padded copy the glue owns, counted in the memory map; a warning names
// the declared size, the bound and the operator, and the model still computes
// what TVM did.
#[test]
fn an_upper_bound_past_a_declared_size_keeps_the_size_and_pads() {
    let Some(case) = common::corpus_case("mlp_f32-aot_c") else { return };
    let softmax = "for (int32_t i1_1 = 0; i1_1 < 10; ++i1_1) {\n    T_softmax_norm[i1_1] = (((float*)T_softmax_exp_let)[i1_1] / ((float*)T_softmax_expsum_let)[0]);\n  }";
    // A loop of 10 split by 4 under a guard the reader does not follow (`||`): at most 12 floats. The
    // second term also writes element 11, past the 10 declared: into the padding, not past a buffer.
    let split = "for (int32_t o = 0; o < 3; ++o) {\n    for (int32_t i = 0; i < 4; ++i) {\n      if ((((o * 4) + i) < 10) || (i == 3)) {\n        \
                 int32_t cse_var_1 = ((o * 4) + i);\n        \
                 T_softmax_norm[cse_var_1] = (((float*)T_softmax_exp_let)[cse_var_1] / ((float*)T_softmax_expsum_let)[0]);\n      }\n    }\n  }";
    let archive = unpack(&case, "upper-bound-padded");
    edit(&archive.join("codegen/host/src/default_lib1.c"), |text| {
        assert!(text.contains(softmax), "the softmax loop changed");
        text.replace(softmax, split)
    });
    let run = assert_matches_tvm(&case, &archive);
    let output = build_in_process(&archive).unwrap();
    let warning = "tensor `output` of module `default`: metadata.json memory.functions.main.outputs.output";
    let said = output.warnings.iter().find(|w| w.starts_with(warning)).unwrap_or_else(|| panic!("{:?}", output.warnings));
    for part in [
        "states 40 bytes",
        "the code of the operators `tvmgen_default___tvm_main__` passes it to reaches at most 48 bytes",
        "the tensor stays 40 bytes, and the code runs on a copy padded to 48 bytes",
    ] {
        assert!(said.contains(part), "{part}: {said}");
    }
    assert!(run.build_stderr.contains(said.as_str()), "a cargo:warning: {}", run.build_stderr);
    let module = &output.modules[0];
    assert_eq!((module.memory.inputs, module.memory.outputs), (256, 40), "the declared sizes");
    assert_eq!(module.memory.padded_io, 48);
    assert!(module.memory.stepping > 0, "{:?}", module.memory);
    assert_eq!(module.memory.static_ram(), module.memory.code_workspace + 48 + module.memory.stepping);
    let rust = std::fs::read_to_string(&module.rust_file).unwrap();
    for item in [
        "pub const BYTES: usize = 40;",
        "pub const LEN: usize = 10;",
        "pub const PADDED_IO_BYTES: usize = 48;",
        "+ PADDED_IO_BYTES + STEPPING_BYTES;",
        "The code may reach 48 bytes of it (an upper bound): it runs on a copy with 8 bytes of padding",
    ] {
        assert!(rust.contains(item), "{item}: {rust}");
    }
    let glue = find_file(&archive.with_file_name("out"), "mlf_default_glue.c");
    let glue = std::fs::read_to_string(glue).unwrap();
    for line in ["uint8_t padded_output_0[48];", "memset(padded_output_0 + 40, 0, 8u);", "memcpy(caller_outputs[0], padded_output_0, 40u);"]
    {
        assert!(glue.contains(line), "{line}: {glue}");
    }
}

/// The first file named `name` under `dir`, searched breadth first.
fn find_file(dir: &Path, name: &str) -> PathBuf {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.file_name().is_some_and(|file| file == name) {
                return path;
            }
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    panic!("no {name} under {}", dir.display())
}

// Issue 9.7: a codegen-only tree (no metadata.json) runs from its interface header.
#[test]
fn archive_without_metadata_runs_from_its_interface_header() {
    let Some(case) = common::corpus_case("kws_int8-aot_c_nousmp") else { return };
    let archive = unpack(&case, "no-metadata");
    std::fs::remove_file(archive.join("metadata.json")).unwrap();
    std::fs::remove_dir_all(archive.join("src")).unwrap();
    let run = assert_matches_tvm(&case, &archive);
    assert!(
        run.build_stderr
            .contains("the archive has no metadata.json: module `default` is inferred from codegen/host/include/tvmgen_default.h"),
        "{}",
        run.build_stderr
    );
    std::fs::remove_file(archive.join("codegen/host/include/tvmgen_default.h")).unwrap();
    let error = build_in_process(&archive).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotMlf, "{error}");
    assert!(error.to_string().contains("neither metadata.json nor an interface header codegen/host/include/tvmgen_<module>.h"), "{error}");
}

/// `inspect` and `Builder::build` go through one door: on a tree stripped of
/// its metadata.json each accepts exactly what the other accepts, with the
/// same numbers and warnings, and refuses with the same error; without the
/// interface header too, both refuse it as not an MLF archive.
#[test]
fn inspect_and_build_agree_on_trees_without_metadata() {
    let mut accepted = 0;
    for name in ["kws_int8-aot_c_usmp", "kws_int8-aot_c_nousmp"] {
        let Some(case) = common::corpus_case(name) else { return };
        let archive = unpack(&case, &format!("agree-{name}"));
        std::fs::remove_file(archive.join("metadata.json")).unwrap();
        match (mlf_build::inspect(&archive), build_in_process(&archive)) {
            (Ok(inspection), Ok(output)) => {
                accepted += 1;
                let inferred = "no metadata.json: module `default` is inferred";
                assert!(inspection.warnings.iter().any(|w| w.contains(inferred)), "{name}: {:?}", inspection.warnings);
                assert_eq!(inspection.warnings, output.warnings, "{name}");
                // The stack bound and a stepped run's state are read from the compiled objects: the build has
                // both, inspect (compiling nothing) neither.
                let built: Vec<_> = output
                    .modules
                    .iter()
                    .zip(&inspection.modules)
                    .map(|(module, inspected)| {
                        assert!(module.report.stack.bytes.is_some(), "{name}: {:?}", module.report.stack);
                        assert!(module.memory.stepping > 0 && inspected.memory.stepping == 0, "{name}: {:?}", module.memory);
                        let mut report = module.report.clone();
                        report.stack = inspected.stack.clone();
                        report.memory.stepping = 0;
                        report
                    })
                    .collect();
                assert_eq!(inspection.modules, built, "{name}");
            }
            (Err(inspected), Err(refused)) => assert_eq!(inspected.to_string(), refused.to_string(), "{name}"),
            (inspected, built) => panic!("{name}: inspect gave {:?}, build gave {:?}", inspected.map(drop), built.map(drop)),
        }
        std::fs::remove_file(archive.join("codegen/host/include/tvmgen_default.h")).unwrap();
        let inspected = mlf_build::inspect(&archive).unwrap_err();
        assert_eq!(inspected.kind(), ErrorKind::NotMlf, "{name}: {inspected}");
        assert_eq!(inspected.to_string(), build_in_process(&archive).unwrap_err().to_string(), "{name}");
    }
    assert_eq!(accepted, 2, "a tree without metadata.json was refused although its code states every fact");
}

// Issue 19: TVM writes `{NULL,0}` for a CMSIS-NN call that needs no scratch on
// the core it compiled for; on a core whose kernel code needs some, the build
// supplies it, and the memory map counts it.
#[test]
fn a_cmsis_nn_call_given_no_scratch_runs_with_the_builds_and_the_memory_map_counts_it() {
    let Some(case) = common::corpus_case("etiss-vww-muriscvnn-rvv-tvm017") else { return };
    let libraries = match common::case_at(&case).library_env() {
        Ok(libraries) => libraries,
        Err(verdict) => return common::skip(&format!("{verdict:?}")),
    };
    let archive = unpack(&case, "scratch-supplied");
    // The first convolution (3x3x3 filter) needs 2 * 27 int16 = 108 bytes on the host's portable path.
    edit(&archive.join("codegen/host/src/default_lib2.c"), |text| text.replacen("{context_buffer_0_let,128}", "{NULL,0}", 1));
    let run = assert_matches_vectors(&case, &archive);
    let warning = "tvmgen_default_cmsis_nn_main_0 calls arm_convolve_wrapper_s8 with no scratch buffer";
    assert!(run.build_stderr.contains(warning) && run.build_stderr.contains("needs 108 bytes"), "{}", run.build_stderr);
    let (host, cmsis_nn) = (common::host_triple(), &libraries[0].1);
    let out = archive.with_file_name("out");
    let output = Builder::new(&archive).out_dir(&out).target(&host).host(host).cmsis_nn(cmsis_nn).cargo_metadata(false).build().unwrap();
    let module = &output.modules[0];
    assert_eq!(module.memory.kernel_scratch, 108);
    assert!(module.memory.stepping > 0, "the stepped run's state: {:?}", module.memory);
    assert_eq!(module.memory.static_ram(), module.memory.code_workspace + 108 + module.memory.stepping);
    let rust = std::fs::read_to_string(&module.rust_file).unwrap();
    assert!(rust.contains("pub const KERNEL_SCRATCH_BYTES: usize = 108;"), "{rust}");
    assert!(rust.contains("+ KERNEL_SCRATCH_BYTES + STEPPING_BYTES;"), "STATIC_RAM_BYTES counts both: {rust}");
    assert!(rust.contains(&format!("pub const STEPPING_BYTES: usize = {};", module.memory.stepping)), "{rust}");
    let said = format!("with the supplied {} bytes", common::doc_number(module.memory.kernel_scratch as i64));
    let section = common::doc_section("cmsis-nn.md", "# CMSIS-NN");
    assert!(section.iter().any(|(_, line)| line.contains(&said)), "cmsis-nn.md must say `{said}`, as this build supplied");
}
