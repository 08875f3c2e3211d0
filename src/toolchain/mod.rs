//! The C toolchain: the target and its compiler (`target`), compiling
//! (`compile`, `static_lib`), placing the model's memory in named sections
//! (`sections`), making a crate's symbols its own (`symbols`), bindgen (`bindings`) and reading what was built
//! (`elf`, `measure`).

pub(crate) mod answers;
pub(crate) mod bindings;
pub(crate) mod compile;
pub(crate) mod elf;
pub(crate) mod inputs;
pub(crate) mod measure;
pub(crate) mod prologue;
pub(crate) mod sections;
pub(crate) mod spawn;
pub(crate) mod stack;
pub(crate) mod static_lib;
pub(crate) mod symbols;
pub(crate) mod system_lib;
pub(crate) mod target;

/// A scoped thread's result, its panic passed on.
pub(crate) fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
