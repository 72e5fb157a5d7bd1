//! `readout bench prefill`: time prefill of a prompts file (as `readout prompts` prints it) and
//! write the timings as JSON; `bench/prefill` puts it beside llama.cpp's in one result file.

use super::ModelArgs;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use readout::analysis::bench::{prefill, BenchPrompt};
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
    /// One eval-set run with the engine's counters on: where the time goes, and each kernel's
    /// achieved rate against its instruction's measured peak on this CPU.
    Profile(super::profile::ProfileArgs),
    /// Write a random-weights model of a real model's shape (for speed work; see bench/make-qwen3-shaped).
    MakeModel(MakeModelArgs),
    /// Time reading the answer logits after suffixes of several lengths on a fixed prefix.
    LogitCost(LogitCostArgs),
    /// Full next-token logits after given token ids (no tokenizer used), as JSON: for comparing
    /// with another engine fed the same ids (bench/gemma3-logits-vs-llamacpp).
    Logits(LogitsArgs),
    /// How many labels a person needs: the corrected rate's 95 % interval width against the
    /// number of labels, uniform and by uncertainty, with a result file's gold as the person.
    Labels(LabelsCurveArgs),
}

#[derive(Args)]
struct LabelsCurveArgs {
    /// A result file of `readout run` (its gold stands in for the person's labels).
    result: PathBuf,
    /// The option whose share is estimated (every row must offer it).
    #[arg(long)]
    option: String,
    /// Numbers of labels to try.
    #[arg(long, value_delimiter = ',', default_value = "5,10,15,20,30,40,50,60,80,100,120,140")]
    labels: Vec<usize>,
    /// Simulated people per number of labels.
    #[arg(long, default_value_t = 1000)]
    replicates: usize,
    /// The uniform share of the uncertainty draw's weights.
    #[arg(long, default_value_t = 0.2)]
    uniform_share: f64,
    /// Write the result file here [default: bench/results/labels-curve-RESULT.json].
    #[arg(short, long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct LogitsArgs {
    /// JSON: {"prompts": [{"id": "...", "token_ids": [...]}, ...]}.
    #[arg(long)]
    ids: PathBuf,
    /// Also compute each prompt as a cached prefix of this share of its tokens plus the rest,
    /// and record the largest difference from the one-pass logits.
    #[arg(long)]
    split: Option<f64>,
    /// Write {"model": …, "items": [{"id", "logits": [...]}]} here.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    model: ModelArgs,
}
#[derive(Args)]
struct LogitCostArgs {
    /// Suffix lengths (tokens after the fixed prefix) to time.
    #[arg(long, value_delimiter = ',', default_value = "1,8,16,32,64,96")]
    suffix: Vec<usize>,
    /// Tokens in the fixed, cached prefix.
    #[arg(long, default_value_t = 300)]
    prefix_tokens: usize,
    /// Timed reads per suffix length; the median and p10/p90 are reported.
    #[arg(long, default_value_t = 30)]
    repeats: usize,
    /// Untimed rounds first.
    #[arg(long, default_value_t = 3)]
    warmups: usize,
    /// The rubric whose first criterion the prompt asks.
    #[arg(long, default_value = "examples/support-ticket.rubric.json")]
    rubric: PathBuf,
    /// Also time with the LM head pruned to the answer letters.
    #[arg(long)]
    pruned: bool,
    /// Write the result file here (JSON).
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(Args)]
struct MakeModelArgs {
    /// qwen3-0.6b, qwen3-4b, smollm2-135m, tiny-llama or tiny-qwen3.
    #[arg(long)]
    shape: String,
    /// A folder with the model's real tokenizer.json and tokenizer_config.json (HF output only).
    #[arg(long)]
    tokenizer_dir: Option<PathBuf>,
    /// Where to write: a Hugging Face directory, or a .gguf file with --gguf.
    #[arg(long, short = 'o')]
    out: PathBuf,
    /// Safetensors dtype of a Hugging Face directory: f32, f16 or bf16.
    #[arg(long, default_value = "bf16")]
    dtype: String,
    /// Write a GGUF file with matrices in this type (f32, f16, q8_0, q4_0, q4_1, q4_k) and the
    /// byte-level tokenizer, instead of a Hugging Face directory; `none`: the metadata alone, no
    /// tensors (with --tokenizer-from, a small file that carries a model's tokenizer).
    #[arg(long)]
    gguf: Option<String>,
    /// With --gguf: the tokenizer (vocabulary, merges, specials, chat template) of this GGUF file
    /// instead of the byte-level one, so that the model reads text as that file's model does
    /// (a random-weights twin of a real model; its vocabulary must be the shape's).
    #[arg(long, requires = "gguf")]
    tokenizer_from: Option<PathBuf>,
    #[arg(long, default_value_t = 7)]
    seed: u64,
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
        Which::Profile(p) => super::profile::run_profile(p),
        Which::MakeModel(m) => run_make_model(m),
        Which::LogitCost(l) => run_logit_cost(l),
        Which::Logits(l) => run_logits(l),
        Which::Labels(l) => run_labels_curve(l),
    }
}

fn run_logits(a: LogitsArgs) -> Result<i32> {
    use readout::engine::{BareModel, Prefix};
    #[derive(serde::Deserialize)]
    struct Prompt {
        id: String,
        token_ids: Vec<u32>,
    }
    #[derive(serde::Deserialize)]
    struct Prompts {
        prompts: Vec<Prompt>,
    }
    let text = std::fs::read_to_string(&a.ids).with_context(|| format!("reading {}", a.ids.display()))?;
    let prompts: Prompts = serde_json::from_str(&text).with_context(|| format!("parsing {}", a.ids.display()))?;
    if let Some(share) = a.split.filter(|s| !(0.0..1.0).contains(s)) {
        return Err(readout::Error::Config(format!("--split {share}: give a share in [0, 1)")).into());
    }
    let (path, _) = a.model.path()?;
    let model =
        BareModel::load(&path, &a.model.load_options()).with_context(|| format!("loading model {}", path.display()))?;
    let mut items = Vec::with_capacity(prompts.prompts.len());
    for p in &prompts.prompts {
        let (_, logits) = model.next_logits(&Prefix::empty(), &p.token_ids)?;
        let mut item = serde_json::json!({"id": p.id, "tokens": p.token_ids.len(), "logits": logits});
        if let Some(share) = a.split {
            let cut =
                ((p.token_ids.len() as f64 * share) as usize).clamp(1, p.token_ids.len().saturating_sub(1).max(1));
            let (pre, _) = model.next_logits(&Prefix::empty(), &p.token_ids[..cut])?;
            let (_, split) = model.next_logits(&pre, &p.token_ids[cut..])?;
            let d = logits.iter().zip(&split).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
            item["split_at"] = serde_json::json!(cut);
            item["split_max_abs_diff"] = serde_json::json!(d);
        }
        items.push(item);
    }
    let info = model.info();
    let n = items.len();
    let out = serde_json::json!({
        "model": {"path": path, "name": info.name, "architecture": info.architecture, "quantisation": info.quantisation,
                  "weights": info.weights, "activations": info.activations, "kv_cache": info.kv_cache, "precision": info.precision, "attention": info.attention, "fused_kernels": info.fused_kernels, "device": info.device},
        "items": items,
    });
    std::fs::write(&a.out, serde_json::to_vec(&out)?).with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!("wrote {} ({n} prompts)", a.out.display());
    Ok(0)
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
        if tokens.is_empty() {
            anyhow::bail!("{}:{}: field `prompt`: empty, so there is nothing to compute; give the rendered prompt (`readout prompts` writes them)", a.prompts.display(), i + 1);
        }
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
    // The file's encoding as the library names it (`Q4_K_M` is mostly Q4_K).
    let dtype = match info.quantisation.as_str() {
        "Q4_0" => candle_core::quantized::GgmlDType::Q4_0,
        "Q8_0" => candle_core::quantized::GgmlDType::Q8_0,
        q if q.starts_with("Q4_K") => candle_core::quantized::GgmlDType::Q4K,
        "Q6_K" => candle_core::quantized::GgmlDType::Q6K,
        _ => candle_core::quantized::GgmlDType::Q4_1,
    };
    let timings = readout::analysis::bench::matmul_paths(&info.config, dtype, &a.rows, a.repeats)?;
    let out = serde_json::json!({
        "schema": "readout.bench.matmul",
        "schema_version": 1,
        "label": "MEASURED",
        "created": readout::formats::results::now_utc(),
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

fn run_make_model(a: MakeModelArgs) -> Result<i32> {
    use readout::engine::synthetic;
    let Some(cfg) = synthetic::shape_config(&a.shape) else {
        return Err(readout::Error::Config(format!(
            "unknown shape `{}` (expected one of {})",
            a.shape,
            synthetic::SHAPES.join(", ")
        ))
        .into());
    };
    if let Some(ty) = &a.gguf {
        use candle_core::quantized::GgmlDType as G;
        let dtype = match ty.to_ascii_lowercase().as_str() {
            "f32" => Some(G::F32),
            "f16" => Some(G::F16),
            "q8_0" => Some(G::Q8_0),
            "q4_0" => Some(G::Q4_0),
            "q4_1" => Some(G::Q4_1),
            "q4_k" => Some(G::Q4K),
            "none" => None,
            other => {
                return Err(readout::Error::Config(format!(
                    "unknown GGUF type `{other}` (expected f32, f16, q8_0, q4_0, q4_1, q4_k or none)"
                ))
                .into())
            }
        };
        if a.tokenizer_dir.is_some() {
            return Err(readout::Error::Config(
                "--tokenizer-dir applies to a Hugging Face directory; a GGUF gets the byte-level tokenizer, or another GGUF's with --tokenizer-from".into(),
            )
            .into());
        }
        synthetic::write_gguf_as(&a.out, &cfg, a.seed, dtype, a.tokenizer_from.as_deref())
            .with_context(|| format!("writing {}", a.out.display()))?;
    } else {
        let dtype = match a.dtype.to_ascii_lowercase().as_str() {
            "f32" => candle_core::DType::F32,
            "f16" => candle_core::DType::F16,
            "bf16" => candle_core::DType::BF16,
            other => {
                return Err(
                    readout::Error::Config(format!("unknown dtype `{other}` (expected f32, f16 or bf16)")).into()
                )
            }
        };
        synthetic::write_hf_dir_as(&a.out, &cfg, a.seed, a.tokenizer_dir.as_deref(), dtype)
            .with_context(|| format!("writing {}", a.out.display()))?;
    }
    match a.gguf.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("none") => eprintln!("wrote {} (the metadata of a {} model, no tensors)", a.out.display(), a.shape),
        _ => eprintln!(
            "wrote {} ({} parameters, random weights, seed {})",
            a.out.display(),
            cfg.parameter_count(),
            a.seed
        ),
    }
    Ok(0)
}

fn run_logit_cost(a: LogitCostArgs) -> Result<i32> {
    use readout::analysis::bench::{fit_rows, logit_cost, logit_cost_tokens, LOGIT_COST_TEXT};
    use readout::engine::Prefix;
    let max_suffix = a.suffix.iter().copied().max().unwrap_or(0);
    if max_suffix == 0 || a.suffix.contains(&0) {
        return Err(readout::Error::Config("--suffix lengths must be at least 1".into()).into());
    }
    if a.prefix_tokens == 0 {
        return Err(readout::Error::Config("--prefix-tokens must be at least 1".into()).into());
    }
    let loadavg_before = loadavg();
    let t0 = std::time::Instant::now();
    let engine = a.model.load()?;
    let load_seconds = t0.elapsed().as_secs_f64();
    let rubric = readout::formats::rubric::Rubric::load(&a.rubric)?;
    let toks = logit_cost_tokens(&engine, &rubric, LOGIT_COST_TEXT, a.prefix_tokens, max_suffix)?;
    let t1 = std::time::Instant::now();
    let prefix = engine.extend(&Prefix::empty(), &toks.prefix)?;
    let prefix_seconds = t1.elapsed().as_secs_f64();
    let run = |engine: &readout::engine::Engine, head: &str, prune_head: bool| -> Result<serde_json::Value> {
        let opts = readout::engine::PassOptions { prune_head, ..engine.pass_defaults() };
        let rows = logit_cost(engine, &prefix, &toks.pool, &toks.letters, &a.suffix, a.repeats, a.warmups, opts)?;
        let fit = fit_rows(&rows);
        eprintln!("{head} head:");
        for r in &rows {
            eprintln!(
                "  suffix {:>4}: median {:>9.3} ms  (p10 {:.3}, p90 {:.3}, n={})",
                r.suffix_tokens, r.median_ms, r.p10_ms, r.p90_ms, r.repeats
            );
        }
        if let Some(f) = fit {
            eprintln!("  fit: {:.3} ms + {:.4} ms/token (r2 {:.4})", f.fixed_ms, f.ms_per_token, f.r2);
        }
        Ok(serde_json::json!({"head": head, "rows": rows, "fit": fit}))
    };
    let full = run(&engine, "full", false)?;
    let pruned = if a.pruned { Some(run(&engine, "pruned", true)?) } else { None };
    let info = engine.info();
    let derived = readout::analysis::derive::derive(&info.config, Default::default())?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = serde_json::json!({
        "schema": "readout.bench.logit-cost",
        "schema_version": 1,
        "label": "MEASURED",
        "created": readout::formats::results::now_utc(),
        "command": format!("readout {}", args.join(" ")),
        "version": env!("CARGO_PKG_VERSION"),
        "model": info.name,
        "model_file": info.path.file_name().map(|f| f.to_string_lossy().into_owned()),
        "model_sha256": engine.sha256()?,
        "model_sha256_of": if info.path.is_dir() { "config.json" } else { "the model file" },
        "architecture": info.architecture,
        "quantisation": info.quantisation,
        "matmul": info.matmul,
        "threads": candle_core::utils::get_num_threads(),
        "device": info.device,
        "loadavg_before": loadavg_before,
        "loadavg_after": loadavg(),
        "load_seconds": load_seconds,
        "prefix_tokens": toks.prefix.len(),
        "prefix_seconds": prefix_seconds,
        "answer_letters": toks.letters.len(),
        "warmups": a.warmups,
        "what": "wall time of engine.read(prefix, [suffix]): the suffix's tokens through the model on the cached prefix, then the LM head at its last position; the prefix is never changed",
        "rows": full["rows"],
        "fit": full["fit"],
        "pruned_head": pruned,
        "derived": {
            "label": "DERIVED",
            "lm_head_flops_per_position": derived.lm_head.flops_per_position,
            "block_matmul_flops_per_token": derived.block_matmul_flops_per_token,
        },
    });
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&a.out, serde_json::to_vec_pretty(&out)?).with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!("wrote {}", a.out.display());
    Ok(0)
}

/// The 1, 5 and 15 minute load averages (Linux), recorded beside timings: a busy machine skews them.
fn loadavg() -> Option<Vec<f64>> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(text.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect())
}

fn run_labels_curve(a: LabelsCurveArgs) -> Result<i32> {
    let started = std::time::Instant::now();
    let bytes = std::fs::read(&a.result).with_context(|| format!("reading {}", a.result.display()))?;
    let file = readout::formats::results::ResultFile::load(&a.result)?;
    let opts = readout::analysis::labels_curve::CurveOptions {
        option: a.option.clone(),
        labels: a.labels.clone(),
        replicates: a.replicates,
        uniform_share: a.uniform_share,
        targets: vec![0.05, 0.10],
    };
    let curve = readout::analysis::labels_curve::measure(&file, &opts)?;
    let stem = a.result.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let out_path = a.out.clone().unwrap_or_else(|| PathBuf::from(format!("bench/results/labels-curve-{stem}.json")));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = serde_json::json!({
        "schema": "readout.bench.labels-curve",
        "schema_version": 1,
        "label": "MEASURED",
        "created": readout::formats::results::now_utc(),
        "command": format!("readout {}", args.join(" ")),
        "version": env!("CARGO_PKG_VERSION"),
        "what": "the real review path (jobs::review: draw order, inclusion probabilities, report) run as a person labelling the first n texts of the queue, the result file's gold as the person; per n, the corrected share's mean 95 % half-width, coverage of the true share and mean error over the replicates",
        "source": {
            "file": a.result.file_name().map(|f| f.to_string_lossy().into_owned()),
            "sha256": readout::hash::sha256_bytes(&bytes),
            "model": file.model.display_name(),
            "eval_set": file.eval_set.name,
            "debias": file.config.debias.as_str(),
            "shots": file.config.shots,
        },
        "curve": curve,
        "timing": {
            "wall_seconds": started.elapsed().as_secs_f64(),
            "peak_rss_bytes": readout::memory::peak_rss(),
        },
    });
    readout::atomic::write(&out_path, format!("{}\n", serde_json::to_string_pretty(&out)?).as_bytes())?;
    for c in &curve.curves {
        let need: Vec<String> = c
            .labels_for
            .iter()
            .map(|(t, n)| {
                format!(
                    "± {:.0} %: {}",
                    t * 100.0,
                    n.map_or(format!("not within {} texts", curve.texts), |n| format!("{n} labels"))
                )
            })
            .collect();
        println!("{:<12} {}", c.by.as_str(), need.join("   "));
    }
    println!("wrote {}", out_path.display());
    Ok(0)
}
