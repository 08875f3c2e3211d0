//! Cortex-M or RISC-V firmware that runs one model of a Model Library Format
//! archive on embedded inputs and prints each output as `output<i>: <hex bytes>`
//! through semihosting; exits 0 on success, 1 on any error or panic (QEMU
//! passes it on). It then runs the same inputs a step at a time, which must
//! give the same outputs, and prints `steps: <n>` (see [`stepped`]). Only the startup differs: cortex-m-rt on Arm, riscv-rt on RISC-V.
//! Built with MLF_PROFILE=1 it times each operator call instead (see [`profile`]).
#![no_std]
#![no_main]

use core::cell::UnsafeCell;
use core::fmt::Write as _;

use mlf_rt::Model;
use semihosting::io::{self, Write as _};

/// Bytes aligned for any tensor element type.
#[repr(C, align(16))]
struct Aligned<const N: usize>([u8; N]);

include!(concat!(env!("OUT_DIR"), "/firmware.rs"));

/// Whether embedded input file `index` has the size of the model's input
/// `index` (a file past the model's inputs fails the count check instead).
const fn input_fits(index: usize, bytes: usize) -> bool {
    index >= model::INPUTS.len() || model::INPUTS[index].bytes == bytes
}

const fn max_bytes(tensors: &[model::TensorInfo]) -> usize {
    let mut max = 0;
    let mut i = 0;
    while i < tensors.len() {
        if tensors[i].bytes > max {
            max = tensors[i].bytes;
        }
        i += 1;
    }
    max
}

/// Zeros for every input when no input files were embedded.
static ZEROS: Aligned<{ max_bytes(&model::INPUTS) }> = Aligned([0; max_bytes(&model::INPUTS)]);

/// Bytes after every output that a run must leave holding [`CANARY`]: a
/// buffer mlf-build sized smaller than the code writes shows as a failed run.
const CANARY_BYTES: usize = 16;
const CANARY: u8 = 0xa5;

/// Every output at an offset aligned to 16 bytes, each followed by its canary.
const OUTPUT_AREA_BYTES: usize = model::OUTPUT_BYTES + (16 + CANARY_BYTES) * model::OUTPUTS.len();

/// The outputs' buffers, static as firmware keeps its buffers, so they count in .bss.
struct OutputArea(UnsafeCell<Aligned<OUTPUT_AREA_BYTES>>);

// SAFETY: the firmware has one thread, and `run`, called once, is the only user.
unsafe impl Sync for OutputArea {}

static OUTPUT_AREA: OutputArea = OutputArea(UnsafeCell::new(Aligned([0; OUTPUT_AREA_BYTES])));

/// `core::fmt` text to semihosting's stdout.
struct Console(io::Stdout);

impl core::fmt::Write for Console {
    fn write_str(&mut self, text: &str) -> core::fmt::Result {
        self.0.write_all(text.as_bytes()).map_err(|_| core::fmt::Error)
    }
}

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let status = match io::stdout() {
        Ok(stdout) => {
            let mut out = Console(stdout);
            match run::<model::Model>(&mut out) {
                Ok(()) => 0,
                Err(Failure::Model(error)) => {
                    let _ = writeln!(out, "error: {error}");
                    1
                }
                Err(Failure::Overrun { output, offset }) => {
                    let _ = writeln!(out, "error: the run wrote past output{output}: byte {offset} after it changed");
                    1
                }
                #[cfg(mlf_stepped)]
                Err(Failure::Stepped(error)) => {
                    let _ = writeln!(out, "error: the stepped run: {error}");
                    1
                }
                #[cfg(mlf_stepped)]
                Err(Failure::SteppedDiffers { output }) => {
                    let _ = writeln!(out, "error: the stepped run's output{output} differs from the run's");
                    1
                }
            }
        }
        Err(_) => 1,
    };
    semihosting::process::exit(status)
}

/// picolibc's maths call `abort` on RISC-V and picolibc leaves it to the application.
#[cfg(target_arch = "riscv32")]
#[no_mangle]
extern "C" fn abort() -> ! {
    semihosting::process::exit(1)
}

/// Why a run failed.
enum Failure {
    /// The model's own error.
    Model(mlf_rt::Error),
    /// The canary after output `output` changed at `offset` bytes past its end.
    Overrun { output: usize, offset: usize },
    /// The stepped run's own error.
    #[cfg(mlf_stepped)]
    Stepped(mlf_rt::Error),
    /// The stepped run gave output `output` other bytes than the run.
    #[cfg(mlf_stepped)]
    SteppedDiffers { output: usize },
}

impl From<mlf_rt::Error> for Failure {
    fn from(error: mlf_rt::Error) -> Self {
        Failure::Model(error)
    }
}

/// Runs any model the firmware has room for: buffers are sized for the built one.
fn run<M: Model>(out: &mut Console) -> Result<(), Failure> {
    let _ = writeln!(out, "model `{}` from {}", M::NAME, ARCHIVE);
    let mut input_slots: [&[u8]; model::INPUTS.len()] = [&[]; model::INPUTS.len()];
    let inputs = input_slots.get_mut(..M::INPUTS.len()).ok_or(mlf_rt::Error::InputCount(M::INPUTS.len()))?;
    for (index, input) in inputs.iter_mut().enumerate() {
        *input = match INPUT_FILES.get(index) {
            Some(bytes) => bytes,
            None => ZEROS.0.get(..M::INPUTS[index].bytes).ok_or(mlf_rt::Error::InputSize { index, len: ZEROS.0.len() })?,
        };
    }
    // SAFETY: see `OutputArea`; this is its one use.
    let area = unsafe { &mut *OUTPUT_AREA.0.get() };
    let mut output_slots: [&mut [u8]; model::OUTPUTS.len()] = core::array::from_fn(|_| &mut [][..]);
    let outputs = output_slots.get_mut(..M::OUTPUTS.len()).ok_or(mlf_rt::Error::OutputCount(M::OUTPUTS.len()))?;
    let mut canary_slots: [&mut [u8]; model::OUTPUTS.len()] = core::array::from_fn(|_| &mut [][..]);
    place_outputs::<M>(&mut area.0, outputs, &mut canary_slots)?;
    // Outside the painted stretch, so it holds the timed run and no more.
    #[cfg(mlf_profile)]
    profile::load(inputs)?;
    let top = stack::pointer();
    stack::paint(top);
    #[cfg(not(mlf_profile))]
    let result = M::run_raw(inputs, outputs);
    #[cfg(mlf_profile)]
    let (result, times) = profile::run();
    // Within the painted stretch: the stack figure covers a stepped run too.
    #[cfg(all(mlf_stepped, not(mlf_profile)))]
    let steps = stepped::run::<M>(inputs, outputs);
    let used = stack::used(top);
    #[cfg(mlf_profile)]
    {
        profile::store(outputs)?;
        times.print(out);
    }
    // After the painted stretch, which holds the timed run and no more.
    #[cfg(all(mlf_stepped, mlf_profile))]
    let steps = stepped::run::<M>(inputs, outputs);
    let _ = match STACK_BOUND {
        Ok(bound) => writeln!(out, "stack: {used} bound {bound}"),
        Err(why) => writeln!(out, "stack: {used} bound unknown ({why})"),
    };
    overrun(&canary_slots)?;
    result?;
    for (index, output) in outputs.iter().enumerate() {
        let _ = write!(out, "output{index}: ");
        write_hex(out, output);
        let _ = writeln!(out);
    }
    #[cfg(mlf_stepped)]
    let _ = writeln!(out, "steps: {}", steps?);
    Ok(())
}

/// Splits `area` into `M`'s outputs, each at an offset aligned to 16 bytes
/// and followed by its canary (filled here).
fn place_outputs<'a, M: Model>(area: &'a mut [u8], outputs: &mut [&'a mut [u8]], canaries: &mut [&'a mut [u8]]) -> Result<(), Failure> {
    let mut rest = area;
    for (index, ((output, canary), info)) in outputs.iter_mut().zip(canaries.iter_mut()).zip(M::OUTPUTS).enumerate() {
        let padded = info.bytes.next_multiple_of(16);
        if padded + CANARY_BYTES > rest.len() {
            return Err(mlf_rt::Error::OutputSize { index, len: rest.len() }.into());
        }
        let (buffer, tail) = core::mem::take(&mut rest).split_at_mut(padded + CANARY_BYTES);
        let (buffer, guard) = buffer.split_at_mut(info.bytes);
        guard.fill(CANARY);
        *output = buffer;
        *canary = guard;
        rest = tail;
    }
    Ok(())
}

/// An error when a canary no longer holds [`CANARY`].
fn overrun(canaries: &[&mut [u8]]) -> Result<(), Failure> {
    match canaries.iter().enumerate().find_map(|(output, guard)| Some((output, guard.iter().position(|&byte| byte != CANARY)?))) {
        Some((output, offset)) => Err(Failure::Overrun { output, offset }),
        None => Ok(()),
    }
}

/// A second run of the same inputs a step at a time, through `mlf_rt`'s
/// generic stepping, which must give the run's outputs. Built unless
/// MLF_STEPPED=0 (examples/footprint's firmware only runs).
#[cfg(mlf_stepped)]
mod stepped {
    use super::{model, overrun, place_outputs, Aligned, Failure, OutputArea, OUTPUT_AREA_BYTES};
    use core::cell::UnsafeCell;
    use mlf_rt::{Model, Stepper};

    /// The stepped run's outputs, laid out as the run's.
    static AREA: OutputArea = OutputArea(UnsafeCell::new(Aligned([0; OUTPUT_AREA_BYTES])));

    /// Runs `M` on `inputs` ([`Model::start_raw`], then [`Stepper::step`]
    /// until the run has ended) and compares its outputs with `outputs`;
    /// returns the steps it took. Inlined, so its frame is the caller's,
    /// above the painted stack, as `run_raw`'s caller's is.
    #[inline(always)]
    pub fn run<M: Model>(inputs: &[&[u8]], outputs: &[&mut [u8]]) -> Result<usize, Failure> {
        // SAFETY: see `OutputArea`; this is its one use.
        let area = unsafe { &mut *AREA.0.get() };
        let mut slots: [&mut [u8]; model::OUTPUTS.len()] = core::array::from_fn(|_| &mut [][..]);
        let stepped = slots.get_mut(..M::OUTPUTS.len()).ok_or(mlf_rt::Error::OutputCount(M::OUTPUTS.len()))?;
        let mut canaries: [&mut [u8]; model::OUTPUTS.len()] = core::array::from_fn(|_| &mut [][..]);
        place_outputs::<M>(&mut area.0, stepped, &mut canaries)?;
        let mut steps = 0;
        let mut inference = M::start_raw(inputs, stepped).map_err(Failure::Stepped)?;
        while inference.step().map_err(Failure::Stepped)?.is_some() {
            steps += 1;
        }
        drop(inference);
        overrun(&canaries)?;
        match outputs.iter().zip(stepped.iter()).position(|(run, stepped)| run != stepped) {
            Some(output) => Err(Failure::SteppedDiffers { output }),
            None => Ok(steps),
        }
    }
}

/// The stack a run takes: the RAM between the end of the statics and the
/// stack pointer is painted with a pattern before the run; after it, the
/// lowest word no longer holding the pattern is as deep as the run went.
/// Interrupts are off (a profiled build takes only SysTick's), so only the run writes there.
mod stack {
    const PATTERN: u32 = 0x5afe_c0de;

    extern "C" {
        /// The end of the statics (cortex-m-rt and riscv-rt both define it; the heap is empty).
        static __sheap: u32;
    }

    /// The stack pointer, read in the calling function (always inlined).
    #[inline(always)]
    pub fn pointer() -> usize {
        let sp: usize;
        // SAFETY: reads a register.
        #[cfg(target_arch = "arm")]
        unsafe {
            core::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        #[cfg(target_arch = "riscv32")]
        unsafe {
            core::arch::asm!("mv {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }

    fn bottom() -> usize {
        // Only the symbol's address is taken.
        core::ptr::addr_of!(__sheap) as usize
    }

    /// Paints the free stack below this function's own frame.
    #[inline(never)]
    pub fn paint(top: usize) {
        // A margin below this function's stack pointer, which it does not go below.
        let end = pointer().min(top) - 64;
        let mut at = bottom();
        while at < end {
            // SAFETY: between the statics and the stack in use: RAM nothing else holds.
            unsafe { core::ptr::write_volatile(at as *mut u32, PATTERN) };
            at += 4;
        }
    }

    /// Bytes below `top` the run wrote to.
    #[inline(never)]
    pub fn used(top: usize) -> usize {
        let mut at = bottom();
        // SAFETY: as in `paint`; the words are read only.
        while at < top && unsafe { core::ptr::read_volatile(at as *const u32) } == PATTERN {
            at += 4;
        }
        top - at
    }
}

/// Operator timing (MLF_PROFILE=1): the same `profile:` lines as
/// examples/host-runner's, in instructions. Under `-icount shift=0`
/// (MLF_QEMU_ICOUNT=1) every instruction takes one virtual nanosecond, so
/// QEMU's cycles are instructions; the clock read is SysTick on Arm, which
/// advances once per `1e9 / CLOCK_HZ` instructions (40 on the mps2 boards),
/// and `mcycle` on RISC-V, which counts every one.
#[cfg(mlf_profile)]
mod profile {
    use super::{model, Console, CLOCK_HZ};
    use core::cell::UnsafeCell;
    use core::fmt::Write as _;

    /// The typed buffers `run_profiled` takes, static as the plain run's are.
    struct Buffers(UnsafeCell<(model::Inputs, model::Outputs)>);

    // SAFETY: the firmware has one thread, and `load`, `run` and `store`, called once each in turn, are the only users.
    unsafe impl Sync for Buffers {}

    static BUFFERS: Buffers = Buffers(UnsafeCell::new((model::Inputs::zeroed(), model::Outputs::zeroed())));

    /// The ticks of each operator call and of the whole run.
    pub struct Times {
        calls: [u32; model::profile::OPERATORS.len()],
        total: u32,
    }

    /// Copies the inputs in and starts the clock.
    pub fn load(inputs: &[&[u8]]) -> Result<(), mlf_rt::Error> {
        // SAFETY: see `Buffers`.
        let (typed, _) = unsafe { &mut *BUFFERS.0.get() };
        for (index, bytes) in inputs.iter().enumerate() {
            let buffer = typed.bytes_mut(index).ok_or(mlf_rt::Error::InputCount(inputs.len()))?;
            if buffer.len() != bytes.len() {
                return Err(mlf_rt::Error::InputSize { index, len: bytes.len() });
            }
            buffer.copy_from_slice(bytes);
        }
        clock::start();
        Ok(())
    }

    /// Runs the model with every operator call timed, and the whole run.
    pub fn run() -> (Result<(), mlf_rt::Error>, Times) {
        // SAFETY: see `Buffers`.
        let (inputs, outputs) = unsafe { &mut *BUFFERS.0.get() };
        let mut calls = [0; model::profile::OPERATORS.len()];
        let start = clock::ticks();
        let result = model::profile::run_profiled(inputs, outputs, clock::ticks, &mut calls);
        let total = clock::ticks().wrapping_sub(start);
        (result.map_err(mlf_rt::Error::from), Times { calls, total })
    }

    /// Copies the outputs out.
    pub fn store(outputs: &mut [&mut [u8]]) -> Result<(), mlf_rt::Error> {
        // SAFETY: see `Buffers`.
        let (_, typed) = unsafe { &*BUFFERS.0.get() };
        for (index, buffer) in outputs.iter_mut().enumerate() {
            let bytes = typed.bytes(index).ok_or(mlf_rt::Error::OutputCount(index + 1))?;
            if buffer.len() != bytes.len() {
                return Err(mlf_rt::Error::OutputSize { index, len: buffer.len() });
            }
            buffer.copy_from_slice(bytes);
        }
        Ok(())
    }

    /// Clock ticks in instructions (see the module's documentation).
    fn instructions(ticks: u32) -> u64 {
        u64::from(ticks) * 1_000_000_000 / CLOCK_HZ
    }

    impl Times {
        /// `profile: <operator> <n>` per call, then `glue` (the rest of the run) and `total`.
        pub fn print(&self, out: &mut Console) {
            let mut operators = 0;
            for (name, &ticks) in model::profile::OPERATORS.iter().zip(&self.calls) {
                let spent = instructions(ticks);
                operators += spent;
                let _ = writeln!(out, "profile: {name} {spent}");
            }
            let total = instructions(self.total);
            let _ = writeln!(out, "profile: glue {}", total.saturating_sub(operators));
            let _ = writeln!(out, "profile: total {total}");
        }
    }

    /// SysTick, counting down from 2^24 - 1 on the processor clock; its
    /// exception counts the wraps, so a reading is 32 bits wide.
    #[cfg(target_arch = "arm")]
    mod clock {
        use core::ptr::{read_volatile, write_volatile};
        use core::sync::atomic::{AtomicU32, Ordering};

        const SYST_CSR: *mut u32 = 0xe000_e010 as *mut u32;
        const SYST_RVR: *mut u32 = 0xe000_e014 as *mut u32;
        const SYST_CVR: *mut u32 = 0xe000_e018 as *mut u32;
        const TOP: u32 = 0x00ff_ffff;

        /// Times the counter went past 0; only the exception writes it.
        static WRAPS: AtomicU32 = AtomicU32::new(0);

        #[cortex_m_rt::exception]
        fn SysTick() {
            WRAPS.store(WRAPS.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }

        pub fn start() {
            // SAFETY: SysTick's registers, which nothing else in the firmware uses.
            unsafe {
                write_volatile(SYST_RVR, TOP);
                write_volatile(SYST_CVR, 0);
                // Processor clock, exception on wrap, enabled.
                write_volatile(SYST_CSR, 0b111);
                // Cleared, it reads 0 until it loads TOP on its first tick, which is no wrap.
                while read_volatile(SYST_CVR) == 0 {}
            }
        }

        /// Ticks since `start`. QEMU takes a pending exception right after
        /// the device read that ends its block, so a wrap between the two
        /// loads of `WRAPS` shows as a change and the read is repeated.
        pub fn ticks() -> u32 {
            loop {
                let wraps = WRAPS.load(Ordering::Relaxed);
                // SAFETY: as in `start`; a read.
                let count = unsafe { read_volatile(SYST_CVR) };
                if WRAPS.load(Ordering::Relaxed) == wraps {
                    return wraps.wrapping_mul(TOP + 1).wrapping_add(TOP - count);
                }
            }
        }
    }

    /// `mcycle`'s low word: M-mode reads it, and differences wrap correctly.
    #[cfg(target_arch = "riscv32")]
    mod clock {
        pub fn start() {}

        pub fn ticks() -> u32 {
            let cycles: u32;
            // SAFETY: reads a counter register.
            unsafe { core::arch::asm!("csrr {}, mcycle", out(reg) cycles, options(nomem, nostack, preserves_flags)) };
            cycles
        }
    }
}

/// Hex in chunks: one semihosting call per 64 bytes rather than per byte.
fn write_hex(out: &mut Console, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut line = [0u8; 128];
    for chunk in bytes.chunks(64) {
        for (pair, byte) in line.chunks_exact_mut(2).zip(chunk) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0xf)];
        }
        let _ = out.0.write_all(&line[..chunk.len() * 2]);
    }
}
