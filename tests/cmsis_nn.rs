//! Archives whose code calls CMSIS-NN (TVM's `cmsis-nn` target), built with the
//! CMSIS-NN releases in `../shared/third-party`: what is compiled, what is
//! refused and how. Inference with it runs in tests/corpus_host.rs and
//! tests/corpus_qemu.rs (`etiss-vww-muriscvnn-rvv-tvm017`).

mod common;

use std::path::{Path, PathBuf};

use mlf_build::{Builder, ErrorKind};

const CASE: &str = "etiss-vww-muriscvnn-rvv-tvm017";

/// The VWW case's archive unpacked into a fresh directory, to be edited.
fn unpack(name: &str) -> Option<PathBuf> {
    unpack_case(CASE, name)
}

/// Corpus case `case`'s archive unpacked into a fresh directory `name`.
fn unpack_case(case: &str, name: &str) -> Option<PathBuf> {
    let case = common::corpus_case(case)?;
    let dir = common::scratch(name).join("model");
    std::fs::create_dir_all(&dir).unwrap();
    tar::Archive::new(std::fs::File::open(case.join("model.tar")).unwrap()).unpack(&dir).unwrap();
    Some(dir)
}

/// `../shared/third-party/CMSIS-NN/<version>`, or `None` after a SKIP line.
fn cmsis_nn(version: &str) -> Option<PathBuf> {
    let dir = common::shared_dir().join("third-party/CMSIS-NN").join(version);
    if !dir.is_dir() {
        common::skip(&format!("{} is absent", dir.display()));
        return None;
    }
    Some(dir)
}

/// `Builder::build` for the host in-process, printing nothing; `library` as `Builder::cmsis_nn`.
fn build(archive: &Path, library: Option<&Path>) -> mlf_build::Result<mlf_build::Output> {
    let host = common::host_triple();
    let mut builder = Builder::new(archive).out_dir(archive.with_file_name("out")).target(&host).host(host).cargo_metadata(false);
    if let Some(library) = library {
        builder = builder.cmsis_nn(library);
    }
    builder.build()
}

/// The kernel sources a build compiled (its wrappers under the output directory).
fn compiled_kernels(archive: &Path) -> Vec<String> {
    let dir = archive.with_file_name("out").join("mlf/build/default/gen/kernels");
    let mut found: Vec<String> =
        files_under(&dir).iter().filter_map(|path| Some(path.file_name()?.to_string_lossy().into_owned())).collect();
    found.sort();
    found
}

/// Every file below `dir` (none when it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                pending.push(entry.path());
            } else {
                found.push(entry.path());
            }
        }
    }
    found
}

#[test]
fn without_cmsis_nn_the_error_names_the_kernels_and_both_ways_to_give_it() {
    // The variable the Builder falls back to is emptied, whatever the caller's environment.
    if !common::in_child_with(&[("CMSIS_NN_PATH", "")]) {
        return;
    }
    let Some(archive) = unpack("missing") else { return };
    let error = build(&archive, None).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    let text = error.to_string();
    for words in
        ["calls CMSIS-NN", "arm_convolve_wrapper_s8", "arm_softmax_s8", "default_lib2.c", "Builder::cmsis_nn", "CMSIS_NN_PATH", "v4.1.0"]
    {
        assert!(text.contains(words), "`{words}` missing from: {text}");
    }
}

#[test]
fn each_release_compiles_only_the_kernels_the_archive_calls() {
    for version in ["v4.1.0", "v7.0.0"] {
        let (Some(archive), Some(library)) = (unpack(&format!("select-{version}")), cmsis_nn(version)) else { return };
        let output = build(&archive, Some(&library)).unwrap_or_else(|e| panic!("{version}: {e}"));
        assert!(output.warnings.is_empty(), "{version}: {:?}", output.warnings);
        let compiled = compiled_kernels(&archive);
        let all = walk_c_files(&library.join("Source"));
        for kernel in ["arm_convolve_wrapper_s8.c", "arm_depthwise_conv_wrapper_s8.c", "arm_avgpool_s8.c", "arm_softmax_s8.c"] {
            assert!(compiled.iter().any(|name| name == kernel), "{version}: {kernel} not in {compiled:?}");
        }
        let unused = ["lstm", "svdf", "elementwise", "convolve_s16", "max_pool"];
        assert!(!compiled.iter().any(|name| unused.iter().any(|part| name.contains(part))), "{version}: {compiled:?}");
        assert!(compiled.len() * 3 < all, "{version}: {} of {all} sources compiled", compiled.len());
    }
}

fn walk_c_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| match entry.path() {
            path if path.is_dir() => walk_c_files(&path),
            path => usize::from(path.extension().is_some_and(|ext| ext == "c")),
        })
        .sum()
}

#[test]
fn a_scratch_buffer_smaller_than_the_library_needs_is_refused_with_both_numbers() {
    let (Some(archive), Some(library)) = (unpack("scratch"), cmsis_nn("v4.1.0")) else { return };
    // The first convolution (3x3x3 filter) needs 2 * 27 int16 = 108 bytes on the host's portable path.
    let source = archive.join("codegen/host/src/default_lib2.c");
    let text = std::fs::read_to_string(&source).unwrap();
    let edited = text.replacen("{context_buffer_0_let,128}", "{context_buffer_0_let,100}", 1);
    assert_ne!(edited, text, "the archive's first convolution no longer reserves 128 bytes");
    std::fs::write(&source, edited).unwrap();
    let error = build(&archive, Some(&library)).unwrap_err();
    let text = error.to_string();
    for words in
        ["default_lib2.c", "tvmgen_default_cmsis_nn_main_0", "arm_convolve_wrapper_s8 100 bytes", "says 108", "portable C", "V.11.3.0"]
    {
        assert!(text.contains(words), "`{words}` missing from: {text}");
    }
}

/// Replaces the first `from` in the VWW archive's CMSIS-NN source with `to`.
fn edit_kernels(archive: &Path, from: &str, to: &str) {
    let source = archive.join("codegen/host/src/default_lib2.c");
    let text = std::fs::read_to_string(&source).unwrap();
    let edited = text.replacen(from, to, 1);
    assert_ne!(edited, text, "`{from}` is no longer in the archive");
    std::fs::write(&source, edited).unwrap();
}

#[test]
fn nothing_an_archive_writes_in_a_kernel_call_runs_on_the_build_machine() {
    let (Some(archive), Some(library)) = (unpack("probe-hostile"), cmsis_nn("v4.1.0")) else { return };
    // The first convolution's dimensions call stdio on strings spelled as the
    // integers of other structures; locals named like stdio's functions, declared
    // further down, make every name in the initializer look like a structure.
    let strings = "cmsis_nn_dims kept = {0x7470656b,0,0,0};\n  cmsis_nn_dims made = {0x6564616d,0,0,0};\n  \
        cmsis_nn_dims cmd = {0x63756f74,0x61722068,0x6e,0};\n  cmsis_nn_dims w = {0x77,0,0,0};\n  cmsis_nn_dims r = {0x72,0,0,0};\n  ";
    let calls = "cmsis_nn_dims input_dims = {1,remove(&kept),fopen(&made,&w),popen(&cmd,&r)};";
    edit_kernels(&archive, "cmsis_nn_dims input_dims = {1,96,96,3};", &format!("{strings}{calls}"));
    let shadows = "cmsis_nn_dims remove = {1};\n  cmsis_nn_dims fopen = {1};\n  cmsis_nn_dims popen = {1};\n  arm_cmsis_nn_status status";
    edit_kernels(&archive, "arm_cmsis_nn_status status", shadows);
    // The probe runs in its own directory: what it would remove, and where it would create.
    let probe_dir = archive.with_file_name("out").join("mlf/build/default/kernel-probe");
    std::fs::create_dir_all(&probe_dir).unwrap();
    std::fs::write(probe_dir.join("kept"), "the archive must not remove this").unwrap();
    let error = build(&archive, Some(&library)).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("cannot be checked") && text.contains("tvmgen_default_cmsis_nn_main_0") && text.contains("remove"), "{text}");
    assert!(probe_dir.join("kept").is_file(), "the archive's call to remove ran on the build machine");
    assert!(!probe_dir.join("made").exists() && !probe_dir.join("ran").exists(), "the archive's calls ran on the build machine");
}

/// Review of issue 38: a probe that cannot be written in OUT_DIR is an I/O
/// error saying what failed, not a refusal blaming the archive.
#[test]
fn a_scratch_probe_that_cannot_be_written_is_an_io_error() {
    let (Some(archive), Some(library)) = (unpack("probe-unwritable"), cmsis_nn("v4.1.0")) else { return };
    // A file where the probe's directory goes: nothing can be written under it.
    let probe_dir = archive.with_file_name("out").join("mlf/build/default/kernel-probe");
    std::fs::create_dir_all(probe_dir.parent().unwrap()).unwrap();
    std::fs::write(&probe_dir, "not a directory").unwrap();
    let error = build(&archive, Some(&library)).unwrap_err();
    let text = error.to_string();
    assert_eq!(error.kind(), ErrorKind::Io, "{text}");
    assert!(text.contains("kernel-probe/probe.c") && !text.contains("could not say how much scratch"), "{text}");
}

#[test]
fn a_size_query_the_library_answers_negatively_is_refused_and_disables_no_other_check() {
    let (Some(archive), Some(library)) = (unpack("probe-negative"), cmsis_nn("v4.1.0")) else { return };
    // The third call made a 3x3 convolution over -8 channels (2 * c * 3 * 3 int16: -288 bytes); the first one gets 8 bytes of the 108 it needs.
    let third = "cmsis_nn_dims input_dims = {1,48,48,8};\n  cmsis_nn_dims filter_dims = {16,1,1,8};";
    edit_kernels(&archive, third, "cmsis_nn_dims input_dims = {1,48,48,-8};\n  cmsis_nn_dims filter_dims = {16,3,3,8};");
    edit_kernels(&archive, "{context_buffer_0_let,128}", "{context_buffer_0_let,8}");
    let text = build(&archive, Some(&library)).unwrap_err().to_string();
    assert!(text.contains("tvmgen_default_cmsis_nn_main_2") && text.contains("-288"), "{text}");
    // Without the negative answer, the short buffer is refused as before.
    edit_kernels(
        &archive,
        "{1,48,48,-8};\n  cmsis_nn_dims filter_dims = {16,3,3,8};",
        "{1,48,48,8};\n  cmsis_nn_dims filter_dims = {16,1,1,8};",
    );
    let text = build(&archive, Some(&library)).unwrap_err().to_string();
    assert!(text.contains("tvmgen_default_cmsis_nn_main_0") && text.contains("8 bytes where") && text.contains("says 108"), "{text}");
}

#[test]
fn the_scratch_mlf_build_supplies_is_capped() {
    let (Some(archive), Some(library)) = (unpack("probe-cap"), cmsis_nn("v4.1.0")) else { return };
    // The third call gets no buffer: with a 2000x2000 filter over 100 channels it would need 1,600,000,000 bytes.
    let from = "cmsis_nn_dims input_dims = {1,48,48,8};\n  cmsis_nn_dims filter_dims = {16,1,1,8};";
    edit_kernels(&archive, from, "cmsis_nn_dims input_dims = {1,48,48,100};\n  cmsis_nn_dims filter_dims = {16,2000,2000,100};");
    let error = build(&archive, Some(&library)).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("tvmgen_default_cmsis_nn_main_2") && text.contains("1600000000") && text.contains("MAX_BYTES"), "{text}");
}

#[test]
fn a_kernel_the_release_does_not_define_is_refused_naming_it_and_the_release() {
    let (Some(archive), Some(library)) = (unpack("undefined"), cmsis_nn("v4.1.0")) else { return };
    std::fs::write(
        archive.join("codegen/host/src/default_lib3.c"),
        "#include <arm_nnfunctions.h>\nint32_t mlf_wild_call(void) { return (int32_t)arm_convolve_from_the_future_s8(0); }\n",
    )
    .unwrap();
    let error = build(&archive, Some(&library)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("arm_convolve_from_the_future_s8") && text.contains("V.11.3.0") && text.contains("another CMSIS-NN release"),
        "{text}"
    );
}

#[test]
fn a_folder_that_is_not_cmsis_nn_is_refused_saying_what_it_lacks() {
    let Some(archive) = unpack("not-a-checkout") else { return };
    let error = build(&archive, Some(&archive)).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("is not a CMSIS-NN checkout") && text.contains("Include/arm_nnfunctions.h"), "{text}");
}

/// The corpus case whose code TVM 0.18's native Arm schedules wrote.
const NATIVE_CASE: &str = "kws_int8-aot_c-cortex_m4";

/// `NATIVE_CASE` unpacked and edited as MLPerf Tiny's "microtvm_native" trees
/// were written: their DSP helpers come from CMSIS-NN's headers instead of the
/// file's own `read_and_pad` over <arm_acle.h>. The trees called CMSIS-Core's
/// `__SMLAD`; the names CMSIS-NN's own headers give are `SMLAD` and `SXTB16`.
fn native_variant(name: &str) -> Option<PathBuf> {
    let dir = unpack_case(NATIVE_CASE, name)?;
    let source = dir.join("codegen/host/src/default_lib1.c");
    let text = std::fs::read_to_string(&source).unwrap();
    let (mut kept, mut in_own_helper, mut dropped) = (Vec::new(), false, 0);
    for line in text.lines() {
        if line.trim() == "#ifndef ARM_CPU_MPROFILE_READ_AND_PAD_EXISTS" {
            (in_own_helper, dropped) = (true, dropped + 1);
        } else if in_own_helper {
            in_own_helper = !line.trim_start().starts_with("#endif");
        } else {
            kept.push(line);
        }
    }
    let edited = kept
        .join("\n")
        .replace("#include <arm_acle.h>", "#include <arm_nnsupportfunctions.h>")
        .replace("__smlad(", "SMLAD(")
        .replace("__sxtb16(", "SXTB16(");
    assert!(
        dropped > 0 && edited.contains("read_and_pad(&") && edited.contains("SMLAD("),
        "{NATIVE_CASE} no longer has TVM's own read_and_pad"
    );
    assert!(!edited.contains("read_and_pad(const") && !edited.contains("arm_acle.h"), "{NATIVE_CASE}: the edit left TVM's helper");
    std::fs::write(&source, edited).unwrap();
    Some(dir)
}

#[test]
fn native_schedules_calling_cmsis_nn_dsp_helpers_are_refused_off_dsp_cores_with_the_arm_advice() {
    if !common::in_child_with(&[("CMSIS_NN_PATH", "")]) {
        return;
    }
    let (Some(archive), Some(library)) = (native_variant("native-refused"), cmsis_nn("v4.1.0")) else { return };
    let host = common::host_triple();
    // No kernel is called, so the header names what is missing.
    let text = build(&archive, None).unwrap_err().to_string();
    assert!(text.contains("includes CMSIS-NN's <arm_nnsupportfunctions.h>, but no CMSIS-NN was given"), "{text}");
    for triple in [host.as_str(), "riscv32imac-unknown-none-elf"] {
        let out = archive.with_file_name(format!("out-{triple}"));
        let builder = Builder::new(&archive).out_dir(&out).target(triple).host(&host).cargo_metadata(false).cmsis_nn(&library);
        let error = builder.build().unwrap_err();
        if error.kind() == ErrorKind::Toolchain {
            common::skip(&format!("no C toolchain for {triple}: {error}"));
            continue;
        }
        assert_eq!(error.kind(), ErrorKind::WrongTarget, "{triple}: {error}");
        let text = error.to_string();
        for words in [
            "default_lib1.c",
            "calls SMLAD, SXTB16, read_and_pad",
            "V.11.3.0",
            "only for cores with the DSP extension",
            "(SMLAD under `#if (defined(__ARM_FEATURE_DSP) && (__ARM_FEATURE_DSP == 1))` in Include/Internal/arm_nn_compiler.h)",
            &format!("`{triple}` is not an Arm Cortex-M target"),
            "Cortex-M4, M7 or M33",
            "--target thumbv7em-none-eabihf",
        ] {
            assert!(text.contains(words), "{triple}: `{words}` missing from: {text}");
        }
        assert!(!text.contains("re-export"), "{text}");
        let compiled = files_under(&out).into_iter().filter(|path| path.extension().is_some_and(|ext| ext == "o" || ext == "a"));
        assert_eq!(compiled.count(), 0, "{triple}: refused only after compiling");
    }
}

#[test]
fn native_schedules_calling_cmsis_nn_dsp_helpers_run_on_a_cortex_m4f() {
    let (Some(archive), Some(_)) = (native_variant("native-m4f"), cmsis_nn("v4.1.0")) else { return };
    for tool in ["arm-none-eabi-gcc", "qemu-system-arm"] {
        if std::process::Command::new(tool).arg("--version").output().is_err() {
            common::skip(&format!("{tool} is not installed"));
            return;
        }
    }
    let Some(root) = common::corpus_dir() else { return };
    let mut case = common::cases(&root).into_iter().find(|case| case.name == NATIVE_CASE).unwrap();
    case.archive = archive;
    case.needs = vec![("CMSIS-NN".to_string(), "../shared/third-party/CMSIS-NN/v4.1.0".to_string())];
    // The QEMU corpus test's target directory: its dependencies are built already.
    let firmware = common::Firmware { triple: "thumbv7em-none-eabihf", target_cpu: None, board: None, target_dir: "corpus-qemu", env: &[] };
    let mut runs = 0;
    for module in &case.modules {
        for (index, vector) in module.vectors.iter().enumerate() {
            let outputs = firmware.run(&case, module.module.as_deref(), &vector.inputs).unwrap_or_else(|why| panic!("{why}"));
            common::check_vector(&case, index, vector, &outputs).unwrap_or_else(|why| panic!("{why}"));
            runs += 1;
        }
    }
    assert!(runs > 0, "{NATIVE_CASE} has no expected outputs");
}
