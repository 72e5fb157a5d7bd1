//! Eval-set bytes: see `exercise::evalset`.
#![no_main]

mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    exercise::evalset(data);
});
