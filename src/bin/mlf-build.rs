//! `mlf-build inspect <archive> [--target <triple>] [--cpu <core>] [--memory-x <file>]
//! [--link-section <storage>=<section>] [--json] [--svg <file>]`:
//! what an archive holds and needs, before any firmware exists (see README.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mlf_build::{Builder, Footprint, Inspection, MemoryFit, Output, Sizes, Storage};

const USAGE: &str = "usage: mlf-build inspect <archive> [--target <triple>] [--cpu <core>] [--memory-x <file>] [--link-section <workspace|constants>=<section>] [--json] [--svg <file>]";

struct Args {
    archive: PathBuf,
    target: Option<String>,
    cpu: Option<String>,
    json: bool,
    svg: Option<PathBuf>,
    memory_x: Option<PathBuf>,
    link_sections: Vec<(Storage, String)>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut archive = None;
    let (mut target, mut cpu, mut json, mut svg, mut memory_x) = (None, None, false, None, None);
    let mut link_sections = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--target" => target = Some(args.next().ok_or("--target needs a triple")?),
            "--cpu" => cpu = Some(args.next().ok_or("--cpu needs a core, e.g. cortex-m7")?),
            "--json" => json = true,
            "--svg" => svg = Some(PathBuf::from(args.next().ok_or("--svg needs a file")?)),
            "--memory-x" => memory_x = Some(PathBuf::from(args.next().ok_or("--memory-x needs a file")?)),
            "--link-section" => {
                let placement = args.next().ok_or("--link-section needs <workspace|constants>=<section>")?;
                let (storage, section) = placement
                    .split_once('=')
                    .ok_or_else(|| format!("--link-section {placement}: expected <workspace|constants>=<section>"))?;
                link_sections.push((storage.parse().map_err(|e: mlf_build::Error| e.to_string())?, section.to_string()));
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}\n{USAGE}")),
            path if archive.is_none() => archive = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`\n{USAGE}")),
        }
    }
    let archive = archive.ok_or_else(|| format!("no archive given\n{USAGE}"))?;
    Ok(Args { archive, target, cpu, json, svg, memory_x, link_sections })
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let result = match args.next().as_deref() {
        Some("inspect") => parse_args(args).and_then(|args| inspect(&args)),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn inspect(args: &Args) -> Result<(), String> {
    let mut inspection = mlf_build::inspect(&args.archive).map_err(|e| e.to_string())?;
    let footprint = match &args.target {
        Some(triple) => {
            let (footprint, output) = compile_and_measure(&args.archive, triple, args.cpu.as_deref())?;
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

fn sizes_json(sizes: &Sizes) -> serde_json::Value {
    serde_json::json!({ "text": sizes.text, "rodata": sizes.rodata, "data": sizes.data, "bss": sizes.bss, "flash": sizes.flash(), "ram": sizes.ram() })
}

fn fit_json(fit: &MemoryFit) -> serde_json::Value {
    let regions: Vec<serde_json::Value> = fit
        .regions
        .iter()
        .map(|region| {
            let parts: Vec<serde_json::Value> = region
                .parts
                .iter()
                .map(|part| serde_json::json!({ "module": part.module, "what": part.what, "bytes": part.bytes }))
                .collect();
            serde_json::json!({
                "region": region.region,
                "origin": region.origin,
                "length": region.length,
                "used": region.used(),
                "headroom": region.headroom(),
                "fits": region.fits(),
                "parts": parts,
            })
        })
        .collect();
    serde_json::json!({
        "memory_x": fit.memory_x.display().to_string(),
        "code_counted": fit.code_counted,
        "regions": regions,
        "warnings": fit.warnings,
    })
}

fn json(args: &Args, inspection: &Inspection, footprint: Option<&Footprint>, fit: Option<&MemoryFit>) -> String {
    let document = serde_json::json!({
        "schema": mlf_build::SCHEMA,
        "archive": args.archive.display().to_string(),
        "modules": inspection.modules.iter().map(|m| m.to_json()).collect::<Vec<_>>(),
        "footprint": footprint.map(|f| serde_json::json!({
            "target": args.target,
            "cpu": args.cpu,
            "model": sizes_json(&f.model),
            "support": sizes_json(&f.support),
        })),
        "memory_fit": fit.map(fit_json),
    });
    serde_json::to_string_pretty(&document).unwrap_or_default()
}

fn text(args: &Args, inspection: &Inspection, footprint: Option<&Footprint>) -> String {
    let mut out = format!("archive {}\n", args.archive.display());
    for module in &inspection.modules {
        out += &module.to_text();
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

/// Builds the archive for `triple` in a fresh directory, as a build script
/// would but printing nothing for Cargo, and measures the compiled libraries.
fn compile_and_measure(archive: &Path, triple: &str, cpu: Option<&str>) -> Result<(Footprint, Output), String> {
    let out_dir = std::env::temp_dir().join(format!("mlf-build-inspect-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut builder = Builder::new(archive).out_dir(&out_dir).target(triple).cargo_metadata(false);
    if let Some(cpu) = cpu {
        builder = builder.cpu(cpu);
    }
    let result = builder.build().and_then(|output| Ok((Footprint::measure(&out_dir)?, output))).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&out_dir);
    result
}
