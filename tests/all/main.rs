//! The integration tests, as one test binary: each module below links the library and candle
//! once between them instead of once each (eleven binaries took CI most of its time linking).
//! Run one area with a filter: `cargo test --release --test all engine::`.

mod bad_inputs;
mod chat_templates;
mod cli_pipes;
mod cli_run;
mod cli_score;
mod committed_results;
mod common;
mod complete;
mod crash_safety;
mod determinism;
mod engine;
mod families;
mod fetch;
// The hub on loopback, shared with src-tauri's tests (which include it by path).
#[path = "../fake_hub/mod.rs"]
mod fake_hub;
mod fidelity;
mod fuzz_regressions;
mod gemma3;
mod hub;
mod labels;
mod layers;
mod loglik;
mod long_state;
mod mcp;
mod onnx;
mod quality;
mod quantize_hf;
mod qwen35;
mod score_requests;
mod sentencepiece;
mod serve;
mod systemone;
