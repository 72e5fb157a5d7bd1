//! The projections: a weight matrix `[out, in]` held in the form the chosen path multiplies
//! with (f32 panels or the file's encoding on the CPU, f32 or bf16 or candle's quantised form on
//! a GPU), and projections of one input joined into one product. Apart from the blocks because
//! every block multiplies through it, and the choice of kernel for a weight is made once, here,
//! at load.

use crate::engine::backends::cpu::int8::{self, Integer, Kernel, Width};
use crate::engine::backends::cpu::project;
use crate::engine::backends::route::{self, DeviceKind, Op, Quantised};
use crate::engine::options::MatmulPath;
use crate::engine::weights::{Encoded, Stacked};
use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Module, Tensor};
use std::sync::Arc;

/// candle's quantised matmul of `e` on `device` (native weights on a GPU, the `quantized` and
/// `auto` matmul paths), as [`route::quantised`] says for its encoding: candle's kernels over a
/// copy of the bytes, or, for F32, F16 and BF16, the weight decoded to f32 here (the values
/// candle's `QMatMul::from_arc` would make on the device, without the bytes' trip there; and
/// never a BF16 tensor through candle's Metal kernels, which read it as f16). An encoding with no
/// kernel on the device is refused ([`route::NoKernel`]).
pub(crate) fn quantised_matmul(e: &Encoded, device: &Device) -> candle_core::Result<QMatMul> {
    // (Blocks with f32 scales, which candle's kernels cannot hold, are decoded to f32.)
    if e.has_f32_scales() {
        return Ok(QMatMul::Tensor(e.to_dense(device)?));
    }
    match route::quantised(e.dtype(), DeviceKind::of(device)).map_err(candle_core::Error::wrap)? {
        Quantised::Kernel => QMatMul::from_arc(Arc::new(e.to_qtensor(device)?)),
        Quantised::DenseF32 => Ok(QMatMul::Tensor(e.to_dense(device)?)),
    }
}

/// How the weights are to be held: the matmul path, whether they stay in the file's encoding,
/// and the width of the activations the integer kernel multiplies them with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hold {
    pub matmul: MatmulPath,
    /// Keep the file's encoding (the resolved `--weights native`).
    pub native: bool,
    /// 8-bit activations for the integer kernel (`--int8-activations`) instead of 16-bit.
    pub int8_activations: bool,
    /// The integer kernel's instructions (the resolved `--cpu-kernel`).
    pub kernel: Kernel,
    /// Dense weights held in bf16 and multiplied in bf16 (`--precision bf16`, a GPU's).
    pub bf16: bool,
}

impl Hold {
    /// Native weights multiplied by our panels, decoded as they go (`route::Op::ProjectEncoded`:
    /// the CPU's, with the dense path); elsewhere native weights are candle's quantised ones.
    fn encoded_panels(&self, device: DeviceKind) -> candle_core::Result<bool> {
        Ok(self.native && self.matmul == MatmulPath::Dense && route::uses(Op::ProjectEncoded, device, false)?)
    }

    /// Native weights kept for candle's quantised matmul whatever the path: where our panels
    /// do not multiply them (a GPU).
    fn native_quantised(&self, device: DeviceKind) -> candle_core::Result<bool> {
        Ok(self.native && !route::uses(Op::ProjectEncoded, device, false)?)
    }

    /// The integer kernel's activation width and instructions for `w`, where the CPU and the
    /// encodings allow it.
    fn integer(&self, w: &Stacked) -> Option<Integer> {
        let width = if self.int8_activations { Width::I8 } else { Width::I16 };
        int8::ready(w, self.kernel).then_some(Integer { width, kernel: self.kernel })
    }
}

/// A weight matrix `[out, in]` in the forms the chosen path needs.
pub(crate) struct Linear {
    /// f32: `[out, in]` on a GPU; on the CPU in panels of 64 outputs (see
    /// `backends/cpu/project.rs`).
    dense: Option<Tensor>,
    /// The file's encoding, decoded panel by panel as it multiplies (CPU, native weights), and
    /// the activation width when through the integer kernel.
    encoded: Option<(Stacked, Option<Integer>)>,
    quant: Option<QMatMul>,
    /// The number of outputs, when `dense` is in panels (CPU).
    panels_out: Option<usize>,
}

impl Linear {
    pub(crate) fn new(w: LoadedWeight, hold: &Hold, device: &Device) -> candle_core::Result<Self> {
        let kind = DeviceKind::of(device);
        let (dense, quant) = match w {
            LoadedWeight::Dense(t) => (Some(t.to_dtype(DType::F32)?), None),
            LoadedWeight::Encoded(e) if hold.encoded_panels(kind)? => {
                let w = Stacked::new(vec![e])?;
                let integer = hold.integer(&w);
                return Ok(Linear { dense: None, encoded: Some((w, integer)), quant: None, panels_out: None });
            }
            LoadedWeight::Encoded(e) => {
                // Native weights on a GPU are candle's quantised ones, whatever the path.
                let path = if hold.native_quantised(kind)? { MatmulPath::Quantized } else { hold.matmul };
                let dense = match path {
                    MatmulPath::Quantized => None,
                    _ => Some(e.to_dense(device)?),
                };
                let quant = match path {
                    MatmulPath::Dense => None,
                    _ => Some(quantised_matmul(&e, device)?),
                };
                (dense, quant)
            }
        };
        // f32 weights in our panels where our projection runs (the CPU), else candle's matmul
        // (in bf16 with `--precision bf16`, which only CUDA is let have).
        match dense {
            Some(w) if route::uses(Op::Project, kind, false)? => {
                project::read_panels_in_place();
                let out = w.dim(0)?;
                Ok(Linear { dense: Some(project::pack(&w)?), encoded: None, quant, panels_out: Some(out) })
            }
            Some(w) if hold.bf16 => {
                Ok(Linear { dense: Some(w.to_dtype(DType::BF16)?), encoded: None, quant, panels_out: None })
            }
            dense => Ok(Linear { dense, encoded: None, quant, panels_out: None }),
        }
    }

    /// `x [rows, in] -> [rows, out]`. A single row is multiplied as two (the copy dropped):
    /// alone it would take the matrix-vector kernel, whose sums round differently, and a token's
    /// numbers would depend on how many tokens share its pass.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let rows = x.dim(0)?;
        if let Some((w, integer)) = &self.encoded {
            return match rows {
                1 => project::project_encoded(&Tensor::cat(&[x, x], 0)?, w, *integer)?.narrow(0, 0, 1),
                _ => project::project_encoded(&x.contiguous()?, w, *integer),
            };
        }
        match (&self.dense, &self.quant) {
            (Some(_), Some(q)) if rows == 1 => q.forward(x),
            (Some(w), _) if rows == 1 => self.dense_product(&Tensor::cat(&[x, x], 0)?, w)?.narrow(0, 0, 1),
            (Some(w), _) => self.dense_product(x, w),
            (None, Some(q)) => q.forward(x),
            (None, None) => candle_core::bail!("linear layer holds no weights"),
        }
    }

    /// Projections of one input side by side along the output axis, as one product: for q, k
    /// and v, and for gate and up. One matmul of `rows × (their outputs together)` in place of
    /// several smaller ones: on a GPU fewer kernel launches, on a CPU fewer hand-offs between
    /// threads. Each output element is the same sum as in its own product, up to rounding
    /// (the CPU's panels of 64 outputs can fall differently). Native weights on the CPU are
    /// stacked where they lie in the file (no copy); f32 ones are put side by side at load;
    /// weights that keep candle's quantised form (a GPU's native weights, the quantised and auto
    /// paths) stay apart, and their products are put side by side after.
    pub(crate) fn join(ws: Vec<LoadedWeight>, hold: &Hold, device: &Device) -> candle_core::Result<Joined> {
        let kind = DeviceKind::of(device);
        let all_encoded = ws.iter().all(|w| matches!(w, LoadedWeight::Encoded(_)));
        if hold.encoded_panels(kind)? && all_encoded {
            let parts = ws
                .into_iter()
                .filter_map(|w| match w {
                    LoadedWeight::Encoded(e) => Some(e),
                    LoadedWeight::Dense(_) => None,
                })
                .collect();
            let w = Stacked::new(parts)?;
            let integer = hold.integer(&w);
            return Ok(Joined::One(Linear { dense: None, encoded: Some((w, integer)), quant: None, panels_out: None }));
        }
        let keeps_quant = (hold.matmul != MatmulPath::Dense || hold.native_quantised(kind)?)
            && ws.iter().any(|w| matches!(w, LoadedWeight::Encoded(_)));
        if keeps_quant || ws.len() < 2 {
            let parts = ws.into_iter().map(|w| Linear::new(w, hold, device)).collect::<candle_core::Result<_>>()?;
            return Ok(Joined::Apart(parts));
        }
        let dense = ws.into_iter().map(|w| w.into_dense(device)).collect::<candle_core::Result<Vec<_>>>()?;
        let joined = Tensor::cat(&dense, 0)?; // [out₁ + out₂ + …, in]
        drop(dense);
        Ok(Joined::One(Linear::new(LoadedWeight::Dense(joined), hold, device)?))
    }

    fn dense_product(&self, x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
        match self.panels_out {
            Some(out) => project::project(&x.contiguous()?, w, out),
            // bf16 weights (`--precision bf16`): the input rounded to bf16, the products summed in
            // f32; on CUDA one op with an f32 result (elsewhere candle's, its result rounded to bf16).
            None if w.dtype() == DType::BF16 => {
                match route::uses(Op::Bf16Product, DeviceKind::of(w.device()), false)? {
                    true => crate::engine::backends::ops::bf16_product(x, w),
                    false => x.to_dtype(DType::BF16)?.matmul(&w.t()?)?.to_dtype(DType::F32),
                }
            }
            None => x.matmul(&w.t()?),
        }
    }
}

/// Projections of the same input computed as one ([`Linear::join`]).
pub(crate) enum Joined {
    One(Linear),
    Apart(Vec<Linear>),
}

impl Joined {
    /// `x [rows, in] -> [rows, out₁ + out₂ + …]`, the parts' outputs side by side.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Joined::One(l) => l.forward(x),
            Joined::Apart(parts) => {
                let outs = parts.iter().map(|p| p.forward(x)).collect::<candle_core::Result<Vec<_>>>()?;
                Tensor::cat(&outs, 1)
            }
        }
    }
}

/// A tensor as it came out of the file: f32 in memory, or a view of the file's bytes.
pub(crate) enum LoadedWeight {
    Dense(Tensor),
    Encoded(Encoded),
}

impl LoadedWeight {
    pub(crate) fn into_dense(self, device: &Device) -> candle_core::Result<Tensor> {
        match self {
            LoadedWeight::Dense(t) => t.to_dtype(DType::F32),
            LoadedWeight::Encoded(e) if e.dims()[0] == 1 => e.to_dense(device)?.squeeze(0),
            LoadedWeight::Encoded(e) => e.to_dense(device),
        }
    }
    pub(crate) fn dims(&self) -> Vec<usize> {
        match self {
            LoadedWeight::Dense(t) => t.dims().to_vec(),
            LoadedWeight::Encoded(e) if e.dims()[0] == 1 => vec![e.dims()[1]],
            LoadedWeight::Encoded(e) => e.dims().to_vec(),
        }
    }
}

impl Linear {
    /// The integer kernel's activation width and instructions, when it multiplies this weight.
    pub(crate) fn integer(&self) -> Option<Integer> {
        self.encoded.as_ref().and_then(|(_, w)| *w)
    }
}

impl Joined {
    pub(crate) fn integer(&self) -> Option<Integer> {
        match self {
            Joined::One(l) => l.integer(),
            Joined::Apart(parts) => parts.iter().find_map(Linear::integer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_projections_equal_the_parts_side_by_side() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::randn(0f32, 1., (7, 24), &dev)?;
        let ws: Vec<Tensor> =
            [16, 8, 8].iter().map(|&o| Tensor::randn(0f32, 1., (o, 24), &dev)).collect::<Result<_, _>>()?;
        let hold = Hold {
            matmul: MatmulPath::Dense,
            native: false,
            int8_activations: false,
            kernel: Kernel::Avx512,
            bf16: false,
        };
        let lin = |w: &Tensor| Linear::new(LoadedWeight::Dense(w.clone()), &hold, &dev);
        let apart: Vec<Tensor> = ws.iter().map(|w| lin(w)?.forward(&x)).collect::<Result<_, _>>()?;
        let want = Tensor::cat(&apart, 1)?.to_vec2::<f32>()?;
        let loaded = ws.iter().map(|w| LoadedWeight::Dense(w.clone())).collect();
        let joined = Linear::join(loaded, &hold, &dev)?;
        assert!(matches!(joined, Joined::One(_)), "dense weights are joined into one product");
        let got = joined.forward(&x)?.to_vec2::<f32>()?;
        for (a, b) in got.iter().flatten().zip(want.iter().flatten()) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
        }
        // A single row (the path that multiplies it as two) gives the first row of the above.
        let one = joined.forward(&x.narrow(0, 0, 1)?)?.to_vec2::<f32>()?;
        for (a, b) in one[0].iter().zip(&want[0]) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
        }
        Ok(())
    }

    /// `bytes` as an encoded `[rows, cols]` weight in an anonymous map.
    fn encoded(bytes: &[u8], dtype: candle_core::quantized::GgmlDType, rows: usize, cols: usize) -> Encoded {
        let mut m = memmap2::MmapMut::map_anon(bytes.len()).unwrap();
        m.copy_from_slice(bytes);
        Encoded::new(Arc::new(m.make_read_only().unwrap()), 0, dtype, rows, cols).unwrap()
    }

    /// The quantised matmul of a weight as the route makes it: candle's kernels for the block
    /// encodings, f32 decoded at load for the float ones; either way the products candle's own
    /// `QMatMul::from_arc` gives (here on the CPU, where both exist).
    #[test]
    fn the_quantised_matmul_is_candle_s_for_every_encoding() -> candle_core::Result<()> {
        let (rows, cols) = (5, 256);
        let dev = Device::Cpu;
        let w = Tensor::randn(0f32, 1., (rows, cols), &dev)?;
        let x = Tensor::randn(0f32, 1., (3, cols), &dev)?;
        use candle_core::quantized::GgmlDType;
        for dtype in [GgmlDType::F32, GgmlDType::F16, GgmlDType::BF16, GgmlDType::Q4_0, GgmlDType::Q8_0, GgmlDType::Q4K]
        {
            let bytes = candle_core::quantized::QTensor::quantize(&w, dtype)?.data()?.to_vec();
            let e = encoded(&bytes, dtype, rows, cols);
            let ours = quantised_matmul(&e, &dev)?;
            let floats = matches!(dtype, GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16);
            assert_eq!(matches!(ours, QMatMul::Tensor(_)), floats, "{dtype:?}");
            assert_eq!(matches!(ours, QMatMul::QTensor(_)), !floats, "{dtype:?}");
            let candle = QMatMul::from_arc(Arc::new(e.to_qtensor(&dev)?))?;
            for x in [x.clone(), x.narrow(0, 0, 1)?] {
                let (a, b) = (ours.forward(&x)?.to_vec2::<f32>()?, candle.forward(&x)?.to_vec2::<f32>()?);
                assert_eq!(a, b, "{dtype:?}");
            }
        }
        Ok(())
    }
}
