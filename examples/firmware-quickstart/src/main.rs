//! Runs the model once on a recorded input and prints its output through
//! semihosting; exits 0 on success, 1 on an error or a panic.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use semihosting::{println, process};

/// The generated module: `Inputs`, `Outputs`, `run` and the model's sizes.
mod model {
    include!(concat!(env!("OUT_DIR"), "/mlf/default.rs"));
}

/// The input's raw little-endian bytes, here the corpus case's own recording
/// (relative to this file). Put your own input file here.
const INPUT: &[u8] = include_bytes!("../../../../shared/mlf-corpus/tvm-0.18/kws_int8-aot_c_usmp/inputs/input_1.bin");

// A file of the wrong size stops the build, not the firmware.
const _: () = assert!(INPUT.len() == model::INPUTS[0].bytes, "the input file is not the size of the model's input");

#[entry]
fn main() -> ! {
    let mut inputs = model::Inputs::zeroed();
    // Input 0 as bytes; `inputs.input_1` is the same memory as typed elements.
    if let Some(bytes) = inputs.bytes_mut(0) {
        bytes.copy_from_slice(INPUT);
    }
    let mut outputs = model::Outputs::zeroed();
    match model::run(&inputs, &mut outputs) {
        Ok(()) => {
            // One typed array per output, named as in the archive.
            println!("output: {:?}", outputs.output);
            process::exit(0)
        }
        Err(error) => {
            println!("error: {error}");
            process::exit(1)
        }
    }
}

/// A panic prints its message and ends QEMU with status 1.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    semihosting::eprintln!("{info}");
    process::exit(1)
}
