//! `readout run EVALSET`: evaluate a model on a labelled eval set and write a result file.

use super::ModelArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use readout::debias::DebiasMode;
use readout::evalset::{EvalSet, LoadOptions};
use readout::results::{default_name, ResultFile, Status};
use readout::run::{default_config, run, Control, Mode, Progress, RunInput};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// The eval set (JSON Lines, row or request form).
    evalset: PathBuf,
    /// readout (letter logits) or generate (greedy decode, first valid letter).
    #[arg(long, default_value = "readout")]
    mode: Mode,
    /// Worked examples before each scored item.
    #[arg(long, default_value_t = 0)]
    shots: usize,
    /// Seed for choosing the shots.
    #[arg(long, default_value_t = 0)]
    shot_seed: u64,
    /// none, cyclic, permutation, calibrate or pride.
    #[arg(long, default_value = "none")]
    debias: DebiasMode,
    /// Only the first N items (after --family).
    #[arg(long)]
    limit: Option<usize>,
    /// Only items of this family.
    #[arg(long)]
    family: Option<String>,
    /// Score the good lines of a set with bad ones, and record what was skipped.
    #[arg(long)]
    skip_bad: bool,
    /// Compute only the answer letters' rows of the LM head.
    #[arg(long)]
    prune_head: bool,
    /// Result file to write [default: bench/results/<evalset>_<model>_<mode>_<shots>shot_<debias>.json].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Overwrite an existing result file.
    #[arg(long)]
    force: bool,
    /// Complete a partial result file (same options), writing to it.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Print the metrics as JSON at the end instead of a summary.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run_cmd(a: RunArgs) -> Result<i32> {
    let set =
        EvalSet::load(&a.evalset, &LoadOptions { skip_bad: a.skip_bad, limit: a.limit, family: a.family.clone() })?;
    if !set.skipped.is_empty() {
        eprintln!(
            "readout: skipped {} bad line(s) of {} (recorded in the result file)",
            set.skipped.len(),
            a.evalset.display()
        );
    }
    let t0 = std::time::Instant::now();
    let mut engine = a.model.load()?;
    engine.set_prune_head(a.prune_head);
    let load_seconds = t0.elapsed().as_secs_f64();
    let mut config = default_config(a.mode, a.shots, a.debias);
    config.shot_seed = a.shot_seed;
    config.levers.prune_head = a.prune_head;
    config.levers.matmul = format!("{:?}", engine.info().matmul).to_lowercase();
    let resume = match &a.resume {
        Some(p) => {
            let r = ResultFile::load(p)?;
            if r.status == Status::Complete {
                bail!("{} is already complete; nothing to resume", p.display());
            }
            config = r.config.clone();
            Some(r)
        }
        None => None,
    };
    let out = match (&a.resume, &a.out) {
        (Some(p), _) => p.clone(),
        (None, Some(o)) => o.clone(),
        (None, None) => {
            let stem = engine.info().path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            PathBuf::from("bench/results").join(default_name(&set.name, &stem, &config))
        }
    };
    if a.resume.is_none() && out.exists() && !a.force {
        bail!(
            "{} exists; pass --force to overwrite it, --out to write elsewhere, or --resume to complete it",
            out.display()
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            eprintln!("\nreadout: stopping after the current rows (Ctrl-C again to quit at once)");
        });
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} rows  {per_sec}  elapsed {elapsed}  eta {eta}")
            .expect("static template"),
    );
    let mut progress = |p: Progress| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
    };
    let mut control =
        Control { progress: &mut progress, stop: &stop, checkpoint: Some((&out, Duration::from_secs(10))) };
    let result = run(
        RunInput {
            engine: &engine,
            eval_set: &set,
            config,
            model_load_seconds: load_seconds,
            resume,
            limit: a.limit,
            family: a.family.clone(),
        },
        &mut control,
    )
    .context("running the evaluation")?;
    bar.finish_and_clear();
    result.write(&out).with_context(|| format!("writing {}", out.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result.metrics)?);
    } else {
        super::report::print_summary(&result, &out);
    }
    Ok(if result.status == Status::Partial { 130 } else { 0 })
}
