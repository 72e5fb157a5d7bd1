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

/// The most options a criterion may have: one letter each up to 26, then a two-letter code each
/// ([`crate::engine::code`]), up to System One's 255.
pub const MAX_OPTIONS: usize = crate::engine::MAX_CODES;

/// How a criterion's options are formed and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
                    // An option without a description is read by its name alone.
                    let description = match d {
                        serde_json::Value::Null => id.as_str(),
                        d => d.as_str().ok_or_else(|| {
                            FieldError::new(at(&format!("criteria.{id}")), "must be a string or null")
                        })?,
                    };
                    options.push(OptionSpec { id: id.clone(), description: description.to_string() });
                }
                (options, None)
            }
            QuestionKind::Noul => {
                // A rule text, or System One's object form: what counts as yes and as no, each
                // shown beside its option (`Yes: …`, `No: …`).
                let (rule, yes, no) = match &self.criteria {
                    serde_json::Value::Null => (None, None, None),
                    serde_json::Value::String(s) if s.trim().is_empty() => (None, None, None),
                    serde_json::Value::String(s) => (Some(s.clone()), None, None),
                    serde_json::Value::Object(o) if o.keys().all(|k| k == "true" || k == "false") => {
                        let side = |k: &str| -> std::result::Result<Option<String>, FieldError> {
                            match o.get(k) {
                                None | Some(serde_json::Value::Null) => Ok(None),
                                Some(serde_json::Value::String(s)) if s.trim().is_empty() => Ok(None),
                                Some(serde_json::Value::String(s)) => Ok(Some(s.trim().to_string())),
                                Some(_) => Err(FieldError::new(at(&format!("criteria.{k}")), "must be a string or null")),
                            }
                        };
                        (None, side("true")?, side("false")?)
                    }
                    _ => {
                        return Err(FieldError::new(
                            at("criteria"),
                            "must be a rule text (string), an object with `true` and/or `false` descriptions, or absent for a `noul` question",
                        ))
                    }
                };
                let shown = |word: &str, d: Option<String>| d.map_or(word.to_string(), |d| format!("{word}: {d}"));
                let options = vec![
                    OptionSpec { id: "yes".into(), description: shown("Yes", yes) },
                    OptionSpec { id: "no".into(), description: shown("No", no) },
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
        return Err(format!(
            "has {} options; at most {MAX_OPTIONS} can be given a code (letters A-Z, then AA, AB …)",
            options.len()
        ));
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
        (QuestionKind::Noul, serde_json::Value::String(s)) if s != "yes" && s != "no" => {
            Err(format!("`{s}` is not an answer to a yes/no question; give true or false"))
        }
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
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::from_bytes(&bytes, path)
    }

    /// Check rubric bytes (UTF-8 JSON); `path` only names the source in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Rubric> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let (line, column) = line_column(bytes, e.valid_up_to());
            Error::BadInput {
                path: path.to_path_buf(),
                line,
                field: "(utf-8)".into(),
                reason: format!("is not valid UTF-8 (bad byte at column {column}); save the file as UTF-8"),
            }
        })?;
        Self::parse(text, path)
    }

    /// Parse rubric JSON; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Rubric> {
        let bad = |line: usize, field: &str, reason: String| Error::BadInput {
            path: path.to_path_buf(),
            line,
            field: field.to_string(),
            reason: format!("{reason} (the format: docs/rubric.md)"),
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.trim().is_empty() {
            return Err(bad(1, "(json)", "the file is empty; a rubric is a JSON object with `questions`".into()));
        }
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(e.line().max(1), "(json)", json_reason(&e)))?;
        if let Some(d) = duplicate_key(text) {
            return Err(bad(d.line, &d.field, d.reason()));
        }
        let serde_json::Value::Object(mut obj) = value else {
            return Err(bad(1, "(json)", format!("must be a JSON object with `questions`, not {}", json_type(&value))));
        };
        if let Some(k) = obj.keys().find(|k| !["name", "description", "questions"].contains(&k.as_str())) {
            return Err(bad(
                line_of_key(text, 0, k),
                k,
                "is not a rubric field (a typo?); a rubric has `name`, `description` and `questions`".into(),
            ));
        }
        let mut opt_str = |k: &str| match obj.remove(k) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(bad(line_of_key(text, 0, k), k, format!("must be a string, not {}", json_type(&v)))),
        };
        let name = opt_str("name")?;
        opt_str("description")?;
        let questions_at = text.find("\"questions\"").unwrap_or(0);
        let questions = match obj.remove("questions") {
            Some(serde_json::Value::Object(q)) => q,
            None | Some(serde_json::Value::Null) => {
                return Err(bad(
                    1,
                    "questions",
                    "is missing; a rubric needs `questions`, an object mapping criterion name to question".into(),
                ))
            }
            Some(v) => {
                return Err(bad(
                    line_of_key(text, 0, "questions"),
                    "questions",
                    format!("must be an object mapping criterion name to question, not {}", json_type(&v)),
                ))
            }
        };
        if questions.is_empty() {
            return Err(bad(
                line_of_key(text, 0, "questions"),
                "questions",
                "is empty; a rubric needs at least one question".into(),
            ));
        }
        let mut criteria = Vec::with_capacity(questions.len());
        for (name, value) in questions {
            let line = line_of_key(text, questions_at, &name);
            let c = Question::from_json(&name, value)
                .and_then(|q| q.into_criterion(&name))
                .map_err(|e| bad(line, &e.field, e.reason))?;
            criteria.push(c);
        }
        let name =
            name.unwrap_or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
        Ok(Rubric { name, criteria })
    }
}

impl Question {
    /// Read one written question, naming the field a problem is in.
    pub fn from_json(name: &str, value: serde_json::Value) -> std::result::Result<Question, FieldError> {
        let at = |f: &str| format!("questions.{name}.{f}");
        if !value.is_object() {
            return Err(FieldError::new(
                format!("questions.{name}"),
                format!("must be an object with `type`, `instructions` and `criteria`, not {}", json_type(&value)),
            ));
        }
        serde_json::from_value(value).map_err(|e| {
            let msg = e.to_string();
            let quoted = msg.split('`').nth(1).unwrap_or_default().to_string();
            if msg.starts_with("unknown variant") {
                FieldError::new(
                    at("type"),
                    format!("`{quoted}` is not a question type; use `choice`, `noul` or `score`"),
                )
            } else if msg.starts_with("unknown field") {
                FieldError::new(
                    at(&quoted),
                    "is not a question field (a typo?); a question has `type`, `instructions`, `criteria` and `label`",
                )
            } else if msg.starts_with("missing field") {
                let what = match quoted.as_str() {
                    "type" => "is missing; give `choice`, `noul` or `score`",
                    _ => "is missing; say what the model must decide",
                };
                FieldError::new(at(&quoted), what)
            } else {
                FieldError::new(format!("questions.{name}"), msg)
            }
        })
    }
}

/// What a JSON value is, in words.
pub(crate) fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// 1-based line and column of byte `at`.
pub(crate) fn line_column(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, column)
}

/// The line of the first `"key":` at or after byte `from` (1 when not found).
fn line_of_key(text: &str, from: usize, key: &str) -> usize {
    let quoted = serde_json::to_string(key).unwrap_or_default();
    let mut at = from.min(text.len());
    while let Some(i) = text.get(at..).and_then(|t| t.find(&quoted)) {
        let end = at + i + quoted.len();
        if text[end..].trim_start().starts_with(':') {
            return line_column(text.as_bytes(), at + i).0;
        }
        at = end;
    }
    1
}

/// A serde_json syntax error in words, without its "at line L column C" tail (the caller puts
/// the line in front).
pub(crate) fn json_reason(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    match e.classify() {
        serde_json::error::Category::Eof => {
            format!("not valid JSON: {msg} at column {}; the text ends early (is the file cut short?)", e.column())
        }
        _ => format!("not valid JSON: {msg} at column {}", e.column()),
    }
}

/// A key given twice in one JSON object, which serde_json would silently reduce to the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The 1-based line of the second one.
    pub line: usize,
    /// Where the object is (`questions.topic.criteria`), or `(json)` at the top level.
    pub field: String,
    /// The key given twice.
    pub key: String,
}

impl DuplicateKey {
    /// What is wrong and what to do, without where (the caller names the field its own way).
    pub fn reason(&self) -> String {
        format!("key `{}` is given twice; JSON would keep only the last, so give each key once", self.key)
    }
}

/// The first key given twice in one object of `text`, which must be valid JSON (`None` when it
/// is not). Every JSON a user gives is checked with it: serde_json would keep the last silently.
pub fn duplicate_key(text: &str) -> Option<DuplicateKey> {
    use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;
    type Found = RefCell<Option<(String, String)>>;
    struct Walk<'a> {
        path: String,
        found: &'a Found,
    }
    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
            let mut i = 0;
            while seq.next_element_seed(Walk { path: format!("{}[{i}]", self.path), found: self.found })?.is_some() {
                i += 1;
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(k) = map.next_key::<String>()? {
                if !seen.insert(k.clone()) {
                    *self.found.borrow_mut() = Some((self.path.clone(), k));
                    return Err(A::Error::custom("duplicate key"));
                }
                let path = if self.path.is_empty() { k } else { format!("{}.{k}", self.path) };
                map.next_value_seed(Walk { path, found: self.found })?;
            }
            Ok(())
        }
    }
    let found: Found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let err = Walk { path: String::new(), found: &found }.deserialize(&mut de).err()?;
    let (path, key) = found.into_inner()?;
    let field = if path.is_empty() { "(json)".to_string() } else { path };
    Some(DuplicateKey { line: err.line().max(1), field, key })
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

    #[test]
    fn errors_give_the_line_of_the_question() {
        let text = "{\n \"questions\": {\n  \"a\": {\"type\":\"noul\",\"instructions\":\"x\"},\n  \"b\": {\"type\":\"rank\",\"instructions\":\"x\"}\n }\n}";
        let e = parse(text).unwrap_err().to_string();
        assert!(e.starts_with("r.json:4: field `questions.b.type`"), "{e}");
        let e = parse("{\"questions\": {\"t\": {\"type\":\"choice\",\"instructions\":\"x\",\n\"criteria\":{\"a\":\"A\",\n\"a\":\"B\"}}}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("r.json:3: field `questions.t.criteria`: key `a` is given twice"), "{e}");
        let e = parse("[]").unwrap_err().to_string();
        assert!(e.contains("not a list"), "{e}");
        let e = parse("{\"questions\": {}, \"nmae\": \"x\"}").unwrap_err().to_string();
        assert!(e.contains("field `nmae`"), "{e}");
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        assert!(duplicate_key(r#"{"a":[{"b":1,"c":2}],"d":{"e":null}}"#).is_none());
        let d = duplicate_key(r#"{"a":[{"b":1,"b":2}]}"#).unwrap();
        assert_eq!((d.field.as_str(), d.key.as_str()), ("a[0]", "b"));
        let d = duplicate_key(r#"{"x":1,"x":1}"#).unwrap();
        assert_eq!((d.field.as_str(), d.line), ("(json)", 1));
    }

    #[test]
    fn load_refuses_non_utf8_with_its_line() {
        let dir = std::env::temp_dir().join(format!("readout-rubric-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.json");
        std::fs::write(&p, b"{\n\"name\": \"caf\xe9\"}").unwrap();
        let e = Rubric::load(&p).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        match e {
            Error::BadInput { line, field, .. } => assert_eq!((line, field.as_str()), (2, "(utf-8)")),
            other => panic!("{other:?}"),
        }
    }
}
