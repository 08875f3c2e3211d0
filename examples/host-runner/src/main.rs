//! Runs any Model Library Format archive on the host:
//! `MLF_ARCHIVE=<archive> cargo run --release -p host-runner -- <input.bin>... --out <dir>`.
//! Built with `MLF_PROFILE=1`, `--profile` also times each operator call of a second run.

use std::path::PathBuf;
use std::process::ExitCode;

use mlf_rt::{Model, Visitor};

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
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { module: None, inputs: Vec::new(), out: None, profile: false };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--module" => args.module = Some(iter.next().ok_or("--module needs a name")?),
            "--out" => args.out = Some(iter.next().ok_or("--out needs a directory")?.into()),
            "--profile" => args.profile = true,
            "-h" | "--help" => {
                return Err("usage: host-runner [--module NAME] [--out DIR] [--profile] [INPUT.bin ...]\n\
                     Inputs are raw little-endian tensors in declaration order; without them the\n\
                     demo archive uses its built-in input and other archives run on zeros.\n\
                     The archive is MLF_ARCHIVE at build time (default: the demo), a path relative\n\
                     to the workspace root (where you run cargo), as for every runner.\n\
                     --profile (a build with MLF_PROFILE=1) runs again timing each operator call and\n\
                     prints `profile: <operator> <ns>` per call, then `profile: glue` and `profile: total`."
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
        M::run_raw(&input_views, &mut output_views).map_err(|e| format!("model `{}`: {e}", M::NAME))?;
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
