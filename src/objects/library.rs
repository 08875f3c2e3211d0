//! The toolchain's own static libraries (the C library's `libc.a`/`libm.a`,
//! `libgcc.a`, Rust's `compiler_builtins` rlib) as the linker reads them: the
//! member that defines a symbol, found through the archive's symbol index
//! (the `/` member that `ar s` writes, or BSD's `__.SYMDEF`). For the stack
//! bound, which reads those members' machine code.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use object::read::archive::{ArchiveFile, ArchiveOffset};
use object::ReadCache;

/// One static library with its symbol index; only the members asked for are read.
#[derive(Debug)]
pub(crate) struct Archive {
    /// The file name (`libm.a`), for stack paths.
    pub name: String,
    file: Mutex<ReadCache<File>>,
    /// Symbol → offset of its member's header.
    index: HashMap<String, u64>,
}

impl Archive {
    /// The library at `path`, opened once per process; `None` when it is not
    /// there or has no symbol index.
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
        let archive = File::open(path).ok().and_then(|file| Archive::parse(name, file)).map(Arc::new);
        opened.push((path.to_path_buf(), archive.clone()));
        archive
    }

    fn parse(name: String, file: File) -> Option<Archive> {
        let file = ReadCache::new(file);
        let mut index = HashMap::new();
        for symbol in ArchiveFile::parse(&file).ok()?.symbols().ok()?? {
            let symbol = symbol.ok()?;
            // The first definition is the one `ld` takes.
            if let Ok(name) = std::str::from_utf8(symbol.name()) {
                index.entry(name.to_string()).or_insert(symbol.offset().0);
            }
        }
        Some(Archive { name, file: Mutex::new(file), index })
    }

    /// The bytes of the member that defines `symbol`, and the offset that names it.
    pub fn member_defining(&self, symbol: &str) -> Option<(u64, Vec<u8>)> {
        let offset = *self.index.get(symbol)?;
        let file = self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let member = ArchiveFile::parse(&*file).ok()?.member(ArchiveOffset(offset)).ok()?;
        Some((offset, member.data(&*file).ok()?.to_vec()))
    }
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
        let first_at = 8 + 60 + table_len + table_len % 2;
        let second_at = first_at + 60 + a.len();
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
        let dir = crate::test_support::scratch("system-lib-index");
        let path = dir.join("libx.a");
        std::fs::write(&path, &bytes).unwrap();
        let archive = Archive::parse("libx.a".into(), File::open(&path).unwrap()).unwrap();
        assert_eq!(archive.member_defining("alpha").unwrap().1, a);
        assert_eq!(archive.member_defining("beta").unwrap().1, b);
        assert_eq!(archive.member_defining("gamma").unwrap().0, archive.member_defining("alpha").unwrap().0);
        assert!(archive.member_defining("delta").is_none());
        std::fs::write(&path, b"!<thin>\n").unwrap();
        assert!(Archive::parse("x".into(), File::open(&path).unwrap()).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
