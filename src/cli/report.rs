//! Presenting result files: the end-of-run summary, `readout table`, `readout compare`.

use anyhow::{bail, Context, Result};
use clap::Args;
use readout::formats::results::{ResultFile, Status};
use readout::jobs::run::Mode;
use readout::metrics::compare_with;
use std::path::{Path, PathBuf};

/// The end-of-run summary.
pub fn print_summary(r: &ResultFile, path: &Path) {
    let status = if r.status == Status::Partial { " (partial)" } else { "" };
    println!(
        "{} rows{status} of {} · {} · {} · {} shot(s) · debias {}",
        r.rows.len(),
        r.eval_set.name,
        r.model.display_name(),
        r.config.mode.as_str(),
        r.config.shots,
        r.config.debias.as_str()
    );
    if let Some(m) = &r.metrics {
        println!(
            "mean family balanced accuracy {:.3} [{:.3}, {:.3}]   accuracy {:.3}   invalid {}",
            m.mean_family_balanced_accuracy, m.bootstrap.lo, m.bootstrap.hi, m.overall.accuracy, m.overall.invalid
        );
        let unstable = m.overall.order_unstable.map(|u| u.to_string()).unwrap_or_else(|| "not checked".into());
        println!(
            "order-unstable rows {unstable}   ECE {:.3}   Brier {:.3}   NLL {:.3}",
            m.overall.ece, m.overall.brier, m.overall.nll
        );
        for (f, fm) in &m.families {
            println!(
                "  {f:<28} balanced accuracy {:.3}  accuracy {:.3}  rows {}",
                fm.balanced_accuracy, fm.accuracy, fm.rows
            );
        }
        if !m.agreement.is_empty() {
            println!("agreement with gold per criterion (95 % group bootstrap):");
            print_agreement(&m.agreement);
        }
    }
    println!(
        "{:.1} s ({:.2} rows/s); tokens computed {} of {} in the prompts ({} unique)",
        r.timing.wall_seconds,
        r.timing.rows_per_second,
        r.plan.computed_tokens,
        r.plan.prompt_tokens,
        r.plan.unique_tokens
    );
    println!("wrote {}", path.display());
}

#[derive(Args)]
pub struct TableArgs {
    /// A folder of result files.
    dir: PathBuf,
    /// Also write the table as Markdown to this file.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Print the table's rows as JSON (an array of objects, numbers as numbers) instead of a table.
    #[arg(long)]
    json: bool,
    /// The judge-quality table instead (accuracy, order-unstable rows, ECE, held-out ECE of a
    /// temperature, coverage at ≤ 5 % error, by model, debias mode and temperature).
    #[arg(long, conflicts_with = "json")]
    quality: bool,
}

fn debias_rank(d: &str) -> usize {
    ["none", "cyclic", "calibrate", "permutation", "pride", "batch"].iter().position(|x| *x == d).unwrap_or(9)
}

/// The runs of a folder as a table, one row per result file.
pub fn table(a: TableArgs) -> Result<i32> {
    if a.quality {
        return super::quality_table::table(&a.dir, a.markdown.as_deref());
    }
    let mut runs: Vec<(PathBuf, ResultFile)> = Vec::new();
    let entries = std::fs::read_dir(&a.dir).with_context(|| format!("reading {}", a.dir.display()))?;
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().map(|x| x == "json").unwrap_or(false) {
            let is_result = std::fs::read_to_string(&p).map(|t| t.contains("\"readout.result\"")).unwrap_or(false);
            if is_result {
                runs.push((p.clone(), ResultFile::load(&p)?));
            }
        }
    }
    if runs.is_empty() {
        bail!("no Readout result files in {}", a.dir.display());
    }
    // By model (its file), then the performance page's order: by debias mode, readout before
    // generate, then shots.
    let key = |r: &ResultFile| {
        (r.model.file.clone(), debias_rank(r.config.debias.as_str()), r.config.mode == Mode::Generate, r.config.shots)
    };
    runs.sort_by(|(pa, a), (pb, b)| (key(a), pa).cmp(&(key(b), pb)));
    let header = [
        "Model",
        "Mode",
        "Shots",
        "Debias",
        "Mean family balanced accuracy",
        "Mean κ with gold",
        "Order-unstable rows",
        "Seconds",
        "Rows",
        "Label",
        "Source",
    ];
    let mut lines: Vec<Vec<String>> = Vec::new();
    for (p, r) in &runs {
        let m = r.metrics.as_ref();
        let mode = match (r.config.mode.as_str(), r.config.levers.prune_head) {
            (m, true) => format!("{m}, pruned head"),
            (m, false) => m.to_string(),
        };
        lines.push(vec![
            r.model.file.clone(),
            mode,
            r.config.shots.to_string(),
            r.config.debias.as_str().to_string(),
            m.map(|m| format!("{:.3}", m.mean_family_balanced_accuracy)).unwrap_or_else(|| "-".into()),
            mean_kappa(r).map(|k| format!("{k:.3}")).unwrap_or_else(|| "-".into()),
            m.and_then(|m| m.overall.order_unstable).map(|u| u.to_string()).unwrap_or_else(|| "not checked".into()),
            format!("{:.1}", r.timing.wall_seconds),
            format!("{}{}", r.rows.len(), if r.status == Status::Partial { " (partial)" } else { "" }),
            "MEASURED".into(),
            p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        ]);
    }
    if a.json {
        let rows: Vec<serde_json::Value> = runs.iter().map(|(p, r)| table_row_json(p, r)).collect();
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_header(header.to_vec());
        for l in &lines {
            t.add_row(l.clone());
        }
        println!("{t}");
    }
    if let Some(md) = &a.markdown {
        let mut s = String::new();
        s.push_str(&format!("| {} |\n", header.join(" | ")));
        s.push_str(&format!("|{}\n", "---|".repeat(header.len())));
        // Link each file relative to the Markdown file's folder.
        let md_dir = md.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let rel = match (std::fs::canonicalize(&a.dir), std::fs::canonicalize(md_dir)) {
            (Ok(d), Ok(m)) => d.strip_prefix(&m).map(|r| r.to_path_buf()).unwrap_or(d),
            _ => a.dir.clone(),
        };
        for l in &lines {
            let mut l = l.clone();
            let last = l.len() - 1;
            let link = rel.join(&l[last]);
            l[last] = format!("[`{}`]({})", l[last], link.display());
            s.push_str(&format!("| {} |\n", l.join(" | ")));
        }
        write_markdown(md, &s)?;
        eprintln!("wrote the table into {}", md.display());
    }
    Ok(0)
}

/// The judge's κ with gold averaged over the run's criteria, each weighted by its rows
/// (recomputed from the rows, so files written before agreement was recorded have it too);
/// `None` where no criterion has a κ.
fn mean_kappa(r: &ResultFile) -> Option<f64> {
    let per = readout::metrics::agreement_by_criterion(&r.scored_rows(), None, 0, 0);
    let (mut sum, mut n) = (0.0, 0usize);
    for c in &per {
        if let Some(k) = c.agreement.kappa.value {
            sum += k * c.agreement.n as f64;
            n += c.agreement.n;
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// One row of `readout table --json`: the table's columns, typed (a missing metric is null).
fn table_row_json(path: &Path, r: &ResultFile) -> serde_json::Value {
    let m = r.metrics.as_ref();
    serde_json::json!({
        "model": r.model.file,
        "mode": r.config.mode.as_str(),
        "pruned_head": r.config.levers.prune_head,
        "shots": r.config.shots,
        "debias": r.config.debias.as_str(),
        "mean_family_balanced_accuracy": m.map(|m| m.mean_family_balanced_accuracy),
        "mean_kappa": mean_kappa(r),
        "order_unstable_rows": m.and_then(|m| m.overall.order_unstable),
        "seconds": r.timing.wall_seconds,
        "rows": r.rows.len(),
        "partial": r.status == Status::Partial,
        "label": "MEASURED",
        "source": path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        "path": path,
    })
}

/// Put the table between markers in an existing Markdown file, or write the file.
fn write_markdown(path: &Path, table: &str) -> Result<()> {
    super::markdown::write_marked(path, "table", "readout table --markdown", table)
}

#[derive(Args)]
pub struct CompareArgs {
    /// The first result file.
    a: PathBuf,
    /// The second result file (the same eval set).
    b: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Group bootstrap resamples for the intervals on B − A.
    #[arg(long, default_value_t = readout::metrics::DEFAULT_RESAMPLES, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    resamples: usize,
    /// Seed of the group bootstrap.
    #[arg(long, default_value_t = readout::metrics::DEFAULT_SEED)]
    seed: u64,
}

pub fn compare_cmd(a: CompareArgs) -> Result<i32> {
    let ra = ResultFile::load(&a.a)?;
    let rb = ResultFile::load(&a.b)?;
    if ra.eval_set.sha256 != rb.eval_set.sha256 {
        return Err(readout::Error::BadFile {
            path: a.b.clone(),
            reason: format!(
                "scored a different eval set ({} {}) from {} ({} {}); compare runs of one eval set",
                rb.eval_set.name,
                &rb.eval_set.sha256[..12.min(rb.eval_set.sha256.len())],
                a.a.display(),
                ra.eval_set.name,
                &ra.eval_set.sha256[..12.min(ra.eval_set.sha256.len())]
            ),
        }
        .into());
    }
    let c = compare_with(&ra.scored_rows(), &rb.scored_rows(), a.resamples, a.seed);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
        return Ok(0);
    }
    println!("A: {}\nB: {}", a.a.display(), a.b.display());
    println!(
        "{} paired rows; accuracy A {:.3}, B {:.3} (B − A {:+.3})",
        c.paired,
        c.accuracy_a,
        c.accuracy_b,
        c.accuracy_b - c.accuracy_a
    );
    println!(
        "discordant: {} right only in A, {} right only in B; exact McNemar p = {:.4}",
        c.only_a_correct, c.only_b_correct, c.p_value
    );
    if let Some(d) = &c.difference {
        println!(
            "B − A, {:.0} % group bootstrap ({} groups, {} resamples, seed {}): accuracy {:+.3} [{:+.3}, {:+.3}]   balanced accuracy {:+.3} [{:+.3}, {:+.3}]",
            d.level * 100.0,
            d.groups,
            d.resamples,
            d.seed,
            d.accuracy.estimate,
            d.accuracy.lo,
            d.accuracy.hi,
            d.balanced_accuracy.estimate,
            d.balanced_accuracy.lo,
            d.balanced_accuracy.hi
        );
    }
    for (f, d) in &c.families {
        println!(
            "  {f:<28} rows {:>4}  balanced accuracy A {:.3}  B {:.3}  ({:+.3})",
            d.rows,
            d.balanced_accuracy_a,
            d.balanced_accuracy_b,
            d.balanced_accuracy_b - d.balanced_accuracy_a
        );
    }
    if !c.agreement.is_empty() {
        println!("agreement of A's answers with B's (95 % group bootstrap):");
        print_agreement(&c.agreement);
    }
    if c.unpaired_a + c.unpaired_b > 0 {
        println!("unpaired rows: {} only in A, {} only in B", c.unpaired_a, c.unpaired_b);
    }
    Ok(0)
}

/// One line per criterion: its options, the rows, raw agreement, κ and α with their intervals.
pub fn print_agreement(list: &[readout::metrics::CriterionAgreement]) {
    let fig = |f: &readout::agreement::Figure| match (f.value, f.lo, f.hi) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.3} [{lo:.3}, {hi:.3}]"),
        (Some(v), _, _) => format!("{v:.3}"),
        _ => "–".to_string(),
    };
    for c in list {
        let name = if c.criterion.is_empty() {
            c.option_ids.join("|")
        } else {
            format!("{} ({})", c.criterion, c.option_ids.join("|"))
        };
        let a = &c.agreement;
        let kappa = if a.scale == readout::agreement::Scale::Interval { "weighted κ" } else { "κ" };
        println!("  {name:<40} rows {:>4}  raw {}  {kappa} {}  α {}", a.n, fig(&a.raw), fig(&a.kappa), fig(&a.alpha));
    }
}
