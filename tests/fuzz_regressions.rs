//! Runs every input the fuzzers found (fuzz/regressions/<target>/) and small
//! handcrafted edge cases through the same entry points the fuzz targets use
//! (`mlf_build::fuzzing`, enabled for tests by the self dev-dependency).
//! Nothing may panic; inputs that are not a valid archive part must be errors.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use mlf_build::fuzzing;

type Entry = fn(&[u8]) -> mlf_build::Result<()>;

const TARGETS: &[(&str, Entry)] = &[
    ("archive", fuzzing::archive),
    ("front_end", fuzzing::front_end),
    ("metadata", fuzzing::metadata),
    ("graph", fuzzing::graph),
    ("params", fuzzing::params),
    ("inspect", fuzzing::inspect),
    ("relay", fuzzing::relay),
];

/// Runs `input` through `entry`, describing a panic instead of unwinding.
fn run(entry: Entry, input: &[u8]) -> Result<mlf_build::Result<()>, String> {
    catch_unwind(AssertUnwindSafe(|| entry(input))).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

#[test]
fn every_regression_input_runs_without_panicking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut panics = Vec::new();
    let mut count = 0;
    for (target, entry) in TARGETS {
        let Ok(files) = fs::read_dir(root.join(target)) else { continue };
        for file in files {
            let path = file.unwrap().path();
            let input = fs::read(&path).unwrap();
            count += 1;
            if let Err(panic) = run(*entry, &input) {
                panics.push(format!("{}: {panic}", path.display()));
            }
        }
    }
    assert!(panics.is_empty(), "panicked on:\n{}", panics.join("\n"));
    assert!(count > 0, "no regression inputs under {}", root.display());
}

/// Asserts that every input is refused with an error (and does not panic).
fn assert_refused(entry: Entry, cases: &[(&str, Vec<u8>)]) {
    for (name, input) in cases {
        match run(entry, input) {
            Ok(Err(_)) => {}
            Ok(Ok(())) => panic!("{name}: accepted"),
            Err(panic) => panic!("{name}: panicked: {panic}"),
        }
    }
}

/// Asserts only that nothing panics (the text inspectors never fail, they find less).
fn assert_no_panic(entry: Entry, cases: &[(&str, Vec<u8>)]) {
    for (name, input) in cases {
        if let Err(panic) = run(entry, input) {
            panic!("{name}: panicked: {panic}");
        }
    }
}

fn text(name: &str, body: impl Into<String>) -> (&str, Vec<u8>) {
    (name, body.into().into_bytes())
}

fn tar(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, path, *bytes).unwrap();
    }
    builder.into_inner().unwrap()
}

#[test]
fn damaged_metadata_is_an_error() {
    let deep = "[".repeat(100_000);
    assert_refused(
        fuzzing::metadata,
        &[
            text("empty", ""),
            text("not an object", "[]"),
            text("no version", "{}"),
            text("version too large", r#"{"version": 18446744073709551616}"#),
            text("version negative", r#"{"version": -1}"#),
            text("version unknown", r#"{"version": 99}"#),
            text("deep nesting", deep),
            text("no modules", r#"{"version": 7, "modules": {}}"#),
            text("module name with a path", r#"{"version": 7, "modules": {"../x": {}}}"#),
            text("invalid UTF-8", "\u{0}"),
            ("truncated UTF-8", b"{\"version\": 7, \"x\": \"\xff\"}".to_vec()),
        ],
    );
}

#[test]
fn damaged_graph_is_an_error() {
    let huge_shape = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []}], "arg_nodes": [0], "heads": [[0, 0, 0]],
        "node_row_ptr": [0, 1], "attrs": {"dltype": ["list_str", ["float32"]], "storage_id": ["list_int", [0]],
        "shape": ["list_shape", [[4611686018427387904, 4611686018427387904]]]}}"#;
    assert_refused(
        fuzzing::graph,
        &[
            text("empty", ""),
            text("not an object", "[1]"),
            text("no nodes", "{}"),
            text("row pointer past the nodes", r#"{"nodes": [], "arg_nodes": [], "heads": [], "node_row_ptr": [0, 5], "attrs": {}}"#),
            text("head past the nodes", r#"{"nodes": [], "arg_nodes": [], "heads": [[7, 0, 0]], "node_row_ptr": [0], "attrs": {}}"#),
            text("shape overflowing u64", huge_shape),
        ],
    );
}

#[test]
fn damaged_params_are_an_error() {
    let magic = 0xF7E5_8D4F_0504_9CB7u64.to_le_bytes();
    let header = |names: u64| [magic.as_slice(), &0u64.to_le_bytes(), &names.to_le_bytes()].concat();
    let named = |len: u64| [header(1), len.to_le_bytes().to_vec()].concat();
    assert_refused(
        fuzzing::params,
        &[
            ("empty", Vec::new()),
            ("wrong magic", vec![0xAA; 24]),
            ("huge name count", header(u64::MAX)),
            ("huge name length", named(u64::MAX)),
            ("name past the end", named(1 << 40)),
        ],
    );
}

#[test]
fn damaged_tars_are_an_error() {
    let cases = [
        ("empty", Vec::new()),
        ("short", vec![0; 100]),
        ("gzip", [&[0x1f, 0x8b][..], &[0; 600]].concat()),
        ("garbage header", vec![b'x'; 1024]),
        ("truncated member", tar(&[("metadata.json", &[b'{'; 2000])])[..1024].to_vec()),
    ];
    assert_refused(fuzzing::archive, &cases);
    assert_refused(fuzzing::front_end, &cases);
    assert_refused(
        fuzzing::front_end,
        &[
            ("no metadata", tar(&[("codegen/host/src/default_lib0.c", b"int x;")])),
            ("metadata only", tar(&[("metadata.json", br#"{"version": 7, "modules": {"default": {}}}"#)])),
        ],
    );
}

#[test]
fn empty_tar_loads_as_an_empty_tree() {
    assert!(run(fuzzing::archive, &[0; 1024]).unwrap().is_ok());
}

#[test]
fn hostile_c_text_does_not_panic() {
    assert_no_panic(
        fuzzing::inspect,
        &[
            text("empty", ""),
            text("open brace", "TVM_DLL int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs, {"),
            text("unclosed comment", "/* tvmgen_default_run"),
            text("close before open", "}}}) tvmgen_default___tvm_main__() {{"),
            text("huge define", "#define TVMGEN_DEFAULT_INPUT_SIZE 0xFFFFFFFFFFFFFFFFFFFFFFFF\nint tvmgen_default_run();"),
            text("huge count", "tvm_model_t network = { .num_input_tensors = 999999999999999999999999999 };"),
            text("bad include", "#include <\n#include \"\n#   include"),
            text("linked params without cases", "int32_t x_lookup_linked_param(void* args) {\ncase :\ncase 99999999999999999999999:\n"),
            text("packed args", "int32_t tvmgen_default_fused_add(void* args, int32_t* t, int32_t n, void* r, int32_t* rt, void* h) {\n  void* a = (((TVMValue*)args)[0].v_handle);\n  ((float*)a)[ = 1;\n}"),
            text("multibyte", "tvmgen_default_é(ü){ß}\u{10FFFF}"),
            ("not UTF-8", b"\xff\xfe tvmgen_default_run( \xc3".to_vec()),
        ],
    );
}

#[test]
fn hostile_relay_text_does_not_panic() {
    assert_no_panic(
        fuzzing::relay,
        &[
            text("empty", ""),
            text("unclosed main", "def @main("),
            text("huge shape", "def @main(%x: Tensor[(18446744073709551615, 18446744073709551615), float32]) -> Tensor[(99999999999999999999), int8] {"),
            text("unknown dtype", "def @main(%x: Tensor[(1), quaternion]) {\n  %x\n}"),
            text("out_dtype unclosed", "def @main(%x) {\n  f(%x, out_dtype=\"\n}"),
            text("multibyte", "def @main(%é: Tensor[(1,), ü]) -> (\u{10FFFF}"),
        ],
    );
}
