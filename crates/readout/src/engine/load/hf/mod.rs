//! A Hugging Face model directory: `config.json` read as transformers reads it (each family's
//! fields, Llama 3's RoPE scaling; Gemma 3's in `gemma.rs`), the weights of its safetensors
//! files as views of the mapped files, and `tokenizer.json` and `tokenizer_config.json` beside
//! them.

mod gemma;

use super::build::{build, BlockKeys, DeltaKeys};
use super::tokenizer_config::{hf_chat_template, read_tokenizer_config};
use super::{map, Loaded, TokenizerSource};
use crate::engine::config::{self, Architecture, Hybrid, ModelConfig, RopeStyle};
use crate::engine::model::{Hold, LoadedWeight};
use crate::engine::options::MatmulPath;
use crate::engine::weights::Encoded;
use crate::error::{Error, Result};
use candle_core::Device;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The Hugging Face layout's names of a block's weights (an ONNX export's weights get them too).
/// Gemma 3's block keys (see `gemma::KEYS`), for the ONNX loader, which names a Gemma graph's
/// weights as a Hugging Face checkpoint does.
pub(in crate::engine::load) fn gemma_keys() -> BlockKeys {
    gemma::KEYS
}

pub(super) const HF_KEYS: BlockKeys = BlockKeys {
    attn_norm: "input_layernorm",
    q: "self_attn.q_proj",
    k: "self_attn.k_proj",
    v: "self_attn.v_proj",
    o: "self_attn.o_proj",
    q_norm: "self_attn.q_norm",
    k_norm: "self_attn.k_norm",
    ffn_norm: "post_attention_layernorm",
    attn_post_norm: "",
    ffn_post_norm: "",
    gate: "mlp.gate_proj",
    up: "mlp.up_proj",
    down: "mlp.down_proj",
    norm_shift: 0.0,
    delta: None,
};

/// Qwen3.5's names in a Hugging Face checkpoint; its norms store `w` of `1 + w` (but the
/// DeltaNet's gated norm, read apart, is `w` itself).
const QWEN35_KEYS: BlockKeys = BlockKeys {
    norm_shift: 1.0,
    delta: Some(DeltaKeys {
        qkv: "linear_attn.in_proj_qkv",
        z: "linear_attn.in_proj_z",
        b: "linear_attn.in_proj_b",
        a: "linear_attn.in_proj_a",
        conv: "linear_attn.conv1d",
        dt_bias: "linear_attn.dt_bias",
        a_param: "linear_attn.A_log",
        a_is_log: true,
        norm: "linear_attn.norm",
        out: "linear_attn.out_proj",
    }),
    ..HF_KEYS
};

/// The fields of a Hugging Face `config.json` we read.
#[derive(serde::Deserialize)]
pub(super) struct HfConfig {
    #[serde(default)]
    architectures: Vec<String>,
    #[serde(default)]
    model_type: Option<String>,
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    #[serde(default)]
    num_key_value_heads: Option<usize>,
    #[serde(default)]
    head_dim: Option<usize>,
    #[serde(default)]
    rope_theta: Option<f32>,
    #[serde(default)]
    rms_norm_eps: Option<f64>,
    #[serde(default)]
    max_position_embeddings: Option<usize>,
    #[serde(default)]
    tie_word_embeddings: Option<bool>,
    #[serde(default)]
    torch_dtype: Option<String>,
    /// Newer transformers write `dtype` where older ones wrote `torch_dtype`.
    #[serde(default)]
    dtype: Option<String>,
    // Gemma 3 (`Gemma3TextConfig`).
    #[serde(default)]
    sliding_window: Option<usize>,
    #[serde(default)]
    sliding_window_pattern: Option<usize>,
    #[serde(default)]
    layer_types: Option<Vec<String>>,
    #[serde(default)]
    rope_local_base_freq: Option<f32>,
    #[serde(default)]
    rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    rope_parameters: Option<serde_json::Value>,
    #[serde(default)]
    query_pre_attn_scalar: Option<f64>,
    #[serde(default)]
    final_logit_softcapping: Option<f32>,
    #[serde(default)]
    attn_logit_softcapping: Option<f32>,
    #[serde(default)]
    hidden_activation: Option<String>,
    /// Qwen2's sliding window switch (off in every released Qwen2 and Qwen2.5 checkpoint).
    #[serde(default)]
    use_sliding_window: Option<bool>,
    // Qwen3.5 (`Qwen3_5TextConfig`): the DeltaNet layers' shape; the share of each head RoPE
    // turns (in `rope_parameters` in transformers 5, at the top level before).
    #[serde(default)]
    linear_conv_kernel_dim: Option<usize>,
    #[serde(default)]
    linear_key_head_dim: Option<usize>,
    #[serde(default)]
    linear_value_head_dim: Option<usize>,
    #[serde(default)]
    linear_num_key_heads: Option<usize>,
    #[serde(default)]
    linear_num_value_heads: Option<usize>,
    #[serde(default)]
    partial_rotary_factor: Option<f64>,
    #[serde(default)]
    full_attention_interval: Option<usize>,
}

/// Qwen3.5's DeltaNet shape and layer types from its `config.json` (transformers' defaults where
/// a field is absent, as `Qwen3_5TextConfig` has them).
fn hybrid(hf: &HfConfig, head_dim: usize, cfg_path: &Path) -> Result<Hybrid> {
    let n = hf.num_hidden_layers;
    let recurrent = match &hf.layer_types {
        Some(types) => types
            .iter()
            .map(|t| match t.as_str() {
                "linear_attention" => Ok(true),
                "full_attention" => Ok(false),
                other => Err(Error::BadModelConfig {
                    path: cfg_path.to_path_buf(),
                    detail: format!("layer type `{other}`; a Qwen3.5 layer is `linear_attention` or `full_attention`"),
                }),
            })
            .collect::<Result<Vec<bool>>>()?,
        None => Hybrid::pattern(n, hf.full_attention_interval.unwrap_or(4)),
    };
    let factor = hf
        .rope_parameters
        .as_ref()
        .and_then(|p| p.get("partial_rotary_factor"))
        .and_then(|f| f.as_f64())
        .or(hf.partial_rotary_factor)
        .unwrap_or(0.25);
    Ok(Hybrid {
        recurrent_layers: recurrent,
        rotary_dim: (head_dim as f64 * factor) as usize,
        key_heads: hf.linear_num_key_heads.unwrap_or(16),
        key_dim: hf.linear_key_head_dim.unwrap_or(128),
        value_heads: hf.linear_num_value_heads.unwrap_or(32),
        value_dim: hf.linear_value_head_dim.unwrap_or(128),
        conv_kernel: hf.linear_conv_kernel_dim.unwrap_or(4),
        tiled_heads: false,
    })
}

/// The RoPE scaling of a llama-family `config.json` (`rope_scaling`, or newer transformers'
/// `rope_parameters`) as per-frequency divisors: `None` for unscaled RoPE, Llama 3's factors for
/// `llama3`; any other kind is refused by name.
fn hf_rope_factors(hf: &HfConfig, theta: f32, head_dim: usize, cfg_path: &Path) -> Result<Option<Vec<f32>>> {
    let bad = |detail: String| Error::BadModelConfig { path: cfg_path.to_path_buf(), detail };
    let Some(v) = hf.rope_scaling.as_ref().or(hf.rope_parameters.as_ref()).filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let kind = v.get("rope_type").or_else(|| v.get("type")).and_then(|t| t.as_str()).unwrap_or("default");
    let num = |k: &str| v.get(k).and_then(|x| x.as_f64());
    match kind {
        "default" => Ok(None),
        "linear" if num("factor") == Some(1.0) => Ok(None),
        "llama3" => {
            let (Some(factor), Some(low), Some(high), Some(original)) = (
                num("factor"),
                num("low_freq_factor"),
                num("high_freq_factor"),
                num("original_max_position_embeddings"),
            ) else {
                return Err(bad("`rope_scaling` is llama3 without all of `factor`, `low_freq_factor`, `high_freq_factor` and `original_max_position_embeddings`; get a complete config.json".into()));
            };
            if !(factor > 0.0 && low > 0.0 && high > low && original > 0.0) {
                return Err(bad(format!("`rope_scaling` is llama3 with factor {factor}, low_freq_factor {low}, high_freq_factor {high}, original_max_position_embeddings {original}: each must be positive and high_freq_factor above low_freq_factor")));
            }
            Ok(Some(config::llama3_rope_factors(theta, head_dim, factor, low, high, original)))
        }
        other => Err(bad(format!(
            "the RoPE scaling is of type `{other}`; Readout runs llama-family models with unscaled RoPE or Llama 3's `llama3` scaling"
        ))),
    }
}

/// A multimodal checkpoint's `config.json` (Qwen3.5's `Qwen3_5ForConditionalGeneration`) keeps
/// the language model's shape in `text_config`: that object, with the outer architecture (and
/// dtype where the inner one has none), is the config read; any other is read as it is.
fn text_config(mut value: serde_json::Value) -> serde_json::Value {
    let Some(mut inner) = value.get_mut("text_config").map(serde_json::Value::take) else { return value };
    if let Some(inner) = inner.as_object_mut() {
        for key in ["architectures", "torch_dtype", "dtype", "tie_word_embeddings"] {
            if let Some(v) = value.get(key) {
                if key == "architectures" || !inner.contains_key(key) {
                    inner.insert(key.to_string(), v.clone());
                }
            }
        }
    }
    inner
}

/// Where a checkpoint keeps its language model's weights: `model.language_model.` in a
/// multimodal one (its `config.json` has `text_config`), `model.` otherwise.
fn weight_prefix(dir: &Path) -> &'static str {
    let text = std::fs::read_to_string(dir.join("config.json")).unwrap_or_default();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    match value.get("text_config") {
        Some(_) => "model.language_model.",
        None => "model.",
    }
}

/// The model's shape from `config.json` (validated), and its `torch_dtype`.
pub(crate) fn hf_config(dir: &Path) -> Result<(ModelConfig, String)> {
    let cfg_path = dir.join("config.json");
    if !cfg_path.exists() {
        return Err(Error::BadModelConfig {
            path: dir.to_path_buf(),
            detail: "is a directory without config.json. Pass a GGUF file, or a Hugging Face model directory (config.json, tokenizer.json and *.safetensors)".into(),
        });
    }
    let text = std::fs::read_to_string(&cfg_path).map_err(|e| Error::BadModelConfig {
        path: cfg_path.clone(),
        detail: format!(
            "cannot read it ({e}); a Hugging Face model directory needs config.json, tokenizer.json and *.safetensors"
        ),
    })?;
    let unusable = |e: serde_json::Error| Error::BadModelConfig {
        path: cfg_path.clone(),
        detail: format!("not a usable config.json ({e}); get a complete copy of the model directory from its source"),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(unusable)?;
    let hf: HfConfig = serde_json::from_value(text_config(value)).map_err(unusable)?;
    let arch_name = hf.architectures.first().cloned().or(hf.model_type.clone()).unwrap_or_default();
    let arch = Architecture::from_name(&arch_name)
        .or_else(|| hf.model_type.as_deref().and_then(Architecture::from_name))
        .ok_or_else(|| Error::UnsupportedArchitecture { path: cfg_path.clone(), arch: arch_name.clone() })?;
    let dtype = hf.torch_dtype.clone().or(hf.dtype.clone()).unwrap_or_else(|| "float32".into());
    let gemma = match arch {
        Architecture::Gemma3 => Some(gemma::config(&hf, &dtype, &cfg_path)?),
        Architecture::Llama | Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Qwen35 => None,
    };
    if arch == Architecture::Qwen2 && hf.use_sliding_window == Some(true) {
        return Err(Error::BadModelConfig {
            path: cfg_path,
            detail: "`use_sliding_window` is true; Readout runs qwen2 models with full attention (every released Qwen2 and Qwen2.5 checkpoint has it false)".into(),
        });
    }
    let global_theta = hf
        .rope_parameters
        .as_ref()
        .and_then(|p| p.get("full_attention"))
        .and_then(|g| g.get("rope_theta"))
        .and_then(|t| t.as_f64())
        .map(|t| t as f32);
    let head_dim = hf.head_dim.unwrap_or(hf.hidden_size / hf.num_attention_heads.max(1));
    let param_theta = hf.rope_parameters.as_ref().and_then(|p| p.get("rope_theta")).and_then(|t| t.as_f64());
    let rope_theta = match (arch, gemma.is_some()) {
        // Gemma3TextConfig's default base is 1,000,000.
        (Architecture::Gemma3, true) => global_theta.or(hf.rope_theta).unwrap_or(1_000_000.0),
        _ => hf.rope_theta.or(param_theta.map(|t| t as f32)).unwrap_or(10_000.0),
    };
    let hybrid = match arch {
        Architecture::Qwen35 => Some(hybrid(&hf, head_dim, &cfg_path)?),
        _ => None,
    };
    let rope_factors = match arch {
        Architecture::Gemma3 => None,
        _ => hf_rope_factors(&hf, rope_theta, head_dim, &cfg_path)?,
    };
    let cfg = ModelConfig {
        architecture: arch,
        vocab_size: hf.vocab_size,
        hidden_size: hf.hidden_size,
        intermediate_size: hf.intermediate_size,
        num_layers: hf.num_hidden_layers,
        num_heads: hf.num_attention_heads,
        num_kv_heads: hf.num_key_value_heads.unwrap_or(hf.num_attention_heads),
        head_dim,
        rope_theta,
        rms_eps: hf.rms_norm_eps.unwrap_or(1e-6),
        // Mistral's sliding window (4,096 tokens in 7B v0.1; none later): Readout runs such a
        // model within one window, where its attention is the full attention of llama's graph.
        context_length: hf.max_position_embeddings.unwrap_or(4096).min(32_768).min(if arch == Architecture::Llama {
            hf.sliding_window.unwrap_or(usize::MAX)
        } else {
            usize::MAX
        }),
        // Gemma 3 ties its head to the embedding unless config.json says otherwise.
        tie_embeddings: hf.tie_word_embeddings.unwrap_or(arch == Architecture::Gemma3),
        rope_style: RopeStyle::Halves,
        rope_factors,
        gemma,
        hybrid,
    };
    cfg.validate().map_err(|d| Error::BadModelConfig { path: cfg_path.clone(), detail: d })?;
    Ok((cfg, dtype))
}

/// The `*.safetensors` files of a directory, sorted; an error when there are none.
pub(crate) fn safetensors_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().map(|x| x == "safetensors").unwrap_or(false))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::BadModelConfig {
            path: dir.to_path_buf(),
            detail: "no *.safetensors weights in the directory".into(),
        });
    }
    Ok(files)
}

/// Load a Hugging Face model directory.
pub(super) fn load(dir: &Path, device: &Device, hold: Hold) -> Result<Loaded> {
    let (mut cfg, torch_dtype) = hf_config(dir)?;
    let files = safetensors_files(dir)?;
    // Every tensor a view of its mapped file: where it lies, and in which encoding.
    let mut where_: HashMap<
        String,
        (crate::engine::weights::Mapped, usize, candle_core::quantized::GgmlDType, Vec<usize>),
    > = HashMap::new();
    for file in &files {
        let mapped = map(file)?;
        let st = safetensors::SafeTensors::deserialize(&mapped[..]).map_err(|e| Error::BadModelConfig {
            path: file.clone(),
            detail: format!("not a readable safetensors file ({e}); get a complete copy of the model directory"),
        })?;
        for (name, view) in st.tensors() {
            use candle_core::quantized::GgmlDType;
            let dtype = match view.dtype() {
                safetensors::Dtype::F32 => GgmlDType::F32,
                safetensors::Dtype::F16 => GgmlDType::F16,
                safetensors::Dtype::BF16 => GgmlDType::BF16,
                other => {
                    return Err(Error::BadTensor {
                        path: file.clone(),
                        tensor: name,
                        detail: format!(
                        "is {other:?}; Readout reads F32, F16 and BF16 safetensors (or GGUF files of any quantisation)"
                    ),
                    })
                }
            };
            let offset = view.data().as_ptr() as usize - mapped.as_ptr() as usize;
            where_.insert(name, (mapped.clone(), offset, dtype, view.shape().to_vec()));
        }
    }
    let mut get = |name: &str| -> Result<LoadedWeight> {
        let bad = |detail: String| Error::BadTensor { path: dir.to_path_buf(), tensor: name.to_string(), detail };
        let (mapped, offset, dtype, shape) =
            where_.get(name).ok_or_else(|| bad("not in the safetensors files".into()))?;
        let (rows, cols) = match shape[..] {
            [n] => (1, n),
            // A depthwise convolution's `[channels, 1, kernel]` (Qwen3.5's conv1d).
            [r, c] | [r, 1, c] => (r, c),
            _ => return Err(bad(format!("has shape {shape:?}; a weight has one or two dimensions"))),
        };
        Ok(LoadedWeight::Encoded(Encoded::new(mapped.clone(), *offset, *dtype, rows, cols).map_err(bad)?))
    };
    // Gemma 3's embedding scale is rounded to the embedding's own dtype.
    if let (Some(g), Some((_, _, dtype, _))) = (cfg.gemma.as_mut(), where_.get("model.embed_tokens.weight")) {
        use candle_core::quantized::GgmlDType;
        let name = match dtype {
            GgmlDType::BF16 => "bfloat16",
            GgmlDType::F16 => "float16",
            _ => "float32",
        };
        g.embed_scale = gemma::embed_scale(cfg.hidden_size, name);
    }
    let prefix = weight_prefix(dir);
    let names = |i: usize, k: &str| format!("{prefix}layers.{i}.{k}.weight");
    let model = build(
        &cfg,
        device,
        Hold { matmul: MatmulPath::Dense, ..hold },
        dir,
        &mut get,
        &format!("{prefix}embed_tokens.weight"),
        &format!("{prefix}norm.weight"),
        "lm_head.weight",
        names,
        match cfg.architecture {
            Architecture::Gemma3 => gemma::KEYS,
            Architecture::Qwen35 => QWEN35_KEYS,
            _ => HF_KEYS,
        },
    )?;
    let tok_path = dir.join("tokenizer.json");
    if !tok_path.exists() {
        return Err(Error::Tokenizer {
            path: tok_path,
            detail: "missing; a Hugging Face model directory needs tokenizer.json".into(),
        });
    }
    let tc = read_tokenizer_config(&dir.join("tokenizer_config.json"))?;
    Ok(Loaded {
        model,
        tokenizer_source: TokenizerSource::Json(tok_path),
        chat_template: hf_chat_template(dir, tc.chat_template)?,
        bos_token: tc.bos_token,
        eos_token: tc.eos_token,
        quantisation: torch_dtype.to_uppercase(),
        name: dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        decision: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `config.json` of a tiny llama-family model with `extra` fields set.
    fn family_dir(extra: serde_json::Value) -> (tempfile::TempDir, Result<(ModelConfig, String)>) {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = serde_json::json!({
            "architectures": ["LlamaForCausalLM"], "vocab_size": 300, "hidden_size": 256,
            "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "rope_theta": 500000.0, "max_position_embeddings": 131072,
        });
        for (k, v) in extra.as_object().unwrap() {
            cfg.as_object_mut().unwrap().insert(k.clone(), v.clone());
        }
        std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
        let r = hf_config(dir.path());
        (dir, r)
    }

    #[test]
    fn llama_family_config_json_variants() {
        let scaling = serde_json::json!({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 64});
        let (_d, r) = family_dir(serde_json::json!({"rope_scaling": scaling}));
        let cfg = r.unwrap().0;
        assert_eq!(cfg.rope_factors, Some(config::llama3_rope_factors(500_000.0, 64, 8.0, 1.0, 4.0, 64.0)));
        // Newer transformers: the same under `rope_parameters`, with the base inside.
        let mut params = scaling.clone();
        params["rope_theta"] = serde_json::json!(500000.0);
        let (_d, r) = family_dir(serde_json::json!({"rope_parameters": params, "rope_theta": null}));
        let cfg2 = r.unwrap().0;
        assert_eq!((cfg2.rope_factors, cfg2.rope_theta), (cfg.rope_factors, 500_000.0));
        let (_d, r) = family_dir(serde_json::json!({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}));
        let e = r.unwrap_err().to_string();
        assert!(e.contains("`yarn`") && e.contains("llama3"), "{e}");
        let (_d, r) = family_dir(serde_json::json!({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}));
        assert!(r.unwrap_err().to_string().contains("low_freq_factor"));
        // Qwen2: its own architecture, the window switch refused when on.
        let (_d, r) =
            family_dir(serde_json::json!({"architectures": ["Qwen2ForCausalLM"], "tie_word_embeddings": false}));
        let cfg = r.unwrap().0;
        assert_eq!(
            (cfg.architecture, cfg.tie_embeddings, cfg.rope_style),
            (Architecture::Qwen2, false, RopeStyle::Halves)
        );
        let (_d, r) =
            family_dir(serde_json::json!({"architectures": ["Qwen2ForCausalLM"], "use_sliding_window": true}));
        assert!(r.unwrap_err().to_string().contains("use_sliding_window"));
        // Mistral: llama's graph, run within its sliding window.
        let (_d, r) = family_dir(serde_json::json!({"architectures": ["MistralForCausalLM"], "sliding_window": 4096}));
        let cfg = r.unwrap().0;
        assert_eq!((cfg.architecture, cfg.context_length), (Architecture::Llama, 4096));
    }
}
