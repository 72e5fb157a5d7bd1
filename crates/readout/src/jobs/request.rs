//! The one score request: what every shell (the CLI's `score`, `serve`'s `POST /v1/score`, the
//! MCP `score` tool, the app's Score page, Python's `Judge.score`) receives from its user, and
//! its one validation into a [`ScoreJob`]. A shell only parses its own transport into a
//! [`ScoreRequest`] and presents the answer; which fields exist, what they mean and every
//! message about a wrong one are here, so the shells cannot drift apart.

use crate::config::RunConfig;
use crate::debias::DebiasMode;
use crate::error::{Error, Result};
use crate::formats::calibration::{Calibration, CalibrationFile};
use crate::formats::judges::{JudgeSpec, Panel};
use crate::formats::rubric::{duplicate_key, json_type, Rubric};
use crate::formats::texts::Text;
use crate::truncate::Truncate;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A score job as a shell receives it. JSON: `{"rubric": {…} | "questions": {…}, "texts":
/// ["…", {"text": "…", "id": "…"}], "debias": "cyclic", "truncate_middle": true,
/// "abstain_below": 0.6, "abstain_letter_mass": 0.5, "calibration": "cal.json"}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScoreRequest {
    /// A rubric as in examples/*.rubric.json (`name`, `description`, `questions`;
    /// docs/rubric.md); where the shell allows it ([`Policy::paths`]), the path of a rubric file.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[serde(default)]
    pub rubric: Option<serde_json::Value>,
    /// A rubric's `questions` object alone, instead of `rubric`.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[serde(default)]
    pub questions: Option<serde_json::Value>,
    /// The texts to decide: each a string, or an object with `text` and an optional `id`.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<TextIn>))]
    #[serde(default)]
    pub texts: Vec<serde_json::Value>,
    /// How orderings of the options are scored and combined: none (the default), cyclic,
    /// permutation, calibrate, pride or batch (as `readout score --debias`).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    #[serde(default)]
    pub debias: Option<String>,
    /// Cut a text too long for the model's context from the middle instead of refusing it.
    #[serde(default)]
    pub truncate_middle: bool,
    /// No answer when the top probability is below this (0 to 1).
    #[serde(default)]
    pub abstain_below: Option<f64>,
    /// No answer when the letters' share of the model's next-token distribution is below this
    /// (0 to 1): none of the options fits.
    #[serde(default)]
    pub abstain_letter_mass: Option<f64>,
    /// A calibration file (`readout calibrate`) whose temperature is applied, where the shell
    /// allows paths ([`Policy::paths`]).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    #[serde(default)]
    pub calibration: Option<PathBuf>,
    /// A jury instead of one model, where the shell allows paths: a list of judges
    /// (`{"model": FILE, "chat_template": …, "calibration": CAL.json, "weight": 0.5}`, as in a
    /// judges file, schema/judges.schema.json) or the path of a judges file.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[serde(default)]
    pub judges: Option<serde_json::Value>,
    /// With `judges`: give no answer where the judges do not all choose the same option.
    #[serde(default)]
    pub abstain_on_disagreement: bool,
}

/// One text of a request, for the request's schema (the request holds JSON values so that a
/// wrong text is named by its index).
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub enum TextIn {
    Plain(String),
    WithId { text: String, id: Option<String> },
}

/// What a shell lets its requests do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Whether `rubric` and `calibration` may name files on this machine: yes for the CLI, the
    /// app, Python and MCP (the user's own machine), no for the HTTP service (its clients are
    /// elsewhere and must not read the server's files).
    pub paths: bool,
    /// The most texts one request may carry (`serve --max-texts`).
    pub max_texts: Option<usize>,
}

impl Policy {
    /// A shell on the user's own machine: files may be named, no limit on texts.
    pub const LOCAL: Policy = Policy { paths: true, max_texts: None };
}

/// A validated score request: what [`crate::jobs::score::score_texts`] and
/// [`crate::jobs::score::score_requests`] take.
#[derive(Debug, Clone)]
pub struct ScoreJob {
    pub rubric: Rubric,
    pub texts: Vec<Text>,
    /// The debias mode, context policy, abstention and calibration; the device's levers are
    /// resolved when the job meets its engine ([`RunConfig::resolve`]).
    pub config: RunConfig,
    /// A jury's judges ([`crate::jobs::jury::score_panel`]); `None`: the shell's one model.
    pub panel: Option<Panel>,
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::Request { field: field.into(), reason: reason.into() }
}

impl ScoreRequest {
    /// Read a request from JSON; a wrong body names the field at fault: the field of the wrong
    /// type, the unknown field, or the object giving a key twice (refused as a rubric file is,
    /// since JSON would keep only the last).
    pub fn from_json(bytes: &[u8]) -> Result<ScoreRequest> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            invalid(
                "(body)",
                format!("the body is not UTF-8 text (a bad byte at {}); send JSON as UTF-8", e.valid_up_to()),
            )
        })?;
        if let Some(d) = duplicate_key(text) {
            let field = if d.field == "(json)" { "(body)".to_string() } else { d.field.clone() };
            return Err(invalid(field.clone(), format!("{field}: {}", d.reason())));
        }
        let not_a_request =
            |field: String, e: serde_json::Error| invalid(field, format!("the body is not a score request: {e}"));
        let mut de = serde_json::Deserializer::from_str(text);
        let request = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let e = e.into_inner();
            // An unknown field is named by serde's message; a field of the wrong type by its path.
            let msg = e.to_string();
            let field = match msg.split('`').nth(1).filter(|_| msg.starts_with("unknown field")) {
                Some(f) => f.to_string(),
                None if path != "." && !path.is_empty() => path,
                None => "(body)".to_string(),
            };
            not_a_request(field, e)
        })?;
        de.end().map_err(|e| not_a_request("(body)".into(), e))?;
        Ok(request)
    }

    /// Check every field and make the job. A wrong rubric is the rubric's error
    /// ([`Error::BadInput`]), a wrong option a [`Error::Config`], anything else about the
    /// request an [`Error::Request`]; [`field_of`] names the field of each.
    pub fn validate(self, policy: Policy) -> Result<ScoreJob> {
        let rubric = self.rubric(policy)?;
        let panel = self.panel(policy)?;
        if self.texts.is_empty() {
            return Err(invalid("texts", "no texts: give at least one"));
        }
        if let Some(max) = policy.max_texts.filter(|&m| self.texts.len() > m) {
            return Err(invalid(
                "texts",
                format!("{} texts in one request; this server takes at most {max} (--max-texts)", self.texts.len()),
            ));
        }
        let texts = self.texts.into_iter().enumerate().map(|(i, v)| text_of(i, v)).collect::<Result<Vec<_>>>()?;
        let debias: DebiasMode = match self.debias.as_deref() {
            None => DebiasMode::None,
            Some(d) => d.parse().map_err(Error::Config)?,
        };
        let calibration = match &self.calibration {
            None => None,
            Some(_) if !policy.paths => {
                return Err(invalid("calibration", "this server reads no files: a calibration file is not taken here"))
            }
            Some(p) => Some(calibration(p)?),
        };
        let config = RunConfig::builder()
            .debias(debias)
            .truncate(if self.truncate_middle { Truncate::Middle } else { Truncate::None })
            .abstain_below(self.abstain_below)
            .abstain_letter_mass(self.abstain_letter_mass)
            .calibration(calibration)
            .build()?;
        crate::jobs::score::check_config(&config)?;
        Ok(ScoreJob { rubric, texts, config, panel })
    }

    /// The request's jury: `judges` (a list, or a judges file where paths are allowed).
    fn panel(&self, policy: Policy) -> Result<Option<Panel>> {
        let Some(judges) = &self.judges else {
            if self.abstain_on_disagreement {
                return Err(invalid("abstain_on_disagreement", "is for a jury: give `judges` too"));
            }
            return Ok(None);
        };
        if !policy.paths {
            return Err(invalid(
                "judges",
                "this server reads no files and scores with the model it was started with: a jury is for the CLI (readout score --model A --model B) and the app",
            ));
        }
        if self.calibration.is_some() {
            return Err(invalid(
                "calibration",
                "a jury has no calibration of its own: give each judge its `calibration` in `judges`",
            ));
        }
        let mut panel = match judges {
            serde_json::Value::String(p) => Panel::load(Path::new(p))?,
            serde_json::Value::Array(list) => {
                let specs = list
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        serde_json::from_value::<JudgeSpec>(v.clone())
                            .map_err(|e| invalid(format!("judges[{i}]"), format!("judges[{i}]: {e}")))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Panel::new(specs, false, Path::new("judges")).map_err(|e| match e {
                    Error::BadInput { field, reason, .. } => invalid(field, reason),
                    e => e,
                })?
            }
            other => {
                return Err(invalid(
                    "judges",
                    format!("must be a list of judges or a judges file's path, not {}", json_type(other)),
                ))
            }
        };
        panel.abstain_on_disagreement |= self.abstain_on_disagreement;
        Ok(Some(panel))
    }

    /// The request's rubric: `rubric` (an object, or a file where paths are allowed) or
    /// `questions` alone.
    fn rubric(&self, policy: Policy) -> Result<Rubric> {
        let (value, field) = match (&self.rubric, &self.questions) {
            (Some(serde_json::Value::String(p)), None) if policy.paths => return Rubric::load(Path::new(p)),
            (Some(serde_json::Value::String(_)), None) => {
                return Err(invalid("rubric", "this server reads no files: give the rubric as an object"))
            }
            (Some(r @ serde_json::Value::Object(_)), None) => (r.clone(), "rubric"),
            (Some(other), None) => {
                let what = if policy.paths {
                    "a rubric object with `questions`, or the path of a rubric file (a string)"
                } else {
                    "a rubric object with `questions`"
                };
                return Err(invalid("rubric", format!("must be {what}, not {}", json_type(other))));
            }
            (None, Some(q)) => (serde_json::json!({ "name": "inline", "questions": q }), "questions"),
            (Some(_), Some(_)) => return Err(invalid("rubric", "give `rubric` or `questions`, not both")),
            (None, None) => return Err(invalid("rubric", "missing: give `rubric` (a rubric object) or `questions`")),
        };
        // Pretty-printed, so that an error's line number points into something readable.
        let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
        Rubric::parse(&text, Path::new(field))
    }
}

/// The request field an error of [`ScoreRequest::validate`] is about, as a client names it
/// (`texts[3]`, `rubric.questions.topic.type`, `questions.topic`), where there is one.
pub fn field_of(e: &Error) -> Option<String> {
    match e {
        Error::Request { field, .. } => Some(field.clone()),
        Error::BadInput { path, field, .. } => {
            let part = path.to_str().filter(|p| *p == "rubric" || *p == "questions")?;
            Some(if field.starts_with('(') {
                part.to_string()
            } else if part == "questions" {
                field.clone()
            } else {
                format!("rubric.{field}")
            })
        }
        _ => None,
    }
}

/// Text `i` of the request: a string, or `{ "text": …, "id": … }`.
fn text_of(i: usize, v: serde_json::Value) -> Result<Text> {
    let bad = |why: &str| invalid(format!("texts[{i}]"), format!("texts[{i}] {why}"));
    match v {
        serde_json::Value::String(text) => Ok(Text { id: None, text }),
        serde_json::Value::Object(mut o) => {
            if let Some(k) = o.keys().find(|k| *k != "text" && *k != "id") {
                return Err(bad(&format!("has `{k}`; a text object has `text` and an optional `id`")));
            }
            let Some(serde_json::Value::String(text)) = o.remove("text") else {
                return Err(bad("needs `text`, a string"));
            };
            let id = match o.remove("id") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(s)) => Some(s),
                Some(other) => Some(other.to_string()),
            };
            Ok(Text { id, text })
        }
        _ => Err(bad("must be a string or an object with `text`")),
    }
}

/// A calibration file's temperature, as a job applies it.
pub fn calibration(path: &Path) -> Result<Calibration> {
    CalibrationFile::load(path).map(|(_, c)| c)
}

impl From<Text> for serde_json::Value {
    fn from(t: Text) -> serde_json::Value {
        match t.id {
            None => serde_json::Value::String(t.text),
            Some(id) => serde_json::json!({ "text": t.text, "id": id }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(v: serde_json::Value) -> Result<ScoreJob> {
        ScoreRequest::from_json(v.to_string().as_bytes())?.validate(Policy::LOCAL)
    }

    fn field(e: Error) -> String {
        field_of(&e).unwrap_or_else(|| panic!("no field in {e:?}"))
    }

    const QUESTIONS: &str = r#"{"topic": {"type": "choice", "instructions": "Which topic?",
        "criteria": {"billing": "about money", "other": "anything else"}}}"#;

    #[test]
    fn texts_as_strings_or_objects_and_the_defaults() {
        let q: serde_json::Value = serde_json::from_str(QUESTIONS).unwrap();
        let job =
            request(json!({"questions": q, "texts": ["a", {"text": "b", "id": 7}, {"text": "c", "id": "x"}]})).unwrap();
        let ids: Vec<Option<&str>> = job.texts.iter().map(|t| t.id.as_deref()).collect();
        assert_eq!(ids, [None, Some("7"), Some("x")]);
        assert_eq!((job.config.debias, job.config.truncate), (DebiasMode::None, Truncate::None));
        assert_eq!(job.rubric.criteria.len(), 1);
    }

    #[test]
    fn every_wrong_field_is_named() {
        let q: serde_json::Value = serde_json::from_str(QUESTIONS).unwrap();
        let cases = [
            (json!({"texts": ["a"]}), "rubric"),
            (json!({"questions": q, "rubric": {}, "texts": ["a"]}), "rubric"),
            (json!({"questions": q, "texts": []}), "texts"),
            (json!({"questions": q, "texts": [3]}), "texts[0]"),
            (json!({"questions": q, "texts": ["a", {"txt": "b"}]}), "texts[1]"),
            (json!({"questions": q, "texts": ["a"], "colour": 1}), "colour"),
            (json!({"questions": {"topic": {"type": "choice", "instructions": "x"}}, "texts": ["a"]}), "topic"),
            (json!({"rubric": {"questions": {"topic": {"type": "colour"}}}, "texts": ["a"]}), "rubric.questions.topic"),
            (json!({"rubric": 5, "texts": ["a"]}), "rubric"),
            (json!({"questions": q, "texts": 5}), "texts"),
            (json!({"questions": q, "texts": ["a"], "truncate_middle": "yes"}), "truncate_middle"),
            (json!({"questions": q, "texts": ["a"], "debias": 3}), "debias"),
        ];
        let e = request(json!({"questions": q, "texts": ["a"], "debias": "sideways"})).unwrap_err();
        assert!(matches!(&e, Error::Config(m) if m.contains("sideways")), "{e:?}");
        for (body, want) in cases {
            let got = field(request(body.clone()).unwrap_err());
            assert!(got.contains(want), "{body}: field {got}, expected {want}");
        }
    }

    #[test]
    fn a_key_given_twice_is_refused_naming_it() {
        let body = r#"{"questions": {"topic": {"type": "choice", "instructions": "Which?",
            "criteria": {"a": "A", "a": "B", "b": "C"}}}, "texts": ["x"]}"#;
        let e = ScoreRequest::from_json(body.as_bytes()).unwrap_err();
        assert_eq!(field_of(&e).as_deref(), Some("questions.topic.criteria"));
        assert!(e.to_string().contains("key `a` is given twice"), "{e}");
        let e = ScoreRequest::from_json(br#"{"texts": ["x"], "texts": ["y"]}"#).unwrap_err();
        assert_eq!(field(e), "(body)");
        let e = ScoreRequest::from_json(b"{\"texts\": [\"caf\xe9\"]}").unwrap_err();
        assert_eq!(field(e), "(body)");
        let e = ScoreRequest::from_json(br#"{"texts": ["x"]} {}"#).unwrap_err();
        assert_eq!(field(e), "(body)");
    }

    #[test]
    fn every_shell_runs_a_gpu_alike() {
        // The CLI's `score`, `serve`, MCP, the app and Python all validate a ScoreRequest; the
        // device's levers are resolved in one place, so each gets the GPU's pass size.
        let q: serde_json::Value = serde_json::from_str(QUESTIONS).unwrap();
        let gpu = crate::engine::DeviceProfile { gpu: true, threads: 16 };
        let served = request(json!({"questions": q, "texts": ["a"], "debias": "cyclic"})).unwrap();
        let local = ScoreRequest {
            rubric: Some(json!({"name": "inline", "questions": q})),
            texts: vec![json!("a")],
            debias: Some("cyclic".into()),
            ..ScoreRequest::default()
        }
        .validate(Policy::LOCAL)
        .unwrap();
        let (a, b) = (served.config.resolve_for(&gpu), local.config.resolve_for(&gpu));
        assert_eq!(a, b);
        assert_eq!((a.levers.pass_tokens, a.levers.group_units), (crate::engine::GPU_PASS_TOKENS, Some(true)));
    }

    #[test]
    fn a_server_reads_no_files_and_caps_the_texts() {
        let q: serde_json::Value = serde_json::from_str(QUESTIONS).unwrap();
        let server = Policy { paths: false, max_texts: Some(1) };
        let r = |v: serde_json::Value| ScoreRequest::from_json(v.to_string().as_bytes()).unwrap().validate(server);
        assert_eq!(field(r(json!({"questions": q, "texts": ["a", "b"]})).unwrap_err()), "texts");
        assert_eq!(
            field(r(json!({"questions": q, "texts": ["a"], "calibration": "/etc/x"})).unwrap_err()),
            "calibration"
        );
        assert_eq!(field(r(json!({"rubric": "/etc/passwd", "texts": ["a"]})).unwrap_err()), "rubric");
    }
}
