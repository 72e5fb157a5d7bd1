//! "Calibrate from this run" on the Evaluate page: fit a temperature on a saved run of a labelled
//! eval set, as `readout calibrate RESULT.json -o RESULT.calibration.json` does (the library's
//! `calibrate::fit`, its held-out check, 5 folds by group, seed 0), and write the calibration file
//! beside the result file, for the Score page's Temperature to take. The refusals are put in the
//! person's words: the library's name the CLI's flags.

use crate::state::AppState;
use readout::analysis::calibrate::{self, FOLDS};
use readout::config::Mode;
use readout::formats::calibration::at_range_edge;
use readout::formats::results::{ResultFile, Status};
use std::path::{Path, PathBuf};
use tauri::State;

use super::review::{Fitted, FIT_SEED};
use super::{msg, AppError, Res};

/// Where the calibration of `result` is kept: `NAME.calibration.json` beside `NAME.json`.
pub fn calibration_beside(result: &Path) -> PathBuf {
    result.with_extension("calibration.json")
}

/// Why a run cannot be calibrated, in plain words; `None` when it can be tried.
fn refusal(run: &ResultFile) -> Option<&'static str> {
    if run.config.mode != Mode::Readout {
        return Some("This run had the model write its answers, so it has no probabilities to calibrate. Run the eval set again reading the answer letters, then calibrate that run.");
    }
    if run.config.calibration.is_some() {
        return Some(
            "This run already used a temperature. Run the eval set again without one, then calibrate that run.",
        );
    }
    if run.status == Status::Partial {
        return Some("This run was stopped before every row was scored. Resume it, then calibrate it.");
    }
    None
}

/// The library's "too few rows" in the person's words (its own text under Details).
fn too_few(e: readout::Error) -> AppError {
    match &e {
        readout::Error::TooFewToCalibrate { rows, wrong, right, groups, folds, min_rows, min_errors, .. } => AppError::new(format!(
            "A temperature is fitted and checked on at least {min_rows} rows, with at least {min_errors} the model got wrong and {min_errors} it got right, from at least {folds} groups of questions. This run has {rows} rows ({wrong} wrong, {right} right) from {groups} groups: run the whole eval set, then calibrate that run."
        ))
        .details(e.to_string()),
        _ => msg(e),
    }
}

/// Fit a temperature on the result file `file` (a complete readout run without a temperature)
/// and write `NAME.calibration.json` beside it (atomically, replacing an earlier one: the fit is
/// the same on the same file). The file must be one the app may write beside: in the results
/// folder, or one chosen in a dialog.
#[tauri::command]
pub async fn calibrate_result(state: State<'_, AppState>, file: PathBuf) -> Res<Fitted> {
    let out = calibration_beside(&file);
    if !state.was_picked(&file) {
        state.check_writable(&out)?;
    }
    let run = ResultFile::load(&file).map_err(msg)?;
    if let Some(why) = refusal(&run) {
        return Err(AppError::new(why));
    }
    let sha256 = readout::hash::sha256_file(&file).map_err(msg)?;
    let calibration = calibrate::fit(&run, &file, &sha256, FOLDS, FIT_SEED).map_err(too_few)?;
    calibration.write(&out).map_err(msg)?;
    Ok(Fitted {
        at_range_edge: at_range_edge(calibration.temperature),
        model_file: run.model.file,
        file: out,
        result_file: file,
        calibration,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibration_sits_beside_the_result() {
        assert_eq!(
            calibration_beside(Path::new("/r/a_3shot_cyclic.json")),
            Path::new("/r/a_3shot_cyclic.calibration.json")
        );
        assert_eq!(calibration_beside(Path::new("/r/run")), Path::new("/r/run.calibration.json"));
    }
}
