//! The KV cache as an immutable snapshot. A `Prefix` holds the keys and values of every token
//! computed so far, as a chain of reference-counted chunks (one per computed segment); extending
//! it adds a chunk and leaves the parent intact, so one prefix (the system turn and shots, or a
//! state) can carry many suffixes and be rolled back to for free, and the children of a prefix
//! share its chunks instead of copying them. That is what bounds the cache's memory when a
//! whole run's prompt tree is scored: a pending node holds only its own tokens' keys and values.

use candle_core::{CpuStorage, DType, Device, Storage, Tensor};
use std::sync::{Arc, Mutex, OnceLock};

/// Keys and values of one layer, shaped `[kv_heads, tokens, head_dim]`: f32, or on the CPU f16
/// (`--kv-cache f16`, half the memory; [`Prefix::layer_then`] widens them back for attention).
/// A recurrent layer (Qwen3.5's Gated DeltaNet) keeps its state at the chunk's end instead: `k`
/// the convolution's last inputs `[kernel − 1, channels]`, `v` the state `[heads, key_dim,
/// value_dim]`, f32.
#[derive(Clone, Debug)]
pub struct LayerKv {
    pub k: Tensor,
    pub v: Tensor,
}

impl LayerKv {
    /// Whether this is a recurrent layer's state (its `k` has two dimensions, not three).
    pub(crate) fn is_recurrent(&self) -> bool {
        self.k.rank() == 2
    }
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
    /// The chunks joined into one tensor per layer, made when a pass asks for it (see
    /// [`Prefix::layer_then`]); shared by the clones of this prefix.
    joined: Arc<JoinedKv>,
}

/// A prefix's chunks joined, layer by layer as the forward pass reaches them.
#[derive(Debug, Default)]
struct JoinedKv {
    layers: Mutex<Vec<Option<LayerKv>>>,
    /// All layers joined: the one chunk a child of this prefix starts from.
    whole: OnceLock<Arc<Chunk>>,
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

    /// Bytes of key/value storage this snapshot refers to, shared chunks and the joined copy
    /// included.
    pub fn bytes(&self) -> usize {
        let size = |l: &LayerKv| (l.k.elem_count() + l.v.elem_count()) * l.k.dtype().size_in_bytes();
        let joined: usize = match self.joined.layers.lock() {
            Ok(layers) => layers.iter().flatten().map(size).sum(),
            Err(_) => 0,
        };
        self.chunks.iter().flat_map(|c| c.layers.iter()).map(size).sum::<usize>() + joined
    }

    /// This prefix followed by `tokens`, whose keys and values are `layers` (`[kv_heads, n, hd]`).
    /// When this prefix's chunks have been joined (a GPU pass used it as a parent), the child
    /// starts from the joined chunk: chains stay two chunks deep.
    pub(crate) fn push(&self, layers: Vec<LayerKv>, tokens: &[u32]) -> Prefix {
        let mut chunks = match self.joined.whole.get() {
            Some(whole) => vec![whole.clone()],
            None => self.chunks.clone(),
        };
        if !tokens.is_empty() {
            chunks.push(Arc::new(Chunk { layers, len: tokens.len() }));
        }
        let mut all = self.tokens.clone();
        all.extend_from_slice(tokens);
        Prefix { chunks, tokens: all, joined: Arc::default() }
    }

    /// Keys and values of layer `li` over the whole prefix followed by `k`, `v` (the new
    /// tokens'), in one concatenation: the attention of a pass needs exactly this.
    ///
    /// With `join`, a prefix of several chunks joins them once per layer and keeps the result
    /// (later passes on this prefix, and its children, start from it), so a pass concatenates
    /// two pieces instead of the whole chain. On a GPU every piece is a kernel launch, and the
    /// chains of a run's prompt tree are five to seven chunks deep; the price is one more copy
    /// of a parent's keys and values while it or a child is alive. The values are the same
    /// either way (a concatenation only copies).
    pub(crate) fn layer_then(
        &self,
        li: usize,
        k: &Tensor,
        v: &Tensor,
        join: bool,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        if self.chunks.is_empty() {
            return Ok((k.clone(), v.clone()));
        }
        if join && self.chunks.len() > 1 {
            let past = self.joined_layer(li)?;
            return Ok((Tensor::cat(&[&past.k, k], 1)?, Tensor::cat(&[&past.v, v], 1)?));
        }
        let mut ks: Vec<&Tensor> = self.chunks.iter().map(|c| &c.layers[li].k).collect();
        let mut vs: Vec<&Tensor> = self.chunks.iter().map(|c| &c.layers[li].v).collect();
        ks.push(k);
        vs.push(v);
        Ok((cat_f32(&ks)?, cat_f32(&vs)?))
    }

    /// The keys and values of layer `li` for the whole prefix, `[kv_heads, len, head_dim]` each,
    /// chunk after chunk, as the cache holds them (views, nothing copied); empty for an empty
    /// prefix. For the attention kernel, which reads a chain in place.
    pub(crate) fn layer_chunks(&self, li: usize) -> Vec<(Tensor, Tensor)> {
        self.chunks.iter().map(|c| (c.layers[li].k.clone(), c.layers[li].v.clone())).collect()
    }

    /// Layer `li` of this prefix's chunks joined into one (made on first use, then kept).
    fn joined_layer(&self, li: usize) -> candle_core::Result<LayerKv> {
        let n_layers = self.chunks.first().map_or(0, |c| c.layers.len());
        let mut layers =
            self.joined.layers.lock().map_err(|_| candle_core::Error::Msg("the KV cache lock was poisoned".into()))?;
        if layers.len() < n_layers {
            layers.resize(n_layers, None);
        }
        if let Some(Some(done)) = layers.get(li) {
            return Ok(done.clone());
        }
        let ks: Vec<&Tensor> = self.chunks.iter().map(|c| &c.layers[li].k).collect();
        let vs: Vec<&Tensor> = self.chunks.iter().map(|c| &c.layers[li].v).collect();
        let joined = LayerKv { k: Tensor::cat(&ks, 1)?, v: Tensor::cat(&vs, 1)? };
        if let Some(slot) = layers.get_mut(li) {
            *slot = Some(joined.clone());
        }
        if layers.iter().all(Option::is_some) {
            let whole = Chunk { layers: layers.iter().flatten().cloned().collect(), len: self.len() };
            let _ = self.joined.whole.set(Arc::new(whole));
        }
        Ok(joined)
    }

    /// Layer `li`'s recurrent state at this prefix's end (a recurrent layer's, in its last
    /// chunk: each chunk's state takes in every token before it); `None` for the empty prefix.
    pub(crate) fn recurrent(&self, li: usize) -> Option<&LayerKv> {
        self.chunks.last().and_then(|c| c.layers.get(li))
    }

    /// The snapshot of the first `keep` tokens (views; nothing is recomputed). A recurrent
    /// model's prefix can be cut only at the end of one of its chunks (a state is kept there
    /// alone); elsewhere the cut is refused.
    pub fn truncated(&self, keep: usize) -> crate::error::Result<Prefix> {
        if keep >= self.len() {
            return Ok(self.clone());
        }
        if self.chunks.iter().any(|c| c.layers.iter().any(LayerKv::is_recurrent)) {
            let mut have = 0;
            let mut chunks = Vec::new();
            for c in &self.chunks {
                if have + c.len > keep {
                    break;
                }
                chunks.push(c.clone());
                have += c.len;
            }
            if have != keep {
                return Err(crate::error::Error::Candle(candle_core::Error::Msg(format!(
                    "a recurrent model's prefix is cut at {keep} tokens, where it keeps no state (its states lie at the ends of the passes that made it); compute the prefix anew"
                ))));
            }
            return Ok(Prefix { chunks, tokens: self.tokens[..have].to_vec(), joined: Arc::default() });
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
        Ok(Prefix { chunks, tokens: self.tokens[..keep].to_vec(), joined: Arc::default() })
    }
}

/// `parts` (each `[kv_heads, n_i, head_dim]`, f32 or f16, on the CPU) joined along the token
/// axis, as f32: an f16 cache is widened in the one copy the concatenation makes anyway. It reads
/// the CPU's storage: an f16 cache exists only where `backends/route.rs` routes it (the CPU).
fn cat_f32(parts: &[&Tensor]) -> candle_core::Result<Tensor> {
    if parts.iter().all(|p| p.dtype() == DType::F32) {
        return Tensor::cat(parts, 1);
    }
    use half::slice::HalfFloatSliceExt;
    let (heads, _, hd) = parts[0].dims3()?;
    let lens = parts.iter().map(|p| p.dim(1)).collect::<candle_core::Result<Vec<_>>>()?;
    let total: usize = lens.iter().sum();
    let mut out = vec![0f32; heads * total * hd];
    let mut at = 0;
    for (p, &n) in parts.iter().zip(&lens) {
        let p = p.contiguous()?;
        let (storage, layout) = p.storage_and_layout();
        let start = layout.start_offset();
        for h in 0..heads {
            let dst = &mut out[(h * total + at) * hd..][..n * hd];
            let from = start + h * n * hd..start + (h + 1) * n * hd;
            match &*storage {
                Storage::Cpu(CpuStorage::F16(src)) => src[from].convert_to_f32_slice(dst),
                Storage::Cpu(CpuStorage::F32(src)) => dst.copy_from_slice(&src[from]),
                _ => candle_core::bail!("the KV cache holds f16 or f32 keys and values on the CPU"),
            }
        }
        at += n;
    }
    Tensor::from_vec(out, (heads, total, hd), &Device::Cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_f16_cache_is_widened_where_it_is_joined() {
        let a = Tensor::new(&[[[1f32, 2.], [3., 4.]], [[5., 6.], [7., 8.]]], &Device::Cpu).unwrap(); // [2, 2, 2]
        let b = Tensor::new(&[[[0.1f32, 0.2]], [[0.3, 0.4]]], &Device::Cpu).unwrap(); // [2, 1, 2]
        let joined = cat_f32(&[&a.to_dtype(DType::F16).unwrap(), &b]).unwrap();
        let want = Tensor::cat(&[&a, &b], 1).unwrap();
        assert_eq!(joined.to_vec3::<f32>().unwrap(), want.to_vec3::<f32>().unwrap());
        // A narrowed (non-contiguous) part, as `truncated` leaves them.
        let c = a.to_dtype(DType::F16).unwrap().narrow(1, 0, 1).unwrap();
        let joined = cat_f32(&[&c, &b]).unwrap();
        assert_eq!(
            joined.to_vec3::<f32>().unwrap(),
            vec![vec![vec![1., 2.], vec![0.1, 0.2]], vec![vec![5., 6.], vec![0.3, 0.4]]]
        );
    }
}
