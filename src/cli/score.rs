//! `readout score`: decide a rubric for one text, texts given on the command line, or a file of
//! texts (JSON Lines, CSV or plain lines, or standard input with `--texts -`), printing each text's decision
//! (a table, a JSON line or CSV rows) as soon as it and the texts before it are decided, so that
//! the command works at the head of a pipe.

use super::ModelArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use readout::debias::DebiasMode;
use readout::formats::texts::{read_texts_choosing, ChosenBy, TextsFormat, TextsRead};
use readout::jobs::request::{Policy, ScoreJob, ScoreRequest};
use readout::jobs::score::{score_texts, Abstained, Text, TextResult};
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ScoreArgs {
    /// The rubric file (JSON; see docs/rubric.md).
    #[arg(long, short = 'r')]
    rubric: PathBuf,
    /// A text to decide (repeat for several).
    #[arg(long, short = 't')]
    text: Vec<String>,
    /// A file of texts, or `-` for standard input: JSON Lines (each line a string or an object
    /// with `text` (or `state`) and an optional `id`), CSV (a header line naming a `text`
    /// column and optionally an `id` column) or plain lines (one text a line). Given after the
    /// --text ones.
    #[arg(long, value_name = "FILE|-")]
    texts: Option<PathBuf>,
    /// The format of --texts: jsonl, csv or lines (one text a line) [default: csv for *.csv,
    /// jsonl for *.jsonl and *.json; otherwise, and for standard input, jsonl when the first
    /// non-empty line is a JSON object or string, else lines].
    #[arg(long, value_name = "FORMAT", requires = "texts")]
    texts_format: Option<TextsFormat>,
    /// Print one JSON line per text instead of a table. Lines come in text order (each carries
    /// its `index`, from 0), each printed and flushed as soon as its text and every text before
    /// it are decided (--as-finished: as soon as its own text is).
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV instead of a table: a header, then one row per text and criterion (number (from
    /// 1), index (from 0), id, text, criterion, type, chosen, probability, margin, close, order_unstable, expected_level,
    /// letter_mass, abstained, options), in text order, flushed as each text is decided; the
    /// app's Export CSV writes the same columns.
    #[arg(long)]
    csv: bool,
    /// Print each text the moment it is decided, in the order texts finish (the prompt tree's
    /// order, not the texts'), instead of holding it until the texts before it are printed.
    #[arg(long)]
    as_finished: bool,
    /// How orderings of the options are scored and combined: none, cyclic (every rotation,
    /// averaged by option id; flags order-unstable answers), permutation, calibrate, pride or batch.
    #[arg(long, default_value = "none")]
    debias: DebiasMode,
    /// A text whose prompt is longer than the model's context: cut it from the middle (head and
    /// tail kept, " […] " between them) instead of refusing it; `--json` records the tokens cut.
    #[arg(long)]
    truncate_middle: bool,
    /// Also write each text's decision to this JSON Lines file as soon as it is made (one line
    /// per text, as `--json` prints them), so a stopped or killed job keeps what it decided.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Complete the `--out` file of an earlier job with the same rubric, texts and options: the
    /// texts it holds are not scored again, the rest are appended.
    #[arg(long, requires = "out")]
    resume: bool,
    /// A calibration file (`readout calibrate`, fitted on a run of this model and debias mode):
    /// its temperature is applied to every decision's probabilities.
    #[arg(long, value_name = "CAL.json")]
    calibration: Option<PathBuf>,
    /// Answer "no answer" when the top probability is below P (`abstained: "confidence"`).
    #[arg(long, value_name = "P")]
    abstain_below: Option<f64>,
    /// Answer "no answer" when the letters' share of the model's next-token distribution is
    /// below M: none of the options fits (`abstained: "letter_mass"`).
    #[arg(long, value_name = "M")]
    abstain_letter_mass: Option<f64>,
    /// A judges file (schema/judges.schema.json: each judge's model, chat template, calibration
    /// and weight): a jury instead of one model, as several --model make one.
    #[arg(long, value_name = "JUDGES.json", conflicts_with_all = ["model", "calibration", "resume"])]
    judges: Option<PathBuf>,
    /// With a jury: give no answer where the judges do not all choose the same option
    /// (`abstained: "disagreement"`).
    #[arg(long)]
    abstain_on_disagreement: bool,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(a: ScoreArgs) -> Result<i32> {
    let mut texts: Vec<Text> = a.text.iter().map(|t| Text { id: None, text: t.clone() }).collect();
    if let Some(p) = &a.texts {
        let stdin = p.as_os_str() == "-";
        let read = if stdin {
            read_texts_choosing(std::io::stdin().lock(), Path::new("(standard input)"), a.texts_format)
        } else {
            let f = std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?;
            read_texts_choosing(f, p, a.texts_format)
        };
        let TextsRead { texts: read, format, chosen_by } = read?;
        // A guessed format is said (on standard error: standard output is the decisions'), so
        // that JSON read as plain text, or a CSV header read as a text, does not pass unseen.
        if chosen_by == ChosenBy::Content {
            let from = if stdin { "standard input".to_string() } else { p.display().to_string() };
            let n = read.len();
            eprintln!("read {n} text{} from {from} as {}", plural(n), read_as(format));
        }
        texts.extend(read);
    }
    if texts.is_empty() {
        bail!(
            "no texts to score: give --text \"...\" or --texts FILE (JSON Lines, CSV or one text a line; - for standard input)"
        );
    }
    // The one request every shell builds; its validation is the library's.
    let request = ScoreRequest {
        rubric: Some(a.rubric.to_string_lossy().into_owned().into()),
        texts: texts.into_iter().map(Into::into).collect(),
        debias: Some(a.debias.as_str().into()),
        truncate_middle: a.truncate_middle,
        abstain_below: a.abstain_below,
        abstain_letter_mass: a.abstain_letter_mass,
        calibration: a.calibration.clone(),
        judges: match &a.judges {
            Some(p) => Some(p.to_string_lossy().into_owned().into()),
            None => a.model.judges(),
        },
        abstain_on_disagreement: a.abstain_on_disagreement,
        ..ScoreRequest::default()
    };
    let ScoreJob { rubric, texts, config, panel } = request.validate(Policy::LOCAL)?;
    if let Some(panel) = panel {
        if a.resume {
            bail!("--resume is for one model: a jury's texts are scored again whole");
        }
        return score_jury(&a, &panel, &rubric, &texts, &config);
    }
    let mut earlier: Vec<TextResult> = Vec::new();
    let mut sink = match &a.out {
        Some(p) => {
            if a.resume {
                earlier = read_earlier(p, &texts)?;
                // Rewritten whole, so that a line a kill cut short is gone before more are added.
                readout::atomic::write(p, json_lines(&earlier)?.as_bytes())?;
            } else if p.exists() {
                bail!("{} exists and is kept; pass --resume to complete it, or another --out", p.display());
            }
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("opening {}", p.display()))?;
            Some(f)
        }
        None => None,
    };
    let skip: HashSet<usize> = earlier.iter().map(|r| r.index).collect();
    let engine = a.model.load()?;
    let format = Format::of(&a);
    let mut printer = Printer::new(format, &texts, a.as_finished)?;
    for r in earlier {
        printer.push(r);
    }
    printer.print_ready()?;
    let bar = (texts.len() > 1 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new((texts.len() - skip.len()) as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} texts  {per_sec}  eta {eta}")
                .expect("static template"),
        );
        b
    });
    let mut write_error = None;
    let mut stdout_closed = false;
    score_texts(&engine, &rubric, &texts, &config, &skip, &mut |r, done, _| {
        if let Some(b) = &bar {
            b.set_position(done as u64)
        }
        if let Some(f) = sink.as_mut() {
            let line = serde_json::to_string(r).map(|l| l + "\n").map_err(anyhow::Error::from);
            if let Err(e) = line.and_then(|l| Ok(f.write_all(l.as_bytes())?)) {
                write_error = Some(e);
                return false;
            }
        }
        printer.push(r.clone());
        match printer.print_ready() {
            Ok(()) => true,
            // The reader went away (`readout score … | head -1`): stop scoring, quietly, unless
            // the decisions are also going to --out.
            Err(e) if is_broken_pipe(&e) => {
                stdout_closed = true;
                sink.is_some()
            }
            Err(e) => {
                write_error = Some(e.context("writing to standard output"));
                false
            }
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(e) = write_error {
        return Err(e.context(format!("writing {}", a.out.as_deref().unwrap_or(Path::new("-")).display())));
    }
    if !stdout_closed {
        match printer.finish() {
            Err(e) if is_broken_pipe(&e) => {}
            other => other?,
        }
    }
    Ok(0)
}

/// A jury's scoring: each judge reads every text in turn (a bar per judge on a terminal, its
/// load, reading time and peak memory on standard error), then the jury's decisions are printed
/// (and written to --out) with each judge's answer under the jury's.
fn score_jury(
    a: &ScoreArgs,
    panel: &readout::formats::judges::Panel,
    rubric: &readout::formats::rubric::Rubric,
    texts: &[Text],
    config: &readout::config::RunConfig,
) -> Result<i32> {
    if let Some(p) = &a.out {
        if p.exists() {
            bail!("{} exists and is kept; give another --out", p.display());
        }
    }
    let n = panel.judges.len();
    let terminal = std::io::stderr().is_terminal();
    let mut bar: Option<(usize, indicatif::ProgressBar)> = None;
    let mut on_text = |judge: usize, _: &TextResult, done: usize, total: usize| {
        if !terminal || total < 2 {
            return true;
        }
        if bar.as_ref().map(|(j, _)| *j) != Some(judge) {
            if let Some((_, b)) = bar.take() {
                b.finish_and_clear();
            }
            let b = indicatif::ProgressBar::new(total as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "judge {}/{n} {{bar:30}} {{pos}}/{{len}} texts  {{per_sec}}  eta {{eta}}",
                    judge + 1
                ))
                .expect("static template"),
            );
            bar = Some((judge, b));
        }
        if let Some((_, b)) = &bar {
            b.set_position(done as u64);
        }
        true
    };
    let mut load = |_: usize, spec: &readout::formats::judges::JudgeSpec| a.model.load_judge(spec);
    let scored = readout::jobs::jury::score_panel(panel, rubric, texts, config, &mut load, &mut on_text)?;
    if let Some((_, b)) = bar.take() {
        b.finish_and_clear();
    }
    for (i, j) in scored.judges.iter().enumerate() {
        let rss = j.peak_rss_bytes.map(|b| format!(", peak RSS {:.0} MB", b as f64 / 1e6)).unwrap_or_default();
        eprintln!(
            "judge {} {} (weight {:.3}): load {:.1} s, read {:.1} s{rss}",
            i + 1,
            j.model,
            j.weight,
            j.load_seconds,
            j.seconds
        );
    }
    if let Some(p) = &a.out {
        readout::atomic::write(p, json_lines(&scored.results)?.as_bytes())?;
    }
    let format = Format::of(a);
    let mut printer = Printer::new(format, texts, a.as_finished)?;
    for r in scored.results {
        printer.push(r);
    }
    match printer.finish() {
        Err(e) if is_broken_pipe(&e) => {}
        other => other?,
    }
    Ok(0)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// How texts read in `format` are named to a person, with the flag that chooses another.
fn read_as(format: TextsFormat) -> &'static str {
    match format {
        TextsFormat::JsonLines => "JSON Lines (--texts-format to choose)",
        TextsFormat::Csv => "CSV (--texts-format to choose)",
        TextsFormat::Lines => "lines (one text a line; --texts-format to choose)",
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<csv::Error>().is_some_and(|c| match c.kind() {
                csv::ErrorKind::Io(io) => io.kind() == std::io::ErrorKind::BrokenPipe,
                _ => false,
            })
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Table,
    Json,
    Csv,
}

impl Format {
    /// The format the flags ask for: --json, --csv, else a table.
    fn of(a: &ScoreArgs) -> Format {
        if a.json {
            Format::Json
        } else if a.csv {
            Format::Csv
        } else {
            Format::Table
        }
    }
}

/// Decisions as `--out` holds them: one JSON line each.
fn json_lines(results: &[TextResult]) -> Result<String> {
    let mut body = String::new();
    for r in results {
        body.push_str(&serde_json::to_string(r)?);
        body.push('\n');
    }
    Ok(body)
}

/// Prints decisions, which arrive in finishing order: in text order, each text as soon as it and
/// every text before it are decided (or, `as_finished`, each as it arrives), flushed at once.
struct Printer<'a> {
    format: Format,
    texts: &'a [Text],
    as_finished: bool,
    /// The index of the next text to print.
    next: usize,
    waiting: BTreeMap<usize, TextResult>,
    csv: Option<csv::Writer<std::io::Stdout>>,
}

impl<'a> Printer<'a> {
    fn new(format: Format, texts: &'a [Text], as_finished: bool) -> Result<Printer<'a>> {
        let csv = (format == Format::Csv).then(|| csv::Writer::from_writer(std::io::stdout()));
        let mut p = Printer { format, texts, as_finished, next: 0, waiting: BTreeMap::new(), csv };
        if let Some(w) = p.csv.as_mut() {
            w.write_record(readout::jobs::answers::CSV_HEADER)?;
            w.flush()?;
        }
        Ok(p)
    }

    fn push(&mut self, r: TextResult) {
        self.waiting.insert(r.index, r);
    }

    /// Print the texts whose turn has come.
    fn print_ready(&mut self) -> Result<()> {
        if self.as_finished {
            return self.finish();
        }
        while let Some(r) = self.waiting.remove(&self.next) {
            self.print(&r)?;
            self.next += 1;
        }
        Ok(())
    }

    /// Print every text waiting, in text order (at the end: texts after one that was not
    /// decided, in a stopped job).
    fn finish(&mut self) -> Result<()> {
        for r in std::mem::take(&mut self.waiting).into_values() {
            self.print(&r)?;
        }
        Ok(())
    }

    fn print(&mut self, r: &TextResult) -> Result<()> {
        match self.format {
            Format::Json => {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{}", serde_json::to_string(r)?)?;
                out.flush()?;
            }
            Format::Csv => {
                if let Some(w) = self.csv.as_mut() {
                    for row in readout::jobs::answers::csv_rows(r, self.texts.get(r.index)) {
                        w.write_record(&row)?;
                    }
                    w.flush()?;
                }
            }
            Format::Table => {
                let mut out = std::io::stdout().lock();
                print_table(&mut out, r, &self.texts[r.index])?;
                out.flush()?;
            }
        }
        Ok(())
    }
}

/// The decisions an earlier job wrote to `path`, checked against the texts (index and id).
fn read_earlier(path: &Path, texts: &[Text]) -> Result<Vec<TextResult>> {
    let body = match std::fs::read_to_string(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut out: Vec<TextResult> = Vec::new();
    for (i, line) in body.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| readout::Error::BadInput {
            path: path.to_path_buf(),
            line: i + 1,
            field: "(line)".into(),
            reason,
        };
        let r: TextResult = match serde_json::from_str(line) {
            Ok(r) => r,
            // A line cut short by a kill is the last one: it is scored again.
            Err(_) if i + 1 == body.lines().count() && !body.ends_with('\n') => break,
            Err(e) => return Err(bad(format!("not a decision `readout score --out` writes ({e})")).into()),
        };
        match texts.get(r.index) {
            Some(t) if t.id == r.id => out.push(r),
            _ => {
                return Err(bad(format!(
                    "text {} ({:?}) is not among these texts: resume with the texts and rubric it was made with",
                    r.index + 1,
                    r.id
                ))
                .into())
            }
        }
    }
    Ok(out)
}

fn print_table(out: &mut impl Write, r: &TextResult, t: &Text) -> Result<()> {
    let title = match &t.id {
        Some(id) => format!("Text {} ({id})", r.index + 1),
        None => format!("Text {}", r.index + 1),
    };
    let preview: String = t.text.chars().take(70).collect();
    let ellipsis = if t.text.chars().count() > 70 { "…" } else { "" };
    writeln!(out, "{title}: {preview}{ellipsis}")?;
    if let Some(n) = r.truncated_tokens {
        writeln!(out, "(cut from the middle to fit the model's context: {n} tokens fewer)")?;
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(vec!["criterion", "answer", "p", "all options", "flags"]);
    for c in &r.criteria {
        let opts =
            c.options.iter().map(|o| format!("{} {:.1}%", o.id, o.probability * 100.0)).collect::<Vec<_>>().join("  ");
        let mut flags = Vec::new();
        if c.close {
            flags.push("close".to_string());
        }
        if c.order_unstable == Some(true) {
            flags.push("order-unstable".to_string());
        }
        if let Some(e) = c.expected_level {
            flags.push(format!("expected level {e:.2}"));
        }
        if c.disagree == Some(true) {
            flags.push("judges disagree".to_string());
        }
        let answer = match (&c.chosen, c.abstained) {
            (Some(id), _) => id.clone(),
            (None, Some(Abstained::LetterMass)) => {
                format!("no answer (letter mass {:.2}: none fits)", c.letter_mass.unwrap_or(0.0))
            }
            (None, Some(Abstained::Disagreement)) => "no answer (the judges disagree)".to_string(),
            (None, _) => format!("no answer (p {:.2} too low)", c.probability),
        };
        let criterion = if c.judges.is_some() { format!("{} (jury)", c.criterion) } else { c.criterion.clone() };
        table.add_row(vec![criterion, answer, format!("{:.3}", c.probability), opts, flags.join(", ")]);
        for j in c.judges.iter().flatten() {
            let opts = c
                .options
                .iter()
                .zip(&j.probabilities)
                .map(|(o, p)| format!("{} {:.1}%", o.id, p * 100.0))
                .collect::<Vec<_>>()
                .join("  ");
            let flag = if j.order_unstable == Some(true) { "order-unstable" } else { "" };
            table.add_row(vec![
                format!("  └ {} (w {:.2})", j.model, j.weight),
                j.chosen.clone().unwrap_or_else(|| "no answer".into()),
                format!("{:.3}", j.probability),
                opts,
                flag.to_string(),
            ]);
        }
    }
    writeln!(out, "{table}\n")?;
    Ok(())
}
