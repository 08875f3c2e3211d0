//! Builds the archive named by MLF_ARCHIVE (default: the project's demo archive);
//! main.rs includes `$OUT_DIR/mlf/mod.rs` and picks a module through `mlf_rt::Model`.

use std::path::PathBuf;

fn main() -> Result<(), mlf_build::Error> {
    println!("cargo:rerun-if-env-changed=MLF_ARCHIVE");
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    // Relative paths are taken from the workspace root, where the README's
    // commands run, as in every runner (a build script runs in its package's folder).
    let root = manifest_dir.join("../..");
    let (archive, is_demo) = match std::env::var("MLF_ARCHIVE") {
        Ok(path) if !path.is_empty() => (root.join(path), false),
        _ => (manifest_dir.join("../demo-model"), true),
    };
    mlf_build::Builder::new(&archive).implement_mlf_rt(true).build()?;
    println!("cargo:rustc-env=MLF_RUNNER_ARCHIVE={}", archive.display());
    if is_demo {
        println!("cargo:rustc-cfg=demo_archive");
    }
    println!("cargo:rustc-check-cfg=cfg(demo_archive)");
    Ok(())
}
