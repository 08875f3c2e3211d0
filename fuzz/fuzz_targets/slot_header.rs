#![no_main]

use libfuzzer_sys::fuzz_target;

// Errors are expected; only a panic, hang or memory error is a finding.
fuzz_target!(|bytes: &[u8]| {
    let _ = mlf_build::fuzzing::slot_header(bytes);
});
