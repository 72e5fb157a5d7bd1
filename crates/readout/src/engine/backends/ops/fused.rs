//! A layer's element-wise steps as one op each, for one CUDA launch each (`--fused-kernels on`).
//! Why they exist: on a GPU a pass's time is the host's time to queue its kernels (each of
//! candle's ops is a launch, ~11 µs of GPU work each on the readout's passes), and a layer spent
//! most of its launches on small element-wise steps:
//! - the residual add and the RMSNorm after it (two launches, twice a layer) →
//!   [`add_rms_norm`], one;
//! - the joint q, k, v product put heads first, Qwen3's and Gemma 3's q and k norms, RoPE on q
//!   and on k, and the query scale (four to six launches) → [`qkv_heads`], one;
//! - the gated MLP's `silu(gate) · up` (Gemma 3: GELU's tanh form) from the joint gate-and-up
//!   product (two launches) → [`swiglu`] and [`geglu`], one.
//!
//! Each op's CUDA forward is in `backends/cuda` (its kernels CUDA C, compiled by NVRTC once a
//! process, in the engine's warm-up pass at load). The CPU forward of SwiGLU and GeGLU is the
//! CPU's own fused loop (`backends/cpu/fused.rs`), which the model runs on the CPU; that of the
//! other two is their reference, checked below against the candle ops the model otherwise runs
//! (the CPU path of the model never uses them: it stays as it was, bit for bit). The GPU parity
//! test is `tests/all/engine.rs`'s `the_fused_kernels_give_the_unfused_path_s_probabilities`
//! (`READOUT_TEST_DEVICE=cuda`).

use crate::engine::backends::cpu;
use crate::engine::backends::{cuda, HeadsLayout};
use crate::engine::config::RopeStyle;
use candle_core::{CpuStorage, CudaStorage, CustomOp1, CustomOp3, Layout, Shape, Tensor};

/// `x + y` and `rms_norm(x + y) · w` (over the last dimension, as candle's `rms_norm`) in one
/// launch: the residual stream after a block's output joins it, and the next block's input.
pub(crate) fn add_rms_norm(x: &Tensor, y: &Tensor, w: &Tensor, eps: f32) -> candle_core::Result<(Tensor, Tensor)> {
    let d = x.dim(candle_core::D::Minus1)?;
    if x.dims() != y.dims() || w.dims() != [d] {
        candle_core::bail!("add and norm: x {:?}, y {:?}, weight {:?} do not match", x.dims(), y.dims(), w.dims());
    }
    let both = x.apply_op3_no_bwd(y, w, &AddRmsNorm { eps })?; // [2, ..x]
    Ok((both.get(0)?, both.get(1)?))
}

struct AddRmsNorm {
    eps: f32,
}

/// The f32 elements of a contiguous CPU tensor.
fn contiguous<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> candle_core::Result<&'a [f32]> {
    cpu::fused::f32_slice(s, l, what)
}

impl CustomOp3 for AddRmsNorm {
    fn name(&self) -> &'static str {
        "readout-add-rms-norm"
    }

    /// The reference: the sum, then candle's CPU `rms_norm` of it (sum of squares in order,
    /// divided by the width, `+ eps`, square root; each value divided by it, times the weight).
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, y, w) = (
            contiguous(s1, l1, "add and norm: x")?,
            contiguous(s2, l2, "add and norm: y")?,
            contiguous(s3, l3, "add and norm: weight")?,
        );
        let d = w.len().max(1);
        let n = x.len();
        let mut out = vec![0f32; 2 * n];
        let (sum, normed) = out.split_at_mut(n);
        for ((s, o), (xr, yr)) in sum.chunks_mut(d).zip(normed.chunks_mut(d)).zip(x.chunks(d).zip(y.chunks(d))) {
            for ((s, a), b) in s.iter_mut().zip(xr).zip(yr) {
                *s = a + b;
            }
            let sum2: f32 = s.iter().map(|v| v * v).sum();
            let m = (sum2 / d as f32 + self.eps).sqrt();
            for ((o, v), a) in o.iter_mut().zip(s.iter()).zip(w) {
                *o = v / m * a;
            }
        }
        let mut dims = vec![2];
        dims.extend_from_slice(l1.dims());
        Ok((CpuStorage::F32(out), Shape::from(dims)))
    }

    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
        s3: &CudaStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        cuda::add_rms_norm(self.eps, (s1, l1), (s2, l2), (s3, l3))
    }
}

/// What [`qkv_heads`] does to the joint q, k, v product of a layer.
pub(crate) struct QkvSpec<'a> {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub rope: RopeStyle,
    /// Multiplies q after RoPE (attention's scale, applied once to the queries).
    pub q_scale: f32,
    /// Qwen3's and Gemma 3's per-head RMSNorms of q and of k, before RoPE.
    pub q_norm: Option<&'a Tensor>,
    pub k_norm: Option<&'a Tensor>,
    pub eps: f32,
}

/// The joint product `qkv [S, (heads + 2·kv_heads) · head_dim]` heads first, as
/// `[heads + 2·kv_heads, S, head_dim]`: q normed, rotated by `cos`, `sin` (`[S, head_dim / 2]`)
/// and scaled; k normed and rotated; v as it was. One launch for what the model otherwise does
/// with a copy, two norms, two RoPE kernels and a scale.
pub(crate) fn qkv_heads(qkv: &Tensor, cos: &Tensor, sin: &Tensor, spec: &QkvSpec<'_>) -> candle_core::Result<Tensor> {
    let (s, width) = qkv.dims2()?;
    let (h, kvh, hd) = (spec.heads, spec.kv_heads, spec.head_dim);
    if width != (h + 2 * kvh) * hd || hd % 2 != 0 || cos.dims() != [s, hd / 2] || sin.dims() != cos.dims() {
        candle_core::bail!(
            "q, k and v heads: a product of {:?} for {h} + 2·{kvh} heads of {hd}, rotations {:?} and {:?}",
            qkv.dims(),
            cos.dims(),
            sin.dims()
        );
    }
    for n in [spec.q_norm, spec.k_norm].into_iter().flatten() {
        if n.dims() != [hd] {
            candle_core::bail!("q, k and v heads: a norm weight of {:?} for heads of {hd}", n.dims());
        }
    }
    let op = QkvHeads {
        layout: HeadsLayout {
            heads: h,
            kv_heads: kvh,
            head_dim: hd,
            interleaved: matches!(spec.rope, RopeStyle::Interleaved),
            q_scale: spec.q_scale,
            eps: spec.eps,
        },
        q_norm: spec.q_norm.cloned(),
        k_norm: spec.k_norm.cloned(),
    };
    qkv.apply_op3_no_bwd(cos, sin, &op)
}

struct QkvHeads {
    layout: HeadsLayout,
    /// The norms' weights, read by the kernel in place (the layer's own tensors).
    q_norm: Option<Tensor>,
    k_norm: Option<Tensor>,
}

impl CustomOp3 for QkvHeads {
    fn name(&self) -> &'static str {
        "readout-qkv-heads"
    }

    /// The reference: for each token and head, candle's `rms_norm` (q and k, when the model has
    /// the norms), its `rope_i` or `rope` pairs, and the query scale, as separate steps.
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (qkv, cos, sin) =
            (contiguous(s1, l1, "q, k and v")?, contiguous(s2, l2, "RoPE cos")?, contiguous(s3, l3, "RoPE sin")?);
        let HeadsLayout { heads: h, kv_heads: kvh, head_dim: hd, interleaved, q_scale, eps } = self.layout;
        let all = h + 2 * kvh;
        let half = hd / 2;
        let s = l1.dims()[0];
        let weights = |t: &Option<Tensor>| t.as_ref().map(|t| t.to_vec1::<f32>()).transpose();
        let (qn, kn) = (weights(&self.q_norm)?, weights(&self.k_norm)?);
        let mut out = vec![0f32; all * s * hd];
        let mut x = vec![0f32; hd];
        for head in 0..all {
            for t in 0..s {
                let src = &qkv[(t * all + head) * hd..][..hd];
                let dst = &mut out[(head * s + t) * hd..][..hd];
                if head >= h + kvh {
                    dst.copy_from_slice(src);
                    continue;
                }
                x.copy_from_slice(src);
                if let Some(w) = if head < h { &qn } else { &kn } {
                    let sum2: f32 = x.iter().map(|v| v * v).sum();
                    let m = (sum2 / hd as f32 + eps).sqrt();
                    x.iter_mut().zip(w).for_each(|(v, a)| *v = *v / m * a);
                }
                let (c, sn) = (&cos[t * half..][..half], &sin[t * half..][..half]);
                for i in 0..half {
                    let (i1, i2) = if interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
                    dst[i1] = x[i1] * c[i] - x[i2] * sn[i];
                    dst[i2] = x[i1] * sn[i] + x[i2] * c[i];
                }
                if head < h {
                    dst.iter_mut().for_each(|v| *v *= q_scale);
                }
            }
        }
        Ok((CpuStorage::F32(out), Shape::from((all, s, hd))))
    }

    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
        s3: &CudaStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        cuda::qkv_heads(&self.layout, (self.q_norm.as_ref(), self.k_norm.as_ref()), (s1, l1), (s2, l2), (s3, l3))
    }
}

/// `silu(gate) * up` of the joined gate-and-up product `[rows, 2·ff]` (gate the first half of
/// each row, up the second), into a fresh `[rows, ff]`.
pub(crate) fn swiglu(gate_up: &Tensor) -> candle_core::Result<Tensor> {
    gate_up.apply_op1_no_bwd(&SwiGlu)
}

struct SwiGlu;

impl CustomOp1 for SwiGlu {
    fn name(&self) -> &'static str {
        "readout-swiglu"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::fused::swiglu(s, l)
    }

    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        cuda::gated(s, l, false)
    }
}

/// `gelu(gate) * up` (GELU's tanh approximation, as Gemma's `gelu_pytorch_tanh` and llama.cpp's
/// `ggml_gelu`) of the joined gate-and-up product `[rows, 2·ff]`, into a fresh `[rows, ff]`.
pub(crate) fn geglu(gate_up: &Tensor) -> candle_core::Result<Tensor> {
    gate_up.apply_op1_no_bwd(&GeGlu)
}

struct GeGlu;

impl CustomOp1 for GeGlu {
    fn name(&self) -> &'static str {
        "readout-geglu"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::fused::geglu(s, l)
    }

    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        cuda::gated(s, l, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn largest_difference(a: &Tensor, b: &Tensor) -> f32 {
        let (a, b) =
            (a.flatten_all().unwrap().to_vec1::<f32>().unwrap(), b.flatten_all().unwrap().to_vec1::<f32>().unwrap());
        assert_eq!(a.len(), b.len());
        a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
    }

    #[test]
    fn add_and_norm_by_hand() -> candle_core::Result<()> {
        // [1, 2, 0, -1] + [2, 2, 0, 1] = [3, 4, 0, 0]: mean square 25/4, root 2.5 (eps 0), so
        // the normed row is [1.2, 1.6, 0, 0], times the weight [1, 0.5, 7, 7].
        let dev = Device::Cpu;
        let x = Tensor::new(&[[1f32, 2., 0., -1.]], &dev)?;
        let y = Tensor::new(&[[2f32, 2., 0., 1.]], &dev)?;
        let w = Tensor::new(&[1f32, 0.5, 7., 7.], &dev)?;
        let (sum, normed) = add_rms_norm(&x, &y, &w, 0.0)?;
        assert_eq!(sum.to_vec2::<f32>()?, vec![vec![3f32, 4., 0., 0.]]);
        let n = normed.to_vec2::<f32>()?;
        for (a, b) in n[0].iter().zip([1.2f32, 0.8, 0., 0.]) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
        Ok(())
    }

    #[test]
    fn add_and_norm_is_candle_s_add_then_rms_norm() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::randn(0f32, 2., (5, 24), &dev)?;
        let y = Tensor::randn(0f32, 1., (5, 24), &dev)?;
        let w = Tensor::randn(1f32, 0.1, 24, &dev)?;
        let (sum, normed) = add_rms_norm(&x, &y, &w, 1e-5)?;
        let want = (&x + &y)?;
        assert_eq!(largest_difference(&sum, &want), 0.0);
        assert!(largest_difference(&normed, &candle_nn::ops::rms_norm(&want, &w, 1e-5)?) < 1e-6);
        assert!(add_rms_norm(&x, &y.narrow(1, 0, 12)?, &w, 1e-5).is_err(), "x and y of different shapes");
        Ok(())
    }

    /// The model's unfused steps (`model/attention.rs`): heads first, the norms, candle's RoPE, the scale.
    fn unfused(
        qkv: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        spec: &QkvSpec<'_>,
    ) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
        let (h, kvh, hd) = (spec.heads, spec.kv_heads, spec.head_dim);
        let s = qkv.dim(0)?;
        let heads = qkv.reshape((s, h + 2 * kvh, hd))?.transpose(0, 1)?.contiguous()?;
        let (q, k, v) = (heads.narrow(0, 0, h)?, heads.narrow(0, h, kvh)?, heads.narrow(0, h + kvh, kvh)?);
        let q = match spec.q_norm {
            Some(w) => candle_nn::ops::rms_norm(&q, w, spec.eps)?,
            None => q,
        };
        let k = match spec.k_norm {
            Some(w) => candle_nn::ops::rms_norm(&k, w, spec.eps)?,
            None => k,
        };
        let rope = |t: &Tensor| match spec.rope {
            RopeStyle::Interleaved => candle_nn::rotary_emb::rope_i(&t.unsqueeze(0)?, cos, sin)?.squeeze(0),
            RopeStyle::Halves => candle_nn::rotary_emb::rope(&t.unsqueeze(0)?, cos, sin)?.squeeze(0),
        };
        Ok(((rope(&q)? * spec.q_scale as f64)?, rope(&k)?, v))
    }

    #[test]
    fn heads_are_the_unfused_norms_rope_and_scale_for_both_rope_styles() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let (s, h, kvh, hd) = (5, 4, 2, 16);
        let qkv = Tensor::randn(0f32, 1., (s, (h + 2 * kvh) * hd), &dev)?;
        let angles = Tensor::randn(0f32, 2., (s, hd / 2), &dev)?;
        let (cos, sin) = (angles.cos()?, angles.sin()?);
        let (qn, kn) = (Tensor::randn(1f32, 0.2, hd, &dev)?, Tensor::randn(1f32, 0.2, hd, &dev)?);
        for rope in [RopeStyle::Interleaved, RopeStyle::Halves] {
            for norms in [false, true] {
                let spec = QkvSpec {
                    heads: h,
                    kv_heads: kvh,
                    head_dim: hd,
                    rope,
                    q_scale: 0.25,
                    q_norm: norms.then_some(&qn),
                    k_norm: norms.then_some(&kn),
                    eps: 1e-6,
                };
                let got = qkv_heads(&qkv, &cos, &sin, &spec)?;
                let (q, k, v) = unfused(&qkv, &cos, &sin, &spec)?;
                let want = Tensor::cat(&[q, k, v], 0)?;
                let d = largest_difference(&got, &want);
                assert!(d < 1e-5, "{rope:?} norms {norms}: {d}");
            }
        }
        Ok(())
    }

    #[test]
    fn heads_by_hand() -> candle_core::Result<()> {
        // One token, one head each of q, k, v, head_dim 4; a quarter turn on the first pair and
        // none on the second (cos [0, 1], sin [1, 0]). Halves pair (0, 2) and (1, 3): q = [1, 2,
        // 3, 4] becomes [1·0 − 3·1, 2, 1·1 + 3·0, 4] = [−3, 2, 1, 4], times the scale 0.5.
        // Interleaved pairs (0, 1) and (2, 3): k = [1, 2, 3, 4] becomes [−2, 1, 3, 4].
        let dev = Device::Cpu;
        let qkv = Tensor::new(&[[1f32, 2., 3., 4., 1., 2., 3., 4., 9., 8., 7., 6.]], &dev)?;
        let (cos, sin) = (Tensor::new(&[[0f32, 1.]], &dev)?, Tensor::new(&[[1f32, 0.]], &dev)?);
        let spec = |rope| QkvSpec {
            heads: 1,
            kv_heads: 1,
            head_dim: 4,
            rope,
            q_scale: 0.5,
            q_norm: None,
            k_norm: None,
            eps: 0.0,
        };
        let halves = qkv_heads(&qkv, &cos, &sin, &spec(RopeStyle::Halves))?.to_vec3::<f32>()?;
        assert_eq!(halves[0][0], vec![-1.5f32, 1., 0.5, 2.]);
        assert_eq!(halves[2][0], vec![9f32, 8., 7., 6.]);
        let inter = qkv_heads(&qkv, &cos, &sin, &spec(RopeStyle::Interleaved))?.to_vec3::<f32>()?;
        assert_eq!(inter[1][0], vec![-2f32, 1., 3., 4.]);
        // A product of the wrong width is refused.
        assert!(qkv_heads(&qkv.narrow(1, 0, 8)?, &cos, &sin, &spec(RopeStyle::Halves)).is_err());
        Ok(())
    }

    #[test]
    fn swiglu_matches_candle_ops() {
        let gate = Tensor::randn(0f32, 4.0, (5, 37), &Device::Cpu).unwrap();
        let up = Tensor::randn(0f32, 1.0, (5, 37), &Device::Cpu).unwrap();
        let want = (candle_nn::ops::silu(&gate).unwrap() * &up).unwrap();
        let got = swiglu(&Tensor::cat(&[&gate, &up], 1).unwrap()).unwrap();
        let diff = (got - want).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap();
        assert!(diff.to_scalar::<f32>().unwrap() < 1e-5);
        // By hand: silu(0) = 0; silu(ln 3) = ln 3 * 3/4; silu(-ln 3) = -ln 3 * 1/4.
        let l3 = 3f32.ln();
        let gate = Tensor::new(&[[0f32, l3, -l3]], &Device::Cpu).unwrap();
        let up = Tensor::new(&[[5f32, 2.0, 2.0]], &Device::Cpu).unwrap();
        let v: Vec<Vec<f32>> = swiglu(&Tensor::cat(&[&gate, &up], 1).unwrap()).unwrap().to_vec2().unwrap();
        // An odd row cannot be split into gate and up.
        assert!(swiglu(&Tensor::zeros((2, 3), candle_core::DType::F32, &Device::Cpu).unwrap()).is_err());
        assert_eq!(v[0][0], 0.0);
        assert!((v[0][1] - l3 * 1.5).abs() < 1e-6 && (v[0][2] + l3 * 0.5).abs() < 1e-6);
    }

    #[test]
    fn geglu_matches_candle_ops() {
        let gate = Tensor::randn(0f32, 4.0, (5, 37), &Device::Cpu).unwrap();
        let up = Tensor::randn(0f32, 1.0, (5, 37), &Device::Cpu).unwrap();
        // candle's `gelu` is the tanh approximation.
        let want = (gate.gelu().unwrap() * &up).unwrap();
        let got = geglu(&Tensor::cat(&[&gate, &up], 1).unwrap()).unwrap();
        let diff = (got - want).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap();
        assert!(diff.to_scalar::<f32>().unwrap() < 1e-5);
        // By hand: gelu(0) = 0; gelu(x) → x for large x, → 0 for large −x; gelu(1) with
        // y = √(2/π)·1.044715 = 0.833562, tanh(y) = 0.682384: 0.5·(1 + 0.682384) = 0.841192.
        let gate = Tensor::new(&[[0f32, 1.0, 30.0, -30.0]], &Device::Cpu).unwrap();
        let up = Tensor::new(&[[5f32, 1.0, 2.0, 2.0]], &Device::Cpu).unwrap();
        let v: Vec<Vec<f32>> = geglu(&Tensor::cat(&[&gate, &up], 1).unwrap()).unwrap().to_vec2().unwrap();
        assert_eq!(v[0][0], 0.0);
        assert!((v[0][1] - 0.841_192).abs() < 1e-5, "{}", v[0][1]);
        assert!((v[0][2] - 60.0).abs() < 1e-4 && v[0][3].abs() < 1e-6);
        assert!(geglu(&Tensor::zeros((2, 3), candle_core::DType::F32, &Device::Cpu).unwrap()).is_err());
    }
}
