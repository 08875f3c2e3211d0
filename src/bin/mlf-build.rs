//! `mlf-build inspect <archive>... [--arena-group <group>] [--target <triple>] [--cpu <core>] [--cmsis-nn <dir>]
//! [--memory-x <file>] [--link-section <storage>=<section>] [--json] [--svg <file>]`:
//! what an archive holds and needs, before any firmware exists (see README.md);
//! `mlf-build inspect <image>.slot`: a model slot image's header, and whether
//! its bytes have the digest it states (docs/src/slots.md).
//! Arguments are parsed by clap; `--help` and `--version` exit 0, a usage
//! error exits 2, an error about the archive (or a model that does not fit) 1.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use mlf_build::json::{self, ToValue, Value};
use mlf_build::{slot, Builder, Footprint, Inspection, MemoryFit, Output, Sizes, Storage};

/// Reports on Apache TVM Model Library Format archives, as build scripts using
/// the mlf-build library would build them.
#[derive(Parser)]
#[command(name = "mlf-build", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// What an archive holds and needs, before any firmware exists.
    ///
    /// Per module: its kind, tensors, memory map and what its code needs from
    /// outside the archive (CMSIS-NN, other headers, an Arm core); with --target
    /// its compiled size and stack bound; with --memory-x whether it fits.
    /// With several archives and --arena-group, their modules as one arena
    /// group: each member's scratch, the shared arena, RAM counted once.
    /// Relative paths are taken from the current directory.
    ///
    /// Given a model slot image instead, prints its header and checks its
    /// SHA-256: exits 1 when the header is malformed or the bytes are corrupted.
    Inspect(Args),
}

/// `mlf-build inspect`'s arguments.
#[derive(clap::Args)]
struct Args {
    /// The archive: a Model Library Format `.tar`, or the directory it was extracted to; several with --arena-group; or a model slot image.
    #[arg(required = true, value_name = "ARCHIVE")]
    archives: Vec<PathBuf>,
    /// Plan the archives' modules as members of this arena group, as Builder::arena_group does: the group's plan, its arena counted once.
    #[arg(long, value_name = "GROUP", conflicts_with_all = ["target", "cpu", "svg"])]
    arena_group: Option<String>,
    /// Also compile the archive for this Rust target triple and report the objects' sizes (e.g. thumbv7em-none-eabihf).
    #[arg(long, value_name = "TRIPLE")]
    target: Option<String>,
    /// The Arm core to compile for with --target (e.g. cortex-m7); default: the triple's usual core.
    #[arg(long, value_name = "CORE")]
    cpu: Option<String>,
    /// The CMSIS-NN folder (holding Include/ and Source/) the archive's calls are checked against, and built with under --target.
    #[arg(long, value_name = "DIR")]
    cmsis_nn: Option<PathBuf>,
    /// Lay the model onto the regions of this cortex-m-rt style memory.x; exits 1 when it does not fit.
    #[arg(long, value_name = "FILE")]
    memory_x: Option<PathBuf>,
    /// Put the model's `workspace` or `constants` in a linker section of its own, as Builder::link_section does; repeatable.
    #[arg(long = "link-section", value_name = "STORAGE=SECTION", value_parser = placement)]
    link_sections: Vec<(Storage, String)>,
    /// Print one JSON document (schema in README.md) instead of text.
    #[arg(long)]
    json: bool,
    /// Also draw the memory map as an SVG picture into FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// `workspace=.sram2`: a storage and the section it goes to.
fn placement(text: &str) -> Result<(Storage, String), Box<dyn std::error::Error + Send + Sync>> {
    let (storage, section) = text.split_once('=').ok_or("expected <workspace|constants>=<section>")?;
    Ok((storage.parse::<Storage>()?, section.to_string()))
}

fn main() -> ExitCode {
    // Usage errors exit 2, --help and --version 0, as clap does them.
    let Command::Inspect(args) = Cli::parse().command;
    if args.archives.len() > 1 && args.arena_group.is_none() {
        let message = "several archives are inspected together only as one arena group: add --arena-group <GROUP>";
        Cli::command().error(clap::error::ErrorKind::MissingRequiredArgument, message).exit();
    }
    let result = match args.archives.as_slice() {
        [image] if starts_as_slot_image(image) => inspect_slot(&args, image),
        _ => inspect(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `path` is a file whose first bytes are a slot image's magic (an archive's never are).
fn starts_as_slot_image(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut start = [0u8; 8];
    std::fs::File::open(path).and_then(|mut file| file.read_exact(&mut start)).is_ok() && slot::is_image(&start)
}

/// `mlf-build inspect <image>`: the header, then the digest check.
fn inspect_slot(args: &Args, image: &std::path::Path) -> Result<(), String> {
    let archive_only = [
        ("--arena-group", args.arena_group.is_some()),
        ("--target", args.target.is_some()),
        ("--cpu", args.cpu.is_some()),
        ("--cmsis-nn", args.cmsis_nn.is_some()),
        ("--memory-x", args.memory_x.is_some()),
        ("--link-section", !args.link_sections.is_empty()),
        ("--json", args.json),
        ("--svg", args.svg.is_some()),
    ];
    if let Some((option, _)) = archive_only.iter().find(|(_, given)| *given) {
        return Err(format!(
            "mlf-build: {option} applies to archives; `{}` is a model slot image, whose header states what it was built for (run without options)",
            image.display()
        ));
    }
    let bytes = slot::read_image(image).map_err(|e| e.to_string())?;
    let header = slot::SlotHeader::parse(&bytes).map_err(|e| format!("mlf-build: `{}`: {e}", image.display()))?;
    print!("slot {}\n{}{}", image.display(), slot::report(&header), slot::digest_line(&header));
    header
        .check_digest()
        .map_err(|e| format!("mlf-build: `{}`: {e}\n  help: the image was torn or corrupted on its way; write it again", image.display()))
}

fn inspect(args: &Args) -> Result<(), String> {
    let mut inspection = match (&args.arena_group, args.archives.as_slice()) {
        (Some(group), archives) => mlf_build::inspect_arena_group(group, archives, args.cmsis_nn.as_ref()),
        (None, archives) => mlf_build::inspect_with_cmsis_nn(&archives[0], args.cmsis_nn.as_ref()),
    }
    .map_err(|e| e.to_string())?;
    let footprint = match &args.target {
        Some(triple) => {
            let (footprint, output) = compile_and_measure(args, triple)?;
            // The build knows the core: what it adds to the memory map for it (CMSIS-NN scratch) and why.
            inspection.modules = output.modules.into_iter().map(|module| module.report).collect();
            inspection.warnings = output.warnings;
            Some(footprint)
        }
        None => None,
    };
    let fit = match &args.memory_x {
        Some(path) => {
            let code = footprint.map(|f| [f.model.text, f.model.data, f.support.text, f.support.data].into_iter().sum());
            Some(mlf_build::memory_fit(path, &inspection.modules, &args.link_sections, false, code).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    for warning in inspection.warnings.iter().chain(fit.iter().flat_map(|fit| &fit.warnings)) {
        eprintln!("mlf-build: warning: {warning}");
    }
    if args.json {
        println!("{}", json(args, &inspection, footprint.as_ref(), fit.as_ref()));
    } else {
        print!("{}", text(args, &inspection, footprint.as_ref()));
        if let Some(fit) = &fit {
            print!("{}", fit.to_text());
        }
    }
    if let Some(path) = &args.svg {
        let mut pictures = inspection.modules.iter().map(|m| m.to_svg(footprint.as_ref(), fit.as_ref()));
        let svg = pictures.next().ok_or("the archive has no module")?;
        std::fs::write(path, svg).map_err(|e| format!("mlf-build: cannot write {}: {e}", path.display()))?;
        if inspection.modules.len() > 1 {
            eprintln!(
                "mlf-build: {} shows module `{}`; the archive has {}",
                path.display(),
                inspection.modules[0].name,
                inspection.modules.len()
            );
        }
    }
    // After the report: "will it fit" is answered either way, and the exit status says which.
    fit.as_ref().map_or(Ok(()), |fit| fit.check().map_err(|e| e.to_string()))
}

fn sizes_json(sizes: &Sizes) -> Value {
    Value::object([
        ("text", sizes.text.into()),
        ("rodata", sizes.rodata.into()),
        ("data", sizes.data.into()),
        ("bss", sizes.bss.into()),
        ("flash", sizes.flash().into()),
        ("ram", sizes.ram().into()),
    ])
}

fn fit_json(fit: &MemoryFit) -> Value {
    let regions = fit.regions.iter().map(|region| {
        let parts = region.parts.iter().map(|part| {
            Value::object([
                ("module", part.module.to_value()),
                ("group", part.group.to_value()),
                ("what", part.what.into()),
                ("bytes", part.bytes.into()),
            ])
        });
        Value::object([
            ("region", region.region.to_value()),
            ("origin", region.origin.into()),
            ("length", region.length.into()),
            ("used", region.used().into()),
            ("headroom", region.headroom().into()),
            ("fits", region.fits().into()),
            ("parts", Value::Array(parts.collect())),
        ])
    });
    Value::object([
        ("memory_x", fit.memory_x.display().to_string().into()),
        ("code_counted", fit.code_counted.into()),
        ("regions", Value::Array(regions.collect())),
        ("warnings", fit.warnings.to_value()),
    ])
}

fn json(args: &Args, inspection: &Inspection, footprint: Option<&Footprint>, fit: Option<&MemoryFit>) -> String {
    let footprint = footprint.map(|f| {
        Value::object([
            ("target", args.target.to_value()),
            ("cpu", args.cpu.to_value()),
            ("model", sizes_json(&f.model)),
            ("support", sizes_json(&f.support)),
        ])
    });
    let document = Value::object([
        ("schema", mlf_build::SCHEMA.into()),
        ("archive", archive_names(args).into()),
        ("modules", Value::Array(inspection.modules.iter().map(|m| m.to_json()).collect())),
        ("arena_group", inspection.arena_group.as_ref().map(|group| group.to_json()).into()),
        ("footprint", footprint.into()),
        ("memory_fit", fit.map(fit_json).into()),
    ]);
    json::to_string_pretty(&document)
}

fn text(args: &Args, inspection: &Inspection, footprint: Option<&Footprint>) -> String {
    let mut out = format!("archive {}\n", archive_names(args));
    for module in &inspection.modules {
        out += &module.to_text();
    }
    if let Some(group) = &inspection.arena_group {
        out += &group.to_text();
    }
    if let (Some(footprint), Some(triple)) = (footprint, &args.target) {
        let names: Vec<&str> = inspection.modules.iter().map(|m| m.name.as_str()).collect();
        out += &format!("compiled for {triple} (objects, before the linker drops unused code):\n");
        for (what, sizes) in
            [(format!("model ({})", names.join(", ")), &footprint.model), ("mlf-build support".to_string(), &footprint.support)]
        {
            out += &format!(
                "  {what}: flash {} (text {} + rodata {} + data {}), static RAM {} (data {} + bss {})\n",
                sizes.flash(),
                sizes.text,
                sizes.rodata,
                sizes.data,
                sizes.ram(),
                sizes.data,
                sizes.bss
            );
        }
    }
    out
}

/// The archives given, as the report names them: `a.tar, b.tar`.
fn archive_names(args: &Args) -> String {
    args.archives.iter().map(|archive| archive.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// Builds the archive for `triple` in a fresh directory, as a build script
/// would but printing nothing for Cargo, and measures the compiled libraries.
fn compile_and_measure(args: &Args, triple: &str) -> Result<(Footprint, Output), String> {
    let out_dir = std::env::temp_dir().join(format!("mlf-build-inspect-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    // Absolute: the Builder takes a relative path from CARGO_MANIFEST_DIR, which `cargo run` sets to mlf-build's own.
    let current = std::env::current_dir().map_err(|e| format!("mlf-build: the current directory: {e}"))?;
    // `--target` conflicts with `--arena-group`, the one way to give several archives.
    let [archive] = args.archives.as_slice() else { return Err("mlf-build: --target measures one archive".to_string()) };
    let mut builder = Builder::new(current.join(archive)).out_dir(&out_dir).target(triple).cargo_metadata(false);
    if let Some(cpu) = &args.cpu {
        builder = builder.cpu(cpu);
    }
    if let Some(dir) = &args.cmsis_nn {
        builder = builder.cmsis_nn(current.join(dir));
    }
    let result = builder.build().and_then(|output| Ok((Footprint::measure(&out_dir)?, output))).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&out_dir);
    result
}
