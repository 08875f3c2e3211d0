//! The archive's files written under the output directory, incrementally, and
//! their digest recorded beside them (`<dir>.digest`): when a later build
//! leaves the directory exactly as it was, it takes that digest instead of
//! hashing the bytes again (SHA-256 of tens of megabytes takes seconds in the
//! unoptimised build scripts Cargo builds by default).

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::sha256::Sha256;

use crate::cargo::write::write_if_changed;
use crate::error::{Error, Result};
use crate::input::archive::{digest_hex, hash_file_header, join_key, Tree};

/// Writes every file of `tree` below `dir`, each only if its bytes differ
/// from what is there; removes files below `dir` that the tree does not have
/// (and then-empty directories). Returns how many files were written. Called
/// before [`Tree::release`]: a released tree has no bytes to write.
///
/// When nothing changed and `<dir>.digest` holds a digest, the tree takes it.
pub(crate) fn write_tree(tree: &Tree, dir: &Path) -> Result<usize> {
    let record = digest_record(dir);
    let recorded = fs::read_to_string(&record).ok().and_then(|text| parse_digest(text.trim()));
    // Gone while `dir` changes, so an interrupted write leaves no record behind.
    match fs::remove_file(&record) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(Error::io("remove", &record, e)),
        _ => {}
    }
    fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
    // Afterwards every non-directory left below `dir` is a file of the tree,
    // so no symlink remains where a directory is needed.
    let removed = remove_stale(tree, dir, "")?;
    let mut written = 0;
    for (key, bytes) in tree.files() {
        if write_if_changed(&key_path(dir, key), bytes)? {
            written += 1;
        }
    }
    if let Some(recorded) = recorded.filter(|_| removed == 0 && written == 0) {
        record_digest(dir, &tree.set_digest(recorded))?;
    }
    Ok(written)
}

/// The digest of `tree` ([`Tree::digest`]), hashed from the files
/// [`write_tree`] wrote to `dir` when the tree was released before it was known.
pub(crate) fn digest(tree: &Tree, dir: &Path) -> Result<[u8; 32]> {
    match tree.digest() {
        Some(digest) => Ok(digest),
        None => Ok(tree.set_digest(digest_on_disk(dir, tree.paths())?)),
    }
}

/// [`Tree::digest`] of the files `paths` (sorted, as a tree lists them) below `dir`.
fn digest_on_disk<'p>(dir: &Path, paths: impl Iterator<Item = &'p str>) -> Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 << 10];
    for path in paths {
        let file = key_path(dir, path);
        let read_error = |e| Error::io("read", &file, e);
        let mut reader = fs::File::open(&file).map_err(read_error)?;
        hash_file_header(&mut hasher, path, reader.metadata().map_err(read_error)?.len());
        loop {
            match reader.read(&mut buffer).map_err(read_error)? {
                0 => break,
                read => hasher.update(&buffer[..read]),
            }
        }
    }
    Ok(hasher.finalize())
}

/// Records `digest`, that of the tree [`write_tree`] wrote to `dir`.
pub(crate) fn record_digest(dir: &Path, digest: &[u8; 32]) -> Result<()> {
    let record = digest_record(dir);
    fs::write(&record, digest_hex(digest)).map_err(|e| Error::io("write", &record, e))
}

/// [`record_digest`] of `tree` (hashing it only then) unless `<dir>.digest` is there.
pub(crate) fn record_missing_digest(tree: &Tree, dir: &Path) -> Result<()> {
    if digest_record(dir).is_file() {
        return Ok(());
    }
    record_digest(dir, &digest(tree, dir)?)
}

/// Removes everything below `dir` (whose key is `prefix`) that is not a file
/// of `tree`; returns how many entries it removed.
fn remove_stale(tree: &Tree, dir: &Path, prefix: &str) -> Result<usize> {
    let mut removed = 0;
    for entry in fs::read_dir(dir).map_err(|e| Error::io("read", dir, e))? {
        let entry = entry.map_err(|e| Error::io("read", dir, e))?;
        let path = entry.path();
        // `DirEntry::file_type` does not follow symlinks.
        let file_type = entry.file_type().map_err(|e| Error::io("inspect", &path, e))?;
        let key = entry.file_name().to_str().map(|name| join_key(prefix, name));
        match key {
            Some(key) if file_type.is_dir() => {
                removed += remove_stale(tree, &path, &key)?;
                let mut children = fs::read_dir(&path).map_err(|e| Error::io("read", &path, e))?;
                if children.next().is_none() {
                    fs::remove_dir(&path).map_err(|e| Error::io("remove", &path, e))?;
                    removed += 1;
                }
            }
            Some(key) if tree.contains(&key) => {}
            _ if file_type.is_dir() => {
                fs::remove_dir_all(&path).map_err(|e| Error::io("remove", &path, e))?;
                removed += 1;
            }
            _ => {
                fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// Where the file `key` ("codegen/host/src/x.c") of a tree written to `dir` is.
fn key_path(dir: &Path, key: &str) -> PathBuf {
    key.split('/').fold(dir.to_path_buf(), |path, part| path.join(part))
}

/// `<dir>.digest`, beside the tree written to `dir`.
fn digest_record(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".digest");
    dir.with_file_name(name)
}

/// A digest written by [`record_digest`].
fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let mut digest = [0u8; 32];
    if hex.len() != 64 {
        return None;
    }
    for (byte, pair) in digest.iter_mut().zip(hex.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::archive::Limits;
    use crate::test_support::{corpus_dir, scratch};

    fn file(name: &str, data: &'static str) -> (String, Vec<u8>) {
        (name.to_owned(), data.as_bytes().to_vec())
    }

    fn hex_of(tree: &Tree) -> String {
        digest_hex(&tree.digest().unwrap())
    }

    #[test]
    fn write_tree_reuses_the_digest_only_of_an_unchanged_tree() {
        let dir = scratch("digest-record");
        let out = dir.join("tree");
        let tree = || Tree::from_files([file("a.c", "a"), file("sub/b.c", "b")]).unwrap();
        let hashed = tree().digest().unwrap();
        let first = tree();
        write_tree(&first, &out).unwrap();
        assert!(!dir.join("tree.digest").exists(), "recorded only once known");
        record_digest(&out, &first.digest().unwrap()).unwrap();
        assert_eq!(fs::read_to_string(dir.join("tree.digest")).unwrap(), hex_of(&tree()));

        // A record is taken, not recomputed, when the bytes on disk stay the same.
        let planted = "ab".repeat(32);
        fs::write(dir.join("tree.digest"), &planted).unwrap();
        let same = tree();
        write_tree(&same, &out).unwrap();
        assert_eq!(hex_of(&same), planted);
        assert_eq!(fs::read_to_string(dir.join("tree.digest")).unwrap(), planted, "kept for the next run");

        // Any change (a byte, a removed file) means hashing the new tree.
        fs::write(dir.join("tree.digest"), &planted).unwrap();
        let changed = Tree::from_files([file("a.c", "A"), file("sub/b.c", "b")]).unwrap();
        write_tree(&changed, &out).unwrap();
        assert_ne!(changed.digest().unwrap(), hashed);
        assert_eq!(changed.digest().unwrap(), Tree::from_files([file("a.c", "A"), file("sub/b.c", "b")]).unwrap().digest().unwrap());
        fs::write(dir.join("tree.digest"), &planted).unwrap();
        let fewer = Tree::from_files([file("a.c", "A")]).unwrap();
        write_tree(&fewer, &out).unwrap();
        assert_ne!(hex_of(&fewer), planted);

        // Recorded when missing only, from the tree's own digest.
        record_missing_digest(&fewer, &out).unwrap();
        assert_eq!(fs::read_to_string(dir.join("tree.digest")).unwrap(), hex_of(&fewer));
        fs::write(dir.join("tree.digest"), &planted).unwrap();
        record_missing_digest(&fewer, &out).unwrap();
        assert_eq!(fs::read_to_string(dir.join("tree.digest")).unwrap(), planted);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_released_tree_hashes_what_it_wrote() {
        let dir = scratch("released");
        let out = dir.join("tree");
        let files = || [file("a.c", "a"), file("sub/b.c", "bb")];
        let mut tree = Tree::from_files(files()).unwrap();
        write_tree(&tree, &out).unwrap();
        tree.release();
        assert_eq!(tree.get("a.c"), None, "the bytes are gone from memory");
        assert_eq!(tree.files().count(), 0);
        assert_eq!(tree.digest(), None, "not known before it is read back");
        let expected = Tree::from_files(files()).unwrap().digest().unwrap();
        assert_eq!(digest(&tree, &out).unwrap(), expected);
        assert_eq!(tree.digest(), Some(expected), "kept once read back");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn write_tree_writes_only_changes() {
        let dir = scratch("write");
        let out = dir.join("tree");
        let outside = dir.join("outside.txt");
        fs::write(&outside, "keep").unwrap();

        let tree = Tree::from_files([file("a.c", "a"), file("sub/b.c", "b"), file("sub/deep/c.c", "c")]).unwrap();
        assert_eq!(write_tree(&tree, &out).unwrap(), 3);
        assert_eq!(write_tree(&tree, &out).unwrap(), 0);
        assert_eq!(fs::read(out.join("sub/deep/c.c")).unwrap(), b"c");

        let changed = Tree::from_files([file("a.c", "a"), file("sub/b.c", "B")]).unwrap();
        assert_eq!(write_tree(&changed, &out).unwrap(), 1);
        assert_eq!(fs::read(out.join("sub/b.c")).unwrap(), b"B");
        assert!(!out.join("sub/deep").exists(), "stale file and its empty directory are removed");

        #[cfg(unix)]
        {
            // Symlinks on disk are replaced, never written through.
            fs::remove_file(out.join("a.c")).unwrap();
            std::os::unix::fs::symlink(&outside, out.join("a.c")).unwrap();
            fs::remove_dir_all(out.join("sub")).unwrap();
            std::os::unix::fs::symlink(&dir, out.join("sub")).unwrap();
            assert_eq!(write_tree(&changed, &out).unwrap(), 2);
            assert!(fs::symlink_metadata(out.join("a.c")).unwrap().is_file());
            assert!(fs::symlink_metadata(out.join("sub")).unwrap().is_dir());
        }
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
        let mut entries: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        entries.sort();
        assert_eq!(entries, ["outside.txt", "tree"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tar_and_extracted_tree_have_the_same_digest() {
        let Some(corpus) = corpus_dir() else { return };
        let tars: Vec<_> = glob::glob(&format!("{}/**/model.tar", corpus.display())).unwrap().map(|p| p.unwrap()).collect();
        // The largest archive has the deepest tree (runtime/).
        let largest = tars.iter().max_by_key(|tar| fs::metadata(tar).map(|m| m.len()).unwrap_or(0)).unwrap();
        let from_tar = Tree::load(largest, Limits::default()).unwrap();
        let dir = scratch("extract");
        assert_eq!(write_tree(&from_tar, &dir).unwrap(), from_tar.paths().count());
        let from_dir = Tree::load(&dir, Limits::default()).unwrap();
        assert_eq!(from_tar.digest().unwrap(), from_dir.digest().unwrap());
        assert_eq!(write_tree(&from_tar, &dir).unwrap(), 0);
        fs::remove_dir_all(&dir).unwrap();
    }
}
