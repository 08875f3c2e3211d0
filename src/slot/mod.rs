//! Model slot images (issue 36, in progress): the header writer and the
//! report `mlf-build inspect` prints. The format itself (layout, checks,
//! digest) is defined once, in `mlf_rt::slot`, the code the device runs:
//! what this module writes, that code reads. Linking an archive into an image
//! (`mlf-build slot`) comes later; today [`SlotDescription::write_image`]
//! wraps code and data it is given.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use mlf_rt::slot::{self as format, Fields, Side, TensorRecord};
pub use mlf_rt::slot::{Arch, Entry, Features, FloatAbi, Region, SlotError, SlotHeader, ENTRY_COUNT};

use crate::dtype::DType;
use crate::error::{printable, Error, ErrorKind, Result};

/// The most bytes [`read_image`] reads: far more flash than a microcontroller has.
pub const MAX_IMAGE_FILE_BYTES: u64 = 256 << 20;

/// A model input or output as a slot header states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotTensor {
    /// Its name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its shape (`[]` for a scalar).
    pub shape: Vec<u64>,
}

/// What a slot image is built for and needs, besides its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotDescription {
    /// Instruction set.
    pub arch: Arch,
    /// Float calling convention.
    pub float_abi: FloatAbi,
    /// What the core must have.
    pub features: Features,
    /// The flash region the image is linked for; it sits at the origin.
    pub flash: Region,
    /// The RAM region the image is linked for; its data, then its bss, start at the origin.
    pub ram: Region,
    /// Zeroed RAM after the data.
    pub bss_bytes: u32,
    /// Stack a run needs.
    pub stack_bytes: u32,
    /// Offsets into the code of the entry functions, in [`Entry::ALL`] order; `None`: absent.
    pub entries: [Option<u32>; ENTRY_COUNT],
    /// The model's inputs, in order.
    pub inputs: Vec<SlotTensor>,
    /// The model's outputs, in order.
    pub outputs: Vec<SlotTensor>,
}

fn slot_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Slot, message)
}

/// A number of the description as the header's `u32`.
fn header_u32(value: u64, what: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| slot_error(format!("{what} is {value}, more than a slot header's 32 bits hold")))
}

impl SlotDescription {
    /// Bytes of the header, where the code starts: the linker places the
    /// code at `flash.origin` plus this.
    pub fn header_bytes(&self) -> Result<u32> {
        let count = self.inputs.len() as u64 + self.outputs.len() as u64;
        let names: u64 = self.inputs.iter().chain(&self.outputs).map(|tensor| tensor.name.len() as u64).sum();
        let unaligned = format::FIXED_BYTES as u64 + count * format::TENSOR_RECORD_BYTES as u64 + names;
        let align = u64::from(format::ALIGN);
        header_u32(unaligned.div_ceil(align) * align, "the header's length")
    }

    /// The image: header, `code` (linked at `flash.origin + header_bytes()`),
    /// then `data` (the initial values of the RAM at `ram.origin`), with its
    /// digest. Refused with [`ErrorKind::Slot`] when the header would break a
    /// rule of the format (checked by the reader the device runs).
    pub fn write_image(&self, code: &[u8], data: &[u8]) -> Result<Vec<u8>> {
        let count = |tensors: &[SlotTensor], side| {
            u16::try_from(tensors.len())
                .map_err(|_| slot_error(format!("the model has {} {side}s; a slot header holds at most 65535", tensors.len())))
        };
        let header_bytes = self.header_bytes()?;
        let code_bytes = header_u32(code.len() as u64, "the code's length")?;
        let data_bytes = header_u32(data.len() as u64, "the data's length")?;
        let image_bytes = header_u32(u64::from(header_bytes) + u64::from(code_bytes) + u64::from(data_bytes), "the image's length")?;
        let mut entries = [0u32; ENTRY_COUNT];
        for (offset, entry) in entries.iter_mut().zip(self.entries) {
            if let Some(entry) = entry {
                *offset = header_u32(u64::from(header_bytes) + u64::from(entry), "an entry's offset")?;
            }
        }
        let fields = Fields {
            image_bytes,
            header_bytes,
            code_bytes,
            data_bytes,
            bss_bytes: self.bss_bytes,
            stack_bytes: self.stack_bytes,
            arch: self.arch,
            float_abi: self.float_abi,
            features: self.features,
            flash: self.flash,
            ram: self.ram,
            entries,
            input_count: count(&self.inputs, "input")?,
            output_count: count(&self.outputs, "output")?,
        };
        let mut image = Vec::with_capacity(image_bytes as usize);
        image.extend_from_slice(&fields.encode());
        // Names follow the records, in the records' order.
        let mut name_offset = fields.records_end();
        for tensor in self.inputs.iter().chain(&self.outputs) {
            image.extend_from_slice(&tensor_record(tensor, header_u32(name_offset, "a name's offset")?)?.encode());
            name_offset += tensor.name.len() as u64;
        }
        for tensor in self.inputs.iter().chain(&self.outputs) {
            image.extend_from_slice(tensor.name.as_bytes());
        }
        image.resize(header_bytes as usize, 0);
        image.extend_from_slice(code);
        image.extend_from_slice(data);
        format::seal(&mut image).map_err(|error| {
            slot_error(format!("the description makes no valid slot image: {error}"))
                .help("the regions must hold the image and its RAM, and the entries must lie in the code")
        })?;
        Ok(image)
    }
}

/// The record of `tensor`, its name at `name_offset`.
fn tensor_record(tensor: &SlotTensor, name_offset: u32) -> Result<TensorRecord> {
    let name = printable(&tensor.name);
    let dtype = format::DType { code: tensor.dtype.code.dl_code(), bits: tensor.dtype.bits };
    if dtype.name().is_none() {
        return Err(slot_error(format!("tensor `{name}` has type {}, which the slot format does not have", tensor.dtype)));
    }
    if tensor.shape.len() > format::MAX_DIMS {
        return Err(slot_error(format!(
            "tensor `{name}` has {} dimensions; a slot header holds at most {}",
            tensor.shape.len(),
            format::MAX_DIMS
        )));
    }
    let mut dims = [0u32; format::MAX_DIMS];
    for (slot, dim) in dims.iter_mut().zip(&tensor.shape) {
        *slot = header_u32(*dim, &format!("a dimension of tensor `{name}`"))?;
    }
    let bytes = tensor.shape.iter().try_fold(tensor.dtype.size_bytes() as u64, |product, dim| product.checked_mul(*dim));
    Ok(TensorRecord {
        name_offset,
        name_len: header_u32(tensor.name.len() as u64, &format!("the name length of tensor `{name}`"))?,
        dtype,
        ndim: tensor.shape.len() as u8,
        bytes: header_u32(bytes.unwrap_or(u64::MAX), &format!("the size of tensor `{name}`"))?,
        dims,
    })
}

/// Reads a slot image file, refusing one over [`MAX_IMAGE_FILE_BYTES`] before reading it.
pub fn read_image(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let length = file.metadata().map_err(|e| Error::io("read the size of", path, e))?.len();
    let too_big =
        |length| slot_error(format!("`{}` has {length} bytes, more than a slot image may have ({MAX_IMAGE_FILE_BYTES})", path.display()));
    if length > MAX_IMAGE_FILE_BYTES {
        return Err(too_big(length));
    }
    let mut bytes = Vec::with_capacity(length as usize);
    // A file that grows while it is read stops at the limit too.
    file.take(MAX_IMAGE_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > MAX_IMAGE_FILE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Whether `bytes` start as a slot image does (rather than as an archive).
pub fn is_image(bytes: &[u8]) -> bool {
    bytes.starts_with(&format::MAGIC)
}

/// The header as text, one fact a line; names are printed escaped.
pub fn report(header: &SlotHeader) -> String {
    let fields = header.fields();
    let mut out = format!("slot image: {} bytes, format version {}\n", fields.image_bytes, format::FORMAT_VERSION);
    let features = feature_names(fields.arch, fields.features);
    let _ = writeln!(out, "  target: {:?}, float ABI {:?}, core features: {}", fields.arch, fields.float_abi, features);
    let _ = writeln!(
        out,
        "  flash: 0x{:08x}..0x{:08x} ({} bytes): header {}, code and constants {}, RAM's initial values {}",
        fields.flash.origin,
        fields.flash.end(),
        fields.flash.length,
        fields.header_bytes,
        fields.code_bytes,
        fields.data_bytes
    );
    let _ = writeln!(
        out,
        "  RAM: 0x{:08x}..0x{:08x} ({} bytes): data {} + bss {} = {}; stack {}",
        fields.ram.origin,
        fields.ram.end(),
        fields.ram.length,
        fields.data_bytes,
        fields.bss_bytes,
        fields.ram_bytes(),
        fields.stack_bytes
    );
    let entries: Vec<String> = Entry::ALL
        .iter()
        .zip(fields.entries)
        .map(|(entry, offset)| match offset {
            0 => format!("{entry:?} none"),
            offset => format!("{entry:?} +0x{offset:x}"),
        })
        .collect();
    let _ = writeln!(out, "  entries: {}", entries.join(", "));
    for (side, label) in [(Side::Input, "input"), (Side::Output, "output")] {
        for index in 0..header.count(side) {
            let Some(tensor) = header.tensor(side, index) else { continue };
            let shape: Vec<String> = tensor.record.shape().iter().map(u32::to_string).collect();
            let _ = writeln!(
                out,
                "  {label} {index} `{}`: {} [{}], {} bytes",
                tensor.name.escape_debug(),
                tensor.record.dtype.name().unwrap_or("?"),
                shape.join(", "),
                tensor.record.bytes
            );
        }
    }
    out
}

/// The features' names, `+` between them.
fn feature_names(arch: Arch, features: Features) -> String {
    let names: &[(u32, &str)] = match arch {
        Arch::Arm => &[
            (Features::THUMB2, "Thumb-2"),
            (Features::DSP, "DSP"),
            (Features::MVE, "MVE"),
            (Features::FPU_SINGLE, "FPU (single)"),
            (Features::FPU_DOUBLE, "FPU (double)"),
        ],
        Arch::Riscv32 => {
            &[(Features::RV_M, "M"), (Features::RV_A, "A"), (Features::RV_C, "C"), (Features::RV_F, "F"), (Features::RV_D, "D")]
        }
    };
    let present: Vec<&str> = names.iter().filter(|(bit, _)| features.0 & bit != 0).map(|(_, name)| *name).collect();
    if present.is_empty() {
        "none".to_string()
    } else {
        present.join("+")
    }
}

/// The digest line of the report: the stated digest, and whether the bytes have it.
pub fn digest_line(header: &SlotHeader) -> String {
    let hex = |digest: [u8; 32]| digest.iter().map(|byte| format!("{byte:02x}")).collect::<String>();
    match header.check_digest() {
        Ok(()) => format!("  sha256: {} (the bytes match)\n", hex(header.stated_digest())),
        Err(_) => format!("  sha256: {} stated, {} computed: CORRUPTED\n", hex(header.stated_digest()), hex(header.computed_digest())),
    }
}

#[cfg(test)]
mod tests;
