//! Bounds on the numbers an archive states, checked once after planning and
//! before any of them reaches generated C or Rust: no sum or product of them
//! can overflow after this, and no generated array is larger than any target.

use crate::error::{Error, ErrorKind, Result};
use crate::plan::model::{Entry, Plan};

/// Largest tensor, pool, arena, storage or weight blob in bytes (1 GiB): more
/// than any microcontroller has, and far below a 32-bit address space.
pub(crate) const MAX_BYTES: u64 = 1 << 30;
/// Most dimensions of a tensor (DLPack's `ndim` is stored in 8 bits by the glue).
pub(crate) const MAX_NDIM: usize = 32;
/// Most inputs or outputs of a module.
pub(crate) const MAX_TENSORS: usize = 1024;
/// Most operator calls of a graph module.
pub(crate) const MAX_CALLS: usize = 100_000;

fn over(module: &str, what: &str, value: impl std::fmt::Display, limit: impl std::fmt::Display, name: &str) -> Error {
    Error::new(ErrorKind::Metadata, format!("module `{module}`: {what} is {value}, over mlf-build's limit of {limit} ({name})"))
        .help("check that this is the right archive: the limits are far above what a real model for a device needs (see README.md, Untrusted archives)")
}

pub(crate) fn check_bytes(module: &str, what: &str, bytes: u64) -> Result<()> {
    if bytes > MAX_BYTES {
        return Err(over(module, what, format!("{bytes} bytes"), format!("{MAX_BYTES} bytes"), "MAX_BYTES"));
    }
    Ok(())
}

/// Checks every size and count of every module of `plan` against the limits.
pub(crate) fn check_plan(plan: &Plan) -> Result<()> {
    for module in &plan.modules {
        let m = &module.name;
        for (kind, tensors) in [("input", &module.inputs), ("output", &module.outputs)] {
            if tensors.len() > MAX_TENSORS {
                return Err(over(m, &format!("the number of {kind}s"), tensors.len(), MAX_TENSORS, "MAX_TENSORS"));
            }
            for tensor in tensors {
                check_bytes(m, &format!("{kind} `{}`", tensor.name), tensor.size_bytes)?;
                check_bytes(m, &format!("the padded copy of {kind} `{}`", tensor.name), tensor.buffer_bytes())?;
                if tensor.shape.len() > MAX_NDIM {
                    return Err(over(
                        m,
                        &format!("the number of dimensions of {kind} `{}`", tensor.name),
                        tensor.shape.len(),
                        MAX_NDIM,
                        "MAX_NDIM",
                    ));
                }
            }
        }
        for pool in &module.pools {
            check_bytes(m, &format!("pool `{}`", pool.name), pool.size_bytes)?;
        }
        check_bytes(m, "the workspace in metadata.json", module.memory.workspace_bytes)?;
        check_bytes(m, "the constants size in metadata.json", module.memory.constants_bytes)?;
        check_bytes(m, "the input/output size in metadata.json", module.memory.io_bytes)?;
        check_bytes(m, "the workspace arena", module.arena_bytes)?;
        if let Entry::Graph(schedule) = &module.entry {
            check_bytes(m, "the graph's intermediate storage", schedule.storage_bytes)?;
            check_bytes(m, "the weights from .params", schedule.params.len() as u64)?;
            if schedule.calls.len() > MAX_CALLS {
                return Err(over(m, "the number of operator calls", schedule.calls.len(), MAX_CALLS, "MAX_CALLS"));
            }
            for tensor in &schedule.tensors {
                if tensor.shape.len() > MAX_NDIM {
                    return Err(over(
                        m,
                        &format!("the number of dimensions of graph entry {}", tensor.entry),
                        tensor.shape.len(),
                        MAX_NDIM,
                        "MAX_NDIM",
                    ));
                }
            }
        }
    }
    Ok(())
}
