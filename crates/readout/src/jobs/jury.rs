//! A jury at work: the judges of a [`Panel`] read texts (`readout score --model A --model B`, a
//! score request's `judges`, the app) or an eval set (`readout run --model A --model B`), each
//! through the same pipeline as a lone judge, with its own template, tokenizer and calibration.
//! They read one after another: a judge is loaded, reads everything, and is dropped before the
//! next one loads, so the jury needs the memory of its largest judge, not of all of them
//! together; each judge's peak resident memory is measured on its own
//! ([`crate::memory::reset_peak`]).
//!
//! Texts: the jury's probability of an option is the pool `Σ_j w_j p_j` of the judges'
//! probabilities (after each one's calibration), with the panel's weights; the jury's decision is
//! made from the pool as a lone judge's is from its probabilities, with each judge's own answer
//! under it and `disagree` where the judges' top options are not all the same
//! (`abstain_on_disagreement` gives no answer there). An eval set: each judge's run is a result
//! file of its own ([`run_panel`]), which the shell pools with
//! [`crate::analysis::jury::combine_weighted`] (equal, given or cross-fitted weights: the
//! analysis sits above the jobs).
//!
//! Everything about a judge that can be checked before the first one loads is (every model file
//! there, every calibration readable); a judge's refusal names the judge (from 1) and its model.

use crate::config::RunConfig;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::formats::evalset::EvalSet;
use crate::formats::judges::{JudgeSpec, Panel};
use crate::formats::results::ResultFile;
use crate::formats::rubric::Rubric;
use crate::jobs::run::{Control, Progress, RunInput};
use crate::jobs::score::{decision, score_texts, JudgeDecision, Text, TextResult};
use crate::math::argmax;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A judge as it ran: its model and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeRun {
    /// The model's name, its file and the file's sha256.
    pub model: String,
    pub model_file: String,
    pub model_sha256: String,
    /// The chat template its prompts were rendered with (`model` for the model's own).
    pub chat_template: String,
    /// Its weight in the pool (texts; an eval set's jury records its own).
    pub weight: f64,
    pub load_seconds: f64,
    /// Its reading, after the load.
    pub seconds: f64,
    /// Its peak resident memory (its load and reading), where it could be measured apart from
    /// the judges before it; else the process's peak so far.
    pub peak_rss_bytes: Option<u64>,
}

/// Loads judge `i` of the panel (the shell's loader: its device, threads and model options,
/// with the judge's chat template); returns the engine and its load's seconds. Shared, so that a
/// shell may keep the last judge loaded after the jury (the app's model held); the jury drops its
/// own handle on each judge before loading the next.
pub type Load<'a> = dyn FnMut(usize, &JudgeSpec) -> Result<(Arc<Engine>, f64)> + 'a;

/// Judge `i`'s error, naming it.
pub fn in_judge(i: usize, spec: &JudgeSpec, e: Error) -> Error {
    match e {
        e @ Error::Judge { .. } => e,
        e => Error::Judge { judge: i + 1, model: spec.model.display().to_string(), error: Box::new(e) },
    }
}

/// What can be checked of every judge before the first one loads: the model files exist (a
/// path; a hub name is the shell's to resolve), the calibration files read.
pub fn check_panel(panel: &Panel) -> Result<()> {
    for (i, j) in panel.judges.iter().enumerate() {
        if !j.model.exists() {
            let e = Error::ModelMissing {
                path: j.model.clone(),
                hint: "Check the judge's path (a judges file's paths start at its folder).".into(),
            };
            return Err(in_judge(i, j, e));
        }
        if let Some(c) = &j.calibration {
            crate::jobs::request::calibration(c).map_err(|e| in_judge(i, j, e))?;
        }
    }
    Ok(())
}

/// A jury's configuration brings no calibration: each judge brings its own.
fn no_calibration_of_its_own(config: &RunConfig) -> Result<()> {
    match config.calibration {
        Some(_) => Err(Error::Config(
            "a jury has no calibration of its own: give each judge its calibration file (a judges file's `calibration`)"
                .into(),
        )),
        None => Ok(()),
    }
}

/// `config` with judge `j`'s calibration in place of the jury's (a jury has none of its own).
fn judge_config(config: &RunConfig, j: &JudgeSpec) -> Result<RunConfig> {
    let mut c = config.clone();
    c.calibration = j.calibration.as_deref().map(crate::jobs::request::calibration).transpose()?;
    Ok(c)
}

/// Load judge `i`, measuring its memory apart from the judges before it.
fn load_judge(load: &mut Load<'_>, i: usize, spec: &JudgeSpec) -> Result<(Arc<Engine>, f64, bool)> {
    let reset = crate::memory::reset_peak();
    let (engine, seconds) = load(i, spec).map_err(|e| in_judge(i, spec, e))?;
    engine.sha256().map_err(|e| in_judge(i, spec, e))?;
    Ok((engine, seconds, reset))
}

fn judge_run(engine: &Engine, weight: f64, load_seconds: f64, seconds: f64, reset: bool) -> Result<JudgeRun> {
    let info = engine.info();
    Ok(JudgeRun {
        model: crate::models::name_of(&info.path),
        model_file: info.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        model_sha256: engine.sha256()?,
        chat_template: info.chat_template.clone(),
        weight,
        load_seconds,
        seconds,
        peak_rss_bytes: if reset { crate::memory::peak_rss_since_reset() } else { crate::memory::peak_rss() },
    })
}

/// A jury's scoring of texts: the jury's decisions (each judge's under them) and the judges.
#[derive(Debug, Clone)]
pub struct PanelScored {
    pub results: Vec<TextResult>,
    pub judges: Vec<JudgeRun>,
}

/// Score `texts` against `rubric` with every judge of `panel`, one after another, and pool their
/// answers. `config` is the jury's (debias mode, abstention, context policy; no calibration: each
/// judge brings its own). `on_text(judge, result, done, total)` is called as each judge decides
/// each text; returning false stops: the judges after it do not run, and only texts every judge
/// decided are pooled.
pub fn score_panel(
    panel: &Panel,
    rubric: &Rubric,
    texts: &[Text],
    config: &RunConfig,
    load: &mut Load<'_>,
    on_text: &mut dyn FnMut(usize, &TextResult, usize, usize) -> bool,
) -> Result<PanelScored> {
    no_calibration_of_its_own(config)?;
    check_panel(panel)?;
    let weights = panel.weights();
    let mut answers: Vec<Vec<TextResult>> = Vec::with_capacity(panel.judges.len());
    let mut runs = Vec::with_capacity(panel.judges.len());
    for (i, spec) in panel.judges.iter().enumerate() {
        let c = judge_config(config, spec).map_err(|e| in_judge(i, spec, e))?;
        let (engine, load_seconds, reset) = load_judge(load, i, spec)?;
        let t0 = std::time::Instant::now();
        let mut go_on = true;
        let results = score_texts(&engine, rubric, texts, &c, &HashSet::new(), &mut |r, done, total| {
            go_on = on_text(i, r, done, total);
            go_on
        })
        .map_err(|e| in_judge(i, spec, e))?;
        runs.push(judge_run(&engine, weights[i], load_seconds, t0.elapsed().as_secs_f64(), reset)?);
        answers.push(results);
        drop(engine);
        if !go_on {
            break;
        }
    }
    if answers.len() < panel.judges.len() {
        return Ok(PanelScored { results: Vec::new(), judges: runs });
    }
    let names: Vec<&str> = runs.iter().map(|r| r.model.as_str()).collect();
    let results = pool_texts(rubric, &answers, &names, &weights, panel.abstain_on_disagreement, config);
    Ok(PanelScored { results, judges: runs })
}

/// The jury's decisions from its judges' (`answers[j]`: judge j's results, in text order), with
/// weights summing to 1. Texts not decided by every judge are left out.
pub fn pool_texts(
    rubric: &Rubric,
    answers: &[Vec<TextResult>],
    names: &[&str],
    weights: &[f64],
    abstain_on_disagreement: bool,
    config: &RunConfig,
) -> Vec<TextResult> {
    let by_index: Vec<BTreeMap<usize, &TextResult>> =
        answers.iter().map(|a| a.iter().map(|r| (r.index, r)).collect()).collect();
    let Some(first) = answers.first() else { return Vec::new() };
    let mut out = Vec::with_capacity(first.len());
    for t in first {
        let Some(per_judge) = by_index.iter().map(|m| m.get(&t.index).copied()).collect::<Option<Vec<_>>>() else {
            continue;
        };
        let criteria = rubric
            .criteria
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let mine: Vec<_> = per_judge.iter().map(|r| &r.criteria[ci]).collect();
                let probs_of = |r: &crate::jobs::score::CriterionResult| -> Vec<f64> {
                    r.options.iter().map(|o| o.probability).collect()
                };
                let judges: Vec<JudgeDecision> = mine
                    .iter()
                    .zip(names)
                    .zip(weights)
                    .map(|((r, name), w)| JudgeDecision {
                        model: name.to_string(),
                        weight: *w,
                        chosen: r.chosen.clone(),
                        probability: r.probability,
                        probabilities: probs_of(r),
                        order_unstable: r.order_unstable,
                    })
                    .collect();
                let pooled: Vec<f64> =
                    (0..c.options.len()).map(|o| judges.iter().map(|j| j.weight * j.probabilities[o]).sum()).collect();
                let tops: Vec<usize> = judges.iter().map(|j| argmax(&j.probabilities)).collect();
                let disagree = tops.iter().any(|&t| t != tops[0]);
                let order_unstable = if mine.iter().all(|r| r.order_unstable.is_none()) {
                    None
                } else {
                    Some(mine.iter().any(|r| r.order_unstable == Some(true)))
                };
                let masses: Vec<(f64, f64)> =
                    mine.iter().zip(weights).filter_map(|(r, w)| r.letter_mass.map(|m| (m, *w))).collect();
                let mass_weight: f64 = masses.iter().map(|(_, w)| w).sum();
                let letter_mass = (!masses.is_empty() && mass_weight > 0.0)
                    .then(|| masses.iter().map(|(m, w)| m * w).sum::<f64>() / mass_weight);
                let mut d =
                    decision(c, pooled, order_unstable, letter_mass, disagree && abstain_on_disagreement, config);
                d.judges = Some(judges);
                d.disagree = Some(disagree);
                d
            })
            .collect();
        let truncated_tokens = per_judge.iter().filter_map(|r| r.truncated_tokens).max();
        out.push(TextResult { index: t.index, id: t.id.clone(), criteria, truncated_tokens });
    }
    out
}

/// A jury's run of an eval set, as a shell gives it.
pub struct PanelRunInput<'a> {
    pub panel: &'a Panel,
    pub eval_set: &'a EvalSet,
    /// The jury's configuration (no calibration: each judge brings its own).
    pub config: RunConfig,
    pub limit: Option<usize>,
    pub family: Option<String>,
}

/// A jury's run: each judge's result file (where the shell kept it, its sha256, its contents)
/// and the judges.
pub struct PanelRun {
    pub results: Vec<(PathBuf, String, ResultFile)>,
    pub judges: Vec<JudgeRun>,
}

impl PanelRun {
    /// The runs as [`crate::analysis::jury::combine_weighted`] takes them.
    pub fn judges(&self) -> Vec<crate::formats::jury::JudgeResult<'_>> {
        self.results
            .iter()
            .map(|(p, sha, r)| crate::formats::jury::JudgeResult { path: p.as_path(), sha256: sha.clone(), result: r })
            .collect()
    }
}

/// Run every judge of the panel on the eval set, one after another.
/// `keep(i, result)` writes judge i's result file and says where (the jury names it and its
/// sha256); `progress(i, p)` follows each judge's rows; `stop` stops the judge running (no jury
/// is made of a partial run: the error says which judge stopped).
pub fn run_panel(
    input: PanelRunInput<'_>,
    load: &mut Load<'_>,
    progress: &mut dyn FnMut(usize, Progress),
    stop: &AtomicBool,
    keep: &mut dyn FnMut(usize, &ResultFile) -> Result<PathBuf>,
) -> Result<PanelRun> {
    let PanelRunInput { panel, eval_set, config, limit, family } = input;
    no_calibration_of_its_own(&config)?;
    crate::jobs::run::check_input(eval_set, &config, limit)?;
    check_panel(panel)?;
    let weights = panel.weights();
    let mut results = Vec::with_capacity(panel.judges.len());
    let mut runs = Vec::with_capacity(panel.judges.len());
    for (i, spec) in panel.judges.iter().enumerate() {
        let c = judge_config(&config, spec).map_err(|e| in_judge(i, spec, e))?;
        let (engine, load_seconds, reset) = load_judge(load, i, spec)?;
        let t0 = std::time::Instant::now();
        let mut each = |p: Progress| progress(i, p);
        let mut control = Control { progress: &mut each, stop, checkpoint: None };
        let input = RunInput {
            engine: &engine,
            eval_set,
            config: c.resolve(&engine),
            model_load_seconds: load_seconds,
            resume: None,
            limit,
            family: family.clone(),
        };
        let mut result = crate::jobs::run::run(input, &mut control).map_err(|e| in_judge(i, spec, e))?;
        let run = judge_run(&engine, weights[i], load_seconds, t0.elapsed().as_secs_f64(), reset)?;
        result.timing.peak_rss_bytes = run.peak_rss_bytes;
        drop(engine);
        if result.status == crate::formats::results::Status::Partial {
            let path = keep(i, &result)?;
            return Err(Error::Config(format!(
                "stopped during judge {} ({}): its partial run is in {}; no jury is made of a partial run",
                i + 1,
                spec.model.display(),
                path.display()
            )));
        }
        let path = keep(i, &result).map_err(|e| in_judge(i, spec, e))?;
        let sha = crate::hash::sha256_file(&path)?;
        results.push((path, sha, result));
        runs.push(run);
    }
    Ok(PanelRun { results, judges: runs })
}

/// Where judge `i`'s result file goes beside a jury file `out`: `OUT-STEM.judge-N.MODEL-STEM.json`.
pub fn judge_result_path(out: &Path, i: usize, model: &Path) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "jury".into());
    let model = model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
    out.with_file_name(format!("{stem}.judge-{}.{model}.json", i + 1))
}
