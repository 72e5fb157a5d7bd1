//! `readout derive MODEL`: the DERIVED figures (FLOPs, bytes, sizes) of a model's shape, read
//! from its metadata only, so that speed claims about the levers can be checked against
//! arithmetic. The work is in `readout::analysis::derive`; this prints it.

use anyhow::{Context, Result};
use clap::Args;
use readout::analysis::derive::{derive_file, DeriveOptions};
use std::path::PathBuf;

#[derive(Args)]
pub struct DeriveArgs {
    /// A GGUF file or a Hugging Face model directory (only its metadata / config.json is read).
    pub model: PathBuf,
    /// Prompt length for the trim and KV-cache figures.
    #[arg(long, default_value_t = 600)]
    pub prompt_tokens: u64,
    /// Rows left when the LM head is pruned to the answer letters.
    #[arg(long, default_value_t = 4)]
    pub prune_to: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: DeriveArgs) -> Result<i32> {
    let d = derive_file(&a.model, DeriveOptions { prompt_tokens: a.prompt_tokens, prune_to: a.prune_to })
        .with_context(|| format!("deriving figures for {}", a.model.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        print!("{}", d.to_text());
    }
    Ok(0)
}
