//! What the toolchain probes answered (the compiler `cc` resolves, its family,
//! flags and archiver, the target's C library), kept under the output
//! directory: a rerun of the build script with the same environment and
//! the same compiler programs (path, size, modification time) starts no
//! process to ask again.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::cargo::cache;
use crate::cargo::write::write_replacing;
use crate::error::Result;
use crate::toolchain::inputs;

#[derive(Serialize, Deserialize)]
struct Stored<T> {
    /// The full text the answers are keyed by (its hash names the file).
    key: String,
    /// Each program the answers came from, with [`stamp`] of it then.
    programs: Vec<(PathBuf, Option<String>)>,
    value: T,
}

fn file(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{}.json", &cache::key(&[key.as_bytes()])[..32]))
}

/// A program's resolved path, size and modification time.
pub(crate) fn stamp(program: &Path) -> Option<String> {
    let path = which::which(program).ok()?;
    let (len, modified) = inputs::stat(&path)?;
    Some(format!("{} {len} {modified}", path.display()))
}

/// The answers stored for `key`, if their programs are unchanged.
pub(crate) fn load<T: DeserializeOwned>(dir: &Path, key: &str) -> Option<T> {
    let bytes = std::fs::read(file(dir, key)).ok()?;
    let stored: Stored<T> = serde_json::from_slice(&bytes).ok()?;
    let unchanged = stored.key == key && stored.programs.iter().all(|(program, then)| then.is_some() && stamp(program) == *then);
    unchanged.then_some(stored.value)
}

/// Stores `value` for `key`, valid while `programs` are unchanged.
pub(crate) fn store<T: Serialize>(dir: &Path, key: &str, programs: &[PathBuf], value: &T) -> Result<()> {
    let programs = programs.iter().map(|program| (program.clone(), stamp(program))).collect();
    let stored = Stored { key: key.to_string(), programs, value };
    std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io("create", dir, e))?;
    let path = file(dir, key);
    let bytes = serde_json::to_vec(&stored).map_err(|e| crate::error::Error::io("write", &path, std::io::Error::other(e)))?;
    write_replacing(&path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::scratch;

    #[test]
    fn answers_hold_while_key_and_programs_do() {
        let dir = scratch("answers");
        let program = dir.join("cc");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        store(&dir, "key", std::slice::from_ref(&program), &vec!["-O3".to_string()]).unwrap();
        assert_eq!(load::<Vec<String>>(&dir, "key"), Some(vec!["-O3".to_string()]));
        assert_eq!(load::<Vec<String>>(&dir, "other key"), None);
        std::fs::write(&program, "#!/bin/sh\nexec gcc \"$@\"\n").unwrap();
        assert_eq!(load::<Vec<String>>(&dir, "key"), None, "the program changed");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
