//! How many labels a person needs: the width of the corrected rate's 95 % interval against the
//! number of labels, for a uniform draw and for a draw by the judge's uncertainty, measured on a
//! result file whose gold stands in for the person. Each row of the run becomes a text the judge
//! scored on one yes/no question, "is the right answer `OPTION`?" (the judge's probability of that
//! option, its margin and order stability as it scored the row); the real review path
//! ([`crate::jobs::review`]: the draw's order, the inclusion probabilities, the report) is run as
//! a person labelling the first `n` texts of the queue would, `replicates` times with different
//! seeds. Reported per `n`: the mean half-width, how often the interval held the true share
//! (the gold share over all rows), the mean error; and the fewest labels whose mean half-width
//! reaches each target.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::formats::labels::{Draw, DrawBy, Labelled, Labels};
use crate::formats::results::ResultFile;
use crate::formats::rubric::{Criterion, OptionSpec, QuestionKind};
use crate::jobs::review::{self, ReportOptions};
use crate::jobs::score::{CriterionResult, OptionResult, TextResult};

/// What to measure.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CurveOptions {
    /// The option whose share is estimated; every row must offer it.
    pub option: String,
    /// Numbers of labels to try (each at most the number of rows).
    pub labels: Vec<usize>,
    /// Simulated people per point.
    pub replicates: usize,
    /// The uniform share of the uncertainty draw's weights.
    pub uniform_share: f64,
    /// Half-widths to report the labels needed for.
    pub targets: Vec<f64>,
}

/// One number of labels under one draw.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Point {
    pub labels: usize,
    pub mean_half_width: f64,
    /// Share of replicates whose 95 % interval held the true share.
    pub coverage: f64,
    /// Mean of (estimate − true share).
    pub mean_error: f64,
    /// The labels-only interval's mean half-width at the same labels.
    pub labels_only_mean_half_width: f64,
}

/// One draw's curve.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Curve {
    pub by: DrawBy,
    pub points: Vec<Point>,
    /// Per target half-width: the fewest labels of `labels` whose mean half-width reaches it,
    /// `None` when none does.
    pub labels_for: Vec<(f64, Option<usize>)>,
}

/// The measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LabelsCurve {
    pub texts: usize,
    pub option: String,
    /// The gold share of the option over all rows: what every estimate aims at.
    pub true_share: f64,
    /// The judge's mean probability of the option.
    pub judge_only_share: f64,
    pub replicates: usize,
    pub uniform_share: f64,
    pub curves: Vec<Curve>,
}

/// Turn a run's rows into the texts and labels of a one-question review.
fn as_review(file: &ResultFile, option: &str) -> Result<(Vec<TextResult>, Vec<Option<usize>>)> {
    let mut results = Vec::with_capacity(file.rows.len());
    let mut gold = Vec::with_capacity(file.rows.len());
    for (i, row) in file.rows.iter().enumerate() {
        let j = row.option_ids.iter().position(|o| o == option).ok_or_else(|| {
            Error::Config(format!(
                "row {} ({}) has no option `{option}` (its options: {}); choose an option every row has",
                i,
                row.id,
                row.option_ids.join(", ")
            ))
        })?;
        let probs = row.probs.clone().unwrap_or_else(|| vec![0.0; row.option_ids.len()]);
        let p = probs[j];
        let mut sorted = probs.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let margin = sorted[0] - sorted.get(1).copied().unwrap_or(0.0);
        let masses: Vec<f64> = row.orderings.iter().filter_map(|o| o.letter_mass).collect();
        let letter_mass = (!masses.is_empty()).then(|| masses.iter().sum::<f64>() / masses.len() as f64);
        let chosen = row.predicted.map(|k| if k == j { "yes" } else { "no" }.to_string());
        results.push(TextResult {
            index: i,
            id: Some(row.id.clone()),
            criteria: vec![CriterionResult {
                criterion: option.to_string(),
                kind: QuestionKind::Noul,
                options: vec![
                    OptionResult { id: "yes".into(), description: "Yes".into(), probability: p },
                    OptionResult { id: "no".into(), description: "No".into(), probability: 1.0 - p },
                ],
                probability: sorted[0],
                abstained: None,
                expected_level: None,
                margin,
                close: margin < crate::jobs::score::CLOSE_MARGIN,
                chosen,
                order_unstable: row.order_unstable,
                letter_mass,
                judges: None,
                disagree: None,
            }],
            truncated_tokens: None,
        });
        gold.push(Some(if row.gold == j { 0 } else { 1 }));
    }
    Ok((results, gold))
}

/// Measure the curves on a result file.
pub fn measure(file: &ResultFile, opts: &CurveOptions) -> Result<LabelsCurve> {
    let (results, gold) = as_review(file, &opts.option)?;
    let n = results.len();
    if n < 3 {
        return Err(Error::Config(format!("the result file has {n} rows; a curve needs more")));
    }
    let criterion = Criterion {
        name: opts.option.clone(),
        kind: QuestionKind::Noul,
        instructions: format!("Is the right answer `{}`?", opts.option),
        rule: None,
        options: vec![
            OptionSpec { id: "yes".into(), description: "Yes".into() },
            OptionSpec { id: "no".into(), description: "No".into() },
        ],
        gold: None,
    };
    let true_share = gold.iter().filter(|g| **g == Some(0)).count() as f64 / n as f64;
    let judge_only_share = results.iter().map(|r| r.criteria[0].options[0].probability).sum::<f64>() / n as f64;
    let report_opts = ReportOptions { resamples: 0, ..ReportOptions::default() };
    let mut curves = Vec::new();
    for by in [DrawBy::Uniform, DrawBy::Uncertainty] {
        let mut points = Vec::new();
        for &m in opts.labels.iter().filter(|&&m| m >= 2 && m <= n) {
            let (mut width, mut lo_width, mut covered, mut error, mut count) = (0.0, 0.0, 0usize, 0.0, 0usize);
            for r in 0..opts.replicates {
                let draw = Draw { by, seed: r as u64 + 1, uniform_share: opts.uniform_share };
                let queue = review::order(&results, &draw);
                let mut labels = Labels::new(vec![criterion.clone()], draw);
                for q in queue.iter().take(m) {
                    labels.texts.push(Labelled {
                        index: q.index,
                        id: None,
                        text: String::new(),
                        answers: vec![gold[q.index]],
                        skipped: false,
                        pi: None,
                    });
                }
                review::assign_inclusion(&mut labels, &results);
                let report = review::report(&results, &labels, &report_opts)?;
                let rate = &report.criteria[0].rates[0];
                let (Some(c), Some(l)) = (&rate.corrected, &rate.labels_only) else { continue };
                width += (c.hi - c.lo) / 2.0;
                lo_width += (l.hi - l.lo) / 2.0;
                covered += usize::from(c.lo <= true_share && true_share <= c.hi);
                error += c.share - true_share;
                count += 1;
            }
            if count == 0 {
                continue;
            }
            let k = count as f64;
            points.push(Point {
                labels: m,
                mean_half_width: width / k,
                coverage: covered as f64 / k,
                mean_error: error / k,
                labels_only_mean_half_width: lo_width / k,
            });
        }
        let labels_for = opts
            .targets
            .iter()
            .map(|&t| (t, points.iter().find(|p| p.mean_half_width <= t).map(|p| p.labels)))
            .collect();
        curves.push(Curve { by, points, labels_for });
    }
    Ok(LabelsCurve {
        texts: n,
        option: opts.option.clone(),
        true_share,
        judge_only_share,
        replicates: opts.replicates,
        uniform_share: opts.uniform_share,
        curves,
    })
}
