//! The build target and its C toolchain: the triple from Cargo's `TARGET` (or
//! a Builder option), the flags `cc` does not add by itself, and what bindgen
//! needs to see the target's headers and layouts.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::env;
use crate::error::{Error, ErrorKind, Result};

#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub triple: String,
    pub host: String,
    /// `-mcpu` for Arm targets: the Builder option, else the triple's usual core.
    pub cpu: Option<String>,
}

impl Target {
    pub fn from_env(explicit: Option<&str>, cpu: Option<&str>) -> Result<Target> {
        let host = env::cargo_var("HOST")?;
        let triple = match explicit {
            Some(triple) => triple.to_string(),
            None => env::cargo_var("TARGET")?,
        };
        let cpu = cpu.map(str::to_string).or_else(|| default_cpu(&triple).map(str::to_string));
        Ok(Target { triple, host, cpu })
    }

    /// 32-bit Arm (Cortex-M/A/R): the targets whose toolchains have the DSP intrinsics of `arm_acle.h`.
    pub fn is_arm32(&self) -> bool {
        self.triple.starts_with("thumb") || self.triple.starts_with("arm")
    }

    fn is_cross(&self) -> bool {
        self.triple != self.host
    }

    /// No operating system: the C library comes from the cross toolchain.
    fn is_bare_metal(&self) -> bool {
        self.triple.split('-').any(|part| part == "none")
    }

    /// Bare-metal Arm with newlib: `arm-none-eabi-gcc`.
    fn is_arm_none_eabi(&self) -> bool {
        self.is_arm32() && self.triple.contains("-none-eabi")
    }

    /// ELF `e_machine` of objects for this target, for checking prebuilt objects.
    pub fn elf_machine(&self) -> Option<u16> {
        let arch = self.triple.split('-').next().unwrap_or_default();
        match arch {
            "x86_64" => Some(62),
            "aarch64" => Some(183),
            "i686" | "i586" => Some(3),
            _ if arch.starts_with("riscv") => Some(243),
            _ if self.is_arm32() => Some(40),
            _ => None,
        }
    }

    /// The Debian packages that provide this target's C cross toolchain.
    fn toolchain_packages(&self) -> &'static str {
        if self.is_arm32() {
            "gcc-arm-none-eabi libnewlib-arm-none-eabi"
        } else if self.triple.starts_with("riscv") {
            "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf"
        } else {
            "gcc"
        }
    }
}

/// The core `-mcpu` names for a Cortex-M triple; `cc` adds `-march` only.
fn default_cpu(triple: &str) -> Option<&'static str> {
    let arch = triple.split('-').next().unwrap_or_default();
    Some(match arch {
        "thumbv6m" => "cortex-m0plus",
        "thumbv7m" => "cortex-m3",
        "thumbv7em" => "cortex-m4",
        "thumbv8m.base" => "cortex-m23",
        "thumbv8m.main" => "cortex-m33",
        _ => return None,
    })
}

/// A readable name for an ELF `e_machine` value.
pub(crate) fn elf_machine_name(machine: u16) -> String {
    match machine {
        3 => "x86".to_string(),
        40 => "32-bit Arm".to_string(),
        62 => "x86_64".to_string(),
        183 => "AArch64".to_string(),
        243 => "RISC-V".to_string(),
        other => format!("ELF machine {other}"),
    }
}

/// The C compiler setup for one target, shared by every library of a build.
pub(crate) struct Toolchain {
    /// The user's `cc::Build` (or a new one) with the target's flags added.
    pub build: cc::Build,
    /// What bindgen's clang needs besides the headers: the target and its system include directories.
    pub clang_args: Vec<String>,
    /// The C library archives a bare-metal target links (the multilib's `libm.a`, `libc.a`):
    /// rustc links Rust with no C library of its own there.
    pub system_libs: Vec<PathBuf>,
}

impl Toolchain {
    /// Prints the link directives for [`Toolchain::system_libs`].
    pub fn link(&self) -> Result<()> {
        for lib in &self.system_libs {
            let (Some(dir), Some(name)) = (lib.parent(), lib.file_stem().and_then(|stem| stem.to_str())) else { continue };
            crate::directive::link_static(dir, name.trim_start_matches("lib"))?;
        }
        Ok(())
    }
}

/// Completes `base` for `target` and checks that the toolchain is there.
pub(crate) fn toolchain(base: &cc::Build, target: &Target) -> Result<Toolchain> {
    let mut build = base.clone();
    // mlf-build prints the rerun lines for the variables cc reads itself, once each (see `env`).
    build.target(&target.triple).host(&target.host).cargo_metadata(false).emit_rerun_if_env_changed(false);
    if target.is_cross() {
        check_rust_target(target)?;
    }
    let compiler = build.try_get_compiler().map_err(|e| missing_compiler(target, &e.to_string()))?;
    let user_args: Vec<String> = compiler.args().iter().map(|a| a.to_string_lossy().into_owned()).collect();
    if target.triple.ends_with("eabihf") {
        if let Some(flag) = user_args.iter().find(|a| changes_float_abi(a)) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("`{flag}` would change the float ABI of `{}`, whose Rust code passes floats in FPU registers", target.triple),
            )
            .help("remove the flag from CFLAGS / the cc::Build, or build for the soft-float triple (e.g. thumbv7em-none-eabi)"));
        }
    }
    if target.is_arm32() && !user_args.iter().any(|a| a.starts_with("-mcpu=")) {
        if let Some(cpu) = &target.cpu {
            build.flag(format!("-mcpu={cpu}"));
        }
    }
    for flag in ["-ffunction-sections", "-fdata-sections"] {
        if !user_args.iter().any(|a| a == flag) {
            build.flag(flag);
        }
    }
    if target.is_arm_none_eabi() {
        // newlib 3.3 with gcc 12 leaves PRIu64 undefined without it.
        build.define("__int64_t_defined", "1");
    }
    let compiler = build.try_get_compiler().map_err(|e| missing_compiler(target, &e.to_string()))?;
    let path = which::which(compiler.path())
        .map_err(|_| missing_compiler(target, &format!("`{}` is not installed", compiler.path().display())))?;
    let mut clang_args = Vec::new();
    if target.is_cross() {
        let include_dirs = system_include_dirs(&path, compiler.args(), target)?;
        if !include_dirs.iter().any(|dir| dir.join("math.h").is_file() && dir.join("string.h").is_file()) {
            return Err(Error::new(
                ErrorKind::Toolchain,
                format!("the C library headers for `{}` (math.h, string.h) are missing: `{}` searches {}", target.triple, path.display(), list(&include_dirs)),
            )
            .help(format!("install them: `apt-get install --no-install-recommends {}`", target.toolchain_packages())));
        }
        clang_args.push(format!("--target={}", target.triple));
        for dir in include_dirs {
            clang_args.push("-isystem".to_string());
            clang_args.push(dir.display().to_string());
        }
    }
    let mut system_libs = Vec::new();
    if target.is_bare_metal() {
        // Debian's rv32 libm.a is a placeholder; picolibc keeps the maths in libc.a.
        let names: &[&str] = if target.is_arm32() { &["libm.a", "libc.a"] } else { &["libc.a"] };
        for name in names {
            system_libs.push(multilib_file(&path, compiler.args(), name, target)?);
        }
    }
    Ok(Toolchain { build, clang_args, system_libs })
}

/// The multilib variant of `name` gcc links for these flags (FPU, Thumb level).
fn multilib_file(compiler: &Path, args: &[std::ffi::OsString], name: &str, target: &Target) -> Result<PathBuf> {
    let output = Command::new(compiler)
        .args(args)
        .arg(format!("-print-file-name={name}"))
        .stderr(Stdio::null())
        .output()
        .map_err(|e| missing_compiler(target, &format!("`{}` did not run: {e}", compiler.display())))?;
    let found = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    // gcc echoes the bare name when it has no such file.
    if found.is_absolute() && found.is_file() {
        return Ok(found);
    }
    Err(Error::new(ErrorKind::Toolchain, format!("the C library for `{}` ({name}) is missing: `{}` does not find it", target.triple, compiler.display()))
        .help(format!("install it: `apt-get install --no-install-recommends {}`", target.toolchain_packages())))
}

fn changes_float_abi(flag: &str) -> bool {
    flag == "-msoft-float" || flag.strip_prefix("-mfloat-abi=").is_some_and(|abi| abi != "hard")
}

fn missing_compiler(target: &Target, detail: &str) -> Error {
    Error::new(ErrorKind::Toolchain, format!("no C compiler for `{}`: {detail}", target.triple)).help(format!(
        "install the cross compiler (`apt-get install --no-install-recommends {}`), or name one with CC_{}",
        target.toolchain_packages(),
        target.triple.replace('-', "_")
    ))
}

/// A missing Rust target fails deep inside Cargo; say it plainly first.
fn check_rust_target(target: &Target) -> Result<()> {
    let rustc = env::cargo_provided("RUSTC").unwrap_or_else(|| "rustc".to_string());
    let output = Command::new(&rustc).args(["--print", "target-libdir", "--target", &target.triple]).stderr(Stdio::null()).output();
    let libdir = output.ok().filter(|o| o.status.success()).map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = libdir.as_deref().is_some_and(|dir| dir.read_dir().is_ok_and(|mut entries| entries.next().is_some()));
    if installed {
        return Ok(());
    }
    Err(Error::new(ErrorKind::Toolchain, format!("the Rust target `{}` is not installed for `{rustc}`", target.triple))
        .help(format!("install it: `rustup target add {}`", target.triple)))
}

/// The directories the cross compiler searches for `<...>` headers, less its
/// own (clang brings its own `stddef.h` and friends).
fn system_include_dirs(compiler: &Path, args: &[std::ffi::OsString], target: &Target) -> Result<Vec<PathBuf>> {
    let output = Command::new(compiler)
        .args(args)
        .args(["-xc", "-E", "-v", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| missing_compiler(target, &format!("`{}` did not run: {e}", compiler.display())))?;
    let text = String::from_utf8_lossy(&output.stderr);
    let dirs = text
        .lines()
        .skip_while(|line| !line.starts_with("#include <...> search starts here"))
        .skip(1)
        .take_while(|line| !line.starts_with("End of search list"))
        .filter_map(|line| PathBuf::from(line.trim()).canonicalize().ok())
        .filter(|dir| !dir.starts_with("/usr/lib/gcc") && !dir.starts_with("/usr/lib/gcc-cross"))
        .collect();
    Ok(dirs)
}

fn list(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "no directories".to_string();
    }
    dirs.iter().map(|d| format!("`{}`", d.display())).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cortex_m_triples_get_their_usual_core() {
        assert_eq!(default_cpu("thumbv6m-none-eabi"), Some("cortex-m0plus"));
        assert_eq!(default_cpu("thumbv7em-none-eabihf"), Some("cortex-m4"));
        assert_eq!(default_cpu("x86_64-unknown-linux-gnu"), None);
    }

    #[test]
    fn only_non_hard_float_abis_are_refused() {
        assert!(changes_float_abi("-mfloat-abi=soft"));
        assert!(changes_float_abi("-mfloat-abi=softfp"));
        assert!(changes_float_abi("-msoft-float"));
        assert!(!changes_float_abi("-mfloat-abi=hard"));
        assert!(!changes_float_abi("-mfpu=fpv4-sp-d16"));
    }
}
