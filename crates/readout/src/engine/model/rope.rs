//! RoPE: the rotation of q and k by each token's position. Its tables are made for each pass
//! from the pass's positions (positions are arbitrary per token: a tree's branches restart
//! where they leave their parent), the global layers' and, for Gemma 3, the local layers' own.

use crate::engine::config::ModelConfig;
use candle_core::{Device, Tensor};

/// A model's RoPE: the inverse frequencies of its layers and the scaling of their positions.
pub(crate) struct Rope {
    /// The global layers' inverse frequencies ([`frequencies`]), divided by Llama 3's factors
    /// when the model has them.
    pub inv: Vec<f32>,
    /// The local layers', when the model has some (Gemma 3): their own base, never scaled.
    pub local_inv: Option<Vec<f32>>,
    /// What the global layers' positions are multiplied by (Gemma 3's linear scaling); `None`:
    /// unscaled.
    pub scale: Option<f32>,
}

/// RoPE's inverse frequencies, `θ^(-2i/d)` for each of the `head_dim / 2` pairs.
pub(crate) fn frequencies(theta: f32, head_dim: usize) -> Vec<f32> {
    let half = head_dim / 2;
    (0..half).map(|i| 1.0 / theta.powf(2.0 * i as f32 / head_dim as f32)).collect()
}

impl Rope {
    /// The RoPE `cfg` describes.
    pub(crate) fn new(cfg: &ModelConfig) -> Self {
        // Qwen3.5 turns the first `rotary_dim` dimensions of each head, with their own frequencies.
        let turned = cfg.hybrid.as_ref().map_or(cfg.head_dim, |h| h.rotary_dim);
        let mut inv = frequencies(cfg.rope_theta, turned);
        // Llama 3's scaling divides each pair's frequency by its factor, as llama.cpp's rope does.
        if let Some(f) = &cfg.rope_factors {
            for (inv, f) in inv.iter_mut().zip(f) {
                *inv /= f;
            }
        }
        let local_inv = cfg.gemma.as_ref().map(|g| frequencies(g.rope_local_theta, cfg.head_dim));
        let scale = cfg.gemma.as_ref().map(|g| g.rope_global_scale).filter(|&s| s != 1.0);
        Rope { inv, local_inv, scale }
    }

    /// The tables of a pass's `positions`: the global layers', and the local layers' when the
    /// model has local layers (`local`).
    pub(crate) fn rows(&self, positions: &[u32], local: bool, device: &Device) -> candle_core::Result<RopeRows> {
        let global = rows(&self.inv, positions, self.scale, device)?;
        let local = match &self.local_inv {
            Some(inv) if local => Some(rows(inv, positions, None, device)?),
            _ => None,
        };
        Ok(RopeRows { global, local })
    }
}

/// cos and sin of a pass's angles, `[positions, head_dim / 2]` each.
pub(crate) struct RopeRows {
    global: (Tensor, Tensor),
    local: Option<(Tensor, Tensor)>,
}

impl RopeRows {
    /// The tables a layer rotates by: the local ones for a local layer of a model that has them.
    pub(crate) fn for_layer(&self, local: bool) -> (&Tensor, &Tensor) {
        match (&self.local, local) {
            (Some((c, s)), true) => (c, s),
            _ => (&self.global.0, &self.global.1),
        }
    }
}

/// cos and sin of every position's angles, `[positions, head_dim / 2]`: made for each pass
/// (a table for the whole context would hold 20 MB for Qwen3's 40k positions). `scale`
/// multiplies the positions (linear RoPE scaling; `None`: unscaled).
fn rows(inv: &[f32], positions: &[u32], scale: Option<f32>, device: &Device) -> candle_core::Result<(Tensor, Tensor)> {
    let half = inv.len();
    let mut cos = Vec::with_capacity(positions.len() * half);
    let mut sin = Vec::with_capacity(positions.len() * half);
    for &p in positions {
        let p = match scale {
            Some(s) => p as f32 * s,
            None => p as f32,
        };
        for f in inv {
            let a = p * f;
            cos.push(a.cos());
            sin.push(a.sin());
        }
    }
    let n = positions.len();
    Ok((Tensor::from_vec(cos, (n, half), device)?, Tensor::from_vec(sin, (n, half), device)?))
}
