//! `readout bench profile EVALSET`: one run with the engine's counters on, and a result file of
//! where its time went — the projections (quantising the activations, decoding the weight
//! panels, the multiply), attention, the rest of the forward passes, the head, and the planner
//! (everything outside the passes) — with each kernel's achieved rate beside the measured peak
//! of its instruction on this CPU (`readout::engine::profile`).

use super::{ModelArgs, SelectArgs};
use anyhow::{Context, Result};
use clap::Args;
use readout::engine::profile;
use serde_json::json;
use std::path::PathBuf;

#[derive(Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    select: SelectArgs,
    /// Seconds spent measuring each instruction's peak (one thread, operands in registers).
    #[arg(long, default_value_t = 1.0)]
    peak_seconds: f64,
    /// Write the profile here.
    #[arg(short, long)]
    out: PathBuf,
    /// Also write the run's result file here.
    #[arg(long)]
    result: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run_profile(a: ProfileArgs) -> Result<i32> {
    let sel = &a.select;
    let set = sel.load_set()?;
    let t0 = std::time::Instant::now();
    let engine = a.model.load()?;
    let load_seconds = t0.elapsed().as_secs_f64();
    let config = sel.builder()?.build()?.resolve(&engine);
    profile::enable(true);
    let result = sel.run_quietly(&engine, &set, config, load_seconds);
    profile::enable(false);
    let result = result?;
    let c = profile::counters();
    if let Some(path) = &a.result {
        result.write(path)?;
    }
    let threads = candle_core::utils::get_num_threads();
    let peaks = readout::engine::peaks(a.peak_seconds);
    let wall = result.timing.wall_seconds;
    // Two passes run at once, each on half the threads: the stages' wall times are summed over
    // them. A stage's share of the run is its share of the passes' summed time, times the share
    // of the run with a pass running; the planner's is the rest.
    let summed = c.forward_seconds + c.head_seconds;
    let in_passes = c.in_passes_seconds.min(wall);
    let share = |s: f64| if wall > 0.0 && summed > 0.0 { s / summed * in_passes / wall } else { 0.0 };
    let in_projections = c.projections_seconds;
    let other_forward = (c.forward_seconds - c.projections_seconds - c.attention_seconds).max(0.0);
    let planner = (wall - in_passes).max(0.0);
    let planner_share = if wall > 0.0 { planner / wall } else { 0.0 };
    let info = engine.info();
    // The instruction the integer kernel's multiply ran on.
    let instruction = match (info.cpu_kernel, info.activations) {
        (Some("amx"), _) => Some("tdpbsud"),
        // NEON: sdot (usdot with i8mm; 16-bit activations add a udot). No peak is measured.
        (Some("neon"), _) => Some("sdot"),
        (Some(_), "int8") => Some("vpdpbusd"),
        (Some(_), _) => Some("vpdpwssd"),
        _ => None,
    };
    let peak_of =
        |name: &str| peaks.iter().find(|p| p.instruction.starts_with(name)).map(|p| p.giga_multiply_adds_per_second);
    let rate = |macs: u64, secs: f64| if secs > 0.0 { macs as f64 / secs * 1e-9 } else { 0.0 };
    // 16-bit activations on AMX take two tile products a block: the instruction's work is twice
    // the model's multiply-adds.
    let int_factor = if instruction == Some("tdpbsud") && info.activations == "int16" { 2.0 } else { 1.0 };
    let int_rate = rate(c.integer_multiply_adds, c.multiply_thread_seconds);
    let dense_rate = rate(c.dense_multiply_adds, c.dense_multiply_thread_seconds);
    let kernels = json!([
        {
            "kernel": "integer (block projections, native weights)",
            "instruction": instruction,
            "multiply_adds": c.integer_multiply_adds,
            "multiply_thread_seconds": c.multiply_thread_seconds,
            "achieved_giga_multiply_adds_per_second_per_thread": int_rate,
            "instruction_giga_multiply_adds_per_second_per_thread": int_rate * int_factor,
            "peak_giga_multiply_adds_per_second_per_thread": instruction.and_then(peak_of),
            "share_of_peak": instruction.and_then(peak_of).map(|p| int_rate * int_factor / p),
        },
        {
            "kernel": "f32 panels (gemm)",
            "instruction": "vfmadd231ps",
            "multiply_adds": c.dense_multiply_adds,
            "multiply_thread_seconds": c.dense_multiply_thread_seconds,
            "achieved_giga_multiply_adds_per_second_per_thread": dense_rate,
            "peak_giga_multiply_adds_per_second_per_thread": peak_of("vfmadd231ps"),
            "share_of_peak": peak_of("vfmadd231ps").map(|p| dense_rate / p),
        },
        {
            "kernel": "panel decode (weights to bytes and block scales)",
            "weights_decoded": c.weights_decoded,
            "decode_thread_seconds": c.decode_thread_seconds,
            "giga_weights_per_second_per_thread": rate(c.weights_decoded, c.decode_thread_seconds),
        },
    ]);
    let accuracy = result.metrics.as_ref().map(|m| m.overall.accuracy);
    let summary = json!({
        "schema": "readout.bench.profile",
        "schema_version": 1,
        "label": "MEASURED",
        "created": readout::formats::results::now_utc(),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "eval_set": set.name,
        "rows": result.rows.len(),
        "model": info.name,
        "model_file": info.path.file_name().map(|f| f.to_string_lossy().into_owned()),
        "device": info.device,
        "threads": threads,
        "activations": info.activations,
        "cpu_kernel": info.cpu_kernel,
        "shots": sel.shots,
        "debias": sel.debias.as_str(),
        "accuracy": accuracy,
        "wall_seconds": wall,
        "model_load_seconds": load_seconds,
        "peak_rss_bytes": result.timing.peak_rss_bytes,
        "seconds_summed_over_concurrent_passes": {
            "projections": in_projections,
            "of_which_quantize": c.quantize_seconds,
            "attention": c.attention_seconds,
            "rest_of_forward": other_forward,
            "head": c.head_seconds,
        },
        "wall_seconds_with_a_pass_running": in_passes,
        "wall_seconds_planner_and_outside_passes": planner,
        "share_of_wall": {
            "projections": share(in_projections),
            "attention": share(c.attention_seconds),
            "rest_of_forward": share(other_forward),
            "head": share(c.head_seconds),
            "planner_and_outside_passes": planner_share,
        },
        "projection_thread_seconds": {
            "decode_panels": c.decode_thread_seconds,
            "integer_multiply": c.multiply_thread_seconds,
            "f32_multiply": c.dense_multiply_thread_seconds,
            "quantize": c.quantize_seconds,
        },
        "kernels": kernels,
        "peaks": peaks,
        "peak_method": "each instruction alone in a loop on one thread, operands in registers (12 independent vector accumulators; 4 AMX tiles of sums), no loads or stores, best of 5 timed tries (readout::engine::peaks)",
        "counters": c,
    });
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    readout::atomic::write(&a.out, &serde_json::to_vec_pretty(&summary)?)?;
    eprintln!(
        "readout: {:.1} s: projections {:.0} %, attention {:.0} %, rest of the passes {:.0} %, head {:.0} %, planner {:.0} %; integer kernel {:.0} G multiply-adds/s a thread ({}); wrote {}",
        wall,
        100.0 * share(in_projections),
        100.0 * share(c.attention_seconds),
        100.0 * share(other_forward),
        100.0 * share(c.head_seconds),
        100.0 * planner_share,
        int_rate,
        instruction.unwrap_or("none"),
        a.out.display()
    );
    Ok(0)
}
