//! Files under the output directory written only when their bytes change,
//! so Cargo and the C compiler see unchanged files as unchanged; and files
//! written under a temporary name first, renamed into place once complete.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// Writes `bytes` to `path` only when the file's current content differs
/// (creating parent dirs). Returns whether it wrote. A symlink at `path` is
/// replaced by a regular file, never written through.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_file() => {
            if metadata.len() == bytes.len() as u64 && file_holds(path, bytes).map_err(|e| Error::io("read", path, e))? {
                return Ok(false);
            }
        }
        Ok(metadata) if metadata.file_type().is_symlink() => {
            fs::remove_file(path).map_err(|e| Error::io("remove", path, e))?;
        }
        // Anything else (a directory) makes the write below fail with a clear error.
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
            }
        }
        Err(e) => return Err(Error::io("inspect", path, e)),
    }
    fs::write(path, bytes).map_err(|e| Error::io("write", path, e))?;
    Ok(true)
}

/// Like [`write_if_changed`] for text too large to hold: `fill` writes it
/// piece by piece, each piece compared with the file's bytes at that offset;
/// the file is written from the first difference on, and left untouched
/// (its mtime too) when there is none. Returns whether it wrote.
pub(crate) fn write_streamed_if_changed(path: &Path, fill: impl FnOnce(&mut dyn io::Write) -> io::Result<()>) -> Result<bool> {
    if fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))?;
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    }
    let file =
        fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(|e| Error::io("open", path, e))?;
    let mut writer = ChangeWriter { file, offset: 0, differs: false, scratch: Vec::new() };
    let mut buffered = io::BufWriter::with_capacity(64 << 10, &mut writer);
    fill(&mut buffered).and_then(|()| io::Write::flush(&mut buffered)).map_err(|e| Error::io("write", path, e))?;
    drop(buffered);
    writer.finish().map_err(|e| Error::io("write", path, e))
}

/// What every temporary name has in it, and only they do.
const TEMPORARY_MARK: &str = ".mlf-tmp-";

/// A name for `path`'s next version beside it, unique to this process and
/// call (`a.o` → `a.mlf-tmp-<pid>-<time>-<n>.o`, keeping the extension: gcc
/// names the `.su` file after the object). Whatever a killed run's
/// compilers still write there is never read, and [`remove_temporaries`] removes it.
pub(crate) fn temporary(path: &Path) -> PathBuf {
    static RUN: OnceLock<String> = OnceLock::new();
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let run = RUN.get_or_init(|| {
        let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |time| time.as_nanos());
        format!("{}-{started}", std::process::id())
    });
    let stem = path.file_stem().map_or_else(String::new, |stem| stem.to_string_lossy().into_owned());
    let mut name = format!("{stem}{TEMPORARY_MARK}{run}-{}", CALLS.fetch_add(1, Ordering::Relaxed));
    if let Some(extension) = path.extension() {
        name.push('.');
        name.push_str(&extension.to_string_lossy());
    }
    path.with_file_name(name)
}

/// Removes the temporaries ([`temporary`]) directly in `dir`: those of an
/// earlier run that was killed, and of this one's failed steps.
pub(crate) fn remove_temporaries(dir: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(dir) else { return Ok(()) };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().contains(TEMPORARY_MARK) {
            let path = entry.path();
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(Error::io("remove", &path, e)),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Renames `from` to `to`, replacing it.
pub(crate) fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
}

/// Writes `bytes` to `path` through a temporary, so `path` is the old file or
/// the whole new one, never a part; the temporary is removed if writing fails.
pub(crate) fn write_replacing(path: &Path, bytes: &[u8]) -> Result<()> {
    let temporary = temporary(path);
    if let Err(e) = fs::write(&temporary, bytes) {
        let _ = fs::remove_file(&temporary);
        return Err(Error::io("write", &temporary, e));
    }
    rename(&temporary, path)
}

/// Compares what is written with the file until they differ, then writes.
struct ChangeWriter {
    file: fs::File,
    /// Bytes compared or written so far.
    offset: u64,
    differs: bool,
    scratch: Vec<u8>,
}

impl io::Write for ChangeWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if !self.differs {
            self.scratch.resize(data.len(), 0);
            let mut filled = 0;
            while filled < data.len() {
                match self.file.read(&mut self.scratch[filled..])? {
                    0 => break,
                    read => filled += read,
                }
            }
            if self.scratch[..filled] == *data {
                self.offset += data.len() as u64;
                return Ok(data.len());
            }
            self.differs = true;
            io::Seek::seek(&mut self.file, io::SeekFrom::Start(self.offset))?;
        }
        self.file.write_all(data)?;
        self.offset += data.len() as u64;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl ChangeWriter {
    /// Cuts off what the old file had beyond the new text; returns whether anything changed.
    fn finish(self) -> io::Result<bool> {
        let longer = self.file.metadata()?.len() != self.offset;
        if longer {
            self.file.set_len(self.offset)?;
        }
        Ok(self.differs || longer)
    }
}

/// Whether the file at `path` holds exactly `bytes`, read a piece at a time
/// so comparing a large file costs no second copy of it in memory.
fn file_holds(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    let mut file = fs::File::open(path)?;
    let mut buffer = vec![0; 64 << 10];
    let mut rest = bytes;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            return Ok(rest.is_empty());
        }
        match rest.strip_prefix(&buffer[..read]) {
            Some(after) => rest = after,
            None => return Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::scratch;

    #[test]
    fn streamed_writes_change_only_what_differs() {
        let dir = scratch("write");
        let path = dir.join("gen/weights.c");
        let write = |text: &'static str| {
            write_streamed_if_changed(&path, |out| text.as_bytes().chunks(3).try_for_each(|piece| out.write_all(piece))).unwrap()
        };
        assert!(write("abcdefgh"), "a new file");
        assert!(!write("abcdefgh"), "the same bytes");
        assert!(write("abcXefgh"));
        assert_eq!(fs::read(&path).unwrap(), b"abcXefgh");
        assert!(write("abcXe"), "shorter");
        assert_eq!(fs::read(&path).unwrap(), b"abcXe");
        assert!(write("abcXefghij"), "longer");
        assert_eq!(fs::read(&path).unwrap(), b"abcXefghij");
        assert!(!write("abcXefghij"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporaries_keep_the_extension_and_are_removed() {
        let dir = scratch("temporaries");
        let object = dir.join("a.o");
        let temporary = temporary(&object);
        assert_eq!(temporary.extension().unwrap(), "o");
        assert_ne!(temporary, super::temporary(&object), "unique per call");
        fs::write(&temporary, b"half").unwrap();
        write_replacing(&object, b"whole").unwrap();
        remove_temporaries(&dir).unwrap();
        let names: Vec<_> = fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert_eq!(names, ["a.o"]);
        assert_eq!(fs::read(&object).unwrap(), b"whole");
        fs::remove_dir_all(&dir).unwrap();
    }
}
