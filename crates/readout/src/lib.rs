//! Readout: decide rubric criteria with a small local language model by reading the logits of
//! the answer letters, and evaluate such models honestly.
//!
//! The layers, each using only those above it in this list (a test keeps it so):
//! utilities ([`error`], [`math`], [`hash`], [`atomic`], [`memory`]); the [`engine`] (a model,
//! its tokenizer and chat template, the passes: nothing about rubrics); the [`hub`] and the
//! [`models`] catalogue; the typed options ([`config`], [`debias`], [`truncate`]) and the
//! figures ([`metrics`], [`agreement`] between raters, [`rates`] corrected by labels,
//! [`pairwise`] win rates and Bradley–Terry scores); the
//! [`formats`] Readout reads and writes (rubrics, eval sets, texts, result, calibration and
//! labels files); the [`pipeline`], one module per stage, data flowing one way: input (an eval
//! set's rows with gold, or a rubric's criteria for texts) → plan (prompts, fitted to the
//! context, as one prompt tree) → exec (the walk of the tree through the engine) → combine
//! (orderings and debias), then metrics and the result file; the [`jobs`] ([`jobs::run`],
//! [`jobs::score`], the one [`jobs::request::ScoreRequest`] every shell builds); and the
//! [`analysis`] tools. The CLI, the service, the desktop app and Python only parse, call and
//! present.

/// `as_str` (the name the CLI and result files use) and `FromStr` for an option's enum, from one
/// list of names, so that every option spells its values one way everywhere (the engine's
/// options, the mode, the truncation). Defined before the modules so that all of them see it.
macro_rules! option_names {
    ($t:ident, $what:literal, $expected:literal, { $($v:ident => $s:literal),+ $(,)? }) => {
        impl $t {
            /// The value's name, as the CLI takes it and result files record it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($t::$v => $s),+
                }
            }
        }
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                match s {
                    $($s => Ok($t::$v),)+
                    other => Err(format!(concat!("unknown ", $what, " `{}` (expected ", $expected, ")"), other)),
                }
            }
        }
    };
}

// Below everything: errors, arithmetic, hashing, atomic writes, memory readings.
pub mod atomic;
pub mod error;
pub mod hash;
pub mod math;
pub mod memory;
// The engine: a model, its tokenizer and chat template, the passes; no rubric in it.
pub mod engine;
pub mod quantize;
// Models from the hub (the readout-hub crate) and the catalogue of known ones.
pub use readout_hub as hub;
pub mod models;
// The typed options every number depends on, and the metrics.
pub mod agreement;
pub mod config;
pub mod debias;
pub mod metrics;
pub mod pairwise;
pub mod rates;
pub mod truncate;
// The files Readout reads and writes.
pub mod formats;
// The stages a job's prompts go through.
pub mod pipeline;
// The jobs the shells run: evaluate, score, the one score request.
pub mod jobs;
// Tools over result files and models: benchmarks, levers, calibration fits, log-likelihoods.
pub mod analysis;

pub use error::{Error, GgufProblem, Invalid, Loc, Result};

/// File name of the default model inside `models/` (see `models/manifest`).
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Where the default model is looked for, in this order: `from_env` (what the shell read from
/// `READOUT_MODEL`), the user's data folder (`data_dir/models/`: for the CLI the platform's data
/// folder's `readout/`, for the app its own), then `models/` of the current folder (a checkout). The first that exists;
/// when none does, the checkout's path, so that the error names where `models/fetch` puts it.
/// Never the folder the binary was built in: an installed binary must not depend on it.
pub fn default_model_path(
    from_env: Option<std::path::PathBuf>,
    data_dir: Option<&std::path::Path>,
) -> std::path::PathBuf {
    if let Some(p) = from_env.filter(|p| !p.as_os_str().is_empty()) {
        return p;
    }
    let local = std::path::Path::new("models").join(DEFAULT_MODEL_FILE);
    let user = data_dir.map(|d| d.join("models").join(DEFAULT_MODEL_FILE));
    user.into_iter().find(|p| p.exists()).unwrap_or(local)
}
