//! A judges file: who sits on a jury (`schema/judges.schema.json`). Each judge is a model with,
//! where it needs them, the chat template its prompts are rendered with, the calibration file
//! whose temperature is applied to its probabilities, and its weight in the pool. `readout run`,
//! `readout score`, the score request and the app read a jury's make-up from here, or from
//! several `--model`s (every judge the same weight). Reading the judges' answers and pooling them
//! is [`crate::jobs::jury`]; pooling complete runs with fitted weights is
//! [`crate::analysis::jury`].
//!
//! Paths in the file are relative to the file's folder. Weights are all given or none: none is
//! every judge `1/judges`; given ones are scaled to sum to 1.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "readout.judges";

/// One judge of a jury.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(optional_fields))]
pub struct JudgeSpec {
    /// A GGUF file or a Hugging Face model directory.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub model: PathBuf,
    /// The chat template to render its prompts with, instead of the model's own: a family's name
    /// (`chatml`, `gemma`, …) or a Jinja file, as `--chat-template` takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    /// A calibration file (`readout calibrate`, fitted on a run of this model and debias mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub calibration: Option<PathBuf>,
    /// Its weight in the pool (0 or more; scaled so that the jury's weights sum to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
}

impl JudgeSpec {
    /// A judge of a model alone: its own template, no temperature, an equal weight.
    pub fn model(path: impl Into<PathBuf>) -> JudgeSpec {
        JudgeSpec { model: path.into(), chat_template: None, calibration: None, weight: None }
    }
}

/// A judges file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct JudgesFile {
    #[serde(default)]
    schema: Option<String>,
    judges: Vec<JudgeSpec>,
    #[serde(default)]
    abstain_on_disagreement: bool,
}

/// A jury's make-up, checked: at least two judges, weights all given or none.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub judges: Vec<JudgeSpec>,
    /// Give no answer where the judges do not all give the same one.
    pub abstain_on_disagreement: bool,
}

impl Panel {
    /// Check a jury's make-up; `origin` names where it came from in a refusal (the file, or the
    /// request's field).
    pub fn new(judges: Vec<JudgeSpec>, abstain_on_disagreement: bool, origin: &Path) -> Result<Panel> {
        let bad =
            |field: String, reason: String| Error::BadInput { path: origin.to_path_buf(), line: 1, field, reason };
        if judges.len() < 2 {
            return Err(bad(
                "judges".into(),
                format!(
                    "{} judge(s); a jury needs at least two (one model is a judge: give it as --model)",
                    judges.len()
                ),
            ));
        }
        let given = judges.iter().filter(|j| j.weight.is_some()).count();
        if given != 0 && given != judges.len() {
            return Err(bad(
                "judges".into(),
                format!(
                    "{given} of {} judges have a `weight`: give every judge one, or none (equal weights)",
                    judges.len()
                ),
            ));
        }
        for (i, j) in judges.iter().enumerate() {
            if let Some(w) = j.weight.filter(|w| !(w.is_finite() && *w >= 0.0)) {
                return Err(bad(format!("judges[{i}].weight"), format!("{w} is not a weight (0 or more)")));
            }
            if j.chat_template.as_deref() == Some("") {
                return Err(bad(
                    format!("judges[{i}].chat_template"),
                    "is empty: name a template or leave it out".into(),
                ));
            }
        }
        if given > 0 && judges.iter().filter_map(|j| j.weight).sum::<f64>() <= 0.0 {
            return Err(bad("judges".into(), "every weight is 0: give at least one judge a positive weight".into()));
        }
        Ok(Panel { judges, abstain_on_disagreement })
    }

    /// Several models, each its own template, no temperature, equal weights (`--model A --model B`).
    pub fn of_models(models: Vec<PathBuf>, abstain_on_disagreement: bool) -> Result<Panel> {
        Panel::new(models.into_iter().map(JudgeSpec::model).collect(), abstain_on_disagreement, Path::new("--model"))
    }

    /// Read a judges file; its relative paths are taken from its own folder.
    pub fn load(path: &Path) -> Result<Panel> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Panel::parse(&text, path)
    }

    /// Read a judges file's text; `path` names it in refusals, and its folder is where relative
    /// paths start.
    pub fn parse(text: &str, path: &Path) -> Result<Panel> {
        let mut de = serde_json::Deserializer::from_str(text);
        let file: JudgesFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            Error::BadInput {
                path: path.to_path_buf(),
                line: inner.line(),
                field: if field == "." { "(file)".into() } else { field },
                reason: format!("{inner}; a judges file is {{\"judges\": [{{\"model\": \"FILE.gguf\", \"chat_template\": …, \"calibration\": \"CAL.json\", \"weight\": 0.5}}, …]}} (docs/guide.md)"),
            }
        })?;
        if let Some(s) = file.schema.as_deref().filter(|s| *s != SCHEMA) {
            return Err(Error::BadFile {
                path: path.to_path_buf(),
                reason: format!("`schema` is \"{s}\", not \"{SCHEMA}\": this is not a judges file"),
            });
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        let resolve = |p: PathBuf| if p.is_relative() && !dir.as_os_str().is_empty() { dir.join(p) } else { p };
        let judges = file
            .judges
            .into_iter()
            .map(|j| JudgeSpec {
                model: resolve(j.model),
                calibration: j.calibration.map(resolve),
                chat_template: j.chat_template.map(|t| {
                    // A template file is relative to the judges file; a family's name is a name.
                    if dir.join(&t).is_file() {
                        resolve(PathBuf::from(&t)).to_string_lossy().into_owned()
                    } else {
                        t
                    }
                }),
                weight: j.weight,
            })
            .collect();
        Panel::new(judges, file.abstain_on_disagreement, path)
    }

    /// The pool's weights, summing to 1: as given, scaled, or `1/judges` each.
    pub fn weights(&self) -> Vec<f64> {
        let n = self.judges.len();
        let given: Vec<f64> = self.judges.iter().filter_map(|j| j.weight).collect();
        if given.len() == n {
            let sum: f64 = given.iter().sum();
            given.iter().map(|w| w / sum).collect()
        } else {
            vec![1.0 / n as f64; n]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_equal_or_scaled_to_one() {
        let p = Panel::of_models(vec!["a.gguf".into(), "b.gguf".into(), "c.gguf".into()], false).unwrap();
        assert_eq!(p.weights(), vec![1.0 / 3.0; 3]);
        let text = r#"{"judges": [{"model": "a.gguf", "weight": 3}, {"model": "b.gguf", "weight": 1}]}"#;
        let p = Panel::parse(text, Path::new("/x/jury.json")).unwrap();
        assert_eq!(p.weights(), vec![0.75, 0.25]);
        // Relative paths start at the file's folder.
        assert_eq!(p.judges[0].model, Path::new("/x/a.gguf"));
    }

    #[test]
    fn a_wrong_file_names_the_field() {
        let field = |text: &str| match Panel::parse(text, Path::new("j.json")).unwrap_err() {
            Error::BadInput { field, .. } => field,
            e => panic!("{e:?}"),
        };
        assert_eq!(field(r#"{"judges": [{"model": "a.gguf"}]}"#), "judges");
        assert_eq!(field(r#"{"judges": [{"model": "a.gguf", "weight": 1}, {"model": "b.gguf"}]}"#), "judges");
        assert_eq!(
            field(r#"{"judges": [{"model": "a.gguf", "weight": -1}, {"model": "b", "weight": 1}]}"#),
            "judges[0].weight"
        );
        assert_eq!(field(r#"{"judges": [{"model": "a.gguf", "colour": 1}, {"model": "b"}]}"#), "judges[0].colour");
        assert_eq!(field(r#"{"judges": [{"model": 3}, {"model": "b"}]}"#), "judges[0].model");
        assert_eq!(
            field(r#"{"judges": [{"model": "a", "chat_template": ""}, {"model": "b"}]}"#),
            "judges[0].chat_template"
        );
    }
}
