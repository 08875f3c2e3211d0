//! Builds the archive named by MLF_ARCHIVE (default: the project's demo
//! archive) for the firmware's target, embeds the raw inputs named by
//! MLF_INPUTS (comma-separated, declaration order; default: zeros, or the
//! demo's own input) and writes the `memory.x` of the board MLF_BOARD names
//! (default: the target's usual board; `.cargo/config.toml`'s runner starts
//! the same board in QEMU), or the one MLF_MEMORY_X names, which the model
//! must fit; MLF_LINK_SECTIONS (`workspace=.sram2`) places its memory.
//! MLF_PROFILE=1 builds it with `Builder::profile(true)`: the firmware then
//! times each operator call (run it with MLF_QEMU_ICOUNT=1). MLF_STEPPED=0
//! leaves out the second, stepped run of the inputs.

use std::fmt::Write;
use std::path::{Path, PathBuf};

/// A QEMU board: its name (QEMU's `-M`), code and data memory, and the rate
/// of the counter a profiled firmware reads: SysTick on the processor clock
/// (QEMU 7.2's `SYSCLK_FRQ` in hw/arm/mps2.c, `sysclk_frq` in hw/arm/mps2-tz.c),
/// or RISC-V's `mcycle`, which under `-icount shift=0` counts the virtual nanoseconds.
struct Board {
    name: &'static str,
    code: (u32, &'static str),
    data: (u32, &'static str),
    clock_hz: u64,
}

/// The boards the runner knows, with the memory QEMU gives each (SSRAM or TCM for code, SRAM for data).
const BOARDS: &[Board] = &[
    Board { name: "mps2-an385", code: (0x0000_0000, "4096K"), data: (0x2000_0000, "4096K"), clock_hz: 25_000_000 },
    Board { name: "mps2-an386", code: (0x0000_0000, "4096K"), data: (0x2000_0000, "4096K"), clock_hz: 25_000_000 },
    Board { name: "mps2-an500", code: (0x0000_0000, "4096K"), data: (0x2000_0000, "4096K"), clock_hz: 25_000_000 },
    // Starts in the secure state: code in the secure alias of SSRAM1, data in that of SSRAM2/3.
    Board { name: "mps2-an505", code: (0x1000_0000, "4096K"), data: (0x3800_0000, "4096K"), clock_hz: 20_000_000 },
    // Code in the 512 KiB ITCM, data in the 2 MiB SRAM.
    Board { name: "mps3-an547", code: (0x0000_0000, "512K"), data: (0x0100_0000, "2048K"), clock_hz: 32_000_000 },
    // RAM only, from 0x80000000, where `-bios none` starts.
    Board { name: "virt", code: (0x8000_0000, "16M"), data: (0x8100_0000, "16M"), clock_hz: 1_000_000_000 },
];

/// The board a target runs on when MLF_BOARD names none (as `.cargo/qemu-runner` picks it too).
fn default_board(target: &str) -> &'static str {
    match target.split('-').next().unwrap_or_default() {
        "thumbv6m" | "thumbv7m" => "mps2-an385",
        "thumbv8m.main" => "mps2-an505",
        arch if arch.starts_with("riscv") => "virt",
        _ => "mps2-an386",
    }
}

/// `memory.x` for the board: cortex-m-rt wants FLASH and RAM, riscv-rt the REGION_* aliases too.
fn memory_x_text(board: &Board, riscv: bool) -> String {
    let mut text = format!(
        "MEMORY\n{{\n  FLASH : ORIGIN = {:#010x}, LENGTH = {}\n  RAM : ORIGIN = {:#010x}, LENGTH = {}\n}}\n",
        board.code.0, board.code.1, board.data.0, board.data.1
    );
    if riscv {
        for (region, memory) in [("TEXT", "FLASH"), ("RODATA", "FLASH"), ("DATA", "RAM"), ("BSS", "RAM"), ("HEAP", "RAM"), ("STACK", "RAM")]
        {
            writeln!(text, "REGION_ALIAS(\"REGION_{region}\", {memory});").unwrap();
        }
    }
    text
}

/// x = [1, 2, 3, 4] as float32 (examples/demo-model/README.md).
const DEMO_INPUT: [f32; 4] = [1.0, 2.0, 3.0, 4.0];

fn var(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by Cargo"));
    // Relative paths are taken from the repository root, where the README's commands run.
    let root = manifest_dir.join("../..");
    let given = var("MLF_ARCHIVE");
    let archive = given.as_ref().map(|path| root.join(path));
    let is_demo = archive.is_none();
    let archive = archive.unwrap_or_else(|| manifest_dir.join("../demo-model"));

    // The board's memory.x (or MLF_MEMORY_X's) is the one the firmware links
    // with and the one the model is checked against.
    let target = std::env::var("TARGET").expect("set by Cargo");
    let memory_x = out_dir.join("memory.x");
    let board_name = var("MLF_BOARD").unwrap_or_else(|| default_board(&target).to_string());
    let Some(board) = BOARDS.iter().find(|board| board.name == board_name) else {
        let names: Vec<&str> = BOARDS.iter().map(|board| board.name).collect();
        eprintln!("cortex-m-runner: MLF_BOARD={board_name} is not a board the runner knows; it knows {names:?}");
        std::process::exit(1);
    };
    match var("MLF_MEMORY_X") {
        Some(path) => {
            let path = root.join(path);
            println!("cargo:rerun-if-changed={}", path.display());
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("MLF_MEMORY_X: {}: {e}", path.display()));
            write_if_changed(&memory_x, &text);
        }
        None => write_if_changed(&memory_x, &memory_x_text(board, target.starts_with("riscv"))),
    }
    println!("cargo:rustc-link-search={}", out_dir.display());

    println!("cargo::rustc-check-cfg=cfg(mlf_profile)");
    println!("cargo::rustc-check-cfg=cfg(mlf_stepped)");
    // MLF_STEPPED=0 leaves out the stepped run (examples/footprint measures a firmware that only runs).
    if var("MLF_STEPPED").is_none_or(|value| value != "0") {
        println!("cargo:rustc-cfg=mlf_stepped");
    }
    let profile = var("MLF_PROFILE").is_some_and(|value| value == "1");
    if profile {
        println!("cargo:rustc-cfg=mlf_profile");
    }
    let mut builder = mlf_build::Builder::new(&archive).implement_mlf_rt(true).memory_x(&memory_x).profile(profile);
    // `workspace=.sram2,constants=.ext_flash`: sections the memory.x places.
    for placement in var("MLF_LINK_SECTIONS").iter().flat_map(|list| list.split(',')) {
        let (storage, section) = placement.split_once('=').expect("MLF_LINK_SECTIONS: <storage>=<section>, comma-separated");
        builder = builder.link_section(storage.parse().unwrap_or_else(|e| panic!("MLF_LINK_SECTIONS: {e}")), section);
    }
    let output = match builder.build() {
        Ok(output) => output,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let wanted = var("MLF_MODULE");
    let module = match &wanted {
        Some(name) => output.modules.iter().find(|m| &m.name == name),
        None => output.modules.first(),
    };
    let Some(module) = module else {
        let names: Vec<&str> = output.modules.iter().map(|m| m.name.as_str()).collect();
        eprintln!("cortex-m-runner: no module {wanted:?} in {}; it has {names:?} (set MLF_MODULE)", archive.display());
        std::process::exit(1);
    };

    let mut inputs: Vec<PathBuf> = var("MLF_INPUTS").map(|list| list.split(',').map(|path| root.join(path)).collect()).unwrap_or_default();
    if is_demo && inputs.is_empty() {
        let demo = out_dir.join("demo-input0.bin");
        let bytes: Vec<u8> = DEMO_INPUT.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(&demo, bytes).expect("OUT_DIR is writable");
        inputs.push(demo);
    }

    let mut firmware = String::new();
    writeln!(firmware, "/// The model: module `{}` of the archive.", module.name).unwrap();
    writeln!(firmware, "#[allow(dead_code)]\nmod model {{\n    include!({:?});\n}}", module.rust_file).unwrap();
    writeln!(firmware, "/// The model's stack bound (`STACK_BYTES`), or why it has none.").unwrap();
    match (module.report.stack.bytes, &module.report.stack.unknown) {
        (Some(_), _) => writeln!(firmware, "const STACK_BOUND: Result<usize, &str> = Ok(model::STACK_BYTES);").unwrap(),
        (None, why) => {
            writeln!(firmware, "const STACK_BOUND: Result<usize, &str> = Err({:?});", why.as_deref().unwrap_or_default()).unwrap()
        }
    }
    if profile {
        writeln!(firmware, "/// The rate the profiling clock counts at on {} (build.rs's `BOARDS`).", board.name).unwrap();
        writeln!(firmware, "const CLOCK_HZ: u64 = {};", board.clock_hz).unwrap();
    }
    writeln!(firmware, "/// The archive the firmware was built from.").unwrap();
    // As given, not joined to the checkout's place: the firmware's size must not depend on it.
    let shown = given.unwrap_or_else(|| "examples/demo-model".to_string());
    writeln!(firmware, "const ARCHIVE: &str = {shown:?};").unwrap();
    for (index, path) in inputs.iter().enumerate() {
        println!("cargo:rerun-if-changed={}", path.display());
        let len = std::fs::metadata(path).unwrap_or_else(|e| panic!("MLF_INPUTS: {}: {e}", path.display())).len();
        writeln!(firmware, "static INPUT_{index}: Aligned<{len}> = Aligned(*include_bytes!({:?}));", path.display().to_string()).unwrap();
        writeln!(
            firmware,
            "const _: () = assert!(input_fits({index}, {len}), \"MLF_INPUTS: file {index} is not the size of the model's input {index}\");"
        )
        .unwrap();
    }
    let statics: Vec<String> = (0..inputs.len()).map(|i| format!("&INPUT_{i}.0")).collect();
    writeln!(firmware, "/// The embedded input files, in declaration order (none: zeros).").unwrap();
    writeln!(firmware, "static INPUT_FILES: [&[u8]; {}] = [{}];", inputs.len(), statics.join(", ")).unwrap();
    writeln!(
        firmware,
        "const _: () = assert!(INPUT_FILES.is_empty() || INPUT_FILES.len() == model::INPUTS.len(), \"MLF_INPUTS names {} files; the model has a different number of inputs\");",
        inputs.len()
    )
    .unwrap();
    write_if_changed(&out_dir.join("firmware.rs"), &firmware);
    // For examples/footprint: what the model needs, next to what the firmware takes.
    let needs = &module.memory;
    let report = format!(
        "module {}\nsymbol_prefix {}\nconstants {}\nconstant_pools {}\nworkspace {}\npools {}\nio {}\ninputs {}\ntvm_graph_plan {}\n",
        module.name,
        output.symbol_prefix,
        needs.constants,
        needs.constant_pools,
        needs.code_workspace + needs.arena + needs.storage,
        needs.pools,
        needs.inputs + needs.outputs,
        needs.inputs,
        needs.tvm_graph_plan
    );
    write_if_changed(&out_dir.join("model-needs.txt"), &report);
}

/// Unchanged files keep their timestamps, so Cargo does not relink for nothing.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read(path).ok().as_deref() != Some(text.as_bytes()) {
        std::fs::write(path, text).expect("OUT_DIR is writable");
    }
}
