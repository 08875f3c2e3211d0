//! Runs any Model Library Format archive on the host:
//! `MLF_ARCHIVE=<archive> cargo run --release -p host-runner -- <input.bin>... --out <dir>`.
//! Built with `MLF_PROFILE=1`, `--profile` also times each operator call of a second run.
//! `--steps` runs the model a step at a time, `--cancel-at <k>` cancels a run after `k` steps
//! first, and `--check-stepping` checks the stepping API against a plain run (docs/src/stepping.md).

use std::path::PathBuf;
use std::process::ExitCode;

use mlf_rt::{Model, Stepper, Visitor};

/// Every module of the archive, as `$OUT_DIR/mlf/mod.rs` declares them.
#[allow(dead_code)] // the runner uses only the generic part of the API
mod models {
    include!(concat!(env!("OUT_DIR"), "/mlf/mod.rs"));
}

/// The module built with `Builder::profile(true)` (MLF_PROFILE=1), as `model`.
#[cfg(mlf_profile)]
mod profiled {
    include!(concat!(env!("OUT_DIR"), "/profiled.rs"));
}

/// The archive the build script built.
const ARCHIVE: &str = env!("MLF_RUNNER_ARCHIVE");
/// Whether it is the demo archive (see examples/demo-model/README.md).
const IS_DEMO: bool = cfg!(demo_archive);

/// The demo archive's input `x` (see examples/demo-model/README.md).
const DEMO_INPUT: [f32; 4] = [1.0, 2.0, 3.0, 4.0];

struct Args {
    module: Option<String>,
    inputs: Vec<PathBuf>,
    out: Option<PathBuf>,
    profile: bool,
    steps: bool,
    cancel_at: Option<usize>,
    check_stepping: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args =
        Args { module: None, inputs: Vec::new(), out: None, profile: false, steps: false, cancel_at: None, check_stepping: false };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--module" => args.module = Some(iter.next().ok_or("--module needs a name")?),
            "--out" => args.out = Some(iter.next().ok_or("--out needs a directory")?.into()),
            "--profile" => args.profile = true,
            "--steps" => args.steps = true,
            "--check-stepping" => args.check_stepping = true,
            "--cancel-at" => {
                let k = iter.next().ok_or("--cancel-at needs a number of steps")?;
                args.cancel_at = Some(k.parse().map_err(|_| format!("--cancel-at: `{k}` is not a number of steps"))?);
            }
            "-h" | "--help" => {
                return Err("usage: host-runner [--module NAME] [--out DIR] [--profile] [--steps] [--cancel-at K]\n\
                     [--check-stepping] [INPUT.bin ...]\n\
                     Inputs are raw little-endian tensors in declaration order; without them the\n\
                     demo archive uses its built-in input and other archives run on zeros.\n\
                     The archive is MLF_ARCHIVE at build time (default: the demo), a path relative\n\
                     to the workspace root (where you run cargo), as for every runner.\n\
                     --profile (a build with MLF_PROFILE=1) runs again timing each operator call and\n\
                     prints `profile: <operator> <ns>` per call, then `profile: glue` and `profile: total`.\n\
                     --steps runs a step at a time, printing `step: <index> <operator>` per step;\n\
                     --cancel-at K first cancels a run after K steps, then runs again;\n\
                     --check-stepping checks stepping, cancelling, run_async and the guard against a plain run."
                    .to_string())
            }
            _ => args.inputs.push(arg.into()),
        }
    }
    Ok(args)
}

/// Bytes after every buffer that a run must leave holding [`CANARY`]: the
/// safe `run_raw` must never let the C code write past a buffer it is given.
const CANARY_BYTES: usize = 64;
const CANARY: u8 = 0xa5;

/// A zeroed byte buffer aligned for any element type, followed by the canary.
struct Guarded {
    words: Vec<u64>,
    len: usize,
}

impl Guarded {
    fn new(len: usize) -> Guarded {
        let mut guarded = Guarded { words: vec![0u64; (len + CANARY_BYTES).div_ceil(8)], len };
        guarded.all_mut()[len..].fill(CANARY);
        guarded
    }

    fn all(&self) -> &[u8] {
        // SAFETY: u64 storage viewed as bytes, all of it.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.words.len() * 8) }
    }

    fn all_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.words.len() * 8) }
    }

    fn bytes(&self) -> &[u8] {
        &self.all()[..self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.all_mut()[..len]
    }

    /// The first byte past the buffer the run changed, counted from its end.
    fn overwritten(&self) -> Option<usize> {
        self.all()[self.len..].iter().position(|&byte| byte != CANARY)
    }
}

/// An error naming every buffer whose canary the run changed.
fn check_canaries(model: &str, kind: &str, buffers: &[Guarded], tensors: &[mlf_rt::TensorInfo]) -> Result<(), String> {
    for (index, (buffer, tensor)) in buffers.iter().zip(tensors).enumerate() {
        if let Some(offset) = buffer.overwritten() {
            return Err(format!(
                "model `{model}` wrote past the end of {kind} {index} `{}` ({} bytes): byte {offset} after it changed; the archive's sizes are wrong and mlf-build did not catch it",
                tensor.name, tensor.bytes
            ));
        }
    }
    Ok(())
}

fn format_values(dtype: &str, bytes: &[u8]) -> String {
    let values: Vec<String> = match dtype {
        "int8" => bytes.iter().map(|&b| (b as i8).to_string()).collect(),
        "uint8" | "bool" => bytes.iter().map(u8::to_string).collect(),
        "int16" => bytes.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]).to_string()).collect(),
        "int32" => bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_string()).collect(),
        "float32" => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_string()).collect(),
        _ => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    };
    const SHOWN: usize = 16;
    if values.len() > SHOWN {
        format!("[{}, … {} more]", values[..SHOWN].join(", "), values.len() - SHOWN)
    } else {
        format!("[{}]", values.join(", "))
    }
}

fn print_log(line: &str) {
    eprintln!("tvm: {line}");
}

/// Collects the modules' names.
struct Names(Vec<&'static str>);

impl Visitor for Names {
    fn visit<M: Model>(&mut self) {
        self.0.push(M::NAME);
    }
}

/// Runs the module called `name`.
struct RunNamed<'a> {
    name: &'a str,
    args: &'a Args,
    result: Option<Result<(), String>>,
}

impl Visitor for RunNamed<'_> {
    fn visit<M: Model>(&mut self) {
        if M::NAME == self.name {
            self.result = Some(run_model::<M>(self.args));
        }
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let mut names = Names(Vec::new());
    models::visit_models(&mut names);
    let name = match &args.module {
        Some(name) => name.clone(),
        None if names.0.len() == 1 => names.0[0].to_string(),
        None => return Err(format!("{ARCHIVE} has several modules ({}): pick one with --module", names.0.join(", "))),
    };
    let mut runner = RunNamed { name: &name, args: &args, result: None };
    models::visit_models(&mut runner);
    runner.result.unwrap_or_else(|| Err(format!("no module `{name}` in {ARCHIVE}; it has: {}", names.0.join(", "))))
}

/// Runs one model on the input files (or zeros, or the demo input) and prints its outputs.
fn run_model<M: Model>(args: &Args) -> Result<(), String> {
    M::set_log_hook(Some(print_log));
    let (inputs_info, outputs_info) = (M::INPUTS, M::OUTPUTS);
    if !args.inputs.is_empty() && args.inputs.len() != inputs_info.len() {
        return Err(format!("module `{}` takes {} inputs, got {} files", M::NAME, inputs_info.len(), args.inputs.len()));
    }
    let mut inputs: Vec<Guarded> = inputs_info.iter().map(|t| Guarded::new(t.bytes)).collect();
    for (index, tensor) in inputs_info.iter().enumerate() {
        let buffer = inputs[index].bytes_mut();
        if let Some(path) = args.inputs.get(index) {
            let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if data.len() != tensor.bytes {
                return Err(format!(
                    "{} has {} bytes; input {index} `{}` ({} {:?}) needs {}",
                    path.display(),
                    data.len(),
                    tensor.name,
                    tensor.dtype,
                    tensor.shape,
                    tensor.bytes
                ));
            }
            buffer.copy_from_slice(&data);
        } else if IS_DEMO {
            buffer.copy_from_slice(&DEMO_INPUT.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        }
    }
    let mut outputs: Vec<Guarded> = outputs_info.iter().map(|t| Guarded::new(t.bytes)).collect();
    {
        let input_views: Vec<&[u8]> = inputs.iter().map(Guarded::bytes).collect();
        let mut output_views: Vec<&mut [u8]> = outputs.iter_mut().map(Guarded::bytes_mut).collect();
        let failed = |e: mlf_rt::Error| format!("model `{}`: {e}", M::NAME);
        if let Some(k) = args.cancel_at {
            let cancelled = cancel_after::<M>(&input_views, &mut output_views, k).map_err(failed)?;
            println!("cancel: after {cancelled} of {} steps", M::OPERATOR_CALLS);
        }
        if args.check_stepping {
            let summary = check_stepping::<M>(&input_views, &mut output_views)?;
            println!("stepping: {summary}");
        }
        if args.steps {
            let mut inference = M::start_raw(&input_views, &mut output_views).map_err(failed)?;
            while let Some(progress) = inference.step().map_err(failed)? {
                println!("step: {} {}", progress.index, progress.operator);
            }
        } else {
            M::run_raw(&input_views, &mut output_views).map_err(failed)?;
        }
    }
    check_canaries(M::NAME, "input", &inputs, inputs_info)?;
    check_canaries(M::NAME, "output", &outputs, outputs_info)?;
    if args.profile {
        let input_views: Vec<&[u8]> = inputs.iter().map(Guarded::bytes).collect();
        let output_views: Vec<&[u8]> = outputs.iter().map(Guarded::bytes).collect();
        profile(M::NAME, &input_views, &output_views)?;
    }
    if IS_DEMO && args.inputs.is_empty() {
        println!("demo model y = relu(W·x + b), x = {DEMO_INPUT:?}");
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    for (index, (buffer, tensor)) in outputs.iter().zip(outputs_info).enumerate() {
        let bytes = buffer.bytes();
        println!("output{index} `{}` {}{:?}: {}", tensor.name, tensor.dtype, tensor.shape, format_values(tensor.dtype, bytes));
        if let Some(dir) = &args.out {
            let path = dir.join(format!("output{index}.bin"));
            std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Starts a run on the buffers and drops it after `k` steps (or at its end),
/// which cancels it; returns the steps it ran.
fn cancel_after<M: Model>(inputs: &[&[u8]], outputs: &mut [&mut [u8]], k: usize) -> Result<usize, mlf_rt::Error> {
    let mut inference = M::start_raw(inputs, outputs)?;
    let mut ran = 0;
    while ran < k && inference.step()?.is_some() {
        ran += 1;
    }
    Ok(ran)
}

/// The runs after which `--check-stepping` cancels: every one for a small model, a spread for a large one.
fn cancel_points(steps: usize) -> Vec<usize> {
    const EVERY_UP_TO: usize = 24;
    if steps <= EVERY_UP_TO {
        return (0..steps).collect();
    }
    let mut points: Vec<usize> = (0..=8).map(|i| i * (steps - 1) / 8).chain([1, steps - 2]).collect();
    points.sort_unstable();
    points.dedup();
    points
}

/// Polls `future` to its end with a waker that does nothing, as the simplest
/// executor would; returns its output and how many polls it took.
fn block_on<F: std::future::Future>(future: F) -> (F::Output, usize) {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    let mut polls = 0;
    loop {
        polls += 1;
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return (output, polls);
        }
    }
}

/// Checks stepping against a plain run on the same inputs, leaving the plain
/// run's outputs in `outputs`: a stepped run gives the same bytes, one step per
/// operator call in order; a run cancelled after any number of steps leaves
/// nothing for the next; `run_async` returns to its executor between steps; a
/// run started during a stepped one is refused; a dropped inference cancels.
fn check_stepping<M: Model>(inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<String, String> {
    let failed = |what: &str, e: mlf_rt::Error| format!("model `{}`, {what}: {e}", M::NAME);
    let snapshot = |outputs: &[&mut [u8]]| outputs.iter().map(|o| o.to_vec()).collect::<Vec<_>>();
    M::run_raw(inputs, outputs).map_err(|e| failed("run", e))?;
    let expected = snapshot(outputs);
    let same = |outputs: &mut [&mut [u8]], what: &str| {
        if snapshot(outputs) == expected {
            Ok(())
        } else {
            Err(format!("model `{}`: {what} gave other outputs than a plain run", M::NAME))
        }
    };
    let scribble = |outputs: &mut [&mut [u8]]| outputs.iter_mut().for_each(|o| o.fill(0x5a));

    let mut spare: Vec<Vec<u8>> = outputs.iter().map(|o| vec![0; o.len()]).collect();
    // A run and a start tried while a stepped run holds the guard, from `between`.
    let try_inside = |spare: &mut Vec<Vec<u8>>| {
        let mut views: Vec<&mut [u8]> = spare.iter_mut().map(Vec::as_mut_slice).collect();
        let run = M::run_raw(inputs, &mut views);
        (run, M::start_raw(inputs, &mut views).map(drop))
    };
    let busy = (Err(mlf_rt::Error::Busy), Err(mlf_rt::Error::Busy));

    scribble(outputs);
    let mut inference = M::start_raw(inputs, outputs).map_err(|e| failed("start_raw", e))?;
    let before_first_step = try_inside(&mut spare);
    if before_first_step != busy {
        return Err(format!("model `{}`: a run and a start during a stepped run gave {before_first_step:?}, not Busy", M::NAME));
    }
    let mut indices = Vec::new();
    while let Some(progress) = inference.step().map_err(|e| failed("step", e))? {
        indices.push(progress.index);
    }
    drop(inference);
    if indices != (0..M::OPERATOR_CALLS).collect::<Vec<_>>() {
        return Err(format!("model `{}`: steps ran as {indices:?}, not 0..{}", M::NAME, M::OPERATOR_CALLS));
    }
    same(outputs, "a stepped run")?;

    let points = cancel_points(M::OPERATOR_CALLS);
    for &k in &points {
        scribble(outputs);
        cancel_after::<M>(inputs, outputs, k).map_err(|e| failed("a cancelled run", e))?;
        M::run_raw(inputs, outputs).map_err(|e| failed(&format!("the run after cancelling at {k}"), e))?;
        same(outputs, &format!("the run after one cancelled at step {k}"))?;
    }

    // The generic run_with breaking after the first step, and a run tried from inside the callback
    // (after the last step of a one-step run, when the guard is free again).
    let mut inside = None;
    let broke = {
        let mut typed_outputs = M::zeroed_outputs();
        let typed_inputs = M::zeroed_inputs();
        mlf_rt::run_with::<M>(&typed_inputs, &mut typed_outputs, |_| {
            inside = Some(try_inside(&mut spare));
            std::ops::ControlFlow::Break(())
        })
    };
    let free = (Ok(()), Ok(()));
    let wanted_inside = if M::OPERATOR_CALLS > 1 { &busy } else { &free };
    if inside.as_ref() != Some(wanted_inside) {
        return Err(format!("model `{}`: a run and a start from run_with's callback gave {inside:?}, not {wanted_inside:?}", M::NAME));
    }
    let wanted = if M::OPERATOR_CALLS > 1 { Err(mlf_rt::Error::Cancelled) } else { Ok(()) };
    if broke != wanted {
        return Err(format!("model `{}`: run_with breaking after the first step gave {broke:?}, not {wanted:?}", M::NAME));
    }

    scribble(outputs);
    let (ran, polls) = block_on(async { mlf_rt::finish_async(M::start_raw(inputs, outputs)?).await });
    ran.map_err(|e| failed("finish_async", e))?;
    same(outputs, "an async run")?;
    let (typed, typed_polls) = {
        let mut typed_outputs = M::zeroed_outputs();
        block_on(mlf_rt::run_async::<M>(&M::zeroed_inputs(), &mut typed_outputs))
    };
    typed.map_err(|e| failed("run_async", e))?;
    if (polls, typed_polls) != (M::OPERATOR_CALLS, M::OPERATOR_CALLS) {
        return Err(format!("model `{}`: async runs took {polls} and {typed_polls} polls for {} steps", M::NAME, M::OPERATOR_CALLS));
    }
    M::run_raw(inputs, outputs).map_err(|e| failed("run", e))?;
    same(outputs, "the run after the async ones")?;
    Ok(format!("{} steps, cancelled at {points:?}, {polls} polls", M::OPERATOR_CALLS))
}

/// Nanoseconds since the first call, wrapping at 2^32 (about 4.3 s): the
/// up-counting `fn() -> u32` clock `run_profiled` reads.
#[cfg(mlf_profile)]
fn clock() -> u32 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    // Truncation is the wrap-around `run_profiled` expects of a counter.
    START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u32
}

/// Runs the profiled module again on `inputs`, checks it gives `outputs`
/// again, and prints each operator call's nanoseconds, the glue's and the total.
#[cfg(mlf_profile)]
fn profile(name: &str, inputs: &[&[u8]], outputs: &[&[u8]]) -> Result<(), String> {
    use profiled::model;
    if name != model::MODULE_NAME {
        return Err(format!("--profile: module `{name}` was not built with profiling; `{}` was", model::MODULE_NAME));
    }
    let mut typed_inputs = Box::new(model::Inputs::zeroed());
    for (index, bytes) in inputs.iter().enumerate() {
        typed_inputs.bytes_mut(index).ok_or("--profile: more inputs than the module has")?.copy_from_slice(bytes);
    }
    let mut typed_outputs = Box::new(model::Outputs::zeroed());
    let mut ticks = [0u32; model::profile::OPERATORS.len()];
    let start = clock();
    model::profile::run_profiled(&typed_inputs, &mut typed_outputs, clock, &mut ticks).map_err(|e| format!("model `{name}`: {e}"))?;
    let total = clock().wrapping_sub(start);
    for (index, expected) in outputs.iter().enumerate() {
        if typed_outputs.bytes(index) != Some(*expected) {
            return Err(format!("model `{name}`: output {index} of the profiled run differs from the plain run's"));
        }
    }
    for (operator, ticks) in model::profile::OPERATORS.iter().zip(ticks) {
        println!("profile: {operator} {ticks}");
    }
    let timed = ticks.iter().fold(0u32, |sum, ticks| sum.wrapping_add(*ticks));
    println!("profile: glue {}", total.wrapping_sub(timed));
    println!("profile: total {total}");
    Ok(())
}

#[cfg(not(mlf_profile))]
fn profile(_: &str, _: &[&[u8]], _: &[&[u8]]) -> Result<(), String> {
    Err("--profile needs a build with MLF_PROFILE=1 (the model built with Builder::profile(true))".to_string())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("host-runner: {message}");
            ExitCode::FAILURE
        }
    }
}
