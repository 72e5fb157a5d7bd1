//! `readout score`: decide a rubric for one text, texts given on the command line, or a JSONL file.

use super::ModelArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use readout::debias::DebiasMode;
use readout::rubric::Rubric;
use readout::score::{score_texts, Text, TextResult};
use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ScoreArgs {
    /// The rubric file (JSON; see docs/rubric.md).
    #[arg(long, short = 'r')]
    rubric: PathBuf,
    /// A text to decide (repeat for several).
    #[arg(long, short = 't')]
    text: Vec<String>,
    /// A JSON Lines file of texts: each line a string or an object with `text` (or `state`) and an optional `id`.
    #[arg(long)]
    texts: Option<PathBuf>,
    /// Print JSON (one line per text) instead of a table.
    #[arg(long)]
    json: bool,
    /// How orderings of the options are scored and combined: none, cyclic (every rotation,
    /// averaged by option id; flags order-unstable answers), permutation, calibrate or pride.
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
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(a: ScoreArgs) -> Result<i32> {
    let rubric = Rubric::load(&a.rubric)?;
    let mut texts: Vec<Text> = a.text.iter().map(|t| Text { id: None, text: t.clone() }).collect();
    if let Some(p) = &a.texts {
        texts.extend(read_texts(p)?);
    }
    if texts.is_empty() {
        bail!("no texts to score: give --text \"...\" or --texts FILE.jsonl");
    }
    let config = readout::config::RunConfig::builder()
        .debias(a.debias)
        .truncate(super::truncate(a.truncate_middle))
        .matmul(a.model.matmul)
        .build()?;
    readout::score::check_config(&config)?;
    let mut earlier: Vec<TextResult> = Vec::new();
    let mut sink = match &a.out {
        Some(p) => {
            if a.resume {
                earlier = read_earlier(p, &texts)?;
                // Rewritten whole, so that a line a kill cut short is gone before more are added.
                let mut body = String::new();
                for r in &earlier {
                    body.push_str(&serde_json::to_string(r)?);
                    body.push('\n');
                }
                readout::results::write_atomic(p, body.as_bytes())?;
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
    let bar = (texts.len() > 1 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new((texts.len() - skip.len()) as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} texts  {per_sec}  eta {eta}")
                .expect("static template"),
        );
        b
    });
    let mut write_error = None;
    let fresh = score_texts(&engine, &rubric, &texts, &config, &skip, &mut |r, done, _| {
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
        true
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(e) = write_error {
        return Err(e.context(format!("writing {}", a.out.as_deref().unwrap_or(Path::new("")).display())));
    }
    let mut results = earlier;
    results.extend(fresh);
    results.sort_by_key(|r| r.index);
    let mut out = std::io::stdout().lock();
    if a.json {
        for r in &results {
            writeln!(out, "{}", serde_json::to_string(r)?)?;
        }
    } else {
        for r in &results {
            print_table(&mut out, r, &texts[r.index])?;
        }
    }
    Ok(0)
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

fn read_texts(path: &PathBuf) -> Result<Vec<Text>> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| readout::Error::BadInput {
            path: path.clone(),
            line: i + 1,
            field: "(utf-8)".into(),
            reason: format!("not valid UTF-8 text ({e}); save the file as UTF-8"),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let bad =
            |reason: String| readout::Error::BadInput { path: path.clone(), line: i + 1, field: "text".into(), reason };
        let v: serde_json::Value = serde_json::from_str(&line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let t = match v {
            serde_json::Value::String(s) => Text { id: None, text: s },
            serde_json::Value::Object(o) => {
                let text = o.get("text").or_else(|| o.get("state")).and_then(|t| t.as_str());
                let Some(text) = text else {
                    return Err(bad("missing: each object needs a `text` (or `state`) string".into()).into());
                };
                let id = o.get("id").map(|v| v.as_str().map(String::from).unwrap_or_else(|| v.to_string()));
                Text { id, text: text.to_string() }
            }
            _ => return Err(bad("each line must be a JSON string or an object with `text`".into()).into()),
        };
        out.push(t);
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
        table.add_row(vec![
            c.criterion.clone(),
            c.chosen.clone(),
            format!("{:.3}", c.probability),
            opts,
            flags.join(", "),
        ]);
    }
    writeln!(out, "{table}\n")?;
    Ok(())
}
