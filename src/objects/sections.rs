//! Places the model's memory in the linker sections the user names
//! (`Builder::link_section`) by renaming sections of the compiled ELF
//! objects: the archive's sources are never edited, and what the generated C
//! defines moves exactly as what mlf-build's glue defines.

use std::fs::File;
use std::path::{Path, PathBuf};

use object::{ReadCache, ReadRef};

use crate::cargo::write::write_streamed_if_changed;
use crate::error::{Error, ErrorKind, Result};
use crate::ident;
use crate::objects::elf::{self, Header, Section, SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE, SHT_PROGBITS};
use crate::objects::patch::Patch;

/// What part of a model's memory a linker section holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Storage {
    /// Mutable working memory: USMP's static `global_workspace`, mlf-build's
    /// arena, workspace pools, a graph's tensor storage and CMSIS-NN scratch.
    /// Zero-initialised (`.bss`) sections of the model's objects; the model
    /// writes them before it reads them, so they may be placed `NOLOAD`.
    Workspace,
    /// Constant data: weights, constant pools and a graph's parameters. The
    /// read-only data sections of the model's objects.
    Constants,
}

impl std::str::FromStr for Storage {
    type Err = Error;

    /// `workspace` or `constants`, as command lines and environment variables spell them.
    fn from_str(text: &str) -> Result<Storage> {
        match text {
            "workspace" => Ok(Storage::Workspace),
            "constants" => Ok(Storage::Constants),
            other => Err(Error::new(ErrorKind::Config, format!("`{other}` is not a kind of model storage"))
                .help("name `workspace` (the model's working memory) or `constants` (its weights)")),
        }
    }
}

/// The section each [`Storage`] goes to; `None` leaves it where the compiler put it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct SectionNames {
    pub workspace: Option<String>,
    pub constants: Option<String>,
}

/// Thread-local storage: not the model's memory.
const SHF_TLS: u64 = 0x400;
/// Read-only sections that are the toolchain's, not data: unwinding tables and notes.
const TOOLCHAIN_SECTIONS: &[&str] = &[".eh_frame", ".gcc_except_table", ".note", ".ARM."];

impl SectionNames {
    pub fn is_empty(&self) -> bool {
        self.workspace.is_none() && self.constants.is_none()
    }

    /// The section name `section` is renamed to, if any, by its kind and
    /// flags; `name` reads its name, asked only of a section that may move.
    fn new_name<'n>(&self, section: &Section, name: impl FnOnce() -> Option<&'n [u8]>) -> Option<Option<&str>> {
        let alloc = section.flags & SHF_ALLOC != 0 && section.flags & SHF_TLS == 0;
        let writable = section.flags & SHF_WRITE != 0;
        let new_name = if !alloc {
            None
        } else if section.kind == elf::SHT_NOBITS && writable {
            self.workspace.as_deref()
        } else if section.kind == SHT_PROGBITS && !writable && section.flags & SHF_EXECINSTR == 0 {
            self.constants.as_deref()
        } else {
            None
        };
        let Some(new_name) = new_name else { return Some(None) };
        let name = name()?;
        Some(Some(new_name).filter(|_| !TOOLCHAIN_SECTIONS.iter().any(|prefix| name.starts_with(prefix.as_bytes()))))
    }

    /// Sends `storage` to `section`, once the name is checked.
    pub fn set(&mut self, storage: Storage, section: &str) -> Result<()> {
        Self::check(section, storage)?;
        let slot = match storage {
            Storage::Workspace => &mut self.workspace,
            Storage::Constants => &mut self.constants,
        };
        *slot = Some(section.to_string());
        Ok(())
    }

    /// Checks a name the user gave: one a linker script can match.
    fn check(section: &str, storage: Storage) -> Result<()> {
        let valid = !section.is_empty()
            && section.len() <= 128
            && !section.starts_with(|c: char| c.is_ascii_digit())
            && section.chars().all(|c| ident::is_identifier_char(c) || ".$".contains(c));
        if valid {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Config,
                format!("Builder::link_section({storage:?}, {section:?}): not a section name a linker script can match"),
            )
            .help("use a name of letters, digits, `_`, `.` and `$`, such as \".sram2\" or \".ext_flash\""))
        }
    }
}

/// The patch renaming the model sections of `object` (its bytes, or a file)
/// as `names` says: the sections' names table copied to the file's end with
/// the new names after the old, and the moved sections' `sh_name`s pointing
/// there. `None` when it is not a well-formed ELF object.
fn placement<'d>(object: impl ReadRef<'d>, names: &SectionNames) -> Option<Patch> {
    let size = object.len().ok()?;
    let header = Header::read(object)?;
    let sections = header.sections(object).ok()?;
    let names_index = header.names_index(&sections)?;
    let old_strings = sections.get(names_index)?.bytes(object)?;
    let mut new_strings = old_strings.to_vec();
    let mut new_offsets: Vec<(&str, u64)> = Vec::new();
    let mut edits = Vec::new();
    for (index, section) in sections.iter().enumerate() {
        let Some(new_name) = names.new_name(section, || elf::string(old_strings, section.name))? else { continue };
        let offset = match new_offsets.iter().find(|(name, _)| *name == new_name) {
            Some((_, offset)) => *offset,
            None => {
                let offset = new_strings.len() as u64;
                new_strings.extend_from_slice(new_name.as_bytes());
                new_strings.push(0);
                new_offsets.push((new_name, offset));
                offset
            }
        };
        let (name_field, ..) = header.section_fields(index as u64)?;
        edits.push((name_field as u64, header.field(4, offset)?));
    }
    if edits.is_empty() {
        return Some(Patch::default());
    }
    let (_, offset_field, size_field, width) = header.section_fields(names_index as u64)?;
    edits.push((offset_field as u64, header.field(width, size)?));
    edits.push((size_field as u64, header.field(width, new_strings.len() as u64)?));
    Patch::new(edits, new_strings, size)
}

/// Renames the sections of `object` into `dest`: a copy, or `object` itself,
/// edited where its tables are. Its code and data are never read.
pub(crate) fn place(object: &Path, dest: &Path, names: &SectionNames) -> Result<()> {
    let io = |e| Error::io("read", object, e);
    let file = File::open(object).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let patch = placement(&ReadCache::new(file), names).ok_or_else(|| {
        Error::new(ErrorKind::Unsupported, format!("Builder::link_section: `{}` is not an ELF object", object.display())).help(
            "sections are placed by renaming them in ELF objects (Linux and bare-metal targets); build without link_section for this target",
        )
    })?;
    if dest == object {
        patch.apply(object, size).map_err(|e| Error::io("write", object, e))
    } else {
        write_streamed_if_changed(dest, |out| patch.copy(object, size, out)).map(drop)
    }
}

/// Where an object of the archive's is written once placed: the original stays untouched in the tree.
pub(crate) fn placed_copy(object: &Path, out_dir: &Path, index: usize) -> PathBuf {
    let stem = object.file_stem().map_or_else(|| "object".into(), |s| s.to_string_lossy().into_owned());
    out_dir.join("placed").join(format!("{index}-{stem}.o"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles C with the host compiler into an object.
    fn object(source: &str) -> Option<Vec<u8>> {
        // Tests run side by side: a directory per source.
        let hash = source.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        let dir = std::env::temp_dir().join(format!("mlf-sections-{}-{hash:x}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let (c, o) = (dir.join("t.c"), dir.join("t.o"));
        std::fs::write(&c, source).ok()?;
        let status = std::process::Command::new("cc").args(["-c", "-O1", "-fdata-sections"]).arg(&c).arg("-o").arg(&o).status().ok()?;
        let bytes = status.success().then(|| std::fs::read(&o).ok()).flatten();
        let _ = std::fs::remove_dir_all(&dir);
        bytes
    }

    /// `object` placed as `names` says, as a build places it: into a copy,
    /// and in place, the two alike; `None` when it is refused.
    fn renamed(object: &[u8], names: &SectionNames) -> Option<Vec<u8>> {
        let dir = crate::test_support::scratch("sections-placed");
        let (original, copy) = (dir.join("original.o"), dir.join("copy.o"));
        std::fs::write(&original, object).unwrap();
        let placed = place(&original, &copy, names).ok().map(|()| std::fs::read(&copy).unwrap());
        if let Some(placed) = &placed {
            place(&original, &original, names).unwrap();
            assert!(std::fs::read(&original).unwrap() == *placed, "placed in place, not as in the copy");
        }
        std::fs::remove_dir_all(&dir).unwrap();
        placed
    }

    fn section_names(object: &[u8]) -> Vec<String> {
        let header = Header::parse(object).unwrap();
        let sections = header.sections(object).unwrap();
        let strings = sections[header.names_index(&sections).unwrap()].bytes(object).unwrap();
        sections.iter().map(|s| String::from_utf8_lossy(elf::string(strings, s.name).unwrap()).into_owned()).collect()
    }

    const SOURCE: &str = "unsigned char workspace[4096] __attribute__((section(\".bss.noinit.tvm\")));\n\
                          float arena[64];\n\
                          const float weights[4] = {1, 2, 3, 4};\n\
                          int counter = 3;\n\
                          float run(int i) { workspace[i] = 1; arena[i] = weights[i & 3]; return arena[i] + workspace[i] + counter; }\n";

    #[test]
    fn moves_zeroed_data_and_constants_and_nothing_else() {
        let Some(original) = object(SOURCE) else {
            eprintln!("SKIP: no host C compiler");
            return;
        };
        let names = SectionNames { workspace: Some(".sram2".into()), constants: Some(".ext_flash".into()) };
        let placed = renamed(&original, &names).unwrap();
        let before = section_names(&original);
        let after = section_names(&placed);
        assert_eq!(before.len(), after.len());
        for (old, new) in before.iter().zip(&after) {
            let expected = if old.starts_with(".bss") {
                ".sram2"
            } else if old.starts_with(".rodata") {
                ".ext_flash"
            } else {
                old.as_str()
            };
            assert_eq!(new, expected, "section {old}");
        }
        assert!(before.iter().any(|n| n == ".bss.noinit.tvm") && before.iter().any(|n| n.starts_with(".rodata")), "{before:?}");
        // `.data` keeps its initial value where the startup code copies it.
        assert!(after.iter().any(|n| n.starts_with(".data")), "{after:?}");
        // The linker accepts the result and sees the symbols in their new sections.
        let dir = std::env::temp_dir().join(format!("mlf-sections-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("placed.o"), &placed).unwrap();
        let status = std::process::Command::new("ld").args(["-r", "-o"]).arg(dir.join("out.o")).arg(dir.join("placed.o")).status();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(status.is_ok_and(|s| s.success()));
    }

    #[test]
    fn no_names_no_change_and_garbage_is_refused() {
        let names = SectionNames { workspace: Some(".sram2".into()), constants: None };
        assert_eq!(renamed(b"not an object", &names), None);
        if let Some(original) = object("int x;\n") {
            assert_eq!(renamed(&original, &SectionNames::default()).unwrap(), original);
        }
        if let Some(mut truncated) = object(SOURCE) {
            truncated.truncate(100);
            assert_eq!(renamed(&truncated, &names), None);
        }
    }

    #[test]
    fn section_names_are_checked() {
        assert!(SectionNames::check(".sram2", Storage::Workspace).is_ok());
        assert!(SectionNames::check(".ext_flash.weights", Storage::Constants).is_ok());
        for bad in ["", "sram 2", ".a\"b", "9lives", ".x\n"] {
            assert!(SectionNames::check(bad, Storage::Workspace).is_err(), "{bad:?}");
        }
    }
}
