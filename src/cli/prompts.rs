//! `readout prompts`: print the exact prompts a run would score, one JSON object a line
//! (`id`, `prompt`, `letters`), so peers (llama.cpp, PyTorch) can be fed the same text.

use super::ModelArgs;
use anyhow::Result;
use clap::Args;
use readout::debias::DebiasMode;
use readout::evalset::{EvalSet, LoadOptions};
use readout::run::{default_config, prompt_texts, Mode};
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct PromptsArgs {
    /// The eval set (JSON Lines).
    evalset: PathBuf,
    /// Only the first N items.
    #[arg(long)]
    limit: Option<usize>,
    /// Only items of this family.
    #[arg(long)]
    family: Option<String>,
    /// Worked examples before each item, chosen as `readout run` chooses them.
    #[arg(long, default_value_t = 0)]
    shots: usize,
    #[arg(long, default_value_t = 0)]
    shot_seed: u64,
    /// Which orderings (and calibration variants) to print, as `readout run --debias`.
    #[arg(long, default_value = "none")]
    debias: DebiasMode,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(a: PromptsArgs) -> Result<i32> {
    let set =
        EvalSet::load(&a.evalset, &LoadOptions { limit: a.limit, family: a.family.clone(), ..Default::default() })?;
    let engine = a.model.load()?;
    let mut config = default_config(Mode::Readout, a.shots, a.debias);
    config.shot_seed = a.shot_seed;
    let mut out = std::io::stdout().lock();
    for p in prompt_texts(&engine, &set, &config)? {
        writeln!(out, "{}", serde_json::to_string(&p)?)?;
    }
    Ok(0)
}
