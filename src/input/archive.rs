//! Loads an archive (a `.tar` or an extracted directory) into memory, refusing
//! anything that could reach outside it. Writing it out is the Builder's
//! (`builder/unpack.rs`).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::sha256::Sha256;
use tar::EntryType;

use crate::error::{Error, ErrorKind, Result};

const UNSAFE_ENTRY_HELP: &str = "TVM writes no such entry: remove it from the archive (or build the archive's files without it)";
const SIZE_HELP: &str = "check that this is the right archive: Model Library Format members are far smaller than this";
/// Links may point at links; a longer chain is treated as a cycle.
const MAX_LINK_HOPS: usize = 8;
/// The longest GNU long name or long link name read (Linux paths are at most 4096 bytes).
const MAX_LONG_NAME_BYTES: u64 = 8 << 10;
/// The largest PAX extended header read (its records: path, link, size, times).
const MAX_PAX_HEADER_BYTES: u64 = 64 << 10;
/// Version-control metadata in a committed tree is not part of the model.
const VCS_DIRS: [&str; 3] = [".git", ".hg", ".svn"];

/// Limits that keep a hostile archive from exhausting the disk or memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_entry_bytes: u64,
    pub max_total_bytes: u64,
    /// Entries of any kind (files, directories, links); real archives have a few hundred.
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_entry_bytes: 512 << 20, max_total_bytes: 2 << 30, max_entries: 100_000 }
    }
}

/// An archive's regular files, in memory, keyed by normalized relative path ("codegen/host/src/default_lib0.c").
pub(crate) struct Tree {
    files: BTreeMap<String, Vec<u8>>,
    /// Computed when first asked for, or set by whoever knows it ([`Tree::set_digest`]).
    digest: OnceLock<[u8; 32]>,
    /// Whether [`Tree::release`] let the files' bytes go (their paths stay).
    released: bool,
}

impl Tree {
    /// Loads a `.tar` file or an extracted directory (decided by what `path` is).
    pub fn load(path: &Path, limits: Limits) -> Result<Tree> {
        let metadata = fs::metadata(path).map_err(|e| Error::io("read", path, e))?;
        // Opening a FIFO or a device would block or never end: only files and directories are read.
        if !metadata.is_dir() && !metadata.is_file() {
            return Err(Error::new(ErrorKind::UnsafeEntry, "is neither a regular file nor a directory")
                .in_archive(path)
                .help("pass the .tar file or the directory it was extracted to"));
        }
        let tree = if metadata.is_dir() { load_dir(path, limits) } else { load_tar(path, limits) };
        tree.map_err(|e| e.in_archive(path))
    }

    /// Builds a tree from (path, bytes) pairs, normalizing paths with the same rules.
    pub fn from_files<I: IntoIterator<Item = (String, Vec<u8>)>>(files: I) -> Result<Tree> {
        let mut map = BTreeMap::new();
        for (raw, bytes) in files {
            let key = normalize(&raw).map_err(|reason| unsafe_entry(&raw, reason))?;
            if key.is_empty() {
                return Err(unsafe_entry(&raw, "names the archive root, not a file"));
            }
            map.insert(key, bytes);
        }
        Tree::new(map)
    }

    fn new(files: BTreeMap<String, Vec<u8>>) -> Result<Tree> {
        // A path that is both a file and a directory could not be written out.
        for key in files.keys() {
            let dir = format!("{key}/");
            if let Some(child) = files.range(dir.clone()..).next().map(|(k, _)| k).filter(|k| k.starts_with(&dir)) {
                return Err(unsafe_entry(key, format!("is a file, but `{child}` needs it to be a directory")));
            }
        }
        Ok(Tree { files, digest: OnceLock::new(), released: false })
    }

    /// The files, for building a changed tree with [`Tree::from_files`].
    pub fn into_files(self) -> BTreeMap<String, Vec<u8>> {
        self.files
    }

    pub fn get(&self, path: &str) -> Option<&[u8]> {
        if self.released {
            return None;
        }
        self.files.get(&normalize(path).ok()?).map(Vec::as_slice)
    }

    pub fn contains(&self, path: &str) -> bool {
        self.get(path).is_some()
    }

    /// Paths directly or indirectly under `dir` ("codegen/host/src"), sorted.
    pub fn files_under<'a>(&'a self, dir: &str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = normalize(dir).ok().map(|dir| if dir.is_empty() { dir } else { dir + "/" });
        let start = prefix.clone().unwrap_or_default();
        self.files
            .range(start..)
            .map(|(path, _)| path.as_str())
            .take_while(move |path| prefix.as_deref().is_some_and(|prefix| path.starts_with(prefix)))
    }

    /// Every path, sorted (kept by [`Tree::release`]).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// Every (path, bytes), sorted; nothing once [`Tree::release`]d.
    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().filter(|_| !self.released).map(|(path, bytes)| (path.as_str(), bytes.as_slice()))
    }

    /// SHA-256 over the sorted (path, length, bytes) of every file: the same
    /// content gives the same digest whether it came from a tar (in any member
    /// order, with or without "./") or a directory. `None` once
    /// [`Tree::release`]d before the digest was known: the bytes are gone.
    pub fn digest(&self) -> Option<[u8; 32]> {
        if let Some(digest) = self.digest.get() {
            return Some(*digest);
        }
        if self.released {
            return None;
        }
        let mut hasher = Sha256::new();
        for (path, bytes) in &self.files {
            hash_file_header(&mut hasher, path, bytes.len() as u64);
            hasher.update(bytes);
        }
        Some(*self.digest.get_or_init(|| hasher.finalize()))
    }

    /// Takes a digest computed elsewhere from these same files (hashed where
    /// they were written, or recorded by an earlier run that wrote them)
    /// unless one is known already; returns the one the tree keeps.
    pub fn set_digest(&self, digest: [u8; 32]) -> [u8; 32] {
        *self.digest.get_or_init(|| digest)
    }

    /// Lets the files' bytes go once they are written out: the build reads
    /// them from there, and a large archive is not held in memory beside the
    /// compiler and libclang. [`Tree::get`] and [`Tree::files`] find nothing after.
    pub fn release(&mut self) {
        for bytes in self.files.values_mut() {
            *bytes = Vec::new();
        }
        self.released = true;
    }
}

/// What [`Tree::digest`] hashes before a file's bytes: its path and length.
pub(crate) fn hash_file_header(hasher: &mut Sha256, path: &str, length: u64) {
    // Paths cannot contain NUL, so it delimits them unambiguously.
    hasher.update(path.as_bytes());
    hasher.update([0]);
    hasher.update(length.to_le_bytes());
}

/// A digest as lowercase hex, as provenance comments and digest records show it.
pub(crate) fn digest_hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unsafe_entry(entry: &str, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::UnsafeEntry, message).in_file(entry).help(UNSAFE_ENTRY_HELP)
}

/// The key of the file `name` in the directory whose key is `prefix` ("" for the root).
pub(crate) fn join_key(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

/// Normalizes an archive path to `a/b/c` ("" for the root), or says why it is unsafe.
fn normalize(raw: &str) -> std::result::Result<String, &'static str> {
    // Paths reach file systems, compiler command lines and messages: no line breaks or escapes.
    if raw.chars().any(char::is_control) {
        return Err("has a control character (such as a line break) in its path");
    }
    if raw.starts_with('/') {
        return Err("has an absolute path");
    }
    // A backslash is a separator on Windows, so it could hide a root or `..`.
    if raw.contains('\\') {
        return Err("has a Windows path (it contains a backslash)");
    }
    if has_drive(raw) {
        return Err("has a Windows drive path");
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("has a `..` component"),
            part => parts.push(part),
        }
    }
    Ok(parts.join("/"))
}

fn has_drive(path: &str) -> bool {
    matches!(path.as_bytes(), [letter, b':', ..] if letter.is_ascii_alphabetic())
}

/// Resolves a link target against `base` (a normalized directory); `None` when
/// the target is absolute or climbs out of the archive.
fn resolve_target(base: &str, target: &str) -> Option<String> {
    if target.starts_with('/') || target.contains('\\') || has_drive(target) {
        return None;
    }
    let mut parts: Vec<&str> = base.split('/').filter(|part| !part.is_empty()).collect();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// A link entry waiting for the file it names.
struct Link {
    /// The link's path as written in the archive, for errors.
    entry: String,
    /// The target as written.
    raw_target: String,
    /// The target as a normalized path inside the archive.
    target: String,
}

/// Collects files and links while enforcing the size limits.
struct Loader {
    limits: Limits,
    total: u64,
    entries: usize,
    files: BTreeMap<String, Vec<u8>>,
    links: BTreeMap<String, Link>,
}

impl Loader {
    fn new(limits: Limits) -> Self {
        Loader { limits, total: 0, entries: 0, files: BTreeMap::new(), links: BTreeMap::new() }
    }

    /// Counts one more entry of any kind, refusing past [`Limits::max_entries`].
    fn count(&mut self, entry: &str) -> Result<()> {
        self.entries = self.entries.saturating_add(1);
        if self.entries > self.limits.max_entries {
            let max = self.limits.max_entries;
            return Err(unsafe_entry(entry, format!("brings the archive over the limit of {max} entries")).help(SIZE_HELP));
        }
        Ok(())
    }

    /// Counts `size` more bytes for `entry`, before they are read.
    fn reserve(&mut self, entry: &str, size: u64) -> Result<()> {
        let Limits { max_entry_bytes, max_total_bytes, .. } = self.limits;
        if size > max_entry_bytes {
            return Err(
                unsafe_entry(entry, format!("is {size} bytes, over the limit of {max_entry_bytes} bytes per entry")).help(SIZE_HELP)
            );
        }
        self.total = self.total.saturating_add(size);
        if self.total > max_total_bytes {
            return Err(
                unsafe_entry(entry, format!("brings the archive over the limit of {max_total_bytes} bytes in total")).help(SIZE_HELP)
            );
        }
        Ok(())
    }

    /// Like `tar x`, a later entry with the same path replaces an earlier one.
    fn add_file(&mut self, key: String, bytes: Vec<u8>) {
        self.links.remove(&key);
        self.files.insert(key, bytes);
    }

    fn add_link(&mut self, key: String, link: Link) {
        self.files.remove(&key);
        self.links.insert(key, link);
    }

    /// Turns every link into a copy of the regular file it ends at.
    fn finish(mut self) -> Result<Tree> {
        let mut resolved = Vec::new();
        for (key, link) in &self.links {
            let mut target = &link.target;
            let mut hops = 0;
            while !self.files.contains_key(target) {
                let Some(next) = self.links.get(target) else {
                    return Err(unsafe_entry(
                        &link.entry,
                        format!("links to `{}`, which is not a regular file in the archive", link.raw_target),
                    ));
                };
                hops += 1;
                if hops > MAX_LINK_HOPS {
                    return Err(unsafe_entry(
                        &link.entry,
                        format!("links to `{}`, which starts a cycle or a chain of more than {MAX_LINK_HOPS} links", link.raw_target),
                    ));
                }
                target = &next.target;
            }
            resolved.push((key.clone(), link.entry.clone(), target.clone()));
        }
        for (key, entry, target) in resolved {
            // Counted before the copy is made, so links cannot multiply one large file.
            let size = self.files.get(&target).map_or(0, |bytes| bytes.len() as u64);
            self.reserve(&entry, size)?;
            let bytes = self.files.get(&target).cloned().unwrap_or_default();
            self.files.insert(key, bytes);
        }
        Tree::new(self.files)
    }
}

/// What GNU long name (`L`, `K`) and PAX (`x`) headers say about the entry after them.
#[derive(Default)]
struct Extensions {
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
    pax: Option<Vec<u8>>,
}

impl Extensions {
    fn is_empty(&self) -> bool {
        self.long_name.is_none() && self.long_link.is_none() && self.pax.is_none()
    }
}

/// The `key` record of a PAX header, if it has one.
fn pax_record<'a>(pax: Option<&'a [u8]>, key: &str) -> Option<&'a [u8]> {
    // Records were checked to parse when the header was read.
    tar::PaxExtensions::new(pax?).flatten().filter(|record| record.key_bytes() == key.as_bytes()).last().map(|record| record.value_bytes())
}

/// A name from a GNU long name header: NUL-terminated.
fn long_name(bytes: Vec<u8>) -> Vec<u8> {
    let end = bytes.iter().rposition(|&byte| byte != 0).map_or(0, |last| last + 1);
    bytes[..end].to_vec()
}

/// Reads tar headers one by one (the `tar` crate's raw entries) so that the
/// limits hold before anything is read: every header counts as an entry, a
/// size must fit in the rest of the file, and GNU long names and PAX headers
/// (which `tar` would read whole, whatever their size) are capped.
fn load_tar(path: &Path, limits: Limits) -> Result<Tree> {
    let read_error = |e| Error::io("read", path, e);
    let mut file = fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let file_len = file.metadata().map_err(read_error)?.len();
    let mut head = Vec::with_capacity(512);
    (&mut file).take(512).read_to_end(&mut head).map_err(read_error)?;
    check_tar_head(&head)?;

    let mut archive = tar::Archive::new(io::BufReader::new(head.as_slice().chain(file)));
    let mut loader = Loader::new(limits);
    let mut extensions = Extensions::default();
    for entry in archive.entries().map_err(read_error)?.raw(true) {
        let mut entry = entry.map_err(read_error)?;
        let kind = entry.header().entry_type();
        let header_name = String::from_utf8_lossy(&entry.header().path_bytes()).into_owned();
        loader.count(&header_name)?;
        let size = entry.size();
        let remaining = file_len.saturating_sub(entry.raw_file_position());
        let mut read_extension = |what: &str, limit: u64, entry: &mut tar::Entry<'_, _>| -> Result<Vec<u8>> {
            if size > limit {
                return Err(
                    unsafe_entry(&header_name, format!("is {what} of {size} bytes, over the limit of {limit} bytes")).help(SIZE_HELP)
                );
            }
            fits(&header_name, size, remaining)?;
            loader.reserve(&header_name, size)?;
            let mut bytes = Vec::with_capacity(size as usize);
            entry.read_to_end(&mut bytes).map_err(read_error)?;
            Ok(bytes)
        };
        let (slot, bytes) = match kind {
            EntryType::GNULongName => {
                (&mut extensions.long_name, long_name(read_extension("a GNU long name", MAX_LONG_NAME_BYTES, &mut entry)?))
            }
            EntryType::GNULongLink => {
                (&mut extensions.long_link, long_name(read_extension("a GNU long link name", MAX_LONG_NAME_BYTES, &mut entry)?))
            }
            EntryType::XHeader => {
                let pax = read_extension("a PAX header", MAX_PAX_HEADER_BYTES, &mut entry)?;
                for record in tar::PaxExtensions::new(&pax) {
                    let record = record.map_err(|_| unsafe_entry(&header_name, "is a PAX header with a malformed record"))?;
                    if record.key_bytes().starts_with(b"GNU.sparse") {
                        return Err(unsafe_entry(
                            &header_name,
                            "describes a sparse file; only regular files, directories and links are allowed",
                        ));
                    }
                }
                (&mut extensions.pax, pax)
            }
            // `git archive` writes a global PAX header; it describes no file and is not read.
            EntryType::XGlobalHeader => {
                read_extension("a global PAX header", MAX_PAX_HEADER_BYTES, &mut entry)?;
                continue;
            }
            _ => {
                let extensions = std::mem::take(&mut extensions);
                load_tar_entry(&mut loader, &mut entry, extensions, &header_name, remaining).map_err(|e| e.in_archive(path))?;
                continue;
            }
        };
        if slot.replace(bytes).is_some() {
            return Err(unsafe_entry(&header_name, "is the second header of its kind before one entry: which one names it is ambiguous"));
        }
    }
    if !extensions.is_empty() {
        return Err(Error::new(ErrorKind::Io, "the archive ends after a long name or PAX header, before the entry it describes")
            .help("the file is truncated: copy or download it again"));
    }
    loader.finish()
}

/// Refuses an entry of `size` bytes when only `remaining` follow its header:
/// checked before anything is read, as the size may be a lie.
fn fits(entry: &str, size: u64, remaining: u64) -> Result<()> {
    if size > remaining {
        return Err(Error::new(ErrorKind::Io, format!("the archive ends inside this entry: it declares {size} bytes, {remaining} follow"))
            .in_file(entry)
            .help("the file is truncated or corrupt: copy or download it again"));
    }
    Ok(())
}

/// Adds one file, directory or link (whose data, `remaining` bytes of the
/// file at most, is next), named by its `extensions` if it has them.
fn load_tar_entry<R: Read>(
    loader: &mut Loader,
    entry: &mut tar::Entry<'_, R>,
    extensions: Extensions,
    header_name: &str,
    remaining: u64,
) -> Result<()> {
    let kind = entry.header().entry_type();
    let pax = extensions.pax.as_deref();
    let pax_path = pax_record(pax, "path");
    if let (Some(pax_path), Some(long_name)) = (pax_path, &extensions.long_name) {
        if pax_path != long_name.as_slice() {
            return Err(unsafe_entry(header_name, "has a GNU long name and a PAX path that differ: tar readers disagree on which applies"));
        }
    }
    let path_bytes = match (pax_path, &extensions.long_name) {
        (Some(path), _) => path.to_vec(),
        (None, Some(path)) => path.clone(),
        (None, None) => entry.header().path_bytes().into_owned(),
    };
    let raw = String::from_utf8_lossy(&path_bytes).into_owned();
    let size = entry.size();
    if let Some(declared) = pax_record(pax, "size") {
        let declared = std::str::from_utf8(declared).ok().and_then(|text| text.parse::<u64>().ok());
        let Some(declared) = declared.filter(|&declared| declared <= loader.limits.max_entry_bytes) else {
            let max = loader.limits.max_entry_bytes;
            return Err(unsafe_entry(&raw, format!("has a PAX size that is not a number of at most {max} bytes (the limit per entry)"))
                .help(SIZE_HELP));
        };
        // The tar header's size places the next header; a reader obeying the PAX size would see other entries.
        if declared != size {
            return Err(unsafe_entry(
                &raw,
                format!("has a PAX size of {declared} bytes but a tar header size of {size}: tar readers disagree on where it ends"),
            ));
        }
    }
    let key = match std::str::from_utf8(&path_bytes) {
        Ok(path) => normalize(path).map_err(|reason| unsafe_entry(&raw, reason))?,
        Err(_) => return Err(unsafe_entry(&raw, "has a path that is not UTF-8")),
    };
    let is_file = matches!(kind, EntryType::Regular | EntryType::Continuous) && !raw.ends_with('/');
    if !is_file {
        // Data nobody reads is skipped, but must be there for the next header to be.
        fits(&raw, size, remaining)?;
    }
    match kind {
        EntryType::Directory => {}
        // Pre-POSIX tars mark directories only by the trailing slash.
        EntryType::Regular | EntryType::Continuous if raw.ends_with('/') => {}
        _ if key.is_empty() => return Err(unsafe_entry(&raw, "names the archive root, not a file")),
        EntryType::Regular | EntryType::Continuous => {
            loader.reserve(&raw, size)?;
            fits(&raw, size, remaining)?;
            let mut bytes = Vec::with_capacity(size as usize);
            entry.read_to_end(&mut bytes).map_err(|e| Error::io("read", Path::new(&raw), e).in_file(&raw))?;
            loader.add_file(key, bytes);
        }
        EntryType::Symlink | EntryType::Link => {
            let what = if kind == EntryType::Symlink { "symlink" } else { "hardlink" };
            let target_bytes = match (pax_record(pax, "linkpath"), extensions.long_link) {
                (Some(target), _) => Some(target.to_vec()),
                (None, Some(target)) => Some(target),
                (None, None) => entry.header().link_name_bytes().map(|target| target.into_owned()),
            };
            let raw_target = target_bytes.map(|target| String::from_utf8_lossy(&target).into_owned());
            let Some(raw_target) = raw_target.filter(|t| !t.is_empty()) else {
                return Err(unsafe_entry(&raw, format!("is a {what} without a target")));
            };
            // A symlink is relative to its own directory, a hardlink to the archive root.
            let base = match key.rsplit_once('/') {
                Some((dir, _)) if kind == EntryType::Symlink => dir,
                _ => "",
            };
            let Some(target) = resolve_target(base, &raw_target) else {
                return Err(unsafe_entry(&raw, format!("is a {what} to `{raw_target}`, which points outside the archive")));
            };
            loader.add_link(key, Link { entry: raw, raw_target, target });
        }
        other => {
            let what = match other {
                EntryType::Char => "a character device".to_owned(),
                EntryType::Block => "a block device".to_owned(),
                EntryType::Fifo => "a FIFO".to_owned(),
                EntryType::GNUSparse => "a sparse file".to_owned(),
                other => format!("an entry of type `{}`", other.as_byte().escape_ascii()),
            };
            return Err(unsafe_entry(&raw, format!("is {what}; only regular files, directories and links are allowed")));
        }
    }
    Ok(())
}

/// Rejects compressed or non-tar input up front, with a message better than a checksum error.
fn check_tar_head(head: &[u8]) -> Result<()> {
    let not_tar = |message: String, tool: &str| {
        Error::new(ErrorKind::NotMlf, format!("not an uncompressed tar: {message}"))
            .help(format!("pass the .tar written by tvmc/export_model_library_format, or `{tool}` it first"))
    };
    const COMPRESSED: [(&[u8], &str, &str); 5] = [
        (&[0x1f, 0x8b], "gzip", "gunzip"),
        (b"BZh", "bzip2", "bunzip2"),
        (&[0xfd, b'7', b'z', b'X', b'Z', 0], "xz", "unxz"),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd", "unzstd"),
        (b"PK\x03\x04", "zip", "unzip"),
    ];
    if let Some((_, format, tool)) = COMPRESSED.iter().find(|(magic, _, _)| head.starts_with(magic)) {
        return Err(not_tar(format!("it is {format}-compressed"), tool));
    }
    if head.len() < 512 {
        return Err(not_tar(format!("it is only {} bytes long", head.len()), "gunzip"));
    }
    // An all-zero block is an empty archive.
    if head.iter().all(|&byte| byte == 0) {
        return Ok(());
    }
    // The checksum is the byte sum of the header with its own field read as spaces.
    let sum: u32 = head.iter().enumerate().map(|(i, &byte)| if (148..156).contains(&i) { u32::from(b' ') } else { u32::from(byte) }).sum();
    if tar::Header::from_byte_slice(head).cksum().ok() != Some(sum) {
        return Err(not_tar("its first block is not a tar header".to_owned(), "gunzip"));
    }
    Ok(())
}

fn load_dir(root: &Path, limits: Limits) -> Result<Tree> {
    let root = fs::canonicalize(root).map_err(|e| Error::io("resolve", root, e))?;
    let mut loader = Loader::new(limits);
    // The directories being walked, innermost last: a loop instead of
    // recursion, so the tree's depth cannot exhaust the stack.
    let mut open = vec![Walking::open(root.clone(), String::new())?];
    while let Some(walking) = open.last_mut() {
        let Some(name) = walking.names.next() else {
            open.pop();
            continue;
        };
        let path = walking.dir.join(&name);
        let raw = join_key(&walking.prefix, &name.to_string_lossy());
        let Some(name) = name.to_str() else {
            return Err(unsafe_entry(&raw, "has a name that is not UTF-8"));
        };
        if VCS_DIRS.contains(&name) {
            continue;
        }
        loader.count(&raw)?;
        let key = normalize(&raw).map_err(|reason| unsafe_entry(&raw, reason))?;
        let link_metadata = fs::symlink_metadata(&path).map_err(|e| Error::io("inspect", &path, e))?;
        let real = if link_metadata.file_type().is_symlink() {
            let real = fs::canonicalize(&path).map_err(|e| Error::io("follow the symlink", &path, e).in_file(&raw))?;
            if !real.starts_with(&root) {
                return Err(unsafe_entry(&raw, format!("is a symlink to `{}`, which is outside the directory", real.display())));
            }
            real
        } else {
            path
        };
        let metadata = fs::metadata(&real).map_err(|e| Error::io("inspect", &real, e))?;
        if metadata.is_dir() {
            if open.iter().any(|walking| walking.dir == real) {
                return Err(unsafe_entry(&raw, "is a symlink to a directory that contains it"));
            }
            open.push(Walking::open(real, key)?);
        } else if metadata.is_file() {
            loader.reserve(&raw, metadata.len())?;
            // No more than was counted, should the file grow.
            let mut bytes = Vec::with_capacity(metadata.len() as usize);
            let file = fs::File::open(&real).map_err(|e| Error::io("read", &real, e))?;
            file.take(metadata.len()).read_to_end(&mut bytes).map_err(|e| Error::io("read", &real, e))?;
            loader.add_file(key, bytes);
        } else {
            return Err(unsafe_entry(&raw, "is not a regular file, directory or symlink"));
        }
    }
    loader.finish()
}

/// A directory of a directory archive being walked.
struct Walking {
    /// Canonical.
    dir: PathBuf,
    /// Its key in the tree.
    prefix: String,
    /// The names in it not taken yet, sorted.
    names: std::vec::IntoIter<std::ffi::OsString>,
}

impl Walking {
    fn open(dir: PathBuf, prefix: String) -> Result<Walking> {
        let mut names = fs::read_dir(&dir)
            .and_then(|entries| entries.map(|entry| entry.map(|entry| entry.file_name())).collect::<io::Result<Vec<_>>>())
            .map_err(|e| Error::io("read", &dir, e))?;
        names.sort();
        Ok(Walking { dir, prefix, names: names.into_iter() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{corpus_dir, scratch};

    /// A tar of (raw name, type, data or link target); names are written raw so hostile ones survive.
    fn tar_of(members: &[(&str, EntryType, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for &(name, kind, data) in members {
            let mut header = tar::Header::new_gnu();
            header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            header.set_entry_type(kind);
            header.set_mode(0o644);
            let data = match kind {
                EntryType::Symlink | EntryType::Link => {
                    header.set_link_name_literal(data).unwrap();
                    ""
                }
                _ => data,
            };
            header.set_size(data.len() as u64);
            header.set_cksum();
            builder.append(&header, data.as_bytes()).unwrap();
        }
        builder.into_inner().unwrap()
    }

    fn load_bytes(bytes: &[u8], limits: Limits) -> Result<Tree> {
        let dir = scratch("tar");
        let path = dir.join("model.tar");
        fs::write(&path, bytes).unwrap();
        let tree = Tree::load(&path, limits);
        fs::remove_dir_all(&dir).unwrap();
        tree
    }

    fn load_members(members: &[(&str, EntryType, &str)]) -> Result<Tree> {
        load_bytes(&tar_of(members), Limits::default())
    }

    fn expect_error(result: Result<Tree>, kind: ErrorKind, needles: &[&str]) {
        let error = match result {
            Ok(_) => panic!("expected a {kind:?} error"),
            Err(error) => error,
        };
        assert_eq!(error.kind(), kind, "{error}");
        for needle in needles {
            assert!(error.to_string().contains(needle), "`{needle}` not in: {error}");
        }
        assert!(error.help_text().is_some(), "{error}");
    }

    fn file(name: &str, data: &'static str) -> (String, Vec<u8>) {
        (name.to_owned(), data.as_bytes().to_vec())
    }

    #[test]
    fn dot_slash_names_the_same_file() {
        let tree = load_members(&[
            ("./", EntryType::Directory, ""),
            ("./codegen/", EntryType::Directory, ""),
            ("./codegen/host/src/lib0.c", EntryType::Regular, "old"),
            ("codegen//host/./src/lib0.c", EntryType::Regular, "new"),
            ("./././metadata.json", EntryType::Regular, "{}"),
        ])
        .unwrap();
        assert_eq!(tree.paths().collect::<Vec<_>>(), ["codegen/host/src/lib0.c", "metadata.json"]);
        assert_eq!(tree.get("./codegen/host/src/lib0.c"), Some(&b"new"[..]));
        assert_eq!(tree.get("codegen/host/src/lib0.c"), Some(&b"new"[..]));
        assert!(tree.contains("./metadata.json") && tree.contains("metadata.json"));
        assert!(!tree.contains("../metadata.json"));
    }

    #[test]
    fn digest_ignores_order_and_dot_slash() {
        let a = load_members(&[("./a.c", EntryType::Regular, "int a;"), ("./b/c.h", EntryType::Regular, "")]).unwrap();
        let b = load_members(&[("b/c.h", EntryType::Regular, ""), ("a.c", EntryType::Regular, "int a;")]).unwrap();
        let from_files = Tree::from_files([file("b/c.h", ""), file("./a.c", "int a;")]).unwrap();
        assert_eq!(a.digest().unwrap(), b.digest().unwrap());
        assert_eq!(a.digest().unwrap(), from_files.digest().unwrap());
        assert_eq!(digest_hex(&a.digest().unwrap()).len(), 64);

        let changed = Tree::from_files([file("b/c.h", ""), file("a.c", "int b;")]).unwrap();
        assert_ne!(a.digest().unwrap(), changed.digest().unwrap());
        // Moving bytes between path and content must change the digest too.
        let shifted = Tree::from_files([file("ab", "c")]).unwrap();
        assert_ne!(Tree::from_files([file("a", "bc")]).unwrap().digest().unwrap(), shifted.digest().unwrap());
    }

    #[test]
    fn files_under_lists_a_subtree() {
        let tree = Tree::from_files([
            file("codegen/host/src/lib1.c", ""),
            file("codegen/host/src/lib0.c", ""),
            file("codegen/host/src-old/lib0.c", ""),
            file("codegen/host/src.c", ""),
            file("codegen/host/src/sub/x.c", ""),
            file("metadata.json", ""),
        ])
        .unwrap();
        let under: Vec<_> = tree.files_under("codegen/host/src").collect();
        assert_eq!(under, ["codegen/host/src/lib0.c", "codegen/host/src/lib1.c", "codegen/host/src/sub/x.c"]);
        assert_eq!(tree.files_under("./codegen/host/src/").count(), 3);
        assert_eq!(tree.files_under("").count(), 6);
        assert_eq!(tree.files_under("../codegen").count(), 0);
    }

    #[test]
    fn rejects_unsafe_paths() {
        for name in ["/etc/passwd", "../evil", "a/../../evil", "C:/evil", "\\evil"] {
            expect_error(load_members(&[(name, EntryType::Regular, "x")]), ErrorKind::UnsafeEntry, &[name]);
        }
        expect_error(Tree::from_files([file("../x", "")]), ErrorKind::UnsafeEntry, &["../x"]);
        expect_error(Tree::from_files([file("a", ""), file("a/b", "")]), ErrorKind::UnsafeEntry, &["a/b"]);
    }

    #[test]
    fn rejects_escaping_links() {
        for (name, kind, target) in [
            ("./codegen/evil", EntryType::Symlink, "../../etc/passwd"),
            ("./evil", EntryType::Symlink, "/etc/passwd"),
            ("./evil", EntryType::Link, "../outside"),
            ("./evil", EntryType::Link, "/etc/passwd"),
        ] {
            let result = load_members(&[("./codegen/x.c", EntryType::Regular, "x"), (name, kind, target)]);
            expect_error(result, ErrorKind::UnsafeEntry, &[name, target]);
        }
        let dangling = load_members(&[("./a", EntryType::Symlink, "missing")]);
        expect_error(dangling, ErrorKind::UnsafeEntry, &["./a", "missing"]);
        let cycle = load_members(&[("a", EntryType::Symlink, "b"), ("b", EntryType::Symlink, "a")]);
        expect_error(cycle, ErrorKind::UnsafeEntry, &["cycle"]);
    }

    #[test]
    fn links_inside_the_tree_become_copies() {
        let tree = load_members(&[
            ("./include/link.h", EntryType::Symlink, "../src/./real.h"),
            ("./src/real.h", EntryType::Regular, "#pragma once"),
            ("./hard.h", EntryType::Link, "./src/real.h"),
            ("./chain.h", EntryType::Symlink, "include/link.h"),
        ])
        .unwrap();
        for path in ["include/link.h", "hard.h", "chain.h", "src/real.h"] {
            assert_eq!(tree.get(path), Some(&b"#pragma once"[..]), "{path}");
        }
    }

    #[test]
    fn rejects_special_files() {
        for (kind, what) in [(EntryType::Char, "character device"), (EntryType::Block, "block device"), (EntryType::Fifo, "FIFO")] {
            expect_error(load_members(&[("./dev/thing", kind, "")]), ErrorKind::UnsafeEntry, &["./dev/thing", what]);
        }
    }

    #[test]
    fn enforces_size_limits() {
        let limits = Limits { max_entry_bytes: 10, max_total_bytes: 20, max_entries: 100 };
        let big = tar_of(&[("./small", EntryType::Regular, "1234"), ("./big", EntryType::Regular, "0123456789a")]);
        expect_error(load_bytes(&big, limits), ErrorKind::UnsafeEntry, &["./big", "10 bytes"]);

        let many =
            tar_of(&[("a", EntryType::Regular, "12345678"), ("b", EntryType::Regular, "12345678"), ("c", EntryType::Regular, "12345678")]);
        expect_error(load_bytes(&many, limits), ErrorKind::UnsafeEntry, &["c", "20 bytes"]);

        // Link copies count too.
        let copies = tar_of(&[("a", EntryType::Regular, "12345678"), ("b", EntryType::Link, "a"), ("c", EntryType::Symlink, "a")]);
        expect_error(load_bytes(&copies, limits), ErrorKind::UnsafeEntry, &["20 bytes"]);
    }

    #[test]
    fn reads_gnu_long_names() {
        let long = format!("./codegen/host/src/{}.c", "x".repeat(150));
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(3);
        builder.append_data(&mut header, &long, &b"abc"[..]).unwrap();
        let tree = load_bytes(&builder.into_inner().unwrap(), Limits::default()).unwrap();
        assert_eq!(tree.get(&long), Some(&b"abc"[..]));
    }

    /// A raw tar header of `kind` named `name` that declares `size` bytes.
    fn raw_header(name: &str, kind: EntryType, size: u64) -> Vec<u8> {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_entry_type(kind);
        header.set_mode(0o644);
        header.set_size(size);
        header.set_cksum();
        header.as_bytes().to_vec()
    }

    /// `data` padded to whole tar blocks.
    fn blocks(data: &[u8]) -> Vec<u8> {
        let mut padded = data.to_vec();
        padded.resize(data.len().div_ceil(512) * 512, 0);
        padded
    }

    /// A PAX header's records (`<length> <key>=<value>\n`, the length counting itself).
    fn pax_records(records: &[(&str, &str)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for (key, value) in records {
            let rest = key.len() + value.len() + 3;
            let mut length = rest + 1;
            while length != rest + length.to_string().len() {
                length = rest + length.to_string().len();
            }
            bytes.extend(format!("{length} {key}={value}\n").into_bytes());
        }
        bytes
    }

    /// A tar of raw `parts` (headers and data), ended as tar ends.
    fn tar_from(parts: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = parts.concat();
        bytes.extend([0; 1024]);
        bytes
    }

    /// An extension header of `kind` with `payload`, then a 3-byte file named `name`.
    fn extended(kind: EntryType, payload: &[u8], name: &str) -> Vec<u8> {
        tar_from(&[
            raw_header("././@LongLink", kind, payload.len() as u64),
            blocks(payload),
            raw_header(name, EntryType::Regular, 3),
            blocks(b"abc"),
        ])
    }

    #[test]
    fn gnu_long_names_and_pax_headers_name_entries() {
        let long = format!("codegen/host/src/{}.c", "x".repeat(300));
        let from_long_name = load_bytes(&extended(EntryType::GNULongName, format!("{long}\0").as_bytes(), "short"), Limits::default());
        assert_eq!(from_long_name.unwrap().paths().collect::<Vec<_>>(), [long.as_str()]);
        let pax = pax_records(&[("mtime", "1700000000.5"), ("path", &long), ("size", "3")]);
        let from_pax = load_bytes(&extended(EntryType::XHeader, &pax, "short"), Limits::default()).unwrap();
        assert_eq!(from_pax.get(&long), Some(&b"abc"[..]));
        let link = tar_from(&[
            raw_header("real.c", EntryType::Regular, 3),
            blocks(b"abc"),
            raw_header("././@LongLink", EntryType::GNULongLink, 7),
            blocks(b"real.c\0"),
            raw_header("link.c", EntryType::Symlink, 0),
        ]);
        assert_eq!(load_bytes(&link, Limits::default()).unwrap().get("link.c"), Some(&b"abc"[..]));
    }

    #[test]
    fn gnu_long_names_and_pax_headers_are_limited_before_they_are_read() {
        let started = std::time::Instant::now();
        let huge = 3 << 29;
        let limits = Limits::default();
        for (kind, what) in [
            (EntryType::GNULongName, "a GNU long name of 1610612736 bytes, over the limit of 8192 bytes"),
            (EntryType::GNULongLink, "a GNU long link name of 1610612736 bytes, over the limit of 8192 bytes"),
            (EntryType::XHeader, "a PAX header of 1610612736 bytes, over the limit of 65536 bytes"),
            (EntryType::XGlobalHeader, "a global PAX header of 1610612736 bytes, over the limit of 65536 bytes"),
        ] {
            let bytes = tar_from(&[raw_header("././@LongLink", kind, huge), blocks(b"x")]);
            expect_error(load_bytes(&bytes, limits), ErrorKind::UnsafeEntry, &["././@LongLink", what]);
        }
        // Under the cap, but more than the file holds.
        let bytes = tar_from(&[raw_header("././@LongLink", EntryType::GNULongName, 4000), blocks(b"x")]);
        expect_error(load_bytes(&bytes, limits), ErrorKind::Io, &["ends inside this entry: it declares 4000 bytes, 1536 follow"]);
        let bytes = tar_from(&[raw_header("big.c", EntryType::Regular, 100 << 20), blocks(b"x")]);
        expect_error(load_bytes(&bytes, limits), ErrorKind::Io, &["big.c", "declares 104857600 bytes"]);
        let bytes = tar_from(&[raw_header("big.c", EntryType::Regular, huge), blocks(b"x")]);
        expect_error(load_bytes(&bytes, limits), ErrorKind::UnsafeEntry, &["big.c", "over the limit of 536870912 bytes per entry"]);
        let long_name = format!("{}\0", "a/".repeat(5000));
        let bytes = extended(EntryType::GNULongName, long_name.as_bytes(), "x");
        expect_error(load_bytes(&bytes, limits), ErrorKind::UnsafeEntry, &["GNU long name of 10001 bytes"]);

        let pax = |records: &[(&str, &str)]| extended(EntryType::XHeader, &pax_records(records), "file.c");
        let cases: [(Vec<u8>, &str); 7] = [
            (pax(&[("size", "1610612736")]), "has a PAX size that is not a number of at most 536870912 bytes"),
            (pax(&[("size", "lots")]), "has a PAX size that is not a number"),
            (pax(&[("size", "5")]), "a PAX size of 5 bytes but a tar header size of 3"),
            (pax(&[("path", "../outside.c")]), "has a `..` component"),
            (pax(&[("GNU.sparse.map", "0,3")]), "sparse file"),
            (extended(EntryType::XHeader, b"99999 path=x\n", "file.c"), "malformed record"),
            (tar_from(&[raw_header("././@LongLink", EntryType::GNULongName, 2), blocks(b"a\0")]), "ends after a long name or PAX header"),
        ];
        for (bytes, needle) in cases {
            let error = load_bytes(&bytes, limits).err().expect(needle);
            assert!(error.to_string().contains(needle), "`{needle}` not in: {error}");
        }
        let twice = tar_from(&[
            raw_header("././@LongLink", EntryType::GNULongName, 2),
            blocks(b"a\0"),
            raw_header("././@LongLink", EntryType::GNULongName, 2),
            blocks(b"b\0"),
            raw_header("c", EntryType::Regular, 0),
        ]);
        expect_error(load_bytes(&twice, limits), ErrorKind::UnsafeEntry, &["second header of its kind"]);
        let both = tar_from(&[
            raw_header("././@LongLink", EntryType::GNULongName, 2),
            blocks(b"a\0"),
            raw_header("././@PaxHeader", EntryType::XHeader, pax_records(&[("path", "b")]).len() as u64),
            blocks(&pax_records(&[("path", "b")])),
            raw_header("c", EntryType::Regular, 0),
        ]);
        expect_error(load_bytes(&both, limits), ErrorKind::UnsafeEntry, &["a GNU long name and a PAX path that differ"]);
        // Extension headers count as entries.
        let small = Limits { max_entries: 10, ..limits };
        let many: Vec<Vec<u8>> = (0..20).flat_map(|_| [raw_header("g", EntryType::XGlobalHeader, 0)]).collect();
        expect_error(load_bytes(&tar_from(&many), small), ErrorKind::UnsafeEntry, &["limit of 10 entries"]);
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    }

    #[test]
    fn rejects_non_tar_input() {
        let mut gzip = vec![0x1f, 0x8b, 0x08, 0x00];
        gzip.resize(2048, 0);
        let dir = scratch("gzip");
        let path = dir.join("model.tar.gz");
        fs::write(&path, &gzip).unwrap();
        expect_error(Tree::load(&path, Limits::default()), ErrorKind::NotMlf, &["model.tar.gz", "gzip", "gunzip"]);

        fs::write(&path, "just some text, not an archive".repeat(40)).unwrap();
        expect_error(Tree::load(&path, Limits::default()), ErrorKind::NotMlf, &["model.tar.gz", "not an uncompressed tar"]);
        fs::remove_dir_all(&dir).unwrap();

        let missing = dir.join("missing.tar");
        let error = Tree::load(&missing, Limits::default()).err().unwrap();
        assert_eq!(error.kind(), ErrorKind::Io);
        assert!(error.to_string().contains("missing.tar"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn directory_symlinks_must_stay_inside() {
        let dir = scratch("dir-links");
        let root = dir.join("model");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join(".git/HEAD"), "ref").unwrap();
        fs::write(root.join("src/real.c"), "int x;").unwrap();
        fs::write(dir.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink("real.c", root.join("src/link.c")).unwrap();
        let tree = Tree::load(&root, Limits::default()).unwrap();
        assert_eq!(tree.paths().collect::<Vec<_>>(), ["src/link.c", "src/real.c"]);
        assert_eq!(tree.get("src/link.c"), Some(&b"int x;"[..]));

        std::os::unix::fs::symlink("..", root.join("src/loop")).unwrap();
        expect_error(Tree::load(&root, Limits::default()), ErrorKind::UnsafeEntry, &["src/loop"]);
        fs::remove_file(root.join("src/loop")).unwrap();

        std::os::unix::fs::symlink("../../secret", root.join("src/escape")).unwrap();
        expect_error(Tree::load(&root, Limits::default()), ErrorKind::UnsafeEntry, &["src/escape", "secret"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The corpus and every `model.tar` in it.
    fn corpus_tars() -> Option<(PathBuf, Vec<PathBuf>)> {
        let corpus = corpus_dir()?;
        let tars: Vec<_> = glob::glob(&format!("{}/**/model.tar", corpus.display())).unwrap().map(|p| p.unwrap()).collect();
        assert!(!tars.is_empty());
        Some((corpus, tars))
    }

    #[test]
    fn loads_the_corpus() {
        let Some((corpus, tars)) = corpus_tars() else { return };
        for tar in &tars {
            let tree = Tree::load(tar, Limits::default()).unwrap_or_else(|e| panic!("{e}"));
            assert!(tree.contains("metadata.json"), "{}", tar.display());
        }
        for name in ["linaro-tfm-sine", "etiss-kws-rv32-tvm0160"] {
            let dir = corpus.join("real-world").join(name).join("model");
            let tree = Tree::load(&dir, Limits::default()).unwrap_or_else(|e| panic!("{e}"));
            assert!(tree.contains("metadata.json"), "{}", dir.display());
        }
    }
}
