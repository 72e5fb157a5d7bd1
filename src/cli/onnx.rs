//! `readout onnx`: the seed's levers as edits of an ONNX export, for onnxruntime to run
//! (the library's `engine::edit_onnx`); this parses and prints.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct OnnxArgs {
    #[command(subcommand)]
    command: OnnxCommand,
}

#[derive(Subcommand)]
enum OnnxCommand {
    /// Apply the LM head at the last position only (a Gather of the last position before it).
    Trim(EditArgs),
    /// Cut the LM head to the answer letters' rows: logit i is letter i's.
    Prune(PruneArgs),
}

#[derive(Args)]
struct EditArgs {
    /// The export's directory (model.onnx in it or in its onnx/ folder, config.json and tokenizer.json beside).
    #[arg(short = 'm', long = "model")]
    model: PathBuf,
    /// The new directory to write the edited export into (its external data linked or copied).
    #[arg(short, long)]
    out: PathBuf,
}

#[derive(Args)]
struct PruneArgs {
    #[command(flatten)]
    edit: EditArgs,
    /// The letters to keep, in order (each one token of the model's vocabulary).
    #[arg(long, default_value = "ABCD")]
    to: String,
}

pub fn run(a: OnnxArgs) -> Result<i32> {
    let (args, edit, what) = match a.command {
        OnnxCommand::Trim(e) => {
            (e, readout::engine::OnnxEdit::Trim, "the LM head at the last position only".to_string())
        }
        OnnxCommand::Prune(p) => {
            let letters: Vec<String> = p.to.chars().map(String::from).collect();
            let what = format!("the LM head cut to {}", p.to);
            (p.edit, readout::engine::OnnxEdit::Prune { letters }, what)
        }
    };
    let report = readout::engine::edit_onnx(&args.model, &args.out, &edit)
        .with_context(|| format!("editing the ONNX export in {}", args.model.display()))?;
    eprintln!("readout: wrote {} ({} bytes): {what} (node {})", report.file.display(), report.bytes, report.head);
    Ok(0)
}
