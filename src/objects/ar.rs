//! Static libraries of ELF objects, written in the System V / GNU `ar` format
//! with its symbol index, without running `ar`: binutils' `ar` loads every
//! linker plugin (LLVM's among them) on each run, about 16 ms, twice per
//! library. Objects are copied into the library as they are read, so memory
//! stays flat however large the weights; only their symbol tables are read
//! whole. Other object formats (Mach-O, COFF, LLVM bitcode) and GCC's slim
//! LTO objects go through `cc` and the toolchain's archiver.
//!
//! Written here, not with `object`'s writers (`object::write`, `ar_archive_writer`):
//! they build a whole object or member in memory, and a library is copied
//! member by member, its symbols renamed on the way (`patch::Patch`), so
//! the weights never sit in memory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::objects::patch::Patch;
use crate::objects::rename::{self, Renaming, Tables};

/// One object to archive.
struct Member {
    path: PathBuf,
    name: String,
    /// Its size on disk.
    size: u64,
    /// Names of the global symbols it defines, for the index.
    symbols: Vec<Vec<u8>>,
    /// The renaming of its symbols, applied as it is copied.
    patch: Patch,
}

impl Member {
    /// The member's size in the library.
    fn archived_size(&self) -> Option<u64> {
        self.size.checked_add(self.patch.appended_len())
    }
}

/// The symbol GCC puts in an object that holds only LTO bytecode (`-flto`
/// without `-ffat-lto-objects`): its real symbols are known to `ar` only
/// through GCC's linker plugin.
const GCC_SLIM_LTO: &[u8] = b"__gnu_lto_slim";

/// Writes `objects` into the library at `path`, their symbols renamed by
/// `renaming`. `Ok(false)`, writing nothing, when one of them is not ELF, or
/// is ELF whose symbols only a linker plugin knows; with a renaming, that is
/// an error instead (the archiver could not rename them).
pub(crate) fn write_elf_library(path: &Path, objects: &[PathBuf], renaming: Option<&Renaming>) -> Result<bool> {
    let mut members = Vec::with_capacity(objects.len());
    for object in objects {
        let tables = Tables::read(object)?;
        let slim = match &tables {
            Some(tables) => tables.defined()?.iter().any(|symbol| symbol == GCC_SLIM_LTO),
            None => true,
        };
        let Some(tables) = tables.filter(|_| !slim) else {
            return match renaming {
                Some(_) => Err(rename::not_elf(object)),
                None => Ok(false),
            };
        };
        let patch = renaming.map(|renaming| tables.rename(renaming)).transpose()?.unwrap_or_default();
        let name = object.file_name().map_or_else(String::new, |name| name.to_string_lossy().into_owned());
        members.push(Member { path: object.clone(), name, size: tables.size, symbols: tables.defined_after(renaming)?, patch });
    }
    write_library(path, &members)?;
    Ok(true)
}

/// A 60-byte member header, deterministic as `ar D` writes it: zero date,
/// owner and group, and `mode`; without one (the long-name table), only a size.
fn header(name: &str, mode: Option<&str>, size: u64) -> String {
    match mode {
        Some(mode) => format!("{name:<16}{:<12}{:<6}{:<6}{mode:<8}{size:<10}`\n", 0, 0, 0),
        None => format!("{name:<48}{size:<10}`\n"),
    }
}

/// Members are 2-byte aligned.
fn padded(size: u64) -> Option<u64> {
    size.checked_add(size % 2)
}

fn write_library(path: &Path, members: &[Member]) -> Result<()> {
    let too_large = || {
        Error::new(ErrorKind::Compile, format!("the library `{}` would exceed 4 GiB, the limit of the ar index", path.display()))
            .help("split the model, or build it for a target whose weights are smaller")
    };
    // Names longer than 15 bytes go in the `//` table; a member is named by its offset there.
    let mut long_names = Vec::new();
    let mut header_names = Vec::with_capacity(members.len());
    for member in members {
        if member.name.len() <= 15 {
            header_names.push(format!("{}/", member.name));
        } else {
            header_names.push(format!("/{}", long_names.len()));
            long_names.extend_from_slice(member.name.as_bytes());
            long_names.extend_from_slice(b"/\n");
        }
    }
    if long_names.len() % 2 == 1 {
        long_names.push(b'\n');
    }
    // The index: a count, each symbol's member offset, the NUL-terminated names (big-endian u32s).
    let symbol_count = members.iter().map(|m| m.symbols.len() as u64).sum::<u64>();
    let names_len = members.iter().flat_map(|m| &m.symbols).map(|s| s.len() as u64 + 1).sum::<u64>();
    let index_len = symbol_count.checked_mul(4).and_then(|len| len.checked_add(4)?.checked_add(names_len)).ok_or_else(too_large)?;
    let mut offset = padded(index_len).and_then(|len| len.checked_add(8 + 60)).ok_or_else(too_large)?;
    if !long_names.is_empty() {
        offset = offset.checked_add(60 + long_names.len() as u64).ok_or_else(too_large)?;
    }
    let mut offsets = Vec::with_capacity(members.len());
    for member in members {
        offsets.push(u32::try_from(offset).map_err(|_| too_large())?);
        offset = member.archived_size().and_then(padded).and_then(|len| offset.checked_add(60 + len)).ok_or_else(too_large)?;
    }
    // The last member ends within reach of the index too: every size fits the header's 10 digits.
    u32::try_from(offset).map_err(|_| too_large())?;

    let io = |e| Error::io("write", path, e);
    let mut out = BufWriter::new(File::create(path).map_err(io)?);
    let mut index = Vec::with_capacity(usize::try_from(index_len).map_err(|_| too_large())?);
    index.extend_from_slice(&u32::try_from(symbol_count).map_err(|_| too_large())?.to_be_bytes());
    for (member, offset) in members.iter().zip(&offsets) {
        for _ in &member.symbols {
            index.extend_from_slice(&offset.to_be_bytes());
        }
    }
    for symbol in members.iter().flat_map(|m| &m.symbols) {
        index.extend_from_slice(symbol);
        index.push(0);
    }
    // Both tables count their padding in their size, as binutils writes them.
    if index.len() % 2 == 1 {
        index.push(0);
    }
    out.write_all(b"!<arch>\n").map_err(io)?;
    out.write_all(header("/", Some("0"), index.len() as u64).as_bytes()).map_err(io)?;
    out.write_all(&index).map_err(io)?;
    if !long_names.is_empty() {
        out.write_all(header("//", None, long_names.len() as u64).as_bytes()).map_err(io)?;
        out.write_all(&long_names).map_err(io)?;
    }
    for (member, name) in members.iter().zip(&header_names) {
        let size = member.archived_size().ok_or_else(too_large)?;
        out.write_all(header(name, Some("644"), size).as_bytes()).map_err(io)?;
        member.patch.copy(&member.path, member.size, &mut out).map_err(|error| match error.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                Error::new(ErrorKind::Compile, format!("`{}` changed while it was archived", member.path.display()))
                    .help("something else writes this build's OUT_DIR at the same time: build again")
            }
            _ => io(error),
        })?;
        if size % 2 == 1 {
            out.write_all(b"\n").map_err(io)?;
        }
    }
    out.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{run_ok as run, scratch};
    use std::process::Command;

    /// The library is byte for byte what binutils' `ar crsD` writes from the
    /// same objects (global, weak and common symbols, long and short member
    /// names, odd sizes), and binutils reads it back.
    #[test]
    fn binutils_reads_what_ar_would_write() {
        let dir = scratch("ar");
        let sources = [
            ("a.c", "int shared_counter; static int hidden; int weak_hook(void) __attribute__((weak)); int weak_hook(void) { return hidden; }\nextern int used_elsewhere(void); int calls(void) { return used_elsewhere(); }\n"),
            ("a_member_with_a_long_name.c", "const char greeting[] = \"hi\"; double scale(double x) { return 2 * x; }\n"),
            ("empty.c", "typedef int nothing_defined;\n"),
        ];
        let mut objects = Vec::new();
        for (name, text) in sources {
            let source = dir.join(name);
            std::fs::write(&source, text).unwrap();
            let object = source.with_extension("o");
            run(Command::new("cc").arg("-fcommon").arg("-c").arg(&source).arg("-o").arg(&object));
            objects.push(object);
        }
        let ours = dir.join("libours.a");
        let theirs = dir.join("libtheirs.a");
        assert!(write_elf_library(&ours, &objects, None).unwrap());
        run(Command::new("ar").arg("crsD").arg(&theirs).args(&objects));
        assert!(std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(), "not the bytes `ar crsD` writes");
        let listing = |library: &Path| run(Command::new("nm").arg("--print-armap").arg(library));
        let armap = listing(&ours);
        assert!(armap.contains("shared_counter in a.o") && armap.contains("weak_hook in a.o"), "{armap}");
        assert!(armap.contains("scale in a_member_with_a_long_name.o") && !armap.contains("used_elsewhere in"), "{armap}");
        assert_eq!(armap, listing(&theirs).replace(&theirs.display().to_string(), &ours.display().to_string()));
        assert_eq!(run(Command::new("ar").arg("t").arg(&ours)), "a.o\na_member_with_a_long_name.o\nempty.o\n");
        // Members are byte-for-byte the objects.
        let extract = dir.join("extract");
        std::fs::create_dir_all(&extract).unwrap();
        run(Command::new("ar").arg("x").arg(&ours).current_dir(&extract));
        for object in &objects {
            assert_eq!(std::fs::read(extract.join(object.file_name().unwrap())).unwrap(), std::fs::read(object).unwrap());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file that is not ELF, or GCC's LTO bytecode, is left to the
    /// archiver; one whose tables lie outside it is refused, not read past its end.
    #[test]
    fn other_formats_and_truncated_objects() {
        let dir = scratch("not-elf");
        let macho = dir.join("macho.o");
        std::fs::write(&macho, [0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]).unwrap();
        let library = dir.join("libx.a");
        assert!(!write_elf_library(&library, &[macho], None).unwrap());
        assert!(!library.exists());
        let source = dir.join("lto.c");
        std::fs::write(&source, "int visible_only_to_the_plugin(int x) { return x + 1; }\n").unwrap();
        let slim = dir.join("lto.o");
        run(Command::new("cc").arg("-flto").arg("-c").arg(&source).arg("-o").arg(&slim));
        assert!(!write_elf_library(&library, &[slim], None).unwrap());
        assert!(!library.exists());
        let truncated = dir.join("truncated.o");
        let mut header = vec![0u8; 64];
        header[..6].copy_from_slice(b"\x7fELF\x02\x01");
        header[0x28..0x30].copy_from_slice(&1_000_000u64.to_le_bytes());
        header[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        header[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        std::fs::write(&truncated, &header).unwrap();
        let error = write_elf_library(&library, &[truncated], None).unwrap_err();
        assert!(error.to_string().contains("outside the file"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
