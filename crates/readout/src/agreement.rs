//! Agreement between two raters on one criterion: the judge and a person, or two runs of the
//! judge. Before anyone quotes a share the judge measured, they need to know how often the judge
//! and a person give the same answer, and how much of that is more than chance; this module
//! gives the figures people already know how to read (raw agreement, Cohen's κ, Krippendorff's α)
//! with a group bootstrap interval, and the pairs to look at. Pure functions: no model, no files.
//!
//! Conventions:
//! - Categories are option indices `0..k`. A rating is `Option<usize>`: `None` is missing, and a
//!   value `>= k` is treated as missing too (scikit-learn's `confusion_matrix(labels=...)` drops
//!   such pairs the same way; the `krippendorff` package would refuse them).
//! - [`Scale::Nominal`]: any two different options disagree equally. [`Scale::Interval`]: the
//!   options of a `score` criterion are ordered levels, and two ratings disagree by the
//!   difference of their indices (squared, as both α's interval metric and quadratic κ do).
//! - [`cohen_kappa`] equals scikit-learn's `cohen_kappa_score(y1, y2, labels=range(k),
//!   weights=...)`: `1 − Σ w·observed / Σ w·expected` with `expected = row sums × column sums / n`.
//!   It is `None` where scikit-learn gives nan (the weighted expected disagreement is 0: one
//!   category only) or raises (no pairs).
//! - [`krippendorff_alpha`] equals the `krippendorff` package's `alpha(reliability_data,
//!   level_of_measurement='nominal' | 'interval', value_domain=range(k))`, through the
//!   coincidence matrix: a unit with `m ≥ 2` values adds `(n_c n_k − [c = k] n_c) / (m − 1)` to
//!   `o[c][k]`; `n_c` are the column sums of `o`, `n` their total, and
//!   `α = 1 − (n − 1) Σ o d / Σ (n_c n_k − [c = k] n_c) d`. Units with fewer than 2 values are left
//!   out (they add nothing). It is `None` where the package raises (`k < 2`, or no unit with two
//!   values) and where it gives nan (expected disagreement 0: every pairable value the same).
//! - [`agreement`]'s interval is a group bootstrap: groups (a text, or whatever the caller says
//!   belongs together) are drawn with replacement, each draw bringing all its rows, as
//!   [`crate::metrics`] does; the 2.5 and 97.5 percentiles of each figure are taken over the
//!   resamples where that figure is defined.

use crate::math::{mix64, SplitMix64};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Coverage of the bootstrap interval.
pub const INTERVAL_LEVEL: f64 = 0.95;

/// How far apart two different ratings are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Options with no order: two different options are one disagreement apart.
    Nominal,
    /// Ordered levels of a `score` criterion: the distance is the difference of the indices.
    Interval,
}

/// The weights of Cohen's κ on a disagreement between options `i` and `j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Weights {
    /// 1 for any disagreement (the plain κ).
    None,
    /// `|i − j|`.
    Linear,
    /// `(i − j)²`.
    Quadratic,
}

impl Weights {
    fn at(self, i: usize, j: usize) -> f64 {
        let d = i.abs_diff(j) as f64;
        match self {
            Weights::None => (i != j) as u8 as f64,
            Weights::Linear => d,
            Weights::Quadratic => d * d,
        }
    }
}

impl Scale {
    /// Krippendorff's distance between options `c` and `k` (the squared difference on the
    /// interval scale).
    fn distance(self, c: usize, k: usize) -> f64 {
        match self {
            Scale::Nominal => (c != k) as u8 as f64,
            Scale::Interval => {
                let d = c.abs_diff(k) as f64;
                d * d
            }
        }
    }

    /// The κ that reads this scale: plain for nominal options, quadratic for ordered levels.
    fn kappa_weights(self) -> Weights {
        match self {
            Scale::Nominal => Weights::None,
            Scale::Interval => Weights::Quadratic,
        }
    }
}

/// One row to compare: the two ratings and the group it is resampled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rated<'a> {
    pub a: Option<usize>,
    pub b: Option<usize>,
    /// Rows of one group are drawn together by the bootstrap (the criteria of one text, say).
    pub group: &'a str,
}

/// A figure and its bootstrap interval; each is null when undefined (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Figure {
    pub value: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

/// How well two raters agree on one criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Agreement {
    pub scale: Scale,
    /// Rows both raters rated.
    pub n: usize,
    /// Rows where at least one side is missing (or out of range); they enter no figure.
    pub missing: usize,
    /// Share of the `n` rows where the two ratings are equal.
    pub raw: Figure,
    /// Cohen's κ; quadratic-weighted on the interval scale.
    pub kappa: Figure,
    /// Krippendorff's α at `scale`.
    pub alpha: Figure,
    /// Counts of (first rater's option, second rater's option) over the `n` rows.
    pub confusion: Vec<Vec<usize>>,
    /// Indices into the input of the rows both rated differently: the ones to read.
    pub disagreements: Vec<usize>,
    pub level: f64,
    pub resamples: usize,
    pub seed: u64,
}

/// A rating inside `0..k`, else `None`.
fn in_range(r: Option<usize>, k: usize) -> Option<usize> {
    r.filter(|&v| v < k)
}

/// Counts of (first, second) over the pairs, `k × k`; rows are the first rater. Pairs with a
/// value `>= k` are left out.
pub fn confusion(pairs: &[(usize, usize)], k: usize) -> Vec<Vec<usize>> {
    let mut c = vec![vec![0usize; k]; k];
    for &(a, b) in pairs {
        if a < k && b < k {
            c[a][b] += 1;
        }
    }
    c
}

/// Cohen's κ of a `k × k` table of counts in row-major order (rows: first rater); `None` without
/// counts or when the weighted expected disagreement is 0. Follows scikit-learn's arithmetic.
fn kappa_of_table(table: &[f64], k: usize, weights: Weights) -> Option<f64> {
    let rows: Vec<f64> = (0..k).map(|i| (0..k).map(|j| table[i * k + j]).sum()).collect();
    let cols: Vec<f64> = (0..k).map(|j| (0..k).map(|i| table[i * k + j]).sum()).collect();
    let n: f64 = cols.iter().sum();
    if n == 0.0 {
        return None;
    }
    let (mut observed, mut expected) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            let w = weights.at(i, j);
            observed += w * table[i * k + j];
            expected += w * (rows[i] * cols[j] / n);
        }
    }
    (expected != 0.0).then(|| 1.0 - observed / expected)
}

/// Cohen's κ of two raters over `pairs` (first, second), options `0..k`, as scikit-learn's
/// `cohen_kappa_score(y1, y2, labels=range(k), weights=...)`. `None` where it gives nan (one
/// category only: the expected disagreement is 0) or raises (no pairs).
pub fn cohen_kappa(pairs: &[(usize, usize)], k: usize, weights: Weights) -> Option<f64> {
    let table: Vec<f64> = confusion(pairs, k).into_iter().flatten().map(|c| c as f64).collect();
    kappa_of_table(&table, k, weights)
}

/// α from a `k × k` coincidence matrix in row-major order; the package's arithmetic.
fn alpha_of_coincidences(o: &[f64], k: usize, scale: Scale) -> Option<f64> {
    if k < 2 {
        return None;
    }
    let n_v: Vec<f64> = (0..k).map(|j| (0..k).map(|i| o[i * k + j]).sum()).collect();
    let n: f64 = n_v.iter().sum();
    if n < 2.0 {
        return None;
    }
    let (mut observed, mut expected) = (0.0, 0.0);
    for c in 0..k {
        for j in 0..k {
            let d = scale.distance(c, j);
            let e = (n_v[c] * n_v[j] - if c == j { n_v[c] } else { 0.0 }) / (n - 1.0);
            observed += o[c * k + j] * d;
            expected += e * d;
        }
    }
    (expected != 0.0).then(|| 1.0 - observed / expected)
}

/// Krippendorff's α over units, each the values its raters gave (`None` = missing; a value
/// `>= k` counts as missing), options `0..k`, as the `krippendorff` package's `alpha(...,
/// value_domain=range(k))`. Units with fewer than two values are left out. `None` when `k < 2`
/// or no unit has two values (the package raises) and when every pairable value is the same
/// option, so that the expected disagreement is 0 (the package divides 0 by 0 and gives nan).
pub fn krippendorff_alpha(units: &[Vec<Option<usize>>], k: usize, scale: Scale) -> Option<f64> {
    let mut o = vec![0.0; k * k];
    let mut counts = vec![0usize; k];
    for unit in units {
        counts.iter_mut().for_each(|c| *c = 0);
        for v in unit.iter().filter_map(|&v| in_range(v, k)) {
            counts[v] += 1;
        }
        let m: usize = counts.iter().sum();
        if m < 2 {
            continue;
        }
        for c in 0..k {
            for j in 0..k {
                let pairs = counts[c] * counts[j] - if c == j { counts[c] } else { 0 };
                o[c * k + j] += pairs as f64 / (m - 1) as f64;
            }
        }
    }
    alpha_of_coincidences(&o, k, scale)
}

/// (raw, κ, α) of a two-rater table of counts (row-major, `k × k`). With two values a unit, the
/// coincidence matrix is the table plus its transpose.
fn figures(table: &[usize], k: usize, scale: Scale) -> [Option<f64>; 3] {
    let t: Vec<f64> = table.iter().map(|&c| c as f64).collect();
    let n: f64 = t.iter().sum();
    let same: f64 = (0..k).map(|i| t[i * k + i]).sum();
    let raw = (n > 0.0).then(|| same / n);
    let mut o = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..k {
            o[i * k + j] = t[i * k + j] + t[j * k + i];
        }
    }
    [raw, kappa_of_table(&t, k, scale.kappa_weights()), alpha_of_coincidences(&o, k, scale)]
}

/// Percentile by linear interpolation between order statistics (NumPy's default), as
/// [`crate::metrics`] takes it; `None` for no values.
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let h = q * last as f64;
    let i = h.floor() as usize;
    let j = (i + 1).min(last);
    Some(sorted[i] + (h - i as f64) * (sorted[j] - sorted[i]))
}

/// How well two raters agree over `rows` on options `0..k`: the counts, raw agreement, κ (plain
/// on the nominal scale, quadratic on the interval scale) and α at `scale`, each with a
/// [`INTERVAL_LEVEL`] group bootstrap interval over `resamples` resamples. Resample `r` draws with
/// its own generator, `SplitMix64(mix64(seed ^ mix64(r + 1)))`, so the result does not depend on
/// thread scheduling. Only groups with at least one row both rated are drawn (the others hold
/// nothing to agree on). No rows, no resamples or no pairs: the intervals are null.
pub fn agreement(rows: &[Rated], k: usize, scale: Scale, resamples: usize, seed: u64) -> Agreement {
    let mut table = vec![0usize; k * k];
    let mut disagreements = Vec::new();
    let mut groups: HashMap<&str, usize> = HashMap::new();
    let mut cells: Vec<Vec<usize>> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let (Some(a), Some(b)) = (in_range(r.a, k), in_range(r.b, k)) else { continue };
        table[a * k + b] += 1;
        if a != b {
            disagreements.push(i);
        }
        let ng = groups.len();
        let g = *groups.entry(r.group).or_insert(ng);
        if g == cells.len() {
            cells.push(Vec::new());
        }
        cells[g].push(a * k + b);
    }
    let n = table.iter().sum::<usize>();
    let point = figures(&table, k, scale);

    let ng = cells.len();
    let mut draws: [Vec<f64>; 3] = Default::default();
    if ng > 0 && resamples > 0 {
        let resampled: Vec<[Option<f64>; 3]> = (0..resamples)
            .into_par_iter()
            .map(|r| {
                let mut rng = SplitMix64(mix64(seed ^ mix64(r as u64 + 1)));
                let mut t = vec![0usize; k * k];
                for _ in 0..ng {
                    for &cell in &cells[rng.below(ng)] {
                        t[cell] += 1;
                    }
                }
                figures(&t, k, scale)
            })
            .collect();
        for (f, d) in draws.iter_mut().enumerate() {
            d.extend(resampled.iter().filter_map(|v| v[f]));
            d.sort_by(f64::total_cmp);
        }
    }
    let tail = (1.0 - INTERVAL_LEVEL) / 2.0;
    let figure =
        |f: usize| Figure { value: point[f], lo: percentile(&draws[f], tail), hi: percentile(&draws[f], 1.0 - tail) };
    Agreement {
        scale,
        n,
        missing: rows.len() - n,
        raw: figure(0),
        kappa: figure(1),
        alpha: figure(2),
        confusion: (0..k).map(|i| table[i * k..(i + 1) * k].to_vec()).collect(),
        disagreements,
        level: INTERVAL_LEVEL,
        resamples,
        seed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// `count` copies of `(a, b)`.
    fn repeat(a: usize, b: usize, count: usize) -> Vec<(usize, usize)> {
        vec![(a, b); count]
    }

    #[test]
    fn kappa_two_by_two_by_hand() {
        // (0,0) 20, (0,1) 5, (1,0) 10, (1,1) 15; n = 50.
        // Observed agreement p_o = (20 + 15) / 50 = 0.7.
        // First rater 25 / 25, second 30 / 20: p_e = (25·30 + 25·20) / 50² = 1250 / 2500 = 0.5.
        // κ = (0.7 − 0.5) / (1 − 0.5) = 0.4. With two options every weighting gives the same.
        let pairs = [repeat(0, 0, 20), repeat(0, 1, 5), repeat(1, 0, 10), repeat(1, 1, 15)].concat();
        assert_eq!(confusion(&pairs, 2), vec![vec![20, 5], vec![10, 15]]);
        for w in [Weights::None, Weights::Linear, Weights::Quadratic] {
            assert!(close(cohen_kappa(&pairs, 2, w).unwrap(), 0.4), "{w:?}");
        }
    }

    #[test]
    fn weighted_kappa_by_hand() {
        // (0,0), (1,1), (2,2), (0,1): rows 2,1,1; columns 1,2,1; n = 4.
        // Expected counts E = rows × columns / 4 = ¼ [[2,4,2],[1,2,1],[1,2,1]].
        // Plain: observed off-diagonal 1, expected off-diagonal 4 − (2+2+1)/4 = 11/4: κ = 1 − 4/11 = 7/11.
        // Linear: Σ w·O = 1; Σ w·E = ¼ (4·1 + 2·2 + 1·1 + 1·1 + 1·2 + 2·1) = 14/4: κ = 1 − 2/7 = 5/7.
        // Quadratic: Σ w·E = ¼ (4·1 + 2·4 + 1·1 + 1·1 + 1·4 + 2·1) = 20/4 = 5: κ = 1 − 1/5 = 0.8.
        let pairs = [(0, 0), (1, 1), (2, 2), (0, 1)];
        assert!(close(cohen_kappa(&pairs, 3, Weights::None).unwrap(), 7.0 / 11.0));
        assert!(close(cohen_kappa(&pairs, 3, Weights::Linear).unwrap(), 5.0 / 7.0));
        assert!(close(cohen_kappa(&pairs, 3, Weights::Quadratic).unwrap(), 0.8));
    }

    #[test]
    fn kappa_undefined() {
        // One category: expected disagreement 0.
        assert_eq!(cohen_kappa(&[(0, 0), (0, 0)], 2, Weights::None), None);
        assert_eq!(cohen_kappa(&[], 2, Weights::None), None);
        assert_eq!(cohen_kappa(&[(0, 1)], 0, Weights::None), None);
        // A pair out of range is left out, as scikit-learn's `labels` does.
        assert_eq!(cohen_kappa(&[(0, 5), (0, 0), (1, 1)], 2, Weights::None), Some(1.0));
    }

    #[test]
    fn alpha_with_a_missing_value_by_hand() {
        // Units (0,0,–), (1,1,1), (0,1,–), (1,–,–); the last has one value and is left out.
        // o[0][0] = 2·1/1 = 2; o[1][1] = (3·3 − 3)/2 = 3; o[0][1] = o[1][0] = 1.
        // n_0 = 3, n_1 = 4, n = 7. Observed Σ o d = 2; expected Σ n_c n_k d / (n − 1) = 2·12/6 = 4.
        // α = 1 − 2/4 = 0.5, on both scales (two options are 1 apart either way).
        let units = vec![
            vec![Some(0), Some(0), None],
            vec![Some(1), Some(1), Some(1)],
            vec![Some(0), Some(1), None],
            vec![Some(1), None, None],
        ];
        assert!(close(krippendorff_alpha(&units, 2, Scale::Nominal).unwrap(), 0.5));
        assert!(close(krippendorff_alpha(&units, 2, Scale::Interval).unwrap(), 0.5));
        // Interval, three levels: (0,2), (2,2), (0,0). o[0][2] = o[2][0] = 1, o[0][0] = o[2][2] = 2;
        // n_0 = n_2 = 3, n = 6. Observed 2·4 = 8; expected 2·9·4/5 = 14.4: α = 1 − 8/14.4 = 4/9.
        let units = vec![vec![Some(0), Some(2)], vec![Some(2), Some(2)], vec![Some(0), Some(0)]];
        assert!(close(krippendorff_alpha(&units, 3, Scale::Interval).unwrap(), 4.0 / 9.0));
    }

    #[test]
    fn alpha_undefined() {
        let same = vec![vec![Some(1), Some(1)], vec![Some(1), None, Some(1)]];
        assert_eq!(krippendorff_alpha(&same, 3, Scale::Nominal), None);
        assert_eq!(krippendorff_alpha(&[], 3, Scale::Nominal), None);
        assert_eq!(krippendorff_alpha(&[vec![Some(0), None], vec![None, Some(1)]], 2, Scale::Nominal), None);
        assert_eq!(krippendorff_alpha(&[vec![Some(0), Some(0)]], 1, Scale::Nominal), None);
    }

    fn rated(a: Option<usize>, b: Option<usize>, group: &str) -> Rated<'_> {
        Rated { a, b, group }
    }

    #[test]
    fn agreement_counts_and_figures() {
        let rows = vec![
            rated(Some(0), Some(0), "t1"),
            rated(Some(0), Some(1), "t1"),
            rated(None, Some(1), "t2"),
            rated(Some(1), Some(1), "t2"),
            rated(Some(2), Some(1), "t3"),
            rated(Some(2), Some(2), "t3"),
            rated(Some(7), Some(2), "t4"), // out of range: missing
        ];
        let ag = agreement(&rows, 3, Scale::Interval, 200, 3);
        assert_eq!((ag.n, ag.missing), (5, 2));
        assert_eq!(ag.disagreements, vec![1, 4]);
        assert_eq!(ag.confusion, vec![vec![1, 1, 0], vec![0, 1, 0], vec![0, 1, 1]]);
        assert!(close(ag.raw.value.unwrap(), 0.6));
        let pairs = [(0, 0), (0, 1), (1, 1), (2, 1), (2, 2)];
        assert!(close(ag.kappa.value.unwrap(), cohen_kappa(&pairs, 3, Weights::Quadratic).unwrap()));
        let units: Vec<Vec<Option<usize>>> = pairs.iter().map(|&(a, b)| vec![Some(a), Some(b)]).collect();
        assert!(close(ag.alpha.value.unwrap(), krippendorff_alpha(&units, 3, Scale::Interval).unwrap()));
        for f in [ag.raw, ag.kappa, ag.alpha] {
            let (lo, hi) = (f.lo.unwrap(), f.hi.unwrap());
            assert!(lo <= hi, "{f:?}");
        }
        // Deterministic for a seed; on 40 groups another seed moves the intervals.
        assert_eq!(agreement(&rows, 3, Scale::Interval, 200, 3), ag);
        let many: Vec<String> = (0..40).map(|g| format!("g{g}")).collect();
        let rows: Vec<Rated> = many
            .iter()
            .enumerate()
            .flat_map(|(g, name)| [rated(Some(g % 3), Some((g / 2) % 3), name), rated(Some(g % 2), Some(g % 2), name)])
            .collect();
        let (one, other) = (agreement(&rows, 3, Scale::Nominal, 300, 1), agreement(&rows, 3, Scale::Nominal, 300, 2));
        assert_eq!(one, agreement(&rows, 3, Scale::Nominal, 300, 1));
        assert_eq!(one.kappa.value, other.kappa.value);
        assert_ne!((one.kappa.lo, one.kappa.hi, one.alpha.lo), (other.kappa.lo, other.kappa.hi, other.alpha.lo));
        let json = serde_json::to_string(&ag).unwrap();
        assert_eq!(serde_json::from_str::<Agreement>(&json).unwrap(), ag);
        assert!(json.contains("\"scale\":\"interval\""));
    }

    #[test]
    fn agreement_undefined() {
        let empty = agreement(&[], 3, Scale::Nominal, 100, 0);
        assert_eq!((empty.n, empty.missing), (0, 0));
        for f in [empty.raw, empty.kappa, empty.alpha] {
            assert_eq!(f, Figure { value: None, lo: None, hi: None });
        }
        // One category: raw agreement 1, κ and α undefined in every resample too.
        let rows = vec![rated(Some(1), Some(1), "a"), rated(Some(1), Some(1), "b")];
        let one = agreement(&rows, 3, Scale::Nominal, 100, 0);
        assert_eq!(one.raw, Figure { value: Some(1.0), lo: Some(1.0), hi: Some(1.0) });
        assert_eq!(one.kappa, Figure { value: None, lo: None, hi: None });
        assert_eq!(one.alpha, Figure { value: None, lo: None, hi: None });
        // No resamples: the values without intervals.
        let none = agreement(&rows, 3, Scale::Nominal, 0, 0);
        assert_eq!(none.raw, Figure { value: Some(1.0), lo: None, hi: None });
    }

    #[test]
    fn bootstrap_skips_undefined_resamples() {
        // Group a: (0,0). Group b: (0,1), (1,1). A resample is two draws:
        // a+a: raw 1, κ undefined (one category) and skipped for κ only;
        // a+b: raw 2/3; rows 2,1, columns 1,2: p_e = 4/9, κ = (2/3 − 4/9) / (5/9) = 0.4;
        // b+b: raw 1/2; rows 2,2, columns 0,4: p_e = 1/2, κ = 0.
        // So raw spans [1/2, 1] and κ [0, 0.4] (each case has chance ≥ 1/4 in 400 resamples).
        let rows = vec![rated(Some(0), Some(0), "a"), rated(Some(0), Some(1), "b"), rated(Some(1), Some(1), "b")];
        let ag = agreement(&rows, 2, Scale::Nominal, 400, 11);
        assert!(close(ag.kappa.value.unwrap(), 0.4));
        assert_eq!((ag.raw.lo, ag.raw.hi), (Some(0.5), Some(1.0)));
        assert!(close(ag.kappa.lo.unwrap(), 0.0) && close(ag.kappa.hi.unwrap(), 0.4), "{:?}", ag.kappa);
    }

    /// The cases `bench/agreement-references.py` computed with scikit-learn and `krippendorff`.
    #[test]
    fn matches_the_python_packages() {
        let doc: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/agreement-references.json"
        )))
        .unwrap();
        let ints =
            |v: &Value| -> Vec<usize> { v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect() };
        let check = |name: &str, got: Option<f64>, want: &Value| match want.as_f64() {
            Some(w) => {
                let g = got.unwrap_or_else(|| panic!("{name}: None, expected {w}"));
                assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{name}: {g} vs {w}");
            }
            None => assert_eq!(got, None, "{name}: expected null"),
        };
        let kappas = doc["kappa"].as_array().unwrap();
        assert!(kappas.len() >= 10);
        for c in kappas {
            let pairs: Vec<(usize, usize)> = ints(&c["y1"]).into_iter().zip(ints(&c["y2"])).collect();
            let weights = match c["weights"].as_str().unwrap() {
                "none" => Weights::None,
                "linear" => Weights::Linear,
                _ => Weights::Quadratic,
            };
            let k = c["k"].as_u64().unwrap() as usize;
            check(c["name"].as_str().unwrap(), cohen_kappa(&pairs, k, weights), &c["expected"]);
        }
        let alphas = doc["alpha"].as_array().unwrap();
        assert!(alphas.len() >= 10);
        for c in alphas {
            let raters: Vec<Vec<Option<usize>>> = c["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| row.as_array().unwrap().iter().map(|v| v.as_u64().map(|x| x as usize)).collect())
                .collect();
            let units: Vec<Vec<Option<usize>>> =
                (0..raters[0].len()).map(|u| raters.iter().map(|r| r[u]).collect()).collect();
            let scale = if c["level"] == "nominal" { Scale::Nominal } else { Scale::Interval };
            let k = c["k"].as_u64().unwrap() as usize;
            check(c["name"].as_str().unwrap(), krippendorff_alpha(&units, k, scale), &c["expected"]);
        }
    }
}
