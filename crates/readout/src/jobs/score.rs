//! `readout score` and the app's Score page: texts through the same pipeline as a run — input
//! (every criterion of the rubric for every text, rows without gold) → plan → exec and combine
//! ([`crate::pipeline`]) — so scoring has every debias mode, the context policy and resuming that
//! a run has. What is its own is the presentation of a decision: the chosen option, the margin to
//! the runner-up, the expected level of a `score` question.

use crate::config::{Mode, RunConfig};
use crate::debias::DebiasMode;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::formats::rubric::{Criterion, QuestionKind, Rubric};
use crate::math::argmax;
use crate::pipeline::combine::Combined;
use crate::pipeline::exec::Shape;
use crate::pipeline::input::Job;
use crate::pipeline::plan::{self, Planned};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

pub use crate::pipeline::input::Text;

/// A decision closer than this (top probability minus the runner-up) is flagged as close.
pub const CLOSE_MARGIN: f64 = 0.10;

/// One option's share of a decision.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OptionResult {
    pub id: String,
    pub description: String,
    pub probability: f64,
}

/// Why a criterion got no answer (`score --abstain-below`, `--abstain-letter-mass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Abstained {
    /// The top probability was below the `abstain_below` threshold.
    Confidence,
    /// The letters' share of the next-token distribution was below `abstain_letter_mass`:
    /// the model wanted to say something other than a letter (none of the options fits).
    LetterMass,
    /// A jury's judges did not all choose the same option (`abstain_on_disagreement`).
    Disagreement,
}

/// One judge's answer on a criterion, under a jury's ([`crate::jobs::jury`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct JudgeDecision {
    /// The judge's model, by name.
    pub model: String,
    /// Its weight in the jury's pool.
    pub weight: f64,
    /// The option it chose alone (null where it would have abstained).
    pub chosen: Option<String>,
    /// Its top probability.
    pub probability: f64,
    /// Its probability of each option, in the rubric's order (after its calibration).
    pub probabilities: Vec<f64>,
    /// Whether its choice changed between orderings; `None` when one ordering was scored.
    pub order_unstable: Option<bool>,
}

/// The decision on one criterion for one text.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CriterionResult {
    pub criterion: String,
    /// The question's type: `choice`, `noul` or `score`.
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
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
    /// A jury's decision: each judge's own answer, in the jury's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub judges: Option<Vec<JudgeDecision>>,
    /// A jury's decision: whether the judges did not all choose the same option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub disagree: Option<bool>,
}

/// All decisions for one text.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
///
/// The prompts are planned as a request of [`score_requests`] is (the system turn its own unit
/// of the tree), so a text's numbers here are bit for bit those a server batch gives it.
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
        crate::formats::calibration::check_model(config.calibration.as_ref(), &engine.sha256()?)?;
    }
    let job = Job::from_texts(rubric, texts);
    let planned = plan::plan(engine, &job, &config)?;
    let total = texts.len() - skip.iter().filter(|&&t| t < texts.len()).count();
    let mut done = 0;
    let mut out = execute_requests(
        engine,
        &config,
        vec![Planning { rubric, texts, job, planned, skip }],
        &mut |_, r| {
            done += 1;
            on_text(r, done, total)
        },
        &|| true,
    )?;
    Ok(out.pop().unwrap_or_default())
}

/// One request to [`score_requests`]: a rubric and the texts to decide against it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub rubric: &'a Rubric,
    pub texts: &'a [Text],
}

/// Score several requests under one configuration in shared passes: every request's prompts
/// planned as it is alone, then read together (see [`crate::pipeline::exec::Shape::Requests`]): the
/// system turn, which every request shares, is computed once, so is a unit two requests have
/// in common (the same text under the same rubric), and the rest of their units share passes.
/// Every request's decisions are bit for bit those [`score_texts`] gives it alone.
///
/// Returns one result per request, in order: a request that cannot be planned (a text too long
/// for the context) gets its error and the others are scored; an error of the engine fails them
/// all. `on_text(request, result)` is called as each text is decided (a request is complete
/// when its last text is); returning false stops the batch after the current pass, and so does
/// `go_on` answering false when asked after a pass (every client gone, say). PriDe
/// estimates its prior from a sample of the request's own rows, and batch calibration from all of
/// them, so under `--debias pride` or `batch` the requests are scored one after another.
pub fn score_requests(
    engine: &Engine,
    requests: &[Request<'_>],
    config: &RunConfig,
    on_text: &mut dyn FnMut(usize, &TextResult) -> bool,
    go_on: &dyn Fn() -> bool,
) -> Result<Vec<Result<Vec<TextResult>>>> {
    check_config(config)?;
    let config = config.clone().resolve(engine);
    if config.calibration.is_some() {
        crate::formats::calibration::check_model(config.calibration.as_ref(), &engine.sha256()?)?;
    }
    let none = HashSet::new();
    let mut out: Vec<Option<Result<Vec<TextResult>>>> = (0..requests.len()).map(|_| None).collect();
    let mut batches: Vec<Vec<(usize, Planning<'_>)>> = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let job = Job::from_texts(r.rubric, r.texts);
        let planned = plan::plan(engine, &job, &config).map(|planned| Planning {
            rubric: r.rubric,
            texts: r.texts,
            job,
            planned,
            skip: &none,
        });
        match planned {
            // PriDe's prior and batch calibration's come from the request's own rows: such
            // requests are read one after another, never mixed.
            Ok(p) if matches!(config.debias, DebiasMode::Pride | DebiasMode::Batch) || batches.is_empty() => {
                batches.push(vec![(i, p)])
            }
            Ok(p) => batches[0].push((i, p)),
            Err(e) => out[i] = Some(Err(e)),
        }
    }
    for batch in batches {
        let (which, plannings): (Vec<usize>, Vec<Planning<'_>>) = batch.into_iter().unzip();
        if !go_on() {
            break;
        }
        let results = execute_requests(engine, &config, plannings, &mut |k, r| on_text(which[k], r), go_on)?;
        for (k, r) in which.into_iter().zip(results) {
            out[k] = Some(Ok(r));
        }
    }
    Ok(out.into_iter().map(|r| r.unwrap_or_else(|| Ok(Vec::new()))).collect())
}

/// A request planned: its job and prompts, and the texts decided already.
struct Planning<'a> {
    rubric: &'a Rubric,
    texts: &'a [Text],
    job: Job<'a>,
    planned: Planned,
    skip: &'a HashSet<usize>,
}

/// Tokens at the start of every prompt of this model that do not depend on the text: the chat
/// template's system turn and the user turn's opening, as far as two prompts whose user turns
/// differ from their first character agree.
fn head_tokens(engine: &Engine) -> Result<usize> {
    let tokens = |user: &str| -> Result<Vec<u32>> {
        engine.tokenizer().encode(&engine.template().render(&crate::pipeline::prompt::messages(&[], user.to_string()))?)
    };
    let (a, b) = (tokens("A")?, tokens("B")?);
    Ok(a.iter().zip(&b).take_while(|(x, y)| x == y).count())
}

/// Read planned requests in shared passes (config resolved); results per request, in text order.
fn execute_requests(
    engine: &Engine,
    config: &RunConfig,
    plannings: Vec<Planning<'_>>,
    on_text: &mut dyn FnMut(usize, &TextResult) -> bool,
    go_on: &dyn Fn() -> bool,
) -> Result<Vec<Vec<TextResult>>> {
    // All requests' prompts as one job's: rows numbered on from request to request.
    let mut merged = Planned { prompts: vec![], row_orderings: vec![], pride_sample: vec![], cuts: HashMap::new() };
    let mut request_of: Vec<usize> = Vec::new();
    // Per merged row: (request, text, criterion).
    let mut row_at: Vec<(usize, usize, usize)> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut done_rows: HashSet<usize> = HashSet::new();
    for (k, p) in plannings.iter().enumerate() {
        let base = row_at.len();
        let per_text = p.rubric.criteria.len();
        for (ri, row) in p.job.rows.iter().enumerate() {
            row_at.push((k, row.item, ri - row.item * per_text));
            ids.push(format!("{k}:{}", row.id));
            if p.skip.contains(&row.item) {
                done_rows.insert(base + ri);
            }
        }
        for pr in &p.planned.prompts {
            merged.prompts.push(crate::pipeline::plan::Prompt { row: pr.row + base, ..pr.clone() });
            request_of.push(k);
        }
        merged.row_orderings.extend(p.planned.row_orderings.iter().cloned());
        merged.pride_sample.extend(p.planned.pride_sample.iter().map(|r| r + base));
        merged.cuts.extend(p.planned.cuts.iter().map(|(r, n)| (r + base, *n)));
    }
    let shape = Shape::Requests { request_of: &request_of, head: head_tokens(engine)? };
    let mut decided: BTreeMap<(usize, usize), Vec<Option<Combined>>> = BTreeMap::new();
    let mut results: Vec<BTreeMap<usize, TextResult>> = plannings.iter().map(|_| BTreeMap::new()).collect();
    let opts = config.pass_options(engine.pass_defaults().group_units);
    crate::pipeline::execute(
        engine,
        opts,
        &merged,
        shape,
        config,
        &ids,
        &done_rows,
        serde_json::json!({}),
        &mut |finished, _| {
            let still = go_on;
            let mut go_on = true;
            for (ri, c) in finished {
                let (k, ti, ci) = row_at[ri];
                let p = &plannings[k];
                let per_text = p.rubric.criteria.len();
                let slots = decided.entry((k, ti)).or_insert_with(|| vec![None; per_text]);
                slots[ci] = Some(c);
                if slots.iter().all(Option::is_some) {
                    let combined: Vec<Combined> = decided.remove(&(k, ti)).into_iter().flatten().flatten().collect();
                    let r = text_result(ti, &p.texts[ti], &p.rubric.criteria, combined, config);
                    go_on &= on_text(k, &r);
                    results[k].insert(ti, r);
                }
            }
            Ok(go_on && still())
        },
    )?;
    Ok(results.into_iter().map(|r| r.into_values().collect()).collect())
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
    let mass: Vec<f64> = d.orderings.iter().filter_map(|o| o.letter_mass).collect();
    let letter_mass = (!mass.is_empty()).then(|| mass.iter().sum::<f64>() / mass.len() as f64);
    decision(c, probs, d.order_unstable, letter_mass, false, config)
}

/// The decision on criterion `c` from its options' probabilities: the chosen option, or none
/// where `config` says to abstain (or `disagreement` does, for a jury), the margin, the flags.
pub(crate) fn decision(
    c: &Criterion,
    probs: Vec<f64>,
    order_unstable: Option<bool>,
    letter_mass: Option<f64>,
    disagreement: bool,
    config: &RunConfig,
) -> CriterionResult {
    let best = argmax(&probs);
    let runner_up = probs.iter().enumerate().filter(|(i, _)| *i != best).map(|(_, p)| *p).fold(0.0, f64::max);
    let margin = probs[best] - runner_up;
    // The letter mass first: a model that wanted another token is not merely unsure.
    let abstained = if config.abstain_letter_mass.is_some_and(|m| letter_mass.is_some_and(|l| l < m)) {
        Some(Abstained::LetterMass)
    } else if disagreement {
        Some(Abstained::Disagreement)
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
        order_unstable,
        letter_mass,
        judges: None,
        disagree: None,
    }
}
