//! Builds the model for the firmware's target and writes the `memory.x` of
//! the QEMU board it runs on, where cortex-m-rt's or riscv-rt's `link.x`
//! finds it (`.cargo/config.toml` at the repository's root links with them).

use std::path::{Path, PathBuf};

/// The archive and its input when MLF_ARCHIVE and MLF_INPUT name none: a case
/// of the corpus beside this repository (relative paths start at this crate's
/// root). Put your own `model.tar` and input file here.
const ARCHIVE: &str = "../../../shared/mlf-corpus/tvm-0.18/kws_int8-aot_c_usmp/model.tar";
const INPUT: &str = "../../../shared/mlf-corpus/tvm-0.18/kws_int8-aot_c_usmp/inputs/input_1.bin";

/// QEMU's mps2 boards (Cortex-M): 4 MiB of code memory at 0, 4 MiB of RAM at 0x20000000.
const MPS2_MEMORY_X: &str = "MEMORY
{
  FLASH : ORIGIN = 0x00000000, LENGTH = 4096K
  RAM : ORIGIN = 0x20000000, LENGTH = 4096K
}
";

/// QEMU's RISC-V `virt` board, started with `-bios none`: RAM only, from
/// 0x80000000; riscv-rt places its sections by the REGION_* aliases.
const VIRT_MEMORY_X: &str = "MEMORY
{
  FLASH : ORIGIN = 0x80000000, LENGTH = 16M
  RAM : ORIGIN = 0x81000000, LENGTH = 16M
}
REGION_ALIAS(\"REGION_TEXT\", FLASH);
REGION_ALIAS(\"REGION_RODATA\", FLASH);
REGION_ALIAS(\"REGION_DATA\", RAM);
REGION_ALIAS(\"REGION_BSS\", RAM);
REGION_ALIAS(\"REGION_HEAP\", RAM);
REGION_ALIAS(\"REGION_STACK\", RAM);
";

/// The path an environment variable names, or `default`.
fn path_from(variable: &str, default: &str) -> PathBuf {
    println!("cargo:rerun-if-env-changed={variable}");
    let path = std::env::var_os(variable).filter(|value| !value.is_empty()).map_or_else(|| PathBuf::from(default), PathBuf::from);
    // Cargo runs build scripts in the crate's root; the firmware's `include_bytes!` needs the whole path.
    std::fs::canonicalize(&path).unwrap_or_else(|e| panic!("{variable}: {}: {e}", path.display()))
}

fn main() -> Result<(), mlf_build::Error> {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("Cargo sets OUT_DIR"));
    let memory_x = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("arm") => MPS2_MEMORY_X,
        Ok("riscv32") => VIRT_MEMORY_X,
        other => panic!("embassy-steps runs on Cortex-M (mps2) or 32-bit RISC-V (virt) boards, not on target_arch {other:?}"),
    };
    write_if_changed(&out_dir.join("memory.x"), memory_x);
    // The linker runs elsewhere: it finds memory.x in OUT_DIR, on its search path.
    println!("cargo:rustc-link-search={}", out_dir.display());

    let input = path_from("MLF_INPUT", INPUT);
    println!("cargo:rerun-if-changed={}", input.display());
    println!("cargo:rustc-env=MODEL_INPUT={}", input.display());

    // Writes $OUT_DIR/mlf/default.rs and links the compiled C; it also checks
    // that the model fits the regions of memory.x.
    mlf_build::Builder::new(path_from("MLF_ARCHIVE", ARCHIVE)).memory_x(out_dir.join("memory.x")).build()?;
    Ok(())
}

/// Unchanged files keep their timestamps, so Cargo does not relink for nothing.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read(path).ok().as_deref() != Some(text.as_bytes()) {
        std::fs::write(path, text).expect("OUT_DIR is writable");
    }
}
