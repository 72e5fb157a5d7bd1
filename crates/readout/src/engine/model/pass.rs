//! What the layers of one forward share: the pass's segments and where each one's rows are, the
//! RoPE tables and masks made for it, the gathers that put its rows in segment order, and how
//! the model runs (device, kernels, KV cache). Made once a pass ([`Pass::new`]) and read by every
//! layer's blocks.

use super::mask::Masks;
use super::rope::RopeRows;
use super::{block_head_rows, KeepKv, Segment};
use crate::engine::config::ModelConfig;
use candle_core::{Device, Tensor};

/// How the model runs a pass, as loaded (`--kv-cache`, `--attention`, `--fused-kernels`
/// resolved).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Running {
    /// Keys and values kept in f16 (CPU).
    pub kv_f16: bool,
    /// A pass's attention in one kernel a layer (CUDA).
    pub attention_kernel: bool,
    /// A layer's element-wise steps in fused kernels (CUDA).
    pub fused_kernels: bool,
}

/// One forward pass over several segments, as its layers see it.
pub(crate) struct Pass<'a> {
    pub segs: &'a [Segment<'a>],
    /// Which of the new keys and values the pass returns.
    pub keep: &'a KeepKv,
    pub cfg: &'a ModelConfig,
    /// On the CPU: attention's softmax is our fused op (`backends/cpu/fused.rs`), which takes the
    /// `[n, T]` masks as they are and scales the scores; other devices add the mask with
    /// candle's broadcasting ops, and q is scaled once.
    pub cpu: bool,
    /// Attention in one kernel a layer (`--attention kernel`; on the CPU its CPU forward).
    pub kernel: bool,
    /// The fused CUDA kernels (`--fused-kernels on`, on a CUDA GPU).
    pub fused: bool,
    /// Keys and values rounded to f16 as the cache holds them.
    pub kv_f16: bool,
    /// Attention's scale of `q·k` (Gemma 3's own, else `1/√head_dim`).
    pub scale: f64,
    /// The pass's rows: its segments' tokens, one segment after another.
    pub rows: usize,
    /// Each segment's first row.
    pub offsets: Vec<usize>,
    pub rope: RopeRows,
    pub masks: Masks,
    /// With several segments and attention as matmuls, the gathers of [`Orders`].
    pub orders: Option<Orders>,
}

/// The gathers that put a pass's q, k and v in segment order (rows `(segment, head, token)`, so
/// that every segment's block is contiguous) and attention's outputs back in token order: one
/// gather each in place of a copy per segment for each. On a GPU every copy is a kernel launch,
/// and the host's launches are what a pass waits for. Gathers only copy, so the values are those
/// of the per-segment copies.
pub(crate) struct Orders {
    /// Of q's `[heads · S, hd]` rows.
    pub q: Tensor,
    /// Of k's and v's `[kv_heads · S, hd]` rows.
    pub kv: Tensor,
    /// The row of `(segment, head, token)` order that holds token `r`'s head `j`, at `r · heads + j`.
    pub back: Tensor,
}

impl<'a> Pass<'a> {
    /// The pass of `segs` on a model of `cfg` on `device`, run as `running` says; `rope` its
    /// tables, `window` the local layers' sliding window (`None`: no local layers).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        segs: &'a [Segment<'a>],
        keep: &'a KeepKv,
        cfg: &'a ModelConfig,
        device: &'a Device,
        running: Running,
        rope: RopeRows,
        window: Option<usize>,
    ) -> candle_core::Result<Self> {
        let (h, kvh, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let scale = match cfg.gemma.as_ref() {
            Some(g) => g.query_scale,
            None => 1.0 / (hd as f64).sqrt(),
        };
        let cpu = device.is_cpu();
        let masks = Masks::new(segs, window, !cpu, device)?;
        let mut offsets = Vec::with_capacity(segs.len());
        let mut rows = 0;
        for g in segs {
            offsets.push(rows);
            rows += g.tokens.len();
        }
        // The kernel reads q, k and v in token order and writes the outputs so: no gathers.
        let kernel = running.attention_kernel;
        let orders = match segs.len() > 1 && !kernel {
            true => Some(Orders::new(segs, &offsets, (h, kvh), rows, device)?),
            false => None,
        };
        Ok(Pass {
            segs,
            keep,
            cfg,
            cpu,
            kernel,
            fused: running.fused_kernels && device.is_cuda(),
            kv_f16: running.kv_f16,
            scale,
            rows,
            offsets,
            rope,
            masks,
            orders,
        })
    }
}

impl Orders {
    /// The gathers of `segs` (their first rows `offsets`) for `heads` query and kv heads over
    /// `rows` rows.
    fn new(
        segs: &[Segment<'_>],
        offsets: &[usize],
        (h, kvh): (usize, usize),
        rows: usize,
        device: &Device,
    ) -> candle_core::Result<Self> {
        let s = rows;
        let blocks: Vec<(usize, usize)> = segs.iter().zip(offsets).map(|(g, &off)| (off, g.tokens.len())).collect();
        let seg_order = |heads: usize| -> candle_core::Result<Tensor> {
            let idx = block_head_rows(&blocks, heads, s);
            Tensor::from_slice(&idx, idx.len(), device)
        };
        // And back: the row of `(segment, head, token)` order that holds token r's head j.
        let token_order = || -> candle_core::Result<Tensor> {
            let mut idx = vec![0u32; h * s];
            for (g, &off) in segs.iter().zip(offsets) {
                let n = g.tokens.len();
                for t in 0..n {
                    for j in 0..h {
                        idx[(off + t) * h + j] = (h * off + j * n + t) as u32;
                    }
                }
            }
            Tensor::from_vec(idx, h * s, device)
        };
        Ok(Orders { q: seg_order(h)?, kv: seg_order(kvh)?, back: token_order()? })
    }
}
