//! The lever benchmark: one eval-set configuration run with each speed lever switched away from
//! its default, beside the run with every lever at its default, so each lever's effect is
//! MEASURED — wall seconds, tokens through the model, and what it did to the answers. "A speed
//! change that moves accuracy is not a speed change": every variant's predictions are compared
//! row by row with the baseline's, and the rows that differ are named.

use crate::config::PromptVersion;
use crate::formats::results::{ResultFile, RunConfig};
use serde::{Deserialize, Serialize};

/// One variant of the baseline configuration.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The lever, as the CLI names it.
    pub lever: &'static str,
    /// Its setting in this variant, in words.
    pub setting: String,
    /// What a user does to get this setting.
    pub effort: &'static str,
    pub config: RunConfig,
}

/// The baseline (every lever at its default) and one variant per lever.
pub fn variants(base: &RunConfig) -> Vec<Variant> {
    let mut out = vec![Variant {
        lever: "baseline",
        setting: "all levers at their defaults".into(),
        effort: "none (the default)",
        config: base.clone(),
    }];
    let mut add = |lever: &'static str, setting: &str, effort: &'static str, f: &dyn Fn(&mut RunConfig)| {
        let mut c = base.clone();
        f(&mut c);
        out.push(Variant { lever, setting: setting.into(), effort, config: c });
    };
    add("prefix_tree", "off: every prompt from scratch", "on by default; `--no-prefix-tree` turns it off", &|c| {
        c.levers.prefix_tree = false
    });
    add(
        "batched_suffixes",
        "off: one suffix per pass, no batching of units",
        "on by default; `--no-batch` turns it off",
        &|c| c.levers.batched_suffixes = false,
    );
    add("trim", "off: full logits at every position", "on by default; `--no-trim` turns it off", &|c| {
        c.levers.trim = false
    });
    add("prune_head", "on: head cut to the answer letters", "`--prune-head` (app: Prune head)", &|c| {
        c.levers.prune_head = true
    });
    add("prompt", "terse (readout-terse-v1)", "`--prompt terse` (app: Prompt layout); answers move", &|c| {
        c.prompt_version = PromptVersion::TerseV1
    });
    add("pass_tokens", "256 tokens per pass", "`--pass-tokens 256`", &|c| c.levers.pass_tokens = 256);
    add("pass_tokens", "4096 tokens per pass", "`--pass-tokens 4096`", &|c| c.levers.pass_tokens = 4096);
    out
}

/// What one variant measured, against the baseline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LeverRow {
    pub lever: String,
    pub setting: String,
    /// What a user does to get this setting (flag, app switch or default).
    #[serde(default)]
    pub effort: String,
    /// The variant's result file (relative to the summary's folder).
    pub file: String,
    pub rows: usize,
    pub wall_seconds: f64,
    pub computed_tokens: usize,
    pub unique_tokens: usize,
    pub prompt_tokens: usize,
    pub mean_family_balanced_accuracy: Option<f64>,
    pub accuracy: Option<f64>,
    /// Baseline seconds divided by this variant's.
    pub speed_vs_baseline: f64,
    /// Rows whose predicted option equals the baseline's.
    pub same_predictions: usize,
    /// Ids of the rows whose prediction differs from the baseline's.
    pub differing_rows: Vec<String>,
    /// Largest difference of a combined option probability from the baseline's.
    pub max_probability_difference: f64,
}

/// Compare `run` with `baseline` row by row (rows matched by id).
pub fn row(v: &Variant, file: &str, run: &ResultFile, baseline: &ResultFile) -> LeverRow {
    let base: std::collections::HashMap<&str, &crate::formats::results::RowRecord> =
        baseline.rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut same = 0;
    let mut differing = Vec::new();
    let mut max_diff: f64 = 0.0;
    for r in &run.rows {
        let Some(b) = base.get(r.id.as_str()) else { continue };
        if r.predicted == b.predicted {
            same += 1;
        } else {
            differing.push(r.id.clone());
        }
        if let (Some(p), Some(q)) = (&r.probs, &b.probs) {
            for (x, y) in p.iter().zip(q) {
                max_diff = max_diff.max((x - y).abs());
            }
        }
    }
    let m = run.metrics.as_ref();
    LeverRow {
        lever: v.lever.into(),
        setting: v.setting.clone(),
        effort: v.effort.into(),
        file: file.into(),
        rows: run.rows.len(),
        wall_seconds: run.timing.wall_seconds,
        computed_tokens: run.plan.computed_tokens,
        unique_tokens: run.plan.unique_tokens,
        prompt_tokens: run.plan.prompt_tokens,
        mean_family_balanced_accuracy: m.map(|m| m.mean_family_balanced_accuracy),
        accuracy: m.map(|m| m.overall.accuracy),
        speed_vs_baseline: if run.timing.wall_seconds > 0.0 {
            baseline.timing.wall_seconds / run.timing.wall_seconds
        } else {
            0.0
        },
        same_predictions: same,
        differing_rows: differing,
        max_probability_difference: max_diff,
    }
}

/// The lever table in Markdown, one line per variant.
pub fn markdown(rows: &[LeverRow]) -> String {
    let mut s = String::from(
        "| lever | setting | effort | evidence | seconds | speed vs baseline | tokens run | mean family bal. acc. | same predictions | result file |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | MEASURED | {:.1} | {:.2}× | {} | {} | {}/{} | `{}` |\n",
            r.lever,
            r.setting,
            r.effort,
            r.wall_seconds,
            r.speed_vs_baseline,
            r.computed_tokens,
            r.mean_family_balanced_accuracy.map(|a| format!("{a:.3}")).unwrap_or_else(|| "—".into()),
            r.same_predictions,
            r.rows,
            r.file
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_changes_one_lever() {
        let base =
            crate::config::RunConfig::builder().shots(3).debias(crate::debias::DebiasMode::Cyclic).build().unwrap();
        let v = variants(&base);
        assert_eq!(v[0].config, base);
        for x in &v[1..] {
            assert_ne!(x.config, base, "{}", x.lever);
            let mut back = x.config.clone();
            back.levers = base.levers.clone();
            back.prompt_version = base.prompt_version;
            assert_eq!(back, base, "{} changes only levers or the prompt", x.lever);
        }
    }
}
