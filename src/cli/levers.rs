//! `readout bench levers EVALSET`: the run with every lever at its default, then once per lever
//! switched away from it, each written as an ordinary result file, and a summary comparing each
//! variant with the baseline (seconds, tokens run, accuracy, predictions row by row).

use super::{ModelArgs, SelectArgs};
use anyhow::{Context, Result};
use clap::Args;
use readout::analysis::levers::{markdown, row, variants, LeverRow};
use readout::formats::results::default_name;
use std::path::PathBuf;

#[derive(Args)]
pub struct LeversArgs {
    #[command(flatten)]
    select: SelectArgs,
    /// Only these levers (baseline always runs): prefix_tree, batched_suffixes, trim, prune_head, prompt, pass_tokens.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Folder for the variants' result files.
    #[arg(long, default_value = "bench/results/levers")]
    out_dir: PathBuf,
    /// The summary file.
    #[arg(long)]
    summary: PathBuf,
    /// Also put the lever table between markers in this Markdown file.
    #[arg(long)]
    markdown: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run_levers(a: LeversArgs) -> Result<i32> {
    let sel = &a.select;
    let set = sel.load_set()?;
    let t0 = std::time::Instant::now();
    let engine = a.model.load()?;
    let load_seconds = t0.elapsed().as_secs_f64();
    let base = sel.builder()?.build()?.resolve(&engine);
    let stem = engine.info().path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    std::fs::create_dir_all(&a.out_dir).with_context(|| format!("creating {}", a.out_dir.display()))?;
    let mut rows: Vec<LeverRow> = Vec::new();
    let mut baseline = None;
    for v in variants(&base) {
        if v.lever != "baseline" && !a.only.is_empty() && !a.only.iter().any(|o| o == v.lever) {
            continue;
        }
        eprintln!("readout: {} — {}", v.lever, v.setting);
        let result = sel.run_quietly(&engine, &set, v.config.clone(), load_seconds)?;
        let name = default_name(&set.name, &stem, &v.config);
        result.write(&a.out_dir.join(&name))?;
        let base_result = baseline.get_or_insert_with(|| result.clone());
        let file = a.out_dir.join(&name);
        let rel = file.strip_prefix(a.summary.parent().unwrap_or(std::path::Path::new(""))).unwrap_or(&file);
        let r = row(&v, &rel.to_string_lossy(), &result, base_result);
        eprintln!(
            "  {:.1} s, {} tokens run, mean family balanced accuracy {}, same predictions {}/{}",
            r.wall_seconds,
            r.computed_tokens,
            r.mean_family_balanced_accuracy.map(|x| format!("{x:.3}")).unwrap_or_default(),
            r.same_predictions,
            r.rows
        );
        rows.push(r);
    }
    let summary = serde_json::json!({
        "schema": "readout.bench.levers",
        "schema_version": 1,
        "label": "MEASURED",
        "created": readout::formats::results::now_utc(),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "eval_set": set.name,
        "model": engine.info().name,
        "model_file": engine.info().path.file_name().map(|f| f.to_string_lossy().into_owned()),
        "device": engine.info().device,
        "threads": candle_core::utils::get_num_threads(),
        "shots": sel.shots,
        "debias": sel.debias.as_str(),
        "rows": rows,
    });
    readout::atomic::write(&a.summary, &serde_json::to_vec_pretty(&summary)?)?;
    let table = markdown(&rows);
    print!("{table}");
    if let Some(md) = &a.markdown {
        super::markdown::write_marked(md, "levers", "readout bench levers --markdown", &table)?;
    }
    Ok(0)
}
