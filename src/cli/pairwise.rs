//! `readout pairwise evalset PAIRS.jsonl -o SET.jsonl` turns a pairs file into an eval set whose
//! rows ask which of two responses is better (run it with `readout run --debias cyclic`, which
//! reads both orders); `readout pairwise standings RESULT.json` prints each system's win rate
//! and Bradley–Terry score by the judge and by gold.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use readout::analysis::pairwise;
use readout::formats::pairwise as pairs;
use readout::formats::results::ResultFile;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct PairwiseArgs {
    #[command(subcommand)]
    command: PairwiseCommand,
}

#[derive(Subcommand)]
enum PairwiseCommand {
    /// Write the eval set of a pairs file (one row a pair; the responses are its options).
    Evalset {
        /// The pairs file (JSON Lines: id, prompt, system_a, response_a, system_b, response_b,
        /// winner a/b/tie; group_id and ties optional).
        pairs: PathBuf,
        /// The eval set to write.
        #[arg(long, short = 'o')]
        out: PathBuf,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Each system's win rate (Wilson 95 % interval) and Bradley–Terry score (group bootstrap
    /// 95 % interval), by the judge's verdicts and by gold, from a run of such an eval set.
    Standings {
        /// A result file of a run on an eval set `pairwise evalset` wrote.
        result: PathBuf,
        /// Bootstrap resamples of the scores' intervals.
        #[arg(long, default_value_t = 1000)]
        resamples: usize,
        /// Seed of the bootstrap.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(a: PairwiseArgs) -> Result<i32> {
    match a.command {
        PairwiseCommand::Evalset { pairs: input, out, force } => {
            super::keep_existing(&out, force)?;
            let read = pairs::read(&input)?;
            let mut text = Vec::new();
            for p in &read {
                serde_json::to_writer(&mut text, &p.to_row())?;
                text.push(b'\n');
            }
            readout::atomic::write(&out, &text).with_context(|| format!("writing {}", out.display()))?;
            println!(
                "wrote {} ({} pairs); score it with: readout run {} --debias cyclic",
                out.display(),
                read.len(),
                out.display()
            );
        }
        PairwiseCommand::Standings { result, resamples, seed, json } => {
            let file = ResultFile::load(&result)?;
            let r = pairwise::report(&file, &result, resamples, seed)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
                return Ok(0);
            }
            let mut o = std::io::stdout().lock();
            let unstable = r.order_unstable.map_or("not checked (one ordering)".into(), |u| u.to_string());
            writeln!(
                o,
                "{} pairs: the judge's verdict is gold's on {} ({:.1} %); its two orders disagree on {unstable}",
                r.pairs,
                r.correct,
                100.0 * r.correct as f64 / r.pairs as f64
            )?;
            writeln!(
                o,
                "{:<20} {:>5}  {:>22}  {:>22}  {:>22}  {:>22}",
                "system",
                "games",
                "judge win % (95 % CI)",
                "judge BT (95 % CI)",
                "gold win % (95 % CI)",
                "gold BT (95 % CI)"
            )?;
            for s in &r.systems {
                let win = |w: &Option<readout::pairwise::Estimate>| {
                    w.map_or("-".into(), |w| {
                        format!("{:.1} [{:.1}, {:.1}]", 100.0 * w.estimate, 100.0 * w.lo, 100.0 * w.hi)
                    })
                };
                let bt = |e: &readout::pairwise::Estimate| format!("{:+.2} [{:+.2}, {:+.2}]", e.estimate, e.lo, e.hi);
                writeln!(
                    o,
                    "{:<20} {:>5}  {:>22}  {:>22}  {:>22}  {:>22}",
                    s.system,
                    s.judge.games,
                    win(&s.judge.win_rate),
                    bt(&s.judge.score),
                    win(&s.gold.win_rate),
                    bt(&s.gold.score)
                )?;
            }
            writeln!(
                o,
                "Bradley–Terry scores are ln strengths, mean 0; intervals from {} draws of the requests (seed {}).",
                r.resamples, r.seed
            )?;
        }
    }
    Ok(0)
}
