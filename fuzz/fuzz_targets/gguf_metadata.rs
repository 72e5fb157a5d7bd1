//! GGUF bytes: see `exercise::gguf_metadata`.
#![no_main]

mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    exercise::gguf_metadata(data);
});
