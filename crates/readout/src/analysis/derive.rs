//! DERIVED figures: exact arithmetic from a model's shape, never a timing. The design brief labels
//! every published figure MEASURED, DERIVED or PROJECTED; this module is where the DERIVED ones
//! come from, so that a speed claim about a lever (logits only at the answer position, the LM
//! head pruned to the answer letters, the KV cache, quantisation) can be checked against what the
//! shape of the model makes possible. It reads only the shape (`engine::read_metadata`), so it
//! works on a model whose weights are too big to load here.
//!
//! Conventions: a matmul of `[m, k] x [k, n]` costs `2*m*k*n` FLOPs; weight bytes follow the ggml
//! block layouts (f32 4 bytes, f16 2, q8_0 34 per 32 weights, q4_1 20 per 32, q4_0 18 per 32,
//! q4_k 144 per 256); file sizes count tensor data only (not the metadata, tokenizer and
//! template), with the rule `readout quantize` applies: 1-D tensors stay f32, and so does a
//! matrix whose rows are not a whole number of blocks.

use crate::engine::{Architecture, ModelConfig};
use crate::error::{Error, Result};
use serde::Serialize;

/// The label every figure of this module carries.
pub const LABEL: &str = "DERIVED";

/// A weight encoding, with its ggml block layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum WeightType {
    F32,
    F16,
    Q8_0,
    Q4_1,
    Q4_0,
    #[serde(rename = "q4_k")]
    Q4K,
}

impl WeightType {
    /// The encodings the LM-head table lists.
    pub const HEAD: [WeightType; 5] = [Self::F32, Self::F16, Self::Q8_0, Self::Q4_1, Self::Q4_0];
    /// The encodings the file-size table lists.
    pub const FILE: [WeightType; 6] = [Self::F32, Self::F16, Self::Q8_0, Self::Q4_1, Self::Q4_0, Self::Q4K];

    /// (weights per block, bytes per block), as ggml lays them out.
    pub fn block(self) -> (u64, u64) {
        match self {
            Self::F32 => (1, 4),
            Self::F16 => (1, 2),
            Self::Q8_0 => (32, 34),
            Self::Q4_1 => (32, 20),
            Self::Q4_0 => (32, 18),
            Self::Q4K => (256, 144),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Q8_0 => "q8_0",
            Self::Q4_1 => "q4_1",
            Self::Q4_0 => "q4_0",
            Self::Q4K => "q4_k",
        }
    }

    /// Bytes per weight (exact for whole blocks).
    pub fn bytes_per_weight(self) -> f64 {
        let (n, b) = self.block();
        b as f64 / n as f64
    }

    /// Bytes of a matrix of `rows` rows of `row_len` weights, or `None` when a row is not a whole
    /// number of blocks (such a matrix cannot be stored in this encoding).
    pub fn matrix_bytes(self, rows: u64, row_len: u64) -> Option<u64> {
        let (n, b) = self.block();
        row_len.is_multiple_of(n).then(|| rows * row_len / n * b)
    }
}

/// What to derive for, besides the shape.
#[derive(Debug, Clone, Copy)]
pub struct DeriveOptions {
    /// Prompt length (tokens) for the trim and KV-cache figures.
    pub prompt_tokens: u64,
    /// How many head rows remain when the head is pruned to the answer letters.
    pub prune_to: u64,
}

impl Default for DeriveOptions {
    fn default() -> Self {
        DeriveOptions { prompt_tokens: 600, prune_to: 4 }
    }
}

/// Which model the figures are for.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelSummary {
    pub name: String,
    pub file: String,
    pub architecture: Architecture,
    /// The dominant tensor type of the file as it is stored.
    pub stored_as: String,
    pub file_bytes: u64,
}

/// The shape the arithmetic starts from.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Shape {
    pub vocab: u64,
    pub hidden: u64,
    pub intermediate: u64,
    pub layers: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub tied_embeddings: bool,
}

/// Bytes of something in one encoding.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BytesIn {
    pub dtype: WeightType,
    pub bytes: u64,
}

/// The LM head at one position.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Head {
    /// vocab × hidden.
    pub weights: u64,
    /// 2 × vocab × hidden.
    pub flops_per_position: u64,
    /// Weight bytes read per position (once per pass when several positions share it).
    pub bytes_per_position: Vec<BytesIn>,
}

/// Logits only at the answer position instead of at every prompt position.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Trim {
    pub prompt_tokens: u64,
    /// Head FLOPs when logits are computed at every prompt position.
    pub head_flops_every_position: u64,
    /// Head FLOPs when they are computed at the answer position only.
    pub head_flops_answer_only: u64,
    /// head FLOPs × (prompt_tokens − 1).
    pub flops_saved: u64,
    /// Share of the whole prompt's matmul FLOPs (blocks + head at every position) saved.
    pub share_of_prompt_matmul_flops: f64,
}

/// The head cut to the answer letters' rows.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Prune {
    pub to: u64,
    pub flops_per_position: u64,
    pub flops_saved_per_position: u64,
    /// (vocab − to) / vocab, of FLOPs and of bytes alike.
    pub share_saved: f64,
    pub bytes_per_position: Vec<BytesIn>,
}

/// The KV cache.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct KvCache {
    /// 2 × layers × kv_heads × head_dim × 4 (f32 cache, as the engine keeps it).
    pub bytes_per_token_f32: u64,
    /// At `prompt_tokens`.
    pub bytes_at_prompt_f32: u64,
}

/// Tensor data of the whole model in one encoding.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FileSize {
    pub mode: WeightType,
    pub bytes: u64,
    /// Matrices left in f32 because their rows are not whole blocks of this encoding.
    pub matrices_left_f32: u64,
}

/// Every DERIVED figure for one model.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Derivation {
    pub label: &'static str,
    pub model: Option<ModelSummary>,
    pub shape: Shape,
    pub parameters: u64,
    /// Weights of the decoder blocks' matrices (q, k, v, o, gate, up, down), all layers.
    pub block_matrix_weights: u64,
    /// 2 × block matrix weights: matmul FLOPs per token outside the head and attention scores.
    pub block_matmul_flops_per_token: u64,
    pub lm_head: Head,
    /// Head FLOPs as a share of (blocks + head) matmul FLOPs for one token.
    pub head_share_of_token_matmul_flops: f64,
    pub trim: Trim,
    pub prune: Prune,
    pub kv_cache: KvCache,
    pub file_sizes: Vec<FileSize>,
}

/// Every matrix of a model as (rows, row length); the rest of its weights are 1-D norms.
fn inventory(s: &Shape) -> Vec<(u64, u64)> {
    let q = s.heads * s.head_dim;
    let kv = s.kv_heads * s.head_dim;
    let mut m = vec![(s.vocab, s.hidden)];
    for _ in 0..s.layers {
        m.extend([
            (q, s.hidden),
            (kv, s.hidden),
            (kv, s.hidden),
            (s.hidden, q),
            (s.intermediate, s.hidden),
            (s.intermediate, s.hidden),
            (s.hidden, s.intermediate),
        ]);
    }
    if !s.tied_embeddings {
        m.push((s.vocab, s.hidden));
    }
    m
}

/// Derive every figure from `cfg`.
pub fn derive(cfg: &ModelConfig, opts: DeriveOptions) -> Result<Derivation> {
    let shape = Shape {
        vocab: cfg.vocab_size as u64,
        hidden: cfg.hidden_size as u64,
        intermediate: cfg.intermediate_size as u64,
        layers: cfg.num_layers as u64,
        heads: cfg.num_heads as u64,
        kv_heads: cfg.num_kv_heads as u64,
        head_dim: cfg.head_dim as u64,
        tied_embeddings: cfg.tie_embeddings,
    };
    if opts.prompt_tokens == 0 {
        return Err(Error::Config("--prompt-tokens must be at least 1".into()));
    }
    if opts.prune_to == 0 || opts.prune_to > shape.vocab {
        return Err(Error::Config(format!(
            "--prune-to must be between 1 and the vocabulary size ({}), not {}",
            shape.vocab, opts.prune_to
        )));
    }
    let parameters = cfg.parameter_count();
    let matrices = inventory(&shape);
    let matrix_weights: u64 = matrices.iter().map(|(r, c)| r * c).sum();
    let vector_weights = parameters - matrix_weights;
    let head_weights = shape.vocab * shape.hidden;
    // The embedding (and an untied head) are lookups/head, not block matmuls.
    let embed_like = if shape.tied_embeddings { head_weights } else { 2 * head_weights };
    let block_matrix_weights = matrix_weights - embed_like;
    let block_flops = 2 * block_matrix_weights;
    let head_flops = 2 * head_weights;
    let bytes_for = |rows: u64| -> Vec<BytesIn> {
        WeightType::HEAD
            .iter()
            .map(|&t| BytesIn {
                dtype: t,
                // A head row that is not whole blocks would be kept in f32.
                bytes: t.matrix_bytes(rows, shape.hidden).unwrap_or(rows * shape.hidden * 4),
            })
            .collect()
    };
    let n = opts.prompt_tokens;
    let every = head_flops * n;
    let trim = Trim {
        prompt_tokens: n,
        head_flops_every_position: every,
        head_flops_answer_only: head_flops,
        flops_saved: head_flops * (n - 1),
        share_of_prompt_matmul_flops: (head_flops * (n - 1)) as f64 / ((block_flops + head_flops) * n) as f64,
    };
    let pruned_flops = 2 * opts.prune_to * shape.hidden;
    let prune = Prune {
        to: opts.prune_to,
        flops_per_position: pruned_flops,
        flops_saved_per_position: head_flops - pruned_flops,
        share_saved: (shape.vocab - opts.prune_to) as f64 / shape.vocab as f64,
        bytes_per_position: bytes_for(opts.prune_to),
    };
    let kv_token = 2 * shape.layers * shape.kv_heads * shape.head_dim * 4;
    let file_sizes = WeightType::FILE
        .iter()
        .map(|&t| {
            let mut bytes = vector_weights * 4;
            let mut left = 0;
            for &(r, c) in &matrices {
                bytes += match t.matrix_bytes(r, c) {
                    Some(b) => b,
                    None => {
                        left += 1;
                        r * c * 4
                    }
                };
            }
            FileSize { mode: t, bytes, matrices_left_f32: left }
        })
        .collect();
    Ok(Derivation {
        label: LABEL,
        model: None,
        parameters,
        block_matrix_weights,
        block_matmul_flops_per_token: block_flops,
        lm_head: Head {
            weights: head_weights,
            flops_per_position: head_flops,
            bytes_per_position: bytes_for(shape.vocab),
        },
        head_share_of_token_matmul_flops: head_flops as f64 / (block_flops + head_flops) as f64,
        trim,
        prune,
        kv_cache: KvCache { bytes_per_token_f32: kv_token, bytes_at_prompt_f32: kv_token * n },
        file_sizes,
        shape,
    })
}

/// Derive for the model at `path` (GGUF file or Hugging Face directory), reading only its shape.
pub fn derive_file(path: &std::path::Path, opts: DeriveOptions) -> Result<Derivation> {
    let md = crate::engine::read_metadata(path)?;
    let mut d = derive(&md.config, opts)?;
    d.model = Some(ModelSummary {
        name: md.name,
        file: path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        architecture: md.config.architecture,
        stored_as: md.quantisation,
        file_bytes: md.file_bytes,
    });
    Ok(d)
}

/// `1234567` → `1,234,567`.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

impl Derivation {
    /// The figures as text, every line labelled.
    pub fn to_text(&self) -> String {
        let s = &self.shape;
        let mut o = String::new();
        let mut line = |t: String| {
            o.push_str(&t);
            o.push('\n');
        };
        line(format!("{LABEL}: exact arithmetic from the model's shape (FLOPs and bytes; no timings)"));
        if let Some(m) = &self.model {
            line(format!(
                "model: {} ({}), {}, stored as {}, {} bytes on disk",
                m.name,
                m.file,
                m.architecture.as_str(),
                m.stored_as,
                grouped(m.file_bytes)
            ));
        }
        line(format!(
            "{LABEL} shape: vocab {}, hidden {}, ffn {}, layers {}, heads {}, kv heads {}, head dim {}, tied embeddings {}",
            grouped(s.vocab),
            s.hidden,
            s.intermediate,
            s.layers,
            s.heads,
            s.kv_heads,
            s.head_dim,
            if s.tied_embeddings { "yes" } else { "no" }
        ));
        line(format!("{LABEL} parameters: {}", grouped(self.parameters)));
        line(format!(
            "{LABEL} block matmul FLOPs/token: {} (2 x {} block matrix weights)",
            grouped(self.block_matmul_flops_per_token),
            grouped(self.block_matrix_weights)
        ));
        let h = &self.lm_head;
        line(format!(
            "{LABEL} LM head FLOPs/position: {} (2 x {} x {}); {:.1}% of one token's matmul FLOPs",
            grouped(h.flops_per_position),
            grouped(s.vocab),
            s.hidden,
            100.0 * self.head_share_of_token_matmul_flops
        ));
        let bytes = |v: &[BytesIn]| {
            v.iter().map(|b| format!("{} {}", b.dtype.name(), grouped(b.bytes))).collect::<Vec<_>>().join(", ")
        };
        line(format!("{LABEL} LM head weight bytes/position: {}", bytes(&h.bytes_per_position)));
        let t = &self.trim;
        line(format!(
            "{LABEL} trim (logits at the answer position only, {}-token prompt): saves {} FLOPs = head x {} ({} -> {}); {:.1}% of the prompt's matmul FLOPs",
            t.prompt_tokens,
            grouped(t.flops_saved),
            t.prompt_tokens - 1,
            grouped(t.head_flops_every_position),
            grouped(t.head_flops_answer_only),
            100.0 * t.share_of_prompt_matmul_flops
        ));
        let p = &self.prune;
        line(format!(
            "{LABEL} prune head to {} rows: {} FLOPs/position ({} saved, {:.4}% of the head's FLOPs and bytes); bytes/position: {}",
            p.to,
            grouped(p.flops_per_position),
            grouped(p.flops_saved_per_position),
            100.0 * p.share_saved,
            bytes(&p.bytes_per_position)
        ));
        let k = &self.kv_cache;
        line(format!(
            "{LABEL} KV cache (f32): {} bytes/token (2 x {} x {} x {} x 4); {} at {} tokens",
            grouped(k.bytes_per_token_f32),
            s.layers,
            s.kv_heads,
            s.head_dim,
            mib(k.bytes_at_prompt_f32),
            t.prompt_tokens
        ));
        line(format!("{LABEL} tensor data per encoding (norms f32; metadata and tokenizer not counted):"));
        for f in &self.file_sizes {
            let note = if f.matrices_left_f32 > 0 {
                format!(" ({} matrices left f32: rows not whole blocks)", f.matrices_left_f32)
            } else {
                String::new()
            };
            line(format!("  {:<5} {:>16} bytes  {:>10}{note}", f.mode.name(), grouped(f.bytes), mib(f.bytes)));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The public configs, as the synthetic writer keeps them (one copy in the code base).
    fn smollm2() -> ModelConfig {
        crate::engine::synthetic::shape_config("smollm2-135m").expect("known shape")
    }

    fn qwen3_06b() -> ModelConfig {
        crate::engine::synthetic::shape_config("qwen3-0.6b").expect("known shape")
    }

    fn bytes(v: &[BytesIn], t: WeightType) -> u64 {
        v.iter().find(|b| b.dtype == t).map(|b| b.bytes).unwrap_or(0)
    }

    #[test]
    fn block_layouts_match_candle() {
        use candle_core::quantized::GgmlDType as G;
        for (t, g) in [
            (WeightType::F32, G::F32),
            (WeightType::F16, G::F16),
            (WeightType::Q8_0, G::Q8_0),
            (WeightType::Q4_1, G::Q4_1),
            (WeightType::Q4_0, G::Q4_0),
            (WeightType::Q4K, G::Q4K),
        ] {
            assert_eq!(t.block(), (g.block_size() as u64, g.type_size() as u64), "{t:?}");
        }
    }

    #[test]
    fn smollm2_head_trim_prune_and_kv() {
        let d = derive(&smollm2(), DeriveOptions::default()).unwrap();
        // 2 * 49152 * 576
        assert_eq!(d.lm_head.weights, 28_311_552);
        assert_eq!(d.lm_head.flops_per_position, 56_623_104);
        // 28,311,552 weights: f32 x4, f16 x2, and 884,736 blocks of 32 at 34 / 20 / 18 bytes.
        let b = &d.lm_head.bytes_per_position;
        assert_eq!(bytes(b, WeightType::F32), 113_246_208);
        assert_eq!(bytes(b, WeightType::F16), 56_623_104);
        assert_eq!(bytes(b, WeightType::Q8_0), 30_081_024);
        assert_eq!(bytes(b, WeightType::Q4_1), 17_694_720);
        assert_eq!(bytes(b, WeightType::Q4_0), 15_925_248);
        // Trim at 600 tokens: head x 599.
        assert_eq!(d.trim.flops_saved, 33_917_239_296);
        assert_eq!(d.trim.head_flops_every_position, 33_973_862_400);
        // Prune to 4: 2 * 4 * 576 = 4,608 FLOPs left.
        assert_eq!(d.prune.flops_per_position, 4_608);
        assert_eq!(d.prune.flops_saved_per_position, 56_618_496);
        assert!((d.prune.share_saved - 49_148.0 / 49_152.0).abs() < 1e-12);
        // 4 rows of 576 in q4_1: 4 * 18 blocks * 20 bytes.
        assert_eq!(bytes(&d.prune.bytes_per_position, WeightType::Q4_1), 1_440);
        // 2 * 30 * 3 * 64 * 4
        assert_eq!(d.kv_cache.bytes_per_token_f32, 46_080);
        assert_eq!(d.kv_cache.bytes_at_prompt_f32, 27_648_000);
    }

    #[test]
    fn smollm2_parameters_and_sizes() {
        let d = derive(&smollm2(), DeriveOptions::default()).unwrap();
        // Per layer: q 576*576 + k,v 2*576*192 + o 576*576 + ffn 3*576*1536 + 2 norms of 576
        // = 3,540,096; x30 = 106,202,880; + embedding 28,311,552 + final norm 576.
        assert_eq!(d.parameters, 134_515_008);
        assert_eq!(d.block_matrix_weights, 106_168_320);
        assert_eq!(d.block_matmul_flops_per_token, 212_336_640);
        // 61 norm vectors of 576 = 35,136 weights stay f32 (140,544 bytes).
        let size = |t| d.file_sizes.iter().find(|f| f.mode == t).unwrap().clone();
        assert_eq!(size(WeightType::F32).bytes, 134_515_008 * 4);
        // 134,479,872 matrix weights = 4,202,496 blocks of 32.
        assert_eq!(size(WeightType::Q4_1).bytes, 4_202_496 * 20 + 140_544);
        assert_eq!(size(WeightType::Q8_0).bytes, 4_202_496 * 34 + 140_544);
        // q4_k needs rows of 256: only ffn_down (rows of 1536) fits; 211 - 30 matrices stay f32.
        let q4k = size(WeightType::Q4K);
        assert_eq!(q4k.matrices_left_f32, 181);
        assert_eq!(q4k.bytes, 30 * 576 * 1536 / 256 * 144 + (134_515_008 - 30 * 576 * 1536) * 4);
    }

    #[test]
    fn qwen3_06b_figures() {
        let d = derive(&qwen3_06b(), DeriveOptions { prompt_tokens: 300, prune_to: 2 }).unwrap();
        // 2 * 151936 * 1024
        assert_eq!(d.lm_head.flops_per_position, 311_164_928);
        // Embedding 155,582,464 + 28 layers x 15,730,944 (q/k norms included) + 1,024.
        assert_eq!(d.parameters, 596_049_920);
        assert_eq!(d.trim.flops_saved, 311_164_928 * 299);
        assert_eq!(d.prune.flops_per_position, 4_096);
        // 2 * 28 * 8 * 128 * 4
        assert_eq!(d.kv_cache.bytes_per_token_f32, 229_376);
        assert!(d.file_sizes.iter().all(|f| f.matrices_left_f32 == 0));
    }

    #[test]
    fn bad_options_are_config_errors() {
        let c = smollm2();
        assert!(matches!(derive(&c, DeriveOptions { prompt_tokens: 0, prune_to: 4 }), Err(Error::Config(_))));
        assert!(matches!(derive(&c, DeriveOptions { prompt_tokens: 10, prune_to: 0 }), Err(Error::Config(_))));
        assert!(matches!(derive(&c, DeriveOptions { prompt_tokens: 10, prune_to: 50_000 }), Err(Error::Config(_))));
    }

    #[test]
    fn text_is_labelled_and_grouped() {
        let t = derive(&smollm2(), DeriveOptions::default()).unwrap().to_text();
        assert!(t.contains("56,623,104"), "{t}");
        assert!(t.lines().all(|l| l.starts_with("DERIVED") || l.starts_with("  ")), "{t}");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(999), "999");
    }
}
