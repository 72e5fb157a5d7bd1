//! Debiasing: how the letter probabilities of several orderings of one criterion's options are
//! combined into one distribution over options. Small models answer partly by position (a
//! preference for `A`, say); showing the options in several orders and combining by option id,
//! or dividing out an estimate of the positional prior, removes much of that. This is pure
//! arithmetic on probabilities the engine already produced; the model is never called here.
//!
//! Spaces: the engine reports *slot* (letter) probabilities, `slot_probs[s]` for the letter at
//! slot `s`. An ordering maps slot → option index: slot `s` shows option `ordering[s]`.
//! [`to_option_space`] turns slot probabilities into option probabilities; combining
//! ([`average`], [`order_unstable`]) happens in option space, while the positional corrections
//! ([`calibrate`], [`pride_debias`]) act in slot space, before the mapping.
//!
//! Modes:
//! - `none`: one ordering (as written).
//! - `cyclic`: the `n` rotations, averaged by option id.
//! - `permutation`: all `n!` orders (at most [`PERMUTATION_LIMIT`] options), averaged.
//! - `calibrate`: contextual calibration (Zhao et al. 2021): per rotation, divide by the mean
//!   probabilities the model gives the content-free states [`CONTENT_FREE`], renormalise, map to
//!   option space, then average the rotations.
//! - `pride`: PriDe (Zheng et al. 2024, "Large Language Models Are Not Robust Multiple Choice
//!   Selectors"): estimate a prior over slots from a small sample of rows scored under all
//!   orderings ([`pride_sample`], [`pride_prior`]), then divide it out of every other row's
//!   single-ordering probabilities ([`pride_debias`]).
//! - `batch`: batch calibration (Zhou et al. 2024, "Batch Calibration: Rethinking Calibration
//!   for In-Context Learning and Prompt Engineering", ICLR 2024): every rotation is scored, as in
//!   `cyclic`; the letter prior of each rotation is the mean of the run's own slot probabilities
//!   under it over every row of that option count ([`batch_prior`]), divided out of each row's
//!   slot probabilities ([`prior_debias`]) before averaging. No extra prompts, but every row must
//!   be read before any is combined.

use crate::math::{argmax, SplitMix64};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The most options `permutation` (and `pride`'s sample) accept: 6! = 720 orderings.
pub const PERMUTATION_LIMIT: usize = 6;

/// Content-free states for contextual calibration.
pub const CONTENT_FREE: [&str; 3] = ["N/A", "", "[MASK]"];

/// Share of rows PriDe scores under all orderings to estimate its prior.
pub const PRIDE_SHARE: f64 = 0.05;

/// Divisors below this are raised to it, so a probability that underflowed to 0 cannot divide by 0.
const FLOOR: f64 = 1e-12;

/// How orderings are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum DebiasMode {
    #[default]
    None,
    Cyclic,
    Permutation,
    Calibrate,
    Pride,
    Batch,
}

impl DebiasMode {
    pub const ALL: [DebiasMode; 6] = [
        DebiasMode::None,
        DebiasMode::Cyclic,
        DebiasMode::Permutation,
        DebiasMode::Calibrate,
        DebiasMode::Pride,
        DebiasMode::Batch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DebiasMode::None => "none",
            DebiasMode::Cyclic => "cyclic",
            DebiasMode::Permutation => "permutation",
            DebiasMode::Calibrate => "calibrate",
            DebiasMode::Pride => "pride",
            DebiasMode::Batch => "batch",
        }
    }
}

impl fmt::Display for DebiasMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DebiasMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        DebiasMode::ALL.into_iter().find(|m| m.as_str() == t).ok_or_else(|| {
            format!("unknown debias mode `{s}`; choose one of: {}", DebiasMode::ALL.map(DebiasMode::as_str).join(", "))
        })
    }
}

fn factorial(n: usize) -> usize {
    (1..=n).product()
}

/// All permutations of `0..n` in lexicographic order.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    let mut p: Vec<usize> = (0..n).collect();
    let mut out = Vec::with_capacity(factorial(n));
    loop {
        out.push(p.clone());
        // Next permutation: the longest non-increasing suffix, swap its pivot, reverse it.
        let Some(i) = (1..n).rev().find(|&i| p[i - 1] < p[i]) else { return out };
        let j = (i..n).rev().find(|&j| p[j] > p[i - 1]).unwrap_or(i);
        p.swap(i - 1, j);
        p[i..].reverse();
    }
}

/// The orderings a mode scores for a criterion with `n_options` options. Each maps slot → option
/// index. For `pride` these are the orderings of the calibration sample only; the other rows are
/// scored in the identity ordering.
pub fn orderings(mode: DebiasMode, n_options: usize) -> Result<Vec<Vec<usize>>, String> {
    let n = n_options;
    if n == 0 {
        return Err("a criterion with no options has no orderings".into());
    }
    match mode {
        DebiasMode::None => Ok(vec![(0..n).collect()]),
        DebiasMode::Cyclic | DebiasMode::Calibrate | DebiasMode::Batch => {
            Ok((0..n).map(|r| (0..n).map(|i| (i + r) % n).collect()).collect())
        }
        DebiasMode::Permutation | DebiasMode::Pride => {
            if n > PERMUTATION_LIMIT {
                return Err(format!(
                    "debias mode `{mode}` scores every ordering of the options, and {n} options have {n}! of them; \
                     the limit is {PERMUTATION_LIMIT} options ({} orderings). Use `cyclic` ({n} rotations) instead",
                    factorial(PERMUTATION_LIMIT)
                ));
            }
            Ok(permutations(n))
        }
    }
}

/// Slot probabilities to option probabilities: option `ordering[s]` gets `slot_probs[s]`.
pub fn to_option_space(slot_probs: &[f64], ordering: &[usize]) -> Vec<f64> {
    let mut out = vec![0.0; ordering.len()];
    for (&p, &o) in slot_probs.iter().zip(ordering) {
        if let Some(v) = out.get_mut(o) {
            *v = p;
        }
    }
    out
}

/// Scale to sum 1; a vector with no positive finite mass becomes uniform.
fn normalise(mut v: Vec<f64>) -> Vec<f64> {
    let s: f64 = v.iter().sum();
    if s > 0.0 && s.is_finite() {
        v.iter_mut().for_each(|x| *x /= s);
    } else if !v.is_empty() {
        let u = 1.0 / v.len() as f64;
        v.iter_mut().for_each(|x| *x = u);
    }
    v
}

/// Mean by option id of each ordering's option probabilities, renormalised. The length is that
/// of the first ordering; empty input gives an empty vector.
pub fn average(per_ordering_option_probs: &[Vec<f64>]) -> Vec<f64> {
    let Some(first) = per_ordering_option_probs.first() else { return Vec::new() };
    let mut sum = vec![0.0; first.len()];
    for p in per_ordering_option_probs {
        for (s, v) in sum.iter_mut().zip(p) {
            *s += v;
        }
    }
    let k = per_ordering_option_probs.len() as f64;
    normalise(sum.into_iter().map(|s| s / k).collect())
}

/// Whether the predicted option (argmax in option space) differs between any two orderings;
/// `None` when fewer than two orderings were scored (not checked).
pub fn order_unstable(per_ordering_option_probs: &[Vec<f64>]) -> Option<bool> {
    let (first, rest) = per_ordering_option_probs.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let a = argmax(first);
    Some(rest.iter().any(|p| argmax(p) != a))
}

/// Contextual calibration in slot space: divide each slot's probability by the mean, over the
/// content-free states, of that slot's probability under the same ordering; renormalise. With no
/// content-free scores the probabilities come back unchanged (renormalised).
pub fn calibrate(slot_probs: &[f64], content_free_slot_probs: &[Vec<f64>]) -> Vec<f64> {
    if content_free_slot_probs.is_empty() {
        return normalise(slot_probs.to_vec());
    }
    let k = content_free_slot_probs.len() as f64;
    let out = slot_probs
        .iter()
        .enumerate()
        .map(|(s, &p)| {
            let m = content_free_slot_probs.iter().map(|cf| cf.get(s).copied().unwrap_or(0.0)).sum::<f64>() / k;
            p / m.max(FLOOR)
        })
        .collect();
    normalise(out)
}

/// The rows PriDe scores under all orderings: `max(1, round(share * n_rows))` distinct indices
/// (at most `n_rows`), chosen by a seeded shuffle, returned sorted. Empty when `n_rows == 0`.
pub fn pride_sample(n_rows: usize, share: f64, seed: u64) -> Vec<usize> {
    if n_rows == 0 {
        return Vec::new();
    }
    let want = if share.is_finite() && share > 0.0 { (share * n_rows as f64).round() as usize } else { 0 };
    let k = want.clamp(1, n_rows);
    // Partial Fisher-Yates: the first k places of a seeded shuffle.
    let mut idx: Vec<usize> = (0..n_rows).collect();
    let mut rng = SplitMix64(seed);
    for i in 0..k {
        let j = i + rng.below(n_rows - i);
        idx.swap(i, j);
    }
    idx.truncate(k);
    idx.sort_unstable();
    idx
}

/// One sampled row for [`pride_prior`]: its orderings and its slot probabilities under each.
pub type PrideRow = (Vec<Vec<usize>>, Vec<Vec<f64>>);

/// PriDe's prior over letter slots from sampled rows, each given as (its orderings, its slot
/// probabilities under each ordering). A row's estimate is the normalised geometric mean over its
/// orderings, `prior_row[s] ∝ exp(mean_o ln p_o[s])`: the option contents average out because
/// every option visits every slot, leaving the positional preference. The global prior is the
/// normalised mean of the row estimates.
///
/// All rows must have the same number of options (the caller keeps one prior per option count);
/// rows of another size than the first, or whose probability lists do not match their orderings,
/// are left out. Empty input gives an empty vector.
pub fn pride_prior(samples: &[PrideRow]) -> Vec<f64> {
    let Some(n) = samples.iter().find_map(|(_, probs)| probs.first().map(Vec::len)) else { return Vec::new() };
    let mut sum = vec![0.0; n];
    let mut rows = 0usize;
    for (ords, probs) in samples {
        if probs.is_empty() || ords.len() != probs.len() || probs.iter().any(|p| p.len() != n) {
            continue;
        }
        let k = probs.len() as f64;
        let row: Vec<f64> =
            (0..n).map(|s| (probs.iter().map(|p| p[s].max(FLOOR).ln()).sum::<f64>() / k).exp()).collect();
        for (acc, v) in sum.iter_mut().zip(normalise(row)) {
            *acc += v;
        }
        rows += 1;
    }
    if rows == 0 {
        return Vec::new();
    }
    normalise(sum)
}

/// Divide PriDe's slot prior out of one ordering's slot probabilities and renormalise. A prior of
/// the wrong length leaves the probabilities unchanged (renormalised).
pub fn pride_debias(slot_probs: &[f64], prior: &[f64]) -> Vec<f64> {
    prior_debias(slot_probs, prior)
}

/// Divide a slot prior out of slot probabilities and renormalise (PriDe's and batch
/// calibration's last step). A prior of the wrong length leaves the probabilities unchanged
/// (renormalised).
pub fn prior_debias(slot_probs: &[f64], prior: &[f64]) -> Vec<f64> {
    if prior.len() != slot_probs.len() {
        return normalise(slot_probs.to_vec());
    }
    normalise(slot_probs.iter().zip(prior).map(|(p, q)| p / q.max(FLOOR)).collect())
}

/// Batch calibration's prior for one ordering: the normalised mean of the slot probabilities
/// every row gave under it. Lists of another length than the first are left out; empty input
/// gives an empty vector.
pub fn batch_prior(slot_probs: &[Vec<f64>]) -> Vec<f64> {
    let Some(n) = slot_probs.first().map(Vec::len) else { return Vec::new() };
    let mut sum = vec![0.0; n];
    for p in slot_probs.iter().filter(|p| p.len() == n) {
        for (s, v) in sum.iter_mut().zip(p) {
            *s += v;
        }
    }
    normalise(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn modes_parse_and_print() {
        assert_eq!("cyclic".parse::<DebiasMode>().unwrap(), DebiasMode::Cyclic);
        assert_eq!(" PriDe ".parse::<DebiasMode>().unwrap(), DebiasMode::Pride);
        let e = "rotate".parse::<DebiasMode>().unwrap_err();
        assert_eq!(
            e,
            "unknown debias mode `rotate`; choose one of: none, cyclic, permutation, calibrate, pride, batch"
        );
        for m in DebiasMode::ALL {
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{m}\""));
            assert_eq!(serde_json::from_str::<DebiasMode>(&format!("\"{m}\"")).unwrap(), m);
        }
    }

    #[test]
    fn orderings_by_mode() {
        assert_eq!(orderings(DebiasMode::None, 3).unwrap(), vec![vec![0, 1, 2]]);
        // rotation r = [(i + r) % 3]
        let cyc = vec![vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1]];
        assert_eq!(orderings(DebiasMode::Cyclic, 3).unwrap(), cyc);
        assert_eq!(orderings(DebiasMode::Calibrate, 3).unwrap(), cyc);
        assert_eq!(orderings(DebiasMode::Batch, 3).unwrap(), cyc);
        let perms = orderings(DebiasMode::Permutation, 3).unwrap();
        assert_eq!(
            perms,
            vec![vec![0, 1, 2], vec![0, 2, 1], vec![1, 0, 2], vec![1, 2, 0], vec![2, 0, 1], vec![2, 1, 0]]
        );
        assert_eq!(orderings(DebiasMode::Permutation, 6).unwrap().len(), 720);
        assert_eq!(orderings(DebiasMode::Pride, 4).unwrap().len(), 24);
        assert_eq!(orderings(DebiasMode::Cyclic, 26).unwrap().len(), 26);
        let e = orderings(DebiasMode::Permutation, 7).unwrap_err();
        assert!(e.contains("limit is 6 options (720 orderings)") && e.contains("cyclic"), "{e}");
        assert!(orderings(DebiasMode::Pride, 7).is_err());
        assert!(orderings(DebiasMode::None, 0).is_err());
    }

    #[test]
    fn rotation_maps_slots_to_options() {
        // Ordering [1, 2, 0]: slot A shows option 1, B option 2, C option 0.
        // Slot probs (0.5, 0.3, 0.2) -> option 0 gets 0.2, option 1 0.5, option 2 0.3.
        assert!(close(&to_option_space(&[0.5, 0.3, 0.2], &[1, 2, 0]), &[0.2, 0.5, 0.3]));
        assert!(close(&to_option_space(&[0.5, 0.3, 0.2], &[0, 1, 2]), &[0.5, 0.3, 0.2]));
    }

    #[test]
    fn average_and_instability() {
        // A model that always says slot A: under the three rotations each option gets 0.6 once
        // and 0.2 twice, so the average is uniform and every ordering predicts a different option.
        let slot = [0.6, 0.2, 0.2];
        let per: Vec<Vec<f64>> =
            orderings(DebiasMode::Cyclic, 3).unwrap().iter().map(|o| to_option_space(&slot, o)).collect();
        assert!(close(&average(&per), &[1.0 / 3.0; 3]));
        assert_eq!(order_unstable(&per), Some(true));
        // (0.5, 0.5, 0) and (0.7, 0.1, 0.2): mean (0.6, 0.3, 0.1); both predict option 0.
        let stable = vec![vec![0.5, 0.5, 0.0], vec![0.7, 0.1, 0.2]];
        assert!(close(&average(&stable), &[0.6, 0.3, 0.1]));
        assert_eq!(order_unstable(&stable), Some(false));
        assert_eq!(order_unstable(&stable[..1]), None);
        assert_eq!(order_unstable(&[]), None);
        assert!(average(&[]).is_empty());
    }

    #[test]
    fn contextual_calibration() {
        // Content-free means (0.9 + 0.7) / 2 = 0.8, (0.1 + 0.3) / 2 = 0.2.
        // 0.6 / 0.8 = 0.75, 0.4 / 0.2 = 2 -> (0.75 / 2.75, 2 / 2.75) = (0.2727.., 0.7272..)
        let cf = vec![vec![0.9, 0.1], vec![0.7, 0.3]];
        assert!(close(&calibrate(&[0.6, 0.4], &cf), &[0.75 / 2.75, 2.0 / 2.75]));
        assert!(close(&calibrate(&[0.6, 0.4], &[]), &[0.6, 0.4]));
        // A zero content-free probability is floored, not a division by zero.
        let p = calibrate(&[0.5, 0.5], &[vec![1.0, 0.0]]);
        assert!(p.iter().all(|v| v.is_finite()) && p[1] > 0.99);
    }

    #[test]
    fn pride_sample_is_seeded() {
        let s = pride_sample(144, PRIDE_SHARE, 0);
        // round(0.05 * 144) = round(7.2) = 7
        assert_eq!(s.len(), 7);
        assert!(s.windows(2).all(|w| w[0] < w[1]) && s.iter().all(|&i| i < 144));
        assert_eq!(s, pride_sample(144, PRIDE_SHARE, 0));
        assert_ne!(s, pride_sample(144, PRIDE_SHARE, 1));
        assert_eq!(pride_sample(10, 0.05, 3).len(), 1); // max(1, round(0.5)) with round half away = 1
        assert_eq!(pride_sample(5, 2.0, 3), vec![0, 1, 2, 3, 4]);
        assert!(pride_sample(0, 0.05, 0).is_empty());
    }

    #[test]
    fn pride_prior_and_debias() {
        // One row, two orderings of 2 options, slot probs (0.8, 0.2) and (0.5, 0.5):
        // geometric means sqrt(0.4) and sqrt(0.1); normalised: 2/3 and 1/3 (sqrt 0.4 = 2 sqrt 0.1).
        let row1 = (vec![vec![0, 1], vec![1, 0]], vec![vec![0.8, 0.2], vec![0.5, 0.5]]);
        assert!(close(&pride_prior(std::slice::from_ref(&row1)), &[2.0 / 3.0, 1.0 / 3.0]));
        // A second row with a flat estimate (0.5, 0.5): global mean (7/12, 5/12).
        let row2 = (vec![vec![0, 1], vec![1, 0]], vec![vec![0.5, 0.5], vec![0.5, 0.5]]);
        assert!(close(&pride_prior(&[row1.clone(), row2]), &[7.0 / 12.0, 5.0 / 12.0]));
        // A row of another size is left out.
        let odd = (vec![vec![0, 1, 2]], vec![vec![0.2, 0.3, 0.5]]);
        assert!(close(&pride_prior(&[row1, odd]), &[2.0 / 3.0, 1.0 / 3.0]));
        assert!(pride_prior(&[]).is_empty());
        // Debias (0.5, 0.5) by prior (2/3, 1/3): (0.75, 1.5) -> (1/3, 2/3).
        assert!(close(&pride_debias(&[0.5, 0.5], &[2.0 / 3.0, 1.0 / 3.0]), &[1.0 / 3.0, 2.0 / 3.0]));
        assert!(close(&pride_debias(&[0.5, 0.5], &[1.0]), &[0.5, 0.5]));
    }

    #[test]
    fn batch_calibration_by_hand() {
        // Three rows under one ordering: (0.7, 0.3), (0.9, 0.1), (0.5, 0.5); mean (0.7, 0.3).
        let rows = vec![vec![0.7, 0.3], vec![0.9, 0.1], vec![0.5, 0.5]];
        let prior = batch_prior(&rows);
        assert!(close(&prior, &[0.7, 0.3]));
        // Row 1 is the prior itself: uniform. Row 3: (0.5/0.7, 0.5/0.3) = (5/7, 5/3) -> (0.3, 0.7).
        assert!(close(&prior_debias(&rows[0], &prior), &[0.5, 0.5]));
        assert!(close(&prior_debias(&rows[2], &prior), &[0.3, 0.7]));
        // A list of another length is left out; no rows, no prior.
        assert!(close(&batch_prior(&[vec![0.7, 0.3], vec![0.2, 0.3, 0.5]]), &[0.7, 0.3]));
        assert!(batch_prior(&[]).is_empty());
    }
}

#[cfg(test)]
mod position_bias_tests {
    use super::*;

    #[test]
    fn a_pure_position_bias_vanishes_under_cyclic_averaging() {
        // The model ignores the content and puts 0.7 / 0.2 / 0.1 on letters A / B / C.
        let bias = [0.7, 0.2, 0.1];
        let per: Vec<Vec<f64>> =
            orderings(DebiasMode::Cyclic, 3).unwrap().iter().map(|ord| to_option_space(&bias, ord)).collect();
        // Each option sits in each slot once: every option gets (0.7 + 0.2 + 0.1) / 3.
        for p in average(&per) {
            assert!((p - 1.0 / 3.0).abs() < 1e-12);
        }
        // And the row is flagged: each rotation picks a different option.
        assert_eq!(order_unstable(&per), Some(true));
    }

    #[test]
    fn calibration_removes_a_position_bias_the_content_free_state_shows() {
        // Content-free states show the same bias; the real state adds evidence for slot 2.
        let cf = vec![vec![0.6, 0.3, 0.1]; 3];
        let real = [0.5, 0.25, 0.25];
        let p = calibrate(&real, &cf);
        // 0.5/0.6, 0.25/0.3, 0.25/0.1 = 0.833, 0.833, 2.5 → / 4.1667
        assert!((p[2] - 2.5 / (2.5 + 2.0 * 0.5 / 0.6)).abs() < 1e-9);
        assert_eq!(crate::math::argmax(&p), 2);
    }
}
