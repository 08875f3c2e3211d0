//! Arena groups (issue 35): modules that take turns share one arena.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_build::{Builder, ErrorKind, Storage};
use object::{Object, ObjectSection, ObjectSymbol};

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
        let Some(elf) = link_members(linker, &mut skipped, false) else { continue };
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

/// With `link_section(Storage::Workspace, ..)`, the group's library adds one
/// real definition of the arena in the section, at the largest size and
/// strictest alignment: every rig linker merges the members' common
/// definitions into it, so the program holds one arena, in the section.
#[test]
fn linkers_merge_common_arenas_into_the_placed_definition() {
    let largest = MEMBERS.iter().map(|m| m.1).max().unwrap() as u64;
    let mut skipped = Vec::new();
    for linker in &LINKERS {
        let Some(elf) = link_members(linker, &mut skipped, true) else { continue };
        let bytes = std::fs::read(&elf).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let arenas: Vec<_> = file.symbols().filter(|s| s.name() == Ok("mlf_arena_turns")).collect();
        assert_eq!(arenas.len(), 1, "{}: one arena symbol in {}", linker.name, elf.display());
        let section = file.section_by_index(arenas[0].section_index().expect("a defined arena")).unwrap();
        assert_eq!((section.name().unwrap(), arenas[0].size()), (".sram2", largest), "{}: the placed definition", linker.name);
        println!("arena placed: {} PASS ({} B in .sram2)", linker.name, arenas[0].size());
    }
    if !skipped.is_empty() {
        common::skip(&format!("no toolchain for {}", skipped.join(", ")));
    }
}

/// Compiles each member into its own library and a main calling every
/// member's function, links them, and returns the program; `None` (noted in
/// `skipped`) when the toolchain is absent.
fn link_members(linker: &Linker, skipped: &mut Vec<&'static str>, placed: bool) -> Option<PathBuf> {
    let rust_lld = if linker.rust_lld { rust_lld() } else { None };
    if (linker.rust_lld && rust_lld.is_none()) || Command::new(linker.compiler).arg("--version").output().is_err() {
        skipped.push(linker.name);
        return None;
    }
    let dir = common::scratch(if placed { "arena-merge-placed" } else { "arena-merge" });
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
    // The group's placed definition, as mlf-build's group library holds it: linked whole, after the members.
    let mut whole = Vec::new();
    if placed {
        let (largest, strictest) = (MEMBERS.iter().map(|m| m.1).max().unwrap(), MEMBERS.iter().map(|m| m.2).max().unwrap());
        let object = compile(
            "group",
            format!("__attribute__((section(\".sram2\"), aligned({strictest}))) unsigned char mlf_arena_turns[{largest}];\n"),
        );
        let library = dir.join("libgroup.a");
        run(Command::new("ar").arg("rcs").arg(&library).arg(&object));
        whole = match rust_lld {
            Some(_) => vec!["--whole-archive".into(), library.into_os_string(), "--no-whole-archive".into()],
            None => vec!["-Wl,--whole-archive".into(), library.into_os_string(), "-Wl,--no-whole-archive".into()],
        };
    }
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
    run(link.arg(&main).args(&libraries).args(&whole).arg("-o").arg(&elf));
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
    // One after the other: both builds write the same program. With a workspace section the arena is
    // the group library's definition there, which the members' common definitions merge into.
    for section in [None, Some(".sram2")] {
        // Shares multi-archive's target directory (tests/consumer.rs): the same dependencies, built once.
        let mut command = common::run_fixture("multi-archive", "arena-group");
        command.env("MLF_TEST_CORPUS", &corpus).env("MLF_TEST_CMSIS_NN", &cmsis_nn);
        match section {
            Some(section) => command.env("MLF_TEST_ARENA_SECTION", section),
            None => command.env_remove("MLF_TEST_ARENA_SECTION"),
        };
        let output = command.output().expect("cargo runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "arena-group ({section:?}) failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        for line in
            ["arena: turns 3 rounds PASS", "arena: turns Busy from another thread PASS", "arena: turns Busy from a step callback PASS"]
        {
            assert!(stdout.lines().any(|l| l.starts_with(line)), "no line `{line}` ({section:?}):\n{stdout}");
        }
        let figures = stdout.lines().find_map(|l| l.strip_prefix("arena: turns ARENA_BYTES ")).expect("the fixture prints ARENA_BYTES");
        let numbers: Vec<u64> = figures.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
        let [arena, ref members @ ..] = numbers[..] else { panic!("ARENA_BYTES line: {figures}") };
        assert!(members.len() == 5 && members.iter().all(|&bytes| bytes > 0), "{figures}");
        assert_eq!(Some(&arena), members.iter().max(), "{figures}");
        let program = common::repo_root().join("target/multi-archive/release/arena-group");
        let bytes = std::fs::read(&program).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let arenas: Vec<(u64, String)> = file
            .symbols()
            .filter(|s| s.name().is_ok_and(|n| n.ends_with("mlf_arena_turns")))
            .map(|s| {
                (
                    s.size(),
                    s.section_index()
                        .and_then(|i| file.section_by_index(i).ok())
                        .map_or_else(String::new, |s| s.name().unwrap_or_default().to_string()),
                )
            })
            .collect();
        assert_eq!(arenas.len(), 1, "one arena in {}: {arenas:?}", program.display());
        assert_eq!(arenas[0].0, arena, "the arena is ARENA_BYTES in {}", program.display());
        if let Some(section) = section {
            assert_eq!(arenas[0].1, section, "the arena is in the workspace section");
            println!("arena placed: turns [{}] PASS (shared {arena} B in {section})", common::host_triple());
            continue;
        }
        let separate: u64 = members.iter().sum();
        println!("arena: turns [{}] PASS ({} members, shared {arena} B, separate {separate} B)", common::host_triple(), members.len());
    }
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
fn a_group_name_that_is_no_identifier_is_refused() {
    let Some(case) = common::corpus_case("kws_int8-aot_c_nousmp") else { return };
    let error = build_in(&common::scratch("name"), Builder::new(case.join("model.tar")).arena_group("two words")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    assert!(error.to_string().contains("two words"), "{error}");
}

/// With `link_section(Storage::Workspace, ..)` the group's arena is one real
/// definition in the section (a common symbol has none), in the group's own
/// library, which each member's Builder rewrites at the largest size and
/// strictest alignment so far; a member placing it elsewhere is refused.
#[test]
fn a_placed_group_arena_is_one_definition_in_the_section_at_the_largest_size() {
    let (Some(kws), Some(cnn)) = (common::corpus_case("kws_int8-aot_c_nousmp"), common::corpus_case("cnn_f32-graph")) else { return };
    let out = common::scratch("placed");
    let placed = |case: &Path, module: &str| {
        Builder::new(case.join("model.tar"))
            .rename_module("default", module)
            .arena_group("turns")
            .link_section(Storage::Workspace, ".sram2")
    };
    let mut largest = 0;
    let mut strictest = 1;
    for (case, module) in [(&kws, "kws"), (&cnn, "cnn")] {
        let output = build_in(&out, placed(case, module)).unwrap();
        largest = largest.max(output.modules[0].report.memory.group_scratch);
        strictest = strictest.max(output.modules[0].report.alignment);
    }
    let library = out.join("mlf/group-turns/libmlf_group_turns.a");
    let bytes = std::fs::read(&library).unwrap_or_else(|e| panic!("{}: {e}", library.display()));
    let archive = object::read::archive::ArchiveFile::parse(&*bytes).unwrap();
    let mut arenas = Vec::new();
    for member in archive.members() {
        let data = member.unwrap().data(&*bytes).unwrap();
        let file = object::File::parse(data).unwrap();
        for symbol in file.symbols().filter(|s| s.is_definition() && s.name().is_ok_and(|n| n.ends_with("mlf_arena_turns"))) {
            let section = file.section_by_index(symbol.section_index().unwrap()).unwrap();
            arenas.push((section.name().unwrap().to_string(), symbol.size(), section.align()));
        }
    }
    assert_eq!(arenas, [(".sram2".to_string(), largest, strictest)], "one arena of the largest member's size in {}", library.display());
    let elsewhere = Builder::new(kws.join("model.tar"))
        .rename_module("default", "again")
        .arena_group("turns")
        .link_section(Storage::Workspace, ".sram3");
    let error = build_in(&out, elsewhere).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    assert!(error.to_string().contains("placed in `.sram2` by an earlier member") && error.to_string().contains("not `.sram3`"), "{error}");
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

/// The members of the host fixture, as (case, module name).
const GROUP_MEMBERS: [(&str, &str); 3] = [("kws_int8-aot_c_nousmp", "kws"), ("kws_int8-aot_c_pools", "pools"), ("cnn_f32-graph", "cnn")];

/// A `memory.x` whose RAM holds the group (its arena counted once, at the
/// largest member) but not the members apart: each Builder's fit counts the
/// earlier Builders' modules too, so built apart the build fails, naming
/// what the models need and what the region gives; grouped it builds.
#[test]
fn memory_x_counts_the_group_s_arena_once_across_builders() {
    let Some(archives) =
        GROUP_MEMBERS.iter().map(|(case, _)| common::corpus_case(case).map(|dir| dir.join("model.tar"))).collect::<Option<Vec<_>>>()
    else {
        return;
    };
    if !cmsis_nn().is_dir() {
        return common::skip(&format!("no CMSIS-NN at {}", cmsis_nn().display()));
    }
    let plan = mlf_build::inspect_arena_group("turns", &archives, Some(cmsis_nn())).unwrap();
    let group = plan.arena_group.as_ref().unwrap();
    let saved = group.separate_static_ram() - group.static_ram();
    assert!(saved > 4096, "the group saves RAM: {saved}");
    // Half of what sharing saves is left over for the stepped runs' state, measured once compiled.
    let ram = group.ram() + saved / 2;
    let dir = common::scratch("fit-across-builders");
    let memory_x = dir.join("memory.x");
    std::fs::write(&memory_x, format!("MEMORY {{\n FLASH : ORIGIN = 0, LENGTH = 64M\n RAM : ORIGIN = 0x20000000, LENGTH = {ram}\n}}\n"))
        .unwrap();
    let member =
        |(archive, (_, module)): (&PathBuf, &(&str, &str))| Builder::new(archive).rename_module("default", *module).memory_x(&memory_x);

    let mut last = None;
    let mut own_and_io = 0;
    let mut largest = 0;
    for builder in archives.iter().zip(&GROUP_MEMBERS).map(member) {
        let output = build_in(&dir.join("grouped"), builder.arena_group("turns")).unwrap();
        let memory = &output.modules[0].report.memory;
        own_and_io += memory.ram();
        largest = largest.max(memory.group_scratch);
        last = output.memory_fit;
    }
    let fit = last.expect("a fit against the memory.x");
    let region = fit.regions.iter().find(|r| r.region == "RAM").unwrap();
    assert_eq!(region.used(), own_and_io + largest, "every member's own RAM and the arena once: {:?}", region.parts);
    let shared: Vec<_> = region.parts.iter().filter(|part| part.group.as_deref() == Some("turns")).collect();
    assert_eq!(shared.len(), 1, "{:?}", region.parts);
    assert_eq!((shared[0].what, shared[0].bytes), ("shared arena", largest));
    let modules: Vec<&str> = region.parts.iter().filter_map(|part| part.module.as_deref()).collect();
    assert!(["kws", "pools", "cnn"].iter().all(|m| modules.contains(m)), "the earlier Builders' modules are counted: {modules:?}");

    let apart = archives.iter().zip(&GROUP_MEMBERS).map(member).map(|builder| build_in(&dir.join("apart"), builder)).find_map(Result::err);
    let error = apart.expect("apart, the members do not fit");
    let text = error.to_string();
    assert_eq!(error.kind(), ErrorKind::DoesNotFit, "{text}");
    assert!(
        text.contains("the models need ") && text.contains(&format!("gives it {} B", common::doc_number(i64::try_from(ram).unwrap()))),
        "{text}"
    );
    assert!(text.contains("`kws` arena") && text.contains("`pools` workspace pools"), "each member's scratch is named: {text}");
}

/// The firmware proof's members: (corpus case, module name, its vector 0's
/// input file). tests/fixtures/arena-firmware builds what this lists
/// (MLF_ARENA_MEMBERS) and runs every module it built: a member is one line.
const FIRMWARE_MEMBERS: [(&str, &str, &str); 5] = [
    ("kws_int8-aot_c_nousmp", "kws", "inputs/input_1.bin"),
    ("kws_int8-aot_c_pools", "pools", "inputs/input_1.bin"),
    ("cnn_f32-graph", "cnn", "inputs/image.bin"),
    ("kws_int8-aot_c_usmp", "usmp", "inputs/input_1.bin"),
    ("etiss-vww-muriscvnn-rvv-tvm017", "vww", "vectors/zeros.bin"),
];

/// Shared with tests/corpus_qemu.rs and tests/embassy_steps.rs: the target crates built once.
const QEMU_TARGET_DIR: &str = "corpus-qemu";

#[test]
fn firmware_shares_one_arena_on_the_cortex_m4f() {
    firmware_proof("thumbv7em-none-eabihf", "qemu-system-arm");
}

#[test]
fn firmware_shares_one_arena_on_risc_v() {
    firmware_proof("riscv32imac-unknown-none-elf", "qemu-system-riscv32");
}

/// `cargo run` (or `build`) of tests/fixtures/arena-firmware for `triple`, in
/// group `turns` or apart, with a RAM of `ram` bytes or the board's.
fn firmware(verb: &str, triple: &str, grouped: bool, ram: Option<u64>) -> std::process::Output {
    let mut command = common::cargo(QEMU_TARGET_DIR);
    command
        .args([verb, "--release", "--locked", "--quiet", "--manifest-path"])
        .arg(common::repo_root().join("tests/fixtures/arena-firmware/Cargo.toml"))
        .args(["--target", triple])
        .env("MLF_TEST_CORPUS", common::corpus_dir().unwrap())
        .env("MLF_ARENA_GROUP", if grouped { "turns" } else { "" })
        .env("CMSIS_NN_PATH", cmsis_nn())
        .env(
            "MLF_ARENA_MEMBERS",
            FIRMWARE_MEMBERS.map(|(case, module, input)| format!("{}:{module}:{input}", corpus_relative(case))).join(";"),
        )
        .env("MLF_RAM_BYTES", ram.map_or_else(String::new, |bytes| bytes.to_string()))
        // The runner's board is the target's usual one, the one build.rs writes memory.x for.
        .env_remove("MLF_BOARD")
        .env_remove("MLF_QEMU_ICOUNT")
        .env_remove("MLF_QEMU_PLUGIN");
    command.output().expect("cargo runs")
}

/// The CMSIS-NN the CMSIS-NN member is built with (`CMSIS_NN_PATH` for the firmware's build script).
fn cmsis_nn() -> PathBuf {
    common::shared_dir().join("third-party/CMSIS-NN/v4.1.0")
}

/// A corpus case's folder below the corpus (`tvm-0.18/<case>`, `real-world/<case>`).
fn corpus_relative(case: &str) -> String {
    let dir = common::corpus_case(case).unwrap();
    dir.strip_prefix(common::corpus_dir().unwrap()).unwrap().to_string_lossy().into_owned()
}

/// `.bss` + `.data` (and RISC-V's small-data `.sbss`, `.sdata`) of the linked firmware.
fn static_ram(triple: &str) -> u64 {
    let program = common::repo_root().join("target").join(QEMU_TARGET_DIR).join(triple).join("release/arena-firmware");
    let bytes = std::fs::read(&program).unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let file = object::File::parse(&*bytes).unwrap();
    file.sections().filter(|s| s.name().is_ok_and(|n| [".bss", ".data", ".sbss", ".sdata"].contains(&n))).map(|s| s.size()).sum()
}

/// The firmware's outputs equal each member's `expected/` (within the case's tolerance).
fn check_outputs(stdout: &str, what: &str) {
    for (case, module, input) in FIRMWARE_MEMBERS {
        let case = common::case_at(&common::corpus_case(case).unwrap());
        let vector = &case.modules[0].vectors[0];
        assert!(vector.inputs[0].ends_with(input), "{}: the firmware runs vector 0's input, {}", case.name, vector.inputs[0].display());
        let prefix = format!("{module} output");
        let outputs: Vec<Vec<u8>> = stdout
            .lines()
            .filter_map(|line| line.strip_prefix(&prefix))
            .map(|line| common::decode_hex(line.split_once(": ").expect("`<i>: <hex>`").1).expect("hex"))
            .collect();
        if let Err(why) = common::check_vector(&case, 0, vector, &outputs) {
            panic!("{what}: {module}'s outputs are not {}'s expected/: {why}\n{stdout}", case.name);
        }
    }
}

/// The firmware proof for `triple`: the members built into one
/// firmware grouped and apart; both give `expected/`; the grouped firmware's
/// `.bss` + `.data` is the separate one's minus (sum - largest) of the
/// members' scratch, within 64 bytes; a `memory.x` whose RAM holds the group
/// but not the members apart builds grouped and fails apart, naming what the
/// models need and what the region gives.
fn firmware_proof(triple: &str, qemu: &str) {
    let installed = |program: &str, args: &[&str]| Command::new(program).args(args).output().is_ok_and(|o| o.status.success());
    if !installed("rustc", &["--print", "target-libdir", "--target", triple]) {
        return common::skip(&format!("the Rust target {triple} is not installed"));
    }
    if !installed(qemu, &["--version"]) {
        return common::skip(&format!("{qemu} is not installed"));
    }
    let Some(archives) =
        FIRMWARE_MEMBERS.iter().map(|(case, ..)| common::corpus_case(case).map(|d| d.join("model.tar"))).collect::<Option<Vec<_>>>()
    else {
        return;
    };
    if !cmsis_nn().is_dir() {
        return common::skip(&format!("no CMSIS-NN at {}", cmsis_nn().display()));
    }
    let plan = mlf_build::inspect_arena_group("turns", &archives, Some(cmsis_nn())).unwrap();
    let group = plan.arena_group.unwrap();
    let (largest, sum) = (group.arena_bytes(), group.separate_scratch_bytes());
    // Holds the group with room for the firmware's stack, but not the members apart; whole KiB,
    // since cortex-m-rt starts the stack at the region's end, which must be 8-byte aligned.
    let ram = (group.ram() + (sum - largest) / 2) / 1024 * 1024;

    let together = firmware("run", triple, true, Some(ram));
    let stdout = String::from_utf8_lossy(&together.stdout).into_owned();
    assert!(together.status.success(), "grouped firmware on {triple} failed:\n{}\n{stdout}", common::failure_text(&together));
    check_outputs(&stdout, &format!("grouped on {triple}"));
    let shared = static_ram(triple);

    let apart = firmware("run", triple, false, None);
    let stdout = String::from_utf8_lossy(&apart.stdout).into_owned();
    assert!(apart.status.success(), "firmware apart on {triple} failed:\n{}\n{stdout}", common::failure_text(&apart));
    check_outputs(&stdout, &format!("apart on {triple}"));
    let separate = static_ram(triple);
    let saved = separate.checked_sub(shared).unwrap_or_else(|| panic!("grouped {shared} B, apart {separate} B"));
    assert!(
        saved.abs_diff(sum - largest) <= 64,
        "{triple}: .bss + .data {separate} B apart, {shared} B grouped: saves {saved} B, not sum - largest = {} B",
        sum - largest
    );

    let refused = firmware("build", triple, false, Some(ram));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "apart, the members do not fit {ram} B of RAM, yet the build passed");
    assert!(
        stderr.contains("the models need ") && stderr.contains(&format!("gives it {} B", common::doc_number(i64::try_from(ram).unwrap()))),
        "{stderr}"
    );

    let mut figures = common::DocFigures::default();
    let table = common::doc_section("arena-groups.md", "## On firmware: the figures");
    let measured = [FIRMWARE_MEMBERS.len() as u64, largest, sum, shared, separate].map(|value| i64::try_from(value).unwrap());
    figures.row(&table, &format!("`{triple}`"), &measured, "tests/arena_groups.rs's firmware proof");
    figures.check();
    let _ = writeln!(
        std::io::stdout().lock(),
        "arena: turns [{triple}] PASS ({} members, shared {shared} B, separate {separate} B)",
        FIRMWARE_MEMBERS.len()
    );
}
