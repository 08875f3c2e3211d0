//! Builds the archive named by MLF_ARCHIVE (default: the project's demo archive)
//! and writes an index of its modules for main.rs.

use std::fmt::Write;
use std::path::PathBuf;

fn main() -> Result<(), mlf_build::Error> {
    println!("cargo:rerun-if-env-changed=MLF_ARCHIVE");
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    // Relative paths are taken from the workspace root, where the README's
    // commands run, as in every runner (a build script runs in its package's folder).
    let root = manifest_dir.join("../..");
    let (archive, is_demo) = match std::env::var("MLF_ARCHIVE") {
        Ok(path) if !path.is_empty() => (root.join(path), false),
        _ => (manifest_dir.join("../demo-model"), true),
    };
    let output = mlf_build::Builder::new(&archive).build()?;

    let mut index = String::new();
    writeln!(index, "const IS_DEMO: bool = {is_demo};").unwrap();
    writeln!(index, "const ARCHIVE: &str = {:?};", archive.display().to_string()).unwrap();
    for module in &output.modules {
        let ident = format!("module_{}", module.name);
        writeln!(
            index,
            r#"#[allow(dead_code)] // the runner uses only the generic part of the API
mod {ident} {{
    include!({path:?});
    pub fn describe(list: &[TensorInfo]) -> Vec<crate::Tensor> {{
        list.iter().map(|t| crate::Tensor {{ name: t.name, dtype: t.dtype, bytes: t.bytes, shape: t.shape }}).collect()
    }}
    pub fn model() -> crate::Module {{
        crate::Module {{
            name: MODULE_NAME,
            inputs: describe(&INPUTS),
            outputs: describe(&OUTPUTS),
            run: |inputs, outputs| run_raw(inputs, outputs).map_err(|e| e.to_string()),
            set_log_hook: |hook| set_log_hook(Some(hook)),
        }}
    }}
}}"#,
            path = module.rust_file
        )
        .unwrap();
    }
    let constructors: Vec<String> = output.modules.iter().map(|m| format!("module_{}::model()", m.name)).collect();
    writeln!(index, "fn modules() -> Vec<Module> {{ vec![{}] }}", constructors.join(", ")).unwrap();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by Cargo"));
    std::fs::write(out_dir.join("modules.rs"), index).expect("OUT_DIR is writable");
    Ok(())
}
