//! Labels-curve files in the results folder (`readout bench labels RESULT.json` writes them): how
//! the corrected share's interval narrows as a person labels more texts, drawn at random or the
//! judge's least sure first (`readout::analysis::labels_curve`). The Results page lists them
//! apart from the result files and draws their curves; the shell reads the file and checks its
//! schema, nothing more.

use readout::analysis::labels_curve::LabelsCurve;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tauri::State;
use ts_rs::TS;

use super::{AppError, Res};
use crate::state::AppState;

/// The schema name `readout bench labels` writes.
pub const SCHEMA: &str = "readout.bench.labels-curve";
/// The version of it this app reads.
pub const SCHEMA_VERSION: u32 = 1;

/// The result file a curve was measured on.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct CurveSource {
    /// The result file's name and sha256.
    pub file: Option<String>,
    pub sha256: String,
    pub model: String,
    pub eval_set: String,
    /// Its option order (a debias mode's name).
    pub debias: String,
    pub shots: usize,
}

/// A labels-curve file, as `readout bench labels` writes it.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct LabelsCurveFile {
    pub schema: String,
    pub schema_version: u32,
    /// `MEASURED`: the project's label for a figure a file of its own names.
    pub label: String,
    pub created: String,
    /// The command that wrote it.
    pub command: String,
    /// The program's version.
    pub version: String,
    /// What was measured, in a sentence.
    pub what: String,
    pub source: CurveSource,
    pub curve: LabelsCurve,
}

/// One labels-curve file as the Results page lists it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LabelsCurveEntry {
    pub file: PathBuf,
    pub eval_set: String,
    pub model: String,
    /// The option whose share was estimated.
    pub option: String,
    pub texts: usize,
    /// When it was measured (RFC 3339, UTC).
    pub created: String,
}

impl LabelsCurveFile {
    /// Read and check a labels-curve file.
    pub fn load(path: &Path) -> Res<LabelsCurveFile> {
        let name = crate::error::file_name(path);
        // The library's kind of message, under Details; the window says it plainly.
        let refused =
            |message: String, details: String| AppError::new(message).details(format!("{}: {details}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| AppError::io(path, &e))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            refused(
                format!("{name} is cut short or damaged: measure the curve again."),
                format!("not a complete JSON document ({e}); write it again with `readout bench labels`"),
            )
        })?;
        if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
            return Err(refused(
                format!("{name} is not a labels-curve file."),
                format!("not a labels-curve file (`schema` is not \"{SCHEMA}\"); `readout bench labels RESULT.json` writes one"),
            ));
        }
        let version = v.get("schema_version").and_then(|s| s.as_u64()).unwrap_or(0);
        if version != u64::from(SCHEMA_VERSION) {
            return Err(refused(
                format!("{name} was written by another version of Readout: measure the curve again."),
                format!("field `schema_version`: version {version} of the labels-curve file; this app reads version {SCHEMA_VERSION}: measure it again with `readout bench labels`"),
            ));
        }
        serde_json::from_value(v).map_err(|e| {
            refused(
                format!("{name} does not match the labels-curve format."),
                format!("does not match the labels-curve format ({e})"),
            )
        })
    }
}

/// Whether `path` looks like a labels-curve file (a `.json` naming the schema), without parsing it.
fn is_curve(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "json")
        && std::fs::read_to_string(path).map(|t| t.contains(&format!("\"{SCHEMA}\""))).unwrap_or(false)
}

/// The labels-curve files in the results folder (or `dir`), by file name; one that cannot be read
/// is refused with its reason, as the result files are.
#[tauri::command]
pub fn list_labels_curves(state: State<'_, AppState>, dir: Option<PathBuf>) -> Res<Vec<LabelsCurveEntry>> {
    let dir = dir.unwrap_or_else(|| state.settings().bench_dir);
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| AppError::io(&dir, &e))?.flatten() {
        let p = e.path();
        if !is_curve(&p) {
            continue;
        }
        let f = LabelsCurveFile::load(&p)?;
        out.push(LabelsCurveEntry {
            eval_set: f.source.eval_set,
            model: f.source.model,
            option: f.curve.option,
            texts: f.curve.texts,
            created: f.created,
            file: p,
        });
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(out)
}

#[tauri::command]
pub fn load_labels_curve(file: PathBuf) -> Res<LabelsCurveFile> {
    LabelsCurveFile::load(&file)
}
