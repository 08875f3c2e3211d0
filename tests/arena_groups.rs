//! Arena groups (issue 35): modules that take turns share one arena.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_build::{Builder, ErrorKind, Storage};
use object::{Object, ObjectSymbol};

/// Members of one group, each in an `ar` library of its own as mlf-build
/// writes them: (name, arena bytes, alignment). The largest is neither first
/// nor last, and the strictest alignment belongs to a small member, so
/// neither order nor the largest member decides the result by chance.
const MEMBERS: [(&str, usize, usize); 3] = [("kws", 100, 64), ("vww", 3000, 8), ("cnn", 200, 4)];

/// A toolchain as the rig uses it: its compiler and flags, and how it links.
struct Linker {
    name: &'static str,
    compiler: &'static str,
    flags: &'static [&'static str],
    /// Link with `rust-lld -flavor gnu` (as the firmware targets do) instead of the compiler driver.
    rust_lld: bool,
}

const LINKERS: [Linker; 5] = [
    Linker { name: "host cc", compiler: "cc", flags: &[], rust_lld: false },
    Linker { name: "arm-none-eabi ld", compiler: "arm-none-eabi-gcc", flags: &["-mcpu=cortex-m4", "-mthumb"], rust_lld: false },
    Linker {
        name: "riscv64-unknown-elf ld",
        compiler: "riscv64-unknown-elf-gcc",
        flags: &["-march=rv32imac", "-mabi=ilp32"],
        rust_lld: false,
    },
    Linker { name: "rust-lld (thumb)", compiler: "arm-none-eabi-gcc", flags: &["-mcpu=cortex-m4", "-mthumb"], rust_lld: true },
    Linker { name: "rust-lld (riscv32)", compiler: "riscv64-unknown-elf-gcc", flags: &["-march=rv32imac", "-mabi=ilp32"], rust_lld: true },
];

/// The mechanism arena groups rest on: each member defines the group's arena
/// as a common symbol of its own size and alignment, and every linker the rig
/// uses merges them into one symbol of the largest size, at the strictest
/// alignment. If one did not, the group would need one definition written by
/// the last Builder (docs/src/internals.md, "Arena groups").
#[test]
fn linkers_merge_common_arenas_to_the_largest() {
    let largest = MEMBERS.iter().map(|m| m.1).max().unwrap();
    let strictest = MEMBERS.iter().map(|m| m.2).max().unwrap() as u64;
    let mut skipped = Vec::new();
    for linker in &LINKERS {
        let Some(elf) = link_members(linker, &mut skipped) else { continue };
        let bytes = std::fs::read(&elf).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let arenas: Vec<_> = file.symbols().filter(|s| s.name() == Ok("mlf_arena_turns")).collect();
        assert_eq!(arenas.len(), 1, "{}: one arena symbol in {}", linker.name, elf.display());
        let arena = &arenas[0];
        assert_eq!(arena.size(), largest as u64, "{}: the arena is the largest member's size", linker.name);
        assert_eq!(arena.address() % strictest, 0, "{}: the arena has the strictest member's alignment", linker.name);
        println!("arena merge: {} PASS ({} B at {:#x})", linker.name, arena.size(), arena.address());
    }
    if !skipped.is_empty() {
        common::skip(&format!("no toolchain for {}", skipped.join(", ")));
    }
}

/// Compiles each member into its own library and a main calling every
/// member's function, links them, and returns the program; `None` (noted in
/// `skipped`) when the toolchain is absent.
fn link_members(linker: &Linker, skipped: &mut Vec<&'static str>) -> Option<PathBuf> {
    let rust_lld = if linker.rust_lld { rust_lld() } else { None };
    if (linker.rust_lld && rust_lld.is_none()) || Command::new(linker.compiler).arg("--version").output().is_err() {
        skipped.push(linker.name);
        return None;
    }
    let dir = common::scratch("arena-merge");
    let compile = |name: &str, source: String| -> PathBuf {
        let c = dir.join(format!("{name}.c"));
        std::fs::write(&c, source).unwrap();
        let object = dir.join(format!("{name}.o"));
        run(Command::new(linker.compiler).args(linker.flags).args(["-O2", "-fno-common", "-c"]).arg(&c).arg("-o").arg(&object));
        object
    };
    let mut main = String::new();
    let mut libraries = Vec::new();
    for (name, bytes, align) in MEMBERS {
        // -fno-common above: the attribute alone makes the definition common, as the glue's does.
        let source = format!(
            "__attribute__((common, aligned({align}))) unsigned char mlf_arena_turns[{bytes}];\n\
             int {name}_run(void) {{ mlf_arena_turns[0] = 1; return mlf_arena_turns[{bytes} - 1]; }}\n"
        );
        let object = compile(name, source);
        let library = dir.join(format!("lib{name}.a"));
        run(Command::new("ar").arg("rcs").arg(&library).arg(&object));
        libraries.push(library);
        main += &format!("int {name}_run(void);\n");
    }
    let calls: Vec<String> = MEMBERS.iter().map(|(name, ..)| format!("{name}_run()")).collect();
    main += &format!("int main(void) {{ return {}; }}\n", calls.join(" + "));
    let main = compile("main", main);
    let elf = dir.join("program.elf");
    let mut link = match (&rust_lld, linker.compiler) {
        (Some(lld), _) => {
            let mut link = Command::new(lld);
            link.args(["-flavor", "gnu", "-e", "main"]);
            link
        }
        (None, "cc") => Command::new("cc"),
        (None, compiler) => {
            let mut link = Command::new(compiler);
            link.args(linker.flags).args(["-nostdlib", "-Wl,-e,main"]);
            link
        }
    };
    run(link.arg(&main).args(&libraries).arg("-o").arg(&elf));
    Some(elf)
}

/// The `rust-lld` of the toolchain running the tests.
fn rust_lld() -> Option<PathBuf> {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
    let sysroot = PathBuf::from(String::from_utf8(sysroot.stdout).ok()?.trim());
    let lld = sysroot.join("lib/rustlib").join(common::host_triple()).join("bin/rust-lld");
    lld.is_file().then_some(lld)
}

fn run(command: &mut Command) {
    let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(output.status.success(), "{command:?} failed:\n{}", String::from_utf8_lossy(&output.stderr));
}

/// tests/fixtures/arena-group: `kws_int8-aot_c_nousmp` (its arena behind
/// `TVMBackendAllocWorkspace`), `kws_int8-aot_c_pools` (its workspace pool),
/// `cnn_f32-graph` (its storage), `kws_int8-aot_c_usmp` (USMP's
/// `global_workspace`, moved into the arena by an edited copy of its source)
/// and the CMSIS-NN archive `etiss-vww-muriscvnn-rvv-tvm017` (its USMP
/// workspace and CMSIS-NN scratch) in group `turns`: three rounds of turns
/// equal `expected/`; a member started from another's step callback, or from
/// another thread while a stepped run is paused, gets `Busy` and all are right
/// afterwards (the fixture asserts these); `ARENA_BYTES` is the largest
/// member's scratch, and the linked program holds one arena of that size.
#[test]
fn members_take_turns_in_one_arena_on_the_host() {
    let Some(corpus) = common::corpus_dir() else { return };
    let cmsis_nn = common::shared_dir().join("third-party/CMSIS-NN/v4.1.0");
    if !cmsis_nn.is_dir() {
        return common::skip(&format!("no CMSIS-NN at {}", cmsis_nn.display()));
    }
    // Shares multi-archive's target directory (tests/consumer.rs): the same dependencies, built once.
    let output = common::run_fixture("multi-archive", "arena-group")
        .env("MLF_TEST_CORPUS", &corpus)
        .env("MLF_TEST_CMSIS_NN", &cmsis_nn)
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "arena-group failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    for line in ["arena: turns 3 rounds PASS", "arena: turns Busy from another thread PASS", "arena: turns Busy from a step callback PASS"]
    {
        assert!(stdout.lines().any(|l| l.starts_with(line)), "no line `{line}`:\n{stdout}");
    }
    let figures = stdout.lines().find_map(|l| l.strip_prefix("arena: turns ARENA_BYTES ")).expect("the fixture prints ARENA_BYTES");
    let numbers: Vec<u64> = figures.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    let [arena, ref members @ ..] = numbers[..] else { panic!("ARENA_BYTES line: {figures}") };
    assert!(members.len() == 5 && members.iter().all(|&bytes| bytes > 0), "{figures}");
    assert_eq!(Some(&arena), members.iter().max(), "{figures}");
    let program = common::repo_root().join("target/multi-archive/release/arena-group");
    let bytes = std::fs::read(&program).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let arenas: Vec<u64> = file.symbols().filter(|s| s.name().is_ok_and(|n| n.ends_with("mlf_arena_turns"))).map(|s| s.size()).collect();
    assert_eq!(arenas, [arena], "one arena of ARENA_BYTES in {}", program.display());
    let separate: u64 = members.iter().sum();
    println!("arena: turns [{}] PASS ({} members, shared {arena} B, separate {separate} B)", common::host_triple(), members.len());
}

fn build_in(out_dir: &Path, builder: Builder) -> mlf_build::Result<mlf_build::Output> {
    builder.out_dir(out_dir).target(common::host_triple()).host(common::host_triple()).cargo_metadata(false).build()
}

/// USMP's `global_workspace` joins through an edited copy of its source;
/// hostile variants whose array cannot move are refused by name, with the
/// file, line and reason, before anything compiles.
#[test]
fn a_usmp_workspace_joins_and_one_that_cannot_move_is_refused_by_name() {
    let Some(case) = common::corpus_case("kws_int8-aot_c_usmp") else { return };
    let out = common::scratch("usmp");
    let output = build_in(&out, Builder::new(case.join("model.tar")).arena_group("turns")).unwrap();
    let module = output.modules.iter().find(|m| m.name == "default").unwrap();
    assert_eq!(module.memory.code_workspace, 15378, "the workspace is counted, now in the arena");
    let copy = std::fs::read_to_string(out.join("mlf/build/default/gen/edited/codegen/host/src/default_lib0.c")).unwrap();
    assert!(copy.contains("#define global_workspace (*(uint8_t (*)[15378])(mlf_arena_turns + 0))"), "{copy}");
    assert!(!copy.contains("static uint8_t global_workspace[15378];"), "{copy}");
    // The original's tree is left as the archive wrote it.
    let tree = std::fs::read_to_string(out.join("mlf/build/default/tree/codegen/host/src/default_lib0.c")).unwrap();
    assert!(tree.contains("static uint8_t global_workspace[15378];"));

    let unpacked = common::scratch("usmp-hostile");
    let status = Command::new("tar").arg("xf").arg(case.join("model.tar")).arg("-C").arg(&unpacked).status().unwrap();
    assert!(status.success());
    let lib0 = unpacked.join("codegen/host/src/default_lib0.c");
    let original = std::fs::read_to_string(&lib0).unwrap();
    let hostile: [(&str, String, &str); 4] = [
        (
            "undefined",
            original.replace("static uint8_t global_workspace[15378];", "extern uint8_t global_workspace[15378];"),
            "cannot join arena group `turns`: its workspace (15378 bytes, USMP's `global_workspace`) is static memory of the archive's code, and no C source of the archive defines it",
        ),
        ("sizeof", format!("{original}\nint mlf_test_size(void) {{ return (int)sizeof(global_workspace); }}\n"), "is used under `sizeof`"),
        ("initializer", original.replace("global_workspace[15378];", "global_workspace[15378] = {1};"), "has an initializer"),
        ("macro", format!("{original}\n#define WORKSPACE_BYTES sizeof global_workspace\n"), "preprocessor line"),
    ];
    for (what, text, reason) in hostile {
        std::fs::write(&lib0, text).unwrap();
        let dir = common::scratch(&format!("usmp-{what}"));
        let error = build_in(&dir, Builder::new(&unpacked).arena_group("turns")).unwrap_err();
        let text = error.to_string();
        assert_eq!(error.kind(), ErrorKind::Config, "{what}: {text}");
        assert!(text.contains("module `default` cannot join") && text.contains(reason), "{what}: {text}");
        if what != "undefined" {
            assert_eq!(error.file(), Some("codegen/host/src/default_lib0.c"), "{what}: {text}");
        }
        // Outside a group the same archive builds.
        if what == "sizeof" {
            build_in(&dir, Builder::new(&unpacked)).unwrap();
        }
    }
}

/// Several modules of one archive, each with its own USMP workspace, are
/// members each: each module's source is edited for its own array, and the
/// group's arena is the larger workspace.
#[test]
fn several_modules_of_one_archive_join_with_their_usmp_workspaces() {
    let Some(case) = common::corpus_case("multi-kws_mlp-aot_c") else { return };
    let out = common::scratch("multi");
    let output = build_in(&out, Builder::new(case.join("model.tar")).arena_group("turns")).unwrap();
    let mut workspaces: Vec<(String, u64)> = output.modules.iter().map(|m| (m.name.clone(), m.memory.code_workspace)).collect();
    workspaces.sort();
    assert_eq!(workspaces, [("kws".to_string(), 17794), ("mlp".to_string(), 12580)]);
    for (module, bytes) in workspaces {
        let copy = out.join(format!("mlf/build/kws/gen/edited/codegen/host/src/{module}_lib0.c"));
        let copy = std::fs::read_to_string(&copy).unwrap_or_else(|e| panic!("{}: {e}", copy.display()));
        assert!(copy.contains(&format!("#define global_workspace (*(uint8_t (*)[{bytes}])(mlf_arena_turns + 0))")), "{module}");
    }
    let index = std::fs::read_to_string(out.join("mlf/mod.rs")).unwrap();
    assert!(index.contains("pub const ARENA_BYTES: usize = 17794;"), "{index}");
}

#[test]
fn a_group_name_that_is_no_identifier_and_a_workspace_section_are_refused() {
    let Some(case) = common::corpus_case("kws_int8-aot_c_nousmp") else { return };
    let archive = case.join("model.tar");
    let error = build_in(&common::scratch("name"), Builder::new(&archive).arena_group("two words")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    assert!(error.to_string().contains("two words"), "{error}");
    let placed = Builder::new(&archive).arena_group("turns").link_section(Storage::Workspace, ".sram2");
    let error = build_in(&common::scratch("section"), placed).unwrap_err();
    assert!(error.to_string().contains("link_section(Storage::Workspace, ..)"), "{error}");
}

/// `mod.rs` holds `pub mod arena_groups` beside the modules: a module of that
/// Rust name, in a build script with a group, is refused naming both.
#[test]
fn a_module_named_like_the_groups_module_is_refused() {
    let (Some(kws), Some(cnn)) = (common::corpus_case("kws_int8-aot_c_nousmp"), common::corpus_case("cnn_f32-graph")) else { return };
    let out = common::scratch("clash");
    build_in(&out, Builder::new(kws.join("model.tar")).rename_module("default", "Arena_Groups")).unwrap();
    let grouped = Builder::new(cnn.join("model.tar")).rename_module("default", "cnn").arena_group("turns");
    let error = build_in(&out, grouped).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    assert!(error.to_string().contains("module `Arena_Groups` would have the name `mod.rs` gives its arena groups"), "{error}");
}

/// MSVC's C compiler cannot define the common arena: refused before compiling.
#[test]
fn an_msvc_target_is_refused() {
    let Some(case) = common::corpus_case("kws_int8-aot_c_nousmp") else { return };
    let builder = Builder::new(case.join("model.tar")).arena_group("turns").out_dir(common::scratch("msvc"));
    let error = builder.target("x86_64-pc-windows-msvc").host(common::host_triple()).cargo_metadata(false).build().unwrap_err();
    assert!(error.to_string().contains("MSVC targets cannot share an arena yet"), "{error}");
}
