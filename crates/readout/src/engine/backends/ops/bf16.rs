//! A projection in bf16 with an f32 result (`--precision bf16` on a GPU): `x` rounded to bf16,
//! multiplied by bf16 weights, the products summed in f32 and returned in f32, in one op (on CUDA
//! one cast and one cuBLAS call, `backends/cuda/gemm.rs`). Why an op: candle's bf16 matmul rounds
//! its result to bf16, and the casts around it are launches of their own. The CPU forward is the
//! reference the CUDA one is checked against (`tests/all/engine.rs`, on the GPU); the CPU path
//! of the model never takes it (bf16 is a GPU's precision).

use crate::engine::backends::cuda;
use candle_core::{CpuStorage, CudaStorage, CustomOp2, Layout, Shape, Tensor};

/// `x [rows, k]` (f32) · `w [n, k]ᵀ` (bf16) → `[rows, n]` (f32).
pub(crate) fn bf16_product(x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
    x.contiguous()?.apply_op2_no_bwd(&w.contiguous()?, &Bf16Product)
}

struct Bf16Product;

impl CustomOp2 for Bf16Product {
    fn name(&self) -> &'static str {
        "readout-bf16-product"
    }

    /// The reference: each input value rounded to bf16, each product and sum in f32.
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (&[rows, k], &[n, k2]) = (l1.dims(), l2.dims()) else {
            candle_core::bail!("bf16 product: x {:?} and w {:?} are not matrices", l1.dims(), l2.dims())
        };
        let (Some((xa, xb)), Some((wa, wb)), true) = (l1.contiguous_offsets(), l2.contiguous_offsets(), k == k2) else {
            candle_core::bail!("bf16 product: x {:?} and w {:?} must be contiguous and agree", l1.dims(), l2.dims())
        };
        let (CpuStorage::F32(x), CpuStorage::BF16(w)) = (s1, s2) else {
            candle_core::bail!("bf16 product: x must be f32 and w bf16")
        };
        let x: Vec<f32> = x[xa..xb].iter().map(|&v| half::bf16::from_f32(v).to_f32()).collect();
        let w = &w[wa..wb];
        let mut out = vec![0f32; rows * n];
        for (r, o) in out.chunks_mut(n.max(1)).enumerate() {
            let xr = &x[r * k..(r + 1) * k];
            for (j, v) in o.iter_mut().enumerate() {
                *v = xr.iter().zip(&w[j * k..(j + 1) * k]).map(|(a, b)| a * b.to_f32()).sum();
            }
        }
        Ok((CpuStorage::F32(out), Shape::from((rows, n))))
    }

    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        cuda::bf16_product((s1, l1), (s2, l2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    #[test]
    fn the_reference_rounds_the_input_to_bf16_and_sums_in_f32() -> candle_core::Result<()> {
        // 1 + 2^-9 rounds to 1 in bf16 (8 bits of mantissa), 3 stays 3; w = [2, 0.5].
        let x = Tensor::new(&[[1.0f32 + 1.0 / 512.0, 3.0]], &Device::Cpu)?;
        let w = Tensor::new(&[[2.0f32, 0.5]], &Device::Cpu)?.to_dtype(DType::BF16)?;
        let y = bf16_product(&x, &w)?.to_vec2::<f32>()?;
        assert_eq!(y, vec![vec![2.0 + 1.5]]);
        Ok(())
    }
}
