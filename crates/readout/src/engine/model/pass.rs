//! What the layers of one forward share: the pass's segments and where each one's rows are, the
//! RoPE tables and masks made for it, the gathers that put its rows in segment order, and how
//! the model runs (device, kernels, KV cache). Made once a pass ([`Pass::new`]) and read by every
//! layer's blocks.

use super::mask::Masks;
use super::rope::RopeRows;
use super::{block_head_rows, KeepKv, Segment};
use crate::engine::backends::route::{self, DeviceKind, Op};
use crate::engine::config::ModelConfig;
use candle_core::{Device, Tensor};

/// How the model runs a pass, as loaded (`--kv-cache`, `--attention`, `--fused-kernels`
/// resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Running {
    /// Keys and values kept in f16 (CPU).
    pub kv_f16: bool,
    /// A pass's attention in one kernel a layer (CUDA, or the CPU when asked).
    pub attention_kernel: bool,
    /// A layer's element-wise steps in fused kernels (CUDA).
    pub fused_kernels: bool,
    /// The attention kernel's products on the tensor cores in TF32 (`--precision tf32|bf16`).
    pub attention_tensor_cores: bool,
}

/// Which of our ops a pass runs (`backends/route.rs`), each where it has a forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ops {
    /// Attention's softmax as our fused op (the CPU's).
    pub softmax: bool,
    /// Attention as one op a layer.
    pub kernel: bool,
    /// The residual add with its norm, and the q, k and v heads, as our fused ops.
    pub fused: bool,
    /// The MLP's gated activation as our op.
    pub gated: bool,
    /// The f16 KV cache.
    pub kv_f16: bool,
}

impl Ops {
    /// The ops of a pass on `device` run as `running` says, each asked of the route; a flag for
    /// an op that has no forward on the device is refused (the options refuse it first).
    pub(crate) fn new(device: DeviceKind, running: Running) -> candle_core::Result<Self> {
        let fused = route::uses(Op::AddRmsNorm, device, running.fused_kernels)?
            && route::uses(Op::QkvHeads, device, running.fused_kernels)?;
        Ok(Ops {
            softmax: route::uses(Op::MaskedSoftmax, device, false)?,
            kernel: route::uses(Op::TreeAttention, device, running.attention_kernel)?,
            fused,
            gated: route::uses(Op::GatedActivation, device, running.fused_kernels)?,
            kv_f16: route::uses(Op::KvCacheF16, device, running.kv_f16)?,
        })
    }
}

/// One forward pass over several segments, as its layers see it.
pub(crate) struct Pass<'a> {
    pub segs: &'a [Segment<'a>],
    /// Which of the new keys and values the pass returns.
    pub keep: &'a KeepKv,
    pub cfg: &'a ModelConfig,
    /// Attention's softmax is our fused op (the CPU's, `backends/cpu/fused.rs`), which takes the
    /// `[n, T]` masks as they are and scales the scores, and a segment's past is joined anew
    /// each pass; otherwise (a GPU) the mask is added with candle's broadcasting ops, q is scaled
    /// once, and a prefix's joined chain is kept.
    pub cpu: bool,
    /// Attention in one kernel a layer (`--attention kernel`; on the CPU its CPU forward).
    pub kernel: bool,
    /// That kernel's products on the tensor cores in TF32 (`--precision tf32|bf16`, CUDA).
    pub tensor_cores: bool,
    /// The fused CUDA kernels (`--fused-kernels on`, on a CUDA GPU): the add and norm, the heads.
    pub fused: bool,
    /// The MLP's activation as our op: the CPU's fused loop, or with the fused kernels CUDA's.
    pub gated: bool,
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
    /// For a model with recurrent layers, each segment's rows' parents: the row each follows
    /// on its path, `None` for the prefix's end (`mask::parents`); empty otherwise.
    pub parents: Vec<Vec<Option<usize>>>,
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
        let ops = Ops::new(DeviceKind::of(device), running)?;
        let cpu = ops.softmax;
        let masks = Masks::new(segs, window, !cpu, device)?;
        let mut offsets = Vec::with_capacity(segs.len());
        let mut rows = 0;
        for g in segs {
            offsets.push(rows);
            rows += g.tokens.len();
        }
        // The kernel reads q, k and v in token order and writes the outputs so: no gathers.
        let kernel = ops.kernel;
        let orders = match segs.len() > 1 && !kernel {
            true => Some(Orders::new(segs, &offsets, (h, kvh), rows, device)?),
            false => None,
        };
        let parents = match cfg.hybrid.is_some() {
            true => {
                segs.iter().map(|g| super::mask::parents(&g.mask, g.past.len())).collect::<candle_core::Result<_>>()?
            }
            false => vec![],
        };
        Ok(Pass {
            parents,
            segs,
            keep,
            cfg,
            cpu,
            kernel,
            tensor_cores: running.attention_tensor_cores,
            fused: ops.fused,
            gated: ops.gated,
            kv_f16: ops.kv_f16,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn running(attention_kernel: bool, fused_kernels: bool, kv_f16: bool) -> Running {
        Running { kv_f16, attention_kernel, fused_kernels, attention_tensor_cores: false }
    }

    #[test]
    fn a_pass_on_metal_runs_none_of_our_ops_and_refuses_a_flag_for_one() {
        let none = Ops { softmax: false, kernel: false, fused: false, gated: false, kv_f16: false };
        assert_eq!(Ops::new(DeviceKind::Metal, running(false, false, false)).unwrap(), none);
        for flags in [running(true, false, false), running(false, true, false), running(false, false, true)] {
            assert!(Ops::new(DeviceKind::Metal, flags).is_err(), "{flags:?}");
        }
    }

    #[test]
    fn a_pass_on_the_cpu_and_on_cuda_runs_what_it_ran_before() {
        // The CPU: its softmax and activation always, the kernel and the f16 cache as asked.
        let cpu = Ops::new(DeviceKind::Cpu, running(false, false, true)).unwrap();
        assert_eq!(cpu, Ops { softmax: true, kernel: false, fused: false, gated: true, kv_f16: true });
        assert!(Ops::new(DeviceKind::Cpu, running(true, false, false)).unwrap().kernel);
        // CUDA: the kernel and the fused ops as asked (the activation with them).
        let cuda = Ops::new(DeviceKind::Cuda, running(true, true, false)).unwrap();
        assert_eq!(cuda, Ops { softmax: false, kernel: true, fused: true, gated: true, kv_f16: false });
        let plain = Ops::new(DeviceKind::Cuda, running(false, false, false)).unwrap();
        assert_eq!(plain, Ops { softmax: false, kernel: false, fused: false, gated: false, kv_f16: false });
    }
}
