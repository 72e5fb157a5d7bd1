//! The launch of the tree-attention kernel (`backends/ops/tree_attention.rs`'s op,
//! `kernels/tree_attention.cu`): every segment of a pass against its cached prefix, read where the
//! cache holds it, and its own tokens, one launch a layer.

use crate::engine::backends::SegmentAttention;
use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaView, DevicePtr, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::{CudaStorage, CudaStorageSlice, WrapErr};
use candle_core::{Layout, Shape, Storage, Tensor};
use std::sync::OnceLock;

const SOURCE: &str = include_str!("kernels/tree_attention.cu");
const MODULE: &str = "readout_tree_attention";
/// The kernel with its products on the tensor cores (`--precision tf32|bf16`).
const SOURCE_TC: &str = include_str!("kernels/tree_attention_tc.cu");
const MODULE_TC: &str = "readout_tree_attention_tc";
/// Query vectors a block of the tensor-core kernel (4 warps of one m16 tile each).
const TILE_TC: usize = 64;
/// The kernel keeps `head_dim / 32` sums per lane in registers, at most 8.
const MAX_HEAD_DIM: usize = 256;
/// Warps a block (the kernel's `__launch_bounds__` allow 4), query vectors a warp (`QPW`)
/// and keys a chunk (`BC`), as in kernels/tree_attention.cu.
const WARPS: usize = 4;
/// u64s a past chunk takes in the table (kernels/tree_attention.cu).
const CHUNK_ENTRIES: usize = 6;
const PER_WARP: usize = 8;
const CHUNK: usize = 32;

/// The kernel made for head dims up to 64, 128 or 256 (the per-lane sums are unrolled).
fn function(hd: usize) -> &'static str {
    match hd {
        0..=64 => "tree_attention_f32_d64",
        65..=128 => "tree_attention_f32_d128",
        _ => "tree_attention_f32_d256",
    }
}

/// The tensor-core kernel of a head dim [`tensor_cores_take`] allows.
fn function_tc(hd: usize) -> &'static str {
    if hd == 64 {
        "tree_attention_tf32_d64"
    } else {
        "tree_attention_tf32_d128"
    }
}

/// A block's shared memory: its query vectors and a chunk's keys in padded rows, the chunk's
/// values, and its probabilities (kernels/tree_attention.cu).
fn shared_bytes(hd: usize) -> usize {
    let m = WARPS * PER_WARP;
    4 * (m * (hd + 4) + CHUNK * (hd + 4) + CHUNK * hd + m * CHUNK)
}

/// The tensor-core kernel's: its 64 query vectors and a chunk's keys in rows of `hd + 4`, the
/// chunk's values in rows of `hd + 8`, each warp's probabilities (kernels/tree_attention_tc.cu).
fn shared_bytes_tc(hd: usize) -> usize {
    4 * (TILE_TC * (hd + 4) + CHUNK * (hd + 4) + CHUNK * (hd + 8) + TILE_TC * (CHUNK + 4))
}

/// The kernel's PTX, compiled by NVRTC once per process.
fn ptx() -> candle_core::Result<&'static str> {
    static PTX: OnceLock<Result<String, String>> = OnceLock::new();
    super::ptx(&PTX, SOURCE, "the tree-attention kernel")
}

/// The tensor-core kernel's PTX, for compute capability 8.0 and later (mma.sync's TF32 form).
fn ptx_tc() -> candle_core::Result<&'static str> {
    static PTX: OnceLock<Result<String, String>> = OnceLock::new();
    super::ptx_for(&PTX, SOURCE_TC, "the tree-attention kernel on the tensor cores", Some("compute_80"))
}

/// Whether the tensor-core kernel runs on this device: a head dim it is made for (64 or 128)
/// on a GPU of compute capability 8.0 or later (A100, H100, H200, …); else the f32 kernel runs.
fn tensor_cores_take(hd: usize, stream: &candle_core::cuda_backend::cudarc::driver::CudaStream) -> bool {
    static AMPERE_OR_LATER: OnceLock<bool> = OnceLock::new();
    let recent =
        *AMPERE_OR_LATER.get_or_init(|| stream.context().compute_capability().is_ok_and(|(major, _)| major >= 8));
    recent && (hd == 64 || hd == 128)
}

/// A contiguous f32 CUDA tensor's device address (its view's first element).
fn address(t: &Tensor, stream: &candle_core::cuda_backend::cudarc::driver::CudaStream) -> candle_core::Result<u64> {
    let (storage, layout) = t.storage_and_layout();
    if !layout.is_contiguous() {
        candle_core::bail!("tree attention: a mask is not contiguous")
    }
    cuda_address(&storage, layout.start_offset(), stream)
}

fn cuda_address(
    storage: &Storage,
    start: usize,
    stream: &candle_core::cuda_backend::cudarc::driver::CudaStream,
) -> candle_core::Result<u64> {
    let Storage::Cuda(cs) = storage else { candle_core::bail!("tree attention: a tensor is not on the CUDA device") };
    let slice = cs.as_cuda_slice::<f32>()?;
    let (ptr, _sync) = slice.device_ptr(stream);
    Ok(ptr + (start * 4) as u64)
}

/// A cached chunk `[kv_heads, len, hd]` as the kernel reads it in place: the address of its
/// first element and the stride between heads (elements); `None` when its layout is not
/// rows of `hd` contiguous floats at 16-byte boundaries (the caller copies it then).
fn chunk_view(
    t: &Tensor,
    hd: usize,
    stream: &candle_core::cuda_backend::cudarc::driver::CudaStream,
) -> candle_core::Result<Option<(u64, u64)>> {
    let (storage, layout) = t.storage_and_layout();
    let (dims, stride) = (layout.dims(), layout.stride());
    if dims.len() != 3 || dims[2] != hd || stride[2] != 1 || (dims[1] > 1 && stride[1] != hd) || stride[0] % 4 != 0 {
        return Ok(None);
    }
    let ptr = cuda_address(&storage, layout.start_offset(), stream)?;
    Ok((ptr % 16 == 0).then_some((ptr, stride[0] as u64)))
}

/// A contiguous f32 input of the op as a view, checked to start on a 16-byte boundary.
fn view<'a>(st: &'a CudaStorage, l: &Layout) -> candle_core::Result<CudaView<'a, f32>> {
    let Some((a, b)) = l.contiguous_offsets() else {
        candle_core::bail!("tree attention: its inputs must be contiguous")
    };
    if a % 4 != 0 {
        candle_core::bail!("tree attention: an input starts off a 16-byte boundary");
    }
    Ok(st.as_cuda_slice::<f32>()?.slice(a..b))
}

/// The launch of `ops::tree_attention`: `q [heads, S, hd]`, `k`, `v` `[kv_heads, S, hd]` of the
/// pass, each of `segs` against its past and its own tokens, as `[S, heads, hd]`; `tensor_cores`:
/// the products in TF32 on the tensor cores where the device and head dim allow.
pub(crate) fn tree_attention(
    segs: &[SegmentAttention],
    tensor_cores: bool,
    (h, kvh, hd): (usize, usize, usize),
    (s1, l1): (&CudaStorage, &Layout),
    (s2, l2): (&CudaStorage, &Layout),
    (s3, l3): (&CudaStorage, &Layout),
) -> candle_core::Result<(CudaStorage, Shape)> {
    let dev = s1.device().clone();
    let stream = dev.cuda_stream();
    let s = l1.dims()[1];
    if hd % 4 != 0 || hd > MAX_HEAD_DIM {
        candle_core::bail!("tree attention: head_dim {hd} (the kernel takes multiples of 4 up to {MAX_HEAD_DIM})");
    }
    let (q, k, v) = (view(s1, l1)?, view(s2, l2)?, view(s3, l3)?);
    // The segments' table, each tile's segment and first query vector, then the past chunks
    // (layout in kernels/tree_attention.cu). The cached tensors live in the op (the caller's), which
    // outlives the launch; their memory is freed, if at all, in stream order after it. A
    // chunk the kernel cannot read in place (not rows of hd floats on 16-byte boundaries) is
    // copied, and the copy kept alive to the end of this call's stream work by `copies`.
    let group = h / kvh;
    let tc = tensor_cores && tensor_cores_take(hd, &stream);
    let tile = if tc { TILE_TC } else { WARPS * PER_WARP };
    let mut table: Vec<u64> = Vec::with_capacity(segs.len() * 6 + (s * group).div_ceil(tile) + segs.len());
    let mut chunks: Vec<u64> = Vec::new();
    let mut copies: Vec<Tensor> = Vec::new();
    for g in segs {
        let first = chunks.len() / CHUNK_ENTRIES;
        let mut past = 0usize;
        for (pk, pv) in &g.past {
            let len = pk.dim(1)?;
            let mut view = |t: &Tensor| -> candle_core::Result<(u64, u64)> {
                if let Some(v) = chunk_view(t, hd, &stream)? {
                    return Ok(v);
                }
                let c = t.contiguous()?;
                let v = chunk_view(&c, hd, &stream)?;
                copies.push(c);
                v.ok_or_else(|| {
                    candle_core::Error::Msg("tree attention: a cached chunk starts off a 16-byte boundary".into())
                })
            };
            let (kp, ks) = view(pk)?;
            let (vp, vs) = view(pv)?;
            chunks.extend([kp, vp, past as u64, len as u64, ks, vs]);
            past += len;
        }
        let mask = address(&g.mask, &stream)?;
        let n_chunks = chunks.len() / CHUNK_ENTRIES - first;
        table.extend([g.offset as u64, g.len as u64, past as u64, first as u64, n_chunks as u64, mask]);
    }
    let mut tiles = 0u32;
    for (i, g) in segs.iter().enumerate() {
        for first in (0..g.len * group).step_by(tile) {
            table.push(((i as u64) << 32) | first as u64);
            tiles += 1;
        }
    }
    table.extend(chunks);
    // SAFETY: every element is written by the kernel (each segment's token and head by the
    // tile holding it), and a pass has at least one token.
    let out = unsafe { dev.alloc::<f32>(s * h * hd)? };
    if tiles == 0 {
        return Ok((CudaStorage { slice: CudaStorageSlice::F32(out), device: dev }, Shape::from((s, h, hd))));
    }
    // From page-locked memory: queued like a kernel, never waiting for the layers before it.
    let table = super::upload::upload_u64(&stream, &table)?;
    let (func, shared) = match tc {
        true => (dev.get_or_load_custom_func(function_tc(hd), MODULE_TC, ptx_tc()?)?, shared_bytes_tc(hd)),
        false => (dev.get_or_load_custom_func(function(hd), MODULE, ptx()?)?, shared_bytes(hd)),
    };
    if shared > 48 * 1024 {
        use candle_core::cuda_backend::cudarc::driver::sys::CUfunction_attribute;
        func.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32).w()?;
    }
    let cfg = LaunchConfig {
        grid_dim: (tiles, kvh as u32, 1),
        block_dim: ((32 * WARPS) as u32, 1, 1),
        shared_mem_bytes: shared as u32,
    };
    let mut b = func.builder();
    b.arg(&q);
    b.arg(&k);
    b.arg(&v);
    b.arg(&out);
    b.arg(&table);
    let (n_segs, s_i, h_i, kvh_i, hd_i) = (segs.len() as i32, s as i32, h as i32, kvh as i32, hd as i32);
    b.arg(&n_segs);
    b.arg(&s_i);
    b.arg(&h_i);
    b.arg(&kvh_i);
    b.arg(&hd_i);
    // SAFETY: the arguments match the kernel's signature; the table's addresses point into
    // tensors that stay allocated (see above).
    unsafe { b.launch(cfg) }.w()?;
    // Copies are freed in stream order, after the kernel that reads them.
    drop(copies);
    Ok((CudaStorage { slice: CudaStorageSlice::F32(out), device: dev }, Shape::from((s, h, hd))))
}
