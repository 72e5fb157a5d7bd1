//! `readout prompts`: print the exact prompts a run would score, one JSON object a line
//! (`id`, `prompt`, `letters`), so peers (llama.cpp, PyTorch) can be fed the same text.

use super::{ModelArgs, SelectArgs};
use anyhow::Result;
use clap::Args;
use readout::evalset::{EvalSet, LoadOptions};
use readout::run::prompt_texts;
use std::io::Write;

#[derive(Args)]
pub struct PromptsArgs {
    #[command(flatten)]
    select: SelectArgs,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(a: PromptsArgs) -> Result<i32> {
    let sel = &a.select;
    let set =
        EvalSet::load(&sel.evalset, &LoadOptions { limit: None, family: sel.family.clone(), ..Default::default() })?;
    let config = sel.builder()?.matmul(a.model.matmul).build()?;
    readout::run::check_input(&set, &config, sel.limit)?;
    let engine = a.model.load()?;
    let mut out = std::io::stdout().lock();
    for p in prompt_texts(&engine, &set, &config, sel.limit)? {
        writeln!(out, "{}", serde_json::to_string(&p)?)?;
    }
    Ok(0)
}
