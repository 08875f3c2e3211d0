//! What the toolchain probes answered (the compiler `cc` resolves, its family,
//! flags and archiver, the target's C library), kept under the output
//! directory: a rerun of the build script with the same environment and
//! the same compiler programs (path, size, modification time) starts no
//! process to ask again.

use std::path::{Path, PathBuf};

use crate::cargo::cache;
use crate::cargo::record::Record;
use crate::cargo::write::write_replacing;
use crate::error::Result;
use crate::json::{self, json, Value};
use crate::toolchain::inputs;

fn file(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{}.json", &cache::key(&[key.as_bytes()])[..32]))
}

/// A program's resolved path, size and modification time.
pub(crate) fn stamp(program: &Path) -> Option<String> {
    let path = crate::toolchain::spawn::find_program(program)?;
    let (len, modified) = inputs::stat(&path)?;
    Some(format!("{} {len} {modified}", path.display()))
}

/// The answers stored for `key`, if their programs are unchanged.
pub(crate) fn load<T: Record>(dir: &Path, key: &str) -> Option<T> {
    let stored: Value = json::parse(&std::fs::read(file(dir, key)).ok()?).ok()?;
    let programs = Vec::<(PathBuf, Option<String>)>::from_json(stored.get("programs")?)?;
    let unchanged =
        stored.get("key")?.as_str() == Some(key) && programs.iter().all(|(program, then)| then.is_some() && stamp(program) == *then);
    unchanged.then(|| T::from_json(stored.get("value")?)).flatten()
}

/// Stores `value` for `key`, valid while `programs` are unchanged.
pub(crate) fn store<T: Record>(dir: &Path, key: &str, programs: &[PathBuf], value: &T) -> Result<()> {
    let programs: Vec<(PathBuf, Option<String>)> = programs.iter().map(|program| (program.clone(), stamp(program))).collect();
    // The full key (its hash names the file), and each program the answers came from with its stamp then.
    let stored = json!({ "key": key, "programs": programs.to_json(), "value": value.to_json() });
    std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io("create", dir, e))?;
    write_replacing(&file(dir, key), stored.to_string().as_bytes())
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
