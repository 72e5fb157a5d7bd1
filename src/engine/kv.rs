//! The KV cache as an immutable snapshot. A `Prefix` holds the keys and values of every token
//! computed so far; extending it makes a new snapshot and leaves the parent intact, so one
//! prefix (the system turn and shots, or a state) can carry many suffixes and be rolled back to
//! for free. Tensors are reference-counted: a snapshot shares nothing it does not need to copy.

use candle_core::Tensor;

/// Keys and values of one layer, shaped `[kv_heads, tokens, head_dim]`.
#[derive(Clone, Debug)]
pub struct LayerKv {
    pub k: Tensor,
    pub v: Tensor,
}

/// A computed prefix: its tokens and, per layer, their keys and values.
#[derive(Clone, Debug, Default)]
pub struct Prefix {
    pub(crate) layers: Vec<LayerKv>,
    pub(crate) tokens: Vec<u32>,
}

impl Prefix {
    /// The empty prefix: nothing computed yet.
    pub fn empty() -> Self {
        Prefix::default()
    }

    /// Tokens held.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The token ids this prefix was computed from.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Bytes of key/value storage this snapshot holds (f32).
    pub fn bytes(&self) -> usize {
        self.layers.iter().map(|l| (l.k.elem_count() + l.v.elem_count()) * 4).sum()
    }
}

impl Prefix {
    /// The snapshot of the first `keep` tokens (a view; nothing is recomputed).
    pub fn truncated(&self, keep: usize) -> crate::error::Result<Prefix> {
        if keep >= self.len() {
            return Ok(self.clone());
        }
        let layers = self
            .layers
            .iter()
            .map(|l| Ok(LayerKv { k: l.k.narrow(1, 0, keep)?, v: l.v.narrow(1, 0, keep)? }))
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Prefix { layers, tokens: self.tokens[..keep].to_vec() })
    }
}
