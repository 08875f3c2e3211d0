//! For unit tests: where `../shared` is, SKIP lines when it is absent, and
//! scratch directories.

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// `../shared` next to the crate: the corpus the tests read.
pub(crate) fn shared_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

/// `../shared/mlf-corpus`, or `None` (after a SKIP line) when it is absent.
pub(crate) fn corpus_dir() -> Option<PathBuf> {
    let dir = shared_dir().join("mlf-corpus");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(&format!("the corpus {} is absent", dir.display()));
        None
    }
}

/// `../shared/third-party/<name>` (C libraries archives call), or `None`
/// (after a SKIP line) when it is absent.
pub(crate) fn third_party(name: &str) -> Option<PathBuf> {
    let dir = shared_dir().join("third-party").join(name);
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(&format!("{} is absent", dir.display()));
        None
    }
}

thread_local! {
    /// libtest runs each test on a thread of its own: one SKIP line per test.
    static SKIPPED: Cell<bool> = const { Cell::new(false) };
}

/// Prints `SKIP <test>: <why>` for the running test, once: straight to
/// stdout, so it shows with `--nocapture` and in CI logs.
pub(crate) fn skip(why: &str) {
    if !SKIPPED.replace(true) {
        let thread = std::thread::current();
        let test = thread.name().unwrap_or("<unnamed test>");
        let _ = writeln!(std::io::stdout().lock(), "SKIP {test}: {why}");
    }
}

/// A fresh, empty directory, unique per call: `target/tmp/unit-tests/<name>-<n>`.
/// The first call of a run removes what the previous run left.
pub(crate) fn scratch(name: &str) -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let root = ROOT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tmp/unit-tests");
        let _ = std::fs::remove_dir_all(&root);
        root
    });
    let dir = root.join(format!("{name}-{}", CALLS.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Assembles `text` with the host compiler; `None` (after a SKIP line) without one.
pub(crate) fn assembled(name: &str, text: &str) -> Option<Vec<u8>> {
    let dir = scratch(name);
    std::fs::write(dir.join("code.s"), text).unwrap();
    let status = std::process::Command::new("cc").args(["-c", "code.s", "-o", "code.o"]).current_dir(&dir).status();
    if !status.is_ok_and(|status| status.success()) {
        skip("no host C compiler (cc)");
        return None;
    }
    Some(std::fs::read(dir.join("code.o")).unwrap())
}

/// Runs `command`, fails the test unless it succeeds, and returns its stdout.
pub(crate) fn run_ok(command: &mut std::process::Command) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(output.status.success(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap_or_else(|e| panic!("{command:?}: {e}"))
}
