//! What the Score page keeps for a person between launches, in the app's data folder: the rubrics
//! they saved to "My rubrics" (`rubrics/`, one rubric file each, as `readout score --rubric`
//! reads it), the files they opened and exported lately (`recent.json`), and the page as they
//! left it (`session.json`: the texts, the rubric, the settings and the model), put back when the
//! app starts again. Every file is written atomically; each command is a thin wrapper over a
//! function of a folder, so the tests need no window.

use crate::error::{file_name, AppError};
use crate::state::AppState;
use readout::formats::rubric::Rubric;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tauri::State;
use ts_rs::TS;

type Res<T> = Result<T, AppError>;

/// How many files of each kind the recent lists keep.
pub const RECENT_KEEP: usize = 5;

/// The largest texts file the page reads through the shell (bytes): larger ones are refused with
/// a plain message instead of freezing the window.
pub const TEXTS_FILE_LIMIT: u64 = 64 * 1024 * 1024;

/// A rubric in "My rubrics".
#[derive(Debug, Clone, Serialize, PartialEq, TS)]
pub struct RubricEntry {
    /// The rubric's own name.
    pub name: String,
    /// Its file in the app's `rubrics/` folder (open it with `load_rubric`).
    pub path: PathBuf,
    /// How many questions it asks.
    pub criteria: usize,
}

/// The files a person opened or exported lately, newest first, at most `RECENT_KEEP` of each.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, TS)]
#[serde(default)]
pub struct Recent {
    pub texts: Vec<PathBuf>,
    pub rubrics: Vec<PathBuf>,
    pub exports: Vec<PathBuf>,
}

/// Which recent list a file joins.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "lowercase")]
pub enum RecentKind {
    Texts,
    Rubrics,
    Exports,
}

impl Recent {
    fn list(&mut self, kind: RecentKind) -> &mut Vec<PathBuf> {
        match kind {
            RecentKind::Texts => &mut self.texts,
            RecentKind::Rubrics => &mut self.rubrics,
            RecentKind::Exports => &mut self.exports,
        }
    }

    /// `path` at the head of its list (moved there if it was already in it), the oldest dropped
    /// past `RECENT_KEEP`.
    pub fn add(&mut self, kind: RecentKind, path: PathBuf) {
        let list = self.list(kind);
        list.retain(|p| *p != path);
        list.insert(0, path);
        list.truncate(RECENT_KEEP);
    }
}

/// A text as the page holds it (kept in the session when its file has no path to read again).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, TS)]
#[ts(optional_fields)]
pub struct SessionText {
    pub id: Option<String>,
    pub text: String,
}

/// A texts file the page had open.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, TS)]
#[serde(rename_all = "camelCase", default)]
#[ts(optional_fields)]
pub struct SessionFile {
    /// The file's name, as the page shows it.
    pub name: String,
    /// Where it is, when a dialog gave its path: read again at the next start.
    pub path: Option<PathBuf>,
    /// The CSV columns chosen for the texts and their ids, when the file has no `text` column.
    pub column: Option<String>,
    pub id_column: Option<String>,
    /// The texts themselves, when there is no path to read them from again (a file dropped on
    /// the page, or picked through the browser's own file input).
    pub texts: Option<Vec<SessionText>>,
}

/// How fast a model scored, measured by the last scoring on it: what the Score page's cost line
/// estimates from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, TS)]
#[serde(rename_all = "camelCase", default)]
pub struct Speed {
    /// The model's path; empty for the default model.
    pub model: String,
    /// Wall seconds per prompt read (text × question × option order).
    pub seconds_per_prompt: f64,
}

/// The Score page as a person left it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, TS)]
#[serde(rename_all = "camelCase", default)]
#[ts(optional_fields)]
pub struct Session {
    /// The texts box, as typed.
    pub pasted: String,
    pub one_per_line: bool,
    /// The texts file open instead of the box, if any.
    pub texts_file: Option<SessionFile>,
    /// The rubric as it stood (a rubric file, perhaps unfinished), and where it came from.
    #[ts(type = "unknown")]
    pub rubric: Option<serde_json::Value>,
    pub rubric_from: String,
    /// The option order (a debias mode's name).
    pub debias: Option<String>,
    /// The two "no answer" fields, as typed (percentages; empty: off).
    pub abstain_below: String,
    pub abstain_mass: String,
    /// The model's path; empty for the default model.
    pub model: String,
    pub speed: Option<Speed>,
}

// ── Folder functions (what the commands do, on a given data folder) ──────────────────────────

/// A file name for a rubric called `name`: its letters, digits, `-`, `_` and `.`, the rest `-`.
pub fn rubric_file_name(name: &str) -> String {
    let stem: String =
        name.trim().chars().map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect();
    let stem = stem.trim_matches(['-', '.']);
    format!("{}.rubric.json", if stem.is_empty() { "rubric" } else { stem })
}

/// The rubrics in `dir`, by name; a file that is not a rubric is left out.
pub fn list_rubrics(dir: &Path) -> Res<Vec<RubricEntry>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(AppError::io(dir, &e)),
    };
    let mut out: Vec<RubricEntry> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".rubric.json"))
        .filter_map(|p| {
            let r = Rubric::load(&p).ok()?;
            Some(RubricEntry { name: r.name, criteria: r.criteria.len(), path: p })
        })
        .collect();
    out.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then(a.path.cmp(&b.path)));
    Ok(out)
}

/// Keep `rubric` in `dir` under its name (a rubric of the same name is replaced): checked by the
/// library's parser first, so only a rubric that scores is kept.
pub fn save_rubric_to(dir: &Path, rubric: &serde_json::Value) -> Res<RubricEntry> {
    let text = serde_json::to_string_pretty(rubric)?;
    let name = rubric.get("name").and_then(|n| n.as_str()).unwrap_or_default();
    let path = dir.join(rubric_file_name(name));
    let parsed = Rubric::parse(&text, &path)?;
    readout::atomic::write(&path, text.as_bytes())?;
    Ok(RubricEntry { name: parsed.name, criteria: parsed.criteria.len(), path })
}

/// Delete the rubric file `path`, which must be one of `dir`'s.
pub fn delete_rubric_in(dir: &Path, path: &Path) -> Res<()> {
    let inside = match (path.parent().map(std::fs::canonicalize), std::fs::canonicalize(dir)) {
        (Some(Ok(parent)), Ok(dir)) => parent == dir,
        _ => false,
    };
    if !inside || !path.to_string_lossy().ends_with(".rubric.json") {
        return Err(
            AppError::new("Only a rubric of My rubrics can be deleted here.").details(path.display().to_string())
        );
    }
    std::fs::remove_file(path).map_err(|e| AppError::io(path, &e))
}

/// A JSON file of the app's, or the default when there is none or it cannot be read (a broken
/// one is replaced at the next save).
fn read_json<T: serde::de::DeserializeOwned + Default>(path: &Path) -> T {
    std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Res<()> {
    let text = serde_json::to_string_pretty(value)?;
    Ok(readout::atomic::write(path, text.as_bytes())?)
}

/// The recent files kept in `path`.
pub fn read_recent(path: &Path) -> Recent {
    read_json(path)
}

/// Add `file` to the recent list of `kind` kept in `path`, and give the lists back.
pub fn add_recent(path: &Path, kind: RecentKind, file: PathBuf) -> Res<Recent> {
    let mut recent = read_recent(path);
    recent.add(kind, file);
    write_json(path, &recent)?;
    Ok(recent)
}

/// The session kept in `path`; none at a first start (or when the file cannot be read).
pub fn read_session(path: &Path) -> Option<Session> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

pub fn write_session(path: &Path, session: &Session) -> Res<()> {
    write_json(path, session)
}

/// A texts file's contents, for the page to read (CSV or JSON Lines, as `readout score --texts`):
/// a missing file is said so plainly (the path under Details).
pub fn read_texts_at(path: &Path) -> Res<String> {
    let name = file_name(path);
    let meta = std::fs::metadata(path).map_err(|e| AppError::io(path, &e))?;
    if meta.len() > TEXTS_FILE_LIMIT {
        return Err(AppError::new(format!("{name} is too large to open here; split it into smaller files."))
            .details(path.display().to_string()));
    }
    let bytes = std::fs::read(path).map_err(|e| AppError::io(path, &e))?;
    String::from_utf8(bytes).map_err(|_| {
        AppError::new(format!("{name} is not plain text: save it as UTF-8 text and open it again."))
            .details(path.display().to_string())
    })
}

/// Whether `path` may join the recent files: a path a dialog returned since the app started, or
/// one already in the lists.
pub fn may_remember(state: &AppState, path: &Path) -> bool {
    let known = read_recent(&state.recent_path());
    state.was_picked(path) || [&known.texts, &known.rubrics, &known.exports].iter().any(|l| l.iter().any(|p| p == path))
}

/// Whether the page may have the shell read texts at `path`: a path a dialog returned since the
/// app started, or one of the recent texts files.
pub fn may_read_texts(state: &AppState, path: &Path) -> bool {
    state.was_picked(path) || read_recent(&state.recent_path()).texts.iter().any(|p| p == path)
}

// ── Commands ─────────────────────────────────────────────────────────────────────────────

#[tauri::command]
pub fn rubric_library_list(state: State<'_, AppState>) -> Res<Vec<RubricEntry>> {
    list_rubrics(&state.rubrics_dir())
}

#[tauri::command]
pub fn rubric_library_save(state: State<'_, AppState>, rubric: serde_json::Value) -> Res<RubricEntry> {
    save_rubric_to(&state.rubrics_dir(), &rubric)
}

#[tauri::command]
pub fn rubric_library_delete(state: State<'_, AppState>, path: PathBuf) -> Res<()> {
    delete_rubric_in(&state.rubrics_dir(), &path)
}

#[tauri::command]
pub fn recent_list(state: State<'_, AppState>) -> Recent {
    read_recent(&state.recent_path())
}

/// Remember a file opened or exported. Only a path the person chose in a dialog (or one already
/// in the lists) joins them: the page cannot make the shell read files it names.
#[tauri::command]
pub fn recent_add(state: State<'_, AppState>, kind: RecentKind, path: PathBuf) -> Res<Recent> {
    if !may_remember(&state, &path) {
        return Err(
            AppError::new("Only a file you chose yourself joins the recent files.").details(path.display().to_string())
        );
    }
    add_recent(&state.recent_path(), kind, path)
}

/// The contents of a texts file: one chosen in a dialog since the app started, or one of the
/// recent texts files (the shell's own list of files the person chose; the last session's file
/// is the newest of them).
#[tauri::command]
pub fn read_texts_file(state: State<'_, AppState>, path: PathBuf) -> Res<String> {
    if !may_read_texts(&state, &path) {
        return Err(AppError::new("Open the texts with “Open a file…”.").details(path.display().to_string()));
    }
    read_texts_at(&path)
}

#[tauri::command]
pub fn session_load(state: State<'_, AppState>) -> Option<Session> {
    read_session(&state.session_path())
}

#[tauri::command]
pub fn session_save(state: State<'_, AppState>, session: Session) -> Res<()> {
    write_session(&state.session_path(), &session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rubric(name: &str) -> serde_json::Value {
        json!({"name": name, "questions": {
            "tone": {"type": "choice", "instructions": "What is the tone?", "criteria": {"calm": "Calm", "angry": "Angry"}},
            "refund": {"type": "noul", "instructions": "Is a refund asked for?"}
        }})
    }

    #[test]
    fn rubrics_are_saved_listed_replaced_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("rubrics");
        assert_eq!(list_rubrics(&lib).unwrap(), vec![], "no folder yet: none");
        let a = save_rubric_to(&lib, &rubric("Support tickets")).unwrap();
        assert_eq!(a.path, lib.join("Support-tickets.rubric.json"));
        assert_eq!((a.name.as_str(), a.criteria), ("Support tickets", 2));
        save_rubric_to(&lib, &rubric("angry")).unwrap();
        // The same name again replaces the file.
        save_rubric_to(&lib, &rubric("Support tickets")).unwrap();
        let names: Vec<_> = list_rubrics(&lib).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["angry", "Support tickets"]);
        // What does not score is not kept.
        let bad = json!({"name": "bad", "questions": {"q": {"type": "choice", "instructions": "?", "criteria": {"only": "one"}}}});
        assert!(save_rubric_to(&lib, &bad).is_err());
        assert!(!lib.join("bad.rubric.json").exists());
        // A stray file in the folder is left out of the list.
        std::fs::write(lib.join("junk.rubric.json"), "{").unwrap();
        assert_eq!(list_rubrics(&lib).unwrap().len(), 2);
        delete_rubric_in(&lib, &a.path).unwrap();
        assert_eq!(list_rubrics(&lib).unwrap().iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["angry"]);
        // Only files of the folder can be deleted.
        let outside = dir.path().join("other.rubric.json");
        std::fs::write(&outside, rubric("x").to_string()).unwrap();
        assert!(delete_rubric_in(&lib, &outside).is_err());
        assert!(outside.exists());
        assert!(delete_rubric_in(&lib, &lib.join("..").join("other.rubric.json")).is_err());
    }

    #[test]
    fn rubric_file_names_keep_letters_and_digits() {
        assert_eq!(rubric_file_name("support-ticket"), "support-ticket.rubric.json");
        assert_eq!(rubric_file_name(" a/b c "), "a-b-c.rubric.json");
        assert_eq!(rubric_file_name("../.."), "rubric.rubric.json");
        assert_eq!(rubric_file_name(""), "rubric.rubric.json");
    }

    #[test]
    fn recent_files_keep_the_last_five_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recent.json");
        for i in 1..=6 {
            add_recent(&path, RecentKind::Texts, PathBuf::from(format!("/t/{i}.csv"))).unwrap();
        }
        // Opened again: to the head, not twice.
        let r = add_recent(&path, RecentKind::Texts, PathBuf::from("/t/3.csv")).unwrap();
        let names: Vec<_> = r.texts.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(names, ["/t/3.csv", "/t/6.csv", "/t/5.csv", "/t/4.csv", "/t/2.csv"]);
        add_recent(&path, RecentKind::Exports, PathBuf::from("/e/a.csv")).unwrap();
        let back = read_recent(&path);
        assert_eq!(back.texts, r.texts);
        assert_eq!(back.exports, [PathBuf::from("/e/a.csv")]);
        assert!(back.rubrics.is_empty());
    }

    #[test]
    fn only_files_a_person_chose_are_remembered_and_read() {
        let dir = tempfile::tempdir().unwrap();
        let state = AppState::new(dir.path().join("settings.json"), dir.path().join("data"));
        let chosen = dir.path().join("tickets.csv");
        let other = PathBuf::from("/etc/passwd");
        assert!(!may_remember(&state, &chosen) && !may_read_texts(&state, &chosen));
        // Chosen in a dialog: it may join the recent files, and be read.
        state.allow(&chosen);
        assert!(may_remember(&state, &chosen) && may_read_texts(&state, &chosen));
        add_recent(&state.recent_path(), RecentKind::Texts, chosen.clone()).unwrap();
        // After a restart (nothing picked yet), the recent texts file may still be read; no other.
        let restarted = AppState::new(dir.path().join("settings.json"), dir.path().join("data"));
        assert!(may_read_texts(&restarted, &chosen) && may_remember(&restarted, &chosen));
        assert!(!may_read_texts(&restarted, &other) && !may_remember(&restarted, &other));
        // A rubric or an export in the lists is not a texts file to read.
        add_recent(&restarted.recent_path(), RecentKind::Exports, other.clone()).unwrap();
        assert!(!may_read_texts(&restarted, &other));
    }

    #[test]
    fn a_session_round_trips_and_a_vanished_file_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        assert_eq!(read_session(&path), None, "a first start has none");
        let texts = dir.path().join("tickets.csv");
        std::fs::write(&texts, "message,ticket_id\nhello,1\n").unwrap();
        let s = Session {
            pasted: "one\ntwo".into(),
            one_per_line: true,
            texts_file: Some(SessionFile {
                name: "tickets.csv".into(),
                path: Some(texts.clone()),
                column: Some("message".into()),
                id_column: Some("ticket_id".into()),
                texts: None,
            }),
            rubric: Some(rubric("Support tickets")),
            rubric_from: "the bundled example".into(),
            debias: Some("cyclic".into()),
            abstain_below: "50".into(),
            abstain_mass: String::new(),
            model: String::new(),
            speed: Some(Speed { model: String::new(), seconds_per_prompt: 0.25 }),
        };
        write_session(&path, &s).unwrap();
        assert_eq!(read_session(&path), Some(s.clone()));
        // Fields the file lacks take their defaults (a session from an older app).
        std::fs::write(&path, r#"{"pasted": "x"}"#).unwrap();
        assert_eq!(read_session(&path), Some(Session { pasted: "x".into(), ..Session::default() }));
        // The texts file read again; gone, it says so plainly.
        assert_eq!(read_texts_at(&texts).unwrap(), "message,ticket_id\nhello,1\n");
        std::fs::remove_file(&texts).unwrap();
        let e = read_texts_at(&texts).unwrap_err();
        assert_eq!(e.message, "tickets.csv is not there: it may have been moved, renamed or deleted.");
        assert!(e.details.unwrap_or_default().contains(&texts.display().to_string()));
    }
}
