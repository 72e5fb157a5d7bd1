//! Metrics: pure functions from scored rows to the figures a result file publishes (accuracy,
//! balanced accuracy, order consistency, calibration, a group bootstrap interval) and to the
//! paired comparison of two runs (exact McNemar). They live apart from the run pipeline so that
//! they can be checked by hand on tiny inputs and recomputed from any result file; the model is
//! never called here.
//!
//! Conventions every figure follows:
//! - A row is one (item, criterion). It is *invalid* when `predicted` is `None` (a generate
//!   reply with no valid letter) or out of range; an invalid row counts as wrong everywhere.
//! - Confidence is the top combined probability of a valid row. An invalid row enters ECE with
//!   confidence 0 and accuracy 0, so it falls in the first bin and adds no gap of its own; it
//!   still counts in N, which weighs every bin.
//! - Brier and NLL read `probs`; a row without `probs` is treated as all-zero probabilities:
//!   Brier 1 and NLL `-ln(1e-12)` (about 27.6).
//! - Balanced accuracy is keyed by the gold option's id, not its index.
//! - An empty row set gives 0 for every rate (it never occurs in a run: an eval set is never empty).
//! - Selective answering ([`selective`]): answer a row only when its confidence is at least a
//!   threshold. Rows are taken from the most confident down; tied confidences enter together (a
//!   threshold cannot split them). Risk is the error rate among the rows answered (an invalid
//!   row, confidence 0, is answered only at threshold 0 and is an error).
//! - Chance ([`chance`]) is what a judge that picks an option uniformly at random scores on
//!   balanced accuracy, in expectation: each gold class's recall is then the mean of `1/k` over
//!   its rows (`k` options), and the classes and families are averaged as the figure averages them.
//!   With every row at `k` options it is `1/k`.
//! - Position bias ([`position_bias`]) reads each ordering's own letter probabilities, before any
//!   debiasing: the letter the model chose under that ordering, against the letter the gold
//!   option sat at.

use crate::math::{mix64, SplitMix64};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Number of equal-width reliability bins on the top probability.
pub const BINS: usize = 10;
/// Probability floor for NLL.
pub const NLL_FLOOR: f64 = 1e-12;
/// Bootstrap resamples a run takes unless told otherwise.
pub const DEFAULT_RESAMPLES: usize = 1000;
/// Bootstrap seed a run takes unless told otherwise.
pub const DEFAULT_SEED: u64 = 0;
/// Coverage of the bootstrap interval.
pub const INTERVAL_LEVEL: f64 = 0.95;
/// Name of the confusion-matrix column counting invalid replies.
pub const INVALID: &str = "invalid";
/// Most points a result file keeps of the risk–coverage curve.
pub const RISK_COVERAGE_POINTS: usize = 101;
/// The error rates the coverage is reported at (1 %, 5 %, 10 %).
pub const SELECTIVE_RISKS: [f64; 3] = [0.01, 0.05, 0.10];

/// One ordering of a row as the position-bias figures see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LetterPick {
    /// The letter slot the model chose under this ordering (the argmax of its own letter
    /// probabilities); `None` for an invalid generated reply.
    pub chosen: Option<usize>,
    /// The slot the gold option sat at.
    pub gold: usize,
}

/// One scored (item, criterion): what the metrics need from a run's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredRow {
    pub id: String,
    pub family: String,
    pub group_id: String,
    /// Index into `option_ids` of the right answer.
    pub gold: usize,
    pub option_ids: Vec<String>,
    /// Combined probabilities by option index; `None` for an invalid generate reply.
    pub probs: Option<Vec<f64>>,
    /// Predicted option index; `None` = invalid.
    pub predicted: Option<usize>,
    /// Whether the prediction changed between orderings; `None` = not checked (one ordering).
    pub order_unstable: Option<bool>,
    /// Each scored ordering's chosen and gold letter (empty when not known).
    #[serde(default)]
    pub letter_picks: Vec<LetterPick>,
}

impl ScoredRow {
    /// The prediction names an option.
    pub fn is_valid(&self) -> bool {
        self.predicted.is_some_and(|p| p < self.option_ids.len())
    }

    pub fn correct(&self) -> bool {
        self.is_valid() && self.predicted == Some(self.gold)
    }

    /// Top combined probability of a valid row; 0 for an invalid one.
    pub fn confidence(&self) -> f64 {
        match (&self.probs, self.is_valid()) {
            (Some(p), true) => p.iter().copied().fold(0.0, f64::max),
            _ => 0.0,
        }
    }

    /// The gold option's id (`#i` if the index is out of range, which a run never produces).
    pub fn gold_id(&self) -> String {
        self.option_ids.get(self.gold).cloned().unwrap_or_else(|| format!("#{}", self.gold))
    }

    /// Sum over options of `(p_i - y_i)^2`; 1 without probabilities.
    pub fn brier(&self) -> f64 {
        let Some(p) = &self.probs else { return 1.0 };
        let mut s: f64 =
            p.iter().enumerate().map(|(i, &v)| if i == self.gold { (v - 1.0).powi(2) } else { v * v }).sum();
        if self.gold >= p.len() {
            s += 1.0;
        }
        s
    }

    /// `-ln(max(p_gold, 1e-12))`.
    pub fn nll(&self) -> f64 {
        let p = self.probs.as_ref().and_then(|p| p.get(self.gold).copied()).unwrap_or(0.0);
        -(if p.is_nan() { NLL_FLOOR } else { p.max(NLL_FLOOR) }).ln()
    }
}

/// One reliability bin `[lo, hi)` (the last is `[0.9, 1.0]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Bin {
    pub lo: f64,
    pub hi: f64,
    pub count: usize,
    /// 0 for an empty bin.
    pub mean_confidence: f64,
    /// 0 for an empty bin.
    pub accuracy: f64,
}

/// Gold (rows) × predicted (columns) counts. Rows follow `labels`; columns follow `labels`, then
/// one more column named [`INVALID`] when any row was invalid (each row of `counts` is then one
/// longer than `labels`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Confusion {
    /// Option ids in order of first appearance in the rows.
    pub labels: Vec<String>,
    pub counts: Vec<Vec<usize>>,
}

/// The figures for one set of rows (a family, or all rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Metrics {
    pub rows: usize,
    pub accuracy: f64,
    pub balanced_accuracy: f64,
    pub invalid: usize,
    /// Share of checked rows whose prediction agrees across orderings; `None` if none was checked.
    pub order_consistency: Option<f64>,
    /// Number of order-unstable rows; `None` if none was checked.
    pub order_unstable: Option<usize>,
    pub ece: f64,
    pub brier: f64,
    pub nll: f64,
    pub reliability: Vec<Bin>,
    pub confusion: Confusion,
    /// Balanced accuracy of uniform random guessing on these rows ([`chance`]); absent in files
    /// written before it (filled on load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub chance: Option<f64>,
}

/// A bootstrap percentile interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Interval {
    pub level: f64,
    pub lo: f64,
    pub hi: f64,
    pub resamples: usize,
    pub seed: u64,
}

/// One point of the risk–coverage curve: answering only the rows whose confidence is at least
/// `threshold` answers `coverage` of them, and `risk` of those answered are wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RiskCoveragePoint {
    pub threshold: f64,
    pub coverage: f64,
    pub risk: f64,
}

/// The most a judge can answer at an error rate of at most `max_risk`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CoverageAtRisk {
    pub max_risk: f64,
    /// Largest share of rows answered with risk ≤ `max_risk`; null when no threshold reaches it.
    pub coverage: Option<f64>,
    /// The confidence threshold that gives it (`score --abstain-below` this value); null likewise.
    pub threshold: Option<f64>,
}

/// Selective answering: the risk–coverage curve and the coverage at [`SELECTIVE_RISKS`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Selective {
    /// From the most confident threshold (smallest coverage) to all rows answered; at most
    /// [`RISK_COVERAGE_POINTS`] points, evenly spaced among the distinct thresholds, the first
    /// and last always kept.
    pub curve: Vec<RiskCoveragePoint>,
    /// Computed on every threshold, not on the kept points.
    pub coverage_at_risk: Vec<CoverageAtRisk>,
}

/// How often one letter slot was chosen and how often the gold option sat there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LetterBias {
    pub letter: String,
    pub chosen: usize,
    pub gold: usize,
    /// `chosen` over the readings with a valid choice (0 when there are none).
    pub chosen_share: f64,
    /// `gold` over every reading (0 when there are none).
    pub gold_share: f64,
}

/// Accuracy of a subset of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SubsetAccuracy {
    pub rows: usize,
    pub accuracy: f64,
}

/// Which letters the model favours, and what order flips say about correctness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PositionBias {
    /// Per letter (A, B, …), over every scored ordering of every row.
    pub letters: Vec<LetterBias>,
    /// Orderings counted (every scored ordering of every row).
    pub readings: usize,
    /// Rows whose prediction agreed across orderings; null when none (or none was checked).
    pub stable: Option<SubsetAccuracy>,
    /// Order-unstable rows; null when none (or none was checked).
    pub unstable: Option<SubsetAccuracy>,
}

/// Everything a run reports about its rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Summary {
    pub overall: Metrics,
    pub families: BTreeMap<String, Metrics>,
    /// Mean over families of their balanced accuracy.
    pub mean_family_balanced_accuracy: f64,
    /// Group bootstrap interval of `mean_family_balanced_accuracy`.
    pub bootstrap: Interval,
    /// `mean_family_balanced_accuracy` of uniform random guessing (the mean over families of
    /// their [`chance`]); absent in files written before it (filled on load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub chance: Option<f64>,
    /// Risk–coverage of all rows (absent in files written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub selective: Option<Selective>,
    /// Letter preference and order stability of all rows (absent in files written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub position_bias: Option<PositionBias>,
    /// Agreement of the judge with gold per criterion ([`agreement_by_criterion`]; absent in
    /// files written before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(as = "Option<Vec<CriterionAgreement>>", optional))]
    pub agreement: Vec<CriterionAgreement>,
}

/// Agreement on one criterion of a run: the judge against gold ([`summarize`]), or one run
/// against another ([`compare_with`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CriterionAgreement {
    /// The criterion's name (`item/criterion` rows), or empty for one-criterion items.
    pub criterion: String,
    /// Its options: the categories of the confusion matrix, in this order.
    pub option_ids: Vec<String>,
    pub agreement: crate::agreement::Agreement,
    /// The ids of the rows where the two differ (`agreement.disagreements`, as row ids).
    pub disagreements: Vec<String>,
}

fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

fn mean(sum: f64, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// Reliability bin of a confidence: `floor(10 c)`, with 1.0 in the last bin.
fn bin_of(confidence: f64) -> usize {
    if confidence.is_nan() || confidence <= 0.0 {
        return 0;
    }
    ((confidence * BINS as f64) as usize).min(BINS - 1)
}

/// Mean recall over the gold classes present, keyed by option id (summed in id order, so the
/// last bit does not depend on a hash seed).
fn balanced_accuracy(rows: &[&ScoredRow]) -> f64 {
    let mut per_class: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for r in rows {
        let e = per_class.entry(r.gold_id()).or_default();
        e.0 += 1;
        e.1 += r.correct() as usize;
    }
    mean(per_class.values().map(|&(n, c)| ratio(c, n)).sum(), per_class.len())
}

/// Expected balanced accuracy of a judge that picks one of a row's options uniformly at random:
/// the mean over gold classes (by id) of the mean over their rows of `1/k`. `None` for no rows
/// (or a row with no options, which a run never produces).
pub fn chance(rows: &[ScoredRow]) -> Option<f64> {
    chance_of(&rows.iter().collect::<Vec<_>>())
}

fn chance_of(rows: &[&ScoredRow]) -> Option<f64> {
    let mut per_class: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for r in rows {
        if r.option_ids.is_empty() {
            return None;
        }
        let e = per_class.entry(r.gold_id()).or_default();
        e.0 += 1;
        e.1 += 1.0 / r.option_ids.len() as f64;
    }
    (!per_class.is_empty()).then(|| mean(per_class.values().map(|&(n, s)| s / n as f64).sum(), per_class.len()))
}

/// Mean over families of their [`chance`]: the chance level of `mean_family_balanced_accuracy`.
pub fn family_chance(families: &BTreeMap<String, Metrics>) -> Option<f64> {
    let each: Option<Vec<f64>> = families.values().map(|m| m.chance).collect();
    each.filter(|c| !c.is_empty()).map(|c| mean(c.iter().sum(), c.len()))
}

/// The figures for one set of rows.
pub fn metrics(rows: &[ScoredRow]) -> Metrics {
    metrics_of(&rows.iter().collect::<Vec<_>>())
}

fn metrics_of(rows: &[&ScoredRow]) -> Metrics {
    let n = rows.len();
    let correct = rows.iter().filter(|r| r.correct()).count();
    let invalid = rows.iter().filter(|r| !r.is_valid()).count();

    let checked: Vec<bool> = rows.iter().filter_map(|r| r.order_unstable).collect();
    let unstable = checked.iter().filter(|&&u| u).count();
    let (order_consistency, order_unstable) = if checked.is_empty() {
        (None, None)
    } else {
        (Some(ratio(checked.len() - unstable, checked.len())), Some(unstable))
    };

    let mut conf_sum = [0.0f64; BINS];
    let mut hits = [0usize; BINS];
    let mut counts = [0usize; BINS];
    for r in rows {
        let c = r.confidence();
        let b = bin_of(c);
        counts[b] += 1;
        conf_sum[b] += c;
        hits[b] += r.correct() as usize;
    }
    let mut ece = 0.0;
    let reliability = (0..BINS)
        .map(|b| {
            let mean_confidence = mean(conf_sum[b], counts[b]);
            let accuracy = ratio(hits[b], counts[b]);
            ece += ratio(counts[b], n) * (accuracy - mean_confidence).abs();
            Bin {
                lo: b as f64 / BINS as f64,
                hi: (b + 1) as f64 / BINS as f64,
                count: counts[b],
                mean_confidence,
                accuracy,
            }
        })
        .collect();

    Metrics {
        rows: n,
        accuracy: ratio(correct, n),
        balanced_accuracy: balanced_accuracy(rows),
        invalid,
        order_consistency,
        order_unstable,
        ece,
        brier: mean(rows.iter().map(|r| r.brier()).sum(), n),
        nll: mean(rows.iter().map(|r| r.nll()).sum(), n),
        reliability,
        confusion: confusion(rows, invalid > 0),
        chance: chance_of(rows),
    }
}

fn confusion(rows: &[&ScoredRow], with_invalid: bool) -> Confusion {
    let mut labels: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut add = |id: String, labels: &mut Vec<String>| {
        *index.entry(id.clone()).or_insert_with(|| {
            labels.push(id);
            labels.len() - 1
        })
    };
    let mut cells = Vec::with_capacity(rows.len());
    for r in rows {
        for id in &r.option_ids {
            add(id.clone(), &mut labels);
        }
        let g = add(r.gold_id(), &mut labels);
        let p = if r.is_valid() { r.predicted.map(|p| add(r.option_ids[p].clone(), &mut labels)) } else { None };
        cells.push((g, p));
    }
    let cols = labels.len() + with_invalid as usize;
    let mut counts = vec![vec![0usize; cols]; labels.len()];
    for (g, p) in cells {
        counts[g][p.unwrap_or(cols - 1)] += 1;
    }
    Confusion { labels, counts }
}

/// Per-family and overall metrics, the mean over families and its group bootstrap interval
/// (`resamples` draws of the group ids with replacement, seeded; 2.5 and 97.5 percentiles,
/// linearly interpolated). With `resamples == 0` the interval collapses to the point estimate.
pub fn summarize(rows: &[ScoredRow], resamples: usize, seed: u64) -> Summary {
    let mut by_family: BTreeMap<String, Vec<&ScoredRow>> = BTreeMap::new();
    for r in rows {
        by_family.entry(r.family.clone()).or_default().push(r);
    }
    let families: BTreeMap<String, Metrics> = by_family.into_iter().map(|(f, rs)| (f, metrics_of(&rs))).collect();
    let mean_family_balanced_accuracy = mean(families.values().map(|m| m.balanced_accuracy).sum(), families.len());
    let chance = family_chance(&families);
    let (lo, hi) =
        bootstrap(rows, resamples, seed).unwrap_or((mean_family_balanced_accuracy, mean_family_balanced_accuracy));
    Summary {
        overall: metrics(rows),
        families,
        mean_family_balanced_accuracy,
        bootstrap: Interval { level: INTERVAL_LEVEL, lo, hi, resamples, seed },
        chance,
        selective: Some(selective(rows)),
        position_bias: Some(position_bias(rows)),
        agreement: agreement_by_criterion(rows, None, resamples, seed),
    }
}

impl Summary {
    /// Fill the chance levels a file written before them lacks, from its rows (the rows the
    /// summary was computed from). Figures already present are kept.
    pub fn fill_chance(&mut self, rows: &[ScoredRow]) {
        let mut by_family: BTreeMap<&str, Vec<&ScoredRow>> = BTreeMap::new();
        for r in rows {
            by_family.entry(r.family.as_str()).or_default().push(r);
        }
        for (family, m) in self.families.iter_mut() {
            if m.chance.is_none() {
                m.chance = by_family.get(family.as_str()).and_then(|rs| chance_of(rs));
            }
        }
        if self.overall.chance.is_none() {
            self.overall.chance = chance(rows);
        }
        if self.chance.is_none() {
            self.chance = family_chance(&self.families);
        }
    }
}

/// Every distinct-threshold point of the risk–coverage curve, most confident first.
fn risk_coverage(rows: &[ScoredRow]) -> Vec<RiskCoveragePoint> {
    let n = rows.len();
    let mut by_conf: Vec<(f64, bool)> = rows.iter().map(|r| (r.confidence(), r.correct())).collect();
    by_conf.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut points = Vec::new();
    let mut wrong = 0usize;
    for (i, &(c, ok)) in by_conf.iter().enumerate() {
        wrong += !ok as usize;
        // A tie enters whole: a point only where the next confidence is lower.
        if by_conf.get(i + 1).is_none_or(|next| next.0 < c) {
            points.push(RiskCoveragePoint { threshold: c, coverage: ratio(i + 1, n), risk: ratio(wrong, i + 1) });
        }
    }
    points
}

/// `points` thinned to at most `max` (evenly spaced by index, the first and last kept).
fn thin(points: Vec<RiskCoveragePoint>, max: usize) -> Vec<RiskCoveragePoint> {
    if points.len() <= max || max < 2 {
        return points;
    }
    let last = points.len() - 1;
    let mut keep: Vec<usize> = (0..max).map(|j| (j * last + (max - 1) / 2) / (max - 1)).collect();
    keep.dedup();
    keep.into_iter().map(|i| points[i].clone()).collect()
}

/// The risk–coverage curve (thinned to [`RISK_COVERAGE_POINTS`]) and the coverage at each of
/// [`SELECTIVE_RISKS`].
pub fn selective(rows: &[ScoredRow]) -> Selective {
    let points = risk_coverage(rows);
    let coverage_at_risk = SELECTIVE_RISKS
        .iter()
        .map(|&max_risk| {
            // The largest coverage whose risk is within the bound (a tiny slack for rounding).
            let best =
                points.iter().filter(|p| p.risk <= max_risk + 1e-12).max_by(|a, b| a.coverage.total_cmp(&b.coverage));
            CoverageAtRisk { max_risk, coverage: best.map(|p| p.coverage), threshold: best.map(|p| p.threshold) }
        })
        .collect();
    Selective { curve: thin(points, RISK_COVERAGE_POINTS), coverage_at_risk }
}

/// The letter `A`, `B`, … of slot `s`.
fn letter(s: usize) -> String {
    char::from_u32('A' as u32 + s as u32).map(String::from).unwrap_or_else(|| format!("#{s}"))
}

/// Per letter, how often chosen against how often gold (over every ordering of every row), and
/// the accuracy of order-stable against order-unstable rows.
pub fn position_bias(rows: &[ScoredRow]) -> PositionBias {
    let slots = rows.iter().flat_map(|r| &r.letter_picks).flat_map(|p| [p.gold + 1, p.chosen.map_or(0, |c| c + 1)]);
    let n_slots = slots.max().unwrap_or(0);
    let (mut chosen, mut gold) = (vec![0usize; n_slots], vec![0usize; n_slots]);
    let (mut readings, mut valid) = (0usize, 0usize);
    for p in rows.iter().flat_map(|r| &r.letter_picks) {
        readings += 1;
        gold[p.gold] += 1;
        if let Some(c) = p.chosen {
            chosen[c] += 1;
            valid += 1;
        }
    }
    let letters = (0..n_slots)
        .map(|s| LetterBias {
            letter: letter(s),
            chosen: chosen[s],
            gold: gold[s],
            chosen_share: ratio(chosen[s], valid),
            gold_share: ratio(gold[s], readings),
        })
        .collect();
    let subset = |unstable: bool| {
        let rs: Vec<&ScoredRow> = rows.iter().filter(|r| r.order_unstable == Some(unstable)).collect();
        (!rs.is_empty()).then(|| SubsetAccuracy {
            rows: rs.len(),
            accuracy: ratio(rs.iter().filter(|r| r.correct()).count(), rs.len()),
        })
    };
    PositionBias { letters, readings, stable: subset(false), unstable: subset(true) }
}

/// Percentile by linear interpolation between order statistics (NumPy's default).
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    let h = q * (sorted.len() - 1) as f64;
    let i = h.floor() as usize;
    let j = (i + 1).min(sorted.len() - 1);
    sorted[i] + (h - i as f64) * (sorted[j] - sorted[i])
}

/// The (2.5, 97.5) percentiles of mean family balanced accuracy over group resamples; `None`
/// when there is nothing to resample. Each resample has its own generator, derived from the seed
/// and the resample's index, so the result does not depend on thread scheduling.
fn bootstrap(rows: &[ScoredRow], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    if resamples == 0 || rows.is_empty() {
        return None;
    }
    // Number families, gold classes and groups in order of first appearance; a group's rows
    // become (family * classes + class, correct) cells.
    let mut families: HashMap<&str, usize> = HashMap::new();
    let mut classes: HashMap<String, usize> = HashMap::new();
    for r in rows {
        let nf = families.len();
        families.entry(&r.family).or_insert(nf);
        let nc = classes.len();
        classes.entry(r.gold_id()).or_insert(nc);
    }
    let (nf, nc) = (families.len(), classes.len());
    let mut groups: HashMap<&str, usize> = HashMap::new();
    let mut cells: Vec<Vec<(usize, bool)>> = Vec::new();
    for r in rows {
        let ng = groups.len();
        let g = *groups.entry(&r.group_id).or_insert(ng);
        if g == cells.len() {
            cells.push(Vec::new());
        }
        cells[g].push((families[r.family.as_str()] * nc + classes[&r.gold_id()], r.correct()));
    }
    let ng = cells.len();
    let mut values: Vec<f64> = (0..resamples)
        .into_par_iter()
        .map(|k| {
            let mut rng = SplitMix64(mix64(seed ^ mix64(k as u64 + 1)));
            let mut total = vec![0u32; nf * nc];
            let mut hit = vec![0u32; nf * nc];
            for _ in 0..ng {
                for &(cell, ok) in &cells[rng.below(ng)] {
                    total[cell] += 1;
                    hit[cell] += ok as u32;
                }
            }
            let mut fam_sum = 0.0;
            let mut fam_n = 0;
            for f in 0..nf {
                let (mut s, mut m) = (0.0, 0);
                for c in 0..nc {
                    let t = total[f * nc + c];
                    if t > 0 {
                        s += hit[f * nc + c] as f64 / t as f64;
                        m += 1;
                    }
                }
                if m > 0 {
                    fam_sum += s / m as f64;
                    fam_n += 1;
                }
            }
            mean(fam_sum, fam_n)
        })
        .collect();
    values.sort_by(f64::total_cmp);
    Some((percentile(&values, 0.025), percentile(&values, 0.975)))
}

/// Exact two-sided McNemar test on the discordant counts `b` and `c`:
/// `min(1, 2 P(X <= min(b, c)))` with `X ~ Bin(b + c, 1/2)`; 1 when `b + c = 0`.
/// Summed in log space, so `b + c` in the millions stays finite.
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // ln C(n, i) 2^-n, built up term by term; the terms grow up to i = k <= n/2.
    let mut logs = Vec::with_capacity(k + 1);
    let mut l = -(n as f64) * std::f64::consts::LN_2;
    logs.push(l);
    for i in 0..k {
        l += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
        logs.push(l);
    }
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tail = (top + logs.iter().map(|v| (v - top).exp()).sum::<f64>().ln()).exp();
    (2.0 * tail).min(1.0)
}

/// One family's figures in a paired comparison (paired rows only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FamilyDiff {
    pub rows: usize,
    pub accuracy_a: f64,
    pub accuracy_b: f64,
    pub balanced_accuracy_a: f64,
    pub balanced_accuracy_b: f64,
}

/// Agreement per criterion: of each row's prediction with its gold, or (with `other`, a second
/// run's rows paired by id) of the two runs' predictions. A criterion is the rows with one
/// criterion name (the part of an `item/criterion` id after the last `/`) and one set of option
/// ids, so a row-form set whose items offer different options gets one criterion per option set.
/// The categories are the option ids, sorted (as numbers when they are `0..k`, the levels of a
/// `score` criterion, which are then read on the interval scale: weighted κ, interval α). An
/// invalid prediction is a missing rating. Rows are resampled by their group.
pub fn agreement_by_criterion(
    rows: &[ScoredRow],
    other: Option<&[ScoredRow]>,
    resamples: usize,
    seed: u64,
) -> Vec<CriterionAgreement> {
    use crate::agreement::{agreement, Rated, Scale};
    let by_id: HashMap<&str, &ScoredRow> = other.map_or_else(HashMap::new, |o| {
        let mut m = HashMap::new();
        for r in o {
            m.entry(r.id.as_str()).or_insert(r);
        }
        m
    });
    // (criterion, sorted option ids) → its rows, each with its partner in `other`.
    type Members<'r> = Vec<(&'r ScoredRow, Option<&'r ScoredRow>)>;
    let mut groups: BTreeMap<(String, Vec<String>), Members> = BTreeMap::new();
    for r in rows {
        let partner = match other {
            None => None,
            Some(_) => match by_id.get(r.id.as_str()) {
                Some(p) => Some(*p),
                None => continue,
            },
        };
        let criterion = r.id.rsplit_once('/').map(|(_, c)| c.to_string()).unwrap_or_default();
        let mut ids = r.option_ids.clone();
        let numeric: Option<Vec<usize>> = ids.iter().map(|i| i.parse::<usize>().ok()).collect();
        match numeric {
            Some(mut n) => {
                n.sort_unstable();
                ids = n.iter().map(usize::to_string).collect();
            }
            None => ids.sort(),
        }
        groups.entry((criterion, ids)).or_default().push((r, partner));
    }
    groups
        .into_iter()
        .map(|((criterion, option_ids), members)| {
            let k = option_ids.len();
            let levels = option_ids.iter().enumerate().all(|(i, id)| id == &i.to_string());
            let scale = if levels { Scale::Interval } else { Scale::Nominal };
            let cat = |r: &ScoredRow, i: Option<usize>| -> Option<usize> {
                let id = r.option_ids.get(i?)?;
                option_ids.iter().position(|o| o == id)
            };
            let rated: Vec<Rated> = members
                .iter()
                .map(|(r, p)| Rated {
                    a: cat(r, r.predicted),
                    b: match p {
                        Some(p) => cat(p, p.predicted),
                        None => cat(r, Some(r.gold)),
                    },
                    group: r.group_id.as_str(),
                })
                .collect();
            let agreement = agreement(&rated, k, scale, resamples, seed);
            let disagreements = agreement.disagreements.iter().map(|&i| members[i].0.id.clone()).collect();
            CriterionAgreement { criterion, option_ids, agreement, disagreements }
        })
        .collect()
}

/// Two runs of one eval set, paired by row id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Comparison {
    /// Rows present in both runs.
    pub paired: usize,
    /// Paired rows A got right and B got wrong.
    pub only_a_correct: usize,
    /// Paired rows B got right and A got wrong.
    pub only_b_correct: usize,
    /// Exact McNemar p-value on the discordant rows.
    pub p_value: f64,
    /// Accuracy of A on the paired rows.
    pub accuracy_a: f64,
    /// Accuracy of B on the paired rows.
    pub accuracy_b: f64,
    /// By A's family of each paired row.
    pub families: BTreeMap<String, FamilyDiff>,
    /// Rows of A whose id B lacks.
    pub unpaired_a: usize,
    /// Rows of B whose id A lacks.
    pub unpaired_b: usize,
    /// Group bootstrap intervals of B − A on the paired rows; null without paired rows
    /// (absent in comparisons made before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub difference: Option<PairedBootstrap>,
    /// Agreement of A's predictions with B's per criterion, on the paired rows (absent in
    /// comparisons made before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(as = "Option<Vec<CriterionAgreement>>", optional))]
    pub agreement: Vec<CriterionAgreement>,
}

/// A paired difference (B − A) and its bootstrap percentile interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DiffInterval {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
}

/// The group bootstrap of a paired comparison: the paired rows' group ids (A's) are drawn with
/// replacement, each draw bringing all its rows in both runs, `resamples` times from `seed`;
/// the interval is the (2.5, 97.5) percentiles of B − A over the draws.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PairedBootstrap {
    pub level: f64,
    pub resamples: usize,
    pub seed: u64,
    /// Groups drawn from.
    pub groups: usize,
    pub accuracy: DiffInterval,
    /// Balanced accuracy over all paired rows (mean recall over the gold options present).
    pub balanced_accuracy: DiffInterval,
}

/// The group bootstrap of B − A in accuracy and balanced accuracy over paired rows `(a, b)`.
/// `None` without pairs or resamples. Each resample has its own generator (from the seed and its
/// index), so the result does not depend on thread scheduling.
fn paired_bootstrap(pairs: &[(&ScoredRow, &ScoredRow)], resamples: usize, seed: u64) -> Option<PairedBootstrap> {
    if pairs.is_empty() || resamples == 0 {
        return None;
    }
    // Gold classes and groups numbered in order of first appearance; a group's rows become
    // (class, a right, b right) cells.
    let mut classes: HashMap<String, usize> = HashMap::new();
    let mut groups: HashMap<&str, usize> = HashMap::new();
    let mut cells: Vec<Vec<(usize, bool, bool)>> = Vec::new();
    for (a, b) in pairs {
        let nc = classes.len();
        let c = *classes.entry(a.gold_id()).or_insert(nc);
        let ng = groups.len();
        let g = *groups.entry(&a.group_id).or_insert(ng);
        if g == cells.len() {
            cells.push(Vec::new());
        }
        cells[g].push((c, a.correct(), b.correct()));
    }
    let (nc, ng) = (classes.len(), cells.len());
    // (accuracy B − A, balanced accuracy B − A) of a multiset of groups.
    let diffs = |draw: &mut dyn FnMut() -> usize| {
        let (mut total, mut hit_a, mut hit_b) = (vec![0u32; nc], vec![0u32; nc], vec![0u32; nc]);
        for _ in 0..ng {
            for &(c, ca, cb) in &cells[draw()] {
                total[c] += 1;
                hit_a[c] += ca as u32;
                hit_b[c] += cb as u32;
            }
        }
        let n: u32 = total.iter().sum();
        let acc = (hit_b.iter().sum::<u32>() as f64 - hit_a.iter().sum::<u32>() as f64) / n as f64;
        let present: Vec<usize> = (0..nc).filter(|&c| total[c] > 0).collect();
        let recall = |h: &[u32]| present.iter().map(|&c| h[c] as f64 / total[c] as f64).sum::<f64>();
        let bal = (recall(&hit_b) - recall(&hit_a)) / present.len() as f64;
        (acc, bal)
    };
    let mut k = 0;
    let (acc, bal) = diffs(&mut || {
        k += 1;
        k - 1
    });
    let (mut accs, mut bals): (Vec<f64>, Vec<f64>) = (0..resamples)
        .into_par_iter()
        .map(|i| {
            let mut rng = SplitMix64(mix64(seed ^ mix64(i as u64 + 1)));
            diffs(&mut || rng.below(ng))
        })
        .unzip();
    accs.sort_by(f64::total_cmp);
    bals.sort_by(f64::total_cmp);
    let interval = |estimate: f64, v: &[f64]| DiffInterval {
        estimate,
        lo: percentile(v, (1.0 - INTERVAL_LEVEL) / 2.0),
        hi: percentile(v, 1.0 - (1.0 - INTERVAL_LEVEL) / 2.0),
    };
    Some(PairedBootstrap {
        level: INTERVAL_LEVEL,
        resamples,
        seed,
        groups: ng,
        accuracy: interval(acc, &accs),
        balanced_accuracy: interval(bal, &bals),
    })
}

/// Pair two runs' rows by id and compare them, with the bootstrap's defaults
/// ([`DEFAULT_RESAMPLES`], [`DEFAULT_SEED`]).
pub fn compare(a: &[ScoredRow], b: &[ScoredRow]) -> Comparison {
    compare_with(a, b, DEFAULT_RESAMPLES, DEFAULT_SEED)
}

/// Pair two runs' rows by id (the first row of an id in each run) and compare them: McNemar on
/// the discordant rows and a group bootstrap of `resamples` draws from `seed` on the difference.
pub fn compare_with(a: &[ScoredRow], b: &[ScoredRow], resamples: usize, seed: u64) -> Comparison {
    let mut b_by_id: HashMap<&str, &ScoredRow> = HashMap::new();
    for r in b {
        b_by_id.entry(&r.id).or_insert(r);
    }
    let a_ids: HashSet<&str> = a.iter().map(|r| r.id.as_str()).collect();
    let mut used: HashSet<&str> = HashSet::new();
    let mut pairs: BTreeMap<&str, (Vec<&ScoredRow>, Vec<&ScoredRow>)> = BTreeMap::new();
    let (mut paired, mut only_a, mut only_b, mut hits_a, mut hits_b, mut unpaired_a) = (0, 0, 0, 0, 0, 0);
    let mut all_pairs: Vec<(&ScoredRow, &ScoredRow)> = Vec::new();
    for ra in a {
        let Some(rb) = b_by_id.get(ra.id.as_str()).filter(|_| used.insert(ra.id.as_str())) else {
            unpaired_a += 1;
            continue;
        };
        paired += 1;
        let (ca, cb) = (ra.correct(), rb.correct());
        hits_a += ca as usize;
        hits_b += cb as usize;
        only_a += (ca && !cb) as usize;
        only_b += (cb && !ca) as usize;
        let e = pairs.entry(&ra.family).or_default();
        e.0.push(ra);
        e.1.push(rb);
        all_pairs.push((ra, rb));
    }
    let unpaired_b = b.iter().filter(|r| !a_ids.contains(r.id.as_str())).count();
    let acc = |rs: &[&ScoredRow]| ratio(rs.iter().filter(|r| r.correct()).count(), rs.len());
    let families = pairs
        .into_iter()
        .map(|(f, (ra, rb))| {
            let d = FamilyDiff {
                rows: ra.len(),
                accuracy_a: acc(&ra),
                accuracy_b: acc(&rb),
                balanced_accuracy_a: balanced_accuracy(&ra),
                balanced_accuracy_b: balanced_accuracy(&rb),
            };
            (f.to_string(), d)
        })
        .collect();
    Comparison {
        paired,
        only_a_correct: only_a,
        only_b_correct: only_b,
        p_value: mcnemar_exact(only_a, only_b),
        accuracy_a: ratio(hits_a, paired),
        accuracy_b: ratio(hits_b, paired),
        families,
        unpaired_a,
        unpaired_b,
        difference: paired_bootstrap(&all_pairs, resamples, seed),
        agreement: agreement_by_criterion(a, Some(b), resamples, seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDS: [&str; 3] = ["x", "y", "z"];

    fn row(id: &str, family: &str, group: &str, gold: usize, probs: Option<Vec<f64>>) -> ScoredRow {
        let predicted = probs.as_ref().map(|p| crate::math::argmax(p));
        ScoredRow {
            id: id.into(),
            family: family.into(),
            group_id: group.into(),
            gold,
            option_ids: IDS.iter().map(|s| s.to_string()).collect(),
            probs,
            predicted,
            order_unstable: None,
            letter_picks: Vec::new(),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn accuracy_and_balanced_accuracy_with_an_imbalanced_class() {
        // gold x x x y y; predicted x x y y invalid.
        let hot = |i: usize| {
            let mut p = vec![0.0; 3];
            p[i] = 1.0;
            Some(p)
        };
        let mut rows = vec![
            row("1", "f", "1", 0, hot(0)),
            row("2", "f", "2", 0, hot(0)),
            row("3", "f", "3", 0, hot(1)),
            row("4", "f", "4", 1, hot(1)),
            row("5", "f", "5", 1, None),
        ];
        rows[4].predicted = None;
        let m = metrics(&rows);
        // accuracy = 3 correct / 5 = 0.6
        assert!(close(m.accuracy, 0.6));
        // recall x = 2/3, recall y = 1/2; balanced = (2/3 + 1/2) / 2 = 7/12
        assert!(close(m.balanced_accuracy, 7.0 / 12.0));
        assert_eq!(m.invalid, 1);
        assert_eq!(m.confusion.labels, ["x", "y", "z"]);
        // columns x y z invalid
        assert_eq!(m.confusion.counts, vec![vec![2, 1, 0, 0], vec![0, 1, 0, 1], vec![0, 0, 0, 0]]);
        // ECE: 4 valid rows at confidence 1 (bin 9: acc 3/4, conf 1) and one invalid at 0 (bin 0:
        // acc 0, conf 0): 4/5 * |0.75 - 1| + 1/5 * 0 = 0.2
        assert!(close(m.ece, 0.2));
        assert_eq!((m.reliability[0].count, m.reliability[9].count), (1, 4));
        // Brier: rows 1, 2, 4 give 0; row 3 gives 1 + 1 = 2; the invalid row gives 1: 3 / 5
        assert!(close(m.brier, 0.6));
    }

    /// A row of `k` options (`o0`…), gold at `gold`, answered right.
    fn row_of(family: &str, gold: usize, k: usize) -> ScoredRow {
        let mut probs = vec![0.0; k];
        probs[gold] = 1.0;
        ScoredRow { option_ids: (0..k).map(|i| format!("o{i}")).collect(), ..row("r", family, "g", gold, Some(probs)) }
    }

    #[test]
    fn chance_of_uniform_guessing() {
        // Family f1: gold o0 with 3 and 2 options (recall 1/3 and 1/2: mean 5/12), gold o1 with
        // 4 options (1/4): balanced chance (5/12 + 3/12) / 2 = 1/3.
        // Family f2: 2 options each, gold o0 and o1: 1/2. Headline chance (1/3 + 1/2) / 2 = 5/12.
        // All rows pooled: o0 has 1/3, 1/2, 1/2 (mean 4/9), o1 has 1/4, 1/2 (mean 3/8):
        // (4/9 + 3/8) / 2 = 59/144.
        let rows =
            vec![row_of("f1", 0, 3), row_of("f1", 0, 2), row_of("f1", 1, 4), row_of("f2", 0, 2), row_of("f2", 1, 2)];
        assert!(close(chance(&rows[..3]).unwrap(), 1.0 / 3.0));
        assert!(close(chance(&rows[3..]).unwrap(), 0.5));
        assert!(close(chance(&rows).unwrap(), 59.0 / 144.0));
        // Every row at k options: 1/k, whatever the golds.
        assert!(close(chance(&[row_of("f", 0, 4), row_of("f", 3, 4), row_of("f", 3, 4)]).unwrap(), 0.25));
        assert_eq!(chance(&[]), None);

        let s = summarize(&rows, 0, 0);
        assert!(close(s.families["f1"].chance.unwrap(), 1.0 / 3.0));
        assert!(close(s.chance.unwrap(), 5.0 / 12.0));
        assert!(close(s.overall.chance.unwrap(), 59.0 / 144.0));

        // A file written before `chance` gets the same figures back from its rows.
        let mut old = s.clone();
        old.chance = None;
        old.overall.chance = None;
        for m in old.families.values_mut() {
            m.chance = None;
        }
        let json = serde_json::to_string(&old).unwrap();
        assert!(!json.contains("chance"));
        let mut back: Summary = serde_json::from_str(&json).unwrap();
        back.fill_chance(&rows);
        assert_eq!(back, s);
    }

    #[test]
    fn ece_across_two_bins() {
        // Bin 6 [0.6, 0.7): confidences 0.6, 0.6, one right: |0.5 - 0.6| = 0.1, weight 2/4.
        // Bin 9 [0.9, 1.0]: confidences 0.9, 1.0, both right: |1 - 0.95| = 0.05, weight 2/4.
        // ECE = 0.5 * 0.1 + 0.5 * 0.05 = 0.075
        let rows = vec![
            row("1", "f", "1", 0, Some(vec![0.6, 0.3, 0.1])),
            row("2", "f", "2", 1, Some(vec![0.6, 0.3, 0.1])),
            row("3", "f", "3", 2, Some(vec![0.05, 0.05, 0.9])),
            row("4", "f", "4", 1, Some(vec![0.0, 1.0, 0.0])),
        ];
        let m = metrics(&rows);
        assert!((m.ece - 0.075).abs() < 1e-12, "{}", m.ece);
        assert_eq!(m.reliability.len(), 10);
        assert_eq!(m.reliability.iter().map(|b| b.count).collect::<Vec<_>>(), [0, 0, 0, 0, 0, 0, 2, 0, 0, 2]);
        let b6 = &m.reliability[6];
        assert!(close(b6.lo, 0.6) && close(b6.hi, 0.7) && close(b6.mean_confidence, 0.6) && close(b6.accuracy, 0.5));
        assert!(close(m.reliability[9].mean_confidence, 0.95));
        assert_eq!(m.reliability[3].mean_confidence, 0.0);
        assert!(m.confusion.counts.iter().all(|r| r.len() == 3), "no invalid column without invalid rows");
    }

    #[test]
    fn brier_and_nll_on_two_rows() {
        // Row 1: gold 0, p = (0.5, 0.3, 0.2): Brier 0.25 + 0.09 + 0.04 = 0.38, NLL ln 2.
        // Row 2: gold 2, p = (0.7, 0.2, 0.1): Brier 0.49 + 0.04 + 0.81 = 1.34, NLL ln 10.
        // Means: Brier 1.72 / 2 = 0.86, NLL (ln 2 + ln 10) / 2 = ln(20) / 2.
        let rows =
            vec![row("1", "f", "1", 0, Some(vec![0.5, 0.3, 0.2])), row("2", "f", "2", 2, Some(vec![0.7, 0.2, 0.1]))];
        let m = metrics(&rows);
        assert!(close(m.brier, 0.86), "{}", m.brier);
        assert!(close(m.nll, 20f64.ln() / 2.0), "{}", m.nll);
        // An invalid row: Brier 1, NLL -ln(1e-12).
        let mut bad = row("3", "f", "3", 0, None);
        bad.predicted = None;
        assert!(close(bad.brier(), 1.0) && close(bad.nll(), -(1e-12f64).ln()));
        // A zero probability on gold is floored, not infinite.
        assert!(close(row("4", "f", "4", 1, Some(vec![1.0, 0.0, 0.0])).nll(), -(1e-12f64).ln()));
    }

    #[test]
    fn order_consistency_none_then_some() {
        let mut rows: Vec<ScoredRow> =
            (0..4).map(|i| row(&i.to_string(), "f", "g", 0, Some(vec![0.5, 0.3, 0.2]))).collect();
        let m = metrics(&rows);
        assert_eq!((m.order_consistency, m.order_unstable), (None, None));
        // Checked: false, true, false; one row unchecked: 2 of 3 consistent.
        rows[0].order_unstable = Some(false);
        rows[1].order_unstable = Some(true);
        rows[2].order_unstable = Some(false);
        let m = metrics(&rows);
        assert!(close(m.order_consistency.unwrap(), 2.0 / 3.0));
        assert_eq!(m.order_unstable, Some(1));
    }

    #[test]
    fn mcnemar() {
        // n = 11, k = 3: (1 + 11 + 55 + 165) / 2048 = 232 / 2048; doubled = 0.2265625
        assert!((mcnemar_exact(3, 8) - 0.2265625).abs() < 1e-12, "{}", mcnemar_exact(3, 8));
        assert!((mcnemar_exact(8, 3) - 0.2265625).abs() < 1e-12);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(5, 5), 1.0);
        // n = 10, k = 0: 2 / 1024
        assert!((mcnemar_exact(0, 10) - 2.0 / 1024.0).abs() < 1e-15);
        let p = mcnemar_exact(1500, 1700);
        assert!(p.is_finite() && p > 0.0 && p < 0.01, "{p}");
        assert!(mcnemar_exact(0, 5000) >= 0.0);
    }

    fn three_families() -> Vec<ScoredRow> {
        let mut rows = Vec::new();
        for (fi, fam) in ["a", "b", "c"].iter().enumerate() {
            for i in 0..12 {
                let gold = i % 3;
                let guess = (i + fi + i / 4) % 3;
                let mut p = vec![0.2; 3];
                p[guess] = 0.6;
                rows.push(row(&format!("{fam}{i}"), fam, &format!("{fam}-g{}", i / 2), gold, Some(p)));
            }
        }
        rows
    }

    #[test]
    fn summary_and_bootstrap_are_deterministic() {
        let rows = three_families();
        let s = summarize(&rows, 500, 7);
        assert_eq!(s.families.len(), 3);
        let mean: f64 = s.families.values().map(|m| m.balanced_accuracy).sum::<f64>() / 3.0;
        assert!(close(s.mean_family_balanced_accuracy, mean));
        assert_eq!(s.overall.rows, 36);
        assert_eq!((s.bootstrap.resamples, s.bootstrap.seed, s.bootstrap.level), (500, 7, 0.95));
        assert!(s.bootstrap.lo <= s.mean_family_balanced_accuracy && s.mean_family_balanced_accuracy <= s.bootstrap.hi);
        assert!(s.bootstrap.lo < s.bootstrap.hi);
        let again = summarize(&rows, 500, 7);
        assert_eq!(s, again);
        let other = summarize(&rows, 500, 8);
        assert_ne!((s.bootstrap.lo, s.bootstrap.hi), (other.bootstrap.lo, other.bootstrap.hi));
        let none = summarize(&rows, 0, 0);
        assert_eq!(
            (none.bootstrap.lo, none.bootstrap.hi),
            (s.mean_family_balanced_accuracy, s.mean_family_balanced_accuracy)
        );
        // Survives a round trip through JSON.
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Summary>(&json).unwrap(), s);
    }

    #[test]
    fn bootstrap_of_a_perfect_run_is_a_point() {
        let rows: Vec<ScoredRow> = (0..9)
            .map(|i| {
                let mut p = vec![0.1; 3];
                p[i % 3] = 0.8;
                row(&i.to_string(), "f", &(i / 3).to_string(), i % 3, Some(p))
            })
            .collect();
        let s = summarize(&rows, 200, 0);
        assert_eq!((s.bootstrap.lo, s.bootstrap.hi, s.mean_family_balanced_accuracy), (1.0, 1.0, 1.0));
    }

    #[test]
    fn percentile_interpolates() {
        // q = 0.25 over 5 values: h = 1.0 -> 2; q = 0.1: h = 0.4 -> 1 + 0.4 * 1 = 1.4
        assert!(close(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.25), 2.0));
        assert!(close(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.1), 1.4));
        assert!(close(percentile(&[3.0], 0.975), 3.0));
    }

    #[test]
    fn compare_pairs_by_id() {
        let hot = |i: usize| {
            let mut p = vec![0.0; 3];
            p[i] = 1.0;
            Some(p)
        };
        // A: rows 1..4 right, right, wrong, right; plus "a-only".
        let a = vec![
            row("1", "f", "1", 0, hot(0)),
            row("2", "f", "2", 1, hot(1)),
            row("3", "g", "3", 2, hot(0)),
            row("4", "g", "4", 0, hot(0)),
            row("a-only", "g", "5", 0, hot(0)),
        ];
        // B (other order): 4 wrong, 3 right, 2 right, 1 wrong; plus two b-only rows.
        let b = vec![
            row("4", "g", "4", 0, hot(1)),
            row("3", "g", "3", 2, hot(2)),
            row("2", "f", "2", 1, hot(1)),
            row("1", "f", "1", 0, hot(2)),
            row("b1", "f", "6", 0, hot(0)),
            row("b2", "f", "7", 0, hot(0)),
        ];
        let c = compare(&a, &b);
        assert_eq!((c.paired, c.unpaired_a, c.unpaired_b), (4, 1, 2));
        // only A right: 1, 4; only B right: 3.
        assert_eq!((c.only_a_correct, c.only_b_correct), (2, 1));
        // n = 3, k = 1: 2 * (1 + 3) / 8 = 1.0
        assert!(close(c.p_value, 1.0));
        assert!(close(c.accuracy_a, 0.75) && close(c.accuracy_b, 0.5));
        let f = &c.families["f"];
        assert_eq!(f.rows, 2);
        assert!(close(f.accuracy_a, 1.0) && close(f.accuracy_b, 0.5));
        // family g, A: gold z wrong, gold x right: (0 + 1) / 2; B: z right, x wrong: same.
        let g = &c.families["g"];
        assert!(close(g.balanced_accuracy_a, 0.5) && close(g.balanced_accuracy_b, 0.5));
    }

    #[test]
    fn risk_coverage_points_by_hand() {
        // Confidences 0.9 (right), 0.8 (wrong), 0.7 (right), 0.6 (right):
        // coverage 1/4 risk 0; 2/4 risk 1/2; 3/4 risk 1/3; 4/4 risk 1/4.
        let rows = vec![
            row("1", "f", "1", 0, Some(vec![0.9, 0.05, 0.05])),
            row("2", "f", "2", 1, Some(vec![0.8, 0.1, 0.1])),
            row("3", "f", "3", 0, Some(vec![0.7, 0.2, 0.1])),
            row("4", "f", "4", 0, Some(vec![0.6, 0.3, 0.1])),
        ];
        let s = selective(&rows);
        let got: Vec<(f64, f64, f64)> = s.curve.iter().map(|p| (p.threshold, p.coverage, p.risk)).collect();
        let want = [(0.9, 0.25, 0.0), (0.8, 0.5, 0.5), (0.7, 0.75, 1.0 / 3.0), (0.6, 1.0, 0.25)];
        assert_eq!(got.len(), 4);
        for (g, w) in got.iter().zip(want) {
            assert!(close(g.0, w.0) && close(g.1, w.1) && close(g.2, w.2), "{g:?} {w:?}");
        }
        // Risk <= 1 %, 5 %, 10 %: only the first point, coverage 1/4 at threshold 0.9.
        for c in &s.coverage_at_risk {
            assert_eq!((c.coverage, c.threshold), (Some(0.25), Some(0.9)), "{c:?}");
        }
        // The most confident row wrong: no threshold reaches 10 %, so null; a tie enters whole
        // (0.8 twice, one wrong: a single point at coverage 2/3, risk 1/2).
        let rows = vec![
            row("1", "f", "1", 1, Some(vec![0.95, 0.05, 0.0])),
            row("2", "f", "2", 0, Some(vec![0.8, 0.2, 0.0])),
            row("3", "f", "3", 1, Some(vec![0.8, 0.2, 0.0])),
        ];
        let s = selective(&rows);
        assert!(s.coverage_at_risk.iter().all(|c| c.coverage.is_none() && c.threshold.is_none()));
        assert_eq!(s.curve.len(), 2);
        assert!(close(s.curve[1].coverage, 1.0) && close(s.curve[1].risk, 2.0 / 3.0));
        assert!(close(s.curve[0].coverage, 1.0 / 3.0) && close(s.curve[0].risk, 1.0));
    }

    #[test]
    fn the_curve_is_thinned_keeping_its_ends() {
        // 300 distinct confidences: at most 101 points, the first (coverage 1/300) and the last.
        let rows: Vec<ScoredRow> = (0..300)
            .map(|i| {
                let c = 0.4 + 0.5 * i as f64 / 300.0;
                row(&i.to_string(), "f", &i.to_string(), i % 2, Some(vec![c, 1.0 - c, 0.0]))
            })
            .collect();
        let s = selective(&rows);
        assert_eq!(s.curve.len(), RISK_COVERAGE_POINTS);
        assert!(close(s.curve[0].coverage, 1.0 / 300.0) && close(s.curve[100].coverage, 1.0));
        assert!(s.curve.windows(2).all(|w| w[0].coverage < w[1].coverage));
        // Indices kept: (j * 299 + 50) / 100; j = 1 gives 3, so the second point covers 4 rows.
        assert!(close(s.curve[1].coverage, 4.0 / 300.0));
    }

    #[test]
    fn position_bias_by_hand() {
        // Row 1 (gold 0), two orderings: [0,1,2] chose A (gold at A); [1,2,0] chose A (gold at C).
        // Row 2 (gold 1), one ordering [0,1,2]: chose B (gold at B). Row 3: invalid reply (gold at A).
        let mut r1 = row("1", "f", "1", 0, Some(vec![0.5, 0.3, 0.2]));
        r1.letter_picks = vec![LetterPick { chosen: Some(0), gold: 0 }, LetterPick { chosen: Some(0), gold: 2 }];
        r1.order_unstable = Some(true);
        let mut r2 = row("2", "f", "2", 1, Some(vec![0.2, 0.7, 0.1]));
        r2.letter_picks = vec![LetterPick { chosen: Some(1), gold: 1 }];
        r2.order_unstable = Some(false);
        let mut r3 = row("3", "f", "3", 0, None);
        r3.letter_picks = vec![LetterPick { chosen: None, gold: 0 }];
        let b = position_bias(&[r1, r2, r3]);
        assert_eq!(b.readings, 4);
        let counts: Vec<(&str, usize, usize)> =
            b.letters.iter().map(|l| (l.letter.as_str(), l.chosen, l.gold)).collect();
        assert_eq!(counts, [("A", 2, 2), ("B", 1, 1), ("C", 0, 1)]);
        // Shares: chosen over the 3 valid readings, gold over all 4.
        assert!(close(b.letters[0].chosen_share, 2.0 / 3.0) && close(b.letters[2].gold_share, 0.25));
        // Row 1 is right (0.5 on gold) and unstable; row 2 right and stable; row 3 unchecked.
        assert_eq!(b.unstable, Some(SubsetAccuracy { rows: 1, accuracy: 1.0 }));
        assert_eq!(b.stable, Some(SubsetAccuracy { rows: 1, accuracy: 1.0 }));
        let none = position_bias(&[]);
        assert!(none.letters.is_empty() && none.stable.is_none() && none.unstable.is_none());
    }

    #[test]
    fn paired_bootstrap_on_a_toy_with_a_fixed_seed() {
        let hot = |i: usize| {
            let mut p = vec![0.0; 3];
            p[i] = 1.0;
            Some(p)
        };
        // Two groups. g1: rows 1, 2 (gold x): A right on both, B right on neither: a group
        // difference of -2 rows. g2: rows 3, 4 (gold y): A wrong on both, B right on both: +2.
        let a = vec![
            row("1", "f", "g1", 0, hot(0)),
            row("2", "f", "g1", 0, hot(0)),
            row("3", "f", "g2", 1, hot(0)),
            row("4", "f", "g2", 1, hot(0)),
        ];
        let b = vec![
            row("1", "f", "g1", 0, hot(1)),
            row("2", "f", "g1", 0, hot(1)),
            row("3", "f", "g2", 1, hot(1)),
            row("4", "f", "g2", 1, hot(1)),
        ];
        let c = compare_with(&a, &b, 1000, 0);
        let d = c.difference.clone().unwrap();
        assert_eq!((d.groups, d.resamples, d.seed), (2, 1000, 0));
        // Point estimates: accuracy 2/4 - 2/4 = 0; balanced: recall x 1 -> 0, y 0 -> 1: 0.
        assert!(close(d.accuracy.estimate, 0.0) && close(d.balanced_accuracy.estimate, 0.0));
        // A resample is {g1, g1} (accuracy -1), {g1, g2} (0) or {g2, g2} (+1), with chances 1/4,
        // 1/2, 1/4; over 1000 draws both ends occur far more than 25 times, so the 2.5 and 97.5
        // percentiles are -1 and +1. Balanced accuracy: {g1, g1} has only class x: 0 - 1 = -1.
        assert!(close(d.accuracy.lo, -1.0) && close(d.accuracy.hi, 1.0), "{d:?}");
        assert!(close(d.balanced_accuracy.lo, -1.0) && close(d.balanced_accuracy.hi, 1.0), "{d:?}");
        // One resample, replayed by hand: draw 0's generator picks the groups.
        let one = compare_with(&a, &b, 1, 7).difference.unwrap();
        let mut rng = SplitMix64(mix64(7 ^ mix64(1)));
        let picks = [rng.below(2), rng.below(2)];
        let want = match picks.iter().sum::<usize>() {
            0 => -1.0,
            1 => 0.0,
            _ => 1.0,
        };
        assert!(close(one.accuracy.lo, want) && close(one.accuracy.hi, want), "{picks:?} {one:?}");
        // The same seed gives the same interval; no paired rows, no interval.
        assert_eq!(compare_with(&a, &b, 1000, 0).difference, Some(d));
        assert!(compare(&a, &[]).difference.is_none());
    }
}
