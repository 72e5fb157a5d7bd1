//! `readout labels`: check the judge against a person's own labels from the command line, for
//! people who label in a spreadsheet. `draw` writes a sheet of the texts to label (the judge's
//! least sure likeliest, each with the probability it was drawn with); `report` reads the filled
//! sheet, or the app's labels file, and prints agreement and the corrected rates. The work is the
//! library's (`readout::jobs::review`); this parses, calls and prints.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use readout::formats::labels::{Draw, DrawBy, Labels};
use readout::formats::rubric::Rubric;
use readout::formats::texts::read_texts_choosing;
use readout::jobs::answers;
use readout::jobs::review::{self, Report, ReportOptions};
use readout::jobs::score::TextResult;

#[derive(Args)]
pub struct LabelsArgs {
    #[command(subcommand)]
    command: LabelsCommand,
}

#[derive(Subcommand)]
enum LabelsCommand {
    /// Write a sheet of N texts for a person to label: the judge's least sure likeliest, each
    /// with the probability it was drawn with (CSV for a spreadsheet, or JSONL).
    Draw(DrawArgs),
    /// Agreement between the judge and the labels, and each option's share of all texts
    /// corrected by them, with 95 % intervals.
    Report(ReportArgs),
}

#[derive(Args)]
struct DrawArgs {
    /// The judge's answers: `readout score … --out ANSWERS.jsonl`.
    answers: PathBuf,
    /// The rubric the texts were scored with.
    #[arg(long)]
    rubric: PathBuf,
    /// The texts that were scored (the same file, in the same order).
    #[arg(long)]
    texts: PathBuf,
    /// How many texts to draw.
    #[arg(short = 'n', long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    count: usize,
    /// uncertainty (the judge's least sure texts likeliest) or uniform.
    #[arg(long, default_value = "uncertainty")]
    by: DrawBy,
    /// Seed of the draw.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Share of each text's weight that is uniform, 0 to 1 (with --by uncertainty).
    #[arg(long, default_value_t = 0.2)]
    uniform_share: f64,
    /// The sheet to write: *.csv for a spreadsheet, else JSON Lines (a labels file).
    #[arg(short, long)]
    out: PathBuf,
}

#[derive(Args)]
struct ReportArgs {
    /// The judge's answers: `readout score … --out ANSWERS.jsonl`.
    answers: PathBuf,
    /// The labels: a filled sheet (*.csv) or a labels file (the app's, or a filled JSONL sheet).
    labels: PathBuf,
    /// The rubric (needed for a CSV sheet; a labels file carries its questions).
    #[arg(long)]
    rubric: Option<PathBuf>,
    /// The 95 % half-width wanted, in share points (0.05 = ± 5 %): the report says how many
    /// labels reach it.
    #[arg(long, default_value_t = 0.05)]
    half_width: f64,
    /// Bootstrap resamples for the agreement intervals.
    #[arg(long, default_value_t = 1000)]
    resamples: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the labels as an eval set (request form) to run a judge on: `readout run FILE`.
    #[arg(long, value_name = "FILE.jsonl")]
    eval_set: Option<PathBuf>,
}

pub fn run(a: LabelsArgs) -> Result<i32> {
    match a.command {
        LabelsCommand::Draw(d) => draw(d),
        LabelsCommand::Report(r) => report(r),
    }
}

fn read_answers(path: &Path) -> Result<Vec<TextResult>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(answers::read_jsonl(&bytes, path)?)
}

fn draw(a: DrawArgs) -> Result<i32> {
    if !(0.0..=1.0).contains(&a.uniform_share) {
        bail!("--uniform-share {} is not a share from 0 to 1", a.uniform_share);
    }
    if a.out.exists() {
        bail!("{} exists and is kept (it may hold labels); write the sheet to another file", a.out.display());
    }
    let results = read_answers(&a.answers)?;
    let rubric = Rubric::load(&a.rubric)?;
    let f = std::fs::File::open(&a.texts).with_context(|| format!("opening {}", a.texts.display()))?;
    let texts = read_texts_choosing(f, &a.texts, None)?.texts;
    if texts.len() != results.len() {
        bail!(
            "{} holds {} texts but {} holds answers for {}: give the texts that were scored",
            a.texts.display(),
            texts.len(),
            a.answers.display(),
            results.len()
        );
    }
    let draw = Draw { by: a.by, seed: a.seed, uniform_share: a.uniform_share };
    let sheet = review::draw_sheet(&rubric.criteria, &results, &texts, a.count, draw)?;
    let body = if a.out.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) {
        review::sheet_csv(&sheet)?
    } else {
        sheet.to_jsonl()
    };
    readout::atomic::write(&a.out, body.as_bytes())?;
    eprintln!(
        "{}: {} of {} texts to label, drawn by {} (seed {}); fill one column per criterion with an option id, then: readout labels report {} {}",
        a.out.display(),
        sheet.texts.len(),
        results.len(),
        a.by.as_str(),
        a.seed,
        a.answers.display(),
        a.out.display()
    );
    Ok(0)
}

fn report(a: ReportArgs) -> Result<i32> {
    let results = read_answers(&a.answers)?;
    let bytes = std::fs::read(&a.labels).with_context(|| format!("reading {}", a.labels.display()))?;
    let labels = if a.labels.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) {
        let Some(rubric) = &a.rubric else {
            bail!("a CSV sheet names criteria but not their options: pass the rubric it was drawn for, --rubric FILE");
        };
        let rubric = Rubric::load(rubric)?;
        review::read_sheet_csv(&bytes, &a.labels, &rubric.criteria, results.len(), Draw::default())?
    } else {
        Labels::parse(&bytes, &a.labels)?
    };
    if labels.texts.is_empty() {
        bail!("{} holds no labels yet", a.labels.display());
    }
    if let Some(out) = &a.eval_set {
        readout::atomic::write(out, labels.to_jsonl().as_bytes())?;
        eprintln!("{}: the labels as an eval set (readout run {})", out.display(), out.display());
    }
    let opts = ReportOptions { target_half_width: a.half_width, resamples: a.resamples, seed: a.seed };
    let report = review::report(&results, &labels, &opts)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(0)
}

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

fn figure(v: Option<f64>, lo: Option<f64>, hi: Option<f64>) -> String {
    match (v, lo, hi) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.2} [{lo:.2}, {hi:.2}]"),
        (Some(v), _, _) => format!("{v:.2}"),
        _ => "–".into(),
    }
}

fn print_report(r: &Report) {
    println!(
        "{} texts scored; {} labelled, {} skipped, {} labelled off the draw (agreement only); draw: {} (seed {})",
        r.texts,
        r.labelled,
        r.skipped,
        r.off_draw,
        r.draw.by.as_str(),
        r.draw.seed
    );
    for c in &r.criteria {
        let ag = &c.agreement;
        println!();
        println!(
            "{} ({})",
            c.criterion,
            serde_json::to_value(c.kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        );
        let kappa = if matches!(ag.scale, readout::agreement::Scale::Interval) { "weighted κ" } else { "Cohen's κ" };
        println!(
            "  agreement on {} texts: raw {}   {kappa} {}   Krippendorff's α {}   (95 % bootstrap)",
            ag.n,
            figure(ag.raw.value, ag.raw.lo, ag.raw.hi),
            figure(ag.kappa.value, ag.kappa.lo, ag.kappa.hi),
            figure(ag.alpha.value, ag.alpha.lo, ag.alpha.hi)
        );
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header([
            "option",
            "judge only",
            "labels only",
            "corrected (95 %)",
            "method",
            &format!("labels for ± {}", pct(r.options.target_half_width)),
        ]);
        for o in &c.rates {
            let est = |e: &Option<readout::rates::Estimate>| {
                e.as_ref().map_or("–".to_string(), |e| format!("{} [{}, {}]", pct(e.share), pct(e.lo), pct(e.hi)))
            };
            t.add_row([
                o.option.clone(),
                pct(o.judge_only),
                est(&o.labels_only),
                est(&o.corrected),
                o.method.clone(),
                o.labels_for_target.map_or("–".into(), |n| n.to_string()),
            ]);
        }
        println!("{t}");
        let mut m = Table::new();
        m.load_preset(UTF8_FULL_CONDENSED);
        let mut header = vec!["judge \\ person".to_string()];
        header.extend(c.option_ids.iter().cloned());
        m.set_header(header);
        for (id, row) in c.option_ids.iter().zip(&ag.confusion) {
            let mut cells = vec![id.clone()];
            cells.extend(row.iter().map(|x| x.to_string()));
            m.add_row(cells);
        }
        println!("{m}");
        if !c.disagreements.is_empty() {
            let list: Vec<String> = c
                .disagreements
                .iter()
                .map(|d| {
                    format!(
                        "{} (judge {}, person {})",
                        d.id.clone().unwrap_or_else(|| format!("#{}", d.index)),
                        d.judge,
                        d.person
                    )
                })
                .collect();
            println!("  disagreements: {}", list.join("; "));
        }
    }
}
