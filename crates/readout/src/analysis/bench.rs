//! Benchmarks that write result files: prefill speed over a fixed list of prompts, cold (every
//! prompt from an empty cache) and with prefix reuse (the longest common prefix with the previous
//! prompt kept, as llama.cpp's simplest setup does, and the plan's tree). Timings are measured
//! here and never asserted in tests.

use crate::engine::{Engine, Prefix, Readout, Suffix, Unit, UnitOut};
use crate::error::{Error, Result};
use crate::pipeline::plan::common_prefix;
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
        prompt_pass(engine, &Prefix::empty(), &p.tokens, &p.letters)?;
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
                let (pre, r) = prompt_pass(engine, &base, &p.tokens[keep..], &p.letters)?;
                computed += p.tokens.len() - keep;
                argmax.push(pick(&r.logits));
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

/// One prompt's tokens on top of `base` as the run computes them: one forward pass that keeps
/// all but the last token in the cache and reads the letters at the last (a prompt longer than
/// a pass has its front extended first). Gives the prompt's prefix, for reuse, and the readout.
fn prompt_pass(engine: &Engine, base: &Prefix, tokens: &[u32], letters: &[u32]) -> Result<(Prefix, Readout)> {
    let Some((last, stem)) = tokens.split_last() else {
        return Err(Error::Config("a benchmark prompt has no tokens to compute".into()));
    };
    let front = stem.len().saturating_sub(engine.pass_defaults().pass_tokens.saturating_sub(1));
    let parent = if front > 0 { engine.extend(base, &stem[..front])? } else { base.clone() };
    let unit = Unit {
        parent: &parent,
        stem: &stem[front..],
        leaves: vec![Suffix { tokens: std::slice::from_ref(last), read: letters }],
        keep: true,
    };
    let out = engine.pass(std::slice::from_ref(&unit))?.into_iter().next();
    match out {
        Some(UnitOut { prefix, mut readouts }) if readouts.len() == 1 => Ok((prefix, readouts.remove(0))),
        _ => Err(Error::Config("the engine gave no readout for a benchmark prompt".into())),
    }
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

/// The ticket text the logit-cost benchmark repeats into a realistic prompt.
pub const LOGIT_COST_TEXT: &str = "Hello, I was charged twice for my subscription this month and the second charge \
appeared on my card two days after the first. I tried to log in to check my invoices but the page keeps \
showing an error, and resetting my password did not help. Could you look into the duplicate payment, \
refund the extra charge, and tell me why the billing page does not load? Thanks, Sam.";

/// Tokens for the logit-cost benchmark: a prompt rendered with the model's chat template (the
/// first criterion of `rubric` on `text`, the text repeated until the prompt is long enough),
/// cut into a fixed prefix of `prefix_tokens` and a pool of `max_suffix` tokens after it.
pub struct LogitCostTokens {
    pub prefix: Vec<u32>,
    pub pool: Vec<u32>,
    /// The answer letters' token ids, read at the end of each suffix.
    pub letters: Vec<u32>,
}

/// Build [`LogitCostTokens`] from a rubric and a text.
pub fn logit_cost_tokens(
    engine: &Engine,
    rubric: &crate::formats::rubric::Rubric,
    text: &str,
    prefix_tokens: usize,
    max_suffix: usize,
) -> Result<LogitCostTokens> {
    use crate::error::Error;
    use crate::pipeline::prompt;
    let c = rubric.criteria.first().ok_or_else(|| Error::Config("the rubric has no criteria".into()))?;
    if text.trim().is_empty() {
        return Err(Error::Config("the benchmark text is empty".into()));
    }
    let need = prefix_tokens + max_suffix;
    let ordering: Vec<usize> = (0..c.options.len()).collect();
    let mut state = text.to_string();
    for _ in 0..64 {
        let rendered = engine.template().render(&prompt::messages(&[], prompt::user_turn(&state, c, &ordering)))?;
        let tokens = engine.tokenizer().encode(&rendered)?;
        if tokens.len() >= need {
            let letters = engine.answer_tokens(&rendered, &tokens, c.options.len())?;
            return Ok(LogitCostTokens {
                prefix: tokens[..prefix_tokens].to_vec(),
                pool: tokens[prefix_tokens..need].to_vec(),
                letters,
            });
        }
        state.push_str("\n\n");
        state.push_str(text);
    }
    Err(Error::Config(format!("could not build a prompt of {need} tokens from the benchmark text")))
}

/// Reading the answer logits after a suffix of one length, over many repeats.
#[derive(Debug, Clone, Serialize)]
pub struct LogitCostRow {
    pub suffix_tokens: usize,
    pub median_ms: f64,
    pub p10_ms: f64,
    pub p90_ms: f64,
    pub repeats: usize,
}

/// Least-squares line `ms = fixed_ms + ms_per_token * suffix_tokens`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct LinearFit {
    pub fixed_ms: f64,
    pub ms_per_token: f64,
    pub r2: f64,
}

/// Ordinary least squares of `ys` on `xs`; `None` with fewer than two distinct x.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> Option<LinearFit> {
    let n = xs.len().min(ys.len());
    if n < 2 {
        return None;
    }
    let (mx, my) = (xs[..n].iter().sum::<f64>() / n as f64, ys[..n].iter().sum::<f64>() / n as f64);
    let sxx: f64 = xs[..n].iter().map(|x| (x - mx) * (x - mx)).sum();
    let sxy: f64 = xs[..n].iter().zip(&ys[..n]).map(|(x, y)| (x - mx) * (y - my)).sum();
    let syy: f64 = ys[..n].iter().map(|y| (y - my) * (y - my)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy == 0.0 { 1.0 } else { sxy * sxy / (sxx * syy) };
    Some(LinearFit { fixed_ms: my - slope * mx, ms_per_token: slope, r2 })
}

/// The `q`-quantile (0..=1) of sorted values, by linear interpolation.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Time `engine.read` of one suffix of each length in `lengths` (the first tokens of `pool`) on
/// the fixed `prefix`: `warmups` untimed rounds, then `repeats` timed rounds, the lengths
/// interleaved within each round so that drift spreads over all of them.
#[allow(clippy::too_many_arguments)] // the measurement's knobs, each named at the one call
pub fn logit_cost(
    engine: &Engine,
    prefix: &Prefix,
    pool: &[u32],
    letters: &[u32],
    lengths: &[usize],
    repeats: usize,
    warmups: usize,
    opts: crate::engine::PassOptions,
) -> Result<Vec<LogitCostRow>> {
    use crate::error::Error;
    if let Some(&n) = lengths.iter().find(|&&n| n == 0 || n > pool.len()) {
        return Err(Error::Config(format!("suffix length {n} is not between 1 and {}", pool.len())));
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(repeats); lengths.len()];
    for round in 0..warmups + repeats.max(1) {
        for (i, &n) in lengths.iter().enumerate() {
            let start = Instant::now();
            let r = engine.read_with(prefix, &[Suffix { tokens: &pool[..n], read: letters }], opts)?;
            let ms = start.elapsed().as_secs_f64() * 1e3;
            std::hint::black_box(&r);
            if round >= warmups {
                times[i].push(ms);
            }
        }
    }
    Ok(lengths
        .iter()
        .zip(times)
        .map(|(&n, mut t)| {
            t.sort_by(|a, b| a.total_cmp(b));
            LogitCostRow {
                suffix_tokens: n,
                median_ms: quantile(&t, 0.5),
                p10_ms: quantile(&t, 0.1),
                p90_ms: quantile(&t, 0.9),
                repeats: t.len(),
            }
        })
        .collect())
}

/// The least-squares line through the medians of `rows`.
pub fn fit_rows(rows: &[LogitCostRow]) -> Option<LinearFit> {
    let xs: Vec<f64> = rows.iter().map(|r| r.suffix_tokens as f64).collect();
    let ys: Vec<f64> = rows.iter().map(|r| r.median_ms).collect();
    linear_fit(&xs, &ys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_a_line() {
        // y = 3 + 0.5 x exactly.
        let xs = [1.0, 8.0, 16.0, 32.0];
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 + 0.5 * x).collect();
        let f = linear_fit(&xs, &ys).unwrap();
        assert!((f.fixed_ms - 3.0).abs() < 1e-12 && (f.ms_per_token - 0.5).abs() < 1e-12);
        assert!((f.r2 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fit_by_hand() {
        // x = 0,1,2; y = 1,2,4: slope = sxy/sxx = 3/2, intercept = 7/3 - 3/2 = 5/6,
        // r2 = sxy^2 / (sxx * syy) = 9 / (2 * 14/3) = 27/28.
        let f = linear_fit(&[0.0, 1.0, 2.0], &[1.0, 2.0, 4.0]).unwrap();
        assert!((f.ms_per_token - 1.5).abs() < 1e-12);
        assert!((f.fixed_ms - 5.0 / 6.0).abs() < 1e-12);
        assert!((f.r2 - 27.0 / 28.0).abs() < 1e-12);
        assert!(linear_fit(&[2.0, 2.0], &[1.0, 3.0]).is_none());
        assert!(linear_fit(&[1.0], &[1.0]).is_none());
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert!((quantile(&v, 0.1) - 1.4).abs() < 1e-12);
        assert!((quantile(&v, 0.9) - 4.6).abs() < 1e-12);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
