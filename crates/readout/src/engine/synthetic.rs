//! Models with random weights, written to disk in the formats Readout loads. They exist for
//! fast engine tests (a tiny model of each architecture) and for speed work at the size of a
//! real model whose weights are not reachable here (speed does not depend on the values).
//! The tokenizer is byte-level: 256 byte tokens plus the ChatML specials, so every letter is
//! one token; or, for a real model's shape, that model's own tokenizer files copied in
//! (`readout bench make-model`, `bench/make-qwen3-shaped`).

use super::config::{Architecture, Gemma, ModelConfig, RopeStyle};
use crate::error::{Error, Result};
use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use std::collections::HashMap;
use std::path::Path;

/// Special tokens appended after the 256 byte tokens.
pub const SPECIALS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// A tiny model of `arch`: 2 layers, hidden 256 (so every GGUF block type fits), byte vocabulary.
/// A `gemma3` one has 6 layers (llama.cpp's pattern: five local, then one global), a sliding
/// window of 4 tokens, and linear RoPE scaling of 2 on its global layer, so that every part of
/// Gemma 3 is at work in a prompt of a few dozen tokens. A `qwen2` one has an LM head of its own
/// (untied), as Qwen2.5-Coder-1.5B has.
pub fn tiny_config(arch: Architecture) -> ModelConfig {
    let mut cfg = ModelConfig {
        architecture: arch,
        vocab_size: 256 + SPECIALS.len(),
        hidden_size: 256,
        intermediate_size: 512,
        num_layers: 2,
        num_heads: 4,
        num_kv_heads: 2,
        head_dim: 64,
        rope_theta: 10_000.0,
        rms_eps: 1e-5,
        context_length: 1024,
        tie_embeddings: arch != Architecture::Qwen2,
        rope_style: match arch {
            Architecture::Llama => RopeStyle::Interleaved,
            Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Gemma3 | Architecture::Qwen35 => {
                RopeStyle::Halves
            }
        },
        rope_factors: None,
        gemma: None,
        hybrid: None,
    };
    if arch == Architecture::Gemma3 {
        cfg.num_layers = 6;
        cfg.rope_theta = 1_000_000.0;
        cfg.rms_eps = 1e-6;
        cfg.gemma = Some(Gemma {
            sliding_window: 4,
            local_layers: Gemma::pattern(6, Gemma::PATTERN),
            rope_local_theta: Gemma::LOCAL_ROPE_THETA,
            rope_global_scale: 0.5,
            query_scale: 1.0 / (cfg.head_dim as f32).sqrt() as f64,
            embed_scale: (cfg.hidden_size as f32).sqrt(),
            final_logit_softcap: None,
        });
    }
    cfg
}

/// [`tiny_config`] of `gemma3` with another sliding window.
pub fn tiny_gemma3_with_window(window: usize) -> ModelConfig {
    let mut cfg = tiny_config(Architecture::Gemma3);
    if let Some(g) = cfg.gemma.as_mut() {
        g.sliding_window = window;
    }
    cfg
}

/// [`tiny_config`] of `llama` with Llama 3's RoPE scaling (factor 8, low and high frequency
/// factors 1 and 4, an original context of 64 tokens, so that the tiny head's 32 frequencies fall
/// in all three of its bands: kept, blended and divided).
pub fn tiny_llama3() -> ModelConfig {
    let mut cfg = tiny_config(Architecture::Llama);
    cfg.rope_factors = Some(super::config::llama3_rope_factors(cfg.rope_theta, cfg.head_dim, 8.0, 1.0, 4.0, 64.0));
    cfg
}

/// The public shape of a real model, by name (`qwen3-0.6b`, `smollm2-135m`), for random-weights
/// copies at full size; `None` for an unknown name. The names are listed in [`SHAPES`].
pub fn shape_config(name: &str) -> Option<ModelConfig> {
    match name {
        // Qwen/Qwen3-0.6B config.json.
        "qwen3-0.6b" => Some(ModelConfig {
            architecture: Architecture::Qwen3,
            vocab_size: 151_936,
            hidden_size: 1024,
            intermediate_size: 3072,
            num_layers: 28,
            num_heads: 16,
            num_kv_heads: 8,
            head_dim: 128,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-6,
            context_length: 40_960,
            tie_embeddings: true,
            rope_style: RopeStyle::Halves,
            rope_factors: None,
            gemma: None,
            hybrid: None,
        }),
        // HuggingFaceTB/SmolLM2-135M-Instruct, as its GGUF metadata says.
        "smollm2-135m" => Some(ModelConfig {
            architecture: Architecture::Llama,
            vocab_size: 49_152,
            hidden_size: 576,
            intermediate_size: 1536,
            num_layers: 30,
            num_heads: 9,
            num_kv_heads: 3,
            head_dim: 64,
            rope_theta: 100_000.0,
            rms_eps: 1e-5,
            context_length: 8192,
            tie_embeddings: true,
            rope_style: RopeStyle::Interleaved,
            rope_factors: None,
            gemma: None,
            hybrid: None,
        }),
        // Qwen/Qwen3-4B config.json: the size of judge that scores about 0.80 on authored144.
        "qwen3-4b" => Some(ModelConfig {
            architecture: Architecture::Qwen3,
            vocab_size: 151_936,
            hidden_size: 2560,
            intermediate_size: 9728,
            num_layers: 36,
            num_heads: 32,
            num_kv_heads: 8,
            head_dim: 128,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-6,
            context_length: 40_960,
            tie_embeddings: true,
            rope_style: RopeStyle::Halves,
            rope_factors: None,
            gemma: None,
            hybrid: None,
        }),
        // Qwen/Qwen2.5-Coder-1.5B-Instruct, as its GGUF metadata says (an LM head of its own).
        "qwen2.5-1.5b" => Some(ModelConfig {
            architecture: Architecture::Qwen2,
            vocab_size: 151_936,
            hidden_size: 1536,
            intermediate_size: 8960,
            num_layers: 28,
            num_heads: 12,
            num_kv_heads: 2,
            head_dim: 128,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-6,
            context_length: 32_768,
            tie_embeddings: false,
            rope_style: RopeStyle::Halves,
            rope_factors: None,
            gemma: None,
            hybrid: None,
        }),
        // google/gemma-3-270m, as its GGUF metadata says.
        "gemma3-270m" => Some(ModelConfig {
            architecture: Architecture::Gemma3,
            vocab_size: 262_144,
            hidden_size: 640,
            intermediate_size: 2048,
            num_layers: 18,
            num_heads: 4,
            num_kv_heads: 1,
            head_dim: 256,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-6,
            context_length: 32_768,
            tie_embeddings: true,
            rope_style: RopeStyle::Halves,
            rope_factors: None,
            gemma: Some(Gemma {
                sliding_window: 512,
                local_layers: Gemma::pattern(18, Gemma::PATTERN),
                rope_local_theta: Gemma::LOCAL_ROPE_THETA,
                rope_global_scale: 1.0,
                query_scale: 1.0 / 16.0,
                embed_scale: 640f32.sqrt(),
                final_logit_softcap: None,
            }),
            hybrid: None,
        }),
        "tiny-llama" => Some(tiny_config(Architecture::Llama)),
        "tiny-qwen2" => Some(tiny_config(Architecture::Qwen2)),
        "tiny-qwen3" => Some(tiny_config(Architecture::Qwen3)),
        "tiny-gemma3" => Some(tiny_config(Architecture::Gemma3)),
        _ => None,
    }
}

/// The names [`shape_config`] knows.
pub const SHAPES: [&str; 9] = [
    "qwen3-0.6b",
    "qwen3-4b",
    "qwen2.5-1.5b",
    "smollm2-135m",
    "gemma3-270m",
    "tiny-llama",
    "tiny-qwen2",
    "tiny-qwen3",
    "tiny-gemma3",
];

/// GPT-2's byte-to-character map: the vocabulary strings of a byte-level BPE.
pub fn byte_tokens() -> Vec<String> {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32).chain(0xA1..=0xAC).chain(0xAE..=0xFF).collect();
    let mut chars = printable.clone();
    let mut n = 0;
    for b in 0..256u32 {
        if !printable.contains(&b) {
            printable.push(b);
            chars.push(256 + n);
            n += 1;
        }
    }
    let mut out = vec![String::new(); 256];
    for (b, c) in printable.iter().zip(chars) {
        out[*b as usize] = char::from_u32(c).map(String::from).unwrap_or_default();
    }
    out
}

/// Deterministic uniform values in `[-scale, scale]` (splitmix64).
fn random(n: usize, seed: &mut u64, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// Every tensor of a model, named as in GGUF, shaped `[out, in]`, handed to `each` one at a time
/// (a Qwen3-4B-shaped model is 16 GB in f32: only one tensor of it exists at once here).
fn tensors(
    cfg: &ModelConfig,
    seed: u64,
    mut each: impl FnMut(String, Tensor) -> candle_core::Result<()>,
) -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let mut s = seed;
    let mut t = |shape: &[usize], scale: f32| -> candle_core::Result<Tensor> {
        Tensor::from_vec(random(shape.iter().product(), &mut s, scale), shape, &dev)
    };
    let (d, ff, hd) = (cfg.hidden_size, cfg.intermediate_size, cfg.head_dim);
    let (q, kv) = (cfg.num_heads * hd, cfg.num_kv_heads * hd);
    let w = 0.7 / (d as f32).sqrt();
    each("token_embd.weight".to_string(), t(&[cfg.vocab_size, d], 1.0)?)?;
    for i in 0..cfg.num_layers {
        let mut add = |k: &str, shape: &[usize], scale: f32, offset: f32| -> candle_core::Result<()> {
            let name = if k.ends_with(".bias") { format!("blk.{i}.{k}") } else { format!("blk.{i}.{k}.weight") };
            each(name, (t(shape, scale)? + offset as f64)?)
        };
        add("attn_norm", &[d], 0.1, 1.0)?;
        add("attn_q", &[q, d], w, 0.0)?;
        add("attn_k", &[kv, d], w, 0.0)?;
        add("attn_v", &[kv, d], w, 0.0)?;
        add("attn_output", &[d, q], w, 0.0)?;
        if cfg.architecture.has_qkv_bias() {
            // Biases as large as a product's typical entry, so that leaving one out shows.
            for (k, n) in [("attn_q.bias", q), ("attn_k.bias", kv), ("attn_v.bias", kv)] {
                add(k, &[n], 0.5, 0.0)?;
            }
        }
        if cfg.architecture.has_qk_norms() {
            add("attn_q_norm", &[hd], 0.1, 1.0)?;
            add("attn_k_norm", &[hd], 0.1, 1.0)?;
        }
        if cfg.architecture == Architecture::Gemma3 {
            add("post_attention_norm", &[d], 0.1, 1.0)?;
        }
        add("ffn_norm", &[d], 0.1, 1.0)?;
        add("ffn_gate", &[ff, d], w, 0.0)?;
        add("ffn_up", &[ff, d], w, 0.0)?;
        add("ffn_down", &[d, ff], 0.7 / (ff as f32).sqrt(), 0.0)?;
        if cfg.architecture == Architecture::Gemma3 {
            add("post_ffw_norm", &[d], 0.1, 1.0)?;
        }
    }
    each("output_norm.weight".to_string(), (t(&[d], 0.1)? + 1.0)?)?;
    if let Some(f) = &cfg.rope_factors {
        each("rope_freqs.weight".to_string(), Tensor::from_vec(f.clone(), f.len(), &dev)?)?;
    }
    if !cfg.tie_embeddings {
        each("output.weight".to_string(), t(&[cfg.vocab_size, d], 1.0)?)?;
    }
    Ok(())
}

/// Write a random-weights GGUF with matrices stored as `dtype` (norms stay F32).
pub fn write_gguf(path: &Path, cfg: &ModelConfig, seed: u64, dtype: GgmlDType) -> Result<()> {
    write_gguf_as(path, cfg, seed, Some(dtype), None)
}

/// [`write_gguf`], with the tokenizer of the GGUF file `tokenizer_from` (every `tokenizer.*`
/// entry: vocabulary, merges, special tokens, chat template) in place of the byte-level one, so
/// that the model reads text into the very tokens that file's model does; `dtype` `None` writes
/// the metadata alone, no tensors: a file of a few MB that carries a real model's tokenizer to a
/// machine its weights cannot go to (the default model's random-weights twin on the GPU machine,
/// bench/cuda/h200-run). The tokenizer's vocabulary must have the shape's size.
pub fn write_gguf_as(
    path: &Path,
    cfg: &ModelConfig,
    seed: u64,
    dtype: Option<GgmlDType>,
    tokenizer_from: Option<&Path>,
) -> Result<()> {
    let mut md = gguf_metadata(cfg)?;
    if let Some(src) = tokenizer_from {
        let (_, content) = super::gguf::open(src)?;
        let size = match content.metadata.get("tokenizer.ggml.tokens") {
            Some(gguf_file::Value::Array(tokens)) => tokens.len(),
            _ => return Err(Error::Config(format!("{} has no tokenizer (no tokenizer.ggml.tokens)", src.display()))),
        };
        if size != cfg.vocab_size {
            return Err(Error::Config(format!(
                "the tokenizer of {} has {size} tokens and the shape {} rows: take the shape of the model it came from",
                src.display(),
                cfg.vocab_size
            )));
        }
        let mut theirs: Vec<(String, gguf_file::Value)> =
            content.metadata.into_iter().filter(|(k, _)| k.starts_with("tokenizer.")).collect();
        theirs.sort_by(|a, b| a.0.cmp(&b.0));
        md.retain(|(k, _)| !k.starts_with("tokenizer."));
        md.extend(theirs);
    }
    let mut qs: Vec<(String, QTensor)> = Vec::new();
    if let Some(dtype) = dtype {
        tensors(cfg, seed, |name, t| {
            let ty = if t.rank() == 1 { GgmlDType::F32 } else { dtype };
            qs.push((name, QTensor::quantize(&t, ty)?));
            Ok(())
        })?;
    }
    let mut f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let md_refs: Vec<(&str, &gguf_file::Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = qs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    gguf_file::write(&mut f, &md_refs, &t_refs)?;
    Ok(())
}

/// A random-weights GGUF's metadata: the shape as llama.cpp names it, the byte-level tokenizer.
fn gguf_metadata(cfg: &ModelConfig) -> Result<Vec<(String, gguf_file::Value)>> {
    use gguf_file::Value;
    let a = cfg.architecture.as_str();
    let mut tokens = byte_tokens();
    tokens.extend(SPECIALS.iter().map(|s| s.to_string()));
    let types: Vec<Value> = (0..tokens.len()).map(|i| Value::I32(if i < 256 { 1 } else { 3 })).collect();
    let pre = match cfg.architecture {
        Architecture::Llama => "smollm",
        Architecture::Qwen2 | Architecture::Qwen3 => "qwen2",
        Architecture::Gemma3 => "default",
        Architecture::Qwen35 => "qwen35",
    };
    let mut md: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(a.into())),
        ("general.name".into(), Value::String(format!("random-{a}"))),
        (format!("{a}.block_count"), Value::U32(cfg.num_layers as u32)),
        (format!("{a}.context_length"), Value::U32(cfg.context_length as u32)),
        (format!("{a}.embedding_length"), Value::U32(cfg.hidden_size as u32)),
        (format!("{a}.feed_forward_length"), Value::U32(cfg.intermediate_size as u32)),
        (format!("{a}.attention.head_count"), Value::U32(cfg.num_heads as u32)),
        (format!("{a}.attention.head_count_kv"), Value::U32(cfg.num_kv_heads as u32)),
        (format!("{a}.attention.key_length"), Value::U32(cfg.head_dim as u32)),
        (format!("{a}.rope.freq_base"), Value::F32(cfg.rope_theta)),
        (format!("{a}.attention.layer_norm_rms_epsilon"), Value::F32(cfg.rms_eps as f32)),
        (format!("{a}.vocab_size"), Value::U32(cfg.vocab_size as u32)),
        ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
        ("tokenizer.ggml.pre".into(), Value::String(pre.into())),
        ("tokenizer.ggml.tokens".into(), Value::Array(tokens.iter().map(|t| Value::String(t.clone())).collect())),
        ("tokenizer.ggml.token_type".into(), Value::Array(types)),
        ("tokenizer.ggml.merges".into(), Value::Array(vec![])),
        ("tokenizer.ggml.bos_token_id".into(), Value::U32(256)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(258)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(false)),
        ("tokenizer.chat_template".into(), Value::String(CHATML.into())),
    ];
    if let Some(g) = &cfg.gemma {
        // What llama.cpp reads: the window, and the global layers' linear RoPE scaling. The
        // pattern, the local base and the query scale are llama.cpp's fixed ones (checked).
        let fixed = Gemma::pattern(cfg.num_layers, Gemma::PATTERN) == g.local_layers
            && g.rope_local_theta == Gemma::LOCAL_ROPE_THETA
            && g.query_scale == 1.0 / (cfg.head_dim as f32).sqrt() as f64
            && g.embed_scale == (cfg.hidden_size as f32).sqrt();
        if !fixed {
            return Err(Error::Config(
                "a gemma3 GGUF has llama.cpp's layer pattern, local RoPE base, query and embedding scales; this config differs".into(),
            ));
        }
        md.push((format!("{a}.attention.sliding_window"), Value::U32(g.sliding_window as u32)));
        if g.rope_global_scale != 1.0 {
            md.push((format!("{a}.rope.scaling.type"), Value::String("linear".into())));
            md.push((format!("{a}.rope.scaling.factor"), Value::F32(1.0 / g.rope_global_scale)));
        }
        if let Some(cap) = g.final_logit_softcap {
            md.push((format!("{a}.final_logit_softcapping"), Value::F32(cap)));
        }
    }
    Ok(md)
}

/// Write a random-weights Hugging Face directory (config.json, tokenizer.json,
/// tokenizer_config.json, model.safetensors in f32). With `tokenizer_dir`, its tokenizer.json and
/// tokenizer_config.json are copied instead of the byte-level one.
pub fn write_hf_dir(dir: &Path, cfg: &ModelConfig, seed: u64, tokenizer_dir: Option<&Path>) -> Result<()> {
    write_hf_dir_as(dir, cfg, seed, tokenizer_dir, DType::F32)
}

/// [`write_hf_dir`] with the safetensors stored as `dtype` (F32, F16 or BF16; the loader widens
/// them to f32). A Qwen3-0.6B-shaped model is 2.4 GB in f32 and 1.2 GB in bf16.
pub fn write_hf_dir_as(
    dir: &Path,
    cfg: &ModelConfig,
    seed: u64,
    tokenizer_dir: Option<&Path>,
    dtype: DType,
) -> Result<()> {
    if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
        return Err(Error::Config(format!("safetensors dtype {dtype:?} is not one of f32, f16, bf16")));
    }
    if cfg.rope_factors.is_some() {
        return Err(Error::Config(
            "a Hugging Face directory states Llama 3's RoPE scaling by its parameters, not by factors; write this model as GGUF".into(),
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let gemma = cfg.architecture == Architecture::Gemma3;
    let hf = |k: &str| -> String {
        // Gemma 3 names its MLP's norm `pre_feedforward_layernorm` and the norm after attention
        // `post_attention_layernorm`, the name llama gives the MLP's norm.
        let gemma_map = [
            ("post_attention_norm", "post_attention_layernorm"),
            ("ffn_norm", "pre_feedforward_layernorm"),
            ("post_ffw_norm", "post_feedforward_layernorm"),
        ];
        let map = [
            ("attn_norm", "input_layernorm"),
            ("attn_q_norm", "self_attn.q_norm"),
            ("attn_k_norm", "self_attn.k_norm"),
            ("attn_q", "self_attn.q_proj"),
            ("attn_k", "self_attn.k_proj"),
            ("attn_v", "self_attn.v_proj"),
            ("attn_output", "self_attn.o_proj"),
            ("ffn_norm", "post_attention_layernorm"),
            ("ffn_gate", "mlp.gate_proj"),
            ("ffn_up", "mlp.up_proj"),
            ("ffn_down", "mlp.down_proj"),
        ];
        if k == "token_embd.weight" {
            return "model.embed_tokens.weight".into();
        }
        if k == "output_norm.weight" {
            return "model.norm.weight".into();
        }
        if k == "output.weight" {
            return "lm_head.weight".into();
        }
        let rest = k.trim_start_matches("blk.");
        let (i, name) = rest.split_once('.').unwrap_or(("0", rest));
        let (name, kind) = match name.strip_suffix(".bias") {
            Some(n) => (n, "bias"),
            None => (name.trim_end_matches(".weight"), "weight"),
        };
        let own = if gemma { gemma_map.iter().find(|(g, _)| *g == name) } else { None };
        let mapped = own.or_else(|| map.iter().find(|(g, _)| *g == name)).map(|(_, h)| *h).unwrap_or(name);
        format!("model.layers.{i}.{mapped}.{kind}")
    };
    let mut named: HashMap<String, Tensor> = HashMap::new();
    tensors(cfg, seed, |k, t| {
        // The same model as the GGUF: Gemma 3's checkpoints store `w` of the norms' `1 + w`.
        let t = if gemma && k.ends_with("norm.weight") { (t - 1.0)? } else { t };
        named.insert(hf(&k), t.to_dtype(dtype)?);
        Ok(())
    })?;
    candle_core::safetensors::save(&named, dir.join("model.safetensors"))?;
    let arch = match cfg.architecture {
        Architecture::Llama => "LlamaForCausalLM",
        Architecture::Qwen2 => "Qwen2ForCausalLM",
        Architecture::Qwen3 => "Qwen3ForCausalLM",
        Architecture::Gemma3 => "Gemma3ForCausalLM",
        Architecture::Qwen35 => "Qwen3_5ForCausalLM",
    };
    let mut config = serde_json::json!({
        "architectures": [arch],
        "model_type": if gemma { "gemma3_text" } else { cfg.architecture.as_str() },
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim,
        "rope_theta": cfg.rope_theta,
        "rms_norm_eps": cfg.rms_eps,
        "max_position_embeddings": cfg.context_length,
        "tie_word_embeddings": cfg.tie_embeddings,
        "torch_dtype": match dtype {
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            _ => "float32",
        },
    });
    if let (Some(g), Some(obj)) = (&cfg.gemma, config.as_object_mut()) {
        let layer_types: Vec<&str> =
            g.local_layers.iter().map(|&l| if l { "sliding_attention" } else { "full_attention" }).collect();
        let scaling = if g.rope_global_scale == 1.0 {
            serde_json::Value::Null
        } else {
            serde_json::json!({"rope_type": "linear", "factor": 1.0 / g.rope_global_scale})
        };
        for (k, v) in [
            ("sliding_window", serde_json::json!(g.sliding_window)),
            ("layer_types", serde_json::json!(layer_types)),
            ("rope_local_base_freq", serde_json::json!(g.rope_local_theta)),
            ("rope_scaling", scaling),
            ("query_pre_attn_scalar", serde_json::json!(g.query_scale.powi(-2).round())),
            ("final_logit_softcapping", serde_json::json!(g.final_logit_softcap)),
            ("attn_logit_softcapping", serde_json::Value::Null),
            ("hidden_activation", serde_json::json!("gelu_pytorch_tanh")),
        ] {
            obj.insert(k.to_string(), v);
        }
    }
    let write = |name: &str, v: &serde_json::Value| -> Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, serde_json::to_vec_pretty(v).unwrap_or_default()).map_err(|e| Error::io(&p, e))
    };
    write("config.json", &config)?;
    match tokenizer_dir {
        Some(src) => {
            for name in ["tokenizer.json", "tokenizer_config.json"] {
                let from = src.join(name);
                std::fs::copy(&from, dir.join(name)).map_err(|e| Error::io(&from, e))?;
            }
        }
        None => {
            let mut tokens = byte_tokens();
            tokens.extend(SPECIALS.iter().map(|s| s.to_string()));
            let vocab: serde_json::Map<String, serde_json::Value> =
                tokens.iter().enumerate().map(|(i, t)| (t.clone(), serde_json::json!(i))).collect();
            let added: Vec<serde_json::Value> = SPECIALS
                .iter()
                .enumerate()
                .map(|(i, s)| serde_json::json!({"id": 256 + i, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}))
                .collect();
            let tok = serde_json::json!({
                "version": "1.0", "truncation": null, "padding": null, "added_tokens": added, "normalizer": null,
                "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
                "post_processor": null,
                "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
                "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                          "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                          "vocab": vocab, "merges": []}
            });
            write("tokenizer.json", &tok)?;
            write("tokenizer_config.json", &serde_json::json!({"chat_template": CHATML, "eos_token": "<|im_end|>"}))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gguf_file::Value;

    #[test]
    fn a_written_file_reads_back_like_candle_reads_it() {
        let cfg = tiny_config(crate::engine::Architecture::Qwen3);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.gguf");
        write_gguf(&p, &cfg, 1, GgmlDType::Q8_0).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let ours = crate::engine::gguf::parse(&bytes, &p).unwrap();
        let theirs = candle_core::quantized::gguf_file::Content::read(&mut std::io::Cursor::new(&bytes)).unwrap();
        assert_eq!(ours.tensor_data_offset, theirs.tensor_data_offset);
        assert_eq!(ours.metadata.len(), theirs.metadata.len());
        for (k, v) in &theirs.metadata {
            assert_eq!(format!("{v:?}"), format!("{:?}", ours.metadata[k]), "{k}");
        }
        assert_eq!(ours.tensor_infos.len(), theirs.tensor_infos.len());
        for (k, t) in &theirs.tensor_infos {
            let o = &ours.tensor_infos[k];
            assert_eq!((o.ggml_dtype, o.shape.dims(), o.offset), (t.ggml_dtype, t.shape.dims(), t.offset), "{k}");
        }
        let (_, from_file) = crate::engine::gguf::open(&p).unwrap();
        assert_eq!(from_file.tensor_infos.len(), ours.tensor_infos.len());
    }

    /// A GGUF of metadata alone: `n` tokens named `t0`, `t1`, …, a chat template and a padding id.
    fn tokenizer_file(path: &Path, n: usize) {
        let md = [
            ("tokenizer.ggml.tokens", Value::Array((0..n).map(|i| Value::String(format!("t{i}"))).collect())),
            ("tokenizer.chat_template", Value::String("theirs".into())),
            ("tokenizer.ggml.padding_token_id", Value::U32(5)),
            ("general.name", Value::String("not copied".into())),
        ];
        let refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
        gguf_file::write(&mut std::fs::File::create(path).unwrap(), &refs, &[]).unwrap();
    }

    #[test]
    fn a_twin_takes_every_tokenizer_entry_of_the_other_file_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = tiny_config(Architecture::Llama);
        let src = dir.path().join("tokenizer.gguf");
        tokenizer_file(&src, cfg.vocab_size);
        for (dtype, tensors) in [(Some(GgmlDType::F32), 2 + 9 * cfg.num_layers), (None, 0)] {
            let out = dir.path().join("twin.gguf");
            write_gguf_as(&out, &cfg, 1, dtype, Some(&src)).unwrap();
            let (_, c) = crate::engine::gguf::open(&out).unwrap();
            assert_eq!(c.tensor_infos.len(), tensors);
            let tokens = match &c.metadata["tokenizer.ggml.tokens"] {
                Value::Array(t) => t.len(),
                _ => 0,
            };
            assert_eq!(tokens, cfg.vocab_size);
            assert!(
                matches!(&c.metadata["tokenizer.ggml.tokens"], Value::Array(t) if matches!(&t[3], Value::String(s) if s == "t3"))
            );
            assert!(matches!(&c.metadata["tokenizer.chat_template"], Value::String(s) if s == "theirs"));
            assert!(matches!(c.metadata["tokenizer.ggml.padding_token_id"], Value::U32(5)));
            // The byte-level tokenizer's own entries are gone; the model's shape is ours.
            assert!(!c.metadata.contains_key("tokenizer.ggml.merges"));
            assert!(matches!(&c.metadata["general.name"], Value::String(s) if s == "random-llama"));
        }
        // A vocabulary of another size than the shape's is refused.
        tokenizer_file(&src, 10);
        let e = write_gguf_as(&dir.path().join("x.gguf"), &cfg, 1, None, Some(&src)).unwrap_err().to_string();
        assert!(e.contains("has 10 tokens"), "{e}");
    }
}
