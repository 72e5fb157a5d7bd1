//! Integer dot products for weights in a block-quantised encoding (Q4_0, Q4_1, Q5_0, Q5_1,
//! Q8_0, Q4_K, Q5_K) on CPUs with AVX-512 VNNI.
//!
//! Why it exists: f32 arithmetic was already near the CPU's peak; a 4-bit judge multiplied in f32
//! can be no faster than an f32 one. `vpdpbusd` multiplies 64 pairs of bytes in the time an f32
//! FMA multiplies 16 pairs of floats. So each weight block of 32 values is written as bytes `u`
//! with a scale `d` and an offset `m` (`w = d·u + m`, exact for every encoding here), the pass's
//! activations as signed bytes with a scale per row and block of 32 (`a ≈ s·q`, round to
//! nearest), and a block's sum is `d·s·Σ u·q + m·Σ a` — integer products, two float operations a
//! block. The offset term uses the exact float sum of the activations. The activations' rounding
//! is the only approximation (it is llama.cpp's too); its effect on the answers is measured
//! against the f32 path (bench/README.md).
//!
//! A row's result depends only on its own activations and the weights, summed block after block
//! in one order: never on the rows that share its pass or on the thread count.

use crate::engine::weights::Stacked;
use candle_core::quantized::GgmlDType;
use half::f16;

/// Values per block: the activations' and the weights' scale granularity.
pub(crate) const BLOCK: usize = 32;

/// Output columns of a decoded panel (the projection's panel width).
const COLS: usize = super::PANEL;

/// Whether the kernel can run here (AVX-512 F, BW and VNNI).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the integer kernel can multiply `w`: every part in an encoding it reads, rows of whole
/// blocks, and the kernel runs on this CPU.
pub(crate) fn ready(w: &Stacked) -> bool {
    w.cols().is_multiple_of(BLOCK) && w.dtypes().all(encodes) && available()
}

/// Whether weights of `dtype` are written exactly as `d·u + m` blocks of 32.
pub(crate) fn encodes(dtype: GgmlDType) -> bool {
    matches!(
        dtype,
        GgmlDType::Q4_0
            | GgmlDType::Q4_1
            | GgmlDType::Q5_0
            | GgmlDType::Q5_1
            | GgmlDType::Q8_0
            | GgmlDType::Q4K
            | GgmlDType::Q5K
    )
}

/// How wide the quantised activations are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Width {
    /// Signed bytes, `vpdpbusd`.
    I8,
    /// Signed 16-bit integers, `vpdpwssd`.
    I16,
}

impl Width {
    /// The largest magnitude of a quantised value.
    fn max(self) -> f32 {
        match self {
            Width::I8 => 127.0,
            Width::I16 => 32767.0,
        }
    }
    /// Values in the four bytes one lane of the dot instruction takes.
    fn per_lane(self) -> usize {
        match self {
            Width::I8 => 4,
            Width::I16 => 2,
        }
    }
}

/// A pass's activations `[rows, k]` as signed integers (`q`, little-endian, of `width`), a scale
/// per row and block, and each block's sum as quantised (`s·Σq`: with it the offset term and the
/// products see the same activations, and the error of a block's sum is `Σ w·(a − s·q)`,
/// whatever the offset).
// Only the x86-64 kernel reads them; elsewhere `ready` is false and they are never made.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct Acts {
    pub q: Vec<u8>,
    pub scale: Vec<f32>,
    pub sum: Vec<f32>,
    pub k: usize,
    pub width: Width,
}

/// Quantise `x` (`rows × k`, k a multiple of 32): per block of 32, `s = max|a| / M` and
/// `q = round(a / s)` (ties to even), M the width's largest value.
pub(crate) fn quantize_acts(x: &[f32], k: usize, width: Width) -> Acts {
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX-512 F and BW (checked just above).
        return unsafe { x86::quantize(x, k, width) };
    }
    quantize_acts_scalar(x, k, width)
}

/// [`quantize_acts`] one value at a time: the reference the vector code is tested against.
fn quantize_acts_scalar(x: &[f32], k: usize, width: Width) -> Acts {
    let blocks = x.len() / BLOCK;
    let bytes = 4 / width.per_lane();
    let mut q = vec![0u8; x.len() * bytes];
    let mut scale = vec![0f32; blocks];
    let mut sum = vec![0f32; blocks];
    for (b, (xs, qs)) in x.chunks_exact(BLOCK).zip(q.chunks_exact_mut(BLOCK * bytes)).enumerate() {
        let amax = xs.iter().fold(0f32, |m, v| m.max(v.abs()));
        let s = amax / width.max();
        let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
        let mut total = 0i64;
        for (o, &v) in qs.chunks_exact_mut(bytes).zip(xs) {
            let v = (v * inv).round_ties_even().clamp(-width.max(), width.max()) as i32;
            total += v as i64;
            o.copy_from_slice(&v.to_le_bytes()[..bytes]);
        }
        scale[b] = s;
        sum[b] = s * total as f32;
    }
    Acts { q, scale, sum, k, width }
}

/// One panel of weights (up to 64 output columns) decoded for the kernel: `u` as groups of four
/// bytes, `[k / per_lane][64 columns][4 bytes]` (four bytes for 8-bit activations, two 16-bit
/// values for 16-bit ones), `d` and `m` as `[k / 32][64 columns]`.
#[derive(Default)]
pub(crate) struct Panel {
    u: Vec<u8>,
    d: Vec<f32>,
    m: Vec<f32>,
    /// One weight row's bytes, decoded before they are spread over the panel.
    row: Vec<u8>,
}

/// Rows `pi * 64 ..` of `w` (at most 64) into `p`. Columns past the weight's last row hold
/// whatever the buffer held before: the kernel computes them, and nothing stores them.
pub(crate) fn decode_panel(w: &Stacked, pi: usize, k: usize, width: Width, p: &mut Panel) {
    let blocks = k / BLOCK;
    let per_lane = width.per_lane();
    p.u.resize(k / per_lane * COLS * 4, 0);
    p.d.resize(blocks * COLS, 0.0);
    p.m.resize(blocks * COLS, 0.0);
    p.row.resize(k, 0);
    let r0 = pi * COLS;
    for j in 0..(w.rows() - r0).min(COLS) {
        let (dtype, bytes) = w.row_bytes(r0 + j);
        decode_row(dtype, bytes, &mut p.row, |b, d, m| {
            p.d[b * COLS + j] = d;
            p.m[b * COLS + j] = m;
        });
        for (g, vals) in p.row.chunks_exact(per_lane).enumerate() {
            let lane = &mut p.u[(g * COLS + j) * 4..(g * COLS + j) * 4 + 4];
            match width {
                Width::I8 => lane.copy_from_slice(vals),
                // Two 16-bit little-endian values: the byte, then a zero high byte.
                Width::I16 => lane.copy_from_slice(&[vals[0], 0, vals[1], 0]),
            }
        }
    }
}

fn half(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// A row of whole blocks of `dtype` as bytes `u` (into `out`) and, per block of 32, `(d, m)`
/// through `scale(block, d, m)`, such that value `i` is `d·u[i] + m`.
pub(crate) fn decode_row(dtype: GgmlDType, bytes: &[u8], out: &mut [u8], mut scale: impl FnMut(usize, f32, f32)) {
    match dtype {
        GgmlDType::Q4_0 | GgmlDType::Q4_1 => {
            let size = if dtype == GgmlDType::Q4_0 { 18 } else { 20 };
            for (b, (blk, u)) in bytes.chunks_exact(size).zip(out.chunks_exact_mut(BLOCK)).enumerate() {
                let d = half(blk, 0);
                let m = if dtype == GgmlDType::Q4_0 { -8.0 * d } else { half(blk, 2) };
                let qs = &blk[size - 16..];
                for i in 0..16 {
                    u[i] = qs[i] & 0x0F;
                    u[i + 16] = qs[i] >> 4;
                }
                scale(b, d, m);
            }
        }
        GgmlDType::Q5_0 | GgmlDType::Q5_1 => {
            let size = if dtype == GgmlDType::Q5_0 { 22 } else { 24 };
            for (b, (blk, u)) in bytes.chunks_exact(size).zip(out.chunks_exact_mut(BLOCK)).enumerate() {
                let d = half(blk, 0);
                let m = if dtype == GgmlDType::Q5_0 { -16.0 * d } else { half(blk, 2) };
                let h = size - 20;
                let qh = u32::from_le_bytes([blk[h], blk[h + 1], blk[h + 2], blk[h + 3]]);
                let qs = &blk[size - 16..];
                for i in 0..16 {
                    u[i] = (qs[i] & 0x0F) | ((((qh >> i) << 4) & 0x10) as u8);
                    u[i + 16] = (qs[i] >> 4) | (((qh >> (i + 12)) & 0x10) as u8);
                }
                scale(b, d, m);
            }
        }
        GgmlDType::Q8_0 => {
            for (b, (blk, u)) in bytes.chunks_exact(34).zip(out.chunks_exact_mut(BLOCK)).enumerate() {
                let d = half(blk, 0);
                for (o, &q) in u.iter_mut().zip(&blk[2..]) {
                    *o = (q as i8 as i16 + 128) as u8;
                }
                scale(b, d, -128.0 * d);
            }
        }
        GgmlDType::Q4K | GgmlDType::Q5K => {
            let five = dtype == GgmlDType::Q5K;
            let size = if five { 176 } else { 144 };
            for (sb, (blk, u)) in bytes.chunks_exact(size).zip(out.chunks_exact_mut(256)).enumerate() {
                let (d, dmin) = (half(blk, 0), half(blk, 2));
                let scales = &blk[4..16];
                let (qh, qs) = if five { (&blk[16..48], &blk[48..176]) } else { (&blk[0..0], &blk[16..144]) };
                for j in 0..4 {
                    for (half_, shift) in [(0usize, 0u32), (1, 4)] {
                        let sub = 2 * j + half_;
                        let (sc, mn) = scale_min_k4(sub, scales);
                        let dst = &mut u[sub * 32..sub * 32 + 32];
                        for l in 0..32 {
                            let mut v = (qs[j * 32 + l] >> shift) & 0x0F;
                            if five && qh[l] & (1 << sub) != 0 {
                                v += 16;
                            }
                            dst[l] = v;
                        }
                        scale(sb * 8 + sub, d * sc as f32, -(dmin * mn as f32));
                    }
                }
            }
        }
        other => unreachable!("{other:?} is not a 32-block encoding (checked by `encodes`)"),
    }
}

/// The 6-bit scale and minimum of sub-block `j` of a Q4_K/Q5_K block (ggml's `get_scale_min_k4`).
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// `dst[r, col0 + c] = Σ_k a[r, k] · w[c, k]` for rows `r0..r1` of `a` and the panel's first
/// `cols` columns; `dst` rows are `out` apart.
///
/// # Safety
/// [`available`] must be true; `dst` must have room for row `r1 - 1`'s column `col0 + cols - 1`
/// at `(r1 - 1) * out + col0 + cols - 1`, and nothing else may write those elements meanwhile.
pub(crate) unsafe fn multiply(
    p: &Panel,
    a: &Acts,
    (r0, r1): (usize, usize),
    dst: *mut f32,
    out: usize,
    col0: usize,
    cols: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut r = r0;
        let wide = a.width == Width::I16;
        while r + 6 <= r1 {
            match wide {
                true => x86::tile::<6, true>(p, a, r, dst, out, col0, cols),
                false => x86::tile::<6, false>(p, a, r, dst, out, col0, cols),
            }
            r += 6;
        }
        while r < r1 {
            let n = if r + 2 <= r1 { 2 } else { 1 };
            match (n, wide) {
                (2, true) => x86::tile::<2, true>(p, a, r, dst, out, col0, cols),
                (2, false) => x86::tile::<2, false>(p, a, r, dst, out, col0, cols),
                (_, true) => x86::tile::<1, true>(p, a, r, dst, out, col0, cols),
                (_, false) => x86::tile::<1, false>(p, a, r, dst, out, col0, cols),
            }
            r += n;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, a, r0, r1, dst, out, col0, cols);
        unreachable!("the int8 kernel is only chosen where `available()` is true");
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Acts, Panel, BLOCK, COLS};
    use std::arch::x86_64::*;

    /// [`super::quantize_acts`], sixteen values at a time; the same numbers as the scalar
    /// reference (the conversion rounds to nearest even, as `round_ties_even` does).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn quantize(x: &[f32], k: usize, width: super::Width) -> Acts {
        let blocks = x.len() / BLOCK;
        let bytes = 4 / width.per_lane();
        let mut q = vec![0u8; blocks * BLOCK * bytes];
        let mut scale = vec![0f32; blocks];
        let mut sum = vec![0f32; blocks];
        let lim = _mm512_set1_epi32(width.max() as i32);
        let neg = _mm512_sub_epi32(_mm512_setzero_si512(), lim);
        for b in 0..blocks {
            // SAFETY: block b's 32 values lie inside x, and its 32 · bytes bytes inside q.
            let lo = _mm512_loadu_ps(x.as_ptr().add(b * BLOCK));
            let hi = _mm512_loadu_ps(x.as_ptr().add(b * BLOCK + 16));
            let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
            let s = amax / width.max();
            let inv = _mm512_set1_ps(if s > 0.0 { 1.0 / s } else { 0.0 });
            let qlo = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(lo, inv)), lim), neg);
            let qhi = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(hi, inv)), lim), neg);
            let out = q.as_mut_ptr().add(b * BLOCK * bytes);
            match width {
                super::Width::I8 => {
                    _mm_storeu_si128(out.cast(), _mm512_cvtepi32_epi8(qlo));
                    _mm_storeu_si128(out.add(16).cast(), _mm512_cvtepi32_epi8(qhi));
                }
                super::Width::I16 => {
                    _mm256_storeu_si256(out.cast(), _mm512_cvtepi32_epi16(qlo));
                    _mm256_storeu_si256(out.add(32).cast(), _mm512_cvtepi32_epi16(qhi));
                }
            }
            scale[b] = s;
            sum[b] = s * _mm512_reduce_add_epi32(_mm512_add_epi32(qlo, qhi)) as f32;
        }
        Acts { q, scale, sum, k, width }
    }

    /// Rows `r .. r + R` against the whole panel, 32 columns (two vectors) at a time; `WIDE`
    /// when the activations are 16-bit (`a.width`).
    ///
    /// # Safety
    /// As [`super::multiply`], for rows `r .. r + R`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn tile<const R: usize, const WIDE: bool>(
        p: &Panel,
        a: &Acts,
        r: usize,
        dst: *mut f32,
        out: usize,
        col0: usize,
        cols: usize,
    ) {
        let k = a.k;
        let blocks = k / BLOCK;
        // Dot-instruction groups per block, and the activations' bytes per row.
        let (groups, row_bytes) = match a.width {
            super::Width::I8 => (BLOCK / 4, k),
            super::Width::I16 => (BLOCK / 2, 2 * k),
        };
        for half in 0..COLS / 32 {
            let c0 = half * 32;
            if c0 >= cols {
                break;
            }
            let mut acc = [[_mm512_setzero_ps(); 2]; R];
            for b in 0..blocks {
                let mut dot = [[_mm512_setzero_si512(); 2]; R];
                for g in b * groups..(b + 1) * groups {
                    // SAFETY: group g of the panel holds 64 columns × 4 bytes; the two 64-byte
                    // loads read columns c0 .. c0 + 32 of it.
                    let wp = p.u.as_ptr().add((g * COLS + c0) * 4);
                    let w0 = _mm512_loadu_si512(wp.cast());
                    let w1 = _mm512_loadu_si512(wp.add(64).cast());
                    for (i, dot) in dot.iter_mut().enumerate() {
                        // SAFETY: row r + i < rows, and group g's four bytes of it lie inside
                        // the row (4g + 3 < row_bytes).
                        let four = (a.q.as_ptr().add((r + i) * row_bytes + 4 * g) as *const i32).read_unaligned();
                        let av = _mm512_set1_epi32(four);
                        if WIDE {
                            dot[0] = _mm512_dpwssd_epi32(dot[0], w0, av);
                            dot[1] = _mm512_dpwssd_epi32(dot[1], w1, av);
                        } else {
                            dot[0] = _mm512_dpbusd_epi32(dot[0], w0, av);
                            dot[1] = _mm512_dpbusd_epi32(dot[1], w1, av);
                        }
                    }
                }
                let dp = p.d.as_ptr().add(b * COLS + c0);
                let mp = p.m.as_ptr().add(b * COLS + c0);
                let (d0, d1) = (_mm512_loadu_ps(dp), _mm512_loadu_ps(dp.add(16)));
                let (m0, m1) = (_mm512_loadu_ps(mp), _mm512_loadu_ps(mp.add(16)));
                for i in 0..R {
                    let s = _mm512_set1_ps(a.scale[(r + i) * blocks + b]);
                    let sum = _mm512_set1_ps(a.sum[(r + i) * blocks + b]);
                    acc[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][0]), _mm512_mul_ps(d0, s), acc[i][0]);
                    acc[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][1]), _mm512_mul_ps(d1, s), acc[i][1]);
                    acc[i][0] = _mm512_fmadd_ps(m0, sum, acc[i][0]);
                    acc[i][1] = _mm512_fmadd_ps(m1, sum, acc[i][1]);
                }
            }
            for (i, row) in acc.iter().enumerate() {
                for (v, &val) in row.iter().enumerate() {
                    let c = c0 + v * 16;
                    if c >= cols {
                        continue;
                    }
                    let n = (cols - c).min(16);
                    let mask: __mmask16 = if n == 16 { 0xFFFF } else { (1u16 << n) - 1 };
                    // SAFETY: the caller guarantees room for columns col0 .. col0 + cols of row
                    // r + i; the mask stores only columns below cols.
                    _mm512_mask_storeu_ps(dst.add((r + i) * out + col0 + c), mask, val);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::QTensor;
    use candle_core::{Device, Tensor};

    const TYPES: [GgmlDType; 7] = [
        GgmlDType::Q4_0,
        GgmlDType::Q4_1,
        GgmlDType::Q5_0,
        GgmlDType::Q5_1,
        GgmlDType::Q8_0,
        GgmlDType::Q4K,
        GgmlDType::Q5K,
    ];

    #[test]
    fn blocks_of_bytes_scales_and_offsets_give_candles_values() -> candle_core::Result<()> {
        let k = 512;
        let w = Tensor::randn(0f32, 1., (1, k), &Device::Cpu)?;
        for dtype in TYPES {
            let q = QTensor::quantize(&w, dtype)?;
            let want: Vec<f32> = q.dequantize(&Device::Cpu)?.flatten_all()?.to_vec1()?;
            let mut u = vec![0u8; k];
            let mut dm = vec![(0f32, 0f32); k / BLOCK];
            decode_row(dtype, &q.data()?, &mut u, |b, d, m| dm[b] = (d, m));
            for (i, &want) in want.iter().enumerate() {
                let (d, m) = dm[i / BLOCK];
                let got = d * u[i] as f32 + m;
                assert!((got - want).abs() <= 1e-6 * (1.0 + want.abs()), "{dtype:?} value {i}: {got} vs {want}");
            }
        }
        Ok(())
    }

    #[test]
    fn quantised_activations_round_to_the_nearest_step() {
        // One block: max |a| = 2.54, so a step of 0.02; 0.03 is 1.5 steps (to even: 2).
        let mut x = vec![0f32; 32];
        x[0] = 2.54;
        x[1] = -1.0;
        x[2] = 0.03;
        let a = quantize_acts(&x, 32, Width::I8);
        assert_eq!(&a.q[..4], &[127, -50i8 as u8, 2, 0]);
        assert!((a.scale[0] - 0.02).abs() < 1e-7);
        assert!((a.sum[0] - 0.02 * 79.0).abs() < 1e-6, "{}", a.sum[0]);
        // A block of zeros: scale 0, all zero.
        assert_eq!(quantize_acts(&[0f32; 32], 32, Width::I8).q, vec![0u8; 32]);
        // 16 bits: the step is 2.54 / 32767; -1.0 is -12900.3 steps.
        let a = quantize_acts(&x, 32, Width::I16);
        assert_eq!(i16::from_le_bytes([a.q[0], a.q[1]]), 32767);
        assert_eq!(i16::from_le_bytes([a.q[2], a.q[3]]), -12900);
        // The vector code gives the reference's numbers.
        let x: Vec<f32> = (0..64 * 32).map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 0.0137).collect();
        for width in [Width::I8, Width::I16] {
            let (v, r) = (quantize_acts(&x, 64, width), quantize_acts_scalar(&x, 64, width));
            assert_eq!((v.q, v.scale, v.sum), (r.q, r.scale, r.sum), "{width:?}");
        }
    }

    /// The i-th quantised activation of `a` as an integer.
    fn act(a: &Acts, i: usize) -> i64 {
        match a.width {
            Width::I8 => a.q[i] as i8 as i64,
            Width::I16 => i16::from_le_bytes([a.q[2 * i], a.q[2 * i + 1]]) as i64,
        }
    }

    #[test]
    fn the_kernel_equals_the_sum_it_stands_for() -> candle_core::Result<()> {
        // The kernel's result against the same arithmetic in f64: Σ_b d·s·Σ u·q + m·s·Σ q; and
        // against the exact product within the activations' rounding.
        if !available() {
            return Ok(());
        }
        use crate::engine::weights::{Encoded, Stacked};
        let (k, out) = (256, 80);
        for width in [Width::I8, Width::I16] {
            for dtype in TYPES {
                let w = Tensor::randn(0f32, 1., (out, k), &Device::Cpu)?;
                let q = QTensor::quantize(&w, dtype)?;
                let bytes = q.data()?.to_vec();
                let mut map = memmap2::MmapMut::map_anon(bytes.len()).unwrap();
                map.copy_from_slice(&bytes);
                let map = std::sync::Arc::new(map.make_read_only().unwrap());
                let stacked = Stacked::new(vec![Encoded::new(map, 0, dtype, out, k).unwrap()])?;
                // 9 rows: tiles of 6, 2 and 1.
                let rows = 9;
                let x: Vec<f32> = Tensor::randn(0f32, 1., (rows, k), &Device::Cpu)?.flatten_all()?.to_vec1()?;
                let a = quantize_acts(&x, k, width);
                let mut dst = vec![f32::NAN; rows * out];
                let mut p = Panel::default();
                for pi in 0..out.div_ceil(COLS) {
                    decode_panel(&stacked, pi, k, width, &mut p);
                    let cols = (out - pi * COLS).min(COLS);
                    // SAFETY: the kernel runs here (checked above); dst holds rows × out values.
                    unsafe { multiply(&p, &a, (0, rows), dst.as_mut_ptr(), out, pi * COLS, cols) };
                }
                for r in 0..rows {
                    for c in 0..out {
                        let (dtype_, row) = stacked.row_bytes(c);
                        let mut u = vec![0u8; k];
                        let mut dm = vec![(0f32, 0f32); k / BLOCK];
                        decode_row(dtype_, row, &mut u, |b, d, m| dm[b] = (d, m));
                        let (mut want, mut exact, mut bound) = (0f64, 0f64, 1e-4);
                        for b in 0..k / BLOCK {
                            let (d, m) = dm[b];
                            let s = a.scale[r * (k / BLOCK) + b] as f64;
                            let idx = |i: usize| r * k + b * BLOCK + i;
                            let dot: i64 = (0..BLOCK).map(|i| u[b * BLOCK + i] as i64 * act(&a, idx(i))).sum();
                            want += d as f64 * s * dot as f64 + m as f64 * a.sum[r * (k / BLOCK) + b] as f64;
                            for i in 0..BLOCK {
                                let wv = (d * u[b * BLOCK + i] as f32 + m) as f64;
                                exact += x[idx(i)] as f64 * wv;
                                bound += wv.abs() * s / 2.0;
                            }
                        }
                        let got = dst[r * out + c] as f64;
                        let tag = format!("{width:?} {dtype:?} ({r}, {c})");
                        assert!((got - want).abs() <= 1e-4 * (1.0 + want.abs()), "{tag}: {got} vs {want}");
                        assert!((got - exact).abs() <= bound, "{tag}: {got} vs exact {exact} (bound {bound})");
                    }
                }
            }
        }
        Ok(())
    }
}
