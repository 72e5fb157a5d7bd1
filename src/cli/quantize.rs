//! `readout quantize IN -o OUT.gguf --mode q8_0`: re-encode a model's weights, from a GGUF file
//! or a Hugging Face model directory.

use anyhow::{Context, Result};
use clap::Args;
use readout::quantize::{quantize, QuantMode};
use std::path::PathBuf;

#[derive(Args)]
pub struct QuantizeArgs {
    /// The source: a GGUF file, or a Hugging Face model directory (config.json, *.safetensors,
    /// tokenizer.json, tokenizer_config.json), converted as llama.cpp's convert_hf_to_gguf.py does.
    input: PathBuf,
    /// Where to write the new GGUF.
    #[arg(long, short = 'o')]
    output: PathBuf,
    /// Target encoding: f32, f16, q8_0, q4_0, q4_1, q4_k or q6_k (k-quants need rows of 256
    /// values; narrower matrices get q5_0 for q4_k and q8_0 for q6_k, as llama.cpp does).
    #[arg(long)]
    mode: QuantMode,
}

pub fn run(a: QuantizeArgs) -> Result<i32> {
    let n = quantize(&a.input, &a.output, a.mode)
        .with_context(|| format!("re-encoding {} as {:?}", a.input.display(), a.mode))?;
    eprintln!("wrote {} ({n} tensors)", a.output.display());
    Ok(0)
}
