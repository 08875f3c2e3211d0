//! README.md and the book (docs/src) state only what the commands they name
//! print: the footprint and inspect tables are measured here (the firmware
//! built in the QEMU tests' target directory, so CI builds the runner's
//! dependencies once), the variables the build script prints are read from
//! its output, the picture is one any host of the book can show, and the
//! front page's figures are its chapters'.

mod common;

use std::path::Path;
use std::process::Command;

use common::DocFigures;

const TRIPLE: &str = "thumbv7em-none-eabihf";
/// tests/corpus_qemu.rs's target directory.
const FIRMWARE_TARGET_DIR: &str = "corpus-qemu";

/// What `examples/footprint` printed for one archive.
struct Footprint {
    /// firmware, model needs, difference.
    flash: Vec<i64>,
    ram: Vec<i64>,
    /// code, constants, constant pools; workspace, inputs/outputs, pools.
    needs: Vec<i64>,
    /// mlf-build's plan of a graph's storage, TVM's.
    graph_plan: Vec<i64>,
    /// the input bytes kept in flash, mlf-build's C support code.
    difference: Vec<i64>,
    /// One inference's instructions under QEMU, with `--instructions`.
    instructions: Option<i64>,
    toolchain: String,
}

/// The tests of this file build and read the one runner ELF of
/// [`FIRMWARE_TARGET_DIR`] in turn: Cargo's lock covers a build, not the
/// reading of its ELF after it.
static FIRMWARE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn firmware_lock() -> std::sync::MutexGuard<'static, ()> {
    FIRMWARE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The command the book shows for `case`: the archive's path from the
/// workspace root as written, since the firmware keeps it as text.
fn footprint_command(case: &str) -> String {
    let archive = common::corpus_case(case).expect("the corpus is present").join("model.tar");
    let relative = archive.strip_prefix(common::repo_root()).expect("the corpus is under the repository's parent");
    format!("cargo run --release -p footprint -- --target {TRIPLE} {}", relative.display())
}

/// The book's "The C optimisation level" command, `<level>` and `<archive>` to fill in.
fn opt_level_command() -> String {
    let archive = footprint_command("kws_int8-aot_c_usmp");
    let archive = archive.split_whitespace().last().unwrap().replace("kws_int8-aot_c_usmp", "<archive>");
    format!("cargo run --release -p footprint -- --target {TRIPLE} --opt-level <level> --instructions {archive}")
}

fn footprint(case: &str) -> Footprint {
    run_footprint(&footprint_command(case), case)
}

fn run_footprint(command: &str, case: &str) -> Footprint {
    let arguments: Vec<&str> = command.split_whitespace().skip(1).collect();
    let output = common::cargo(FIRMWARE_TARGET_DIR)
        .args(&arguments[..4])
        .args(["--locked", "--quiet"])
        .args(&arguments[4..])
        .env("MLF_BOARD", "")
        .env("MLF_MEMORY_X", "")
        .env("MLF_LINK_SECTIONS", "")
        // The firmware the figures are of is the unprofiled one.
        .env("MLF_PROFILE", "")
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "footprint {case}: {}\n{stdout}", common::failure_text(&output));
    let line = |prefix: &str| stdout.lines().find(|line| line.starts_with(prefix)).map(common::numbers).unwrap_or_default();
    Footprint {
        flash: line("flash "),
        ram: line("RAM "),
        needs: line("model needs:"),
        graph_plan: line("graph static RAM:"),
        difference: line("difference:"),
        instructions: line("instructions:").first().copied(),
        toolchain: stdout.lines().find_map(|line| line.strip_prefix("toolchain: ")).expect("footprint names its toolchain").to_string(),
    }
}

fn arm_toolchain_present() -> bool {
    let present = Command::new("arm-none-eabi-gcc").arg("--version").output().is_ok_and(|o| o.status.success());
    if !present {
        common::skip("arm-none-eabi-gcc is not installed (the book's sizes are measured with it)");
    }
    present
}

#[test]
fn footprint_and_inspect_figures_are_what_the_commands_measure() {
    if common::corpus_dir().is_none() || !arm_toolchain_present() {
        return;
    }
    let _firmware = firmware_lock();
    let mut figures = DocFigures::default();
    let command = |case: &str| format!("`{}`", footprint_command(case));

    // ### Footprint: the AOT table, the graph table and the prose around them.
    let section = common::doc_section("firmware.md", "## Footprint");
    let kws = footprint("kws_int8-aot_c_usmp");
    figures.quoted(&section, &kws.toolchain, "the toolchain footprint measured with (its `toolchain:` line)");
    for case in ["kws_int8-aot_c_usmp", "cnn_f32-graph", "cnn_f32-aot_c"] {
        figures.quoted(&section, &footprint_command(case), "the command that measures these sizes");
    }
    let table = common::table_after(&section, "`kws_int8-aot_c_usmp` on `thumbv7em-none-eabihf`");
    let on_kws = command("kws_int8-aot_c_usmp");
    let (needs, flash, ram) = (&kws.needs, &kws.flash, &kws.ram);
    assert_eq!((needs[2], needs[5]), (0, 0), "no pools in this archive: {needs:?}");
    figures.row(&table, "flash", &[flash[0], flash[1], needs[0], needs[1], flash[2]], &on_kws);
    figures.row(&table, "RAM", &[ram[0], ram[1], needs[3], needs[4], ram[2]], &on_kws);
    figures.after(&section, "mlf-build's C support is", kws.difference[1], &on_kws);
    figures.after(&section, "the runner keeps its", kws.difference[0], &on_kws);

    let graph = footprint("cnn_f32-graph");
    let on_graph = command("cnn_f32-graph");
    let table = common::table_after(&section, "`cnn_f32-graph` (graph executor");
    let (needs, flash, ram) = (&graph.needs, &graph.flash, &graph.ram);
    figures.row(&table, "flash", &[flash[0], flash[1], needs[0], needs[1] + needs[2], flash[2]], &on_graph);
    figures.row(&table, "RAM", &[ram[0], ram[1], needs[3], needs[4], ram[2]], &on_graph);
    figures.after(&section, "TVM's own plan for this graph takes", graph.graph_plan[1], &on_graph);
    figures.after(&section, "from liveness it takes", graph.graph_plan[0], &on_graph);
    figures.after(&section, "the graph build takes", ram[0], &on_graph);
    figures.after(&section, "the runner (as above), its", graph.difference[0], &on_graph);
    let aot = footprint("cnn_f32-aot_c");
    figures.after(&section, "(`cnn_f32-aot_c`) takes", aot.ram[0], &command("cnn_f32-aot_c"));

    // ## Inspect an archive: the objects inspect measures against the same firmware.
    let section = common::doc_section("inspect.md", "# Inspect an archive: `mlf-build inspect`");
    let archive = common::corpus_case("kws_int8-aot_c_usmp").unwrap().join("model.tar");
    let output = Command::new(env!("CARGO_BIN_EXE_mlf-build"))
        .args(["inspect".as_ref(), archive.as_os_str(), "--json".as_ref(), "--target".as_ref(), TRIPLE.as_ref()])
        .output()
        .expect("mlf-build runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    let size = |part: &str, what: &str| document["footprint"][part][what].as_i64().expect("a size");
    let inspect = format!("`mlf-build inspect --target {TRIPLE} kws_int8-aot_c_usmp` and {on_kws}");
    figures.quoted(&section, &footprint_command("kws_int8-aot_c_usmp"), "the footprint command of the table");
    let table = common::table_after(&section, "| inspect: model + support objects |");
    let (model_flash, support_flash) = (size("model", "flash"), size("support", "flash"));
    let (model_ram, support_ram) = (size("model", "ram"), size("support", "ram"));
    let flash_runner = kws.flash[0] - model_flash - support_flash;
    let ram_runner = kws.ram[0] - model_ram - support_ram;
    figures.row(&table, "flash", &[model_flash + support_flash, model_flash, support_flash, kws.flash[0], flash_runner], &inspect);
    figures.row(&table, "RAM", &[model_ram + support_ram, model_ram, support_ram, kws.ram[0], ram_runner], &inspect);
    figures.after(&section, "agree within the runner's own size:", flash_runner, &inspect);
    figures.after(&section, "RAM differs by", ram_runner, &inspect);
    figures.quoted(&section, &kws.toolchain, "the toolchain these sizes come from (footprint's `toolchain:` line)");

    // ### JSON schema: the example of a stack path's function is one inspect prints for this archive.
    let schema = common::doc_section("inspect.md", "## JSON schema");
    let row = schema.iter().find(|(_, line)| line.starts_with("| `modules[].stack_path[].function` |")).expect("the schema documents it");
    let path: Vec<&str> =
        document["modules"][0]["stack_path"].as_array().unwrap().iter().filter_map(|step| step["function"].as_str()).collect();
    for example in row.1.split('`').skip(3).step_by(2) {
        assert!(path.contains(&example), "{}: `{example}` is not in the stack path {inspect} printed: {path:?}", row.0);
    }

    // ### Rebuilds: which variables the build script asks Cargo to watch, as the runner's build printed them.
    let printed = rerun_variables(&firmware_build_output());
    let rebuilds = common::doc_section("rebuilds.md", "## Rebuilds");
    let text: String = rebuilds.iter().map(|(_, line)| format!("{line} ")).collect();
    let listed = |anchor: &str| -> Vec<String> {
        let after = text.split(anchor).nth(1).unwrap_or_else(|| panic!("rebuilds.md's Rebuilds section no longer says `{anchor}`"));
        after.split(')').next().unwrap_or_default().split('`').skip(1).step_by(2).map(str::to_string).collect()
    };
    let not_printed = listed("those it tracks itself (");
    let also_printed = listed("and those it does not (");
    assert!(not_printed.contains(&"TARGET".to_string()) && !also_printed.is_empty(), "{not_printed:?} {also_printed:?}");
    for name in &not_printed {
        assert!(!printed.contains(name), "rebuilds.md says `{name}` is not printed, but the build script printed it: {printed:?}");
    }
    for name in &also_printed {
        assert!(printed.contains(name), "rebuilds.md says `{name}` is printed, but the build script did not: {printed:?}");
    }
    figures.check();
}

/// The book's "The C optimisation level" table: footprint's flash, RAM and
/// instructions per inference for each archive and level, the runner built
/// in the QEMU tests' target directory (`3` is the release profile's own).
#[test]
fn c_optimisation_level_table_is_what_footprint_measures() {
    if common::corpus_dir().is_none() || !arm_toolchain_present() {
        return;
    }
    if Command::new("qemu-system-arm").arg("--version").output().is_err() {
        return common::skip("qemu-system-arm is not installed (the book's instruction counts come from it)");
    }
    let _firmware = firmware_lock();
    let section = common::doc_section("performance.md", "## The C optimisation level");
    let mut figures = DocFigures::default();
    let template = opt_level_command();
    figures.quoted(&section, &template, "the command that measures the table");
    let table = common::table_after(&section, "| archive |");
    for case in ["kws_int8-aot_c_usmp", "cnn_f32-aot_c", "cnn_f32-graph"] {
        for level in ["2", "3", "s"] {
            let command = template.replace("<level>", level).replace("<archive>", case);
            let measured = run_footprint(&command, case);
            let instructions = measured.instructions.expect("footprint counts instructions");
            let cells = [format!("`{case}`"), if level == "s" { "`\"s\"`".to_string() } else { level.to_string() }];
            let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
            figures.row_of(&table, &cells, &[measured.flash[0], measured.ram[0], instructions], &format!("`{command}`"));
        }
    }
    figures.check();
}

/// The `output` file of the runner's build script run last for the firmware target.
fn firmware_build_output() -> String {
    let build = common::repo_root().join("target").join(FIRMWARE_TARGET_DIR).join(TRIPLE).join("release/build");
    let newest = std::fs::read_dir(&build)
        .unwrap_or_else(|e| panic!("{}: {e}", build.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path().join("output")))
        .filter(|path| path.parent().and_then(Path::file_name).is_some_and(|name| name.to_string_lossy().starts_with("cortex-m-runner-")))
        .filter_map(|path| Some((std::fs::metadata(&path).ok()?.modified().ok()?, path)))
        .max()
        .map(|(_, path)| path)
        .expect("the runner's build script ran");
    std::fs::read_to_string(newest).unwrap()
}

/// The names of `cargo:rerun-if-env-changed=` lines.
fn rerun_variables(output: &str) -> Vec<String> {
    output.lines().filter_map(|line| line.strip_prefix("cargo:rerun-if-env-changed=")).map(str::to_string).collect()
}

/// The book's picture: an absolute URL (the SVG lies outside the book's
/// `src/`, so a relative path leads nowhere once the book is built) to the
/// file tests/inspect.rs keeps current.
#[test]
fn the_picture_is_an_absolute_url_to_the_file_the_suite_checks() {
    let section = common::doc_section("inspect.md", "## Memory-map picture");
    let repository = env!("CARGO_PKG_REPOSITORY").trim_start_matches("https://github.com/");
    let images: Vec<&str> = section.iter().filter_map(|(_, line)| line.split("](").nth(1)).collect();
    let url = format!("https://raw.githubusercontent.com/{repository}/main/docs/kws_int8-aot_c_usmp.svg)");
    assert!(images.iter().any(|image| *image == url), "the book's picture must be {url}, found {images:?}");
    assert!(common::repo_root().join("docs/kws_int8-aot_c_usmp.svg").is_file());
}

/// The book's "Your first hour": the demo's output on the host and on the
/// emulated board, and each error it quotes, as the commands print them for
/// an application at /home/me/my-app.
#[test]
fn first_hour_shows_what_the_commands_print() {
    if common::corpus_dir().is_none() || !arm_toolchain_present() {
        return;
    }
    let section = common::doc_section("using-it.md", "## Your first hour");
    let _firmware = firmware_lock();
    let mut figures = DocFigures::default();
    let run = |command: &mut Command| {
        let output = command.output().expect("the command runs");
        assert!(output.status.success(), "{}", common::failure_text(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // The demo on the host, in corpus_host's target directory.
    let mut printed: Vec<String> = Vec::new();
    let host =
        run(common::cargo("corpus-host").args(["run", "--release", "--locked", "--quiet", "-p", "host-runner"]).env_remove("MLF_ARCHIVE"));
    for line in host.lines() {
        figures.quoted(&section, line, "this line of the host demo's output");
    }
    printed.extend(host.lines().map(str::to_string));
    // The demo on the Cortex-M4F board, in the QEMU tests' target directory.
    let firmware = run(common::cargo(FIRMWARE_TARGET_DIR)
        .args(["run", "--release", "--locked", "--quiet", "-p", "cortex-m-runner", "--target", TRIPLE])
        .env_remove("MLF_ARCHIVE")
        .env_remove("MLF_INPUTS")
        .env_remove("MLF_BOARD")
        .env_remove("MLF_MEMORY_X")
        .env_remove("MLF_LINK_SECTIONS")
        .env_remove("MLF_MODULE")
        .env_remove("MLF_STEPPED"));
    for line in firmware.lines() {
        figures.quoted(&section, line, "this line of the firmware demo's output");
    }
    printed.extend(firmware.lines().map(str::to_string));
    let errors = first_hour_errors();
    for line in &errors {
        figures.quoted(&section, line, "this line of an error it explains");
    }
    printed.extend(errors);
    figures.check();
    // And nothing quoted that no command printed: every line of the section's text blocks.
    let mut in_text = false;
    for (number, line) in &section {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_text = trimmed == "```text";
        } else if in_text {
            assert!(
                printed.iter().any(|p| p.trim() == trimmed),
                "{number}: `{trimmed}` is printed by none of the commands run: {printed:#?}"
            );
        }
    }
}

/// The errors the book's first hour explains, from `mlf-build inspect` in an
/// application directory, its path shown as /home/me/my-app.
fn first_hour_errors() -> Vec<String> {
    let kws = common::corpus_case("kws_int8-aot_c_usmp").expect("the corpus is present");
    let app = common::scratch("my-app");
    std::fs::copy(kws.join("model.tar"), app.join("model.tar")).unwrap();
    let mut errors = Vec::new();
    let mut inspect = |args: &[&str], env: &[(&str, &Path)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mlf-build"));
        command.current_dir(&app).arg("inspect").args(args).env_remove("CMSIS_NN_PATH").envs(env.iter().copied());
        let output = command.output().expect("mlf-build runs");
        assert_eq!(output.status.code(), Some(1), "{args:?} fails on the archive: {}", String::from_utf8_lossy(&output.stdout));
        let stderr = String::from_utf8_lossy(&output.stderr).replace(&app.display().to_string(), "/home/me/my-app");
        errors.extend(stderr.lines().map(str::to_string));
    };
    // A wrong path.
    inspect(&["modle.tar"], &[]);
    // Not an archive TVM wrote: compressed.
    let gzip = Command::new("gzip").args(["-k", "model.tar"]).current_dir(&app).status().expect("gzip runs");
    assert!(gzip.success());
    inspect(&["model.tar.gz"], &[]);
    // Too big for the board.
    std::fs::write(
        app.join("memory.x"),
        "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 64K\n  RAM : ORIGIN = 0x20000000, LENGTH = 8K\n}\n",
    )
    .unwrap();
    inspect(&["model.tar", "--memory-x", "memory.x"], &[]);
    // No cross compiler: a PATH with rustc only.
    let rustc = which_rustc();
    let bin = app.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&rustc, bin.join("rustc")).unwrap();
    inspect(&["model.tar", "--target", TRIPLE], &[("PATH", &bin)]);
    // An archive calling CMSIS-NN, none given.
    let vww = common::corpus_case("etiss-vww-muriscvnn-rvv-tvm017").expect("the corpus is present");
    std::fs::copy(vww.join("model.tar"), app.join("vww.tar")).unwrap();
    inspect(&["vww.tar", "--target", TRIPLE], &[]);
    errors
}

/// The `rustc` on PATH, links resolved (rustup's proxy picks the toolchain by the name it is called).
fn which_rustc() -> std::path::PathBuf {
    let output = Command::new("sh").args(["-c", "command -v rustc"]).output().expect("sh runs");
    std::path::PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// The front page's "Headline figures": every figure in a row is stated in
/// the chapter section the row links to, whose figures the tests above and
/// tests/corpus_qemu.rs keep measured.
#[test]
fn front_page_figures_are_the_chapters() {
    let section = common::doc_section("README.md", "## Headline figures");
    let rows = common::table_after(&section, "| what |");
    assert!(rows.len() >= 5, "README.md has a headline figures table: {rows:?}");
    for (place, row) in rows.into_iter().skip(2) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (figure, link) = (cells[2], cells[3]);
        let target = link.split("](docs/src/").nth(1).and_then(|rest| rest.strip_suffix(')')).expect("a link into the book");
        let (page, anchor) = target.split_once('#').unwrap_or((target, ""));
        let text = common::book_chapter(page);
        let section: String = if anchor.is_empty() {
            text.clone()
        } else {
            let heading = text
                .lines()
                .find(|line| line.starts_with('#') && slug(line) == anchor)
                .unwrap_or_else(|| panic!("{place}: {page} has no heading #{anchor}"));
            common::doc_section(page, heading).into_iter().map(|(_, line)| line + "\n").collect()
        };
        let figures = figure.split(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.')).map(|word| word.trim_matches([',', '.']));
        for number in figures.filter(|word| word.chars().any(|c| c.is_ascii_digit())) {
            assert!(section.contains(number), "{place}: `{number}` is not in {page}#{anchor}, which the row links to");
        }
    }
}

/// A heading's anchor as GitHub and mdBook make it.
fn slug(heading: &str) -> String {
    let text = heading.trim_start_matches('#').trim().to_lowercase();
    text.chars().filter_map(|c| if c == ' ' { Some('-') } else { (c.is_alphanumeric() || c == '-' || c == '_').then_some(c) }).collect()
}

/// The front page: at most 250 lines; its two commands are the ones the
/// suite and CI run (the demo in `first_hour_shows_what_the_commands_print`,
/// the test command in .ci/run); its links into the book lead to chapters
/// that `docs/src/SUMMARY.md` lists.
#[test]
fn front_page_is_short_and_its_commands_and_links_hold() {
    let lines = common::doc_lines("README.md");
    assert!(lines.len() <= 250, "README.md is the front page: {} lines, at most 250 (the rest goes in the book)", lines.len());
    let try_it = common::doc_section("README.md", "## Try it");
    let commands: Vec<&str> = try_it.iter().map(|(_, line)| line.trim()).filter(|line| line.starts_with("cargo ")).collect();
    assert_eq!(commands, ["cargo run --release -p host-runner", "cargo test --release --locked"], "README's Try it commands");
    let ci = std::fs::read_to_string(common::repo_root().join(".ci/run")).expect(".ci/run");
    assert!(ci.lines().any(|line| line.trim() == commands[1]), ".ci/run does not run `{}`", commands[1]);
    let summary = common::book_chapter("SUMMARY.md");
    for (place, line) in &lines {
        for target in line.split("](docs/src/").skip(1).filter_map(|rest| rest.split([')', '#']).next()) {
            assert!(common::doc_path(target).is_file(), "{place}: docs/src/{target} does not exist");
            assert!(target == "SUMMARY.md" || summary.contains(&format!("]({target})")), "{place}: SUMMARY.md does not list {target}");
        }
    }
}
