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
}
