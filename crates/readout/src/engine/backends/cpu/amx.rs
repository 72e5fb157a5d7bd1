//! The integer kernel on AMX tiles (Intel Xeon since Sapphire Rapids, Linux).
//!
//! Why it exists: at judge sizes (1.5B to 4B) the projections are nearly all of a run, and the
//! AVX-512 kernel (`int8.rs`) multiplies 16-bit activations with `vpdpwssd`, 32 products an
//! instruction. One AMX instruction multiplies a 16 × 64 tile of bytes by a 64 × 16 tile of
//! unsigned bytes, 16,384 products, into 16 × 16 integer sums. A 16-bit activation is a signed
//! high byte and an unsigned low one, `q = 256·h + l`, so a block's exact integer sum `Σ u·q` is
//! `256·Σ u·h + Σ u·l`: two tile products (`tdpbsud` signed × unsigned, `tdpbuud` unsigned ×
//! unsigned), joined as integers. From there the block is scaled
//! and offset by the same AVX-512 instructions in the same order as in `int8.rs`, so both
//! kernels give the same bits. 8-bit activations take one tile product.
//!
//! A tile product sums one sub-block (32 values; 16 for Q6_K): the scales change from one to
//! the next. Each product's 16 × 16 sums are stored to a buffer in L1 and scaled there.
//!
//! The instructions are written as inline assembly (stable Rust has no AMX intrinsics). Linux
//! hands a process the tiles' state only when asked (`arch_prctl(ARCH_REQ_XCOMP_PERM)`); where
//! it refuses, or elsewhere, [`available`] is false and the AVX-512 kernel runs.

/// Whether AMX-INT8 runs here: the CPU has it (and AVX-512 for the scaling), and the
/// operating system lets this process use the tiles. Asked once.
pub(crate) fn available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(detect)
}

/// The kernel to multiply with: AMX where [`available`], AVX-512 otherwise; NEON on aarch64.
pub(crate) fn best() -> super::int8::Kernel {
    if available() {
        super::int8::Kernel::Amx
    } else if cfg!(target_arch = "aarch64") {
        super::int8::Kernel::Neon
    } else {
        super::int8::Kernel::Avx512
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn detect() -> bool {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // CPUID leaf 7, sub-leaf 0, EDX: bit 24 AMX-TILE, bit 25 AMX-INT8.
    #[allow(unused_unsafe)]
    // SAFETY: CPUID is present on every x86-64 CPU; leaf 7 is read only where leaf 0 says it exists.
    let edx = unsafe {
        if __cpuid(0).eax < 7 {
            return false;
        }
        __cpuid_count(7, 0).edx
    };
    if edx & (1 << 24) == 0 || edx & (1 << 25) == 0 || !super::int8::available() {
        return false;
    }
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a request for a permission; it changes no memory of this process.
    unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn detect() -> bool {
    false
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub(super) use x86::{multiply, peak_loop};

/// Never called: [`available`] is false here.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[allow(dead_code)]
pub(super) unsafe fn peak_loop(_: u64) {
    unreachable!("the AMX peak is only measured where `available()` is true");
}

/// Never called: [`available`] is false here.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[allow(dead_code)]
pub(super) unsafe fn multiply(
    _: &super::int8::Panel,
    _: &super::int8::Acts,
    _: (usize, usize),
    _: *mut f32,
    _: usize,
    _: usize,
    _: usize,
) {
    unreachable!("the AMX kernel is only chosen where `available()` is true");
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod x86 {
    use super::super::int8::{row_terms, store, Acts, Panel, Width, COLS};
    use std::arch::asm;
    use std::arch::x86_64::*;

    /// The tiles' shapes, as `ldtilecfg` reads them: palette 1, then per tile its bytes per row
    /// (16-bit each, from byte 16) and its rows (from byte 48).
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    impl Config {
        /// Tiles 0 and 1: 16 rows of activations, a sub-block each (`sub` bytes); 2 and 3: the
        /// weights of a sub-block for 16 columns each (`sub / 4` rows of 64 bytes); 4 to 7: the
        /// 16 × 16 sums.
        fn new(sub: usize) -> Config {
            let mut c = [0u8; 64];
            c[0] = 1;
            let mut set = |t: usize, rows: usize, bytes: usize| {
                c[16 + 2 * t..18 + 2 * t].copy_from_slice(&(bytes as u16).to_le_bytes());
                c[48 + t] = rows as u8;
            };
            set(0, 16, sub);
            set(1, 16, sub);
            set(2, sub / 4, 64);
            set(3, sub / 4, 64);
            for t in 4..8 {
                set(t, 16, 64);
            }
            Config(c)
        }
    }

    /// `n` rounds of four `tdpbsud` on full tiles (16 × 64 bytes by 16 rows of 64 bytes) with
    /// nothing else: the instruction's peak (`peak.rs`).
    ///
    /// # Safety
    /// [`super::available`] is true.
    pub(in super::super) unsafe fn peak_loop(n: u64) {
        let mut c = [0u8; 64];
        c[0] = 1;
        for t in 0..8 {
            c[16 + 2 * t..18 + 2 * t].copy_from_slice(&64u16.to_le_bytes());
            c[48 + t] = 16;
        }
        let config = Config(c);
        let zeros = Sums([[0; 256]; 4]);
        let z = zeros.0.as_ptr();
        asm!("ldtilecfg [{}]", in(reg) config.0.as_ptr(), options(nostack, readonly));
        asm!(
            "tileloadd tmm0, [{z} + {s}*1]",
            "tileloadd tmm1, [{z} + {s}*1]",
            "tileloadd tmm2, [{z} + {s}*1]",
            "tileloadd tmm3, [{z} + {s}*1]",
            "tilezero tmm4",
            "tilezero tmm5",
            "tilezero tmm6",
            "tilezero tmm7",
            z = in(reg) z,
            s = in(reg) 64usize,
            options(nostack, readonly),
        );
        for _ in 0..n {
            asm!(
                "tdpbsud tmm4, tmm0, tmm2",
                "tdpbsud tmm5, tmm0, tmm3",
                "tdpbsud tmm6, tmm1, tmm2",
                "tdpbsud tmm7, tmm1, tmm3",
                options(nostack, nomem),
            );
        }
        asm!("tilerelease", options(nostack, nomem));
    }

    /// Four tiles of 16 × 16 sums, as stored from tiles 4 to 7.
    #[repr(C, align(64))]
    struct Sums([[i32; 256]; 4]);

    /// [`super::super::int8::multiply`] on AMX tiles: rows 16 at a time, 32 columns (two
    /// tiles) at a time.
    ///
    /// # Safety
    /// As [`super::super::int8::multiply`], with [`super::available`] true, `a` quantised and
    /// `p` decoded for [`super::super::int8::Kernel::Amx`].
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(in super::super) unsafe fn multiply(
        p: &Panel,
        a: &Acts,
        (r0, r1): (usize, usize),
        dst: *mut f32,
        out: usize,
        col0: usize,
        cols: usize,
    ) {
        let (k, sub) = (a.k, p.sub);
        let blocks = k / sub;
        let split = a.width == Width::I16;
        let config = Config::new(sub);
        let mut sums = Sums([[0; 256]; 4]);
        let c = sums.0.as_mut_ptr();
        // SAFETY: `config` is a valid palette-1 configuration (every shape within the tiles'
        // limits); the process may use the tiles (`available`).
        asm!("ldtilecfg [{}]", in(reg) config.0.as_ptr(), options(nostack, readonly));
        let mut r = r0;
        while r < r1 {
            let n = (r1 - r).min(16);
            for c0 in (0..COLS).step_by(32) {
                if c0 >= cols {
                    break;
                }
                let mut acc = [[_mm512_setzero_ps(); 2]; 16];
                for b in 0..blocks {
                    // SAFETY: rows r .. r + 16 of the activations lie inside `q` and `lo`
                    // (padded with 15 rows), their bytes b·sub .. (b + 1)·sub inside each row;
                    // the weights' rows b·sub/4 .. (b + 1)·sub/4 of 256 bytes, columns c0 ..
                    // c0 + 32, inside the panel; the sums' four 1 KiB tiles inside `sums`.
                    let ah = a.q.as_ptr().add(r * k + b * sub);
                    let bw = p.u.as_ptr().add((b * sub / 4 * COLS + c0) * 4);
                    if split {
                        let al = a.lo.as_ptr().add(r * k + b * sub);
                        asm!(
                            "tileloadd tmm0, [{ah} + {k}*1]",
                            "tileloadd tmm1, [{al} + {k}*1]",
                            "tileloadd tmm2, [{bw} + {pw}*1]",
                            "tileloadd tmm3, [{bw2} + {pw}*1]",
                            "tilezero tmm4",
                            "tilezero tmm5",
                            "tilezero tmm6",
                            "tilezero tmm7",
                            "tdpbsud tmm4, tmm0, tmm2",
                            "tdpbsud tmm5, tmm0, tmm3",
                            "tdpbuud tmm6, tmm1, tmm2",
                            "tdpbuud tmm7, tmm1, tmm3",
                            "tilestored [{c0} + {cs}*1], tmm4",
                            "tilestored [{c1} + {cs}*1], tmm5",
                            "tilestored [{c2} + {cs}*1], tmm6",
                            "tilestored [{c3} + {cs}*1], tmm7",
                            ah = in(reg) ah,
                            al = in(reg) al,
                            k = in(reg) k,
                            bw = in(reg) bw,
                            bw2 = in(reg) bw.add(64),
                            pw = in(reg) COLS * 4,
                            c0 = in(reg) c,
                            c1 = in(reg) c.add(1),
                            c2 = in(reg) c.add(2),
                            c3 = in(reg) c.add(3),
                            cs = in(reg) 64usize,
                            options(nostack),
                        );
                    } else {
                        asm!(
                            "tileloadd tmm0, [{ah} + {k}*1]",
                            "tileloadd tmm2, [{bw} + {pw}*1]",
                            "tileloadd tmm3, [{bw2} + {pw}*1]",
                            "tilezero tmm4",
                            "tilezero tmm5",
                            "tdpbsud tmm4, tmm0, tmm2",
                            "tdpbsud tmm5, tmm0, tmm3",
                            "tilestored [{c0} + {cs}*1], tmm4",
                            "tilestored [{c1} + {cs}*1], tmm5",
                            ah = in(reg) ah,
                            k = in(reg) k,
                            bw = in(reg) bw,
                            bw2 = in(reg) bw.add(64),
                            pw = in(reg) COLS * 4,
                            c0 = in(reg) c,
                            c1 = in(reg) c.add(1),
                            cs = in(reg) 64usize,
                            options(nostack),
                        );
                    }
                    let dp = p.d.as_ptr().add(b * COLS + c0);
                    let mp = p.m.as_ptr().add(b * COLS + c0);
                    let (d0, d1) = (_mm512_loadu_ps(dp), _mm512_loadu_ps(dp.add(16)));
                    let (m0, m1) = (_mm512_loadu_ps(mp), _mm512_loadu_ps(mp.add(16)));
                    for (i, acc) in acc.iter_mut().enumerate().take(n) {
                        let (s, sum) = row_terms(a, r + i, b, sub);
                        let (s, sum) = (_mm512_set1_ps(s), _mm512_set1_ps(sum));
                        // SAFETY: tile t's row i: 16 sums inside `sums`, 64-byte aligned.
                        let row = |t: usize| _mm512_load_si512(c.add(t).cast::<i32>().add(i * 16).cast());
                        let (mut dot0, mut dot1) = (row(0), row(1));
                        if split {
                            dot0 = _mm512_add_epi32(_mm512_slli_epi32::<8>(dot0), row(2));
                            dot1 = _mm512_add_epi32(_mm512_slli_epi32::<8>(dot1), row(3));
                        }
                        acc[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot0), _mm512_mul_ps(d0, s), acc[0]);
                        acc[1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1), _mm512_mul_ps(d1, s), acc[1]);
                        acc[0] = _mm512_fmadd_ps(m0, sum, acc[0]);
                        acc[1] = _mm512_fmadd_ps(m1, sum, acc[1]);
                    }
                }
                store(&acc[..n], r, dst, out, col0, c0, cols);
            }
            r += 16;
        }
        asm!("tilerelease", options(nostack, nomem));
    }
}

#[cfg(test)]
mod tests {
    use super::super::int8::tests::{encoded, equals_the_sum, product};
    use super::super::int8::{self, Kernel, Width};
    use super::{available, multiply};
    use crate::engine::weights::Stacked;
    use candle_core::quantized::GgmlDType;
    use candle_core::{Device, Tensor};

    #[test]
    fn the_amx_kernel_equals_the_sum_it_stands_for() -> candle_core::Result<()> {
        if !available() {
            return Ok(());
        }
        equals_the_sum((Kernel::Amx, multiply))
    }

    #[test]
    fn amx_gives_the_bits_of_avx512() -> candle_core::Result<()> {
        // The two kernels sum the same integers and scale them in the same order: a result file
        // does not depend on which one the CPU has. A stack of Q4_K and Q6_K parts (a Q4_K_M
        // file's q/k/v) takes 16-value sub-blocks for all its rows.
        if !available() {
            return Ok(());
        }
        let k = 512;
        let parts = [(GgmlDType::Q4K, 96), (GgmlDType::Q6K, 40), (GgmlDType::Q4_1, 64)];
        let mut parts_ = Vec::new();
        for (dtype, out) in parts {
            let w = Tensor::randn(0f32, 1., (out, k), &Device::Cpu)?;
            parts_.push(encoded(&w, dtype)?);
        }
        let w = Stacked::new(parts_)?;
        for rows in [1, 2, 17, 70] {
            let x: Vec<f32> = Tensor::randn(0f32, 1., (rows, k), &Device::Cpu)?.flatten_all()?.to_vec1()?;
            for width in [Width::I8, Width::I16] {
                let (_, avx) = product(&w, &x, rows, width, (Kernel::Avx512, int8::multiply));
                let (_, amx) = product(&w, &x, rows, width, (Kernel::Amx, multiply));
                assert_eq!(avx, amx, "{rows} rows, {width:?}");
            }
        }
        Ok(())
    }
}
