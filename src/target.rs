//! The build target, from Cargo's `TARGET` or a Builder option.

use crate::env;
use crate::error::Result;

#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub triple: String,
    pub host: String,
}

impl Target {
    pub fn from_env(explicit: Option<&str>) -> Result<Target> {
        let host = env::cargo_var("HOST")?;
        let triple = match explicit {
            Some(triple) => triple.to_string(),
            None => env::cargo_var("TARGET")?,
        };
        Ok(Target { triple, host })
    }

    /// 32-bit Arm (Cortex-M/A/R): the targets whose toolchains have the DSP intrinsics of `arm_acle.h`.
    pub fn is_arm32(&self) -> bool {
        self.triple.starts_with("thumb") || self.triple.starts_with("arm")
    }

    /// ELF `e_machine` of objects for this target, for checking prebuilt objects.
    pub fn elf_machine(&self) -> Option<u16> {
        let arch = self.triple.split('-').next().unwrap_or_default();
        match arch {
            "x86_64" => Some(62),
            "aarch64" => Some(183),
            "i686" | "i586" => Some(3),
            "riscv32imac" | "riscv32imc" | "riscv32i" | "riscv64gc" | "riscv32imafc" => Some(243),
            _ if self.is_arm32() => Some(40),
            _ => None,
        }
    }
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
