//! A decision model's contract: what a decision GGUF says, in its metadata, about how it is to be
//! asked — llama.cpp's `<arch>.decision.type` (`openjev`, `lev`, `nimble`, and the head-based
//! `kev`, `laya`, `clef`, `pplx-decider`), its named chat template `systemone`, and its
//! temperatures `<arch>.decision.temperature.<type>[.<bucket>]`. Read here with the rest of the
//! file; `jobs::decide` asks the model by it.

use serde::Serialize;
use std::collections::BTreeMap;

/// The contract a decision GGUF states.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contract {
    /// `<arch>.decision.type`.
    pub kind: String,
    /// The `systemone` chat template (`tokenizer.chat_template.systemone`).
    #[serde(skip)]
    pub template: Option<String>,
    /// Temperatures by name (`choice`, `choice.small`, `score.3_5`, `noul` …).
    pub temperatures: BTreeMap<String, f32>,
}

/// The types whose answer is read from the logits of labels: the ones Readout runs.
pub const LETTER_TYPES: [&str; 3] = ["openjev", "lev", "nimble"];

/// What a head-based type needs that Readout does not run, by type.
pub fn head_based(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "kev" => "a score head read at the `<|box_end|>` token that ends each option",
        "laya" => "a classifier head over the mask token of each option (`max_head_tokens`)",
        "clef" => "a joint head over every question and option of the request",
        "pplx-decider" => "a decision head of its own over the options",
        _ => return None,
    })
}

impl Contract {
    /// The temperature of a question of `question_type` with `n` options: the bucketed name
    /// first (`lev`: `small` ≤ 8, `mid` ≤ 26, `large`; the others `2`, `3_5`, `6_10`, `11`),
    /// then the type's, then 1 — as llama.cpp b11434 looks it up.
    pub fn temperature(&self, question_type: &str, n: usize) -> f32 {
        let bucket = if self.kind == "lev" {
            match n {
                0..=8 => "small",
                9..=26 => "mid",
                _ => "large",
            }
        } else {
            match n {
                0..=2 => "2",
                3..=5 => "3_5",
                6..=10 => "6_10",
                _ => "11",
            }
        };
        [format!("{question_type}.{bucket}"), question_type.to_string()]
            .iter()
            .find_map(|k| self.temperatures.get(k).copied())
            .unwrap_or(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_as_llama_cpp_names_them() {
        let temperatures: BTreeMap<String, f32> =
            [("choice".into(), 0.8), ("choice.3_5".into(), 0.5), ("choice.small".into(), 0.3)].into_iter().collect();
        let openjev = Contract { kind: "openjev".into(), template: None, temperatures: temperatures.clone() };
        assert_eq!(openjev.temperature("choice", 2), 0.8);
        assert_eq!(openjev.temperature("choice", 5), 0.5);
        assert_eq!(openjev.temperature("choice", 6), 0.8);
        assert_eq!(openjev.temperature("score", 5), 1.0);
        let lev = Contract { kind: "lev".into(), template: None, temperatures };
        assert_eq!(lev.temperature("choice", 8), 0.3);
        assert_eq!(lev.temperature("choice", 9), 0.8);
    }
}
