//! Running the compilers: side by side within Cargo's job count, each one's
//! output captured, and none outliving the build script, however it ends.
//!
//! On Unix every compiler joins the process group of a watcher, a shell that
//! waits on a pipe only this process can write to. When the build script
//! exits or is killed (even by SIGKILL) the kernel closes the pipe, the
//! watcher's `read` returns and it kills the whole group: the drivers and
//! what they started (`cc1`, `as`). Elsewhere compilers run as plain children.
//!
//! There a compiler may also run under resource limits ([`Limits`]): a
//! shell in the watcher's group sets them (`ulimit`) and execs it, so the
//! compiler and what it starts (`cc1`) each get them. Without the watcher it runs unlimited.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crate::cargo::env;
use crate::cargo::record::record_struct;
use crate::toolchain::joined;

/// A compiler as a command line: the program (a wrapper such as sccache
/// when there is one), its arguments and the variables it is run with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompilerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    /// MSVC's command-line syntax (`/c`, `/Fo`) rather than gcc's.
    pub msvc: bool,
    /// Clang, which lacks some of gcc's options (`-finstrument-functions-exclude-function-list`).
    pub clang: bool,
    /// The compiler runs under a wrapper (sccache, ccache, distcc, ...):
    /// its outputs are the object alone, no `-fstack-usage` file.
    pub under_wrapper: bool,
}
record_struct!(CompilerCommand { program, args, env, msvc, clang, under_wrapper });

impl CompilerCommand {
    pub fn from_tool(tool: &cc::Tool) -> CompilerCommand {
        // `to_command` puts a wrapper (sccache) first and the compiler after it.
        let command = tool.to_command();
        CompilerCommand {
            program: PathBuf::from(command.get_program()),
            args: command.get_args().map(OsString::from).collect(),
            env: tool.get_envs().map(|(name, value)| (name.to_owned(), value.to_owned())).collect(),
            msvc: tool.is_like_msvc(),
            clang: tool.is_like_clang(),
            under_wrapper: command.get_program() != tool.path().as_os_str() || is_wrapper(tool.path()),
        }
    }

    /// The program with its variables set; the arguments are the caller's to add.
    pub fn program_command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.envs(self.env.iter().map(|(name, value)| (name, value)));
        command
    }

    /// The command line as a shell would show it, for messages.
    pub fn shown(command: &Command) -> String {
        std::iter::once(command.get_program()).chain(command.get_args()).map(|arg| arg.to_string_lossy()).collect::<Vec<_>>().join(" ")
    }
}

/// The wrappers `cc` recognises in `CC` (`CC="ccache gcc"`) and, but for
/// ccache, distcc and icecc, in `RUSTC_WRAPPER`; a `CC` naming one of them
/// under the compiler's name (Debian's `/usr/lib/ccache/gcc`, a link to
/// `ccache`) is one too.
const WRAPPERS: [&str; 7] = ["ccache", "distcc", "sccache", "icecc", "cachepot", "buildcache", "kache"];

/// Where the program `name` runs from, as the system would start it: a name
/// with a directory as it stands (from the current directory when relative),
/// else the first executable file of that name in `PATH` (on Windows also
/// with the extensions `PATHEXT` lists).
pub(crate) fn find_program(name: &Path) -> Option<PathBuf> {
    if name.as_os_str().is_empty() {
        return None;
    }
    if name.components().count() > 1 {
        return is_executable(name).then(|| name.to_path_buf());
    }
    let extensions: Vec<String> = if cfg!(windows) && name.extension().is_none() {
        env::keying_only("PATHEXT").unwrap_or_else(|| ".EXE;.CMD;.BAT;.COM".into()).split(';').map(str::to_string).collect()
    } else {
        Vec::new()
    };
    env::program_search_path().into_iter().filter(|dir| !dir.as_os_str().is_empty()).find_map(|dir| {
        let candidate = dir.join(name);
        let with_extensions = extensions.iter().map(|extension| {
            let mut file = candidate.clone().into_os_string();
            file.push(extension);
            PathBuf::from(file)
        });
        std::iter::once(candidate.clone()).chain(with_extensions).find(|path| is_executable(path))
    })
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

/// Whether `compiler` is one of [`WRAPPERS`] by another name: a link to it.
fn is_wrapper(compiler: &Path) -> bool {
    let target = find_program(compiler).and_then(|found| std::fs::canonicalize(found).ok());
    let stem = target.as_deref().and_then(std::path::Path::file_stem).and_then(|stem| stem.to_str());
    stem.is_some_and(|stem| WRAPPERS.iter().any(|wrapper| wrapper.eq_ignore_ascii_case(stem)))
}

/// How many compilers run at once: Cargo's `NUM_JOBS`, else the machine's parallelism.
fn job_count() -> usize {
    let cargo = env::cargo_provided("NUM_JOBS").and_then(|jobs| jobs.parse::<usize>().ok());
    cargo.or_else(|| std::thread::available_parallelism().ok().map(usize::from)).unwrap_or(1).max(1)
}

/// The job slots every runner of the process shares (the support and model
/// libraries compile at the same time, within one `NUM_JOBS`).
struct Slots {
    free: Mutex<Option<usize>>,
    freed: Condvar,
}

static SLOTS: Slots = Slots { free: Mutex::new(None), freed: Condvar::new() };

impl Slots {
    fn take(&self) {
        let mut free = self.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        loop {
            let count = free.get_or_insert_with(job_count);
            if *count > 0 {
                *count -= 1;
                return;
            }
            free = self.freed.wait(free).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    fn give(&self) {
        let mut free = self.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *free.get_or_insert(0) += 1;
        self.freed.notify_one();
    }
}

/// Runs `work` (CPU-bound work inside this process: bindgen, hashing) in one
/// of the job slots the compilers share, so that no more than `NUM_JOBS`
/// things compete for the processors and the longest compile keeps one.
pub(crate) fn in_job_slot<T>(work: impl FnOnce() -> T) -> T {
    struct Given;
    impl Drop for Given {
        fn drop(&mut self) {
            SLOTS.give();
        }
    }
    SLOTS.take();
    let _given = Given;
    work()
}

/// The most of its address space and of CPU time each process of a compile
/// may use; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Limits {
    pub address_space_bytes: Option<u64>,
    pub cpu_seconds: Option<u64>,
}

impl Limits {
    /// The `ulimit` commands that set them (`-v` takes KiB), each allowed to
    /// fail (a shell or system without it runs the compiler unlimited).
    fn shell_script(&self) -> Option<String> {
        let memory = self.address_space_bytes.map(|bytes| format!("ulimit -v {} 2>/dev/null; ", (bytes / 1024).max(1)));
        let cpu = self.cpu_seconds.map(|seconds| format!("ulimit -t {} 2>/dev/null; ", seconds.max(1)));
        if memory.is_none() && cpu.is_none() {
            return None;
        }
        Some(format!("{}{}exec \"$0\" \"$@\"", memory.unwrap_or_default(), cpu.unwrap_or_default()))
    }
}

/// What one command did.
pub(crate) enum Ran {
    /// It ran to the end (successfully or not).
    Exited(Output),
    /// It could not be started.
    NotStarted(std::io::Error),
}

/// Runs `commands` side by side in the order given, each with its stderr
/// and stdout captured and under its limits; after the first one that fails or cannot start no
/// more are started. Returns what each did, `None` for those not started;
/// `succeeded(index)` is called as each command exits successfully.
pub(crate) fn run_all(commands: Vec<(Command, Limits)>, succeeded: &(dyn Fn(usize) + Sync)) -> Vec<Option<Ran>> {
    if commands.is_empty() {
        return Vec::new();
    }
    let group = Group::new();
    let count = commands.len();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let commands: Vec<Mutex<Option<(Command, Limits)>>> = commands.into_iter().map(|command| Mutex::new(Some(command))).collect();
    let results: Vec<Mutex<Option<Ran>>> = (0..count).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..job_count().min(count))
            .map(|_| {
                scope.spawn(|| loop {
                    SLOTS.take();
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    if index >= count || failed.load(Ordering::SeqCst) {
                        SLOTS.give();
                        return;
                    }
                    let command = commands[index].lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
                    let ran = command.map(|(command, limits)| group.run(command, limits));
                    SLOTS.give();
                    if matches!(&ran, Some(Ran::Exited(output)) if output.status.success()) {
                        succeeded(index);
                    } else {
                        failed.store(true, Ordering::SeqCst);
                    }
                    *results[index].lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = ran;
                })
            })
            .collect();
        for worker in workers {
            joined(worker);
        }
    });
    drop(group);
    results.into_iter().map(|result| result.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner())).collect()
}

/// The watcher and its process group (Unix); nothing elsewhere.
struct Group {
    watcher: Mutex<Option<Child>>,
    /// The watcher's pid, the group's id.
    id: Option<u32>,
}

impl Group {
    fn new() -> Group {
        let watcher = start_watcher();
        Group { id: watcher.as_ref().map(Child::id), watcher: Mutex::new(watcher) }
    }

    /// Ends the watcher, which kills whatever is left in its group.
    fn close(&self) {
        let watcher = self.watcher.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        if let Some(mut watcher) = watcher {
            drop(watcher.stdin.take());
            let _ = watcher.wait();
        }
    }

    fn run(&self, command: Command, limits: Limits) -> Ran {
        let mut command = self.limited(command, limits);
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        #[cfg(unix)]
        if let Some(id) = self.id {
            use std::os::unix::process::CommandExt;
            // The group lives while its leader, the watcher, does: until `close`.
            command.process_group(id as i32);
        }
        match command.output() {
            Ok(output) => Ran::Exited(output),
            Err(error) => Ran::NotStarted(error),
        }
    }
}

impl Group {
    /// `command` run by `sh`, which sets `limits` and execs it: only where
    /// the watcher runs, so `sh` is there, and for a program that is found
    /// (one that is not stays unstarted, not a shell's failure); else `command` itself.
    fn limited(&self, command: Command, limits: Limits) -> Command {
        let found = find_program(Path::new(command.get_program())).is_some();
        let Some(script) = limits.shell_script().filter(|_| self.id.is_some() && found) else { return command };
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(script).arg(command.get_program()).args(command.get_args());
        if let Some(dir) = command.get_current_dir() {
            shell.current_dir(dir);
        }
        for (name, value) in command.get_envs() {
            match value {
                Some(value) => shell.env(name, value),
                None => shell.env_remove(name),
            };
        }
        shell
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.close();
    }
}

/// `sh` leading a new process group, killing it once its stdin (a pipe whose
/// write end only this process holds: std opens pipes close-on-exec, so no
/// compiler inherits it) reaches end of file. `None` where there is no `sh`.
#[cfg(unix)]
fn start_watcher() -> Option<Child> {
    use std::os::unix::process::CommandExt;
    Command::new("sh")
        .args(["-c", "read -r line; kill -s KILL 0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()
}

#[cfg(not(unix))]
fn start_watcher() -> Option<Child> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    #[cfg(unix)]
    #[test]
    fn finds_programs_as_the_system_starts_them() {
        use std::os::unix::fs::PermissionsExt;
        let sh = find_program(Path::new("sh")).expect("sh is on PATH");
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        let dir = crate::test_support::scratch("find-program");
        let (runnable, plain) = (dir.join("runnable"), dir.join("plain"));
        std::fs::write(&runnable, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&runnable, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(&plain, "text").unwrap();
        // A name with a directory is taken as it stands; PATH is not searched for it.
        assert_eq!(find_program(&runnable), Some(runnable.clone()));
        assert_eq!(find_program(&plain), None, "not executable");
        assert_eq!(find_program(&dir), None, "a directory");
        assert_eq!(find_program(Path::new("runnable")), None, "not on PATH");
        assert_eq!(find_program(Path::new("")), None);
        assert_eq!(find_program(Path::new("mlf-build-no-such-program")), None);
    }

    #[test]
    fn runs_every_command_with_its_output_captured() {
        let succeeded = Mutex::new(Vec::new());
        let commands = (0..5).map(|index| (shell(&format!("echo out{index}; echo err{index} >&2")), Limits::default())).collect();
        let ran = run_all(commands, &|index| succeeded.lock().unwrap().push(index));
        let mut succeeded = succeeded.into_inner().unwrap();
        succeeded.sort();
        assert_eq!(succeeded, [0, 1, 2, 3, 4]);
        for (index, ran) in ran.iter().enumerate() {
            let Some(Ran::Exited(output)) = ran else { panic!("command {index} did not run") };
            assert!(output.status.success());
            assert_eq!(String::from_utf8_lossy(&output.stdout), format!("out{index}\n"));
            assert_eq!(String::from_utf8_lossy(&output.stderr), format!("err{index}\n"));
        }
    }

    #[test]
    fn a_failure_is_reported_with_its_stderr() {
        let ran = run_all(vec![(shell("echo broken >&2; exit 3"), Limits::default()), (shell("true"), Limits::default())], &|index| {
            assert_ne!(index, 0, "a failed command is no success")
        });
        let Some(Ran::Exited(output)) = &ran[0] else { panic!("the first command runs") };
        assert_eq!(output.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&output.stderr), "broken\n");
        let missing = run_all(
            vec![(Command::new("/nonexistent/mlf-build-compiler"), Limits { cpu_seconds: Some(1), address_space_bytes: None })],
            &|_| (),
        );
        assert!(matches!(&missing[0], Some(Ran::NotStarted(_))));
    }

    /// The limits hold in the command and what it starts; a command over its CPU time is killed.
    #[cfg(target_os = "linux")]
    #[test]
    fn commands_run_under_their_limits() {
        let limits = Limits { address_space_bytes: Some(256 << 20), cpu_seconds: Some(7) };
        let ran = run_all(vec![(shell("sh -c 'ulimit -v; ulimit -t'"), limits)], &|_| ());
        let Some(Ran::Exited(output)) = &ran[0] else { panic!("the command runs") };
        assert_eq!(String::from_utf8_lossy(&output.stdout), "262144\n7\n");
        let started = std::time::Instant::now();
        let ran = run_all(vec![(shell("while :; do :; done"), Limits { address_space_bytes: None, cpu_seconds: Some(1) })], &|_| ());
        let Some(Ran::Exited(output)) = &ran[0] else { panic!("the command runs") };
        assert!(!output.status.success() && started.elapsed() < std::time::Duration::from_secs(30));
    }

    /// What a killed build script leaves: the group's members, a compiler and
    /// what it started, die when the watcher's pipe closes.
    #[cfg(unix)]
    #[test]
    fn closing_the_group_kills_what_its_compilers_started() {
        let dir = crate::test_support::scratch("spawn-group");
        let pid_file = dir.join("pid");
        let group = Group::new();
        let script = format!("sleep 600 & echo $! > {}.tmp; mv {0}.tmp {0}; wait", pid_file.display());
        let ran = std::thread::scope(|scope| {
            let running = scope.spawn(|| group.run(shell(&script), Limits::default()));
            while !pid_file.is_file() {
                std::thread::yield_now();
            }
            group.close();
            joined(running)
        });
        assert!(matches!(ran, Ran::Exited(output) if !output.status.success()), "killed, not finished");
        let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_string();
        // SIGKILL is sent; the process is gone (or a zombie) once the kernel has run it down.
        let alive = || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "));
        for _ in 0..5_000 {
            if !alive() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!alive(), "sleep {pid} outlived its group");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
