//! What each object was compiled from, recorded beside it: the key of the
//! command that compiled it and every input file (the source and each header
//! the compiler's depfile names) with its size, modification time and SHA-256.
//! An object whose record still holds is not compiled again. An input whose
//! size and time are the recorded ones is not read, unless it was modified
//! too shortly before the record was written for a time to tell writes apart.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::sha256::Sha256;

use crate::cargo::record::{self, record_struct};
use crate::cargo::write::write_replacing;
use crate::error::{Error, Result};

/// Times this close to the record's own are not trusted: a file rewritten
/// within a file system's time granularity (2 s on FAT) keeps its time.
const UNTRUSTED_WITHIN: Duration = Duration::from_secs(2);

struct Record {
    key: String,
    /// When the record was written, in nanoseconds since the Unix epoch.
    written: u64,
    inputs: Vec<Input>,
}

record_struct!(Record { key, written, inputs });

#[derive(Clone)]
struct Input {
    path: String,
    len: u64,
    modified: u64,
    digest: String,
}
record_struct!(Input { path, len, modified, digest });

/// A file's size and modification time, in nanoseconds since the Unix epoch.
pub(crate) fn stat(path: &Path) -> Option<(u64, u64)> {
    let metadata = std::fs::metadata(path).ok()?;
    let modified = metadata.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some((metadata.len(), u64::try_from(modified.as_nanos()).ok()?))
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).ok().and_then(|now| u64::try_from(now.as_nanos()).ok()).unwrap_or(0)
}

/// Digests of the files one build reads, each file hashed at most once
/// (the headers every source includes).
#[derive(Default)]
pub(crate) struct Digests {
    known: Mutex<HashMap<PathBuf, Option<String>>>,
}

impl Digests {
    fn of(&self, path: &Path) -> Option<String> {
        if let Some(known) = self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(path) {
            return known.clone();
        }
        let digest = hash_file(path);
        self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(path.to_path_buf(), digest.clone());
        digest
    }
}

fn hash_file(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 << 10];
    loop {
        match file.read(&mut buffer).ok()? {
            0 => break,
            read => hasher.update(&buffer[..read]),
        }
    }
    Some(hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether the record at `path` was written for `key` by a compile of `source`
/// (this build's own path: a record copied with its target directory from
/// another checkout names that checkout's files, which may still exist) and
/// every input it names still has the bytes it had.
pub(crate) fn holds(path: &Path, key: &str, source: &Path, digests: &Digests) -> bool {
    let Some(record) = std::fs::read(path).ok().and_then(|bytes| record::from_bytes::<Record>(&bytes)) else {
        return false;
    };
    if record.key != key || !record.inputs.iter().any(|input| Path::new(&input.path) == source) {
        return false;
    }
    record.inputs.iter().all(|input| {
        let file = Path::new(&input.path);
        let Some((len, modified)) = stat(file) else { return false };
        let trusted =
            len == input.len && modified == input.modified && modified.saturating_add(UNTRUSTED_WITHIN.as_nanos() as u64) < record.written;
        trusted || digests.of(file).is_some_and(|digest| digest == input.digest)
    })
}

/// Records that the object was compiled by `key` from `inputs`; without a
/// digest for every input nothing is recorded (the object is compiled again next time).
pub(crate) fn record(path: &Path, key: &str, inputs: &[PathBuf], digests: &Digests) -> Result<()> {
    let mut recorded = Vec::with_capacity(inputs.len());
    for input in inputs {
        let (Some(text), Some((len, modified)), Some(digest)) = (input.to_str(), stat(input), digests.of(input)) else {
            return forget(path);
        };
        recorded.push(Input { path: text.to_string(), len, modified, digest });
    }
    let record = Record { key: key.to_string(), written: now(), inputs: recorded };
    write_replacing(path, &record::to_bytes(&record))
}

/// Removes the record at `path`: its object is about to change.
pub(crate) fn forget(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", path, e)),
        _ => Ok(()),
    }
}

/// The files a make-style depfile (`-MD -MF`) names as prerequisites.
pub(crate) fn depfile_inputs(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut inputs = Vec::new();
    for rule in joined.lines() {
        // The target ends at the first `: ` (a Windows drive's colon has no space after it).
        let Some((_, prerequisites)) = rule.split_once(": ") else { continue };
        let mut word = String::new();
        let mut chars = prerequisites.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if matches!(chars.peek(), Some(' ' | '#' | '\\')) => word.push(chars.next().unwrap_or(c)),
                '$' if chars.peek() == Some(&'$') => word.push(chars.next().unwrap_or(c)),
                c if c.is_whitespace() => {
                    if !word.is_empty() {
                        inputs.push(PathBuf::from(std::mem::take(&mut word)));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            inputs.push(PathBuf::from(word));
        }
    }
    inputs.sort();
    inputs.dedup();
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::scratch;

    #[test]
    fn reads_depfiles() {
        let text = "out/a.tmp.o: src/a.c /usr/include/stdc-predef.h \\\n  inc/my\\ header.h inc/x$$.h\nother.o: src/a.c\n";
        let inputs = depfile_inputs(text);
        let names: Vec<&str> = inputs.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(names, ["/usr/include/stdc-predef.h", "inc/my header.h", "inc/x$.h", "src/a.c"]);
    }

    #[test]
    fn a_record_holds_until_an_input_or_the_key_changes() {
        let dir = scratch("inputs");
        let (source, header, record_path) = (dir.join("a.c"), dir.join("a.h"), dir.join("a.record"));
        std::fs::write(&source, "int a;").unwrap();
        std::fs::write(&header, "#define A 1").unwrap();
        let inputs = [source.clone(), header.clone()];
        record(&record_path, "key", &inputs, &Digests::default()).unwrap();
        assert!(holds(&record_path, "key", &source, &Digests::default()));
        assert!(!holds(&record_path, "other key", &source, &Digests::default()));
        assert!(!holds(&record_path, "key", &dir.join("elsewhere/a.c"), &Digests::default()), "another compile's record");
        // Same size, written within the same second: only the bytes tell.
        std::fs::write(&header, "#define A 2").unwrap();
        assert!(!holds(&record_path, "key", &source, &Digests::default()));
        std::fs::write(&header, "#define A 1").unwrap();
        assert!(holds(&record_path, "key", &source, &Digests::default()), "the same bytes again");
        std::fs::remove_file(&header).unwrap();
        assert!(!holds(&record_path, "key", &source, &Digests::default()));
        forget(&record_path).unwrap();
        assert!(!holds(&record_path, "key", &source, &Digests::default()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn old_times_are_trusted_without_reading() {
        let dir = scratch("inputs-trusted");
        let (source, record_path) = (dir.join("a.c"), dir.join("a.record"));
        std::fs::write(&source, "int a;").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().write(true).open(&source).unwrap().set_modified(old).unwrap();
        record(&record_path, "key", std::slice::from_ref(&source), &Digests::default()).unwrap();
        // A digest that would not match: the unchanged size and time are believed.
        let digests = Digests::default();
        digests.known.lock().unwrap().insert(source.clone(), Some("wrong".to_string()));
        assert!(holds(&record_path, "key", &source, &digests));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
