//! `readout bench prefill`: time prefill of a prompts file (as `readout prompts` prints it) and
//! write the timings as JSON; `bench/prefill` puts it beside llama.cpp's in one result file.

use super::ModelArgs;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use readout::bench::{prefill, BenchPrompt};
use std::io::BufRead;
use std::path::PathBuf;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand)]
enum Which {
    /// Prefill-to-letter-logits over a prompts file: cold and with prefix reuse.
    Prefill(PrefillArgs),
    /// Dense f32 GEMM against candle's quantised kernels, per projection shape of a model.
    Matmul(MatmulArgs),
    /// An eval-set run with each speed lever on and off, compared with the baseline.
    Levers(super::levers::LeversArgs),
}

#[derive(Args)]
struct MatmulArgs {
    /// Token counts per pass to time.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32,110,330")]
    rows: Vec<usize>,
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Write the timings here (JSON).
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(Args)]
struct PrefillArgs {
    /// JSON Lines of {"id", "prompt", "letters"} (what `readout prompts` prints).
    #[arg(long)]
    prompts: PathBuf,
    /// Passes per setup; the median is reported.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Write the timings here (JSON).
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(a: BenchArgs) -> Result<i32> {
    match a.which {
        Which::Prefill(p) => run_prefill(p),
        Which::Matmul(m) => run_matmul(m),
        Which::Levers(l) => super::levers::run_levers(l),
    }
}

fn run_prefill(a: PrefillArgs) -> Result<i32> {
    let t0 = std::time::Instant::now();
    let engine = a.model.load()?;
    let load_seconds = t0.elapsed().as_secs_f64();
    let f = std::fs::File::open(&a.prompts).with_context(|| format!("opening {}", a.prompts.display()))?;
    let mut prompts = Vec::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line?;
        let v: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("{}:{}: not JSON", a.prompts.display(), i + 1))?;
        let text = v["prompt"].as_str().with_context(|| format!("{}:{}: no `prompt`", a.prompts.display(), i + 1))?;
        let n = v["letters"].as_array().map(|l| l.len()).unwrap_or(0);
        let tokens = engine.tokenizer().encode(text)?;
        let letters = engine.answer_tokens(text, &tokens, n)?;
        prompts.push(BenchPrompt { id: v["id"].as_str().unwrap_or_default().to_string(), tokens, letters });
    }
    let timings = prefill(&engine, &prompts, a.repeats)?;
    let out = serde_json::json!({
        "engine": "readout",
        "version": env!("CARGO_PKG_VERSION"),
        "model": engine.info(),
        "model_sha256": engine.sha256()?,
        "threads": candle_core::utils::get_num_threads(),
        "load_seconds": load_seconds,
        "prompts": prompts.len(),
        "setups": timings,
    });
    std::fs::write(&a.out, serde_json::to_vec_pretty(&out)?).with_context(|| format!("writing {}", a.out.display()))?;
    for t in out["setups"].as_array().into_iter().flatten() {
        eprintln!(
            "{:>13}: {:.3} s, {:.0} prompt tokens/s",
            t["setup"].as_str().unwrap_or(""),
            t["seconds"].as_f64().unwrap_or(0.0),
            t["prompt_tokens_per_s"].as_f64().unwrap_or(0.0)
        );
    }
    Ok(0)
}

fn run_matmul(a: MatmulArgs) -> Result<i32> {
    let engine = a.model.load()?;
    let info = engine.info();
    let dtype = match info.quantisation.as_str() {
        "Q4_0" => candle_core::quantized::GgmlDType::Q4_0,
        "Q8_0" => candle_core::quantized::GgmlDType::Q8_0,
        "Q4K" => candle_core::quantized::GgmlDType::Q4K,
        "Q6K" => candle_core::quantized::GgmlDType::Q6K,
        _ => candle_core::quantized::GgmlDType::Q4_1,
    };
    let timings = readout::bench::matmul_paths(&info.config, dtype, &a.rows, a.repeats)?;
    let out = serde_json::json!({
        "schema": "readout.bench.matmul",
        "schema_version": 1,
        "label": "MEASURED",
        "created": readout::results::now_utc(),
        "command": format!("readout bench matmul --rows {} --out {}", a.rows.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(","), a.out.display()),
        "model": info.name,
        "model_file": info.path.file_name().map(|f| f.to_string_lossy().into_owned()),
        "quantised_type": format!("{dtype:?}"),
        "threads": candle_core::utils::get_num_threads(),
        "device": info.device,
        "timings": timings,
    });
    std::fs::write(&a.out, serde_json::to_vec_pretty(&out)?).with_context(|| format!("writing {}", a.out.display()))?;
    for t in out["timings"].as_array().into_iter().flatten() {
        eprintln!(
            "{:>12} rows {:>4}: dense {:>8.3} ms ({:>5.0} GFLOP/s)  quantized {:>8.3} ms ({:>5.0} GFLOP/s)",
            t["name"].as_str().unwrap_or(""),
            t["rows"],
            t["dense_ms"].as_f64().unwrap_or(0.0),
            t["dense_gflops"].as_f64().unwrap_or(0.0),
            t["quantized_ms"].as_f64().unwrap_or(0.0),
            t["quantized_gflops"].as_f64().unwrap_or(0.0)
        );
    }
    Ok(0)
}
