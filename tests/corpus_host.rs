//! Builds every corpus archive into `examples/host-runner` on the host, runs it
//! on the case's inputs and compares with the outputs TVM computed.

mod common;

use std::path::{Path, PathBuf};

use common::{Case, Verdict};

/// Cases that must build and match on the host (issues #2 and #4).
const MUST_PASS: &[&str] = &[
    "mlp_f32-aot_c",
    "cnn_f32-aot_c",
    "kws_int8-aot_c",
    "kws_int8-aot_c_usmp",
    "cnn_f32-aot_c_usmp",
    "kws_int8-aot_c_pools",
    "cnn_f32-aot_c_pools",
    "two_outputs_f32-aot_c",
    "cnn_f32-aot_c-named",
    "mobilenet_f32-aot_c",
    "linaro-tfm-sine",
    "etiss-kws-rv32-tvm0160",
    // Graph executor, planned at build time (issue #4).
    "cnn_f32-graph",
    "mlp_f32-graph",
    "kws_int8-graph_linked",
    "mobilenet_f32-graph",
    "hannah-magicwand-graph-syslib",
    "arduino-cifar-resnet-v2-20210602",
    "arduino-microspeech-graph-v5-executorconfig",
    // Issue #5: every kind of archive TVM has written.
    "mlp_f32-aot_packed",
    "arduino-yesno-aot-packed-v5",
    "arduino-microspeech-aot-tvm_model_t-v5",
    "multi-kws_mlp-aot_c",
    "operator-add_f32",
];

/// Cases the host must refuse, with the words the refusal must contain.
const MUST_REFUSE: &[(&str, &str)] = &[
    ("kws_int8-aot_c-cortex_m4", "compiled for an Arm"),
    ("riot-ml-mnist-cm7-tvm011", "compiled for an Arm"),
    ("nitesh-llvm-aarch64-sve-conv1d", "prebuilt object is for AArch64"),
];

const TARGET_DIR: &str = "corpus-host";

#[test]
fn corpus_cases_on_the_host() {
    let Some(root) = common::corpus_dir() else { return };
    let triple = common::host_triple();
    let mut failed = Vec::new();
    for case in common::cases(&root) {
        let verdict = match host_verdict(&case) {
            Verdict::Skip(why) if MUST_PASS.contains(&case.name.as_str()) => Verdict::Fail(format!("required on the host: {why}")),
            verdict => verdict,
        };
        if common::report(&case.name, &triple, &verdict) {
            failed.push(case.name.clone());
        }
    }
    assert!(failed.is_empty(), "corpus cases failed on the host: {failed:?}");
}

fn host_verdict(case: &Case) -> Verdict {
    let libraries = match case.library_env() {
        Ok(libraries) => libraries,
        Err(verdict) => return verdict,
    };
    let refusal = MUST_REFUSE.iter().find(|(name, _)| *name == case.name).map(|(_, words)| *words);
    let build = common::cargo(TARGET_DIR)
        .args(["build", "--release", "--quiet", "-p", "host-runner"])
        .env("MLF_ARCHIVE", &case.archive)
        .envs(libraries)
        .output()
        .expect("cargo runs");
    let stderr = common::failure_text(&build);
    match (build.status.success(), refusal) {
        (false, Some(words)) if stderr.contains(words) => return Verdict::Pass(format!("refused: {}", mlf_message(&stderr))),
        (false, Some(words)) => return Verdict::Fail(format!("expected a refusal saying `{words}`, got: {}", mlf_message(&stderr))),
        (true, Some(_)) => return Verdict::Fail("built, but the host must refuse this archive".to_string()),
        (false, None) if stderr.contains("mlf-build:") && stderr.contains("not supported") => return Verdict::Skip(mlf_message(&stderr)),
        (false, None) => return Verdict::Fail(format!("build failed: {}", mlf_message(&stderr))),
        (true, None) => {}
    }
    if let Err(why) = inspect_matches_build(case) {
        return Verdict::Fail(format!("mlf-build inspect: {why}"));
    }
    let binary = common::repo_root().join("target").join(TARGET_DIR).join("release/host-runner");
    let mut runs = 0;
    if case.modules.is_empty() {
        // The case gives no data (an operator export): it must still run on zeros.
        if let Err(why) = run_runner(&binary, None, &[], &common::scratch(&format!("{}-zeros", case.name))) {
            return Verdict::Fail(why);
        }
        runs += 1;
    }
    for module in &case.modules {
        if module.vectors.is_empty() {
            // No reference data: the archive must still build and run on zeros.
            if let Err(why) = run_runner(&binary, module.module.as_deref(), &[], &common::scratch(&format!("{}-zeros", case.name))) {
                return Verdict::Fail(why);
            }
            runs += 1;
        }
        for (index, vector) in module.vectors.iter().enumerate() {
            let out = common::scratch(&format!("{}-{}-{index}", case.name, module.module.as_deref().unwrap_or("m")));
            if let Err(why) = run_runner(&binary, module.module.as_deref(), &vector.inputs, &out) {
                return Verdict::Fail(why);
            }
            let outputs: Result<Vec<Vec<u8>>, String> = (0..vector.expected.len())
                .map(|i| std::fs::read(out.join(format!("output{i}.bin"))).map_err(|e| format!("output{i}.bin: {e}")))
                .collect();
            if let Err(why) = outputs.and_then(|outputs| common::check_vector(case, index, vector, &outputs)) {
                return Verdict::Fail(why);
            }
            runs += 1;
        }
    }
    let checked = if case.modules.iter().all(|m| m.vectors.is_empty()) { "ran on zeros" } else { "outputs match" };
    Verdict::Pass(format!("{runs} run(s), {checked}"))
}

fn run_runner(binary: &Path, module: Option<&str>, inputs: &[PathBuf], out: &Path) -> Result<(), String> {
    let mut command = std::process::Command::new(binary);
    if let Some(module) = module {
        command.args(["--module", module]);
    }
    let output = command.args(inputs).arg("--out").arg(out).output().map_err(|e| format!("{}: {e}", binary.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("host-runner failed: {}", String::from_utf8_lossy(&output.stderr).trim()))
    }
}

/// The first line of mlf-build's message in a build's stderr.
fn mlf_message(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|line| line.find("mlf-build:").map(|at| line[at..].to_string()))
        .unwrap_or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().to_string())
}

/// Each tensor of `module` is as large as the case's file for it (the inputs
/// TVM ran and the outputs it computed): the size the model declares.
fn declared_sizes(case: &Case, module: &serde_json::Value, modules: usize) -> Result<(), String> {
    let name = module["name"].as_str().unwrap_or_default();
    let Some(vector) = case
        .modules
        .iter()
        .find(|m| m.module.as_deref() == Some(name) || (m.module.is_none() && modules == 1))
        .and_then(|m| m.vectors.first())
    else {
        return Ok(());
    };
    let files = vector.inputs.iter().chain(vector.expected.iter().map(|e| &e.file));
    let tensors = module["inputs"].as_array().into_iter().flatten().chain(module["outputs"].as_array().into_iter().flatten());
    if vector.inputs.len() + vector.expected.len()
        != module["inputs"].as_array().map_or(0, Vec::len) + module["outputs"].as_array().map_or(0, Vec::len)
    {
        return Err(format!("module `{name}`: the case's files and the module's tensors differ in number"));
    }
    for (file, tensor) in files.zip(tensors) {
        let length = std::fs::metadata(file).map_err(|e| format!("{}: {e}", file.display()))?.len();
        if tensor["bytes"].as_u64() != Some(length) {
            return Err(format!(
                "module `{name}`: tensor {} is {} bytes, but {} has {length}",
                tensor["name"],
                tensor["bytes"],
                file.display()
            ));
        }
    }
    Ok(())
}

/// The newest build-script output directory of host-runner: the build just made.
fn runner_out_dir() -> Result<PathBuf, String> {
    let build = common::repo_root().join("target").join(TARGET_DIR).join("release/build");
    let entries = std::fs::read_dir(&build).map_err(|e| format!("{}: {e}", build.display()))?;
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("host-runner-"))
        .map(|e| e.path().join("out"))
        .filter_map(|out| Some((std::fs::metadata(out.join("mlf/mod.rs")).ok()?.modified().ok()?, out)))
        .max()
        .map(|(_, out)| out)
        .ok_or_else(|| "host-runner has no build-script output".to_string())
}

/// `pub const NAME: usize = N;` lines of a generated module, by indentation and name, in order.
fn generated_constants(rust: &str) -> Vec<(usize, String, String)> {
    rust.lines()
        .filter_map(|line| {
            let indent = line.len() - line.trim_start().len();
            let rest = line.trim_start().strip_prefix("pub const ")?;
            let (name, value) = rest.split_once(':')?;
            let value = value.split_once('=')?.1.trim().trim_end_matches(';');
            Some((indent, name.to_string(), value.to_string()))
        })
        .collect()
}

/// `mlf-build inspect --json` gives the numbers of the generated constants and
/// the same module JSON the Builder wrote, for the archive host-runner just built.
fn inspect_matches_build(case: &Case) -> Result<(), String> {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mlf-build"));
    command.args(["inspect", "--json"]).arg(&case.archive);
    // The libraries the build was given meet the needs inspect names: give them to inspect too.
    for (variable, dir) in case.library_env().unwrap_or_default() {
        if variable == "CMSIS_NN_PATH" {
            command.arg("--cmsis-nn").arg(dir);
        }
    }
    let output = command.output().map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|e| format!("not JSON: {e}"))?;
    let out_dir = runner_out_dir()?;
    let modules = document["modules"].as_array().ok_or("no modules")?;
    for module in modules {
        let name = module["name"].as_str().ok_or("a module has no name")?;
        let read = |ext: &str| {
            std::fs::read_to_string(out_dir.join("mlf").join(format!("{name}.{ext}"))).map_err(|e| format!("{name}.{ext}: {e}"))
        };
        let mut written: serde_json::Value = serde_json::from_str(&read("json")?).map_err(|e| format!("{name}.json: {e}"))?;
        // inspect without --target compiles nothing, so has no stack bound: the build's is checked against STACK_BYTES below.
        let stack_bytes = written["stack_bytes"].take();
        let mut planned = module.clone();
        for key in ["stack_bytes", "stack_unknown", "stack_path"] {
            written[key] = serde_json::Value::Null;
            planned[key] = serde_json::Value::Null;
        }
        // Nor the target's pointer size, which sizes a stepped run's state: the build's is checked against STEPPING_BYTES below.
        let stepping = written["memory"]["stepping"].take().as_u64().ok_or_else(|| format!("{name}.json: no memory.stepping"))?;
        if stepping == 0 {
            return Err(format!("module `{name}`: the build counts no stepped run's state"));
        }
        for key in ["static_ram", "ram"] {
            let bytes = written["memory"][key].as_u64().and_then(|bytes| bytes.checked_sub(stepping));
            written["memory"][key] = bytes.into();
        }
        written["memory"]["stepping"] = 0.into();
        if written != planned {
            let keys =
                planned.as_object().map(|o| o.keys().filter(|k| written[k.as_str()] != planned[k.as_str()]).cloned().collect::<Vec<_>>());
            return Err(format!(
                "module `{name}`: the Builder's {name}.json differs from inspect's JSON in {keys:?}: {} against {}",
                keys.iter().flatten().map(|k| written[k.as_str()].to_string()).collect::<Vec<_>>().join(", "),
                keys.iter().flatten().map(|k| planned[k.as_str()].to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        let rust = read("rs")?;
        // The items sit one level into the file's `mod generated`; pools come last and have `BYTES` too.
        let constants = generated_constants(rust.split("\n    pub mod pools {").next().unwrap_or_default());
        let top = |constant: &str| constants.iter().find(|(indent, n, _)| *indent == 4 && n == constant).map(|(_, _, v)| v.clone());
        let memory = &module["memory"];
        let mut pairs = vec![
            ("WORKSPACE_BYTES", "workspace"),
            ("CONSTANTS_BYTES", "constants"),
            ("INPUT_BYTES", "inputs"),
            ("OUTPUT_BYTES", "outputs"),
            ("ALIGNMENT", "alignment"),
            ("ARENA_BYTES", "arena"),
            ("POOL_BYTES", "pools"),
            ("CONSTANT_POOL_BYTES", "constant_pools"),
            ("CODE_WORKSPACE_BYTES", "code_workspace"),
        ];
        if top("KERNEL_SCRATCH_BYTES").is_some() {
            pairs.push(("KERNEL_SCRATCH_BYTES", "kernel_scratch"));
        }
        if top("STORAGE_BYTES").is_some() {
            pairs.extend([("STORAGE_BYTES", "storage"), ("PARAMS_BYTES", "params")]);
        }
        if top("PADDED_IO_BYTES").is_some() {
            pairs.push(("PADDED_IO_BYTES", "padded_io"));
        }
        // Issue 32: every corpus tensor is exactly the size TVM declared, and none runs on a padded copy.
        if memory["padded_io"].as_u64() != Some(0) {
            return Err(format!("module `{name}`: memory.padded_io is {}, not 0", memory["padded_io"]));
        }
        declared_sizes(case, module, modules.len())?;
        let stack_constant = top("STACK_BYTES");
        if stack_constant.as_deref().and_then(|bytes| bytes.parse::<u64>().ok()) != stack_bytes.as_u64() {
            return Err(format!("module `{name}`: STACK_BYTES = {stack_constant:?}, {name}.json says stack_bytes = {stack_bytes}"));
        }
        let stepping_constant = top("STEPPING_BYTES");
        if stepping_constant.as_deref().and_then(|bytes| bytes.parse::<u64>().ok()) != Some(stepping) {
            return Err(format!("module `{name}`: STEPPING_BYTES = {stepping_constant:?}, {name}.json says memory.stepping = {stepping}"));
        }
        for (constant, key) in pairs {
            let generated = top(constant).ok_or_else(|| format!("module `{name}`: no constant {constant}"))?;
            if memory[key].as_u64() != generated.parse().ok() {
                return Err(format!("module `{name}`: {constant} = {generated}, inspect says memory.{key} = {}", memory[key]));
            }
        }
        // Each tensor module states DTYPE, INDEX, BYTES, LEN and SHAPE, in order: inputs, then outputs.
        let tensor_bytes: Vec<&String> =
            constants.iter().filter(|(indent, n, _)| *indent == 12 && n == "BYTES").map(|(_, _, v)| v).collect();
        let tensor_shapes: Vec<String> =
            constants.iter().filter(|(indent, n, _)| *indent == 12 && n.starts_with("SHAPE")).map(|(_, _, v)| v.replace(' ', "")).collect();
        let tensors: Vec<&serde_json::Value> =
            module["inputs"].as_array().into_iter().chain(module["outputs"].as_array()).flatten().collect();
        if tensors.len() != tensor_bytes.len() || tensors.len() != tensor_shapes.len() {
            return Err(format!("module `{name}`: inspect lists {} tensors, the generated module {}", tensors.len(), tensor_bytes.len()));
        }
        for ((tensor, bytes), shape) in tensors.iter().zip(tensor_bytes).zip(tensor_shapes) {
            let generated_shape: Option<serde_json::Value> = serde_json::from_str(&shape).ok();
            if tensor["bytes"].as_u64() != bytes.parse().ok() || generated_shape.as_ref() != Some(&tensor["shape"]) {
                return Err(format!(
                    "module `{name}`: tensor {} is {} bytes {} by inspect, {bytes} bytes {shape} generated",
                    tensor["name"], tensor["bytes"], tensor["shape"]
                ));
            }
        }
    }
    Ok(())
}
