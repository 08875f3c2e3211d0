//! Runtime companion of `mlf-build`: one [`Model`] trait, one [`Error`] and one
//! [`TensorInfo`] for code that handles any generated model module the same way
//! (a runner, a benchmark loop, firmware that picks one of two models).
//!
//! `no_std`, no dependencies unless the `defmt` or `log` feature is on. The
//! generated modules implement [`Model`] when built with
//! `mlf_build::Builder::implement_mlf_rt(true)`; each then defines `pub struct Model`.
//!
//! [`slot`] is the model slot image format (in progress), read here on the
//! device and by mlf-build on the host; [`sha256`] its digest.
//!
//! ```
//! use core::ops::ControlFlow;
//! use mlf_rt::{Error, Model, Progress, Stepper, TensorInfo};
//!
//! /// Runs any model on zeroed inputs: one function for every model.
//! fn run_on_zeros<M: Model>() -> Result<M::Outputs, Error> {
//!     let mut outputs = M::zeroed_outputs();
//!     M::run(&M::zeroed_inputs(), &mut outputs)?;
//!     Ok(outputs)
//! }
//!
//! // Two hand-written models with the interface generated modules have, each
//! // run in one step.
//! struct AddOne;
//! struct Negate;
//! struct OneStep<'a>(Option<(&'a [u8], &'a mut [u8])>, fn(u8) -> u8);
//! impl Stepper for OneStep<'_> {
//!     fn step(&mut self) -> Result<Option<Progress>, Error> {
//!         let Some((input, output)) = self.0.take() else { return Ok(None) };
//!         for (o, i) in output.iter_mut().zip(input) { *o = (self.1)(*i); }
//!         Ok(Some(Progress { index: 0, operator: "toy" }))
//!     }
//!     fn is_running(&self) -> bool { self.0.is_some() }
//! }
//! const IN: TensorInfo = TensorInfo { name: "x", dtype: "uint8", bytes: 4, len: 4, shape: &[4], align: 1 };
//! const OUT: TensorInfo = TensorInfo { name: "y", dtype: "uint8", bytes: 4, len: 4, shape: &[4], align: 1 };
//! macro_rules! toy {
//!     ($model:ident, $name:literal, $f:expr) => {
//!         impl Model for $model {
//!             const NAME: &'static str = $name;
//!             type Inputs = [u8; 4];
//!             type Outputs = [u8; 4];
//!             const INPUTS: &'static [TensorInfo] = &[IN];
//!             const OUTPUTS: &'static [TensorInfo] = &[OUT];
//!             const INPUT_BYTES: usize = 4;
//!             const OUTPUT_BYTES: usize = 4;
//!             const STATIC_RAM_BYTES: usize = 0;
//!             const RAM_BYTES: usize = 8;
//!             const OPERATOR_CALLS: usize = 1;
//!             type Inference<'a> = OneStep<'a>;
//!             fn zeroed_inputs() -> [u8; 4] { [0; 4] }
//!             fn zeroed_outputs() -> [u8; 4] { [0; 4] }
//!             fn run(inputs: &[u8; 4], outputs: &mut [u8; 4]) -> Result<(), Error> {
//!                 Self::start(inputs, outputs)?.step().map(drop)
//!             }
//!             fn run_raw(inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<(), Error> {
//!                 Self::start_raw(inputs, outputs)?.step().map(drop)
//!             }
//!             fn start<'a>(inputs: &'a [u8; 4], outputs: &'a mut [u8; 4]) -> Result<OneStep<'a>, Error> {
//!                 Ok(OneStep(Some((inputs, outputs)), $f))
//!             }
//!             fn start_raw<'a>(inputs: &'a [&[u8]], outputs: &'a mut [&mut [u8]]) -> Result<OneStep<'a>, Error> {
//!                 let [input] = inputs else { return Err(Error::InputCount(inputs.len())) };
//!                 let [output] = outputs else { return Err(Error::OutputCount(outputs.len())) };
//!                 Ok(OneStep(Some((input, output)), $f))
//!             }
//!             fn set_log_hook(hook: Option<fn(&str)>) { mlf_rt::log::set_hook(hook) }
//!         }
//!     };
//! }
//! toy!(AddOne, "add_one", |x: u8| x.wrapping_add(1));
//! toy!(Negate, "negate", |x: u8| x.wrapping_neg());
//! assert_eq!(run_on_zeros::<AddOne>(), Ok([1; 4]));
//! assert_eq!(run_on_zeros::<Negate>(), Ok([0; 4]));
//! assert_eq!(<Negate as Model>::INPUTS[0].bytes, 4);
//!
//! // Stepping any model: a callback between steps, which may cancel the run.
//! let mut outputs = [0; 4];
//! let mut seen = Vec::new();
//! let ran = mlf_rt::run_with::<AddOne>(&[1; 4], &mut outputs, |progress| {
//!     seen.push(progress.operator);
//!     ControlFlow::Continue(())
//! });
//! assert_eq!((ran, outputs, seen), (Ok(()), [2; 4], vec!["toy"]));
//! ```
//!
//! `tests/consumer.rs` of mlf-build runs the same kind of function over two
//! real generated models.
#![no_std]
#![deny(missing_docs)]

pub mod sha256;
pub mod slot;

/// One tensor's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TensorInfo {
    /// Name in the interface header or the graph.
    pub name: &'static str,
    /// TVM's element type name (`int8`, `float32`, ...).
    pub dtype: &'static str,
    /// Size in bytes.
    pub bytes: usize,
    /// Number of elements.
    pub len: usize,
    /// Shape (`[len]` when the archive does not state one).
    pub shape: &'static [usize],
    /// Alignment a raw buffer must have: that of the element type.
    pub align: usize,
}

/// Why a run failed: the same cases as each generated module's own `Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// The generated code returned this non-zero code.
    Model(i32),
    /// TVM's runtime aborted (`TVMPlatformAbort`) with this `tvm_crt_error_t` code.
    Aborted(i32),
    /// Another model is running: runs share static memory and take turns.
    Busy,
    /// The run was cancelled between two steps ([`run_with`]'s callback broke).
    Cancelled,
    /// `run_raw` got this many input buffers instead of `INPUTS.len()`.
    InputCount(usize),
    /// `run_raw` got this many output buffers instead of `OUTPUTS.len()`.
    OutputCount(usize),
    /// The buffer of input `index` has `len` bytes, not `INPUTS[index].bytes`.
    InputSize {
        /// Position of the input.
        index: usize,
        /// Bytes the buffer has.
        len: usize,
    },
    /// The buffer of output `index` has `len` bytes, not `OUTPUTS[index].bytes`.
    OutputSize {
        /// Position of the output.
        index: usize,
        /// Bytes the buffer has.
        len: usize,
    },
    /// A buffer is not aligned for its element type.
    Misaligned {
        /// Whether the buffer is an output (else an input).
        is_output: bool,
        /// Position of the buffer among the inputs or outputs.
        index: usize,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Error::Model(code) => write!(f, "the model returned error code {code}"),
            Error::Aborted(code) => write!(f, "the model aborted with TVM error 0x{code:x}"),
            Error::Busy => write!(f, "another model run is in progress"),
            Error::Cancelled => write!(f, "the run was cancelled between two steps"),
            Error::InputCount(count) => write!(f, "got {count} input buffers, not one per input"),
            Error::OutputCount(count) => write!(f, "got {count} output buffers, not one per output"),
            Error::InputSize { index, len } => write!(f, "input {index} has {len} bytes, not its tensor's size"),
            Error::OutputSize { index, len } => write!(f, "output {index} has {len} bytes, not its tensor's size"),
            Error::Misaligned { is_output, index } => {
                write!(f, "{} buffer {index} is not aligned for its element type", if is_output { "output" } else { "input" })
            }
        }
    }
}

/// A generated model module (`<module>::Model`), as generic code sees it.
pub trait Model {
    /// Module name in the archive.
    const NAME: &'static str;
    /// Typed input buffers (the module's `Inputs`).
    type Inputs;
    /// Typed output buffers (the module's `Outputs`).
    type Outputs;
    /// The inputs, in the model's order.
    const INPUTS: &'static [TensorInfo];
    /// The outputs, in the model's order.
    const OUTPUTS: &'static [TensorInfo];
    /// Bytes of all input buffers together.
    const INPUT_BYTES: usize;
    /// Bytes of all output buffers together.
    const OUTPUT_BYTES: usize;
    /// Static RAM a run uses besides the caller's buffers.
    const STATIC_RAM_BYTES: usize;
    /// RAM a run needs in all: static RAM plus one set of input and output buffers.
    const RAM_BYTES: usize;
    /// Input buffers, all elements zero.
    fn zeroed_inputs() -> Self::Inputs;
    /// Output buffers, all elements zero.
    fn zeroed_outputs() -> Self::Outputs;
    /// Runs the model: reads `inputs`, writes `outputs`.
    fn run(inputs: &Self::Inputs, outputs: &mut Self::Outputs) -> Result<(), Error>;
    /// Runs the model on raw byte buffers in `INPUTS`/`OUTPUTS` order; each must
    /// have its tensor's size and its element type's alignment.
    fn run_raw(inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<(), Error>;
    /// Steps of one stepped run (the module's `OPERATOR_CALLS`).
    const OPERATOR_CALLS: usize;
    /// A run in progress (the module's `Inference`); dropping it cancels the run.
    type Inference<'a>: Stepper
    where
        Self: 'a;
    /// Starts a run to be advanced one step at a time; [`Error::Busy`] while
    /// another run is in progress.
    fn start<'a>(inputs: &'a Self::Inputs, outputs: &'a mut Self::Outputs) -> Result<Self::Inference<'a>, Error>;
    /// [`Model::start`] on raw byte buffers, checked as [`Model::run_raw`] checks them.
    fn start_raw<'a>(inputs: &'a [&[u8]], outputs: &'a mut [&mut [u8]]) -> Result<Self::Inference<'a>, Error>;
    /// Sends each line TVM's runtime logs to `hook`; `None` drops them. One hook
    /// serves every model of the program.
    fn set_log_hook(hook: Option<fn(&str)>);
}

/// What a step ran: its position in the run and the function it called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Progress {
    /// Position of the step in the run (`0..OPERATOR_CALLS`).
    pub index: usize,
    /// The function it called (the module's `STEP_OPERATORS[index]`).
    pub operator: &'static str,
}

/// A run in progress, advanced one step at a time ([`Model::start`]).
pub trait Stepper {
    /// Runs the next step: `Some` of what it ran, `None` once the run has
    /// ended. An error ends the run.
    fn step(&mut self) -> Result<Option<Progress>, Error>;
    /// Whether the run has steps left to run.
    fn is_running(&self) -> bool;
}

/// Runs model `M` as [`Model::run`] does, calling `between` after each step:
/// `ControlFlow::Break` before the last step cancels the run ([`Error::Cancelled`]).
pub fn run_with<M: Model>(
    inputs: &M::Inputs,
    outputs: &mut M::Outputs,
    mut between: impl FnMut(Progress) -> core::ops::ControlFlow<()>,
) -> Result<(), Error> {
    let mut inference = M::start(inputs, outputs)?;
    while let Some(progress) = inference.step()? {
        if between(progress).is_break() && inference.is_running() {
            return Err(Error::Cancelled);
        }
    }
    Ok(())
}

/// Runs model `M` as [`Model::run`] does, returning to the executor after each
/// step but the last; dropping the future before it is ready cancels the run.
pub async fn run_async<M: Model>(inputs: &M::Inputs, outputs: &mut M::Outputs) -> Result<(), Error> {
    finish_async(M::start(inputs, outputs)?).await
}

/// Runs the rest of a started run (from [`Model::start`] or
/// [`Model::start_raw`]), returning to the executor after each step but the
/// last; dropping the future before it is ready cancels the run.
pub async fn finish_async<S: Stepper>(mut inference: S) -> Result<(), Error> {
    while inference.step()?.is_some() {
        if inference.is_running() {
            YieldOnce(false).await;
        }
    }
    Ok(())
}

/// Pending once (waking its task at once), then ready: the executor may run other tasks.
struct YieldOnce(bool);

impl core::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: core::pin::Pin<&mut Self>, context: &mut core::task::Context<'_>) -> core::task::Poll<()> {
        if self.0 {
            return core::task::Poll::Ready(());
        }
        self.0 = true;
        context.waker().wake_by_ref();
        core::task::Poll::Pending
    }
}

/// Code run once per model of a crate: `mlf/mod.rs`'s `visit_models` calls
/// [`Visitor::visit`] with each module's `Model`, so generic code can pick one by name.
pub trait Visitor {
    /// Called once per model.
    fn visit<M: Model>(&mut self);
}

/// The program's log hook and its C side.
pub mod log {
    use core::sync::atomic::{AtomicPtr, Ordering};

    /// The hook as a pointer; null for none.
    static HOOK: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

    /// Sets the function that receives TVM's log lines; `None` drops them.
    pub fn set_hook(hook: Option<fn(&str)>) {
        HOOK.store(hook.map_or(core::ptr::null_mut(), |f| f as *mut ()), Ordering::Release);
    }

    /// The C callback the generated modules register: passes each line to the hook as `&str`
    /// (bytes that are not UTF-8 end the line there).
    ///
    /// # Safety
    /// `message` must point to `length` readable bytes (the support library passes such a buffer).
    pub unsafe extern "C" fn forward(message: *const core::ffi::c_char, length: usize) {
        let hook = HOOK.load(Ordering::Acquire);
        if hook.is_null() || message.is_null() {
            return;
        }
        // SAFETY: only `set_hook` stores here, always a `fn(&str)`.
        let hook: fn(&str) = unsafe { core::mem::transmute::<*mut (), fn(&str)>(hook) };
        // SAFETY: the caller guarantees `length` readable bytes.
        let bytes = unsafe { core::slice::from_raw_parts(message.cast::<u8>(), length) };
        let text = match core::str::from_utf8(bytes) {
            Ok(text) => text,
            // SAFETY: `valid_up_to` bytes are valid UTF-8.
            Err(error) => unsafe { core::str::from_utf8_unchecked(&bytes[..error.valid_up_to()]) },
        };
        hook(text.trim_end_matches('\n'));
    }

    /// A hook for [`crate::Model::set_log_hook`] that prints through `defmt` at info level.
    #[cfg(feature = "defmt")]
    pub fn to_defmt(line: &str) {
        defmt::info!("tvm: {=str}", line);
    }

    /// A hook for [`crate::Model::set_log_hook`] that logs through the `log` crate at info level.
    #[cfg(feature = "log")]
    pub fn to_log(line: &str) {
        ::log::info!(target: "tvm", "{line}");
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::String;
    use std::sync::Mutex;

    static SEEN: Mutex<String> = Mutex::new(String::new());

    /// A run of `left` steps.
    struct Countdown {
        left: usize,
        ran: usize,
    }

    impl super::Stepper for Countdown {
        fn step(&mut self) -> Result<Option<super::Progress>, super::Error> {
            if self.left == 0 {
                return Ok(None);
            }
            self.left -= 1;
            self.ran += 1;
            Ok(Some(super::Progress { index: self.ran - 1, operator: "op" }))
        }
        fn is_running(&self) -> bool {
            self.left > 0
        }
    }

    /// A waker that does nothing (`Waker::noop` is newer than the crate's MSRV).
    fn noop_waker() -> core::task::Waker {
        use core::task::{RawWaker, RawWakerVTable};
        const VTABLE: RawWakerVTable = RawWakerVTable::new(|_| RawWaker::new(core::ptr::null(), &VTABLE), |_| {}, |_| {}, |_| {});
        // SAFETY: every function of the table ignores the null data pointer.
        unsafe { core::task::Waker::from_raw(RawWaker::new(core::ptr::null(), &VTABLE)) }
    }

    #[test]
    fn finish_async_returns_to_the_executor_between_steps() {
        use core::future::Future;
        for steps in [1, 2, 7] {
            let mut future = core::pin::pin!(super::finish_async(Countdown { left: steps, ran: 0 }));
            let waker = noop_waker();
            let mut context = core::task::Context::from_waker(&waker);
            let mut polls = 1;
            while future.as_mut().poll(&mut context).is_pending() {
                polls += 1;
            }
            assert_eq!(polls, steps);
        }
    }

    #[test]
    fn forward_passes_lines_to_the_hook() {
        super::log::set_hook(Some(|line| SEEN.lock().unwrap().push_str(line)));
        let message = b"hello\n";
        // SAFETY: a valid buffer of its length.
        unsafe { super::log::forward(message.as_ptr().cast(), message.len()) };
        super::log::set_hook(None);
        // SAFETY: as above.
        unsafe { super::log::forward(message.as_ptr().cast(), message.len()) };
        assert_eq!(*SEEN.lock().unwrap(), "hello");
    }
}
