//! An eval set run in shards, by several processes or machines (the Ray recipe,
//! `examples/ray_score.py`), and the shards' result files merged into the one a single run
//! writes. A shard is a set of item groups: every row of a group stays in one shard, so that each
//! shard's prompt tree still shares what a group's rows share, and the shots come from the whole
//! set and each shard plans the whole run's prompt tree, computing only the units on the way to
//! its rows ([`crate::jobs::run::run_groups`]), so that every row gets the bits a whole run gives it (a
//! token's numbers depend, in the last bits, on the extent of the tree node it is computed in). A
//! shard's file is a partial file of the whole run; the merged file holds the rows in the whole
//! run's order, with metrics recomputed over all of them.

use crate::config::RunConfig;
use crate::debias::DebiasMode;
use crate::error::{Error, Result};
use crate::formats::evalset::EvalSet;
use crate::formats::results::{now_utc, PlanRecord, ResultFile, RowRecord, Status, Timing};
use crate::pipeline::input::Job;
use std::collections::{BTreeMap, HashMap};

/// Refuse what a shard cannot reproduce: PriDe estimates its prior from a sample of the whole
/// run's rows, batch calibration from all of them; no shard sees them.
pub fn check_config(config: &RunConfig) -> Result<()> {
    let what = match config.debias {
        DebiasMode::Pride => "--debias pride estimates its prior from a sample of the whole run's rows",
        DebiasMode::Batch => "--debias batch estimates its prior from all of the run's rows",
        _ => return Ok(()),
    };
    Err(Error::Config(format!(
        "{what}, so it cannot be split into shards; run it in one process, or use cyclic, permutation or calibrate"
    )))
}

/// The item groups of the rows a run of `eval_set` scores, split into at most `n` shards of about
/// the same number of rows (each group, largest first, to the shard with the fewest rows; ties to
/// the first), each shard's groups in the set's order. Deterministic.
pub fn split_groups(
    eval_set: &EvalSet,
    config: &RunConfig,
    limit: Option<usize>,
    n: usize,
) -> Result<Vec<Vec<String>>> {
    check_config(config)?;
    if n == 0 {
        return Err(Error::Config("a split into 0 shards leaves nothing to run".into()));
    }
    let job = Job::from_eval_set(eval_set, config, limit)?;
    let mut order: Vec<&str> = Vec::new();
    let mut rows: HashMap<&str, usize> = HashMap::new();
    for r in &job.rows {
        let count = rows.entry(r.group_id.as_str()).or_insert(0);
        if *count == 0 {
            order.push(r.group_id.as_str());
        }
        *count += 1;
    }
    let mut by_size: Vec<usize> = (0..order.len()).collect();
    by_size.sort_by_key(|&g| std::cmp::Reverse(rows[order[g]]));
    let mut load = vec![0usize; n.min(order.len())];
    let mut shard_of = vec![0usize; order.len()];
    for g in by_size {
        let s = (0..load.len()).min_by_key(|&s| load[s]).unwrap_or(0);
        load[s] += rows[order[g]];
        shard_of[g] = s;
    }
    let mut shards = vec![Vec::new(); load.len()];
    for (g, &s) in shard_of.iter().enumerate() {
        shards[s].push(order[g].to_string());
    }
    Ok(shards)
}

/// The shards' result files of one run of `eval_set` merged into one: the rows in the order a
/// single run writes them, metrics recomputed over all of them, the tokens computed summed (the
/// plan's other counts are the whole run's, the same in every shard), wall time the longest
/// shard's (they run side by side), peak memory the largest. Refused when the shards differ in
/// model, eval set, configuration or shots, or share a row. The file is `complete` when it holds
/// every row of the run, else `partial`.
pub fn merge(parts: &[ResultFile], eval_set: &EvalSet) -> Result<ResultFile> {
    let Some(first) = parts.first() else {
        return Err(Error::Config("no shard result files to merge".into()));
    };
    let differ = |i: usize, what: &str| {
        Error::Config(format!(
            "shard {i} was run with another {what} than shard 0; merge the shards of one run (same model, eval set and options)"
        ))
    };
    for (i, p) in parts.iter().enumerate().skip(1) {
        if p.model.sha256 != first.model.sha256 {
            return Err(differ(i, "model"));
        }
        if p.eval_set.sha256 != first.eval_set.sha256 || p.eval_set.limit != first.eval_set.limit {
            return Err(differ(i, "eval set"));
        }
        if p.config != first.config {
            return Err(differ(i, "configuration"));
        }
        if p.shots != first.shots {
            return Err(differ(i, "set of shots"));
        }
    }
    if eval_set.sha256 != first.eval_set.sha256 {
        return Err(Error::BadFile {
            path: eval_set.path.clone(),
            reason: format!(
                "is not the eval set the shards scored ({}, sha256 {}); pass that file",
                first.eval_set.path, first.eval_set.sha256
            ),
        });
    }
    let job = Job::from_eval_set(eval_set, &first.config, first.eval_set.limit)?;
    let position: HashMap<&str, usize> = job.rows.iter().enumerate().map(|(i, r)| (r.id.as_str(), i)).collect();
    let mut rows: BTreeMap<usize, RowRecord> = BTreeMap::new();
    for p in parts {
        for r in &p.rows {
            let Some(&at) = position.get(r.id.as_str()) else {
                return Err(Error::Config(format!(
                    "row `{}` of a shard is not a row of {}",
                    r.id,
                    eval_set.path.display()
                )));
            };
            if rows.insert(at, r.clone()).is_some() {
                return Err(Error::Config(format!(
                    "row `{}` is in two shards; merge shards of disjoint groups (readout.shard_groups)",
                    r.id
                )));
            }
        }
    }
    let complete = rows.len() == job.rows.len();
    let max = |f: fn(&Timing) -> f64| parts.iter().map(|p| f(&p.timing)).fold(0.0, f64::max);
    let wall = max(|t| t.wall_seconds);
    let n = rows.len();
    let mut merged = ResultFile {
        status: if complete { Status::Complete } else { Status::Partial },
        created: now_utc(),
        eval_set: crate::formats::results::EvalSetRecord { rows: job.rows.len(), ..first.eval_set.clone() },
        plan: PlanRecord {
            computed_tokens: parts.iter().map(|p| p.plan.computed_tokens).sum(),
            truncated_rows: rows.values().filter(|r| r.truncated_tokens.is_some()).count(),
            ..first.plan.clone()
        },
        timing: Timing {
            wall_seconds: wall,
            model_load_seconds: max(|t| t.model_load_seconds),
            rows_per_second: if wall > 0.0 { n as f64 / wall } else { 0.0 },
            mean_row_seconds: if n > 0 { wall / n as f64 } else { 0.0 },
            peak_rss_bytes: parts.iter().filter_map(|p| p.timing.peak_rss_bytes).max(),
            peak_device_bytes: parts.iter().filter_map(|p| p.timing.peak_device_bytes).max(),
        },
        rows: rows.into_values().collect(),
        ..first.clone()
    };
    merged.summarize();
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(groups: &[&str]) -> EvalSet {
        let lines: String = groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                format!(
                    "{{\"id\":\"r{i}\",\"group_id\":\"{g}\",\"family\":\"f\",\"state\":\"s{i}\",\"question\":\"q\",\"options\":[{{\"id\":\"a\",\"description\":\"A\"}},{{\"id\":\"b\",\"description\":\"B\"}}],\"label\":0}}\n"
                )
            })
            .collect();
        let opts = crate::formats::evalset::LoadOptions { skip_bad: false, limit: None, family: None };
        EvalSet::parse(lines.as_bytes(), std::path::Path::new("set.jsonl"), &opts).unwrap()
    }

    #[test]
    fn groups_stay_whole_and_shards_get_about_the_same_rows() {
        // Groups x (3 rows), y (2), z (1), w (2): largest first to the lightest shard.
        let s = set(&["x", "y", "x", "z", "w", "x", "y", "w"]);
        let config = RunConfig::default();
        let shards = split_groups(&s, &config, None, 2).unwrap();
        assert_eq!(shards, vec![vec!["x".to_string(), "z".into()], vec!["y".into(), "w".into()]]);
        // More shards than groups: one group each.
        assert_eq!(split_groups(&s, &config, None, 9).unwrap().len(), 4);
        // The limit counts: the first three rows are groups x and y.
        assert_eq!(split_groups(&s, &config, Some(3), 2).unwrap(), vec![vec!["x".to_string()], vec!["y".into()]]);
        assert!(split_groups(&s, &config, None, 0).is_err());
    }

    #[test]
    fn pride_cannot_be_sharded() {
        let config = RunConfig::builder().debias(DebiasMode::Pride).build().unwrap();
        let err = split_groups(&set(&["x", "y"]), &config, None, 2).unwrap_err().to_string();
        assert!(err.contains("pride") && err.contains("one process"), "{err}");
    }

    #[test]
    fn batch_calibration_cannot_be_sharded() {
        let config = RunConfig::builder().debias(DebiasMode::Batch).build().unwrap();
        let err = split_groups(&set(&["x", "y"]), &config, None, 2).unwrap_err().to_string();
        assert!(err.contains("batch") && err.contains("one process"), "{err}");
    }
}
