//! The kernels under the model, by device. Why apart from the model: the model says what a
//! layer computes; how each step runs on a device (our CPU loops and panels, our CUDA kernels,
//! or candle's ops) is decided below it, and the CUDA code is compiled only with the `cuda`
//! feature, gated here at the module rather than inside functions.
//! - `cpu`: the CPU's projections, integer kernel and fused SIMD loops;
//! - `cuda` (the `cuda` feature; `cuda_stub` otherwise): the CUDA device and our kernels'
//!   launches, their CUDA C in `cuda/kernels/`;
//! - `ops`: the candle ops the model calls whatever the device, each with a CPU forward (the
//!   CPU's own, or the reference its CUDA kernel is checked against) and a CUDA forward;
//! - `route`: which of those (and of the CPU's) runs on a device, or candle's own ops instead:
//!   the one place that is decided, so that no op is reached where it has no forward (Metal).
//!
//! The plain values the ops hand to the launches are defined here, below both.

pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
#[cfg(not(feature = "cuda"))]
pub(crate) mod cuda_stub;
#[cfg(not(feature = "cuda"))]
pub(crate) use cuda_stub as cuda;
pub(crate) mod ops;
pub(crate) mod route;

use candle_core::Tensor;

/// One segment of a pass as the attention kernel sees it (`ops::tree_attention`).
pub(crate) struct SegmentAttention {
    /// Its first token's row in the pass, and its token count.
    pub offset: usize,
    pub len: usize,
    /// The cached prefix's keys and values, chunk after chunk (the cache's chain, read where it
    /// lies: no joining copy), each `[kv_heads, len, head_dim]` with its tokens' rows contiguous
    /// (a view across heads is fine); empty: no past.
    pub past: Vec<(Tensor, Tensor)>,
    /// The additive mask, `[len, past + len]`.
    pub mask: Tensor,
}

/// What the q, k and v heads op (`ops::qkv_heads`) does to a layer's joint product besides the
/// norms: its heads, their width, RoPE's pairing, the query scale and the norms' epsilon.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeadsLayout {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// RoPE rotates pairs `(2i, 2i + 1)` (llama's) rather than `(i, i + head_dim / 2)`.
    pub interleaved: bool,
    /// Multiplies q after RoPE (attention's scale, applied once to the queries).
    pub q_scale: f32,
    pub eps: f32,
}
