//! Temperature calibration: a small judge's probabilities are often too sure or too timid, and
//! one number fitted on labelled rows fixes much of that without moving any answer. `readout
//! calibrate` fits a temperature `T` on a result file's rows — each row's combined probabilities
//! `p` become `p_i^(1/T) / Σ_j p_j^(1/T)`, the same as dividing the log-probabilities by `T` —
//! by minimising the mean negative log-likelihood of the gold option, checks it on held-out folds
//! (fit on the others, score the fold: ECE, NLL and Brier before and after), and writes a
//! calibration file. `run`/`score --calibration FILE` apply it in combine, after the orderings
//! are averaged, and the result file records it with the file's sha256.
//!
//! Why a temperature and no per-letter prior: a labelled prior per letter would be a second set
//! of parameters per option count, fitted on few rows of each, and it is not defined on the
//! averaged probabilities of several orderings (they are per option, not per letter); the letter
//! prior is what `--debias batch`, `calibrate` and `pride` estimate, without labels.
//!
//! Conventions: the negative log-likelihood is convex in `β = 1/T`, so the fit is a golden-section
//! search over `β` in [[`BETA_RANGE`]]; folds are by group id (rows of one group never sit on
//! both sides), the groups dealt to [`FOLDS`] folds after a seeded shuffle. Refused below
//! [`MIN_ROWS`] rows, or with fewer than [`MIN_ERRORS`] wrong or right rows, or fewer groups
//! than folds.

use crate::error::{Error, Result};
use crate::formats::calibration::{
    CalibrationFile, FittedOn, HeldOut, Scores, BETA_RANGE, MIN_ERRORS, MIN_ROWS, SCHEMA, SCHEMA_VERSION,
};
use crate::formats::results::{ResultFile, Status};
use crate::jobs::review::Report;
use crate::math::SplitMix64;
use crate::metrics::{self, ScoredRow};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use crate::formats::calibration::{apply_temperature, FOLDS};

/// Mean negative log-likelihood of the gold options at inverse temperature `beta`
/// (gold probability floored at [`metrics::NLL_FLOOR`], as the metrics floor it).
fn nll_at(rows: &[(&[f64], usize)], beta: f64) -> f64 {
    let sum: f64 = rows
        .iter()
        .map(|(p, gold)| {
            let q = apply_temperature(p, 1.0 / beta);
            -q.get(*gold).copied().unwrap_or(0.0).max(metrics::NLL_FLOOR).ln()
        })
        .sum();
    sum / rows.len().max(1) as f64
}

/// The temperature minimising the mean NLL of `(probabilities, gold index)` rows: a
/// golden-section search over `β = 1/T` in [`BETA_RANGE`] (the NLL is convex in `β`).
pub fn fit_temperature(rows: &[(&[f64], usize)]) -> f64 {
    let (mut a, mut b) = BETA_RANGE;
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (nll_at(rows, c), nll_at(rows, d));
    while b - a > 1e-9 {
        if fc <= fd {
            (b, d, fd) = (d, c, fc);
            c = b - g * (b - a);
            fc = nll_at(rows, c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + g * (b - a);
            fd = nll_at(rows, d);
        }
    }
    1.0 / ((a + b) / 2.0)
}

/// Folds by group: the distinct group ids in order of first appearance, shuffled by `seed`, dealt
/// round-robin to `k` folds; returns each row's fold.
pub(crate) fn folds_by_group(rows: &[ScoredRow], k: usize, seed: u64) -> Vec<usize> {
    let mut groups: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for r in rows {
        index.entry(&r.group_id).or_insert_with(|| {
            groups.push(&r.group_id);
            groups.len() - 1
        });
    }
    let mut order: Vec<usize> = (0..groups.len()).collect();
    let mut rng = SplitMix64(seed);
    for i in (1..order.len()).rev() {
        let j = rng.below(i + 1);
        order.swap(i, j);
    }
    let mut fold_of_group = vec![0; groups.len()];
    for (pos, &g) in order.iter().enumerate() {
        fold_of_group[g] = pos % k;
    }
    rows.iter().map(|r| fold_of_group[index[r.group_id.as_str()]]).collect()
}

fn scores(rows: &[ScoredRow]) -> Scores {
    let m = metrics::metrics(rows);
    Scores { ece: m.ece, nll: m.nll, brier: m.brier }
}

fn with_temperature(r: &ScoredRow, t: f64) -> ScoredRow {
    ScoredRow { probs: r.probs.as_ref().map(|p| apply_temperature(p, t)), ..r.clone() }
}

/// The fit and its check on rows that have probabilities: `(temperature, held-out check,
/// in-sample scores)`. `path` names the source in refusals.
pub fn fit_rows(rows: &[ScoredRow], folds: usize, seed: u64, path: &Path) -> Result<(f64, HeldOut, Scores)> {
    let wrong = rows.iter().filter(|r| !r.correct()).count();
    let right = rows.len() - wrong;
    let groups = rows.iter().map(|r| r.group_id.as_str()).collect::<std::collections::HashSet<_>>().len();
    if rows.len() < MIN_ROWS || wrong < MIN_ERRORS || right < MIN_ERRORS || groups < folds {
        return Err(Error::TooFewToCalibrate {
            path: path.to_path_buf(),
            rows: rows.len(),
            wrong,
            right,
            groups,
            folds,
            min_rows: MIN_ROWS,
            min_errors: MIN_ERRORS,
        });
    }
    let pairs = |rs: &[&ScoredRow]| -> Vec<(Vec<f64>, usize)> {
        rs.iter().filter_map(|r| r.probs.clone().map(|p| (p, r.gold))).collect()
    };
    let fit = |rs: &[&ScoredRow]| {
        let owned = pairs(rs);
        let refs: Vec<(&[f64], usize)> = owned.iter().map(|(p, g)| (p.as_slice(), *g)).collect();
        fit_temperature(&refs)
    };
    let fold = folds_by_group(rows, folds, seed);
    let fold_temperatures: Vec<f64> = (0..folds)
        .map(|f| fit(&rows.iter().zip(&fold).filter(|(_, &k)| k != f).map(|(r, _)| r).collect::<Vec<_>>()))
        .collect();
    let held: Vec<ScoredRow> =
        rows.iter().zip(&fold).map(|(r, &k)| with_temperature(r, fold_temperatures[k])).collect();
    let temperature = fit(&rows.iter().collect::<Vec<_>>());
    let in_sample: Vec<ScoredRow> = rows.iter().map(|r| with_temperature(r, temperature)).collect();
    let check = HeldOut { folds, seed, fold_temperatures, before: scores(rows), after: scores(&held) };
    Ok((temperature, check, scores(&in_sample)))
}

/// Fit a temperature on a result file (`path` names it; `sha256` is its bytes' hash) with a
/// `folds`-fold held-out check seeded by `seed`.
pub fn fit(result: &ResultFile, path: &Path, sha256: &str, folds: usize, seed: u64) -> Result<CalibrationFile> {
    let bad = |reason: String| Error::BadFile { path: path.to_path_buf(), reason };
    if result.config.mode != crate::config::Mode::Readout {
        return Err(bad(
            "was run with --mode generate, whose answers have no probabilities to calibrate; fit on a readout run"
                .into(),
        ));
    }
    if let Some(c) = &result.config.calibration {
        return Err(bad(format!(
            "was run with a temperature applied already ({}, T = {}); fit on a run without --calibration",
            c.file, c.temperature
        )));
    }
    if result.status == Status::Partial {
        return Err(bad("is a partial run; complete it with `readout run --resume` first".into()));
    }
    if folds < 2 {
        return Err(Error::Config(format!("a held-out check needs at least 2 folds, not {folds}")));
    }
    let rows = result.scored_rows();
    let (temperature, held_out, in_sample) = fit_rows(&rows, folds, seed, path)?;
    Ok(CalibrationFile {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        created: crate::formats::results::now_utc(),
        program_version: env!("CARGO_PKG_VERSION").into(),
        method: "temperature".into(),
        temperature,
        fitted_on: FittedOn {
            file: path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
            sha256: sha256.into(),
            model: result.model.name.clone(),
            model_sha256: result.model.sha256.clone(),
            eval_set: result.eval_set.name.clone(),
            eval_set_sha256: result.eval_set.sha256.clone(),
            debias: result.config.debias,
            shots: result.config.shots,
            rows: rows.len(),
            wrong: rows.iter().filter(|r| !r.correct()).count(),
        },
        held_out,
        in_sample,
        min_rows: MIN_ROWS,
        min_errors: MIN_ERRORS,
    })
}

/// How far a person's labels are from what a fit on them needs ([`MIN_ROWS`] answers, at least
/// [`MIN_ERRORS`] the judge got wrong and as many it got right, a text in every fold), counted on
/// the judge's answers as a review holds them: a run of the same judge on the labels file gives
/// the same answers; another judge may err elsewhere, and [`fit`] has the last word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Readiness {
    /// The person's answers where the judge answered too (a text × criterion each): the rows a
    /// run on the labels file scores.
    pub answers: usize,
    /// Of them, the answers where the judge said another option, and where it said the same.
    pub wrong: usize,
    pub right: usize,
    /// Texts with at least one answer (the held-out folds deal whole texts).
    pub texts: usize,
    pub min_rows: usize,
    pub min_errors: usize,
    pub folds: usize,
    /// The fewest more answers that could meet every minimum: exactly that many when the judge
    /// errs and agrees as often as needed, more when it keeps agreeing (or erring).
    pub more_answers: usize,
    /// More answers where the judge is wrong, and where it is right, than there are.
    pub more_wrong: usize,
    pub more_right: usize,
    /// More texts than there are, for every fold to hold one.
    pub more_texts: usize,
    /// Every minimum met: a fit can be tried.
    pub ready: bool,
}

/// The [`Readiness`] of `answers` labelled answers, `wrong` of them where the judge said
/// another option, over `texts` texts, for a check with `folds` folds.
pub fn readiness(answers: usize, wrong: usize, texts: usize, folds: usize) -> Readiness {
    let right = answers.saturating_sub(wrong);
    let more_wrong = MIN_ERRORS.saturating_sub(wrong);
    let more_right = MIN_ERRORS.saturating_sub(right);
    let more_texts = folds.saturating_sub(texts);
    // Every more text brings at least one more answer.
    let more_answers = MIN_ROWS.saturating_sub(answers).max(more_wrong + more_right).max(more_texts);
    Readiness {
        answers,
        wrong: wrong.min(answers),
        right,
        texts,
        min_rows: MIN_ROWS,
        min_errors: MIN_ERRORS,
        folds,
        more_answers,
        more_wrong,
        more_right,
        more_texts,
        ready: more_answers == 0,
    }
}

/// The [`Readiness`] of a review's labels, from its report: per criterion, the answers both the
/// judge and the person gave (`agreement.n`) and those where they differ (off the confusion
/// matrix's diagonal); the texts are the labelled ones.
pub fn readiness_of(report: &Report, folds: usize) -> Readiness {
    let (mut answers, mut same) = (0, 0);
    for c in &report.criteria {
        answers += c.agreement.n;
        same +=
            c.agreement.confusion.iter().enumerate().map(|(i, row)| row.get(i).copied().unwrap_or(0)).sum::<usize>();
    }
    readiness(answers, answers.saturating_sub(same), report.labelled, folds)
}

/// Where a fit on a labels file keeps its files, beside it: the judge's run on the labels
/// (`NAME.result.json` for `NAME.jsonl`) and the calibration fitted on that run
/// (`NAME.calibration.json`).
pub fn files_beside(labels: &Path) -> (PathBuf, PathBuf) {
    let stem = labels.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "labels".into());
    (labels.with_file_name(format!("{stem}.result.json")), labels.with_file_name(format!("{stem}.calibration.json")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::calibration::at_range_edge;

    fn row(i: usize, gold: usize, probs: Vec<f64>) -> ScoredRow {
        ScoredRow {
            id: i.to_string(),
            family: "f".into(),
            group_id: i.to_string(),
            gold,
            option_ids: (0..probs.len()).map(|k| format!("o{k}")).collect(),
            predicted: Some(crate::math::argmax(&probs)),
            probs: Some(probs),
            order_unstable: None,
            letter_picks: Vec::new(),
        }
    }

    #[test]
    fn temperature_by_hand() {
        // (0.8, 0.2) at T = 2: sqrt(0.8) : sqrt(0.2) = 2 : 1 -> (2/3, 1/3).
        let q = apply_temperature(&[0.8, 0.2], 2.0);
        assert!((q[0] - 2.0 / 3.0).abs() < 1e-12 && (q[1] - 1.0 / 3.0).abs() < 1e-12);
        // T = 1 leaves it; a zero stays zero; the argmax never moves.
        assert!((apply_temperature(&[0.5, 0.3, 0.2], 1.0)[1] - 0.3).abs() < 1e-12);
        let z = apply_temperature(&[0.0, 0.6, 0.4], 0.5);
        assert_eq!(z[0], 0.0);
        // T = 1/2 squares: 0.36 : 0.16 -> (0.36/0.52, 0.16/0.52).
        assert!((z[1] - 0.36 / 0.52).abs() < 1e-12);
        assert_eq!(apply_temperature(&[0.0, 0.0], 3.0), vec![0.0, 0.0]);
    }

    #[test]
    fn fit_on_a_three_row_toy() {
        // Three rows say (0.8, 0.2); gold is option 0 twice and option 1 once. The NLL is least
        // where the calibrated top probability is the hit rate, 2/3: 0.8^β / (0.8^β + 0.2^β) = 2/3
        // means 4^β = 2, β = 1/2, T = 2.
        let p = [0.8, 0.2];
        let rows: Vec<(&[f64], usize)> = vec![(&p, 0), (&p, 0), (&p, 1)];
        let t = fit_temperature(&rows);
        assert!((t - 2.0).abs() < 1e-6, "{t}");
        // Calibrated, each row has confidence 2/3 and the rows are right 2 times in 3: ECE 0
        // (before: one bin at 0.8 with accuracy 2/3, ECE 0.8 - 2/3 = 2/15).
        let scored = vec![row(0, 0, p.to_vec()), row(1, 0, p.to_vec()), row(2, 1, p.to_vec())];
        assert!((metrics::metrics(&scored).ece - 2.0 / 15.0).abs() < 1e-12);
        let after: Vec<ScoredRow> = scored.iter().map(|r| with_temperature(r, t)).collect();
        assert!(metrics::metrics(&after).ece < 1e-6);
        // A too-timid judge gets T < 1: (0.6, 0.4) always right -> sharpen to the edge of the range.
        let q = [0.6, 0.4];
        let timid: Vec<(&[f64], usize)> = vec![(&q, 0); 3];
        assert!((fit_temperature(&timid) - 1.0 / BETA_RANGE.1).abs() < 1e-6);
        assert!(at_range_edge(fit_temperature(&timid)) && !at_range_edge(t));
    }

    #[test]
    fn too_few_rows_or_errors_are_refused_with_the_thresholds() {
        let p = std::path::Path::new("r.json");
        // 60 rows, 5 wrong.
        let rows: Vec<ScoredRow> = (0..60).map(|i| row(i, usize::from(i < 5), vec![0.7, 0.3])).collect();
        let e = fit_rows(&rows, FOLDS, 0, p).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::TooFewToCalibrate { wrong: 5, right: 55, .. }), "{msg}");
        assert!(msg.contains("at least 50 rows") && msg.contains("10 wrong"), "{msg}");
        assert!(fit_rows(&rows[..20], FOLDS, 0, p).is_err());
        // 60 rows, 20 wrong: fitted; the held-out check uses 5 folds by group.
        let rows: Vec<ScoredRow> = (0..60).map(|i| row(i, usize::from(i % 3 == 0), vec![0.9, 0.1])).collect();
        let (t, held, _) = fit_rows(&rows, FOLDS, 0, p).unwrap();
        // Right 2 times in 3 at 0.9: the fit flattens to 2/3, 9^β = 2, T = ln 9 / ln 2.
        assert!((t - 9f64.ln() / 2f64.ln()).abs() < 1e-5, "{t}");
        assert_eq!(held.fold_temperatures.len(), FOLDS);
        assert!(held.after.nll < held.before.nll && held.after.ece < held.before.ece);
    }

    #[test]
    fn readiness_says_how_many_more_answers_a_fit_needs() {
        // 15 answers, 8 wrong: 35 more to reach 50; 2 more wrong and 3 more right fit within them.
        let r = readiness(15, 8, 5, FOLDS);
        assert_eq!((r.right, r.more_answers, r.more_wrong, r.more_right, r.more_texts), (7, 35, 2, 3, 0));
        assert!(!r.ready);
        // 60 answers, 5 wrong: enough rows, but 5 more where the judge errs are needed.
        let r = readiness(60, 5, 20, FOLDS);
        assert_eq!((r.more_answers, r.more_wrong, r.more_right, r.ready), (5, 5, 0, false));
        // 60 answers, 33 wrong, over 20 texts: ready, as `fit_rows` agrees.
        let r = readiness(60, 33, 20, FOLDS);
        assert_eq!((r.more_answers, r.ready), (0, true));
        // 50 answers from 2 texts of a 25-criterion rubric: three more texts for the folds.
        let r = readiness(50, 20, 2, FOLDS);
        assert_eq!((r.more_texts, r.more_answers, r.ready), (3, 3, false));
        // Nothing labelled yet.
        let r = readiness(0, 0, 0, FOLDS);
        assert_eq!((r.more_answers, r.more_wrong, r.more_right), (50, 10, 10));
        // The same thresholds as the fit's refusal.
        let p = std::path::Path::new("r.json");
        let rows: Vec<ScoredRow> = (0..60).map(|i| row(i, usize::from(i < 5), vec![0.7, 0.3])).collect();
        assert!(fit_rows(&rows, FOLDS, 0, p).is_err() && !readiness(60, 5, 60, FOLDS).ready);
    }

    #[test]
    fn readiness_of_a_report_counts_the_confusion_diagonal() {
        use crate::formats::labels::{Draw, Labelled, Labels};
        use crate::formats::rubric::{Criterion, OptionSpec, QuestionKind};
        use crate::jobs::review::{report, ReportOptions};
        use crate::jobs::score::{CriterionResult, OptionResult, TextResult};
        let criterion = Criterion {
            name: "refund".into(),
            kind: QuestionKind::Noul,
            instructions: "Refund?".into(),
            rule: None,
            options: vec![
                OptionSpec { id: "yes".into(), description: "Yes".into() },
                OptionSpec { id: "no".into(), description: "No".into() },
            ],
            gold: None,
        };
        // The judge says yes to every text; the person says yes to texts 0 and 1, no to 2.
        let results: Vec<TextResult> = (0..4)
            .map(|i| TextResult {
                index: i,
                id: None,
                criteria: vec![CriterionResult {
                    criterion: "refund".into(),
                    kind: QuestionKind::Noul,
                    options: vec![
                        OptionResult { id: "yes".into(), description: "Yes".into(), probability: 0.8 },
                        OptionResult { id: "no".into(), description: "No".into(), probability: 0.2 },
                    ],
                    probability: 0.8,
                    abstained: None,
                    expected_level: None,
                    margin: 0.6,
                    close: false,
                    chosen: Some("yes".into()),
                    order_unstable: None,
                    letter_mass: None,
                    judges: None,
                    disagree: None,
                }],
                truncated_tokens: None,
            })
            .collect();
        let mut labels = Labels::new(vec![criterion], Draw::default());
        for (index, answer) in [(0, 0), (1, 0), (2, 1)] {
            labels.texts.push(Labelled {
                index,
                id: None,
                text: String::new(),
                answers: vec![Some(answer)],
                skipped: false,
                pi: None,
            });
        }
        let r = report(&results, &labels, &ReportOptions { resamples: 0, ..ReportOptions::default() }).unwrap();
        let got = readiness_of(&r, FOLDS);
        assert_eq!((got.answers, got.wrong, got.right, got.texts), (3, 1, 2, 3));
        assert_eq!((got.more_answers, got.more_wrong, got.more_right, got.more_texts), (47, 9, 8, 2));
    }

    #[test]
    fn a_fit_keeps_its_files_beside_the_labels() {
        let (result, calibration) = files_beside(Path::new("/r/2025-06-02T09-30-00Z-t/answers.labels.jsonl"));
        assert_eq!(result, Path::new("/r/2025-06-02T09-30-00Z-t/answers.labels.result.json"));
        assert_eq!(calibration, Path::new("/r/2025-06-02T09-30-00Z-t/answers.labels.calibration.json"));
    }

    #[test]
    fn folds_keep_groups_whole_and_are_seeded() {
        let mut rows: Vec<ScoredRow> = (0..20).map(|i| row(i, 0, vec![0.6, 0.4])).collect();
        for r in rows.iter_mut() {
            r.group_id = (r.id.parse::<usize>().unwrap() / 2).to_string();
        }
        let f = folds_by_group(&rows, 5, 3);
        for pair in f.chunks(2) {
            assert_eq!(pair[0], pair[1]);
        }
        // 10 groups in 5 folds: two groups (four rows) each.
        for k in 0..5 {
            assert_eq!(f.iter().filter(|&&x| x == k).count(), 4);
        }
        assert_eq!(f, folds_by_group(&rows, 5, 3));
    }
}
