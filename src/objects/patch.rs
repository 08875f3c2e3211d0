//! Changes to an object's bytes, made without reading the rest of it: the
//! symbol renamer and the section placer edit a few table fields and append a
//! longer string table, and the object (its weights) is copied or edited in
//! place around them.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Replacements at file offsets (sorted, not overlapping, inside the object),
/// then bytes appended after its end.
#[derive(Debug, Clone, Default)]
pub(crate) struct Patch {
    edits: Vec<(u64, Vec<u8>)>,
    appended: Vec<u8>,
}

impl Patch {
    /// The patch of an object of `size` bytes; `None` when two edits overlap
    /// or one lies outside it.
    pub fn new(mut edits: Vec<(u64, Vec<u8>)>, appended: Vec<u8>, size: u64) -> Option<Patch> {
        edits.sort_by_key(|(offset, _)| *offset);
        let end = |(offset, bytes): &(u64, Vec<u8>)| offset.checked_add(bytes.len() as u64);
        let overlapping = edits.windows(2).any(|pair| end(&pair[0]).is_none_or(|end| end > pair[1].0));
        let outside = edits.last().is_some_and(|last| end(last).is_none_or(|end| end > size));
        (!overlapping && !outside).then_some(Patch { edits, appended })
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty() && self.appended.is_empty()
    }

    /// Bytes it adds to the object.
    pub fn appended_len(&self) -> u64 {
        self.appended.len() as u64
    }

    /// Writes the `size`-byte object at `path` with the patch applied to
    /// `out`: its bytes up to each edit, the edit instead of the bytes it
    /// replaces, the rest, the appended bytes. Streamed, so large weights are
    /// never in memory. An object shorter than `size` is `UnexpectedEof`.
    pub fn copy(&self, path: &Path, size: u64, out: &mut dyn Write) -> std::io::Result<()> {
        let mut object = File::open(path)?.take(size);
        let mut at = 0u64;
        let exactly = |object: &mut std::io::Take<File>, out: &mut dyn Write, len: u64| -> std::io::Result<()> {
            if std::io::copy(&mut Read::by_ref(object).take(len), out)? != len {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            Ok(())
        };
        for (offset, bytes) in &self.edits {
            let before = offset.checked_sub(at).ok_or(std::io::ErrorKind::InvalidData)?;
            exactly(&mut object, out, before)?;
            out.write_all(bytes)?;
            exactly(&mut object, &mut std::io::sink(), bytes.len() as u64)?;
            at = offset.checked_add(bytes.len() as u64).ok_or(std::io::ErrorKind::InvalidData)?;
        }
        exactly(&mut object, out, size.checked_sub(at).ok_or(std::io::ErrorKind::UnexpectedEof)?)?;
        out.write_all(&self.appended)
    }

    /// Applies the patch to the `size`-byte object at `path` itself: only the
    /// edited and appended bytes are written. An object of another size is
    /// `InvalidData`, left as it was.
    pub fn apply(&self, path: &Path, size: u64) -> std::io::Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let mut object = OpenOptions::new().write(true).open(path)?;
        if object.metadata()?.len() != size {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        for (offset, bytes) in &self.edits {
            object.seek(SeekFrom::Start(*offset))?;
            object.write_all(bytes)?;
        }
        object.seek(SeekFrom::Start(size))?;
        object.write_all(&self.appended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copied or applied in place, the same patch gives the same bytes; edits
    /// that overlap or leave the object are refused.
    #[test]
    fn copies_and_applies_alike() {
        let dir = crate::test_support::scratch("patch");
        let path = dir.join("o");
        std::fs::write(&path, b"0123456789").unwrap();
        let patch = Patch::new(vec![(6, b"ab".to_vec()), (1, b"x".to_vec())], b"tail".to_vec(), 10).unwrap();
        let mut copied = Vec::new();
        patch.copy(&path, 10, &mut copied).unwrap();
        assert_eq!(copied, b"0x2345ab89tail");
        patch.apply(&path, 10).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), copied);
        assert!(patch.apply(&path, 10).is_err(), "applied to an object of another size");
        assert!(Patch::new(vec![(1, b"xy".to_vec()), (2, b"z".to_vec())], Vec::new(), 10).is_none());
        assert!(Patch::new(vec![(9, b"xy".to_vec())], Vec::new(), 10).is_none());
        assert!(Patch::new(vec![(u64::MAX, b"x".to_vec())], Vec::new(), 10).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
