//! The Builder called in-process, as a build script would, on the demo archive
//! and on broken or hostile ones.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mlf_build::{Builder, ErrorKind};

mod common;

/// The Builder reads OUT_DIR and friends from the process environment.
static ENV: Mutex<()> = Mutex::new(());

fn demo_archive() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-model")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/builder-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `f` with the variables Cargo gives a build script, OUT_DIR = `out_dir`.
fn in_build_script<T>(out_dir: &Path, f: impl FnOnce() -> T) -> T {
    in_build_script_for(out_dir, &common::host_triple(), &[], f)
}

/// Like [`in_build_script`] for `target`, with `extra` variables set only during `f`.
fn in_build_script_for<T>(out_dir: &Path, target: &str, extra: &[(&str, &str)], f: impl FnOnce() -> T) -> T {
    let _guard = ENV.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let host = common::host_triple();
    for (key, value) in [("OUT_DIR", out_dir.to_str().unwrap()), ("TARGET", target), ("HOST", &host), ("OPT_LEVEL", "0"), ("DEBUG", "false")] {
        std::env::set_var(key, value);
    }
    for (key, value) in extra {
        std::env::set_var(key, value);
    }
    let result = f();
    for (key, _) in extra {
        std::env::remove_var(key);
    }
    result
}

fn tar_with(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in entries {
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    builder.into_inner().unwrap()
}

#[test]
fn same_archive_gives_the_same_rust_in_any_out_dir() {
    let first = scratch("determinism-a");
    let second = scratch("determinism-b");
    let a = in_build_script(&first, || Builder::new(demo_archive()).build()).unwrap();
    let b = in_build_script(&second, || Builder::new(demo_archive()).build()).unwrap();
    assert_eq!(a.modules.len(), 1);
    assert_eq!(a.modules[0].name, "default");
    assert_eq!(a.modules[0].rust_file, first.join("mlf/default.rs"));
    let text_a = std::fs::read(&a.modules[0].rust_file).unwrap();
    let text_b = std::fs::read(&b.modules[0].rust_file).unwrap();
    assert!(text_a == text_b, "generated Rust differs between OUT_DIRs");
}

#[test]
fn unchanged_archive_is_not_compiled_or_written_again() {
    let out = scratch("cache");
    let output = in_build_script(&out, || Builder::new(demo_archive()).build()).unwrap();
    let library = out.join("mlf/build/default/lib/libmlf_default.a");
    let modified = |path: &Path| std::fs::metadata(path).unwrap().modified().unwrap();
    let (library_time, rust_time) = (modified(&library), modified(&output.modules[0].rust_file));
    std::thread::sleep(std::time::Duration::from_millis(20));
    in_build_script(&out, || Builder::new(demo_archive()).build()).unwrap();
    assert_eq!(modified(&library), library_time, "the library was rebuilt");
    assert_eq!(modified(&output.modules[0].rust_file), rust_time, "the Rust file was rewritten");
}

#[test]
fn a_directory_without_metadata_is_not_an_mlf_archive() {
    let out = scratch("not-mlf");
    let input = out.join("input/codegen/host/src");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("lib0.c"), "int x;").unwrap();
    let error = in_build_script(&out, || Builder::new(out.join("input")).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotMlf);
    let text = error.to_string();
    assert!(text.contains("metadata.json") && text.contains("input"), "{text}");
}

#[test]
fn hostile_entries_are_refused_and_nothing_escapes_out_dir() {
    let out = scratch("hostile");
    let archive = out.join("evil.tar");
    std::fs::write(&archive, tar_with(&[(b"./metadata.json", b"{}"), (b"../escaped.txt", b"x")])).unwrap();
    let error = in_build_script(&out.join("out"), || Builder::new(&archive).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnsafeEntry);
    assert!(error.to_string().contains("../escaped.txt"), "{error}");
    assert_eq!(error.archive(), Some(archive.as_path()));
    assert!(!out.join("escaped.txt").exists() && !out.join("out/escaped.txt").exists());
}

#[test]
fn an_unknown_metadata_version_names_itself_and_the_supported_range() {
    let out = scratch("version");
    let archive = out.join("future.tar");
    std::fs::write(&archive, tar_with(&[(b"./metadata.json", br#"{"version": 99, "modules": {}}"#)])).unwrap();
    let error = in_build_script(&out.join("out"), || Builder::new(&archive).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnsupportedVersion);
    let text = error.to_string();
    assert!(text.contains("99") && text.contains("metadata.json"), "{text}");
}

#[test]
fn a_missing_cross_compiler_names_the_target_and_the_package() {
    let out = scratch("no-cross-cc");
    let extra = [("CC_thumbv7em_none_eabihf", "no-such-arm-gcc")];
    let error = in_build_script_for(&out, "thumbv7em-none-eabihf", &extra, || Builder::new(demo_archive()).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Toolchain);
    let text = error.to_string();
    assert!(text.contains("thumbv7em-none-eabihf") && text.contains("no-such-arm-gcc") && text.contains("gcc-arm-none-eabi"), "{text}");
}

#[test]
fn a_flag_changing_the_float_abi_of_an_eabihf_target_is_refused() {
    let out = scratch("float-abi");
    let extra = [("CFLAGS_thumbv7em_none_eabihf", "-mfloat-abi=softfp")];
    let error = in_build_script_for(&out, "thumbv7em-none-eabihf", &extra, || Builder::new(demo_archive()).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.to_string().contains("-mfloat-abi=softfp"), "{error}");
}

#[test]
fn a_missing_rust_target_says_how_to_install_it() {
    let out = scratch("no-rust-target");
    // A triple .ci/run never installs.
    let triple = "thumbv8m.main-none-eabihf";
    let error = in_build_script_for(&out, triple, &[], || Builder::new(demo_archive()).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Toolchain);
    assert!(error.to_string().contains(&format!("rustup target add {triple}")), "{error}");
}

#[test]
fn the_demo_cross_builds_for_cortex_m4_with_its_memory_needs() {
    let out = scratch("cross-m4");
    let output = in_build_script_for(&out, "thumbv7em-none-eabihf", &[], || Builder::new(demo_archive()).build()).unwrap();
    let needs = output.modules[0].memory;
    assert_eq!((needs.inputs, needs.outputs, needs.code_workspace), (16, 12, 12));
    let library = out.join("mlf/build/default/lib/libmlf_default.a");
    let bytes = std::fs::read(&library).unwrap();
    // An ar archive of 32-bit Arm ELF objects: e_machine 40 follows each member's ELF header.
    assert!(bytes.windows(20).any(|w| w.starts_with(b"\x7fELF\x01") && w[18] == 40), "no Arm object in {}", library.display());
}

/// A copy of the demo archive under `dir`, with `extra` source files added.
fn demo_copy(dir: &Path, extra: &[(&str, &str)]) -> PathBuf {
    let root = dir.join("model");
    for path in ["metadata.json", "codegen/host/include/tvmgen_default.h", "codegen/host/src/default_lib0.c", "codegen/host/src/default_lib1.c"] {
        let to = root.join(path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(demo_archive().join(path), to).unwrap();
    }
    for (path, text) in extra {
        std::fs::write(root.join(path), text).unwrap();
    }
    root
}

#[test]
fn two_archives_with_the_same_module_need_a_rename() {
    let out = scratch("two-archives");
    let other = demo_copy(&out.join("copy"), &[]);
    let error = in_build_script(&out.join("out"), || {
        Builder::new(demo_archive()).build().unwrap();
        Builder::new(&other).build().unwrap_err()
    });
    let text = error.to_string();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(text.contains("module `default` is also built from") && text.contains("rename_module(\"default\""), "{text}");
    let renamed = in_build_script(&out.join("out"), || Builder::new(&other).rename_module("default", "second").build()).unwrap();
    assert_eq!(renamed.modules[0].rust_file, out.join("out/mlf/second.rs"));
    let glue = std::fs::read_to_string(out.join("out/mlf/build/second/gen/mlf_second_glue.c")).unwrap();
    assert!(glue.contains("tvmgen_second_run(&inputs, &outputs)"), "{glue}");
    let missing = in_build_script(&out.join("out"), || Builder::new(&other).rename_module("vision", "x").build()).unwrap_err();
    assert!(missing.to_string().contains("has no module `vision`"), "{missing}");
}

#[test]
fn a_missing_external_header_names_itself_the_file_and_the_option() {
    let out = scratch("byoc");
    let source = "#include <mlf_test_byoc_kernels.h>\nint mlf_test_byoc_use(void) { return MLF_TEST_BYOC_VALUE; }\n";
    let archive = demo_copy(&out, &[("codegen/host/src/default_lib2.c", source)]);
    let error = in_build_script(&out.join("out"), || Builder::new(&archive).build()).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("codegen/host/src/default_lib2.c") && text.contains("<mlf_test_byoc_kernels.h>") && text.contains("Builder::include_dir"),
        "{text}"
    );
    let include = out.join("external/include");
    std::fs::create_dir_all(&include).unwrap();
    std::fs::write(include.join("mlf_test_byoc_kernels.h"), "int mlf_test_byoc_kernel(int x);\n").unwrap();
    std::fs::write(out.join("external/kernels.c"), "int mlf_test_byoc_kernel(int x) { return x; }\n").unwrap();
    in_build_script(&out.join("out2"), || {
        Builder::new(&archive)
            .include_dir(&include)
            .source(out.join("external/kernels.c"))
            .define("MLF_TEST_BYOC_VALUE", Some("3"))
            .build()
    })
    .unwrap();
}
