//! Readout: decide rubric criteria with a small local language model by reading the logits of
//! the answer letters, and evaluate such models honestly.
//!
//! The pipeline, one module per stage, data flowing one way: [`input`] (an eval set's rows with
//! gold, or a rubric's criteria for texts) → [`plan`] (prompts, fitted to the context, as one
//! prompt tree) → [`exec`] (the walk of the tree through the [`engine`]) → [`combine`] (orderings
//! and debias) → [`metrics`] → [`results`]. [`pipeline`] runs exec and combine in their phases;
//! [`run`] and [`score`] only sequence the stages, under one [`config::RunConfig`]. The CLI
//! (`src/main.rs`), the desktop app and the other shells only parse, call and present.

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

pub mod bench;
pub mod answers;
pub mod atomic;
pub mod calibrate;
pub mod calibration;
pub mod combine;
pub mod config;
pub mod debias;
pub mod derive;
pub mod device;
pub mod engine;
pub mod error;
pub mod evalset;
pub mod exec;
pub mod hash;
pub mod hub;
pub mod input;
pub mod levers;
pub mod loglik;
pub mod math;
pub mod memory;
pub mod metrics;
pub mod models;
pub mod pipeline;
pub mod plan;
pub mod prompt;
pub mod quantize;
pub mod request;
pub mod results;
pub mod rubric;
pub mod run;
pub mod score;
pub mod shard;
pub mod template;
pub mod texts;
pub mod truncate;

pub use error::{Error, GgufProblem, Result};

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
