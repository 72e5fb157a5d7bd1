//! `readout run EVALSET`: evaluate a model on a labelled eval set and write a result file.

use super::{ModelArgs, SelectArgs};
use anyhow::{Context, Result};
use clap::Args;
use readout::analysis::jury::JuryOptions;
use readout::formats::evalset::{EvalSet, LoadOptions};
use readout::formats::judges::Panel;
use readout::formats::jury::JuryWeights;
use readout::formats::results::{default_name, unused_path, ResultFile, Status};
use readout::jobs::jury::{judge_result_path, run_panel, PanelRunInput};
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
    /// A judges file (schema/judges.schema.json: each judge's model, chat template, calibration
    /// and weight): a jury instead of one model, as several --model make one. --out is then the
    /// jury file; each judge's result file goes beside it (`OUT.judge-N.MODEL.json`).
    #[arg(long, value_name = "JUDGES.json", conflicts_with_all = ["model", "resume"])]
    judges: Option<PathBuf>,
    /// A jury's weights: equal, or fitted (each judge's temperature and the pool's weights
    /// cross-fitted on folds by group) [default: the judges file's weights where it gives them
    /// (given), else equal].
    #[arg(long, value_name = "equal|fitted")]
    jury_weights: Option<readout::formats::jury::JuryWeights>,
    /// With a jury: give no answer where the judges do not all give the same one.
    #[arg(long)]
    abstain_on_disagreement: bool,
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
    let panel = match &a.judges {
        Some(p) => Some(Panel::load(p)?),
        None if a.model.model.len() > 1 => Some(Panel::of_models(a.model.model.clone(), false)?),
        None => None,
    };
    if let Some(mut panel) = panel {
        panel.abstain_on_disagreement |= a.abstain_on_disagreement;
        return run_jury(&a, &panel, &set, config);
    }
    if a.abstain_on_disagreement || a.jury_weights.is_some() {
        anyhow::bail!(
            "--abstain-on-disagreement and --jury-weights are for a jury: give --model more than once, or --judges"
        );
    }
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
    let stop = stop_on_ctrl_c();
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

/// A jury's run: every judge reads the eval set in turn (its result file beside the jury's), then
/// their runs are pooled into the jury file (`readout jury`'s), whose summary is printed.
fn run_jury(a: &RunArgs, panel: &Panel, set: &EvalSet, config: readout::config::RunConfig) -> Result<i32> {
    if a.resume.is_some() {
        anyhow::bail!("--resume is for one model: run the jury again, or pool complete runs with `readout jury`");
    }
    let weights = match (a.jury_weights, panel.judges.iter().any(|j| j.weight.is_some())) {
        (Some(w), _) => w,
        (None, true) => JuryWeights::Given,
        (None, false) => JuryWeights::Equal,
    };
    let out = match &a.out {
        Some(o) => o.clone(),
        None => {
            let path = PathBuf::from("bench/results").join(default_name(&set.name, "jury", &config));
            if a.force {
                path
            } else {
                unused_path(&path)
            }
        }
    };
    // Every file the jury writes is checked before the first judge loads.
    super::keep_existing(&out, a.force)?;
    for (i, j) in panel.judges.iter().enumerate() {
        super::keep_existing(&judge_result_path(&out, i, &j.model), a.force)?;
    }
    let stop = stop_on_ctrl_c();
    let n = panel.judges.len();
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} {bar:30} {pos}/{len} rows  {per_sec}  elapsed {elapsed}  eta {eta}",
        )
        .expect("static template"),
    );
    let mut current = usize::MAX;
    let mut progress = |i: usize, p: Progress| {
        if i != current {
            current = i;
            bar.reset();
            bar.set_message(format!("judge {}/{n}", i + 1));
        }
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
    };
    let mut load = |_: usize, spec: &readout::formats::judges::JudgeSpec| a.model.load_judge(spec);
    let mut keep = |i: usize, r: &ResultFile| -> readout::Result<PathBuf> {
        let path = judge_result_path(&out, i, &panel.judges[i].model);
        r.write(&path)?;
        Ok(path)
    };
    let input = PanelRunInput { panel, eval_set: set, config, limit: a.select.limit, family: a.select.family.clone() };
    let run = run_panel(input, &mut load, &mut progress, &stop, &mut keep).context("running the jury")?;
    bar.finish_and_clear();
    let opts = JuryOptions {
        weights,
        folds: readout::analysis::calibrate::FOLDS,
        seed: 0,
        resamples: 1000,
        bootstrap_seed: 0,
        abstain_on_disagreement: panel.abstain_on_disagreement,
    };
    let given = (weights == JuryWeights::Given).then(|| panel.weights());
    let file = readout::analysis::jury::combine_weighted(&run.judges(), opts, given.as_deref())?;
    file.write(&out).with_context(|| format!("writing {}", out.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&file)?);
        return Ok(0);
    }
    for (i, (j, (path, _, _))) in run.judges.iter().zip(&run.results).enumerate() {
        let rss = j.peak_rss_bytes.map(|b| format!(", peak RSS {:.0} MB", b as f64 / 1e6)).unwrap_or_default();
        println!(
            "judge {} {}: load {:.1} s, run {:.1} s{rss} → {}",
            i + 1,
            j.model,
            j.load_seconds,
            j.seconds,
            path.display()
        );
    }
    super::jury::print_summary(&file);
    println!("wrote {}", out.display());
    Ok(0)
}

/// A flag Ctrl-C sets: the run stops after the rows in flight (a second Ctrl-C quits at once).
fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\nreadout: stopping after the current rows (Ctrl-C again to quit at once)");
    });
    stop
}

fn parse_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds (0 or more)")),
    }
}
