//! The shape of a transformer, read from GGUF metadata or a Hugging Face `config.json`.
//! Both supported families (`llama`, `qwen3`) share one decoder; they differ in the per-head
//! q/k norms and in how RoPE pairs dimensions.

use serde::Serialize;

/// Longest context Readout uses: a model that declares more is run with this many positions (the
/// RoPE tables are built for every position up front).
pub const MAX_CONTEXT: usize = 1 << 20;

/// Which decoder family a model belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    Llama,
    Qwen3,
}

impl Architecture {
    /// Parse the names GGUF and `config.json` use.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "llama" | "LlamaForCausalLM" => Some(Self::Llama),
            "qwen3" | "Qwen3ForCausalLM" => Some(Self::Qwen3),
            _ => None,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen3 => "qwen3",
        }
    }
}

/// How RoPE rotates dimension pairs: adjacent pairs (GGUF `llama`, whose q/k rows the converter
/// permuted) or the two halves of a head (`qwen3`, and every Hugging Face checkpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RopeStyle {
    Interleaved,
    Halves,
}

/// Everything the forward pass needs to know about a model's shape.
#[derive(Debug, Clone, Serialize)]
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
        Ok(())
    }

    /// Weights of the decoder blocks and embeddings, counted from the shape (DERIVED).
    pub fn parameter_count(&self) -> u64 {
        let d = self.hidden_size as u64;
        let q = (self.num_heads * self.head_dim) as u64;
        let kv = (self.num_kv_heads * self.head_dim) as u64;
        let ff = self.intermediate_size as u64;
        // Qwen3 adds an RMSNorm weight over each head's q and k (head_dim each).
        let qk_norms = match self.architecture {
            Architecture::Qwen3 => 2 * self.head_dim as u64,
            Architecture::Llama => 0,
        };
        let per_layer = d * q + 2 * d * kv + q * d + 3 * d * ff + 2 * d + qk_norms;
        let emb = self.vocab_size as u64 * d;
        let head = if self.tie_embeddings { 0 } else { emb };
        per_layer * self.num_layers as u64 + emb + head + d
    }
}
