//! Paths a user gives (the archive, `memory.x`, sources, include and CMSIS-NN
//! directories): a relative one is taken from a base directory, the package
//! root for the Builder, the current directory for `inspect`. A path that
//! leads nowhere is reported normalised, with the base it was taken from.

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::cargo::env;
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
    /// The Builder's: the package root (`CARGO_MANIFEST_DIR`, where Cargo runs
    /// the build script), else, outside Cargo, the current directory.
    pub fn package_root() -> Base {
        match env::cargo_provided("CARGO_MANIFEST_DIR") {
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
        let problem = match std::fs::metadata(&path) {
            Ok(found) if expect == Expect::File && found.is_dir() => "is a directory, not a file".to_string(),
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

    #[test]
    fn a_path_of_the_wrong_kind_says_which_it_is() {
        let dir = std::env::temp_dir();
        let base = Base::current_dir();
        let error = base.file(&dir, "the source").unwrap_err();
        assert!(error.to_string().contains("is a directory, not a file"), "{error}");
        assert_eq!(base.dir(&dir, "the directory").unwrap(), normalize(&dir));
    }
}
