//! Gemma 3 in a Hugging Face directory: its fields of `config.json` (`Gemma3TextConfig`, the
//! older and the newer layouts of its layer types and RoPE), the embedding scale rounded to the
//! checkpoint's dtype, and its block's tensor names, whose norms store `w` of the `1 + w` they
//! multiply by.

use super::HfConfig;
use crate::engine::config::Gemma;
use crate::engine::load::build::BlockKeys;
use crate::error::{Error, Result};
use std::path::Path;

/// Gemma 3's block in a Hugging Face checkpoint: there `post_attention_layernorm` is the norm
/// after attention, and the MLP's own norm is `pre_feedforward_layernorm`.
pub(super) const KEYS: BlockKeys = BlockKeys {
    ffn_norm: "pre_feedforward_layernorm",
    attn_post_norm: "post_attention_layernorm",
    ffn_post_norm: "post_feedforward_layernorm",
    norm_shift: 1.0,
    ..super::HF_KEYS
};

/// `√hidden` rounded to `dtype` (`bfloat16`, `float16`, else f32), as transformers' Gemma 3
/// embedding multiplies by it: `embed_scale.to(weight.dtype)`.
pub(super) fn embed_scale(hidden: usize, dtype: &str) -> f32 {
    let s = (hidden as f64).sqrt() as f32;
    match dtype {
        "bfloat16" | "bf16" => half::bf16::from_f32(s).to_f32(),
        "float16" | "f16" => half::f16::from_f32(s).to_f32(),
        _ => s,
    }
}

/// Gemma 3's fields of `config.json` as [`Gemma`]; `dtype` is the checkpoint's.
pub(super) fn config(hf: &HfConfig, dtype: &str, cfg_path: &Path) -> Result<Gemma> {
    let bad = |detail: String| Error::BadModelConfig { path: cfg_path.to_path_buf(), detail };
    let n = hf.num_hidden_layers;
    let local_layers = match (&hf.layer_types, hf.sliding_window_pattern) {
        (Some(types), _) => types
            .iter()
            .map(|t| match t.as_str() {
                "sliding_attention" => Ok(true),
                "full_attention" => Ok(false),
                other => Err(bad(format!(
                    "layer type `{other}` in `layer_types`; a gemma3 layer is `sliding_attention` or `full_attention`"
                ))),
            })
            .collect::<Result<Vec<bool>>>()?,
        (None, pattern) => Gemma::pattern(n, pattern.unwrap_or(Gemma::PATTERN)),
    };
    // RoPE: `rope_parameters` per layer type (newer transformers), else `rope_theta`,
    // `rope_local_base_freq` and `rope_scaling` (for the global layers).
    let per_type = |t: &str| hf.rope_parameters.as_ref().and_then(|p| p.get(t)).filter(|v| v.is_object());
    let (global, local) = (per_type("full_attention"), per_type("sliding_attention"));
    let theta_of = |v: Option<&serde_json::Value>| v.and_then(|v| v.get("rope_theta")).and_then(|t| t.as_f64());
    let linear_factor = |v: Option<&serde_json::Value>, what: &str| -> Result<f32> {
        let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(1.0) };
        let kind = v.get("rope_type").or_else(|| v.get("type")).and_then(|t| t.as_str()).unwrap_or("default");
        match kind {
            "default" => Ok(1.0),
            "linear" => match v.get("factor").and_then(|f| f.as_f64()) {
                Some(f) if f > 0.0 => Ok(f as f32),
                _ => Err(bad(format!("{what} is linear without a positive `factor`"))),
            },
            other => Err(bad(format!(
                "{what} is of type `{other}`; Readout runs gemma3 models with linear RoPE scaling or none"
            ))),
        }
    };
    let global_factor = match global {
        Some(g) => linear_factor(Some(g), "the full-attention layers' RoPE")?,
        None => linear_factor(hf.rope_scaling.as_ref(), "`rope_scaling`")?,
    };
    if linear_factor(local, "the sliding-attention layers' RoPE")? != 1.0 {
        return Err(bad("the sliding-attention layers' RoPE is scaled; Readout scales only the global layers' RoPE, as Gemma 3 does".into()));
    }
    if let Some(c) = hf.attn_logit_softcapping {
        return Err(bad(format!("`attn_logit_softcapping` is {c}; Gemma 3 has none and Readout does not run it")));
    }
    if let Some(act) = hf.hidden_activation.as_deref().filter(|a| !matches!(*a, "gelu_pytorch_tanh" | "gelu_tanh")) {
        return Err(bad(format!("`hidden_activation` is `{act}`; a gemma3 MLP is `gelu_pytorch_tanh`")));
    }
    let window = hf.sliding_window;
    if window.is_none() && local_layers.iter().any(|&l| l) {
        return Err(bad("`sliding_window` is missing, and the model has sliding-attention layers".into()));
    }
    let scalar = hf.query_pre_attn_scalar.unwrap_or(hf.head_dim.unwrap_or(256) as f64);
    if !(scalar.is_finite() && scalar > 0.0) {
        return Err(bad(format!("`query_pre_attn_scalar` is {scalar}; it must be a positive number")));
    }
    Ok(Gemma {
        sliding_window: window.unwrap_or(usize::MAX).max(1),
        local_layers,
        rope_local_theta: theta_of(local)
            .map(|t| t as f32)
            .or(hf.rope_local_base_freq)
            .unwrap_or(Gemma::LOCAL_ROPE_THETA),
        rope_global_scale: 1.0 / global_factor,
        query_scale: scalar.powf(-0.5),
        embed_scale: embed_scale(hf.hidden_size, dtype),
        final_logit_softcap: hf.final_logit_softcapping.filter(|&c| c != 0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::super::hf_config;
    use crate::engine::config::{Architecture, Gemma, ModelConfig};
    use crate::error::Result;

    /// `config.json` of a tiny Gemma 3 with `extra` fields set (a `null` removes one).
    fn gemma_dir(extra: serde_json::Value) -> (tempfile::TempDir, Result<(ModelConfig, String)>) {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = serde_json::json!({
            "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": 300,
            "hidden_size": 640, "intermediate_size": 2048, "num_hidden_layers": 18, "num_attention_heads": 4,
            "num_key_value_heads": 1, "head_dim": 256, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
            "rms_norm_eps": 1e-6, "max_position_embeddings": 32768, "sliding_window": 512,
            "query_pre_attn_scalar": 256, "torch_dtype": "bfloat16", "hidden_activation": "gelu_pytorch_tanh",
        });
        for (k, v) in extra.as_object().unwrap() {
            match v {
                serde_json::Value::Null => cfg.as_object_mut().unwrap().remove(k),
                v => cfg.as_object_mut().unwrap().insert(k.clone(), v.clone()),
            };
        }
        std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
        let r = hf_config(dir.path());
        (dir, r)
    }

    #[test]
    fn a_gemma3_config_json_as_transformers_reads_it() {
        let (_d, r) = gemma_dir(serde_json::json!({}));
        let (cfg, dtype) = r.unwrap();
        let g = cfg.gemma.unwrap();
        assert_eq!((cfg.architecture, dtype.as_str(), cfg.tie_embeddings), (Architecture::Gemma3, "bfloat16", true));
        assert_eq!(g.local_layers, Gemma::pattern(18, 6));
        assert_eq!((g.sliding_window, g.rope_local_theta, g.rope_global_scale), (512, 10_000.0, 1.0));
        assert_eq!(g.query_scale, 1.0 / 16.0);
        // √640 = 25.2982…, in bfloat16 25.25.
        assert_eq!(g.embed_scale, 25.25);
        assert_eq!(cfg.rope_theta, 1_000_000.0);
        // Older files: `sliding_window_pattern`; newer: `layer_types`, `rope_parameters`.
        let (_d, r) = gemma_dir(serde_json::json!({"sliding_window_pattern": 2, "num_hidden_layers": 4}));
        assert_eq!(r.unwrap().0.gemma.unwrap().local_layers, vec![true, false, true, false]);
        let (_d, r) = gemma_dir(serde_json::json!({
            "num_hidden_layers": 3, "layer_types": ["full_attention", "sliding_attention", "full_attention"],
            "rope_theta": null, "rope_local_base_freq": null, "torch_dtype": null, "dtype": "float32",
            "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 500000.0},
                                "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},
        }));
        let (cfg, dtype) = r.unwrap();
        let g = cfg.gemma.unwrap();
        assert_eq!(
            (g.local_layers, cfg.rope_theta, g.rope_local_theta),
            (vec![false, true, false], 500_000.0, 20_000.0)
        );
        assert_eq!((g.rope_global_scale, dtype.as_str(), g.embed_scale), (0.125, "float32", 640f32.sqrt()));
        let (_d, r) = gemma_dir(serde_json::json!({"rope_scaling": {"rope_type": "linear", "factor": 8.0}}));
        assert_eq!(r.unwrap().0.gemma.unwrap().rope_global_scale, 0.125);
    }

    #[test]
    fn a_gemma3_config_json_readout_cannot_run_is_refused_with_the_reason() {
        for (extra, says) in [
            (serde_json::json!({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}), "`yarn`"),
            (serde_json::json!({"attn_logit_softcapping": 50.0}), "attn_logit_softcapping"),
            (serde_json::json!({"hidden_activation": "gelu"}), "gelu_pytorch_tanh"),
            (serde_json::json!({"sliding_window": null}), "`sliding_window` is missing"),
            (serde_json::json!({"layer_types": ["chunked_attention"], "num_hidden_layers": 1}), "chunked_attention"),
            (serde_json::json!({"layer_types": ["full_attention"]}), "1 layer types are given for 18 layers"),
        ] {
            let (_d, r) = gemma_dir(extra.clone());
            let e = r.err().unwrap_or_else(|| panic!("{extra} was accepted")).to_string();
            assert!(e.contains(says) && e.contains("config.json"), "{extra}: {e}");
        }
    }
}
