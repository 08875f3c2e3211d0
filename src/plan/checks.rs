//! Checks of a plan against the build target, before the compiler would
//! refuse the same code less clearly. Pure: they read the plan and the target.

use crate::error::{Error, ErrorKind, Result};
use crate::input::archive::Tree;
use crate::input::code::ModuleCode;
use crate::input::metadata::Metadata;
use crate::input::sources;
use crate::objects::elf;
use crate::objects::Machine;
use crate::plan::model::Plan;
use crate::toolchain::target::{self, Target};

/// Refuses a module's source that defines (with external linkage) a function
/// mlf-build's support code or generated glue for `modules` defines: the link
/// would fail, or take the archive's instead.
pub(crate) fn check_own_symbols(code: &ModuleCode<'_, '_>, modules: &[&str]) -> Result<()> {
    for source in code.sources() {
        let own = source.functions.iter().find(|function| !function.is_static && crate::own_code::is_own_symbol(function.name, modules));
        if let Some(function) = own {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("defines `{}`, a function mlf-build's own support code or generated glue defines: the two would clash when linked", function.name),
            )
            .in_file(source.path)
            .help("TVM's generated code calls these functions and never defines them: remove the definition (mlf-build supplies it), or pass the archive as TVM wrote it"));
        }
    }
    Ok(())
}

/// Refuses code that cannot compile for the target, before the compiler says so less clearly.
pub(crate) fn check_target(plan: &Plan, target: &Target, metadata: &Metadata) -> Result<()> {
    for module in &plan.modules {
        if let Some((file, header)) = &module.needs.arm_only {
            if !target.is_arm32() {
                let compiled_for = metadata
                    .modules
                    .iter()
                    .find(|m| m.name == module.name)
                    .and_then(|m| m.targets.first())
                    .map_or_else(String::new, |t| format!(" (`{}`)", t.target));
                return Err(Error::new(
                    ErrorKind::WrongTarget,
                    format!(
                        "includes <{header}>: module `{}` was compiled for an Arm Cortex-M target{compiled_for} and cannot be built for `{}`",
                        module.name, target.triple
                    ),
                )
                .in_file(file)
                .help("build for an Arm target, e.g. `cargo build --target thumbv7em-none-eabihf` with arm-none-eabi-gcc installed: the code calls Arm intrinsics, which exist only there"));
            }
        }
    }
    Ok(())
}

/// Refuses Arm code for a core the build's cannot run, before gcc fails on it
/// less clearly: the core the archive names (`-mcpu=cortex-m4`) and the DSP or
/// Helium intrinsics its code uses, against what the C compiler targets.
/// Portable C for another architecture (`-mcpu=generic-rv32`) is not refused.
pub(crate) fn check_core(plan: &Plan, target: &Target, metadata: &Metadata, compiled: Option<target::CoreIsa>) -> Result<()> {
    let (Some(build_isa), true) = (compiled, target.is_arm32()) else { return Ok(()) };
    let build_core = match &target.cpu {
        Some(cpu) => format!("`{cpu}` (from {})", target.cpu_source),
        None => format!("the core of `{}`", target.triple),
    };
    for module in &plan.modules {
        let declared = metadata
            .modules
            .iter()
            .filter(|m| m.name == module.name)
            .flat_map(|m| &m.targets)
            .find_map(|t| t.option("mcpu").and_then(|mcpu| target::arm_core(mcpu).map(|core| (mcpu.to_string(), core))));
        let mut needs: Vec<(String, target::CoreIsa, Option<&str>)> = Vec::new();
        if let Some((mcpu, core)) = &declared {
            needs.push((format!("was compiled for `{mcpu}` (its target string says `-mcpu={mcpu}`)"), core.isa, None));
        }
        if let Some((file, intrinsic)) = &module.needs.dsp {
            needs.push((
                format!("uses the DSP intrinsic `{intrinsic}`"),
                target::CoreIsa { thumb2: true, dsp: true, mve: false },
                Some(file.as_str()),
            ));
        }
        if let Some((file, header)) = &module.needs.mve {
            needs.push((
                format!("uses Helium (MVE) intrinsics from <{header}>"),
                target::CoreIsa { thumb2: true, dsp: true, mve: true },
                Some(file.as_str()),
            ));
        }
        for (why, needed, file) in needs {
            if build_isa.runs(needed) {
                continue;
            }
            let fix = match &declared {
                Some((mcpu, _)) => format!("build for a core that has {}: `{mcpu}` or a larger one (Builder::cpu(\"{mcpu}\"), `-C target-cpu={mcpu}`, and the matching --target)", build_isa.missing(needed)),
                None => format!("build for a core that has {} (Builder::cpu, `-C target-cpu`): the code uses it directly", build_isa.missing(needed)),
            };
            let error = Error::new(
                ErrorKind::WrongTarget,
                format!("module `{}` {why}, but the build's core {build_core} lacks {}", module.name, build_isa.missing(needed)),
            )
            .help(fix);
            return Err(match file {
                Some(file) => error.in_file(file),
                None => error.in_file("metadata.json"),
            });
        }
    }
    Ok(())
}

/// Prebuilt objects link only when their architecture and ELF class are the target's.
pub(crate) fn check_objects(tree: &Tree, target: &Target) -> Result<()> {
    let Some(expected) = target.elf_machine() else { return Ok(()) };
    let class = |is_64: bool| if is_64 { "ELF64 (64-bit)" } else { "ELF32 (32-bit)" };
    for path in tree.files_under(sources::LIB_DIR).filter(|path| path.ends_with(".o")) {
        let bytes = tree.get(path).unwrap_or_default();
        let header = elf::Header::parse(bytes);
        match header.as_ref().map(|header| header.machine) {
            Some(found) if found == expected.elf() => {
                let (Some(header), Some(target_is_64)) = (header, target.elf_is_64()) else { continue };
                if header.is_64() != target_is_64 {
                    return Err(Error::new(
                        ErrorKind::WrongTarget,
                        format!(
                            "prebuilt object is {}, but the build target `{}` links {} objects",
                            class(header.is_64()),
                            target.triple,
                            class(target_is_64)
                        ),
                    )
                    .in_file(path)
                    .help("objects under codegen/host/lib must be compiled for the build's target, with its pointer width: rebuild the archive for it"));
                }
            }
            found => {
                let found = found.map_or_else(|| "not an ELF object".to_string(), Machine::describe);
                return Err(Error::new(
                    ErrorKind::WrongTarget,
                    format!(
                        "prebuilt object is for {found}, but the build target `{}` is {}",
                        target.triple,
                        expected.name()
                    ),
                )
                .in_file(path)
                .help("objects under codegen/host/lib are machine code from TVM's llvm target and cannot be compiled again: build for the architecture they were made for (its --target)"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cargo::directive::Directives;
    use crate::cargo::env::Env;

    /// An ELF header (`e_ident` and `e_machine`) of `class` (1: ELF32, 2: ELF64) for `machine`.
    fn object_header(class: u8, machine: u16) -> Vec<u8> {
        let mut header = vec![0u8; 64];
        header[..6].copy_from_slice(&[0x7f, b'E', b'L', b'F', class, 1]);
        header[6] = 1;
        header[16] = 1;
        header[18..20].copy_from_slice(&machine.to_le_bytes());
        header
    }

    fn check(triple: &str, object: Vec<u8>) -> Result<()> {
        let env = Env { directives: Directives::new(false) };
        let target = Target::new(triple.to_string(), "x86_64-unknown-linux-gnu".to_string(), None, &env);
        let tree = Tree::from_files([("codegen/host/lib/lib0.o".to_string(), object)]).unwrap();
        check_objects(&tree, &target)
    }

    /// A source defining a support or glue function with external linkage is
    /// refused, naming it and its file; a `static` one, or one under a
    /// comment, clashes with nothing.
    #[test]
    fn own_symbols_defined_by_the_archive_are_refused() {
        let refused = |code: &str| {
            let tree = Tree::from_files([("codegen/host/src/default_lib0.c".to_string(), code.as_bytes().to_vec())]).unwrap();
            let codegen = sources::codegen_for(&tree, "default", &["default"]);
            let texts = crate::input::c::CTexts::of(&tree);
            let files = crate::input::c::CFiles::parse(&texts).unwrap();
            check_own_symbols(&ModuleCode::new(&tree, &files, &codegen), &["default"]).err()
        };
        let error = refused("int x;\nvoid* TVMBackendAllocWorkspace(int a) { return 0; }\n").expect("refused");
        assert!(error.to_string().contains("defines `TVMBackendAllocWorkspace`"), "{error}");
        assert_eq!(error.file(), Some("codegen/host/src/default_lib0.c"));
        assert!(refused("int32_t mlf_default_invoke(void) { return 0; }\n").is_some());
        assert!(refused("static void* TVMBackendAllocWorkspace(int a) { return 0; }\n").is_none());
        assert!(refused("/* void* TVMBackendAllocWorkspace(int a) { return 0; } */\nint32_t mlf_other_x(void) { return 0; }\n").is_none());
    }

    #[test]
    fn prebuilt_objects_of_the_other_elf_class_are_refused() {
        let error = check("x86_64-unknown-linux-gnu", object_header(1, 62)).unwrap_err().to_string();
        assert!(error.contains("lib0.o") && error.contains("ELF32 (32-bit)") && error.contains("ELF64 (64-bit)"), "{error}");
        let error = check("thumbv7em-none-eabihf", object_header(2, 40)).unwrap_err().to_string();
        assert!(error.contains("lib0.o") && error.contains("is ELF64 (64-bit)") && error.contains("links ELF32 (32-bit)"), "{error}");
        let error = check("riscv32imac-unknown-none-elf", object_header(2, 243)).unwrap_err().to_string();
        assert!(error.contains("is ELF64 (64-bit)"), "{error}");
        assert!(check("riscv32imac-unknown-none-elf", object_header(1, 243)).is_ok());
        assert!(check("x86_64-unknown-linux-gnu", object_header(2, 62)).is_ok());
        assert!(check("thumbv7em-none-eabihf", object_header(1, 40)).is_ok());
    }
}
