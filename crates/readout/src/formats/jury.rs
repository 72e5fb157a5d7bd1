//! A jury file: several judges' result files on one eval set, pooled into one answer per row
//! (`schema/jury.schema.json`). It records every judge (file, sha256, model, template,
//! temperature), the weights and how they were fitted, each judge's and the jury's per-row
//! probabilities, the judges' agreement, and the jury against the best single judge. Pooling is
//! analysis: [`crate::analysis::jury`].

use crate::debias::DebiasMode;
use crate::error::{Error, Result};
use crate::metrics::{Comparison, ScoredRow, Summary};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const SCHEMA: &str = "readout.jury";
/// The version of the jury format this program writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// How the judges' probabilities are weighted in the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum JuryWeights {
    /// Every judge the same weight, its probabilities as its run gave them.
    Equal,
    /// Each judge's temperature and the pool's weights fitted to minimise the pool's NLL of the
    /// gold option, cross-fitted by group folds: a row is pooled by the fit made without its fold.
    Fitted,
    /// The weights a judges file gives (`formats::judges`), the probabilities as the runs gave
    /// them (each judge's calibration applied in its run).
    Given,
}

option_names!(JuryWeights, "jury weighting", "equal, fitted or given", { Equal => "equal", Fitted => "fitted", Given => "given" });

/// One judge: its result file and what made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "JuryJudge"))]
pub struct JudgeRecord {
    /// The result file's name and the sha256 of its bytes.
    pub file: String,
    pub sha256: String,
    pub model: String,
    pub model_file: String,
    pub model_sha256: String,
    /// The chat template its prompts were rendered with, where the run recorded one.
    pub chat_template: Option<String>,
    pub debias: DebiasMode,
    pub shots: usize,
    /// The temperature the run applied (`--calibration`), where it applied one.
    pub run_temperature: Option<f64>,
    /// The temperature the jury fitted on all rows (fitted weights only).
    pub temperature: Option<f64>,
    /// Its weight in the pool fitted on all rows (equal: `1/judges`; given: the judges file's).
    pub weight: f64,
    /// The peak resident memory of its run (the judges of `readout run --model A --model B` run
    /// one after another, each measured apart); absent where its run did not record one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub peak_rss_bytes: Option<u64>,
    /// The judge alone, as its run scored the rows.
    pub summary: Summary,
}

/// How the weights were chosen, and each fold's fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WeightsRecord {
    pub method: JuryWeights,
    /// Folds by group (fitted weights; 0 for equal ones).
    pub folds: usize,
    pub seed: u64,
    /// Per fold, the weights fitted without it (fitted weights only).
    pub fold_weights: Vec<Vec<f64>>,
    /// Per fold, each judge's temperature fitted without it (fitted weights only).
    pub fold_temperatures: Vec<Vec<f64>>,
}

/// Krippendorff's α of the judges' answers (nominal), over rows of one criterion or all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct JudgeAgreement {
    /// A family of the eval set, or `all`.
    pub criterion: String,
    pub rows: usize,
    /// Rows where not every judge gave the same answer.
    pub disagreements: usize,
    /// `None` where it is undefined (every answer the same option).
    pub alpha: Option<f64>,
}

/// The jury against the best single judge (by mean family balanced accuracy): B is the jury.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct VersusBest {
    /// Index into `judges`.
    pub judge: usize,
    pub comparison: Comparison,
}

/// One judge's answer on a row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct JudgeAnswer {
    /// The probabilities the pool took (after the judge's temperature, fitted weights only).
    pub probs: Vec<f64>,
    pub predicted: usize,
}

/// A row: every judge's answer and the jury's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct JuryRow {
    pub id: String,
    pub family: String,
    pub group_id: String,
    pub option_ids: Vec<String>,
    pub gold: usize,
    /// In the order of `judges`.
    pub judges: Vec<JudgeAnswer>,
    /// The pool's probabilities by option.
    pub probs: Vec<f64>,
    /// The pool's answer; `None` where the jury abstained (`--abstain-on-disagreement`).
    pub predicted: Option<usize>,
    pub correct: bool,
    /// Not every judge gave the same answer.
    pub disagree: bool,
}

impl JuryRow {
    /// The row as the metrics see it.
    pub fn scored(&self) -> ScoredRow {
        ScoredRow {
            id: self.id.clone(),
            family: self.family.clone(),
            group_id: self.group_id.clone(),
            gold: self.gold,
            option_ids: self.option_ids.clone(),
            probs: Some(self.probs.clone()),
            predicted: self.predicted,
            order_unstable: None,
            letter_picks: Vec::new(),
        }
    }
}

/// A judge's result file as the jury reads it: its path (named in refusals), its bytes' sha256
/// and its contents.
pub struct JudgeResult<'a> {
    pub path: &'a Path,
    pub sha256: String,
    pub result: &'a crate::formats::results::ResultFile,
}

/// A jury file, as `readout jury` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct JuryFile {
    pub schema: String,
    pub schema_version: u32,
    pub created: String,
    pub program_version: String,
    pub eval_set: String,
    pub eval_set_sha256: String,
    pub judges: Vec<JudgeRecord>,
    pub weights: WeightsRecord,
    /// Rows where the judges disagreed get no answer (counted wrong by accuracy; see `answered`).
    pub abstain_on_disagreement: bool,
    /// Rows the jury answered.
    pub answered: usize,
    /// The share of the answered rows it got right (`None` when it answered none).
    pub answered_accuracy: Option<f64>,
    /// The jury's figures over all rows.
    pub summary: Summary,
    pub versus_best: VersusBest,
    /// Per family, then `all`.
    pub agreement: Vec<JudgeAgreement>,
    pub rows: Vec<JuryRow>,
}

impl JuryFile {
    /// Write atomically (a temporary file beside `path`, then renamed over it).
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::BadFile { path: path.to_path_buf(), reason: format!("serialising the jury: {e}") })?;
        crate::atomic::write(path, &bytes)
    }
}
