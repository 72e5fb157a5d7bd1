//! `readout prompts`: print the exact prompts a run would score, one JSON object a line
//! (`id`, `prompt`, `letters`), so peers (llama.cpp, PyTorch) can be fed the same text.

use super::ModelArgs;
use anyhow::Result;
use clap::Args;
use readout::debias::{orderings, DebiasMode};
use readout::evalset::{EvalSet, LoadOptions};
use readout::prompt::{self, LETTERS};
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct PromptsArgs {
    /// The eval set (JSON Lines).
    evalset: PathBuf,
    /// Only the first N items.
    #[arg(long)]
    limit: Option<usize>,
    /// Which orderings to print (none: as written; cyclic: every rotation).
    #[arg(long, default_value = "none")]
    debias: DebiasMode,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(a: PromptsArgs) -> Result<i32> {
    let set = EvalSet::load(&a.evalset, &LoadOptions { limit: a.limit, ..Default::default() })?;
    let engine = a.model.load()?;
    let mut out = std::io::stdout().lock();
    for item in &set.items {
        for c in &item.criteria {
            let ords = orderings(a.debias, c.options.len()).map_err(anyhow::Error::msg)?;
            for (oi, ord) in ords.iter().enumerate() {
                let text = engine.template().render(&prompt::messages(&[], prompt::user_turn(&item.state, c, ord)))?;
                let id = if ords.len() > 1 { format!("{}#{}#{oi}", item.id, c.name) } else { item.id.clone() };
                let line = serde_json::json!({"id": id, "prompt": text, "letters": &LETTERS[..c.options.len()]});
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(0)
}
