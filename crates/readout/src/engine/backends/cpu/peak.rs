//! The peak rate of each instruction the CPU kernels multiply with, measured on one thread.
//!
//! Why it exists: a kernel's achieved rate (multiply-adds per second in `readout bench
//! profile`) means something only beside what the instruction can do on this CPU. The peak is
//! measured, not read from a datasheet: a loop of the instruction alone on operands already in
//! registers (twelve independent accumulators for the vector instructions, four tiles for AMX),
//! no loads, no stores, best of five tries. It is the ceiling the kernel could reach if nothing
//! but the multiply ran; the gap to it is the kernel's loads, scaling and bookkeeping.

/// The measured peak of one instruction.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Peak {
    /// The instruction and its operands, as the assembly names them.
    pub instruction: &'static str,
    /// The kernel that multiplies with it.
    pub used_by: &'static str,
    /// Multiply-adds one instruction does.
    pub multiply_adds_per_instruction: u64,
    /// Billions of multiply-adds a second, one thread.
    pub giga_multiply_adds_per_second: f64,
}

/// The peaks of the instructions this CPU has, each measured for about `seconds` in all.
pub fn peaks(seconds: f64) -> Vec<Peak> {
    x86::peaks(seconds)
}

/// Times `f(iterations)` (which does `per_iteration` multiply-adds an iteration), best of five,
/// and returns billions of multiply-adds a second.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn rate(seconds: f64, per_iteration: u64, mut f: impl FnMut(u64)) -> f64 {
    // Calibrate the count to a fifth of the time asked, then keep the best of five.
    let mut n = 1u64 << 10;
    loop {
        let t = std::time::Instant::now();
        f(n);
        if t.elapsed().as_secs_f64() > seconds / 50.0 || n > 1 << 40 {
            break;
        }
        n *= 2;
    }
    let n = ((n as f64) * (seconds / 5.0) / (seconds / 50.0)).max(1.0) as u64;
    let best = (0..5)
        .map(|_| {
            let t = std::time::Instant::now();
            f(n);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    (n * per_iteration) as f64 / best * 1e-9
}

#[cfg(not(target_arch = "x86_64"))]
mod x86 {
    pub(super) fn peaks(_: f64) -> Vec<super::Peak> {
        Vec::new()
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{rate, Peak};
    use std::arch::x86_64::*;
    use std::hint::black_box;

    pub(super) fn peaks(seconds: f64) -> Vec<Peak> {
        let mut out = Vec::new();
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F is present (checked above).
            let g = rate(seconds, 12 * 16, |n| unsafe { fma(n) });
            out.push(Peak {
                instruction: "vfmadd231ps zmm",
                used_by: "f32 panels (gemm), attention",
                multiply_adds_per_instruction: 16,
                giga_multiply_adds_per_second: g,
            });
        }
        if super::super::int8::available() {
            // SAFETY: AVX-512 VNNI is present (`int8::available`).
            let g = rate(seconds, 12 * 32, |n| unsafe { dpwssd(n) });
            out.push(Peak {
                instruction: "vpdpwssd zmm",
                used_by: "integer kernel, avx512, 16-bit activations",
                multiply_adds_per_instruction: 32,
                giga_multiply_adds_per_second: g,
            });
            // SAFETY: as above.
            let g = rate(seconds, 12 * 64, |n| unsafe { dpbusd(n) });
            out.push(Peak {
                instruction: "vpdpbusd zmm",
                used_by: "integer kernel, avx512, 8-bit activations",
                multiply_adds_per_instruction: 64,
                giga_multiply_adds_per_second: g,
            });
        }
        if super::super::amx::available() {
            // SAFETY: AMX runs here and the process may use the tiles (`amx::available`).
            let g = rate(seconds, 4 * 16 * 16 * 64, |n| unsafe { super::super::amx::peak_loop(n) });
            out.push(Peak {
                instruction: "tdpbsud tmm (16 × 64 by 64 × 16 bytes)",
                used_by: "integer kernel, amx (16-bit activations: two per block)",
                multiply_adds_per_instruction: 16 * 16 * 64,
                giga_multiply_adds_per_second: g,
            });
        }
        out
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn fma(n: u64) {
        let mut acc = [_mm512_set1_ps(0.0); 12];
        let (a, b) = (black_box(_mm512_set1_ps(1.0001)), black_box(_mm512_set1_ps(0.9999)));
        for _ in 0..n {
            for x in acc.iter_mut() {
                *x = _mm512_fmadd_ps(a, b, *x);
            }
        }
        black_box(acc);
    }

    #[target_feature(enable = "avx512f,avx512vnni")]
    unsafe fn dpwssd(n: u64) {
        let mut acc = [_mm512_setzero_si512(); 12];
        let (a, b) = (black_box(_mm512_set1_epi16(3)), black_box(_mm512_set1_epi16(5)));
        for _ in 0..n {
            for x in acc.iter_mut() {
                *x = _mm512_dpwssd_epi32(*x, a, b);
            }
        }
        black_box(acc);
    }

    #[target_feature(enable = "avx512f,avx512vnni")]
    unsafe fn dpbusd(n: u64) {
        let mut acc = [_mm512_setzero_si512(); 12];
        let (a, b) = (black_box(_mm512_set1_epi8(3)), black_box(_mm512_set1_epi8(5)));
        for _ in 0..n {
            for x in acc.iter_mut() {
                *x = _mm512_dpbusd_epi32(*x, a, b);
            }
        }
        black_box(acc);
    }
}
