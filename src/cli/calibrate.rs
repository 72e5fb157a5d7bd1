//! `readout calibrate RESULT.json -o CAL.json`: fit a temperature on a result file's rows with a
//! held-out check, and write the calibration file `run`/`score --calibration` apply.

use anyhow::{Context, Result};
use clap::Args;
use readout::analysis::calibrate;
use readout::formats::calibration::{at_range_edge, CalibrationFile, BETA_RANGE};
use readout::formats::results::ResultFile;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct CalibrateArgs {
    /// A complete result file of a readout run (its rows' combined probabilities and gold).
    result: PathBuf,
    /// The calibration file to write.
    #[arg(long, short = 'o')]
    out: PathBuf,
    /// Held-out folds of the check (by group id).
    #[arg(long, default_value_t = calibrate::FOLDS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..))]
    folds: usize,
    /// Seed for dealing the groups to folds.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Overwrite an existing calibration file.
    #[arg(long)]
    force: bool,
    /// Print the calibration file instead of a summary.
    #[arg(long)]
    json: bool,
}

pub fn run(a: CalibrateArgs) -> Result<i32> {
    super::keep_existing(&a.out, a.force)?;
    let result = ResultFile::load(&a.result)?;
    let sha = readout::hash::sha256_file(&a.result)?;
    let cal = calibrate::fit(&result, &a.result, &sha, a.folds, a.seed)?;
    cal.write(&a.out).with_context(|| format!("writing {}", a.out.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cal)?);
    } else {
        print_summary(&cal, &a.out);
    }
    Ok(0)
}

fn print_summary(c: &CalibrationFile, out: &Path) {
    let f = &c.fitted_on;
    println!(
        "temperature {:.3} fitted on {} rows ({} wrong) of {} · {} · debias {}",
        c.temperature, f.rows, f.wrong, f.eval_set, f.model, f.debias
    );
    if at_range_edge(c.temperature) {
        println!(
            "  (at the end of the range searched, T from {} to {}: the rows' probabilities say little about which answers are right)",
            1.0 / BETA_RANGE.1,
            1.0 / BETA_RANGE.0
        );
    }
    let h = &c.held_out;
    let temps: Vec<String> = h.fold_temperatures.iter().map(|t| format!("{t:.3}")).collect();
    println!("held out ({} folds by group, seed {}; fold temperatures {}):", h.folds, h.seed, temps.join(", "));
    println!("  ECE   {:.4} -> {:.4}", h.before.ece, h.after.ece);
    println!("  NLL   {:.4} -> {:.4}", h.before.nll, h.after.nll);
    println!("  Brier {:.4} -> {:.4}", h.before.brier, h.after.brier);
    println!("wrote {} (apply it with --calibration {})", out.display(), out.display());
}
