//! A scoring kept: the texts, the rubric, the model and settings that scored them, and the
//! answers, in one file (`readout.scored`). Here so that a scoring can be found again, by the
//! app's Results page, as a run can: a result file holds an evaluation (answers against gold), a
//! scored file holds answers to texts that have no gold. Written once, atomically, when a scoring
//! ends (finished or stopped); the answers are the library's own [`TextResult`]s, as
//! `readout score --json` prints them.

use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::formats::results::{ModelRecord, Status};
use crate::formats::texts::Text;
use crate::jobs::score::TextResult;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `schema` of a scored file.
pub const SCHEMA: &str = "readout.scored";
/// The `schema_version` this program writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// A text as it was scored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ScoredText {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub id: Option<String>,
    pub text: String,
}

impl From<&Text> for ScoredText {
    fn from(t: &Text) -> Self {
        ScoredText { id: t.id.clone(), text: t.text.clone() }
    }
}

/// One scoring: who scored what, how, and the answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ScoredFile {
    pub schema: String,
    pub schema_version: u32,
    /// When the scoring ended, RFC 3339 UTC.
    pub created: String,
    pub model: ModelRecord,
    /// The rubric, as it was given (a rubric file's JSON).
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub rubric: serde_json::Value,
    /// Every setting that changed a number (option order, when to give no answer, temperature).
    pub config: RunConfig,
    /// `partial` when the scoring was stopped: `results` then answers the first texts only.
    pub status: Status,
    pub texts: Vec<ScoredText>,
    pub results: Vec<TextResult>,
}

impl ScoredFile {
    /// A scoring that ended now; `partial` when fewer texts were answered than given.
    pub fn new(
        model: ModelRecord,
        rubric: serde_json::Value,
        config: RunConfig,
        texts: &[Text],
        results: Vec<TextResult>,
    ) -> ScoredFile {
        let status = if results.len() < texts.len() { Status::Partial } else { Status::Complete };
        ScoredFile {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            created: crate::formats::results::now_utc(),
            model,
            rubric,
            config,
            status,
            texts: texts.iter().map(ScoredText::from).collect(),
            results,
        }
    }

    /// The rubric's name, or "" when the rubric has none.
    pub fn rubric_name(&self) -> String {
        self.rubric.get("name").and_then(|n| n.as_str()).unwrap_or_default().to_string()
    }

    /// A file name that sorts by time and says what was scored:
    /// `2026-12-04T17-50-00Z_support-tickets_smollm2-135m-instruct.q4_1.scored.json` (the time's
    /// `:` as `-`, so the name is valid on every system).
    pub fn file_name(&self) -> String {
        let safe = |s: &str| -> String {
            let s: String = s.chars().map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect();
            s.trim_matches(|c| c == '-' || c == '.').chars().take(60).collect()
        };
        let model = self.model.file.trim_end_matches(".gguf");
        format!("{}_{}_{}.scored.json", self.created.replace(':', "-"), safe(&self.rubric_name()), safe(model))
    }

    /// Write atomically: a temporary file beside `path`, flushed, then renamed over it.
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| Error::BadFile {
            path: path.to_path_buf(),
            reason: format!("serialising the scoring: {e}"),
        })?;
        crate::atomic::write(path, &bytes)
    }

    /// Read and check a scored file.
    pub fn load(path: &Path) -> Result<ScoredFile> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::from_bytes(&bytes, path)
    }

    /// Check scored-file bytes; `path` only names the source in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<ScoredFile> {
        let bad = |reason: String| Error::BadFile { path: path.to_path_buf(), reason };
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            bad(format!("not a complete JSON document ({e}); the file is cut short or is not a scored file"))
        })?;
        if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
            return Err(bad(format!("not a Readout scored file (`schema` is not \"{SCHEMA}\")")));
        }
        let version = v.get("schema_version").and_then(|s| s.as_u64()).unwrap_or(0);
        if version != SCHEMA_VERSION as u64 {
            return Err(bad(format!(
                "field `schema_version`: the file is version {version}, but this program reads version {SCHEMA_VERSION}"
            )));
        }
        let file: ScoredFile = serde_json::from_value(v).map_err(|e| bad(e.to_string()))?;
        if file.results.len() > file.texts.len() {
            return Err(bad(format!("{} answers for {} texts", file.results.len(), file.texts.len())));
        }
        Ok(file)
    }

    /// Whether a file's first bytes name this schema (to list scored files in a folder without
    /// reading them all).
    pub fn looks_like(head: &[u8]) -> bool {
        let head = String::from_utf8_lossy(head);
        head.contains(&format!("\"{SCHEMA}\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::results::ModelRecord;

    fn model() -> ModelRecord {
        serde_json::from_value(serde_json::json!({
            "name": "SmolLM2 135M Instruct", "file": "smollm2-135m-instruct.q4_1.gguf", "sha256": "ab",
            "architecture": "llama", "quantisation": "Q4_1", "parameters": 135
        }))
        .expect("a model record")
    }

    fn scored(results: usize) -> ScoredFile {
        let texts = vec![Text { id: Some("t1".into()), text: "one".into() }, Text { id: None, text: "two".into() }];
        let results =
            (0..results).map(|i| TextResult { index: i, id: None, criteria: vec![], truncated_tokens: None }).collect();
        let rubric = serde_json::json!({ "name": "Support tickets: triage", "criteria": [] });
        let config = RunConfig::builder().build().expect("the default configuration");
        ScoredFile::new(model(), rubric, config, &texts, results)
    }

    #[test]
    fn a_stopped_scoring_is_partial_and_round_trips() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let s = scored(1);
        assert_eq!(s.status, Status::Partial);
        assert_eq!(scored(2).status, Status::Complete);
        let name = s.file_name();
        assert!(name.ends_with("_Support-tickets--triage_smollm2-135m-instruct.q4_1.scored.json"), "{name}");
        assert!(!name.contains(':'), "{name}");
        let path = dir.path().join(&name);
        s.write(&path).expect("written");
        let back = ScoredFile::load(&path).expect("read back");
        assert_eq!(back.texts, s.texts);
        assert_eq!(back.results.len(), 1);
        assert_eq!(back.rubric_name(), "Support tickets: triage");
        assert!(ScoredFile::looks_like(&std::fs::read(&path).expect("bytes")[..200]));
    }

    #[test]
    fn other_files_are_refused_by_name() {
        let p = Path::new("x.json");
        let e = ScoredFile::from_bytes(br#"{"schema":"readout.result"}"#, p).expect_err("not a scored file");
        assert!(e.to_string().contains("not a Readout scored file"), "{e}");
        let mut v = serde_json::to_value(scored(2)).expect("json");
        v["schema_version"] = 2.into();
        let e = ScoredFile::from_bytes(v.to_string().as_bytes(), p).expect_err("a later version");
        assert!(e.to_string().contains("version 2"), "{e}");
        let mut v = serde_json::to_value(scored(2)).expect("json");
        v["texts"] = serde_json::json!([]);
        let e = ScoredFile::from_bytes(v.to_string().as_bytes(), p).expect_err("more answers than texts");
        assert!(e.to_string().contains("2 answers for 0 texts"), "{e}");
    }
}
