//! Small numeric helpers shared by the engine, the combiners and the metrics.

/// `log(sum(exp(x)))`, stable; `-inf` for an empty slice.
pub fn log_sum_exp(x: &[f32]) -> f32 {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !m.is_finite() {
        return m;
    }
    m + x.iter().map(|v| (v - m).exp()).sum::<f32>().ln()
}

/// Softmax of logits, in f64 for stable sums.
pub fn softmax(x: &[f32]) -> Vec<f64> {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let e: Vec<f64> = x.iter().map(|&v| (v as f64 - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}

/// Index of the largest value (the first on ties).
pub fn argmax(x: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    best
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny seeded generator, enough for picking samples
/// and resampling; the one generator of the library's seeded choices.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform-enough index in `0..n` (multiply-shift; bias below 2^-40 for any set we see).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// SplitMix64's output function: a 64-bit mix.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_by_hand() {
        // e^0 / (e^0 + e^ln3) = 1/4
        let p = softmax(&[0.0, 3f32.ln()]);
        assert!((p[0] - 0.25).abs() < 1e-7 && (p[1] - 0.75).abs() < 1e-7);
        assert!((log_sum_exp(&[0.0, 3f32.ln()]) - 4f32.ln()).abs() < 1e-6);
        assert_eq!(argmax(&[0.1, 0.5, 0.5]), 1);
    }

    #[test]
    fn splitmix64_reference_values() {
        // The first outputs for seed 0 (Vigna's reference implementation).
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
