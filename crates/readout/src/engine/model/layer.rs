//! A decoder layer: the attention block (or Qwen3.5's Gated DeltaNet block) and the MLP block on
//! the residual stream, each after its norm. The residual add after a block and the norm of the next block's input are one step
//! ([`RmsNorm::add_forward`]), so a layer also makes the next layer's normed input.

use super::attention::Attention;
use super::delta::DeltaNet;
use super::mlp::Mlp;
use super::norm::RmsNorm;
use super::pass::Pass;
use crate::engine::kv::LayerKv;
use candle_core::Tensor;

/// What mixes a layer's tokens: attention over the keys and values of the path, or a recurrent
/// state stepped along it.
pub(crate) enum Mixer {
    Attention(Attention),
    Delta(DeltaNet),
}

/// One decoder layer.
pub(crate) struct Layer {
    pub attn_norm: RmsNorm,
    pub mixer: Mixer,
    pub ffn_norm: RmsNorm,
    pub mlp: Mlp,
}

/// What a layer hands on.
pub(crate) struct LayerOut {
    /// The residual stream after the layer.
    pub x: Tensor,
    /// The next layer's normed input, when the layer's last add made it.
    pub normed: Option<Tensor>,
    /// The layer's new keys and values, when the pass keeps some.
    pub kv: Option<LayerKv>,
}

impl Layer {
    /// Layer `li` of the pass on the residual stream `x`; `normed` is its normed input when the
    /// previous layer made it, `next` the next layer's input norm (`None` for the last layer,
    /// whose output norm is taken at the rows read: `Head`).
    pub(crate) fn forward(
        &self,
        pass: &Pass<'_>,
        li: usize,
        x: Tensor,
        normed: Option<Tensor>,
        next: Option<&RmsNorm>,
    ) -> candle_core::Result<LayerOut> {
        let xn = match normed {
            Some(xn) => xn,
            None => self.attn_norm.forward(&x)?,
        };
        let (out, kv) = match &self.mixer {
            Mixer::Attention(a) => a.forward(pass, li, &xn)?,
            Mixer::Delta(d) => d.forward(pass, li, &xn)?,
        };
        let (x, xn) = self.ffn_norm.add_forward(&x, &out, pass.fused)?;
        // Our activation on the CPU and with the fused kernels; candle's otherwise.
        let out = self.mlp.forward(&xn, pass.gated)?;
        let (x, normed) = match next {
            Some(norm) => {
                let (sum, xn) = norm.add_forward(&x, &out, pass.fused)?;
                (sum, Some(xn))
            }
            None => ((&x + out)?, None),
        };
        Ok(LayerOut { x, normed, kv })
    }
}
