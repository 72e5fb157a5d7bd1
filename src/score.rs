//! `readout score` and the app's Score page: texts through the same pipeline as a run — input
//! (every criterion of the rubric for every text, rows without gold) → plan → exec and combine
//! ([`crate::pipeline`]) — so scoring has every debias mode, the context policy and resuming that
//! a run has. What is its own is the presentation of a decision: the chosen option, the margin to
//! the runner-up, the expected level of a `score` question.

use crate::combine::Combined;
use crate::config::{Mode, RunConfig};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::input::Job;
use crate::math::argmax;
use crate::plan;
use crate::rubric::{Criterion, QuestionKind, Rubric};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

pub use crate::input::Text;

/// A decision closer than this (top probability minus the runner-up) is flagged as close.
pub const CLOSE_MARGIN: f64 = 0.10;

/// One option's share of a decision.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OptionResult {
    pub id: String,
    pub description: String,
    pub probability: f64,
}

/// Why a criterion got no answer (`score --abstain-below`, `--abstain-letter-mass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Abstained {
    /// The top probability was below the `abstain_below` threshold.
    Confidence,
    /// The letters' share of the next-token distribution was below `abstain_letter_mass`:
    /// the model wanted to say something other than a letter (none of the options fits).
    LetterMass,
}

/// The decision on one criterion for one text.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CriterionResult {
    pub criterion: String,
    #[serde(rename = "type")]
    pub kind: QuestionKind,
    /// Options in the rubric's order, with probabilities.
    pub options: Vec<OptionResult>,
    /// The chosen option's id; null when the judge abstained (`abstained` says why).
    pub chosen: Option<String>,
    /// The top probability (the chosen option's, or the one abstained on).
    pub probability: f64,
    /// Present when no answer was given: `confidence` or `letter_mass`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub abstained: Option<Abstained>,
    /// For `score` questions: the probability-weighted level.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub expected_level: Option<f64>,
    /// The top probability minus the runner-up.
    pub margin: f64,
    pub close: bool,
    /// Whether the chosen option changed between orderings; `None` when one ordering was scored.
    pub order_unstable: Option<bool>,
    /// Share of the model's whole next-token distribution on the option letters (mean over orderings).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub letter_mass: Option<f64>,
}

/// All decisions for one text.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TextResult {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub id: Option<String>,
    pub criteria: Vec<CriterionResult>,
    /// Present when the text was cut from the middle to fit the context (`--truncate-middle`):
    /// how many tokens its longest prompt lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub truncated_tokens: Option<usize>,
}

/// Check a configuration for scoring texts: the readout, no shots (texts have no gold to show).
pub fn check_config(config: &RunConfig) -> Result<()> {
    if config.mode != Mode::Readout {
        return Err(Error::Config("scoring texts reads the letters' logits; --mode generate is for `run`".into()));
    }
    if config.shots > 0 {
        return Err(Error::Config("scoring texts takes no shots: texts have no gold answer to show".into()));
    }
    config.to_builder().build().map(|_| ())
}

/// Score every text against every criterion of the rubric, as `config` says (debias mode,
/// context policy, levers). `skip`: indices of texts decided already (a resumed job), which are
/// planned but not read. `on_text(result, done, total)` is called as each text is decided, in
/// the order they finish; when it returns false, scoring stops after the current pass. Returns
/// the texts decided, in text order (fewer than asked when stopped or skipped).
pub fn score_texts(
    engine: &Engine,
    rubric: &Rubric,
    texts: &[Text],
    config: &RunConfig,
    skip: &HashSet<usize>,
    on_text: &mut dyn FnMut(&TextResult, usize, usize) -> bool,
) -> Result<Vec<TextResult>> {
    check_config(config)?;
    let config = config.clone().resolve(engine);
    if config.calibration.is_some() {
        crate::calibrate::check_model(config.calibration.as_ref(), &engine.sha256()?)?;
    }
    let job = Job::from_texts(rubric, texts);
    let planned = plan::plan(engine, &job, &config)?;
    let per_text = rubric.criteria.len();
    let done_rows: HashSet<usize> = (0..job.rows.len()).filter(|ri| skip.contains(&job.rows[*ri].item)).collect();
    let ids: Vec<String> = job.rows.iter().map(|r| r.id.clone()).collect();
    let total = texts.len() - skip.iter().filter(|&&t| t < texts.len()).count();
    let mut decided: BTreeMap<usize, Vec<Option<Combined>>> = BTreeMap::new();
    let mut results: BTreeMap<usize, TextResult> = BTreeMap::new();
    let opts = config.pass_options(engine.pass_defaults().group_units);
    crate::pipeline::execute(
        engine,
        opts,
        &planned,
        &config,
        &ids,
        &done_rows,
        serde_json::json!({}),
        &mut |finished, _| {
            let mut go_on = true;
            for (ri, c) in finished {
                let ti = job.rows[ri].item;
                let slots = decided.entry(ti).or_insert_with(|| vec![None; per_text]);
                slots[ri - ti * per_text] = Some(c);
                if slots.iter().all(Option::is_some) {
                    let combined: Vec<Combined> = decided.remove(&ti).into_iter().flatten().flatten().collect();
                    let r = text_result(ti, &texts[ti], &rubric.criteria, combined, &config);
                    go_on &= on_text(&r, results.len() + 1, total);
                    results.insert(ti, r);
                }
            }
            Ok(go_on)
        },
    )?;
    Ok(results.into_values().collect())
}

fn text_result(
    index: usize,
    text: &Text,
    criteria: &[Criterion],
    combined: Vec<Combined>,
    config: &RunConfig,
) -> TextResult {
    let truncated_tokens = combined.iter().filter_map(|c| c.truncated_tokens).max();
    let criteria = criteria.iter().zip(combined).map(|(c, d)| decide(c, d, config)).collect();
    TextResult { index, id: text.id.clone(), criteria, truncated_tokens }
}

fn decide(c: &Criterion, d: Combined, config: &RunConfig) -> CriterionResult {
    let probs = d.probs.unwrap_or_else(|| vec![0.0; c.options.len()]);
    let best = argmax(&probs);
    let runner_up = probs.iter().enumerate().filter(|(i, _)| *i != best).map(|(_, p)| *p).fold(0.0, f64::max);
    let margin = probs[best] - runner_up;
    let mass: Vec<f64> = d.orderings.iter().filter_map(|o| o.letter_mass).collect();
    let letter_mass = (!mass.is_empty()).then(|| mass.iter().sum::<f64>() / mass.len() as f64);
    // The letter mass first: a model that wanted another token is not merely unsure.
    let abstained = if config.abstain_letter_mass.is_some_and(|m| letter_mass.is_some_and(|l| l < m)) {
        Some(Abstained::LetterMass)
    } else if config.abstain_below.is_some_and(|p| probs[best] < p) {
        Some(Abstained::Confidence)
    } else {
        None
    };
    CriterionResult {
        criterion: c.name.clone(),
        kind: c.kind,
        options: c
            .options
            .iter()
            .zip(&probs)
            .map(|(o, p)| OptionResult { id: o.id.clone(), description: o.description.clone(), probability: *p })
            .collect(),
        chosen: abstained.is_none().then(|| c.options[best].id.clone()),
        probability: probs[best],
        abstained,
        expected_level: (c.kind == QuestionKind::Score)
            .then(|| probs.iter().enumerate().map(|(i, p)| i as f64 * p).sum()),
        margin,
        close: margin < CLOSE_MARGIN,
        order_unstable: d.order_unstable,
        letter_mass,
    }
}
