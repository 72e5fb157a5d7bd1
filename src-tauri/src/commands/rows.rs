//! The texts of a run's rows. A result file names its rows by id (an item id, often a
//! hash, and the criterion) and does not repeat the texts; a person reading "the rows that changed
//! with the option order" needs the text. The eval set the run read is found again (the path it
//! recorded, the eval-set folder beside the results folder, or the bundled set) and used only
//! when its checksum is the one recorded, so a text shown is the text that was scored.

use crate::state::AppState;
use readout::formats::evalset::{EvalSet, LoadOptions};
use readout::formats::results::EvalSetRecord;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tauri::State;
use ts_rs::TS;

/// Row id → the text it judged; empty with `missing` when the eval set was not found unchanged.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RowTexts {
    pub texts: BTreeMap<String, String>,
    /// Why there are no texts, in words (the eval set is not on this computer, or has changed).
    pub missing: Option<String>,
}

/// The places the run's eval set may be, in order.
fn candidates(recorded: &Path, name: &str, bench: &Path, bundled: Option<PathBuf>) -> Vec<PathBuf> {
    let mut out = vec![recorded.to_path_buf()];
    if let (Some(dir), Some(file)) = (bench.parent(), recorded.file_name()) {
        out.push(dir.join("evalsets").join(file));
    }
    if name == "authored144" {
        out.extend(bundled);
    }
    out
}

/// The first candidate whose checksum is the recorded one.
fn find_set(paths: &[PathBuf], sha256: &str) -> Option<EvalSet> {
    paths
        .iter()
        .filter(|p| p.is_file())
        .find_map(|p| EvalSet::load(p, &LoadOptions::default()).ok().filter(|s| s.sha256 == sha256))
}

/// The texts of the rows of a run of `eval_set` (a result file's record of the set it read; the
/// run need not be saved).
#[tauri::command]
pub fn row_texts(state: State<'_, AppState>, eval_set: EvalSetRecord) -> RowTexts {
    let r = eval_set;
    let bundled = super::bundled_set(&state.data_dir).ok();
    let paths = candidates(Path::new(&r.path), &r.name, &state.settings().bench_dir, bundled);
    match find_set(&paths, &r.sha256) {
        Some(set) => RowTexts { texts: readout::pipeline::input::row_texts(&set), missing: None },
        None => RowTexts {
            texts: BTreeMap::new(),
            missing: Some(format!(
                "The texts are not shown: the eval set “{}” this run read is not on this computer as it was.",
                r.name
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_used_only_unchanged() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let line = r#"{"id":"a1","family":"f","group_id":"g","state":"The app crashes","question":"What is it about?","label":1,"options":[{"id":"billing","description":"Money"},{"id":"technical","description":"A fault"}]}"#;
        let p = dir.path().join("set.jsonl");
        std::fs::write(&p, format!("{line}\n")).expect("written");
        let set = EvalSet::load(&p, &LoadOptions::default()).expect("a set");
        let found = find_set(std::slice::from_ref(&p), &set.sha256).expect("found unchanged");
        assert_eq!(readout::pipeline::input::row_texts(&found).get("a1").map(String::as_str), Some("The app crashes"));
        std::fs::write(&p, format!("{line}\n{}\n", line.replace("a1", "a2"))).expect("changed");
        assert!(find_set(std::slice::from_ref(&p), &set.sha256).is_none(), "a changed set is not used");
        let c = candidates(
            Path::new("bench/evalsets/authored144.jsonl"),
            "authored144",
            Path::new("/x/bench/results"),
            Some(PathBuf::from("/d/a.jsonl")),
        );
        assert_eq!(
            c,
            vec![
                PathBuf::from("bench/evalsets/authored144.jsonl"),
                PathBuf::from("/x/bench/evalsets/authored144.jsonl"),
                PathBuf::from("/d/a.jsonl")
            ]
        );
    }
}
