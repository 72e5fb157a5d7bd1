//! Benchmarks that write result files: prefill speed over a fixed list of prompts, cold (every
//! prompt from an empty cache) and with prefix reuse (the longest common prefix with the previous
//! prompt kept, as llama.cpp's simplest setup does, and the plan's tree). Timings are measured
//! here and never asserted in tests.

use crate::engine::{Engine, Prefix, Suffix};
use crate::error::Result;
use crate::plan::common_prefix;
use serde::Serialize;
use std::time::Instant;

/// One prompt as `readout prompts` prints it, tokenized.
pub struct BenchPrompt {
    pub id: String,
    pub tokens: Vec<u32>,
    pub letters: Vec<u32>,
}

/// Timing of one setup over all prompts.
#[derive(Debug, Clone, Serialize)]
pub struct SetupTiming {
    pub setup: String,
    /// Median over repeats of the whole pass, seconds.
    pub seconds: f64,
    pub all_seconds: Vec<f64>,
    /// Tokens that went through the model in one pass.
    pub tokens_computed: usize,
    /// Prompt tokens in one pass (every prompt counted in full).
    pub prompt_tokens: usize,
    /// Prompt tokens per second of wall time.
    pub prompt_tokens_per_s: f64,
    /// Computed tokens per second of wall time.
    pub computed_tokens_per_s: f64,
    /// The letter picked for each prompt (argmax of the letter logits).
    pub argmax: Vec<usize>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn pick(logits: &[f32]) -> usize {
    crate::math::argmax(&logits.iter().map(|x| *x as f64).collect::<Vec<_>>())
}

/// Time `cold` and `prefix-reuse` passes over `prompts`, `repeats` times each.
pub fn prefill(engine: &Engine, prompts: &[BenchPrompt], repeats: usize) -> Result<Vec<SetupTiming>> {
    let prompt_tokens: usize = prompts.iter().map(|p| p.tokens.len()).sum();
    let mut out = Vec::new();
    // One untimed warm-up prompt, as the peer does.
    if let Some(p) = prompts.first() {
        let pre = engine.extend(&Prefix::empty(), &p.tokens[..p.tokens.len() - 1])?;
        engine.read(&pre, &[Suffix { tokens: &p.tokens[p.tokens.len() - 1..], read: &p.letters }])?;
    }
    for setup in ["cold", "prefix-reuse"] {
        let mut times = Vec::new();
        let mut computed = 0;
        let mut argmax = Vec::new();
        for _ in 0..repeats.max(1) {
            computed = 0;
            argmax.clear();
            let start = Instant::now();
            let mut prev: Option<Prefix> = None;
            for p in prompts {
                let keep = match (&prev, setup) {
                    (Some(pre), "prefix-reuse") => common_prefix(&[pre.tokens(), &p.tokens], 1),
                    _ => 0,
                };
                let base = match &prev {
                    Some(pre) if keep > 0 => pre.truncated(keep)?,
                    _ => Prefix::empty(),
                };
                // Compute all but the last token into the cache, then read the last.
                let pre = engine.extend(&base, &p.tokens[keep..p.tokens.len() - 1])?;
                let r = engine.read(&pre, &[Suffix { tokens: &p.tokens[p.tokens.len() - 1..], read: &p.letters }])?;
                computed += p.tokens.len() - keep;
                argmax.push(pick(&r[0].logits));
                prev = Some(pre);
            }
            times.push(start.elapsed().as_secs_f64());
        }
        let all = times.clone();
        let seconds = median(&mut times);
        out.push(SetupTiming {
            setup: setup.to_string(),
            seconds,
            all_seconds: all,
            tokens_computed: computed,
            prompt_tokens,
            prompt_tokens_per_s: prompt_tokens as f64 / seconds,
            computed_tokens_per_s: computed as f64 / seconds,
            argmax,
        });
    }
    Ok(out)
}

/// One projection shape timed on both matmul paths.
#[derive(Debug, Clone, Serialize)]
pub struct MatmulTiming {
    pub name: String,
    pub rows: usize,
    pub in_features: usize,
    pub out_features: usize,
    pub dense_ms: f64,
    pub quantized_ms: f64,
    pub dense_gflops: f64,
    pub quantized_gflops: f64,
    /// Which path is faster for this shape.
    pub faster: String,
}

/// Time `x [rows, in] @ W^T` for every projection shape of `cfg`, as dequantised f32 GEMM and
/// as candle's quantised kernel in `dtype`, at each row count (tokens in one pass).
pub fn matmul_paths(
    cfg: &crate::engine::ModelConfig,
    dtype: candle_core::quantized::GgmlDType,
    rows: &[usize],
    repeats: usize,
) -> Result<Vec<MatmulTiming>> {
    use candle_core::quantized::{QMatMul, QTensor};
    use candle_core::{Device, Module, Tensor};
    let d = cfg.hidden_size;
    let q = cfg.num_heads * cfg.head_dim;
    let kv = cfg.num_kv_heads * cfg.head_dim;
    let ff = cfg.intermediate_size;
    let shapes =
        [("attn_q", d, q), ("attn_k/v", d, kv), ("attn_output", q, d), ("ffn_gate/up", d, ff), ("ffn_down", ff, d)];
    let dev = Device::Cpu;
    let mut out = Vec::new();
    for (name, inf, outf) in shapes {
        let w = Tensor::randn(0f32, 0.02, (outf, inf), &dev)?;
        let qm = QMatMul::from_qtensor(QTensor::quantize(&w, dtype)?)?;
        let dense = qm.dequantize_f16()?.to_dtype(candle_core::DType::F32)?;
        for &s in rows {
            let x = Tensor::randn(0f32, 1.0, (s, inf), &dev)?;
            let time = |f: &dyn Fn() -> candle_core::Result<Tensor>| -> candle_core::Result<f64> {
                f()?;
                let t = Instant::now();
                for _ in 0..repeats.max(1) {
                    f()?;
                }
                Ok(t.elapsed().as_secs_f64() * 1e3 / repeats.max(1) as f64)
            };
            let dense_ms = time(&|| x.matmul(&dense.t()?))?;
            let quantized_ms = time(&|| qm.forward(&x))?;
            let flops = 2.0 * (s * inf * outf) as f64;
            out.push(MatmulTiming {
                name: name.to_string(),
                rows: s,
                in_features: inf,
                out_features: outf,
                dense_ms,
                quantized_ms,
                dense_gflops: flops / dense_ms / 1e6,
                quantized_gflops: flops / quantized_ms / 1e6,
                faster: if dense_ms <= quantized_ms { "dense" } else { "quantized" }.into(),
            });
        }
    }
    Ok(out)
}
