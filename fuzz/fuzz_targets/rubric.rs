//! Rubric bytes: see `exercise::rubric`.
#![no_main]

mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    exercise::rubric(data);
});
