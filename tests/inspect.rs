//! `mlf-build inspect`: its JSON schema as the book's inspect.md documents it, the memory-map
//! SVG (well-formed, labels equal to the numbers, the book's picture current),
//! errors, and `--target` measuring compiled objects without `cargo:` noise.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn archive(case: &str) -> Option<PathBuf> {
    Some(common::corpus_case(case)?.join("model.tar"))
}

fn inspect(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mlf-build")).arg("inspect").args(args).output().expect("mlf-build runs")
}

fn inspect_json(archive: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![archive.as_os_str(), "--json".as_ref()];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    let output = inspect(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("stdout is one JSON document")
}

/// The keys the book's schema section (inspect.md) lists, as `` `key` `` in its table rows.
fn documented_keys() -> Vec<String> {
    let section = common::doc_section("inspect.md", "## JSON schema");
    section.iter().filter(|(_, line)| line.starts_with("| `")).filter_map(|(_, line)| line.split('`').nth(1).map(str::to_string)).collect()
}

/// Every key path of a JSON value (`modules[].memory.arena`), arrays as `[]`.
fn key_paths(value: &serde_json::Value, prefix: &str, paths: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, child) in map {
                let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                paths.push(path.clone());
                key_paths(child, &path, paths);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}[]"), paths);
            }
        }
        _ => {}
    }
}

#[test]
fn json_follows_the_documented_schema() {
    let (Some(graph), Some(pools), Some(arm)) =
        (archive("cnn_f32-graph"), archive("kws_int8-aot_c_pools"), archive("kws_int8-aot_c-cortex_m4"))
    else {
        return;
    };
    let documented = documented_keys();
    let mut seen = Vec::new();
    let memory_x = common::scratch("inspect-schema").join("memory.x");
    std::fs::write(&memory_x, SPLIT_MEMORY_X).unwrap();
    let memory_x = memory_x.display().to_string();
    // The Arm archive has needs, so their keys show.
    for (archive, extra) in
        [(graph, vec![]), (pools, vec!["--memory-x", memory_x.as_str(), "--link-section", "workspace=.sram2"]), (arm, vec![])]
    {
        let document = inspect_json(&archive, &extra);
        assert_eq!(document["schema"], mlf_build::SCHEMA);
        assert!(document["footprint"].is_null(), "no --target, no footprint");
        let module = &document["modules"][0];
        assert_eq!(module["schema"], mlf_build::SCHEMA, "each module document stands alone ($OUT_DIR/mlf/<m>.json)");
        let memory = &module["memory"];
        let static_ram = ["code_workspace", "arena", "pools", "storage", "kernel_scratch", "padded_io", "stepping"]
            .iter()
            .map(|k| memory[k].as_u64().unwrap())
            .sum::<u64>();
        assert_eq!(memory["static_ram"].as_u64(), Some(static_ram));
        assert_eq!(memory["ram"].as_u64(), Some(static_ram + memory["inputs"].as_u64().unwrap() + memory["outputs"].as_u64().unwrap()));
        key_paths(&document, "", &mut seen);
    }
    // Two archives as one arena group, laid onto a memory.x: the group's keys.
    let (Some(kws), Some(cnn)) = (archive("kws_int8-aot_c_nousmp"), archive("cnn_f32-graph")) else { return };
    let document = group_json(&[&kws, &cnn], &["--memory-x", memory_x.as_str(), "--link-section", "workspace=.sram2"]);
    key_paths(&document, "", &mut seen);
    seen.sort();
    seen.dedup();
    for key in &seen {
        assert!(documented.contains(key), "inspect.md's JSON schema does not document `{key}`");
    }
    let footprint_keys = ["footprint.target", "footprint.cpu", "footprint.model.flash", "footprint.support.ram"];
    for key in &documented {
        // A path's steps exist only with --target (target_measures_the_compiled_objects_quietly checks them).
        let compiled_only = key.starts_with("footprint") || key.starts_with("modules[].stack_path[]");
        assert!(seen.contains(key) || compiled_only, "inspect.md documents `{key}`, which inspect does not write");
    }
    for key in footprint_keys {
        assert!(documented.iter().any(|k| k == key), "inspect.md's JSON schema does not document `{key}`");
    }
}

/// `inspect <archives> --arena-group turns --json <extra>`, which must succeed.
fn group_json(archives: &[&Path], extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<&std::ffi::OsStr> = archives.iter().map(|a| a.as_os_str()).collect();
    args.extend(["--arena-group", "turns", "--json"].iter().chain(extra).map(std::ffi::OsStr::new));
    let output = inspect(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("stdout is one JSON document")
}

fn bytes(value: &serde_json::Value, key: &str) -> u64 {
    value[key].as_u64().unwrap_or_else(|| panic!("`{key}` is a number in {value}"))
}

/// What a module keeps as scratch, each part as it would alone.
const SCRATCH: [&str; 5] = ["code_workspace", "arena", "pools", "storage", "kernel_scratch"];

#[test]
fn arena_group_plan_counts_the_shared_arena_once() {
    let cases = ["kws_int8-aot_c_nousmp", "kws_int8-aot_c_pools", "cnn_f32-graph"];
    let Some(archives) = cases.iter().map(|case| archive(case)).collect::<Option<Vec<_>>>() else {
        println!("SKIP arena_group_plan_counts_the_shared_arena_once: corpus not found");
        return;
    };
    let paths: Vec<&Path> = archives.iter().map(PathBuf::as_path).collect();
    let document = group_json(&paths, &[]);
    let group = &document["arena_group"];
    assert_eq!(group["name"], "turns");
    let members = group["members"].as_array().unwrap();
    assert_eq!(members.len(), 3, "one member per module, in the order given");
    let (mut own, mut apart, mut scratch_sum, mut io, mut largest) = (0, 0, 0, 0, 0);
    for ((member, module), archive) in members.iter().zip(document["modules"].as_array().unwrap()).zip(&archives) {
        assert_eq!(member["archive"], archive.display().to_string());
        assert_eq!(module["arena_group"], "turns");
        let memory = &module["memory"];
        // Alone, the same archive's static RAM is its own plus its scratch.
        let alone = &inspect_json(archive, &[])["modules"][0]["memory"];
        let scratch: u64 = SCRATCH.iter().map(|key| bytes(memory, key)).sum();
        assert!(scratch > 0 && alone["group_scratch"] == 0, "{alone}");
        assert_eq!(bytes(memory, "static_ram"), bytes(memory, "padded_io") + bytes(memory, "stepping"), "a member's own: {memory}");
        assert_eq!(bytes(alone, "static_ram"), bytes(memory, "static_ram") + scratch);
        // Its parts, each aligned, laid out in the arena: at least their sum, less than one alignment more per part.
        let in_arena = bytes(memory, "group_scratch");
        assert!(in_arena >= scratch && in_arena < scratch + SCRATCH.len() as u64 * bytes(memory, "alignment"), "{memory}");
        assert_eq!(bytes(member, "scratch"), in_arena);
        assert_eq!(bytes(member, "own_static_ram"), bytes(memory, "static_ram"));
        own += bytes(memory, "static_ram");
        apart += bytes(alone, "static_ram");
        scratch_sum += scratch;
        io += bytes(memory, "inputs") + bytes(memory, "outputs");
        largest = largest.max(in_arena);
    }
    assert_eq!(bytes(group, "arena_bytes"), largest);
    assert_eq!(bytes(group, "static_ram"), own + largest, "the arena counted once");
    assert_eq!(bytes(group, "ram"), own + largest + io);
    assert_eq!((bytes(group, "separate_scratch"), bytes(group, "separate_static_ram")), (scratch_sum, apart));
    assert!(largest < scratch_sum, "sharing saves RAM: {largest} of {scratch_sum}");

    // The text says the same.
    let mut args: Vec<&std::ffi::OsStr> = paths.iter().map(|p| p.as_os_str()).collect();
    args.extend(["--arena-group", "turns"].map(std::ffi::OsStr::new));
    let text = String::from_utf8(inspect(&args).stdout).unwrap();
    assert!(text.contains("arena group `turns`: 3 members take turns in one arena"), "{text}");
    assert!(text.contains(&format!("  shared arena: {largest} bytes (the largest member's scratch)")), "{text}");
    assert!(
        text.contains(&format!(
            "  static RAM counted once: {} bytes (built apart: {apart}, scratch {scratch_sum} bytes in all)",
            own + largest
        )),
        "{text}"
    );

    // A memory.x whose RAM holds the largest member's scratch but not the sum: the group fits, counted once.
    let dir = common::scratch("inspect-arena-group");
    let ram = own + largest + io + 512;
    assert!(ram < apart + io, "the region holds the group but not the members apart");
    let memory_x = dir.join("memory.x");
    std::fs::write(&memory_x, format!("MEMORY {{\n FLASH : ORIGIN = 0, LENGTH = 1M\n RAM : ORIGIN = 0x20000000, LENGTH = {ram}\n}}\n"))
        .unwrap();
    let document = group_json(&paths, &["--memory-x", &memory_x.display().to_string()]);
    let ram_region = document["memory_fit"]["regions"].as_array().unwrap().iter().find(|r| r["region"] == "RAM").unwrap().clone();
    assert_eq!(bytes(&ram_region, "used"), own + largest + io, "{ram_region}");
    assert_eq!(ram_region["fits"], true);
    let shared: Vec<&serde_json::Value> = ram_region["parts"].as_array().unwrap().iter().filter(|p| p["what"] == "shared arena").collect();
    assert_eq!(shared.len(), 1, "{ram_region}");
    assert_eq!((&shared[0]["group"], bytes(shared[0], "bytes")), (&serde_json::json!("turns"), largest));
    assert!(ram_region["parts"].as_array().unwrap().iter().all(|p| !SCRATCH.contains(&p["what"].as_str().unwrap())), "{ram_region}");

    // Several archives need the group option; a group name must be a C identifier.
    let (status, _, stderr) = mlf_build(&["inspect", "a.tar", "b.tar"]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("add --arena-group <GROUP>"), "{stderr}");
    let mut bad: Vec<&std::ffi::OsStr> = paths.iter().map(|p| p.as_os_str()).collect();
    bad.extend(["--arena-group", "two words"].map(std::ffi::OsStr::new));
    let output = inspect(&bad);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("the arena group name \"two words\" is not a C identifier"));
}

/// The book's "Ask first" (memory.md) `memory.x`: a small RAM and a second bank.
const SPLIT_MEMORY_X: &str = "MEMORY
{
  FLASH : ORIGIN = 0x00000000, LENGTH = 64K
  RAM : ORIGIN = 0x20000000, LENGTH = 8K
  SRAM2 : ORIGIN = 0x20002000, LENGTH = 32K
}
SECTIONS { .sram2 (NOLOAD) : { *(.sram2 .sram2.*) } > SRAM2 } INSERT AFTER .bss;
";

#[test]
fn memory_x_answers_will_it_fit_per_region_as_readme_shows() {
    let Some(archive) = archive("kws_int8-aot_c_usmp") else { return };
    let section: String = common::doc_section("memory.md", "## Will it fit?").into_iter().map(|(_, line)| line + "\n").collect();
    assert!(section.contains(SPLIT_MEMORY_X), "the book's Ask first memory.x (memory.md) differs from the test's");
    let memory_x = common::scratch("inspect-memory-x").join("memory.x");
    std::fs::write(&memory_x, SPLIT_MEMORY_X).unwrap();
    // `--option=value`, as well as `--option value` elsewhere.
    let memory_x_arg = format!("--memory-x={}", memory_x.display());
    let run = |extra: &[&str]| {
        let mut args = vec![archive.as_os_str(), memory_x_arg.as_ref()];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        let output = inspect(&args);
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    // Everything in RAM: 8 KiB is too small, the exit status says so and the error is the book's.
    let (status, stdout, stderr) = run(&[]);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stdout.contains("DOES NOT FIT by 7,432 B"), "{stdout}");
    // The book shows the build's error, which names the archive first.
    let error = stderr.replacen("mlf-build: ", "mlf-build: …/model.tar: ", 1).replace(&memory_x.display().to_string(), "…/memory.x");
    for line in error.lines() {
        assert!(section.contains(line), "memory.md's Will it fit? section does not show this line of the error:\n{line}");
    }
    // The workspace in the second bank, code measured for the M4F: it fits, as the book shows.
    let (status, stdout, stderr) = run(&["--link-section", "workspace=.sram2", "--target", "thumbv7em-none-eabihf"]);
    assert_eq!(status, Some(0), "{stderr}");
    let regions: Vec<&str> = stdout.lines().skip_while(|line| !line.starts_with("memory fit in")).skip(1).collect();
    assert_eq!(regions.len(), 3, "{stdout}");
    for line in regions {
        assert!(section.contains(line), "memory.md's Will it fit? section does not show this line of inspect's output:\n{line}");
    }
    // The picture shows each region to scale with its headroom.
    let svg = memory_x.with_file_name("fit.svg");
    let (status, _, stderr) = run(&["--link-section", "workspace=.sram2", "--svg", svg.to_str().unwrap()]);
    assert_eq!(status, Some(0), "{stderr}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    for label in ["region FLASH: 272 of 65536 bytes, 65264 bytes left", "region SRAM2: 15378 of 32768 bytes, 17390 bytes left"] {
        assert!(svg.contains(label), "{svg}");
    }
    assert!(svg.contains("<title>headroom: 17390 bytes</title>"), "{svg}");
    // A value the option cannot take is a usage error.
    let (status, _, stderr) = run(&["--link-section", "stack=.sram2"]);
    assert_eq!(status, Some(2));
    assert!(stderr.contains("`stack` is not a kind of model storage"), "{stderr}");
}

#[test]
fn svg_is_well_formed_and_labels_match_the_numbers() {
    let Some(kws) = archive("kws_int8-aot_c_usmp") else { return };
    let svg_path = common::scratch("svg").join("kws.svg");
    let output = inspect(&[kws.as_os_str(), "--svg".as_ref(), svg_path.as_os_str()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let tree = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    assert_eq!(tree.root_element().tag_name().name(), "svg");
    let memory = &inspect_json(&kws, &[])["modules"][0]["memory"];
    let expected = [
        ("flash", "weights in code", memory["constants"].as_u64().unwrap()),
        ("RAM", "workspace in code", memory["code_workspace"].as_u64().unwrap()),
        ("RAM", "inputs", memory["inputs"].as_u64().unwrap()),
        ("RAM", "outputs", memory["outputs"].as_u64().unwrap()),
    ];
    let labels: Vec<(String, String, u64)> = tree
        .descendants()
        .filter(|n| n.attribute("class") == Some("segment"))
        .map(|n| {
            let bytes: u64 = n.attribute("data-bytes").unwrap().parse().unwrap();
            let text = n.text().unwrap().to_string();
            assert!(text.ends_with(&format!(": {bytes} bytes")), "label `{text}` states its bytes");
            (n.attribute("data-memory").unwrap().to_string(), text.split(':').next().unwrap().to_string(), bytes)
        })
        .collect();
    for (memory, label, bytes) in expected {
        assert!(
            labels.contains(&(memory.to_string(), label.to_string(), bytes)),
            "no {memory} segment `{label}: {bytes} bytes` in {labels:?}"
        );
    }
    for total in tree.descendants().filter(|n| n.attribute("class") == Some("memory")) {
        let memory = total.text().unwrap().split(':').next().unwrap();
        let sum: u64 = labels.iter().filter(|(m, _, _)| m == memory).map(|(_, _, b)| b).sum();
        assert_eq!(total.attribute("data-bytes").unwrap().parse::<u64>().unwrap(), sum, "{memory} total is the sum of its segments");
    }
    let in_book = std::fs::read_to_string(common::repo_root().join("docs/kws_int8-aot_c_usmp.svg")).expect("docs/kws_int8-aot_c_usmp.svg");
    assert_eq!(in_book, svg, "the book's picture is out of date: regenerate it with the command in docs/src/inspect.md");
}

#[test]
fn errors_are_one_block_and_fail() {
    let not_mlf = common::scratch("not-mlf").join("not-mlf.tar");
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(2);
    header.set_mode(0o644);
    header.set_cksum();
    builder.append_data(&mut header, "README", &b"hi"[..]).unwrap();
    std::fs::write(&not_mlf, builder.into_inner().unwrap()).unwrap();
    let output = inspect(&[not_mlf.as_os_str()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("mlf-build: ")
            && stderr.contains("not-mlf.tar")
            && stderr.contains("neither metadata.json nor an interface header")
            && stderr.contains("help:"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
    let usage = inspect(&[]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("Usage: mlf-build inspect"));
}

fn mlf_build(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_mlf-build")).args(args).output().expect("mlf-build runs");
    (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn help_and_version_exit_0_and_usage_errors_exit_2_with_a_hint() {
    for help in [&["--help"][..], &["-h"], &["help"], &["inspect", "--help"], &["inspect", "-h"], &["help", "inspect"]] {
        let (status, stdout, stderr) = mlf_build(help);
        assert_eq!(status, Some(0), "{help:?}: {stderr}");
        assert!(stdout.contains("Usage: mlf-build") && stderr.is_empty(), "{help:?}: {stdout}");
    }
    let (status, stdout, _) = mlf_build(&["--version"]);
    assert_eq!((status, stdout.trim()), (Some(0), concat!("mlf-build ", env!("CARGO_PKG_VERSION"))));
    // Every option the book's command line shows is in the subcommand's help.
    let chapter = common::book_chapter("inspect.md");
    let command =
        chapter.lines().find(|line| line.contains("--bin mlf-build -- inspect")).expect("the book's inspect.md shows the command");
    let (_, help, _) = mlf_build(&["inspect", "--help"]);
    let arguments = command.split("-- inspect").nth(1).unwrap_or_default();
    let options: Vec<&str> = arguments.split(['[', ']', ' ']).filter(|word| word.starts_with("--")).collect();
    assert!(options.len() >= 6, "{command}");
    for option in options {
        assert!(
            help.contains(&format!("  {option} ")) || help.contains(&format!("  {option}\n")),
            "`inspect --help` lacks {option}:\n{help}"
        );
    }
    for wrong in [&[][..], &["inspect"], &["inspect", "model.tar", "--targte", "x"], &["frobnicate"]] {
        let (status, stdout, stderr) = mlf_build(wrong);
        assert_eq!(status, Some(2), "{wrong:?}: {stderr}");
        assert!(stdout.is_empty() && stderr.contains("Usage: mlf-build") && stderr.contains("--help"), "{wrong:?}: {stderr}");
    }
    // The book shows this one.
    let (_, _, stderr) = mlf_build(&["inspect", "model.tar", "--targte", "x"]);
    assert!(stderr.contains("a similar argument exists: '--target'"), "a near miss is named: {stderr}");
    let section = chapter.split("# Inspect an archive").nth(1).expect("inspect.md has an Inspect section");
    for line in stderr.lines().filter(|line| !line.is_empty()) {
        assert!(section.contains(line), "inspect.md does not show this line of the usage error:\n{line}");
    }
}

#[test]
fn a_wrong_path_names_the_current_directory_it_was_taken_from() {
    let Some(archive) = archive("mlp_f32-aot_c") else { return };
    let dir = common::scratch("wrong-path");
    let run = |current_dir: &Path, args: &[&std::ffi::OsStr]| {
        let output = Command::new(env!("CARGO_BIN_EXE_mlf-build")).current_dir(current_dir).arg("inspect").args(args).output().unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (status, stdout, stderr) = run(&dir, &["models/../modle.tar".as_ref()]);
    assert_eq!((status, stdout.as_str()), (Some(1), ""));
    assert_eq!(
        stderr,
        format!(
            "mlf-build: {dir}/modle.tar: does not exist (the path `models/../modle.tar` is taken from the current directory {dir})\n  \
             help: correct the archive path: relative to the current directory, or absolute\n",
            dir = dir.display()
        )
    );
    let (status, _, stderr) = run(&dir, &[archive.as_os_str(), "--memory-x".as_ref(), "boards/memory.x".as_ref()]);
    assert_eq!(status, Some(1));
    assert!(
        stderr.starts_with(&format!("mlf-build: {}/boards/memory.x: does not exist", dir.display()))
            && stderr.contains("help: correct the memory.x path: relative to the current directory"),
        "{stderr}"
    );
    // A relative path from the archive's own directory works, and the report shows it as given.
    let (status, stdout, stderr) = run(archive.parent().unwrap(), &["model.tar".as_ref(), "--json".as_ref()]);
    assert_eq!(status, Some(0), "{stderr}");
    let document: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(document["archive"], "model.tar");
}

#[test]
fn target_measures_the_compiled_objects_quietly() {
    let Some(kws) = archive("kws_int8-aot_c_usmp") else { return };
    if Command::new("arm-none-eabi-gcc").arg("--version").output().is_err() {
        common::skip("arm-none-eabi-gcc is not installed");
        return;
    }
    let svg = common::scratch("target-svg").join("kws.svg");
    let output = inspect(&[kws.as_os_str(), "--target=thumbv7em-none-eabihf".as_ref(), "--svg".as_ref(), svg.as_os_str()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!stdout.contains("cargo:") && !String::from_utf8_lossy(&output.stderr).contains("cargo:"), "{stdout}");
    assert!(stdout.contains("compiled for thumbv7em-none-eabihf"), "{stdout}");
    let document = inspect_json(&kws, &["--target", "thumbv7em-none-eabihf"]);
    let memory = &document["modules"][0]["memory"];
    let model = &document["footprint"]["model"];
    let value = |v: &serde_json::Value| v.as_u64().unwrap();
    // The USMP workspace is the model's static array, beside the glue's state of a stepped run, and the weights its constants.
    assert_eq!(value(&model["bss"]), value(&memory["code_workspace"]) + value(&memory["stepping"]));
    assert!(value(&memory["stepping"]) > 0, "a build for the target counts the stepping state");
    assert!(value(&model["rodata"]) >= value(&memory["constants"]));
    assert!(value(&model["text"]) > 0 && value(&document["footprint"]["support"]["text"]) > 0);
    assert_eq!(value(&model["flash"]), value(&model["text"]) + value(&model["rodata"]) + value(&model["data"]));
    // The picture's totals hold all of the support library: its data in flash, its data and bss in RAM.
    let support = &document["footprint"]["support"];
    let svg = std::fs::read_to_string(&svg).unwrap();
    let tree = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    let total = |memory: &str| {
        let heading = tree.descendants().find(|n| n.attribute("class") == Some("memory") && n.text().unwrap().starts_with(memory));
        heading.and_then(|n| n.attribute("data-bytes")).unwrap().parse::<u64>().unwrap()
    };
    let flash = value(&memory["constants"]) + value(&model["text"]) + value(&support["flash"]);
    assert_eq!(total("flash:"), flash, "flash total: weights + model code + support code, rodata and data\n{svg}");
    let ram = value(&memory["static_ram"]) + value(&memory["inputs"]) + value(&memory["outputs"]) + value(&support["ram"]);
    assert_eq!(total("RAM:"), ram, "RAM total: the model's RAM + the support library's data and bss\n{svg}");
    assert!(value(&support["ram"]) > 0, "the support library has bss (its log hook, arena bookkeeping, abort state)");
    // Issue 20: the stack bound, its path's frames adding up to it, in the JSON and the text.
    let module = &document["modules"][0];
    let steps = module["stack_path"].as_array().unwrap();
    assert!(module["stack_unknown"].is_null(), "{}", module["stack_unknown"]);
    assert!(steps.iter().any(|step| step["function"] == "mlf_default_invoke"), "{steps:?}");
    assert_eq!(value(&module["stack_bytes"]), steps.iter().map(|step| value(&step["bytes"])).sum::<u64>());
    assert!(stdout.contains(&format!("stack: {} bytes at most; deepest: ", value(&module["stack_bytes"]))), "{stdout}");
    let plain = inspect_json(&kws, &[]);
    assert!(
        plain["modules"][0]["stack_bytes"].is_null() && plain["modules"][0]["stack_unknown"].as_str().unwrap().starts_with("not compiled")
    );
}

// Issue 19: scratch the build supplies to CMSIS-NN calls is in the memory map,
// and the map equals what the compiled objects reserve.
#[test]
fn target_adds_the_cmsis_nn_scratch_the_core_needs_to_the_memory_map() {
    let Some(case) = common::corpus_case("etiss-vww-muriscvnn-rvv-tvm017") else { return };
    let libraries = match common::case_at(&case).library_env() {
        Ok(libraries) => libraries,
        Err(verdict) => return common::skip(&format!("{verdict:?}")),
    };
    if Command::new("arm-none-eabi-gcc").arg("--version").output().is_err() {
        return common::skip("arm-none-eabi-gcc is not installed");
    }
    let run = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mlf-build"));
        command.arg("inspect").arg(case.join("model.tar")).arg("--json").args(extra).envs(libraries.iter().cloned());
        let output = command.output().expect("mlf-build runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
        (document, String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let value = |v: &serde_json::Value| v.as_u64().unwrap();
    let (plain, _) = run(&[]);
    assert_eq!(value(&plain["modules"][0]["memory"]["kernel_scratch"]), 0, "no core, no scratch");
    // Cortex-M4F: the DSP code of arm_avgpool_s8 needs an int32_t per channel (256) where the archive gives none.
    let (document, stderr) = run(&["--target", "thumbv7em-none-eabihf"]);
    assert!(stderr.contains("arm_avgpool_s8 with no scratch buffer") && stderr.contains("1024 bytes"), "{stderr}");
    let memory = &document["modules"][0]["memory"];
    assert_eq!(value(&memory["kernel_scratch"]), 1024);
    assert_eq!(value(&memory["static_ram"]), value(&memory["code_workspace"]) + 1024 + value(&memory["stepping"]));
    let model = &document["footprint"]["model"];
    assert_eq!(value(&model["bss"]) + value(&model["data"]), value(&memory["static_ram"]), "the objects reserve what the map says");
    // The book's CMSIS-NN chapter states these figures, for the cores whose DSP code needs the scratch.
    let number = |v: &serde_json::Value| common::doc_number(v.as_i64().unwrap());
    let section: String = common::doc_section("cmsis-nn.md", "# CMSIS-NN").into_iter().map(|(_, line)| line + " ").collect();
    let (workspace, scratch) = (number(&memory["code_workspace"]), number(&memory["kernel_scratch"]));
    for said in [
        format!("that is {scratch} bytes for `arm_avgpool_s8`"),
        format!("`CODE_WORKSPACE_BYTES + KERNEL_SCRATCH_BYTES` ({workspace} + {scratch})"),
        format!("(DSP code, {scratch} bytes of scratch supplied)"),
    ] {
        assert!(section.contains(&said), "cmsis-nn.md must say `{said}`, as inspect --target thumbv7em-none-eabihf printed");
    }
    for (triple, cpu) in [("thumbv7em-none-eabihf", "cortex-m7"), ("thumbv8m.main-none-eabihf", "cortex-m33")] {
        let (document, _) = run(&["--target", triple, "--cpu", cpu]);
        assert_eq!(
            document["modules"][0]["memory"]["kernel_scratch"], memory["kernel_scratch"],
            "{cpu}: cmsis-nn.md says the same scratch"
        );
    }
}

/// `case`'s `model.tar` unpacked into a fresh directory, to edit.
fn unpacked(case: &Path, name: &str) -> PathBuf {
    let dir = common::scratch(name);
    tar::Archive::new(std::fs::File::open(case.join("model.tar")).unwrap()).unpack(&dir).unwrap();
    dir
}

/// The `kind`s of the first module's needs, with whether each is met.
fn needs(document: &serde_json::Value) -> Vec<(String, bool)> {
    let needs = document["modules"][0]["needs"].as_array().expect("modules[].needs is a list");
    needs.iter().map(|need| (need["kind"].as_str().unwrap_or_default().to_string(), !need["met_by"].is_null())).collect()
}

/// Without `--target`, inspect names what an archive needs from outside it:
/// CMSIS-NN (met by the folder `--cmsis-nn` gives), a header nobody supplies
/// and Arm-only code; a graph missing its `.params` file is an error naming it.
#[test]
fn needs_are_named_without_target_and_cmsis_nn_meets_its_own() {
    let (Some(cmsis), Some(arm), Some(plain), Some(graph)) = (
        common::corpus_case("etiss-vww-muriscvnn-rvv-tvm017"),
        archive("kws_int8-aot_c-cortex_m4"),
        common::corpus_case("kws_int8-aot_c_usmp"),
        common::corpus_case("cnn_f32-graph"),
    ) else {
        return;
    };
    let text = |args: &[&std::ffi::OsStr]| {
        let output = inspect(args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };

    // CMSIS-NN, named with the kernels the code calls.
    let archive = cmsis.join("model.tar");
    let report = text(&[archive.as_os_str()]);
    assert!(report.contains("needs CMSIS-NN: the code includes <arm_nnfunctions.h> and calls 5 of its functions"), "{report}");
    assert!(report.contains("arm_avgpool_s8") && report.contains("--cmsis-nn DIR"), "{report}");
    assert_eq!(needs(&inspect_json(&archive, &[])), [("cmsis-nn".to_string(), false)]);
    match common::case_at(&cmsis).library_env() {
        Ok(libraries) => {
            let dir =
                libraries.iter().find(|(name, _)| *name == "CMSIS_NN_PATH").map(|(_, dir)| dir.clone()).expect("the case needs CMSIS-NN");
            let report = text(&[archive.as_os_str(), "--cmsis-nn".as_ref(), dir.as_os_str()]);
            assert!(!report.contains("needs") && report.contains("uses CMSIS-NN at"), "{report}");
            let dir = dir.display().to_string();
            assert_eq!(needs(&inspect_json(&archive, &["--cmsis-nn", &dir])), [("cmsis-nn".to_string(), true)]);
        }
        Err(verdict) => common::skip(&format!("--cmsis-nn: {verdict:?}")),
    }
    // A folder that is not CMSIS-NN is an error, not a silent "met".
    let not_cmsis = inspect(&[archive.as_os_str(), "--cmsis-nn".as_ref(), common::scratch("not-cmsis-nn").as_os_str()]);
    assert_eq!(not_cmsis.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&not_cmsis.stderr).contains("is not a CMSIS-NN checkout"));

    // Arm-only code: the target string's core, the Arm header, the DSP intrinsic.
    let document = inspect_json(&arm, &[]);
    assert_eq!(needs(&document), vec![("arm".to_string(), false); 3], "{document}");
    let report = text(&[arm.as_os_str()]);
    assert!(report.contains("`-mcpu=cortex-m4`") && report.contains("<arm_acle.h>") && report.contains("DSP extension"), "{report}");

    // Portable C needs nothing; the same code including a header nobody ships needs it.
    assert_eq!(needs(&inspect_json(&plain.join("model.tar"), &[])), []);
    let tree = unpacked(&plain, "inspect-header");
    let source = tree.join("codegen/host/src/default_lib1.c");
    let code = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, format!("#include \"vendor_accel.h\"\n#include <stdint.h>\n{code}")).unwrap();
    let report = text(&[tree.as_os_str()]);
    assert!(
        report.contains("needs <vendor_accel.h>: included but not in the archive") && report.contains("codegen/host/src/default_lib1.c"),
        "{report}"
    );
    assert_eq!(needs(&inspect_json(&tree, &[])), [("header".to_string(), false)]);
    // A header name is archive text: a control character in it is printed escaped.
    let tree = unpacked(&plain, "inspect-header-escape");
    let source = tree.join("codegen/host/src/default_lib1.c");
    let code = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, format!("#include \"vendor\u{1b}[2J.h\"\n{code}")).unwrap();
    let report = text(&[tree.as_os_str()]);
    assert!(report.contains("needs <vendor\\u{1b}[2J.h>: included") && !report.contains('\u{1b}'), "{report}");

    // A graph without its weights file: refused, naming the file.
    let tree = unpacked(&graph, "inspect-params");
    std::fs::remove_dir_all(tree.join("parameters")).unwrap();
    let output = inspect(&[tree.as_os_str()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.code() == Some(1) && stderr.contains("parameters/default.params"), "{stderr}");
}

/// A slot image written by mlf-build's header writer around stand-in code and
/// data (the linker that makes real images comes later): the kws_int8
/// signature, linked for the regions docs/src/slots.md shows.
fn slot_image() -> Vec<u8> {
    use mlf_build::slot::{Arch, Features, FloatAbi, Region, SlotDescription, SlotTensor};
    use mlf_build::{DType, TypeCode};
    let tensor =
        |name: &str, shape: &[u64]| SlotTensor { name: name.into(), dtype: DType { code: TypeCode::Int, bits: 8 }, shape: shape.to_vec() };
    let description = SlotDescription {
        arch: Arch::Arm,
        float_abi: FloatAbi::ArmHard,
        features: Features(Features::THUMB2 | Features::DSP | Features::FPU_SINGLE),
        flash: Region { origin: 0x0004_0000, length: 0x0002_0000 },
        ram: Region { origin: 0x2000_8000, length: 0x8000 },
        bss_bytes: 0x2c00,
        stack_bytes: 512,
        entries: [Some(0), Some(0x20), None, None],
        inputs: vec![tensor("input", &[1, 1960])],
        outputs: vec![tensor("Identity", &[1, 12])],
    };
    description.write_image(&[0x5a; 0x400], &[1; 16]).expect("a valid description")
}

#[test]
fn a_slot_image_shows_its_header_and_its_digest_is_checked() {
    let dir = common::scratch("inspect-slot");
    let image = slot_image();
    let path = dir.join("model.slot");
    std::fs::write(&path, &image).unwrap();
    let output = inspect(&[path.as_os_str()]);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && stderr.is_empty(), "{stderr}");
    assert!(stdout.contains("(the bytes match)"), "{stdout}");
    // The book quotes the report (all but the line naming the file).
    let section = common::doc_section("slots.md", "## Inspecting an image");
    for line in stdout.lines().skip(1) {
        assert!(section.iter().any(|(_, quoted)| quoted == line), "slots.md does not quote this line of the report:\n{line}");
    }

    // One flipped byte of code: the header still reads, the digest does not match.
    let mut flipped = image.clone();
    let last = flipped.len() - 20;
    flipped[last] ^= 0x10;
    std::fs::write(&path, &flipped).unwrap();
    let output = inspect(&[path.as_os_str()]);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout.contains("computed: CORRUPTED"), "{stdout}");
    assert!(stderr.contains("slot image corrupted: its SHA-256 is") && stderr.contains("help:"), "{stderr}");

    // Refused before any report: a torn write, a header that breaks a rule, options meant for archives.
    let mut wrong_version = image.clone();
    wrong_version[8] = 7;
    for (bytes, args, words) in [
        (image[..image.len() - 1].to_vec(), &[][..], "slot image truncated: image length needs"),
        (wrong_version, &[], "format version is 7 (0x7), expected 1"),
        (image.clone(), &["--json"], "--json applies to archives"),
        (image.clone(), &["--target", "thumbv7em-none-eabihf"], "--target applies to archives"),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        let mut all = vec![path.as_os_str()];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        let output = inspect(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{words}: {stderr}");
        assert!(stderr.contains(words) && output.stdout.is_empty(), "{words}: {stderr}");
    }
}
