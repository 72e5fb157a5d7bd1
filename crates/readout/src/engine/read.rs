//! What a pass reads from its hidden states: at each leaf's end the answer letters' logits and
//! the share of the next-token distribution on them (the full head, the head pruned to the
//! letters, or on a GPU the letters and each row's normaliser only), or at every row the full
//! distribution reduced to what a log-likelihood needs ([`TokenRead`]).

use crate::engine::model::Transformer;
use crate::engine::{Readout, TokenRead};
use crate::error::Result;
use candle_core::Tensor;

/// Letter logits at `rows` of `hidden`; `reads[i]` are the tokens read at `rows[i]`; `prune`: the
/// head cut to the letters read (`--prune-head`).
pub(crate) fn letters(
    model: &Transformer,
    hidden: &Tensor,
    rows: &[u32],
    reads: &[&[u32]],
    prune: bool,
) -> Result<Vec<Readout>> {
    if prune {
        let mut all: Vec<u32> = reads.iter().flat_map(|r| r.iter().copied()).collect();
        all.sort_unstable();
        all.dedup();
        let logits: Vec<Vec<f32>> = model.head_at(hidden, rows, Some(&all))?.to_vec2()?;
        Ok(reads
            .iter()
            .zip(logits)
            .map(|(read, row)| Readout {
                logits: read.iter().map(|id| row[all.binary_search(id).unwrap_or(0)]).collect(),
                letter_mass: None,
            })
            .collect())
    } else if !model.device.is_cpu() {
        // On a GPU the full rows stay there: only the letters' logits and each row's
        // log-sum-exp over the vocabulary come back.
        let mut all: Vec<u32> = reads.iter().flat_map(|r| r.iter().copied()).collect();
        all.sort_unstable();
        all.dedup();
        let ids = Tensor::from_slice(&all, all.len(), &model.device)?;
        let logits = model.head_at(hidden, rows, None)?;
        let m = logits.max_keepdim(1)?;
        let lse = (logits.broadcast_sub(&m)?.exp()?.sum_keepdim(1)?.log()? + &m)?.squeeze(1)?.to_vec1::<f32>()?;
        let picked: Vec<Vec<f32>> = logits.index_select(&ids, 1)?.to_vec2()?;
        Ok(reads
            .iter()
            .zip(picked.iter().zip(lse))
            .map(|(read, (row, lse))| {
                let picked: Vec<f32> = read.iter().map(|id| row[all.binary_search(id).unwrap_or(0)]).collect();
                let mass = (crate::math::log_sum_exp(&picked) - lse).exp();
                Readout { logits: picked, letter_mass: Some(mass) }
            })
            .collect())
    } else {
        // A few rows at a time: a row of full logits is the vocabulary in f32 (600 KB for
        // Qwen3's), and a pass reads hundreds of rows; only the letters' logits and the
        // row's mass on them are kept.
        let mut out = Vec::with_capacity(rows.len());
        for (rows, reads) in rows.chunks(HEAD_ROWS).zip(reads.chunks(HEAD_ROWS)) {
            let logits: Vec<Vec<f32>> = model.head_at(hidden, rows, None)?.to_vec2()?;
            out.extend(reads.iter().zip(logits).map(|(read, row)| {
                let picked: Vec<f32> =
                    read.iter().map(|&id| row.get(id as usize).copied().unwrap_or(f32::NEG_INFINITY)).collect();
                let mass = (crate::math::log_sum_exp(&picked) - crate::math::log_sum_exp(&row)).exp();
                Readout { logits: picked, letter_mass: Some(mass) }
            }));
        }
        Ok(out)
    }
}

/// The full next-token distribution at `rows` of `hidden`, reduced to a [`TokenRead`] each
/// (`reads[i]`: the tokens whose logits row `i` keeps). A few rows at a time, as [`letters`]
/// does on the CPU: a row is the whole vocabulary in f32.
/// `top`: how many of the most likely tokens each keeps too ([`TokenRead::top`]).
pub(crate) fn rows(
    model: &Transformer,
    hidden: &Tensor,
    rows: &[u32],
    reads: &[&[u32]],
    top: usize,
) -> Result<Vec<TokenRead>> {
    let mut out = Vec::with_capacity(rows.len());
    for (rows, reads) in rows.chunks(HEAD_ROWS).zip(reads.chunks(HEAD_ROWS)) {
        let logits: Vec<Vec<f32>> = model.head_at(hidden, rows, None)?.to_vec2()?;
        out.extend(reads.iter().zip(logits).map(|(read, row)| token_read_top(&row, read, top)));
    }
    Ok(out)
}

/// A row of full-vocabulary logits reduced to a [`TokenRead`]: the log-normaliser summed in
/// f64, the first maximum, and the logits of `read` (−∞ for an id past the vocabulary).
pub fn token_read(row: &[f32], read: &[u32]) -> TokenRead {
    token_read_top(row, read, 0)
}

/// [`token_read`], keeping the `top` most likely tokens too: highest logit first, the lower id
/// first among equal logits (so the first is the argmax).
pub fn token_read_top(row: &[f32], read: &[u32], top: usize) -> TokenRead {
    let (mut argmax, mut best) = (0u32, f32::NEG_INFINITY);
    for (i, &x) in row.iter().enumerate() {
        if x > best {
            (argmax, best) = (i as u32, x);
        }
    }
    let m = best as f64;
    let log_norm = if m.is_finite() { m + row.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln() } else { m };
    let logits = read.iter().map(|&id| row.get(id as usize).copied().unwrap_or(f32::NEG_INFINITY)).collect();
    TokenRead { log_norm, argmax, logits, top: most_likely(row, top) }
}

/// The `k` largest entries of `row` as `(index, value)`, largest first, the lower index first
/// among equals: one pass, a sorted run of at most `k` kept (k is small: at most 20 asked).
fn most_likely(row: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut best: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
    if k == 0 {
        return best;
    }
    for (i, &x) in row.iter().enumerate() {
        if best.len() == k && (x <= best[k - 1].1 || x.is_nan()) {
            continue;
        }
        // After every kept entry of at least this value: earlier indices stay first on a tie.
        let at = best.partition_point(|&(_, y)| y >= x);
        best.insert(at, (i as u32, x));
        best.truncate(k);
    }
    best
}

/// Rows of full-vocabulary logits computed at once on the CPU ([`letters`]). A row's
/// logits do not depend on the rows computed with it (`Transformer::head_at`).
const HEAD_ROWS: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_read_normalises_over_the_whole_row_and_takes_the_first_maximum() {
        // log(e^0 + e^ln2 + e^ln2) = log 5; the first of the two maxima is index 1.
        let row = [0.0f32, 2f32.ln(), 2f32.ln()];
        let r = token_read(&row, &[2, 0, 7]);
        assert!((r.log_norm - 5f64.ln()).abs() < 1e-6, "{}", r.log_norm);
        assert_eq!(r.argmax, 1);
        assert_eq!(r.logits, vec![2f32.ln(), 0.0, f32::NEG_INFINITY]);
        assert!(r.top.is_empty());
    }

    #[test]
    fn the_most_likely_tokens_come_highest_first_and_ties_by_index() {
        let row = [0.5f32, 3.0, -1.0, 3.0, 2.0, f32::NEG_INFINITY];
        assert_eq!(most_likely(&row, 3), vec![(1, 3.0), (3, 3.0), (4, 2.0)]);
        assert_eq!(most_likely(&row, 1), vec![(1, 3.0)]);
        // More asked than there are tokens: all of them, in order.
        let all = most_likely(&row[..3], 5);
        assert_eq!(all, vec![(1, 3.0), (0, 0.5), (2, -1.0)]);
        assert_eq!(token_read_top(&row, &[], 2).top, vec![(1, 3.0), (3, 3.0)]);
    }
}
