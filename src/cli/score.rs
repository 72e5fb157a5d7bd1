//! `readout score`: decide a rubric for one text, texts given on the command line, or a JSONL file.

use super::ModelArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use readout::rubric::Rubric;
use readout::score::{score_texts_with, Orderings, Text, TextResult};
use readout::truncate::Truncate;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

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
    /// Score every cyclic rotation of the options and average them by option id (flags order-unstable answers).
    #[arg(long, default_value = "none", value_parser = parse_orderings)]
    debias: Orderings,
    /// A text whose prompt is longer than the model's context: cut it from the middle (head and
    /// tail kept, " […] " between them) instead of refusing it; `--json` records the tokens cut.
    #[arg(long)]
    truncate_middle: bool,
    #[command(flatten)]
    model: ModelArgs,
}

fn parse_orderings(s: &str) -> std::result::Result<Orderings, String> {
    match s {
        "none" => Ok(Orderings::Single),
        "cyclic" => Ok(Orderings::Cyclic),
        other => Err(format!("`score` takes --debias none or cyclic, not `{other}`")),
    }
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
    let engine = a.model.load()?;
    let bar = (texts.len() > 1 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(texts.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} texts  {per_sec}  eta {eta}")
                .expect("static template"),
        );
        b
    });
    let truncate = if a.truncate_middle { Truncate::Middle } else { Truncate::None };
    let results = score_texts_with(&engine, &rubric, &texts, a.debias, truncate, &mut |done, _| {
        if let Some(b) = &bar {
            b.set_position(done as u64)
        }
        true
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        for r in &results {
            writeln!(out, "{}", serde_json::to_string(r)?)?;
        }
    } else {
        for (r, t) in results.iter().zip(&texts) {
            print_table(&mut out, r, t)?;
        }
    }
    Ok(0)
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
