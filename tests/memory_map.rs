//! The memory map as a contract the build enforces: a model that does not fit
//! the `memory.x` fails to build, and `Builder::link_section` places its
//! memory where the linker script says, on the host and on firmware under QEMU.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Firmware;

const CASE: &str = "kws_int8-aot_c_usmp";
/// Shared with tests/corpus_qemu.rs and tests/corpus_host.rs: one build of the runners' dependencies.
const QEMU_TARGET_DIR: &str = "corpus-qemu";
const HOST_TARGET_DIR: &str = "corpus-host";
const TRIPLE: &str = "thumbv7em-none-eabihf";

/// The case, its first vector's inputs and the workspace its code reserves (USMP).
fn case() -> Option<(common::Case, Vec<PathBuf>, u64)> {
    let dir = common::corpus_case(CASE)?;
    let case = common::case_at(&dir);
    let inputs = case.modules[0].vectors[0].inputs.clone();
    let inspection = mlf_build::inspect(&case.archive).unwrap();
    let workspace = inspection.modules[0].memory.code_workspace;
    assert!(workspace > 8 * 1024, "the case must need more than the small RAM below");
    Some((case, inputs, workspace))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// mps2-an386's memory as the runner's own memory.x gives it, but an 8 KiB RAM.
const SMALL_RAM: &str = "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 4096K\n  RAM : ORIGIN = 0x20000000, LENGTH = 8K\n}\n";

/// mps2-an386's SRAM split into two banks, `.sram2` placed in the second.
const TWO_BANKS: &str = "MEMORY
{
  FLASH : ORIGIN = 0x00000000, LENGTH = 4096K
  RAM : ORIGIN = 0x20000000, LENGTH = 2048K
  SRAM2 : ORIGIN = 0x20200000, LENGTH = 1024K
}
SECTIONS
{
  .sram2 (NOLOAD) : ALIGN(16) { *(.sram2 .sram2.*) } > SRAM2
} INSERT AFTER .bss;
";
const SRAM2_ORIGIN: u64 = 0x2020_0000;

/// QEMU `virt`'s data RAM split the same way, with the aliases riscv-rt needs.
const TWO_BANKS_RISCV: &str = "MEMORY
{
  FLASH : ORIGIN = 0x80000000, LENGTH = 16M
  RAM : ORIGIN = 0x81000000, LENGTH = 8M
  SRAM2 : ORIGIN = 0x81800000, LENGTH = 8M
}
REGION_ALIAS(\"REGION_TEXT\", FLASH);
REGION_ALIAS(\"REGION_RODATA\", FLASH);
REGION_ALIAS(\"REGION_DATA\", RAM);
REGION_ALIAS(\"REGION_BSS\", RAM);
REGION_ALIAS(\"REGION_HEAP\", RAM);
REGION_ALIAS(\"REGION_STACK\", RAM);
SECTIONS
{
  .sram2 (NOLOAD) : ALIGN(16) { *(.sram2 .sram2.*) } > SRAM2
} INSERT AFTER .bss;
";
const RISCV_TRIPLE: &str = "riscv32imac-unknown-none-elf";

#[test]
fn firmware_that_does_not_fit_fails_and_a_second_bank_holds_the_workspace() {
    let Some((case, inputs, workspace)) = case() else { return };
    if Command::new("qemu-system-arm").arg("--version").output().is_err() {
        common::skip("memory_map: qemu-system-arm is not installed (../shared/rig/README.md)");
        return;
    }
    let dir = common::scratch("memory-map-qemu");
    let small = write(&dir, "small-memory.x", SMALL_RAM);
    let small_text = small.display().to_string();
    let error = firmware(&[("MLF_MEMORY_X", small_text.as_str())]).run(&case, None, &inputs).unwrap_err();
    assert!(
        error.contains("model `default` needs ")
            && error.contains("B of RAM in region `RAM` (workspace ")
            && error.contains("gives it 8,192 B"),
        "{error}"
    );
    let stated = error.split("(workspace ").nth(1).and_then(|rest| rest.split([' ', ')']).next()).map(|n| n.replace(',', ""));
    assert_eq!(stated, Some(workspace.to_string()), "{error}");

    let banks = write(&dir, "two-banks-memory.x", TWO_BANKS);
    let banks_text = banks.display().to_string();
    let outputs = firmware(&[("MLF_MEMORY_X", banks_text.as_str()), ("MLF_LINK_SECTIONS", "workspace=.sram2")])
        .run(&case, None, &inputs)
        .unwrap_or_else(|why| panic!("{why}"));
    common::check_vector(&case, 0, &case.modules[0].vectors[0], &outputs).unwrap();
    let elf = common::repo_root().join("target").join(QEMU_TARGET_DIR).join(TRIPLE).join("release/cortex-m-runner");
    assert_workspace_in_sram2(&elf, "arm-none-eabi-", SRAM2_ORIGIN, workspace);
    let said = format!("holding the {}-byte `global_workspace`", common::doc_number(workspace as i64));
    let section: Vec<String> = common::doc_section("memory.md", "## Will it fit?").into_iter().map(|(_, line)| line).collect();
    assert!(section.join(" ").contains(&said), "memory.md's Will it fit? must say `{said}`, the size this firmware's .sram2 holds");

    // RISC-V: riscv-rt's linker script, `.sbss` among the renamed sections.
    if Command::new("qemu-system-riscv32").arg("--version").output().is_err() {
        common::skip("memory_map: qemu-system-riscv32 is not installed (../shared/rig/README.md)");
        return;
    }
    let banks = write(&dir, "two-banks-riscv-memory.x", TWO_BANKS_RISCV);
    let banks_text = banks.display().to_string();
    let env = [("MLF_MEMORY_X", banks_text.as_str()), ("MLF_LINK_SECTIONS", "workspace=.sram2")];
    let riscv = Firmware { triple: RISCV_TRIPLE, target_cpu: None, board: Some("virt"), target_dir: QEMU_TARGET_DIR, env: &env };
    let outputs = riscv.run(&case, None, &inputs).unwrap_or_else(|why| panic!("{why}"));
    common::check_vector(&case, 0, &case.modules[0].vectors[0], &outputs).unwrap();
    let elf = common::repo_root().join("target").join(QEMU_TARGET_DIR).join(RISCV_TRIPLE).join("release/cortex-m-runner");
    assert_workspace_in_sram2(&elf, "riscv64-unknown-elf-", 0x8180_0000, workspace);
}

/// The firmware's `.sram2` starts at `origin` and holds a symbol the size of the workspace.
fn assert_workspace_in_sram2(elf: &Path, tools: &str, origin: u64, workspace: u64) {
    let (address, size) = section(elf, ".sram2", &format!("{tools}readelf")).expect("the firmware has a .sram2 section");
    assert_eq!(address, origin);
    assert!(size >= workspace, ".sram2 holds {size} bytes, the workspace is {workspace}");
    let workspace_symbol = symbol_in(elf, &format!("{tools}nm"), origin, size, workspace);
    assert!(workspace_symbol.is_some(), "no symbol of {workspace} bytes in .sram2");
}

#[test]
fn host_builds_place_workspace_and_constants_and_run_the_same() {
    let Some((case, inputs, workspace)) = case() else { return };
    let expected = &case.modules[0].vectors[0];
    let plain = common::run_on_host::<&str>(HOST_TARGET_DIR, &case.archive, &[], &inputs, 1).unwrap();
    let placed =
        common::run_on_host(HOST_TARGET_DIR, &case.archive, &[("MLF_LINK_SECTIONS", "workspace=.sram2,constants=.ext_flash")], &inputs, 1)
            .unwrap();
    common::check_vector(&case, 0, expected, &placed.outputs).unwrap();
    assert_eq!(plain.outputs, placed.outputs);
    let binary = common::repo_root().join("target").join(HOST_TARGET_DIR).join("release/host-runner");
    let (_, sram2) = section(&binary, ".sram2", "readelf").expect("the host binary has a .sram2 section");
    assert!(sram2 >= workspace, ".sram2 holds {sram2} bytes, the workspace is {workspace}");
    let constants = mlf_build::inspect(&case.archive).unwrap().modules[0].memory.constants;
    let (_, flash) = section(&binary, ".ext_flash", "readelf").expect("the host binary has an .ext_flash section");
    assert!(flash >= constants, ".ext_flash holds {flash} bytes, the constants are {constants}");
}

/// The M4F firmware on its usual board, with `env` added to the build's environment.
fn firmware<'a>(env: &'a [(&'a str, &'a str)]) -> Firmware<'a> {
    Firmware { triple: TRIPLE, target_cpu: None, board: None, target_dir: QEMU_TARGET_DIR, env }
}

/// `name`'s address and size in the ELF at `path`, from `readelf -SW`.
fn section(path: &Path, name: &str, readelf: &str) -> Option<(u64, u64)> {
    let output = Command::new(readelf).arg("-SW").arg(path).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().find(|line| line.split_whitespace().any(|word| word == name))?;
    // `[Nr] Name Type Address Off Size ...`: the fields after the name.
    let fields: Vec<&str> = line.split(']').nth(1)?.split_whitespace().collect();
    Some((u64::from_str_radix(fields.get(2)?, 16).ok()?, u64::from_str_radix(fields.get(4)?, 16).ok()?))
}

/// A symbol of at least `bytes` inside `[start, start + len)`, from `nm -S`.
fn symbol_in(path: &Path, nm: &str, start: u64, len: u64, bytes: u64) -> Option<String> {
    let output = Command::new(nm).arg("-S").arg(path).output().ok()?;
    String::from_utf8_lossy(&output.stdout).lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [address, size, _, name] = fields.as_slice() else { return None };
        let (address, size) = (u64::from_str_radix(address, 16).ok()?, u64::from_str_radix(size, 16).ok()?);
        (address >= start && address + size <= start + len && size >= bytes).then(|| name.to_string())
    })
}
