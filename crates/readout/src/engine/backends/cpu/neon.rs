//! The integer kernel on aarch64 (Apple silicon, Graviton, Ampere): NEON's byte dot products.
//!
//! Why it exists: without it an aarch64 CPU multiplies native weights as f32 panels decoded each
//! pass, at f32's speed whatever the encoding. `sdot`/`udot` (FEAT_DotProd: every Apple M core,
//! Neoverse N1 and later) multiply 16 pairs of bytes into four 32-bit sums in the time an f32
//! `fmla` multiplies 4 pairs of floats; `usdot` (FEAT_I8MM: Apple M2 and later, Neoverse V1/N2)
//! multiplies unsigned bytes by signed ones.
//!
//! The kernel reads the panels and the activations in the AMX kernel's layout (`int8.rs`,
//! `decode_panel` and `quantize_acts` for [`Kernel::Neon`](super::int8::Kernel::Neon)): a
//! panel's bytes `u` as `[k / 4][64 columns][4 bytes]`, so that one 16-byte load holds four
//! columns' four bytes, exactly what `sdot v.4s, w.16b, a.4b[lane]` multiplies by four
//! activations; the activations a byte a value (8-bit: the value; 16-bit: the signed high byte
//! `h` of `q = 256·h + l`, the unsigned low byte `l` apart). A sub-block's integer sum is then
//!
//! - `Σ u·h` signed × unsigned: with i8mm one `usdot`; with dotprod alone `u` is not a signed
//!   byte (Q8_0's reaches 255), so `sdot` multiplies `u − 128` (`u ^ 0x80`) and `128·Σ h` is
//!   added back;
//! - `Σ u·l` (16-bit only) unsigned × unsigned: `udot`;
//! - `Σ u·q = 256·Σ u·h + Σ u·l`, as integers, before any rounding;
//!
//! all exact, so both forms give the integers the AVX-512 and AMX kernels sum. They are then
//! scaled and offset in the same order, by fused multiply-adds as there (`acc + dot·(d·s)`, then
//! `acc + m·(s·Σq)`), so a row gives the same bits on an Apple laptop as on a Xeon: the tests
//! check the NEON code against a portable scalar reference (under qemu in CI), and that
//! reference against the AVX-512 kernel (on x86-64).
//!
//! Stable Rust does not yet have the dot-product intrinsics (`stdarch_neon_dotprod`,
//! `stdarch_neon_i8mm`), so those three instructions are inline assembly; the rest is
//! `std::arch::aarch64`. Without dotprod (Cortex-A72, a Raspberry Pi 4) [`available`] is false
//! and the f32 panels multiply.

/// Whether the NEON integer kernel runs here: an aarch64 CPU with the dot-product instructions.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("dotprod")
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        false
    }
}

#[cfg(target_arch = "aarch64")]
pub(super) use arm::multiply;

/// Never called: [`available`] is false here.
#[cfg(not(target_arch = "aarch64"))]
pub(super) unsafe fn multiply(
    _: &super::int8::Panel,
    _: &super::int8::Acts,
    _: (usize, usize),
    _: *mut f32,
    _: usize,
    _: usize,
    _: usize,
) {
    unreachable!("the NEON kernel is only chosen where `available()` is true");
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::super::int8::{row_terms, Acts, Panel, Width, COLS};
    use std::arch::aarch64::*;
    use std::arch::asm;

    /// Output columns a tile multiplies: two vectors of four.
    const TILE_COLS: usize = 8;

    /// `dst[r, col0 + c] = Σ_k a[r, k] · w[c, k]` for rows `r0..r1` and the panel's first `cols`
    /// columns (as `int8::multiply`), on NEON; with `usdot` where the CPU has i8mm.
    ///
    /// # Safety
    /// [`super::available`] must be true; `p` and `a` made for `Kernel::Neon`; `dst` must have
    /// room for row `r1 - 1`'s column `col0 + cols - 1` at `(r1 - 1) * out + col0 + cols - 1`,
    /// and nothing else may write those elements meanwhile.
    pub(in super::super) unsafe fn multiply(
        p: &Panel,
        a: &Acts,
        rows: (usize, usize),
        dst: *mut f32,
        out: usize,
        col0: usize,
        cols: usize,
    ) {
        if std::arch::is_aarch64_feature_detected!("i8mm") {
            multiply_with::<true>(p, a, rows, dst, out, col0, cols)
        } else {
            multiply_with::<false>(p, a, rows, dst, out, col0, cols)
        }
    }

    /// [`multiply`] with `usdot` (`MM`, i8mm) or with `sdot` on biased weights (dotprod only).
    ///
    /// # Safety
    /// As [`multiply`]; with `MM`, the CPU must have i8mm.
    pub(in super::super) unsafe fn multiply_with<const MM: bool>(
        p: &Panel,
        a: &Acts,
        (r0, r1): (usize, usize),
        dst: *mut f32,
        out: usize,
        col0: usize,
        cols: usize,
    ) {
        type Tile = unsafe fn(&Panel, &Acts, usize, *mut f32, usize, usize, usize);
        let wide = a.width == Width::I16;
        let pick = |n: usize| -> Tile {
            match (n, wide, MM) {
                (4, false, false) => tile_dot::<4, false>,
                (4, true, false) => tile_dot::<4, true>,
                (2, false, false) => tile_dot::<2, false>,
                (2, true, false) => tile_dot::<2, true>,
                (_, false, false) => tile_dot::<1, false>,
                (_, true, false) => tile_dot::<1, true>,
                (4, false, true) => tile_mm::<4, false>,
                (4, true, true) => tile_mm::<4, true>,
                (2, false, true) => tile_mm::<2, false>,
                (2, true, true) => tile_mm::<2, true>,
                (_, false, true) => tile_mm::<1, false>,
                (_, true, true) => tile_mm::<1, true>,
            }
        };
        let mut r = r0;
        while r < r1 {
            let n = match r1 - r {
                4.. => 4,
                2 | 3 => 2,
                _ => 1,
            };
            pick(n)(p, a, r, dst, out, col0, cols);
            r += n;
        }
    }

    /// [`tile`] with dotprod's instructions.
    ///
    /// # Safety
    /// As [`multiply`], for rows `r .. r + R`.
    #[target_feature(enable = "dotprod")]
    unsafe fn tile_dot<const R: usize, const WIDE: bool>(
        p: &Panel,
        a: &Acts,
        r: usize,
        dst: *mut f32,
        out: usize,
        col0: usize,
        cols: usize,
    ) {
        tile::<R, WIDE, false>(p, a, r, dst, out, col0, cols)
    }

    /// [`tile`] with i8mm's `usdot`.
    ///
    /// # Safety
    /// As [`multiply`], for rows `r .. r + R`; the CPU must have i8mm.
    #[target_feature(enable = "dotprod,i8mm")]
    unsafe fn tile_mm<const R: usize, const WIDE: bool>(
        p: &Panel,
        a: &Acts,
        r: usize,
        dst: *mut f32,
        out: usize,
        col0: usize,
        cols: usize,
    ) {
        tile::<R, WIDE, true>(p, a, r, dst, out, col0, cols)
    }

    /// Rows `r .. r + R` against the whole panel, eight columns at a time; `WIDE` when the
    /// activations are 16-bit, `MM` to multiply with `usdot`. Inlined into [`tile_dot`] and
    /// [`tile_mm`], whose target features the dot instructions are assembled under.
    ///
    /// # Safety
    /// As [`multiply`], for rows `r .. r + R`.
    #[inline(always)]
    unsafe fn tile<const R: usize, const WIDE: bool, const MM: bool>(
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
        for c0 in (0..COLS).step_by(TILE_COLS) {
            if c0 >= cols {
                break;
            }
            let mut acc = [[vdupq_n_f32(0.0); 2]; R];
            for b in 0..k / sub {
                // Σ u·h (signed; without i8mm, Σ (u − 128)·h), Σ u·l, and Σ h per row.
                let mut hi = [[vdupq_n_s32(0); 2]; R];
                let mut lo = [[vdupq_n_u32(0); 2]; R];
                let mut hsum = [0i32; R];
                // Sixteen values (four groups of four) at a time.
                for at in (b * sub..(b + 1) * sub).step_by(16) {
                    let mut h = [vdupq_n_s8(0); R];
                    let mut l = [vdupq_n_u8(0); R];
                    for i in 0..R {
                        // SAFETY: values at .. at + 16 of row r + i lie inside its k bytes
                        // (at + 16 ≤ k: sub-blocks are 16 or 32 values, k a multiple of 32).
                        h[i] = vld1q_s8(a.q.as_ptr().add((r + i) * k + at).cast());
                        if WIDE {
                            l[i] = vld1q_u8(a.lo.as_ptr().add((r + i) * k + at));
                        }
                        if !MM {
                            hsum[i] += vaddlvq_s8(h[i]) as i32;
                        }
                    }
                    let g = at / 4;
                    group::<0, R, WIDE, MM>(p, g, c0, &h, &l, &mut hi, &mut lo);
                    group::<1, R, WIDE, MM>(p, g + 1, c0, &h, &l, &mut hi, &mut lo);
                    group::<2, R, WIDE, MM>(p, g + 2, c0, &h, &l, &mut hi, &mut lo);
                    group::<3, R, WIDE, MM>(p, g + 3, c0, &h, &l, &mut hi, &mut lo);
                }
                // SAFETY: sub-block b's scales and offsets of columns c0 .. c0 + 8 (≤ 64).
                let dp = p.d.as_ptr().add(b * COLS + c0);
                let mp = p.m.as_ptr().add(b * COLS + c0);
                let d = [vld1q_f32(dp), vld1q_f32(dp.add(4))];
                let m = [vld1q_f32(mp), vld1q_f32(mp.add(4))];
                for i in 0..R {
                    let (s, sum) = row_terms(a, r + i, b, sub);
                    for v in 0..2 {
                        let mut dot = hi[i][v];
                        if !MM {
                            // Σ u·h = Σ (u − 128)·h + 128·Σ h.
                            dot = vaddq_s32(dot, vdupq_n_s32(128 * hsum[i]));
                        }
                        if WIDE {
                            // Σ u·q = 256·Σ u·h + Σ u·l (at most 32·255·32767 < 2³¹).
                            dot = vaddq_s32(vshlq_n_s32::<8>(dot), vreinterpretq_s32_u32(lo[i][v]));
                        }
                        // As the AVX-512 kernel: acc + dot·(d·s), then acc + m·(s·Σq), each one
                        // rounding (fmla is fused, scvtf rounds to nearest even).
                        acc[i][v] = vfmaq_f32(acc[i][v], vcvtq_f32_s32(dot), vmulq_n_f32(d[v], s));
                        acc[i][v] = vfmaq_f32(acc[i][v], m[v], vdupq_n_f32(sum));
                    }
                }
            }
            store(&acc, r, dst, out, col0, c0, cols);
        }
    }

    /// Group `g` (values `4g .. 4g + 4`, lane `L` of the activations' vectors `h` and `l`) of
    /// columns `c0 .. c0 + 8` into the rows' sums.
    ///
    /// # Safety
    /// Group `g` lies inside the panel and `c0 + 8 ≤ 64`; the CPU has dotprod (and i8mm with
    /// `MM`), and the caller's target features say so.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn group<const L: i32, const R: usize, const WIDE: bool, const MM: bool>(
        p: &Panel,
        g: usize,
        c0: usize,
        h: &[int8x16_t; R],
        l: &[uint8x16_t; R],
        hi: &mut [[int32x4_t; 2]; R],
        lo: &mut [[uint32x4_t; 2]; R],
    ) {
        // SAFETY: group g's columns c0 .. c0 + 8, four bytes each: 32 bytes inside the panel.
        let wp = p.u.as_ptr().add((g * COLS + c0) * 4);
        let w = [vld1q_u8(wp), vld1q_u8(wp.add(16))];
        let bias = vdupq_n_u8(0x80);
        let ws = [vreinterpretq_s8_u8(veorq_u8(w[0], bias)), vreinterpretq_s8_u8(veorq_u8(w[1], bias))];
        for i in 0..R {
            for v in 0..2 {
                hi[i][v] = if MM { usdot::<L>(hi[i][v], w[v], h[i]) } else { sdot::<L>(hi[i][v], ws[v], h[i]) };
                if WIDE {
                    lo[i][v] = udot::<L>(lo[i][v], w[v], l[i]);
                }
            }
        }
    }

    /// `acc + Σ` of four bytes of `w` times the four bytes of lane `L` of `x`, per 32-bit lane,
    /// both signed (`sdot`, by element).
    ///
    /// # Safety
    /// The CPU has dotprod, and the function this is inlined into enables it.
    #[inline(always)]
    unsafe fn sdot<const L: i32>(mut acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
        asm!("sdot {acc:v}.4s, {w:v}.16b, {x:v}.4b[{l}]", acc = inout(vreg) acc, w = in(vreg) w, x = in(vreg) x,
            l = const L, options(pure, nomem, nostack, preserves_flags));
        acc
    }

    /// As [`sdot`], both unsigned (`udot`).
    ///
    /// # Safety
    /// As [`sdot`].
    #[inline(always)]
    unsafe fn udot<const L: i32>(mut acc: uint32x4_t, w: uint8x16_t, x: uint8x16_t) -> uint32x4_t {
        asm!("udot {acc:v}.4s, {w:v}.16b, {x:v}.4b[{l}]", acc = inout(vreg) acc, w = in(vreg) w, x = in(vreg) x,
            l = const L, options(pure, nomem, nostack, preserves_flags));
        acc
    }

    /// As [`sdot`], `w` unsigned and `x` signed (`usdot`, i8mm).
    ///
    /// # Safety
    /// The CPU has i8mm, and the function this is inlined into enables it.
    #[inline(always)]
    unsafe fn usdot<const L: i32>(mut acc: int32x4_t, w: uint8x16_t, x: int8x16_t) -> int32x4_t {
        asm!("usdot {acc:v}.4s, {w:v}.16b, {x:v}.4b[{l}]", acc = inout(vreg) acc, w = in(vreg) w, x = in(vreg) x,
            l = const L, options(pure, nomem, nostack, preserves_flags));
        acc
    }

    /// Rows `r ..` of `acc` (columns `c0 .. c0 + 8` of the panel) into `dst`, the columns past
    /// `cols` left out.
    ///
    /// # Safety
    /// As [`multiply`], for rows `r .. r + acc.len()`.
    #[inline(always)]
    unsafe fn store(
        acc: &[[float32x4_t; 2]],
        r: usize,
        dst: *mut f32,
        out: usize,
        col0: usize,
        c0: usize,
        cols: usize,
    ) {
        for (i, row) in acc.iter().enumerate() {
            for (v, &val) in row.iter().enumerate() {
                let c = c0 + 4 * v;
                if c >= cols {
                    continue;
                }
                // SAFETY: the caller guarantees room for columns col0 .. col0 + cols of row
                // r + i; only columns below cols are written.
                let at = dst.add((r + i) * out + col0 + c);
                if c + 4 <= cols {
                    vst1q_f32(at, val);
                } else {
                    let mut t = [0f32; 4];
                    vst1q_f32(t.as_mut_ptr(), val);
                    for (j, &x) in t.iter().enumerate().take(cols - c) {
                        *at.add(j) = x;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::int8::tests::product;
    use super::super::int8::{row_terms, Acts, Kernel, Panel, Width, COLS};
    use crate::engine::weights::{Encoded, Stacked};
    use candle_core::quantized::GgmlDType;
    use half::f16;

    /// Every encoding the integer kernel reads: (type, bytes a block, values a block, the
    /// offsets of its f16 fields).
    const TYPES: [(GgmlDType, usize, usize, &[usize]); 8] = [
        (GgmlDType::Q4_0, 18, 32, &[0]),
        (GgmlDType::Q4_1, 20, 32, &[0, 2]),
        (GgmlDType::Q5_0, 22, 32, &[0]),
        (GgmlDType::Q5_1, 24, 32, &[0, 2]),
        (GgmlDType::Q8_0, 34, 32, &[0]),
        (GgmlDType::Q4K, 144, 256, &[0, 2]),
        (GgmlDType::Q5K, 176, 256, &[0, 2]),
        (GgmlDType::Q6K, 210, 256, &[208]),
    ];

    /// xorshift64*: the tests' numbers, the same on every machine.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// Uniform in [-1, 1).
        fn unit(&mut self) -> f32 {
            (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        }
    }

    /// `out × k` weights of `dtype` made of random bytes (every bit pattern of the values, Q8_0's
    /// −128 and 127 among them), their f16 scales random but finite.
    fn random_weights(rng: &mut Rng, dtype: GgmlDType, out: usize, k: usize) -> Encoded {
        let &(_, size, values, halves) = TYPES.iter().find(|t| t.0 == dtype).unwrap();
        let mut bytes: Vec<u8> = (0..out * k / values * size).map(|_| rng.next() as u8).collect();
        for blk in bytes.chunks_exact_mut(size) {
            for &at in halves {
                blk[at..at + 2].copy_from_slice(&f16::from_f32(0.05 * rng.unit()).to_le_bytes());
            }
        }
        let mut map = memmap2::MmapMut::map_anon(bytes.len()).unwrap();
        map.copy_from_slice(&bytes);
        Encoded::new(std::sync::Arc::new(map.make_read_only().unwrap()), 0, dtype, out, k).unwrap()
    }

    /// `rows × k` activations: random, with a row of blocks at the extremes (every value ±max,
    /// so the 16-bit values are ±32767) and a block of zeros.
    fn random_acts(rng: &mut Rng, rows: usize, k: usize) -> Vec<f32> {
        let mut x: Vec<f32> = (0..rows * k).map(|_| 3.0 * rng.unit()).collect();
        if rows > 1 {
            for (i, v) in x[k..2 * k].iter_mut().enumerate() {
                *v = if (i / 3) % 2 == 0 { 7.5 } else { -7.5 };
            }
        }
        x[..32].fill(0.0);
        x
    }

    /// The portable reference of the NEON kernel: the same layout, each sub-block's integer sum
    /// one product at a time, then scaled and offset in the same order with the same roundings
    /// (`mul_add` is a fused multiply-add, as `fmla` and `vfmadd`).
    ///
    /// # Safety
    /// As `int8::multiply`, for `p` and `a` made for [`Kernel::Neon`].
    unsafe fn reference(
        p: &Panel,
        a: &Acts,
        (r0, r1): (usize, usize),
        dst: *mut f32,
        out: usize,
        col0: usize,
        cols: usize,
    ) {
        let (k, sub) = (a.k, p.sub);
        for r in r0..r1 {
            for c in 0..cols {
                let mut acc = 0f32;
                for b in 0..k / sub {
                    let mut dot = 0i32;
                    for i in b * sub..(b + 1) * sub {
                        let u = p.u[(i / 4 * COLS + c) * 4 + i % 4] as i32;
                        let h = a.q[r * k + i] as i8 as i32;
                        let q = match a.width {
                            Width::I8 => h,
                            Width::I16 => 256 * h + a.lo[r * k + i] as i32,
                        };
                        dot += u * q;
                    }
                    let (s, sum) = row_terms(a, r, b, sub);
                    let (d, m) = (p.d[b * COLS + c], p.m[b * COLS + c]);
                    acc = (dot as f32).mul_add(d * s, acc);
                    acc = m.mul_add(sum, acc);
                }
                // SAFETY: the caller guarantees room for row r's columns col0 .. col0 + cols.
                *dst.add(r * out + col0 + c) = acc;
            }
        }
    }

    /// The cases: (k, the stack's parts (encoding, rows)).
    fn cases() -> Vec<(usize, Vec<(GgmlDType, usize)>)> {
        let mut cases = Vec::new();
        for &(dtype, ..) in &TYPES {
            let k =
                if dtype == GgmlDType::Q4K || dtype == GgmlDType::Q5K || dtype == GgmlDType::Q6K { 512 } else { 96 };
            // 70 outputs: a whole panel and a part of six columns (a half vector, a half tile).
            cases.push((k, vec![(dtype, 70)]));
        }
        cases.push((32, vec![(GgmlDType::Q8_0, 3)]));
        // A Q4_K_M file's q/k/v: Q4_K, Q6_K and Q4_1 parts, 16-value sub-blocks for every row.
        cases.push((256, vec![(GgmlDType::Q4K, 33), (GgmlDType::Q6K, 40), (GgmlDType::Q4_1, 64)]));
        cases
    }

    /// `got` and `want` bit for bit.
    fn same_bits(got: &[f32], want: &[f32], tag: &str) {
        assert_eq!(got.len(), want.len(), "{tag}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{tag}: element {i}: {g} vs {w}");
        }
    }

    /// The kernel `mul` against [`reference`] for every case, row count and width.
    fn against_the_reference(
        kernel: (Kernel, super::super::int8::tests::Multiply),
        name: &str,
    ) -> candle_core::Result<()> {
        let mut rng = Rng(0x5EED_1234_ABCD_0001);
        for (k, parts) in cases() {
            let encoded: Vec<Encoded> = parts.iter().map(|&(t, o)| random_weights(&mut rng, t, o, k)).collect();
            let w = Stacked::new(encoded)?;
            for rows in [1, 2, 3, 4, 5, 7, 11] {
                let x = random_acts(&mut rng, rows, k);
                for width in [Width::I8, Width::I16] {
                    let (_, got) = product(&w, &x, rows, width, kernel);
                    let (_, want) = product(&w, &x, rows, width, (Kernel::Neon, reference));
                    same_bits(&got, &want, &format!("{name} {width:?} {parts:?} k {k}, {rows} rows"));
                }
            }
        }
        Ok(())
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_reference_gives_the_bits_of_avx512() -> candle_core::Result<()> {
        // The NEON kernel's reference and the AVX-512 kernel: the same bits, so a result file
        // does not depend on whether an Intel or an Apple CPU made it.
        if !super::super::int8::available() {
            return Ok(());
        }
        against_the_reference((Kernel::Avx512, super::super::int8::multiply), "avx512")
    }

    #[test]
    #[cfg(target_arch = "aarch64")]
    fn neon_gives_the_bits_of_the_reference() -> candle_core::Result<()> {
        // CI runs this under `qemu-aarch64 -cpu max` with READOUT_TEST_NEON=required: there a
        // CPU without the instructions is a failure, not a skip.
        let required = std::env::var("READOUT_TEST_NEON").is_ok_and(|v| v == "required");
        if !super::available() {
            assert!(!required, "READOUT_TEST_NEON=required, and this CPU has no dotprod");
            eprintln!("no dotprod on this CPU: the NEON kernel is not tested");
            return Ok(());
        }
        against_the_reference((Kernel::Neon, super::arm::multiply_with::<false>), "dotprod")?;
        if std::arch::is_aarch64_feature_detected!("i8mm") {
            against_the_reference((Kernel::Neon, super::arm::multiply_with::<true>), "i8mm")?;
        } else {
            assert!(!required, "READOUT_TEST_NEON=required, and this CPU has no i8mm");
            eprintln!("no i8mm on this CPU: the usdot form is not tested");
        }
        Ok(())
    }

    #[test]
    #[cfg(target_arch = "aarch64")]
    fn the_neon_kernel_equals_the_sum_it_stands_for() -> candle_core::Result<()> {
        if !super::available() {
            return Ok(());
        }
        super::super::int8::tests::equals_the_sum((Kernel::Neon, super::multiply))
    }
}
