//! `readout prompts`: print the exact prompts a run would score, one JSON object a line
//! (`id`, `prompt`, `letters`; with `--token-ids` also `token_ids`, the model's tokens of the
//! prompt), so peers (llama.cpp, PyTorch) can be fed the same text and their tokens checked.

use super::{ModelArgs, SelectArgs};
use anyhow::{Context, Result};
use clap::Args;
use readout::formats::evalset::{EvalSet, LoadOptions};
use readout::jobs::run::prompt_texts;
use std::io::Write;

#[derive(Args)]
pub struct PromptsArgs {
    #[command(flatten)]
    select: SelectArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Also print each prompt's token ids as the model's tokenizer reads it (`token_ids`).
    #[arg(long)]
    token_ids: bool,
}

pub fn run(a: PromptsArgs) -> Result<i32> {
    let sel = &a.select;
    let set =
        EvalSet::load(&sel.evalset, &LoadOptions { limit: None, family: sel.family.clone(), ..Default::default() })?;
    let config = sel.builder()?.matmul(a.model.matmul).build()?;
    readout::jobs::run::check_input(&set, &config, sel.limit)?;
    let engine = a.model.load()?;
    let mut out = std::io::stdout().lock();
    for p in prompt_texts(&engine, &set, &config, sel.limit)? {
        let mut line = serde_json::to_value(&p)?;
        if a.token_ids {
            let ids = engine.tokenizer().encode(&p.prompt).with_context(|| format!("tokenizing prompt {}", p.id))?;
            line["token_ids"] = serde_json::json!(ids);
        }
        writeln!(out, "{}", serde_json::to_string(&line)?)?;
    }
    Ok(0)
}
