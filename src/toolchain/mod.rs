//! The C toolchain, driven: the target and its compiler (`target`, `answers`),
//! compiling (`compile`, `spawn`, `inputs`), bindgen (`bindings`) and the
//! stack bound of what was compiled (`stack_bound`). The objects it writes
//! and reads are `objects`'.

pub(crate) mod answers;
pub(crate) mod bindings;
pub(crate) mod compile;
pub(crate) mod inputs;
pub(crate) mod spawn;
pub(crate) mod stack_bound;
pub(crate) mod target;

/// A scoped thread's result, its panic passed on.
pub(crate) fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
