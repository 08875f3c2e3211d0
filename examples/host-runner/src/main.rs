//! Runs any Model Library Format archive on the host:
//! `MLF_ARCHIVE=<archive> cargo run --release -p host-runner -- <input.bin>... --out <dir>`.

use std::path::PathBuf;
use std::process::ExitCode;

/// One tensor of a module, as the runner needs it.
struct Tensor {
    name: &'static str,
    dtype: &'static str,
    bytes: usize,
    shape: &'static [usize],
}

/// One module of the built archive, behind a common interface.
struct Module {
    name: &'static str,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    run: fn(&[&[u8]], &mut [&mut [u8]]) -> Result<(), String>,
    set_log_hook: fn(unsafe extern "C" fn(*const std::ffi::c_char, usize)),
}

include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// The demo archive's input `x` (see examples/demo-model/README.md).
const DEMO_INPUT: [f32; 4] = [1.0, 2.0, 3.0, 4.0];

struct Args {
    module: Option<String>,
    inputs: Vec<PathBuf>,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { module: None, inputs: Vec::new(), out: None };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--module" => args.module = Some(iter.next().ok_or("--module needs a name")?),
            "--out" => args.out = Some(iter.next().ok_or("--out needs a directory")?.into()),
            "-h" | "--help" => {
                return Err("usage: host-runner [--module NAME] [--out DIR] [INPUT.bin ...]\n\
                     Inputs are raw little-endian tensors in declaration order; without them the\n\
                     demo archive uses its built-in input and other archives run on zeros.\n\
                     The archive is MLF_ARCHIVE at build time (default: the demo), a path relative\n\
                     to the workspace root (where you run cargo), as for every runner."
                    .to_string())
            }
            _ => args.inputs.push(arg.into()),
        }
    }
    Ok(args)
}

/// A zeroed byte buffer aligned for any element type.
fn aligned_buffer(bytes: usize) -> Vec<u64> {
    vec![0u64; bytes.div_ceil(8)]
}

fn as_bytes(words: &[u64], len: usize) -> &[u8] {
    // SAFETY: u64 storage viewed as bytes; len is within it.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), len) }
}

fn as_bytes_mut(words: &mut [u64], len: usize) -> &mut [u8] {
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
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

unsafe extern "C" fn print_log(message: *const std::ffi::c_char, length: usize) {
    // SAFETY: the support library passes a buffer of `length` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(message.cast::<u8>(), length) };
    eprint!("tvm: {}", String::from_utf8_lossy(bytes));
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let modules = modules();
    let module = match &args.module {
        Some(name) => modules.iter().find(|m| m.name == name).ok_or_else(|| {
            let names: Vec<_> = modules.iter().map(|m| m.name).collect();
            format!("no module `{name}` in {ARCHIVE}; it has: {}", names.join(", "))
        })?,
        None if modules.len() == 1 => &modules[0],
        None => {
            let names: Vec<_> = modules.iter().map(|m| m.name).collect();
            return Err(format!("{ARCHIVE} has several modules ({}): pick one with --module", names.join(", ")));
        }
    };
    (module.set_log_hook)(print_log);

    if !args.inputs.is_empty() && args.inputs.len() != module.inputs.len() {
        return Err(format!("module `{}` takes {} inputs, got {} files", module.name, module.inputs.len(), args.inputs.len()));
    }
    let mut inputs: Vec<Vec<u64>> = module.inputs.iter().map(|t| aligned_buffer(t.bytes)).collect();
    for (index, tensor) in module.inputs.iter().enumerate() {
        let buffer = as_bytes_mut(&mut inputs[index], tensor.bytes);
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
    let mut outputs: Vec<Vec<u64>> = module.outputs.iter().map(|t| aligned_buffer(t.bytes)).collect();
    {
        let input_views: Vec<&[u8]> = inputs.iter().zip(&module.inputs).map(|(w, t)| as_bytes(w, t.bytes)).collect();
        let mut output_views: Vec<&mut [u8]> =
            outputs.iter_mut().zip(&module.outputs).map(|(w, t)| as_bytes_mut(w, t.bytes)).collect();
        (module.run)(&input_views, &mut output_views)?;
    }
    if IS_DEMO && args.inputs.is_empty() {
        println!("demo model y = relu(W·x + b), x = {DEMO_INPUT:?}");
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    for (index, (words, tensor)) in outputs.iter().zip(&module.outputs).enumerate() {
        let bytes = as_bytes(words, tensor.bytes);
        println!("output{index} `{}` {}{:?}: {}", tensor.name, tensor.dtype, tensor.shape, format_values(tensor.dtype, bytes));
        if let Some(dir) = &args.out {
            let path = dir.join(format!("output{index}.bin"));
            std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    Ok(())
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
