//! The commands the web UI calls. Each parses its arguments, calls the library and returns the
//! library's own types (the JSON the CLI prints and writes); errors are `AppError`s: a plain
//! sentence, a fix the window offers as a button, and the library's message under Details.

pub use crate::error::{AppError, Fix};
use crate::state::{AppState, Settings};
use readout::analysis::derive::{derive_file, Derivation, DeriveOptions};
use readout::config::{Mode, RunConfig};
use readout::debias::DebiasMode;
use readout::engine::ModelConfig;
use readout::formats::evalset::{EvalSet, LoadOptions};
use readout::formats::results::{default_name, ResultFile, Status};
use readout::formats::rubric::Rubric;
use readout::jobs::answers::QuestionSummary;
use readout::jobs::request::{Policy, ScoreJob, ScoreRequest};
use readout::jobs::run::{Control, Progress, RunInput};
use readout::jobs::score::{score_texts as score, Text, TextResult};
use readout::metrics::Comparison;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use tauri::ipc::Channel;
use tauri::State;
use ts_rs::TS;

pub mod calibrate;
pub mod curves;
pub mod library;
pub mod review;
pub mod rows;
pub mod scored;

/// What every command gives back: its answer, or an error in the app's words.
pub type Res<T> = Result<T, AppError>;

/// An error as the window shows it (`AppError`'s `From`s: the library's errors worded for a
/// person, anything internal as "something went wrong" with its text under Details).
pub fn msg(e: impl Into<AppError>) -> AppError {
    e.into()
}

/// Every command, for `invoke_handler`.
pub fn handler<R: tauri::Runtime>() -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
    tauri::generate_handler![
        score_texts,
        example,
        load_rubric,
        save_rubric,
        list_eval_sets,
        run_eval,
        run_jury,
        pairwise_standings,
        cancel_run,
        save_result,
        list_results,
        load_result,
        compare_results,
        list_models,
        add_model,
        derive_model,
        get_settings,
        set_settings,
        set_chat_template,
        chat_template_names,
        catalogue,
        pull_model,
        cancel_pull,
        pick_file,
        write_text_file,
        answers_csv,
        answers_summary,
        summary_csv,
        answers_sheet,
        judge_record,
        library::rubric_library_list,
        library::rubric_library_save,
        library::rubric_library_delete,
        library::recent_list,
        library::recent_add,
        library::read_texts_file,
        library::session_load,
        library::session_save,
        review::review_start,
        review::review_list,
        review::review_open,
        review::review_open_answers,
        review::review_label,
        review::review_undo,
        review::review_report,
        review::review_fit_state,
        review::review_fit,
        calibrate::calibrate_result,
        curves::list_labels_curves,
        curves::load_labels_curve,
        rows::row_texts,
        scored::list_scored,
        scored::load_scored
    ]
}

/// The bundled example: the support-ticket rubric and three texts to score with it, so a person
/// can try the app before writing anything.
#[derive(Debug, Serialize, TS)]
pub struct Example {
    /// A rubric file (docs/rubric.md), as `load_rubric` gives one.
    #[ts(type = "unknown")]
    pub rubric: serde_json::Value,
    pub texts: Vec<String>,
}

#[tauri::command]
pub fn example() -> Res<Example> {
    let rubric = serde_json::from_str(include_str!("../../examples/support-ticket.rubric.json")).map_err(msg)?;
    let texts = include_str!("../../examples/support-tickets.txt").lines().map(str::to_string).collect();
    Ok(Example { rubric, texts })
}

/// A text from the UI.
#[derive(Debug, Deserialize, TS)]
#[ts(optional_fields)]
pub struct TextIn {
    pub id: Option<String>,
    pub text: String,
}

/// The Score page's choices beyond the option order and the model: when to give no answer
/// (`readout score --abstain-below`, `--abstain-letter-mass`) and a fitted temperature
/// (`--calibration`). Absent fields: no abstaining, no temperature.
#[derive(Debug, Default, Deserialize, TS)]
#[ts(optional_fields)]
#[serde(rename_all = "camelCase")]
pub struct ScoreOptions {
    /// No answer when the top probability is below this (0 to 1).
    pub abstain_below: Option<f64>,
    /// No answer when the letters' share of the model's next-token distribution is below this
    /// (0 to 1): none of the options fits.
    pub abstain_letter_mass: Option<f64>,
    /// A calibration file (`readout calibrate`), as `pick_file` gave it.
    pub calibration: Option<PathBuf>,
    /// Cut a text too long for the model from the middle (its head and tail kept) instead of
    /// refusing it (`--truncate-middle`).
    pub truncate_middle: Option<bool>,
    /// A jury: its judges' models (two or more; an empty path is the default model), each read
    /// with the chat template the settings name for it, one after another, their probabilities
    /// averaged (`readout score --model A --model B`). The `model` argument is then not read.
    pub judges: Option<Vec<PathBuf>>,
    /// With judges: no answer where they do not all choose the same option.
    pub abstain_on_disagreement: Option<bool>,
}

/// A jury's judges as a score request takes them: each model (the default one for an empty
/// path) with the chat template the settings name for it.
fn judges_request(state: &AppState, judges: &[PathBuf]) -> serde_json::Value {
    let templates = state.settings().chat_templates;
    judges
        .iter()
        .map(|m| {
            let model = if m.as_os_str().is_empty() { state.default_model() } else { m.clone() };
            match templates.get(&model) {
                Some(t) => serde_json::json!({ "model": model, "chat_template": t }),
                None => serde_json::json!({ "model": model }),
            }
        })
        .collect::<Vec<_>>()
        .into()
}

#[tauri::command]
pub async fn score_texts<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    rubric: serde_json::Value,
    texts: Vec<TextIn>,
    debias: Option<String>,
    model: Option<PathBuf>,
    options: Option<ScoreOptions>,
    on_progress: Channel<ScoreProgress>,
) -> Res<Vec<TextResult>> {
    use tauri::Manager;
    let state = app.state::<AppState>();
    if texts.iter().all(|t| t.text.trim().is_empty()) {
        return Err("There is no text to score: paste one or open a file.".into());
    }
    let options = options.unwrap_or_default();
    let kept = rubric.clone();
    // The one request every shell builds; its validation is the library's.
    let request = ScoreRequest {
        rubric: Some(rubric),
        texts: texts.into_iter().map(|t| Text { id: t.id, text: t.text }.into()).collect(),
        debias,
        abstain_below: options.abstain_below,
        abstain_letter_mass: options.abstain_letter_mass,
        calibration: options.calibration,
        truncate_middle: options.truncate_middle.unwrap_or(false),
        judges: options.judges.as_deref().filter(|j| j.len() > 1).map(|j| judges_request(&state, j)),
        abstain_on_disagreement: options.abstain_on_disagreement.unwrap_or(false),
        ..ScoreRequest::default()
    };
    let cal = request.calibration.clone();
    let ScoreJob { rubric, texts, config, panel } =
        request.validate(Policy::LOCAL).map_err(|e| other_order(e, cal.as_deref()))?;
    let cancel = state.cancel.clone();
    cancel.store(false, Ordering::SeqCst);
    if let Some(panel) = panel {
        let keys = panel.judges.iter().map(|j| state.load_options(j.model.clone())).collect::<Res<Vec<_>>>()?;
        let n = panel.judges.len();
        let app = app.clone();
        return tauri::async_runtime::spawn_blocking(move || {
            let state = app.state::<AppState>();
            let mut load = state.judge_loader(keys);
            let mut on_text = |judge: usize, _: &TextResult, done: usize, total: usize| {
                let _ = on_progress.send(ScoreProgress { done: judge * total + done, total: total * n });
                !cancel.load(Ordering::SeqCst)
            };
            let scored = readout::jobs::jury::score_panel(&panel, &rubric, &texts, &config, &mut load, &mut on_text)
                .map_err(msg)?;
            Ok(scored.results)
        })
        .await
        .map_err(msg)?;
    }
    let engine = state.engine(model.as_deref())?;
    let folder = state.settings().bench_dir;
    // Stopped (`cancel_run`): the texts scored so far come back, fewer than were sent. Either way
    // the scoring is kept in the results folder, for the Results page.
    tauri::async_runtime::spawn_blocking(move || {
        let results = score(&engine, &rubric, &texts, &config, &Default::default(), &mut |_, done, total| {
            let _ = on_progress.send(ScoreProgress { done, total });
            !cancel.load(Ordering::SeqCst)
        })
        .map_err(msg)?;
        scored::keep(&folder, &engine, kept, &config, &texts, &results);
        Ok(results)
    })
    .await
    .map_err(msg)?
}

/// A temperature fitted with another option order, in the app's words (the library's names the
/// CLI's `--debias`); any other error as it is.
fn other_order(e: readout::Error, calibration: Option<&Path>) -> AppError {
    let fitted = calibration.and_then(|p| readout::formats::calibration::CalibrationFile::load(p).ok()).map(|(_, c)| c);
    match (&e, fitted) {
        (readout::Error::Config(text), Some(c)) if text.contains("was fitted on a run with") => AppError::new(format!(
            "This temperature was fitted with the option order “{}”: choose that order, or a temperature fitted with this one.",
            c.debias
        ))
        .details(text.clone()),
        _ => e.into(),
    }
}

/// The temperature of a calibration file, as the configuration takes it (the CLI's
/// `--calibration`); the library checks it against the job's debias mode and model.
fn calibration(path: Option<&Path>) -> Res<Option<readout::formats::calibration::Calibration>> {
    path.map(|p| readout::formats::calibration::CalibrationFile::load(p).map(|(_, c)| c).map_err(msg)).transpose()
}

/// Texts scored so far, sent after each one.
#[derive(Debug, Clone, Copy, Serialize, TS)]
pub struct ScoreProgress {
    pub done: usize,
    pub total: usize,
}

/// The Score page's Export CSV: the library's one table of scored answers
/// (`readout::jobs::answers`), the same columns `readout score --csv` prints.
#[tauri::command]
pub fn answers_csv(texts: Vec<TextIn>, results: Vec<TextResult>) -> String {
    let texts: Vec<Text> = texts.into_iter().map(|t| Text { id: t.id, text: t.text }).collect();
    readout::jobs::answers::to_csv(&texts, &results)
}

/// The Score page's summary per question: how many texts got each answer, and how many answers
/// are flagged (`readout::jobs::answers::summary`).
#[tauri::command]
pub fn answers_summary(results: Vec<TextResult>) -> Vec<QuestionSummary> {
    readout::jobs::answers::summary(&results)
}

/// The Score page's Export summary: the summary per question as a table for a spreadsheet.
#[tauri::command]
pub fn summary_csv(results: Vec<TextResult>) -> String {
    readout::jobs::answers::summary_csv(&readout::jobs::answers::summary(&results))
}

/// The Score page's Export for spreadsheets: one row per text, the answers in words
/// (`readout::jobs::answers::to_sheet_csv`).
#[tauri::command]
pub fn answers_sheet(texts: Vec<TextIn>, results: Vec<TextResult>) -> String {
    let texts: Vec<Text> = texts.into_iter().map(|t| Text { id: t.id, text: t.text }).collect();
    readout::jobs::answers::to_sheet_csv(&texts, &results)
}

/// How often a model was right the last time it was measured: its newest complete run in the
/// results folder (a readout run before a generate one, as scoring reads the letters), for the
/// Score page's verdict on its answers.
#[derive(Debug, Serialize, TS)]
pub struct JudgeRecord {
    /// The model's name, as the Models page names it.
    pub model: String,
    /// `mean_family_balanced_accuracy` of that run.
    pub accuracy: f64,
    /// The same figure for guessing (`readout::metrics::Summary::chance`).
    pub chance: Option<f64>,
    /// The eval set's name (`authored144` is the bundled one).
    pub eval_set: String,
    pub rows: usize,
    pub debias: DebiasMode,
    /// When the run was made (RFC 3339).
    pub created: String,
    pub file: PathBuf,
}

/// The newest complete run of `model` (the default model when none) in the results folder, or
/// null when it was never measured. Runs are matched by the model's file name; the folder is read
/// off the window's thread.
#[tauri::command]
pub async fn judge_record(state: State<'_, AppState>, model: Option<PathBuf>) -> Res<Option<JudgeRecord>> {
    let path = model.unwrap_or_else(|| state.default_model());
    let dir = state.settings().bench_dir;
    tauri::async_runtime::spawn_blocking(move || newest_run(&dir, &path)).await.map_err(msg)
}

fn newest_run(dir: &Path, model: &Path) -> Option<JudgeRecord> {
    let name = model.file_name()?.to_string_lossy().into_owned();
    let entries = std::fs::read_dir(dir).ok()?;
    let mut best: Option<(bool, String, JudgeRecord)> = None;
    for p in entries.flatten().map(|e| e.path()) {
        let is_candidate = p.extension().is_some_and(|x| x == "json")
            && std::fs::read_to_string(&p).is_ok_and(|t| t.contains("\"readout.result\"") && t.contains(&name));
        if !is_candidate {
            continue;
        }
        // A file that cannot be read is the Results page's to report; here it is no record.
        let Ok(r) = ResultFile::load(&p) else { continue };
        // A pairwise run measures another question (which of two responses is better), not the
        // rubric answers the verdict speaks of.
        if readout::analysis::pairwise::is_pairwise(&r) {
            continue;
        }
        let Some(m) = r.metrics.as_ref().filter(|_| r.status == Status::Complete && r.model.file == name) else {
            continue;
        };
        let key = (r.config.mode == Mode::Readout, r.created.clone());
        if best.as_ref().is_some_and(|(readout, created, _)| (*readout, created.clone()) >= key) {
            continue;
        }
        let record = JudgeRecord {
            model: r.model.display_name(),
            accuracy: m.mean_family_balanced_accuracy,
            chance: m.chance,
            eval_set: r.eval_set.name.clone(),
            rows: r.rows.len(),
            debias: r.config.debias,
            created: r.created.clone(),
            file: p,
        };
        best = Some((key.0, key.1, record));
    }
    best.map(|(_, _, r)| r)
}

#[tauri::command]
pub fn load_rubric(path: PathBuf) -> Res<serde_json::Value> {
    Rubric::load(&path).map_err(msg)?;
    let text = std::fs::read_to_string(&path).map_err(|e| AppError::io(&path, &e))?;
    serde_json::from_str(&text).map_err(|e| {
        AppError::new(format!("{} is not a rubric file.", crate::error::file_name(&path)))
            .details(format!("{}: {e}", path.display()))
    })
}

#[tauri::command]
pub fn save_rubric(state: State<'_, AppState>, path: PathBuf, rubric: serde_json::Value) -> Res<()> {
    state.check_writable(&path)?;
    Rubric::parse(&rubric.to_string(), &path).map_err(msg)?;
    let text = serde_json::to_string_pretty(&rubric).map_err(msg)?;
    std::fs::write(&path, text).map_err(|e| AppError::io(&path, &e))
}

/// An eval set the app offers. A file in the eval-set folder that cannot be read is listed too,
/// with the library's reason, so that the window can say what is wrong with it instead of
/// leaving it out.
#[derive(Debug, Serialize, TS)]
pub struct EvalSetEntry {
    pub name: String,
    pub path: PathBuf,
    /// Rows a run scores (item × criterion); 0 when the set cannot be read.
    pub rows: usize,
    /// Why the set cannot be run as it is; absent for a good set.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub error: Option<SetProblem>,
}

/// Why an eval set cannot be run: what `run_eval` would say (a plain message, the fix, the
/// library's text under Details), and the line and field on their own for the window to show.
#[derive(Debug, Serialize, TS)]
pub struct SetProblem {
    pub message: String,
    pub fix: Option<Fix>,
    pub details: Option<String>,
    pub line: Option<usize>,
    pub field: Option<String>,
}

impl SetProblem {
    fn of(e: readout::Error) -> SetProblem {
        let (line, field) = match &e {
            readout::Error::BadInput { line, field, .. } => (Some(*line), Some(field.clone())),
            _ => (None, None),
        };
        let fix = line.map(|_| Fix::SkipBadLines);
        let AppError { message, details, .. } = e.into();
        SetProblem { message, fix, details, line, field }
    }
}

/// authored144 ships inside the app, so an installed app can run it without a checkout.
const BUNDLED_SET: (&str, &str) = ("authored144.jsonl", include_str!("../../bench/evalsets/authored144.jsonl"));

/// The bundled eval set as a file in the app's data folder (written when missing or changed), so
/// a result file can name it and its hash like any other set. Two callers at once are safe: each
/// writes its own temporary file and renames it into place.
fn bundled_set(data_dir: &Path) -> readout::Result<PathBuf> {
    let path = data_dir.join("evalsets").join(BUNDLED_SET.0);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(BUNDLED_SET.1) {
        readout::atomic::write(&path, BUNDLED_SET.1.as_bytes())?;
    }
    Ok(path)
}

/// The eval sets beside the bench folder (`../evalsets/*.jsonl`), then the bundled authored144
/// when that folder does not have it. A set that cannot be read is listed with its error.
#[tauri::command]
pub fn list_eval_sets(state: State<'_, AppState>) -> Res<Vec<EvalSetEntry>> {
    let bench = state.settings().bench_dir;
    let dir = bench.parent().map(|p| p.join("evalsets")).unwrap_or_else(|| PathBuf::from("bench/evalsets"));
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
        Err(e) => return Err(AppError::io(&dir, &e)),
    };
    files.retain(|p| p.extension().map(|x| x == "jsonl").unwrap_or(false));
    if !files.iter().any(|p| p.file_name().map(|n| n == BUNDLED_SET.0).unwrap_or(false)) {
        match bundled_set(&state.data_dir) {
            Ok(p) => files.push(p),
            // Listed with its error, so the window says why the bundled set cannot be run.
            Err(e) => out.push(EvalSetEntry {
                name: "authored144".into(),
                rows: 0,
                path: state.data_dir.join("evalsets").join(BUNDLED_SET.0),
                error: Some(SetProblem::of(e)),
            }),
        }
    }
    for p in files {
        let entry = match EvalSet::load(&p, &LoadOptions::default()) {
            Ok(set) => EvalSetEntry { name: set.name.clone(), rows: set.n_criteria(), path: p, error: None },
            Err(e) => EvalSetEntry {
                name: p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
                rows: 0,
                error: Some(SetProblem::of(e)),
                path: p,
            },
        };
        out.push(entry);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// What the Evaluate page asks for.
#[derive(Debug, Deserialize, TS)]
#[ts(optional_fields)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    pub eval_set: PathBuf,
    pub model: Option<PathBuf>,
    pub mode: Option<String>,
    pub shots: Option<usize>,
    pub debias: Option<String>,
    pub prune_head: Option<bool>,
    /// Prompt layout: default or terse.
    pub prompt: Option<String>,
    pub limit: Option<usize>,
    /// Speed levers, on by default; turned off only to measure what each one buys.
    pub prefix_tree: Option<bool>,
    pub batched_suffixes: Option<bool>,
    pub trim: Option<bool>,
    /// New tokens per forward pass (the library's default when absent).
    pub pass_tokens: Option<usize>,
    /// Score the good lines of a set with bad ones (the result file lists the lines left out).
    pub skip_bad: Option<bool>,
    /// Cut an item too long for the model from the middle (its head and tail kept) instead of
    /// refusing the set (`--truncate-middle`).
    pub truncate_middle: Option<bool>,
    /// Complete the partial file a stopped (or crashed) run of these same options left in the
    /// results folder, instead of starting over.
    pub resume: Option<bool>,
    /// A calibration file (`readout calibrate`), as `pick_file` gave it: its temperature is
    /// applied to every row and recorded in the result file.
    pub calibration: Option<PathBuf>,
    /// `run_jury`: the judges' models (two or more; an empty path is the default model).
    pub judges: Option<Vec<PathBuf>>,
    /// `run_jury`: equal (the default) or fitted weights (each judge's temperature and the
    /// pool's weights cross-fitted by group folds).
    pub jury_weights: Option<String>,
}

/// The Results page's standings of a pairwise run (`readout pairwise standings`): each system's
/// win rate and Bradley–Terry score by the judge and by gold; `None` for a run of another set.
#[tauri::command]
pub fn pairwise_standings(file: PathBuf) -> Res<Option<readout::analysis::pairwise::PairwiseReport>> {
    let result = ResultFile::load(&file).map_err(msg)?;
    if !readout::analysis::pairwise::is_pairwise(&result) {
        return Ok(None);
    }
    readout::analysis::pairwise::report(&result, &file, 1000, 0).map(Some).map_err(msg)
}

/// A jury's progress: which judge is running (from 0) of how many, and its rows.
#[derive(Debug, Clone, Serialize, TS)]
pub struct JuryProgress {
    pub judge: usize,
    pub judges: usize,
    pub progress: Progress,
}

/// Evaluate with a jury (`readout run --model A --model B`): each judge runs the eval set in
/// turn, alone in memory, its result file kept in the results folder; their runs are pooled into
/// a jury file there, which comes back.
#[tauri::command]
pub async fn run_jury<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    state: State<'_, AppState>,
    request: RunRequest,
    on_progress: Channel<JuryProgress>,
) -> Res<readout::formats::jury::JuryFile> {
    let models = request.judges.clone().unwrap_or_default();
    if models.len() < 2 {
        return Err("A jury needs at least two judges.".into());
    }
    if request.calibration.is_some() {
        return Err("A jury has no temperature of its own: run it without one.".into());
    }
    let set = request_set(&request)?;
    let weights: readout::formats::jury::JuryWeights = request.jury_weights.as_deref().unwrap_or("equal").parse()?;
    let b = request_config(&request)?;
    let config = b.build().map_err(msg)?;
    readout::jobs::run::check_input(&set, &config, request.limit).map_err(msg)?;
    let models: Vec<PathBuf> =
        models.into_iter().map(|m| if m.as_os_str().is_empty() { state.default_model() } else { m }).collect();
    let templates = state.settings().chat_templates;
    let specs = models
        .iter()
        .map(|m| readout::formats::judges::JudgeSpec {
            model: m.clone(),
            chat_template: templates.get(m).cloned(),
            calibration: None,
            weight: None,
        })
        .collect();
    let panel = readout::formats::judges::Panel::new(specs, false, Path::new("judges")).map_err(msg)?;
    let keys = models.iter().map(|m| state.load_options(m.clone())).collect::<Res<Vec<_>>>()?;
    let bench = state.settings().bench_dir;
    std::fs::create_dir_all(&bench).map_err(|e| AppError::io(&bench, &e))?;
    let out = readout::formats::results::unused_path(&bench.join(default_name(&set.name, "jury", &config)));
    let cancel = state.cancel.clone();
    cancel.store(false, Ordering::SeqCst);
    let limit = request.limit;
    let n = models.len();
    tauri::async_runtime::spawn_blocking(move || {
        use tauri::Manager;
        let state = app.state::<AppState>();
        let mut load = state.judge_loader(keys);
        let mut progress = |judge: usize, progress: Progress| {
            let _ = on_progress.send(JuryProgress { judge, judges: n, progress });
        };
        let mut keep = |i: usize, r: &ResultFile| -> readout::Result<PathBuf> {
            let path = readout::jobs::jury::judge_result_path(&out, i, &panel.judges[i].model);
            r.write(&path)?;
            Ok(path)
        };
        let input = readout::jobs::jury::PanelRunInput { panel: &panel, eval_set: &set, config, limit, family: None };
        let run = readout::jobs::jury::run_panel(input, &mut load, &mut progress, &cancel, &mut keep).map_err(msg)?;
        let opts = readout::analysis::jury::JuryOptions {
            weights,
            folds: readout::analysis::calibrate::FOLDS,
            seed: 0,
            resamples: 1000,
            bootstrap_seed: 0,
            abstain_on_disagreement: false,
        };
        let file = readout::analysis::jury::combine_weighted(&run.judges(), opts, None).map_err(msg)?;
        file.write(&out).map_err(msg)?;
        Ok(file)
    })
    .await
    .map_err(msg)?
}

/// The eval set a run request names, read whole (its `limit` picks the rows scored; the shots
/// come from all of them). A bad line offers the fix of running the others, unless they are
/// skipped already.
fn request_set(request: &RunRequest) -> Res<EvalSet> {
    if request.limit == Some(0) {
        return Err("A limit of 0 rows leaves nothing to run.".into());
    }
    let opts = LoadOptions { limit: None, skip_bad: request.skip_bad.unwrap_or(false), family: None };
    EvalSet::load(&request.eval_set, &opts).map_err(|e| match e {
        e @ readout::Error::BadInput { .. } if !opts.skip_bad => msg(e).fix(Fix::SkipBadLines),
        e => msg(e),
    })
}

/// The configuration a run request chooses (a single model's run or a jury's): mode, shots,
/// option order, long items, prompt layout and the levers.
fn request_config(request: &RunRequest) -> Res<readout::config::ConfigBuilder> {
    let mode: Mode = request.mode.as_deref().unwrap_or("readout").parse()?;
    let debias: DebiasMode = request.debias.as_deref().unwrap_or("none").parse()?;
    let mut b = RunConfig::builder().mode(mode).shots(request.shots.unwrap_or(0)).debias(debias);
    b = b.prune_head(request.prune_head.unwrap_or(false));
    if request.truncate_middle == Some(true) {
        b = b.truncate(readout::truncate::Truncate::Middle);
    }
    b = b.prefix_tree(request.prefix_tree.unwrap_or(true));
    b = b.batched_suffixes(request.batched_suffixes.unwrap_or(true));
    b = b.trim(request.trim.unwrap_or(true));
    if let Some(n) = request.pass_tokens {
        b = b.pass_tokens(n);
    }
    if let Some(p) = request.prompt.as_deref() {
        b = b.prompt_version(p.parse()?);
    }
    Ok(b)
}

#[tauri::command]
pub async fn run_eval(
    state: State<'_, AppState>,
    request: RunRequest,
    on_progress: Channel<Progress>,
) -> Res<ResultFile> {
    let set = request_set(&request)?;
    let mut b = request_config(&request)?;
    // Read before the model loads, as the eval set is: a bad file is refused at once.
    let temperature = calibration(request.calibration.as_deref())?;
    let t0 = std::time::Instant::now();
    let engine = state.engine(request.model.as_deref())?;
    let load_seconds = t0.elapsed().as_secs_f64();
    b = b.matmul(engine.info().matmul);
    b = b.calibration(temperature);
    let mut config = b.build().map_err(|e| other_order(e, request.calibration.as_deref()))?;
    let bench = state.settings().bench_dir;
    let stem = engine.info().path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    // The run keeps its partial file up to date as the CLI does (a crash loses about a second),
    // and a later run of the same options can complete it.
    let checkpoint = bench.join(default_name(&set.name, &stem, &config)).with_extension("partial.json");
    let resume = match request.resume {
        Some(true) => {
            let (partial, resumed) = readout::jobs::run::resume(&engine, &checkpoint).map_err(|e| match e {
                readout::Error::Io { .. } | readout::Error::BadFile { .. } => {
                    AppError::new("There is no stopped run of these choices to go on with; run it from the start.")
                        .details(e.to_string())
                }
                e => msg(e),
            })?;
            config = resumed;
            Some(partial)
        }
        _ => None,
    };
    let cancel = state.cancel.clone();
    cancel.store(false, Ordering::SeqCst);
    let limit = request.limit;
    let at = checkpoint.clone();
    let result = tauri::async_runtime::spawn_blocking(move || {
        let mut progress = |p: Progress| {
            let _ = on_progress.send(p);
        };
        let every = readout::jobs::run::CHECKPOINT_EVERY;
        let mut control = Control { progress: &mut progress, stop: &cancel, checkpoint: Some((&at, every)) };
        let input = RunInput {
            engine: &engine,
            eval_set: &set,
            config,
            model_load_seconds: load_seconds,
            resume,
            limit,
            family: None,
        };
        readout::jobs::run::run(input, &mut control).map_err(msg)
    })
    .await
    .map_err(msg)??;
    if result.status == Status::Partial {
        // A cancelled run keeps what it finished, in a valid partial file.
        let _ = result.write(&checkpoint);
    } else {
        // Complete: the result is the page's to save; the partial file has done its work.
        let _ = std::fs::remove_file(&checkpoint);
    }
    if let Ok(mut last) = state.last_result.lock() {
        *last = Some(result.clone());
    }
    Ok(result)
}

#[tauri::command]
pub fn cancel_run(state: State<'_, AppState>) {
    state.cancel.store(true, Ordering::SeqCst);
}

/// The CLI's default file name for a result (eval set, model, mode, shots, debias and the levers
/// off their defaults), so the app names a file as `readout run` would.
fn result_file_name(r: &ResultFile) -> PathBuf {
    let stem = Path::new(&r.model.file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    default_name(&r.eval_set.name, &stem, &r.config)
}

/// Save the last evaluation's result file (the CLI's format) into the bench folder, or to `path`.
#[tauri::command]
pub fn save_result(state: State<'_, AppState>, path: Option<PathBuf>) -> Res<PathBuf> {
    let last = state
        .last_result
        .lock()
        .map_err(msg)?
        .clone()
        .ok_or("There is no result to save yet: run an evaluation first.")?;
    let target = match path {
        Some(p) => {
            state.check_writable(&p)?;
            p
        }
        None => readout::formats::results::unused_path(&state.settings().bench_dir.join(result_file_name(&last))),
    };
    if target.exists() {
        return Err(AppError::new(format!(
            "There is a file called {} there already: choose another name.",
            crate::error::file_name(&target)
        ))
        .details(target.display().to_string()));
    }
    last.write(&target).map_err(msg)?;
    Ok(target)
}

/// One row of the Results table.
#[derive(Debug, Serialize, TS)]
pub struct ResultEntry {
    pub file: PathBuf,
    /// The model's name, as the Models page names it (`ModelRecord::display_name`).
    pub model: String,
    pub mode: Mode,
    pub shots: usize,
    pub debias: DebiasMode,
    pub mean_family_balanced_accuracy: Option<f64>,
    /// The same figure for guessing (`readout::metrics::Summary::chance`).
    pub chance: Option<f64>,
    pub order_unstable: Option<usize>,
    pub seconds: f64,
    pub rows: usize,
    pub status: Status,
}

#[tauri::command]
pub fn list_results(state: State<'_, AppState>, dir: Option<PathBuf>) -> Res<Vec<ResultEntry>> {
    let dir = dir.unwrap_or_else(|| state.settings().bench_dir);
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| AppError::io(&dir, &e))?.flatten() {
        let p = e.path();
        let is_result = p.extension().map(|x| x == "json").unwrap_or(false)
            && std::fs::read_to_string(&p).map(|t| t.contains("\"readout.result\"")).unwrap_or(false);
        if !is_result {
            continue;
        }
        let r = ResultFile::load(&p).map_err(msg)?;
        out.push(ResultEntry {
            model: r.model.display_name(),
            mode: r.config.mode,
            shots: r.config.shots,
            debias: r.config.debias,
            mean_family_balanced_accuracy: r.metrics.as_ref().map(|m| m.mean_family_balanced_accuracy),
            chance: r.metrics.as_ref().and_then(|m| m.chance),
            order_unstable: r.metrics.as_ref().and_then(|m| m.overall.order_unstable),
            seconds: r.timing.wall_seconds,
            rows: r.rows.len(),
            status: r.status,
            file: p,
        });
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(out)
}

/// A result file. One written before runs recorded the judge's agreement with gold gets it here,
/// from its rows, with the run's own bootstrap resamples and seed: the figures `readout run`
/// records now (and `readout table` computes for such files); one written before runs recorded
/// the model's name as Readout names it gets that name (not the GGUF's own).
#[tauri::command]
pub fn load_result(file: PathBuf) -> Res<ResultFile> {
    let mut r = ResultFile::load(&file).map_err(msg)?;
    r.model.name = r.model.display_name();
    let rows = r.scored_rows();
    let (resamples, seed) = (r.config.bootstrap_resamples, r.config.bootstrap_seed);
    if let Some(m) = r.metrics.as_mut().filter(|m| m.agreement.is_empty()) {
        m.agreement = readout::metrics::agreement_by_criterion(&rows, None, resamples, seed);
    }
    Ok(r)
}

#[tauri::command]
pub fn compare_results(a: PathBuf, b: PathBuf) -> Res<Comparison> {
    let ra = ResultFile::load(&a).map_err(msg)?;
    let rb = ResultFile::load(&b).map_err(msg)?;
    if ra.eval_set.sha256 != rb.eval_set.sha256 {
        return Err(AppError::new("These two runs scored different eval sets: compare runs of one eval set.")
            .details(format!("{} and {} scored different eval sets", a.display(), b.display())));
    }
    Ok(readout::metrics::compare(&ra.scored_rows(), &rb.scored_rows()))
}

/// One model as the Models page and the model pickers show it (the contract in ui/README.md):
/// its shape from the file's metadata, without loading the weights, the name a person knows it
/// by (`readout::models::name_of`, as `readout models` names it) and what the library says about
/// it (`readout::models::about`).
#[derive(Debug, Serialize, TS)]
pub struct ModelEntry {
    pub name: String,
    pub path: PathBuf,
    pub architecture: String,
    /// The file's encoding, as its type mix names it (`Q4_K_M`).
    pub quantisation: String,
    pub parameters: u64,
    /// Bytes on disk (a directory: its weights').
    pub size_bytes: u64,
    /// The licence in words (the catalogue's, else the file's own), when one is known.
    pub licence: Option<String>,
    /// What it is good for, in one plain sentence.
    pub good_for: String,
    /// The catalogue entry it is, as `CatalogueItem::spec` (`ORG/REPO:FILE`).
    pub catalogue: Option<String>,
    pub config: ModelConfig,
    /// Whether the model carries a chat template of its own.
    pub has_chat_template: bool,
    /// The chat template chosen for it in the settings (a family's name or a Jinja file), which
    /// wins over its own; absent: its own.
    pub chat_template: Option<String>,
    /// The decision contract the file states (`openjev`, `lev`, `nimble` …): System One requests
    /// ask it by that contract, not Readout's prompt. Absent: not a decision model.
    pub decision: Option<String>,
}

impl ModelEntry {
    /// The entry of a model called `name` at `path`, stored as `quantisation`, of shape `config`.
    pub fn new(name: String, path: PathBuf, quantisation: String, config: ModelConfig) -> ModelEntry {
        let about = readout::models::about(&path, None);
        ModelEntry {
            name,
            architecture: config.architecture.as_str().to_string(),
            quantisation,
            parameters: config.parameter_count(),
            size_bytes: 0,
            licence: about.licence,
            good_for: about.good_for,
            catalogue: about.catalogue.map(catalogue_spec),
            path,
            config,
            has_chat_template: true,
            chat_template: None,
            decision: None,
        }
    }
}

/// The entry of the model at `path`, with the chat template `settings` choose for it.
fn model_entry(path: &Path, settings: &Settings) -> Res<ModelEntry> {
    let md = readout::engine::read_metadata(path).map_err(msg)?;
    let name = readout::models::name_of(path);
    let about = readout::models::about(path, md.licence.as_deref());
    Ok(ModelEntry {
        has_chat_template: md.has_chat_template,
        chat_template: settings.chat_templates.get(path).cloned(),
        decision: md.decision,
        size_bytes: md.file_bytes,
        licence: about.licence,
        ..ModelEntry::new(name, path.to_path_buf(), md.quantisation, md.config)
    })
}

/// The default model and the models added through the dialog or from the hub that can be read
/// (a missing or broken file is left out of the list; adding it again shows why).
#[tauri::command]
pub fn list_models(state: State<'_, AppState>) -> Vec<ModelEntry> {
    let s = state.settings();
    let mut paths = vec![state.default_model()];
    paths.extend(s.models.iter().cloned());
    paths.dedup();
    paths.iter().filter_map(|p| model_entry(p, &s).ok()).collect()
}

/// Add a model: loaded once (off the main thread, so the window stays live while a large
/// model loads), so that a model that cannot run is refused here with its reason. A model that
/// only lacks a chat template is added all the same, for its row to choose one.
#[tauri::command]
pub async fn add_model<R: tauri::Runtime>(app: tauri::AppHandle<R>, path: PathBuf) -> Res<ModelEntry> {
    use tauri::Manager;
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        let entry = model_entry(&path, &state.settings())?;
        let needs_template = !entry.has_chat_template && entry.chat_template.is_none();
        if !needs_template {
            state.engine(Some(&path))?;
        }
        remember_model(&state, &path)?;
        Ok(entry)
    })
    .await
    .map_err(msg)?
}

/// Keep `path` in the settings' list of models; it becomes the default when the default model
/// is missing (an app with no model yet).
fn remember_model(state: &AppState, path: &Path) -> Res<()> {
    let mut s = state.settings();
    let default_missing = !state.default_model().exists();
    if s.models.iter().any(|m| m == path) && !default_missing {
        return Ok(());
    }
    if !s.models.iter().any(|m| m == path) {
        s.models.push(path.to_path_buf());
    }
    if default_missing {
        s.default_model = Some(path.to_path_buf());
    }
    state.save_settings(s)
}

/// Choose the chat template a model is read with (`template`: a family's name or a Jinja file,
/// as `--chat-template` takes them), or go back to the model's own (`None`). Checked before it
/// is kept: a name Readout does not know, or a file it cannot read, is refused with the names.
#[tauri::command]
pub fn set_chat_template(state: State<'_, AppState>, path: PathBuf, template: Option<String>) -> Res<ModelEntry> {
    let mut s = state.settings();
    match template.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => {
            let source: readout::engine::template::TemplateSource = t.parse()?;
            readout::engine::template::choose(Some(&source), None, &path).map_err(crate::state::load_error)?;
            s.chat_templates.insert(path.clone(), t.to_string());
        }
        None => {
            s.chat_templates.remove(&path);
        }
    }
    state.save_settings(s)?;
    model_entry(&path, &state.settings())
}

/// The chat-template families Readout knows (llama.cpp's names), for the Models page to offer.
#[tauri::command]
pub fn chat_template_names() -> Vec<String> {
    readout::engine::template::NAMES.iter().map(|n| n.to_string()).collect()
}

/// A judge worth trying, from the library's catalogue (`readout models`), as the Models page
/// offers it for download.
#[derive(Debug, Serialize, TS)]
pub struct CatalogueItem {
    pub name: String,
    /// What `pull_model` takes: `ORG/REPO:FILE`.
    pub spec: String,
    pub quantisation: String,
    pub architecture: String,
    /// The file's size (approximate for all but the default: see `size_basis`).
    pub size_bytes: u64,
    pub size_basis: String,
    pub licence: String,
    /// What it is good for, in one plain sentence.
    pub good_for: String,
    /// Whether this build's engine runs its architecture.
    pub runs_here: bool,
    /// The default model (the one an app with no model offers first).
    pub default: bool,
}

#[tauri::command]
pub fn catalogue() -> Vec<CatalogueItem> {
    readout::models::CATALOGUE
        .iter()
        .map(|e| CatalogueItem {
            name: e.name.into(),
            spec: catalogue_spec(e),
            quantisation: e.quantisation.into(),
            architecture: e.architecture.into(),
            size_bytes: e.size_bytes,
            size_basis: e.size_basis.into(),
            licence: e.licence.into(),
            good_for: e.good_for.into(),
            runs_here: e.runs_here(),
            default: e.file == readout::DEFAULT_MODEL_FILE,
        })
        .collect()
}

/// A catalogue entry as `pull_model` takes it: `ORG/REPO:FILE`.
fn catalogue_spec(e: &readout::models::CatalogueEntry) -> String {
    e.spec().trim_start_matches(readout::hub::PREFIX).to_string()
}

/// A download's progress: `done` of `total` bytes of `file` (`done` starts at what an earlier,
/// stopped download kept).
#[derive(Debug, Clone, Serialize, TS)]
pub struct PullProgress {
    pub file: String,
    pub done: u64,
    pub total: u64,
}

/// Get a model from the Hugging Face hub (`ORG/REPO[@REVISION][:FILE]`, as `readout pull`) into
/// the Hugging Face cache, with progress about ten times a second; `cancel_pull` stops it, and
/// the bytes that arrived stay for the next attempt to resume. A model already in the cache
/// makes no request. The model joins the list (the default when there is none) and its entry
/// comes back.
#[tauri::command]
pub async fn pull_model<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    spec: String,
    on_progress: Channel<PullProgress>,
) -> Res<ModelEntry> {
    use tauri::Manager;
    tauri::async_runtime::spawn_blocking(move || {
        pull(&app.state::<AppState>(), &spec, &mut |p| {
            let _ = on_progress.send(p);
        })
    })
    .await
    .map_err(msg)?
}

/// What `pull_model` does, with the progress given to `send`.
pub fn pull(state: &AppState, spec: &str, send: &mut dyn FnMut(PullProgress)) -> Res<ModelEntry> {
    let spec = readout::hub::HubSpec::parse(spec.trim()).map_err(msg)?;
    let opts = state.hub.clone().ok_or_else(|| {
        AppError::new("The app has no folder to download models into.")
            .details("no folder for the Hugging Face cache: set HF_HUB_CACHE or HF_HOME")
    })?;
    let cancel = state.pull_cancel.clone();
    cancel.store(false, Ordering::SeqCst);
    let every = std::time::Duration::from_millis(100);
    let mut last: Option<std::time::Instant> = None;
    let resolved = readout::hub::resolve(&spec, &opts, &mut |p| {
        if p.done == p.total || last.is_none_or(|t| t.elapsed() >= every) {
            last = Some(std::time::Instant::now());
            send(PullProgress { file: p.file.to_string(), done: p.done, total: p.total });
        }
        !cancel.load(Ordering::SeqCst)
    })
    .map_err(msg)?;
    let entry = model_entry(&resolved.path, &state.settings())?;
    remember_model(state, &resolved.path)?;
    Ok(entry)
}

/// Stop the download from the hub (it stops at its next chunk).
#[tauri::command]
pub fn cancel_pull(state: State<'_, AppState>) {
    state.pull_cancel.store(true, Ordering::SeqCst);
}

/// Settings as the UI shows them, with the device of the model held (read-only; absent until a
/// model has been loaded).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SettingsView {
    #[serde(flatten)]
    pub settings: Settings,
    /// The device the model runs on, e.g. `cpu (8 threads)`.
    pub device_in_use: Option<String>,
    /// Why the engine runs on the CPU although a GPU was asked for (`auto` with a GPU build whose
    /// GPU or libraries are missing): the library's reason, for the window to show.
    pub device_fallback: Option<String>,
}

impl SettingsView {
    /// `settings`, with the device of `held` (the model loaded, if any).
    pub fn new(settings: Settings, held: Option<&readout::engine::ModelInfo>) -> SettingsView {
        SettingsView {
            settings,
            device_in_use: held.map(|i| i.device.clone()),
            device_fallback: held.and_then(|i| i.device_fallback.clone()),
        }
    }
}

#[tauri::command]
pub fn get_settings(state: State<'_, AppState>) -> SettingsView {
    let held = state.engine.lock().ok().and_then(|h| h.as_ref().map(|(_, e)| e.clone()));
    SettingsView::new(state.settings(), held.as_ref().map(|e| e.info()))
}

/// What the Models page's DERIVED panel asks for: a model, and the rows its head is pruned to.
#[derive(Debug, Deserialize, TS)]
#[ts(optional_fields)]
#[serde(rename_all = "camelCase")]
pub struct DeriveRequest {
    pub model: PathBuf,
    /// Head rows kept when it is pruned to the answer letters (the library's default when absent).
    pub prune_to: Option<u64>,
    /// Prompt length for the trim and KV-cache figures (the library's default when absent).
    pub prompt_tokens: Option<u64>,
}

/// The DERIVED figures of a model (`readout derive`): exact arithmetic from its shape, read from
/// its metadata without loading the weights.
#[tauri::command]
pub async fn derive_model(request: DeriveRequest) -> Res<Derivation> {
    let d = DeriveOptions::default();
    let opts = DeriveOptions {
        prune_to: request.prune_to.unwrap_or(d.prune_to),
        prompt_tokens: request.prompt_tokens.unwrap_or(d.prompt_tokens),
    };
    tauri::async_runtime::spawn_blocking(move || derive_file(&request.model, opts).map_err(msg)).await.map_err(msg)?
}

/// A native file dialog; `None` when the user cancels. Only paths chosen here are handed back.
#[tauri::command]
pub async fn pick_file<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    state: State<'_, AppState>,
    kind: String,
    default_name: Option<String>,
) -> Res<Option<PathBuf>> {
    use tauri_plugin_dialog::DialogExt;
    let d = app.dialog().file();
    let d = match kind.as_str() {
        "rubric" | "rubric_save" => d.add_filter("Rubric", &["json"]),
        "evalset" => d.add_filter("Eval set", &["jsonl"]),
        "result_save" => d.add_filter("Result file", &["json"]),
        "model_gguf" => d.add_filter("GGUF model", &["gguf"]),
        "chat_template" => d.add_filter("Jinja chat template", &["jinja", "j2", "txt"]),
        "export_csv" => d.add_filter("CSV", &["csv"]),
        "export_json" => d.add_filter("JSON", &["json"]),
        "calibration" => d.add_filter("Calibration file", &["json"]),
        "answers" => d.add_filter("Answers file", &["jsonl"]),
        "texts" => d.add_filter("Texts", &["csv", "jsonl", "ndjson"]),
        _ => d,
    };
    // Saving a result: the CLI's name for it unless the page gives one.
    let default_name = default_name.or_else(|| match kind.as_str() {
        "result_save" => state.last_result.lock().ok()?.as_ref().map(|r| result_file_name(r).display().to_string()),
        _ => None,
    });
    let d = match default_name {
        Some(n) => d.set_file_name(n),
        None => d,
    };
    let picked = match kind.as_str() {
        "rubric_save" | "result_save" | "export_csv" | "export_json" => d.blocking_save_file(),
        "results_dir" | "model_dir" => d.blocking_pick_folder(),
        _ => d.blocking_pick_file(),
    };
    let picked = picked.and_then(|p| p.into_path().ok());
    if let Some(p) = &picked {
        state.allow(p);
    }
    Ok(picked)
}

/// Write an export (CSV or JSON of answers) to a path the user picked.
#[tauri::command]
pub fn write_text_file(state: State<'_, AppState>, path: PathBuf, contents: String) -> Res<()> {
    state.check_writable(&path)?;
    std::fs::write(&path, contents).map_err(|e| AppError::io(&path, &e))
}

/// Save the settings and give them back as `get_settings` shows them. The UI sends what it was
/// given (the read-only `deviceInUse` included, which is ignored) with `threads: 0` for all cores.
#[tauri::command]
pub fn set_settings(state: State<'_, AppState>, mut settings: Settings) -> Res<SettingsView> {
    if settings.device.parse::<readout::engine::device::DeviceRequest>().is_err() {
        return Err(AppError::new("Choose Automatic, CPU, CUDA or Metal as the device.")
            .details(format!("unknown device `{}` (auto, cpu, cuda or metal)", settings.device)));
    }
    settings.threads = settings.threads.filter(|&n| n > 0);
    // A model that stops being the default stays in the list.
    let before = state.default_model();
    if settings.default_model.as_ref() != Some(&before) && before.exists() && !settings.models.contains(&before) {
        settings.models.push(before);
    }
    state.save_settings(settings)?;
    Ok(get_settings(state))
}
