//! The shape of a transformer, read from GGUF metadata or a Hugging Face `config.json`.
//! The supported families (`llama`, `qwen2`, `qwen3`, `gemma3`) share one decoder; `llama`
//! and `qwen3` differ in the per-head q/k norms and in how RoPE pairs dimensions; `qwen2` is
//! `qwen3` without the q/k norms and with biases on the q, k and v projections; `gemma3` adds
//! what [`Gemma`] describes (sliding-window layers, norms after attention and MLP, a GELU MLP, a
//! scaled embedding); `qwen35` (Qwen3.5) is a hybrid that [`Hybrid`] describes: Gated DeltaNet
//! layers (a recurrent state instead of a KV cache) between full-attention layers whose query
//! carries an output gate and whose RoPE turns part of each head. Llama-family variants that differ only in metadata load as `llama`:
//! `mistral` (the same graph), Llama 3.x with `llama3` RoPE scaling (per-frequency divisors,
//! [`ModelConfig::rope_factors`]).

use serde::Serialize;

/// Longest context Readout uses: a model that declares more is run with this many positions (the
/// RoPE tables are built for every position up front).
pub const MAX_CONTEXT: usize = 1 << 20;

/// Which decoder family a model belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    Llama,
    Qwen2,
    Qwen3,
    Gemma3,
    Qwen35,
}

impl Architecture {
    /// Parse the names GGUF and `config.json` use.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "llama" | "LlamaForCausalLM" | "mistral" | "MistralForCausalLM" => Some(Self::Llama),
            "qwen2" | "Qwen2ForCausalLM" => Some(Self::Qwen2),
            "qwen3" | "Qwen3ForCausalLM" => Some(Self::Qwen3),
            "gemma3" | "Gemma3ForCausalLM" | "gemma3_text" => Some(Self::Gemma3),
            "qwen35" | "Qwen3_5ForCausalLM" | "Qwen3_5ForConditionalGeneration" | "qwen3_5" | "qwen3_5_text" => {
                Some(Self::Qwen35)
            }
            _ => None,
        }
    }

    /// Whether the q, k and v projections carry biases (`qwen2`).
    pub fn has_qkv_bias(&self) -> bool {
        matches!(self, Self::Qwen2)
    }

    /// Whether each head's q and k pass through an RMSNorm before RoPE.
    pub fn has_qk_norms(&self) -> bool {
        matches!(self, Self::Qwen3 | Self::Gemma3 | Self::Qwen35)
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
            Self::Gemma3 => "gemma3",
            Self::Qwen35 => "qwen35",
        }
    }
}

/// How RoPE rotates dimension pairs: adjacent pairs (GGUF `llama`, whose q/k rows the converter
/// permuted) or the two halves of a head (`qwen3`, and every Hugging Face checkpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum RopeStyle {
    Interleaved,
    Halves,
}

/// Everything the forward pass needs to know about a model's shape.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelConfig {
    pub architecture: Architecture,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub rope_theta: f32,
    pub rms_eps: f64,
    pub context_length: usize,
    pub tie_embeddings: bool,
    pub rope_style: RopeStyle,
    /// Per-frequency divisors of RoPE's inverse frequencies (`head_dim / 2` of them): Llama 3.x's
    /// `llama3` scaling, as llama.cpp stores it (the `rope_freqs.weight` tensor) and as
    /// transformers computes it from `rope_scaling`; `None` when the frequencies are unscaled.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub rope_factors: Option<Vec<f32>>,
    /// What Gemma 3 adds to the decoder; `None` for `llama` and `qwen3`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub gemma: Option<Gemma>,
    /// What Qwen3.5 adds: its Gated DeltaNet layers, the full-attention layers' gate and
    /// partial RoPE; `None` for the other families.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub hybrid: Option<Hybrid>,
}

/// Qwen3.5's departures from the decoder, as transformers' `Qwen3_5ForCausalLM` and llama.cpp's
/// `qwen35` graph compute them. Most layers are Gated DeltaNet ("linear attention"): a joint
/// projection to q, k and v, a causal depthwise convolution over it (SiLU after), q and k
/// L2-normalised, and per value head a `key_dim × value_dim` state decayed by `exp(g)` and
/// corrected by the delta rule at the rate `β`; its output goes through an RMSNorm gated by
/// `silu(z)`. Every `full_attention_interval`-th layer is attention whose query projection
/// also gives a sigmoid gate on the output, with q/k norms and RoPE over the first
/// `rotary_dim` dimensions of each head. Every norm but the gated one multiplies by `1 + w`
/// (GGUF stores the 1 added).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Hybrid {
    /// Per layer, whether it is a Gated DeltaNet layer; the others are full attention.
    pub recurrent_layers: Vec<bool>,
    /// Dimensions at the start of each attention head that RoPE turns; the rest pass as they are.
    pub rotary_dim: usize,
    /// The DeltaNet layers' key (and query) heads and their width.
    pub key_heads: usize,
    pub key_dim: usize,
    /// Their value heads (a multiple of the key heads) and their width.
    pub value_heads: usize,
    pub value_dim: usize,
    /// Taps of the causal convolution.
    pub conv_kernel: usize,
    /// Which key head a value head reads: `h % key_heads` (tiled: GGUF, whose converter
    /// reorders the value heads so) or `h / (value_heads / key_heads)` (Hugging Face).
    pub tiled_heads: bool,
}

impl Hybrid {
    /// Channels of the convolution: q, k and v side by side.
    pub fn conv_dim(&self) -> usize {
        2 * self.key_heads * self.key_dim + self.value_heads * self.value_dim
    }

    /// The key head value head `h` reads.
    pub fn key_head_of(&self, h: usize) -> usize {
        match self.tiled_heads {
            true => h % self.key_heads,
            false => h / (self.value_heads / self.key_heads),
        }
    }

    /// Every `interval`-th layer full attention, the others DeltaNet (llama.cpp's default when
    /// a file names no layer types; 4 in every Qwen3.5).
    pub fn pattern(num_layers: usize, interval: usize) -> Vec<bool> {
        (0..num_layers).map(|i| interval == 0 || (i + 1) % interval != 0).collect()
    }

    fn validate(&self, num_layers: usize, head_dim: usize) -> Result<(), String> {
        if self.recurrent_layers.len() != num_layers {
            return Err(format!("{} layer types are given for {} layers", self.recurrent_layers.len(), num_layers));
        }
        for (k, v) in [
            ("linear key heads", self.key_heads),
            ("linear key head width", self.key_dim),
            ("linear value heads", self.value_heads),
            ("linear value head width", self.value_dim),
            ("convolution kernel", self.conv_kernel),
        ] {
            if v == 0 || v > 1 << 12 {
                return Err(format!("the {k} is {v}; it must be between 1 and 4096"));
            }
        }
        if !self.value_heads.is_multiple_of(self.key_heads) {
            return Err(format!(
                "{} linear value heads do not divide into {} key heads",
                self.value_heads, self.key_heads
            ));
        }
        if self.rotary_dim == 0 || self.rotary_dim > head_dim || !self.rotary_dim.is_multiple_of(2) {
            return Err(format!(
                "RoPE turns {} dimensions of a head of {head_dim}; it must be an even number from 2 to the head's width",
                self.rotary_dim
            ));
        }
        Ok(())
    }
}

/// Gemma 3's departures from the llama decoder, as llama.cpp's `gemma3` graph and transformers'
/// `Gemma3ForCausalLM` compute them: the input embedding multiplied by `embed_scale` (√hidden,
/// rounded to the embedding's dtype), RMSNorm weights used as `1 + w` (GGUF files store them with
/// the 1 added; Hugging Face checkpoints store `w` and the loader adds 1), a norm after attention
/// and after the MLP as well as before, a GELU (tanh) gated MLP, per-head q/k norms, and local
/// layers that attend over a sliding window with their own RoPE base.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Gemma {
    /// A local layer's query at position `p` sees keys at positions `q` with `p − q < window`
    /// (itself included), as llama.cpp's standard sliding window masks `p − q ≥ window`.
    pub sliding_window: usize,
    /// Per layer, whether it is local (sliding window); the others attend over everything.
    pub local_layers: Vec<bool>,
    /// RoPE base of the local layers (the global layers use `rope_theta`).
    pub rope_local_theta: f32,
    /// Linear RoPE scaling of the global layers: positions are multiplied by this (1 / the
    /// file's scaling factor; 1 without one). Local layers are never scaled.
    pub rope_global_scale: f32,
    /// The attention scores' scale: `query_pre_attn_scalar^-½` (Hugging Face), or as llama.cpp
    /// sets it for GGUF files (`key_length^-½`).
    pub query_scale: f64,
    /// The embedding rows are multiplied by this.
    pub embed_scale: f32,
    /// `cap · tanh(logits / cap)` on the output when the model has one (Gemma 2 did; Gemma 3
    /// has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub final_logit_softcap: Option<f32>,
}

impl Gemma {
    /// The local/global pattern llama.cpp sets for `gemma3` (`set_swa_pattern(6)`) and older
    /// `config.json` files give as `sliding_window_pattern`: every `pattern`-th layer global,
    /// the others local.
    pub fn pattern(num_layers: usize, pattern: usize) -> Vec<bool> {
        (0..num_layers).map(|i| pattern == 0 || (i + 1) % pattern != 0).collect()
    }

    /// What llama.cpp sets for `gemma3` when the file says nothing else.
    pub const PATTERN: usize = 6;
    pub const LOCAL_ROPE_THETA: f32 = 10_000.0;
}

impl ModelConfig {
    /// Check the arithmetic that the forward pass relies on.
    pub fn validate(&self) -> Result<(), String> {
        let nz = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_layers", self.num_layers),
            ("num_heads", self.num_heads),
            ("num_kv_heads", self.num_kv_heads),
            ("head_dim", self.head_dim),
        ];
        for (k, v) in nz {
            if v == 0 {
                return Err(format!("`{k}` is 0"));
            }
        }
        // Caps no real model comes near, so that the arithmetic on a shape read from a
        // corrupt file (parameter counts, table sizes) cannot overflow.
        let caps = [
            ("vocab_size", self.vocab_size, 1 << 24),
            ("hidden_size", self.hidden_size, 1 << 20),
            ("intermediate_size", self.intermediate_size, 1 << 20),
            ("num_layers", self.num_layers, 1 << 12),
            ("num_heads", self.num_heads, 1 << 12),
            ("num_kv_heads", self.num_kv_heads, 1 << 12),
            ("head_dim", self.head_dim, 1 << 12),
            ("context_length", self.context_length, MAX_CONTEXT),
        ];
        for (k, v, cap) in caps {
            if v > cap {
                return Err(format!("`{k}` is {v}, more than the {cap} Readout supports; the metadata is corrupt"));
            }
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return Err(format!("the RoPE base is {}; it must be a positive number", self.rope_theta));
        }
        if !(self.rms_eps.is_finite() && self.rms_eps >= 0.0) {
            return Err(format!("the RMS norm epsilon is {}; it must be a number ≥ 0", self.rms_eps));
        }
        if !self.num_heads.is_multiple_of(self.num_kv_heads) {
            return Err(format!("{} heads do not divide into {} KV heads", self.num_heads, self.num_kv_heads));
        }
        if !self.head_dim.is_multiple_of(2) {
            return Err(format!("head_dim {} is odd; RoPE needs pairs", self.head_dim));
        }
        if let Some(f) = &self.rope_factors {
            if f.len() != self.head_dim / 2 {
                return Err(format!(
                    "{} RoPE frequency factors are given for a head of {} dimensions (want {})",
                    f.len(),
                    self.head_dim,
                    self.head_dim / 2
                ));
            }
            if let Some(bad) = f.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
                return Err(format!("a RoPE frequency factor is {bad}; each must be a positive number"));
            }
        }
        if let Some(h) = &self.hybrid {
            h.validate(self.num_layers, self.head_dim)?;
        }
        if let Some(g) = &self.gemma {
            if g.sliding_window == 0 {
                return Err("the sliding window is 0 tokens; a local layer must see at least its own token".into());
            }
            if g.local_layers.len() != self.num_layers {
                return Err(format!("{} layer types are given for {} layers", g.local_layers.len(), self.num_layers));
            }
            for (k, v) in [
                ("local RoPE base", g.rope_local_theta),
                ("RoPE scale", g.rope_global_scale),
                ("embedding scale", g.embed_scale),
                ("query scale", g.query_scale as f32),
            ] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(format!("the {k} is {v}; it must be a positive number"));
                }
            }
            if let Some(c) = g.final_logit_softcap {
                if !(c.is_finite() && c > 0.0) {
                    return Err(format!("the final logit soft cap is {c}; it must be a positive number"));
                }
            }
        }
        Ok(())
    }

    /// Weights of the decoder blocks and embeddings, counted from the shape (DERIVED).
    pub fn parameter_count(&self) -> u64 {
        let d = self.hidden_size as u64;
        let q = (self.num_heads * self.head_dim) as u64;
        let kv = (self.num_kv_heads * self.head_dim) as u64;
        let ff = self.intermediate_size as u64;
        // Qwen3 and Gemma 3 add an RMSNorm weight over each head's q and k (head_dim each);
        // Gemma 3 also a norm after attention and after the MLP.
        let (qk_norms, post_norms) = match self.architecture {
            Architecture::Qwen3 => (2 * self.head_dim as u64, 0),
            Architecture::Gemma3 => (2 * self.head_dim as u64, 2 * d),
            Architecture::Llama | Architecture::Qwen2 | Architecture::Qwen35 => (0, 0),
        };
        // Qwen2's biases on q, k and v.
        let biases = if self.architecture.has_qkv_bias() { q + 2 * kv } else { 0 };
        let per_layer = d * q + 2 * d * kv + q * d + 3 * d * ff + 2 * d + qk_norms + post_norms + biases;
        let emb = self.vocab_size as u64 * d;
        let head = if self.tie_embeddings { 0 } else { emb };
        let Some(h) = &self.hybrid else {
            return per_layer * self.num_layers as u64 + emb + head + d;
        };
        // Qwen3.5: an attention layer's query projection is twice as wide (its gate) and has
        // q/k norms; a DeltaNet layer has q, k, v, z, b and a projections, the convolution,
        // A, dt's bias, the gated norm and the output projection.
        let attention = d * 2 * q + 2 * d * kv + q * d + 2 * self.head_dim as u64;
        let (kd, vd, vh) =
            ((h.key_heads * h.key_dim) as u64, (h.value_heads * h.value_dim) as u64, h.value_heads as u64);
        let conv = (h.conv_dim() * h.conv_kernel) as u64;
        let delta = d * (2 * kd + vd) + d * vd + 2 * d * vh + conv + 2 * vh + h.value_dim as u64 + vd * d;
        let common = 3 * d * ff + 2 * d;
        let layers: u64 = h.recurrent_layers.iter().map(|&r| common + if r { delta } else { attention }).sum();
        layers + emb + head + d
    }
}

/// Llama 3's `rope_scaling` of `config.json` as per-frequency divisors, computed as llama.cpp's
/// converter computes the `rope_freqs.weight` it writes (the same scaled frequencies as
/// transformers' `_compute_llama3_parameters`): wavelengths shorter than
/// `original / high_freq_factor` keep their frequency, those longer than `original /
/// low_freq_factor` are divided by `factor`, and those between are blended smoothly.
pub(crate) fn llama3_rope_factors(
    theta: f32,
    head_dim: usize,
    factor: f64,
    low_freq_factor: f64,
    high_freq_factor: f64,
    original_context: f64,
) -> Vec<f32> {
    let low_wavelen = original_context / low_freq_factor;
    let high_wavelen = original_context / high_freq_factor;
    (0..head_dim / 2)
        .map(|i| {
            let freq = 1.0 / (theta as f64).powf(2.0 * i as f64 / head_dim as f64);
            let wavelen = 2.0 * std::f64::consts::PI / freq;
            if wavelen < high_wavelen {
                1.0
            } else if wavelen > low_wavelen {
                factor as f32
            } else {
                let smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
                (1.0 / ((1.0 - smooth) / factor + smooth)) as f32
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_local_layers_to_one_global() {
        let p = Gemma::pattern(18, Gemma::PATTERN);
        let global: Vec<usize> = (0..18).filter(|&i| !p[i]).collect();
        assert_eq!(global, vec![5, 11, 17]);
        assert_eq!(Gemma::pattern(3, 1), vec![false; 3]);
        assert_eq!(Gemma::pattern(2, 0), vec![true; 2]);
    }

    #[test]
    fn names_of_the_families() {
        for (name, arch) in [
            ("llama", Architecture::Llama),
            ("mistral", Architecture::Llama),
            ("MistralForCausalLM", Architecture::Llama),
            ("qwen2", Architecture::Qwen2),
            ("Qwen2ForCausalLM", Architecture::Qwen2),
            ("Qwen3ForCausalLM", Architecture::Qwen3),
            ("gemma3", Architecture::Gemma3),
            ("Gemma3ForCausalLM", Architecture::Gemma3),
            ("gemma3_text", Architecture::Gemma3),
            ("qwen35", Architecture::Qwen35),
            ("Qwen3_5ForConditionalGeneration", Architecture::Qwen35),
        ] {
            assert_eq!(Architecture::from_name(name), Some(arch));
        }
        assert_eq!(Architecture::from_name("gpt2"), None);
        assert_eq!(Architecture::from_name("gemma2"), None);
    }

    #[test]
    fn llama3_factors_as_llama_cpp_writes_rope_freqs() {
        // Llama 3.1 8B: base 500,000, head 128, factor 8, low/high frequency factors 1 and 4,
        // original context 8,192. By hand for pair 30: its frequency 500000^(−60/128) = 2.1311e-3,
        // wavelength 2π / that = 2,948.3, between 8192/4 and 8192/1; smooth = (8192/2948.3 − 1)/3
        // = 0.59285; factor = 1 / ((1 − 0.59285)/8 + 0.59285) = 1.5534.
        let f = llama3_rope_factors(500_000.0, 128, 8.0, 1.0, 4.0, 8192.0);
        assert_eq!(f.len(), 64);
        assert!(f[..29].iter().all(|&x| x == 1.0));
        assert!(f[35..].iter().all(|&x| x == 8.0));
        assert!((f[30] - 1.5534).abs() < 2e-4, "{}", f[30]);
        assert!(f[29..35].windows(2).all(|w| w[0] < w[1]), "the blend rises: {:?}", &f[29..35]);
    }

    /// A Qwen3.5 of `(vocab, hidden, ffn, layers, heads, kv heads, head dim, key heads, value
    /// heads, linear head dim, tied)`, every fourth layer full attention.
    #[allow(clippy::type_complexity)]
    fn qwen35(s: (usize, usize, usize, usize, usize, usize, usize, usize, usize, usize, bool)) -> ModelConfig {
        let (vocab, hidden, ff, layers, heads, kv, hd, kh, vh, ld, tied) = s;
        ModelConfig {
            architecture: Architecture::Qwen35,
            vocab_size: vocab,
            hidden_size: hidden,
            intermediate_size: ff,
            num_layers: layers,
            num_heads: heads,
            num_kv_heads: kv,
            head_dim: hd,
            rope_theta: 1e7,
            rms_eps: 1e-6,
            context_length: 2048,
            tie_embeddings: tied,
            rope_style: RopeStyle::Halves,
            rope_factors: None,
            gemma: None,
            hybrid: Some(Hybrid {
                recurrent_layers: Hybrid::pattern(layers, 4),
                rotary_dim: hd / 4,
                key_heads: kh,
                key_dim: ld,
                value_heads: vh,
                value_dim: ld,
                conv_kernel: 4,
                tiled_heads: false,
            }),
        }
    }

    #[test]
    fn qwen35_parameters_are_transformers_count() {
        // The sums of the tensors transformers 5.23.0 writes (tests/fixtures/qwen35/hf-f32 and
        // -tied; bench/make-qwen35-shaped's 0.8B and 4B shapes, without MTP).
        assert_eq!(qwen35((400, 64, 128, 4, 4, 2, 32, 2, 4, 16, false)).parameter_count(), 235_208);
        assert_eq!(qwen35((400, 64, 128, 4, 4, 2, 32, 2, 4, 16, true)).parameter_count(), 209_608);
        assert_eq!(qwen35((248_320, 1024, 3584, 24, 8, 2, 256, 16, 16, 128, true)).parameter_count(), 752_393_024);
        assert_eq!(qwen35((248_320, 2560, 9216, 32, 16, 4, 256, 16, 32, 128, true)).parameter_count(), 4_205_751_296);
        assert!(qwen35((400, 64, 128, 4, 4, 2, 32, 2, 4, 16, false)).validate().is_ok());
        let mut odd = qwen35((400, 64, 128, 4, 4, 2, 32, 2, 3, 16, false));
        assert!(odd.validate().unwrap_err().contains("do not divide"));
        odd = qwen35((400, 64, 128, 4, 4, 2, 32, 2, 4, 16, false));
        odd.hybrid.as_mut().unwrap().recurrent_layers.pop();
        assert!(odd.validate().unwrap_err().contains("3 layer types are given for 4 layers"));
    }

    #[test]
    fn value_heads_read_key_heads_tiled_in_gguf_interleaved_in_hugging_face() {
        let mut h = qwen35((400, 64, 128, 4, 4, 2, 32, 2, 4, 16, false)).hybrid.unwrap();
        assert_eq!((0..4).map(|v| h.key_head_of(v)).collect::<Vec<_>>(), vec![0, 0, 1, 1]);
        h.tiled_heads = true;
        assert_eq!((0..4).map(|v| h.key_head_of(v)).collect::<Vec<_>>(), vec![0, 1, 0, 1]);
        assert_eq!(h.conv_dim(), 2 * 2 * 16 + 4 * 16);
    }
}
