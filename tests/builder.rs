//! The Builder called in-process, as a build script would, on the demo archive
//! and on broken or hostile ones.

use std::path::{Path, PathBuf};

use mlf_build::{Builder, ErrorKind, Output};

mod common;

fn demo_archive() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-model")
}

/// Builds with `builder` for the host into `out_dir`, as a build script would but printing nothing.
fn build_in(out_dir: &Path, builder: Builder) -> mlf_build::Result<Output> {
    build_for(out_dir, &common::host_triple(), builder)
}

/// [`build_in`] for `target`.
fn build_for(out_dir: &Path, target: &str, builder: Builder) -> mlf_build::Result<Output> {
    builder.out_dir(out_dir).target(target).host(common::host_triple()).cargo_metadata(false).build()
}

/// In the test process: writes `script` as a compiler for
/// `thumbv7em-none-eabihf`, runs the calling test again in a child process
/// whose `CC_thumbv7em_none_eabihf` names it, and returns `None` once the child
/// passed. In that child: `Some` of the compiler's path.
fn with_arm_compiler(script: &str) -> Option<PathBuf> {
    const CC: &str = "CC_thumbv7em_none_eabihf";
    if let (Some(_), Some(compiler)) = (std::env::var_os(common::CHILD), std::env::var_os(CC)) {
        return Some(PathBuf::from(compiler));
    }
    let compiler = common::scratch("compiler").join("gcc");
    std::fs::write(&compiler, script).unwrap();
    std::fs::set_permissions(&compiler, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    assert!(!common::in_child_with(&[(CC, compiler.to_str().unwrap())]));
    None
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
    let a = build_in(&first, Builder::new(demo_archive())).unwrap();
    let b = build_in(&second, Builder::new(demo_archive())).unwrap();
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
    let output = build_in(&out, Builder::new(demo_archive())).unwrap();
    let library = out.join("mlf/build/default/lib/libmlf_default.a");
    let modified = |path: &Path| std::fs::metadata(path).unwrap().modified().unwrap();
    let (library_time, rust_time) = (modified(&library), modified(&output.modules[0].rust_file));
    std::thread::sleep(std::time::Duration::from_millis(20));
    build_in(&out, Builder::new(demo_archive())).unwrap();
    assert_eq!(modified(&library), library_time, "the library was rebuilt");
    assert_eq!(modified(&output.modules[0].rust_file), rust_time, "the Rust file was rewritten");
}

#[test]
fn a_directory_without_metadata_is_not_an_mlf_archive() {
    let out = common::scratch("not-mlf");
    let input = out.join("input/codegen/host/src");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("lib0.c"), "int x;").unwrap();
    let error = build_in(&out, Builder::new(out.join("input"))).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotMlf);
    let text = error.to_string();
    assert!(text.contains("metadata.json") && text.contains("input"), "{text}");
}

#[test]
fn hostile_entries_are_refused_and_nothing_escapes_out_dir() {
    let out = common::scratch("hostile");
    let archive = out.join("evil.tar");
    std::fs::write(&archive, tar_with(&[(b"./metadata.json", b"{}"), (b"../escaped.txt", b"x")])).unwrap();
    let error = build_in(&out.join("out"), Builder::new(&archive)).unwrap_err();
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
    let error = build_in(&out.join("out"), Builder::new(&archive)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnsupportedVersion);
    let text = error.to_string();
    assert!(text.contains("99") && text.contains("metadata.json"), "{text}");
}

#[test]
fn a_missing_cross_compiler_names_the_target_and_the_package() {
    if !common::in_child_with(&[("CC_thumbv7em_none_eabihf", "no-such-arm-gcc")]) {
        return;
    }
    let out = common::scratch("no-cross-cc");
    let error = build_for(&out, "thumbv7em-none-eabihf", Builder::new(demo_archive())).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Toolchain);
    let text = error.to_string();
    assert!(text.contains("thumbv7em-none-eabihf") && text.contains("no-such-arm-gcc") && text.contains("gcc-arm-none-eabi"), "{text}");
}

#[test]
fn a_flag_changing_the_float_abi_of_an_eabihf_target_is_refused() {
    if !common::in_child_with(&[("CFLAGS_thumbv7em_none_eabihf", "-mfloat-abi=softfp")]) {
        return;
    }
    let out = common::scratch("float-abi");
    let error = build_for(&out, "thumbv7em-none-eabihf", Builder::new(demo_archive())).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.to_string().contains("-mfloat-abi=softfp"), "{error}");
}

#[test]
fn a_missing_rust_target_says_how_to_install_it() {
    let out = common::scratch("no-rust-target");
    // A triple .ci/run never installs.
    let triple = "thumbv8m.base-none-eabi";
    let error = build_for(&out, triple, Builder::new(demo_archive())).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Toolchain);
    assert!(error.to_string().contains(&format!("rustup target add {triple}")), "{error}");
}

#[test]
fn an_archive_for_a_larger_core_is_refused_naming_both_cores() {
    let Some(case) = common::corpus_case("kws_int8-aot_c-cortex_m4") else { return };
    // Errors name the archive normalised: without the `..` of `../shared`.
    let archive = case.join("model.tar").canonicalize().unwrap();
    let out = common::scratch("wrong-core");
    let error = build_for(&out, "thumbv6m-none-eabi", Builder::new(&archive)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::WrongTarget);
    let expected = format!(
        "mlf-build: {}: metadata.json: module `default` was compiled for `cortex-m4` (its target string says `-mcpu=cortex-m4`), \
         but the build's core `cortex-m0plus` (from the triple's usual core) lacks the DSP extension\n  \
         help: build for a core that has the DSP extension: `cortex-m4` or a larger one (Builder::cpu(\"cortex-m4\"), \
         `-C target-cpu=cortex-m4`, and the matching --target)",
        archive.display()
    );
    assert_eq!(error.to_string(), expected);
}

#[test]
fn code_for_a_smaller_core_builds_for_a_larger_one() {
    let Some(case) = common::corpus_case("kws_int8-aot_c-cortex_m4") else { return };
    let archive = case.join("model.tar");
    let out = common::scratch("m4-on-m33");
    build_for(&out, "thumbv8m.main-none-eabihf", Builder::new(&archive)).unwrap();
}

#[test]
fn the_target_cpu_in_the_rust_flags_is_the_c_core() {
    // Cargo's Rust flags describe Cargo's target: the child is told it is building for that one.
    let target = "thumbv8m.main-none-eabihf";
    if !common::in_child_with(&[("TARGET", target), ("CARGO_ENCODED_RUSTFLAGS", "-C\x1ftarget-cpu=cortex-m55")]) {
        return;
    }
    let out = common::scratch("target-cpu-m55");
    build_for(&out, target, Builder::new(demo_archive())).unwrap();
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
    if !common::in_child_with(&[("CRATE_CC_NO_DEFAULTS", "1")]) {
        return;
    }
    let out = common::scratch("no-defaults-hard-float");
    build_for(&out, "thumbv7em-none-eabihf", Builder::new(demo_archive())).unwrap();
    let attributes = readelf_attributes(&out.join("mlf/build/default/lib/libmlf_default.a"));
    assert!(attributes.contains("Tag_ABI_VFP_args: VFP registers"), "{attributes}");
}

/// GCC's slim LTO objects carry their symbols only for its linker plugin, so
/// they cannot be made the crate's own (the book's "Models as crates"): the build
/// says so and names the fix.
#[test]
fn slim_lto_objects_are_refused_naming_fat_ones() {
    let cflags = format!("CFLAGS_{}", common::host_triple().replace('-', "_"));
    if !common::in_child_with(&[(cflags.as_str(), "-flto")]) {
        return;
    }
    let out = common::scratch("gcc-lto");
    let error = build_in(&out, Builder::new(demo_archive())).unwrap_err().to_string();
    assert!(error.contains("cannot be made the crate's own") && error.contains("-ffat-lto-objects"), "{error}");
}

/// Fat LTO objects hold machine code and its symbols too: renamed under the
/// crate's tag and archived like any other.
#[test]
fn fat_lto_objects_are_renamed_and_archived() {
    let cflags = format!("CFLAGS_{}", common::host_triple().replace('-', "_"));
    if !common::in_child_with(&[(cflags.as_str(), "-flto -ffat-lto-objects")]) {
        return;
    }
    let out = common::scratch("gcc-fat-lto");
    build_in(&out, Builder::new(demo_archive())).unwrap();
    let library = out.join("mlf/build/default/lib/libmlf_default.a");
    let listing = std::process::Command::new("nm").arg("--print-armap").arg(&library).output().unwrap();
    let armap = String::from_utf8_lossy(&listing.stdout);
    let bytes = std::fs::read(&library).unwrap();
    assert!(bytes.windows(9).any(|window| window == b".gnu.lto_"), "not built as LTO objects");
    let tag = format!("{}_{}_", env!("CARGO_PKG_NAME").replace('-', "_"), env!("CARGO_PKG_VERSION").replace('.', "_"));
    assert!(
        armap.contains(&format!("{tag}tvmgen_default___tvm_main__ in")) && armap.contains(&format!("{tag}mlf_default_invoke in")),
        "{armap}"
    );
}

/// A build script that builds two archives for one target asks the compiler
/// its questions (here: the predefined macros) once, and a build for another
/// core asks again.
#[test]
fn the_toolchain_is_probed_once_per_target() {
    // A compiler that logs each run beside itself.
    let script = "#!/bin/sh\necho \"$*\" >> \"$(dirname \"$0\")/compiler.log\"\nexec arm-none-eabi-gcc \"$@\"\n";
    let Some(wrapper) = with_arm_compiler(script) else { return };
    let log = wrapper.with_file_name("compiler.log");
    let out = common::scratch("probed-once");
    let probes = || std::fs::read_to_string(&log).unwrap_or_default().lines().filter(|line| line.contains("-dM -E")).count();
    let target = "thumbv7em-none-eabihf";
    build_for(&out, target, Builder::new(demo_archive())).unwrap();
    build_for(&out, target, Builder::new(demo_archive()).rename_module("default", "second")).unwrap();
    assert_eq!(probes(), 1);
    build_for(&out, target, Builder::new(demo_archive()).rename_module("default", "third").cpu("cortex-m7")).unwrap();
    assert_eq!(probes(), 2);
}

#[test]
fn a_compiler_making_soft_float_objects_for_eabihf_is_refused() {
    // A wrapper that forces soft-float behind every flag the build gives.
    let Some(wrapper) = with_arm_compiler("#!/bin/sh\nexec arm-none-eabi-gcc \"$@\" -mfloat-abi=soft\n") else { return };
    let out = common::scratch("soft-float-wrapper");
    let error = build_for(&out, "thumbv7em-none-eabihf", Builder::new(demo_archive())).unwrap_err();
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
    if !common::in_child_with(&[("CC_riscv32imac_unknown_none_elf", "/nonexistent/riscv64-unknown-elf-gcc")]) {
        return;
    }
    let out = common::scratch("no-riscv-cc");
    let error = build_for(&out, "riscv32imac-unknown-none-elf", Builder::new(demo_archive())).unwrap_err();
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
    build_for(&out, "riscv32imac-unknown-none-elf", Builder::new(demo_archive())).unwrap();
    assert!(out.join("mlf/build/default/lib/libmlf_default.a").is_file());
}

#[test]
fn the_demo_cross_builds_for_cortex_m4_with_its_memory_needs() {
    let out = common::scratch("cross-m4");
    let output = build_for(&out, "thumbv7em-none-eabihf", Builder::new(demo_archive())).unwrap();
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
    build_in(&out.join("out"), Builder::new(demo_archive())).unwrap();
    let error = build_in(&out.join("out"), Builder::new(&other)).unwrap_err();
    let text = error.to_string();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(text.contains("module `default` is also built from") && text.contains("rename_module(\"default\""), "{text}");
    let renamed = build_in(&out.join("out"), Builder::new(&other).rename_module("default", "second")).unwrap();
    assert_eq!(renamed.modules[0].rust_file, out.join("out/mlf/second.rs"));
    let glue = std::fs::read_to_string(out.join("out/mlf/build/second/gen/mlf_second_glue.c")).unwrap();
    assert!(glue.contains("tvmgen_second_run(&inputs, &outputs)"), "{glue}");
    let missing = build_in(&out.join("out"), Builder::new(&other).rename_module("vision", "x")).unwrap_err();
    assert!(missing.to_string().contains("has no module `vision`"), "{missing}");
}

#[test]
fn a_missing_external_header_names_itself_the_file_and_the_option() {
    let out = common::scratch("byoc");
    let source = "#include <mlf_test_byoc_kernels.h>\nint mlf_test_byoc_use(void) { return MLF_TEST_BYOC_VALUE; }\n";
    let archive = demo_copy(&out, &[("codegen/host/src/default_lib2.c", source)]);
    let error = build_in(&out.join("out"), Builder::new(&archive)).unwrap_err();
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
    let byoc = Builder::new(&archive).include_dir(&include).source(out.join("external/kernels.c")).define("MLF_TEST_BYOC_VALUE", Some("3"));
    build_in(&out.join("out2"), byoc).unwrap();
}

/// The demo model needs more than these 8 bytes of RAM.
const TINY_RAM: &str = "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  RAM : ORIGIN = 0x20000000, LENGTH = 8\n}\n";

#[test]
fn a_packages_own_memory_x_is_checked_on_bare_metal_and_an_explicit_one_wins() {
    let package = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package-with-memory-x");
    if std::env::var_os(common::CHILD).is_none() {
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("memory.x"), TINY_RAM).unwrap();
    }
    if !common::in_child_with(&[("CARGO_MANIFEST_DIR", package.to_str().unwrap())]) {
        return;
    }
    let error = build_for(&common::scratch("own-memory-x"), "thumbv7em-none-eabihf", Builder::new(demo_archive())).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::DoesNotFit, "{error}");
    let text = error.to_string();
    assert!(text.contains(&format!("{} line 4 gives it 8 B", package.join("memory.x").display())), "{text}");
    // cortex-m-rt reads it only when linking for bare metal; neither does the Builder for the host.
    let host = build_in(&common::scratch("host-ignores-memory-x"), Builder::new(demo_archive())).unwrap();
    assert!(host.memory_fit.is_none());
    // An explicit file wins, and the build reports how the model fits it.
    let roomy = common::scratch("roomy").join("memory.x");
    std::fs::write(&roomy, TINY_RAM.replace("LENGTH = 8\n", "LENGTH = 64K\n")).unwrap();
    let output =
        build_for(&common::scratch("explicit-memory-x"), "thumbv7em-none-eabihf", Builder::new(demo_archive()).memory_x(&roomy)).unwrap();
    let fit = output.memory_fit.expect("a memory fit");
    assert!(fit.code_counted && fit.regions.iter().all(|region| region.fits()), "{fit:?}");
    assert!(fit.regions.iter().any(|region| region.region == "FLASH" && region.parts.iter().any(|part| part.what == "code")));
}

#[test]
fn a_memory_x_that_cannot_be_read_names_the_file_and_line() {
    let dir = common::scratch("bad-memory-x");
    let bad = dir.join("memory.x");
    std::fs::write(&bad, "MEMORY\n{\n  RAM : ORIGIN = _ram_start, LENGTH = 64K\n}\n").unwrap();
    let error = build_in(&dir.join("out"), Builder::new(demo_archive()).memory_x(&bad)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert_eq!(error.file(), Some(bad.display().to_string().as_str()));
    assert!(error.to_string().contains("line 3: `_ram_start` is not a number"), "{error}");
    let missing = build_in(&dir.join("out"), Builder::new(demo_archive()).memory_x(dir.join("nowhere.x"))).unwrap_err();
    assert_eq!(missing.file(), Some(dir.join("nowhere.x").display().to_string().as_str()));
    assert_eq!(missing.help_text(), Some("correct the path given to Builder::memory_x(..)"), "{missing}");
    let section =
        build_in(&dir.join("out"), Builder::new(demo_archive()).link_section(mlf_build::Storage::Workspace, "sram 2")).unwrap_err();
    assert_eq!(section.kind(), ErrorKind::Config);
    assert!(section.to_string().contains("not a section name a linker script can match"), "{section}");
}

#[test]
fn a_wrong_archive_path_names_the_file_the_package_root_and_what_to_do() {
    let package = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package-without-archive");
    if !common::in_child_with(&[("CARGO_MANIFEST_DIR", package.to_str().unwrap())]) {
        return;
    }
    let error = build_in(&common::scratch("wrong-archive-path"), Builder::new("models/../modle.tar")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io);
    let expected = format!(
        "mlf-build: {root}/modle.tar: does not exist (the path `models/../modle.tar` is taken from the package root {root}, CARGO_MANIFEST_DIR)\n  \
         help: correct the path given to Builder::new(..): relative to the package root, or absolute",
        root = package.display()
    );
    assert_eq!(error.to_string(), expected);
    // The book's Errors chapter shows the same error for `modle.tar` in a package at /home/me/app.
    let readme = common::book_chapter("errors.md");
    let shown = expected.replace("models/../", "").replace(&package.display().to_string(), "/home/me/app");
    for line in shown.lines() {
        assert!(readme.contains(line), "errors.md does not show this line of the error:\n{line}");
    }
}

/// A build script's paths are taken from its package root, which is not
/// always the directory the process runs in (this test runs at the workspace root).
#[test]
fn relative_paths_are_taken_from_the_package_root_of_a_subdirectory() {
    let package = common::repo_root().join("examples/host-runner");
    if !common::in_child_with(&[("CARGO_MANIFEST_DIR", package.to_str().unwrap())]) {
        return;
    }
    assert!(!Path::new("../demo-model").exists(), "the test runs where `../demo-model` is not the demo");
    let output = build_in(&common::scratch("from-subdirectory"), Builder::new("../demo-model")).unwrap();
    assert_eq!(output.modules[0].name, "default");
    // Each option's path is taken from there too, and a wrong one says so.
    let demo = || Builder::new("../demo-model");
    for (option, builder) in [
        ("Builder::source(..)", demo().source("kernels/add.c")),
        ("Builder::include_dir(..)", demo().include_dir("kernels/include")),
        ("Builder::memory_x(..)", demo().memory_x("kernels/memory.x")),
    ] {
        let error = build_in(&common::scratch("from-subdirectory"), builder).unwrap_err();
        let text = error.to_string();
        assert!(
            error.file().is_some_and(|file| file.starts_with(&format!("{}/kernels/", package.display())))
                && text.contains(&format!("is taken from the package root {}, CARGO_MANIFEST_DIR", package.display()))
                && error.help_text() == Some(&format!("correct the path given to {option}: relative to the package root, or absolute")),
            "{text}"
        );
    }
}

/// Every object a build into `out_dir` compiled from the archive's C
/// (`codegen/host/src/<stem>.c` becomes `<stem>-<hash>.o`), by its source's stem.
fn compiled_archive_objects(out_dir: &Path, stems: &[String]) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut pending = vec![out_dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for path in std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path()) {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                pending.push(path);
            } else if let Some(stem) = stems.iter().find(|stem| name.starts_with(&format!("{stem}-")) && name.ends_with(".o")) {
                found.push((stem.clone(), path));
            }
        }
    }
    found
}

/// A prebuilt object of the target's machine but the other ELF class (an
/// ELF32 x86-64 object for a 64-bit host) is refused by name before linking.
#[test]
fn prebuilt_objects_of_the_other_elf_class_are_refused() {
    let Some(case) = common::corpus_case("mlp_f32-aot_c") else { return };
    if !common::host_triple().starts_with("x86_64") {
        common::skip("the host is not x86-64");
        return;
    }
    let work = common::scratch("prebuilt-elf-class");
    let tree = work.join("archive");
    tar::Archive::new(std::fs::File::open(case.join("model.tar")).unwrap()).unpack(&tree).unwrap();
    let lib = tree.join("codegen/host/lib");
    std::fs::create_dir_all(&lib).unwrap();
    // e_ident: ELF32, little-endian, version 1; e_type REL; e_machine x86-64.
    let mut object = vec![0u8; 52];
    object[..7].copy_from_slice(&[0x7f, b'E', b'L', b'F', 1, 1, 1]);
    object[16] = 1;
    object[18] = 62;
    std::fs::write(lib.join("lib_x32.o"), object).unwrap();
    let error = build_for(&work.join("out"), &common::host_triple(), Builder::new(&tree)).unwrap_err().to_string();
    assert!(error.contains("lib_x32.o") && error.contains("is ELF32 (32-bit)") && error.contains("links ELF64 (64-bit)"), "{error}");
}

/// An objects-only variant of a corpus archive, made here: its C compiled by
/// a first build, the objects placed under `codegen/host/lib` in place of the
/// sources, each with a `.su` file beside it claiming 8-byte frames. The
/// bound is never the lie's: for the host (x86-64 code is not read) it is
/// unknown; for `thumbv7em-none-eabihf` it is read from the Thumb code, and
/// no lower than the bound of the build from C.
#[test]
fn stack_usage_files_beside_prebuilt_objects_never_lower_the_bound() {
    let Some(case) = common::corpus_case("mlp_f32-aot_c") else { return };
    let has_arm_gcc = std::process::Command::new("arm-none-eabi-gcc").arg("--version").output().is_ok_and(|o| o.status.success());
    let mut targets = vec![common::host_triple()];
    if has_arm_gcc {
        targets.push("thumbv7em-none-eabihf".to_string());
    } else {
        common::skip("no arm-none-eabi-gcc: the thumbv7em-none-eabihf half");
    }
    for target in targets {
        let work = common::scratch(&format!("prebuilt-su-{target}"));
        let from_c = build_for(&work.join("from-c"), &target, Builder::new(case.join("model.tar"))).unwrap_or_else(|e| panic!("{e}"));
        let bound_from_c = from_c.modules[0].report.stack.clone();
        // The archive, unpacked, with objects for sources.
        let tree = work.join("objects-only");
        tar::Archive::new(std::fs::File::open(case.join("model.tar")).unwrap()).unpack(&tree).unwrap();
        let src = tree.join("codegen/host/src");
        let stems: Vec<String> = std::fs::read_dir(&src)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "c"))
            .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        let objects = compiled_archive_objects(&work.join("from-c"), &stems);
        assert_eq!(objects.len(), stems.len(), "{objects:?} for {stems:?}");
        std::fs::remove_dir_all(&src).unwrap();
        let lib = tree.join("codegen/host/lib");
        std::fs::create_dir_all(&lib).unwrap();
        for (stem, object) in &objects {
            std::fs::copy(object, lib.join(format!("{stem}.o"))).unwrap();
            let lie: String = std::fs::read_to_string(object.with_extension("su"))
                .unwrap_or_default()
                .lines()
                .filter_map(|line| line.split_once('\t').map(|(location, _)| format!("{location}\t8\tstatic\n")))
                .collect();
            std::fs::write(lib.join(format!("{stem}.su")), lie).unwrap();
        }
        let built = build_for(&work.join("prebuilt"), &target, Builder::new(&tree)).unwrap_or_else(|e| panic!("{e}"));
        let bound = &built.modules[0].report.stack;
        if target == common::host_triple() {
            let why = bound.unknown.as_deref().unwrap_or_default();
            assert!(bound.bytes.is_none() && why.contains("x86-64 machine code is not read"), "{bound:?}");
        } else {
            let (Some(bytes), Some(from_c)) = (bound.bytes, bound_from_c.bytes) else { panic!("{bound:?} / {bound_from_c:?}") };
            assert!(bytes >= from_c, "{bytes} below the bound from C, {from_c}: {bound:?}");
        }
    }
}
