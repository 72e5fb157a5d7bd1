//! A calibration: the temperature a job applies to its combined probabilities (a value of
//! [`crate::config::RunConfig`], recorded in the result file) and the calibration file that
//! carries it (`schema/calibration.schema.json`). Fitting one is analysis: [`crate::analysis::calibrate`].

pub use crate::config::{apply_temperature, Calibration};
use crate::debias::DebiasMode;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const SCHEMA: &str = "readout.calibration";
/// The version of the calibration format this program writes and reads.
pub const SCHEMA_VERSION: u32 = 1;
/// Fewest rows a temperature is fitted on.
pub const MIN_ROWS: usize = 50;
/// Fewest wrong rows (and fewest right rows) a temperature is fitted on.
pub const MIN_ERRORS: usize = 10;
/// Held-out folds of the check.
pub const FOLDS: usize = 5;
/// The inverse temperatures searched: `T` from 0.05 to 20.
pub const BETA_RANGE: (f64, f64) = (0.05, 20.0);

/// ECE, NLL and Brier of a set of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Scores {
    pub ece: f64,
    pub nll: f64,
    pub brier: f64,
}

/// The k-fold check: every row scored by the temperature fitted without its fold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HeldOut {
    pub folds: usize,
    pub seed: u64,
    /// The temperature fitted on all rows but each fold's.
    pub fold_temperatures: Vec<f64>,
    /// The rows as the run gave them.
    pub before: Scores,
    /// Each row under its fold's held-out temperature.
    pub after: Scores,
}

/// The run a calibration was fitted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FittedOn {
    /// The result file's name and sha256.
    pub file: String,
    pub sha256: String,
    pub model: String,
    pub model_sha256: String,
    pub eval_set: String,
    pub eval_set_sha256: String,
    pub debias: DebiasMode,
    pub shots: usize,
    pub rows: usize,
    pub wrong: usize,
}

/// A calibration file, as `readout calibrate` writes it (`schema/calibration.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CalibrationFile {
    pub schema: String,
    pub schema_version: u32,
    pub created: String,
    pub program_version: String,
    /// `temperature` (the only method).
    pub method: String,
    /// Fitted on all rows.
    pub temperature: f64,
    pub fitted_on: FittedOn,
    pub held_out: HeldOut,
    /// Rows with all rows' temperature applied (in-sample; `held_out` is the honest check).
    pub in_sample: Scores,
    pub min_rows: usize,
    pub min_errors: usize,
}

/// Whether a fitted temperature sits at an end of the searched range ([`BETA_RANGE`]): the
/// NLL wanted it further (at 20, the probabilities carry almost nothing about correctness).
pub fn at_range_edge(temperature: f64) -> bool {
    let beta = 1.0 / temperature;
    (beta - BETA_RANGE.0).abs() < 1e-6 || (beta - BETA_RANGE.1).abs() < 1e-6
}

impl CalibrationFile {
    /// Read a calibration file and make the option a job applies (its sha256 recorded).
    pub fn load(path: &Path) -> Result<(CalibrationFile, Calibration)> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let bad = |reason: String| Error::BadFile { path: path.to_path_buf(), reason };
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("not JSON ({e}); pass a file written by `readout calibrate`")))?;
        if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
            return Err(bad(format!(
                "not a calibration file (`schema` is not \"{SCHEMA}\"); make one with `readout calibrate RESULT.json -o CAL.json`"
            )));
        }
        let file: CalibrationFile =
            serde_json::from_value(v).map_err(|e| bad(format!("does not match the calibration format ({e})")))?;
        if file.schema_version != SCHEMA_VERSION {
            return Err(bad(format!(
                "version {} of the calibration format; this program reads version {SCHEMA_VERSION}: fit it again",
                file.schema_version
            )));
        }
        if !(file.temperature.is_finite() && file.temperature > 0.0) {
            return Err(bad(format!("field `temperature`: {} is not a positive number", file.temperature)));
        }
        let applied = Calibration {
            temperature: file.temperature,
            sha256: crate::hash::sha256_bytes(&bytes),
            file: path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
            debias: file.fitted_on.debias,
            model_sha256: file.fitted_on.model_sha256.clone(),
        };
        Ok((file, applied))
    }

    /// Write atomically, as result files are written.
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| Error::BadFile {
            path: path.to_path_buf(),
            reason: format!("serialising the calibration: {e}"),
        })?;
        crate::atomic::write(path, &bytes)
    }
}

/// Refuse a calibration fitted on another model than `model_sha256` (the job's).
pub fn check_model(calibration: Option<&Calibration>, model_sha256: &str) -> Result<()> {
    match calibration {
        Some(c) if c.model_sha256 != model_sha256 => Err(Error::Config(format!(
            "{} was fitted on another model (sha256 {}…); a temperature belongs to one model: fit one on a run of this model",
            c.file,
            &c.model_sha256[..12.min(c.model_sha256.len())]
        ))),
        _ => Ok(()),
    }
}
