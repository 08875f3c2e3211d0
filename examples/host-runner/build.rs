//! Builds the archive named by MLF_ARCHIVE (default: the project's demo archive),
//! its memory in the sections MLF_LINK_SECTIONS names;
//! main.rs includes `$OUT_DIR/mlf/mod.rs` and picks a module through `mlf_rt::Model`.
//! With MLF_PROFILE=1 the model is built with `Builder::profile(true)` and
//! `$OUT_DIR/profiled.rs` names its module, for `--profile`.

use std::path::{Path, PathBuf};

fn main() -> Result<(), mlf_build::Error> {
    println!("cargo:rerun-if-env-changed=MLF_ARCHIVE");
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    // Relative paths are taken from the workspace root, where the README's
    // commands run, as in every runner (a build script runs in its package's folder).
    let root = manifest_dir.ancestors().nth(2).expect("examples/host-runner is two folders below the workspace root");
    let given = std::env::var("MLF_ARCHIVE").ok().filter(|path| !path.is_empty());
    let (archive, is_demo) = match &given {
        Some(path) => (root.join(path), false),
        None => (manifest_dir.join("../demo-model"), true),
    };
    let mut builder = mlf_build::Builder::new(&archive).implement_mlf_rt(true);
    // `workspace=.sram2,constants=.ext_flash`: the model's memory in sections of its own.
    println!("cargo:rerun-if-env-changed=MLF_LINK_SECTIONS");
    for placement in std::env::var("MLF_LINK_SECTIONS").iter().flat_map(|list| list.split(',')).filter(|p| !p.is_empty()) {
        let (storage, section) = placement.split_once('=').expect("MLF_LINK_SECTIONS: <storage>=<section>, comma-separated");
        builder = builder.link_section(storage.parse()?, section);
    }
    println!("cargo:rerun-if-env-changed=MLF_PROFILE");
    let profile = std::env::var("MLF_PROFILE").is_ok_and(|value| value == "1");
    builder = builder.profile(profile);
    let output = builder.build().inspect_err(|_| {
        // The Builder saw an absolute path: the base it was taken from is this script's to name.
        if let Some(path) = given.as_deref().filter(|path| Path::new(path).is_relative() && !archive.exists()) {
            eprintln!(
                "host-runner: MLF_ARCHIVE `{path}` is taken from the workspace root {}, not from where cargo runs \
                 (docs/src/using-it.md, \"The host runner\"): give a path from there, or an absolute one",
                root.display()
            );
        }
    })?;
    if profile {
        // Profiling refuses archives of several modules: there is one.
        let module = &output.modules[0].name;
        let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by Cargo"));
        let path = out_dir.join("profiled.rs");
        let text = format!("pub use super::models::{module} as model;\n");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        println!("cargo:rustc-cfg=mlf_profile");
    }
    println!("cargo:rustc-check-cfg=cfg(mlf_profile)");
    println!("cargo:rustc-env=MLF_RUNNER_ARCHIVE={}", archive.display());
    if is_demo {
        println!("cargo:rustc-cfg=demo_archive");
    }
    println!("cargo:rustc-check-cfg=cfg(demo_archive)");
    Ok(())
}
