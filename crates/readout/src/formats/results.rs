//! The result file: one JSON document per run, the same from the CLI and the app. It records
//! what ran (program, machine, model, eval set, whole configuration), what came out (every row,
//! metrics) and how long it took. Written atomically (a temporary file, then a rename); a run
//! stopped early leaves a valid file with `status: "partial"` that `--resume` completes.
//! `schema/result.schema.json` is its JSON Schema; the tests hold every written file to it.

use crate::error::{Error, Result};
use crate::metrics::{ScoredRow, Summary};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The schema name every result file carries.
pub const SCHEMA: &str = "readout.result";
/// The version of the format this program writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Whether a run finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Complete,
    Partial,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Program {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Machine {
    pub os: String,
    pub arch: String,
    pub cpus: usize,
    pub device: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelRecord {
    /// The model's name as Readout shows it ([`crate::models::name_of`]); files written before
    /// hold the GGUF's `general.name`: read it with [`ModelRecord::display_name`].
    pub name: String,
    pub file: String,
    pub sha256: String,
    pub architecture: String,
    pub quantisation: String,
    pub parameters: u64,
    /// How the weights were held: `native` (the file's encoding) or `f32` (expanded at load;
    /// files written before the field).
    #[serde(default = "f32_name")]
    pub weights: String,
    /// What the weights were multiplied with: `f32` activations, or the integer kernel's
    /// `int16` or `int8` ones (`engine::ModelInfo::activations`).
    #[serde(default = "f32_name")]
    pub activations: String,
    /// How the KV cache held keys and values: `f16` or `f32` (files written before the field).
    #[serde(default = "f32_name")]
    pub kv_cache: String,
    /// The dense matmuls' arithmetic (`--precision`): `f32`, `tf32` or `bf16` (`f32` in files
    /// written before the field).
    #[serde(default = "f32_name")]
    pub precision: String,
    /// How a pass's attention was computed (`--attention`): `matmuls` or `kernel` (`matmuls` in
    /// files written before the field).
    #[serde(default = "matmuls_name")]
    pub attention: String,
    /// Whether a layer's element-wise steps ran as fused CUDA kernels (`--fused-kernels`): `on`
    /// or `off` (`off` in files written before the field).
    #[serde(default = "off_name")]
    pub fused_kernels: String,
    /// The hub repository, commit and file of a model named `hf:…` (absent for a path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::hub::ModelSource>,
    /// The chat template the prompts were rendered with: a family's name (`--chat-template`),
    /// `file:NAME`, or `model` for the model's own. Absent in files written before the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    /// Hex sha256 of that template's source (absent in files written before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_sha256: Option<String>,
}

impl ModelRecord {
    /// The name to show for this model: as the app and `readout models` name it
    /// ([`crate::models::name_of_recorded`]), also for files that recorded the GGUF's own name.
    pub fn display_name(&self) -> String {
        crate::models::name_of_recorded(self.source.as_ref(), &self.file, &self.name)
    }
}

fn f32_name() -> String {
    "f32".into()
}

fn matmuls_name() -> String {
    "matmuls".into()
}

fn off_name() -> String {
    "off".into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EvalSetRecord {
    pub name: String,
    pub path: String,
    pub sha256: String,
    /// Rows (item × criterion with a gold answer) selected for the run.
    pub rows: usize,
    pub limit: Option<usize>,
    pub family: Option<String>,
    pub skipped: Vec<crate::formats::evalset::SkippedLine>,
}

/// One ordering of a row as scored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OrderingRecord {
    /// Slot → option index: letter `A` showed option `order[0]`.
    pub order: Vec<usize>,
    /// Softmax over the letters, by slot (readout); one-hot on the parsed letter (generate).
    pub letter_probs: Vec<f64>,
    /// Share of the full next-token distribution on the letters, when the full head was computed.
    pub letter_mass: Option<f64>,
    /// The generated reply (generate mode).
    pub reply: Option<String>,
    pub prompt_sha256: String,
}
pub use crate::config::{default_pass_tokens, Levers, RunConfig};

/// The worked examples a run used: a primary set, and an alternate for rows of the primary's groups.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ShotRecord {
    pub primary: Vec<String>,
    pub alternate: Vec<String>,
}

/// How much work the plan saved.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PlanRecord {
    pub prompts: usize,
    /// Tokens of every prompt counted in full.
    pub prompt_tokens: usize,
    /// Tokens in the prompt tree (each shared prefix once).
    pub unique_tokens: usize,
    /// Tokens that went through the model.
    pub computed_tokens: usize,
    /// Rows whose state was cut from the middle to fit the context (`--truncate-middle`).
    #[serde(default)]
    pub truncated_rows: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Timing {
    pub wall_seconds: f64,
    pub model_load_seconds: f64,
    pub rows_per_second: f64,
    pub mean_row_seconds: f64,
    /// The process's peak resident memory when the file was written (`memory::peak_rss`);
    /// absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// The GPU's peak allocated memory, on a GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_device_bytes: Option<u64>,
}

/// One scored row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RowRecord {
    pub id: String,
    pub family: String,
    pub group_id: String,
    pub option_ids: Vec<String>,
    pub gold: usize,
    pub gold_id: String,
    pub shots: Vec<String>,
    pub orderings: Vec<OrderingRecord>,
    /// Combined probabilities by option index; null for an invalid generate reply.
    pub probs: Option<Vec<f64>>,
    pub predicted: Option<usize>,
    pub predicted_id: Option<String>,
    pub correct: bool,
    pub invalid: bool,
    /// Null when only one ordering was scored ("not checked").
    pub order_unstable: Option<bool>,
    /// Present when the row's state was cut from the middle to fit the context
    /// (`--truncate-middle`): how many tokens its longest prompt lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_tokens: Option<usize>,
}

impl RowRecord {
    pub fn scored(&self) -> ScoredRow {
        ScoredRow {
            id: self.id.clone(),
            family: self.family.clone(),
            group_id: self.group_id.clone(),
            gold: self.gold,
            option_ids: self.option_ids.clone(),
            probs: self.probs.clone(),
            predicted: self.predicted,
            order_unstable: self.order_unstable,
            letter_picks: self
                .orderings
                .iter()
                .filter_map(|o| {
                    let gold = o.order.iter().position(|&i| i == self.gold)?;
                    // An invalid generated reply has no letter: all its letter probabilities are 0.
                    let chosen = o.letter_probs.iter().any(|&p| p > 0.0).then(|| crate::math::argmax(&o.letter_probs));
                    Some(crate::metrics::LetterPick { chosen, gold })
                })
                .collect(),
        }
    }
}

/// A whole result file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ResultFile {
    pub schema: String,
    pub schema_version: u32,
    pub status: Status,
    pub created: String,
    pub program: Program,
    pub machine: Machine,
    pub model: ModelRecord,
    pub eval_set: EvalSetRecord,
    pub config: RunConfig,
    pub shots: ShotRecord,
    /// Extra state a debias mode needs (the PriDe prior by option count, its sample row ids).
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub debias_state: serde_json::Value,
    pub plan: PlanRecord,
    pub metrics: Option<Summary>,
    pub timing: Timing,
    pub rows: Vec<RowRecord>,
}

impl ResultFile {
    /// Recompute metrics from the rows.
    pub fn summarize(&mut self) {
        let rows: Vec<ScoredRow> = self.rows.iter().map(|r| r.scored()).collect();
        self.metrics = (!rows.is_empty())
            .then(|| crate::metrics::summarize(&rows, self.config.bootstrap_resamples, self.config.bootstrap_seed));
    }

    /// Write atomically: a temporary file beside `path`, flushed, then renamed over it.
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::BadFile { path: path.to_path_buf(), reason: format!("serialising the result: {e}") })?;
        crate::atomic::write(path, &bytes)
    }

    /// Read and check a result file.
    pub fn load(path: &Path) -> Result<ResultFile> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::from_bytes(&bytes, path)
    }

    /// Check result-file bytes; `path` only names the source in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<ResultFile> {
        let bad = |reason: String| Error::BadFile { path: path.to_path_buf(), reason };
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            bad(format!(
                "not a complete JSON document ({e}); the file is cut short or is not a result file: re-run the evaluation (`--resume` completes a partial run)"
            ))
        })?;
        if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
            return Err(bad(format!(
                "not a Readout result file (`schema` is not \"{SCHEMA}\"); pass a file written by `readout run` or the app"
            )));
        }
        let version = v.get("schema_version").and_then(|s| s.as_u64()).unwrap_or(0);
        if version != SCHEMA_VERSION as u64 {
            return Err(bad(format!(
                "field `schema_version`: the file is version {version}, but this program reads version {SCHEMA_VERSION}; read it with the Readout that wrote it, or re-run the evaluation with this one"
            )));
        }
        let rows = v.get("rows").cloned();
        let mut file: ResultFile = serde_json::from_value(v).map_err(|e| {
            // Name the row when one row is the problem.
            let at = rows
                .as_ref()
                .and_then(|r| r.as_array())
                .and_then(|rows| {
                    rows.iter().enumerate().find_map(|(i, r)| {
                        serde_json::from_value::<RowRecord>(r.clone()).err().map(|e| format!("field `rows[{i}]`: {e}"))
                    })
                })
                .unwrap_or_else(|| e.to_string());
            bad(format!(
                "does not match the result format ({at}); the file was edited or written by another program: re-run the evaluation"
            ))
        })?;
        if file.metrics.as_ref().is_some_and(|m| m.chance.is_none()) {
            let scored = file.scored_rows();
            if let Some(m) = file.metrics.as_mut() {
                m.fill_chance(&scored);
            }
        }
        Ok(file)
    }

    /// The rows as the metrics see them.
    pub fn scored_rows(&self) -> Vec<ScoredRow> {
        self.rows.iter().map(|r| r.scored()).collect()
    }
}

/// The default file name for a run: eval set, model, mode, shots, debias.
pub fn default_name(eval_set: &str, model: &str, cfg: &RunConfig) -> PathBuf {
    let clean =
        |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                        c.to_ascii_lowercase()
                    } else {
                        '-'
                    }
                })
                .collect()
        };
    let mut name =
        format!("{}_{}_{}_{}shot_{}", clean(eval_set), clean(model), cfg.mode.as_str(), cfg.shots, cfg.debias.as_str());
    if cfg.prompt_version == crate::config::PromptVersion::TerseV1 {
        name.push_str("_terse");
    }
    if !cfg.levers.prefix_tree {
        name.push_str("_notree");
    }
    if !cfg.levers.batched_suffixes {
        name.push_str("_nobatch");
    }
    if !cfg.levers.trim {
        name.push_str("_notrim");
    }
    // A pass size one of the engine's own defaults chose (the CPU's, a GPU's, or the 1024 of
    // files before them) is not a lever set, and is not named.
    let own = [default_pass_tokens(), crate::engine::CPU_PASS_TOKENS, crate::engine::GPU_PASS_TOKENS];
    if !own.contains(&cfg.levers.pass_tokens) {
        name.push_str(&format!("_pass{}", cfg.levers.pass_tokens));
    }
    if cfg.levers.prune_head {
        name.push_str("_pruned");
    }
    if cfg.levers.matmul != crate::engine::MatmulPath::Dense {
        name.push('_');
        name.push_str(cfg.levers.matmul.as_str());
    }
    if cfg.truncate != crate::truncate::Truncate::None {
        name.push_str("_truncate-");
        name.push_str(cfg.truncate.as_str());
    }
    PathBuf::from(format!("{name}.json"))
}

/// An RFC 3339 UTC timestamp for `created`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `path` when nothing is there, else the first free `STEM-2.json`, `STEM-3.json`, …: how the app
/// saves into the bench folder without overwriting a file (the CLI refuses instead, unless
/// `--force`).
pub fn unused_path(path: &Path) -> std::path::PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    (2..)
        .map(|n| path.with_file_name(format!("{stem}-{n}{ext}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamp_shape() {
        let t = super::now_utc();
        assert_eq!(t.len(), 20);
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T');
    }

    #[test]
    fn unused_path_never_names_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.json");
        assert_eq!(super::unused_path(&p), p);
        std::fs::write(&p, "x").unwrap();
        assert_eq!(super::unused_path(&p), dir.path().join("run-2.json"));
        std::fs::write(dir.path().join("run-2.json"), "x").unwrap();
        assert_eq!(super::unused_path(&p), dir.path().join("run-3.json"));
    }

    #[test]
    fn a_pass_size_is_named_only_when_the_run_chose_one_of_its_own() {
        use crate::config::RunConfig;
        use crate::engine::DeviceProfile;
        let name = |c: &RunConfig| super::default_name("set", "m", c).display().to_string();
        let cpu = DeviceProfile { gpu: false, threads: 2 };
        // The device's own size (the CPU's 512, a GPU's 16,384) is no lever set.
        let open = RunConfig::builder().build().unwrap();
        assert_eq!(name(&open.clone().resolve_for(&cpu)), "set_m_readout_0shot_none.json");
        assert_eq!(name(&open.resolve_for(&DeviceProfile { gpu: true, threads: 1 })), "set_m_readout_0shot_none.json");
        let chosen = RunConfig::builder().pass_tokens(640).build().unwrap().resolve_for(&cpu);
        assert_eq!(name(&chosen), "set_m_readout_0shot_none_pass640.json");
    }
}
