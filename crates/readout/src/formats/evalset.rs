//! Eval sets: labelled items read from JSON Lines, in either of the two forms the design allows
//! (row form, as `authored144.jsonl`, and request form, which shares the rubric's question
//! format). This module exists so that every line is checked once, up front, and a bad line is
//! refused with its line number, field and reason before any model time is spent; a run never
//! starts on a set that could not be fully read unless the user asked to skip bad lines.
//!
//! Row form (one criterion named `question` per item, `label` an index into `options`):
//! ```json
//! {"id": "a1", "family": "f", "group_id": "g", "state": "…", "question": "…",
//!  "options": [{"id": "yes", "description": "…"}, {"id": "no", "description": "…"}], "label": 0}
//! ```
//! Request form (one criterion per question; see [`crate::formats::rubric`]):
//! ```json
//! {"id": "a1", "state": "…", "questions": {"topic": {"type": "choice", "instructions": "…",
//!  "criteria": {"billing": "…", "bug": "…"}, "label": "bug"}}}
//! ```
//! Other fields on a line are carried in the file and ignored here. A missing `family` is
//! [`DEFAULT_FAMILY`]; a missing `group_id` is the item's id. One file holds one form.

use crate::error::{Error, Result};
use crate::formats::rubric::{
    check_options, duplicate_key, json_reason, Criterion, OptionSpec, Question, QuestionKind,
};
use crate::hash::sha256_bytes;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Family of an item whose line names none.
pub const DEFAULT_FAMILY: &str = "default";

/// What to do about a bad line, said after the reason when a set is refused.
pub const SKIP_HINT: &str = "Nothing was scored: fix that line, or skip bad lines (`--skip-bad` in the CLI, *Skip bad lines* in the app) to score the rest and record them";

/// Name of the single criterion a row-form line becomes.
pub const ROW_CRITERION: &str = "question";

/// One labelled state with the criteria to decide about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: String,
    pub family: String,
    pub group_id: String,
    pub state: String,
    pub criteria: Vec<Criterion>,
    /// 1-based line of the eval-set file this item came from.
    pub line: usize,
}

/// A line left out because it was bad and the caller asked to skip bad lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SkippedLine {
    pub line: usize,
    pub field: String,
    pub reason: String,
}

/// A read and checked eval set.
#[derive(Debug, Clone)]
pub struct EvalSet {
    /// The file stem.
    pub name: String,
    pub path: PathBuf,
    /// Hex sha256 of the file's bytes (all of them, whatever the filters).
    pub sha256: String,
    pub items: Vec<Item>,
    pub skipped: Vec<SkippedLine>,
}

/// How to read an eval set.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Collect bad lines into [`EvalSet::skipped`] instead of refusing the file.
    pub skip_bad: bool,
    /// Keep at most this many items (after the family filter).
    pub limit: Option<usize>,
    /// Keep only items of this family (applied before `limit`).
    pub family: Option<String>,
}

/// The two line forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Row,
    Request,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Row => "row form (`question` + `options`)",
            Form::Request => "request form (`questions`)",
        }
    }
}

/// What is wrong with one line; the caller adds the path and line number.
#[derive(Debug)]
struct LineError {
    field: String,
    reason: String,
}

fn bad(field: impl Into<String>, reason: impl Into<String>) -> LineError {
    LineError { field: field.into(), reason: reason.into() }
}

impl EvalSet {
    /// Read and check an eval set file.
    pub fn load(path: &Path, opts: &LoadOptions) -> Result<EvalSet> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::parse(&bytes, path, opts)
    }

    /// Check eval-set bytes; `path` names the source in errors and gives the set its name.
    pub fn parse(bytes: &[u8], path: &Path, opts: &LoadOptions) -> Result<EvalSet> {
        let sha256 = sha256_bytes(bytes);
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let mut items: Vec<Item> = Vec::new();
        let mut skipped = Vec::new();
        let mut form: Option<(Form, usize)> = None;
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
            let line = i + 1;
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            match parse_line(raw, line, form, &seen) {
                Ok(None) => {}
                Ok(Some((f, item))) => {
                    form.get_or_insert((f, line));
                    seen.insert(item.id.clone(), line);
                    items.push(item);
                }
                Err(e) if opts.skip_bad => skipped.push(SkippedLine { line, field: e.field, reason: e.reason }),
                Err(e) => {
                    return Err(Error::BadInput {
                        path: path.to_path_buf(),
                        line,
                        field: e.field,
                        reason: format!("{}. {SKIP_HINT}", e.reason),
                    })
                }
            }
        }

        let empty = |reason: String| Error::BadFile { path: path.to_path_buf(), reason };
        if items.is_empty() {
            return Err(empty(match skipped.first() {
                None => "holds no items (every line is blank); an eval set needs at least one".to_string(),
                Some(s) => format!(
                    "no line could be read: all {} non-blank line(s) are bad; the first, line {}, field `{}`: {}",
                    skipped.len(),
                    s.line,
                    s.field,
                    s.reason
                ),
            }));
        }
        if let Some(family) = &opts.family {
            let present: BTreeSet<String> = items.iter().map(|it| it.family.clone()).collect();
            items.retain(|it| &it.family == family);
            if items.is_empty() {
                return Err(empty(format!(
                    "no item has family `{family}`; the families present are: {}",
                    present.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
        }
        if let Some(limit) = opts.limit {
            if limit == 0 {
                return Err(empty("a limit of 0 items leaves nothing to run".to_string()));
            }
            items.truncate(limit);
        }
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(EvalSet { name, path: path.to_path_buf(), sha256, items, skipped })
    }

    /// Number of (item, criterion) pairs: the rows a run scores.
    pub fn n_criteria(&self) -> usize {
        self.items.iter().map(|it| it.criteria.len()).sum()
    }

    /// The families present, sorted.
    pub fn families(&self) -> Vec<String> {
        let set: BTreeSet<&str> = self.items.iter().map(|it| it.family.as_str()).collect();
        set.into_iter().map(str::to_string).collect()
    }
}

/// Check one line. `Ok(None)` for a blank line.
fn parse_line(
    raw: &[u8],
    line: usize,
    form: Option<(Form, usize)>,
    seen: &HashMap<String, usize>,
) -> std::result::Result<Option<(Form, Item)>, LineError> {
    let text = std::str::from_utf8(raw).map_err(|e| {
        bad(
            "(utf-8)",
            format!("is not valid UTF-8 (bad byte at column {}); save the file as UTF-8", e.valid_up_to() + 1),
        )
    })?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| bad("(json)", json_reason(&e)))?;
    if let Some(d) = duplicate_key(text) {
        return Err(bad(d.field.clone(), d.reason()));
    }
    let Value::Object(obj) = value else {
        return Err(bad("(json)", "must be a JSON object, one item a line"));
    };
    let this = if obj.contains_key("questions") {
        Form::Request
    } else if obj.contains_key("question") || obj.contains_key("options") {
        Form::Row
    } else {
        return Err(bad(
            "questions",
            "is missing: a line needs `questions` (request form) or `question` and `options` (row form)",
        ));
    };
    if let Some((first, first_line)) = form {
        if first != this {
            return Err(bad(
                "(form)",
                format!(
                    "this line is in {} but the file started in {} at line {first_line}; one file holds one form",
                    this.name(),
                    first.name()
                ),
            ));
        }
    }

    let id = required_str(&obj, "id")?;
    if id.trim().is_empty() {
        return Err(bad("id", "is empty"));
    }
    if let Some(earlier) = seen.get(id) {
        return Err(bad("id", format!("`{id}` is already the id of the item at line {earlier}; ids must be unique")));
    }
    let state = required_str(&obj, "state")?;
    if state.trim().is_empty() {
        return Err(bad("state", "is empty; there is no text to judge"));
    }
    let family = optional_str(&obj, "family")?.unwrap_or(DEFAULT_FAMILY).to_string();
    let group_id = optional_str(&obj, "group_id")?.unwrap_or(id).to_string();

    let criteria = match this {
        Form::Row => vec![row_criterion(&obj)?],
        Form::Request => request_criteria(&obj)?,
    };
    Ok(Some((this, Item { id: id.to_string(), family, group_id, state: state.to_string(), criteria, line })))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn required_str<'a>(obj: &'a Map<String, Value>, field: &str) -> std::result::Result<&'a str, LineError> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(bad(field, "is missing")),
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(bad(field, format!("must be a string, not {}", type_name(v)))),
    }
}

/// An optional string field; absent, null or blank all mean "not given".
fn optional_str<'a>(obj: &'a Map<String, Value>, field: &str) -> std::result::Result<Option<&'a str>, LineError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(bad(field, format!("must be a string, not {}", type_name(v)))),
    }
}

fn row_criterion(obj: &Map<String, Value>) -> std::result::Result<Criterion, LineError> {
    let question = required_str(obj, "question")?;
    if question.trim().is_empty() {
        return Err(bad("question", "is empty; say what the model must decide"));
    }
    let list = match obj.get("options") {
        None | Some(Value::Null) => return Err(bad("options", "is missing")),
        Some(Value::Array(a)) => a,
        Some(v) => return Err(bad("options", format!("must be a list of {{id, description}}, not {}", type_name(v)))),
    };
    let mut options = Vec::with_capacity(list.len());
    for (i, o) in list.iter().enumerate() {
        let Value::Object(o) = o else {
            return Err(bad(
                format!("options[{i}]"),
                format!("must be an object {{id, description}}, not {}", type_name(o)),
            ));
        };
        let field = |f: &str| format!("options[{i}].{f}");
        let id = required_str(o, "id").map_err(|e| bad(field("id"), e.reason))?;
        let description = required_str(o, "description").map_err(|e| bad(field("description"), e.reason))?;
        options.push(OptionSpec { id: id.to_string(), description: description.to_string() });
    }
    check_options(&options).map_err(|reason| bad("options", reason))?;
    let n = options.len();
    let gold = match obj.get("label") {
        None | Some(Value::Null) => return Err(bad("label", "is missing; give the index of the right option")),
        Some(Value::Number(x)) => match x.as_u64() {
            Some(l) if (l as u128) < n as u128 => l as usize,
            Some(l) => return Err(bad("label", format!("{l} is out of range for {n} options (0..{})", n - 1))),
            None => return Err(bad("label", format!("{x} is not an option index (a whole number 0..{})", n - 1))),
        },
        Some(Value::String(s)) if options.iter().any(|o| &o.id == s) => {
            let i = options.iter().position(|o| &o.id == s).unwrap_or(0);
            return Err(bad(
                "label",
                format!("must be an option index, not an id: `{s}` is option {i}, so write \"label\": {i}"),
            ));
        }
        Some(v) => {
            return Err(bad(
                "label",
                format!("must be an option index (a whole number 0..{}), not {}", n - 1, type_name(v)),
            ))
        }
    };
    Ok(Criterion {
        name: ROW_CRITERION.to_string(),
        kind: QuestionKind::Choice,
        instructions: question.to_string(),
        rule: None,
        options,
        gold: Some(gold),
    })
}

fn request_criteria(obj: &Map<String, Value>) -> std::result::Result<Vec<Criterion>, LineError> {
    let questions = match obj.get("questions") {
        Some(Value::Object(q)) => q,
        Some(v) => {
            return Err(bad("questions", format!("must be an object mapping name to question, not {}", type_name(v))))
        }
        None => return Err(bad("questions", "is missing")),
    };
    if questions.is_empty() {
        return Err(bad("questions", "is empty; an item needs at least one question"));
    }
    let mut criteria = Vec::with_capacity(questions.len());
    for (name, v) in questions {
        if name.trim().is_empty() {
            return Err(bad("questions", "has a question with an empty name"));
        }
        let q = Question::from_json(name, v.clone()).map_err(|e| bad(e.field, e.reason))?;
        criteria.push(q.into_criterion(name).map_err(|e| bad(e.field, e.reason))?);
    }
    Ok(criteria)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW_A: &str = r#"{"id":"a","family":"f1","group_id":"g1","state":"S a","question":"Q?","options":[{"id":"x","description":"X"},{"id":"y","description":"Y"},{"id":"z","description":"Z"}],"label":2,"extra":{"k":1}}"#;
    const ROW_B: &str = r#"{"id":"b","state":"S b","question":"Q?","options":[{"id":"x","description":"X"},{"id":"y","description":"Y"}],"label":0}"#;
    const REQ_A: &str = r#"{"id":"r1","family":"f","state":"S","questions":{"topic":{"type":"choice","instructions":"Topic?","criteria":{"billing":"Money","bug":"Broken"},"label":"bug"},"refund":{"type":"noul","instructions":"Refund?","label":true}}}"#;
    const REQ_B: &str = r#"{"id":"r2","state":"S2","questions":{"urgency":{"type":"score","instructions":"How urgent?","criteria":["low","high"]}}}"#;

    fn parse_with(text: &str, opts: &LoadOptions) -> Result<EvalSet> {
        EvalSet::parse(text.as_bytes(), Path::new("bench/set.jsonl"), opts)
    }

    fn parse(text: &str) -> Result<EvalSet> {
        parse_with(text, &LoadOptions::default())
    }

    /// The (line, field, reason) of a refused set.
    fn refused(text: &str) -> (usize, String, String) {
        match parse(text) {
            Err(Error::BadInput { line, field, reason, .. }) => (line, field, reason),
            other => panic!("expected BadInput, got {other:?}"),
        }
    }

    #[test]
    fn row_form() {
        let set = parse(&format!("{ROW_A}\n\n{ROW_B}\n")).unwrap();
        assert_eq!(set.name, "set");
        assert_eq!(set.sha256.len(), 64);
        assert_eq!(set.items.len(), 2);
        let a = &set.items[0];
        assert_eq!((a.id.as_str(), a.family.as_str(), a.group_id.as_str(), a.line), ("a", "f1", "g1", 1));
        assert_eq!(a.criteria.len(), 1);
        let c = &a.criteria[0];
        assert_eq!(
            (c.name.as_str(), c.kind, c.instructions.as_str(), c.gold),
            ("question", QuestionKind::Choice, "Q?", Some(2))
        );
        assert_eq!(c.options[2].id, "z");
        let b = &set.items[1];
        assert_eq!((b.family.as_str(), b.group_id.as_str(), b.line), ("default", "b", 3));
        assert!(set.skipped.is_empty());
        assert_eq!(set.n_criteria(), 2);
        assert_eq!(set.families(), vec!["default".to_string(), "f1".to_string()]);
    }

    #[test]
    fn request_form() {
        let set = parse(&format!("{REQ_A}\r\n{REQ_B}")).unwrap();
        assert_eq!(set.items.len(), 2);
        let r1 = &set.items[0];
        assert_eq!(r1.criteria.len(), 2);
        assert_eq!(r1.criteria[0].name, "topic");
        assert_eq!(r1.criteria[0].gold, Some(1));
        assert_eq!(r1.criteria[1].kind, QuestionKind::Noul);
        assert_eq!(r1.criteria[1].gold, Some(0));
        let r2 = &set.items[1];
        assert_eq!((r2.family.as_str(), r2.group_id.as_str()), ("default", "r2"));
        assert_eq!(r2.criteria[0].gold, None);
        assert_eq!(r2.criteria[0].options.len(), 2);
    }

    #[test]
    fn bom_and_crlf_are_accepted() {
        let set = parse(&format!("\u{feff}{ROW_A}\r\n{ROW_B}\r\n")).unwrap();
        assert_eq!(set.items.len(), 2);
    }

    #[test]
    fn label_out_of_range() {
        let line = ROW_A.replace(r#""label":2"#, r#""label":3"#);
        let (l, f, r) = refused(&format!("{ROW_B}\n{line}"));
        assert_eq!((l, f.as_str()), (2, "label"));
        assert!(r.starts_with("3 is out of range for 3 options (0..2)"), "{r}");
        let e = parse(&line).unwrap_err().to_string();
        assert_eq!(e, format!("bench/set.jsonl:1: field `label`: 3 is out of range for 3 options (0..2). {SKIP_HINT}"));
        for bad_label in [r#""label":-1"#, r#""label":1.5"#, r#""label":"z""#] {
            let (_, f, _) = refused(&ROW_A.replace(r#""label":2"#, bad_label));
            assert_eq!(f, "label", "{bad_label}");
        }
        let (_, f, r) = refused(&ROW_A.replace(r#","label":2"#, ""));
        assert_eq!((f.as_str(), r.starts_with("is missing")), ("label", true));
    }

    #[test]
    fn options_are_checked() {
        let (_, f, r) = refused(&ROW_A.replace(r#"{"id":"z","description":"Z"}"#, r#"{"id":7,"description":"Z"}"#));
        assert_eq!(f, "options[2].id");
        assert!(r.starts_with("must be a string, not a number"), "{r}");
        let (_, f, _) = refused(&ROW_A.replace(r#"{"id":"z","description":"Z"}"#, r#"{"id":"z"}"#));
        assert_eq!(f, "options[2].description");
        let (_, f, _) = refused(&ROW_A.replace(r#"{"id":"z","description":"Z"}"#, r#""z""#));
        assert_eq!(f, "options[2]");
        let (_, f, r) = refused(&ROW_A.replace(r#""id":"z""#, r#""id":"x""#));
        assert_eq!(f, "options");
        assert!(r.starts_with("option id `x` appears twice"), "{r}");
        let one = r#"{"id":"a","state":"S","question":"Q","options":[{"id":"x","description":"X"}],"label":0}"#;
        let (_, f, r) = refused(one);
        assert_eq!(f, "options");
        assert!(r.contains("at least 2"), "{r}");
        let many: Vec<String> = (0..256).map(|i| format!(r#"{{"id":"o{i}","description":"d"}}"#)).collect();
        let line = format!(r#"{{"id":"a","state":"S","question":"Q","options":[{}],"label":0}}"#, many.join(","));
        let (_, f, r) = refused(&line);
        assert_eq!(f, "options");
        assert!(r.contains("256 options"), "{r}");
        let (_, f, _) = refused(r#"{"id":"a","state":"S","question":"Q","options":{"x":"X"},"label":0}"#);
        assert_eq!(f, "options");
        let (_, f, _) = refused(
            r#"{"id":"a","state":"S","options":[{"id":"x","description":"X"},{"id":"y","description":"Y"}],"label":0}"#,
        );
        assert_eq!(f, "question");
    }

    #[test]
    fn required_fields_and_types() {
        let (_, f, r) = refused(&ROW_A.replace(r#""id":"a","#, ""));
        assert_eq!(f, "id");
        assert!(r.starts_with("is missing"), "{r}");
        let (_, f, r) = refused(&ROW_A.replace(r#""id":"a""#, r#""id":5"#));
        assert_eq!(f, "id");
        assert!(r.starts_with("must be a string, not a number"), "{r}");
        let (_, f, _) = refused(&ROW_A.replace(r#""state":"S a""#, r#""state":"  ""#));
        assert_eq!(f, "state");
        let (_, f, _) = refused(&ROW_A.replace(r#""state":"S a","#, ""));
        assert_eq!(f, "state");
        let (_, f, _) = refused(&ROW_A.replace(r#""family":"f1""#, r#""family":3"#));
        assert_eq!(f, "family");
        let (_, f, _) = refused(&ROW_A.replace(r#""group_id":"g1""#, r#""group_id":[]"#));
        assert_eq!(f, "group_id");
        let (_, f, _) = refused(r#"{"id":"a","state":"S"}"#);
        assert_eq!(f, "questions");
    }

    #[test]
    fn request_form_errors_name_the_question() {
        let (_, f, r) = refused(&REQ_A.replace(r#""label":"bug""#, r#""label":"feature""#));
        assert_eq!(f, "questions.topic.label");
        assert!(r.contains("`feature`"), "{r}");
        let (_, f, _) = refused(&REQ_A.replace(r#""type":"choice""#, r#""type":"rank""#));
        assert_eq!(f, "questions.topic.type");
        let (_, f, _) = refused(&REQ_A.replace(r#""label":"bug""#, r#""label":"bug","hint":1"#));
        assert_eq!(f, "questions.topic.hint");
        let (_, f, r) = refused(&REQ_A.replace(r#""bug":"Broken""#, r#""bug":"Broken","bug":"Again""#));
        assert_eq!(f, "questions.topic.criteria");
        assert!(r.contains("`bug` is given twice"), "{r}");
        let (_, f, _) = refused(r#"{"id":"r","state":"S","questions":{}}"#);
        assert_eq!(f, "questions");
        let (_, f, _) = refused(r#"{"id":"r","state":"S","questions":[1]}"#);
        assert_eq!(f, "questions");
        let (_, f, _) = refused(
            r#"{"id":"r","state":"S","questions":{"t":{"type":"choice","instructions":"x","criteria":{"a":"A"}}}}"#,
        );
        assert_eq!(f, "questions.t.criteria");
    }

    #[test]
    fn bad_utf8_and_json_name_the_line() {
        let mut bytes = format!("{ROW_B}\n").into_bytes();
        bytes.extend_from_slice(b"{\"id\":\"\xff\"}\n");
        match EvalSet::parse(&bytes, Path::new("s.jsonl"), &LoadOptions::default()) {
            Err(Error::BadInput { line, field, .. }) => assert_eq!((line, field.as_str()), (2, "(utf-8)")),
            other => panic!("{other:?}"),
        }
        let (l, f, r) = refused(&format!("{ROW_B}\n\n{{\"id\": \"c\",\n"));
        assert_eq!((l, f.as_str()), (3, "(json)"));
        assert!(r.starts_with("not valid JSON"), "{r}");
        let (_, f, _) = refused("[1,2]");
        assert_eq!(f, "(json)");
    }

    #[test]
    fn duplicate_ids_name_the_earlier_line() {
        let (l, f, r) = refused(&format!("{ROW_A}\n{ROW_B}\n{ROW_A}"));
        assert_eq!((l, f.as_str()), (3, "id"));
        assert!(r.contains("line 1"), "{r}");
    }

    #[test]
    fn mixing_forms_is_refused() {
        let (l, f, r) = refused(&format!("{ROW_A}\n{ROW_B}\n{REQ_A}"));
        assert_eq!((l, f.as_str()), (3, "(form)"));
        assert!(r.contains("request form") && r.contains("row form") && r.contains("line 1"), "{r}");
        let (l, _, r) = refused(&format!("{REQ_A}\n{ROW_A}"));
        assert_eq!(l, 2);
        assert!(r.starts_with("this line is in row form"), "{r}");
    }

    #[test]
    fn skip_bad_collects_and_keeps_the_rest() {
        let bad_label = ROW_A.replace(r#""id":"a""#, r#""id":"c""#).replace(r#""label":2"#, r#""label":9"#);
        let text = format!("{ROW_A}\nnot json\n{bad_label}\n{ROW_B}\n{ROW_A}\n");
        let opts = LoadOptions { skip_bad: true, ..Default::default() };
        let set = parse_with(&text, &opts).unwrap();
        assert_eq!(set.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        let lines: Vec<(usize, &str)> = set.skipped.iter().map(|s| (s.line, s.field.as_str())).collect();
        assert_eq!(lines, [(2, "(json)"), (3, "label"), (5, "id")]);
        // Without skip_bad the first bad line refuses the file.
        assert_eq!(refused(&text).0, 2);
    }

    #[test]
    fn empty_sets_are_refused() {
        for text in ["", "\n\n  \n"] {
            let e = parse(text).unwrap_err();
            assert!(matches!(e, Error::BadFile { .. }), "{e}");
            assert!(e.to_string().contains("no items"), "{e}");
        }
        let opts = LoadOptions { skip_bad: true, ..Default::default() };
        let e = parse_with("oops\n{}\n", &opts).unwrap_err();
        assert!(e.to_string().contains("all 2 non-blank line(s) are bad"), "{e}");
    }

    #[test]
    fn family_filters_before_limit() {
        let rows: Vec<String> = (0..6)
            .map(|i| {
                let fam = if i % 2 == 0 { "even" } else { "odd" };
                ROW_B.replace(r#""id":"b""#, &format!(r#""id":"b{i}","family":"{fam}""#))
            })
            .collect();
        let text = rows.join("\n");
        let opts = LoadOptions { family: Some("odd".into()), limit: Some(2), ..Default::default() };
        let set = parse_with(&text, &opts).unwrap();
        assert_eq!(set.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), ["b1", "b3"]);
        let set = parse_with(&text, &LoadOptions { limit: Some(4), ..Default::default() }).unwrap();
        assert_eq!(set.items.len(), 4);
        let e = parse_with(&text, &LoadOptions { family: Some("none".into()), ..Default::default() }).unwrap_err();
        assert!(e.to_string().contains("even, odd"), "{e}");
        assert!(parse_with(&text, &LoadOptions { limit: Some(0), ..Default::default() }).is_err());
    }

    #[test]
    fn load_reports_missing_file() {
        let e = EvalSet::load(Path::new("/nonexistent/readout/set.jsonl"), &LoadOptions::default()).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }

    #[test]
    fn authored144_loads() {
        let path =
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/authored144/authored144.jsonl"));
        if !path.exists() {
            return;
        }
        let set = EvalSet::load(path, &LoadOptions::default()).unwrap();
        assert_eq!(set.name, "authored144");
        assert_eq!(set.items.len(), 144);
        assert!(set.skipped.is_empty());
        let families = set.families();
        assert_eq!(families.len(), 3);
        for f in &families {
            assert_eq!(set.items.iter().filter(|i| &i.family == f).count(), 48, "{f}");
        }
        assert!(set.items.iter().all(|i| i.criteria.len() == 1 && i.criteria[0].gold.is_some()));
        let one =
            EvalSet::load(path, &LoadOptions { family: Some(families[0].clone()), limit: Some(5), skip_bad: false })
                .unwrap();
        assert_eq!(one.items.len(), 5);
        assert_eq!(one.sha256, set.sha256);
    }
}
