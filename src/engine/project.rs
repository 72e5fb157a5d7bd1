//! The CPU projections `x · Wᵀ` (q, k, v, o, gate, up, down) through `gemm` directly, with the
//! weight as gemm's left operand.
//!
//! Why it is ours: candle hands `gemm` the activations as the left operand, stored by rows. For
//! such an operand `gemm` packs the whole of it on the calling thread before any worker starts,
//! and candle zero-fills every output first; on the readout's passes (about a thousand rows
//! against weights of 576 to 3072 columns) those two serial steps left one of two cores idle a
//! tenth of the run. Here the weight is kept transposed (`[in, out]`, once at load), so that for
//! `gemm` it is a column-major left operand, which it packs inside the parallel workers; the
//! product is written straight into a fresh buffer (`gemm` writes every element, so nothing is
//! zeroed first). The sums per output element run over the input dimension in the same order
//! as before.

use super::fused::f32_slice;
use candle_core::{CpuStorage, CustomOp2, Layout, Shape, Tensor};

/// `x [rows, in] · wt [in, out] -> [rows, out]` on CPU, both f32.
pub(crate) fn project(x: &Tensor, wt: &Tensor) -> candle_core::Result<Tensor> {
    x.apply_op2_no_bwd(wt, &Project)
}

struct Project;

impl CustomOp2 for Project {
    fn name(&self) -> &'static str {
        "readout-project"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "projection activations")?;
        let wt = f32_slice(s2, l2, "projection weights")?;
        let (rows, k) = l1.shape().dims2()?;
        let (k2, out) = l2.shape().dims2()?;
        if k != k2 || k == 0 {
            candle_core::bail!("projection: activations [{rows}, {k}] do not match weights [{k2}, {out}]");
        }
        let mut dst: Vec<f32> = Vec::with_capacity(rows * out);
        let threads = candle_core::utils::get_num_threads();
        let parallelism = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
        // SAFETY: dst has room for rows * out elements; gemm's m = out, n = rows, k = k, with
        // element (i, j) of dst at j * out + i (row j of the product), of lhs (the weight, i-th
        // output, kk-th input) at kk * out + i, of rhs (x transposed) at j * k + kk: all in
        // bounds of the slices above. With read_dst false and k > 0 gemm writes every element
        // of dst before the length is set.
        unsafe {
            gemm::gemm(
                out,
                rows,
                k,
                dst.as_mut_ptr(),
                out as isize,
                1,
                false,
                wt.as_ptr(),
                out as isize,
                1,
                x.as_ptr(),
                k as isize,
                1,
                0.0,
                1.0,
                false,
                false,
                false,
                parallelism,
            );
            dst.set_len(rows * out);
        }
        Ok((CpuStorage::F32(dst), Shape::from((rows, out))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn equals_a_hand_computed_product() -> candle_core::Result<()> {
        // x = [[1, 2], [3, 4], [5, 6]], W = [[1, 0], [0, 1], [1, 1]] ([out=3, in=2]).
        let x = Tensor::new(&[[1f32, 2.], [3., 4.], [5., 6.]], &Device::Cpu)?;
        let w = Tensor::new(&[[1f32, 0.], [0., 1.], [1., 1.]], &Device::Cpu)?;
        let y = project(&x, &w.t()?.contiguous()?)?;
        assert_eq!(y.to_vec2::<f32>()?, vec![vec![1., 2., 3.], vec![3., 4., 7.], vec![5., 6., 11.]]);
        Ok(())
    }

    #[test]
    fn equals_candles_matmul_on_projection_shapes() -> candle_core::Result<()> {
        for (rows, k, out) in [(2, 576, 960), (37, 576, 1536), (300, 1536, 576), (1030, 64, 48)] {
            let x = Tensor::randn(0f32, 1., (rows, k), &Device::Cpu)?;
            let w = Tensor::randn(0f32, 1., (out, k), &Device::Cpu)?;
            let ours = project(&x, &w.t()?.contiguous()?)?.to_vec2::<f32>()?;
            let theirs = x.matmul(&w.t()?)?.to_vec2::<f32>()?;
            for (a, b) in ours.iter().flatten().zip(theirs.iter().flatten()) {
                assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b} at {rows}x{k}x{out}");
            }
        }
        Ok(())
    }

    #[test]
    fn mismatched_shapes_are_an_error() -> candle_core::Result<()> {
        let x = Tensor::zeros((2, 3), candle_core::DType::F32, &Device::Cpu)?;
        let wt = Tensor::zeros((4, 5), candle_core::DType::F32, &Device::Cpu)?;
        assert!(project(&x, &wt).is_err());
        Ok(())
    }
}
