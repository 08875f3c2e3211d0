//! The toolchain's own static libraries (the C library's `libc.a`/`libm.a`,
//! `libgcc.a`, Rust's `compiler_builtins` rlib) as the linker reads them: the
//! member that defines a symbol, found through the archive's symbol index
//! (the System V / GNU `/` member that `ar s` writes). For the stack bound,
//! which reads those members' machine code.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One static library, read whole, with its symbol index.
#[derive(Debug)]
pub(crate) struct Archive {
    /// The file name (`libm.a`), for stack paths.
    pub name: String,
    bytes: Vec<u8>,
    /// Symbol → offset of its member's header.
    index: HashMap<String, usize>,
}

/// `ar`'s member header: name, dates, ids, mode, then the size at 48..58 and "`\n".
const MEMBER_HEADER: usize = 60;

impl Archive {
    /// The library at `path`, read once per process; `None` when it is not
    /// there or has no symbol index (a thin or BSD archive).
    pub fn open(path: &Path) -> Option<Arc<Archive>> {
        static OPENED: Mutex<Vec<(PathBuf, Option<Arc<Archive>>)>> = Mutex::new(Vec::new());
        let mut opened = OPENED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, archive)) = opened.iter().find(|(opened_path, _)| opened_path == path) {
            return archive.clone();
        }
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        // An rlib's name without its hash: `libcompiler_builtins.rlib`.
        let name = match (name.strip_suffix(".rlib"), name.rfind('-')) {
            (Some(_), Some(dash)) => format!("{}.rlib", &name[..dash]),
            _ => name,
        };
        let archive = std::fs::read(path).ok().and_then(|bytes| Archive::parse(name, bytes)).map(Arc::new);
        opened.push((path.to_path_buf(), archive.clone()));
        archive
    }

    fn parse(name: String, bytes: Vec<u8>) -> Option<Archive> {
        let first = bytes.strip_prefix(b"!<arch>\n")?;
        let (member_name, table) = member_at(first, 0)?;
        let word = match member_name {
            b"/" => 4,
            b"/SYM64/" => 8,
            _ => return None,
        };
        let read = |at: usize| -> Option<usize> {
            let field = table.get(at..at.checked_add(word)?)?;
            usize::try_from(field.iter().fold(0u64, |value, &byte| (value << 8) | u64::from(byte))).ok()
        };
        let count = read(0)?;
        let mut names = table.get(word.checked_mul(count.checked_add(1)?)?..)?.split(|&b| b == 0);
        let mut index = HashMap::with_capacity(count);
        for entry in 0..count {
            let symbol = std::str::from_utf8(names.next()?).ok()?;
            // Offsets count from the file's start; the first definition is the one `ld` takes.
            let offset = read(word * (entry + 1))?.checked_sub(8)?;
            index.entry(symbol.to_string()).or_insert(offset);
        }
        Some(Archive { name, bytes, index })
    }

    /// The bytes of the member that defines `symbol`, and the offset that names it.
    pub fn member_defining(&self, symbol: &str) -> Option<(usize, &[u8])> {
        let offset = *self.index.get(symbol)?;
        let (_, bytes) = member_at(self.bytes.get(8..)?, offset)?;
        Some((offset, bytes))
    }
}

/// The member whose header is at `offset` of the archive's bytes after the
/// magic: its short name (up to the `/` GNU ends it with, or the index's own
/// `/`) and its bytes.
fn member_at(members: &[u8], offset: usize) -> Option<(&[u8], &[u8])> {
    let header = members.get(offset..offset.checked_add(MEMBER_HEADER)?)?;
    if &header[58..60] != b"`\n" {
        return None;
    }
    let size: usize = std::str::from_utf8(&header[48..58]).ok()?.trim().parse().ok()?;
    let raw_name = &header[..16];
    let end = raw_name.iter().rposition(|&b| b != b' ').map_or(0, |last| last + 1);
    let name = &raw_name[..end];
    let name = match name {
        b"/" | b"//" | b"/SYM64/" => name,
        _ => name.strip_suffix(b"/").unwrap_or(name),
    };
    let start = offset + MEMBER_HEADER;
    Some((name, members.get(start..start.checked_add(size)?)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member header for `name` of `size` bytes.
    fn header(name: &str, size: usize) -> Vec<u8> {
        format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).into_bytes()
    }

    #[test]
    fn finds_the_member_defining_a_symbol() {
        let (a, b) = (b"first object".to_vec(), b"second!".to_vec());
        let names = b"alpha\0beta\0gamma\0";
        let table_len = 4 + 3 * 4 + names.len();
        let first_at = 8 + MEMBER_HEADER + table_len + table_len % 2;
        let second_at = first_at + MEMBER_HEADER + a.len();
        let mut table = 3u32.to_be_bytes().to_vec();
        for offset in [first_at, second_at, first_at] {
            table.extend(u32::try_from(offset).unwrap().to_be_bytes());
        }
        table.extend(names);
        let mut bytes = b"!<arch>\n".to_vec();
        bytes.extend(header("/", table.len()));
        bytes.extend(&table);
        if table.len() % 2 == 1 {
            bytes.push(b'\n');
        }
        bytes.extend(header("a.o/", a.len()));
        bytes.extend(&a);
        bytes.extend(header("b.o/", b.len()));
        bytes.extend(&b);
        let archive = Archive::parse("libx.a".into(), bytes).unwrap();
        assert_eq!(archive.member_defining("alpha").unwrap().1, a);
        assert_eq!(archive.member_defining("beta").unwrap().1, b);
        assert_eq!(archive.member_defining("gamma").unwrap().0, archive.member_defining("alpha").unwrap().0);
        assert!(archive.member_defining("delta").is_none());
        assert!(Archive::parse("x".into(), b"!<thin>\n".to_vec()).is_none());
    }
}
