//! The pipeline's fourth stage: a row's readings become one decision. Each ordering's letter
//! probabilities are adjusted as the debias mode says (content-free calibration, the PriDe
//! prior, the batch prior), mapped from letter slots to options, and averaged by option; a
//! fitted temperature ([`crate::analysis::calibrate`]) then sharpens or flattens the result. Generation
//! takes the parsed letter. The math is in [`crate::debias`] and [`crate::analysis::calibrate`]; this
//! module applies it to a row.

use crate::config::{Mode, RunConfig};
use crate::debias::{self, DebiasMode};
use crate::formats::results::OrderingRecord;
use crate::math::{argmax, softmax};
use crate::pipeline::exec::Reading;
use crate::pipeline::plan::{Planned, Variant};
use std::collections::{BTreeMap, HashMap};

/// A row's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    pub orderings: Vec<OrderingRecord>,
    /// Probabilities by option index; `None` for an invalid generated reply.
    pub probs: Option<Vec<f64>>,
    pub predicted: Option<usize>,
    /// Whether the top option changed between orderings; `None` when one ordering was scored.
    pub order_unstable: Option<bool>,
    /// Tokens the row's longest prompt lost when its state was cut from the middle.
    pub truncated_tokens: Option<usize>,
}

/// Letter priors a debias mode estimates from the run's own readings before combining.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Priors {
    /// PriDe's slot prior by option count.
    pub pride: BTreeMap<usize, Vec<f64>>,
    /// Batch calibration's slot prior by option count, then by rotation (ordering index).
    pub batch: BTreeMap<usize, Vec<Vec<f64>>>,
}

/// The slot probabilities of real prompt `pi`: the softmax of its letters' logits, or past 26
/// options the product of each code's tokens' probabilities, the first read on the prompt and
/// the second on the [`Variant::Code`] branch of the first, each a softmax over the tokens that
/// may come there. The codes' probabilities sum to one, as the letters' do.
pub fn slot_probs(planned: &Planned, readings: &HashMap<usize, Reading>, pi: usize) -> Option<Vec<f64>> {
    let spec = &planned.prompts[pi];
    let first = softmax(&readings.get(&pi)?.logits);
    if spec.codes.is_empty() {
        return Some(first);
    }
    let Variant::Real(k) = spec.variant else { return Some(first) };
    // The branches follow their prompt ([`crate::pipeline::plan`]).
    let mut branches: HashMap<usize, Vec<f64>> = HashMap::new();
    for (bi, b) in planned.prompts.iter().enumerate().skip(pi + 1) {
        match b.variant {
            Variant::Code(kk, f) if b.row == spec.row && kk == k => {
                branches.insert(f, softmax(&readings.get(&bi)?.logits));
            }
            _ => break,
        }
    }
    spec.codes
        .iter()
        .map(|&(f, second)| match second {
            None => first.get(f).copied(),
            Some(j) => Some(first.get(f)? * branches.get(&f)?.get(j)?),
        })
        .collect()
}

/// Batch calibration's priors: by option count and rotation, the mean slot probabilities of
/// every row's reading under that rotation (every row of the job, done or not).
pub fn batch_prior(planned: &Planned, readings: &HashMap<usize, Reading>) -> BTreeMap<usize, Vec<Vec<f64>>> {
    let mut by: BTreeMap<usize, BTreeMap<usize, Vec<Vec<f64>>>> = BTreeMap::new();
    for (pi, spec) in planned.prompts.iter().enumerate() {
        let (Variant::Real(k), Some(p)) = (spec.variant, slot_probs(planned, readings, pi)) else { continue };
        let n = planned.row_orderings[spec.row].first().map_or(0, Vec::len);
        by.entry(n).or_default().entry(k).or_default().push(p);
    }
    by.into_iter().map(|(n, ks)| (n, ks.into_values().map(|rows| debias::batch_prior(&rows)).collect())).collect()
}

/// PriDe's prior by option count, from the readings of its sample rows (every permutation).
pub fn pride_prior(planned: &Planned, readings: &HashMap<usize, Reading>) -> BTreeMap<usize, Vec<f64>> {
    let mut by_n: BTreeMap<usize, Vec<debias::PrideRow>> = BTreeMap::new();
    for &ri in &planned.pride_sample {
        let ords = &planned.row_orderings[ri];
        let probs: Vec<Vec<f64>> = planned
            .prompts
            .iter()
            .enumerate()
            .filter(|(_, s)| s.row == ri && matches!(s.variant, Variant::Real(_)))
            .filter_map(|(pi, _)| slot_probs(planned, readings, pi))
            .collect();
        if probs.len() == ords.len() {
            by_n.entry(ords[0].len()).or_default().push((ords.clone(), probs));
        }
    }
    by_n.into_iter().map(|(n, s)| (n, debias::pride_prior(&s))).collect()
}

/// Combine the readings of row `ri`'s prompts.
pub fn combine_row(
    ri: usize,
    n_options: usize,
    planned: &Planned,
    readings: &HashMap<usize, Reading>,
    config: &RunConfig,
    priors: &Priors,
) -> Combined {
    let n = n_options;
    let ords = &planned.row_orderings[ri];
    let mine: Vec<(usize, &crate::pipeline::plan::Prompt)> =
        planned.prompts.iter().enumerate().filter(|(_, s)| s.row == ri).collect();
    let mut orderings = Vec::with_capacity(ords.len());
    let mut option_probs: Vec<Vec<f64>> = Vec::with_capacity(ords.len());
    let mut generated: Option<Option<usize>> = None;
    for (k, ord) in ords.iter().enumerate() {
        let Some((pi, spec)) = mine.iter().find(|(_, s)| s.variant == Variant::Real(k)) else { continue };
        let reading = readings.get(pi).cloned().unwrap_or_default();
        let slot_probs = match config.mode {
            Mode::Readout => slot_probs(planned, readings, *pi).unwrap_or_else(|| softmax(&reading.logits)),
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
            DebiasMode::Pride if ords.len() == 1 => match priors.pride.get(&n) {
                Some(prior) => debias::pride_debias(&slot_probs, prior),
                None => slot_probs.clone(),
            },
            DebiasMode::Batch => match priors.batch.get(&n).and_then(|p| p.get(k)) {
                Some(prior) => debias::prior_debias(&slot_probs, prior),
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
            let mut p = debias::average(&option_probs);
            if let Some(c) = &config.calibration {
                p = crate::config::apply_temperature(&p, c.temperature);
            }
            let best = argmax(&p);
            (Some(p), Some(best))
        }
    };
    Combined {
        orderings,
        probs,
        predicted,
        order_unstable: debias::order_unstable(&option_probs),
        truncated_tokens: planned.cuts.get(&ri).copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::plan::Prompt;

    fn prompt(variant: Variant, letters: Vec<u32>, codes: Vec<(usize, Option<usize>)>) -> Prompt {
        Prompt { row: 0, variant, text: String::new(), tokens: vec![1], letters, sha: String::new(), codes }
    }

    #[test]
    fn a_codes_probability_is_the_product_of_its_tokens() {
        // Three options: the first a one-token code, the other two sharing a first token.
        let planned = Planned {
            prompts: vec![
                prompt(Variant::Real(0), vec![10, 11], vec![(0, None), (1, Some(0)), (1, Some(1))]),
                prompt(Variant::Code(0, 1), vec![20, 21], vec![]),
            ],
            row_orderings: vec![vec![vec![0, 1, 2]]],
            pride_sample: vec![],
            cuts: HashMap::new(),
        };
        let reading = |logits: Vec<f32>| Reading { logits, ..Reading::default() };
        // First tokens: softmax(0, ln 3) = (1/4, 3/4); second tokens: softmax(0, ln 2) = (1/3, 2/3).
        let readings = HashMap::from([(0, reading(vec![0.0, 3f32.ln()])), (1, reading(vec![0.0, 2f32.ln()]))]);
        let p = slot_probs(&planned, &readings, 0).unwrap();
        let want = [0.25, 0.75 / 3.0, 0.75 * 2.0 / 3.0];
        for (g, w) in p.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{p:?}");
        }
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // Without its branch's reading, the code prompt has no probabilities yet.
        assert_eq!(slot_probs(&planned, &HashMap::from([(0, reading(vec![0.0, 0.0]))]), 0), None);
    }
}
