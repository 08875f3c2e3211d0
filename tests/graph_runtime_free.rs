//! A graph-archive program carries no graph runtime: no JSON, no graph
//! executor, no heap. Builds `examples/host-runner` for graph archives and
//! inspects what was compiled and linked.
//!
//! On the host, Rust's std links `malloc` itself, so "no heap" is checked
//! where it can be proven: the static library of the archive's code plus the
//! generated glue must not reference any allocator, stdio or JSON function,
//! and the final binary must hold none of TVM's graph-executor, JSON-reader
//! or page-allocator symbols.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Shared with corpus_host: test binaries run one after another, so the host-runner build is reused.
const TARGET_DIR: &str = "corpus-host";

/// Functions a heap, stdio or a JSON parser would pull in.
const FORBIDDEN_UNDEFINED: &[&str] =
    &["malloc", "calloc", "realloc", "free", "printf", "fprintf", "puts", "fopen", "fwrite", "vsnprintf", "snprintf", "strtol", "strtod"];

/// Names from TVM's C runtime that a graph runtime would link.
const FORBIDDEN_IN_BINARY: &[&str] =
    &["TVMGraphExecutor", "JSONReader", "json", "PageMemoryManager", "MemoryManagerCreate", "TVMNDArray", "TVMFuncCall"];

#[test]
fn graph_archives_link_no_graph_runtime() {
    let Some(root) = common::corpus_dir() else { return };
    let triple = common::host_triple();
    let mut failed = Vec::new();
    for case in ["tvm-0.18/cnn_f32-graph", "real-world/arduino-microspeech-graph-v5-executorconfig"] {
        let (word, why) = match check(&root.join(case).join("model.tar")) {
            Ok(why) => ("PASS", why),
            Err(why) => ("FAIL", why),
        };
        let name = case.rsplit('/').next().unwrap_or(case);
        // Past libtest's capture, like the corpus lines.
        let _ = writeln!(std::io::stdout().lock(), "graph-runtime-free: {name} [{triple}] {word} ({why})");
        if word == "FAIL" {
            failed.push(name.to_string());
        }
    }
    assert!(failed.is_empty(), "graph programs link runtime parts: {failed:?}");
}

fn check(archive: &Path) -> Result<String, String> {
    let build = common::cargo(TARGET_DIR)
        .args(["build", "--release", "--quiet", "-p", "host-runner"])
        .env("MLF_ARCHIVE", archive)
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if !build.status.success() {
        return Err(format!("build failed: {}", common::failure_text(&build)));
    }
    let release = common::repo_root().join("target").join(TARGET_DIR).join("release");
    let out_dir = newest_out_dir(&release)?;
    let build_dir = out_dir.join("mlf/build/default");

    let glue = std::fs::read_to_string(build_dir.join("gen/mlf_default_glue.c")).map_err(|e| format!("glue: {e}"))?;
    // Comments may cite metadata.json; only the code counts.
    let glue = without_comments(&glue);
    for word in ["json", "malloc", "stdio", "TVMGraphExecutor"] {
        if glue.to_lowercase().contains(&word.to_lowercase()) {
            return Err(format!("the generated glue mentions `{word}`"));
        }
    }
    if !glue.contains("mlf_calls[") {
        return Err("the generated glue has no planned call table".to_string());
    }

    let undefined = nm(&build_dir.join("lib/libmlf_default.a"), &["-u"])?;
    for name in FORBIDDEN_UNDEFINED {
        if undefined.iter().any(|symbol| symbol == name) {
            return Err(format!("the model library references `{name}`"));
        }
    }
    let binary = nm(&release.join("host-runner"), &[])?;
    for word in FORBIDDEN_IN_BINARY {
        if let Some(symbol) = binary.iter().find(|symbol| symbol.to_lowercase().contains(&word.to_lowercase())) {
            return Err(format!("the program links `{symbol}`"));
        }
    }
    // Under host-runner's tag: its symbols are its own (the book's "Models as crates").
    if !binary.iter().any(|symbol| symbol == "host_runner_0_1_0_mlf_default_invoke") {
        return Err("the program does not link the generated entry point".to_string());
    }
    strict_no_std(&out_dir.join("mlf/default.rs"))?;
    Ok(format!(
        "{} undefined symbols in the model library, {} in the program: none from a graph runtime, JSON or heap; no_std warning-free",
        undefined.len(),
        binary.len()
    ))
}

/// The generated module compiles in a `no_std` library under `#![deny(warnings, missing_docs)]`.
fn strict_no_std(module: &Path) -> Result<(), String> {
    let dir = common::scratch("graph-strict");
    let lib = dir.join("lib.rs");
    let text = format!(
        "//! A graph module under firmware settings.\n#![no_std]\n#![deny(warnings, missing_docs, unsafe_op_in_unsafe_fn)]\n\n/// The model.\npub mod model {{\n    include!({:?});\n}}\n",
        module.display().to_string()
    );
    std::fs::write(&lib, text).map_err(|e| format!("{}: {e}", lib.display()))?;
    // host-runner builds its modules with `implement_mlf_rt`: they name the mlf-rt crate it linked.
    let deps = common::repo_root().join("target").join(TARGET_DIR).join("release/deps");
    let mlf_rt = newest_file(&deps, "libmlf_rt-", ".rlib")?;
    let output = Command::new("rustc")
        .args(["--edition", "2021", "--crate-type", "rlib", "--crate-name", "graph_strict", "--out-dir"])
        .arg(&dir)
        .arg("--extern")
        .arg(format!("mlf_rt={}", mlf_rt.display()))
        .arg(&lib)
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("the generated module does not compile strictly: {}", String::from_utf8_lossy(&output.stderr)))
    }
}

/// Symbol names `nm` lists for `file`.
fn nm(file: &Path, flags: &[&str]) -> Result<Vec<String>, String> {
    let output = Command::new("nm").args(flags).arg(file).output().map_err(|e| format!("nm: {e}"))?;
    if !output.status.success() {
        return Err(format!("nm {}: {}", file.display(), String::from_utf8_lossy(&output.stderr)));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text.lines().filter_map(|line| line.split_whitespace().last()).filter(|name| !name.ends_with(':')).map(str::to_string).collect())
}

/// The newest file in `dir` named `<prefix>…<suffix>`.
fn newest_file(dir: &Path, prefix: &str, suffix: &str) -> Result<PathBuf, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix)))
        .max_by_key(|path| path.metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| format!("no {prefix}*{suffix} in {}", dir.display()))
}

/// The OUT_DIR of the host-runner build that ran last.
fn newest_out_dir(release: &Path) -> Result<PathBuf, String> {
    let entries = std::fs::read_dir(release.join("build")).map_err(|e| format!("{}: {e}", release.display()))?;
    entries
        .filter_map(|entry| entry.ok().map(|e| e.path().join("out")))
        .filter(|out| out.join("mlf/default.rs").is_file())
        .max_by_key(|out| out.join("mlf/default.rs").metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| "no host-runner build output".to_string())
}

/// C source without its `/* ... */` comments.
fn without_comments(source: &str) -> String {
    let mut code = String::new();
    let mut rest = source;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        rest = rest[start..].find("*/").map_or("", |end| &rest[start + end + 2..]);
    }
    code.push_str(rest);
    code
}
