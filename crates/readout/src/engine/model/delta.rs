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
use candle_core::{DType, Tensor};
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
            let mut own: Vec<usize> = ends.iter().filter(|&&e| e >= off && e < off + n).map(|e| e - off).collect();
            own.sort_unstable();
            let states = self.walk(
                &p[off * width..(off + n) * width],
                &pass.parents[gi],
                &start,
                &mut out[off * vd..(off + n) * vd],
                &own,
            )?;
            kept.extend(own.iter().map(|r| r + off).zip(states));
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
    /// gated output written to `out` (`[n, value_heads·value_dim]`); the states after the rows
    /// `ends`, in their order. The convolution runs row by row (it is cheap); the recurrence,
    /// which is not, runs each value head on its own thread, along all the rows.
    fn walk(
        &self,
        p: &[f32],
        parents: &[Option<usize>],
        start: &State,
        out: &mut [f32],
        ends: &[usize],
    ) -> candle_core::Result<Vec<State>> {
        use rayon::prelude::*;
        let h = &self.shape;
        let (c, vd, vh) = (self.conv_dim(), h.value_heads * h.value_dim, h.value_heads);
        let (dk, dv) = (h.key_dim, h.value_dim);
        let width = c + vd + 2 * vh;
        let n = parents.len();
        let k_taps = h.conv_kernel;
        let kd = h.key_heads * dk;
        let rows = kernel_rows(h);
        // The input of the tap `m` rows back along the path of row `r` (0: the row itself),
        // into the prefix's last inputs past the segment's first row on the path.
        let tap = |r: usize, m: usize| -> &[f32] {
            let mut cur = r;
            for depth in 0..m {
                match parents[cur] {
                    Some(q) => cur = q,
                    None => {
                        let back = m - depth - 1; // 0: the prefix's last input
                        return &start.conv[(rows - 1 - back) * c..(rows - back) * c];
                    }
                }
            }
            &p[cur * width..cur * width + c]
        };
        // The causal convolution along each row's path, SiLU, q and k L2-normalised, q scaled.
        let scale = 1.0 / (dk as f32).sqrt();
        let mut mixed = vec![0f32; n * c];
        for (r, conv_out) in mixed.chunks_exact_mut(c).enumerate() {
            for m in 0..k_taps.min(rows + 1) {
                let input = tap(r, m);
                let j = k_taps - 1 - m;
                for (ch, o) in conv_out.iter_mut().enumerate() {
                    *o += self.conv[ch * k_taps + j] * input[ch];
                }
            }
            conv_out.iter_mut().for_each(|v| *v = silu(*v));
            let (q_all, rest) = conv_out.split_at_mut(kd);
            for head in q_all.chunks_exact_mut(dk) {
                l2_normalise(head, 1e-6);
                head.iter_mut().for_each(|v| *v *= scale);
            }
            for head in rest[..kd].chunks_exact_mut(dk) {
                l2_normalise(head, 1e-6);
            }
        }
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
        // Each value head along all the rows: its outputs `[n, dv]` and its states at `ends`.
        let heads: Vec<(Vec<f32>, Vec<Vec<f32>>)> = (0..vh)
            .into_par_iter()
            .map(|hv| -> candle_core::Result<(Vec<f32>, Vec<Vec<f32>>)> {
                let kh = h.key_head_of(hv);
                let own = |st: &[f32]| st[hv * dk * dv..(hv + 1) * dk * dv].to_vec();
                let mut s = own(&start.s);
                let mut s_row: Option<usize> = None;
                let mut saved: HashMap<usize, Vec<f32>> = HashMap::new();
                let mut outs = vec![0f32; n * dv];
                let mut at_ends = Vec::with_capacity(ends.len());
                let mut delta = vec![0f32; dv];
                for r in 0..n {
                    match parents[r] {
                        Some(q) if s_row == Some(q) => {}
                        Some(q) => {
                            s = saved.get(&q).cloned().ok_or_else(|| {
                                candle_core::Error::Msg(format!("the state of row {q} was not kept for row {r}"))
                            })?
                        }
                        None => s = own(&start.s),
                    }
                    let x = &p[r * width..(r + 1) * width];
                    let m = &mixed[r * c..(r + 1) * c];
                    let q = &m[kh * dk..(kh + 1) * dk];
                    let k = &m[kd + kh * dk..kd + (kh + 1) * dk];
                    let v = &m[2 * kd + hv * dv..2 * kd + (hv + 1) * dv];
                    let beta = sigmoid(x[c + vd + hv]);
                    let decay = (self.a[hv] * softplus(x[c + vd + vh + hv] + self.dt_bias[hv])).exp();
                    // delta = β (v − (decay·S)ᵀk), the decay folded into the sweep.
                    delta.copy_from_slice(v);
                    for (row, &ki) in s.chunks_exact(dv).zip(k) {
                        let w = ki * decay;
                        for (d, &sv) in delta.iter_mut().zip(row) {
                            *d -= sv * w;
                        }
                    }
                    delta.iter_mut().for_each(|d| *d *= beta);
                    // S ← decay·S + k ⊗ delta, and the output Sᵀq in the same sweep.
                    let o = &mut outs[r * dv..(r + 1) * dv];
                    for ((row, &ki), &qi) in s.chunks_exact_mut(dv).zip(k).zip(q) {
                        for ((sv, &d), oj) in row.iter_mut().zip(&delta).zip(o.iter_mut()) {
                            *sv = *sv * decay + ki * d;
                            *oj += *sv * qi;
                        }
                    }
                    // The gated norm.
                    let ms = o.iter().map(|x| x * x).sum::<f32>() / dv as f32;
                    let inv = 1.0 / (ms + self.eps).sqrt();
                    let z = &x[c + hv * dv..c + (hv + 1) * dv];
                    for ((oj, &w), &zj) in o.iter_mut().zip(&self.norm).zip(z) {
                        *oj *= inv * w * silu(zj);
                    }
                    s_row = Some(r);
                    if away[r] || children[r] > 1 {
                        saved.insert(r, s.clone());
                    }
                    if ends.contains(&r) {
                        at_ends.push(s.clone());
                    }
                }
                Ok((outs, at_ends))
            })
            .collect::<candle_core::Result<_>>()?;
        for (hv, (outs, _)) in heads.iter().enumerate() {
            for (r, o) in outs.chunks_exact(dv).enumerate() {
                out[r * vd + hv * dv..r * vd + (hv + 1) * dv].copy_from_slice(o);
            }
        }
        // The states at the ends: the convolution's last inputs along the path, every head's state.
        let states = ends
            .iter()
            .enumerate()
            .map(|(e, &r)| {
                let mut conv = vec![0f32; rows * c];
                for m in 0..rows {
                    conv[(rows - 1 - m) * c..(rows - m) * c].copy_from_slice(tap(r, m));
                }
                let s = heads.iter().flat_map(|(_, at)| at[e].iter().copied()).collect();
                State { conv, s }
            })
            .collect();
        Ok(states)
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
