//! Where a run's time goes: counters the CPU engine adds to while profiling is on, read by
//! `readout bench profile`.
//!
//! Why it exists: the next speed step should be chosen from figures — the share of a run in the
//! projections (and within them quantising the activations, decoding the weight panels, and the
//! multiply itself), in attention, in the head, and outside the forward passes (the planner,
//! the prompts, the combining) — not from guesses. Off, a counter costs one relaxed load per
//! timed step; nothing is timed inside the kernels' inner loops.
//!
//! The counters are the process's: profile one run at a time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// A timed step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The forward passes (wall).
    Forward,
    /// Reading the head at the rows read (wall).
    Head,
    /// The projections: every `x · Wᵀ` of the blocks (wall).
    Projections,
    /// Attention between the projections: scores, softmax, values, the KV cache's f16 rounding
    /// (wall).
    Attention,
    /// Quantising the activations for the integer kernel (wall, before the tasks start).
    Quantize,
    /// Decoding weight panels (summed over the threads).
    Decode,
    /// The integer kernel's multiply (summed over the threads).
    Multiply,
    /// f32 panels through gemm (summed over the threads).
    DenseMultiply,
}

const STAGES: usize = 8;

static ON: AtomicBool = AtomicBool::new(false);
static NANOS: [AtomicU64; STAGES] = [const { AtomicU64::new(0) }; STAGES];
/// Multiply-adds of the integer kernel, of gemm, and weights decoded.
static INT_MACS: AtomicU64 = AtomicU64::new(0);
static DENSE_MACS: AtomicU64 = AtomicU64::new(0);
static DECODED: AtomicU64 = AtomicU64::new(0);

/// Turn profiling on or off; turning it on zeroes the counters.
pub fn enable(on: bool) {
    if on {
        for n in &NANOS {
            n.store(0, Ordering::Relaxed);
        }
        for c in [&INT_MACS, &DENSE_MACS, &DECODED, &IN_PASSES] {
            c.store(0, Ordering::Relaxed);
        }
    }
    ON.store(on, Ordering::Relaxed);
}

/// Whether profiling is on.
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Times a step until dropped, when profiling is on.
pub(crate) struct Timer(Option<(Stage, Instant)>);

impl Drop for Timer {
    fn drop(&mut self) {
        if let Some((stage, t0)) = self.0 {
            NANOS[stage as usize].fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

/// Start timing `stage`.
pub(crate) fn time(stage: Stage) -> Timer {
    Timer(on().then(|| (stage, Instant::now())))
}

/// Passes running now, and since when one has been.
static RUNNING: std::sync::Mutex<(usize, Option<Instant>)> = std::sync::Mutex::new((0, None));
/// Wall time with at least one pass running (passes run two at a time on two halves of the
/// threads, so the stages' own wall times overlap and sum to more than this).
static IN_PASSES: AtomicU64 = AtomicU64::new(0);

/// Marks a pass (forward and head) as running until dropped, when profiling is on.
pub(crate) struct Running(bool);

/// Start a pass.
pub(crate) fn pass() -> Running {
    if !on() {
        return Running(false);
    }
    let mut r = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    r.0 += 1;
    if r.0 == 1 {
        r.1 = Some(Instant::now());
    }
    Running(true)
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.0 {
            return;
        }
        let mut r = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        r.0 = r.0.saturating_sub(1);
        if r.0 == 0 {
            if let Some(t0) = r.1.take() {
                IN_PASSES.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
        }
    }
}

/// Count `n` multiply-adds of the integer kernel, or of gemm when `dense`.
pub(crate) fn count_macs(n: u64, dense: bool) {
    if on() {
        (if dense { &DENSE_MACS } else { &INT_MACS }).fetch_add(n, Ordering::Relaxed);
    }
}

/// Count `n` weights decoded into panels.
pub(crate) fn count_decoded(n: u64) {
    if on() {
        DECODED.fetch_add(n, Ordering::Relaxed);
    }
}

/// The counters since profiling was turned on: seconds per step, and counts.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counters {
    /// Wall time with at least one pass running.
    pub in_passes_seconds: f64,
    /// The stages' wall times below are summed over the passes running at once.
    pub forward_seconds: f64,
    pub head_seconds: f64,
    pub projections_seconds: f64,
    pub attention_seconds: f64,
    pub quantize_seconds: f64,
    /// Summed over the threads.
    pub decode_thread_seconds: f64,
    /// Summed over the threads.
    pub multiply_thread_seconds: f64,
    /// Summed over the threads.
    pub dense_multiply_thread_seconds: f64,
    pub integer_multiply_adds: u64,
    pub dense_multiply_adds: u64,
    pub weights_decoded: u64,
}

/// Read the counters.
pub fn counters() -> Counters {
    let s = |stage: Stage| NANOS[stage as usize].load(Ordering::Relaxed) as f64 * 1e-9;
    Counters {
        in_passes_seconds: IN_PASSES.load(Ordering::Relaxed) as f64 * 1e-9,
        forward_seconds: s(Stage::Forward),
        head_seconds: s(Stage::Head),
        projections_seconds: s(Stage::Projections),
        attention_seconds: s(Stage::Attention),
        quantize_seconds: s(Stage::Quantize),
        decode_thread_seconds: s(Stage::Decode),
        multiply_thread_seconds: s(Stage::Multiply),
        dense_multiply_thread_seconds: s(Stage::DenseMultiply),
        integer_multiply_adds: INT_MACS.load(Ordering::Relaxed),
        dense_multiply_adds: DENSE_MACS.load(Ordering::Relaxed),
        weights_decoded: DECODED.load(Ordering::Relaxed),
    }
}
