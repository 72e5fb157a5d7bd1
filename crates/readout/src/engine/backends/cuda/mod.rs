//! The CUDA backend, built with the `cuda` feature (`backends/cuda_stub.rs` stands in for it
//! otherwise): the device (made, bound to threads, its memory read), cuBLAS's math mode, and the
//! launches of our kernels, whose CUDA C lives in `kernels/` and is compiled by NVRTC (which
//! candle's CUDA build already loads) once a process. Everything that names cudarc or candle's
//! CUDA types is here, so that the rest of the engine carries no `cfg` for it.

mod device;
mod fused;
mod gemm;
mod tree_attention;
mod upload;

pub(crate) use device::{bind_to_thread, free_memory, name, new_device, peak_memory};
pub(crate) use fused::{add_rms_norm, gated, qkv_heads};
pub(crate) use gemm::bf16_product;
pub(crate) use tree_attention::tree_attention;

use candle_core::Device;
use std::sync::OnceLock;

/// Whether this build has the CUDA backend.
pub(crate) const BUILT: bool = true;

/// Set cuBLAS's f32 math mode (TF32 or not) before a CUDA model's matmuls are queued; nothing
/// for another device. The mode is a process-wide setting in candle.
pub(crate) fn set_tf32(dev: &Device, tf32: bool) {
    if dev.is_cuda() {
        candle_core::cuda_backend::set_gemm_reduced_precision_f32(tf32);
    }
}

/// The PTX of a kernel source, compiled by NVRTC once a process (`cell` keeps it, or the
/// error); `what` names the kernels in the error.
fn ptx(cell: &'static OnceLock<Result<String, String>>, source: &str, what: &str) -> candle_core::Result<&'static str> {
    ptx_for(cell, source, what, None)
}

/// [`ptx`] for a virtual architecture (`compute_80`: instructions older GPUs lack), or NVRTC's
/// default.
fn ptx_for(
    cell: &'static OnceLock<Result<String, String>>,
    source: &str,
    what: &str,
    arch: Option<&'static str>,
) -> candle_core::Result<&'static str> {
    use candle_core::cuda_backend::cudarc::nvrtc;
    let made = cell.get_or_init(|| {
        nvrtc::compile_ptx_with_opts(source, nvrtc::CompileOptions { arch, ..Default::default() })
            .map(|p| p.to_src())
            .map_err(|e| format!("compiling {what} with NVRTC: {e:?}"))
    });
    match made {
        Ok(p) => Ok(p.as_str()),
        Err(e) => Err(candle_core::Error::Msg(e.clone())),
    }
}
