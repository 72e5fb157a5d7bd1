//! Readout: decide rubric criteria with a small local language model by reading the logits of
//! the answer letters, and evaluate such models honestly.
//!
//! The pipeline: rubric or eval set → [`plan`] → [`engine`] → combine → metrics → result file.
//! The CLI (`src/main.rs`) and the desktop app only parse, call and present.

pub mod bench;
pub mod debias;
pub mod derive;
pub mod device;
pub mod engine;
pub mod error;
pub mod evalset;
pub mod hash;
pub mod levers;
pub mod math;
pub mod memory;
pub mod metrics;
pub mod plan;
pub mod prompt;
pub mod quantize;
pub mod results;
pub mod rubric;
pub mod run;
pub mod score;
pub mod truncate;

pub use error::{Error, GgufProblem, Result};

/// File name of the default model inside `models/` (see `models/manifest`).
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Where the default model is looked for: `$READOUT_MODEL`, then `./models/`, then the
/// `models/` folder of the source tree this binary was built from.
pub fn default_model_path() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("READOUT_MODEL") {
        return p.into();
    }
    let local = std::path::Path::new("models").join(DEFAULT_MODEL_FILE);
    if local.exists() {
        return local;
    }
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(DEFAULT_MODEL_FILE);
    if built.exists() {
        return built;
    }
    local
}
