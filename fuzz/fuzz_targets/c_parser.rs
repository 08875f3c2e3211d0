#![no_main]

use libfuzzer_sys::fuzz_target;

// The entry point asserts the parser's invariants: a panic is a finding.
fuzz_target!(|bytes: &[u8]| {
    let _ = mlf_build::fuzzing::c_parser(bytes);
});
