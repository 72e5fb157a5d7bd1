//! The stages of a job in order, once it is planned: exec reads the prompts other rows depend
//! on first (PriDe's sample, the content-free calibration prompts), then the rows', and combine
//! finishes each row as its last prompt is read, handing it to the caller. Batch calibration is
//! the exception: its prior is the mean over every row, so it reads every row's prompts first
//! (those of rows done before a resume too, so that the prior is the uninterrupted job's) and
//! finishes all rows at the end. `run` (eval sets, with gold) and `score` (texts, without) both
//! go through here, so both get every debias mode, resuming and stopping.

pub mod combine;
pub mod exec;
pub mod input;
pub mod plan;
pub mod prompt;

use crate::config::RunConfig;
use crate::debias::DebiasMode;
use crate::engine::PassOptions;
use crate::error::Result;
use crate::pipeline::plan::{Planned, Variant};
use combine::{Combined, Priors};
use exec::{Forward, Reading, Shape, Work};
use std::collections::{BTreeMap, HashMap, HashSet};

/// What a job has done so far.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Extra state a debias mode needs (the PriDe prior by option count, its sample row ids).
    pub debias_state: serde_json::Value,
    /// Tokens computed and unique tokens of the trees walked.
    pub work: Work,
}

/// Called after every pass with the rows it finished (often none); returns false to stop.
pub type OnRows<'a> = dyn FnMut(Vec<(usize, Combined)>, &Tally) -> Result<bool> + 'a;

/// Execute a planned job. `done`: rows finished already (a resumed job), whose prompts are not
/// read again; `debias_state`: what the earlier part of a resumed job found (its PriDe prior).
/// `shape`: how the prompts are arranged into trees ([`Shape::Trie`] for a run).
/// Returns the tally; `work.stopped` when `on_rows` stopped it.
#[allow(clippy::too_many_arguments)]
pub fn execute<F: Forward>(
    model: &F,
    opts: PassOptions,
    planned: &Planned,
    shape: Shape<'_>,
    config: &RunConfig,
    row_ids: &[String],
    done: &HashSet<usize>,
    debias_state: serde_json::Value,
    on_rows: &mut OnRows<'_>,
) -> Result<Tally> {
    let prompts = &planned.prompts;
    let is_done = |pi: usize| done.contains(&prompts[pi].row);
    let mut readings: HashMap<usize, Reading> = HashMap::new();
    let mut tally = Tally { debias_state, work: Work::default() };
    let add = |t: &mut Tally, w: Work| {
        t.work.computed += w.computed;
        t.work.unique += w.unique;
        t.work.stopped |= w.stopped;
    };
    let n_options = |ri: usize| planned.row_orderings[ri].first().map_or(0, |o| o.len());
    // 1. What other rows depend on. By option count, in order, so that the file's
    // `debias_state` is the same from run to run.
    let pride: BTreeMap<usize, Vec<f64>> = if config.debias == DebiasMode::Pride {
        let sample: HashSet<usize> = planned.pride_sample.iter().copied().collect();
        let idx: Vec<usize> = (0..prompts.len()).filter(|&i| sample.contains(&prompts[i].row)).collect();
        let w = exec::exec(model, config, opts, prompts, &idx, shape, &is_done, &mut readings, &mut |_, _| Ok(true))?;
        add(&mut tally, w);
        match serde_json::from_value::<BTreeMap<usize, Vec<f64>>>(tally.debias_state["prior"].clone()) {
            Ok(p) if !p.is_empty() => p,
            _ => {
                let prior = combine::pride_prior(planned, &readings);
                tally.debias_state = serde_json::json!({
                    "prior": prior,
                    "sample_rows": planned.pride_sample.iter().map(|&i| row_ids[i].clone()).collect::<Vec<_>>(),
                });
                prior
            }
        }
    } else {
        BTreeMap::new()
    };
    if config.debias == DebiasMode::Calibrate {
        let idx: Vec<usize> =
            (0..prompts.len()).filter(|&i| matches!(prompts[i].variant, Variant::ContentFree(..))).collect();
        let w = exec::exec(model, config, opts, prompts, &idx, shape, &is_done, &mut readings, &mut |_, _| Ok(true))?;
        add(&mut tally, w);
    }
    if config.debias == DebiasMode::Batch {
        return execute_batch(model, opts, planned, shape, config, done, tally, on_rows);
    }
    let priors = Priors { pride, ..Priors::default() };
    let finish = |ri: usize, readings: &HashMap<usize, Reading>| {
        (ri, combine::combine_row(ri, n_options(ri), planned, readings, config, &priors))
    };
    // 2. The rows, finishing one by one.
    let mut remaining: HashMap<usize, usize> = HashMap::new();
    let mut todo: Vec<usize> = Vec::new();
    for (pi, s) in prompts.iter().enumerate() {
        if matches!(s.variant, Variant::Real(_) | Variant::Code(..)) && !planned.pride_sample.contains(&s.row) {
            if !is_done(pi) {
                *remaining.entry(s.row).or_default() += 1;
            }
            todo.push(pi);
        }
    }
    // Rows whose prompts were all read in phase 1 (PriDe's sample) finish now.
    let rows = planned.row_orderings.len();
    let now: Vec<(usize, Combined)> =
        (0..rows).filter(|i| !done.contains(i) && !remaining.contains_key(i)).map(|ri| finish(ri, &readings)).collect();
    if !now.is_empty() && !on_rows(now, &tally)? {
        tally.work.stopped = true;
        return Ok(tally);
    }
    let before = tally.clone();
    let mut on_batch = |read: &[usize], readings: &HashMap<usize, Reading>| -> Result<bool> {
        let mut finished = Vec::new();
        for &pi in read {
            let ri = prompts[pi].row;
            if let Some(n) = remaining.get_mut(&ri) {
                *n -= 1;
                if *n == 0 {
                    remaining.remove(&ri);
                    finished.push(finish(ri, readings));
                }
            }
        }
        on_rows(finished, &before)
    };
    let w = exec::exec(model, config, opts, prompts, &todo, shape, &is_done, &mut readings, &mut on_batch)?;
    add(&mut tally, w);
    Ok(tally)
}

/// Batch calibration's phases: read every row's prompts (done rows' too: the prior is the mean
/// over all of them), estimate the prior per option count and rotation, then finish every row
/// not done. Stopping while reading finishes no row.
#[allow(clippy::too_many_arguments)]
fn execute_batch<F: Forward>(
    model: &F,
    opts: PassOptions,
    planned: &Planned,
    shape: Shape<'_>,
    config: &RunConfig,
    done: &HashSet<usize>,
    mut tally: Tally,
    on_rows: &mut OnRows<'_>,
) -> Result<Tally> {
    let prompts = &planned.prompts;
    let mut readings: HashMap<usize, Reading> = HashMap::new();
    let idx: Vec<usize> =
        (0..prompts.len()).filter(|&i| matches!(prompts[i].variant, Variant::Real(_) | Variant::Code(..))).collect();
    let before = tally.clone();
    let w = exec::exec(model, config, opts, prompts, &idx, shape, &|_| false, &mut readings, &mut |_, _| {
        on_rows(Vec::new(), &before)
    })?;
    tally.work.computed += w.computed;
    tally.work.unique += w.unique;
    tally.work.stopped |= w.stopped;
    if w.stopped {
        return Ok(tally);
    }
    let priors = Priors { batch: combine::batch_prior(planned, &readings), ..Priors::default() };
    tally.debias_state = serde_json::json!({ "prior": priors.batch });
    let rows = planned.row_orderings.len();
    let finished: Vec<(usize, Combined)> = (0..rows)
        .filter(|i| !done.contains(i))
        .map(|ri| {
            let n = planned.row_orderings[ri].first().map_or(0, |o| o.len());
            (ri, combine::combine_row(ri, n, planned, &readings, config, &priors))
        })
        .collect();
    if !on_rows(finished, &tally)? {
        tally.work.stopped = true;
    }
    Ok(tally)
}
