//! The model slot image (mlf-build issue 36, in progress): a model's code, its
//! constants and the initial values of its RAM, linked for a flash region and
//! a RAM region the application reserves, behind a header the application
//! checks before it calls into the image.
//!
//! This module is the one definition of the format: `mlf-build` writes images
//! with [`Fields::encode`], [`TensorRecord::encode`] and [`seal`], and both
//! `mlf-build inspect` and the device read them with [`SlotHeader::parse`].
//! No heap, no panics on any input: every offset and length is checked, and
//! the first mismatch is a [`SlotError`] naming the field and both values.
//!
//! An image, all numbers little-endian:
//!
//! | bytes | what |
//! |---|---|
//! | `0..FIXED_BYTES` | the fixed fields ([`Fields`]) |
//! | then | one [`TensorRecord`] per input, then per output |
//! | then, up to `header_bytes` | the tensors' names (UTF-8), zero padding |
//! | `header_bytes..+code_bytes` | code and constants, linked at `flash.origin + header_bytes` |
//! | then `data_bytes` | the initial values of the RAM image, copied to `ram.origin` |
//!
//! The digest covers the whole image with its own 32 bytes taken as zeros: it
//! finds a torn or corrupted write, but anyone can compute it, so it says
//! nothing about who built the image. A slot is code: check a signature of
//! your own before [`SlotHeader::parse`] if images can come from elsewhere.
//!
//! ```
//! use mlf_rt::slot::{SlotError, SlotHeader, MAGIC};
//! let mut bytes = [0u8; 200];
//! bytes[..8].copy_from_slice(&MAGIC);
//! // Version 0 is no version this code reads.
//! assert!(matches!(SlotHeader::parse(&bytes), Err(SlotError::Mismatch { .. })));
//! assert!(matches!(SlotHeader::parse(&bytes[..20]), Err(SlotError::Truncated { .. })));
//! ```

use crate::sha256::Sha256;

/// The first 8 bytes of every image.
pub const MAGIC: [u8; 8] = *b"MLFSLOT\0";
/// The version of the format this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of the fixed fields at the start of the header.
pub const FIXED_BYTES: usize = 112;
/// Bytes of one tensor record.
pub const TENSOR_RECORD_BYTES: usize = 48;
/// The most dimensions a tensor's shape has.
pub const MAX_DIMS: usize = 8;
/// The most bytes a tensor's name has.
pub const MAX_NAME_BYTES: u32 = 256;
/// Alignment of the header's length (where code starts) and of both regions' origins.
pub const ALIGN: u32 = 8;
/// Where the SHA-256 digest sits in the image.
pub const DIGEST_RANGE: core::ops::Range<usize> = 16..48;

// Offsets of the fixed fields.
const VERSION: usize = 8;
const IMAGE_BYTES: usize = 12;
const HEADER_BYTES: usize = 48;
const CODE_BYTES: usize = 52;
const DATA_BYTES: usize = 56;
const BSS_BYTES: usize = 60;
const STACK_BYTES: usize = 64;
const ARCH: usize = 68;
const FLOAT_ABI: usize = 70;
const FEATURES: usize = 72;
const FLASH: usize = 76;
const RAM: usize = 84;
const ENTRIES: usize = 92;
const INPUT_COUNT: usize = 108;
const OUTPUT_COUNT: usize = 110;

/// The instruction set an image was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Arch {
    /// Arm Cortex-M (Thumb code).
    Arm,
    /// 32-bit RISC-V.
    Riscv32,
}

impl Arch {
    /// The number the header stores.
    pub const fn code(self) -> u16 {
        match self {
            Arch::Arm => 1,
            Arch::Riscv32 => 2,
        }
    }

    fn from_code(code: u16) -> Option<Arch> {
        [Arch::Arm, Arch::Riscv32].into_iter().find(|arch| arch.code() == code)
    }

    /// The [`Features`] bits that mean something on this architecture.
    pub const fn known_features(self) -> u32 {
        match self {
            Arch::Arm => Features::THUMB2 | Features::DSP | Features::MVE | Features::FPU_SINGLE | Features::FPU_DOUBLE,
            Arch::Riscv32 => Features::RV_M | Features::RV_A | Features::RV_C | Features::RV_F | Features::RV_D,
        }
    }
}

/// How floats are passed between functions: caller and image must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FloatAbi {
    /// In integer registers (Arm `eabi`, RISC-V `ilp32`).
    Soft,
    /// In FPU registers (Arm `eabihf`).
    ArmHard,
    /// RISC-V `ilp32f`.
    RiscvSingle,
    /// RISC-V `ilp32d`.
    RiscvDouble,
}

impl FloatAbi {
    /// The number the header stores.
    pub const fn code(self) -> u16 {
        match self {
            FloatAbi::Soft => 1,
            FloatAbi::ArmHard => 2,
            FloatAbi::RiscvSingle => 3,
            FloatAbi::RiscvDouble => 4,
        }
    }

    fn from_code(code: u16) -> Option<FloatAbi> {
        [FloatAbi::Soft, FloatAbi::ArmHard, FloatAbi::RiscvSingle, FloatAbi::RiscvDouble].into_iter().find(|abi| abi.code() == code)
    }

    /// The architecture and [`Features`] bit this ABI needs (`0`: none).
    const fn needs(self) -> (Option<Arch>, u32) {
        match self {
            FloatAbi::Soft => (None, 0),
            FloatAbi::ArmHard => (Some(Arch::Arm), Features::FPU_SINGLE),
            FloatAbi::RiscvSingle => (Some(Arch::Riscv32), Features::RV_F),
            FloatAbi::RiscvDouble => (Some(Arch::Riscv32), Features::RV_D),
        }
    }
}

/// What the core must have to run the image, as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Features(pub u32);

impl Features {
    /// Arm: Thumb-2 (Armv7-M and later mainline cores).
    pub const THUMB2: u32 = 1 << 0;
    /// Arm: the DSP extension.
    pub const DSP: u32 = 1 << 1;
    /// Arm: Helium (MVE).
    pub const MVE: u32 = 1 << 2;
    /// Arm: a single-precision FPU.
    pub const FPU_SINGLE: u32 = 1 << 3;
    /// Arm: a double-precision FPU.
    pub const FPU_DOUBLE: u32 = 1 << 4;
    /// RISC-V `M` (multiply and divide).
    pub const RV_M: u32 = 1 << 8;
    /// RISC-V `A` (atomics).
    pub const RV_A: u32 = 1 << 9;
    /// RISC-V `C` (compressed instructions).
    pub const RV_C: u32 = 1 << 10;
    /// RISC-V `F` (single-precision floats).
    pub const RV_F: u32 = 1 << 11;
    /// RISC-V `D` (double-precision floats).
    pub const RV_D: u32 = 1 << 12;

    /// Whether a core with `self` runs code that needs `needed`.
    pub const fn covers(self, needed: Features) -> bool {
        needed.0 & !self.0 == 0
    }
}

/// An address range: where an image was linked to sit, or what is reserved for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Region {
    /// First address.
    pub origin: u32,
    /// Bytes.
    pub length: u32,
}

impl Region {
    /// One past the last address (up to 2^32).
    pub const fn end(self) -> u64 {
        self.origin as u64 + self.length as u64
    }
}

/// The image's functions, in the order of the header's entry table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Entry {
    /// Takes the application's table (log hook, abort); required.
    Open,
    /// Runs the model on the caller's buffers; required.
    Run,
    /// Starts a stepped run; with [`Entry::Step`] or not at all.
    Start,
    /// Runs the next step of a stepped run.
    Step,
}

impl Entry {
    /// Every entry, in table order.
    pub const ALL: [Entry; 4] = [Entry::Open, Entry::Run, Entry::Start, Entry::Step];
}

/// The number of entries in the table.
pub const ENTRY_COUNT: usize = Entry::ALL.len();

/// A tensor's element type: DLPack's code and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DType {
    /// DLPack type code (`kDLInt` 0, `kDLUInt` 1, `kDLFloat` 2, `kDLBfloat` 4).
    pub code: u8,
    /// Bits of one element.
    pub bits: u8,
}

/// The element types an image may state, with TVM's names.
const DTYPES: [(DType, &str); 12] = [
    (DType { code: 0, bits: 8 }, "int8"),
    (DType { code: 0, bits: 16 }, "int16"),
    (DType { code: 0, bits: 32 }, "int32"),
    (DType { code: 0, bits: 64 }, "int64"),
    (DType { code: 1, bits: 8 }, "uint8"),
    (DType { code: 1, bits: 16 }, "uint16"),
    (DType { code: 1, bits: 32 }, "uint32"),
    (DType { code: 1, bits: 64 }, "uint64"),
    (DType { code: 2, bits: 16 }, "float16"),
    (DType { code: 2, bits: 32 }, "float32"),
    (DType { code: 2, bits: 64 }, "float64"),
    (DType { code: 4, bits: 16 }, "bfloat16"),
];

impl DType {
    /// TVM's name for the type (`int8`, `float32`, ...); `None` for a type the format does not allow.
    pub fn name(self) -> Option<&'static str> {
        DTYPES.iter().find(|(dtype, _)| *dtype == self).map(|(_, name)| *name)
    }

    /// The type TVM names `name`.
    pub fn from_name(name: &str) -> Option<DType> {
        DTYPES.iter().find(|(_, known)| *known == name).map(|(dtype, _)| *dtype)
    }
}

/// The fixed fields of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fields {
    /// Bytes of the whole image, header included.
    pub image_bytes: u32,
    /// Bytes of the header: fixed fields, tensor records, names, padding; code starts here.
    pub header_bytes: u32,
    /// Bytes of code and constants.
    pub code_bytes: u32,
    /// Bytes of initialised RAM, copied from the image to `ram.origin`.
    pub data_bytes: u32,
    /// Bytes of zeroed RAM after them.
    pub bss_bytes: u32,
    /// Stack a run needs, on the caller's stack.
    pub stack_bytes: u32,
    /// Instruction set.
    pub arch: Arch,
    /// Float calling convention.
    pub float_abi: FloatAbi,
    /// What the core must have.
    pub features: Features,
    /// The flash region the image was linked for; the image sits at its origin.
    pub flash: Region,
    /// The RAM region the image was linked for; its RAM starts at its origin.
    pub ram: Region,
    /// Offsets from the image's start of the [`Entry`] functions, `0` for none.
    pub entries: [u32; ENTRY_COUNT],
    /// Number of inputs.
    pub input_count: u16,
    /// Number of outputs.
    pub output_count: u16,
}

fn u16_at(bytes: &[u8; FIXED_BYTES], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn put_u32(out: &mut [u8], at: usize, value: u32) {
    out[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

impl Fields {
    /// The fixed fields as bytes; the digest's bytes are zeros until [`seal`].
    pub fn encode(&self) -> [u8; FIXED_BYTES] {
        let mut out = [0u8; FIXED_BYTES];
        out[..8].copy_from_slice(&MAGIC);
        put_u32(&mut out, VERSION, FORMAT_VERSION);
        put_u32(&mut out, IMAGE_BYTES, self.image_bytes);
        put_u32(&mut out, HEADER_BYTES, self.header_bytes);
        put_u32(&mut out, CODE_BYTES, self.code_bytes);
        put_u32(&mut out, DATA_BYTES, self.data_bytes);
        put_u32(&mut out, BSS_BYTES, self.bss_bytes);
        put_u32(&mut out, STACK_BYTES, self.stack_bytes);
        out[ARCH..ARCH + 2].copy_from_slice(&self.arch.code().to_le_bytes());
        out[FLOAT_ABI..FLOAT_ABI + 2].copy_from_slice(&self.float_abi.code().to_le_bytes());
        put_u32(&mut out, FEATURES, self.features.0);
        for (at, region) in [(FLASH, self.flash), (RAM, self.ram)] {
            put_u32(&mut out, at, region.origin);
            put_u32(&mut out, at + 4, region.length);
        }
        for (index, offset) in self.entries.iter().enumerate() {
            put_u32(&mut out, ENTRIES + 4 * index, *offset);
        }
        out[INPUT_COUNT..INPUT_COUNT + 2].copy_from_slice(&self.input_count.to_le_bytes());
        out[OUTPUT_COUNT..OUTPUT_COUNT + 2].copy_from_slice(&self.output_count.to_le_bytes());
        out
    }

    /// The fields of `bytes`, with magic, version and codes checked.
    fn decode(bytes: &[u8; FIXED_BYTES]) -> Result<Fields, SlotError> {
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&bytes[..8]);
        if magic != MAGIC {
            return Err(SlotError::Magic { found: magic });
        }
        let version = u32_at(bytes, VERSION);
        if version != FORMAT_VERSION {
            return Err(SlotError::mismatch(Field::Version, version, Rule::Equal(FORMAT_VERSION.into())));
        }
        let arch_code = u16_at(bytes, ARCH);
        let arch = Arch::from_code(arch_code).ok_or(SlotError::mismatch(Field::Arch, arch_code, Rule::Known))?;
        let abi_code = u16_at(bytes, FLOAT_ABI);
        let float_abi = FloatAbi::from_code(abi_code).ok_or(SlotError::mismatch(Field::FloatAbi, abi_code, Rule::Known))?;
        let (abi_arch, abi_feature) = float_abi.needs();
        if abi_arch.is_some_and(|needed| needed != arch) {
            return Err(SlotError::mismatch(Field::FloatAbi, abi_code, Rule::Known));
        }
        let features = Features(u32_at(bytes, FEATURES));
        let unknown = features.0 & !arch.known_features();
        if unknown != 0 {
            return Err(SlotError::mismatch(Field::Features, features.0, Rule::NoBits(unknown.into())));
        }
        if features.0 & abi_feature != abi_feature {
            return Err(SlotError::mismatch(Field::Features, features.0, Rule::AllBits(abi_feature.into())));
        }
        let region = |at| Region { origin: u32_at(bytes, at), length: u32_at(bytes, at + 4) };
        let mut entries = [0u32; ENTRY_COUNT];
        for (index, offset) in entries.iter_mut().enumerate() {
            *offset = u32_at(bytes, ENTRIES + 4 * index);
        }
        Ok(Fields {
            image_bytes: u32_at(bytes, IMAGE_BYTES),
            header_bytes: u32_at(bytes, HEADER_BYTES),
            code_bytes: u32_at(bytes, CODE_BYTES),
            data_bytes: u32_at(bytes, DATA_BYTES),
            bss_bytes: u32_at(bytes, BSS_BYTES),
            stack_bytes: u32_at(bytes, STACK_BYTES),
            arch,
            float_abi,
            features,
            flash: region(FLASH),
            ram: region(RAM),
            entries,
            input_count: u16_at(bytes, INPUT_COUNT),
            output_count: u16_at(bytes, OUTPUT_COUNT),
        })
    }

    /// Bytes of RAM the image uses from `ram.origin`: its data and bss.
    pub const fn ram_bytes(&self) -> u64 {
        self.data_bytes as u64 + self.bss_bytes as u64
    }

    /// Where the tensor records end and the names may start.
    pub const fn records_end(&self) -> u64 {
        FIXED_BYTES as u64 + (self.input_count as u64 + self.output_count as u64) * TENSOR_RECORD_BYTES as u64
    }

    /// The sizes, regions and entries against each other and against the `available` bytes.
    fn check(&self, available: usize) -> Result<(), SlotError> {
        let image = u64::from(self.image_bytes);
        if image > available as u64 {
            return Err(SlotError::Truncated { what: Field::ImageBytes, needed: image, have: available as u64 });
        }
        if u64::from(self.header_bytes) < self.records_end() {
            return Err(SlotError::mismatch(Field::HeaderBytes, self.header_bytes, Rule::AtLeast(self.records_end())));
        }
        if self.header_bytes % ALIGN != 0 {
            return Err(SlotError::mismatch(Field::HeaderBytes, self.header_bytes, Rule::MultipleOf(ALIGN.into())));
        }
        let parts = u64::from(self.header_bytes) + u64::from(self.code_bytes) + u64::from(self.data_bytes);
        if image != parts {
            return Err(SlotError::mismatch(Field::ImageBytes, self.image_bytes, Rule::Equal(parts)));
        }
        for (origin, length, region) in
            [(Field::FlashOrigin, Field::FlashLength, self.flash), (Field::RamOrigin, Field::RamLength, self.ram)]
        {
            if region.origin % ALIGN != 0 {
                return Err(SlotError::mismatch(origin, region.origin, Rule::MultipleOf(ALIGN.into())));
            }
            if region.end() > 1 << 32 {
                return Err(SlotError::mismatch(length, region.length, Rule::AtMost((1u64 << 32) - u64::from(region.origin))));
            }
        }
        let overlap = u64::from(self.flash.origin) < self.ram.end() && u64::from(self.ram.origin) < self.flash.end();
        if overlap && self.flash.length > 0 && self.ram.length > 0 {
            return Err(SlotError::mismatch(Field::RamOrigin, self.ram.origin, Rule::Outside(self.flash.origin.into(), self.flash.end())));
        }
        if image > u64::from(self.flash.length) {
            return Err(SlotError::mismatch(Field::ImageBytes, self.image_bytes, Rule::AtMost(self.flash.length.into())));
        }
        if self.ram_bytes() > u64::from(self.ram.length) {
            return Err(SlotError::Mismatch {
                field: Field::RamBytes,
                found: self.ram_bytes(),
                expected: Rule::AtMost(self.ram.length.into()),
            });
        }
        let code = (u64::from(self.header_bytes), u64::from(self.header_bytes) + u64::from(self.code_bytes));
        for (entry, offset) in Entry::ALL.into_iter().zip(self.entries) {
            let required = matches!(entry, Entry::Open | Entry::Run);
            if offset == 0 {
                if required {
                    return Err(SlotError::mismatch(Field::Entry(entry), offset, Rule::Within(code.0, code.1)));
                }
                continue;
            }
            if offset % 2 != 0 {
                return Err(SlotError::mismatch(Field::Entry(entry), offset, Rule::MultipleOf(2)));
            }
            if u64::from(offset) < code.0 || u64::from(offset) >= code.1 {
                return Err(SlotError::mismatch(Field::Entry(entry), offset, Rule::Within(code.0, code.1)));
            }
        }
        let [_, _, start, step] = self.entries;
        if (start == 0) != (step == 0) {
            let expected = if start == 0 { Rule::Equal(0) } else { Rule::Within(code.0, code.1) };
            return Err(SlotError::mismatch(Field::Entry(Entry::Step), step, expected));
        }
        Ok(())
    }
}

/// Inputs or outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Side {
    /// The model's inputs.
    Input,
    /// The model's outputs.
    Output,
}

/// A tensor's record in the header; its name is elsewhere in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TensorRecord {
    /// Offset of the name from the image's start.
    pub name_offset: u32,
    /// Bytes of the name.
    pub name_len: u32,
    /// Element type.
    pub dtype: DType,
    /// Number of dimensions (at most [`MAX_DIMS`]).
    pub ndim: u8,
    /// Bytes of the tensor: its elements times the element's bytes.
    pub bytes: u32,
    /// The shape; zeros after `ndim`.
    pub dims: [u32; MAX_DIMS],
}

impl TensorRecord {
    /// The record as bytes.
    pub fn encode(&self) -> [u8; TENSOR_RECORD_BYTES] {
        let mut out = [0u8; TENSOR_RECORD_BYTES];
        put_u32(&mut out, 0, self.name_offset);
        put_u32(&mut out, 4, self.name_len);
        out[8] = self.dtype.code;
        out[9] = self.dtype.bits;
        out[10] = self.ndim;
        put_u32(&mut out, 12, self.bytes);
        for (index, dim) in self.dims.iter().enumerate() {
            put_u32(&mut out, 16 + 4 * index, *dim);
        }
        out
    }

    fn decode(bytes: &[u8]) -> Result<TensorRecord, TensorField> {
        let mut dims = [0u32; MAX_DIMS];
        for (index, dim) in dims.iter_mut().enumerate() {
            *dim = u32_at(bytes, 16 + 4 * index);
        }
        if bytes[11] != 0 {
            return Err(TensorField::Reserved);
        }
        Ok(TensorRecord {
            name_offset: u32_at(bytes, 0),
            name_len: u32_at(bytes, 4),
            dtype: DType { code: bytes[8], bits: bytes[9] },
            ndim: bytes[10],
            bytes: u32_at(bytes, 12),
            dims,
        })
    }

    /// The shape.
    pub fn shape(&self) -> &[u32] {
        &self.dims[..usize::from(self.ndim).min(MAX_DIMS)]
    }

    /// The number of elements (`None` past `u64`).
    pub fn elements(&self) -> Option<u64> {
        self.shape().iter().try_fold(1u64, |product, dim| product.checked_mul(u64::from(*dim)))
    }
}

/// One input or output as a parsed header states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tensor<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its record (type, shape, bytes).
    pub record: TensorRecord,
}

/// A checked header over the bytes of an image: every offset and length lies
/// inside the image and every field has a value the format allows.
#[derive(Debug, Clone, Copy)]
pub struct SlotHeader<'a> {
    image: &'a [u8],
    fields: Fields,
}

impl<'a> SlotHeader<'a> {
    /// Checks the header at the start of `bytes` (an image, or a flash region
    /// longer than the image it holds). Does not check the digest: see
    /// [`SlotHeader::check_digest`].
    pub fn parse(bytes: &'a [u8]) -> Result<SlotHeader<'a>, SlotError> {
        let fixed: &[u8; FIXED_BYTES] = match bytes.get(..FIXED_BYTES).and_then(|fixed| fixed.try_into().ok()) {
            Some(fixed) => fixed,
            None => return Err(SlotError::Truncated { what: Field::Fixed, needed: FIXED_BYTES as u64, have: bytes.len() as u64 }),
        };
        let fields = Fields::decode(fixed)?;
        fields.check(bytes.len())?;
        // In bounds: `check` compared image_bytes with bytes.len().
        let header = SlotHeader { image: &bytes[..fields.image_bytes as usize], fields };
        for side in [Side::Input, Side::Output] {
            for index in 0..header.count(side) {
                header.checked_tensor(side, index)?;
            }
        }
        Ok(header)
    }

    /// The fixed fields.
    pub fn fields(&self) -> &Fields {
        &self.fields
    }

    /// The whole image (`image_bytes` long).
    pub fn image(&self) -> &'a [u8] {
        self.image
    }

    /// Code and constants, to sit at `flash.origin + header_bytes`.
    pub fn code(&self) -> &'a [u8] {
        let start = self.fields.header_bytes as usize;
        &self.image[start..start + self.fields.code_bytes as usize]
    }

    /// The initial values of the image's RAM, to be copied to `ram.origin`.
    pub fn data(&self) -> &'a [u8] {
        &self.image[self.image.len() - self.fields.data_bytes as usize..]
    }

    /// How many inputs or outputs.
    pub fn count(&self, side: Side) -> u16 {
        match side {
            Side::Input => self.fields.input_count,
            Side::Output => self.fields.output_count,
        }
    }

    /// Input or output `index` (`None` past the count).
    pub fn tensor(&self, side: Side, index: u16) -> Option<Tensor<'a>> {
        if index >= self.count(side) {
            return None;
        }
        // Checked by `parse`.
        self.checked_tensor(side, index).ok()
    }

    fn checked_tensor(&self, side: Side, index: u16) -> Result<Tensor<'a>, SlotError> {
        let position = match side {
            Side::Input => u64::from(index),
            Side::Output => u64::from(self.fields.input_count) + u64::from(index),
        };
        // Within the header: `check` compared records_end with header_bytes.
        let at = FIXED_BYTES + position as usize * TENSOR_RECORD_BYTES;
        let at_field = |part| Field::Tensor { side, index, part };
        let record = TensorRecord::decode(&self.image[at..at + TENSOR_RECORD_BYTES])
            .map_err(|part| SlotError::mismatch(at_field(part), self.image[at + 11], Rule::Equal(0)))?;
        if record.dtype.name().is_none() {
            let code = u32::from(record.dtype.code) << 8 | u32::from(record.dtype.bits);
            return Err(SlotError::mismatch(at_field(TensorField::DType), code, Rule::Known));
        }
        if usize::from(record.ndim) > MAX_DIMS {
            return Err(SlotError::mismatch(at_field(TensorField::Ndim), record.ndim, Rule::AtMost(MAX_DIMS as u64)));
        }
        if let Some(unused) = record.dims[usize::from(record.ndim)..].iter().find(|dim| **dim != 0) {
            return Err(SlotError::mismatch(at_field(TensorField::UnusedDim), *unused, Rule::Equal(0)));
        }
        let element_bytes = u64::from(record.dtype.bits / 8);
        match record.elements().and_then(|elements| elements.checked_mul(element_bytes)) {
            Some(bytes) if bytes == u64::from(record.bytes) => {}
            Some(bytes) => return Err(SlotError::mismatch(at_field(TensorField::Bytes), record.bytes, Rule::Equal(bytes))),
            // More elements than u64 counts: no tensor of u32 bytes.
            None => return Err(SlotError::mismatch(at_field(TensorField::Shape), u64::MAX, Rule::AtMost(u32::MAX.into()))),
        }
        if record.name_len == 0 {
            return Err(SlotError::mismatch(at_field(TensorField::NameLen), 0u32, Rule::AtLeast(1)));
        }
        if record.name_len > MAX_NAME_BYTES {
            return Err(SlotError::mismatch(at_field(TensorField::NameLen), record.name_len, Rule::AtMost(MAX_NAME_BYTES.into())));
        }
        let names_start = self.fields.records_end();
        let header_end = u64::from(self.fields.header_bytes);
        let name_end = u64::from(record.name_offset) + u64::from(record.name_len);
        if u64::from(record.name_offset) < names_start || name_end > header_end {
            return Err(SlotError::mismatch(at_field(TensorField::NameOffset), record.name_offset, Rule::Within(names_start, header_end)));
        }
        let name = &self.image[record.name_offset as usize..name_end as usize];
        let name = core::str::from_utf8(name).map_err(|error| SlotError::NameNotUtf8 { side, index, valid_up_to: error.valid_up_to() })?;
        Ok(Tensor { name, record })
    }

    /// The digest the header states.
    pub fn stated_digest(&self) -> [u8; 32] {
        let mut digest = [0u8; 32];
        digest.copy_from_slice(&self.image[DIGEST_RANGE]);
        digest
    }

    /// The digest of the image's bytes.
    pub fn computed_digest(&self) -> [u8; 32] {
        digest(self.image)
    }

    /// Whether the image's bytes have the digest the header states:
    /// [`SlotError::Digest`] when not (a torn or corrupted write).
    pub fn check_digest(&self) -> Result<(), SlotError> {
        let (stated, computed) = (self.stated_digest(), self.computed_digest());
        if stated != computed {
            return Err(SlotError::Digest { stated, computed });
        }
        Ok(())
    }
}

/// SHA-256 of `image` with the digest's own bytes as zeros; `image` holds at least the fixed fields.
fn digest(image: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(&image[..DIGEST_RANGE.start]);
    hasher.update(&[0u8; 32]);
    hasher.update(&image[DIGEST_RANGE.end..]);
    hasher.finalize()
}

/// Checks the header of `image` (exactly one image) and writes its digest into it.
pub fn seal(image: &mut [u8]) -> Result<[u8; 32], SlotError> {
    let header = SlotHeader::parse(image)?;
    if header.image.len() != image.len() {
        return Err(SlotError::mismatch(Field::ImageBytes, header.fields.image_bytes, Rule::Equal(image.len() as u64)));
    }
    let digest = header.computed_digest();
    image[DIGEST_RANGE].copy_from_slice(&digest);
    Ok(digest)
}

/// A field of the header, as a [`SlotError`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Field {
    /// The fixed fields as a whole.
    Fixed,
    /// The format version.
    Version,
    /// The image's length.
    ImageBytes,
    /// The header's length.
    HeaderBytes,
    /// RAM the image uses (data and bss).
    RamBytes,
    /// The instruction set.
    Arch,
    /// The float calling convention.
    FloatAbi,
    /// The core features.
    Features,
    /// The flash region's origin.
    FlashOrigin,
    /// The flash region's length.
    FlashLength,
    /// The RAM region's origin.
    RamOrigin,
    /// The RAM region's length.
    RamLength,
    /// An entry's offset.
    Entry(Entry),
    /// Part of a tensor's record.
    Tensor {
        /// Input or output.
        side: Side,
        /// Its position.
        index: u16,
        /// Which part.
        part: TensorField,
    },
}

/// A part of a tensor record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TensorField {
    /// Where the name starts.
    NameOffset,
    /// The name's length.
    NameLen,
    /// The element type (code × 256 + bits).
    DType,
    /// The number of dimensions.
    Ndim,
    /// A dimension past the number of dimensions.
    UnusedDim,
    /// The number of elements the shape gives.
    Shape,
    /// The tensor's bytes.
    Bytes,
    /// The reserved byte.
    Reserved,
}

/// What a field should have been.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Rule {
    /// This value.
    Equal(u64),
    /// At least this.
    AtLeast(u64),
    /// At most this.
    AtMost(u64),
    /// A multiple of this.
    MultipleOf(u64),
    /// In `start..end`.
    Within(u64, u64),
    /// Outside `start..end`.
    Outside(u64, u64),
    /// None of these bits.
    NoBits(u64),
    /// All of these bits.
    AllBits(u64),
    /// A value the format defines (for this architecture).
    Known,
}

/// Why an image's header was refused: the first mismatch, with both values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SlotError {
    /// The bytes end before `what` does.
    Truncated {
        /// What needed the bytes.
        what: Field,
        /// Bytes needed.
        needed: u64,
        /// Bytes there.
        have: u64,
    },
    /// The first 8 bytes are not [`MAGIC`]: no image here.
    Magic {
        /// The bytes found.
        found: [u8; 8],
    },
    /// A field's value breaks a rule of the format.
    Mismatch {
        /// The field.
        field: Field,
        /// Its value.
        found: u64,
        /// What it should be.
        expected: Rule,
    },
    /// A tensor's name is not UTF-8.
    NameNotUtf8 {
        /// Input or output.
        side: Side,
        /// Its position.
        index: u16,
        /// Bytes of the name that are.
        valid_up_to: usize,
    },
    /// The image's bytes do not have the digest the header states.
    Digest {
        /// The digest in the header.
        stated: [u8; 32],
        /// The digest of the bytes.
        computed: [u8; 32],
    },
}

impl SlotError {
    fn mismatch(field: Field, found: impl Into<u64>, expected: Rule) -> SlotError {
        SlotError::Mismatch { field, found: found.into(), expected }
    }
}

impl core::fmt::Display for Field {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = match self {
            Field::Fixed => "the fixed fields",
            Field::Version => "format version",
            Field::ImageBytes => "image length",
            Field::HeaderBytes => "header length",
            Field::RamBytes => "RAM needed (data + bss)",
            Field::Arch => "architecture",
            Field::FloatAbi => "float ABI",
            Field::Features => "core features",
            Field::FlashOrigin => "flash origin",
            Field::FlashLength => "flash length",
            Field::RamOrigin => "RAM origin",
            Field::RamLength => "RAM length",
            Field::Entry(entry) => return write!(f, "the offset of entry `{entry:?}`"),
            Field::Tensor { side, index, part } => {
                let side = if *side == Side::Input { "input" } else { "output" };
                let part = match part {
                    TensorField::NameOffset => "name offset",
                    TensorField::NameLen => "name length",
                    TensorField::DType => "element type (code * 256 + bits)",
                    TensorField::Ndim => "number of dimensions",
                    TensorField::UnusedDim => "dimension past the number of dimensions",
                    TensorField::Shape => "number of elements",
                    TensorField::Bytes => "bytes",
                    TensorField::Reserved => "reserved byte",
                };
                return write!(f, "{side} {index}'s {part}");
            }
        };
        f.write_str(name)
    }
}

impl core::fmt::Display for Rule {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Rule::Equal(value) => write!(f, "{value}"),
            Rule::AtLeast(value) => write!(f, "at least {value}"),
            Rule::AtMost(value) => write!(f, "at most {value}"),
            Rule::MultipleOf(value) => write!(f, "a multiple of {value}"),
            Rule::Within(start, end) => write!(f, "within 0x{start:x}..0x{end:x}"),
            Rule::Outside(start, end) => write!(f, "outside 0x{start:x}..0x{end:x}"),
            Rule::NoBits(bits) => write!(f, "without bits 0x{bits:x}"),
            Rule::AllBits(bits) => write!(f, "with bits 0x{bits:x}"),
            Rule::Known => f.write_str("a value this format version defines for the architecture"),
        }
    }
}

fn write_hex(f: &mut core::fmt::Formatter<'_>, bytes: &[u8]) -> core::fmt::Result {
    bytes.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
}

impl core::fmt::Display for SlotError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SlotError::Truncated { what, needed, have } => write!(f, "slot image truncated: {what} needs {needed} bytes, {have} are there"),
            SlotError::Magic { found } => {
                f.write_str("no slot image: the first bytes are 0x")?;
                write_hex(f, found)?;
                f.write_str(", not 0x")?;
                write_hex(f, &MAGIC)
            }
            SlotError::Mismatch { field, found, expected } => {
                write!(f, "slot header: {field} is {found} (0x{found:x}), expected {expected}")
            }
            SlotError::NameNotUtf8 { side, index, valid_up_to } => {
                let side = if *side == Side::Input { "input" } else { "output" };
                write!(f, "slot header: the name of {side} {index} is not UTF-8 after {valid_up_to} bytes")
            }
            SlotError::Digest { stated, computed } => {
                f.write_str("slot image corrupted: its SHA-256 is ")?;
                write_hex(f, computed)?;
                f.write_str(", the header states ")?;
                write_hex(f, stated)
            }
        }
    }
}
