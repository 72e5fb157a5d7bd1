//! What each fuzz target does with its input, shared with the stable-Rust regression test
//! (`tests/all/fuzz_regressions.rs`), which replays the committed inputs through the same calls.
//! Each function returns whether the library's entry point accepted the input.
#![allow(dead_code)]

use readout::debias::{orderings, DebiasMode};
use readout::formats::evalset::{EvalSet, LoadOptions};
use readout::formats::results::{default_name, ResultFile};
use readout::formats::rubric::{Criterion, Rubric};
use readout::pipeline::prompt::{user_turn_in, PromptVersion};
use std::path::Path;

/// Every user turn a run would show the model for `criterion`, in both layouts.
fn render(state: &str, criterion: &Criterion) {
    for mode in [DebiasMode::None, DebiasMode::Cyclic] {
        for order in orderings(mode, criterion.options.len()).unwrap_or_default() {
            for v in [PromptVersion::V1, PromptVersion::TerseV1] {
                let _ = user_turn_in(v, state, criterion, &order);
            }
        }
    }
}

/// Eval-set bytes through `EvalSet::parse` (what `EvalSet::load` calls), strict and skipping bad
/// lines; a set that parses is rendered into every user turn a run would show the model.
/// Returns whether the strict parse accepted the bytes.
pub fn evalset(data: &[u8]) -> bool {
    let path = Path::new("fuzz.jsonl");
    let strict = LoadOptions::default();
    let skipping = LoadOptions { skip_bad: true, limit: Some(4), family: None };
    let mut accepted = false;
    for (i, opts) in [strict, skipping].iter().enumerate() {
        let Ok(set) = EvalSet::parse(data, path, opts) else { continue };
        accepted |= i == 0;
        let _ = (set.n_criteria(), set.families());
        for item in &set.items {
            for c in &item.criteria {
                render(&item.state, c);
            }
        }
    }
    accepted
}

/// Rubric bytes through `Rubric::from_bytes` (what `Rubric::load` calls); a rubric that parses
/// is rendered into the user turns `readout score` would show the model.
pub fn rubric(data: &[u8]) -> bool {
    let Ok(rubric) = Rubric::from_bytes(data, Path::new("fuzz.rubric.json")) else { return false };
    for c in &rubric.criteria {
        render("a text", c);
    }
    true
}

/// GGUF bytes through the bounded header reader (`engine::gguf::parse`),
/// `engine::read_metadata_bytes` (what `read_metadata` calls) and the parameter count the app's
/// Models page shows, then `engine::read_tokenizer_bytes` (the tokenizer loading builds from the
/// metadata) encoding and decoding a prompt. Returns whether the header was accepted.
pub fn gguf_metadata(data: &[u8]) -> bool {
    let path = Path::new("fuzz.gguf");
    let accepted = match readout::engine::gguf::parse(data, path) {
        Ok(content) => {
            for info in content.tensor_infos.values() {
                let _ = info.shape.elem_count();
            }
            true
        }
        Err(_) => false,
    };
    if let Ok(md) = readout::engine::read_metadata_bytes(data, path) {
        let _ = md.config.parameter_count();
    }
    if let Ok(tok) = readout::engine::read_tokenizer_bytes(data, path) {
        let prompt = "<|im_start|>user\nText: I was charged twice, 42 €.\nA. yes\nB. no<|im_end|>\nAnswer: A";
        if let Ok(ids) = tok.encode(prompt) {
            let _ = tok.decode(&ids);
        }
        let _ = (tok.token_id("A"), tok.vocab_size());
    }
    accepted
}

/// Result-file bytes through `ResultFile::from_bytes` (what `ResultFile::load` calls); a file
/// that reads is used as `readout compare`, `readout table` and the app use one: its rows as the
/// metrics see them, a comparison with itself, the metrics recomputed, its default name.
pub fn result_file(data: &[u8]) -> bool {
    let Ok(mut r) = ResultFile::from_bytes(data, Path::new("fuzz.json")) else { return false };
    let rows = r.scored_rows();
    let _ = readout::metrics::compare(&rows, &rows);
    let _ = readout::metrics::metrics(&rows);
    let _ = default_name(&r.eval_set.name, &r.model.name, &r.config);
    // A few resamples: the file's own count is a setting of the run, not a cost of reading it.
    r.config.bootstrap_resamples = r.config.bootstrap_resamples.min(3);
    r.summarize();
    true
}
