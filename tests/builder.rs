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

/// Runs `f` with the variables Cargo gives a build script, OUT_DIR = `out_dir`.
fn in_build_script<T>(out_dir: &Path, f: impl FnOnce() -> T) -> T {
    in_build_script_for(out_dir, &common::host_triple(), &[], f)
}

/// Like [`in_build_script`] for `target`, with `extra` variables set only during `f`.
fn in_build_script_for<T>(out_dir: &Path, target: &str, extra: &[(&str, &str)], f: impl FnOnce() -> T) -> T {
    let _guard = ENV.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let host = common::host_triple();
    for (key, value) in
        [("OUT_DIR", out_dir.to_str().unwrap()), ("TARGET", target), ("HOST", &host), ("OPT_LEVEL", "0"), ("DEBUG", "false")]
    {
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
    let first = common::scratch("determinism-a");
    let second = common::scratch("determinism-b");
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
    let out = common::scratch("cache");
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
    let out = common::scratch("not-mlf");
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
    let out = common::scratch("hostile");
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
    let out = common::scratch("version");
    let archive = out.join("future.tar");
    std::fs::write(&archive, tar_with(&[(b"./metadata.json", br#"{"version": 99, "modules": {}}"#)])).unwrap();
    let error = in_build_script(&out.join("out"), || Builder::new(&archive).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnsupportedVersion);
    let text = error.to_string();
    assert!(text.contains("99") && text.contains("metadata.json"), "{text}");
}

#[test]
fn a_missing_cross_compiler_names_the_target_and_the_package() {
    let out = common::scratch("no-cross-cc");
    let extra = [("CC_thumbv7em_none_eabihf", "no-such-arm-gcc")];
    let error = in_build_script_for(&out, "thumbv7em-none-eabihf", &extra, || Builder::new(demo_archive()).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Toolchain);
    let text = error.to_string();
    assert!(text.contains("thumbv7em-none-eabihf") && text.contains("no-such-arm-gcc") && text.contains("gcc-arm-none-eabi"), "{text}");
}

#[test]
fn a_flag_changing_the_float_abi_of_an_eabihf_target_is_refused() {
    let out = common::scratch("float-abi");
    let extra = [("CFLAGS_thumbv7em_none_eabihf", "-mfloat-abi=softfp")];
    let error = in_build_script_for(&out, "thumbv7em-none-eabihf", &extra, || Builder::new(demo_archive()).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.to_string().contains("-mfloat-abi=softfp"), "{error}");
}

#[test]
fn a_missing_rust_target_says_how_to_install_it() {
    let out = common::scratch("no-rust-target");
    // A triple .ci/run never installs.
    let triple = "thumbv8m.base-none-eabi";
    let error = in_build_script_for(&out, triple, &[], || Builder::new(demo_archive()).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Toolchain);
    assert!(error.to_string().contains(&format!("rustup target add {triple}")), "{error}");
}

#[test]
fn an_archive_for_a_larger_core_is_refused_naming_both_cores() {
    let Some(case) = common::corpus_case("kws_int8-aot_c-cortex_m4") else { return };
    let archive = case.join("model.tar");
    let out = common::scratch("wrong-core");
    let error = in_build_script_for(&out, "thumbv6m-none-eabi", &[], || Builder::new(&archive).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::WrongTarget);
    let expected = format!(
        "mlf-build: {}: metadata.json: module `default` was compiled for `cortex-m4` (its target string says `-mcpu=cortex-m4`), \
         but the build's core `cortex-m0plus` (from the triple's usual core) lacks the DSP extension\n  \
         help: build for a core that has the DSP extension: `cortex-m4` or a larger one (Builder::cpu(\"cortex-m4\"), \
         `-C target-cpu=cortex-m4`, and the matching --target), or re-export the model for `cortex-m0plus`",
        archive.display()
    );
    assert_eq!(error.to_string(), expected);
}

#[test]
fn code_for_a_smaller_core_builds_for_a_larger_one() {
    let Some(case) = common::corpus_case("kws_int8-aot_c-cortex_m4") else { return };
    let archive = case.join("model.tar");
    let out = common::scratch("m4-on-m33");
    in_build_script_for(&out, "thumbv8m.main-none-eabihf", &[], || Builder::new(&archive).build()).unwrap();
}

#[test]
fn the_target_cpu_in_the_rust_flags_is_the_c_core() {
    let out = common::scratch("target-cpu-m55");
    let extra = [("CARGO_ENCODED_RUSTFLAGS", "-C\x1ftarget-cpu=cortex-m55")];
    in_build_script_for(&out, "thumbv8m.main-none-eabihf", &extra, || Builder::new(demo_archive()).build()).unwrap();
    let attributes = readelf_attributes(&out.join("mlf/build/default/lib/libmlf_default.a"));
    assert!(attributes.contains("Tag_CPU_arch: v8.1-M.mainline") && attributes.contains("Tag_MVE_arch"), "{attributes}");
}

/// `arm-none-eabi-readelf -A`: the objects' build attributes (core, FPU, float ABI).
fn readelf_attributes(library: &Path) -> String {
    let output = std::process::Command::new("arm-none-eabi-readelf").arg("-A").arg(library).output().unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn without_cc_defaults_an_eabihf_build_still_makes_hard_float_objects() {
    let out = common::scratch("no-defaults-hard-float");
    let extra = [("CRATE_CC_NO_DEFAULTS", "1")];
    in_build_script_for(&out, "thumbv7em-none-eabihf", &extra, || Builder::new(demo_archive()).build()).unwrap();
    // The support library is built once per process, by whichever test came first.
    let attributes = readelf_attributes(&out.join("mlf/build/default/lib/libmlf_default.a"));
    assert!(attributes.contains("Tag_ABI_VFP_args: VFP registers"), "{attributes}");
}

/// GCC's slim LTO objects carry their symbols only for its linker plugin:
/// the library is then made by the toolchain's `ar`, whose index has them.
#[test]
fn lto_objects_are_indexed_by_the_toolchains_archiver() {
    let out = common::scratch("gcc-lto");
    let host = common::host_triple();
    let cflags = format!("CFLAGS_{}", host.replace('-', "_"));
    in_build_script_for(&out, &host, &[(cflags.as_str(), "-flto")], || Builder::new(demo_archive()).build()).unwrap();
    let library = out.join("mlf/build/default/lib/libmlf_default.a");
    let listing = std::process::Command::new("nm").arg("--print-armap").arg(&library).output().unwrap();
    let armap = String::from_utf8_lossy(&listing.stdout);
    let bytes = std::fs::read(&library).unwrap();
    assert!(bytes.windows(9).any(|window| window == b".gnu.lto_"), "not built as LTO objects");
    assert!(armap.contains("tvmgen_default___tvm_main__ in") && armap.contains("mlf_default_invoke in"), "{armap}");
}

/// A build script that builds two archives for one target asks the compiler
/// its questions (here: the predefined macros) once, and changing the
/// compiler's environment asks again.
#[test]
fn the_toolchain_is_probed_once_per_target_and_environment() {
    let out = common::scratch("probed-once");
    let log = out.join("compiler.log");
    let wrapper = out.join("logging-gcc");
    std::fs::write(&wrapper, format!("#!/bin/sh\necho \"$*\" >> '{}'\nexec arm-none-eabi-gcc \"$@\"\n", log.display())).unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let probes = || std::fs::read_to_string(&log).unwrap_or_default().lines().filter(|line| line.contains("-dM -E")).count();
    let target = "thumbv7em-none-eabihf";
    let cc = [("CC_thumbv7em_none_eabihf", wrapper.to_str().unwrap())];
    in_build_script_for(&out, target, &cc, || Builder::new(demo_archive()).build()).unwrap();
    in_build_script_for(&out, target, &cc, || Builder::new(demo_archive()).rename_module("default", "second").build()).unwrap();
    assert_eq!(probes(), 1);
    let cflags = [cc[0], ("CFLAGS_thumbv7em_none_eabihf", "-DMLF_TEST_PROBE=1")];
    in_build_script_for(&out, target, &cflags, || Builder::new(demo_archive()).rename_module("default", "third").build()).unwrap();
    assert_eq!(probes(), 2);
}

#[test]
fn a_compiler_making_soft_float_objects_for_eabihf_is_refused() {
    let out = common::scratch("soft-float-wrapper");
    // A wrapper that forces soft-float behind every flag the build gives.
    let wrapper = out.join("soft-gcc");
    std::fs::write(&wrapper, "#!/bin/sh\nexec arm-none-eabi-gcc \"$@\" -mfloat-abi=soft\n").unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let extra = [("CC_thumbv7em_none_eabihf", wrapper.to_str().unwrap())];
    let error = in_build_script_for(&out, "thumbv7em-none-eabihf", &extra, || Builder::new(demo_archive()).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    let text = error.to_string();
    let expected = format!(
        "the C compiler `{}` builds soft-float (floats in integer registers) objects for `thumbv7em-none-eabihf`, \
         whose Rust code is hard-float (floats in FPU registers): linked together they would compute garbage",
        wrapper.display()
    );
    assert!(text.contains(&expected), "{text}");
    assert!(text.contains("help: remove what changes the float ABI from CC / CFLAGS / the cc::Build"), "{text}");
}

#[test]
fn a_missing_risc_v_toolchain_names_the_packages() {
    let out = common::scratch("no-riscv-cc");
    let extra = [("CC_riscv32imac_unknown_none_elf", "/nonexistent/riscv64-unknown-elf-gcc")];
    let error = in_build_script_for(&out, "riscv32imac-unknown-none-elf", &extra, || Builder::new(demo_archive()).build()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Toolchain);
    let expected = format!(
        "mlf-build: {}: no C compiler for `riscv32imac-unknown-none-elf`: `/nonexistent/riscv64-unknown-elf-gcc` is not installed\n  \
         help: install the cross compiler (`apt-get install --no-install-recommends gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf`), \
         or name one with CC_riscv32imac_unknown_none_elf",
        demo_archive().display()
    );
    assert_eq!(error.to_string(), expected);
}

#[test]
fn the_demo_cross_builds_for_risc_v_with_picolibc() {
    let out = common::scratch("cross-rv32");
    in_build_script_for(&out, "riscv32imac-unknown-none-elf", &[], || Builder::new(demo_archive()).build()).unwrap();
    assert!(out.join("mlf/build/default/lib/libmlf_default.a").is_file());
}

#[test]
fn the_demo_cross_builds_for_cortex_m4_with_its_memory_needs() {
    let out = common::scratch("cross-m4");
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
    for path in
        ["metadata.json", "codegen/host/include/tvmgen_default.h", "codegen/host/src/default_lib0.c", "codegen/host/src/default_lib1.c"]
    {
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
    let out = common::scratch("two-archives");
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
    let out = common::scratch("byoc");
    let source = "#include <mlf_test_byoc_kernels.h>\nint mlf_test_byoc_use(void) { return MLF_TEST_BYOC_VALUE; }\n";
    let archive = demo_copy(&out, &[("codegen/host/src/default_lib2.c", source)]);
    let error = in_build_script(&out.join("out"), || Builder::new(&archive).build()).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("codegen/host/src/default_lib2.c")
            && text.contains("<mlf_test_byoc_kernels.h>")
            && text.contains("Builder::include_dir"),
        "{text}"
    );
    let include = out.join("external/include");
    std::fs::create_dir_all(&include).unwrap();
    std::fs::write(include.join("mlf_test_byoc_kernels.h"), "int mlf_test_byoc_kernel(int x);\n").unwrap();
    std::fs::write(out.join("external/kernels.c"), "int mlf_test_byoc_kernel(int x) { return x; }\n").unwrap();
    in_build_script(&out.join("out2"), || {
        Builder::new(&archive).include_dir(&include).source(out.join("external/kernels.c")).define("MLF_TEST_BYOC_VALUE", Some("3")).build()
    })
    .unwrap();
}
