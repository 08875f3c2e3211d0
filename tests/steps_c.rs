//! The split AOT run on the host, without the Rust glue: corpus cases built by
//! the Builder, then a C driver (written here) that calls
//! `mlf_<m>_steps_begin` with the arguments the glue gives the entry today and
//! `mlf_<m>_steps_run(0..n)`, and also the original entry (`run`'s code, still
//! in the library): both give the case's expected outputs.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_build::Builder;

mod common;

/// How the glue calls a case's entry today.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `tvmgen_<m>_run(struct inputs*, struct outputs*)`: structs of pointers.
    CInterface,
    /// `tvmgen_<m>_run(TVMValue* args, ...)`, one `DLTensor*` per input then output.
    Packed,
    /// `tvmgen_<m>_network.run_func`, the packed signature.
    Descriptor,
}

/// Every `.a` under `dir`.
fn libraries(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            libraries(&path, found);
        } else if path.extension().is_some_and(|e| e == "a") {
            found.push(path);
        }
    }
}

/// The number of steps the copy's step function has (`case N:` lines).
fn step_count(out: &Path) -> usize {
    let mut copies = Vec::new();
    fn walk(dir: &Path, copies: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, copies);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                copies.push(text);
            }
        }
    }
    walk(&out.join("mlf/build/default/gen/steps"), &mut copies);
    let text = copies.iter().find(|text| text.contains("_steps_run(uint32_t index)")).expect("a copy with the step function");
    text.lines().filter(|line| line.starts_with("  case ")).count()
}

fn driver(kind: Kind, prefix: &str, inputs: &[u64], outputs: &[u64], steps: usize) -> String {
    let mut c = String::from("#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n");
    let _ = writeln!(c, "void {prefix}mlf_support_arena_reset(uint8_t* arena, size_t len);");
    let _ = writeln!(c, "static _Alignas(64) uint8_t arena[16 << 20];");
    let _ = writeln!(c, "typedef union {{ int64_t v_int64; double v_float64; void* v_handle; }} value_t;");
    let _ = writeln!(c, "typedef int32_t (*packed_t)(void*, void*, int, void*, void*, void*);");
    match kind {
        Kind::CInterface => {
            let _ =
                writeln!(c, "int32_t {prefix}tvmgen_default_run(void*, void*);\nint32_t {prefix}mlf_default_steps_begin(void*, void*);");
        }
        Kind::Packed => {
            let _ = writeln!(c, "int32_t {prefix}tvmgen_default_run(void*, void*, int, void*, void*, void*);");
            let _ = writeln!(c, "int32_t {prefix}mlf_default_steps_begin(void*, void*, int, void*, void*, void*);");
        }
        Kind::Descriptor => {
            let _ = writeln!(c, "extern const struct {{ size_t inputs, outputs; packed_t run_func; }} {prefix}tvmgen_default_network;");
            let _ = writeln!(c, "int32_t {prefix}mlf_default_steps_begin(void*, void*, int, void*, void*, void*);");
        }
    }
    let _ = writeln!(c, "int32_t {prefix}mlf_default_steps_run(uint32_t index);\n");
    let sizes = |list: &[u64]| list.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let (n_in, n_out) = (inputs.len(), outputs.len());
    let _ =
        writeln!(c, "static const size_t in_bytes[] = {{{}}};\nstatic const size_t out_bytes[] = {{{}}};", sizes(inputs), sizes(outputs));
    let _ = write!(
        c,
        "int main(int argc, char** argv) {{\n\
         \x20 if (argc != 2 + {n_in} + {n_out}) return 2;\n\
         \x20 int stepped = strcmp(argv[1], \"steps\") == 0;\n\
         \x20 void* buffers[{n_in} + {n_out}];\n\
         \x20 for (int i = 0; i < {n_in} + {n_out}; i++) {{\n\
         \x20   size_t bytes = i < {n_in} ? in_bytes[i] : out_bytes[i - {n_in}];\n\
         \x20   buffers[i] = calloc(bytes + 64, 1);\n\
         \x20   if (i < {n_in}) {{ FILE* f = fopen(argv[2 + i], \"rb\"); if (!f || fread(buffers[i], 1, bytes, f) != bytes) return 3; fclose(f); }}\n\
         \x20 }}\n\
         \x20 /* Fake DLTensors: the code reads only `data`, their first member. */\n\
         \x20 void* tensors[{n_in} + {n_out}][8];\n\
         \x20 value_t args[{n_in} + {n_out}];\n\
         \x20 int codes[{n_in} + {n_out}];\n\
         \x20 for (int i = 0; i < {n_in} + {n_out}; i++) {{ memset(tensors[i], 0, sizeof tensors[i]); tensors[i][0] = buffers[i]; args[i].v_handle = tensors[i]; codes[i] = 7; }}\n\
         \x20 {prefix}mlf_support_arena_reset(arena, sizeof arena);\n\
         \x20 int32_t status = 0;\n"
    );
    let call = |function: &str| match kind {
        Kind::CInterface => format!("{function}(&buffers[0], &buffers[{n_in}])"),
        Kind::Packed | Kind::Descriptor => format!("{function}(args, codes, {n_in} + {n_out}, NULL, NULL, NULL)"),
    };
    let run = match kind {
        Kind::Descriptor => call(&format!("{prefix}tvmgen_default_network.run_func")),
        _ => call(&format!("{prefix}tvmgen_default_run")),
    };
    let _ = write!(
        c,
        "  if (stepped) {{\n\
         \x20   status = {};\n\
         \x20   for (uint32_t i = 0; status == 0 && i < {steps}; i++) status = {prefix}mlf_default_steps_run(i);\n\
         \x20   if (status == 0 && {prefix}mlf_default_steps_run({steps}) != -1) return 5;\n\
         \x20 }} else {{\n\
         \x20   status = {run};\n\
         \x20 }}\n\
         \x20 if (status != 0) return 4;\n\
         \x20 for (int i = 0; i < {n_out}; i++) {{ FILE* f = fopen(argv[2 + {n_in} + i], \"wb\"); if (!f || fwrite(buffers[{n_in} + i], 1, out_bytes[i], f) != out_bytes[i]) return 6; fclose(f); }}\n\
         \x20 return 0;\n}}\n",
        call(&format!("{prefix}mlf_default_steps_begin"))
    );
    c
}

/// Builds `case`, links the driver, runs it stepped and whole on every vector.
fn check_case(name: &str, kind: Kind) {
    let Some(dir) = common::corpus_case(name) else { return };
    let case = common::case_at(&dir);
    let out = common::scratch(&format!("steps-{name}"));
    let output = Builder::new(&case.archive)
        .out_dir(&out)
        .target(common::host_triple())
        .host(common::host_triple())
        .cargo_metadata(false)
        .build()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let module = &output.modules[0];
    let steps = step_count(&out);
    let inputs: Vec<u64> = module.inputs.iter().map(|t| t.bytes).collect();
    let outputs: Vec<u64> = module.outputs.iter().map(|t| t.bytes).collect();
    let source = out.join("driver.c");
    std::fs::write(&source, driver(kind, &output.symbol_prefix, &inputs, &outputs, steps)).unwrap();
    let mut libs = Vec::new();
    libraries(&out.join("mlf"), &mut libs);
    let program = out.join("driver");
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.arg("-o").arg(&program).arg(&source).arg("-Wl,--start-group").args(&libs).arg("-Wl,--end-group").arg("-lm");
    let linked = cc.output().unwrap();
    assert!(linked.status.success(), "{name}: linking the driver: {}", common::failure_text(&linked));
    let module_case = &case.modules[0];
    assert!(!module_case.vectors.is_empty(), "{name}: no vectors");
    for (index, vector) in module_case.vectors.iter().enumerate().take(3) {
        for mode in ["steps", "run"] {
            let written: Vec<PathBuf> = (0..outputs.len()).map(|i| out.join(format!("{mode}-{index}-{i}.bin"))).collect();
            let status = Command::new(&program).arg(mode).args(&vector.inputs).args(&written).status().unwrap();
            assert!(status.success(), "{name} {mode}: driver exited with {status}");
            let got: Vec<Vec<u8>> = written.iter().map(|path| std::fs::read(path).unwrap()).collect();
            common::check_vector(&case, index, vector, &got).unwrap_or_else(|e| panic!("{name} {mode}: {e}"));
        }
    }
    println!("steps: {name} PASS ({steps} steps)");
}

#[test]
fn usmp_entry_steps_to_the_expected_outputs() {
    check_case("kws_int8-aot_c_usmp", Kind::CInterface);
}

#[test]
fn workspace_allocating_entry_steps_to_the_expected_outputs() {
    check_case("kws_int8-aot_c_nousmp", Kind::CInterface);
}

#[test]
fn more_c_interface_entries_step_to_the_expected_outputs() {
    for name in ["cnn_f32-aot_c", "mlp_f32-aot_c", "two_outputs_f32-aot_c", "kws_int8-aot_c"] {
        check_case(name, Kind::CInterface);
    }
}

#[test]
fn packed_2021_entry_steps_to_the_expected_outputs() {
    check_case("arduino-yesno-aot-packed-v5", Kind::Packed);
}

#[test]
fn tvm_model_t_entry_steps_to_the_expected_outputs() {
    check_case("arduino-microspeech-aot-tvm_model_t-v5", Kind::Descriptor);
}
