//! Criteria and rubrics: the questions the model decides, in the one shape the rest of the
//! library uses. A rubric file and an eval set's request form share the question format, so one
//! parser (`Question::into_criterion`) serves both.
//!
//! Rubric file (JSON):
//! ```json
//! { "name": "support-ticket",
//!   "questions": {
//!     "topic":  { "type": "choice", "instructions": "What is the ticket about?",
//!                 "criteria": { "billing": "Payments, invoices, refunds", "bug": "Something is broken" } },
//!     "refund": { "type": "noul", "instructions": "Does the customer ask for money back?",
//!                 "criteria": "A request for a refund, chargeback or credit counts." },
//!     "urgency":{ "type": "score", "instructions": "How urgent is it?",
//!                 "criteria": ["Not urgent", "Soon", "Right now"] } } }
//! ```

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The most options a criterion may have: one letter each, `A` to `Z`.
pub const MAX_OPTIONS: usize = 26;

/// How a criterion's options are formed and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuestionKind {
    /// Named options.
    Choice,
    /// Yes / No, with an optional rule text.
    Noul,
    /// Ordered levels `0..n`; the expected level is reported too.
    Score,
}

/// One allowed answer: a stable id and the text shown to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptionSpec {
    pub id: String,
    pub description: String,
}

/// One decision about a state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    pub name: String,
    pub kind: QuestionKind,
    /// The question put to the model.
    pub instructions: String,
    /// For `noul`: the rule the answer must follow, shown under the question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    pub options: Vec<OptionSpec>,
    /// Index into `options` of the right answer, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold: Option<usize>,
}

/// A question as written in a rubric file or an eval set's request form.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    #[serde(rename = "type")]
    pub kind: QuestionKind,
    pub instructions: String,
    #[serde(default)]
    pub criteria: serde_json::Value,
    #[serde(default)]
    pub label: Option<serde_json::Value>,
}

/// A rubric: a name and its criteria, in order.
#[derive(Debug, Clone, Serialize)]
pub struct Rubric {
    pub name: String,
    pub criteria: Vec<Criterion>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RubricFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    questions: serde_json::Map<String, serde_json::Value>,
}

/// A problem with one field of a question; the caller adds the file and line.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        FieldError { field: field.into(), reason: reason.into() }
    }
}

impl Question {
    /// Turn a written question into a criterion, checking every field.
    pub fn into_criterion(self, name: &str) -> std::result::Result<Criterion, FieldError> {
        let at = |f: &str| format!("questions.{name}.{f}");
        if self.instructions.trim().is_empty() {
            return Err(FieldError::new(at("instructions"), "is empty; say what the model must decide"));
        }
        let (options, rule) = match self.kind {
            QuestionKind::Choice => {
                let map = self.criteria.as_object().ok_or_else(|| {
                    FieldError::new(
                        at("criteria"),
                        "must be an object mapping option id to description for a `choice` question",
                    )
                })?;
                let mut options = Vec::with_capacity(map.len());
                for (id, d) in map {
                    let description =
                        d.as_str().ok_or_else(|| FieldError::new(at(&format!("criteria.{id}")), "must be a string"))?;
                    options.push(OptionSpec { id: id.clone(), description: description.to_string() });
                }
                (options, None)
            }
            QuestionKind::Noul => {
                let rule = match &self.criteria {
                    serde_json::Value::Null => None,
                    serde_json::Value::String(s) if s.trim().is_empty() => None,
                    serde_json::Value::String(s) => Some(s.clone()),
                    _ => {
                        return Err(FieldError::new(
                            at("criteria"),
                            "must be a rule text (string) or absent for a `noul` question",
                        ))
                    }
                };
                let options = vec![
                    OptionSpec { id: "yes".into(), description: "Yes".into() },
                    OptionSpec { id: "no".into(), description: "No".into() },
                ];
                (options, rule)
            }
            QuestionKind::Score => {
                let list = self.criteria.as_array().ok_or_else(|| {
                    FieldError::new(
                        at("criteria"),
                        "must be a list of level descriptions, lowest first, for a `score` question",
                    )
                })?;
                let mut options = Vec::with_capacity(list.len());
                for (i, d) in list.iter().enumerate() {
                    let description =
                        d.as_str().ok_or_else(|| FieldError::new(at(&format!("criteria[{i}]")), "must be a string"))?;
                    options.push(OptionSpec { id: i.to_string(), description: description.to_string() });
                }
                (options, None)
            }
        };
        check_options(&options).map_err(|reason| FieldError::new(at("criteria"), reason))?;
        let gold = match self.label {
            None | Some(serde_json::Value::Null) => None,
            Some(label) => Some(gold_index(self.kind, &options, &label).map_err(|r| FieldError::new(at("label"), r))?),
        };
        Ok(Criterion { name: name.to_string(), kind: self.kind, instructions: self.instructions, rule, options, gold })
    }
}

/// The rules every option list obeys, whatever its source.
pub fn check_options(options: &[OptionSpec]) -> std::result::Result<(), String> {
    if options.len() < 2 {
        return Err(format!("has {} option(s); a criterion needs at least 2", options.len()));
    }
    if options.len() > MAX_OPTIONS {
        return Err(format!("has {} options; at most {MAX_OPTIONS} fit the letters A-Z", options.len()));
    }
    for (i, o) in options.iter().enumerate() {
        if o.id.trim().is_empty() {
            return Err(format!("option {i} has an empty id"));
        }
        if o.description.trim().is_empty() {
            return Err(format!("option `{}` has an empty description", o.id));
        }
        if options[..i].iter().any(|p| p.id == o.id) {
            return Err(format!("option id `{}` appears twice", o.id));
        }
    }
    Ok(())
}

fn gold_index(
    kind: QuestionKind,
    options: &[OptionSpec],
    label: &serde_json::Value,
) -> std::result::Result<usize, String> {
    match (kind, label) {
        (QuestionKind::Noul, serde_json::Value::Bool(b)) => Ok(if *b { 0 } else { 1 }),
        (QuestionKind::Score, serde_json::Value::Number(n)) => {
            let i = n.as_u64().ok_or_else(|| format!("level {n} is not a whole number"))? as usize;
            if i < options.len() {
                Ok(i)
            } else {
                Err(format!("level {i} is out of range (0..{})", options.len() - 1))
            }
        }
        (_, serde_json::Value::String(s)) => options
            .iter()
            .position(|o| &o.id == s)
            .ok_or_else(|| format!("`{s}` is not one of the option ids ({})", ids(options))),
        (QuestionKind::Noul, _) => Err("must be true or false for a `noul` question".into()),
        (QuestionKind::Score, _) => Err("must be a level index for a `score` question".into()),
        (QuestionKind::Choice, _) => Err("must be an option id for a `choice` question".into()),
    }
}

fn ids(options: &[OptionSpec]) -> String {
    options.iter().map(|o| o.id.as_str()).collect::<Vec<_>>().join(", ")
}

impl Rubric {
    /// Read and check a rubric file.
    pub fn load(path: &Path) -> Result<Rubric> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::parse(&text, path)
    }

    /// Parse rubric JSON; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Rubric> {
        let bad = |line: usize, field: &str, reason: String| Error::BadInput {
            path: path.to_path_buf(),
            line,
            field: field.to_string(),
            reason,
        };
        let file: RubricFile = serde_json::from_str(text).map_err(|e| bad(e.line(), "(json)", e.to_string()))?;
        let _ = file.description;
        if file.questions.is_empty() {
            return Err(bad(1, "questions", "is empty; a rubric needs at least one question".into()));
        }
        let mut criteria = Vec::with_capacity(file.questions.len());
        for (name, value) in file.questions {
            let q: Question =
                serde_json::from_value(value).map_err(|e| bad(1, &format!("questions.{name}"), e.to_string()))?;
            let c = q.into_criterion(&name).map_err(|e| bad(1, &e.field, e.reason))?;
            criteria.push(c);
        }
        let name =
            file.name.unwrap_or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
        Ok(Rubric { name, criteria })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Rubric> {
        Rubric::parse(s, Path::new("r.json"))
    }

    #[test]
    fn three_question_types() {
        let r = parse(
            r#"{"questions": {
            "topic": {"type":"choice","instructions":"Topic?","criteria":{"billing":"Money","bug":"Broken"}},
            "refund": {"type":"noul","instructions":"Refund?","criteria":"Credits count."},
            "urgency": {"type":"score","instructions":"How urgent?","criteria":["low","mid","high"]}}}"#,
        )
        .unwrap();
        assert_eq!(r.name, "r");
        assert_eq!(r.criteria.len(), 3);
        assert_eq!(r.criteria[0].options[1].id, "bug");
        assert_eq!(r.criteria[1].options[0].description, "Yes");
        assert_eq!(r.criteria[1].rule.as_deref(), Some("Credits count."));
        assert_eq!(r.criteria[2].options[2].id, "2");
    }

    #[test]
    fn labels() {
        let q: Question = serde_json::from_str(r#"{"type":"noul","instructions":"x","label":false}"#).unwrap();
        assert_eq!(q.into_criterion("a").unwrap().gold, Some(1));
        let q: Question =
            serde_json::from_str(r#"{"type":"score","instructions":"x","criteria":["a","b"],"label":3}"#).unwrap();
        assert_eq!(q.into_criterion("s").unwrap_err().field, "questions.s.label");
        let q: Question =
            serde_json::from_str(r#"{"type":"choice","instructions":"x","criteria":{"a":"A","b":"B"},"label":"b"}"#)
                .unwrap();
        assert_eq!(q.into_criterion("c").unwrap().gold, Some(1));
    }

    #[test]
    fn bad_rubrics_name_the_field() {
        let e = parse(r#"{"questions": {"t": {"type":"choice","instructions":"x","criteria":{"a":"only one"}}}}"#)
            .unwrap_err();
        assert!(e.to_string().contains("questions.t.criteria"), "{e}");
        let e = parse(r#"{"questions": {"t": {"type":"rank","instructions":"x"}}}"#).unwrap_err();
        assert!(e.to_string().contains("questions.t"), "{e}");
        let e = parse(r#"{"questions": {}}"#).unwrap_err();
        assert!(e.to_string().contains("questions"), "{e}");
        let e = parse("{not json").unwrap_err();
        assert!(e.to_string().contains("r.json:1"), "{e}");
    }
}
