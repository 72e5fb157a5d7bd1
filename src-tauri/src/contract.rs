//! The TypeScript half of the app's contract. Every type a command takes or gives — the shell's
//! own and the library's (the result file, score results, metrics, DERIVED figures, a review's
//! report and a fit on its labels, the labels curve) — is written by ts-rs into `ui/src/gen/`, which the UI imports, so a field renamed or
//! retyped in Rust breaks the UI's build instead of the running app. `cargo test` writes them
//! (tests/commands.rs); CI fails when what is committed there differs.

use crate::commands::curves::{LabelsCurveEntry, LabelsCurveFile};
use crate::commands::library::{Recent, RecentKind, RubricEntry, Session};
use crate::commands::review::{FitState, Fitted, ReviewEntry, ReviewLabel, ReviewUpdate, ReviewView};
use crate::commands::rows::RowTexts;
use crate::commands::scored::ScoredEntry;
use crate::commands::{
    CatalogueItem, DeriveRequest, EvalSetEntry, Example, JudgeRecord, ModelEntry, PullProgress, ResultEntry,
    RunRequest, ScoreOptions, ScoreProgress, SettingsView, TextIn,
};
use crate::state::Settings;
use readout::analysis::derive::Derivation;
use readout::formats::results::ResultFile;
use readout::jobs::answers::QuestionSummary;
use readout::jobs::review::Report;
use readout::jobs::run::Progress;
use readout::jobs::score::TextResult;
use readout::jobs::scored::ScoredFile;
use readout::metrics::Comparison;
use std::path::Path;
use ts_rs::{Config, ExportError, TS};

/// How the types are written. 64-bit integers (seeds, byte counts, parameter counts) are
/// `number`: that is what `JSON.parse` gives the page for them.
pub fn config(dir: &Path) -> Config {
    Config::new().with_out_dir(dir).with_large_int("number")
}

/// Write every type of the contract, with the types they use, into `dir` (one `.ts` file each).
pub fn export(cfg: &Config) -> Result<(), ExportError> {
    // Arguments.
    TextIn::export_all(cfg)?;
    RunRequest::export_all(cfg)?;
    ScoreOptions::export_all(cfg)?;
    DeriveRequest::export_all(cfg)?;
    Settings::export_all(cfg)?;
    // The Score page's library: My rubrics, recent files, the last session.
    RubricEntry::export_all(cfg)?;
    Recent::export_all(cfg)?;
    RecentKind::export_all(cfg)?;
    Session::export_all(cfg)?;
    // Errors: a plain message, a fix, the library's text under Details.
    crate::error::AppError::export_all(cfg)?;
    // Answers and channel messages.
    Example::export_all(cfg)?;
    TextResult::export_all(cfg)?;
    ScoreProgress::export_all(cfg)?;
    // The Score page's summary per question, and the judge's last measured accuracy (its verdict).
    QuestionSummary::export_all(cfg)?;
    JudgeRecord::export_all(cfg)?;
    EvalSetEntry::export_all(cfg)?;
    Progress::export_all(cfg)?;
    // A jury's run on the Evaluate page: its progress and its file.
    crate::commands::JuryProgress::export_all(cfg)?;
    readout::formats::jury::JuryFile::export_all(cfg)?;
    // The Results page's standings of a pairwise run.
    readout::analysis::pairwise::PairwiseReport::export_all(cfg)?;
    ResultFile::export_all(cfg)?;
    ResultEntry::export_all(cfg)?;
    Comparison::export_all(cfg)?;
    ModelEntry::export_all(cfg)?;
    Derivation::export_all(cfg)?;
    SettingsView::export_all(cfg)?;
    CatalogueItem::export_all(cfg)?;
    PullProgress::export_all(cfg)?;
    // Review: the person's labels against the judge.
    ReviewView::export_all(cfg)?;
    ReviewUpdate::export_all(cfg)?;
    // (Flattened into the two above, so not written with them.)
    ReviewLabel::export_all(cfg)?;
    ReviewEntry::export_all(cfg)?;
    Report::export_all(cfg)?;
    FitState::export_all(cfg)?;
    Fitted::export_all(cfg)?;
    // The results folder's labels-curve files (how many labels a person needs).
    LabelsCurveEntry::export_all(cfg)?;
    LabelsCurveFile::export_all(cfg)?;
    // Scorings kept for the Results page.
    ScoredEntry::export_all(cfg)?;
    ScoredFile::export_all(cfg)?;
    RowTexts::export_all(cfg)?;
    Ok(())
}
