//! Builds the archive named by MLF_ARCHIVE (default: the project's demo
//! archive) for the firmware's target, embeds the raw inputs named by
//! MLF_INPUTS (comma-separated, declaration order; default: zeros, or the
//! demo's own input) and writes the `memory.x` QEMU's MPS2 boards need.

use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The MPS2 boards map 4 MiB of SSRAM for code at 0 and 4 MiB for data at 0x20000000.
const MEMORY_X: &str = "MEMORY
{
  FLASH : ORIGIN = 0x00000000, LENGTH = 4096K
  RAM : ORIGIN = 0x20000000, LENGTH = 4096K
}
";

/// x = [1, 2, 3, 4] as float32 (examples/demo-model/README.md).
const DEMO_INPUT: [f32; 4] = [1.0, 2.0, 3.0, 4.0];

fn var(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by Cargo"));
    // Relative paths are taken from the repository root, where the README's commands run.
    let root = manifest_dir.join("../..");
    let archive = var("MLF_ARCHIVE").map(|path| root.join(path));
    let is_demo = archive.is_none();
    let archive = archive.unwrap_or_else(|| manifest_dir.join("../demo-model"));

    let output = match mlf_build::Builder::new(&archive).implement_mlf_rt(true).build() {
        Ok(output) => output,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let wanted = var("MLF_MODULE");
    let module = match &wanted {
        Some(name) => output.modules.iter().find(|m| &m.name == name),
        None => output.modules.first(),
    };
    let Some(module) = module else {
        let names: Vec<&str> = output.modules.iter().map(|m| m.name.as_str()).collect();
        eprintln!("cortex-m-runner: no module {wanted:?} in {}; it has {names:?} (set MLF_MODULE)", archive.display());
        std::process::exit(1);
    };

    let mut inputs: Vec<PathBuf> = var("MLF_INPUTS").map(|list| list.split(',').map(|path| root.join(path)).collect()).unwrap_or_default();
    if is_demo && inputs.is_empty() {
        let demo = out_dir.join("demo-input0.bin");
        let bytes: Vec<u8> = DEMO_INPUT.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(&demo, bytes).expect("OUT_DIR is writable");
        inputs.push(demo);
    }

    let mut firmware = String::new();
    writeln!(firmware, "/// The model: module `{}` of the archive.", module.name).unwrap();
    writeln!(firmware, "#[allow(dead_code)]\nmod model {{\n    include!({:?});\n}}", module.rust_file).unwrap();
    writeln!(firmware, "/// The archive the firmware was built from.").unwrap();
    writeln!(firmware, "const ARCHIVE: &str = {:?};", archive.display().to_string()).unwrap();
    for (index, path) in inputs.iter().enumerate() {
        println!("cargo:rerun-if-changed={}", path.display());
        let len = std::fs::metadata(path).unwrap_or_else(|e| panic!("MLF_INPUTS: {}: {e}", path.display())).len();
        writeln!(firmware, "static INPUT_{index}: Aligned<{len}> = Aligned(*include_bytes!({:?}));", path.display().to_string())
            .unwrap();
        writeln!(
            firmware,
            "const _: () = assert!({index} >= model::INPUTS.len() || {len} == model::INPUTS[{index}].bytes, \"MLF_INPUTS: file {index} is not the size of the model's input {index}\");"
        )
        .unwrap();
    }
    let statics: Vec<String> = (0..inputs.len()).map(|i| format!("&INPUT_{i}.0")).collect();
    writeln!(firmware, "/// The embedded input files, in declaration order (none: zeros).").unwrap();
    writeln!(firmware, "static INPUT_FILES: [&[u8]; {}] = [{}];", inputs.len(), statics.join(", ")).unwrap();
    writeln!(
        firmware,
        "const _: () = assert!(INPUT_FILES.is_empty() || INPUT_FILES.len() == model::INPUTS.len(), \"MLF_INPUTS names {} files; the model has a different number of inputs\");",
        inputs.len()
    )
    .unwrap();
    write_if_changed(&out_dir.join("firmware.rs"), &firmware);
    // For examples/footprint: what the model needs, next to what the firmware takes.
    let needs = &module.memory;
    let report = format!(
        "module {}\nconstants {}\nconstant_pools {}\nworkspace {}\npools {}\nio {}\ninputs {}\n",
        module.name,
        needs.constants,
        needs.constant_pools,
        needs.code_workspace + needs.arena + needs.storage,
        needs.pools,
        needs.inputs + needs.outputs,
        needs.inputs
    );
    write_if_changed(&out_dir.join("model-needs.txt"), &report);
    write_if_changed(&out_dir.join("memory.x"), MEMORY_X);
    println!("cargo:rustc-link-search={}", out_dir.display());
}

/// Unchanged files keep their timestamps, so Cargo does not relink for nothing.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read(path).ok().as_deref() != Some(text.as_bytes()) {
        std::fs::write(path, text).expect("OUT_DIR is writable");
    }
}
