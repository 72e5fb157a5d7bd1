//! Scorings kept for the Results page. Every scoring the Score page finishes (or stops) is
//! written to the results folder as a scored file (`readout::jobs::scored`), so a person can
//! find it again beside their evaluations: which texts, which rubric, which model, how, and the
//! answers.

use crate::state::AppState;
use readout::debias::DebiasMode;
use readout::engine::Engine;
use readout::formats::results::Status;
use readout::formats::texts::Text;
use readout::jobs::score::TextResult;
use readout::jobs::scored::ScoredFile;
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use tauri::State;
use ts_rs::TS;

use super::{msg, Res};

/// Write the scoring into `folder` (created if missing); a scoring that cannot be written still
/// gives its answers on the page, so the failure is only reported on standard error.
pub fn keep(
    folder: &Path,
    engine: &Engine,
    rubric: serde_json::Value,
    config: &readout::config::RunConfig,
    texts: &[Text],
    results: &[TextResult],
) {
    if results.is_empty() {
        return;
    }
    let write = || -> readout::Result<PathBuf> {
        let model = readout::jobs::run::model_record(engine)?;
        let file = ScoredFile::new(model, rubric, config.clone(), texts, results.to_vec());
        std::fs::create_dir_all(folder).map_err(|e| readout::Error::io(folder, e))?;
        let path = folder.join(file.file_name());
        file.write(&path)?;
        Ok(path)
    };
    if let Err(e) = write() {
        eprintln!("readout-app: the scoring could not be kept in {}: {e}", folder.display());
    }
}

/// A kept scoring as the Results page lists it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ScoredEntry {
    pub file: PathBuf,
    /// When the scoring ended (RFC 3339 UTC).
    pub created: String,
    /// The rubric's name.
    pub rubric: String,
    /// The model's name, as the Models page names it.
    pub model: String,
    pub debias: DebiasMode,
    /// Texts given, and texts answered (fewer when the scoring was stopped).
    pub texts: usize,
    pub answered: usize,
    pub status: Status,
}

/// The scored files of the results folder (or `dir`), newest first. A file that cannot be read
/// is left out: the Results page lists what it can open.
#[tauri::command]
pub fn list_scored(state: State<'_, AppState>, dir: Option<PathBuf>) -> Res<Vec<ScoredEntry>> {
    scored_in(&dir.unwrap_or_else(|| state.settings().bench_dir))
}

/// The scored files of `dir`, newest first; a missing folder has none.
fn scored_in(dir: &Path) -> Res<Vec<ScoredEntry>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(msg(readout::Error::io(dir, e))),
    };
    let mut out: Vec<ScoredEntry> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".json") && head_names_scored(p))
        .filter_map(|p| ScoredFile::load(&p).ok().map(|f| entry(p, &f)))
        .collect();
    out.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.file.cmp(&a.file)));
    Ok(out)
}

fn entry(file: PathBuf, f: &ScoredFile) -> ScoredEntry {
    ScoredEntry {
        file,
        created: f.created.clone(),
        rubric: f.rubric_name(),
        model: f.model.display_name(),
        debias: f.config.debias,
        texts: f.texts.len(),
        answered: f.results.len(),
        status: f.status,
    }
}

/// Whether the file's first bytes name the scored schema (so a folder of large result files is
/// not parsed in full to list it).
fn head_names_scored(p: &Path) -> bool {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(p).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    ScoredFile::looks_like(&head[..n])
}

/// A kept scoring, to show its answers.
#[tauri::command]
pub fn load_scored(file: PathBuf) -> Res<ScoredFile> {
    ScoredFile::load(&file).map_err(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_scoring_is_listed_and_other_files_are_not() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let model = serde_json::from_value(serde_json::json!({
            "name": "SmolLM2 135M Instruct", "file": "smollm2-135m-instruct.q4_1.gguf", "sha256": "ab",
            "architecture": "llama", "quantisation": "Q4_1", "parameters": 135
        }))
        .expect("a model record");
        let texts =
            vec![Text { id: None, text: "The app crashes".into() }, Text { id: None, text: "Refund please".into() }];
        let results = vec![TextResult { index: 0, id: None, criteria: vec![], truncated_tokens: None }];
        let config = readout::config::RunConfig::builder().debias(DebiasMode::Cyclic).build().expect("a configuration");
        let f = ScoredFile::new(model, serde_json::json!({"name": "Support tickets"}), config, &texts, results);
        f.write(&dir.path().join(f.file_name())).expect("written");
        std::fs::write(dir.path().join("other.json"), br#"{"schema":"readout.result"}"#).expect("written");
        std::fs::write(dir.path().join("broken.scored.json"), br#"{"schema":"readout.scored", "#).expect("written");
        let listed = scored_in(dir.path()).expect("listed");
        assert!(scored_in(&dir.path().join("absent")).expect("no folder").is_empty());
        assert_eq!(listed.len(), 1, "{listed:?}");
        let e = &listed[0];
        assert_eq!(
            (e.rubric.as_str(), e.model.as_str(), e.texts, e.answered),
            ("Support tickets", "SmolLM2 135M Instruct (Q4_1)", 2, 1)
        );
        assert_eq!((e.debias, e.status), (DebiasMode::Cyclic, Status::Partial));
    }
}
