//! The one error type every stage returns.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, coarsely; [`Error`] carries the details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing a file failed.
    Io,
    /// An archive entry is unsafe or unreadable (absolute path, `..`, escaping link, device, oversized).
    UnsafeEntry,
    /// The input is not a Model Library Format archive at all.
    NotMlf,
    /// `metadata.json` (or another descriptive file) is malformed.
    Metadata,
    /// The archive declares a metadata version this crate does not know.
    UnsupportedVersion,
    /// The archive is valid but of a kind this crate cannot build (yet).
    Unsupported,
    /// The archive's code was generated for another architecture than the build target.
    WrongTarget,
    /// A required tool (compiler, libclang, Rust target) is missing.
    Toolchain,
    /// Compiling C sources failed.
    Compile,
    /// Generating Rust bindings failed.
    Bindings,
    /// A Builder option or environment variable is invalid.
    Config,
    /// The model does not fit the memory regions of the `memory.x` it was built against.
    DoesNotFit,
    /// A model slot image is malformed or corrupted, or a model cannot be made into one.
    Slot,
}

/// An error from `mlf-build`: which archive, which file, what was wrong and what to do.
///
/// `Debug` prints the same text as `Display`, so `build().unwrap()` in a build
/// script shows a readable message.
pub struct Error {
    kind: ErrorKind,
    archive: Option<PathBuf>,
    file: Option<String>,
    message: String,
    help: Option<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, archive: None, file: None, message: message.into(), help: None, source: None }
    }

    pub(crate) fn io(action: &str, path: &Path, err: std::io::Error) -> Self {
        let help = out_of_space_help(err.kind());
        let error = Error::new(ErrorKind::Io, format!("could not {action} `{}`: {err}", path.display())).with_source(err);
        match help {
            Some(help) => error.help(help),
            None => error,
        }
    }

    /// Names the file inside the archive the error is about.
    pub(crate) fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file.get_or_insert_with(|| file.into());
        self
    }

    /// Names the archive; the first (innermost) name wins.
    pub(crate) fn in_archive(mut self, archive: &Path) -> Self {
        self.archive.get_or_insert_with(|| archive.to_path_buf());
        self
    }

    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub(crate) fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The kind of the I/O error this one wraps, if it wraps one.
    pub(crate) fn io_kind(&self) -> Option<std::io::ErrorKind> {
        self.source.as_deref().and_then(|source| source.downcast_ref::<std::io::Error>()).map(std::io::Error::kind)
    }

    /// The coarse category, for callers that branch on it.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The archive the error is about, when known.
    pub fn archive(&self) -> Option<&Path> {
        self.archive.as_deref()
    }

    /// The file inside the archive the error is about, when known.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// What to do about it, when there is advice.
    pub fn help_text(&self) -> Option<&str> {
        self.help.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("mlf-build: ")?;
        if let Some(archive) = &self.archive {
            write!(f, "{}: ", printable(&archive.display().to_string()))?;
        }
        if let Some(file) = &self.file {
            write!(f, "{}: ", printable(file))?;
        }
        f.write_str(&self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// What to do when a write failed for want of room (a full disk or quota, a
/// file size limit, a read-only file system), `None` for other failures.
pub(crate) fn out_of_space_help(kind: std::io::ErrorKind) -> Option<String> {
    use std::io::ErrorKind::{FileTooLarge, QuotaExceeded, ReadOnlyFilesystem, StorageFull};
    let what = match kind {
        StorageFull | QuotaExceeded => "free space on that file system (or raise the quota)",
        FileTooLarge => "raise the file size limit (`ulimit -f`) or free space",
        ReadOnlyFilesystem => "make the output directory writable",
        _ => return None,
    };
    Some(format!("{what}, then build again: the build redoes only what it had not finished, no `cargo clean` needed"))
}

/// `text` with control characters written as escapes (`\n`, `\u{1b}`): how archive
/// text appears in messages and `cargo:warning` lines, which it must not break.
pub(crate) fn printable(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).collect()
}

/// Shorthand used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// `fn main() -> Result<(), mlf_build::Error>` in build.rs prints `Error: ` and
    /// the Debug text: it must be the one readable block, not a struct dump.
    #[test]
    fn debug_is_the_display_block() {
        let error = Error::new(ErrorKind::Metadata, "`version` is missing")
            .in_file("metadata.json")
            .in_archive(Path::new("model.tar"))
            .help("pass the metadata.json TVM wrote");
        let expected = "mlf-build: model.tar: metadata.json: `version` is missing\n  help: pass the metadata.json TVM wrote";
        assert_eq!(format!("{error:?}"), expected);
        assert_eq!(error.to_string(), expected);
    }
}
