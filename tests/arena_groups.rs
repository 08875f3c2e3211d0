//! Arena groups (issue 35): modules that take turns share one arena.

mod common;

use std::path::PathBuf;
use std::process::Command;

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
    Linker { name: "riscv64-unknown-elf ld", compiler: "riscv64-unknown-elf-gcc", flags: &["-march=rv32imac", "-mabi=ilp32"], rust_lld: false },
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
