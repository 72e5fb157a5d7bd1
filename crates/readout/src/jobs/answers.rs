//! Scored answers as CSV: one row per text and criterion. The one writer of that table, used by
//! `readout score --csv` and the app's Export CSV, so both give the same columns.

use crate::formats::rubric::QuestionKind;
use crate::formats::texts::Text;
use crate::jobs::score::{Abstained, TextResult};

/// The columns: the text (its index, id and text), the criterion and its type, the chosen option
/// (empty where no answer was given; `abstained` says why: `confidence` or `letter_mass`), the
/// top probability, the margin to the runner-up, the flags, a `score` question's expected level,
/// the letters' share of the next-token distribution, and every option's probability
/// (`id=p; …`). `order_unstable` is empty where one ordering was scored (not checked).
pub const CSV_HEADER: [&str; 14] = [
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
pub fn csv_rows(r: &TextResult, text: Option<&Text>) -> Vec<[String; 14]> {
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    r.criteria
        .iter()
        .map(|c| {
            [
                r.index.to_string(),
                r.id.clone().or_else(|| text.and_then(|t| t.id.clone())).unwrap_or_default(),
                text.map(|t| t.text.clone()).unwrap_or_default(),
                c.criterion.clone(),
                match c.kind {
                    QuestionKind::Choice => "choice",
                    QuestionKind::Noul => "noul",
                    QuestionKind::Score => "score",
                }
                .to_string(),
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
            }],
            truncated_tokens: None,
        };
        let texts = [Text { id: Some("t1".into()), text: "charged twice, \"again\"".into() }];
        let csv = to_csv(&texts, &[r]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER.join(","));
        assert_eq!(
            lines[1],
            r#"0,t1,"charged twice, ""again""",topic,choice,billing,0.75,0.5,false,,,0.5,,billing=0.7500; other=0.2500"#
        );
    }
}
