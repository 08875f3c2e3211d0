//! Files under the output directory written only when their bytes change,
//! so Cargo and the C compiler see unchanged files as unchanged.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

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
}
