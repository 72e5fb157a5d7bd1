//! Review: a person checks the judge on their own labels (`readout::jobs::review`). The shell
//! keeps one review open (`AppState::review`), in a folder of the app's data folder
//! (`reviews/<UTC time>-<rubric name>/`, so it can be continued after a restart) or beside an
//! answers file `readout score --out` wrote, chosen in a dialog. Every label is written to the
//! labels file at once by the library; what comes back is the library's queue (least sure
//! likeliest first), its figures and its messages. (The view's types also read back, for the
//! browser mock's fixtures that the tests write from them.)
//!
//! "Fit the judge to my labels" (`review_fit`): the labels file is an eval set, so the judge the
//! Score page has chosen (model and option order) runs on it through the library's run job, as the
//! Evaluate page runs a set, and `readout::analysis::calibrate::fit` fits a temperature on that
//! run, as `readout calibrate` does; both files are written beside the labels file, for the
//! Score page's Temperature to take.

use crate::state::{AppState, OpenReview};
use readout::analysis::calibrate::{self, Readiness, FOLDS};
use readout::config::{Mode, RunConfig};
use readout::debias::DebiasMode;
use readout::formats::calibration::{at_range_edge, CalibrationFile};
use readout::formats::evalset::{EvalSet, LoadOptions};
use readout::formats::labels::{Draw, Labels};
use readout::formats::results::{ResultFile, Status};
use readout::formats::rubric::{QuestionKind, Rubric};
use readout::jobs::review::{Report, ReportOptions, Review};
use readout::jobs::run::{Control, Progress, RunInput};
use readout::jobs::score::{CriterionResult, Text, TextResult};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use tauri::ipc::Channel;
use tauri::State;
use ts_rs::TS;

use super::{msg, AppError, Res, TextIn};

/// One option of a criterion, as the person answers it.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct ReviewOption {
    pub id: String,
    pub description: String,
}

/// A criterion of the rubric, in the rubric's order (the order of every `answers` list).
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct ReviewCriterion {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: QuestionKind,
    /// The question put to the judge.
    pub instructions: String,
    /// For a yes/no criterion: the rule its answer follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rule: Option<String>,
    pub options: Vec<ReviewOption>,
}

/// A text of the review, in the order it is shown.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct ReviewItem {
    /// The text's index among the scored texts (what `review_label` takes).
    pub index: usize,
    pub id: Option<String>,
    pub text: String,
    /// The judge's answer per criterion (the chosen option, each option's probability, the margin,
    /// whether it was close, order-unstable or abstained, the letter mass).
    pub judge: Vec<CriterionResult>,
    /// How unsure the judge was, 0 (sure) to 1 (`readout::jobs::review::uncertainty`).
    pub uncertainty: f64,
    /// The person's label state for this text.
    #[serde(flatten)]
    pub label: ReviewLabel,
}

/// A text's labels: the person's answer per criterion (an option index, null where none was
/// given), or null when the person has not labelled it; and whether they skipped it.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct ReviewLabel {
    pub labels: Option<Vec<Option<usize>>>,
    pub skipped: bool,
}

/// How far the review has come.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, TS)]
pub struct ReviewCounts {
    /// Texts the judge scored.
    pub texts: usize,
    /// Texts with at least one answer from the person.
    pub labelled: usize,
    pub skipped: usize,
}

/// What the Review view shows: the rubric's criteria and every text in the order to label them.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct ReviewView {
    /// The review's folder.
    pub dir: PathBuf,
    /// The rubric's name.
    pub name: String,
    /// The judge's answers file and the labels file beside it (what `readout labels report`
    /// reads).
    pub answers_file: PathBuf,
    pub labels_file: PathBuf,
    /// How the texts are drawn (the order of `queue`).
    pub draw: Draw,
    pub criteria: Vec<ReviewCriterion>,
    /// Every text, least sure likeliest first (`readout::jobs::review::order`).
    pub queue: Vec<ReviewItem>,
    pub counts: ReviewCounts,
}

/// What a label or an undo changed: the text's labels and the counts.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ReviewUpdate {
    pub index: usize,
    #[serde(flatten)]
    pub label: ReviewLabel,
    pub counts: ReviewCounts,
}

/// A review folder the app keeps, for "Continue reviewing".
#[derive(Debug, Clone, Serialize, TS)]
pub struct ReviewEntry {
    /// What `review_open` takes.
    pub dir: PathBuf,
    /// The rubric's name.
    pub name: String,
    /// When the review was started (RFC 3339, UTC), from the folder's name.
    pub created: String,
    pub texts: usize,
    pub labelled: usize,
    /// Why the folder cannot be opened (the library's message); absent for a good one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub error: Option<String>,
}

/// The draw of every review the app starts: the judge's least sure texts likeliest, seed 1.
fn draw() -> Draw {
    Draw::default()
}

fn label_of(labels: &Labels, index: usize) -> ReviewLabel {
    match labels.get(index) {
        Some(t) => ReviewLabel { labels: Some(t.answers.clone()), skipped: t.skipped },
        None => ReviewLabel { labels: None, skipped: false },
    }
}

fn counts(r: &Review) -> ReviewCounts {
    let t = &r.labels.texts;
    ReviewCounts {
        texts: r.results.len(),
        labelled: t.iter().filter(|t| !t.skipped && t.answers.iter().any(Option::is_some)).count(),
        skipped: t.iter().filter(|t| t.skipped).count(),
    }
}

/// The view of an open review.
fn view(open: &OpenReview) -> ReviewView {
    let r = &open.review;
    let criteria = r
        .criteria
        .iter()
        .map(|c| ReviewCriterion {
            name: c.name.clone(),
            kind: c.kind,
            instructions: c.instructions.clone(),
            rule: c.rule.clone(),
            options: c
                .options
                .iter()
                .map(|o| ReviewOption { id: o.id.clone(), description: o.description.clone() })
                .collect(),
        })
        .collect();
    let queue = r
        .queue()
        .into_iter()
        .filter_map(|q| {
            let (text, result) = (r.texts.get(q.index)?, r.results.get(q.index)?);
            Some(ReviewItem {
                index: q.index,
                id: text.id.clone(),
                text: text.text.clone(),
                judge: result.criteria.clone(),
                uncertainty: q.uncertainty,
                label: label_of(&r.labels, q.index),
            })
        })
        .collect();
    ReviewView {
        dir: open.dir.clone(),
        name: open.name.clone(),
        answers_file: r.answers_path.clone(),
        labels_file: r.labels_path.clone(),
        draw: r.labels.draw,
        criteria,
        queue,
        counts: counts(r),
    }
}

/// Hold `open` as the review open and give its view.
fn hold(state: &AppState, open: OpenReview) -> Res<ReviewView> {
    let v = view(&open);
    *state.review.lock()? = Some(open);
    Ok(v)
}

/// A folder name's safe form of a rubric's name: letters, digits, `-`, `_` and `.`.
fn folder_name(name: &str) -> String {
    let safe: String = name.chars().map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect();
    let safe = safe.trim_matches(|c| c == '-' || c == '.').to_string();
    if safe.is_empty() {
        "review".into()
    } else {
        safe.chars().take(60).collect()
    }
}

/// `reviews/<UTC time>-<rubric name>` (the time with `-` for `:`, so the name is a file name on
/// every system and sorts by time); `-2`, `-3`, … when two start in one second.
fn new_review_dir(reviews: &Path, name: &str) -> PathBuf {
    let stem = format!("{}-{}", readout::formats::results::now_utc().replace(':', "-"), folder_name(name));
    let mut dir = reviews.join(&stem);
    let mut n = 2;
    while dir.exists() {
        dir = reviews.join(format!("{stem}-{n}"));
        n += 1;
    }
    dir
}

/// The RFC 3339 time at the start of a review folder's name.
fn created_of(dir: &Path) -> String {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // `2025-01-03T10-15-00Z-name`: the first 20 characters, the time's `-` back to `:`.
    match name.get(..20) {
        Some(t) if t.ends_with('Z') && t.as_bytes().get(10) == Some(&b'T') => {
            format!("{}T{}", &t[..10], t[11..].replace('-', ":"))
        }
        _ => String::new(),
    }
}

/// Start a review of texts just scored: a new folder under the app's data folder holding the
/// rubric, the texts, the judge's answers and an empty labels file.
#[tauri::command]
pub async fn review_start<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    rubric: serde_json::Value,
    texts: Vec<TextIn>,
    results: Vec<TextResult>,
) -> Res<ReviewView> {
    use tauri::Manager;
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        let parsed = Rubric::parse(&rubric.to_string(), Path::new("rubric")).map_err(msg)?;
        let dir = new_review_dir(&state.reviews_dir(), &parsed.name);
        let texts: Vec<Text> = texts.into_iter().map(|t| Text { id: t.id, text: t.text }).collect();
        let review = Review::create(&dir, &rubric, &texts, &results, draw()).map_err(|e| {
            // Refused before anything was written: no empty folder is left to list.
            let _ = std::fs::remove_dir(&dir);
            msg(e)
        })?;
        hold(&state, OpenReview { dir, name: parsed.name, review })
    })
    .await
    .map_err(msg)?
}

/// The review folders the app keeps, newest first.
#[tauri::command]
pub fn review_list(state: State<'_, AppState>) -> Res<Vec<ReviewEntry>> {
    let reviews = state.reviews_dir();
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(&reviews) {
        Ok(entries) => entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
        Err(e) => return Err(AppError::io(&reviews, &e)),
    };
    dirs.sort();
    dirs.reverse();
    Ok(dirs.into_iter().map(|d| entry(&d)).collect())
}

/// A review folder as `review_list` gives it, read without opening the review.
fn entry(dir: &Path) -> ReviewEntry {
    let fallback = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut e = ReviewEntry {
        dir: dir.to_path_buf(),
        name: fallback,
        created: created_of(dir),
        texts: 0,
        labelled: 0,
        error: None,
    };
    let read = || -> readout::Result<(String, usize, usize)> {
        let rubric = Rubric::load(&dir.join("rubric.json"))?;
        let answers = dir.join("answers.jsonl");
        let bytes = std::fs::read(&answers).map_err(|err| readout::Error::Io { path: answers.clone(), err })?;
        let texts = bytes.split(|&b| b == b'\n').filter(|l| l.iter().any(|b| !b.is_ascii_whitespace())).count();
        let labels = Labels::read(&readout::jobs::review::labels_path_for(&answers))?;
        let labelled = labels.texts.iter().filter(|t| !t.skipped && t.answers.iter().any(Option::is_some)).count();
        Ok((rubric.name, texts, labelled))
    };
    match read() {
        Ok((name, texts, labelled)) => {
            e.name = name;
            e.texts = texts;
            e.labelled = labelled;
        }
        Err(err) => e.error = Some(msg(err).message),
    }
    e
}

/// Open a review folder `review_list` gave (after a restart, say), with its labels so far.
#[tauri::command]
pub async fn review_open<R: tauri::Runtime>(app: tauri::AppHandle<R>, dir: PathBuf) -> Res<ReviewView> {
    use tauri::Manager;
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        // Only the app's own review folders: the labels file is rewritten at every label.
        let inside = match (dir.canonicalize(), state.reviews_dir().canonicalize()) {
            (Ok(d), Ok(r)) => d.parent() == Some(r.as_path()),
            _ => false,
        };
        if !inside {
            return Err(AppError::new(
                "That folder is not one of the app's reviews: open an answers file with Open answers file… instead.",
            )
            .details(format!(
                "{}: not one of the app's review folders ({})",
                dir.display(),
                state.reviews_dir().display()
            )));
        }
        let review = Review::open_dir(&dir, draw()).map_err(msg)?;
        let name = Rubric::load(&dir.join("rubric.json")).map_err(msg)?.name;
        hold(&state, OpenReview { dir, name, review })
    })
    .await
    .map_err(msg)?
}

/// Open an answers file (`readout score --out ANSWERS.jsonl`) with the texts and the rubric it
/// was scored from, each chosen in a dialog (`pick_file`); the labels go beside the answers
/// (`ANSWERS.labels.jsonl`), and the labels already there are read.
#[tauri::command]
pub async fn review_open_answers<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    answers: PathBuf,
    texts: PathBuf,
    rubric: PathBuf,
) -> Res<ReviewView> {
    use tauri::Manager;
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        if !state.was_picked(&answers) {
            return Err(AppError::new(
                "The app writes labels only beside an answers file you chose with Open answers file…: choose it there.",
            )
            .details(answers.display().to_string()));
        }
        let review = Review::open(&answers, &texts, &rubric, draw()).map_err(msg)?;
        let name = Rubric::load(&rubric).map_err(msg)?.name;
        let dir = answers.parent().map(Path::to_path_buf).unwrap_or_default();
        hold(&state, OpenReview { dir, name, review })
    })
    .await
    .map_err(msg)?
}

/// Runs `f` on the open review, or says there is none.
fn with_review<T>(state: &AppState, f: impl FnOnce(&mut OpenReview) -> Res<T>) -> Res<T> {
    let mut held = state.review.lock()?;
    let open = held.as_mut().ok_or("No review is open: start one from scored texts, or open one.")?;
    f(open)
}

/// Give a text's answers (an option index per criterion, in the rubric's order; null for one not
/// answered), or skip it. Written to the labels file at once.
#[tauri::command]
pub fn review_label(
    state: State<'_, AppState>,
    index: usize,
    answers: Vec<Option<usize>>,
    skipped: bool,
) -> Res<ReviewUpdate> {
    with_review(&state, |open| {
        let r = &mut open.review;
        r.label(index, answers, skipped).map_err(msg)?;
        Ok(ReviewUpdate { index, label: label_of(&r.labels, index), counts: counts(r) })
    })
}

/// Take a text's labels back (it is neither labelled nor skipped again). Written at once.
#[tauri::command]
pub fn review_undo(state: State<'_, AppState>, index: usize) -> Res<ReviewUpdate> {
    with_review(&state, |open| {
        let r = &mut open.review;
        if index >= r.results.len() {
            return Err(
                format!("There is no text {} here: the review has {} texts.", index + 1, r.results.len()).into()
            );
        }
        r.unlabel(index).map_err(msg)?;
        Ok(ReviewUpdate { index, label: label_of(&r.labels, index), counts: counts(r) })
    })
}

/// Agreement between the judge and the person, and each option's share of all texts corrected by
/// the labels, with how many labels would bring the interval to ± `target_half_width` (a share:
/// 0.05 for ± 5 %; the library's default when absent).
#[tauri::command]
pub async fn review_report<R: tauri::Runtime>(app: tauri::AppHandle<R>, target_half_width: Option<f64>) -> Res<Report> {
    use tauri::Manager;
    let mut opts = ReportOptions::default();
    if let Some(h) = target_half_width {
        if !(h > 0.0 && h < 1.0) {
            return Err(format!("The precision wanted is a share between 0 and 1 (0.05 for ± 5 %), not {h}.").into());
        }
        opts.target_half_width = h;
    }
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        // The figures are computed on a copy, so labelling goes on meanwhile.
        let (results, labels) =
            with_review(&state, |open| Ok((open.review.results.clone(), open.review.labels.clone())))?;
        readout::jobs::review::report(&results, &labels, &opts).map_err(msg)
    })
    .await
    .map_err(msg)?
}

/// The seed that deals the labelled texts to the held-out folds (`readout calibrate`'s default).
pub const FIT_SEED: u64 = 0;

/// A temperature fitted on the person's labels: the calibration file and the judge's run it was
/// fitted on, both beside the labels file.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct Fitted {
    /// The calibration file (what the Score page's Temperature takes).
    pub file: PathBuf,
    /// The judge's run on the labels file (a result file, as `readout run LABELS.jsonl` writes).
    pub result_file: PathBuf,
    pub calibration: CalibrationFile,
    /// The judge's model file (its name, as the run records it).
    pub model_file: String,
    /// The temperature sits at an end of the range searched: the judge's probabilities say little
    /// about which of its answers are right.
    pub at_range_edge: bool,
}

/// What "Fit the judge to my labels" starts from: how far the labels are from what a fit needs,
/// and the fit made earlier on this review's labels, if any (read from beside the labels file).
#[derive(Debug, Clone, Serialize, TS)]
pub struct FitState {
    pub readiness: Readiness,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub fitted: Option<Fitted>,
}

/// The readiness of a review's labels for a fit (the library's count, on its report).
fn readiness(review: &Review) -> Res<Readiness> {
    let opts = ReportOptions { resamples: 0, ..ReportOptions::default() };
    let report = readout::jobs::review::report(&review.results, &review.labels, &opts).map_err(msg)?;
    Ok(calibrate::readiness_of(&report, FOLDS))
}

/// Why a fit cannot be tried yet, in the person's words.
fn not_ready(r: &Readiness) -> AppError {
    AppError::new(format!(
        "A temperature is fitted on at least {} of your answers ({} where the judge was wrong and {} where it was right); you have {} ({} wrong, {} right): label at least {} more.",
        r.min_rows, r.min_errors, r.min_errors, r.answers, r.wrong, r.right, r.more_answers
    ))
}

/// The fit kept beside `labels`, if both of its files are there and read.
fn fitted_beside(labels: &Path) -> Option<Fitted> {
    let (result_file, file) = calibrate::files_beside(labels);
    let (calibration, _) = CalibrationFile::load(&file).ok()?;
    let run = ResultFile::load(&result_file).ok()?;
    Some(Fitted {
        at_range_edge: at_range_edge(calibration.temperature),
        model_file: run.model.file,
        file,
        result_file,
        calibration,
    })
}

/// How far the open review's labels are from a fit, and the fit made on them earlier.
#[tauri::command]
pub async fn review_fit_state<R: tauri::Runtime>(app: tauri::AppHandle<R>) -> Res<FitState> {
    use tauri::Manager;
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        let (labels_path, readiness) =
            with_review(&state, |open| Ok((open.review.labels_path.clone(), readiness(&open.review)?)))?;
        Ok(FitState { readiness, fitted: fitted_beside(&labels_path) })
    })
    .await
    .map_err(msg)?
}

/// Fit the judge to the person's labels: run the judge (`model`, the default when absent, with
/// the option order `debias`) on the labels file as an eval set, fit a temperature on the run
/// with its held-out check, and write the run and the calibration beside the labels file
/// (replacing an earlier fit's only when this one succeeds). Progress comes as rows finish;
/// `cancel_run` stops it, and nothing is fitted.
#[tauri::command]
pub async fn review_fit<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    model: Option<PathBuf>,
    debias: Option<String>,
    on_progress: Channel<Progress>,
) -> Res<Fitted> {
    use tauri::Manager;
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        let (labels_path, ready) =
            with_review(&state, |open| Ok((open.review.labels_path.clone(), readiness(&open.review)?)))?;
        // Refused before the model loads (another judge may err elsewhere: the fit has the last word
        // on right and wrong, but the number of answers is the labels' own).
        if ready.answers < ready.min_rows || ready.more_texts > 0 {
            return Err(not_ready(&ready));
        }
        let debias: DebiasMode = debias.as_deref().unwrap_or("none").parse()?;
        let set = EvalSet::load(&labels_path, &LoadOptions::default()).map_err(msg)?;
        let t0 = std::time::Instant::now();
        let engine = state.engine(model.as_deref())?;
        let model_load_seconds = t0.elapsed().as_secs_f64();
        // As the Score page scores: the letters read, no worked examples, its option order.
        let config = RunConfig::builder()
            .mode(Mode::Readout)
            .debias(debias)
            .matmul(engine.info().matmul)
            .build()
            .map_err(msg)?;
        let cancel = state.cancel.clone();
        cancel.store(false, Ordering::SeqCst);
        let mut progress = |p: Progress| {
            let _ = on_progress.send(p);
        };
        let mut control = Control { progress: &mut progress, stop: &cancel, checkpoint: None };
        let input = RunInput {
            engine: &engine,
            eval_set: &set,
            config,
            model_load_seconds,
            resume: None,
            limit: None,
            family: None,
        };
        let run = readout::jobs::run::run(input, &mut control).map_err(msg)?;
        if run.status == Status::Partial {
            return Err("Stopped before the judge had read every labelled answer: nothing was fitted.".into());
        }
        let (result_file, file) = calibrate::files_beside(&labels_path);
        // The run's bytes are hashed as they will be written: the calibration names them.
        let bytes = serde_json::to_vec_pretty(&run).map_err(msg)?;
        let sha256 = readout::hash::sha256_bytes(&bytes);
        let calibration = calibrate::fit(&run, &result_file, &sha256, FOLDS, FIT_SEED).map_err(msg)?;
        readout::atomic::write(&result_file, &bytes).map_err(msg)?;
        calibration.write(&file).map_err(msg)?;
        Ok(Fitted {
            at_range_edge: at_range_edge(calibration.temperature),
            model_file: run.model.file,
            file,
            result_file,
            calibration,
        })
    })
    .await
    .map_err(msg)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_folder_is_named_by_time_and_rubric_and_read_back() {
        assert_eq!(folder_name("support ticket/v2"), "support-ticket-v2");
        assert_eq!(folder_name("///"), "review");
        let d = Path::new("/x/2025-01-03T10-15-00Z-support-ticket");
        assert_eq!(created_of(d), "2025-01-03T10:15:00Z");
        assert_eq!(created_of(Path::new("/x/other")), "");
        let tmp = std::env::temp_dir();
        let dir = new_review_dir(&tmp, "a b");
        assert!(dir.file_name().unwrap().to_string_lossy().ends_with("Z-a-b"), "{}", dir.display());
        assert!(created_of(&dir).ends_with('Z'));
    }
}
