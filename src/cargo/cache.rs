//! Build stamps: a stage whose inputs hash to the recorded key is skipped.

use std::path::PathBuf;

use crate::sha256::Sha256;

use crate::cargo::write::write_if_changed;
use crate::error::{Error, Result};

/// A hash of everything that determines a stage's output.
pub(crate) fn key(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) struct Stamp {
    pub path: PathBuf,
    pub key: String,
}

impl Stamp {
    pub fn is_current(&self) -> bool {
        std::fs::read_to_string(&self.path).is_ok_and(|recorded| recorded.trim() == self.key)
    }

    /// Records the key once the stage's outputs exist.
    pub fn record(&self) -> Result<()> {
        write_if_changed(&self.path, format!("{}\n", self.key).as_bytes()).map(drop)
    }

    /// Forgets the key before a stage rewrites its outputs, so an interrupted
    /// run is not mistaken for a finished one.
    pub fn invalidate(&self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", &self.path, e)),
            _ => Ok(()),
        }
    }
}
