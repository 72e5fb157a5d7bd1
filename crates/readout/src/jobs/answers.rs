//! Scored answers for people and spreadsheets: the long table (one row per text and criterion,
//! `readout score --csv` and the app's Export CSV, so both give the same columns), the wide sheet
//! (one row per text, the app's Export for spreadsheets), and the summary per question (how many
//! texts got each answer, and how many answers are flagged).

use crate::formats::rubric::QuestionKind;
use crate::formats::texts::Text;
use crate::jobs::score::{Abstained, CriterionResult, TextResult};
use serde::{Deserialize, Serialize};

/// The columns: the text (its number, counted from 1 as the app shows it; its index, from 0 as
/// `--json` gives it; its id and text), the criterion and its type, the chosen option
/// (empty where no answer was given; `abstained` says why: `confidence`, `letter_mass` or, for a jury, `disagreement`), the
/// top probability, the margin to the runner-up, the flags, a `score` question's expected level,
/// the letters' share of the next-token distribution, and every option's probability
/// (`id=p; …`). `order_unstable` is empty where one ordering was scored (not checked).
pub const CSV_HEADER: [&str; 15] = [
    "number",
    "index",
    "id",
    "text",
    "criterion",
    "type",
    "chosen",
    "probability",
    "margin",
    "close",
    "order_unstable",
    "expected_level",
    "letter_mass",
    "abstained",
    "options",
];

/// A text's rows, one per criterion, in [`CSV_HEADER`]'s columns; `text` is the scored text
/// (its `id` is used where the result has none).
pub fn csv_rows(r: &TextResult, text: Option<&Text>) -> Vec<[String; 15]> {
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    r.criteria
        .iter()
        .map(|c| {
            [
                (r.index + 1).to_string(),
                r.index.to_string(),
                r.id.clone().or_else(|| text.and_then(|t| t.id.clone())).unwrap_or_default(),
                text.map(|t| t.text.clone()).unwrap_or_default(),
                c.criterion.clone(),
                kind_name(c.kind).to_string(),
                c.chosen.clone().unwrap_or_default(),
                c.probability.to_string(),
                c.margin.to_string(),
                c.close.to_string(),
                c.order_unstable.map(|u| u.to_string()).unwrap_or_default(),
                opt(c.expected_level),
                opt(c.letter_mass),
                match c.abstained {
                    Some(Abstained::Confidence) => "confidence".into(),
                    Some(Abstained::LetterMass) => "letter_mass".into(),
                    Some(Abstained::Disagreement) => "disagreement".into(),
                    None => String::new(),
                },
                c.options.iter().map(|o| format!("{}={:.4}", o.id, o.probability)).collect::<Vec<_>>().join("; "),
            ]
        })
        .collect()
}

/// The whole table for `results` of `texts` (by each result's index), header first.
pub fn to_csv(texts: &[Text], results: &[TextResult]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to memory fails only on a record of the wrong length, which the types rule out.
    let _ = w.write_record(CSV_HEADER);
    for r in results {
        for row in csv_rows(r, texts.get(r.index)) {
            let _ = w.write_record(&row);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// A question type as the JSON names it (`choice`, `noul`, `score`): the long table's `type`.
fn kind_name(k: QuestionKind) -> &'static str {
    match k {
        QuestionKind::Choice => "choice",
        QuestionKind::Noul => "noul",
        QuestionKind::Score => "score",
    }
}

/// A question type in words for people (`yes/no` for `noul`): the summary's `type`.
pub fn kind_words(k: QuestionKind) -> &'static str {
    match k {
        QuestionKind::Noul => "yes/no",
        k => kind_name(k),
    }
}

/// Whether an answer is one to check by hand: a close call (the top two within
/// [`crate::jobs::score::CLOSE_MARGIN`]), changed when the options were reordered, or not given.
pub fn flagged(c: &CriterionResult) -> bool {
    c.close || c.order_unstable == Some(true) || c.abstained.is_some()
}

/// How many texts got one option of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OptionCount {
    pub id: String,
    pub description: String,
    pub count: usize,
}

/// One question's answers over the texts scored: how many texts got each option (in the rubric's
/// order) and how many got none, and how many answers are flagged ([`flagged`]). The counts of
/// `options` and `no_answer` add up to `texts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct QuestionSummary {
    pub criterion: String,
    #[serde(rename = "type")]
    pub kind: QuestionKind,
    /// The texts scored.
    pub texts: usize,
    pub options: Vec<OptionCount>,
    /// Texts given no answer (`abstained`).
    pub no_answer: usize,
    /// Close calls (the top two within 10 points), answered or not.
    pub close: usize,
    /// Answers that changed when the options were reordered; null when one order was scored.
    pub order_unstable: Option<usize>,
    /// Answers close, order-unstable or not given (each counted once).
    pub flagged: usize,
}

/// The summary per question of `results`, in the rubric's order (the first result's criteria).
pub fn summary(results: &[TextResult]) -> Vec<QuestionSummary> {
    let Some(first) = results.first() else { return vec![] };
    first
        .criteria
        .iter()
        .enumerate()
        .map(|(k, head)| {
            let mut s = QuestionSummary {
                criterion: head.criterion.clone(),
                kind: head.kind,
                texts: 0,
                options: head
                    .options
                    .iter()
                    .map(|o| OptionCount { id: o.id.clone(), description: o.description.clone(), count: 0 })
                    .collect(),
                no_answer: 0,
                close: 0,
                order_unstable: None,
                flagged: 0,
            };
            for c in results.iter().filter_map(|r| r.criteria.get(k)) {
                s.texts += 1;
                match c.chosen.as_deref().and_then(|id| s.options.iter_mut().find(|o| o.id == id)) {
                    Some(o) => o.count += 1,
                    None => s.no_answer += 1,
                }
                s.close += usize::from(c.close);
                if let Some(u) = c.order_unstable {
                    *s.order_unstable.get_or_insert(0) += usize::from(u);
                }
                s.flagged += usize::from(flagged(c));
            }
            s
        })
        .collect()
}

/// A whole percentage of `n` in `of` (0 for none of none), as a spreadsheet sorts it: a number.
fn percent(n: usize, of: usize) -> String {
    if of == 0 {
        return "0".into();
    }
    whole(n as f64 / of as f64)
}

/// A probability as a whole percentage, halves rounded up (as the app's screen rounds them).
fn whole(p: f64) -> String {
    format!("{}", (100.0 * p).round())
}

/// The summary as a table for a spreadsheet: one row per question and answer (`no answer` last,
/// where any text got none), with the count and its whole percentage of the texts.
pub fn summary_csv(summaries: &[QuestionSummary]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(["question", "type", "answer", "texts", "share (%)"]);
    for s in summaries {
        let question = s.criterion.replace('_', " ");
        let mut rows: Vec<(String, usize)> =
            s.options.iter().map(|o| (option_words(s.kind, &o.id, &o.description), o.count)).collect();
        if s.no_answer > 0 {
            rows.push(("no answer".into(), s.no_answer));
        }
        for (answer, count) in rows {
            let _ = w.write_record([
                question.as_str(),
                kind_words(s.kind),
                &answer,
                &count.to_string(),
                &percent(count, s.texts),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// An option in words: `yes`/`no`, a choice's name, a level with its description (`2: Today`).
fn option_words(kind: QuestionKind, id: &str, description: &str) -> String {
    match kind {
        QuestionKind::Score => format!("{id}: {description}"),
        _ => id.to_string(),
    }
}

/// An answer in words for the sheet: [`option_words`] of the chosen option, or why there is none.
fn answer_words(c: &CriterionResult) -> String {
    match (&c.chosen, c.abstained) {
        (Some(id), _) => {
            let description = c.options.iter().find(|o| &o.id == id).map(|o| o.description.as_str()).unwrap_or("");
            option_words(c.kind, id, description)
        }
        (None, Some(Abstained::LetterMass)) => "no answer (none fits)".into(),
        (None, Some(Abstained::Disagreement)) => "no answer (the judges disagree)".into(),
        (None, _) => "no answer (unsure)".into(),
    }
}

/// Why an answer is flagged, in words (empty when it is not): `close call`, `changed when
/// reordered`, joined by `; `. An answer not given says so in its own column.
fn flag_words(c: &CriterionResult) -> String {
    let mut out = Vec::new();
    if c.close {
        out.push("close call");
    }
    if c.order_unstable == Some(true) {
        out.push("changed when reordered");
    }
    out.join("; ")
}

/// The sheet: one row per text, numbered from 1 as the app shows them; the columns `number`, `id`,
/// `text`, then per question (named with spaces for `_`) its answer in words ([`answer_words`]),
/// `QUESTION probability (%)` (the top probability as a whole number, so a spreadsheet sorts it),
/// and `QUESTION flag` ([`flag_words`]) only for a question with some close or order-unstable
/// answer. The questions are the first result's; `texts` by each result's index.
pub fn to_sheet_csv(texts: &[Text], results: &[TextResult]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let Some(first) = results.first() else {
        let _ = w.write_record(["number", "id", "text"]);
        return String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default();
    };
    let flag_col: Vec<bool> = (0..first.criteria.len())
        .map(|k| results.iter().filter_map(|r| r.criteria.get(k)).any(|c| !flag_words(c).is_empty()))
        .collect();
    let mut header: Vec<String> = vec!["number".into(), "id".into(), "text".into()];
    for (c, &flags) in first.criteria.iter().zip(&flag_col) {
        let name = c.criterion.replace('_', " ");
        header.push(name.clone());
        header.push(format!("{name} probability (%)"));
        if flags {
            header.push(format!("{name} flag"));
        }
    }
    let _ = w.write_record(&header);
    for r in results {
        let text = texts.get(r.index);
        let mut row = vec![
            (r.index + 1).to_string(),
            r.id.clone().or_else(|| text.and_then(|t| t.id.clone())).unwrap_or_default(),
            text.map(|t| t.text.clone()).unwrap_or_default(),
        ];
        for (k, &flags) in flag_col.iter().enumerate() {
            let c = r.criteria.get(k);
            row.push(c.map(answer_words).unwrap_or_default());
            row.push(c.map(|c| whole(c.probability)).unwrap_or_default());
            if flags {
                row.push(c.map(flag_words).unwrap_or_default());
            }
        }
        let _ = w.write_record(&row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// Read a whole answers file (`readout score --out FILE.jsonl`, the app's saved answers): one
/// decision a line, in any order, put back in the texts' order. Refused by line: a line that is
/// not a decision, a text given twice; and a file that misses a text (finish it with `--resume`).
pub fn read_jsonl(bytes: &[u8], path: &std::path::Path) -> crate::Result<Vec<TextResult>> {
    let bad = |line: usize, reason: String| crate::Error::BadInput {
        path: path.to_path_buf(),
        line,
        field: "(line)".into(),
        reason,
    };
    let body = String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)).into_owned();
    let mut out: Vec<(usize, TextResult)> = Vec::new();
    for (i, line) in body.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: TextResult = serde_json::from_str(line)
            .map_err(|e| bad(i + 1, format!("not a decision `readout score --out` writes ({e})")))?;
        out.push((i + 1, r));
    }
    out.sort_by_key(|(_, r)| r.index);
    for w in out.windows(2) {
        if w[0].1.index == w[1].1.index {
            let (first, second) = (w[0].0.min(w[1].0), w[0].0.max(w[1].0));
            return Err(bad(second, format!("text {} is given twice (also at line {first})", w[1].1.index)));
        }
    }
    for (k, (_, r)) in out.iter().enumerate() {
        if r.index != k {
            return Err(crate::Error::BadFile {
                path: path.to_path_buf(),
                reason: format!("has no decision for text {k}: the job stopped before the end; finish it with `readout score … --out FILE --resume`"),
            });
        }
    }
    if out.is_empty() {
        return Err(crate::Error::BadFile {
            path: path.to_path_buf(),
            reason: "holds no decisions; write it with `readout score … --out FILE.jsonl`".into(),
        });
    }
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::score::{CriterionResult, OptionResult};

    #[test]
    fn one_row_per_criterion_quoted_where_needed() {
        let option = |id: &str, p: f64| OptionResult { id: id.into(), description: id.into(), probability: p };
        let r = TextResult {
            index: 0,
            id: None,
            criteria: vec![CriterionResult {
                criterion: "topic".into(),
                kind: QuestionKind::Choice,
                options: vec![option("billing", 0.75), option("other", 0.25)],
                chosen: Some("billing".into()),
                probability: 0.75,
                abstained: None,
                expected_level: None,
                margin: 0.5,
                close: false,
                order_unstable: None,
                letter_mass: Some(0.5),
                judges: None,
                disagree: None,
            }],
            truncated_tokens: None,
        };
        let texts = [Text { id: Some("t1".into()), text: "charged twice, \"again\"".into() }];
        let csv = to_csv(&texts, &[r]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER.join(","));
        assert_eq!(
            lines[1],
            r#"1,0,t1,"charged twice, ""again""",topic,choice,billing,0.75,0.5,false,,,0.5,,billing=0.7500; other=0.2500"#
        );
    }

    /// A decision on `criterion` with these options' probabilities, `chosen` the top one unless
    /// it abstained; `close` and `unstable` as given.
    fn decision(
        criterion: &str,
        kind: QuestionKind,
        options: &[(&str, &str, f64)],
        chosen: Option<&str>,
    ) -> CriterionResult {
        let top = options.iter().map(|o| o.2).fold(0.0, f64::max);
        CriterionResult {
            criterion: criterion.into(),
            kind,
            options: options
                .iter()
                .map(|&(id, description, p)| OptionResult {
                    id: id.into(),
                    description: description.into(),
                    probability: p,
                })
                .collect(),
            chosen: chosen.map(str::to_string),
            probability: top,
            abstained: chosen.is_none().then_some(Abstained::Confidence),
            expected_level: None,
            margin: 0.5,
            close: false,
            order_unstable: Some(false),
            letter_mass: None,
            judges: None,
            disagree: None,
        }
    }

    /// Four texts, two questions: `topic` (billing, billing, technical, none: unsure) and
    /// `refund` (yes, no, no, no); text 2's topic is close, text 3's refund changed on reorder.
    fn four() -> Vec<TextResult> {
        let topic = |chosen: Option<&str>, p: f64| {
            decision(
                "topic",
                QuestionKind::Choice,
                &[("billing", "Payments", p), ("technical", "Bugs", 1.0 - p)],
                chosen,
            )
        };
        let refund = |yes: bool, p: f64| {
            decision(
                "refund_requested",
                QuestionKind::Noul,
                &[("yes", "Yes", if yes { p } else { 1.0 - p }), ("no", "No", if yes { 1.0 - p } else { p })],
                Some(if yes { "yes" } else { "no" }),
            )
        };
        let mut close_topic = topic(Some("billing"), 0.54);
        close_topic.close = true;
        let mut unstable = refund(false, 0.7);
        unstable.order_unstable = Some(true);
        let rows = vec![
            vec![topic(Some("billing"), 0.9), refund(true, 0.875)],
            vec![close_topic, refund(false, 0.8)],
            vec![topic(Some("technical"), 0.2), unstable],
            vec![topic(None, 0.55), refund(false, 0.6)],
        ];
        rows.into_iter()
            .enumerate()
            .map(|(index, criteria)| TextResult { index, id: None, criteria, truncated_tokens: None })
            .collect()
    }

    #[test]
    fn summary_counts_each_answer_and_the_flags() {
        let s = summary(&four());
        assert_eq!(s.len(), 2);
        fn count(q: &QuestionSummary) -> Vec<(&str, usize)> {
            q.options.iter().map(|o| (o.id.as_str(), o.count)).collect()
        }
        // topic: billing twice, technical once, one text unsure; flagged: the close one and the
        // one not answered.
        assert_eq!((s[0].criterion.as_str(), s[0].texts), ("topic", 4));
        assert_eq!(count(&s[0]), [("billing", 2), ("technical", 1)]);
        assert_eq!((s[0].no_answer, s[0].close, s[0].order_unstable, s[0].flagged), (1, 1, Some(0), 2));
        // refund: yes once, no three times; one changed on reorder.
        assert_eq!(count(&s[1]), [("yes", 1), ("no", 3)]);
        assert_eq!((s[1].no_answer, s[1].close, s[1].order_unstable, s[1].flagged), (0, 0, Some(1), 1));
        // One order scored: not checked.
        let mut one = four();
        for r in &mut one {
            for c in &mut r.criteria {
                c.order_unstable = None;
            }
        }
        assert_eq!(summary(&one)[1].order_unstable, None);
        assert!(summary(&[]).is_empty());

        let csv = summary_csv(&s);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                "question,type,answer,texts,share (%)",
                "topic,choice,billing,2,50",
                "topic,choice,technical,1,25",
                "topic,choice,no answer,1,25",
                "refund requested,yes/no,yes,1,25",
                "refund requested,yes/no,no,3,75",
            ]
        );
    }

    #[test]
    fn the_sheet_has_a_row_per_text_and_flag_columns_where_flagged() {
        let texts: Vec<Text> = ["a", "b", "c", "d"].iter().map(|t| Text { id: None, text: (*t).into() }).collect();
        let mut results = four();
        results[0].id = Some("T-1".into());
        let csv = to_sheet_csv(&texts, &results);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                "number,id,text,topic,topic probability (%),topic flag,refund requested,refund requested probability (%),refund requested flag",
                // 0.875 is 87.5 %: rounded up to 88.
                "1,T-1,a,billing,90,,yes,88,",
                "2,,b,billing,54,close call,no,80,",
                "3,,c,technical,80,,no,70,changed when reordered",
                "4,,d,no answer (unsure),55,,no,60,",
            ]
        );
        // No flags anywhere: no flag columns; a level in words.
        let level =
            decision("urgency", QuestionKind::Score, &[("0", "Can wait", 0.25), ("1", "Today", 0.75)], Some("1"));
        let calm = vec![TextResult { index: 0, id: None, criteria: vec![level], truncated_tokens: None }];
        let csv = to_sheet_csv(&texts, &calm);
        assert_eq!(
            csv.lines().collect::<Vec<_>>(),
            ["number,id,text,urgency,urgency probability (%)", "1,,a,1: Today,75"]
        );
        assert_eq!(to_sheet_csv(&texts, &[]).trim_end(), "number,id,text");
    }
}
