//! `readout run EVALSET`: evaluate a model on a labelled eval set and write a result file.

use super::{ModelArgs, SelectArgs};
use anyhow::{Context, Result};
use clap::Args;
use readout::formats::evalset::{EvalSet, LoadOptions};
use readout::formats::results::{default_name, unused_path, ResultFile, Status};
use readout::jobs::run::{run, Control, Mode, Progress, RunInput};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    select: SelectArgs,
    /// readout (letter logits) or generate (greedy decode, first valid letter).
    #[arg(long, default_value = "readout")]
    mode: Mode,
    /// Score the good lines of a set with bad ones, and record what was skipped.
    #[arg(long)]
    skip_bad: bool,
    /// Compute only the answer letters' rows of the LM head.
    #[arg(long)]
    prune_head: bool,
    /// Prompt layout: default (readout-v1) or terse (readout-terse-v1: fewer tokens per criterion).
    #[arg(long, default_value = "default")]
    prompt: readout::pipeline::prompt::PromptVersion,
    /// Lever off: score every prompt from scratch instead of sharing prefixes in a tree.
    #[arg(long)]
    no_prefix_tree: bool,
    /// Lever off: one suffix per forward pass, no batching of units.
    #[arg(long)]
    no_batch: bool,
    /// Lever off: full-vocabulary logits at every position of every pass.
    #[arg(long)]
    no_trim: bool,
    /// Units of one pass on the same parent share one attention: true or false [default: true on a GPU, false on the CPU].
    #[arg(long)]
    group_units: Option<bool>,
    /// Two passes at a time: true or false [default: true on a CPU of several threads].
    #[arg(long)]
    side_by_side: Option<bool>,
    /// Most new tokens per forward pass when batching [default: 1024 on the CPU, 16384 on a GPU].
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pass_tokens: Option<usize>,
    /// Result file to write [default: bench/results/<evalset>_<model>_<mode>_<shots>shot_<debias>.json, or the first free <name>-2.json, <name>-3.json, … beside it].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Overwrite an existing result file.
    #[arg(long)]
    force: bool,
    /// Complete a partial result file (same options), writing to it.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Rewrite the partial result file at most this often while the run goes (seconds; 0: after every pass). A killed run keeps what the last rewrite held.
    #[arg(long, default_value_t = readout::jobs::run::CHECKPOINT_EVERY.as_secs_f64(), value_parser = parse_seconds)]
    checkpoint_every: f64,
    /// Print the metrics as JSON at the end instead of a summary.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run_cmd(a: RunArgs) -> Result<i32> {
    let sel = &a.select;
    let set =
        EvalSet::load(&sel.evalset, &LoadOptions { skip_bad: a.skip_bad, limit: None, family: sel.family.clone() })?;
    if !set.skipped.is_empty() {
        eprintln!(
            "readout: skipped {} bad line(s) of {} (recorded in the result file)",
            set.skipped.len(),
            sel.evalset.display()
        );
    }
    let mut builder = sel
        .builder()?
        .mode(a.mode)
        .prompt_version(a.prompt)
        .prune_head(a.prune_head)
        .prefix_tree(!a.no_prefix_tree)
        .batched_suffixes(!a.no_batch)
        .trim(!a.no_trim)
        .group_units(a.group_units)
        .side_by_side(a.side_by_side)
        .matmul(a.model.matmul);
    if let Some(n) = a.pass_tokens {
        builder = builder.pass_tokens(n);
    }
    // The device's levers (the pass size among them) are resolved in the library, as for every shell.
    let mut config = builder.build()?;
    // The set's rows and shots are checked before the model loads: a bad input costs no load.
    readout::jobs::run::check_input(&set, &config, sel.limit)?;
    // A bad partial file is refused before the model loads; it is resumed once it has.
    if let Some(p) = &a.resume {
        ResultFile::load(p)?;
    }
    let t0 = std::time::Instant::now();
    let engine = a.model.load()?;
    let load_seconds = t0.elapsed().as_secs_f64();
    config = config.resolve(&engine);
    let resume = match &a.resume {
        Some(p) => {
            let (partial, resumed) = readout::jobs::run::resume(&engine, p)?;
            config = resumed;
            Some(partial)
        }
        None => None,
    };
    let out = match (&a.resume, &a.out) {
        (Some(p), _) => p.clone(),
        (None, Some(o)) => o.clone(),
        (None, None) => {
            // The default name never overwrites: an existing file (a committed result, an
            // earlier run) leaves this one the first free `NAME-2.json`, `NAME-3.json`, ….
            let stem = engine.info().path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            // A pass size the user did not choose (the device's) is not named.
            let mut named = config.clone();
            if a.pass_tokens.is_none() {
                named.levers.pass_tokens = readout::formats::results::default_pass_tokens();
            }
            let path = PathBuf::from("bench/results").join(default_name(&set.name, &stem, &named));
            if a.force {
                path
            } else {
                unused_path(&path)
            }
        }
    };
    if a.resume.is_none() && out.exists() && !a.force {
        return Err(readout::Error::Config(format!(
            "{} exists and is kept; pass --force to overwrite it, --out to write elsewhere, or --resume to complete a partial file",
            out.display()
        ))
        .into());
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
    let mut control = Control {
        progress: &mut progress,
        stop: &stop,
        checkpoint: Some((&out, Duration::from_secs_f64(a.checkpoint_every))),
    };
    let result = run(
        RunInput {
            engine: &engine,
            eval_set: &set,
            config,
            model_load_seconds: load_seconds,
            resume,
            limit: sel.limit,
            family: sel.family.clone(),
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

fn parse_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds (0 or more)")),
    }
}
