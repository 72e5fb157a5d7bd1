//! The System One request: TypeSafe's `POST /v1/systemone` body (a `state` and a map of typed
//! `questions`), the field's wire format, read once here for every shell — `serve`'s endpoint,
//! the CLI's `decide`, MCP's `decide` tool and Python's `Judge.decide` — and its answer. A
//! request becomes Readout's own [`ScoreJob`] (one text, one criterion per question), so it
//! gets every debias mode, calibration and the prefix tree; the answer is TypeSafe's shape with
//! Readout's own fields prefixed `x_`.
//!
//! How a request is read (docs/systemone.md says it for users):
//! - `state`: a string as it is; an object or an array as its JSON text, compact (no white space
//!   outside strings), keys in the order the request gives them.
//! - `instructions` and every description: a string as it is, an object or an array as JSON text
//!   the same way. A question without instructions is asked as `Which option fits the text
//!   best?`, `Is this true of the text?` or `Rate the text.`.
//! - `choice`: one option per criterion, in the request's order; a `null` description shows the
//!   option's name. 2 to 255 options: letters up to 26, two-letter codes beyond
//!   ([`crate::engine::code`]).
//! - `noul`: two options, Yes then No, shown as `Yes: …` / `No: …` where `criteria` describes
//!   them; the answer is P(Yes).
//! - `score`: 2 to 10 levels, lowest first; `score` is the expected level Σ i·pᵢ.
//! - confidence: TypeSafe's formulas ([`choice_confidence`], [`score_confidence`]).
//! - unknown top-level fields are ignored; `x_debias` picks the debias mode of this request.

use crate::config::RunConfig;
use crate::debias::DebiasMode;
use crate::engine::Engine;
use crate::error::{Error, Invalid, Loc, Result};
use crate::formats::rubric::{duplicate_key, Criterion, Question, QuestionKind, Rubric};
use crate::jobs::request::ScoreJob;
use crate::jobs::score::{Text, TextResult};
use serde::Serialize;
use serde_json::{Map, Value};

/// The most options of a `choice` question.
pub const MAX_CHOICE_OPTIONS: usize = crate::engine::MAX_CODES;
/// The fewest and most levels of a `score` question.
pub const SCORE_LEVELS: std::ops::RangeInclusive<usize> = 2..=10;
/// The most options a question may have for a shell's default debias mode to apply.
pub const DEFAULT_DEBIAS_OPTIONS: usize = 10;
/// The model name every System One client may send (the SDKs' default).
pub const ALIAS: &str = "jev-latest";

/// A System One request, read and checked.
#[derive(Debug, Clone)]
pub struct SystemOneRequest {
    /// The model the client named.
    pub model: String,
    /// The state as the model reads it.
    pub state: String,
    /// The questions in the request's order.
    pub questions: Vec<SystemOneQuestion>,
    /// `x_debias`: this request's debias mode, instead of the shell's default.
    pub debias: Option<DebiasMode>,
    /// The request as it was sent: a decision model's template reads its values as they are
    /// ([`crate::jobs::decide`]).
    pub body: Map<String, Value>,
}

/// One question of a request.
#[derive(Debug, Clone)]
pub struct SystemOneQuestion {
    /// Its id, byte for byte.
    pub id: String,
    /// The criterion Readout reads it as.
    pub criterion: Criterion,
    /// A `score` question's levels as the request gave them (the answer's `legend`).
    pub levels: Vec<Value>,
}

fn key(k: &str) -> Loc {
    Loc::Key(k.to_string())
}

fn invalid(loc: Vec<Loc>, msg: impl Into<String>, kind: &str) -> Invalid {
    Invalid { loc, msg: msg.into(), kind: kind.into() }
}

/// A string, object or array as the model reads it: a string as it is, the rest as compact JSON
/// text, keys in the request's order.
pub fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

fn is_text(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Object(_) | Value::Array(_))
}

impl SystemOneRequest {
    /// Read a request body. Every wrong field is named ([`Error::Invalid`]), as many as are found.
    pub fn from_json(bytes: &[u8]) -> Result<SystemOneRequest> {
        let one = |loc: Vec<Loc>, msg: String, kind: &str| Error::Invalid(vec![invalid(loc, msg, kind)]);
        let text = std::str::from_utf8(bytes).map_err(|e| {
            one(
                vec![key("body")],
                format!("the body is not UTF-8 text (a bad byte at {}); send JSON as UTF-8", e.valid_up_to()),
                "json_invalid",
            )
        })?;
        let value: Value = serde_json::from_str(text).map_err(|e| {
            one(vec![key("body"), Loc::Index(e.column())], format!("JSON decode error: {e}"), "json_invalid")
        })?;
        if let Some(d) = duplicate_key(text) {
            let mut loc = vec![key("body")];
            loc.extend(d.field.split('.').filter(|p| !p.is_empty() && *p != "(json)").map(key));
            return Err(one(loc, format!("{}: {}", d.field, d.reason()), "value_error"));
        }
        Self::from_value(value)
    }

    /// Read a request already parsed as JSON.
    pub fn from_value(value: Value) -> Result<SystemOneRequest> {
        let Value::Object(body) = value else {
            return Err(Error::Invalid(vec![invalid(
                vec![key("body")],
                "Input should be a valid dictionary or object to extract fields from",
                "model_attributes_type",
            )]));
        };
        let mut errors = Vec::new();
        let at = |path: &[&str]| -> Vec<Loc> { std::iter::once("body").chain(path.iter().copied()).map(key).collect() };
        let model = match body.get("model") {
            Some(Value::String(m)) => m.clone(),
            None => {
                errors.push(invalid(at(&["model"]), "Field required", "missing"));
                String::new()
            }
            Some(_) => {
                errors.push(invalid(at(&["model"]), "Input should be a valid string", "string_type"));
                String::new()
            }
        };
        let state = match body.get("state") {
            Some(v) if is_text(v) => text_of(v),
            None => {
                errors.push(invalid(at(&["state"]), "Field required", "missing"));
                String::new()
            }
            Some(_) => {
                errors.push(invalid(at(&["state"]), "Input should be a valid string, object or array", "string_type"));
                String::new()
            }
        };
        let debias = match body.get("x_debias") {
            None | Some(Value::Null) => None,
            Some(Value::String(d)) => match d.parse::<DebiasMode>() {
                Ok(d) => Some(d),
                Err(e) => {
                    errors.push(invalid(at(&["x_debias"]), e, "enum"));
                    None
                }
            },
            Some(_) => {
                errors.push(invalid(at(&["x_debias"]), "Input should be a valid string", "string_type"));
                None
            }
        };
        if body.get("assets").is_some_and(|a| !a.is_null()) {
            errors.push(invalid(
                at(&["assets"]),
                "images need a vision-language model; this server reads text",
                "value_error",
            ));
        }
        let mut questions = Vec::new();
        match body.get("questions") {
            None => errors.push(invalid(at(&["questions"]), "Field required", "missing")),
            Some(Value::Object(q)) if q.is_empty() => errors.push(invalid(
                at(&["questions"]),
                "Dictionary should have at least 1 item after validation, not 0",
                "too_short",
            )),
            Some(Value::Object(q)) => {
                for (id, v) in q {
                    match question(id, v) {
                        Ok(q) => questions.push(q),
                        Err(e) => errors.push(e),
                    }
                }
            }
            Some(_) => errors.push(invalid(at(&["questions"]), "Input should be a valid dictionary", "dict_type")),
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        Ok(SystemOneRequest { model, state, questions, debias, body })
    }

    /// The questions as a rubric, in the request's order.
    pub fn rubric(&self) -> Rubric {
        Rubric { name: "systemone".into(), criteria: self.questions.iter().map(|q| q.criterion.clone()).collect() }
    }

    /// The most options of any question.
    pub fn widest(&self) -> usize {
        self.questions.iter().map(|q| q.criterion.options.len()).max().unwrap_or(0)
    }

    /// The debias mode this request is read with: its `x_debias` while every question has at
    /// most 26 options (past that, codes of two letters are read, and each ordering would cost a
    /// prompt as long as the options), else the shell's `default` while every question has at
    /// most [`DEFAULT_DEBIAS_OPTIONS`] (each ordering costs a prompt, so a default does not
    /// multiply a long list's work unasked), else `none`. The answer says which (`x_debias`).
    pub fn debias_mode(&self, default: DebiasMode) -> DebiasMode {
        match self.debias {
            Some(d) if self.widest() <= crate::engine::LETTERS.len() => d,
            None if self.widest() <= DEFAULT_DEBIAS_OPTIONS => default,
            _ => DebiasMode::None,
        }
    }

    /// The job that decides this request: the state as the one text, each question a criterion,
    /// under `config` with [`Self::debias_mode`].
    pub fn job(&self, mut config: RunConfig, default: DebiasMode) -> Result<ScoreJob> {
        config.debias = self.debias_mode(default);
        crate::jobs::score::check_config(&config)?;
        Ok(ScoreJob {
            rubric: self.rubric(),
            texts: vec![Text { id: None, text: self.state.clone() }],
            config,
            panel: None,
        })
    }

    /// The tokens of every question's prompt in its first ordering: what the model reads for the
    /// request, counted as if nothing were shared (TypeSafe's `usage.input_tokens`).
    pub fn input_tokens(&self, engine: &Engine) -> Result<usize> {
        use crate::pipeline::prompt;
        let mut n = 0;
        for q in &self.questions {
            let ordering: Vec<usize> = (0..q.criterion.options.len()).collect();
            let user = prompt::user_turn(&self.state, &q.criterion, &ordering);
            n += engine.tokenizer().encode(&engine.template().render(&prompt::messages(&[], user))?)?.len();
        }
        Ok(n)
    }

    /// The answer to this request from its text's decisions ([`TextResult`], as
    /// [`crate::jobs::score`] gives them), with `model` the name that answered.
    pub fn response(&self, model: &str, result: &TextResult, usage: Usage, debias: DebiasMode) -> SystemOneResponse {
        let mut answers = Map::new();
        for (q, c) in self.questions.iter().zip(&result.criteria) {
            let probs: Vec<f64> = c.options.iter().map(|o| o.probability).collect();
            let extra = Extra { x_order_unstable: c.order_unstable, x_letter_mass: c.letter_mass };
            let answer = match q.criterion.kind {
                QuestionKind::Noul => serde_json::to_value(NoulAnswer {
                    kind: "noul",
                    noul: probs.first().copied().unwrap_or(0.5),
                    extra,
                }),
                QuestionKind::Choice => {
                    let best = crate::math::argmax(&probs);
                    serde_json::to_value(ChoiceAnswer {
                        kind: "choice",
                        choice: c.options.get(best).map(|o| o.id.clone()).unwrap_or_default(),
                        confidence: choice_confidence(&probs),
                        probabilities: c.options.iter().map(|o| (o.id.clone(), Value::from(o.probability))).collect(),
                        extra,
                    })
                }
                QuestionKind::Score => serde_json::to_value(ScoreAnswer {
                    kind: "score",
                    score: probs.iter().enumerate().map(|(i, p)| i as f64 * p).sum(),
                    confidence: score_confidence(&probs),
                    legend: q.levels.iter().enumerate().map(|(i, l)| (i.to_string(), l.clone())).collect(),
                    probabilities: probs.iter().enumerate().map(|(i, p)| (i.to_string(), Value::from(*p))).collect(),
                    extra,
                }),
            };
            answers.insert(q.id.clone(), answer.unwrap_or(Value::Null));
        }
        SystemOneResponse { model: model.to_string(), answers, usage, x_debias: debias.to_string() }
    }
}

/// Question `id` of a request.
fn question(id: &str, v: &Value) -> std::result::Result<SystemOneQuestion, Invalid> {
    let at = |path: &[&str]| -> Vec<Loc> {
        [key("body"), key("questions"), key(id)].into_iter().chain(path.iter().map(|p| key(p))).collect()
    };
    let Value::Object(q) = v else {
        return Err(invalid(at(&[]), "Input should be a valid dictionary or object", "model_attributes_type"));
    };
    let kind = match q.get("type") {
        None => {
            return Err(invalid(
                at(&[]),
                "Unable to extract tag using discriminator 'type'; give `noul`, `choice` or `score`",
                "union_tag_not_found",
            ))
        }
        Some(Value::String(t)) if t == "choice" => QuestionKind::Choice,
        Some(Value::String(t)) if t == "noul" => QuestionKind::Noul,
        Some(Value::String(t)) if t == "score" => QuestionKind::Score,
        Some(Value::String(t)) if t == "box" => {
            return Err(invalid(at(&["type"]), "`box` questions need an image model; this server reads text", "value_error"))
        }
        Some(other) => {
            return Err(invalid(
                at(&[]),
                format!("Input tag {other} found using 'type' does not match any of the expected tags: 'noul', 'choice', 'score', 'box'"),
                "union_tag_invalid",
            ))
        }
    };
    let instructions = match q.get("instructions") {
        None | Some(Value::Null) => None,
        Some(v) if is_text(v) => Some(text_of(v)).filter(|s| !s.trim().is_empty()),
        Some(_) => {
            return Err(invalid(
                at(&["instructions"]),
                "Input should be a valid string, object or array",
                "string_type",
            ))
        }
    };
    let text_or_null = |v: &Value, loc: Vec<Loc>| -> std::result::Result<Value, Invalid> {
        match v {
            Value::Null => Ok(Value::Null),
            v if is_text(v) => Ok(Value::String(text_of(v))),
            _ => Err(invalid(loc, "Input should be a valid string, object or array", "string_type")),
        }
    };
    let mut levels = Vec::new();
    let (criteria, default) = match kind {
        QuestionKind::Choice => {
            let map = match q.get("criteria") {
                Some(Value::Object(m)) => m,
                None => return Err(invalid(at(&["criteria"]), "Field required", "missing")),
                Some(_) => return Err(invalid(at(&["criteria"]), "Input should be a valid dictionary", "dict_type")),
            };
            if map.len() < 2 {
                return Err(invalid(
                    at(&["criteria"]),
                    format!("a choice needs at least 2 options, not {}", map.len()),
                    "too_short",
                ));
            }
            if map.len() > MAX_CHOICE_OPTIONS {
                return Err(invalid(
                    at(&["criteria"]),
                    format!("{} options; at most {MAX_CHOICE_OPTIONS} are read", map.len()),
                    "too_long",
                ));
            }
            let mut out = Map::new();
            for (name, d) in map {
                out.insert(name.clone(), text_or_null(d, at(&["criteria", name]))?);
            }
            (Value::Object(out), "Which option fits the text best?")
        }
        QuestionKind::Noul => {
            let crit = match q.get("criteria") {
                None | Some(Value::Null) => Value::Null,
                Some(Value::Object(m)) => {
                    let mut out = Map::new();
                    for side in ["true", "false"] {
                        if let Some(d) = m.get(side) {
                            out.insert(side.into(), text_or_null(d, at(&["criteria", side]))?);
                        }
                    }
                    Value::Object(out)
                }
                Some(_) => return Err(invalid(at(&["criteria"]), "Input should be a valid dictionary", "dict_type")),
            };
            (crit, "Is this true of the text?")
        }
        QuestionKind::Score => {
            let list = match q.get("criteria") {
                Some(Value::Array(l)) => l,
                None => return Err(invalid(at(&["criteria"]), "Field required", "missing")),
                Some(_) => {
                    return Err(invalid(
                        at(&["criteria"]),
                        "Input should be a valid list: a score's levels are a list, lowest first",
                        "list_type",
                    ))
                }
            };
            if !SCORE_LEVELS.contains(&list.len()) {
                let kind = if list.len() < *SCORE_LEVELS.start() { "too_short" } else { "too_long" };
                return Err(invalid(
                    at(&["criteria"]),
                    format!("a score has 2 to 10 levels, not {}", list.len()),
                    kind,
                ));
            }
            let mut out = Vec::with_capacity(list.len());
            for (i, l) in list.iter().enumerate() {
                if !is_text(l) {
                    let mut loc = at(&["criteria"]);
                    loc.push(Loc::Index(i));
                    return Err(invalid(loc, "Input should be a valid string, object or array", "string_type"));
                }
                out.push(Value::String(text_of(l)));
            }
            levels = list.clone();
            (Value::Array(out), "Rate the text.")
        }
    };
    let written =
        Question { kind, instructions: instructions.unwrap_or_else(|| default.to_string()), criteria, label: None };
    let criterion = written.into_criterion(id).map_err(|e| {
        let part = if e.field.ends_with(".instructions") { "instructions" } else { "criteria" };
        invalid(at(&[part]), e.reason, "value_error")
    })?;
    Ok(SystemOneQuestion { id: id.to_string(), criterion, levels })
}

/// TypeSafe's confidence of a choice: how far the top probability is from the uniform
/// distribution's, `(max − 1/n) / (1 − 1/n)`.
pub fn choice_confidence(probs: &[f64]) -> f64 {
    let n = probs.len() as f64;
    if probs.len() <= 1 {
        return 1.0;
    }
    let max = probs.iter().copied().fold(0.0, f64::max);
    ((max - 1.0 / n) / (1.0 - 1.0 / n)).clamp(0.0, 1.0)
}

/// TypeSafe's confidence of a score: one less the probability-weighted distance of the levels
/// from the most probable one, over that distance under the uniform distribution.
pub fn score_confidence(probs: &[f64]) -> f64 {
    let n = probs.len();
    if n <= 1 {
        return 1.0;
    }
    let mode = crate::math::argmax(probs) as f64;
    let spread: f64 = probs.iter().enumerate().map(|(i, p)| p * (i as f64 - mode).abs()).sum();
    let mid = (n as f64 - 1.0) / 2.0;
    let uniform: f64 = (0..n).map(|i| (i as f64 - mid).abs()).sum::<f64>() / n as f64;
    (1.0 - spread / uniform).max(0.0)
}

/// Token counts of a request (TypeSafe's `usage`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Usage {
    /// The tokens of every question's prompt ([`SystemOneRequest::input_tokens`]).
    pub input_tokens: usize,
    /// Tokens generated: none (the answers are read, not written), as llama.cpp's endpoint counts.
    pub output_tokens: usize,
}

/// The answer to a request: `{"model", "answers": {id: answer}, "usage"}` and Readout's `x_debias`.
#[derive(Debug, Clone, Serialize)]
pub struct SystemOneResponse {
    pub model: String,
    pub answers: Map<String, Value>,
    pub usage: Usage,
    /// The debias mode the request was read with.
    pub x_debias: String,
}

/// Readout's own fields of an answer.
#[derive(Debug, Clone, Copy, Serialize)]
struct Extra {
    /// Whether the top option changed between orderings; absent when one ordering was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    x_order_unstable: Option<bool>,
    /// The share of the model's next-token distribution on the answer codes' first tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    x_letter_mass: Option<f64>,
}

#[derive(Serialize)]
struct NoulAnswer {
    #[serde(rename = "type")]
    kind: &'static str,
    noul: f64,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Serialize)]
struct ChoiceAnswer {
    #[serde(rename = "type")]
    kind: &'static str,
    choice: String,
    confidence: f64,
    probabilities: Map<String, Value>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Serialize)]
struct ScoreAnswer {
    #[serde(rename = "type")]
    kind: &'static str,
    score: f64,
    confidence: f64,
    legend: Map<String, Value>,
    probabilities: Map<String, Value>,
    #[serde(flatten)]
    extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Result<SystemOneRequest> {
        SystemOneRequest::from_json(v.to_string().as_bytes())
    }

    fn locs(e: Error) -> Vec<String> {
        match e {
            Error::Invalid(list) => list.iter().map(|i| i.to_string()).collect(),
            other => panic!("not Invalid: {other:?}"),
        }
    }

    #[test]
    fn the_three_types_become_criteria_in_the_requests_order() {
        let r = read(json!({
            "model": "jev-latest",
            "state": {"subject": "Charged twice", "body": "Refund me", "n": [1, 2.5]},
            "questions": {
                "z-team": {"type": "choice", "instructions": ["Route it.", "One team."],
                           "criteria": {"Billing": {"owns": ["refunds"]}, "Sales": null}},
                "a-refund": {"type": "noul", "criteria": {"true": "They want money back"}},
                "🎯": {"type": "score", "criteria": ["Calm", {"label": "Angry"}]}
            },
            "seed": 7
        }))
        .unwrap();
        // Keys in the request's order, no white space outside strings.
        assert_eq!(r.state, r#"{"subject":"Charged twice","body":"Refund me","n":[1,2.5]}"#);
        let ids: Vec<&str> = r.questions.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, ["z-team", "a-refund", "🎯"]);
        let team = &r.questions[0].criterion;
        assert_eq!(team.instructions, r#"["Route it.","One team."]"#);
        assert_eq!(team.options[0].description, r#"{"owns":["refunds"]}"#);
        assert_eq!((team.options[1].id.as_str(), team.options[1].description.as_str()), ("Sales", "Sales"));
        let refund = &r.questions[1].criterion;
        assert_eq!(refund.instructions, "Is this true of the text?");
        assert_eq!(refund.options[0].description, "Yes: They want money back");
        assert_eq!(refund.options[1].description, "No");
        assert_eq!(r.questions[2].levels[1], json!({"label": "Angry"}));
        assert_eq!(r.questions[2].criterion.options[1].description, r#"{"label":"Angry"}"#);
    }

    #[test]
    fn every_wrong_field_is_named_as_typesafe_names_it() {
        let q = json!({"q": {"type": "noul", "instructions": "x"}});
        let cases = [
            (json!({"state": "s", "questions": q}), "body.model: Field required"),
            (json!({"model": "m", "questions": q}), "body.state: Field required"),
            (json!({"model": "m", "state": null, "questions": q}), "body.state: Input should be"),
            (json!({"model": "m", "state": "s"}), "body.questions: Field required"),
            (json!({"model": "m", "state": "s", "questions": {}}), "body.questions: Dictionary should have"),
            (
                json!({"model": "m", "state": "s", "questions": {"q": {"instructions": "x"}}}),
                "body.questions.q: Unable",
            ),
            (
                json!({"model": "m", "state": "s", "questions": {"q": {"type": "boolean"}}}),
                "body.questions.q: Input tag",
            ),
            (
                json!({"model": "m", "state": "s", "questions": {"q": {"type": "choice", "criteria": {}}}}),
                "body.questions.q.criteria: a choice needs at least 2",
            ),
            (
                json!({"model": "m", "state": "s", "questions": {"q": {"type": "score", "criteria": {"0": "a", "1": "b"}}}}),
                "body.questions.q.criteria: Input should be a valid list",
            ),
            (
                json!({"model": "m", "state": "s", "questions": {"q": {"type": "score", "criteria": ["a"]}}}),
                "body.questions.q.criteria: a score has 2 to 10 levels, not 1",
            ),
            (
                json!({"model": "m", "state": "s", "questions": {"q": {"type": "score", "criteria": ["a", null]}}}),
                "body.questions.q.criteria.1: Input should be",
            ),
            (json!({"model": "m", "state": "s", "questions": q, "x_debias": "sideways"}), "body.x_debias:"),
        ];
        for (body, want) in cases {
            let got = locs(read(body.clone()).unwrap_err());
            assert!(got.iter().any(|g| g.starts_with(want)), "{body}: {got:?}, expected {want}");
        }
        let many: Map<String, Value> = (0..256).map(|i| (format!("Queue {i}"), Value::Null)).collect();
        let e = read(json!({"model": "m", "state": "s", "questions": {"q": {"type": "choice", "criteria": many}}}));
        assert!(locs(e.unwrap_err())[0].contains("256 options; at most 255"));
        assert!(locs(SystemOneRequest::from_json(b"{\"model\": ").unwrap_err())[0].starts_with("body.10: JSON decode"));
    }

    #[test]
    fn confidence_follows_typesafes_formulas() {
        // (0.7 − 1/3) / (1 − 1/3) = 0.55
        assert!((choice_confidence(&[0.7, 0.2, 0.1]) - 0.55).abs() < 1e-12);
        assert_eq!(choice_confidence(&[0.5, 0.5]), 0.0);
        // Levels 0..2, mode 1: spread 0.2·1 + 0.2·1 = 0.4; uniform (1 + 0 + 1)/3 = 2/3 → 1 − 0.6 = 0.4
        assert!((score_confidence(&[0.2, 0.6, 0.2]) - 0.4).abs() < 1e-12);
        assert_eq!(score_confidence(&[0.0, 1.0, 0.0]), 1.0);
    }
}
