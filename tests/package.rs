//! The crate as `cargo package` ships it, used by a new crate outside the
//! workspace: README's two snippets (taken from README.md, so they cannot
//! drift, and equal to the book's) reading the case's inputs and comparing
//! its outputs, under `#![deny(warnings)]`, building and running a corpus archive,
//! built from clean twice under a local sccache.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// The corpus case the consumer builds: small, AOT, one input and one output.
const CASE: &str = "mlp_f32-aot_c";

/// The Rust snippets of `page`'s "Use it" section (`heading`): build.rs, then src/main.rs.
fn use_it_snippets(page: &str, heading: &str) -> (String, String) {
    let section: String = common::doc_section(page, heading).into_iter().map(|(_, line)| line + "\n").collect();
    let mut blocks = section.split("```rust").skip(1).map(|block| {
        let body = block.split_once('\n').map_or("", |(_, body)| body);
        body.split("\n```").next().unwrap_or_default().to_string()
    });
    let build_rs = blocks.next().expect("a build.rs snippet");
    let main_rs = blocks.next().expect("a src/main.rs snippet");
    assert!(
        build_rs.starts_with("// build.rs") && main_rs.starts_with("// src/main.rs"),
        "{page}'s snippets moved:\n{build_rs}\n{main_rs}"
    );
    (build_rs, main_rs)
}

/// README.md's "Use it" files, which the book's "Use it" (using-it.md) repeats.
fn readme_snippets() -> (String, String) {
    let front = use_it_snippets("README.md", "## Use it");
    let book = use_it_snippets("using-it.md", "## Use it");
    assert_eq!(front, book, "README.md's and the book's (using-it.md) Use it snippets differ");
    (front.0, front.1)
}

fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn sccache_available() -> bool {
    Command::new("sccache").arg("--version").output().is_ok_and(|output| output.status.success())
}

/// An sccache server of this test's own: its own port and cache directory.
struct Sccache {
    port: String,
    dir: PathBuf,
}

impl Sccache {
    fn command(&self) -> Command {
        let mut command = Command::new("sccache");
        command.env("SCCACHE_SERVER_PORT", &self.port).env("SCCACHE_DIR", &self.dir).env("SCCACHE_IDLE_TIMEOUT", "0");
        command
    }

    fn apply(&self, command: &mut Command) {
        command
            .env("RUSTC_WRAPPER", "sccache")
            .env("SCCACHE_SERVER_PORT", &self.port)
            .env("SCCACHE_DIR", &self.dir)
            // Incremental compilation is not cacheable.
            .env("CARGO_INCREMENTAL", "0");
    }

    fn stats(&self) -> Value {
        let output = run(self.command().args(["--show-stats", "--stats-format", "json"]));
        serde_json::from_slice(&output.stdout).expect("sccache prints JSON stats")
    }
}

impl Drop for Sccache {
    fn drop(&mut self) {
        let _ = self.command().arg("--stop-server").output();
    }
}

fn counts(stats: &Value, counter: &str) -> u64 {
    stats["stats"][counter]["counts"].as_object().map_or(0, |counts| counts.values().filter_map(Value::as_u64).sum())
}

#[test]
fn packaged_crate_builds_readme_snippets_under_deny_warnings_and_sccache() {
    let Some(case) = common::corpus_case(CASE) else { return };
    let work = common::scratch("package");

    // `cargo package`, warning-free; --no-verify: the consumer below is the verification.
    // With mlf-rt, which mlf-build depends on (the slot format) and which is published first.
    let package_target = work.join("package-target");
    let packaged = run(Command::new(env!("CARGO"))
        .current_dir(common::repo_root())
        .args(["package", "--no-verify", "--allow-dirty", "-p", "mlf-rt", "-p", "mlf-build"])
        .env("CARGO_TARGET_DIR", &package_target));
    let stderr = String::from_utf8_lossy(&packaged.stderr);
    assert!(!stderr.contains("warning"), "cargo package warned:\n{stderr}");
    let crate_file = package_target.join(format!("package/mlf-build-{}.crate", env!("CARGO_PKG_VERSION")));
    run(Command::new("tar").arg("-xzf").arg(&crate_file).arg("-C").arg(&work));
    let unpacked = work.join(format!("mlf-build-{}", env!("CARGO_PKG_VERSION")));
    let rt_version = common::repo_root().join("mlf-rt/Cargo.toml");
    let rt_version = std::fs::read_to_string(rt_version).expect("mlf-rt's manifest");
    let rt_version = rt_version.lines().find_map(|line| line.strip_prefix("version = ")).expect("mlf-rt's version").trim_matches('"');
    run(Command::new("tar").arg("-xzf").arg(package_target.join(format!("package/mlf-rt-{rt_version}.crate"))).arg("-C").arg(&work));
    let unpacked_rt = work.join(format!("mlf-rt-{rt_version}"));
    assert!(!unpacked.join("examples").exists() && unpacked.join("LICENSE").is_file(), "the package holds what `include` names");

    // A new crate: README's build.rs and src/main.rs, the corpus archive as model.tar.
    let consumer = work.join("readme-consumer");
    let (build_rs, main_rs) = readme_snippets();
    std::fs::create_dir_all(consumer.join("src")).expect("consumer dir");
    let manifest = format!(
        "[package]\nname = \"readme-consumer\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[build-dependencies]\nmlf-build = {{ path = {:?} }}\n\n[patch.crates-io]\nmlf-rt = {{ path = {:?} }}\n",
        unpacked.display().to_string(),
        unpacked_rt.display().to_string()
    );
    std::fs::write(consumer.join("Cargo.toml"), manifest).expect("write Cargo.toml");
    std::fs::write(consumer.join("build.rs"), build_rs).expect("write build.rs");
    std::fs::write(consumer.join("src/main.rs"), format!("#![deny(warnings)]\n{main_rs}")).expect("write main.rs");
    // The versions this repository tests with, not whatever is newest today.
    std::fs::copy(common::repo_root().join("Cargo.lock"), consumer.join("Cargo.lock")).expect("copy Cargo.lock");
    std::fs::copy(case.join("model.tar"), consumer.join("model.tar")).expect("copy the archive");
    // The inputs and TVM's outputs, where README's main.rs reads them.
    for folder in ["inputs", "expected"] {
        std::fs::create_dir_all(consumer.join(folder)).expect("data dir");
        for entry in std::fs::read_dir(case.join(folder)).expect("the case's data") {
            let path = entry.expect("an entry").path();
            std::fs::copy(&path, consumer.join(folder).join(path.file_name().unwrap())).expect("copy the data");
        }
    }

    let sccache = if sccache_available() {
        Some(Sccache { port: (20000 + std::process::id() % 20000).to_string(), dir: work.join("sccache") })
    } else {
        assert!(std::env::var_os("CI").is_none(), "sccache is not installed (.ci/run installs it)");
        common::skip("sccache is not installed: the packaged crate is built once, without it");
        None
    };
    if let Some(sccache) = &sccache {
        run(sccache.command().arg("--start-server"));
    }
    let target = work.join("target");
    let cargo = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO"));
        command.current_dir(&consumer).args(args).env("CARGO_TARGET_DIR", &target);
        if let Some(sccache) = &sccache {
            sccache.apply(&mut command);
        }
        run(&mut command)
    };

    // Built under #![deny(warnings)] from a clean target directory, then run.
    cargo(&["build"]);
    let ran = run(Command::new(target.join("debug/readme-consumer")).current_dir(&consumer));
    let stdout = String::from_utf8_lossy(&ran.stdout);
    // One line per output, equal to TVM's or within the case's float tolerance; README quotes the line.
    let line = stdout.lines().next().unwrap_or_default();
    assert_eq!(stdout.lines().count(), 1, "one line for the one output:\n{stdout}");
    let close = line.ends_with(": as expected")
        || line.split("within ").nth(1).and_then(|rest| rest.split(' ').next()?.parse::<f32>().ok()).is_some_and(|most| most <= 1e-5);
    assert!(line.starts_with("output0 `output`: ") && close, "the output is TVM's:\n{stdout}");
    let readme = common::book_chapter("README.md");
    assert!(readme.contains(&format!("``{line}``")), "README.md does not quote the line its main.rs printed:\n{line}");

    // A second clean build takes everything sccache can cache, Rust and the model's C, from it.
    if let Some(sccache) = &sccache {
        run(sccache.command().arg("--zero-stats"));
        cargo(&["clean"]);
        cargo(&["build"]);
        let stats = sccache.stats();
        let (hits, misses) = (counts(&stats, "cache_hits"), counts(&stats, "cache_misses"));
        let c_hits = stats["stats"]["cache_hits"]["counts"]["C/C++"].as_u64().unwrap_or(0);
        assert!(misses == 0 && hits > 0 && c_hits > 0, "the second clean build compiled something anew: {stats:#}");
    }
    drop(sccache);
    let _ = std::fs::remove_dir_all(&work);
}

/// The lockfile must resolve with the Rust the crate declares.
#[test]
fn cargo_lock_needs_no_newer_rust_than_rust_version() {
    let output = run(Command::new(env!("CARGO")).current_dir(common::repo_root()).args(["metadata", "--format-version", "1", "--locked"]));
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let version = |text: &str| text.split('.').map(|part| part.parse::<u32>().unwrap_or(0)).chain([0, 0]).take(3).collect::<Vec<_>>();
    let declared = version(env!("CARGO_PKG_RUST_VERSION"));
    let newer: Vec<String> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|package| {
            let needs = package["rust_version"].as_str()?;
            (version(needs) > declared).then(|| format!("{} {} needs {needs}", package["name"], package["version"]))
        })
        .collect();
    assert!(newer.is_empty(), "Cargo.lock needs a newer Rust than rust-version {}: {newer:?}", env!("CARGO_PKG_RUST_VERSION"));
}
