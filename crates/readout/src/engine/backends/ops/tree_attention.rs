//! Attention of a whole pass in one kernel per layer (`--attention kernel`, CUDA). Why it
//! exists: on a GPU the matmul path launches, for every segment of a pass and every layer, the
//! concatenation of its cached prefix with the pass's own keys and values, two matmuls, the mask
//! add and the softmax; a pass's time is the host's time to queue those launches. Here every
//! segment's queries read its prefix's keys and values where the cache holds them and the pass's
//! own under the segment's mask (the tree mask, or the sliding window's), with an online softmax
//! (FlashAttention's running maximum and sum) and grouped-query heads: one launch a layer.
//! Tiled: a block takes 32 query vectors of one segment (its tokens × the query heads of one kv
//! head, so a GQA group's heads share every key) and walks the segment's keys in chunks of 32
//! staged in shared memory, each read once by the block instead of once a query head and token.
//!
//! The kernel is CUDA C (`backends/cuda/kernels/tree_attention.cu`), compiled at run time by
//! NVRTC (which candle's CUDA build already loads) the first time a pass uses it; its launch is
//! `backends/cuda/tree_attention.rs`. With `--precision tf32|bf16` its products run on the tensor
//! cores in TF32 (`kernels/tree_attention_tc.cu`: 64 query vectors a block, mma.sync, f32 sums and
//! softmax), where the GPU (compute capability 8.0 and later) and head dim (64, 128) allow. The CPU forward of the op is the reference: the same sums
//! in the plain two-pass softmax, checked against the matmul path's attention in the tests below;
//! the GPU parity test is `tests/all/engine.rs`'s
//! `the_attention_kernel_gives_the_matmul_path_s_probabilities` (`READOUT_TEST_DEVICE=cuda`).

use crate::engine::backends::cuda;
use crate::engine::backends::SegmentAttention;
use candle_core::{CpuStorage, CudaStorage, CustomOp3, Layout, Shape, Tensor};
use rayon::prelude::*;

/// Attention of a pass: `q [heads, S, hd]` (already scaled), the pass's own `k`, `v`
/// `[kv_heads, S, hd]`, each segment against its past and its own tokens; `[S, heads · hd]`,
/// token after token.
pub(crate) fn tree_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    segs: Vec<SegmentAttention>,
    tensor_cores: bool,
) -> candle_core::Result<Tensor> {
    let (h, s, hd) = q.dims3()?;
    let (kvh, _, _) = k.dims3()?;
    if h % kvh != 0 || s != segs.iter().map(|g| g.len).sum::<usize>() {
        candle_core::bail!("tree attention: {h} heads over {kvh} kv heads, {s} rows for the segments' tokens");
    }
    for g in &segs {
        let past = g.past.iter().map(|(pk, _)| pk.dim(1)).sum::<candle_core::Result<usize>>()?;
        if g.mask.dims() != [g.len, past + g.len] {
            candle_core::bail!(
                "tree attention: a segment of {} tokens on {past} has a mask of {:?}",
                g.len,
                g.mask.dims()
            );
        }
    }
    let op = TreeAttention { segs, heads: h, kv_heads: kvh, head_dim: hd, tensor_cores };
    q.apply_op3_no_bwd(k, v, &op)?.reshape((s, h * hd))
}

struct TreeAttention {
    segs: Vec<SegmentAttention>,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    /// On CUDA, the products in TF32 on the tensor cores (`--precision tf32|bf16`); the CPU
    /// forward is f32 whatever it says.
    tensor_cores: bool,
}

/// A contiguous f32 tensor's values (the CPU reference reads the segments' pasts and masks).
/// `a · b` in a fixed order (16 running sums, lane by lane, then added in order): the same
/// bits for the same vectors whatever the pass, and in a shape the compiler vectorises.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for ((s, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// A tensor's values as f32 (an f16 cache's widened exactly).
fn values(t: &Tensor) -> candle_core::Result<Vec<f32>> {
    t.to_dtype(candle_core::DType::F32)?.flatten_all()?.to_vec1::<f32>()
}

fn contiguous_f32<'a>(s: &'a CpuStorage, l: &Layout) -> candle_core::Result<&'a [f32]> {
    let all = s.as_slice::<f32>()?;
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&all[a..b]),
        None => candle_core::bail!("tree attention: its inputs must be contiguous"),
    }
}

impl CustomOp3 for TreeAttention {
    fn name(&self) -> &'static str {
        "tree-attention"
    }

    /// The reference: for each token and head, the scores of its segment's past and own keys
    /// plus its mask row, softmax (maximum, exponentials, sum), the values weighted by it.
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (q, k, v) = (contiguous_f32(s1, l1)?, contiguous_f32(s2, l2)?, contiguous_f32(s3, l3)?);
        let (h, kvh, hd) = (self.heads, self.kv_heads, self.head_dim);
        let group = h / kvh;
        let s = l1.dims()[1];
        let mut out = vec![0f32; s * h * hd];
        for g in &self.segs {
            let (pk, pv, past) = match g.past.len() {
                0 => (Vec::new(), Vec::new(), 0),
                _ => {
                    let (ks, vs): (Vec<&Tensor>, Vec<&Tensor>) = g.past.iter().map(|(k, v)| (k, v)).unzip();
                    let (pk, pv) = (Tensor::cat(&ks, 1)?, Tensor::cat(&vs, 1)?);
                    (values(&pk)?, values(&pv)?, pk.dim(1)?)
                }
            };
            let mask = values(&g.mask)?;
            let t = past + g.len;
            let key = |j: usize, c: usize| -> &[f32] {
                match c < past {
                    true => &pk[(j * past + c) * hd..][..hd],
                    false => &k[(j * s + g.offset + c - past) * hd..][..hd],
                }
            };
            let value = |j: usize, c: usize| -> &[f32] {
                match c < past {
                    true => &pv[(j * past + c) * hd..][..hd],
                    false => &v[(j * s + g.offset + c - past) * hd..][..hd],
                }
            };
            // Rows on all threads: each row's sums are its own, in key order, whatever the
            // thread count.
            let rows = &mut out[g.offset * h * hd..(g.offset + g.len) * h * hd];
            rows.par_chunks_mut(h * hd).enumerate().for_each(|(row, o_row)| {
                let r = g.offset + row;
                let mut scores = vec![0f32; t];
                for head in 0..h {
                    let j = head / group;
                    let qr = &q[(head * s + r) * hd..][..hd];
                    for (c, sc) in scores.iter_mut().enumerate() {
                        let m = mask[row * t + c];
                        *sc = match m == f32::NEG_INFINITY {
                            true => m,
                            false => dot(qr, key(j, c)) + m,
                        };
                    }
                    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut sum = 0f32;
                    for sc in scores.iter_mut() {
                        *sc = (*sc - max).exp();
                        sum += *sc;
                    }
                    let o = &mut o_row[head * hd..][..hd];
                    for (c, &p) in scores.iter().enumerate() {
                        if p > 0.0 {
                            for (x, y) in o.iter_mut().zip(value(j, c)) {
                                *x += p * y;
                            }
                        }
                    }
                    o.iter_mut().for_each(|x| *x /= sum);
                }
            });
        }
        Ok((CpuStorage::F32(out), Shape::from((s, h, hd))))
    }

    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
        s3: &CudaStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        let heads = (self.heads, self.kv_heads, self.head_dim);
        cuda::tree_attention(&self.segs, self.tensor_cores, heads, (s1, l1), (s2, l2), (s3, l3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// The matmul path's attention of one segment (`q·kᵀ + mask`, softmax, `·v`), `[n, h·hd]`.
    fn by_matmuls(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor, group: usize) -> candle_core::Result<Tensor> {
        let (h, n, hd) = q.dims3()?;
        let kvh = h / group;
        let t = k.dim(1)?;
        let qg = q.reshape((kvh, group * n, hd))?;
        let att = qg.matmul(&k.t()?)?.reshape((kvh, group, n, t))?;
        let att = candle_nn::ops::softmax_last_dim(&att.broadcast_add(&mask.unsqueeze(0)?.unsqueeze(0)?)?)?;
        att.reshape((kvh, group * n, t))?.matmul(v)?.reshape((h, n, hd))?.transpose(0, 1)?.reshape((n, h * hd))
    }

    #[test]
    fn the_reference_gives_the_matmul_path_s_attention_for_every_segment() -> candle_core::Result<()> {
        // Two segments on pasts of 5 and 0 tokens, 4 heads over 2 kv heads, a causal mask with
        // one more key hidden (a tree mask's), and a row whose past is cut (a window's).
        let dev = Device::Cpu;
        let (h, kvh, hd) = (4, 2, 8);
        let lens = [3usize, 2];
        let pasts = [5usize, 0];
        let s: usize = lens.iter().sum();
        let q = Tensor::randn(0f32, 1., (h, s, hd), &dev)?;
        let k = Tensor::randn(0f32, 1., (kvh, s, hd), &dev)?;
        let v = Tensor::randn(0f32, 1., (kvh, s, hd), &dev)?;
        let mut segs = Vec::new();
        let mut want = Vec::new();
        let mut off = 0;
        for (&n, &p) in lens.iter().zip(&pasts) {
            let t = p + n;
            let mut m = vec![0f32; n * t];
            for r in 0..n {
                for c in p + r + 1..t {
                    m[r * t + c] = f32::NEG_INFINITY;
                }
            }
            if p > 0 {
                m[2 * t] = f32::NEG_INFINITY; // the window hides the oldest key from the last row
                m[2 * t + p + 1] = f32::NEG_INFINITY; // the tree hides a sibling's token
            }
            let mask = Tensor::from_vec(m, (n, t), &dev)?;
            // A past of two chunks, the second a view across a wider tensor (as the cache keeps
            // a unit's rows of a pass's keys).
            let past: Vec<(Tensor, Tensor)> = if p > 0 {
                let wide = |n: usize| Tensor::randn(0f32, 1., (kvh, n + 3, hd), &dev)?.narrow(1, 1, n);
                vec![
                    (Tensor::randn(0f32, 1., (kvh, 2, hd), &dev)?, Tensor::randn(0f32, 1., (kvh, 2, hd), &dev)?),
                    (wide(p - 2)?, wide(p - 2)?),
                ]
            } else {
                vec![]
            };
            let (qs, ks, vs) = (q.narrow(1, off, n)?, k.narrow(1, off, n)?, v.narrow(1, off, n)?);
            let (ka, va) = match past.as_slice() {
                [(k0, v0), (k1, v1)] => (Tensor::cat(&[k0, k1, &ks], 1)?, Tensor::cat(&[v0, v1, &vs], 1)?),
                _ => (ks.contiguous()?, vs.contiguous()?),
            };
            want.push(by_matmuls(&qs.contiguous()?, &ka, &va, &mask, h / kvh)?);
            segs.push(SegmentAttention { offset: off, len: n, past, mask });
            off += n;
        }
        let got = tree_attention(&q, &k, &v, segs, false)?.to_vec2::<f32>()?;
        let want = Tensor::cat(&want, 0)?.to_vec2::<f32>()?;
        for (a, b) in got.iter().flatten().zip(want.iter().flatten()) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
        }
        Ok(())
    }

    #[test]
    fn a_mask_of_the_wrong_shape_is_refused() {
        let dev = Device::Cpu;
        let q = Tensor::zeros((2, 3, 4), candle_core::DType::F32, &dev).unwrap();
        let kv = Tensor::zeros((1, 3, 4), candle_core::DType::F32, &dev).unwrap();
        let mask = Tensor::zeros((3, 4), candle_core::DType::F32, &dev).unwrap();
        let segs = vec![SegmentAttention { offset: 0, len: 3, past: vec![], mask }];
        let e = tree_attention(&q, &kv, &kv, segs, false).unwrap_err().to_string();
        assert!(e.contains("mask of [3, 4]"), "{e}");
    }
}
