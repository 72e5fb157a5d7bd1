//! RMSNorm, the one norm of the families Readout runs: before each block, after each block in
//! Gemma 3, on Qwen3's and Gemma 3's q and k heads, and before the LM head. Its own block so that
//! the residual add and the norm after it can run as one fused kernel where that is asked for.

use crate::engine::backends::ops;
use candle_core::Tensor;

/// RMSNorm over the last dimension: each row divided by its root mean square (`eps` inside the
/// root), times `weight` (candle's `rms_norm`).
pub(crate) struct RmsNorm {
    pub weight: Tensor,
    pub eps: f32,
}

impl RmsNorm {
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::rms_norm(x, &self.weight, self.eps)
    }

    /// `x + y` and its norm: the residual stream after a block's output joins it, and the next
    /// block's input. One kernel with the fused kernels (`fused`); candle's add and norm otherwise.
    pub(crate) fn add_forward(&self, x: &Tensor, y: &Tensor, fused: bool) -> candle_core::Result<(Tensor, Tensor)> {
        if fused {
            return ops::add_rms_norm(x, y, &self.weight, self.eps);
        }
        let sum = (x + y)?;
        let normed = self.forward(&sum)?;
        Ok((sum, normed))
    }
}

/// `x` through `norm` when there is one (Gemma 3's norms after attention and after the MLP).
pub(crate) fn maybe(norm: Option<&RmsNorm>, x: Tensor) -> candle_core::Result<Tensor> {
    match norm {
        Some(n) => n.forward(&x),
        None => Ok(x),
    }
}
