//! The KV cache as an immutable snapshot. A `Prefix` holds the keys and values of every token
//! computed so far, as a chain of reference-counted chunks (one per computed segment); extending
//! it adds a chunk and leaves the parent intact, so one prefix (the system turn and shots, or a
//! state) can carry many suffixes and be rolled back to for free, and the children of a prefix
//! share its chunks instead of copying them. That is what bounds the cache's memory when a
//! whole run's prompt tree is scored: a pending node holds only its own tokens' keys and values.

use candle_core::Tensor;
use std::sync::Arc;

/// Keys and values of one layer, shaped `[kv_heads, tokens, head_dim]`.
#[derive(Clone, Debug)]
pub struct LayerKv {
    pub k: Tensor,
    pub v: Tensor,
}

/// The keys and values of a run of consecutive tokens, every layer.
#[derive(Debug)]
pub(crate) struct Chunk {
    pub layers: Vec<LayerKv>,
    pub len: usize,
}

/// A computed prefix: its tokens and the chunks of keys and values that cover them, in order.
#[derive(Clone, Debug, Default)]
pub struct Prefix {
    pub(crate) chunks: Vec<Arc<Chunk>>,
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

    /// Whether `other` is this very prefix: the same chunks (shared, not equal copies).
    pub(crate) fn same_as(&self, other: &Prefix) -> bool {
        self.tokens.len() == other.tokens.len()
            && self.chunks.len() == other.chunks.len()
            && self.chunks.iter().zip(&other.chunks).all(|(a, b)| Arc::ptr_eq(a, b))
    }

    /// Bytes of key/value storage this snapshot refers to (f32), shared chunks included.
    pub fn bytes(&self) -> usize {
        self.chunks.iter().flat_map(|c| c.layers.iter()).map(|l| (l.k.elem_count() + l.v.elem_count()) * 4).sum()
    }

    /// This prefix followed by `tokens`, whose keys and values are `layers` (`[kv_heads, n, hd]`).
    pub(crate) fn push(&self, layers: Vec<LayerKv>, tokens: &[u32]) -> Prefix {
        let mut chunks = self.chunks.clone();
        if !tokens.is_empty() {
            chunks.push(Arc::new(Chunk { layers, len: tokens.len() }));
        }
        let mut all = self.tokens.clone();
        all.extend_from_slice(tokens);
        Prefix { chunks, tokens: all }
    }

    /// Keys and values of layer `li` over the whole prefix followed by `k`, `v` (the new
    /// tokens'), in one concatenation: the attention of a pass needs exactly this.
    pub(crate) fn layer_then(&self, li: usize, k: &Tensor, v: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        if self.chunks.is_empty() {
            return Ok((k.clone(), v.clone()));
        }
        let mut ks: Vec<&Tensor> = self.chunks.iter().map(|c| &c.layers[li].k).collect();
        let mut vs: Vec<&Tensor> = self.chunks.iter().map(|c| &c.layers[li].v).collect();
        ks.push(k);
        vs.push(v);
        Ok((Tensor::cat(&ks, 1)?, Tensor::cat(&vs, 1)?))
    }

    /// The snapshot of the first `keep` tokens (views; nothing is recomputed).
    pub fn truncated(&self, keep: usize) -> crate::error::Result<Prefix> {
        if keep >= self.len() {
            return Ok(self.clone());
        }
        let mut chunks = Vec::new();
        let mut have = 0;
        for c in &self.chunks {
            if have + c.len <= keep {
                chunks.push(c.clone());
                have += c.len;
                continue;
            }
            let take = keep - have;
            if take > 0 {
                let layers = c
                    .layers
                    .iter()
                    .map(|l| Ok(LayerKv { k: l.k.narrow(1, 0, take)?, v: l.v.narrow(1, 0, take)? }))
                    .collect::<candle_core::Result<Vec<_>>>()?;
                chunks.push(Arc::new(Chunk { layers, len: take }));
            }
            break;
        }
        Ok(Prefix { chunks, tokens: self.tokens[..keep].to_vec() })
    }
}
