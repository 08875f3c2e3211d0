//! Two tasks on embassy's executor: one runs the model with `run_async`,
//! which hands the executor back after each step, while the other counts how
//! often it gets to run. The model task then prints the run's steps, the
//! counter's polls and the outputs through semihosting, and exits 0 (1 on an
//! error or a panic). The same code on Cortex-M and RISC-V: only the startup crate
//! (cortex-m-rt, riscv-rt) and the executor's platform feature differ.
#![no_std]
#![no_main]

use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::task::{Context, Poll};

use embassy_executor::Spawner;
use semihosting::{print, println, process};

/// The generated module: `Inputs`, `Outputs`, `run_async`, `OPERATOR_CALLS`.
mod model {
    include!(concat!(env!("OUT_DIR"), "/mlf/default.rs"));
}

/// The input's raw little-endian bytes: the file build.rs was given.
const INPUT: &[u8] = include_bytes!(env!("MODEL_INPUT"));

// A file of the wrong size, or a model with more inputs, stops the build, not the firmware.
const _: () = assert!(model::INPUTS.len() == 1, "the example feeds one input file: give the model's other inputs too");
const _: () = assert!(INPUT.len() == model::INPUTS[0].bytes, "the input file is not the size of the model's input");

/// Times the counter task has been polled.
static POLLS: AtomicUsize = AtomicUsize::new(0);

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    // Runs once this task first hands the executor back: at the model's first step boundary.
    match counter() {
        Ok(token) => spawner.spawn(token),
        Err(error) => fail(error),
    }
    let mut inputs = model::Inputs::zeroed();
    if let Some(bytes) = inputs.bytes_mut(0) {
        bytes.copy_from_slice(INPUT);
    }
    let mut outputs = model::Outputs::zeroed();
    if let Err(error) = model::run_async(&inputs, &mut outputs).await {
        fail(error);
    }
    // One more pass of the executor before reading the count: a pass polls its
    // tasks in the reverse order of their wakes, so the pass of the run's last
    // step may have polled this task before the counter.
    YieldNow(false).await;
    println!("operator_calls: {}", model::OPERATOR_CALLS);
    println!("polls: {}", POLLS.load(Ordering::Relaxed));
    for index in 0..model::OUTPUTS.len() {
        print!("output{index}: ");
        for byte in outputs.bytes(index).unwrap_or_default() {
            print!("{byte:02x}");
        }
        println!();
    }
    process::exit(0)
}

/// The other task: counts its polls and gives way after each.
#[embassy_executor::task]
async fn counter() -> ! {
    loop {
        POLLS.fetch_add(1, Ordering::Relaxed);
        YieldNow(false).await;
    }
}

/// Pending once, waking its task at once: the executor runs its other ready tasks first.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        context.waker().wake_by_ref();
        Poll::Pending
    }
}

/// picolibc's maths call `abort` on RISC-V, which picolibc leaves to the application.
#[cfg(target_arch = "riscv32")]
#[no_mangle]
extern "C" fn abort() -> ! {
    process::exit(1)
}

/// Prints why the run failed and ends QEMU with status 1.
fn fail(error: impl core::fmt::Display) -> ! {
    println!("error: {error}");
    process::exit(1)
}
