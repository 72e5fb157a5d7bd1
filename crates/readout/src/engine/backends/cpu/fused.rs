//! Element-wise steps of the forward pass as fused passes on CPU: attention's scaled, masked
//! softmax (in place) and the MLP's SwiGLU (`silu(gate) * up`, from the joined gate-and-up
//! product) or, for Gemma 3, GeGLU (`gelu_tanh(gate) * up`).
//!
//! Why they are ours: with candle's stock ops the attention weights take four passes and three
//! temporary tensors (scale, broadcast mask add, softmax, divide) and SwiGLU two passes and two
//! temporaries, with `f32::exp` a scalar libm call per element. On the readout's prompts that
//! was a fifth of the run. Here each row is done in one buffer that already exists, with an exp
//! that the compiler vectorises (AVX-512 or AVX2 chosen at run time). Each row is computed by one
//! thread in a fixed order, so results do not depend on the thread count.
//!
//! SwiGLU and GeGLU are the CPU forwards of the ops in `backends/ops/fused.rs`, which on a CUDA
//! GPU with `--fused-kernels on` run as one kernel each too; otherwise other devices keep
//! candle's ops (see `model/mlp.rs`).

use candle_core::{CpuStorage, InplaceOp2, Layout, Shape, Tensor};
use rayon::prelude::*;

/// `softmax(att * scale + mask)` over the last dimension, computed in `att`'s own storage (no
/// new buffer): pass scores that nothing else reads, such as a matmul's fresh output. `att` is
/// `[.., n, t]` (any leading dimensions), `mask` is `[n, t]` with 0 where a key is visible and
/// `-inf` where it is not.
pub(crate) fn masked_softmax(att: Tensor, mask: &Tensor, scale: f32) -> candle_core::Result<Tensor> {
    let att = att.contiguous()?;
    att.inplace_op2(&mask.contiguous()?, &MaskedSoftmax { scale })?;
    Ok(att)
}

struct MaskedSoftmax {
    scale: f32,
}

impl InplaceOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "readout-masked-softmax"
    }

    fn cpu_fwd(&self, s1: &mut CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<()> {
        let att = f32_slice_mut(s1, l1, "masked softmax scores")?;
        let mask = f32_slice(s2, l2, "masked softmax mask")?;
        let dims = l1.dims();
        let (mn, mt) = l2.shape().dims2()?;
        let t = dims.last().copied().unwrap_or(0);
        let n = if dims.len() >= 2 { dims[dims.len() - 2] } else { 1 };
        if mt != t || mn != n || t == 0 {
            candle_core::bail!("masked softmax: scores {dims:?} do not match mask [{mn}, {mt}]");
        }
        let scale = self.scale;
        att.par_chunks_mut(t).enumerate().with_min_len(8).for_each(|(r, d)| {
            let m = &mask[(r % n) * t..(r % n + 1) * t];
            on_widest_simd(
                #[inline(always)]
                || row_portable(d, m, scale),
            )
        });
        Ok(())
    }
}

/// The CPU forward of `silu(gate) * up` (`ops::swiglu`): the joined gate-and-up product
/// `[rows, 2·ff]` (gate the first half of each row, up the second) into a fresh `[rows, ff]`.
pub(crate) fn swiglu(s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
    let gate_up = f32_slice(s, l, "swiglu gate and up")?;
    let (rows, both) = l.shape().dims2()?;
    if both % 2 != 0 || both == 0 {
        candle_core::bail!("swiglu: a row of gate and up has {both} values, not an even number");
    }
    let ff = both / 2;
    let mut out = vec![0f32; rows * ff];
    out.par_chunks_mut(ff).zip(gate_up.par_chunks(both)).with_min_len(4).for_each(|(o, gu)| {
        on_widest_simd(
            #[inline(always)]
            || swiglu_portable(o, &gu[..ff], &gu[ff..]),
        )
    });
    Ok((CpuStorage::F32(out), Shape::from((rows, ff))))
}

/// The CPU forward of `gelu(gate) * up` (`ops::geglu`; GELU's tanh approximation): the joined
/// gate-and-up product `[rows, 2·ff]` into a fresh `[rows, ff]`.
pub(crate) fn geglu(s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
    let gate_up = f32_slice(s, l, "geglu gate and up")?;
    let (rows, both) = l.shape().dims2()?;
    if both % 2 != 0 || both == 0 {
        candle_core::bail!("geglu: a row of gate and up has {both} values, not an even number");
    }
    let ff = both / 2;
    let mut out = vec![0f32; rows * ff];
    out.par_chunks_mut(ff).zip(gate_up.par_chunks(both)).with_min_len(4).for_each(|(o, gu)| {
        on_widest_simd(
            #[inline(always)]
            || geglu_portable(o, &gu[..ff], &gu[ff..]),
        )
    });
    Ok((CpuStorage::F32(out), Shape::from((rows, ff))))
}

#[inline(always)]
fn geglu_portable(out: &mut [f32], g: &[f32], u: &[f32]) {
    // √(2/π)
    const C: f32 = 0.797_884_6;
    for ((o, &x), &up) in out.iter_mut().zip(g).zip(u) {
        let y = C * x * (1.0 + 0.044_715 * x * x);
        // tanh(y) from e^-2|y| (never overflows): (1 − e)/(1 + e), with y's sign.
        let e = exp_nonpositive(-2.0 * y.abs());
        let t = (1.0 - e) / (1.0 + e);
        let t = if y >= 0.0 { t } else { -t };
        *o = 0.5 * x * (1.0 + t) * up;
    }
}

/// The f32 elements of a contiguous CPU tensor (`what` names it in the error).
pub(crate) fn f32_slice<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> candle_core::Result<&'a [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(&v[a..b]),
        (CpuStorage::F32(_), None) => candle_core::bail!("{what} must be contiguous"),
        _ => candle_core::bail!("{what} must be f32"),
    }
}

/// [`f32_slice`], writable.
fn f32_slice_mut<'a>(s: &'a mut CpuStorage, l: &Layout, what: &str) -> candle_core::Result<&'a mut [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(&mut v[a..b]),
        (CpuStorage::F32(_), None) => candle_core::bail!("{what} must be contiguous"),
        _ => candle_core::bail!("{what} must be f32"),
    }
}

#[inline(always)]
fn swiglu_portable(out: &mut [f32], g: &[f32], u: &[f32]) {
    for ((o, &x), &up) in out.iter_mut().zip(g).zip(u) {
        // sigmoid(x) from e^-|x| (never overflows): 1/(1+e) for x >= 0, e/(1+e) below.
        let e = exp_nonpositive(-x.abs());
        let num = if x >= 0.0 { 1.0 } else { e };
        *o = x * (num / (1.0 + e)) * up;
    }
}

/// Runs `f` compiled for the widest vector unit this CPU has (AVX-512, else AVX2 with FMA, else
/// the target's baseline). `f` and what it calls with `#[inline(always)]` are inlined into the
/// feature-enabled function, so their loops are vectorised for it.
#[inline(always)]
fn on_widest_simd<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { on_avx512(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { on_avx2(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn on_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn on_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Lanes of the partial max and sum: wide enough for AVX-512, and a fixed order of additions
/// (so the result is the same whichever vector unit ran it).
const LANES: usize = 16;

#[inline(always)]
fn row_portable(d: &mut [f32], m: &[f32], scale: f32) {
    let body = d.len() - d.len() % LANES;
    let (d_body, d_tail) = d.split_at_mut(body);
    let (m_body, m_tail) = m.split_at(body);
    // Pass 1: scale, mask, running max per lane.
    let mut acc = [f32::NEG_INFINITY; LANES];
    for (dc, mc) in d_body.chunks_exact_mut(LANES).zip(m_body.chunks_exact(LANES)) {
        for l in 0..LANES {
            let v = dc[l] * scale + mc[l];
            dc[l] = v;
            acc[l] = if v > acc[l] { v } else { acc[l] };
        }
    }
    let mut max = f32::NEG_INFINITY;
    for l in acc {
        max = if l > max { l } else { max };
    }
    for (x, &mv) in d_tail.iter_mut().zip(m_tail) {
        let v = *x * scale + mv;
        *x = v;
        max = if v > max { v } else { max };
    }
    if max == f32::NEG_INFINITY {
        // A row that sees nothing (the engine never builds one): all zeros rather than NaN.
        d_body.fill(0.0);
        d_tail.fill(0.0);
        return;
    }
    // Pass 2: exponentiate, partial sums per lane.
    let mut sums = [0f32; LANES];
    for dc in d_body.chunks_exact_mut(LANES) {
        for l in 0..LANES {
            let e = exp_nonpositive(dc[l] - max);
            dc[l] = e;
            sums[l] += e;
        }
    }
    let mut sum = 0f32;
    for s in sums {
        sum += s;
    }
    for x in d_tail.iter_mut() {
        let e = exp_nonpositive(*x - max);
        *x = e;
        sum += e;
    }
    // Pass 3: normalise.
    let inv = 1.0 / sum;
    // Body and tail apart: a chained iterator would not vectorise.
    for x in d_body.iter_mut() {
        *x *= inv;
    }
    for x in d_tail.iter_mut() {
        *x *= inv;
    }
}

/// `e^x` for `x <= 0` (and `-inf`, which gives 0), branch-free so that loops over it vectorise.
/// Cephes' single-precision method: `x = k ln 2 + r` with `|r| <= ln 2 / 2`, a degree-6
/// polynomial for `e^r`, and `2^k` put into the exponent bits. Relative error about 1e-7.
#[inline(always)]
fn exp_nonpositive(x: f32) -> f32 {
    // Below this, e^x is under f32's smallest normal number: treat it as 0.
    const LO: f32 = -87.0;
    let xc = if x > LO { x } else { LO };
    let xc = if xc < 0.0 { xc } else { 0.0 };
    let k = (xc * std::f32::consts::LOG2_E + 0.5).floor();
    let r = xc - k * 0.693_359_4 + k * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    // SAFETY: `k` is a whole number in [-126, 0], so it fits an i32.
    let k_int: i32 = unsafe { k.to_int_unchecked() };
    let two_k = f32::from_bits(((k_int + 127) as u32) << 23);
    let v = y * two_k;
    if x >= LO {
        v
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn exp_matches_libm() {
        let mut worst = 0f32;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let want = x.exp();
            let got = exp_nonpositive(x);
            worst = worst.max(((got - want) / want).abs());
            x += 0.001_3;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive(-200.0), 0.0);
        assert_eq!(exp_nonpositive(0.0), 1.0);
    }

    #[test]
    fn matches_candle_ops_on_every_row_length() {
        for t in [1usize, 5, 16, 17, 40, 113] {
            let n = 3;
            let att = Tensor::randn(0f32, 3.0, (2, 3, n, t), &Device::Cpu).unwrap();
            // Row i sees keys 0..=i+t-n (a causal mask over the last n keys).
            let mut m = vec![f32::NEG_INFINITY; n * t];
            for i in 0..n {
                let seen = (i + 1 + t).saturating_sub(n).max(1);
                m[i * t..i * t + seen].fill(0.0);
            }
            let mask = Tensor::from_vec(m, (n, t), &Device::Cpu).unwrap();
            let want = candle_nn::ops::softmax_last_dim(&(att.clone() * 0.125).unwrap().broadcast_add(&mask).unwrap())
                .unwrap();
            let got = masked_softmax(att.copy().unwrap(), &mask, 0.125).unwrap();
            let diff = (got - want).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap();
            assert!(diff.to_scalar::<f32>().unwrap() < 1e-6, "t = {t}");
        }
    }

    #[test]
    fn hand_computed_row() {
        // softmax([0, ln 3] * 1 + [0, 0]) = [1/4, 3/4]; the masked key gets exactly 0.
        let att = Tensor::new(&[[0f32, 3f32.ln(), 5.0]], &Device::Cpu).unwrap();
        let mask = Tensor::new(&[[0f32, 0.0, f32::NEG_INFINITY]], &Device::Cpu).unwrap();
        let p: Vec<Vec<f32>> = masked_softmax(att, &mask, 1.0).unwrap().to_vec2().unwrap();
        assert!((p[0][0] - 0.25).abs() < 1e-7 && (p[0][1] - 0.75).abs() < 1e-7);
        assert_eq!(p[0][2], 0.0);
    }
}
