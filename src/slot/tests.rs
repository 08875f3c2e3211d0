use mlf_rt::slot::{self as format, Field, Rule, Side, TensorField};

use super::*;
use crate::dtype::TypeCode;

fn tensor(name: &str, code: TypeCode, bits: u8, shape: &[u64]) -> SlotTensor {
    SlotTensor { name: name.to_string(), dtype: DType { code, bits }, shape: shape.to_vec() }
}

/// A Cortex-M4F image's description: the kws_int8 signature.
fn description() -> SlotDescription {
    SlotDescription {
        arch: Arch::Arm,
        float_abi: FloatAbi::ArmHard,
        features: Features(Features::THUMB2 | Features::DSP | Features::FPU_SINGLE),
        flash: Region { origin: 0x0004_0000, length: 0x0004_0000 },
        ram: Region { origin: 0x2000_8000, length: 0x8000 },
        bss_bytes: 0x1000,
        stack_bytes: 600,
        entries: [Some(0), Some(0x40), Some(0x80), Some(0xc0)],
        inputs: vec![tensor("input", TypeCode::Int, 8, &[1, 49, 10, 1])],
        outputs: vec![tensor("Identity", TypeCode::Int, 8, &[1, 12]), tensor("scores", TypeCode::Float, 32, &[3])],
    }
}

const CODE: [u8; 0x100] = [0xa5; 0x100];
const DATA: [u8; 12] = [7; 12];

fn image() -> Vec<u8> {
    description().write_image(&CODE, &DATA).expect("a valid description")
}

#[test]
fn an_image_reads_back_as_written() {
    let description = description();
    let image = image();
    let header = SlotHeader::parse(&image).expect("the writer's image parses");
    header.check_digest().expect("the digest matches");
    let fields = header.fields();
    let header_bytes = description.header_bytes().unwrap();
    assert_eq!(fields.header_bytes, header_bytes);
    assert_eq!(header_bytes % format::ALIGN, 0);
    assert_eq!(
        (fields.image_bytes as usize, fields.code_bytes, fields.data_bytes, fields.bss_bytes, fields.stack_bytes),
        (image.len(), 0x100, 12, 0x1000, 600)
    );
    assert_eq!(
        (fields.arch, fields.float_abi, fields.features, fields.flash, fields.ram),
        (description.arch, description.float_abi, description.features, description.flash, description.ram)
    );
    assert_eq!(fields.entries, [header_bytes, header_bytes + 0x40, header_bytes + 0x80, header_bytes + 0xc0]);
    assert_eq!((header.code(), header.data()), (&CODE[..], &DATA[..]));
    for (side, tensors) in [(Side::Input, &description.inputs), (Side::Output, &description.outputs)] {
        assert_eq!(usize::from(header.count(side)), tensors.len());
        for (index, expected) in tensors.iter().enumerate() {
            let read = header.tensor(side, index as u16).expect("a tensor");
            let shape: Vec<u64> = read.record.shape().iter().map(|dim| u64::from(*dim)).collect();
            assert_eq!(
                (read.name, read.record.dtype.name(), shape),
                (expected.name.as_str(), Some(&*expected.dtype.to_string()), expected.shape.clone())
            );
        }
        assert_eq!(header.tensor(side, tensors.len() as u16), None);
    }
    // The fixed fields encode back to the bytes (the digest's as zeros).
    let mut fixed = image[..format::FIXED_BYTES].to_vec();
    fixed[format::DIGEST_RANGE].fill(0);
    assert_eq!(fields.encode().to_vec(), fixed);
    // A longer flash region around the image reads the same.
    let mut region = image.clone();
    region.resize(image.len() + 4096, 0xff);
    assert_eq!(SlotHeader::parse(&region).unwrap().image(), &image[..]);
}

#[test]
fn every_flipped_bit_is_refused_or_fails_the_digest() {
    let image = image();
    for byte in 0..image.len() {
        for bit in 0..8 {
            let mut damaged = image.clone();
            damaged[byte] ^= 1 << bit;
            if let Ok(header) = SlotHeader::parse(&damaged) {
                assert!(matches!(header.check_digest(), Err(SlotError::Digest { .. })), "byte {byte} bit {bit}");
            }
        }
    }
}

#[test]
fn every_truncation_is_refused_naming_the_lengths() {
    let image = image();
    for len in 0..image.len() {
        match SlotHeader::parse(&image[..len]) {
            Err(SlotError::Truncated { needed, have, .. }) => assert!(have == len as u64 && needed > have, "length {len}"),
            other => panic!("length {len}: {other:?}"),
        }
    }
}

fn put(image: &mut [u8], at: usize, value: u32) {
    image[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// The error of `image` with the u32 at `at` set to `value`.
fn with_u32(at: usize, value: u32) -> SlotError {
    let mut image = image();
    put(&mut image, at, value);
    SlotHeader::parse(&image).expect_err("refused")
}

#[test]
fn hostile_fields_name_the_field_and_both_values() {
    let image = image();
    let header_bytes = SlotHeader::parse(&image).unwrap().fields().header_bytes;
    let code_end = u64::from(header_bytes) + 0x100;
    let mismatch = |field, found, expected| SlotError::Mismatch { field, found, expected };
    let cases = [
        // Version, image length beyond the bytes, lengths that do not add up, overflowing sums.
        (with_u32(8, 2), mismatch(Field::Version, 2, Rule::Equal(1))),
        (with_u32(12, u32::MAX), SlotError::Truncated { what: Field::ImageBytes, needed: u32::MAX.into(), have: image.len() as u64 }),
        (
            with_u32(52, u32::MAX),
            mismatch(Field::ImageBytes, image.len() as u64, Rule::Equal(u64::from(header_bytes) + u64::from(u32::MAX) + 12)),
        ),
        (with_u32(48, 8), mismatch(Field::HeaderBytes, 8, Rule::AtLeast(112 + 3 * 48))),
        (with_u32(48, header_bytes + 1), mismatch(Field::HeaderBytes, u64::from(header_bytes) + 1, Rule::MultipleOf(8))),
        // Regions: past 4 GiB, too small for the image or its RAM, overlapping.
        (with_u32(80, u32::MAX), mismatch(Field::FlashLength, u32::MAX.into(), Rule::AtMost((1 << 32) - 0x4_0000))),
        (with_u32(80, 0x100), mismatch(Field::ImageBytes, image.len() as u64, Rule::AtMost(0x100))),
        (with_u32(60, u32::MAX), mismatch(Field::RamBytes, 12 + u64::from(u32::MAX), Rule::AtMost(0x8000))),
        (with_u32(84, 0x4_0100), mismatch(Field::RamOrigin, 0x4_0100, Rule::Outside(0x4_0000, 0x8_0000))),
        (with_u32(76, 3), mismatch(Field::FlashOrigin, 3, Rule::MultipleOf(8))),
        // Entries: missing, odd, outside the code.
        (with_u32(92, 0), mismatch(Field::Entry(Entry::Open), 0, Rule::Within(header_bytes.into(), code_end))),
        (with_u32(96, header_bytes + 1), mismatch(Field::Entry(Entry::Run), u64::from(header_bytes) + 1, Rule::MultipleOf(2))),
        (
            with_u32(96, u32::MAX - 1),
            mismatch(Field::Entry(Entry::Run), u64::from(u32::MAX - 1), Rule::Within(header_bytes.into(), code_end)),
        ),
        (with_u32(104, 0), mismatch(Field::Entry(Entry::Step), 0, Rule::Within(header_bytes.into(), code_end))),
        // Codes the format does not define, features of another architecture, an ABI without its FPU.
        (with_u32(68, 9 | 1 << 16), mismatch(Field::Arch, 9, Rule::Known)),
        (with_u32(68, 2 | 2 << 16), mismatch(Field::FloatAbi, 2, Rule::Known)),
        (
            with_u32(72, Features::RV_M | Features::THUMB2),
            mismatch(Field::Features, u64::from(Features::RV_M | Features::THUMB2), Rule::NoBits(Features::RV_M.into())),
        ),
        (with_u32(72, Features::THUMB2), mismatch(Field::Features, Features::THUMB2.into(), Rule::AllBits(Features::FPU_SINGLE.into()))),
    ];
    for (index, (found, expected)) in cases.into_iter().enumerate() {
        assert_eq!(found, expected, "case {index}: {found}");
    }
    // Counts too big for the header: 65535 inputs need more than 3 MB of records.
    let mut many = image.clone();
    many[108..110].copy_from_slice(&u16::MAX.to_le_bytes());
    let records_end = 112 + (u64::from(u16::MAX) + 2) * 48;
    assert_eq!(SlotHeader::parse(&many).unwrap_err(), mismatch(Field::HeaderBytes, header_bytes.into(), Rule::AtLeast(records_end)));
    let mut magic = image;
    magic[0] = b'X';
    assert!(matches!(SlotHeader::parse(&magic), Err(SlotError::Magic { found }) if &found[1..] == b"LFSLOT\0"));
}

#[test]
fn hostile_tensor_records_name_the_tensor() {
    let record = |index: usize| format::FIXED_BYTES + index * format::TENSOR_RECORD_BYTES;
    let at = |side, index, part| Field::Tensor { side, index, part };
    let header_bytes = SlotHeader::parse(&image()).unwrap().fields().header_bytes;
    let names_start = 112 + 3 * 48;
    let cases = [
        // A name past the header, one inside the records, a length past the limit.
        (with_u32(record(0), header_bytes - 2), at(Side::Input, 0, TensorField::NameOffset), u64::from(header_bytes) - 2),
        (with_u32(record(1), 120), at(Side::Output, 0, TensorField::NameOffset), 120),
        (with_u32(record(2), u32::MAX), at(Side::Output, 1, TensorField::NameOffset), u32::MAX.into()),
        (with_u32(record(2) + 4, 0), at(Side::Output, 1, TensorField::NameLen), 0),
        (with_u32(record(2) + 4, 257), at(Side::Output, 1, TensorField::NameLen), 257),
        // Bytes that disagree with the shape, a shape that overflows, dimensions past ndim.
        (with_u32(record(0) + 12, 491), at(Side::Input, 0, TensorField::Bytes), 491),
        (with_u32(record(1) + 20, u32::MAX), at(Side::Output, 0, TensorField::Bytes), 12),
        (with_u32(record(0) + 16 + 4 * 7, 5), at(Side::Input, 0, TensorField::UnusedDim), 5),
        (with_u32(record(0) + 8, 3 << 16 | 8 << 8 | 7), at(Side::Input, 0, TensorField::DType), 7 << 8 | 8),
        (with_u32(record(0) + 8, 9 << 16 | 8 << 8), at(Side::Input, 0, TensorField::Ndim), 9),
        (with_u32(record(0) + 8, 1 << 24 | 4 << 16 | 8 << 8), at(Side::Input, 0, TensorField::Reserved), 1),
    ];
    for (index, (error, field, found)) in cases.into_iter().enumerate() {
        match error {
            SlotError::Mismatch { field: got, found: value, .. } => assert_eq!((got, value), (field, found), "case {index}: {error}"),
            other => panic!("case {index}: {other}"),
        }
    }
    // Every dimension at u32::MAX: more elements than u64 counts.
    let mut huge = image();
    huge[record(0) + 8..record(0) + 12].copy_from_slice(&[0, 8, 8, 0]);
    for dim in 0..8 {
        put(&mut huge, record(0) + 16 + 4 * dim, u32::MAX);
    }
    assert!(matches!(SlotHeader::parse(&huge), Err(SlotError::Mismatch { field: Field::Tensor { part: TensorField::Shape, .. }, .. })));
    let mut not_utf8 = image();
    not_utf8[names_start] = 0xff;
    assert_eq!(SlotHeader::parse(&not_utf8).unwrap_err(), SlotError::NameNotUtf8 { side: Side::Input, index: 0, valid_up_to: 0 });
}

#[test]
fn descriptions_no_image_can_hold_are_refused() {
    let refused = |description: SlotDescription, code: &[u8], words: &str| {
        let error = description.write_image(code, &DATA).expect_err("refused");
        assert!(error.kind() == ErrorKind::Slot && error.to_string().contains(words), "{error}");
    };
    let mut many_dims = description();
    many_dims.inputs[0].shape = vec![1; 9];
    refused(many_dims, &CODE, "9 dimensions");
    let mut bool_like = description();
    bool_like.inputs[0].dtype = DType { code: TypeCode::UInt, bits: 1 };
    refused(bool_like, &CODE, "slot format does not have");
    let mut huge = description();
    huge.outputs[1].shape = vec![u64::from(u32::MAX), 2];
    refused(huge, &CODE, "size of tensor `scores`");
    refused(description(), &vec![0; 0x4_0000], "image length");
    let mut outside = description();
    outside.entries[1] = Some(0x1000);
    refused(outside, &CODE, "entry `Run`");
    let mut half_stepper = description();
    half_stepper.entries[3] = None;
    refused(half_stepper, &CODE, "entry `Step`");
}

#[test]
fn the_report_shows_the_header_and_the_digest() {
    let image = image();
    let header = SlotHeader::parse(&image).unwrap();
    let report = report(&header);
    for line in [
        "target: Arm, float ABI ArmHard, core features: Thumb-2+DSP+FPU (single)",
        "RAM: 0x20008000..0x20010000 (32768 bytes): data 12 + bss 4096 = 4108; stack 600",
        "input 0 `input`: int8 [1, 49, 10, 1], 490 bytes",
        "output 1 `scores`: float32 [3], 12 bytes",
    ] {
        assert!(report.contains(line), "{line}\n{report}");
    }
    assert!(digest_line(&header).ends_with("(the bytes match)\n"));
    let mut damaged = image;
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    assert!(digest_line(&SlotHeader::parse(&damaged).unwrap()).ends_with("computed: CORRUPTED\n"));
}
