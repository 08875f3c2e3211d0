//! The objects a build compiles and links, read and written: ELF objects and
//! `ar` libraries, through the `object` crate where it reads them. An
//! object's tables (`elf`); changes to its bytes (`patch`) that make a
//! crate's symbols its own (`rename`) and place the model's memory in named
//! sections (`sections`); static libraries written (`ar`) and measured
//! (`sizes`); the toolchain's own libraries (`library`); the stack bound of
//! the code (`stack`, with frames read from machine code in `prologue`).
//! Compiling them is `toolchain`'s.

pub(crate) mod ar;
pub(crate) mod elf;
pub(crate) mod library;
pub(crate) mod patch;
pub(crate) mod prologue;
pub(crate) mod rename;
pub(crate) mod sections;
pub(crate) mod sizes;
pub(crate) mod stack;

/// The architectures whose ELF objects the crate knows by name: one table for
/// the prebuilt-object check, the stack bound's relocations and the frames
/// read from machine code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Machine {
    X86,
    Arm,
    X86_64,
    Aarch64,
    Riscv,
}

impl Machine {
    const ALL: [Machine; 5] = [Machine::X86, Machine::Arm, Machine::X86_64, Machine::Aarch64, Machine::Riscv];

    /// The machine of ELF `e_machine` value `value`, if it is one of these.
    pub fn from_elf(value: u16) -> Option<Machine> {
        Self::ALL.into_iter().find(|machine| machine.elf() == value)
    }

    /// Its ELF `e_machine` value.
    pub fn elf(self) -> u16 {
        match self {
            Machine::X86 => object::elf::EM_386,
            Machine::Arm => object::elf::EM_ARM,
            Machine::X86_64 => object::elf::EM_X86_64,
            Machine::Aarch64 => object::elf::EM_AARCH64,
            Machine::Riscv => object::elf::EM_RISCV,
        }
    }

    /// A readable name.
    pub fn name(self) -> &'static str {
        match self {
            Machine::X86 => "x86",
            Machine::Arm => "32-bit Arm",
            Machine::X86_64 => "x86-64",
            Machine::Aarch64 => "AArch64",
            Machine::Riscv => "RISC-V",
        }
    }

    /// A readable name for any `e_machine` value.
    pub fn describe(value: u16) -> String {
        Machine::from_elf(value).map_or_else(|| format!("ELF machine {value}"), |machine| machine.name().to_string())
    }

    /// Whether the stack bound knows which of its relocation types are calls.
    pub fn relocations_read(self) -> bool {
        matches!(self, Machine::Arm | Machine::Riscv | Machine::X86_64 | Machine::Aarch64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_name_per_machine() {
        for machine in Machine::ALL {
            assert_eq!(Machine::from_elf(machine.elf()), Some(machine));
        }
        assert_eq!(Machine::describe(40), "32-bit Arm");
        assert_eq!(Machine::describe(9999), "ELF machine 9999");
    }
}
