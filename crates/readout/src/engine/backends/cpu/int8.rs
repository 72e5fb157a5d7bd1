//! Integer dot products for weights in a block-quantised encoding (Q4_0, Q4_1, Q5_0, Q5_1,
//! Q8_0, Q4_K, Q5_K, Q6_K) on CPUs with AVX-512 VNNI, through AMX tiles where the CPU has
//! them (`amx.rs`), and with NEON's dot products on aarch64 (`neon.rs`).
//!
//! Why it exists: f32 arithmetic was already near the CPU's peak; a 4-bit judge multiplied in f32
//! can be no faster than an f32 one. `vpdpbusd` multiplies 64 pairs of bytes in the time an f32
//! FMA multiplies 16 pairs of floats, and an AMX tile instruction 16 × 16 × 64. So each weight
//! block of 32 values (16 for Q6_K) is written as bytes `u` with a scale `d` and an offset `m`
//! (`w = d·u + m`, exact for every encoding here), the pass's activations as integers with a
//! scale per row and block of 32 (`a ≈ s·q`, round to nearest), and a block's sum is
//! `d·s·Σ u·q + m·s·Σ q` — integer products, two float operations a block. The activations'
//! rounding is the only approximation; its effect on the answers is measured against the f32
//! path (bench/README.md).
//!
//! The activations are 16-bit by default: enough that no letter probability moves by more than
//! rounding noise. The AVX-512 kernel multiplies them with `vpdpwssd`; the AMX kernel splits each
//! into a signed high byte and an unsigned low byte, `q = 256·h + l`, and multiplies both at byte
//! speed (two tile products, joined as integers before any rounding); both sum the same integers and scale them in the same order, so they give the
//! same bits. 8-bit activations (`--int8-activations`, llama.cpp's choice) are faster still and
//! move answers.
//!
//! A row's result depends only on its own activations and the weights, summed block after block
//! in one order: never on the rows that share its pass, on the thread count, or on the kernel.

use crate::engine::weights::Stacked;
use candle_core::quantized::GgmlDType;
use half::f16;

/// Values per block: the activations' scale granularity, and the weights' (but Q6_K's).
pub(crate) const BLOCK: usize = 32;

/// Output columns of a decoded panel (the projection's panel width).
pub(super) const COLS: usize = super::PANEL;

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

/// Whether the integer kernel can multiply `w` with `kernel`: every part in an encoding it reads,
/// rows of whole blocks, and the kernel runs on this CPU.
pub(crate) fn ready(w: &Stacked, kernel: Kernel) -> bool {
    w.cols().is_multiple_of(BLOCK) && w.dtypes().all(encodes) && super::runs(kernel)
}

/// Whether weights of `dtype` are written exactly as `d·u + m` blocks of 32 (Q6_K: of 16).
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
            | GgmlDType::Q6K
    )
}

/// The values sharing one `(d, m)` in `dtype`.
fn sub_block(dtype: GgmlDType) -> usize {
    if dtype == GgmlDType::Q6K {
        16
    } else {
        BLOCK
    }
}

/// How wide the quantised activations are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Width {
    /// Signed bytes.
    I8,
    /// 16-bit signed integers: lanes of `vpdpwssd`, or a signed and an unsigned byte for AMX.
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
    /// Values in the four bytes one lane of the AVX-512 dot instruction takes.
    fn per_lane(self) -> usize {
        match self {
            Width::I8 => 4,
            Width::I16 => 2,
        }
    }
}

/// Which instructions multiply: AVX-512 VNNI vectors, AMX tiles, or NEON's dot products on
/// aarch64 (`neon.rs`). All give the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    Avx512,
    Amx,
    /// Reads the AMX kernel's layouts.
    Neon,
}

/// How a projection goes through the integer kernel: the activations' width and the
/// instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Integer {
    pub width: Width,
    pub kernel: Kernel,
}

/// A pass's activations `[rows, k]` as integers, a scale per row and block of 32, and each
/// block's sum as quantised (`s·Σq`: with it the offset term and the products see the same
/// activations, and the error of a block's sum is `Σ w·(a − s·q)`, whatever the offset).
///
/// For [`Kernel::Avx512`], `q` holds the values little-endian, one or two bytes each. For
/// [`Kernel::Amx`] (and [`Kernel::Neon`]), `q` holds a byte per value (8-bit: the value; 16-bit: its signed high byte
/// `h`) and `lo` the unsigned low bytes `l` of 16-bit values, each padded with 15 rows of zeros, so a tile of
/// 16 rows can start at any row.
// Only the x86-64 and aarch64 kernels read them; elsewhere `ready` is false and they are never made.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(crate) struct Acts {
    pub q: Vec<u8>,
    pub lo: Vec<u8>,
    pub scale: Vec<f32>,
    /// `s·Σq` per row and block of 32.
    pub sum: Vec<f32>,
    /// `s·Σq` per row and half block of 16 (for Q6_K's sub-blocks).
    pub sum16: Vec<f32>,
    pub k: usize,
    pub width: Width,
    pub kernel: Kernel,
}

/// Quantise `x` (`rows × k`, k a multiple of 32) for `kernel`: per block of 32,
/// `s = max|a| / M` and `q = round(a / s)` (ties to even), M the width's largest value.
pub(crate) fn quantize_acts(x: &[f32], k: usize, width: Width, kernel: Kernel) -> Acts {
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX-512 F and BW (checked just above).
        let a = unsafe { x86::quantize(x, k, width) };
        return lay_out_for(a, kernel);
    }
    lay_out_for(quantize_acts_scalar(x, k, width), kernel)
}

/// Activations quantised for the AVX-512 kernel, laid out for `kernel`.
fn lay_out_for(mut a: Acts, kernel: Kernel) -> Acts {
    if kernel == Kernel::Avx512 {
        return a;
    }
    let pad = 15 * a.k;
    match a.width {
        Width::I8 => a.q.resize(a.q.len() + pad, 0),
        Width::I16 => {
            let n = a.q.len() / 2;
            let (mut h, mut l) = (vec![0u8; n + pad], vec![0u8; n + pad]);
            for (i, v) in a.q.chunks_exact(2).enumerate() {
                let v = i16::from_le_bytes([v[0], v[1]]);
                // v = 256·(v >> 8) + (v & 255): a signed high byte, an unsigned low one.
                h[i] = (v >> 8) as i8 as u8;
                l[i] = (v & 255) as u8;
            }
            a.q = h;
            a.lo = l;
        }
    }
    a.kernel = kernel;
    a
}

/// [`quantize_acts`] one value at a time (for the AVX-512 kernel): the reference the vector
/// code is tested against.
fn quantize_acts_scalar(x: &[f32], k: usize, width: Width) -> Acts {
    let blocks = x.len() / BLOCK;
    let bytes = 4 / width.per_lane();
    let mut q = vec![0u8; x.len() * bytes];
    let mut scale = vec![0f32; blocks];
    let mut sum = vec![0f32; blocks];
    let mut sum16 = vec![0f32; 2 * blocks];
    for (b, (xs, qs)) in x.chunks_exact(BLOCK).zip(q.chunks_exact_mut(BLOCK * bytes)).enumerate() {
        let amax = xs.iter().fold(0f32, |m, v| m.max(v.abs()));
        let s = amax / width.max();
        let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
        let mut total = [0i64; 2];
        for (i, (o, &v)) in qs.chunks_exact_mut(bytes).zip(xs).enumerate() {
            let v = (v * inv).round_ties_even().clamp(-width.max(), width.max()) as i32;
            total[i / 16] += v as i64;
            o.copy_from_slice(&v.to_le_bytes()[..bytes]);
        }
        scale[b] = s;
        sum[b] = s * (total[0] + total[1]) as f32;
        sum16[2 * b] = s * total[0] as f32;
        sum16[2 * b + 1] = s * total[1] as f32;
    }
    Acts { q, lo: Vec::new(), scale, sum, sum16, k, width, kernel: Kernel::Avx512 }
}

/// One panel of weights (up to 64 output columns) decoded for the kernel: `u` as groups of four
/// bytes, `[k / lanes][64 columns][4 bytes]` (`lanes` values in a group: four bytes, or for the
/// AVX-512 kernel's 16-bit activations two 16-bit values), `d` and `m` as `[k / sub][64 columns]`.
#[derive(Default)]
pub(crate) struct Panel {
    pub(super) u: Vec<u8>,
    pub(super) d: Vec<f32>,
    pub(super) m: Vec<f32>,
    /// Values per `(d, m)`: 32, or 16 when a part is Q6_K.
    pub(super) sub: usize,
    /// Sixteen weight rows' bytes (`k + 64` apart), decoded before they are spread over the
    /// panel's columns, and a seventeenth of zeros for the columns past the weight's last row.
    rows: Vec<u8>,
}

/// Rows `pi * 64 ..` of `w` (at most 64) into `p` for `kernel`; columns past the weight's last
/// row are zeros.
///
/// Sixteen rows are decoded at a time into a buffer, then gathered into the panel's layout:
/// each store then fills a whole 64-byte line (sixteen columns of one group), where writing a
/// row at a time would touch every line of the panel sixteen times.
pub(crate) fn decode_panel(w: &Stacked, pi: usize, k: usize, width: Width, kernel: Kernel, p: &mut Panel) {
    let sub = w.dtypes().map(sub_block).min().unwrap_or(BLOCK);
    let lanes = match kernel {
        Kernel::Amx | Kernel::Neon => 4,
        Kernel::Avx512 => width.per_lane(),
    };
    p.sub = sub;
    p.u.resize(k / lanes * COLS * 4, 0);
    p.d.resize(k / sub * COLS, 0.0);
    p.m.resize(k / sub * COLS, 0.0);
    let stride = k + 64;
    if p.rows.len() != 17 * stride {
        p.rows.clear();
        p.rows.resize(17 * stride, 0);
    }
    let r0 = pi * COLS;
    let here = (w.rows() - r0).min(COLS);
    for j0 in (0..COLS).step_by(16) {
        let n = here.saturating_sub(j0).min(16);
        for i in 0..n {
            let j = j0 + i;
            let (dtype, bytes) = w.row_bytes(r0 + j);
            // Q4_1 blocks with f32 scales (an ONNX export's): the f32 `d` and `m = −d·zero`.
            let f32_scales = w.row_f32_scales(r0 + j);
            // A part's blocks of 32 in a panel of 16-value sub-blocks: each half gets the block's d, m.
            let split = sub_block(dtype) / sub;
            decode_row(dtype, bytes, &mut p.rows[i * stride..i * stride + k], |b, d, m| {
                let (d, m) = f32_scales.map_or((d, m), |s| (s[b][0], -s[b][0] * s[b][1]));
                for h in 0..split {
                    p.d[(b * split + h) * COLS + j] = d;
                    p.m[(b * split + h) * COLS + j] = m;
                }
            });
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the kernel (and so AVX-512) runs here; `p.rows` holds 17 rows of `stride`
        // bytes, and `p.u` room for k / lanes groups of 64 columns of four bytes.
        unsafe {
            x86::gather_columns(&p.rows, stride, n, &mut p.u, j0, lanes, k)
        };
        #[cfg(not(target_arch = "x86_64"))]
        gather_columns_from(&p.rows, stride, n, &mut p.u, j0, lanes, k, 0);
    }
}

/// Columns `j0 .. j0 + 16` of a panel's bytes `u` from the buffer's rows (`n` of them; zeros
/// after), groups `from ..`: the scalar form of `x86::gather_columns`, and its tail.
#[allow(clippy::too_many_arguments)]
fn gather_columns_from(
    rows: &[u8],
    stride: usize,
    n: usize,
    u: &mut [u8],
    j0: usize,
    lanes: usize,
    k: usize,
    from: usize,
) {
    for i in 0..16 {
        let row = &rows[if i < n { i } else { 16 } * stride..][..k];
        let j = j0 + i;
        for (g, vals) in row.chunks_exact(lanes).enumerate().skip(from) {
            let at = (g * COLS + j) * 4;
            match lanes {
                4 => u[at..at + 4].copy_from_slice(vals),
                // Two 16-bit little-endian values: the byte, then a zero high byte.
                _ => u[at..at + 4].copy_from_slice(&[vals[0], 0, vals[1], 0]),
            }
        }
    }
}

fn half(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// A row of whole blocks of `dtype` as bytes `u` (into `out`) and, per sub-block (32 values;
/// 16 for Q6_K), `(d, m)` through `scale(sub_block, d, m)`, such that value `i` is `d·u[i] + m`.
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
                    let (lo, hi) = u[j * 64..j * 64 + 64].split_at_mut(32);
                    let q = &qs[j * 32..j * 32 + 32];
                    for l in 0..32 {
                        lo[l] = q[l] & 0x0F;
                        hi[l] = q[l] >> 4;
                    }
                    if five {
                        for l in 0..32 {
                            lo[l] |= ((qh[l] >> (2 * j)) & 1) << 4;
                            hi[l] |= ((qh[l] >> (2 * j + 1)) & 1) << 4;
                        }
                    }
                    for sub in [2 * j, 2 * j + 1] {
                        let (sc, mn) = scale_min_k4(sub, scales);
                        scale(sb * 8 + sub, d * sc as f32, -(dmin * mn as f32));
                    }
                }
            }
        }
        GgmlDType::Q6K => {
            // ggml's dequantize_row_q6_K: w = d·sc·(q − 32), q six bits (four low in ql, two
            // high in qh), a signed 8-bit scale per 16 values; u = q.
            for (sb, (blk, u)) in bytes.chunks_exact(210).zip(out.chunks_exact_mut(256)).enumerate() {
                let (ql, qh, sc) = (&blk[0..128], &blk[128..192], &blk[192..208]);
                let d = half(blk, 208);
                for n in 0..2 {
                    let (ql, qh, u) =
                        (&ql[n * 64..n * 64 + 64], &qh[n * 32..n * 32 + 32], &mut u[n * 128..n * 128 + 128]);
                    for l in 0..32 {
                        u[l] = (ql[l] & 0x0F) | ((qh[l] & 3) << 4);
                        u[l + 32] = (ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4);
                        u[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
                        u[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
                    }
                }
                for (t, &s) in sc.iter().enumerate() {
                    let ds = d * s as i8 as f32;
                    scale(sb * 16 + t, ds, -32.0 * ds);
                }
            }
        }
        other => unreachable!("{other:?} is not a block encoding the kernel reads (checked by `encodes`)"),
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
/// `cols` columns; `dst` rows are `out` apart, on AVX-512 (`amx::multiply` for
/// [`Kernel::Amx`]). The panel and the activations must be made for [`Kernel::Avx512`].
///
/// # Safety
/// [`available`] must be true; `dst` must have
/// room for row `r1 - 1`'s column `col0 + cols - 1` at `(r1 - 1) * out + col0 + cols - 1`, and
/// nothing else may write those elements meanwhile.
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

/// The scale and the `s·Σq` of row `r`'s sub-block `b` (of `sub` values) of `a`.
#[inline(always)]
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(super) fn row_terms(a: &Acts, r: usize, b: usize, sub: usize) -> (f32, f32) {
    let k = a.k;
    let s = a.scale[r * (k / BLOCK) + b * sub / BLOCK];
    let sum = if sub == BLOCK { a.sum[r * (k / BLOCK) + b] } else { a.sum16[r * (k / 16) + b] };
    (s, sum)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{row_terms, Acts, Panel, BLOCK, COLS};
    use std::arch::x86_64::*;

    /// [`super::gather_columns_from`] sixteen groups at a time: sixteen rows' groups loaded as
    /// sixteen vectors of sixteen 4-byte lanes, transposed in registers, each group's sixteen
    /// columns stored as one 64-byte line. (No gather: on CPUs patched against Downfall a gather
    /// costs several times its loads.)
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and BW; `rows` holds 17 rows of `stride ≥ k` bytes, `u`
    /// room for `k / lanes` groups of `COLS` columns of four bytes, and `j0 + 16 ≤ COLS`.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn gather_columns(
        rows: &[u8],
        stride: usize,
        n: usize,
        u: &mut [u8],
        j0: usize,
        lanes: usize,
        k: usize,
    ) {
        let groups = k / lanes;
        let whole = groups / 16 * 16;
        for g0 in (0..whole).step_by(16) {
            let mut r = [_mm512_setzero_si512(); 16];
            for (i, v) in r.iter_mut().enumerate() {
                // SAFETY: row i (or the zero row) holds groups g0 .. g0 + 16: 16 · lanes bytes
                // from g0 · lanes, inside its k bytes.
                let at = rows.as_ptr().add(if i < n { i } else { 16 } * stride + g0 * lanes);
                *v = match lanes {
                    4 => _mm512_loadu_si512(at.cast()),
                    // Two values a group: each the byte, then a zero high byte.
                    _ => _mm512_cvtepu8_epi16(_mm256_loadu_si256(at.cast())),
                };
            }
            let out = transpose16(r);
            for (g, v) in out.iter().enumerate() {
                // SAFETY: group g0 + g's columns j0 .. j0 + 16 of `u`.
                _mm512_storeu_si512(u.as_mut_ptr().add(((g0 + g) * COLS + j0) * 4).cast(), *v);
            }
        }
        if whole < groups {
            super::gather_columns_from(rows, stride, n, u, j0, lanes, k, whole);
        }
    }

    /// Sixteen vectors of sixteen 32-bit lanes, transposed: lane `i` of output `g` is lane `g`
    /// of input `i`.
    #[target_feature(enable = "avx512f")]
    unsafe fn transpose16(r: [__m512i; 16]) -> [__m512i; 16] {
        // Pairs of rows interleaved, then quads: s[4q + c]'s 128-bit lane L holds group 4L + c
        // of rows 4q .. 4q + 4.
        let mut t = [_mm512_setzero_si512(); 16];
        for p in 0..8 {
            t[2 * p] = _mm512_unpacklo_epi32(r[2 * p], r[2 * p + 1]);
            t[2 * p + 1] = _mm512_unpackhi_epi32(r[2 * p], r[2 * p + 1]);
        }
        let mut s = [_mm512_setzero_si512(); 16];
        for q in 0..4 {
            s[4 * q] = _mm512_unpacklo_epi64(t[4 * q], t[4 * q + 2]);
            s[4 * q + 1] = _mm512_unpackhi_epi64(t[4 * q], t[4 * q + 2]);
            s[4 * q + 2] = _mm512_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
            s[4 * q + 3] = _mm512_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
        }
        // Then the 128-bit lanes: output 4L + c is lane L of s[c], s[4 + c], s[8 + c], s[12 + c].
        let mut out = [_mm512_setzero_si512(); 16];
        for c in 0..4 {
            let (a, b, cc, d) = (s[c], s[4 + c], s[8 + c], s[12 + c]);
            let ab_lo = _mm512_shuffle_i32x4::<0b01_00_01_00>(a, b);
            let ab_hi = _mm512_shuffle_i32x4::<0b11_10_11_10>(a, b);
            let cd_lo = _mm512_shuffle_i32x4::<0b01_00_01_00>(cc, d);
            let cd_hi = _mm512_shuffle_i32x4::<0b11_10_11_10>(cc, d);
            out[c] = _mm512_shuffle_i32x4::<0b10_00_10_00>(ab_lo, cd_lo);
            out[4 + c] = _mm512_shuffle_i32x4::<0b11_01_11_01>(ab_lo, cd_lo);
            out[8 + c] = _mm512_shuffle_i32x4::<0b10_00_10_00>(ab_hi, cd_hi);
            out[12 + c] = _mm512_shuffle_i32x4::<0b11_01_11_01>(ab_hi, cd_hi);
        }
        out
    }

    /// [`super::quantize_acts`] for the AVX-512 kernel, sixteen values at a time; the same
    /// numbers as the scalar reference (the conversion rounds to nearest even, as
    /// `round_ties_even` does).
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
        let mut sum16 = vec![0f32; 2 * blocks];
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
            let (t0, t1) = (_mm512_reduce_add_epi32(qlo), _mm512_reduce_add_epi32(qhi));
            scale[b] = s;
            sum[b] = s * (t0 as i64 + t1 as i64) as f32;
            sum16[2 * b] = s * t0 as f32;
            sum16[2 * b + 1] = s * t1 as f32;
        }
        Acts { q, lo: Vec::new(), scale, sum, sum16, k, width, kernel: super::Kernel::Avx512 }
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
        let sub = p.sub;
        let blocks = k / sub;
        // Dot-instruction groups per sub-block, and the activations' bytes per row.
        let (groups, row_bytes) = match a.width {
            super::Width::I8 => (sub / 4, k),
            super::Width::I16 => (sub / 2, 2 * k),
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
                    let (s, sum) = row_terms(a, r + i, b, sub);
                    let (s, sum) = (_mm512_set1_ps(s), _mm512_set1_ps(sum));
                    acc[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][0]), _mm512_mul_ps(d0, s), acc[i][0]);
                    acc[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][1]), _mm512_mul_ps(d1, s), acc[i][1]);
                    acc[i][0] = _mm512_fmadd_ps(m0, sum, acc[i][0]);
                    acc[i][1] = _mm512_fmadd_ps(m1, sum, acc[i][1]);
                }
            }
            store(&acc, r, dst, out, col0, c0, cols);
        }
    }

    /// Rows `r ..` of `acc` (columns `c0 .. c0 + 32` of the panel) into `dst`, the columns past
    /// `cols` left out.
    ///
    /// # Safety
    /// As [`super::multiply`], for rows `r .. r + acc.len()`.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) unsafe fn store(
        acc: &[[__m512; 2]],
        r: usize,
        dst: *mut f32,
        out: usize,
        col0: usize,
        c0: usize,
        cols: usize,
    ) {
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

// Only the AMX kernel (x86-64 Linux, amx.rs) stores through this from outside the module.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub(super) use x86::store;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use candle_core::quantized::QTensor;
    use candle_core::{Device, Tensor};

    use crate::engine::weights::{Encoded, Stacked};

    const TYPES: [GgmlDType; 8] = [
        GgmlDType::Q4_0,
        GgmlDType::Q4_1,
        GgmlDType::Q5_0,
        GgmlDType::Q5_1,
        GgmlDType::Q8_0,
        GgmlDType::Q4K,
        GgmlDType::Q5K,
        GgmlDType::Q6K,
    ];

    #[test]
    fn blocks_of_bytes_scales_and_offsets_give_candles_values() -> candle_core::Result<()> {
        let k = 512;
        let w = Tensor::randn(0f32, 1., (1, k), &Device::Cpu)?;
        for dtype in TYPES {
            let q = QTensor::quantize(&w, dtype)?;
            let want: Vec<f32> = q.dequantize(&Device::Cpu)?.flatten_all()?.to_vec1()?;
            let mut u = vec![0u8; k];
            let sub = sub_block(dtype);
            let mut dm = vec![(0f32, 0f32); k / sub];
            decode_row(dtype, &q.data()?, &mut u, |b, d, m| dm[b] = (d, m));
            for (i, &want) in want.iter().enumerate() {
                let (d, m) = dm[i / sub];
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
        x[20] = 1.0;
        let a = quantize_acts(&x, 32, Width::I8, Kernel::Avx512);
        assert_eq!(&a.q[..4], &[127, -50i8 as u8, 2, 0]);
        assert!((a.scale[0] - 0.02).abs() < 1e-7);
        assert!((a.sum[0] - 0.02 * 129.0).abs() < 1e-6, "{}", a.sum[0]);
        // The halves' sums: 127 - 50 + 2 in the first 16, 50 in the second.
        assert!((a.sum16[0] - 0.02 * 79.0).abs() < 1e-6 && (a.sum16[1] - 0.02 * 50.0).abs() < 1e-6);
        // A block of zeros: scale 0, all zero.
        assert_eq!(quantize_acts(&[0f32; 32], 32, Width::I8, Kernel::Avx512).q, vec![0u8; 32]);
        // 16 bits: the step is 2.54 / 32767; -1.0 is -12900.3 steps.
        let a = quantize_acts(&x, 32, Width::I16, Kernel::Avx512);
        assert_eq!(i16::from_le_bytes([a.q[0], a.q[1]]), 32767);
        assert_eq!(i16::from_le_bytes([a.q[2], a.q[3]]), -12900);
        // For AMX, as a signed and an unsigned byte: 32767 = 256·127 + 255, -12900 = 256·(-51)
        // + 156; then 15 rows of zeros.
        let a = quantize_acts(&x, 32, Width::I16, Kernel::Amx);
        assert_eq!((&a.q[..2], &a.lo[..2]), (&[127, -51i8 as u8][..], &[255, 156][..]));
        assert_eq!((a.q.len(), a.lo.len()), (16 * 32, 16 * 32));
        // The vector code gives the reference's numbers.
        let x: Vec<f32> = (0..64 * 32).map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 0.0137).collect();
        for width in [Width::I8, Width::I16] {
            let (v, r) = (quantize_acts(&x, 64, width, Kernel::Avx512), quantize_acts_scalar(&x, 64, width));
            assert_eq!((v.q, v.scale, v.sum, v.sum16), (r.q, r.scale, r.sum, r.sum16), "{width:?}");
        }
    }

    /// The i-th quantised activation of `a` as an integer.
    fn act(a: &Acts, i: usize) -> i64 {
        match (a.kernel, a.width) {
            (_, Width::I8) => a.q[i] as i8 as i64,
            (Kernel::Avx512, Width::I16) => i16::from_le_bytes([a.q[2 * i], a.q[2 * i + 1]]) as i64,
            (Kernel::Amx | Kernel::Neon, Width::I16) => 256 * (a.q[i] as i8 as i64) + a.lo[i] as i64,
        }
    }

    /// `w [out, k]` in `dtype`.
    pub(crate) fn encoded(w: &Tensor, dtype: GgmlDType) -> candle_core::Result<Encoded> {
        let (out, k) = w.dims2()?;
        let bytes = QTensor::quantize(w, dtype)?.data()?.to_vec();
        let mut map = memmap2::MmapMut::map_anon(bytes.len()).unwrap();
        map.copy_from_slice(&bytes);
        let map = std::sync::Arc::new(map.make_read_only().unwrap());
        Ok(Encoded::new(map, 0, dtype, out, k).unwrap())
    }

    /// `w [out, k]` in `dtype` as a stack of one part.
    fn stacked(w: &Tensor, dtype: GgmlDType) -> candle_core::Result<Stacked> {
        Stacked::new(vec![encoded(w, dtype)?])
    }

    /// A kernel's multiply: [`multiply`] (AVX-512) or `amx::multiply`.
    pub(crate) type Multiply = unsafe fn(&Panel, &Acts, (usize, usize), *mut f32, usize, usize, usize);

    /// `x · wᵀ` through `kernel` (multiplying with `mul`), panel by panel.
    pub(crate) fn product(
        w: &Stacked,
        x: &[f32],
        rows: usize,
        width: Width,
        (kernel, mul): (Kernel, Multiply),
    ) -> (Acts, Vec<f32>) {
        let (out, k) = (w.rows(), w.cols());
        let a = quantize_acts(x, k, width, kernel);
        let mut dst = vec![f32::NAN; rows * out];
        let mut p = Panel::default();
        for pi in 0..out.div_ceil(COLS) {
            decode_panel(w, pi, k, width, kernel, &mut p);
            let cols = (out - pi * COLS).min(COLS);
            // SAFETY: the kernel runs here (the callers check); dst holds rows × out values.
            unsafe { mul(&p, &a, (0, rows), dst.as_mut_ptr(), out, pi * COLS, cols) };
        }
        (a, dst)
    }

    #[test]
    fn the_kernel_equals_the_sum_it_stands_for() -> candle_core::Result<()> {
        if !available() {
            return Ok(());
        }
        equals_the_sum((Kernel::Avx512, multiply))
    }

    /// The kernel's result against the same arithmetic in f64: Σ_b d·s·Σ u·q + m·s·Σ q; and
    /// against the exact product within the activations' rounding (AVX-512 here, AMX in
    /// `amx.rs`).
    pub(crate) fn equals_the_sum((kernel, mul): (Kernel, Multiply)) -> candle_core::Result<()> {
        let (k, out) = (256, 80);
        for width in [Width::I8, Width::I16] {
            for dtype in TYPES {
                let w = Tensor::randn(0f32, 1., (out, k), &Device::Cpu)?;
                let stacked = stacked(&w, dtype)?;
                // 19 rows: tiles of 6, 2 and 1 on AVX-512; one whole tile and a part on AMX.
                let rows = 19;
                let x: Vec<f32> = Tensor::randn(0f32, 1., (rows, k), &Device::Cpu)?.flatten_all()?.to_vec1()?;
                let (a, dst) = product(&stacked, &x, rows, width, (kernel, mul));
                let sub = sub_block(dtype);
                for r in 0..rows {
                    for c in 0..out {
                        let (dtype_, row) = stacked.row_bytes(c);
                        let mut u = vec![0u8; k];
                        let mut dm = vec![(0f32, 0f32); k / sub];
                        decode_row(dtype_, row, &mut u, |b, d, m| dm[b] = (d, m));
                        let (mut want, mut exact, mut bound) = (0f64, 0f64, 1e-4);
                        for b in 0..k / sub {
                            let (d, m) = dm[b];
                            let (s, sum) = row_terms(&a, r, b, sub);
                            let idx = |i: usize| r * k + b * sub + i;
                            let dot: i64 = (0..sub).map(|i| u[b * sub + i] as i64 * act(&a, idx(i))).sum();
                            want += d as f64 * s as f64 * dot as f64 + m as f64 * sum as f64;
                            for i in 0..sub {
                                let wv = (d * u[b * sub + i] as f32 + m) as f64;
                                exact += x[idx(i)] as f64 * wv;
                                bound += wv.abs() * s as f64 / 2.0;
                            }
                        }
                        let got = dst[r * out + c] as f64;
                        let tag = format!("{kernel:?} {width:?} {dtype:?} ({r}, {c})");
                        assert!((got - want).abs() <= 1e-4 * (1.0 + want.abs()), "{tag}: {got} vs {want}");
                        assert!((got - exact).abs() <= bound, "{tag}: {got} vs exact {exact} (bound {bound})");
                    }
                }
            }
        }
        Ok(())
    }
}
