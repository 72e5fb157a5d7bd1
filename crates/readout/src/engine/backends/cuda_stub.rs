//! The CUDA backend when the binary is built without the `cuda` feature: the same functions as
//! `backends/cuda`, so that the engine calls them without `cfg`. No CUDA device or tensor can
//! exist in such a build (candle's own CUDA backend is a stub then too), so the launches are
//! never reached; they answer as candle does, with `NotCompiledWithCudaSupport`.

use super::{HeadsLayout, SegmentAttention};
use candle_core::{CudaStorage, Device, Layout, Shape, Tensor};

/// Whether this build has the CUDA backend.
pub(crate) const BUILT: bool = false;

/// What `--device cuda` gets from this build.
pub(crate) fn new_device() -> std::result::Result<Device, String> {
    Err("this binary was built without the `cuda` feature; rebuild with `cargo build --release --features cuda`".into())
}

pub(crate) fn free_memory(_dev: &Device) -> Option<u64> {
    None
}

pub(crate) fn bind_to_thread(_dev: &Device) {}

pub(crate) fn peak_memory(_dev: &Device) -> Option<u64> {
    None
}

pub(crate) fn name(_dev: &Device) -> Option<String> {
    None
}

pub(crate) fn set_tf32(_dev: &Device, _tf32: bool) {}

type Input<'a> = (&'a CudaStorage, &'a Layout);

pub(crate) fn add_rms_norm(_eps: f32, _x: Input, _y: Input, _w: Input) -> candle_core::Result<(CudaStorage, Shape)> {
    Err(candle_core::Error::NotCompiledWithCudaSupport)
}

pub(crate) fn qkv_heads(
    _layout: &HeadsLayout,
    _norms: (Option<&Tensor>, Option<&Tensor>),
    _qkv: Input,
    _cos: Input,
    _sin: Input,
) -> candle_core::Result<(CudaStorage, Shape)> {
    Err(candle_core::Error::NotCompiledWithCudaSupport)
}

pub(crate) fn gated(_s: &CudaStorage, _l: &Layout, _gelu: bool) -> candle_core::Result<(CudaStorage, Shape)> {
    Err(candle_core::Error::NotCompiledWithCudaSupport)
}

pub(crate) fn tree_attention(
    _segs: &[SegmentAttention],
    _tensor_cores: bool,
    _heads: (usize, usize, usize),
    _q: Input,
    _k: Input,
    _v: Input,
) -> candle_core::Result<(CudaStorage, Shape)> {
    Err(candle_core::Error::NotCompiledWithCudaSupport)
}

pub(crate) fn bf16_product(_x: Input, _w: Input) -> candle_core::Result<(CudaStorage, Shape)> {
    Err(candle_core::Error::NotCompiledWithCudaSupport)
}
