//! Qwen3.5's Gated DeltaNet block: the layer that keeps a recurrent state instead of keys and
//! values. Its projections run over all the pass's rows at once, as every block's do; what is
//! its own is the walk over the rows that follows, which has to follow the prompt tree: a row's
//! state is its parent's state stepped by the row, and a row's parent is the row it follows on
//! its path (the tree mask says which), or the end of the segment's cached prefix. Branches of a
//! tree start from the state of the row they leave, so several suffixes share one pass as they
//! do on an attention layer.
//!
//! Per row and value head (transformers' `torch_recurrent_gated_delta_rule`, llama.cpp's
//! `build_delta_net_autoregressive`): the convolved q, k (L2-normalised, q scaled by
//! `1/√key_dim`) and v; `β = sigmoid(b)`, `g = A · softplus(a + dt_bias)` with `A = −exp(A_log)`;
//! `S ← S·exp(g)`, `S ← S + k ⊗ β(v − Sᵀk)`, `o = Sᵀq`; then `o` is RMS-normed, multiplied by the
//! norm's weight and by `silu(z)`, and projected out. The state is f32 and stays on the host.
//!
//! What a prefix keeps of such a layer ([`LayerKv`] in its own shape): `k` the convolution's
//! last `kernel − 1` inputs `[kernel − 1, conv_dim]`, `v` the state `[value_heads, key_dim,
//! value_dim]`, both at the prefix's end.

use super::linear::{Joined, Linear};
use super::pass::Pass;
use super::KeepKv;
use crate::engine::config::Hybrid;
use crate::engine::kv::LayerKv;
use candle_core::{DType, Device, Tensor};
use std::collections::HashMap;

/// A Gated DeltaNet layer's weights.
pub(crate) struct DeltaNet {
    /// q, k and v (the convolution's channels), z, b and a as one product:
    /// `[rows, conv_dim + value_heads·value_dim + 2·value_heads]`.
    pub proj: Joined,
    /// The depthwise convolution's taps, `[conv_dim, kernel]` (the oldest input first).
    pub conv: Vec<f32>,
    /// `A = −exp(A_log)` per value head.
    pub a: Vec<f32>,
    pub dt_bias: Vec<f32>,
    /// The gated norm's weight, `[value_dim]` (used as it is, not `1 + w`).
    pub norm: Vec<f32>,
    pub out: Linear,
    pub shape: Hybrid,
    pub eps: f32,
}

/// The recurrent part of a prefix's end: the convolution's last inputs and the state.
struct State {
    /// `[kernel − 1, conv_dim]`, the oldest first (zeros before the first token).
    conv: Vec<f32>,
    /// `[value_heads, key_dim, value_dim]`.
    s: Vec<f32>,
}

impl DeltaNet {
    fn conv_dim(&self) -> usize {
        self.shape.conv_dim()
    }

    fn state_len(&self) -> usize {
        self.shape.value_heads * self.shape.key_dim * self.shape.value_dim
    }

    /// The block on layer `li`'s normed input `xn` `[S, hidden]`: its output `[S, hidden]`, and
    /// the states at the ends of the units the pass keeps.
    pub(crate) fn forward(
        &self,
        pass: &Pass<'_>,
        li: usize,
        xn: &Tensor,
    ) -> candle_core::Result<(Tensor, Option<LayerKv>)> {
        let h = &self.shape;
        let (c, vd) = (self.conv_dim(), h.value_heads * h.value_dim);
        let width = c + vd + 2 * h.value_heads;
        let rows = xn.dim(0)?;
        let p = self.proj.forward(xn)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        if p.len() != rows * width {
            candle_core::bail!("a DeltaNet projection gave {} values for {rows} rows of {width}", p.len());
        }
        let ends = kept_ends(pass);
        let mut out = vec![0f32; rows * vd];
        let mut kept: Vec<(usize, State)> = Vec::with_capacity(ends.len());
        for (gi, g) in pass.segs.iter().enumerate() {
            let (off, n) = (pass.offsets[gi], g.tokens.len());
            let start = self.past_state(g.past.recurrent(li))?;
            let parents = &pass.parents[gi];
            self.walk(
                &p[off * width..(off + n) * width],
                parents,
                &start,
                &mut out[off * vd..(off + n) * vd],
                |r, st| {
                    if ends.contains(&(off + r)) {
                        kept.push((off + r, st()));
                    }
                },
            )?;
        }
        let kv = match pass.keep {
            KeepKv::Nothing => None,
            _ => {
                // In the order of the ends the batcher asked for.
                kept.sort_by_key(|(r, _)| ends.iter().position(|e| e == r));
                let k = kernel_rows(h) * c;
                let mut conv = Vec::with_capacity(kept.len() * k);
                let mut s = Vec::with_capacity(kept.len() * self.state_len());
                for (_, st) in &kept {
                    conv.extend_from_slice(&st.conv);
                    s.extend_from_slice(&st.s);
                }
                let units = kept.len();
                let device = xn.device();
                Some(LayerKv {
                    k: Tensor::from_vec(conv, (units * kernel_rows(h), c), device)?,
                    v: Tensor::from_vec(s, (units * h.value_heads, h.key_dim, h.value_dim), device)?,
                })
            }
        };
        let out = Tensor::from_vec(out, (rows, vd), xn.device())?.to_dtype(xn.dtype())?;
        Ok((self.out.forward(&out)?, kv))
    }

    /// The state a segment starts from: its prefix's, or zeros for a segment at the root.
    fn past_state(&self, past: Option<&LayerKv>) -> candle_core::Result<State> {
        let c = self.conv_dim();
        let Some(l) = past else {
            return Ok(State { conv: vec![0.0; kernel_rows(&self.shape) * c], s: vec![0.0; self.state_len()] });
        };
        let conv = l.k.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        let s = l.v.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        if conv.len() != kernel_rows(&self.shape) * c || s.len() != self.state_len() {
            candle_core::bail!("a prefix's recurrent state does not fit this model's DeltaNet layer");
        }
        Ok(State { conv, s })
    }

    /// The rows of one segment, `p` their projections (`[n, width]`), `parents` each row's
    /// parent among them (`None`: the prefix, whose state is `start`), each row's normed and
    /// gated output written to `out` (`[n, value_heads·value_dim]`). `keep(r, state)` is called
    /// after row `r` with a maker of its state.
    fn walk(
        &self,
        p: &[f32],
        parents: &[Option<usize>],
        start: &State,
        out: &mut [f32],
        mut keep: impl FnMut(usize, &dyn Fn() -> State),
    ) -> candle_core::Result<()> {
        let h = &self.shape;
        let (c, vd, vh) = (self.conv_dim(), h.value_heads * h.value_dim, h.value_heads);
        let (dk, dv) = (h.key_dim, h.value_dim);
        let width = c + vd + 2 * vh;
        let n = parents.len();
        let k_taps = h.conv_kernel;
        let kd = h.key_heads * dk;
        // Which rows' states a later row starts from, other than the next row.
        let mut children = vec![0usize; n];
        let mut away = vec![false; n];
        for (r, par) in parents.iter().enumerate() {
            if let Some(q) = *par {
                children[q] += 1;
                if q + 1 != r {
                    away[q] = true;
                }
            }
        }
        let mut saved: HashMap<usize, Vec<f32>> = HashMap::new();
        let mut s = start.s.clone();
        let mut s_row: Option<usize> = None;
        let scale = 1.0 / (dk as f32).sqrt();
        let mut conv_out = vec![0f32; c];
        let mut o = vec![0f32; dv];
        // The input of the tap `m` rows back along the path of row `r` (0: the row itself).
        let tap = |r: usize, m: usize| -> &[f32] {
            let mut cur = Some(r);
            let mut depth = 0;
            while depth < m {
                match cur {
                    Some(q) => cur = parents[q],
                    None => break,
                }
                depth += 1;
            }
            match cur {
                Some(q) if depth == m => &p[q * width..q * width + c],
                _ => {
                    // Into the prefix: `m − depth_in_segment` rows before its end.
                    let mut in_seg = 0;
                    let mut q = Some(r);
                    while let Some(x) = q {
                        in_seg += 1;
                        q = parents[x];
                    }
                    let back = m - in_seg; // 0: the prefix's last input
                    let rows = kernel_rows(h);
                    &start.conv[(rows - 1 - back) * c..(rows - back) * c]
                }
            }
        };
        for r in 0..n {
            let x = &p[r * width..(r + 1) * width];
            // The state this row starts from.
            match parents[r] {
                Some(q) if s_row == Some(q) => {}
                Some(q) => {
                    s = saved.get(&q).cloned().ok_or_else(|| {
                        candle_core::Error::Msg(format!("the state of row {q} was not kept for row {r}"))
                    })?
                }
                None => s.clone_from(&start.s),
            }
            // The causal convolution along the row's path, then SiLU.
            conv_out.iter_mut().for_each(|v| *v = 0.0);
            for m in 0..k_taps {
                let input = tap(r, m);
                let j = k_taps - 1 - m;
                for (ch, o) in conv_out.iter_mut().enumerate() {
                    *o += self.conv[ch * k_taps + j] * input[ch];
                }
            }
            conv_out.iter_mut().for_each(|v| *v = silu(*v));
            let (q_all, rest) = conv_out.split_at_mut(kd);
            let (k_all, v_all) = rest.split_at_mut(kd);
            for head in q_all.chunks_exact_mut(dk) {
                l2_normalise(head, 1e-6);
                head.iter_mut().for_each(|v| *v *= scale);
            }
            for head in k_all.chunks_exact_mut(dk) {
                l2_normalise(head, 1e-6);
            }
            let z = &x[c..c + vd];
            let b = &x[c + vd..c + vd + vh];
            let a = &x[c + vd + vh..c + vd + 2 * vh];
            for hv in 0..vh {
                let kh = h.key_head_of(hv);
                let (q, k) = (&q_all[kh * dk..(kh + 1) * dk], &k_all[kh * dk..(kh + 1) * dk]);
                let v = &v_all[hv * dv..(hv + 1) * dv];
                let beta = sigmoid(b[hv]);
                let decay = (self.a[hv] * softplus(a[hv] + self.dt_bias[hv])).exp();
                let st = &mut s[hv * dk * dv..(hv + 1) * dk * dv];
                st.iter_mut().for_each(|x| *x *= decay);
                // delta = β (v − Sᵀk)
                o.copy_from_slice(v);
                for (i, row) in st.chunks_exact(dv).enumerate() {
                    let ki = k[i];
                    for (d, &sv) in o.iter_mut().zip(row) {
                        *d -= sv * ki;
                    }
                }
                o.iter_mut().for_each(|d| *d *= beta);
                // S += k ⊗ delta, and the output Sᵀq in the same sweep.
                let delta = o.clone();
                o.iter_mut().for_each(|x| *x = 0.0);
                for (i, row) in st.chunks_exact_mut(dv).enumerate() {
                    let (ki, qi) = (k[i], q[i]);
                    for ((sv, &d), oj) in row.iter_mut().zip(&delta).zip(o.iter_mut()) {
                        *sv += ki * d;
                        *oj += *sv * qi;
                    }
                }
                // The gated norm.
                let ms = o.iter().map(|x| x * x).sum::<f32>() / dv as f32;
                let inv = 1.0 / (ms + self.eps).sqrt();
                let dst = &mut out[r * vd + hv * dv..r * vd + (hv + 1) * dv];
                for j in 0..dv {
                    dst[j] = o[j] * inv * self.norm[j] * silu(z[hv * dv + j]);
                }
            }
            s_row = Some(r);
            if away[r] || children[r] > 1 {
                saved.insert(r, s.clone());
            }
            let state = || {
                let rows = kernel_rows(h);
                let mut conv = vec![0f32; rows * c];
                for m in 0..rows {
                    conv[(rows - 1 - m) * c..(rows - m) * c].copy_from_slice(tap(r, m));
                }
                State { conv, s: s.clone() }
            };
            keep(r, &state);
        }
        Ok(())
    }
}

/// Rows of convolution input a state keeps.
fn kernel_rows(h: &Hybrid) -> usize {
    h.conv_kernel - 1
}

/// The pass rows at whose end a kept unit's state is taken.
fn kept_ends(pass: &Pass<'_>) -> Vec<usize> {
    match pass.keep {
        KeepKv::Nothing => vec![],
        KeepKv::All => vec![pass.rows - 1],
        KeepKv::Rows(_, ends) => ends.clone(),
    }
}

/// Each row's parent in a segment whose mask is `mask` (`[n, past + n]`, additive): the last
/// earlier new token it sees, or `None` when it sees none (it follows the prefix).
pub(crate) fn parents(mask: &Tensor, past: usize) -> candle_core::Result<Vec<Option<usize>>> {
    let m = mask.to_device(&Device::Cpu)?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
    Ok(m.iter()
        .enumerate()
        .map(|(i, row)| (0..i).rev().find(|&j| row.get(past + j).is_some_and(|v| v.is_finite())))
        .collect())
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// `log(1 + eˣ)`, as torch computes it (linear above 20).
fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// `x / √(Σx² + eps)`.
fn l2_normalise(x: &mut [f32], eps: f32) {
    let inv = 1.0 / (x.iter().map(|v| v * v).sum::<f32>() + eps).sqrt();
    x.iter_mut().for_each(|v| *v *= inv);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_follows_the_last_new_token_it_sees() {
        // A stem of 2 on a prefix of 1, then two leaves of 1 and 2 tokens.
        let mask = crate::engine::model::stem_tree_mask(1, 2, &[1, 2], &Device::Cpu).unwrap();
        assert_eq!(parents(&mask, 1).unwrap(), vec![None, Some(0), Some(1), Some(1), Some(3)]);
    }

    #[test]
    fn the_step_by_hand() {
        // One head of width 2: S = 0, k = (1, 0) after the L2 norm, v = (2, 4), β = ½:
        // delta = ½·(2, 4) = (1, 2), S = k ⊗ delta = [[1, 2], [0, 0]], o = Sᵀq for q = (1, 0)·(1/√2).
        let mut k = [3.0f32, 0.0];
        l2_normalise(&mut k, 0.0);
        assert_eq!(k, [1.0, 0.0]);
        assert!((softplus(0.0) - std::f32::consts::LN_2).abs() < 1e-7);
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-7);
        assert!((silu(1.0) - 0.731_058_6).abs() < 1e-6);
    }
}
