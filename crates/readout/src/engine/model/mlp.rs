//! The MLP block: gate and up as one product, the gated activation (SwiGLU; Gemma 3's GELU in
//! its tanh form), the down projection, and Gemma 3's norm after it.

use super::linear::{Joined, Linear};
use super::norm::{self, RmsNorm};
use crate::engine::backends::ops;
use candle_core::Tensor;

/// A layer's MLP block.
pub(crate) struct Mlp {
    /// gate and up as one product: `[rows, 2 · intermediate]`.
    pub gate_up: Joined,
    pub down: Linear,
    /// Gemma 3: the norm of the MLP's output, before it joins the residual.
    pub post_norm: Option<RmsNorm>,
    /// GELU's tanh form gates the product (Gemma 3) instead of SiLU.
    pub gelu: bool,
}

impl Mlp {
    /// The block on its normed input `xn`. `ours`: the activation as our op (on the CPU its
    /// fused loop, with the fused kernels one CUDA kernel); candle's ops otherwise.
    pub(crate) fn forward(&self, xn: &Tensor, ours: bool) -> candle_core::Result<Tensor> {
        let gate_up = self.gate_up.forward(xn)?; // [S, 2·ff]
        let ff = gate_up.dim(1)? / 2;
        let act = match (self.gelu, ours) {
            (false, true) => ops::swiglu(&gate_up)?,
            (true, true) => ops::geglu(&gate_up)?,
            (false, false) => (candle_nn::ops::silu(&gate_up.narrow(1, 0, ff)?)? * gate_up.narrow(1, ff, ff)?)?,
            // candle's `gelu` is the tanh approximation.
            (true, false) => (gate_up.narrow(1, 0, ff)?.gelu()? * gate_up.narrow(1, ff, ff)?)?,
        };
        let out = self.down.forward(&act)?;
        norm::maybe(self.post_norm.as_ref(), out)
    }
}
