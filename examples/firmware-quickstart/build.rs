//! Builds the model for the firmware's target and puts `memory.x` where
//! cortex-m-rt's `link.x` looks for it.

use std::path::PathBuf;

/// The archive to build: here a case of the corpus beside this repository
/// (relative paths start at this crate's root). Put your own `model.tar` here.
const ARCHIVE: &str = "../../../shared/mlf-corpus/tvm-0.18/kws_int8-aot_c_usmp/model.tar";

fn main() -> Result<(), mlf_build::Error> {
    // The linker runs elsewhere: it finds memory.x in OUT_DIR, on its search path.
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("Cargo sets OUT_DIR"));
    std::fs::copy("memory.x", out_dir.join("memory.x")).expect("memory.x is readable");
    println!("cargo:rustc-link-search={}", out_dir.display());
    println!("cargo:rerun-if-changed=memory.x");

    // Writes $OUT_DIR/mlf/default.rs and links the compiled C; it also checks
    // that the model fits the regions of memory.x.
    mlf_build::Builder::new(ARCHIVE).build()?;
    Ok(())
}
