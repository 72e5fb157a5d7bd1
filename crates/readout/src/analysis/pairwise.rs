//! The standings of the systems a pairwise eval set compares (`formats::pairwise`), from a run's
//! result file: each system's win rate and Bradley–Terry score by the judge's verdicts and by
//! the gold ones, and how often the judge's two orders disagreed.

use crate::error::{Error, Result};
use crate::formats::pairwise::{FAMILY, TIE};
use crate::formats::results::ResultFile;
use crate::pairwise::{standings, Comparison, Standing, Verdict};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One system, by the judge and by gold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SystemStanding {
    pub system: String,
    pub judge: Standing,
    pub gold: Standing,
}

/// The pairwise rows of a run, summed up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PairwiseReport {
    pub pairs: usize,
    /// Verdicts equal to gold.
    pub correct: usize,
    /// Pairs whose orderings gave different verdicts (`None` where one ordering was read).
    pub order_unstable: Option<usize>,
    /// Rows the judge gave no verdict (generate mode's unreadable replies).
    pub invalid: usize,
    pub resamples: usize,
    pub seed: u64,
    /// Best by the judge's Bradley–Terry score first.
    pub systems: Vec<SystemStanding>,
}

/// Whether `result` holds pairwise rows (an eval set made by `readout pairwise evalset`).
pub fn is_pairwise(result: &ResultFile) -> bool {
    result.rows.iter().any(|r| r.family == FAMILY)
}

/// The standings of a result file's pairwise rows (`path` names it in refusals).
pub fn report(result: &ResultFile, path: &Path, resamples: usize, seed: u64) -> Result<PairwiseReport> {
    let rows: Vec<_> = result.scored_rows().into_iter().filter(|r| r.family == FAMILY).collect();
    if rows.is_empty() {
        return Err(Error::BadFile {
            path: path.to_path_buf(),
            reason: format!("has no `{FAMILY}` rows; run an eval set made by `readout pairwise evalset`"),
        });
    }
    let mut systems: Vec<String> = Vec::new();
    for r in &rows {
        for id in r.option_ids.iter().take(2) {
            if !systems.contains(id) {
                systems.push(id.clone());
            }
        }
    }
    systems.sort();
    let index = |id: &str| systems.iter().position(|s| s == id).unwrap_or(0);
    let verdict = |r: &crate::metrics::ScoredRow, choice: usize| match r.option_ids.get(choice).map(String::as_str) {
        Some(TIE) => Verdict::Tie,
        _ if choice == 0 => Verdict::A,
        _ => Verdict::B,
    };
    let (mut judge, mut gold) = (Vec::new(), Vec::new());
    let mut invalid = 0;
    for r in &rows {
        let (a, b) = (index(&r.option_ids[0]), index(&r.option_ids[1]));
        gold.push(Comparison { a, b, verdict: verdict(r, r.gold), group: r.group_id.clone() });
        match r.predicted.filter(|&p| p < r.option_ids.len()) {
            Some(p) => judge.push(Comparison { a, b, verdict: verdict(r, p), group: r.group_id.clone() }),
            None => invalid += 1,
        }
    }
    let (by_judge, by_gold) =
        (standings(systems.len(), &judge, resamples, seed), standings(systems.len(), &gold, resamples, seed));
    let mut out: Vec<SystemStanding> = systems
        .into_iter()
        .zip(by_judge.into_iter().zip(by_gold))
        .map(|(system, (judge, gold))| SystemStanding { system, judge, gold })
        .collect();
    out.sort_by(|x, y| y.judge.score.estimate.total_cmp(&x.judge.score.estimate));
    let checked: Vec<bool> = rows.iter().filter_map(|r| r.order_unstable).collect();
    Ok(PairwiseReport {
        pairs: rows.len(),
        correct: rows.iter().filter(|r| r.correct()).count(),
        order_unstable: (!checked.is_empty()).then(|| checked.iter().filter(|&&u| u).count()),
        invalid,
        resamples,
        seed,
        systems: out,
    })
}
