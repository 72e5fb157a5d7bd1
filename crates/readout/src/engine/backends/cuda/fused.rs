//! The launches of the fused element-wise kernels (`backends/ops/fused.rs`'s ops): the residual
//! add with its RMSNorm, a layer's q, k and v heads (norms, RoPE, query scale) and the gated
//! MLP activation, each one launch of `kernels/fused.cu`.

use crate::engine::backends::HeadsLayout;
use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaView, DevicePtr, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::{CudaDevice, CudaStorage, CudaStorageSlice, WrapErr};
use candle_core::{Layout, Shape, Storage, Tensor};
use std::sync::OnceLock;

const SOURCE: &str = include_str!("kernels/fused.cu");
pub(super) const MODULE: &str = "readout_fused";
/// Threads a block of the add-and-norm kernel (one block a row).
const NORM_THREADS: u32 = 256;
/// Warps a block of the heads kernel (one warp a head of a token).
const HEAD_WARPS: u32 = 4;
/// The heads kernel stages a head's values in shared memory: at most this many.
const MAX_HEAD_DIM: usize = 1024;

/// The kernels' PTX, compiled by NVRTC once per process.
pub(super) fn ptx() -> candle_core::Result<&'static str> {
    static PTX: OnceLock<Result<String, String>> = OnceLock::new();
    super::ptx(&PTX, SOURCE, "the fused kernels")
}

/// A contiguous f32 input of an op as a view.
fn view<'a>(st: &'a CudaStorage, l: &Layout, what: &str) -> candle_core::Result<CudaView<'a, f32>> {
    let Some((a, b)) = l.contiguous_offsets() else { candle_core::bail!("{what} must be contiguous") };
    Ok(st.as_cuda_slice::<f32>()?.slice(a..b))
}

/// A held f32 CUDA tensor's device address (0 for none): the norms' weights. The tensors are
/// the layer's, alive past the launch.
fn address(t: Option<&Tensor>, dev: &CudaDevice) -> candle_core::Result<u64> {
    let Some(t) = t else { return Ok(0) };
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cuda(cs) = &*storage else { candle_core::bail!("a norm weight is not on the CUDA device") };
    let Some((start, _)) = layout.contiguous_offsets() else { candle_core::bail!("a norm weight is not contiguous") };
    let stream = dev.cuda_stream();
    let (ptr, _sync) = cs.as_cuda_slice::<f32>()?.device_ptr(&stream);
    Ok(ptr + (start * 4) as u64)
}

fn blocks(n: usize, per: usize) -> candle_core::Result<u32> {
    u32::try_from(n.div_ceil(per))
        .map_err(|_| candle_core::Error::Msg(format!("{n} values are too many for one launch")))
}

/// The launch of `ops::add_rms_norm`: `x + y` and its RMSNorm by `w` (`eps` inside the root),
/// `[2, ..x]`.
pub(crate) fn add_rms_norm(
    eps: f32,
    (s1, l1): (&CudaStorage, &Layout),
    (s2, l2): (&CudaStorage, &Layout),
    (s3, l3): (&CudaStorage, &Layout),
) -> candle_core::Result<(CudaStorage, Shape)> {
    let dev = s1.device().clone();
    let (x, y, w) =
        (view(s1, l1, "add and norm: x")?, view(s2, l2, "add and norm: y")?, view(s3, l3, "add and norm: weight")?);
    let d = l3.dims()[0];
    let n = l1.shape().elem_count();
    let rows = n / d.max(1);
    let mut dims = vec![2];
    dims.extend_from_slice(l1.dims());
    // SAFETY: the kernel writes every element (each row's sum and normed values).
    let out = unsafe { dev.alloc::<f32>(2 * n)? };
    if rows > 0 {
        let func = dev.get_or_load_custom_func("add_rms_norm_f32", MODULE, ptx()?)?;
        let cfg =
            LaunchConfig { grid_dim: (blocks(rows, 1)?, 1, 1), block_dim: (NORM_THREADS, 1, 1), shared_mem_bytes: 0 };
        let (rows_i, d_i) = (rows as i32, d as i32);
        let mut b = func.builder();
        b.arg(&x);
        b.arg(&y);
        b.arg(&w);
        b.arg(&out);
        b.arg(&rows_i);
        b.arg(&d_i);
        b.arg(&eps);
        // SAFETY: the arguments match the kernel's signature and sizes.
        unsafe { b.launch(cfg) }.w()?;
    }
    Ok((CudaStorage { slice: CudaStorageSlice::F32(out), device: dev }, Shape::from(dims)))
}

/// The launch of `ops::qkv_heads`: the joint q, k, v product `[S, (heads + 2·kv_heads)·hd]`
/// heads first, q and k normed (by `norms`, where the model has them) and rotated, q scaled.
pub(crate) fn qkv_heads(
    layout: &HeadsLayout,
    (q_norm, k_norm): (Option<&Tensor>, Option<&Tensor>),
    (s1, l1): (&CudaStorage, &Layout),
    (s2, l2): (&CudaStorage, &Layout),
    (s3, l3): (&CudaStorage, &Layout),
) -> candle_core::Result<(CudaStorage, Shape)> {
    let dev = s1.device().clone();
    let (h, kvh, hd) = (layout.heads, layout.kv_heads, layout.head_dim);
    if hd > MAX_HEAD_DIM {
        candle_core::bail!("q, k and v heads: head_dim {hd} (the kernel takes up to {MAX_HEAD_DIM})");
    }
    let (qkv, cos, sin) = (view(s1, l1, "q, k and v")?, view(s2, l2, "RoPE cos")?, view(s3, l3, "RoPE sin")?);
    let s = l1.dims()[0];
    let all = h + 2 * kvh;
    let (qn, kn) = (address(q_norm, &dev)?, address(k_norm, &dev)?);
    // SAFETY: the kernel writes every element (each head of each token, one warp a row).
    let out = unsafe { dev.alloc::<f32>(all * s * hd)? };
    if s > 0 {
        let func = dev.get_or_load_custom_func("qkv_heads_f32", MODULE, ptx()?)?;
        let cfg = LaunchConfig {
            grid_dim: (blocks(all * s, HEAD_WARPS as usize)?, 1, 1),
            block_dim: (32 * HEAD_WARPS, 1, 1),
            shared_mem_bytes: (HEAD_WARPS as usize * hd * 4) as u32,
        };
        let (s_i, h_i, kvh_i, hd_i, il) = (s as i32, h as i32, kvh as i32, hd as i32, layout.interleaved as i32);
        let mut b = func.builder();
        b.arg(&qkv);
        b.arg(&cos);
        b.arg(&sin);
        b.arg(&qn);
        b.arg(&kn);
        b.arg(&out);
        b.arg(&s_i);
        b.arg(&h_i);
        b.arg(&kvh_i);
        b.arg(&hd_i);
        b.arg(&il);
        b.arg(&layout.q_scale);
        b.arg(&layout.eps);
        // SAFETY: the arguments match the kernel's signature and sizes; the norms' addresses
        // point into the op's tensors (0 where the model has none), alive past the launch.
        unsafe { b.launch(cfg) }.w()?;
    }
    Ok((CudaStorage { slice: CudaStorageSlice::F32(out), device: dev }, Shape::from((all, s, hd))))
}

/// The launch of `ops::swiglu` (`gelu` false) and `ops::geglu` (`gelu` true): the joint
/// `[rows, 2·ff]` gate-and-up product to `[rows, ff]`.
pub(crate) fn gated(s: &CudaStorage, l: &Layout, gelu: bool) -> candle_core::Result<(CudaStorage, Shape)> {
    let dev = s.device().clone();
    let (rows, both) = l.shape().dims2()?;
    if both % 2 != 0 || both == 0 {
        candle_core::bail!("gated activation: a row of gate and up has {both} values, not an even number");
    }
    let ff = both / 2;
    let gu = view(s, l, "gate and up")?;
    // SAFETY: the kernel writes every element (one thread a value, grid-stride).
    let out = unsafe { dev.alloc::<f32>(rows * ff)? };
    if rows > 0 {
        let func = dev.get_or_load_custom_func("gated_f32", MODULE, ptx()?)?;
        let cfg = LaunchConfig {
            grid_dim: (blocks(rows * ff, 256)?.min(65_535), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let (rows_i, ff_i, gelu_i) = (rows as i32, ff as i32, gelu as i32);
        let mut b = func.builder();
        b.arg(&gu);
        b.arg(&out);
        b.arg(&rows_i);
        b.arg(&ff_i);
        b.arg(&gelu_i);
        // SAFETY: the arguments match the kernel's signature and sizes.
        unsafe { b.launch(cfg) }.w()?;
    }
    Ok((CudaStorage { slice: CudaStorageSlice::F32(out), device: dev }, Shape::from((rows, ff))))
}
