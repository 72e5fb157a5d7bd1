//! Figures over pairwise comparisons ("which of these two responses is better?"): each system's
//! win rate with a Wilson interval, and Bradley–Terry scores with group bootstrap intervals.
//! They exist for the pairwise questions of issue 37, where a judge compares two systems'
//! responses to one prompt (read in both orders, as cyclic reads options); they are figures,
//! like [`crate::metrics`], and know nothing of how a comparison was decided.
//!
//! Conventions: a tie is half a win for each side. Bradley–Terry gives system i a strength
//! `π_i`, and `P(i beats j) = π_i / (π_i + π_j)`; the strengths are fitted by Hunter's (2004) MM
//! iteration `π_i ← W_i / Σ_j n_ij / (π_i + π_j)`, with [`PRIOR_GAMES`] tied games added
//! between every two systems so that a system that won (or lost) every game still has a finite
//! score. Scores are `ln π_i`, centred to mean 0 over the systems. The bootstrap draws the
//! comparisons' groups (the prompts) with replacement.

use crate::math::SplitMix64;
use serde::{Deserialize, Serialize};

/// Tied games added between every two systems (Bradley–Terry's prior).
pub const PRIOR_GAMES: f64 = 0.5;

/// The judge's verdict on one comparison of `a` and `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    A,
    B,
    Tie,
}

/// One comparison: systems `a` and `b` (indices) on a prompt of group `group`.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub a: usize,
    pub b: usize,
    pub verdict: Verdict,
    pub group: String,
}

/// A value with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "PairwiseEstimate"))]
pub struct Estimate {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
}

/// One system's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "PairwiseStanding"))]
pub struct Standing {
    pub games: usize,
    /// Wins plus half the ties, over games (Wilson interval); `None` without games.
    pub win_rate: Option<Estimate>,
    /// Bradley–Terry score `ln π`, centred (group bootstrap interval).
    pub score: Estimate,
}

/// The Wilson score interval (95 %) of `wins` successes in `n` trials (wins may be fractional:
/// ties count half).
pub fn wilson(wins: f64, n: f64) -> Option<Estimate> {
    if n <= 0.0 {
        return None;
    }
    let z = 1.959_963_984_540_054;
    let p = wins / n;
    let d = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / d;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / d;
    Some(Estimate { estimate: p, lo: (centre - half).max(0.0), hi: (centre + half).min(1.0) })
}

/// Bradley–Terry scores (`ln π`, mean 0) of `systems` systems from `games`, each `(i, j, w)`:
/// `w` of one game's win to i (1, 0 or ½ for a tie), so j gets `1 − w`.
pub fn bradley_terry(systems: usize, games: &[(usize, usize, f64)]) -> Vec<f64> {
    if systems == 0 {
        return Vec::new();
    }
    // Wins and games between each two, the prior's ties among them.
    let mut n = vec![vec![0.0; systems]; systems];
    let mut wins = vec![0.0; systems];
    for &(i, j, w) in games {
        if i == j || i >= systems || j >= systems {
            continue;
        }
        n[i][j] += 1.0;
        n[j][i] += 1.0;
        wins[i] += w;
        wins[j] += 1.0 - w;
    }
    for (i, row) in n.iter_mut().enumerate() {
        for (j, games) in row.iter_mut().enumerate() {
            if i != j {
                *games += PRIOR_GAMES;
                wins[i] += PRIOR_GAMES / 2.0;
            }
        }
    }
    let mut pi = vec![1.0; systems];
    for _ in 0..10_000 {
        let mut next: Vec<f64> = (0..systems)
            .map(|i| {
                let d: f64 = (0..systems).filter(|&j| j != i).map(|j| n[i][j] / (pi[i] + pi[j])).sum();
                if d > 0.0 {
                    wins[i] / d
                } else {
                    pi[i]
                }
            })
            .collect();
        let g = (next.iter().map(|x| x.ln()).sum::<f64>() / systems as f64).exp();
        next.iter_mut().for_each(|x| *x /= g);
        let moved = pi.iter().zip(&next).map(|(a, b)| (a.ln() - b.ln()).abs()).fold(0.0, f64::max);
        pi = next;
        if moved < 1e-12 {
            break;
        }
    }
    pi.iter().map(|p| p.ln()).collect()
}

fn games(cs: &[&Comparison]) -> Vec<(usize, usize, f64)> {
    cs.iter()
        .map(|c| {
            let w = match c.verdict {
                Verdict::A => 1.0,
                Verdict::B => 0.0,
                Verdict::Tie => 0.5,
            };
            (c.a, c.b, w)
        })
        .collect()
}

/// Every system's win rate and Bradley–Terry score, the scores' intervals from `resamples`
/// draws of the comparisons' groups (seeded; with 0 resamples the interval is the point).
pub fn standings(systems: usize, comparisons: &[Comparison], resamples: usize, seed: u64) -> Vec<Standing> {
    let all: Vec<&Comparison> = comparisons.iter().collect();
    let scores = bradley_terry(systems, &games(&all));
    // Groups in order of first appearance, each with its comparisons.
    let mut order: Vec<&str> = Vec::new();
    let mut by_group: std::collections::HashMap<&str, Vec<&Comparison>> = std::collections::HashMap::new();
    for c in comparisons {
        by_group
            .entry(&c.group)
            .or_insert_with(|| {
                order.push(&c.group);
                Vec::new()
            })
            .push(c);
    }
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); systems];
    for r in 0..resamples {
        let mut rng = SplitMix64(crate::math::mix64(seed ^ (r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let mut drawn: Vec<&Comparison> = Vec::new();
        for _ in 0..order.len() {
            drawn.extend(&by_group[order[rng.below(order.len())]]);
        }
        for (i, s) in bradley_terry(systems, &games(&drawn)).into_iter().enumerate() {
            draws[i].push(s);
        }
    }
    (0..systems)
        .map(|i| {
            let mine = comparisons.iter().filter(|c| c.a == i || c.b == i);
            let (mut n, mut w) = (0usize, 0.0);
            for c in mine {
                n += 1;
                w += match (c.verdict, c.a == i) {
                    (Verdict::Tie, _) => 0.5,
                    (Verdict::A, true) | (Verdict::B, false) => 1.0,
                    _ => 0.0,
                };
            }
            let (lo, hi) = match draws[i].is_empty() {
                true => (scores[i], scores[i]),
                false => {
                    let mut d = draws[i].clone();
                    d.sort_by(f64::total_cmp);
                    (crate::metrics::percentile(&d, 0.025), crate::metrics::percentile(&d, 0.975))
                }
            };
            Standing { games: n, win_rate: wilson(w, n as f64), score: Estimate { estimate: scores[i], lo, hi } }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_a_hand_computed_interval() {
        // 8 of 10: p = 0.8, z² = 3.8415; centre (0.8 + 0.19207)/1.38415 = 0.71674; half
        // 1.95996·√(0.016 + 0.0096036)/1.38415 = 0.22657: [0.49016, 0.94331].
        let e = wilson(8.0, 10.0).unwrap();
        assert!((e.lo - 0.49016).abs() < 1e-4 && (e.hi - 0.94331).abs() < 1e-4, "{e:?}");
        assert_eq!(wilson(0.0, 0.0), None);
    }

    #[test]
    fn two_systems_have_the_closed_form_scores() {
        // i beats j in 3 of 4 games; with the prior's half game tied, i has 3.25 of 4.5: the
        // fit gives π_i/(π_i+π_j) = 3.25/4.5, so ln π_i − ln π_j = ln(3.25/1.25).
        let games = [(0, 1, 1.0), (0, 1, 1.0), (1, 0, 0.0), (1, 0, 1.0)];
        let s = bradley_terry(2, &games);
        assert!((s[0] - s[1] - (3.25f64 / 1.25).ln()).abs() < 1e-9, "{s:?}");
        assert!((s[0] + s[1]).abs() < 1e-12);
    }

    #[test]
    fn a_system_that_wins_every_game_has_a_finite_score_above_the_others() {
        let games = [(0, 1, 1.0), (0, 2, 1.0), (1, 2, 0.5), (0, 1, 1.0)];
        let s = bradley_terry(3, &games);
        assert!(s.iter().all(|x| x.is_finite()) && s[0] > s[1] && s[0] > s[2], "{s:?}");
    }

    #[test]
    fn standings_count_ties_half_and_bracket_the_scores() {
        let c = |a, b, verdict, g: &str| Comparison { a, b, verdict, group: g.into() };
        let cs = vec![
            c(0, 1, Verdict::A, "p1"),
            c(0, 1, Verdict::Tie, "p2"),
            c(1, 0, Verdict::B, "p3"),
            c(1, 0, Verdict::A, "p4"),
        ];
        let s = standings(2, &cs, 200, 7);
        // System 0: a win, a tie, a win (as b), a loss: 2.5 of 4.
        assert_eq!(s[0].games, 4);
        assert_eq!(s[0].win_rate.unwrap().estimate, 0.625);
        assert_eq!(s[1].win_rate.unwrap().estimate, 0.375);
        for st in &s {
            assert!(st.score.lo <= st.score.estimate && st.score.estimate <= st.score.hi, "{st:?}");
        }
        assert_eq!(standings(2, &cs, 200, 7), s, "seeded: the same intervals");
    }
}
