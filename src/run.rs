//! The evaluation pipeline behind `readout run` and the app's Evaluate page:
//! eval set → rows → prompts (item × criterion × ordering × calibration variant) → prompt tree
//! → engine → combine (debias) → metrics → result file.
//!
//! Prompts are planned before anything is scored, as one radix tree of token sequences, so the
//! engine computes every shared prefix once (the system turn and shots once per run, each state
//! once per item) and reads every suffix of a prefix in one batched pass. Work that other rows
//! depend on (content-free calibration prompts, the PriDe sample) runs first; the rows then
//! finish pass by pass, and the result file is rewritten as they do (`Checkpoints`), so a
//! stopped or killed run leaves a partial result file of finished rows. A resumed run plans
//! every row again and computes the units an uninterrupted run computes, skipping those with
//! nothing left to read, so the rows it adds are bit for bit the uninterrupted run's.

use crate::debias::{self, DebiasMode, CONTENT_FREE};
use crate::engine::{Engine, Prefix, Suffix, Unit};
use crate::error::{Error, Result};
use crate::evalset::EvalSet;
use crate::math::{argmax, softmax};
use crate::plan::{build_trie, TrieNode};
use crate::prompt::{self, PromptVersion, Shot, LETTERS, PROMPT_VERSION};
use crate::results::*;
use crate::rubric::Criterion;
use crate::truncate::{fit_middle, Truncate};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How an answer is read from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Softmax over the letter logits at the answer position.
    #[default]
    Readout,
    /// Greedy decoding of a few tokens; the first valid letter is the answer.
    Generate,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Readout => "readout",
            Mode::Generate => "generate",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "readout" => Ok(Mode::Readout),
            "generate" => Ok(Mode::Generate),
            o => Err(format!("unknown mode `{o}` (expected readout or generate)")),
        }
    }
}

/// A run's settings with the defaults a user expects.
pub fn default_config(mode: Mode, shots: usize, debias: DebiasMode) -> RunConfig {
    RunConfig {
        mode,
        shots,
        shot_seed: 0,
        debias,
        prompt_version: PROMPT_VERSION.to_string(),
        max_new_tokens: 4,
        pride_share: debias::PRIDE_SHARE,
        pride_seed: 0,
        truncate: Truncate::None,
        bootstrap_resamples: crate::metrics::DEFAULT_RESAMPLES,
        bootstrap_seed: crate::metrics::DEFAULT_SEED,
        levers: Levers {
            prefix_tree: true,
            batched_suffixes: true,
            trim: true,
            prune_head: false,
            matmul: crate::engine::MatmulPath::Dense,
            pass_tokens: crate::results::default_pass_tokens(),
            group_units: None,
            side_by_side: None,
        },
    }
}

/// Progress as rows finish.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub elapsed_seconds: f64,
}

/// What the caller watches and controls while a run goes.
pub struct Control<'a> {
    /// Called after each finished row.
    pub progress: &'a mut dyn FnMut(Progress),
    /// Set to stop between rows; the run returns a partial result.
    pub stop: &'a AtomicBool,
    /// Keep a partial result file here while the run goes: rewritten as rows finish, at most
    /// once per the given interval (see `Checkpoints` for the policy), and when stopped.
    pub checkpoint: Option<(&'a Path, Duration)>,
}

/// One row to score: an item's criterion with a gold answer.
struct Row<'a> {
    id: String,
    /// Index of its item in the eval set (an item's rows share its state).
    item: usize,
    family: String,
    group_id: String,
    state: &'a str,
    criterion: &'a Criterion,
    gold: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    /// The row's own state in ordering `k` of its ordering list.
    Real(usize),
    /// Content-free state `s` in ordering `k` (calibration).
    ContentFree(usize, usize),
}

struct PromptSpec {
    row: usize,
    variant: Variant,
    /// The rendered prompt.
    text: String,
    tokens: Vec<u32>,
    letters: Vec<u32>,
    sha: String,
}

#[derive(Clone, Debug, Default)]
struct Reading {
    logits: Vec<f32>,
    mass: Option<f32>,
    reply: Option<String>,
    parsed: Option<usize>,
}

/// Everything the run was asked to do, prepared.
pub struct RunInput<'a> {
    pub engine: &'a Engine,
    pub eval_set: &'a EvalSet,
    pub config: RunConfig,
    pub model_load_seconds: f64,
    /// A partial result to complete (its config must equal `config`).
    pub resume: Option<ResultFile>,
    /// Score only the first this many items (`--limit`); the shots come from the whole set.
    /// Load the set without a limit.
    pub limit: Option<usize>,
    /// The `--family` the eval set was read with, for the record.
    pub family: Option<String>,
}

/// Check what a run of `eval_set` with `config` needs from the set alone (rows with a gold
/// answer, enough groups for the shots, the limit): what a shell calls before loading a model,
/// so that a bad input is refused at once.
pub fn check_input(eval_set: &EvalSet, config: &RunConfig, limit: Option<usize>) -> Result<()> {
    prepare(eval_set, config, limit).map(|_| ())
}

/// Run an evaluation. Returns the result (partial when stopped).
pub fn run(input: RunInput<'_>, control: &mut Control<'_>) -> Result<ResultFile> {
    let RunInput { engine, eval_set, config, model_load_seconds, resume, limit, family } = input;
    let start = Instant::now();
    if config.mode == Mode::Generate && config.debias != DebiasMode::None {
        return Err(Error::Config("generate mode reads one ordering; use --debias none with --mode generate".into()));
    }
    let config = resolve_levers(engine, config);
    let prep = prepare(eval_set, &config, limit)?;
    let rows = &prep.rows;
    let shots_of = |r: &Row<'_>| prep.shots_for(r, config.shots);
    // 3. Orderings per row, and the resume state.
    let mut done: BTreeMap<usize, RowRecord> = BTreeMap::new();
    let mut debias_state = serde_json::json!({});
    if let Some(prev) = &resume {
        if resolve_levers(engine, prev.config.clone()) != config {
            return Err(Error::Config(
                "the partial result was made with a different configuration; resume it with the same options".into(),
            ));
        }
        let index: HashMap<&str, usize> = rows.iter().enumerate().map(|(i, r)| (r.id.as_str(), i)).collect();
        for rec in &prev.rows {
            if let Some(&i) = index.get(rec.id.as_str()) {
                done.insert(i, rec.clone());
            }
        }
        debias_state = prev.debias_state.clone();
    }
    // 4. Prompts of every row, done or not (a state too long for the context refused or cut,
    // as configured). A resumed run walks the same prompt tree as an uninterrupted one and
    // computes the same units, skipping those with nothing left to read, so the rows it adds
    // are the rows an uninterrupted run gives, bit for bit.
    let Planned { specs, row_orderings, pride_sample, cuts } = plan_prompts(engine, eval_set, &config, &prep)?;
    let total_prompt_tokens: usize = specs.iter().map(|s| s.tokens.len()).sum();
    tracing::info!("{} prompts rendered and tokenized in {:.3} s", specs.len(), start.elapsed().as_secs_f64());
    let done_before: HashSet<usize> = done.keys().copied().collect();
    let is_done = |pi: usize| done_before.contains(&specs[pi].row);
    // 5. Phase 1: what other rows depend on.
    let mut readings: HashMap<usize, Reading> = HashMap::new();
    let mut computed = resume.as_ref().map_or(0, |r| r.plan.computed_tokens);
    let mut unique = 0usize;
    // By option count, in order, so the file's `debias_state` is the same from run to run.
    let pride_prior: BTreeMap<usize, Vec<f64>> = if config.debias == DebiasMode::Pride {
        // The sample rows (all permutations) first.
        let idx: Vec<usize> =
            specs.iter().enumerate().filter(|(_, s)| pride_sample.contains(&s.row)).map(|(i, _)| i).collect();
        let (c, u) = score_prompts(engine, &config, &specs, &idx, &is_done, &mut readings, &mut |_| Ok(true))?;
        computed += c;
        unique += u;
        match serde_json::from_value::<BTreeMap<usize, Vec<f64>>>(debias_state["prior"].clone()) {
            Ok(p) if !p.is_empty() => p,
            _ => {
                let mut by_n: BTreeMap<usize, Vec<debias::PrideRow>> = BTreeMap::new();
                for &ri in &pride_sample {
                    let ords = &row_orderings[ri];
                    let probs: Vec<Vec<f64>> = specs
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| s.row == ri)
                        .filter_map(|(pi, _)| readings.get(&pi).map(|r| softmax(&r.logits)))
                        .collect();
                    if probs.len() == ords.len() {
                        by_n.entry(ords[0].len()).or_default().push((ords.clone(), probs));
                    }
                }
                let prior: BTreeMap<usize, Vec<f64>> =
                    by_n.into_iter().map(|(n, s)| (n, debias::pride_prior(&s))).collect();
                debias_state = serde_json::json!({
                    "prior": prior,
                    "sample_rows": pride_sample.iter().map(|&i| rows[i].id.clone()).collect::<Vec<_>>(),
                });
                prior
            }
        }
    } else {
        BTreeMap::new()
    };
    if config.debias == DebiasMode::Calibrate {
        let idx: Vec<usize> = specs
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.variant, Variant::ContentFree(..)))
            .map(|(i, _)| i)
            .collect();
        let (c, u) = score_prompts(engine, &config, &specs, &idx, &is_done, &mut readings, &mut |_| Ok(true))?;
        computed += c;
        unique += u;
    }
    // 6. Phase 2: the rows, finishing one by one.
    let mut remaining: HashMap<usize, usize> = HashMap::new();
    let mut todo: Vec<usize> = Vec::new();
    for (pi, s) in specs.iter().enumerate() {
        if matches!(s.variant, Variant::Real(_)) && !pride_sample.contains(&s.row) {
            if !is_done(pi) {
                *remaining.entry(s.row).or_default() += 1;
            }
            todo.push(pi);
        }
    }
    // Rows whose prompts were all read in phase 1 (the PriDe sample) finish now.
    let mut finished_now: Vec<usize> =
        (0..rows.len()).filter(|i| !done.contains_key(i) && !remaining.contains_key(i)).collect();
    let total = rows.len();
    let mut base = ResultBase::new(engine, eval_set, &config, rows, &prep.shots, model_load_seconds)?;
    base.eval_set.limit = limit;
    base.eval_set.family = family;
    let mut checkpoints = control.checkpoint.map(|(path, every)| Checkpoints::new(path, every));
    let mut stopped = false;
    {
        let finish = |ri: usize, readings: &HashMap<usize, Reading>, done: &mut BTreeMap<usize, RowRecord>| {
            let rec = finish_row(
                &rows[ri],
                ri,
                &row_orderings[ri],
                &specs,
                readings,
                &config,
                &pride_prior,
                shots_of(&rows[ri]).1,
                cuts.get(&ri).copied(),
            );
            done.insert(ri, rec);
        };
        for ri in finished_now.drain(..) {
            finish(ri, &readings, &mut done);
        }
        let mut on_batch = |read: &[usize], readings: &HashMap<usize, Reading>| -> Result<bool> {
            let mut finished = false;
            for &pi in read {
                let ri = specs[pi].row;
                if let Some(n) = remaining.get_mut(&ri) {
                    *n -= 1;
                    if *n == 0 {
                        remaining.remove(&ri);
                        finish(ri, readings, &mut done);
                        finished = true;
                        (control.progress)(Progress {
                            done: done.len(),
                            total,
                            elapsed_seconds: start.elapsed().as_secs_f64(),
                        });
                    }
                }
            }
            if let Some(cp) = checkpoints.as_mut().filter(|cp| finished && cp.due()) {
                cp.save(|| {
                    let mut partial = base.assemble(
                        &done,
                        Status::Partial,
                        &debias_state,
                        start,
                        computed,
                        unique,
                        total_prompt_tokens,
                        specs.len(),
                    );
                    partial.summarize();
                    partial
                })?;
            }
            if control.stop.load(Ordering::Relaxed) {
                stopped = true;
                return Ok(false);
            }
            Ok(true)
        };
        let t = Instant::now();
        let (c, u) = score_prompts_with(engine, &config, &specs, &todo, &is_done, &mut readings, &mut on_batch)?;
        tracing::info!("{c} tokens scored in {:.3} s", t.elapsed().as_secs_f64());
        computed += c;
        unique += u;
    }
    let status = if stopped || done.len() < total { Status::Partial } else { Status::Complete };
    let mut result =
        base.assemble(&done, status, &debias_state, start, computed, unique, total_prompt_tokens, specs.len());
    result.summarize();
    if let Some((path, _)) = control.checkpoint {
        if status == Status::Partial {
            result.write(path)?;
        }
    }
    Ok(result)
}

/// How often a running evaluation rewrites its partial result file. The file is rewritten
/// (atomically: a temporary file, then a rename) after a forward pass that finished at least
/// one row, once `every` has passed since the last write, and no sooner than 20 times what the
/// last write took, so that writing costs at most about 5 % of the run however large the file.
/// A run killed at any moment leaves no file or a valid partial one, holding every row finished
/// before the last write: with the CLI's one second, a kill loses the pass in flight and at
/// most a second more.
struct Checkpoints<'p> {
    path: &'p Path,
    every: Duration,
    last: Instant,
    cost: Duration,
}

impl<'p> Checkpoints<'p> {
    fn new(path: &'p Path, every: Duration) -> Self {
        Checkpoints { path, every, last: Instant::now(), cost: Duration::ZERO }
    }

    fn due(&self) -> bool {
        self.last.elapsed() >= self.every.max(self.cost * 20)
    }

    /// Build the partial result and write it, timing both.
    fn save(&mut self, make: impl FnOnce() -> ResultFile) -> Result<()> {
        let t = Instant::now();
        make().write(self.path)?;
        self.cost = t.elapsed();
        self.last = Instant::now();
        tracing::debug!(path = %self.path.display(), seconds = self.cost.as_secs_f64(), "checkpoint written");
        Ok(())
    }
}

/// Rows and shots of a run, before any prompt is rendered.
struct Prepared<'a> {
    /// The rows to score.
    rows: Vec<Row<'a>>,
    /// Row ids of the primary and the alternate shots (chosen from the whole set).
    shots: (Vec<String>, Vec<String>),
    primary_shots: Vec<Shot>,
    alternate_shots: Vec<Shot>,
    primary_groups: Vec<String>,
}

impl Prepared<'_> {
    /// The shots a row is shown (the alternate set for rows of the primary shots' groups) and their ids.
    fn shots_for(&self, r: &Row<'_>, k: usize) -> (&[Shot], Vec<String>) {
        if k == 0 {
            (&[], vec![])
        } else if self.primary_groups.contains(&r.group_id) {
            (&self.alternate_shots, self.shots.1.clone())
        } else {
            (&self.primary_shots, self.shots.0.clone())
        }
    }
}

/// The rows of `eval_set` that have a gold answer, the first `limit` items' of them to score,
/// and the shots, chosen from the whole set (so that `--limit` picks what is scored, not what
/// the model is shown).
fn prepare<'a>(eval_set: &'a EvalSet, config: &RunConfig, limit: Option<usize>) -> Result<Prepared<'a>> {
    let version: PromptVersion = config.prompt_version.parse().map_err(Error::Config)?;
    let mut rows: Vec<Row<'a>> = Vec::new();
    for (ii, item) in eval_set.items.iter().enumerate() {
        for c in &item.criteria {
            let Some(gold) = c.gold else { continue };
            let id = if item.criteria.len() == 1 { item.id.clone() } else { format!("{}/{}", item.id, c.name) };
            rows.push(Row {
                id,
                item: ii,
                family: item.family.clone(),
                group_id: item.group_id.clone(),
                state: &item.state,
                criterion: c,
                gold,
            });
        }
    }
    if rows.is_empty() {
        return Err(Error::BadFile { path: eval_set.path.clone(), reason: "no row has a gold answer to score".into() });
    }
    let shots = choose_shots(&rows, config.shots, config.shot_seed, &eval_set.path)?;
    let shot_msgs = |ids: &[usize]| -> Vec<Shot> {
        ids.iter()
            .map(|&i| {
                let r = &rows[i];
                let ident: Vec<usize> = (0..r.criterion.options.len()).collect();
                Shot {
                    user: prompt::user_turn_in(version, r.state, r.criterion, &ident),
                    answer: LETTERS[r.gold].to_string(),
                }
            })
            .collect()
    };
    let (primary_shots, alternate_shots) = (shot_msgs(&shots.0), shot_msgs(&shots.1));
    let primary_groups = shots.0.iter().map(|&i| rows[i].group_id.clone()).collect();
    let ids = |v: &[usize]| v.iter().map(|&i| rows[i].id.clone()).collect::<Vec<_>>();
    let shots = (ids(&shots.0), ids(&shots.1));
    if let Some(n) = limit {
        if n == 0 {
            return Err(Error::Config("a limit of 0 items leaves nothing to run".into()));
        }
        rows.retain(|r| r.item < n);
    }
    Ok(Prepared { rows, shots, primary_shots, alternate_shots, primary_groups })
}

/// One prompt of a run, rendered: for feeding the same text to peers.
#[derive(Debug, Clone, Serialize)]
pub struct RenderedPrompt {
    /// `row id#ordering index`, with `#cf<state>` for a content-free calibration prompt.
    pub id: String,
    pub prompt: String,
    pub letters: Vec<String>,
}

/// Every prompt a run with `config` scores, in order (PriDe: the sample rows' permutations
/// and every other row's one ordering), with states fitted to the context as the run fits them.
/// `limit`: only the first items' prompts (the shots still come from the whole set).
pub fn prompt_texts(
    engine: &Engine,
    eval_set: &EvalSet,
    config: &RunConfig,
    limit: Option<usize>,
) -> Result<Vec<RenderedPrompt>> {
    let prep = prepare(eval_set, config, limit)?;
    let planned = plan_prompts(engine, eval_set, config, &prep)?;
    Ok(planned
        .specs
        .into_iter()
        .map(|s| {
            let r = &prep.rows[s.row];
            let id = match s.variant {
                Variant::Real(k) => format!("{}#{k}", r.id),
                Variant::ContentFree(si, k) => format!("{}#{k}#cf{si}", r.id),
            };
            let letters = LETTERS[..r.criterion.options.len()].iter().map(|l| l.to_string()).collect();
            RenderedPrompt { id, prompt: s.text, letters }
        })
        .collect())
}

/// Every prompt of a run's rows, rendered and tokenized.
struct Planned {
    specs: Vec<PromptSpec>,
    /// The orderings of every row (done or not).
    row_orderings: Vec<Vec<Vec<usize>>>,
    /// PriDe's sample rows (scored in every permutation).
    pride_sample: Vec<usize>,
    /// Rows whose state was cut from the middle: how many tokens their longest prompt lost.
    cuts: HashMap<usize, usize>,
}

/// One item's prompt specs, and the (row, tokens cut) of each state cut from the middle.
type PlannedItem = (Vec<PromptSpec>, Vec<(usize, usize)>);

/// Render and tokenize the prompts of every row, an item's rows together (they share its
/// state), in the order the run has always used: per row, per ordering, the real prompt, then
/// its content-free calibration prompts. An item whose longest prompt does not fit the model's
/// context is refused, naming it and the token counts, or (with [`Truncate::Middle`]) has its
/// state cut from the middle until every prompt fits.
fn plan_prompts(engine: &Engine, eval_set: &EvalSet, config: &RunConfig, prep: &Prepared<'_>) -> Result<Planned> {
    let version: PromptVersion = config.prompt_version.parse().map_err(Error::Config)?;
    let rows = &prep.rows;
    let pride_sample: Vec<usize> = if config.debias == DebiasMode::Pride {
        debias::pride_sample(rows.len(), config.pride_share, config.pride_seed)
    } else {
        vec![]
    };
    let row_orderings = (0..rows.len())
        .map(|i| {
            let mode = match config.debias {
                DebiasMode::Pride if pride_sample.contains(&i) => DebiasMode::Permutation,
                DebiasMode::Pride => DebiasMode::None,
                m => m,
            };
            debias::orderings(mode, rows[i].criterion.options.len())
                .map_err(|reason| Error::BadFile { path: eval_set.path.clone(), reason })
        })
        .collect::<Result<Vec<_>>>()?;
    let context = engine.info().config.context_length;
    let reserved = if config.mode == Mode::Generate { config.max_new_tokens } else { 0 };
    let budget = context.saturating_sub(reserved);
    // A prompt rendered and tokenized, before its letters are checked.
    struct Draft {
        row: usize,
        k: usize,
        text: String,
        tokens: Vec<u32>,
    }
    let draft = |ri: usize, k: usize, state: &str| -> Result<Draft> {
        let r = &rows[ri];
        let user = prompt::user_turn_in(version, state, r.criterion, &row_orderings[ri][k]);
        let text = engine.template().render(&prompt::messages(prep.shots_for(r, config.shots).0, user))?;
        let tokens = engine.tokenizer().encode(&text)?;
        Ok(Draft { row: ri, k, text, tokens })
    };
    let longest = |d: &[Draft]| d.iter().map(|d| (d.tokens.len(), d.row, d.k)).max().unwrap_or_default();
    let too_long = |ri: usize, k: usize, prompt_tokens: usize, cut_tried: bool| -> Result<Error> {
        let r = &rows[ri];
        let item = &eval_set.items[r.item];
        let mut what = format!("{}: item `{}`", eval_set.path.display(), item.id);
        if item.criteria.len() > 1 {
            what.push_str(&format!(", criterion `{}`", r.criterion.name));
        }
        let without = draft(ri, k, "")?.tokens.len();
        let advice = if cut_tried || without > budget {
            format!(
                "without its state the prompt (system turn, shots, question and options) is still {without} tokens, so cutting the state cannot make it fit: use fewer --shots, shorter questions, or a model with a longer context"
            )
        } else {
            "shorten the state, or pass --truncate-middle to cut it from the middle (its head and tail are kept)".into()
        };
        Ok(Error::PromptTooLong {
            what,
            part: "state",
            prompt_tokens,
            state_tokens: prompt_tokens.saturating_sub(without),
            budget,
            reserved: if reserved > 0 {
                format!(" ({context} less {reserved} kept for the generated reply)")
            } else {
                String::new()
            },
            advice,
        })
    };
    // An item's rows at a time (they share its state), the items on all cores (on a GPU this
    // is a good part of the run), then in row order.
    let mut items: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let end = (start..rows.len()).find(|&j| rows[j].item != rows[start].item).unwrap_or(rows.len());
        items.push(start..end);
        start = end;
    }
    let plan_item = |item: std::ops::Range<usize>| -> Result<PlannedItem> {
        let mut specs: Vec<PromptSpec> = Vec::new();
        let mut cuts: Vec<(usize, usize)> = Vec::new();
        let group: Vec<usize> = item.collect();
        let Some(&first) = group.first() else { return Ok((specs, cuts)) };
        let state = rows[first].state;
        let keys: Vec<(usize, usize)> =
            group.iter().flat_map(|&ri| (0..row_orderings[ri].len()).map(move |k| (ri, k))).collect();
        let drafts_of = |state: &str| keys.iter().map(|&(ri, k)| draft(ri, k, state)).collect::<Result<Vec<_>>>();
        let mut drafts = drafts_of(state)?;
        let (tokens, ri, k) = longest(&drafts);
        if tokens > budget {
            if config.truncate == Truncate::None {
                return Err(too_long(ri, k, tokens, false)?);
            }
            // Cut against the longest prompt; should another prompt of the item still not fit
            // (its tokens merge differently at the cut), cut against all of them.
            let fit_with = |len: &mut dyn FnMut(&str) -> Result<usize>| -> Result<Option<Vec<Draft>>> {
                match fit_middle(state, budget, len)? {
                    Some(f) => drafts_of(&f).map(|d| (longest(&d).0 <= budget).then_some(d)),
                    None => Ok(None),
                }
            };
            let mut fitted = fit_with(&mut |s| Ok(draft(ri, k, s)?.tokens.len()))?;
            if fitted.is_none() {
                fitted =
                    fit_with(&mut |s| keys.iter().try_fold(0, |m, &(ri, k)| Ok(draft(ri, k, s)?.tokens.len().max(m))))?;
            }
            let Some(fitted) = fitted else { return Err(too_long(ri, k, tokens, true)?) };
            for &ri in &group {
                let max_of = |d: &[Draft]| d.iter().filter(|d| d.row == ri).map(|d| d.tokens.len()).max().unwrap_or(0);
                cuts.push((ri, max_of(&drafts).saturating_sub(max_of(&fitted))));
            }
            drafts = fitted;
        }
        // Per row, per ordering: the real prompt, then its content-free calibration prompts.
        for d in drafts {
            let r = &rows[d.row];
            let letters = engine.answer_tokens(&d.text, &d.tokens, r.criterion.options.len())?;
            let sha = crate::hash::sha256_bytes(d.text.as_bytes());
            specs.push(PromptSpec {
                row: d.row,
                variant: Variant::Real(d.k),
                text: d.text,
                tokens: d.tokens,
                letters,
                sha,
            });
            if config.debias == DebiasMode::Calibrate {
                let shot_list = prep.shots_for(r, config.shots).0;
                let ord = &row_orderings[d.row][d.k];
                for (si, cf) in CONTENT_FREE.iter().enumerate() {
                    let spec = make_prompt(
                        engine,
                        version,
                        shot_list,
                        cf,
                        r.criterion,
                        ord,
                        d.row,
                        Variant::ContentFree(si, d.k),
                    )?;
                    if spec.tokens.len() > budget {
                        return Err(too_long(d.row, d.k, spec.tokens.len(), true)?);
                    }
                    specs.push(spec);
                }
            }
        }
        Ok((specs, cuts))
    };
    let planned: Vec<Result<PlannedItem>> = items.into_par_iter().map(plan_item).collect();
    let mut specs: Vec<PromptSpec> = Vec::new();
    let mut cuts: HashMap<usize, usize> = HashMap::new();
    // The first item's error, in order, whatever core found it first.
    for p in planned {
        let (s, c) = p?;
        specs.extend(s);
        cuts.extend(c);
    }
    Ok(Planned { specs, row_orderings, pride_sample, cuts })
}

/// The parts of a result file fixed before scoring.
struct ResultBase {
    program: Program,
    machine: Machine,
    model: ModelRecord,
    eval_set: EvalSetRecord,
    config: RunConfig,
    shots: ShotRecord,
    model_load_seconds: f64,
    /// The engine's device, for its peak memory.
    device: candle_core::Device,
}

impl ResultBase {
    fn new(
        engine: &Engine,
        set: &EvalSet,
        config: &RunConfig,
        rows: &[Row<'_>],
        shots: &(Vec<String>, Vec<String>),
        model_load_seconds: f64,
    ) -> Result<Self> {
        let info = engine.info();
        Ok(ResultBase {
            program: Program { name: "readout".into(), version: env!("CARGO_PKG_VERSION").into() },
            machine: Machine {
                os: std::env::consts::OS.into(),
                arch: std::env::consts::ARCH.into(),
                cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
                device: info.device.clone(),
            },
            model: ModelRecord {
                name: info.name.clone(),
                file: info.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                sha256: engine.sha256()?,
                architecture: info.architecture.as_str().into(),
                quantisation: info.quantisation.clone(),
                parameters: info.parameters,
                weights: info.weights.as_str().into(),
                activations: info.activations.into(),
                kv_cache: info.kv_cache.as_str().into(),
            },
            eval_set: EvalSetRecord {
                name: set.name.clone(),
                path: set.path.display().to_string(),
                sha256: set.sha256.clone(),
                rows: rows.len(),
                limit: None,
                family: None,
                skipped: set.skipped.clone(),
            },
            config: config.clone(),
            shots: ShotRecord { primary: shots.0.clone(), alternate: shots.1.clone() },
            model_load_seconds,
            device: engine.device().clone(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        &self,
        done: &BTreeMap<usize, RowRecord>,
        status: Status,
        debias_state: &serde_json::Value,
        start: Instant,
        computed: usize,
        unique: usize,
        prompt_tokens: usize,
        prompts: usize,
    ) -> ResultFile {
        let wall = start.elapsed().as_secs_f64();
        let n = done.len();
        ResultFile {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            status,
            created: now_utc(),
            program: self.program.clone(),
            machine: self.machine.clone(),
            model: self.model.clone(),
            eval_set: self.eval_set.clone(),
            config: self.config.clone(),
            shots: self.shots.clone(),
            debias_state: debias_state.clone(),
            plan: PlanRecord {
                prompts,
                prompt_tokens,
                unique_tokens: unique,
                computed_tokens: computed,
                truncated_rows: done.values().filter(|r| r.truncated_tokens.is_some()).count(),
            },
            metrics: None,
            timing: Timing {
                wall_seconds: wall,
                model_load_seconds: self.model_load_seconds,
                rows_per_second: if wall > 0.0 { n as f64 / wall } else { 0.0 },
                mean_row_seconds: if n > 0 { wall / n as f64 } else { 0.0 },
                peak_rss_bytes: crate::memory::peak_rss(),
                peak_device_bytes: crate::device::peak_memory(&self.device),
            },
            rows: done.values().cloned().collect(),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn make_prompt(
    engine: &Engine,
    version: PromptVersion,
    shots: &[Shot],
    state: &str,
    c: &Criterion,
    ord: &[usize],
    row: usize,
    variant: Variant,
) -> Result<PromptSpec> {
    let text = engine.template().render(&prompt::messages(shots, prompt::user_turn_in(version, state, c, ord)))?;
    let tokens = engine.tokenizer().encode(&text)?;
    let letters = engine.answer_tokens(&text, &tokens, c.options.len())?;
    let sha = crate::hash::sha256_bytes(text.as_bytes());
    Ok(PromptSpec { row, variant, text, tokens, letters, sha })
}

/// Seeded choice of `k` shot rows from distinct groups, and an alternate set from other groups.
fn choose_shots(rows: &[Row<'_>], k: usize, seed: u64, path: &Path) -> Result<(Vec<usize>, Vec<usize>)> {
    if k == 0 {
        return Ok((vec![], vec![]));
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let mut s = seed ^ 0x5EED_5EED;
    for i in (1..order.len()).rev() {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let j = ((s >> 33) as usize) % (i + 1);
        order.swap(i, j);
    }
    let pick = |exclude: &[&str]| -> Vec<usize> {
        let mut chosen: Vec<usize> = Vec::new();
        for &i in &order {
            let g = rows[i].group_id.as_str();
            if chosen.len() == k {
                break;
            }
            if !exclude.contains(&g) && !chosen.iter().any(|&c| rows[c].group_id == g) {
                chosen.push(i);
            }
        }
        chosen
    };
    let primary = pick(&[]);
    let groups: Vec<&str> = primary.iter().map(|&i| rows[i].group_id.as_str()).collect();
    let alternate = pick(&groups);
    if primary.len() < k || alternate.len() < k {
        return Err(Error::BadFile {
            path: path.to_path_buf(),
            reason: format!("--shots {k} needs {} rows from distinct groups; the set has too few groups", 2 * k),
        });
    }
    Ok((primary, alternate))
}

type BatchFn<'a> = dyn FnMut(&[usize], &HashMap<usize, Reading>) -> Result<bool> + 'a;

#[allow(clippy::too_many_arguments)]
fn score_prompts(
    engine: &Engine,
    config: &RunConfig,
    specs: &[PromptSpec],
    idx: &[usize],
    done: &dyn Fn(usize) -> bool,
    readings: &mut HashMap<usize, Reading>,
    on_batch: &mut dyn FnMut(&[usize]) -> Result<bool>,
) -> Result<(usize, usize)> {
    let mut f = |read: &[usize], _: &HashMap<usize, Reading>| on_batch(read);
    score_prompts_with(engine, config, specs, idx, done, readings, &mut f)
}

/// Score the prompts `idx` as one tree, reading every one that is not `done` (already in a
/// partial result). The tree is built from all of `idx`, done or not, and every unit with
/// something left to read is computed whole, as an uninterrupted run computes it; units with
/// nothing left are skipped. Returns (tokens computed, unique tokens of the tree).
#[allow(clippy::too_many_arguments)]
fn score_prompts_with(
    engine: &Engine,
    config: &RunConfig,
    specs: &[PromptSpec],
    idx: &[usize],
    done: &dyn Fn(usize) -> bool,
    readings: &mut HashMap<usize, Reading>,
    on_batch: &mut BatchFn<'_>,
) -> Result<(usize, usize)> {
    if idx.iter().all(|&pi| done(pi)) {
        return Ok((0, 0));
    }
    let seqs: Vec<&[u32]> = idx.iter().map(|&i| specs[i].tokens.as_slice()).collect();
    let tree = if config.mode == Mode::Readout && !config.levers.prefix_tree {
        // Lever off: every prompt from scratch, nothing shared.
        let flat: Vec<TrieNode> = (0..seqs.len())
            .map(|i| TrieNode { rep: i, start: 0, end: seqs[i].len(), children: vec![], prompts: vec![i] })
            .collect();
        TrieNode { rep: 0, start: 0, end: 0, children: flat, prompts: vec![] }
    } else {
        build_trie(&seqs)
    };
    let unique = tree.unique_tokens();
    let mut wanted = HashSet::new();
    mark_wanted(&tree, &|p| !done(idx[p]), &mut wanted);
    let opts = pass_options(engine, config);
    let side_by_side = config.levers.side_by_side.unwrap_or_else(|| side_by_side_default(engine));
    let mut ctx =
        Exec { engine, config, opts, specs, idx, seqs: &seqs, wanted, readings, on_batch, computed: 0, side_by_side };
    if tree.is_leaf() {
        ctx.read_leaves(&Prefix::empty(), &[&tree])?;
    } else if config.mode == Mode::Readout {
        ctx.walk(&tree)?;
    } else {
        ctx.node(&tree, &Prefix::empty())?;
    }
    Ok((ctx.computed, unique))
}

/// The engine's pass options as `config`'s levers set them (grouping: the device's default
/// unless the levers say).
fn pass_options(engine: &Engine, config: &RunConfig) -> crate::engine::PassOptions {
    let l = &config.levers;
    crate::engine::PassOptions {
        prune_head: l.prune_head,
        trim: l.trim,
        pass_tokens: l.pass_tokens,
        group_units: l.group_units.unwrap_or(engine.pass_defaults().group_units),
    }
}

/// Two passes side by side by default on a CPU of several threads.
fn side_by_side_default(engine: &Engine) -> bool {
    engine.device().is_cpu() && engine.threads() > 1
}

/// `config` with the levers the device decides (`None`: its default) made concrete, as the
/// result file records them.
pub fn resolve_levers(engine: &Engine, mut config: RunConfig) -> RunConfig {
    let g = pass_options(engine, &config).group_units;
    config.levers.group_units = Some(g);
    config.levers.side_by_side = Some(config.levers.side_by_side.unwrap_or_else(|| side_by_side_default(engine)));
    config.levers.matmul = engine.info().matmul;
    config
}

/// Collect the nodes with a prompt left to read at or below them. Returns whether `n` is one.
fn mark_wanted(n: &TrieNode, want: &dyn Fn(usize) -> bool, out: &mut HashSet<*const TrieNode>) -> bool {
    let mut any = n.prompts.iter().any(|&p| want(p));
    for c in &n.children {
        any |= mark_wanted(c, want, out);
    }
    if any {
        out.insert(n as *const TrieNode);
    }
    any
}

struct Exec<'a, 'b> {
    engine: &'a Engine,
    config: &'a RunConfig,
    /// The engine's pass options, from the configuration's levers.
    opts: crate::engine::PassOptions,
    specs: &'a [PromptSpec],
    idx: &'a [usize],
    seqs: &'a [&'a [u32]],
    /// Nodes with a prompt left to read at or below them (see `mark_wanted`).
    wanted: HashSet<*const TrieNode>,
    readings: &'a mut HashMap<usize, Reading>,
    on_batch: &'a mut BatchFn<'b>,
    computed: usize,
    /// Two passes at a time (CPU with more than one thread; see `walk`).
    side_by_side: bool,
}

impl Exec<'_, '_> {
    /// The readout's walk of the prompt tree, depth first, in passes of up to
    /// `engine.pass_tokens()` new tokens. A unit is an inner node: its own tokens (the stem)
    /// computed on its parent's prefix, with its leaf children read in the same pass under a tree
    /// mask. A pass takes as many pending units as fit, so units of different parents (the
    /// states of several items, the questions of several rows) share one set of matmuls.
    ///
    /// Cache policy: the pending units form the frontier of the depth-first walk; each holds its
    /// parent's prefix, whose chunks are shared with its siblings, so memory is the keys and
    /// values of the current path plus one stem per pending unit. Nothing else is kept, except
    /// on a GPU, where a prefix that a pass uses as a parent also keeps its chunks joined into
    /// one (`Prefix::layer_then`): at most one more copy of the path, for fewer kernel launches.
    ///
    /// A unit's numbers depend only on the unit (attention runs per unit; the matmuls sum each
    /// output in an order fixed by the weights' shape), not on which units share its pass, so
    /// skipping the units with nothing left to read (a resumed run) changes no other unit's bits.
    /// `on_batch` is called after every pass, and after every chunk of a large unit's leaves.
    fn walk(&mut self, root: &TrieNode) -> Result<bool> {
        let budget = if self.config.levers.batched_suffixes { self.config.levers.pass_tokens } else { 0 };
        let mut stack: Vec<(&TrieNode, Prefix)> = vec![(root, Prefix::empty())];
        while !stack.is_empty() {
            let (batch, total) = self.take_batch(&mut stack, budget);
            if self.is_alone(&batch, total, budget) {
                // One unit alone: its stem in chunks, then its leaves in passes of their own,
                // each followed by `on_batch` (so the rows of a large unit finish as they are read).
                let (n, parent) = &batch[0];
                let prefix = self.engine.extend_with(parent, &self.seqs[n.rep][n.start..n.end], self.opts)?;
                self.computed += n.end - n.start;
                let leaves: Vec<&TrieNode> = n.children.iter().filter(|c| c.is_leaf()).collect();
                for chunk in self.leaf_chunks(&leaves) {
                    if !chunk.iter().any(|l| self.is_wanted(l)) {
                        continue;
                    }
                    let suffixes: Vec<Suffix<'_>> = chunk.iter().map(|l| self.leaf_suffix(l)).collect();
                    let read = self.engine.read_with(&prefix, &suffixes, self.opts)?;
                    self.computed += chunk.iter().map(|l| l.end - l.start).sum::<usize>();
                    let mut read_now: Vec<usize> = Vec::new();
                    for (l, r) in chunk.iter().zip(read) {
                        self.record(l, &r, &mut read_now);
                    }
                    if !(self.on_batch)(&read_now, self.readings)? {
                        return Ok(false);
                    }
                }
                let inner = n.children.iter().filter(|c| !c.is_leaf() && self.is_wanted(c));
                let next: Vec<(&TrieNode, Prefix)> = inner.map(|c| (c, prefix.clone())).collect();
                stack.extend(next.into_iter().rev());
                continue;
            }
            // On a CPU of several cores, a second pass from the frontier runs beside this one:
            // each pass has steps that run on one core (copies, the attention's small products),
            // and the other pass's work fills the idle core. Both passes' parents are computed
            // already, and a unit's numbers do not depend on its pass, so the bits are the same.
            let mut second = None;
            if self.side_by_side && !stack.is_empty() {
                let (b2, t2) = self.take_batch(&mut stack, budget);
                if self.is_alone(&b2, t2, budget) {
                    stack.extend(b2.into_iter().rev());
                } else {
                    second = Some((b2, t2));
                }
            }
            let units = self.units(&batch);
            let (outs, outs2) = match &second {
                None => (self.engine.pass_with(&units, self.opts)?, None),
                Some((b2, _)) => {
                    let units2 = self.units(b2);
                    let (a, b) = self.engine.pass_pair(&units, &units2, self.opts);
                    (a?, Some(b?))
                }
            };
            drop(units);
            if !self.finish_pass(&batch, outs, total, &mut stack)? {
                return Ok(false);
            }
            if let (Some((b2, t2)), Some(outs2)) = (&second, outs2) {
                if !self.finish_pass(b2, outs2, *t2, &mut stack)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The next pass from the top of the frontier: as many pending units as fit in `budget`
    /// new tokens (at least one), and their token count.
    fn take_batch<'n>(
        &self,
        stack: &mut Vec<(&'n TrieNode, Prefix)>,
        budget: usize,
    ) -> (Vec<(&'n TrieNode, Prefix)>, usize) {
        let mut batch: Vec<(&TrieNode, Prefix)> = Vec::new();
        let mut total = 0;
        while let Some((n, _)) = stack.last() {
            let cost = self.unit_tokens(n);
            if !batch.is_empty() && total + cost > budget {
                break;
            }
            total += cost;
            if let Some(item) = stack.pop() {
                batch.push(item);
            }
        }
        (batch, total)
    }

    /// Whether a batch is one unit that takes passes of its own (larger than a pass, or
    /// batching off).
    fn is_alone(&self, batch: &[(&TrieNode, Prefix)], total: usize, budget: usize) -> bool {
        batch.len() == 1 && (total > budget || !self.config.levers.batched_suffixes)
    }

    fn units<'s>(&'s self, batch: &'s [(&TrieNode, Prefix)]) -> Vec<Unit<'s>> {
        batch
            .iter()
            .map(|(n, parent)| Unit {
                parent,
                stem: &self.seqs[n.rep][n.start..n.end],
                leaves: self.leaf_suffixes(n),
                // Only a node with an inner child still to read is gone on from.
                keep: n.children.iter().any(|c| !c.is_leaf() && self.is_wanted(c)),
            })
            .collect()
    }

    /// Record a pass's readouts, push its units' inner children (first child on top), and call
    /// `on_batch`; false when the caller asked to stop.
    fn finish_pass<'n>(
        &mut self,
        batch: &[(&'n TrieNode, Prefix)],
        outs: Vec<crate::engine::UnitOut>,
        total: usize,
        stack: &mut Vec<(&'n TrieNode, Prefix)>,
    ) -> Result<bool> {
        self.computed += total;
        let mut read_now: Vec<usize> = Vec::new();
        let mut next: Vec<(&TrieNode, Prefix)> = Vec::new();
        for ((n, _), out) in batch.iter().zip(outs) {
            let leaves = n.children.iter().filter(|c| c.is_leaf());
            for (l, r) in leaves.zip(&out.readouts) {
                self.record(l, r, &mut read_now);
            }
            for c in n.children.iter().filter(|c| !c.is_leaf() && self.is_wanted(c)) {
                next.push((c, out.prefix.clone()));
            }
        }
        // Pushed in reverse so the first child is taken first.
        stack.extend(next.into_iter().rev());
        (self.on_batch)(&read_now, self.readings)
    }

    /// Whether a node has a prompt left to read at or below it.
    fn is_wanted(&self, n: &TrieNode) -> bool {
        self.wanted.contains(&(n as *const TrieNode))
    }

    /// A large unit's leaves in the passes `Engine::read_with` makes of them (as many as fit in
    /// the engine's pass; one each with batching off), so that each chunk is one pass of its own.
    fn leaf_chunks<'n>(&self, leaves: &[&'n TrieNode]) -> Vec<Vec<&'n TrieNode>> {
        let max = if self.config.levers.batched_suffixes { self.opts.pass_tokens } else { 0 };
        let mut chunks: Vec<Vec<&TrieNode>> = Vec::new();
        let mut total = 0;
        for &l in leaves {
            let len = l.end - l.start;
            match chunks.last_mut() {
                Some(c) if total + len <= max => {
                    c.push(l);
                    total += len;
                }
                _ => {
                    chunks.push(vec![l]);
                    total = len;
                }
            }
        }
        chunks
    }

    /// New tokens a unit puts in a pass: its stem and its leaves.
    fn unit_tokens(&self, n: &TrieNode) -> usize {
        (n.end - n.start) + n.children.iter().filter(|c| c.is_leaf()).map(|c| c.end - c.start).sum::<usize>()
    }

    fn leaf_suffixes(&self, n: &TrieNode) -> Vec<Suffix<'_>> {
        n.children.iter().filter(|c| c.is_leaf()).map(|l| self.leaf_suffix(l)).collect()
    }

    /// A leaf as a suffix: its own tokens and the letters its prompts read.
    fn leaf_suffix(&self, l: &TrieNode) -> Suffix<'_> {
        Suffix { tokens: &self.seqs[l.rep][l.start..l.end], read: &self.specs[self.idx[l.prompts[0]]].letters }
    }

    /// Store a leaf's readout for every prompt that ends at it (identical prompts share a leaf),
    /// unless the leaf was read again only because its unit had other leaves left to read.
    fn record(&mut self, l: &TrieNode, r: &crate::engine::Readout, read_now: &mut Vec<usize>) {
        if !self.is_wanted(l) {
            return;
        }
        for &p in &l.prompts {
            let pi = self.idx[p];
            self.readings.insert(pi, Reading { logits: r.logits.clone(), mass: r.letter_mass, ..Default::default() });
            read_now.push(pi);
        }
    }

    /// Compute a node's tokens, read its leaves in one batch, recurse into the rest.
    /// Returns false when the caller asked to stop.
    fn node(&mut self, node: &TrieNode, parent: &Prefix) -> Result<bool> {
        if !self.is_wanted(node) {
            return Ok(true);
        }
        let tokens = &self.seqs[node.rep][node.start..node.end];
        let prefix = self.engine.extend_with(parent, tokens, self.opts)?;
        self.computed += tokens.len();
        let leaves: Vec<&TrieNode> = node.children.iter().filter(|c| c.is_leaf()).collect();
        if !leaves.is_empty() && !self.read_leaves(&prefix, &leaves)? {
            return Ok(false);
        }
        for child in node.children.iter().filter(|c| !c.is_leaf()) {
            if !self.node(child, &prefix)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Read leaves on their prefix: the readout in one `read_with`, generation one leaf at a
    /// time (each leaf its own decode, `on_batch` after each). Leaves with nothing left to read
    /// are skipped. Returns false when the caller asked to stop.
    fn read_leaves(&mut self, prefix: &Prefix, leaves: &[&TrieNode]) -> Result<bool> {
        match self.config.mode {
            Mode::Readout => {
                if !leaves.iter().any(|l| self.is_wanted(l)) {
                    return Ok(true);
                }
                let mut read_now: Vec<usize> = Vec::new();
                self.computed += leaves.iter().map(|l| l.end - l.start).sum::<usize>();
                let suffixes: Vec<Suffix<'_>> = leaves.iter().map(|l| self.leaf_suffix(l)).collect();
                let out = self.engine.read_with(prefix, &suffixes, self.opts)?;
                for (l, r) in leaves.iter().zip(out) {
                    self.record(l, &r, &mut read_now);
                }
                (self.on_batch)(&read_now, self.readings)
            }
            Mode::Generate => {
                let wanted: Vec<&TrieNode> = leaves.iter().copied().filter(|l| self.is_wanted(l)).collect();
                for l in wanted {
                    let tokens = &self.seqs[l.rep][l.start..l.end];
                    let letters = &self.specs[self.idx[l.prompts[0]]].letters;
                    let (reading, steps) = self.generate(prefix, tokens, letters.len())?;
                    self.computed += tokens.len() + steps;
                    let mut read_now: Vec<usize> = Vec::new();
                    for &p in &l.prompts {
                        let pi = self.idx[p];
                        self.readings.insert(pi, reading.clone());
                        read_now.push(pi);
                    }
                    if !(self.on_batch)(&read_now, self.readings)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    /// Greedy decoding of up to `max_new_tokens`; the first standalone valid letter is the answer.
    fn generate(&self, prefix: &Prefix, tokens: &[u32], n_options: usize) -> Result<(Reading, usize)> {
        let stop_ids: Vec<u32> = ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>"]
            .iter()
            .filter_map(|t| self.engine.tokenizer().token_id(t))
            .collect();
        let (mut cur, mut logits) = self.engine.next_logits(prefix, tokens)?;
        let mut out: Vec<u32> = Vec::new();
        let mut steps = 0;
        for step in 0..self.config.max_new_tokens {
            let next = argmax(&logits.iter().map(|&x| x as f64).collect::<Vec<_>>()) as u32;
            if stop_ids.contains(&next) {
                break;
            }
            out.push(next);
            if step + 1 == self.config.max_new_tokens {
                break;
            }
            let (c, l) = self.engine.next_logits(&cur, &[next])?;
            steps += 1;
            cur = c;
            logits = l;
        }
        let reply = self.engine.tokenizer().decode(&out)?;
        let parsed = parse_letter(&reply, n_options);
        Ok((Reading { logits: vec![], mass: None, reply: Some(reply), parsed }, steps))
    }
}

/// The first capital letter standing alone (not inside a word) among the first `n` letters.
pub fn parse_letter(reply: &str, n: usize) -> Option<usize> {
    let chars: Vec<char> = reply.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_alphanumeric() {
            let before = i > 0 && chars[i - 1].is_alphanumeric();
            let after = i + 1 < chars.len() && chars[i + 1].is_alphanumeric();
            if !before && !after && c.is_ascii_uppercase() {
                let slot = (c as u8 - b'A') as usize;
                if slot < n {
                    return Some(slot);
                }
            }
        }
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn finish_row(
    r: &Row<'_>,
    ri: usize,
    ords: &[Vec<usize>],
    specs: &[PromptSpec],
    readings: &HashMap<usize, Reading>,
    config: &RunConfig,
    pride_prior: &BTreeMap<usize, Vec<f64>>,
    shot_ids: Vec<String>,
    truncated_tokens: Option<usize>,
) -> RowRecord {
    let n = r.criterion.options.len();
    let mine: Vec<(usize, &PromptSpec)> = specs.iter().enumerate().filter(|(_, s)| s.row == ri).collect();
    let mut orderings = Vec::with_capacity(ords.len());
    let mut option_probs: Vec<Vec<f64>> = Vec::with_capacity(ords.len());
    let mut generated: Option<Option<usize>> = None;
    for (k, ord) in ords.iter().enumerate() {
        let Some((pi, spec)) = mine.iter().find(|(_, s)| s.variant == Variant::Real(k)) else { continue };
        let reading = readings.get(pi).cloned().unwrap_or_default();
        let slot_probs = match config.mode {
            Mode::Readout => softmax(&reading.logits),
            Mode::Generate => {
                generated = Some(reading.parsed.map(|s| ord[s]));
                (0..n).map(|s| if reading.parsed == Some(s) { 1.0 } else { 0.0 }).collect()
            }
        };
        let adjusted = match config.debias {
            DebiasMode::Calibrate => {
                let cf: Vec<Vec<f64>> = mine
                    .iter()
                    .filter(|(_, s)| matches!(s.variant, Variant::ContentFree(_, kk) if kk == k))
                    .filter_map(|(p, _)| readings.get(p).map(|x| softmax(&x.logits)))
                    .collect();
                debias::calibrate(&slot_probs, &cf)
            }
            DebiasMode::Pride if ords.len() == 1 => match pride_prior.get(&n) {
                Some(prior) => debias::pride_debias(&slot_probs, prior),
                None => slot_probs.clone(),
            },
            _ => slot_probs.clone(),
        };
        option_probs.push(debias::to_option_space(&adjusted, ord));
        orderings.push(OrderingRecord {
            order: ord.clone(),
            letter_probs: slot_probs,
            letter_mass: reading.mass.map(|m| m as f64),
            reply: reading.reply.clone(),
            prompt_sha256: spec.sha.clone(),
        });
    }
    let (probs, predicted) = match generated {
        Some(None) => (None, None),
        Some(Some(opt)) => {
            let p: Vec<f64> = (0..n).map(|i| if i == opt { 1.0 } else { 0.0 }).collect();
            (Some(p), Some(opt))
        }
        None => {
            let p = debias::average(&option_probs);
            let best = argmax(&p);
            (Some(p), Some(best))
        }
    };
    let option_ids: Vec<String> = r.criterion.options.iter().map(|o| o.id.clone()).collect();
    RowRecord {
        id: r.id.clone(),
        family: r.family.clone(),
        group_id: r.group_id.clone(),
        gold: r.gold,
        gold_id: option_ids[r.gold].clone(),
        predicted_id: predicted.map(|p| option_ids[p].clone()),
        option_ids,
        shots: shot_ids,
        orderings,
        correct: predicted == Some(r.gold),
        invalid: predicted.is_none(),
        order_unstable: debias::order_unstable(&option_probs),
        probs,
        predicted,
        truncated_tokens,
    }
}
