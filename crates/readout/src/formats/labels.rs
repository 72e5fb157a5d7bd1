//! The labels file: a person's own answers to a rubric's criteria for some of the texts a judge
//! scored. It is an eval set in the request form (one text a line, the rubric's criteria as its
//! questions, the person's answer as each question's `label`), so that `readout run LABELS.jsonl`
//! evaluates any judge on the person's labels and `readout calibrate` fits a temperature on that
//! run, with nothing to convert. What review needs beyond an eval set rides in one extra field
//! per line, `review`, which the eval-set reader carries and ignores: the text's index among the
//! scored texts, whether the person skipped it, and the probability with which it was drawn for
//! labelling (see `jobs::review`), without which the corrected rates could not stay unbiased.
//!
//! The file is rewritten whole and atomically (a temporary file, then a rename) after every label,
//! so a crash or a closed window loses at most the label being given, and the file on disk is
//! always one the eval-set reader accepts.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::formats::evalset::{EvalSet, LoadOptions};
use crate::formats::rubric::{Criterion, QuestionKind};

/// How texts were drawn for labelling: the design every inclusion probability comes from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Draw {
    /// `uncertainty` (the judge's least sure texts are the likeliest to be drawn) or `uniform`.
    pub by: DrawBy,
    /// Seed of the draw's random numbers: one seed, one order.
    pub seed: u64,
    /// Share of each text's drawing weight that is uniform (0 to 1), so every text can be drawn
    /// and no weight is extreme; 1 is a uniform draw.
    pub uniform_share: f64,
}

impl Default for Draw {
    fn default() -> Draw {
        Draw { by: DrawBy::Uncertainty, seed: 1, uniform_share: 0.2 }
    }
}

/// What a text's chance of being drawn for labelling follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DrawBy {
    /// Each text as likely as any other.
    Uniform,
    /// Likelier the less sure the judge was (low margin, order-unstable, abstained, low letter mass).
    Uncertainty,
}

option_names!(DrawBy, "draw", "uniform or uncertainty", { Uniform => "uniform", Uncertainty => "uncertainty" });

/// One text the person labelled (or skipped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Labelled {
    /// The text's index among the scored texts (0-based, as in the answers file).
    pub index: usize,
    /// The text's own id, when it has one.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub id: Option<String>,
    pub text: String,
    /// The person's answer per criterion, in the rubric's order: an option index, or `None`
    /// where no answer was given.
    pub answers: Vec<Option<usize>>,
    /// The person passed over this text: it counts as drawn but not labelled.
    pub skipped: bool,
    /// The probability the text had of being drawn for labelling under the file's draw; `None`
    /// for a text labelled off the draw (it counts for agreement, not for rates).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub pi: Option<f64>,
}

/// A labels file: the rubric's criteria, the draw, and the texts labelled so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Labels {
    pub criteria: Vec<Criterion>,
    pub draw: Draw,
    pub texts: Vec<Labelled>,
}

impl Labels {
    /// An empty labels file for a rubric's criteria.
    pub fn new(criteria: Vec<Criterion>, draw: Draw) -> Labels {
        Labels { criteria, draw, texts: Vec::new() }
    }

    /// The texts' lines, one JSON object each, as the eval-set reader takes them.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for t in &self.texts {
            out.push_str(&self.line(t).to_string());
            out.push('\n');
        }
        out
    }

    fn line(&self, t: &Labelled) -> Value {
        let mut questions = Map::new();
        for (c, answer) in self.criteria.iter().zip(&t.answers) {
            let mut q = Map::new();
            q.insert("type".into(), json!(c.kind));
            q.insert("instructions".into(), json!(c.instructions));
            let criteria = match c.kind {
                QuestionKind::Choice => {
                    Value::Object(c.options.iter().map(|o| (o.id.clone(), json!(o.description))).collect())
                }
                QuestionKind::Noul => c.rule.as_ref().map(|r| json!(r)).unwrap_or(Value::Null),
                QuestionKind::Score => json!(c.options.iter().map(|o| &o.description).collect::<Vec<_>>()),
            };
            if !criteria.is_null() {
                q.insert("criteria".into(), criteria);
            }
            if let Some(i) = answer {
                let label = match c.kind {
                    QuestionKind::Score => json!(i),
                    _ => json!(c.options[*i].id),
                };
                q.insert("label".into(), label);
            }
            questions.insert(c.name.clone(), Value::Object(q));
        }
        let mut review = Map::new();
        review.insert("index".into(), json!(t.index));
        review.insert("skipped".into(), json!(t.skipped));
        review.insert("pi".into(), json!(t.pi));
        review.insert("draw".into(), json!(self.draw));
        let mut line = Map::new();
        line.insert("id".into(), json!(item_id(t)));
        line.insert("state".into(), json!(t.text));
        line.insert("questions".into(), Value::Object(questions));
        line.insert("review".into(), Value::Object(review));
        Value::Object(line)
    }

    /// Write the file whole and atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        crate::atomic::write(path, self.to_jsonl().as_bytes())
    }

    /// Read a labels file (or a JSONL labelling sheet), checking it as an eval set first, then
    /// each line's `review` field and that every line asks the same criteria.
    pub fn read(path: &Path) -> Result<Labels> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Labels::parse(&bytes, path)
    }

    /// [`Labels::read`] on bytes already read.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Labels> {
        let bad = |line: usize, field: &str, reason: String| Error::BadInput {
            path: path.to_path_buf(),
            line,
            field: field.to_string(),
            reason,
        };
        // A file with no line yet is an empty labels file (the eval-set reader refuses it as a set
        // to run). One where no question has a label yet, a fresh sheet, reads as any other.
        if String::from_utf8_lossy(bytes).trim_start_matches('\u{feff}').trim().is_empty() {
            return Ok(Labels::new(Vec::new(), Draw::default()));
        }
        let set = EvalSet::parse(bytes, path, &LoadOptions::default())?;
        let text = String::from_utf8_lossy(bytes);
        let lines: Vec<&str> = text.lines().collect();
        let mut criteria: Option<Vec<Criterion>> = None;
        let mut draw: Option<Draw> = None;
        let mut texts = Vec::with_capacity(set.items.len());
        let mut seen: HashMap<usize, usize> = HashMap::new();
        for item in set.items {
            let line = item.line;
            let value: Value = serde_json::from_str(lines[line - 1].trim_start_matches('\u{feff}'))
                .map_err(|e| bad(line, "(json)", e.to_string()))?;
            let meta = value.get("review").ok_or_else(|| {
                bad(line, "review", "is missing: a labels file's lines carry the text's `index` among the scored texts (write the file with the app or `readout labels draw`)".into())
            })?;
            let meta: ReviewField =
                serde_json::from_value(meta.clone()).map_err(|e| bad(line, "review", e.to_string()))?;
            if let Some(p) = meta.pi {
                if !(p > 0.0 && p <= 1.0) {
                    return Err(bad(line, "review.pi", format!("{p} is not a probability in (0, 1]")));
                }
            }
            if let Some(earlier) = seen.insert(meta.index, line) {
                return Err(bad(
                    line,
                    "review.index",
                    format!("text {} is already labelled at line {earlier}; label each text once", meta.index),
                ));
            }
            match &draw {
                None => draw = Some(meta.draw),
                Some(d) if *d != meta.draw => {
                    return Err(bad(
                        line,
                        "review.draw",
                        "differs from the first line's; one file holds one draw".into(),
                    ))
                }
                Some(_) => {}
            }
            let shape: Vec<(String, QuestionKind, Vec<String>)> = item
                .criteria
                .iter()
                .map(|c| (c.name.clone(), c.kind, c.options.iter().map(|o| o.id.clone()).collect()))
                .collect();
            match &criteria {
                None => criteria = Some(item.criteria.iter().map(|c| Criterion { gold: None, ..c.clone() }).collect()),
                Some(first) => {
                    let same = first.len() == shape.len()
                        && first.iter().zip(&shape).all(|(c, (n, k, ids))| {
                            &c.name == n && c.kind == *k && c.options.iter().map(|o| &o.id).eq(ids.iter())
                        });
                    if !same {
                        return Err(bad(
                            line,
                            "questions",
                            "differ from the first line's; every text is labelled on the same rubric".into(),
                        ));
                    }
                }
            }
            let id = (item.id != format!("#{}", meta.index)).then_some(item.id);
            texts.push(Labelled {
                index: meta.index,
                id,
                text: item.state,
                answers: item.criteria.iter().map(|c| c.gold).collect(),
                skipped: meta.skipped,
                pi: meta.pi,
            });
        }
        Ok(Labels { criteria: criteria.unwrap_or_default(), draw: draw.unwrap_or_default(), texts })
    }

    /// The labelled text at a scored text's index, if any.
    pub fn get(&self, index: usize) -> Option<&Labelled> {
        self.texts.iter().find(|t| t.index == index)
    }
}

/// The eval-set id of a labelled text: its own id, else `#` and its index.
fn item_id(t: &Labelled) -> String {
    t.id.clone().unwrap_or_else(|| format!("#{}", t.index))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewField {
    index: usize,
    #[serde(default)]
    skipped: bool,
    #[serde(default)]
    pi: Option<f64>,
    draw: Draw,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::rubric::OptionSpec;

    fn criteria() -> Vec<Criterion> {
        let opt = |id: &str| OptionSpec { id: id.into(), description: format!("about {id}") };
        vec![
            Criterion {
                name: "topic".into(),
                kind: QuestionKind::Choice,
                instructions: "Topic?".into(),
                rule: None,
                options: vec![opt("billing"), opt("bug")],
                gold: None,
            },
            Criterion {
                name: "refund".into(),
                kind: QuestionKind::Noul,
                instructions: "Refund?".into(),
                rule: Some("Credit counts.".into()),
                options: vec![
                    OptionSpec { id: "yes".into(), description: "Yes".into() },
                    OptionSpec { id: "no".into(), description: "No".into() },
                ],
                gold: None,
            },
            Criterion {
                name: "urgency".into(),
                kind: QuestionKind::Score,
                instructions: "How urgent?".into(),
                rule: None,
                options: vec![
                    OptionSpec { id: "0".into(), description: "Later".into() },
                    OptionSpec { id: "1".into(), description: "Now".into() },
                ],
                gold: None,
            },
        ]
    }

    fn sample() -> Labels {
        let mut l = Labels::new(criteria(), Draw::default());
        l.texts.push(Labelled {
            index: 3,
            id: Some("T-4".into()),
            text: "Refund me".into(),
            answers: vec![Some(0), Some(0), Some(1)],
            skipped: false,
            pi: Some(0.5),
        });
        l.texts.push(Labelled {
            index: 0,
            id: None,
            text: "It crashes".into(),
            answers: vec![Some(1), None, Some(0)],
            skipped: false,
            pi: None,
        });
        l.texts.push(Labelled {
            index: 7,
            id: None,
            text: "Hello".into(),
            answers: vec![None; 3],
            skipped: true,
            pi: Some(0.25),
        });
        l
    }

    #[test]
    fn a_written_file_reads_back_the_same() {
        let l = sample();
        let back = Labels::parse(l.to_jsonl().as_bytes(), Path::new("l.jsonl")).unwrap();
        assert_eq!(back, l);
    }

    #[test]
    fn the_file_is_an_eval_set_whose_gold_is_the_persons_answers() {
        let set =
            EvalSet::parse(sample().to_jsonl().as_bytes(), Path::new("l.jsonl"), &LoadOptions::default()).unwrap();
        assert_eq!(set.items.len(), 3);
        assert_eq!(set.items[0].id, "T-4");
        let gold: Vec<Option<usize>> = set.items[0].criteria.iter().map(|c| c.gold).collect();
        assert_eq!(gold, [Some(0), Some(0), Some(1)]);
        assert_eq!(set.items[1].id, "#0");
        assert_eq!(set.items[1].criteria[1].gold, None);
        assert_eq!(set.items[0].criteria[1].rule.as_deref(), Some("Credit counts."));
    }

    #[test]
    fn a_text_labelled_twice_or_a_line_without_review_is_refused_by_line() {
        let l = sample();
        let mut text = l.to_jsonl();
        let first = text.lines().next().unwrap().replace("\"T-4\"", "\"T-9\"");
        text.push_str(&first);
        let e = Labels::parse(text.as_bytes(), Path::new("l.jsonl")).unwrap_err().to_string();
        assert!(e.starts_with("l.jsonl:4: field `review.index`: text 3 is already labelled at line 1"), "{e}");
        let bare =
            r#"{"id":"a","state":"S","questions":{"refund":{"type":"noul","instructions":"Refund?","label":true}}}"#;
        let e = Labels::parse(bare.as_bytes(), Path::new("l.jsonl")).unwrap_err().to_string();
        assert!(e.starts_with("l.jsonl:1: field `review`: is missing"), "{e}");
    }
}
