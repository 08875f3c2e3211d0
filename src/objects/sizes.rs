//! Flash and static RAM of the libraries a build compiled, read from the ELF
//! objects inside their `.a` archives: before any firmware links them.

use std::fs::File;
use std::path::{Path, PathBuf};

use object::read::archive::ArchiveFile;
use object::read::{ReadCache, ReadRef};

use crate::error::{Error, ErrorKind, Result};
use crate::objects::elf;

/// Bytes of one compiled library by kind of section (allocated sections only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Sizes {
    /// Executable code.
    pub text: u64,
    /// Read-only data (weights, tables).
    pub rodata: u64,
    /// Initialized writable data: in flash (its image) and in RAM.
    pub data: u64,
    /// Zero-initialized data (workspaces, arenas, pools): RAM only.
    pub bss: u64,
}

impl Sizes {
    /// Flash: code, read-only data and the image of initialized data.
    pub fn flash(&self) -> u64 {
        self.text.saturating_add(self.rodata).saturating_add(self.data)
    }

    /// Static RAM: initialized and zeroed data.
    pub fn ram(&self) -> u64 {
        self.data.saturating_add(self.bss)
    }

    fn add(&mut self, other: Sizes) {
        self.text = self.text.saturating_add(other.text);
        self.rodata = self.rodata.saturating_add(other.rodata);
        self.data = self.data.saturating_add(other.data);
        self.bss = self.bss.saturating_add(other.bss);
    }
}

/// What a build compiled, measured from its objects. Objects are counted whole:
/// a linker that drops unused sections (`--gc-sections`) keeps at most this much.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Footprint {
    /// The model's library: the archive's code, its weights and mlf-build's glue,
    /// arena and pools, for every module of the archive.
    pub model: Sizes,
    /// mlf-build's C support library, shared by every model of a crate.
    pub support: Sizes,
}

impl Footprint {
    /// Measures the libraries [`crate::Builder::build`] compiled into `out_dir`.
    ///
    /// # Errors
    /// When a library cannot be read or holds no ELF object.
    pub fn measure(out_dir: &Path) -> Result<Footprint> {
        let mlf = out_dir.join("mlf");
        // A build script's support library, private or shared (`Builder::share_support_runtime`), or both.
        let mut support_libraries = Vec::new();
        for dir in ["support", "support-shared"].map(|dir| mlf.join(dir)).iter().filter(|dir| dir.is_dir()) {
            support_libraries.extend(libraries(dir)?);
        }
        let support = library_sizes(&support_libraries)?;
        let mut model_libraries = Vec::new();
        let builds = mlf.join("build");
        for entry in std::fs::read_dir(&builds).map_err(|e| Error::io("read", &builds, e))? {
            let entry = entry.map_err(|e| Error::io("read", &builds, e))?;
            model_libraries.extend(libraries(&entry.path().join("lib"))?);
        }
        Ok(Footprint { model: library_sizes(&model_libraries)?, support })
    }
}

fn libraries(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("read", dir, e))?;
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io("read", dir, e))?.path();
        if path.extension().is_some_and(|e| e == "a") {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

pub(crate) fn library_sizes(paths: &[PathBuf]) -> Result<Sizes> {
    let mut total = Sizes::default();
    for path in paths {
        let not_ar = || Error::new(ErrorKind::Compile, format!("`{}` is not an ar archive", path.display()));
        // Only the members' ELF and section headers are read, never their code and weights.
        let file = ReadCache::new(File::open(path).map_err(|e| Error::io("read", path, e))?);
        let archive = ArchiveFile::parse(&file).map_err(|_| not_ar())?;
        for member in archive.members() {
            let (start, size) = member.map_err(|_| not_ar())?.file_range();
            if let Some(sizes) = elf_sizes(file.range(start, size)) {
                total.add(sizes);
            }
        }
    }
    Ok(total)
}

/// Section sizes of one relocatable ELF object; `None` for anything else.
fn elf_sizes<'d>(object: impl ReadRef<'d>) -> Option<Sizes> {
    let header = elf::Header::read(object)?;
    let mut sizes = Sizes::default();
    for section in header.sections(object).ok()? {
        if section.flags & elf::SHF_ALLOC == 0 {
            continue;
        }
        let slot = if section.kind == elf::SHT_NOBITS {
            &mut sizes.bss
        } else if section.flags & elf::SHF_EXECINSTR != 0 {
            &mut sizes.text
        } else if section.flags & elf::SHF_WRITE != 0 {
            &mut sizes.data
        } else {
            &mut sizes.rodata
        };
        *slot = slot.saturating_add(section.size);
    }
    Some(sizes)
}
