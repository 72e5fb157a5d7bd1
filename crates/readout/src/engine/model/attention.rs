//! The attention block: a layer's q, k and v from one joint product (Qwen2's biases, Qwen3's and
//! Gemma 3's q and k norms, RoPE), grouped-query attention of every segment of the pass against
//! its cached prefix and its own tokens under its mask, the output projection (and Gemma 3's norm
//! after it), and the new keys and values the pass keeps. Attention runs as matmuls (candle's on
//! a GPU; on the CPU with our softmax, a block of queries at a time) or as one kernel a layer
//! (`--attention kernel`, CUDA).

use super::linear::{Joined, Linear};
use super::norm::{self, RmsNorm};
use super::pass::Pass;
use super::KeepKv;
use crate::engine::backends::{cpu, ops, SegmentAttention};
use crate::engine::config::RopeStyle;
use crate::engine::kv::LayerKv;
use crate::engine::profile::{self, Stage};
use candle_core::{DType, Tensor};

/// A layer's attention block.
pub(crate) struct Attention {
    /// q, k and v as one product: `[rows, (heads + 2·kv heads) · head_dim]`.
    pub wqkv: Joined,
    /// Qwen2's biases of q, k and v, added to the product: `[(heads + 2·kv heads) · head_dim]`.
    pub qkv_bias: Option<Tensor>,
    pub wo: Linear,
    pub q_norm: Option<RmsNorm>,
    pub k_norm: Option<RmsNorm>,
    /// Gemma 3: the norm of attention's output, before it joins the residual.
    pub post_norm: Option<RmsNorm>,
    /// A local layer (Gemma 3): attention over the sliding window only, with the local RoPE.
    pub local: bool,
    /// Qwen3.5: the query projection gives each head's query and then its gate, and the
    /// attention's output is multiplied by `sigmoid(gate)` before `wo`.
    pub gated: bool,
}

/// A layer's q `[heads, S, hd]`, k and v `[kv_heads, S, hd]` ([`Attention::qkv`]).
struct LayerQkv {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    /// k and v side by side, `[2·kv_heads, S, hd]`, when they are (the fused kernel's output).
    kv_joint: Option<Tensor>,
    /// Qwen3.5's output gate `[S, h·hd]`, before its sigmoid.
    gate: Option<Tensor>,
}

impl Attention {
    /// The block on layer `li`'s normed input `xn`: attention's output `[S, hidden]` (projected,
    /// and normed for Gemma 3), and this layer's new keys and values when the pass keeps some.
    pub(crate) fn forward(
        &self,
        pass: &Pass<'_>,
        li: usize,
        xn: &Tensor,
    ) -> candle_core::Result<(Tensor, Option<LayerKv>)> {
        let LayerQkv { q, k, v, kv_joint, gate } = self.qkv(pass, xn)?;
        let timer = profile::time(Stage::Attention);
        // An f16 cache: this pass's own keys and values are rounded to f16 before its
        // attention too, so a token sees the same numbers whether its keys come from this
        // pass or from the cache of an earlier one.
        let (k, v, half, kv_joint) = if pass.kv_f16 {
            let (k16, v16) = (k.to_dtype(DType::F16)?, v.to_dtype(DType::F16)?);
            (k16.to_dtype(DType::F32)?, v16.to_dtype(DType::F32)?, Some((k16, v16)), None)
        } else {
            (k, v, None, kv_joint)
        };
        let out = match pass.kernel {
            true => self.attend_kernel(pass, li, &q, &k, &v)?,
            false => self.attend_matmuls(pass, li, &q, &k, &v)?,
        }; // [S, h·hd]
           // Only the keys and values the caller keeps outlive the layer: a pass of a thousand
           // tokens would otherwise hold every layer's (and, through v's view, the joint q, k,
           // v products) to its end, hundreds of MB for a model of Qwen3-0.6B's size.
        let (k, v) = match half {
            Some(kv16) => kv16,
            None => (k, v),
        };
        let kv = kept(pass, k, v, kv_joint)?;
        drop(timer);
        let out = match gate {
            Some(g) => (out * candle_nn::ops::sigmoid(&g)?)?,
            None => out,
        };
        let out = self.wo.forward(&out)?;
        Ok((norm::maybe(self.post_norm.as_ref(), out)?, kv))
    }

    /// A layer's q, k and v from its normed input `xn`: q and k through their norms (Qwen3,
    /// Gemma 3) and RoPE (cos and sin of the pass's positions), q scaled by the pass's scale
    /// except on the CPU (whose softmax scales the scores); `[heads, S, hd]` and
    /// `[kv_heads, S, hd]`. With the fused kernels all of it is one launch after the product.
    fn qkv(&self, pass: &Pass<'_>, xn: &Tensor) -> candle_core::Result<LayerQkv> {
        let cfg = pass.cfg;
        let (h, kvh, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let eps = cfg.rms_eps as f32;
        let s = xn.dim(0)?;
        let (cos, sin) = pass.rope.for_layer(self.local);
        let scale = pass.scale;
        let qkv = self.wqkv.forward(xn)?; // [S, (heads + 2·kv heads)·hd]
        let qkv = match &self.qkv_bias {
            Some(b) => qkv.broadcast_add(b)?,
            None => qkv,
        };
        if self.gated {
            return self.gated_qkv(pass, &qkv);
        }
        if pass.fused {
            let spec = ops::QkvSpec {
                heads: h,
                kv_heads: kvh,
                head_dim: hd,
                rope: cfg.rope_style,
                q_scale: scale as f32,
                q_norm: self.q_norm.as_ref().map(|n| &n.weight),
                k_norm: self.k_norm.as_ref().map(|n| &n.weight),
                eps,
            };
            let heads = ops::qkv_heads(&qkv.contiguous()?, cos, sin, &spec)?;
            return Ok(LayerQkv {
                q: heads.narrow(0, 0, h)?,
                k: heads.narrow(0, h, kvh)?,
                v: heads.narrow(0, h + kvh, kvh)?,
                kv_joint: Some(heads.narrow(0, h, 2 * kvh)?),
                gate: None,
            });
        }
        // Heads first in one copy: `[heads + 2·kv heads, S, hd]`, whose q, k and v are
        // contiguous slices.
        let heads = qkv.reshape((s, h + 2 * kvh, hd))?.transpose(0, 1)?.contiguous()?;
        let q = heads.narrow(0, 0, h)?;
        let k = heads.narrow(0, h, kvh)?;
        let v = heads.narrow(0, h + kvh, kvh)?; // [kvh, S, hd]
        let q = norm::maybe(self.q_norm.as_ref(), q)?;
        let k = norm::maybe(self.k_norm.as_ref(), k)?;
        // [1, heads, S, hd] for the rope kernels.
        let (q, k) = (q.unsqueeze(0)?, k.unsqueeze(0)?);
        let (q, k) = match cfg.rope_style {
            RopeStyle::Interleaved => {
                (candle_nn::rotary_emb::rope_i(&q, cos, sin)?, candle_nn::rotary_emb::rope_i(&k, cos, sin)?)
            }
            RopeStyle::Halves => {
                (candle_nn::rotary_emb::rope(&q, cos, sin)?, candle_nn::rotary_emb::rope(&k, cos, sin)?)
            }
        };
        // On CPU the fused softmax scales the scores; elsewhere q is scaled here, once for
        // every segment of the pass, instead of each segment's scores.
        let q = if pass.cpu && !pass.kernel { q.squeeze(0)? } else { (q.squeeze(0)? * scale)? }; // [h, S, hd]
        Ok(LayerQkv { q, k: k.squeeze(0)?, v, kv_joint: None, gate: None })
    }

    /// Qwen3.5's q, k, v and gate from the joint product `qkv` `[S, (2·heads + 2·kv heads)·hd]`:
    /// each head's query then its gate, then k and v; q and k through their norms and RoPE over
    /// the first `rotary_dim` dimensions of each head (the rest as they are). Never fused.
    fn gated_qkv(&self, pass: &Pass<'_>, qkv: &Tensor) -> candle_core::Result<LayerQkv> {
        let cfg = pass.cfg;
        let (h, kvh, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let s = qkv.dim(0)?;
        let rd = cfg.hybrid.as_ref().map_or(hd, |x| x.rotary_dim);
        let qg = qkv.narrow(1, 0, 2 * h * hd)?.reshape((s, h, 2, hd))?;
        let gate = qg.narrow(2, 1, 1)?.reshape((s, h * hd))?;
        let q = qg.narrow(2, 0, 1)?.reshape((s, h, hd))?.transpose(0, 1)?.contiguous()?; // [h, S, hd]
        let kv = qkv.narrow(1, 2 * h * hd, 2 * kvh * hd)?.reshape((s, 2 * kvh, hd))?.transpose(0, 1)?.contiguous()?;
        let k = kv.narrow(0, 0, kvh)?;
        let v = kv.narrow(0, kvh, kvh)?;
        let q = norm::maybe(self.q_norm.as_ref(), q)?;
        let k = norm::maybe(self.k_norm.as_ref(), k.contiguous()?)?;
        let (cos, sin) = pass.rope.for_layer(self.local);
        let turn = |x: Tensor| -> candle_core::Result<Tensor> {
            let x = x.unsqueeze(0)?;
            let turned = candle_nn::rotary_emb::rope(&x.narrow(3, 0, rd)?.contiguous()?, cos, sin)?;
            let x = match rd < hd {
                true => Tensor::cat(&[&turned, &x.narrow(3, rd, hd - rd)?], 3)?,
                false => turned,
            };
            x.squeeze(0)
        };
        let (q, k) = (turn(q)?, turn(k)?);
        let q = if pass.cpu && !pass.kernel { q } else { (q * pass.scale)? };
        Ok(LayerQkv { q, k, v, kv_joint: None, gate: Some(gate.contiguous()?) })
    }

    /// Attention of every segment of the pass in one kernel (`--attention kernel`): q, k and v
    /// read in token order, the output written so; `[S, h·hd]`.
    fn attend_kernel(
        &self,
        pass: &Pass<'_>,
        li: usize,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
    ) -> candle_core::Result<Tensor> {
        let parts = pass
            .segs
            .iter()
            .enumerate()
            .map(|(gi, g)| SegmentAttention {
                offset: pass.offsets[gi],
                len: g.tokens.len(),
                // The prefix's chunks as the cache holds them: the kernel reads the chain in
                // place, so nothing is joined or copied per segment.
                past: g.past.layer_chunks(li),
                mask: pass.masks.of(g, gi, self.local).clone(),
            })
            .collect();
        ops::tree_attention(q, k, v, parts, pass.tensor_cores)
    }

    /// Attention as matmuls, segment after segment: each segment's queries against its prefix's
    /// keys and values joined to its own, under its mask; `[S, h·hd]`, token after token.
    fn attend_matmuls(
        &self,
        pass: &Pass<'_>,
        li: usize,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
    ) -> candle_core::Result<Tensor> {
        let cfg = pass.cfg;
        let (h, kvh, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let group = h / kvh;
        let s = pass.rows;
        // q, k and v with every segment's block contiguous (`pass::Orders`).
        let by_seg = match &pass.orders {
            Some(o) => Some((
                q.reshape((h * s, hd))?.index_select(&o.q, 0)?,
                k.reshape((kvh * s, hd))?.index_select(&o.kv, 0)?,
                v.reshape((kvh * s, hd))?.index_select(&o.kv, 0)?,
            )),
            None => None,
        };
        let mut outs = Vec::with_capacity(pass.segs.len());
        for (gi, g) in pass.segs.iter().enumerate() {
            let (off, n) = (pass.offsets[gi], g.tokens.len());
            // Grouped-query attention without repeating K/V: the query heads of a group
            // folded into the row dimension, `[kvh, group·n, hd]`.
            let (qg, kg, vg) = match &by_seg {
                Some((qs, ks, vs)) => (
                    qs.narrow(0, h * off, h * n)?.reshape((kvh, group * n, hd))?,
                    ks.narrow(0, kvh * off, kvh * n)?.reshape((kvh, n, hd))?,
                    vs.narrow(0, kvh * off, kvh * n)?.reshape((kvh, n, hd))?,
                ),
                None => (q.reshape((kvh, group * n, hd))?, k.clone(), v.clone()),
            };
            let (k_all, v_all) = g.past.layer_then(li, &kg, &vg, !pass.cpu)?;
            let out = if pass.cpu {
                attend_cpu(&qg, &k_all, &v_all, pass.masks.of(g, gi, self.local), pass.scale as f32, group)?
            } else {
                // q scaled in `qkv`.
                let t = k_all.dim(1)?;
                let att = qg.matmul(&k_all.t()?)?.reshape((kvh, group, n, t))?;
                let att = candle_nn::ops::softmax_last_dim(&att.broadcast_add(pass.masks.broadcast(gi, self.local))?)?;
                att.reshape((kvh, group * n, t))?.matmul(&v_all)? // [kvh, group*n, hd]
            };
            outs.push(out.reshape((h * n, hd))?); // rows (head, token)
        }
        match &pass.orders {
            // Segment after segment, then every token's heads side by side: `[S, h·hd]`.
            Some(o) => Tensor::cat(&outs, 0)?.index_select(&o.back, 0)?.reshape((s, h * hd)),
            None => Tensor::cat(&outs, 0)?.reshape((h, s, hd))?.transpose(0, 1)?.reshape((s, h * hd)),
        }
    }
}

/// This layer's new keys and values as the pass keeps them (`pass.keep`), or `None`; `k` and
/// `v` `[kv_heads, S, hd]` as the cache holds them (f16 for an f16 cache), `kv_joint` the two
/// side by side when the fused kernel made them so.
fn kept(pass: &Pass<'_>, k: Tensor, v: Tensor, kv_joint: Option<Tensor>) -> candle_core::Result<Option<LayerKv>> {
    let (kvh, hd, s) = (pass.cfg.num_kv_heads, pass.cfg.head_dim, pass.rows);
    Ok(match pass.keep {
        KeepKv::Nothing => None,
        KeepKv::All => Some(match &kv_joint {
            // k and v side by side in the fused kernel's output: one copy holds both, apart
            // from q.
            Some(kv) => {
                let kv = kv.copy()?;
                LayerKv { k: kv.narrow(0, 0, kvh)?, v: kv.narrow(0, kvh, kvh)? }
            }
            // v copied out of the joint product, so the cache holds v alone.
            None => LayerKv { k, v: v.copy()? },
        }),
        KeepKv::Rows(idx, _) => Some(LayerKv {
            k: k.reshape((kvh * s, hd))?.index_select(idx, 0)?,
            v: v.contiguous()?.reshape((kvh * s, hd))?.index_select(idx, 0)?,
        }),
    })
}

/// Query tokens whose attention scores the CPU computes at once ([`attend_cpu`]).
const ATTEND_TOKENS: usize = 128;

/// Attention of one segment on the CPU: `q [kvh, group·n, hd]` (unscaled; rows (head in group,
/// token)) against `k`, `v` `[kvh, t, hd]` under `mask [n, t]`, as `[kvh, group·n, hd]`. The
/// scores of at most 128 query tokens exist at once: a segment of a thousand tokens over a
/// prefix of as many would otherwise hold scores of heads × 10⁶ floats (140 MB for Qwen3-0.6B)
/// per layer. A segment's cut depends only on its own length, so its numbers do not depend on
/// the pass it shares.
fn attend_cpu(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &Tensor,
    scale: f32,
    group: usize,
) -> candle_core::Result<Tensor> {
    let (kvh, rows, hd) = q.dims3()?;
    let (n, t) = mask.dims2()?;
    let kt = k.t()?;
    if n <= ATTEND_TOKENS {
        let att = q.matmul(&kt)?.reshape((kvh, group, n, t))?;
        let att = cpu::fused::masked_softmax(att, mask, scale)?;
        return att.reshape((kvh, rows, t))?.matmul(v);
    }
    let q = q.reshape((kvh, group, n, hd))?;
    let mut parts = Vec::with_capacity(n.div_ceil(ATTEND_TOKENS));
    for start in (0..n).step_by(ATTEND_TOKENS) {
        let len = ATTEND_TOKENS.min(n - start);
        let qc = q.narrow(2, start, len)?.contiguous()?.reshape((kvh, group * len, hd))?;
        let att = qc.matmul(&kt)?.reshape((kvh, group, len, t))?;
        let att = cpu::fused::masked_softmax(att, &mask.narrow(0, start, len)?, scale)?;
        parts.push(att.reshape((kvh, group * len, t))?.matmul(v)?.reshape((kvh, group, len, hd))?);
    }
    Tensor::cat(&parts, 2)?.reshape((kvh, rows, hd))
}
