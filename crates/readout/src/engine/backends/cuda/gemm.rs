//! The launch of `ops::bf16_product`: a projection in bf16 on the tensor cores with f32 sums
//! and an f32 result (`--precision bf16`), as one cast and one cuBLAS call.
//!
//! Why it exists: candle's bf16 matmul writes a bf16 result, so a bf16 projection of f32
//! activations was three launches (the input cast, the product, the cast of its result back to
//! f32) and its result rounded to bf16. cuBLAS's `GemmEx` reads bf16 operands and writes f32:
//! one launch fewer a projection, and the sums keep f32's precision.

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::cublas::{result::gemm_ex, sys};
use candle_core::cuda_backend::cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::{CudaStorage, CudaStorageSlice, WrapErr};
use candle_core::{Layout, Shape};

/// Threads a block of the cast.
const THREADS: u32 = 256;

/// `x [rows, k]` (f32) times `w [n, k]ᵀ` (bf16) → `[rows, n]` f32: `x` rounded to bf16, products
/// summed in f32 (`CUBLAS_COMPUTE_32F`).
pub(crate) fn bf16_product(
    (s1, l1): (&CudaStorage, &Layout),
    (s2, l2): (&CudaStorage, &Layout),
) -> candle_core::Result<(CudaStorage, Shape)> {
    let dev = s1.device().clone();
    let (&[rows, k], &[n, k2]) = (l1.dims(), l2.dims()) else {
        candle_core::bail!("bf16 product: x {:?} and w {:?} are not matrices", l1.dims(), l2.dims())
    };
    if k != k2 {
        candle_core::bail!("bf16 product: x has {k} columns, w {k2}");
    }
    let (Some((xa, xb)), Some((wa, wb))) = (l1.contiguous_offsets(), l2.contiguous_offsets()) else {
        candle_core::bail!("bf16 product: x and w must be contiguous")
    };
    let x = s1.as_cuda_slice::<f32>()?.slice(xa..xb);
    let w = s2.as_cuda_slice::<half::bf16>()?.slice(wa..wb);
    let stream = dev.cuda_stream();
    // SAFETY: the cast writes every element, the product every element of `out`.
    let mut xh = unsafe { dev.alloc::<u16>(rows * k)? };
    let mut out = unsafe { dev.alloc::<f32>(rows * n)? };
    if rows * n == 0 {
        return Ok((CudaStorage { slice: CudaStorageSlice::F32(out), device: dev }, Shape::from((rows, n))));
    }
    let func = dev.get_or_load_custom_func("f32_to_bf16", super::fused::MODULE, super::fused::ptx()?)?;
    let total = (rows * k) as i64;
    let grid = u32::try_from((rows * k).div_ceil(THREADS as usize).min(65_535 * 8)).unwrap_or(65_535);
    let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
    let mut b = func.builder();
    b.arg(&x);
    b.arg(&mut xh);
    b.arg(&total);
    // SAFETY: the arguments match the kernel's signature; `xh` holds rows · k values.
    unsafe { b.launch(cfg) }.w()?;
    let int = |v: usize| {
        i32::try_from(v).map_err(|_| candle_core::Error::Msg(format!("bf16 product: {v} is too large for cuBLAS")))
    };
    let (m_, n_, k_) = (int(n)?, int(rows)?, int(k)?);
    let (alpha, beta) = (1f32, 0f32);
    let blas = dev.cublas_handle();
    {
        let (wp, _gw) = w.device_ptr(&stream);
        let (xp, _gx) = xh.device_ptr(&stream);
        let (op, _go) = out.device_ptr_mut(&stream);
        // Column-major: outᵀ [n, rows] = w [k, n]ᵀ · xhᵀ [k, rows].
        // SAFETY: the pointers hold the sizes given (w: n · k, xh: rows · k, out: rows · n) on
        // the stream cuBLAS's handle is bound to; alpha and beta are f32, as COMPUTE_32F reads them.
        unsafe {
            gemm_ex(
                *blas.handle(),
                sys::cublasOperation_t::CUBLAS_OP_T,
                sys::cublasOperation_t::CUBLAS_OP_N,
                m_,
                n_,
                k_,
                (&alpha as *const f32).cast(),
                wp as *const _,
                sys::cudaDataType_t::CUDA_R_16BF,
                k_,
                xp as *const _,
                sys::cudaDataType_t::CUDA_R_16BF,
                k_,
                (&beta as *const f32).cast(),
                op as *mut _,
                sys::cudaDataType_t::CUDA_R_32F,
                m_,
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT_TENSOR_OP,
            )
        }
        .map_err(|e| candle_core::Error::Msg(format!("bf16 product: cuBLAS GemmEx: {e:?}")))?;
    }
    drop(xh);
    Ok((CudaStorage { slice: CudaStorageSlice::F32(out), device: dev }, Shape::from((rows, n))))
}
