//! Our own decoder forward on candle tensors: RMSNorm, RoPE, grouped-query attention with an
//! explicit mask, SwiGLU, Qwen3's per-head q/k norms, and Gemma 3's additions (norms after
//! attention and MLP, GELU MLP, scaled embedding, sliding-window local layers). It is ours (not
//! candle-transformers') because the readout needs what stock model code lacks: attention over a
//! cached prefix with a tree mask (several suffixes in one pass, each seeing the prefix and its own
//! tokens), arbitrary positions per token, and logits computed only at the rows that are read.
//!
//! The model is cut by block, each with its own forward: the embedding and the head
//! (`embedding`), the norms (`norm`), the attention block (`attention`, with RoPE in `rope` and
//! the masks in `mask`), the MLP block (`mlp`) and the layer that joins them on the residual
//! stream (`layer`); the projections they multiply through are `linear`, and what a pass's
//! layers share is `pass`. How each step runs on a device is `backends`' business.

mod attention;
mod delta;
mod embedding;
mod layer;
mod linear;
mod mask;
mod mlp;
mod norm;
mod pass;
mod rope;

pub(crate) use attention::Attention;
pub(crate) use delta::DeltaNet;
pub(crate) use embedding::{Embedding, Head, Table};
pub(crate) use layer::{Layer, Mixer};
pub(crate) use linear::{quantised_matmul, Hold, Linear, LoadedWeight};
pub(crate) use mask::{grouped_tree_mask, stem_tree_mask};
pub(crate) use mlp::Mlp;
pub(crate) use norm::RmsNorm;
pub(crate) use rope::Rope;

use crate::engine::backends::cpu::int8::{Integer, Kernel, Width};
use crate::engine::backends::cuda;
use crate::engine::config::ModelConfig;
use crate::engine::kv::{LayerKv, Prefix};
use candle_core::{Device, Tensor};
use pass::{Pass, Running};

/// Row indices into a `[heads · rows, hd]` view of a `[heads, rows, hd]` tensor that gather the
/// `(start, len)` blocks of rows, each with all its heads: rows in `(block, head, row)` order,
/// so that every block comes out as a contiguous `[heads, len, hd]`. One gather in place of a
/// copy per block (the pass's segments, or the stems it keeps).
pub(crate) fn block_head_rows(blocks: &[(usize, usize)], heads: usize, rows: usize) -> Vec<u32> {
    let mut idx = Vec::with_capacity(heads * blocks.iter().map(|b| b.1).sum::<usize>());
    for &(start, len) in blocks {
        for j in 0..heads {
            idx.extend((0..len).map(|t| (j * rows + start + t) as u32));
        }
    }
    idx
}

/// Which of a pass's new keys and values [`Transformer::forward`] returns, per layer.
pub(crate) enum KeepKv {
    /// None (no unit of the pass is kept).
    Nothing,
    /// All rows, `[kv_heads, rows, hd]` (one unit is the whole pass).
    All,
    /// The rows of a `[kv_heads · rows, hd]` view these indices pick ([`block_head_rows`]), as
    /// `[picked, hd]`; and the pass rows where the kept units end (a recurrent layer keeps its
    /// state there).
    Rows(Tensor, Vec<usize>),
}

/// New tokens on top of a cached prefix, one part of a pass.
pub(crate) struct Segment<'a> {
    pub past: &'a Prefix,
    pub tokens: Vec<u32>,
    /// Position of each token (the prefix length onwards, or branch-relative for tree suffixes).
    pub positions: Vec<u32>,
    /// Additive mask `[tokens, past.len() + tokens]`.
    pub mask: Tensor,
}

/// A decoder-only transformer with tied or separate LM head.
pub(crate) struct Transformer {
    pub cfg: ModelConfig,
    pub embed: Embedding,
    pub layers: Vec<Layer>,
    pub head: Head,
    pub rope: Rope,
    pub device: Device,
    /// Keys and values kept in f16 (CPU): see [`KvCache`](crate::engine::KvCache).
    pub kv_f16: bool,
    /// f32 matmuls in TF32 (`--precision tf32`, CUDA): see [`Precision`](crate::engine::Precision).
    pub tf32: bool,
    /// A pass's attention in one kernel a layer (`--attention kernel`, CUDA).
    pub attention_kernel: bool,
    /// That kernel's products on the tensor cores in TF32 (`--precision tf32|bf16`, CUDA).
    pub attention_tensor_cores: bool,
    /// A layer's element-wise steps in fused kernels (`--fused-kernels on`, CUDA).
    pub fused_kernels: bool,
}

impl Transformer {
    /// The integer kernel's settings of the block projections, where any goes through it.
    fn integer(&self) -> Option<Integer> {
        let all = self.layers.iter().flat_map(|l| {
            let mixer = match &l.mixer {
                Mixer::Attention(a) => [a.wqkv.integer(), a.wo.integer()],
                Mixer::Delta(d) => [d.proj.integer(), d.out.integer()],
            };
            [mixer[0], mixer[1], l.mlp.gate_up.integer(), l.mlp.down.integer()]
        });
        all.flatten().next()
    }

    /// What the block projections multiply with: `int8` or `int16` when any goes through the
    /// integer kernel, `f32` otherwise.
    pub(crate) fn activations(&self) -> &'static str {
        match self.integer().map(|i| i.width) {
            Some(Width::I8) => "int8",
            Some(Width::I16) => "int16",
            None => "f32",
        }
    }

    /// The integer kernel's instructions, when it multiplies: `amx`, `avx512` or `neon`.
    pub(crate) fn cpu_kernel(&self) -> Option<&'static str> {
        self.integer().map(|i| match i.kernel {
            Kernel::Amx => "amx",
            Kernel::Avx512 => "avx512",
            Kernel::Neon => "neon",
        })
    }

    /// Set cuBLAS's f32 math mode to this model's (`--precision tf32` or not) before its
    /// matmuls are queued. The mode is a process-wide setting in candle, so each pass sets it:
    /// two engines of different precisions in one process then each get their own (a pass of
    /// one running while the other's starts on another thread would not).
    fn set_matmul_mode(&self) {
        cuda::set_tf32(&self.device, self.tf32);
    }

    /// One pass over several segments, each a run of new tokens on top of its own cached
    /// prefix; `keep` says which of the new keys and values to return. The projections and the
    /// MLP run once over all rows together (one large matmul instead of many small ones);
    /// attention runs per segment against that segment's prefix under its mask. Returns the
    /// final-layer hidden states of all rows, segment after segment (before the output norm),
    /// and per layer the new keys and values `keep` asks for.
    ///
    /// With several segments, each layer puts q, k and v in segment order with one gather each
    /// and the attention outputs back in token order with one more (`pass::Orders`).
    pub(crate) fn forward(&self, segs: &[Segment<'_>], keep: &KeepKv) -> candle_core::Result<(Tensor, Vec<LayerKv>)> {
        self.set_matmul_mode();
        let pass = self.pass(segs, keep)?;
        let tokens: Vec<u32> = segs.iter().flat_map(|g| g.tokens.iter().copied()).collect();
        let mut x = self.embed.forward(&tokens, &self.device)?;
        let mut new_kv: Vec<LayerKv> = Vec::with_capacity(self.layers.len());
        // The next layer's input, when the residual add made it too (`RmsNorm::add_forward`).
        let mut normed: Option<Tensor> = None;
        for (li, layer) in self.layers.iter().enumerate() {
            let next = self.layers.get(li + 1).map(|l| &l.attn_norm);
            let out = layer.forward(&pass, li, x, normed.take(), next)?;
            x = out.x;
            normed = out.normed;
            new_kv.extend(out.kv);
        }
        Ok((x, new_kv))
    }

    /// What the layers of a pass over `segs` share: its RoPE tables and masks (the local layers'
    /// too when the model has local layers) and its layout.
    fn pass<'a>(&'a self, segs: &'a [Segment<'a>], keep: &'a KeepKv) -> candle_core::Result<Pass<'a>> {
        let positions: Vec<u32> = segs.iter().flat_map(|g| g.positions.iter().copied()).collect();
        let local = self.layers.iter().any(|l| matches!(&l.mixer, Mixer::Attention(a) if a.local));
        let rope = self.rope.rows(&positions, local, &self.device)?;
        let window = self.cfg.gemma.as_ref().filter(|_| local).map(|g| g.sliding_window);
        let running = Running {
            kv_f16: self.kv_f16,
            attention_kernel: self.attention_kernel,
            fused_kernels: self.fused_kernels,
            attention_tensor_cores: self.attention_tensor_cores,
        };
        Pass::new(segs, keep, &self.cfg, &self.device, running, rope, window)
    }

    /// Output norm and LM head at the given rows of `hidden` ([`Head::forward`]).
    pub(crate) fn head_at(&self, hidden: &Tensor, rows: &[u32], ids: Option<&[u32]>) -> candle_core::Result<Tensor> {
        self.set_matmul_mode();
        self.head.forward(hidden, rows, ids, &self.device)
    }
}
