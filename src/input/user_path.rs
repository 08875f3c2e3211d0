//! Paths a user gives (the archive, `memory.x`, sources, include and CMSIS-NN
//! directories): a relative one is taken from a base directory, the package
//! root for the Builder, the current directory for `inspect`. A path that
//! leads nowhere is reported normalised, with the base it was taken from.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

/// The directory relative paths are taken from, and how messages name it.
#[derive(Debug, Clone)]
pub(crate) struct Base {
    dir: PathBuf,
    /// `the package root`, `the current directory`.
    name: &'static str,
    /// Where the directory came from, when that is worth saying (`CARGO_MANIFEST_DIR`).
    origin: Option<&'static str>,
}

/// What must be at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// An archive: a `.tar` file or an extracted directory (what else is there, `Tree::load` refuses).
    Archive,
    File,
    Dir,
}

impl Base {
    /// The Builder's: the package root (`manifest_dir`, Cargo's
    /// `CARGO_MANIFEST_DIR`, where it runs the build script), else, outside
    /// Cargo, the current directory.
    pub fn package_root(manifest_dir: Option<String>) -> Base {
        match manifest_dir {
            Some(dir) => Base { dir: normalize(Path::new(&dir)), name: "the package root", origin: Some("CARGO_MANIFEST_DIR") },
            None => Base::current_dir(),
        }
    }

    /// The current directory (`inspect`, the command line).
    pub fn current_dir() -> Base {
        let dir = std::env::current_dir().map_or_else(|_| PathBuf::from("."), |dir| normalize(&dir));
        Base { dir, name: "the current directory", origin: None }
    }

    /// `given` taken from this base (an absolute path as it is), normalised.
    pub fn resolve(&self, given: &Path) -> PathBuf {
        normalize(&self.dir.join(given))
    }

    /// [`Base::resolve`] for an archive (a file or a directory); `what` names
    /// where the path came from in the help (`the path given to Builder::new(..)`).
    pub fn archive(&self, given: &Path, what: &str) -> Result<PathBuf> {
        self.find(given, Expect::Archive, what)
    }

    /// [`Base::resolve`] for a file that must exist.
    pub fn file(&self, given: &Path, what: &str) -> Result<PathBuf> {
        self.find(given, Expect::File, what)
    }

    /// [`Base::resolve`] for a directory that must exist.
    pub fn dir(&self, given: &Path, what: &str) -> Result<PathBuf> {
        self.find(given, Expect::Dir, what)
    }

    fn find(&self, given: &Path, expect: Expect, what: &str) -> Result<PathBuf> {
        let path = self.resolve(given);
        let problem = match fs::metadata(&path) {
            Ok(found) if expect == Expect::File && found.is_dir() => "is a directory, not a file".to_string(),
            Ok(found) if expect == Expect::File && !found.is_file() => {
                format!("is {}, not a regular file: mlf-build reads only regular files", kind_of(&found.file_type()))
            }
            Ok(found) if expect == Expect::Dir && !found.is_dir() => "is not a directory".to_string(),
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => "does not exist".to_string(),
            Err(e) => format!("cannot be read: {e}"),
        };
        let (taken_from, help) = if given.is_absolute() {
            (String::new(), format!("correct {what}"))
        } else {
            let origin = self.origin.map(|origin| format!(", {origin}")).unwrap_or_default();
            (
                format!(" (the path `{}` is taken from {} {}{origin})", given.display(), self.name, self.dir.display()),
                format!("correct {what}: relative to {}, or absolute", self.name),
            )
        };
        let error = Error::new(ErrorKind::Io, format!("{problem}{taken_from}")).help(help);
        Err(if expect == Expect::Archive { error.in_archive(&path) } else { error.in_file(path.display().to_string()) })
    }
}

/// The most entries a walk through a user's folder reads (CMSIS-NN has a few hundred files).
pub(crate) const MAX_FOLDER_ENTRIES: usize = 100_000;

/// What a file that is not a regular file is, for messages: `a FIFO`, `a character device`, ….
fn kind_of(file_type: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        } else if file_type.is_char_device() {
            return "a character device";
        } else if file_type.is_block_device() {
            return "a block device";
        } else if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "neither a regular file nor a directory"
    }
}

fn not_regular(path: &Path, file_type: &fs::FileType) -> Error {
    Error::new(ErrorKind::Io, format!("is {}, not a regular file: mlf-build reads only regular files", kind_of(file_type)))
        .in_file(path.display().to_string())
        .help("replace it with a regular file (a FIFO or a device would block the build or never end)")
}

/// Opens `path` (a symlink is followed) only if it is a regular file, asking
/// the file system before opening: opening a FIFO blocks. Returns the file
/// and its length.
pub(crate) fn open_regular(path: &Path) -> Result<(fs::File, u64)> {
    let found = fs::metadata(path).map_err(|e| Error::io("inspect", path, e))?;
    if !found.is_file() {
        return Err(not_regular(path, &found.file_type()));
    }
    let file = fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    // What was opened, in case the path changed since it was asked about.
    let opened = file.metadata().map_err(|e| Error::io("inspect", path, e))?;
    if !opened.is_file() {
        return Err(not_regular(path, &opened.file_type()));
    }
    Ok((file, opened.len()))
}

/// The bytes of the regular file `path`, at most `limit` of them: a larger
/// file (or one growing while read) is refused naming the limit and `what`
/// the file is for (`memory.x`).
pub(crate) fn read_regular(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
    let too_large = |size: u64| {
        Error::new(ErrorKind::Io, format!("is {size} bytes, over the limit of {limit} bytes for {what}"))
            .in_file(path.display().to_string())
            .help(format!("check that this is the right file: {what} is far smaller than this"))
    };
    let (file, length) = open_regular(path)?;
    if length > limit {
        return Err(too_large(length));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Every file below `root` that `wanted` accepts, sorted: symlinks are
/// followed, but each file or directory they lead to is taken once (by its
/// canonical path), so links cannot loop or fan out; at most
/// [`MAX_FOLDER_ENTRIES`] entries are read, and a wanted name that is not a
/// regular file (a FIFO, a device, a socket) is refused by name, never opened.
/// `what` names the folder in errors (`the CMSIS-NN folder`).
pub(crate) fn files_below(root: &Path, what: &str, wanted: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>> {
    let canonical = |path: &Path| fs::canonicalize(path).map_err(|e| Error::io("resolve", path, e));
    let mut visited = BTreeSet::from([canonical(root)?]);
    let mut files = Vec::new();
    let mut entries = 0usize;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mut children = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| Error::io("read", &dir, e))? {
            entries += 1;
            if entries > MAX_FOLDER_ENTRIES {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("{what} has more than {MAX_FOLDER_ENTRIES} entries (counting every directory symlinks lead to)"),
                )
                .in_file(root.display().to_string())
                .help(format!("give {what} itself, not a folder above it")));
            }
            children.push(entry.map_err(|e| Error::io("read", &dir, e))?.path());
        }
        // Sorted, so which of two paths to one file is taken does not depend on the file system.
        children.sort_unstable();
        let mut subdirs = Vec::new();
        for path in children {
            // Follows a symlink: it is the target that is read.
            let found = match fs::metadata(&path) {
                Ok(found) => found,
                Err(_) if !wanted(&path) => continue,
                Err(e) => return Err(Error::io("inspect", &path, e)),
            };
            if !found.is_dir() && !wanted(&path) {
                continue;
            }
            if !visited.insert(canonical(&path)?) {
                continue;
            }
            if found.is_dir() {
                subdirs.push(path);
            } else if found.is_file() {
                files.push(path);
            } else {
                return Err(not_regular(&path, &found.file_type()));
            }
        }
        pending.extend(subdirs.into_iter().rev());
    }
    files.sort();
    Ok(files)
}

/// `path` without `.` components and with each `..` taking away the
/// component before it, without asking the file system (the path need not
/// exist; a symbolic link is not followed). `..` above the root stays at the root.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match normal.components().next_back() {
                Some(Component::Normal(_)) => {
                    normal.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => normal.push(".."),
            },
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalising_folds_dots_without_the_file_system() {
        let cases = [
            ("/w/examples/host-runner/../../../../../shared/m.tar", "/shared/m.tar"),
            ("/w/examples/host-runner/../../shared/./m.tar", "/w/shared/m.tar"),
            ("../../a/../b", "../../b"),
            ("a/./b/..", "a"),
            ("/..", "/"),
        ];
        for (path, normal) in cases {
            assert_eq!(normalize(Path::new(path)), Path::new(normal), "{path}");
        }
    }

    #[test]
    fn a_missing_relative_path_names_the_file_the_base_and_what_to_do() {
        let base = Base { dir: PathBuf::from("/work/app"), name: "the package root", origin: Some("CARGO_MANIFEST_DIR") };
        let error = base.archive(Path::new("models/../modle.tar"), "the path given to Builder::new(..)").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Io);
        assert_eq!(
            error.to_string(),
            "mlf-build: /work/app/modle.tar: does not exist (the path `models/../modle.tar` is taken from the package root /work/app, CARGO_MANIFEST_DIR)\n  \
             help: correct the path given to Builder::new(..): relative to the package root, or absolute"
        );
        let error = base.file(Path::new("/nowhere/memory.x"), "the path given to Builder::memory_x(..)").unwrap_err();
        assert_eq!(
            error.to_string(),
            "mlf-build: /nowhere/memory.x: does not exist\n  help: correct the path given to Builder::memory_x(..)"
        );
    }

    /// A FIFO at `path`, or `None` after a SKIP line when `mkfifo` fails.
    #[cfg(unix)]
    fn fifo(path: &Path, test: &str) -> Option<()> {
        let made = std::process::Command::new("mkfifo").arg(path).status().is_ok_and(|status| status.success());
        if !made {
            println!("SKIP {test}: mkfifo failed");
        }
        made.then_some(())
    }

    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_read_and_only_up_to_the_limit() {
        let dir = crate::test_support::scratch("regular-only");
        let started = std::time::Instant::now();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.x")).unwrap();
        let error = read_regular(&dir.join("zero.x"), 1 << 20, "a memory.x").unwrap_err().to_string();
        assert!(error.contains("zero.x") && error.contains("is a character device, not a regular file"), "{error}");
        let error = Base::current_dir().file(&dir.join("zero.x"), "the source").unwrap_err().to_string();
        assert!(error.contains("is a character device"), "{error}");
        if fifo(&dir.join("fifo.x"), "only_regular_files_are_read_and_only_up_to_the_limit").is_some() {
            let error = read_regular(&dir.join("fifo.x"), 1 << 20, "a memory.x").unwrap_err().to_string();
            assert!(error.contains("fifo.x") && error.contains("is a FIFO"), "{error}");
            let error = open_regular(&dir.join("fifo.x")).unwrap_err().to_string();
            assert!(error.contains("is a FIFO"), "{error}");
        }
        std::fs::write(dir.join("big.x"), vec![b' '; 4097]).unwrap();
        let error = read_regular(&dir.join("big.x"), 4096, "a memory.x").unwrap_err().to_string();
        assert!(error.contains("big.x") && error.contains("4097 bytes, over the limit of 4096 bytes for a memory.x"), "{error}");
        assert_eq!(read_regular(&dir.join("big.x"), 4097, "a memory.x").unwrap().len(), 4097);
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_walk_takes_each_target_once_through_cycles_and_fan_outs() {
        use std::os::unix::fs::symlink;
        let dir = crate::test_support::scratch("fan-out");
        // Ten levels of ten links each to the next level: 10^10 paths, 11 directories.
        for level in 0..10 {
            let here = dir.join(format!("d{level}"));
            std::fs::create_dir_all(&here).unwrap();
            std::fs::write(here.join(format!("f{level}.h")), "int x;").unwrap();
            for link in 0..10 {
                symlink(format!("../d{}", level + 1), here.join(format!("l{link}"))).unwrap();
            }
            // A cycle back to the top, and a second name for a file.
            symlink("..", here.join("up")).unwrap();
            symlink(format!("f{level}.h"), here.join(format!("again{level}.h"))).unwrap();
        }
        std::fs::create_dir_all(dir.join("d10")).unwrap();
        let started = std::time::Instant::now();
        let files = files_below(&dir, "the test folder", |path| path.extension().is_some_and(|ext| ext == "h")).unwrap();
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
        assert_eq!(files.len(), 10, "{files:?}");
        assert!(files.iter().all(|file| file.file_name().unwrap().to_string_lossy().starts_with("again")), "{files:?}");

        if fifo(&dir.join("d3/blocking.h"), "a_folder_walk_takes_each_target_once_through_cycles_and_fan_outs").is_some() {
            fifo(&dir.join("d3/ignored.txt"), "").unwrap();
            let error = files_below(&dir, "the test folder", |path| path.extension().is_some_and(|ext| ext == "h")).unwrap_err();
            assert!(error.to_string().contains("blocking.h") && error.to_string().contains("is a FIFO"), "{error}");
            std::fs::remove_file(dir.join("d3/blocking.h")).unwrap();
            assert_eq!(files_below(&dir, "the test folder", |path| path.extension().is_some_and(|ext| ext == "h")).unwrap().len(), 10);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_of_the_wrong_kind_says_which_it_is() {
        let dir = std::env::temp_dir();
        let base = Base::current_dir();
        let error = base.file(&dir, "the source").unwrap_err();
        assert!(error.to_string().contains("is a directory, not a file"), "{error}");
        assert_eq!(base.dir(&dir, "the directory").unwrap(), normalize(&dir));
    }
}
