//! `readout decide`: a System One request (TypeSafe's `POST /v1/systemone` body, as a file or on
//! standard input) decided on the model, its answer printed as the endpoint gives it. The
//! library reads the request and makes the answer ([`readout::jobs::systemone`]); this shell reads
//! the file, loads the model and prints.

use super::ModelArgs;
use anyhow::{Context, Result};
use clap::Args;
use readout::config::RunConfig;
use readout::debias::DebiasMode;
use readout::jobs::decide::decide;
use readout::jobs::systemone::SystemOneRequest;
use std::io::Read;
use std::path::PathBuf;

#[derive(Args)]
pub struct DecideArgs {
    /// The request: a JSON file, or `-` for standard input (`{"model": "jev-latest", "state": …,
    /// "questions": {id: {"type": "choice"|"noul"|"score", …}}}`; docs/systemone.md).
    #[arg(long, value_name = "FILE|-")]
    request: PathBuf,
    /// The debias mode of a request that names no `x_debias`: none, cyclic or permutation
    /// (applied to questions of at most 10 options, as `serve` does).
    #[arg(long, default_value = "cyclic")]
    debias: DebiasMode,
    /// Print the answer on one line instead of indented.
    #[arg(long)]
    compact: bool,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(a: DecideArgs) -> Result<i32> {
    let bytes = if a.request.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin().read_to_end(&mut b).context("reading the request from standard input")?;
        b
    } else {
        std::fs::read(&a.request).with_context(|| format!("reading the request {}", a.request.display()))?
    };
    let request = SystemOneRequest::from_json(&bytes).with_context(|| format!("{}", a.request.display()))?;
    let engine = a.model.load()?;
    let config = RunConfig::builder().build()?;
    let answer = decide(&engine, &request, config, a.debias)?;
    let text = if a.compact { serde_json::to_string(&answer)? } else { serde_json::to_string_pretty(&answer)? };
    println!("{text}");
    Ok(0)
}
