//! A jury: several small judges' result files on one eval set pooled into one answer per row.
//! Several judges are often more reliable than one (Verga et al. 2024, "Replacing Judges with
//! Juries"); the tools that combine graders take a majority vote, which throws away what the
//! readout has: each judge's probabilities. Here the jury's probability of an option is a linear
//! pool `Σ_j w_j q_j`, where `q_j` is judge j's probability (with fitted weights, after a
//! temperature fitted for that judge).
//!
//! Conventions: equal weights pool the runs' probabilities as they are, `1/judges` each. Fitted
//! weights are cross-fitted on [`crate::analysis::calibrate::FOLDS`] folds by group id (the
//! folds `readout calibrate` deals): for each fold, every judge's temperature is fitted on the
//! other folds' rows (the NLL of its gold option, as `calibrate` fits it), then the weights
//! maximise the pool's log-likelihood of gold on those rows (EM for mixture weights: the
//! log-likelihood is concave in the weights, so it climbs to the optimum), and the fold's rows
//! are pooled with that fit. The weights and temperatures a file reports as the judges' own are
//! fitted on all rows. A row where the judges' answers are not all the same is `disagree`; with
//! `abstain_on_disagreement` the jury gives no answer there.
//!
//! The judges' runs must be readout runs, complete, on the same eval set (sha256), with the same
//! rows and options; a mismatch names the judge's file and the row.

use crate::agreement::{krippendorff_alpha, Scale};
use crate::analysis::calibrate::{fit_temperature, folds_by_group};
use crate::config::{apply_temperature, Mode};
use crate::error::{Error, Result};
use crate::formats::jury::{
    JudgeAgreement, JudgeAnswer, JudgeRecord, JuryFile, JuryRow, JuryWeights, VersusBest, WeightsRecord, SCHEMA,
    SCHEMA_VERSION,
};
use crate::formats::results::Status;
use crate::metrics::{self, ScoredRow, NLL_FLOOR};
use std::collections::{BTreeMap, HashMap};

/// How a jury is pooled and reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JuryOptions {
    pub weights: JuryWeights,
    /// Folds by group of the fitted weights' cross-fit.
    pub folds: usize,
    /// Seed of the folds' deal.
    pub seed: u64,
    /// Bootstrap resamples of the intervals, and their seed.
    pub resamples: usize,
    pub bootstrap_seed: u64,
    /// Give no answer where the judges disagree.
    pub abstain_on_disagreement: bool,
}

impl Default for JuryOptions {
    fn default() -> Self {
        JuryOptions {
            weights: JuryWeights::Equal,
            folds: crate::analysis::calibrate::FOLDS,
            seed: 0,
            resamples: 1000,
            bootstrap_seed: 0,
            abstain_on_disagreement: false,
        }
    }
}

pub use crate::formats::jury::JudgeResult as Judge;

/// The weights on the simplex maximising `Σ_i ln Σ_j w_j g_ij`, where `gold[i][j]` is judge j's
/// probability of row i's gold option (floored at [`NLL_FLOOR`]). The log-likelihood is concave
/// in the weights; it is climbed a pair of judges at a time (the mass of the two moved to the
/// best split between them, found by bisection on the derivative, which falls along the move),
/// from equal weights, until a sweep over the pairs moves no weight by more than 1e-12. Unlike
/// EM, which creeps towards a weight of 0 step by step, a pair's move reaches the simplex's edge
/// exactly.
pub fn fit_weights(gold: &[Vec<f64>]) -> Vec<f64> {
    let judges = gold.first().map_or(0, Vec::len);
    let mut w = vec![1.0 / judges.max(1) as f64; judges];
    if gold.is_empty() || judges < 2 {
        return w;
    }
    let g: Vec<Vec<f64>> = gold.iter().map(|row| row.iter().map(|p| p.max(NLL_FLOOR)).collect()).collect();
    for _ in 0..1000 {
        let mut moved = 0f64;
        for a in 0..judges {
            for b in a + 1..judges {
                let m = w[a] + w[b];
                if m <= 0.0 {
                    continue;
                }
                // The pool of row i with x on a and m − x on b; the derivative of the
                // log-likelihood in x, which falls as x grows.
                let rest: Vec<f64> = g
                    .iter()
                    .map(|r| r.iter().zip(&w).map(|(g, w)| g * w).sum::<f64>() - r[a] * w[a] - r[b] * w[b])
                    .collect();
                let slope = |x: f64| -> f64 {
                    g.iter().zip(&rest).map(|(r, c)| (r[a] - r[b]) / (c + x * r[a] + (m - x) * r[b])).sum()
                };
                let x = if slope(0.0) <= 0.0 {
                    0.0
                } else if slope(m) >= 0.0 {
                    m
                } else {
                    let (mut lo, mut hi) = (0.0, m);
                    for _ in 0..200 {
                        let mid = 0.5 * (lo + hi);
                        if slope(mid) > 0.0 {
                            lo = mid;
                        } else {
                            hi = mid;
                        }
                        if hi - lo <= f64::EPSILON * m {
                            break;
                        }
                    }
                    0.5 * (lo + hi)
                };
                moved = moved.max((x - w[a]).abs());
                (w[a], w[b]) = (x, m - x);
            }
        }
        if moved <= 1e-12 {
            break;
        }
    }
    w
}

/// `Σ_j w_j p_j`, option by option.
pub fn pool(probs: &[&[f64]], weights: &[f64]) -> Vec<f64> {
    let n = probs.first().map_or(0, |p| p.len());
    (0..n).map(|o| probs.iter().zip(weights).map(|(p, w)| w * p[o]).sum()).collect()
}

/// The index of the largest value (the first of equals).
fn argmax(p: &[f64]) -> usize {
    p.iter().enumerate().fold(0, |best, (i, &x)| if x > p[best] { i } else { best })
}

/// Every judge's rows in the first judge's order, checked to be the same rows and options.
fn aligned(judges: &[Judge]) -> Result<Vec<Vec<ScoredRow>>> {
    let [first, _, ..] = judges else {
        return Err(Error::Config("a jury needs at least two result files; one is a judge, not a jury".into()));
    };
    let bad = |j: &Judge, reason: String| Error::BadFile { path: j.path.to_path_buf(), reason };
    for j in judges {
        let r = j.result;
        if r.config.mode != Mode::Readout {
            return Err(bad(j, "was run with --mode generate: its answers have no probabilities to pool".into()));
        }
        if r.status == Status::Partial {
            return Err(bad(j, "is a partial run; complete it with `readout run --resume` first".into()));
        }
        if r.eval_set.sha256 != first.result.eval_set.sha256 {
            return Err(bad(
                j,
                format!(
                    "is a run on {} (sha256 {}), and {} on {} (sha256 {}): a jury's judges read the same eval set",
                    r.eval_set.name,
                    short(&r.eval_set.sha256),
                    first.path.display(),
                    first.result.eval_set.name,
                    short(&first.result.eval_set.sha256)
                ),
            ));
        }
    }
    let base: Vec<ScoredRow> = first.result.scored_rows();
    let mut out = Vec::with_capacity(judges.len());
    for j in judges {
        let rows = j.result.scored_rows();
        let mut by_id: HashMap<&str, &ScoredRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
        let mut mine = Vec::with_capacity(base.len());
        for b in &base {
            let r = by_id.remove(b.id.as_str()).ok_or_else(|| {
                bad(
                    j,
                    format!("has no row {} (row of {}): run every judge on the same rows", b.id, first.path.display()),
                )
            })?;
            if r.option_ids != b.option_ids {
                return Err(bad(
                    j,
                    format!(
                        "row {}: options {:?}, and {} has {:?}: a jury's judges answer the same options",
                        b.id,
                        r.option_ids,
                        first.path.display(),
                        b.option_ids
                    ),
                ));
            }
            if r.probs.as_ref().is_none_or(|p| p.len() != b.option_ids.len()) {
                return Err(bad(j, format!("row {}: no probability for each option", b.id)));
            }
            mine.push(r.clone());
        }
        if let Some(extra) = by_id.keys().next() {
            return Err(bad(
                j,
                format!("has row {extra}, which {} lacks: run every judge on the same rows", first.path.display()),
            ));
        }
        out.push(mine);
    }
    Ok(out)
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// Judge j's probabilities of row i, under temperature `t`.
fn probs(rows: &[Vec<ScoredRow>], j: usize, i: usize, t: f64) -> Vec<f64> {
    let p = rows[j][i].probs.as_deref().unwrap_or_default();
    if t == 1.0 {
        p.to_vec()
    } else {
        apply_temperature(p, t)
    }
}

/// Temperatures and weights fitted on the rows `train`.
fn fit_on(rows: &[Vec<ScoredRow>], train: &[usize]) -> (Vec<f64>, Vec<f64>) {
    let temps: Vec<f64> = (0..rows.len())
        .map(|j| {
            let pairs: Vec<(&[f64], usize)> =
                train.iter().map(|&i| (rows[j][i].probs.as_deref().unwrap_or_default(), rows[j][i].gold)).collect();
            fit_temperature(&pairs)
        })
        .collect();
    let gold: Vec<Vec<f64>> = train
        .iter()
        .map(|&i| (0..rows.len()).map(|j| probs(rows, j, i, temps[j])[rows[j][i].gold]).collect())
        .collect();
    (temps, fit_weights(&gold))
}

/// Pool `judges` into a jury file.
pub fn combine(judges: &[Judge], opts: JuryOptions) -> Result<JuryFile> {
    combine_weighted(judges, opts, None)
}

/// [`combine`], or with [`JuryWeights::Given`] the `given` weights (a judges file's, one per
/// judge; scaled to sum to 1): the runs' probabilities pooled with them as they are. `given` is
/// read only for that method.
pub fn combine_weighted(judges: &[Judge], opts: JuryOptions, given: Option<&[f64]>) -> Result<JuryFile> {
    if opts.weights == JuryWeights::Given && given.is_none() {
        return Err(Error::Config(
            "given weights are a judges file's: run the jury with `readout run --judges FILE`, or use equal or fitted weights"
                .into(),
        ));
    }
    let rows = aligned(judges)?;
    let n = rows[0].len();
    let k = judges.len();
    let equal = match given {
        Some(w) if opts.weights == JuryWeights::Given => {
            let sum: f64 = w.iter().sum();
            if w.len() != k
                || sum.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
                || w.iter().any(|x| !(x.is_finite() && *x >= 0.0))
            {
                return Err(Error::Config(format!(
                    "{} weights for {k} judges (summing to {sum}): give each judge a weight of 0 or more, not all 0",
                    w.len()
                )));
            }
            w.iter().map(|x| x / sum).collect()
        }
        _ => vec![1.0 / k as f64; k],
    };
    // Each row's temperatures and weights: equal, or the fit made without its fold.
    let (row_fit, weights_record, all_fit): (Vec<usize>, WeightsRecord, (Vec<f64>, Vec<f64>)) = match opts.weights {
        JuryWeights::Equal | JuryWeights::Given => (
            vec![0; n],
            WeightsRecord {
                method: opts.weights,
                folds: 0,
                seed: opts.seed,
                fold_weights: Vec::new(),
                fold_temperatures: Vec::new(),
            },
            (vec![1.0; k], equal.clone()),
        ),
        JuryWeights::Fitted => {
            let groups = rows[0].iter().map(|r| r.group_id.as_str()).collect::<std::collections::HashSet<_>>().len();
            if opts.folds < 2 || groups < opts.folds {
                return Err(Error::Config(format!(
                    "fitted weights are checked on {} folds by group, and the rows have {groups} groups; use --weights equal or fewer --folds (at least 2)",
                    opts.folds
                )));
            }
            let fold = folds_by_group(&rows[0], opts.folds, opts.seed);
            let fits: Vec<(Vec<f64>, Vec<f64>)> =
                (0..opts.folds).map(|f| fit_on(&rows, &(0..n).filter(|&i| fold[i] != f).collect::<Vec<_>>())).collect();
            let record = WeightsRecord {
                method: JuryWeights::Fitted,
                folds: opts.folds,
                seed: opts.seed,
                fold_weights: fits.iter().map(|f| f.1.clone()).collect(),
                fold_temperatures: fits.iter().map(|f| f.0.clone()).collect(),
            };
            let all = fit_on(&rows, &(0..n).collect::<Vec<_>>());
            (fold, record, all)
        }
    };
    let fit_of = |i: usize| -> (Vec<f64>, Vec<f64>) {
        match opts.weights {
            JuryWeights::Equal | JuryWeights::Given => (vec![1.0; k], equal.clone()),
            JuryWeights::Fitted => {
                let f = row_fit[i];
                (weights_record.fold_temperatures[f].clone(), weights_record.fold_weights[f].clone())
            }
        }
    };
    let mut jury_rows = Vec::with_capacity(n);
    for i in 0..n {
        let (temps, w) = fit_of(i);
        let answers: Vec<JudgeAnswer> = (0..k)
            .map(|j| {
                let p = probs(&rows, j, i, temps[j]);
                JudgeAnswer { predicted: argmax(&p), probs: p }
            })
            .collect();
        let pooled = pool(&answers.iter().map(|a| a.probs.as_slice()).collect::<Vec<_>>(), &w);
        let disagree = answers.iter().any(|a| a.predicted != answers[0].predicted);
        let predicted = (!(disagree && opts.abstain_on_disagreement)).then(|| argmax(&pooled));
        let b = &rows[0][i];
        jury_rows.push(JuryRow {
            id: b.id.clone(),
            family: b.family.clone(),
            group_id: b.group_id.clone(),
            option_ids: b.option_ids.clone(),
            gold: b.gold,
            correct: predicted == Some(b.gold),
            judges: answers,
            probs: pooled,
            predicted,
            disagree,
        });
    }
    let answered = jury_rows.iter().filter(|r| r.predicted.is_some()).count();
    let scored: Vec<ScoredRow> = jury_rows.iter().map(JuryRow::scored).collect();
    let summary = metrics::summarize(&scored, opts.resamples, opts.bootstrap_seed);
    let summaries: Vec<_> = rows.iter().map(|r| metrics::summarize(r, opts.resamples, opts.bootstrap_seed)).collect();
    let best = (0..k).fold(0, |b, j| {
        if summaries[j].mean_family_balanced_accuracy > summaries[b].mean_family_balanced_accuracy {
            j
        } else {
            b
        }
    });
    let comparison = metrics::compare_with(&rows[best], &scored, opts.resamples, opts.bootstrap_seed);
    let judges_out = judges
        .iter()
        .zip(summaries)
        .enumerate()
        .map(|(j, (jd, summary))| {
            let r = jd.result;
            JudgeRecord {
                file: jd.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                sha256: jd.sha256.clone(),
                model: r.model.display_name(),
                model_file: r.model.file.clone(),
                model_sha256: r.model.sha256.clone(),
                chat_template: r.model.chat_template.clone(),
                debias: r.config.debias,
                shots: r.config.shots,
                run_temperature: r.config.calibration.as_ref().map(|c| c.temperature),
                temperature: (opts.weights == JuryWeights::Fitted).then(|| all_fit.0[j]),
                weight: all_fit.1[j],
                peak_rss_bytes: r.timing.peak_rss_bytes,
                summary,
            }
        })
        .collect();
    Ok(JuryFile {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        created: crate::formats::results::now_utc(),
        program_version: env!("CARGO_PKG_VERSION").into(),
        eval_set: judges[0].result.eval_set.name.clone(),
        eval_set_sha256: judges[0].result.eval_set.sha256.clone(),
        judges: judges_out,
        weights: weights_record,
        abstain_on_disagreement: opts.abstain_on_disagreement,
        answered,
        answered_accuracy: (answered > 0)
            .then(|| jury_rows.iter().filter(|r| r.correct).count() as f64 / answered as f64),
        summary,
        versus_best: VersusBest { judge: best, comparison },
        agreement: agreement(&jury_rows),
        rows: jury_rows,
    })
}

/// Krippendorff's α (nominal) of the judges' answers per family, then over all rows.
fn agreement(rows: &[JuryRow]) -> Vec<JudgeAgreement> {
    let mut by_family: BTreeMap<&str, Vec<&JuryRow>> = BTreeMap::new();
    for r in rows {
        by_family.entry(&r.family).or_default().push(r);
    }
    let one = |criterion: &str, rs: &[&JuryRow]| {
        let k = rs.iter().map(|r| r.option_ids.len()).max().unwrap_or(0);
        let units: Vec<Vec<Option<usize>>> =
            rs.iter().map(|r| r.judges.iter().map(|a| Some(a.predicted)).collect()).collect();
        JudgeAgreement {
            criterion: criterion.into(),
            rows: rs.len(),
            disagreements: rs.iter().filter(|r| r.disagree).count(),
            alpha: krippendorff_alpha(&units, k, Scale::Nominal),
        }
    };
    let mut out: Vec<JudgeAgreement> = by_family.iter().map(|(f, rs)| one(f, rs)).collect();
    out.push(one("all", &rows.iter().collect::<Vec<_>>()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_is_the_weighted_mean_of_the_judges() {
        let (a, b) = ([0.8, 0.2], [0.4, 0.6]);
        let p = pool(&[&a, &b], &[0.75, 0.25]);
        // 0.75·0.8 + 0.25·0.4 = 0.7; 0.75·0.2 + 0.25·0.6 = 0.3.
        assert!((p[0] - 0.7).abs() < 1e-15 && (p[1] - 0.3).abs() < 1e-15, "{p:?}");
    }

    #[test]
    fn fitted_weights_maximise_the_pool_s_likelihood() {
        // Two rows; judge 0 gives gold 1.0 then 0, judge 1 gives 0.5 and 0.5. With w on judge 0
        // the log-likelihood is ln((1+w)/2) + ln((1−w)/2), whose derivative 1/(1+w) − 1/(1−w)
        // is negative for every w > 0: the best is w = 0, on the simplex's edge.
        let w = fit_weights(&[vec![1.0, 0.5], vec![0.0, 0.5]]);
        assert!(w[0] < 1e-6 && (w[1] - 1.0).abs() < 1e-6, "{w:?}");
        // Rows where judge 0 is right more often: ln((1+w)/2)·2 + ln((1−w)/2) peaks where
        // 2/(1+w) = 1/(1−w), w = 1/3.
        let w = fit_weights(&[vec![1.0, 0.5], vec![1.0, 0.5], vec![0.0, 0.5]]);
        assert!((w[0] - 1.0 / 3.0).abs() < 1e-6 && (w.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{w:?}");
        // A judge that is always surer of gold takes all the weight.
        let w = fit_weights(&[vec![0.9, 0.6], vec![0.8, 0.7]]);
        assert!(w[0] > 1.0 - 1e-6, "{w:?}");
    }

    #[test]
    fn argmax_takes_the_first_of_equals() {
        assert_eq!(argmax(&[0.2, 0.5, 0.5]), 1);
        assert_eq!(argmax(&[0.6, 0.4]), 0);
    }
}
