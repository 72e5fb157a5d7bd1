//! The candle ops the model calls whatever the device: a layer's fused element-wise steps
//! (`fused`: the residual add with its norm, the q, k and v heads, the gated activations) and
//! a pass's attention in one kernel (`tree_attention`), a bf16 projection with an f32 result
//! (`bf16`). Each op's CPU forward is the CPU's own
//! loop or the reference its CUDA kernel is checked against, and its CUDA forward the launch in
//! `backends/cuda` (without the `cuda` feature, the stub's refusal, never reached). None has a
//! Metal forward: `backends/route.rs` decides where each runs, and on Metal none does.

mod bf16;
mod fused;
mod tree_attention;

pub(crate) use bf16::bf16_product;
pub(crate) use fused::{add_rms_norm, geglu, qkv_heads, swiglu, QkvSpec};
pub(crate) use tree_attention::tree_attention;
