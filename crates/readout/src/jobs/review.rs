//! Review: a person checks the judge on some of the texts it scored, and the judge's shares are
//! corrected by those labels. Three parts, each for every shell:
//!
//! - **The draw.** Which texts to show, least sure first, in an order that is still a known
//!   random sample so that rates stay unbiased whenever the person stops. Each text gets a
//!   weight `w` (a mix of the judge's uncertainty and a uniform share) and a key `u / w`, `u`
//!   uniform from the seed; texts are shown by increasing key (sequential Poisson sampling,
//!   Ohlsson 1998). The texts before the first one neither labelled nor skipped, whose key is
//!   `t`, are exactly a Poisson sample in which text `i` was drawn with probability
//!   `min(1, t·w_i)` — whatever `t` is, so the person may stop after any text. A text the person
//!   skips is taken as missing at random within the sample; one labelled beyond it (from the
//!   list, out of turn) counts for agreement but not for rates.
//! - **Agreement** between the judge's answers and the person's, per criterion
//!   ([`crate::agreement`]).
//! - **Rates**: for each criterion and option, the share of all scored texts, from the judge's
//!   probabilities on all of them corrected by the labels ([`crate::rates`]): prediction-powered
//!   inference when the draw was uniform, its inverse-probability-weighted form (active
//!   inference) when it followed uncertainty; beside the judge-only and labels-only shares.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::agreement::{self, Agreement, Rated, Scale};
use crate::error::{Error, Result};
use crate::formats::labels::{Draw, DrawBy, Labelled, Labels};
use crate::formats::rubric::{Criterion, QuestionKind};
use crate::formats::texts::Text;
use crate::jobs::score::TextResult;
use crate::math::{mix64, SplitMix64};
use crate::rates::{self, Estimate, Label, Lambda};

/// How unsure the judge was about a text, 0 (sure) to 1: the largest over its criteria of one
/// minus the margin (top probability minus the runner-up) times the letter mass (the share of
/// the next-token distribution on the option letters; a judge that wanted to say something else
/// is less sure than its margin says); 1 for a criterion it abstained on or whose answer changed
/// between orderings.
pub fn uncertainty(r: &TextResult) -> f64 {
    r.criteria
        .iter()
        .map(|c| {
            if c.abstained.is_some() || c.order_unstable == Some(true) {
                1.0
            } else {
                (1.0 - c.margin * c.letter_mass.unwrap_or(1.0)).clamp(0.0, 1.0)
            }
        })
        .fold(0.0, f64::max)
}

/// A text's place in the draw.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Queued {
    /// The text's index among the scored texts.
    pub index: usize,
    /// [`uncertainty`] of the text.
    pub uncertainty: f64,
    /// Its drawing weight (mean 1 over the texts).
    pub weight: f64,
    /// `u / weight`: texts are shown by increasing key.
    pub key: f64,
}

/// Every scored text in the order review shows them (increasing key; ties by index).
pub fn order(results: &[TextResult], draw: &Draw) -> Vec<Queued> {
    let unc: Vec<f64> = results.iter().map(uncertainty).collect();
    let mean = unc.iter().sum::<f64>() / unc.len().max(1) as f64;
    let s = draw.uniform_share.clamp(0.0, 1.0);
    let mut q: Vec<Queued> = results
        .iter()
        .zip(&unc)
        .map(|(r, &u)| {
            let weight = match draw.by {
                DrawBy::Uncertainty if mean > 0.0 => (1.0 - s) * u / mean + s,
                _ => 1.0,
            };
            let mut rng = SplitMix64(mix64(draw.seed ^ mix64(r.index as u64 + 1)));
            // Uniform in (0, 1): 53 random bits, shifted off zero by half a step.
            let x = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            let key = if weight > 0.0 { x / weight } else { f64::INFINITY };
            Queued { index: r.index, uncertainty: u, weight, key }
        })
        .collect();
    q.sort_by(|a, b| a.key.total_cmp(&b.key).then(a.index.cmp(&b.index)));
    q
}

/// The inclusion probability of each text of the queue given which texts are done (labelled or
/// skipped): `min(1, t·w)` for the texts whose key is below `t`, the key of the first text not
/// done (infinite when all are done); `None` for the others.
pub fn inclusion(queue: &[Queued], done: &HashSet<usize>) -> Vec<(usize, Option<f64>)> {
    let t = queue.iter().find(|q| !done.contains(&q.index)).map_or(f64::INFINITY, |q| q.key);
    queue.iter().map(|q| (q.index, (q.key < t).then(|| (t * q.weight).min(1.0)))).collect()
}

/// Set every labelled text's `pi` from the draw and what is done: call after each change.
pub fn assign_inclusion(labels: &mut Labels, results: &[TextResult]) {
    let queue = order(results, &labels.draw);
    let done: HashSet<usize> = labels.texts.iter().map(|t| t.index).collect();
    let pi: std::collections::HashMap<usize, Option<f64>> = inclusion(&queue, &done).into_iter().collect();
    for t in &mut labels.texts {
        t.pi = pi.get(&t.index).copied().flatten();
    }
}

/// Give (or replace) the person's answers for a text, or mark it skipped, and update every
/// text's inclusion probability. `answers` is in the rubric's order.
pub fn record(
    labels: &mut Labels,
    results: &[TextResult],
    text: &Text,
    index: usize,
    answers: Vec<Option<usize>>,
    skipped: bool,
) -> Result<()> {
    if answers.len() != labels.criteria.len() {
        return Err(Error::Config(format!(
            "{} answers given for {} criteria; give one per criterion (none for one not answered)",
            answers.len(),
            labels.criteria.len()
        )));
    }
    for (c, a) in labels.criteria.iter().zip(&answers) {
        if let Some(i) = a {
            if *i >= c.options.len() {
                return Err(Error::Config(format!(
                    "criterion `{}` has {} options; {i} is not one",
                    c.name,
                    c.options.len()
                )));
            }
        }
    }
    let entry = Labelled { index, id: text.id.clone(), text: text.text.clone(), answers, skipped, pi: None };
    match labels.texts.iter_mut().find(|t| t.index == index) {
        Some(t) => *t = entry,
        None => labels.texts.push(entry),
    }
    assign_inclusion(labels, results);
    Ok(())
}

/// Take a text's labels back (undo), updating the inclusion probabilities.
pub fn forget(labels: &mut Labels, results: &[TextResult], index: usize) {
    labels.texts.retain(|t| t.index != index);
    assign_inclusion(labels, results);
}

/// A labelling sheet: the first `n` texts of the draw, with no answers yet, each with its
/// inclusion probability (the texts after them are the ones not drawn).
pub fn draw_sheet(
    criteria: &[Criterion],
    results: &[TextResult],
    texts: &[Text],
    n: usize,
    draw: Draw,
) -> Result<Labels> {
    let queue = order(results, &draw);
    let t = queue.get(n).map_or(f64::INFINITY, |q| q.key);
    let mut labels = Labels::new(criteria.to_vec(), draw);
    for q in queue.iter().take(n) {
        let text = texts.get(q.index).ok_or_else(|| {
            Error::Config(format!(
                "the answers name text {} but only {} texts were given; give the texts that were scored",
                q.index,
                texts.len()
            ))
        })?;
        labels.texts.push(Labelled {
            index: q.index,
            id: text.id.clone(),
            text: text.text.clone(),
            answers: vec![None; criteria.len()],
            skipped: false,
            pi: Some((t * q.weight).min(1.0)),
        });
    }
    Ok(labels)
}

/// A sheet as CSV for a spreadsheet: `index`, `id`, `pi`, `text`, then one empty column per
/// criterion, headed by its name.
pub fn sheet_csv(labels: &Labels) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["index".to_string(), "id".into(), "pi".into(), "text".into()];
    header.extend(labels.criteria.iter().map(|c| c.name.clone()));
    w.write_record(&header).map_err(csv_error)?;
    for t in &labels.texts {
        let mut row = vec![
            t.index.to_string(),
            t.id.clone().unwrap_or_default(),
            t.pi.map(|p| format!("{p}")).unwrap_or_default(),
            t.text.clone(),
        ];
        for (c, a) in labels.criteria.iter().zip(&t.answers) {
            row.push(a.map(|i| c.options[i].id.clone()).unwrap_or_default());
        }
        w.write_record(&row).map_err(csv_error)?;
    }
    let bytes = w.into_inner().map_err(|e| Error::Config(e.to_string()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn csv_error(e: csv::Error) -> Error {
    Error::Config(e.to_string())
}

/// Read a filled CSV sheet against the rubric's criteria and the scored texts. Refused, naming
/// the line and column: a missing column, an index that is not a scored text, a text given
/// twice, an empty answer, an answer that is not one of the criterion's option ids (or, for a
/// `score` criterion, its level index), a `pi` that is not a probability.
pub fn read_sheet_csv(bytes: &[u8], path: &Path, criteria: &[Criterion], n_texts: usize, draw: Draw) -> Result<Labels> {
    let bad = |line: usize, field: &str, reason: String| Error::BadInput {
        path: path.to_path_buf(),
        line,
        field: field.to_string(),
        reason,
    };
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut r = csv::ReaderBuilder::new().flexible(false).from_reader(body);
    let header: Vec<String> =
        r.headers().map_err(|e| bad(1, "(header)", e.to_string()))?.iter().map(|h| h.trim().to_string()).collect();
    let column = |name: &str| -> Result<usize> {
        header
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
            .ok_or_else(|| bad(1, name, format!("column is missing; the sheet's header is `{}`", header.join(","))))
    };
    let (index_col, pi_col, text_col) = (column("index")?, column("pi")?, column("text")?);
    let id_col = header.iter().position(|h| h.eq_ignore_ascii_case("id"));
    let crit_cols: Vec<usize> = criteria.iter().map(|c| column(&c.name)).collect::<Result<_>>()?;
    let mut labels = Labels::new(criteria.to_vec(), draw);
    let mut seen: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            bad(line, "(csv)", e.to_string())
        })?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        let cell = |i: usize| rec.get(i).unwrap_or("").trim();
        let index: usize = cell(index_col).parse().map_err(|_| {
            bad(line, "index", format!("`{}` is not a text index (a whole number from 0)", cell(index_col)))
        })?;
        if index >= n_texts {
            return Err(bad(
                line,
                "index",
                format!("text {index} is not among the {n_texts} scored texts (0..{})", n_texts.saturating_sub(1)),
            ));
        }
        if let Some(earlier) = seen.insert(index, line) {
            return Err(bad(line, "index", format!("text {index} is already on line {earlier}; give each text once")));
        }
        let pi = match cell(pi_col) {
            "" => None,
            s => match s.parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 1.0 => Some(p),
                _ => {
                    return Err(bad(
                        line,
                        "pi",
                        format!("`{s}` is not a probability in (0, 1]; keep the value the draw wrote"),
                    ))
                }
            },
        };
        let mut answers = Vec::with_capacity(criteria.len());
        for (c, &col) in criteria.iter().zip(&crit_cols) {
            let v = cell(col);
            if v.is_empty() {
                return Err(bad(
                    line,
                    &c.name,
                    "is empty; give the right option for every text of the sheet (or remove the row)".into(),
                ));
            }
            let i = c
                .options
                .iter()
                .position(|o| o.id == v || (c.kind == QuestionKind::Noul && o.id.eq_ignore_ascii_case(v)))
                .ok_or_else(|| {
                    let ids: Vec<&str> = c.options.iter().map(|o| o.id.as_str()).collect();
                    bad(
                        line,
                        &c.name,
                        format!("`{v}` is not an option of `{}`; write one of: {}", c.name, ids.join(", ")),
                    )
                })?;
            answers.push(Some(i));
        }
        let id = id_col.map(|c| cell(c).to_string()).filter(|s| !s.is_empty());
        let text = rec.get(text_col).unwrap_or("").to_string();
        labels.texts.push(Labelled { index, id, text, answers, skipped: false, pi });
    }
    if labels.texts.is_empty() {
        return Err(Error::BadFile {
            path: path.to_path_buf(),
            reason: "has no rows under its header; fill the sheet `readout labels draw` wrote".into(),
        });
    }
    Ok(labels)
}

/// What a report computes beyond the labels themselves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ReportOptions {
    /// The 95 % half-width the person wants (0.05 for ± 5 points): the report says how many
    /// labels would reach it.
    pub target_half_width: f64,
    /// Bootstrap resamples for the agreement intervals.
    pub resamples: usize,
    /// Their seed.
    pub seed: u64,
}

impl Default for ReportOptions {
    fn default() -> ReportOptions {
        ReportOptions { target_half_width: 0.05, resamples: 1000, seed: 1 }
    }
}

/// How far to trust the judge, from the person's labels.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Report {
    /// Texts the judge scored.
    pub texts: usize,
    /// Texts with at least one answer from the person.
    pub labelled: usize,
    pub skipped: usize,
    /// Labelled texts outside the draw's sample (labelled out of turn): agreement only.
    pub off_draw: usize,
    pub draw: Draw,
    pub options: ReportOptions,
    pub criteria: Vec<CriterionReport>,
}

/// One criterion's agreement and rates.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CriterionReport {
    pub criterion: String,
    #[serde(rename = "type")]
    pub kind: QuestionKind,
    /// The options' ids, in the rubric's order (the confusion matrix's rows and columns).
    pub option_ids: Vec<String>,
    /// The judge (first rater) against the person (second).
    pub agreement: Agreement,
    /// The texts where both answered and they differ.
    pub disagreements: Vec<Disagreement>,
    pub rates: Vec<OptionRate>,
}

/// A text where the judge and the person differ.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Disagreement {
    pub index: usize,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub id: Option<String>,
    /// The judge's option id.
    pub judge: String,
    /// The person's option id.
    pub person: String,
}

/// The share of all scored texts with one option of a criterion.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OptionRate {
    pub option: String,
    /// The judge's mean probability of this option over all texts (no interval: it says nothing
    /// of how wrong the judge is).
    pub judge_only: f64,
    /// From the labels alone (uniform: their mean; by uncertainty: Horvitz–Thompson).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub labels_only: Option<Estimate>,
    /// The judge on all texts corrected by the labels, with its 95 % interval.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub corrected: Option<Estimate>,
    /// `ppi` (uniform draw: prediction-powered inference, power-tuned) or `active` (by
    /// uncertainty: inverse-probability weighted).
    pub method: String,
    /// Labels a uniform draw would need for the corrected interval to reach the target
    /// half-width; `None` when it cannot be said (too few labels, or the target is below what
    /// the judge's part alone allows).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub labels_for_target: Option<usize>,
}

/// Agreement and corrected rates from a labels file and the judge's answers on all texts.
pub fn report(results: &[TextResult], labels: &Labels, opts: &ReportOptions) -> Result<Report> {
    let n = results.len();
    for t in &labels.texts {
        if t.index >= n || results[t.index].index != t.index {
            return Err(Error::Config(format!(
                "the labels name text {} but the answers hold {n} texts; use the answers file the labels were given on",
                t.index
            )));
        }
    }
    for (ci, c) in labels.criteria.iter().enumerate() {
        for r in results {
            let ok = r.criteria.get(ci).is_some_and(|rc| {
                rc.criterion == c.name && rc.options.iter().map(|o| &o.id).eq(c.options.iter().map(|o| &o.id))
            });
            if !ok {
                return Err(Error::Config(format!(
                    "criterion `{}` of the labels is not the answers' criterion {ci} with the same options (text {}); label the answers of the same rubric",
                    c.name, r.index
                )));
            }
        }
    }
    let in_draw = |t: &Labelled| t.pi.is_some();
    let mut criteria = Vec::with_capacity(labels.criteria.len());
    for (ci, c) in labels.criteria.iter().enumerate() {
        let judge = |i: usize| -> Option<usize> {
            let rc = &results[i].criteria[ci];
            rc.chosen.as_ref().and_then(|id| rc.options.iter().position(|o| &o.id == id))
        };
        let answered: Vec<&Labelled> = labels.texts.iter().filter(|t| !t.skipped && t.answers[ci].is_some()).collect();
        let groups: Vec<String> = answered.iter().map(|t| t.index.to_string()).collect();
        let pairs: Vec<Rated> = answered
            .iter()
            .zip(&groups)
            .map(|(t, g)| Rated { a: judge(t.index), b: t.answers[ci], group: g })
            .collect();
        let scale = if c.kind == QuestionKind::Score { Scale::Interval } else { Scale::Nominal };
        let agreement = agreement::agreement(&pairs, c.options.len(), scale, opts.resamples, opts.seed);
        let disagreements = agreement
            .disagreements
            .iter()
            .map(|&k| {
                let t = answered[k];
                Disagreement {
                    index: t.index,
                    id: t.id.clone(),
                    judge: judge(t.index).map(|j| c.options[j].id.clone()).unwrap_or_default(),
                    person: t.answers[ci].map(|j| c.options[j].id.clone()).unwrap_or_default(),
                }
            })
            .collect();

        // The draw's sample for this criterion: texts with an inclusion probability; those with
        // an answer respond, the others (skipped, or not answered on this criterion) are taken
        // as missing at random, which raises every responder's probability by the response rate.
        let sample = labels.texts.iter().filter(|t| in_draw(t)).count();
        let responders: Vec<&Labelled> = answered.iter().copied().filter(|t| in_draw(t)).collect();
        let response = if sample == 0 { 0.0 } else { responders.len() as f64 / sample as f64 };
        let pis: Vec<f64> = responders.iter().filter_map(|t| t.pi).collect();
        let uniform = pis.windows(2).all(|w| (w[0] - w[1]).abs() <= 1e-12 * w[0].max(w[1]));
        let labelled_set: HashSet<usize> = responders.iter().map(|t| t.index).collect();
        let mut rates = Vec::with_capacity(c.options.len());
        for (j, o) in c.options.iter().enumerate() {
            let f_all: Vec<f64> = results.iter().map(|r| r.criteria[ci].options[j].probability).collect();
            let y: Vec<f64> = responders.iter().map(|t| f64::from(u8::from(t.answers[ci] == Some(j)))).collect();
            let (labels_only, corrected, labels_for_target) = if responders.len() < 2 {
                (None, None, None)
            } else if uniform {
                let f_lab: Vec<f64> = responders.iter().map(|t| f_all[t.index]).collect();
                let f_unl: Vec<f64> = (0..n).filter(|i| !labelled_set.contains(i)).map(|i| f_all[i]).collect();
                // Every text labelled: the labels are the whole population, nothing to correct.
                let corrected = if f_unl.is_empty() {
                    rates::labels_only(&y)
                } else {
                    rates::ppi_mean(&y, &f_lab, &f_unl, Lambda::Tuned)
                };
                let need = rates::labels_for_half_width(&y, &f_lab, &f_unl, Lambda::Tuned, opts.target_half_width);
                (rates::labels_only(&y), corrected, need)
            } else {
                let ls: Vec<Label> = responders
                    .iter()
                    .zip(&y)
                    .map(|(t, &y)| Label { index: t.index, y, pi: (t.pi.unwrap_or(1.0) * response).min(1.0) })
                    .collect();
                let f_lab: Vec<f64> = responders.iter().map(|t| f_all[t.index]).collect();
                let f_unl: Vec<f64> = (0..n).filter(|i| !labelled_set.contains(i)).map(|i| f_all[i]).collect();
                let need = rates::labels_for_half_width(&y, &f_lab, &f_unl, Lambda::Tuned, opts.target_half_width);
                (rates::horvitz_thompson(n, &ls), rates::active_mean(&f_all, &ls, Lambda::Tuned), need)
            };
            rates.push(OptionRate {
                option: o.id.clone(),
                judge_only: rates::judge_only(&f_all).unwrap_or(0.0),
                labels_only,
                corrected,
                method: if uniform { "ppi" } else { "active" }.to_string(),
                labels_for_target,
            });
        }
        criteria.push(CriterionReport {
            criterion: c.name.clone(),
            kind: c.kind,
            option_ids: c.options.iter().map(|o| o.id.clone()).collect(),
            agreement,
            disagreements,
            rates,
        });
    }
    let labelled = labels.texts.iter().filter(|t| !t.skipped && t.answers.iter().any(Option::is_some)).count();
    Ok(Report {
        texts: n,
        labelled,
        skipped: labels.texts.iter().filter(|t| t.skipped).count(),
        off_draw: labels.texts.iter().filter(|t| !t.skipped && t.pi.is_none()).count(),
        draw: labels.draw,
        options: *opts,
        criteria,
    })
}

/// Where the labels of an answers file are kept: beside it, `NAME.labels.jsonl` for `NAME.jsonl`.
pub fn labels_path_for(answers: &Path) -> std::path::PathBuf {
    let stem = answers.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "answers".into());
    answers.with_file_name(format!("{stem}.labels.jsonl"))
}

/// A review on disk: the answers, the texts and rubric they were scored from, and the labels
/// beside them. The app keeps one folder per review (`rubric.json`, `texts.jsonl`,
/// `answers.jsonl`, `answers.labels.jsonl`); the CLI reads the same files
/// (`readout labels report DIR/answers.jsonl DIR/answers.labels.jsonl`).
#[derive(Debug, Clone)]
pub struct Review {
    pub answers_path: std::path::PathBuf,
    pub labels_path: std::path::PathBuf,
    pub criteria: Vec<Criterion>,
    pub texts: Vec<Text>,
    pub results: Vec<TextResult>,
    pub labels: Labels,
}

impl Review {
    /// Start a review folder for texts just scored: write the rubric, texts and answers into
    /// `dir` (created; refused when it already holds answers) and an empty labels file.
    pub fn create(
        dir: &Path,
        rubric_json: &serde_json::Value,
        texts: &[Text],
        results: &[TextResult],
        draw: Draw,
    ) -> Result<Review> {
        let answers_path = dir.join("answers.jsonl");
        if answers_path.exists() {
            return Err(Error::Config(format!(
                "{} exists; a review folder holds one job's answers",
                answers_path.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let rubric_path = dir.join("rubric.json");
        let rubric_bytes = serde_json::to_vec_pretty(rubric_json).map_err(|e| Error::Config(e.to_string()))?;
        let rubric = crate::formats::rubric::Rubric::from_bytes(&rubric_bytes, &rubric_path)?;
        if texts.len() != results.len() {
            return Err(Error::Config(format!(
                "{} texts but {} answers; review needs the answer of every text",
                texts.len(),
                results.len()
            )));
        }
        crate::atomic::write(&rubric_path, &rubric_bytes)?;
        let mut t = String::new();
        for x in texts {
            t.push_str(&serde_json::json!({"id": x.id, "text": x.text}).to_string());
            t.push('\n');
        }
        crate::atomic::write(&dir.join("texts.jsonl"), t.as_bytes())?;
        let mut a = String::new();
        for r in results {
            a.push_str(&serde_json::to_string(r).map_err(|e| Error::Config(e.to_string()))?);
            a.push('\n');
        }
        crate::atomic::write(&answers_path, a.as_bytes())?;
        let labels_path = labels_path_for(&answers_path);
        let labels = Labels::new(rubric.criteria.clone(), draw);
        labels.write(&labels_path)?;
        Ok(Review {
            answers_path,
            labels_path,
            criteria: rubric.criteria,
            texts: texts.to_vec(),
            results: results.to_vec(),
            labels,
        })
    }

    /// Open a review: the answers file, the texts and rubric it was scored from, and the labels
    /// beside it (an empty labels file when there are none yet; it is written at the first label).
    pub fn open(answers_path: &Path, texts_path: &Path, rubric_path: &Path, draw: Draw) -> Result<Review> {
        let bytes = std::fs::read(answers_path).map_err(|e| Error::io(answers_path, e))?;
        let results = crate::jobs::answers::read_jsonl(&bytes, answers_path)?;
        let rubric = crate::formats::rubric::Rubric::load(rubric_path)?;
        let f = std::fs::File::open(texts_path).map_err(|e| Error::io(texts_path, e))?;
        let texts = crate::formats::texts::read_texts_choosing(f, texts_path, None)?.texts;
        if texts.len() != results.len() {
            return Err(Error::Config(format!(
                "{} holds {} texts but {} holds answers for {}; give the texts that were scored",
                texts_path.display(),
                texts.len(),
                answers_path.display(),
                results.len()
            )));
        }
        let labels_path = labels_path_for(answers_path);
        let labels = if labels_path.exists() {
            let mut l = Labels::read(&labels_path)?;
            if l.criteria.is_empty() {
                l = Labels::new(rubric.criteria.clone(), draw);
            }
            l
        } else {
            Labels::new(rubric.criteria.clone(), draw)
        };
        let review = Review {
            answers_path: answers_path.to_path_buf(),
            labels_path,
            criteria: rubric.criteria,
            texts,
            results,
            labels,
        };
        // The labels must be of these answers: the same criteria, texts in range.
        report(&review.results, &review.labels, &ReportOptions { resamples: 0, ..ReportOptions::default() })?;
        Ok(review)
    }

    /// Open the review folder the app keeps (`Review::create`).
    pub fn open_dir(dir: &Path, draw: Draw) -> Result<Review> {
        Review::open(&dir.join("answers.jsonl"), &dir.join("texts.jsonl"), &dir.join("rubric.json"), draw)
    }

    /// Give a text's answers (or skip it) and write the labels file at once.
    pub fn label(&mut self, index: usize, answers: Vec<Option<usize>>, skipped: bool) -> Result<()> {
        let text = self
            .texts
            .get(index)
            .ok_or_else(|| Error::Config(format!("there is no text {index} ({} texts)", self.texts.len())))?
            .clone();
        record(&mut self.labels, &self.results, &text, index, answers, skipped)?;
        self.labels.write(&self.labels_path)
    }

    /// Take a text's labels back and write the labels file at once.
    pub fn unlabel(&mut self, index: usize) -> Result<()> {
        forget(&mut self.labels, &self.results, index);
        self.labels.write(&self.labels_path)
    }

    /// The texts in the order review shows them.
    pub fn queue(&self) -> Vec<Queued> {
        order(&self.results, &self.labels.draw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::rubric::OptionSpec;
    use crate::jobs::score::{CriterionResult, OptionResult};

    fn criterion() -> Criterion {
        Criterion {
            name: "refund".into(),
            kind: QuestionKind::Noul,
            instructions: "Refund?".into(),
            rule: None,
            options: vec![
                OptionSpec { id: "yes".into(), description: "Yes".into() },
                OptionSpec { id: "no".into(), description: "No".into() },
            ],
            gold: None,
        }
    }

    /// A text the judge scored: P(yes) = p; the margin is |2p − 1|.
    fn scored(index: usize, p: f64) -> TextResult {
        TextResult {
            index,
            id: None,
            criteria: vec![CriterionResult {
                criterion: "refund".into(),
                kind: QuestionKind::Noul,
                options: vec![
                    OptionResult { id: "yes".into(), description: "Yes".into(), probability: p },
                    OptionResult { id: "no".into(), description: "No".into(), probability: 1.0 - p },
                ],
                chosen: Some(if p >= 0.5 { "yes" } else { "no" }.into()),
                probability: p.max(1.0 - p),
                abstained: None,
                expected_level: None,
                margin: (2.0 * p - 1.0).abs(),
                close: false,
                order_unstable: None,
                letter_mass: None,
                judges: None,
                disagree: None,
            }],
            truncated_tokens: None,
        }
    }

    fn text(i: usize) -> Text {
        Text { id: Some(format!("T{i}")), text: format!("text {i}") }
    }

    #[test]
    fn uncertainty_is_one_minus_the_margin_times_the_letter_mass_and_one_when_unstable() {
        let mut r = scored(0, 0.8);
        assert!((uncertainty(&r) - 0.4).abs() < 1e-12); // margin 0.6
        r.criteria[0].letter_mass = Some(0.5);
        assert!((uncertainty(&r) - 0.7).abs() < 1e-12); // 1 − 0.6·0.5
        r.criteria[0].order_unstable = Some(true);
        assert_eq!(uncertainty(&r), 1.0);
    }

    #[test]
    fn the_queue_is_by_key_and_a_uniform_draw_weighs_every_text_one() {
        let results: Vec<TextResult> = (0..50).map(|i| scored(i, i as f64 / 49.0)).collect();
        let q = order(&results, &Draw { by: DrawBy::Uniform, seed: 3, uniform_share: 0.2 });
        assert!(q.windows(2).all(|w| w[0].key <= w[1].key));
        assert!(q.iter().all(|x| x.weight == 1.0));
        let q = order(&results, &Draw::default());
        let mean_w = q.iter().map(|x| x.weight).sum::<f64>() / 50.0;
        assert!((mean_w - 1.0).abs() < 1e-12);
        // The surest texts (p near 0 or 1) have the smallest weight: 0.2 when the margin is 1.
        assert!((q.iter().find(|x| x.index == 0).unwrap().weight - 0.2).abs() < 1e-12);
        // The same seed gives the same order; another seed another one.
        assert_eq!(q, order(&results, &Draw::default()));
        assert_ne!(q, order(&results, &Draw { seed: 2, ..Draw::default() }));
    }

    #[test]
    fn inclusion_is_the_first_undone_key_times_the_weight_capped_at_one() {
        let q = vec![
            Queued { index: 4, uncertainty: 0.0, weight: 2.0, key: 0.1 },
            Queued { index: 1, uncertainty: 0.0, weight: 0.5, key: 0.2 },
            Queued { index: 0, uncertainty: 0.0, weight: 4.0, key: 0.3 },
            Queued { index: 2, uncertainty: 0.0, weight: 1.0, key: 0.4 },
        ];
        // 4 and 1 done, then 0 is next: t = 0.3; π = 0.6 and 0.15.
        let done: HashSet<usize> = [4, 1].into();
        let pi = inclusion(&q, &done);
        assert_eq!(pi[0].1.map(|p| (p * 1e12).round() / 1e12), Some(0.6));
        assert_eq!(pi[1].1.map(|p| (p * 1e12).round() / 1e12), Some(0.15));
        assert_eq!((pi[2].1, pi[3].1), (None, None));
        // 2 labelled out of turn: it is past t, so off the draw.
        let done: HashSet<usize> = [4, 1, 2].into();
        assert_eq!(inclusion(&q, &done)[3].1, None);
        // All done: every text was certain to be drawn.
        let done: HashSet<usize> = [4, 1, 0, 2].into();
        assert!(inclusion(&q, &done).iter().all(|(_, p)| *p == Some(1.0)));
    }

    #[test]
    fn a_sheet_reads_back_and_bad_cells_name_their_line_and_column() {
        let results: Vec<TextResult> = (0..10).map(|i| scored(i, i as f64 / 9.0)).collect();
        let texts: Vec<Text> = (0..10).map(text).collect();
        let sheet = draw_sheet(&[criterion()], &results, &texts, 4, Draw::default()).unwrap();
        assert_eq!(sheet.texts.len(), 4);
        let csv = sheet_csv(&sheet).unwrap();
        let filled = csv
            .lines()
            .enumerate()
            .map(|(i, l)| if i == 0 { l.to_string() } else { format!("{l}yes") })
            .collect::<Vec<_>>()
            .join("\n");
        let back = read_sheet_csv(filled.as_bytes(), Path::new("s.csv"), &[criterion()], 10, Draw::default()).unwrap();
        assert_eq!(back.texts.len(), 4);
        assert!(back
            .texts
            .iter()
            .zip(&sheet.texts)
            .all(|(a, b)| a.index == b.index && a.pi == b.pi && a.answers == [Some(0)]));
        let err = |body: String| {
            read_sheet_csv(body.as_bytes(), Path::new("s.csv"), &[criterion()], 10, Draw::default())
                .unwrap_err()
                .to_string()
        };
        assert!(err(filled.replacen("yes", "maybe", 1))
            .starts_with("s.csv:2: field `refund`: `maybe` is not an option of `refund`; write one of: yes, no"));
        assert!(err(filled.replacen("yes", "", 1)).starts_with("s.csv:2: field `refund`: is empty"));
        assert!(err(filled.replace("index,", "nr,")).starts_with("s.csv:1: field `index`: column is missing"));
        let dup = format!("{filled}\n{}", filled.lines().nth(1).unwrap());
        assert!(err(dup).starts_with("s.csv:6: field `index`: text"), "dup");
    }

    #[test]
    fn the_report_agrees_with_hand_counts() {
        // Judge: yes on texts 5..10 (p > 0.5). Person labels every text (a census: π = 1):
        // yes on 4..10. They differ on text 4 only.
        let results: Vec<TextResult> = (0..10).map(|i| scored(i, (i as f64 + 0.5) / 10.0)).collect();
        let mut labels = Labels::new(vec![criterion()], Draw { by: DrawBy::Uniform, ..Draw::default() });
        for i in 0..10 {
            record(&mut labels, &results, &text(i), i, vec![Some(if i >= 4 { 0 } else { 1 })], false).unwrap();
        }
        assert!(labels.texts.iter().all(|t| t.pi == Some(1.0)));
        let r = report(&results, &labels, &ReportOptions { resamples: 200, ..ReportOptions::default() }).unwrap();
        let c = &r.criteria[0];
        assert_eq!(c.agreement.n, 10);
        assert_eq!(c.agreement.confusion, vec![vec![5, 0], vec![1, 4]]);
        assert_eq!(c.disagreements.len(), 1);
        assert_eq!(
            (c.disagreements[0].index, c.disagreements[0].judge.as_str(), c.disagreements[0].person.as_str()),
            (4, "no", "yes")
        );
        assert_eq!(c.rates[0].method, "ppi");
        let lo = c.rates[0].labels_only.as_ref().unwrap();
        assert!((lo.share - 0.6).abs() < 1e-12);
        // With every text labelled the corrected share is the labels' share.
        let cor = c.rates[0].corrected.as_ref().unwrap();
        assert!((cor.share - 0.6).abs() < 1e-9, "{}", cor.share);
        // Mean judge probability of yes: (0.05 + 0.15 + … + 0.95) / 10 = 0.5.
        assert!((c.rates[0].judge_only - 0.5).abs() < 1e-12);
        // Forgetting a label puts the text back in the queue.
        forget(&mut labels, &results, 3);
        assert_eq!(labels.texts.len(), 9);
    }

    #[test]
    fn labels_of_other_answers_are_refused() {
        let results: Vec<TextResult> = (0..3).map(|i| scored(i, 0.5)).collect();
        let mut labels = Labels::new(vec![criterion()], Draw::default());
        labels.texts.push(Labelled {
            index: 7,
            id: None,
            text: "x".into(),
            answers: vec![Some(0)],
            skipped: false,
            pi: None,
        });
        let e = report(&results, &labels, &ReportOptions::default()).unwrap_err().to_string();
        assert!(e.contains("the labels name text 7 but the answers hold 3 texts"), "{e}");
    }
}
