//! `readout table DIR --quality`: the judge-quality table of a folder of runs (issue 20) — per
//! model and debias mode, with and without a fitted temperature: accuracy, order-unstable rows,
//! accuracy of stable against unstable rows, ECE (in-sample, and held out for a temperature:
//! the calibration file's k-fold check), coverage at ≤ 5 % error, seconds. Generated from the
//! files, never typed.

use anyhow::{bail, Context, Result};
use readout::formats::calibration::CalibrationFile;
use readout::formats::results::{ResultFile, Status};
use std::path::{Path, PathBuf};

const HEADER: [&str; 13] = [
    "Model",
    "Debias",
    "Temperature",
    "Accuracy",
    "Mean family balanced accuracy",
    "Order-unstable rows",
    "Accuracy stable / unstable",
    "ECE",
    "Held-out ECE before → after",
    "Coverage at ≤ 5 % error",
    "Tokens run",
    "Seconds",
    "Source",
];

fn debias_rank(d: &str) -> usize {
    ["none", "cyclic", "calibrate", "pride", "batch", "permutation"].iter().position(|x| *x == d).unwrap_or(9)
}

/// The result files of `dir` (not its subfolders), by model, debias mode, temperature last.
fn runs(dir: &Path) -> Result<Vec<(PathBuf, ResultFile)>> {
    let mut runs = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json")
            && std::fs::read_to_string(&p).is_ok_and(|t| t.contains("\"readout.result\""))
        {
            runs.push((p.clone(), ResultFile::load(&p)?));
        }
    }
    if runs.is_empty() {
        bail!("no Readout result files in {}", dir.display());
    }
    let key = |r: &ResultFile| {
        (r.model.file.clone(), debias_rank(r.config.debias.as_str()), r.config.calibration.is_some(), r.config.shots)
    };
    runs.sort_by(|(pa, a), (pb, b)| (key(a), pa).cmp(&(key(b), pb)));
    Ok(runs)
}

/// The held-out ECE of the calibration file a run applied, found beside it by name and checked
/// by its sha256.
fn held_out(dir: &Path, r: &ResultFile) -> String {
    let Some(c) = &r.config.calibration else { return "—".into() };
    match CalibrationFile::load(&dir.join(&c.file)) {
        Ok((f, applied)) if applied.sha256 == c.sha256 => {
            format!("{:.3} → {:.3} ({} folds)", f.held_out.before.ece, f.held_out.after.ece, f.held_out.folds)
        }
        _ => "(calibration file not here)".into(),
    }
}

fn line(dir: &Path, p: &Path, r: &ResultFile) -> Vec<String> {
    let m = r.metrics.as_ref();
    let f3 = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "—".into());
    let pos = m.and_then(|m| m.position_bias.as_ref());
    let stable = |s: Option<&readout::metrics::SubsetAccuracy>| {
        s.map(|s| format!("{:.3} ({})", s.accuracy, s.rows)).unwrap_or_else(|| "—".into())
    };
    let split = match pos {
        Some(b) if b.stable.is_some() || b.unstable.is_some() => {
            format!("{} / {}", stable(b.stable.as_ref()), stable(b.unstable.as_ref()))
        }
        _ => "not checked".into(),
    };
    let cov5 = m
        .and_then(|m| m.selective.as_ref())
        .and_then(|s| s.coverage_at_risk.iter().find(|c| (c.max_risk - 0.05).abs() < 1e-9).map(|c| f3(c.coverage)));
    vec![
        r.model.file.clone(),
        r.config.debias.as_str().to_string(),
        r.config
            .calibration
            .as_ref()
            .map(|c| {
                let edge =
                    if readout::formats::calibration::at_range_edge(c.temperature) { " (range edge)" } else { "" };
                format!("{:.3}{edge}", c.temperature)
            })
            .unwrap_or_else(|| "—".into()),
        f3(m.map(|m| m.overall.accuracy)),
        f3(m.map(|m| m.mean_family_balanced_accuracy)),
        m.and_then(|m| m.overall.order_unstable).map(|u| u.to_string()).unwrap_or_else(|| "not checked".into()),
        split,
        f3(m.map(|m| m.overall.ece)),
        held_out(dir, r),
        cov5.unwrap_or_else(|| "—".into()),
        r.plan.computed_tokens.to_string(),
        format!("{:.1}{}", r.timing.wall_seconds, if r.status == Status::Partial { " (partial)" } else { "" }),
        p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
    ]
}

/// Print the quality table of `dir`; with `markdown`, also put it between its markers there.
pub fn table(dir: &Path, markdown: Option<&Path>) -> Result<i32> {
    let lines: Vec<Vec<String>> = runs(dir)?.iter().map(|(p, r)| line(dir, p, r)).collect();
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header(HEADER.to_vec());
    for l in &lines {
        t.add_row(l.clone());
    }
    println!("{t}");
    if let Some(md) = markdown {
        let md_dir = md.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let rel = match (std::fs::canonicalize(dir), std::fs::canonicalize(md_dir)) {
            (Ok(d), Ok(m)) => d.strip_prefix(&m).map(|r| r.to_path_buf()).unwrap_or(d),
            _ => dir.to_path_buf(),
        };
        let mut s = format!("| {} |\n|{}\n", HEADER.join(" | "), "---|".repeat(HEADER.len()));
        for l in &lines {
            let mut l = l.clone();
            let last = l.len() - 1;
            l[last] = format!("[`{}`]({})", l[last], rel.join(&l[last]).display());
            s.push_str(&format!("| {} |\n", l.join(" | ")));
        }
        super::markdown::write_marked(md, "quality table", "readout table --quality --markdown", &s)?;
        eprintln!("wrote the quality table into {}", md.display());
    }
    Ok(0)
}
