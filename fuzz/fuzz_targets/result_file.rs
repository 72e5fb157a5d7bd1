//! Result-file bytes: see `exercise::result_file`.
#![no_main]

mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    exercise::result_file(data);
});
