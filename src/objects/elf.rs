//! An object's header, sections, symbols and relocations, read through the
//! `object` crate's ELF types over bytes the caller read (only the tables, for
//! the symbol renamer and the footprint; the whole object, to analyse it).
//! `object`'s own tables check less than a prebuilt object needs here (the
//! section limit before any section is read, one symbol table, each
//! relocation's symbol in range): [`validate`] adds that.

use object::elf::{FileHeader32, FileHeader64, Rel32, Rel64, Rela32, Rela64, SectionHeader32, SectionHeader64, Sym32, Sym64};
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::{elf, pod, Endian, Endianness, ReadRef};

pub(crate) use object::elf::{SHT_NOBITS, SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_SYMTAB, STT_FUNC, STT_SECTION};
/// Section flags (`sh_flags` is 64 bits wide in ELF64): writable, occupies memory at run time, executable.
pub(crate) const SHF_WRITE: u64 = elf::SHF_WRITE as u64;
pub(crate) const SHF_ALLOC: u64 = elf::SHF_ALLOC as u64;
pub(crate) const SHF_EXECINSTR: u64 = elf::SHF_EXECINSTR as u64;

/// The ELF file header's fields that say how to read the rest.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    is_64: bool,
    endian: Endianness,
    /// `e_machine`: the architecture.
    pub machine: u16,
    /// Where the section header table starts, its entry size and count (`e_shnum`).
    pub section_table: u64,
    pub section_entry: u64,
    pub section_count: u64,
    /// `e_shstrndx`: the section holding the sections' names (`SHN_XINDEX`
    /// when the real index is in the first section's `sh_link`).
    pub names_section: u64,
}

/// One section header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Section {
    /// `sh_name`: offset of the name in the section name string table.
    pub name: u32,
    pub kind: u32,
    pub flags: u64,
    pub offset: u64,
    pub size: u64,
    /// The linked section: a symbol table's string table.
    pub link: u32,
    /// `sh_info`: a relocation section's target section.
    pub info: u32,
}

/// One symbol table entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Symbol {
    /// Offset of the name in the linked string table.
    pub name: u32,
    /// `st_value`: in a relocatable object, the offset in its section.
    pub value: u64,
    /// `STT_*`.
    pub kind: u8,
    /// `STB_*`.
    pub binding: u8,
    /// `st_shndx`: 0 (`SHN_UNDEF`) for a symbol the object only uses.
    pub section: u16,
    /// `st_size`: the bytes a data object takes.
    pub size: u64,
}

impl Section {
    /// The section's bytes in `object` (a whole object's bytes, or a file):
    /// none for `SHT_NOBITS`.
    pub fn bytes<'d>(&self, object: impl ReadRef<'d>) -> Option<&'d [u8]> {
        if self.kind == SHT_NOBITS {
            return Some(&[]);
        }
        object.read_bytes_at(self.offset, self.size).ok()
    }
}

/// Why an object's tables are not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Malformed {
    /// It declares more than a limit allows.
    Limit(String),
    /// Its tables contradict the file or each other.
    Layout(String),
}

impl Malformed {
    pub fn what(&self) -> &str {
        match self {
            Malformed::Limit(what) | Malformed::Layout(what) => what,
        }
    }
}

/// Sections an object may declare: many times what a large model's objects hold
/// (one per function and per constant array), checked before any is read.
pub(crate) const MAX_SECTIONS: u64 = 1 << 17;

/// Checks a prebuilt object's tables before it is linked: its sections as
/// [`Header::checked_sections`] checks them, and every relocation naming a
/// symbol inside its symbol table. `None` for bytes that are not ELF.
pub(crate) fn validate(object: &[u8]) -> Option<Result<(Header, Vec<Section>), Malformed>> {
    let header = Header::parse(object)?;
    Some(header.checked_sections(object).and_then(|sections| {
        for (index, section) in sections.iter().enumerate() {
            let explicit_addend = match section.kind {
                SHT_RELA => true,
                SHT_REL => false,
                _ => continue,
            };
            // In bounds: checked with the sections.
            let symbols = &sections[section.link as usize];
            let count = if symbols.kind == SHT_SYMTAB { symbols.size / header.symbol_len() as u64 } else { 0 };
            let relocations = section.bytes(object).unwrap_or_default();
            if let Some(past) = header.relocations(relocations, explicit_addend).find(|relocation| u64::from(relocation.symbol) >= count) {
                return Err(Malformed::Layout(format!(
                    "a relocation of section {index} names symbol {}, past the {count} of its symbol table",
                    past.symbol
                )));
            }
        }
        Ok((header, sections))
    }))
}

/// The NUL-terminated string at `offset` of a string table.
pub(crate) fn string(table: &[u8], offset: u32) -> Option<&[u8]> {
    let rest = table.get(usize::try_from(offset).ok()?..)?;
    Some(&rest[..rest.iter().position(|&b| b == 0)?])
}

/// The names of the global (not weak, not common) symbols an ELF object
/// defines; none for bytes [`Header::checked_sections`] does not read.
pub(crate) fn strong_definitions(bytes: &[u8]) -> Vec<String> {
    const STB_GLOBAL: u8 = 1;
    const STB_GNU_UNIQUE: u8 = 10;
    const SHN_LORESERVE: u16 = 0xff00;
    let Some(header) = Header::parse(bytes) else { return Vec::new() };
    let Ok(sections) = header.checked_sections(bytes) else { return Vec::new() };
    let Some(symtab) = sections.iter().find(|s| s.kind == SHT_SYMTAB) else { return Vec::new() };
    let names = usize::try_from(symtab.link).ok().and_then(|link| sections.get(link)?.bytes(bytes));
    let (Some(table), Some(names)) = (symtab.bytes(bytes), names) else { return Vec::new() };
    header
        .symbols(table)
        .filter(|symbol| [STB_GLOBAL, STB_GNU_UNIQUE].contains(&symbol.binding) && symbol.section != 0 && symbol.section < SHN_LORESERVE)
        .filter_map(|symbol| Some(String::from_utf8_lossy(string(names, symbol.name)?).into_owned()))
        .collect()
}

/// The bytes of the data objects an ELF object defines (local ones too: the
/// `static`s of its C) whose names `wanted` accepts, read from a file's
/// section headers and symbol table only; `None` when the object is not ELF.
pub(crate) fn data_objects_size<'d>(object: impl ReadRef<'d>, wanted: impl Fn(&[u8]) -> bool) -> Option<u64> {
    let header = Header::read(object)?;
    let sections = header.sections(object).ok()?;
    let Some(symtab) = sections.iter().find(|s| s.kind == SHT_SYMTAB) else { return Some(0) };
    let names = sections.get(usize::try_from(symtab.link).ok()?)?.bytes(object)?;
    let table = symtab.bytes(object)?;
    let size = header
        .symbols(table)
        .filter(|symbol| symbol.kind == elf::STT_OBJECT && symbol.section != 0 && string(names, symbol.name).is_some_and(&wanted))
        .fold(0, |sum: u64, symbol| sum.saturating_add(symbol.size));
    Some(size)
}

/// One relocation: where in its section, which symbol, the machine's type and the addend (0 for `SHT_REL`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Relocation {
    pub offset: u64,
    pub symbol: u32,
    pub kind: u32,
    pub addend: i64,
}

impl Header {
    /// The bytes [`Header::parse`] needs at most: the 64-bit header's size.
    pub const LEN: usize = 64;

    /// Whether the object is ELF64 (else ELF32).
    pub fn is_64(&self) -> bool {
        self.is_64
    }

    /// The header at the start of `bytes`; `None` when they are not ELF.
    /// Not `FileHeader::parse`, which also wants `e_ident`'s version byte:
    /// nothing here depends on it.
    pub fn parse(bytes: &[u8]) -> Option<Header> {
        // The shorter header starts both classes: its `e_ident` says which this is.
        let ident = bytes.read_at::<FileHeader32<Endianness>>(0).ok()?.e_ident();
        if ident.magic != elf::ELFMAG {
            return None;
        }
        let endian = match ident.data {
            elf::ELFDATA2LSB => Endianness::Little,
            elf::ELFDATA2MSB => Endianness::Big,
            _ => return None,
        };
        match ident.class {
            elf::ELFCLASS32 => Some(Header::of(bytes.read_at::<FileHeader32<Endianness>>(0).ok()?, false, endian)),
            elf::ELFCLASS64 => Some(Header::of(bytes.read_at::<FileHeader64<Endianness>>(0).ok()?, true, endian)),
            _ => None,
        }
    }

    /// The header of `object` (its bytes, or a file); `None` when it is not ELF.
    pub fn read<'d>(object: impl ReadRef<'d>) -> Option<Header> {
        let len = object.len().ok()?;
        Header::parse(object.read_bytes_at(0, len.min(Header::LEN as u64)).ok()?)
    }

    fn of(header: &impl FileHeader<Endian = Endianness>, is_64: bool, endian: Endianness) -> Header {
        Header {
            is_64,
            endian,
            machine: header.e_machine(endian),
            section_table: header.e_shoff(endian).into(),
            section_entry: header.e_shentsize(endian).into(),
            section_count: header.e_shnum(endian).into(),
            names_section: header.e_shstrndx(endian).into(),
        }
    }

    /// Bytes of one symbol table entry (`Elf32_Sym` or `Elf64_Sym`).
    pub fn symbol_len(&self) -> usize {
        if self.is_64 {
            size_of::<Sym64<Endianness>>()
        } else {
            size_of::<Sym32<Endianness>>()
        }
    }

    /// Bytes of an address-sized field.
    fn word(&self) -> usize {
        if self.is_64 {
            8
        } else {
            4
        }
    }

    /// Writes `value` as the unsigned `width`-byte field at `at`, in the file's
    /// byte order; `None` when it does not fit the field or `bytes`.
    pub fn write(&self, bytes: &mut [u8], at: usize, width: usize, value: u64) -> Option<()> {
        if width < 8 && value >> (width * 8) != 0 {
            return None;
        }
        let field = bytes.get_mut(at..at.checked_add(width)?)?;
        for (i, byte) in field.iter_mut().enumerate() {
            let shift = if self.endian.is_little_endian() { i } else { width - 1 - i } * 8;
            *byte = (value >> shift) as u8;
        }
        Some(())
    }

    /// `value` as an unsigned `width`-byte field in the file's byte order;
    /// `None` when it does not fit.
    pub fn field(&self, width: usize, value: u64) -> Option<Vec<u8>> {
        let mut bytes = vec![0; width];
        self.write(&mut bytes, 0, width, value)?;
        Some(bytes)
    }

    /// Where section `index`'s name, file offset and size fields are, from
    /// the start of the file, and the width of the last two.
    pub fn section_fields(&self, index: u64) -> Option<(usize, usize, usize, usize)> {
        let at = usize::try_from(self.section_table.checked_add(index.checked_mul(self.section_entry)?)?).ok()?;
        let (offset, size) = if self.is_64 { (24, 32) } else { (16, 20) };
        Some((at, at.checked_add(offset)?, at.checked_add(size)?, self.word()))
    }

    /// Bytes of `count` section table entries.
    pub fn section_table_len(&self, count: u64) -> Option<u64> {
        count.checked_mul(self.section_entry)
    }

    /// The number of sections, given the section table's first entry: an
    /// object with more than `e_shnum` can hold stores the count in its size.
    pub fn section_count_in(&self, first_entry: &[u8]) -> Option<u64> {
        match self.section_count {
            0 if self.section_table != 0 => Some(self.section(first_entry, 0)?.size),
            count => Some(count),
        }
    }

    /// Section `index` of the section table `table` (its bytes from its start).
    pub fn section(&self, table: &[u8], index: u64) -> Option<Section> {
        let at = index.checked_mul(self.section_entry)?;
        Some(if self.is_64 {
            self.section_of(table.read_at::<SectionHeader64<Endianness>>(at).ok()?)
        } else {
            self.section_of(table.read_at::<SectionHeader32<Endianness>>(at).ok()?)
        })
    }

    fn section_of(&self, section: &impl SectionHeader<Endian = Endianness>) -> Section {
        let endian = self.endian;
        Section {
            name: section.sh_name(endian),
            kind: section.sh_type(endian),
            flags: section.sh_flags(endian).into(),
            offset: section.sh_offset(endian).into(),
            size: section.sh_size(endian).into(),
            link: section.sh_link(endian),
            info: section.sh_info(endian),
        }
    }

    /// The symbols of a symbol table section's bytes (entry 0, the null symbol, included).
    pub fn symbols<'a>(&'a self, table: &'a [u8]) -> impl Iterator<Item = Symbol> + 'a {
        table.chunks_exact(self.symbol_len()).filter_map(move |entry| {
            Some(if self.is_64 {
                self.symbol_of(pod::from_bytes::<Sym64<Endianness>>(entry).ok()?.0)
            } else {
                self.symbol_of(pod::from_bytes::<Sym32<Endianness>>(entry).ok()?.0)
            })
        })
    }

    fn symbol_of(&self, symbol: &impl Sym<Endian = Endianness>) -> Symbol {
        Symbol {
            name: symbol.st_name(self.endian),
            value: symbol.st_value(self.endian).into(),
            kind: symbol.st_type(),
            binding: symbol.st_bind(),
            section: symbol.st_shndx(self.endian),
            size: symbol.st_size(self.endian).into(),
        }
    }

    /// Every section header of an object, read from `object` (its bytes, or
    /// a file): entries of the size the class says, and no more than
    /// [`MAX_SECTIONS`], checked before the table is read; the table inside the file.
    pub fn sections<'d>(&self, object: impl ReadRef<'d>) -> Result<Vec<Section>, Malformed> {
        let layout = |what: String| Err(Malformed::Layout(what));
        let expected_entry = if self.is_64 { 64 } else { 40 };
        if self.section_entry != expected_entry {
            return layout(format!("its section headers are {} bytes each, not the {expected_entry} of its class", self.section_entry));
        }
        let file_len = object.len().unwrap_or(0);
        let Ok(first) = object.read_bytes_at(self.section_table, self.section_entry) else {
            return layout(format!("its section table (at byte {}) lies outside the file ({file_len} bytes)", self.section_table));
        };
        let count = self.section_count_in(first).ok_or_else(|| Malformed::Layout("its first section header is cut short".to_string()))?;
        if count > MAX_SECTIONS {
            return Err(Malformed::Limit(format!("it declares {count} sections, more than the limit of {MAX_SECTIONS}")));
        }
        let table = self.section_table_len(count).and_then(|len| object.read_bytes_at(self.section_table, len).ok());
        let Some(table) = table else {
            return layout(format!("its {count} section headers run past the end of the file ({file_len} bytes)"));
        };
        (0..count)
            .map(|index| self.section(table, index))
            .collect::<Option<_>>()
            .ok_or_else(|| Malformed::Layout("a section header is cut short".to_string()))
    }

    /// Every section header of a whole object's bytes, checked before any is
    /// kept: as [`Header::sections`] reads them, then each section's bytes
    /// inside the file and none overlapping another, the ELF header or the
    /// table; one symbol table at most, its string table and every relocation
    /// section's symbol table and target naming sections that exist.
    pub fn checked_sections(&self, object: &[u8]) -> Result<Vec<Section>, Malformed> {
        let layout = |what: String| Err(Malformed::Layout(what));
        let sections = self.sections(object)?;
        let count = sections.len();
        // Byte ranges the file holds: the ELF header, the section table and each section's bytes.
        let header_len = if self.is_64 { 64 } else { 52 };
        let mut ranges = vec![
            (0, header_len, "the ELF header".to_string()),
            (self.section_table, self.section_table + self.section_entry * count as u64, "the section table".to_string()),
        ];
        for (index, section) in sections.iter().enumerate() {
            if section.kind == SHT_NOBITS || section.kind == elf::SHT_NULL || section.size == 0 {
                continue;
            }
            let end = section.offset.checked_add(section.size).filter(|&end| end <= object.len() as u64);
            let Some(end) = end else {
                return layout(format!(
                    "section {index} ({} bytes at byte {}) runs past the end of the file ({} bytes)",
                    section.size,
                    section.offset,
                    object.len()
                ));
            };
            ranges.push((section.offset, end, format!("section {index}")));
        }
        ranges.sort_unstable_by_key(|(start, end, _)| (*start, *end));
        for pair in ranges.windows(2) {
            let ((_, end, first), (start, _, second)) = (&pair[0], &pair[1]);
            if start < end {
                return layout(format!("{second} overlaps {first}"));
            }
        }
        let in_table = |index: u32| usize::try_from(index).is_ok_and(|index| index < sections.len());
        let mut symbol_tables = sections.iter().enumerate().filter(|(_, section)| section.kind == SHT_SYMTAB);
        if let (Some(_), Some((second, _))) = (symbol_tables.next(), symbol_tables.next()) {
            return layout(format!("section {second} is a second symbol table (an object has one)"));
        }
        for (index, section) in sections.iter().enumerate() {
            let linked = match section.kind {
                SHT_SYMTAB => in_table(section.link),
                SHT_REL | SHT_RELA => in_table(section.link) && in_table(section.info),
                _ => true,
            };
            if !linked {
                return layout(format!(
                    "section {index} links to section {} or {}, past the {count} the object has",
                    section.link, section.info
                ));
            }
        }
        Ok(sections)
    }

    /// The index in `sections` of the section holding the sections' names.
    pub fn names_index(&self, sections: &[Section]) -> Option<usize> {
        match self.names_section {
            index if index == u64::from(elf::SHN_XINDEX) => usize::try_from(sections.first()?.link).ok(),
            index => usize::try_from(index).ok(),
        }
    }
    /// The relocations of a `SHT_REL` (`explicit_addend` false) or `SHT_RELA` section's bytes.
    pub fn relocations<'a>(&'a self, table: &'a [u8], explicit_addend: bool) -> impl Iterator<Item = Relocation> + 'a {
        let entry = match (self.is_64, explicit_addend) {
            (false, false) => size_of::<Rel32<Endianness>>(),
            (false, true) => size_of::<Rela32<Endianness>>(),
            (true, false) => size_of::<Rel64<Endianness>>(),
            (true, true) => size_of::<Rela64<Endianness>>(),
        };
        let endian = self.endian;
        table.chunks_exact(entry).filter_map(move |entry| {
            let (offset, symbol, kind, addend) = match (self.is_64, explicit_addend) {
                (false, false) => {
                    let rel = pod::from_bytes::<Rel32<Endianness>>(entry).ok()?.0;
                    (rel.r_offset.get(endian).into(), rel.r_sym(endian), rel.r_type(endian), 0)
                }
                (false, true) => {
                    let rela = pod::from_bytes::<Rela32<Endianness>>(entry).ok()?.0;
                    (rela.r_offset.get(endian).into(), rela.r_sym(endian), rela.r_type(endian), rela.r_addend.get(endian).into())
                }
                (true, false) => {
                    let rel = pod::from_bytes::<Rel64<Endianness>>(entry).ok()?.0;
                    (rel.r_offset.get(endian), rel.r_sym(endian), rel.r_type(endian), 0)
                }
                (true, true) => {
                    let rela = pod::from_bytes::<Rela64<Endianness>>(entry).ok()?.0;
                    (rela.r_offset.get(endian), rela.r_sym(endian, false), rela.r_type(endian, false), rela.r_addend.get(endian))
                }
            };
            Some(Relocation { offset, symbol, kind, addend })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32-bit little-endian Arm object: the ELF header, `sections` (kind,
    /// offset, size, link, info) as its section table at byte 64, and `body`
    /// from byte 64 + the table.
    fn object(sections: &[(u32, u32, u32, u32, u32)], body: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0u8; 64];
        bytes[..6].copy_from_slice(b"\x7fELF\x01\x01");
        bytes[18..20].copy_from_slice(&40u16.to_le_bytes());
        bytes[0x20..0x24].copy_from_slice(&64u32.to_le_bytes());
        bytes[0x2e..0x30].copy_from_slice(&40u16.to_le_bytes());
        bytes[0x30..0x32].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        for &(kind, offset, size, link, info) in sections {
            let mut entry = [0u8; 40];
            entry[4..8].copy_from_slice(&kind.to_le_bytes());
            entry[16..20].copy_from_slice(&offset.to_le_bytes());
            entry[20..24].copy_from_slice(&size.to_le_bytes());
            entry[24..28].copy_from_slice(&link.to_le_bytes());
            entry[28..32].copy_from_slice(&info.to_le_bytes());
            bytes.extend(entry);
        }
        bytes.extend(body);
        bytes
    }

    fn layout_error(bytes: &[u8]) -> String {
        match validate(bytes) {
            Some(Err(Malformed::Layout(why) | Malformed::Limit(why))) => why,
            other => panic!("accepted: {other:?}"),
        }
    }

    /// Tables that contradict the file or each other are refused before anything is read from them.
    #[test]
    fn refuses_inconsistent_tables() {
        let body_at = |sections: u32| 64 + 40 * sections;
        // A sane object: null, string table, symbol table of 2 entries, REL naming symbol 1.
        let at = body_at(4);
        let mut body = vec![0u8; 16 + 32 + 8];
        body[16 + 32 + 4..16 + 32 + 8].copy_from_slice(&((1u32 << 8) | 2).to_le_bytes());
        let sane = [(0, 0, 0, 0, 0), (3, at, 16, 0, 0), (SHT_SYMTAB, at + 16, 32, 1, 0), (SHT_REL, at + 48, 8, 2, 1)];
        assert!(matches!(validate(&object(&sane, &body)), Some(Ok(_))));
        // The relocation names symbol 5 of 2.
        let mut past = body.clone();
        past[16 + 32 + 4..16 + 32 + 8].copy_from_slice(&((5u32 << 8) | 2).to_le_bytes());
        assert!(layout_error(&object(&sane, &past)).contains("names symbol 5, past the 2"));
        // Overlapping sections, a section over the section table, one past the end.
        let at = body_at(3);
        let overlapping = [(0, 0, 0, 0, 0), (3, at, 16, 0, 0), (SHT_SYMTAB, at + 8, 32, 1, 0)];
        assert!(layout_error(&object(&overlapping, &body)).contains("overlaps"));
        let over_table = [(0, 0, 0, 0, 0), (3, 70, 16, 0, 0)];
        assert!(layout_error(&object(&over_table, &body)).contains("overlaps"));
        let past_end = [(0, 0, 0, 0, 0), (3, body_at(2), 1 << 20, 0, 0)];
        assert!(layout_error(&object(&past_end, &body)).contains("past the end of the file"));
        // A link to a section that does not exist.
        let dangling = [(0, 0, 0, 0, 0), (SHT_SYMTAB, body_at(2), 32, 9, 0)];
        assert!(layout_error(&object(&dangling, &body)).contains("links to section 9"));
    }

    /// 60,000 symbol tables over the same 4 MB are refused at the second, quickly and without reading any.
    #[test]
    fn refuses_many_symbol_tables_before_reading_them() {
        let count = 60_000u32;
        let at = 64 + 40 * count;
        let mut sections = vec![(0, 0, 0, 0, 0)];
        sections.extend((1..count).map(|_| (SHT_SYMTAB, at, 4 << 20, 0, 0)));
        let bytes = object(&sections, &vec![0u8; 4 << 20]);
        let started = std::time::Instant::now();
        let why = layout_error(&bytes);
        assert!(why.contains("overlaps") || why.contains("second symbol table"), "{why}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // The symbol renamer refuses it too, before reading any table.
        let dir = crate::test_support::scratch("elf-many-symtabs");
        let path = dir.join("many.o");
        std::fs::write(&path, &bytes).unwrap();
        let error = crate::objects::rename::Tables::read(&path).err().expect("refused");
        assert!(error.to_string().contains("more than one symbol table"), "{error}");
        // More sections than the limit.
        let mut header = object(&[], &[]);
        header[0x30..0x32].copy_from_slice(&0u16.to_le_bytes());
        let mut first = [0u8; 40];
        first[20..24].copy_from_slice(&(MAX_SECTIONS as u32 + 1).to_le_bytes());
        header.extend(first);
        header.extend(vec![0u8; 40]);
        assert!(layout_error(&header).contains("more than the limit"), "{}", layout_error(&header));
    }

    /// A 32-bit big-endian header is read in its own byte order.
    #[test]
    fn reads_either_byte_order() {
        let mut header = vec![0u8; Header::LEN];
        header[..6].copy_from_slice(b"\x7fELF\x01\x02");
        header[18..20].copy_from_slice(&0x28u16.to_be_bytes());
        header[0x20..0x24].copy_from_slice(&0x1234u32.to_be_bytes());
        header[0x2e..0x30].copy_from_slice(&40u16.to_be_bytes());
        header[0x30..0x32].copy_from_slice(&7u16.to_be_bytes());
        let parsed = Header::parse(&header).unwrap();
        assert!(!parsed.is_64);
        assert_eq!((parsed.machine, parsed.section_table, parsed.section_entry, parsed.section_count), (0x28, 0x1234, 40, 7));
        assert!(Header::parse(b"\x7fELF\x03\x01").is_none());
        assert!(Header::parse(b"!<arch>\n").is_none());
    }
}
