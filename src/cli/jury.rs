//! `readout jury RESULT.json RESULT.json … -o JURY.json`: pool several judges' runs on one eval
//! set into one answer per row (equal or fitted weights), and print each judge, the jury, the
//! jury against the best single judge with its bootstrap interval, and the judges' agreement.

use anyhow::{Context, Result};
use clap::Args;
use readout::analysis::jury::{self, Judge, JuryOptions};
use readout::formats::jury::{JuryFile, JuryWeights};
use readout::formats::results::ResultFile;
use readout::metrics::Summary;
use std::path::PathBuf;

#[derive(Args)]
pub struct JuryArgs {
    /// Two or more complete result files of readout runs on the same eval set, one per judge.
    #[arg(required = true, num_args = 2..)]
    results: Vec<PathBuf>,
    /// The jury file to write.
    #[arg(long, short = 'o')]
    out: PathBuf,
    /// equal (every judge 1/n, its run's probabilities) or fitted (each judge's temperature and
    /// the pool's weights fitted to the gold, cross-fitted on folds by group).
    #[arg(long, default_value = "equal")]
    weights: JuryWeights,
    /// Folds by group of the fitted weights.
    #[arg(long, default_value_t = readout::analysis::calibrate::FOLDS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..))]
    folds: usize,
    /// Seed for dealing the groups to folds.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Bootstrap resamples of the intervals.
    #[arg(long, default_value_t = 1000)]
    resamples: usize,
    /// Give no answer where the judges do not all give the same one.
    #[arg(long)]
    abstain_on_disagreement: bool,
    /// Overwrite an existing jury file.
    #[arg(long)]
    force: bool,
    /// Print the jury file instead of a summary.
    #[arg(long)]
    json: bool,
}

pub fn run(a: JuryArgs) -> Result<i32> {
    super::keep_existing(&a.out, a.force)?;
    let mut loaded = Vec::with_capacity(a.results.len());
    for p in &a.results {
        let result = ResultFile::load(p)?;
        let sha = readout::hash::sha256_file(p)?;
        loaded.push((p, sha, result));
    }
    let judges: Vec<Judge> =
        loaded.iter().map(|(p, sha, result)| Judge { path: p.as_path(), sha256: sha.clone(), result }).collect();
    let opts = JuryOptions {
        weights: a.weights,
        folds: a.folds,
        seed: a.seed,
        resamples: a.resamples,
        bootstrap_seed: 0,
        abstain_on_disagreement: a.abstain_on_disagreement,
    };
    let file = jury::combine(&judges, opts)?;
    file.write(&a.out).with_context(|| format!("writing {}", a.out.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&file)?);
    } else {
        print_summary(&file);
        println!("wrote {}", a.out.display());
    }
    Ok(0)
}

/// Coverage at ≤ 10 % error, as a percentage, or `-`.
fn coverage(s: &Summary) -> String {
    let c = s.selective.as_ref().and_then(|sel| {
        sel.coverage_at_risk.iter().find(|c| (c.max_risk - 0.10).abs() < 1e-9).and_then(|c| c.coverage)
    });
    c.map_or("-".into(), |c| format!("{:.1}", 100.0 * c))
}

fn line(name: &str, weight: String, s: &Summary) {
    let o = &s.overall;
    println!(
        "{name:<44} {weight:>7} {:>6.1} {:>6.1} [{:>5.1}, {:>5.1}] {:>7.4} {:>7.4} {:>9}",
        100.0 * o.accuracy,
        100.0 * s.mean_family_balanced_accuracy,
        100.0 * s.bootstrap.lo,
        100.0 * s.bootstrap.hi,
        o.ece,
        o.brier,
        coverage(s)
    );
}

pub(super) fn print_summary(f: &JuryFile) {
    println!(
        "jury of {} judges on {} ({} rows) · weights {}{}",
        f.judges.len(),
        f.eval_set,
        f.rows.len(),
        f.weights.method.as_str(),
        if f.weights.folds > 0 {
            format!(" (cross-fitted on {} folds by group, seed {})", f.weights.folds, f.weights.seed)
        } else {
            String::new()
        }
    );
    println!(
        "{:<44} {:>7} {:>6} {:>6} {:>14} {:>7} {:>7} {:>9}",
        "judge", "weight", "acc %", "fam %", "fam 95 % CI", "ECE", "Brier", "cov@10 %"
    );
    for j in &f.judges {
        let t = j.temperature.map_or(String::new(), |t| format!(" (T {t:.2})"));
        line(&format!("{}{t}", j.model), format!("{:.3}", j.weight), &j.summary);
    }
    line("jury", String::new(), &f.summary);
    if f.abstain_on_disagreement {
        let acc = f.answered_accuracy.map_or("-".into(), |a| format!("{:.1} %", 100.0 * a));
        println!(
            "answered {} of {} rows (no answer where the judges disagree), {acc} of them right; the figures above count a row without an answer as wrong",
            f.answered,
            f.rows.len()
        );
    }
    let best = &f.judges[f.versus_best.judge];
    let c = &f.versus_best.comparison;
    if let Some(d) = &c.difference {
        println!(
            "jury − {} (the best alone): accuracy {:+.1} [{:+.1}, {:+.1}], balanced accuracy {:+.1} [{:+.1}, {:+.1}] points (paired group bootstrap, {} resamples); McNemar p = {:.3}",
            best.model,
            100.0 * d.accuracy.estimate,
            100.0 * d.accuracy.lo,
            100.0 * d.accuracy.hi,
            100.0 * d.balanced_accuracy.estimate,
            100.0 * d.balanced_accuracy.lo,
            100.0 * d.balanced_accuracy.hi,
            d.resamples,
            c.p_value
        );
    }
    let alphas: Vec<String> = f
        .agreement
        .iter()
        .map(|a| {
            let alpha = a.alpha.map_or("undefined".into(), |x| format!("{x:.2}"));
            format!("{} {alpha} ({} of {} disagree)", a.criterion, a.disagreements, a.rows)
        })
        .collect();
    println!("judges' agreement (Krippendorff's α, nominal): {}", alphas.join("; "));
}
