//! Makes a crate's symbols its own: every global symbol its libraries define,
//! and every reference to one, is renamed `<tag><name>` in the ELF objects as
//! they are archived, so two crates building modules of the same name (or
//! both carrying mlf-build's support runtime) link into one program. The
//! object on disk is untouched; the library gets it with its symbol table
//! rewritten and a longer string table appended (`Patch`).

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;

use object::ReadCache;

use crate::error::{Error, ErrorKind, Result};
use crate::ident;
use crate::objects::elf::{self, Header};
use crate::objects::patch::Patch;

/// `STB_GLOBAL`, `STB_WEAK` and `STB_GNU_UNIQUE`: the bindings another object can link to.
pub(crate) const LINKED_BINDINGS: [u8; 3] = [1, 2, 10];

/// A library's privacy: the crate's tag, and the names other libraries of the
/// same crate define that this library's objects may call (renamed too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Private {
    pub tag: String,
    pub imports: Vec<String>,
}

/// What one library's objects rename: `names` become `<tag><name>`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Renaming {
    pub tag: String,
    pub names: BTreeSet<Vec<u8>>,
}

/// The symbol prefix of the crate `package` at `version`: both with every
/// byte that is not a letter or digit as `_`, then `_` (`my-model` 0.2.1:
/// `my_model_0_2_1_`). Independent of where the crate is built; a crate's
/// name starts with a letter, so the prefixed names are C identifiers.
pub(crate) fn crate_tag(package: &str, version: &str) -> String {
    let clean = |text: &str| -> String { text.bytes().map(|b| if ident::is_identifier_byte(b) { char::from(b) } else { '_' }).collect() };
    format!("{}_{}_", clean(package), clean(version))
}

impl Private {
    /// Everything the library's `objects` define, with the imports, as one
    /// renaming. An object that is not ELF cannot be renamed: an error.
    pub fn renaming(&self, objects: &[impl AsRef<Path>]) -> Result<Renaming> {
        let mut names: BTreeSet<Vec<u8>> = self.imports.iter().map(|name| name.as_bytes().to_vec()).collect();
        for object in objects {
            let object = object.as_ref();
            let tables = Tables::read(object)?.ok_or_else(|| not_elf(object))?;
            names.extend(tables.defined()?);
        }
        Ok(Renaming { tag: self.tag.clone(), names })
    }

    /// The text a library records, so one archived under another privacy is rebuilt.
    pub fn record(private: Option<&Private>) -> String {
        private.map_or_else(|| "public\n".to_string(), |private| format!("tag {}\nimports {:?}\n", private.tag, private.imports))
    }
}

/// The error for an object whose symbols cannot be renamed.
pub(crate) fn not_elf(object: &Path) -> Error {
    Error::new(ErrorKind::Compile, "the object is not ELF, or carries its symbols only for a linker plugin (GCC's slim LTO), so its symbols cannot be made the crate's own")
        .in_file(object.display().to_string())
        .help("compile with -ffat-lto-objects when using -flto (CFLAGS), or pass the archive's objects as ELF")
}

/// An object's symbol table and its string table, as read from the file.
struct Table {
    entries: Vec<u8>,
    entries_offset: u64,
    names: Vec<u8>,
    /// The index of the string table's section.
    names_section: u64,
}

/// An ELF object's header, size and symbol table, read from its file
/// without reading the rest (its code and weights).
pub(crate) struct Tables {
    header: Header,
    pub size: u64,
    table: Option<Table>,
}

impl Tables {
    /// The tables of the object at `path`; `None` when it is not ELF.
    pub fn read(path: &Path) -> Result<Option<Tables>> {
        let io = |e| Error::io("read", path, e);
        let file = File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        // Only the ranges asked for are read (and kept, until it is dropped).
        let object = ReadCache::new(file);
        let Some(header) = Header::read(&object) else { return Ok(None) };
        let malformed = |what: &str| {
            Error::new(ErrorKind::Compile, format!("the object's tables are not read: {what}"))
                .in_file(path.display().to_string())
                .help("a prebuilt object (codegen/host/lib) is damaged, truncated or crafted, and its machine code cannot be rebuilt from the archive: pass the archive's original objects")
        };
        let sections = header.sections(&object).map_err(|refused| match refused {
            elf::Malformed::Limit(what) => Error::new(ErrorKind::Compile, format!("the object's tables are not read: {what}"))
                .in_file(path.display().to_string())
                .help("a prebuilt object (codegen/host/lib) this large is not one TVM writes: pass the archive's original objects"),
            elf::Malformed::Layout(what) => malformed(&what),
        })?;
        // An object has one symbol table: each is read whole, so many over the same bytes would exhaust memory.
        let mut symbol_tables = sections.iter().filter(|section| section.kind == elf::SHT_SYMTAB);
        let (symtab, second) = (symbol_tables.next(), symbol_tables.next());
        if second.is_some() {
            return Err(malformed("it has more than one symbol table"));
        }
        let table = match symtab {
            Some(symtab) => {
                let strtab =
                    sections.get(symtab.link as usize).ok_or_else(|| malformed("its symbol table links to a section it does not have"))?;
                let outside = || malformed("its symbol or string table lies outside the file");
                Some(Table {
                    entries: symtab.bytes(&object).ok_or_else(outside)?.to_vec(),
                    entries_offset: symtab.offset,
                    names: strtab.bytes(&object).ok_or_else(outside)?.to_vec(),
                    names_section: u64::from(symtab.link),
                })
            }
            None => None,
        };
        Ok(Some(Tables { header, size, table }))
    }

    /// The names of the linkable symbols the object defines, each once per definition.
    pub fn defined(&self) -> Result<Vec<Vec<u8>>> {
        let mut names = Vec::new();
        let Some(table) = &self.table else { return Ok(names) };
        for symbol in self.header.symbols(&table.entries) {
            if symbol.section == 0 || !LINKED_BINDINGS.contains(&symbol.binding) {
                continue;
            }
            let name = elf::string(&table.names, symbol.name).ok_or_else(bad_name)?;
            if !name.is_empty() {
                names.push(name.to_vec());
            }
        }
        Ok(names)
    }

    /// The defined names as they are after `renaming`.
    pub fn defined_after(&self, renaming: Option<&Renaming>) -> Result<Vec<Vec<u8>>> {
        let mut names = self.defined()?;
        if let Some(renaming) = renaming {
            for name in names.iter_mut().filter(|name| renaming.names.contains(*name)) {
                name.splice(0..0, renaming.tag.bytes());
            }
        }
        Ok(names)
    }

    /// The patch renaming, in the symbol table, each linkable symbol (defined
    /// or not) named in `renaming`: the old string table is kept whole (section
    /// names may share it) with the new names after it, moved to the file's end.
    pub fn rename(&self, renaming: &Renaming) -> Result<Patch> {
        let too_large = || {
            Error::new(ErrorKind::Compile, "an object's string table would exceed what ELF can address once its symbols are renamed")
                .help("the object names more symbols than its ELF class can address: split the model's sources, or report this")
        };
        let Some(table) = &self.table else { return Ok(Patch::default()) };
        let entry = self.header.symbol_len();
        let mut entries = table.entries.clone();
        let mut names = table.names.clone();
        let mut renamed = false;
        for (index, symbol) in self.header.symbols(&table.entries).enumerate() {
            if !LINKED_BINDINGS.contains(&symbol.binding) {
                continue;
            }
            let name = elf::string(&table.names, symbol.name).ok_or_else(bad_name)?;
            if name.is_empty() || !renaming.names.contains(name) {
                continue;
            }
            let offset = u64::try_from(names.len()).map_err(|_| too_large())?;
            names.extend_from_slice(renaming.tag.as_bytes());
            names.extend_from_slice(name);
            names.push(0);
            let at = index.checked_mul(entry).ok_or_else(too_large)?;
            self.header.write(&mut entries, at, 4, offset).ok_or_else(too_large)?;
            renamed = true;
        }
        if !renamed {
            return Ok(Patch::default());
        }
        let (_, offset_field, size_field, width) = self.header.section_fields(table.names_section).ok_or_else(too_large)?;
        let field = |value: u64| self.header.field(width, value).ok_or_else(too_large);
        let edits = vec![
            (table.entries_offset, entries),
            (u64::try_from(offset_field).map_err(|_| too_large())?, field(self.size)?),
            (u64::try_from(size_field).map_err(|_| too_large())?, field(u64::try_from(names.len()).map_err(|_| too_large())?)?),
        ];
        Patch::new(edits, names, self.size).ok_or_else(|| {
            Error::new(ErrorKind::Compile, "an object's symbol table overlaps its section table")
                .help("pass the archive's objects as the compiler wrote them")
        })
    }
}

fn bad_name() -> Error {
    Error::new(ErrorKind::Compile, "a symbol's name lies outside its string table")
        .help("pass the archive's objects as the compiler wrote them")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{run_ok as run, scratch};
    use std::process::Command;

    /// The tag is a C identifier prefix made from the name and version alone.
    #[test]
    fn tags_are_identifiers_from_name_and_version() {
        assert_eq!(crate_tag("my-model", "0.2.1"), "my_model_0_2_1_");
        assert_eq!(crate_tag("kws", "1.0.0-rc.1+build"), "kws_1_0_0_rc_1_build_");
    }

    /// Renamed by the patch, an object's definitions and the references to
    /// them carry the tag; undefined outside names, locals and section names
    /// stay; the linker links the renamed objects and the program runs.
    #[test]
    fn renamed_objects_link_and_run() {
        let dir = scratch("rename-symbols");
        let sources = [
            ("lib.c", "static int hidden = 2; int counter; int scale(int x) { counter++; return x * hidden; }\nint weak_hook(void) __attribute__((weak)); int weak_hook(void) { return 1; }\n"),
            ("use.c", "#include <stdio.h>\nint scale(int); extern int counter; int weak_hook(void);\nint run(void) { int scaled = scale(21); printf(\"%d\\n\", scaled + weak_hook() + counter); return 0; }\n"),
        ];
        let mut objects = Vec::new();
        for (name, text) in sources {
            let source = dir.join(name);
            std::fs::write(&source, text).unwrap();
            let object = source.with_extension("o");
            run(Command::new("cc").args(["-c", "-ffunction-sections", "-fno-common"]).arg(&source).arg("-o").arg(&object));
            objects.push(object);
        }
        let private = Private { tag: "crate_1_0_".to_string(), imports: Vec::new() };
        let renaming = private.renaming(&objects).unwrap();
        let names: Vec<&[u8]> = renaming.names.iter().map(Vec::as_slice).collect();
        assert_eq!(names, [&b"counter"[..], b"run", b"scale", b"weak_hook"]);
        let mut patched = Vec::new();
        for object in &objects {
            let tables = Tables::read(object).unwrap().unwrap();
            let renamed = object.with_extension("renamed.o");
            tables.rename(&renaming).unwrap().copy(object, tables.size, &mut File::create(&renamed).unwrap()).unwrap();
            patched.push(renamed);
        }
        let listing = run(Command::new("nm").args(&patched));
        for name in ["T crate_1_0_scale", "B crate_1_0_counter", "W crate_1_0_weak_hook", "U crate_1_0_scale", "U printf", "d hidden"] {
            assert!(listing.contains(name), "{name}: {listing}");
        }
        assert!(!listing.lines().any(|line| line.ends_with(" scale") || line.ends_with(" run")), "{listing}");
        let sections = run(Command::new("readelf").arg("-S").arg(&patched[0]));
        assert!(sections.contains(".text.scale"), "section names changed: {sections}");
        let main = dir.join("main.c");
        std::fs::write(&main, "int crate_1_0_run(void); int main(void) { return crate_1_0_run(); }\n").unwrap();
        let program = dir.join("program");
        run(Command::new("cc").arg(&main).args(&patched).arg("-o").arg(&program));
        assert_eq!(run(&mut Command::new(&program)), "44\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A 32-bit object (Arm) is renamed as well as the host's 64-bit ones.
    #[test]
    fn renames_32_bit_objects() {
        if Command::new("arm-none-eabi-gcc").arg("--version").output().is_err() {
            eprintln!("SKIP renames_32_bit_objects: arm-none-eabi-gcc is not installed");
            return;
        }
        let dir = scratch("rename-symbols-32");
        let source = dir.join("a.c");
        std::fs::write(&source, "extern int outside(int); int inside(int x) { return outside(x) + 1; }\n").unwrap();
        let object = dir.join("a.o");
        run(Command::new("arm-none-eabi-gcc").args(["-mcpu=cortex-m4", "-mthumb", "-c"]).arg(&source).arg("-o").arg(&object));
        let renaming = Private { tag: "t_".to_string(), imports: vec!["missing".to_string()] }.renaming(&[&object]).unwrap();
        let tables = Tables::read(&object).unwrap().unwrap();
        tables.rename(&renaming).unwrap().apply(&object, tables.size).unwrap();
        let listing = run(Command::new("arm-none-eabi-nm").arg(&object));
        assert!(listing.contains("T t_inside") && listing.contains("U outside"), "{listing}");
        run(Command::new("arm-none-eabi-objdump").arg("-dr").arg(&object));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
