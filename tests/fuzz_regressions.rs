//! Runs every input the fuzzers found (fuzz/regressions/<target>/) and small
//! handcrafted edge cases through the same entry points the fuzz targets use
//! (`mlf_build::fuzzing`, enabled for tests by the self dev-dependency).
//! Nothing may panic; inputs that are not a valid archive part must be errors.
//! fuzz/regressions/front_end/ holds a crash the fuzzers found (a
//! multi-byte character before a `(` in C text, cut in two), and
//! fuzz/regressions/c_parser/ one in the `c_parser` target's own check (a
//! model function defined twice, checked against its second definition).

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use mlf_build::fuzzing;

mod common;

type Entry = fn(&[u8]) -> mlf_build::Result<()>;

const TARGETS: &[(&str, Entry)] = &[
    ("archive", fuzzing::archive),
    ("front_end", fuzzing::front_end),
    ("metadata", fuzzing::metadata),
    ("graph", fuzzing::graph),
    ("params", fuzzing::params),
    ("sources", fuzzing::sources),
    ("relay", fuzzing::relay),
    ("object", fuzzing::object),
    ("memory_x", fuzzing::memory_x),
    ("stack", fuzzing::stack),
    ("c_lexer", fuzzing::c_lexer),
    ("json", fuzzing::json),
    ("c_parser", fuzzing::c_parser),
    ("slot_header", fuzzing::slot_header),
];

/// Runs `input` through `entry`, describing a panic instead of unwinding.
fn run(entry: Entry, input: &[u8]) -> Result<mlf_build::Result<()>, String> {
    catch_unwind(AssertUnwindSafe(|| entry(input))).map_err(|panic| {
        panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
    })
}

#[test]
fn every_regression_input_runs_without_panicking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut panics = Vec::new();
    for (target, entry) in TARGETS {
        let Ok(files) = fs::read_dir(root.join(target)) else { continue };
        for file in files {
            let path = file.unwrap().path();
            let input = fs::read(&path).unwrap();
            if let Err(panic) = run(*entry, &input) {
                panics.push(format!("{}: {panic}", path.display()));
            }
        }
    }
    assert!(panics.is_empty(), "panicked on:\n{}", panics.join("\n"));
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
        fuzzing::sources,
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

/// Text cut inside every kind of token the C lexer knows keeps its invariants.
#[test]
fn c_lexer_cut_tokens_keep_invariants() {
    assert_no_panic(
        fuzzing::c_lexer,
        &[
            text("empty", ""),
            text("unclosed literals", "\"a\\\n'b\\"),
            text("unclosed raw string", "u8R\"delim(é\n"),
            text("unclosed comment", "/* é"),
            text("continued comment", "// a \\\r\n b \\"),
            text("directive", "#  include \"a//b.h\" \\\n \"c\"\n#define X(a) a ## \\"),
            text("numbers", "1'000 0x1p+ 1e- .5'' 0xe+1"),
            text("multibyte", "€'é'\"ü\\\u{10FFFF}"),
            ("not UTF-8", b"\xff\xfe \"\xc3".to_vec()),
        ],
    );
}

/// Text cut inside every construct the C parser reads keeps its invariants.
#[test]
fn c_parser_cut_constructs_keep_invariants() {
    assert_no_panic(
        fuzzing::c_parser,
        &[
            text("empty", ""),
            text("unclosed body", "int f(int x) { if (x) { return"),
            text("unclosed parameters", "int f(int x, {"),
            text("unclosed initializer", "float w[] = { 0x1p+0, {1, /* c */ 2"),
            text("designators", "tvm_model_t n = { .a = , .b = {1,}, . = 3 };"),
            text("stray closers", "}}} ) ] ; = { }"),
            text("struct", "typedef struct { int a : ; } ; struct { } x, y[2] = {"),
            text(
                "directives",
                "#define F(a, \
#include <
#if
#define
#",
            ),
            text("extern", "extern \"C\" { extern \"C\" int f(void); } }"),
            text("multibyte", "int é(ü) { return '€'; } €x = {1};"),
            ("not UTF-8", b"int f(\xff) { \xc3 }".to_vec()),
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
            text(
                "huge shape",
                "def @main(%x: Tensor[(18446744073709551615, 18446744073709551615), float32]) -> Tensor[(99999999999999999999), int8] {",
            ),
            text("unknown dtype", "def @main(%x: Tensor[(1), quaternion]) {\n  %x\n}"),
            text("out_dtype unclosed", "def @main(%x) {\n  f(%x, out_dtype=\"\n}"),
            text("multibyte", "def @main(%é: Tensor[(1,), ü]) -> (\u{10FFFF}"),
        ],
    );
}

/// The numbers a grown-up archive states, set to sizes no device has. Each
/// variant once made the planner overflow (found by running the `front_end`
/// target on every corpus archive with one number at a time replaced).
#[test]
fn corpus_archives_with_impossible_sizes_do_not_panic() {
    let cases = ["mlp_f32-aot_c", "kws_int8-aot_c_nousmp", "mlp_f32-graph", "operator-add_f32"];
    let mut variants = 0;
    for case in cases {
        let Some(dir) = common::corpus_case(case) else { return };
        let files = tar_members(&dir.join("model.tar"));
        for path in files.iter().map(|(path, _)| path.clone()) {
            let Some(huge) = huge_variant(&path, &files) else { continue };
            variants += 1;
            let members: Vec<(&str, &[u8])> = huge.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
            if let Err(panic) = run(fuzzing::front_end, &tar(&members)) {
                panic!("{case} with huge numbers in {path}: panicked: {panic}");
            }
        }
    }
    assert!(variants >= cases.len(), "only {variants} variants built");
}

/// The regular files of a tar, without the `runtime/` sources the planner never reads.
fn tar_members(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = tar::Archive::new(fs::File::open(path).unwrap());
    let mut files = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().trim_start_matches("./").to_string();
        if entry.header().entry_type().is_file() && !name.starts_with("runtime/") {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
            files.push((name, bytes));
        }
    }
    files
}

/// `files` with every size-like number of `path` set to the largest value its format allows.
fn huge_variant(path: &str, files: &[(String, Vec<u8>)]) -> Option<Vec<(String, Vec<u8>)>> {
    let text = String::from_utf8(files.iter().find(|(p, _)| p == path)?.1.clone()).ok()?;
    let changed = if path == "metadata.json" {
        let mut json: serde_json::Value = serde_json::from_str(&text).ok()?;
        enlarge_sizes(&mut json, false);
        json.to_string()
    } else if path.contains("graph") && path.ends_with(".json") || path.ends_with(".graph") {
        let mut json: serde_json::Value = serde_json::from_str(&text).ok()?;
        let shapes = json.pointer_mut("/attrs/shape/1")?;
        enlarge_sizes(shapes, true);
        json.to_string()
    } else if path.ends_with(".relay") || path.ends_with("relay.txt") {
        enlarge_relay_shapes(&text)
    } else if path.ends_with(".h") {
        let lines = text.lines().map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["#define", name, _] if name.ends_with("_SIZE") => format!("#define {name} 18446744073709551615"),
            _ => line.to_string(),
        });
        lines.collect::<Vec<_>>().join("\n")
    } else {
        return None;
    };
    Some(files.iter().map(|(p, b)| (p.clone(), if p == path { changed.clone().into_bytes() } else { b.clone() })).collect())
}

/// Sets numbers under size-like keys (or, with `all`, every number) to u64::MAX (i64::MAX for signed graph shapes).
fn enlarge_sizes(value: &mut serde_json::Value, all: bool) {
    match value {
        serde_json::Value::Number(_) if all => *value = i64::MAX.into(),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|item| enlarge_sizes(item, all)),
        serde_json::Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let sized = all || key.contains("size") || key.contains("bytes") || key == "shape";
                if item.is_number() && sized {
                    *item = u64::MAX.into();
                } else {
                    enlarge_sizes(item, sized);
                }
            }
        }
        _ => {}
    }
}

/// Every dimension inside `Tensor[(...)` set to u64::MAX.
fn enlarge_relay_shapes(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("Tensor[(") {
        let (before, shape) = rest.split_at(at + "Tensor[(".len());
        out.push_str(before);
        let end = shape.find(')').unwrap_or(shape.len());
        let dims: Vec<&str> = shape[..end].split(',').map(|d| if d.trim().is_empty() { d } else { "18446744073709551615" }).collect();
        out.push_str(&dims.join(", "));
        rest = &shape[end..];
    }
    out.push_str(rest);
    out
}

/// A 64-bit little-endian relocatable ELF with a symbol table (section 1,
/// linked to section `strtab_link`) of one global symbol defined in section 1
/// whose name is at `name_at` in the string table `names`; `shoff`/`shnum`
/// override the header's section table (`None`: the real one).
fn elf_object(names: &[u8], name_at: u32, strtab_link: u32, symtab_at: Option<u64>, table: Option<(u64, u16)>) -> Vec<u8> {
    let mut symbols = vec![0u8; 24]; // the null symbol
    let mut symbol = vec![0u8; 24];
    symbol[..4].copy_from_slice(&name_at.to_le_bytes());
    symbol[4] = 1 << 4; // STB_GLOBAL
    symbol[6..8].copy_from_slice(&1u16.to_le_bytes());
    symbols.extend(symbol);
    let symtab_offset = 64u64;
    let strtab_offset = symtab_offset + symbols.len() as u64;
    let shoff = strtab_offset + names.len() as u64;
    let section = |kind: u32, offset: u64, size: u64, link: u32| {
        let mut entry = vec![0u8; 64];
        entry[4..8].copy_from_slice(&kind.to_le_bytes());
        entry[24..32].copy_from_slice(&offset.to_le_bytes());
        entry[32..40].copy_from_slice(&size.to_le_bytes());
        entry[40..44].copy_from_slice(&link.to_le_bytes());
        entry
    };
    let (table_at, count) = table.unwrap_or((shoff, 3));
    let mut bytes = vec![0u8; 64];
    bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
    bytes[18..20].copy_from_slice(&62u16.to_le_bytes());
    bytes[0x28..0x30].copy_from_slice(&table_at.to_le_bytes());
    bytes[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    bytes[0x3c..0x3e].copy_from_slice(&count.to_le_bytes());
    bytes.extend(&symbols);
    bytes.extend(names);
    bytes.extend(section(0, 0, 0, 0));
    bytes.extend(section(2, symtab_at.unwrap_or(symtab_offset), symbols.len() as u64, strtab_link));
    bytes.extend(section(3, strtab_offset, names.len() as u64, 0));
    bytes
}

#[test]
fn damaged_objects_are_an_error() {
    let names = b"\0weights\0";
    let valid = elf_object(names, 1, 2, None, None);
    assert!(run(fuzzing::object, &valid).unwrap().is_ok());
    let mut count_in_entry_zero = elf_object(names, 1, 2, None, Some((64 + 48 + 9, 0)));
    count_in_entry_zero[64 + 48 + 9 + 32..64 + 48 + 9 + 40].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_refused(
        fuzzing::object,
        &[
            ("section table past the end", elf_object(names, 1, 2, None, Some((1 << 40, 3)))),
            ("section table overflowing", elf_object(names, 1, 2, None, Some((u64::MAX - 8, 3)))),
            ("symbol table past the end", elf_object(names, 1, 2, Some(1 << 20), None)),
            ("string table index out of range", elf_object(names, 1, 9, None, None)),
            ("name past the string table", elf_object(names, 1000, 2, None, None)),
            ("name without its NUL", elf_object(b"\0weights", 1, 2, None, None)),
            ("section count in entry 0, huge", count_in_entry_zero),
        ],
    );
    // Not ELF: left to the toolchain's archiver, nothing to refuse here.
    assert_no_panic(fuzzing::object, &[("empty", Vec::new()), ("ar", b"!<arch>\n".to_vec()), ("ELF magic only", b"\x7fELF".to_vec())]);
}

#[test]
fn hostile_memory_x_is_an_error_at_once() {
    let region = |length: String| format!("MEMORY {{\n RAM : ORIGIN = 0, LENGTH = {length}\n}}\n");
    let started = std::time::Instant::now();
    assert_refused(
        fuzzing::memory_x,
        &[
            text("nested parentheses", region(format!("{}4K{}", "(".repeat(1_000_000), ")".repeat(1_000_000)))),
            text("unary minus", region(format!("{}0", "-".repeat(1_000_000)))),
            text("never closed", region("-(".repeat(500_000))),
            text("pattern of stars", format!("SECTIONS {{ .x : {{ *(.{}) }} }}", "*".repeat(2000))),
            text("many patterns", format!("SECTIONS {{ .x : {{ *({}) }} }}", ".a ".repeat(100_000))),
            text("INCLUDE in SECTIONS", "SECTIONS {\n .x : { *(.x) }\n INCLUDE more.x\n}"),
            text("INCLUDE in MEMORY", "MEMORY {\n INCLUDE regions.x\n}"),
        ],
    );
    // Stars that almost match a long name: accepted, matched without backtracking.
    let stars = format!(
        "{}SECTIONS {{ .x : {{ *(.{}b) }} > RAM }}\n.{} .{}b",
        region("4K".into()),
        "*a".repeat(120),
        "a".repeat(126),
        "a".repeat(125)
    );
    assert!(fuzzing::memory_x(stars.as_bytes()).is_ok());
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
}

#[test]
fn hostile_json_is_an_error_at_once() {
    let started = std::time::Instant::now();
    assert_refused(
        fuzzing::json,
        &[
            text("100 000 brackets", "[".repeat(100_000)),
            text("100 000 objects", "{\"a\":".repeat(100_000)),
            text("a number beyond f64", format!("1{}", "0".repeat(400))),
            text("an exponent beyond f64", "1e99999999999999999999"),
            text("a lone surrogate", "\"\\udc00\""),
            text("an unpaired surrogate", "\"\\ud800\""),
            text("a bad escape", "\"\\x\""),
            text("a raw control character", "\"\u{1}\""),
            ("invalid UTF-8", b"\"\xff\"".to_vec()),
            ("a byte order mark", b"\xef\xbb\xbf{}".to_vec()),
            text("a trailing comma", "[1,]"),
            text("a comment", "[1] // x"),
            text("NaN", "NaN"),
            text("a leading zero", "01"),
        ],
    );
    // At the limit, and beyond the integers: read and written back.
    for accepted in [format!("{}{}", "[".repeat(127), "]".repeat(127)), format!("-{}", "9".repeat(300)), "\"\\ud83d\\ude00\"".to_string()] {
        fuzzing::json(accepted.as_bytes()).unwrap();
    }
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
}

/// A slot image from mlf-build's writer: two inputs, a float output, a stepper.
fn writer_slot_image() -> Vec<u8> {
    use mlf_build::slot::{Arch, Features, FloatAbi, Region, SlotDescription, SlotTensor};
    use mlf_build::{DType, TypeCode};
    let tensor =
        |name: &str, code, bits, shape: &[u64]| SlotTensor { name: name.into(), dtype: DType { code, bits }, shape: shape.to_vec() };
    let description = SlotDescription {
        arch: Arch::Riscv32,
        float_abi: FloatAbi::Soft,
        features: Features(Features::RV_M | Features::RV_A | Features::RV_C),
        flash: Region { origin: 0x8040_0000, length: 0x1_0000 },
        ram: Region { origin: 0x8080_0000, length: 0x1_0000 },
        bss_bytes: 0x800,
        stack_bytes: 256,
        entries: [Some(0), Some(0x10), Some(0x20), Some(0x30)],
        inputs: vec![tensor("input_1", TypeCode::Int, 8, &[1, 49, 10, 1]), tensor("mask", TypeCode::UInt, 16, &[])],
        outputs: vec![tensor("scores", TypeCode::Float, 32, &[1, 12])],
    };
    description.write_image(&[0x13; 0x40], &[2; 8]).expect("a valid description")
}

/// The fuzzer's seed (fuzz/regressions/slot_header/writer-image.slot) is what
/// the writer writes today (`MLF_BUILD_BLESS=1` rewrites it after a format
/// change); the reader accepts it, and refuses it torn or corrupted.
#[test]
fn slot_images_from_the_writer_read_and_damaged_ones_are_refused() {
    let image = writer_slot_image();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/slot_header/writer-image.slot");
    if std::env::var_os("MLF_BUILD_BLESS").is_some() {
        fs::create_dir_all(seed.parent().unwrap()).unwrap();
        fs::write(&seed, &image).unwrap();
    }
    assert_eq!(fs::read(&seed).expect("the seed image"), image, "the seed is not the writer's image: MLF_BUILD_BLESS=1 rewrites it");
    fuzzing::slot_header(&image).expect("the writer's image reads");
    let mut flipped = image.clone();
    *flipped.last_mut().unwrap() ^= 1;
    let mut too_many = image.clone();
    too_many[108..112].copy_from_slice(&[0xff; 4]);
    assert_refused(
        fuzzing::slot_header,
        &[
            ("empty", Vec::new()),
            ("torn", image[..image.len() / 2].to_vec()),
            ("a flipped byte", flipped),
            ("65535 inputs and outputs", too_many),
            ("all 0xff", vec![0xff; 4096]),
        ],
    );
}
