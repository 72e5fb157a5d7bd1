//! What a user chooses about the engine, and where each choice is made concrete: the option
//! enums of `--matmul`, `--weights`, `--kv-cache`, `--precision`, `--attention` and
//! `--fused-kernels`, the load and pass options, the device profile the defaults are decided by,
//! and the resolution of every `auto` for a device (a combination the device cannot run is
//! refused here, with what to use instead). Apart from the model so that a shell, a result file
//! or a test can name and resolve options without the model's code, and the model reads
//! resolved values only.

use crate::engine::backends::route::{self, DeviceKind, Op};
use crate::engine::device::{self, DeviceRequest};
use crate::engine::template::TemplateSource;
use crate::error::{Error, Result};
use candle_core::Device;

/// Which matmul kernel a projection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum MatmulPath {
    /// Weights dequantised to f32 once at load; f32 GEMM for every shape.
    Dense,
    /// candle's quantised kernels for every shape.
    Quantized,
    /// Dense for multi-token passes, quantised for single-token decode steps.
    Auto,
}

/// How the weights are held in memory: the `--weights` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightsMode {
    /// In the file's encoding (quantised or half precision), decoded by the kernels as they
    /// multiply: on the CPU our panels (`backends/cpu/project.rs`), on a GPU candle's quantised
    /// kernels.
    Native,
    /// Expanded to f32 once at load.
    F32,
    /// Native on the CPU and on Metal (memory the GPU shares with the system); on CUDA native
    /// when f32 weights would take more than half of the device's free memory, f32 otherwise.
    Auto,
}

/// How the KV cache holds keys and values: the `--kv-cache` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvCache {
    /// Half the memory of f32 (on the CPU). Attention sees every key and value rounded to f16,
    /// as llama.cpp's default cache does; its own sums stay f32.
    F16,
    /// Keys and values as the projections make them.
    F32,
    /// f16 on the CPU, f32 on a GPU.
    Auto,
}

/// The arithmetic of the dense matmuls on a GPU: the `--precision` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// f32 operands and sums (the default, and the only one on the CPU).
    F32,
    /// f32 tensors multiplied by the tensor cores in TF32 (10-bit mantissa operands, f32 sums):
    /// every f32 matmul of a pass, attention's included, and the attention kernel's q·k and p·v
    /// (CUDA; the kernel's TF32 form on compute capability 8.0 and later, head dims 64 and 128).
    Tf32,
    /// The block projections' weights held in bf16 and their inputs rounded to bf16 (f32 sums,
    /// f32 outputs); the attention kernel's products in TF32 as with `Tf32`; norms, softmax, the
    /// residual stream and the LM head stay f32 (CUDA).
    Bf16,
}

/// How a pass's attention is computed on a GPU: the `--attention` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionPath {
    /// Per segment: its prefix joined to the pass's keys and values, `q·kᵀ`, the mask added,
    /// softmax, `·v` (candle's ops; several launches a segment and layer).
    Matmuls,
    /// One kernel a layer for every segment of the pass (`backends/ops/tree_attention.rs`): on
    /// CUDA for speed, on the CPU for numbers that do not depend on the pass's shape.
    Kernel,
    /// `kernel` on a CUDA GPU (faster there: bench/results/cuda/precision-*), `matmuls`
    /// elsewhere (on Metal, where the kernel has no forward, the only one); a result file
    /// records the resolved path.
    Auto,
}

/// Whether a layer's element-wise steps run as our fused CUDA kernels: the `--fused-kernels`
/// option. On: the residual add with the RMSNorm after it, the q/k heads (their norms, RoPE and
/// the query scale) and the MLP's activation one launch each (`backends/ops/fused.rs`); off:
/// candle's ops, several launches each. The CPU path is the same either way (its own fused
/// loops).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FusedKernels {
    Off,
    /// CUDA only.
    On,
    /// `on` on a CUDA GPU, `off` elsewhere; a result file records the resolved value.
    Auto,
}

/// Which instructions the CPU's integer kernel multiplies with: the `--cpu-kernel` option. Both
/// give the same bits (`backends/cpu/amx.rs`); the choice is one of speed, and a way around a
/// machine whose tiles misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuKernel {
    /// AMX tiles where the CPU and the operating system allow them, AVX-512 VNNI otherwise.
    Auto,
    /// AVX-512 VNNI vectors even where AMX runs.
    Avx512,
}

option_names!(CpuKernel, "CPU kernel", "auto or avx512", { Auto => "auto", Avx512 => "avx512" });
option_names!(FusedKernels, "fused-kernels setting", "on, off or auto", { Off => "off", On => "on", Auto => "auto" });
option_names!(AttentionPath, "attention path", "matmuls, kernel or auto", { Matmuls => "matmuls", Kernel => "kernel", Auto => "auto" });
option_names!(Precision, "matmul precision", "f32, tf32 or bf16", { F32 => "f32", Tf32 => "tf32", Bf16 => "bf16" });
option_names!(MatmulPath, "matmul path", "dense, quantized or auto", { Dense => "dense", Quantized => "quantized", Auto => "auto" });
option_names!(WeightsMode, "weights mode", "native, f32 or auto", { Native => "native", F32 => "f32", Auto => "auto" });
option_names!(KvCache, "KV cache precision", "f16, f32 or auto", { F16 => "f16", F32 => "f32", Auto => "auto" });

/// A device as its defaults see it (`RunConfig::resolve_for`): a test can describe a GPU
/// without having one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceProfile {
    /// A GPU (CUDA, Metal) rather than the CPU.
    pub gpu: bool,
    /// The CPU threads the engine's work runs on.
    pub threads: usize,
}

impl DeviceProfile {
    /// The pass options for the device: full head, trimmed, [`CPU_PASS_TOKENS`] a pass on
    /// the CPU and [`GPU_PASS_TOKENS`] on a GPU, units grouped on a GPU only.
    pub fn pass_defaults(&self) -> PassOptions {
        PassOptions {
            prune_head: false,
            trim: true,
            pass_tokens: if self.gpu { GPU_PASS_TOKENS } else { CPU_PASS_TOKENS },
            group_units: self.gpu,
        }
    }
}

/// How to load a model.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub device: DeviceRequest,
    pub matmul: MatmulPath,
    /// In the file's encoding, or expanded to f32 (`--weights`).
    pub weights: WeightsMode,
    /// 8-bit activations in the integer kernel (`--int8-activations`): faster, and answers move.
    pub int8_activations: bool,
    /// How the KV cache holds keys and values (`--kv-cache`).
    pub kv_cache: KvCache,
    /// The dense matmuls' arithmetic on a GPU (`--precision`): f32, TF32 or bf16.
    pub precision: Precision,
    /// How a pass's attention is computed on a GPU (`--attention`).
    pub attention: AttentionPath,
    /// A layer's element-wise steps in fused CUDA kernels (`--fused-kernels`).
    pub fused_kernels: FusedKernels,
    /// CPU threads for the engine's work (`--threads`); `None`: one per core.
    pub threads: Option<usize>,
    /// The integer kernel's instructions on x86-64 (`--cpu-kernel`).
    pub cpu_kernel: CpuKernel,
    /// The chat template to read the model with (`--chat-template`); `None`: the model's own,
    /// and a model without one is refused.
    pub chat_template: Option<TemplateSource>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            device: DeviceRequest::Auto,
            matmul: MatmulPath::Dense,
            weights: WeightsMode::Auto,
            int8_activations: false,
            kv_cache: KvCache::Auto,
            precision: Precision::F32,
            attention: AttentionPath::Auto,
            fused_kernels: FusedKernels::Auto,
            threads: None,
            cpu_kernel: CpuKernel::Auto,
            chat_template: None,
        }
    }
}

/// How the engine makes its passes: chosen per call by the caller's configuration (a run's
/// levers), so a setting is applied where it is recorded. [`super::Engine::pass_defaults`] gives
/// the defaults for the engine's device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassOptions {
    /// The LM head cut to the letters read (`--prune-head`).
    pub prune_head: bool,
    /// Logits only at the read rows (on); off computes the full head at every row of a pass,
    /// as a plain forward does, to measure what trimming saves.
    pub trim: bool,
    /// Most new tokens in one forward pass (`--pass-tokens`).
    pub pass_tokens: usize,
    /// Units of one pass that share a parent run their attention together: on by default on a
    /// GPU, where fewer and larger kernels pay; off on the CPU, where the masked-out columns
    /// would cost arithmetic.
    pub group_units: bool,
}

/// Most new tokens in one pass when nothing decided it: the size result files written before the
/// lever was recorded were made with, and the CPU's default until passes of 512 tokens were
/// measured to cost no more time and less memory ([`CPU_PASS_TOKENS`]).
pub const DEFAULT_PASS_TOKENS: usize = 1024;

/// Most new tokens in one pass on the CPU unless the caller says otherwise. Two passes run side by
/// side, and each holds its activations and the keys and values of its prefixes, so the pass size
/// decides most of a run's memory beyond the weights; the answers never depend on it (a row's
/// numbers are its own, whatever shares its pass). On the 2-core AMD EPYC of
/// `bench/results/pass-tokens-cpu-epyc.json` (two rounds, sizes in turns), 512 against 1024
/// tokens: the default model's whole run 27.4 s against 28.8 s and 254 MiB against 346 MiB peak
/// RSS (llama.cpp's run of it: 267 MiB); the real Qwen2.5-Coder-1.5B judge's first 48 rows 85.4 s
/// against 88.4 s and 1,322 MiB against 1,471 MiB; the same bits at both sizes.
pub const CPU_PASS_TOKENS: usize = 512;

/// Most new tokens in one pass on a GPU unless the caller says otherwise: there a pass costs
/// the host its launches whatever its size, so fewer, larger passes pay (on an H200 the
/// Qwen3-0.6B-shaped run takes 0.63 s with 1024, 0.54 s with 4096 and 0.52 s with 16384 tokens a
/// pass in TF32; the default model's twin 0.59, 0.50 and 0.46 s in f32, for 1 GiB more device memory:
/// bench/results/cuda/pass-tokens-authored144-cyclic-3shot-*-h200.json).
pub const GPU_PASS_TOKENS: usize = 16384;

/// The load options made concrete for a device: every `auto` resolved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved {
    pub weights: WeightsMode,
    pub kv_cache: KvCache,
    pub attention: AttentionPath,
    pub fused_kernels: FusedKernels,
}

impl LoadOptions {
    /// These options made concrete for `device`, or the first one it cannot run refused (in the
    /// order: weights, precision, attention, fused kernels, KV cache). `f32_bytes` gives the
    /// size of the weights in f32; it is asked for only by `--weights auto` on CUDA (it reads the
    /// model's header).
    pub(crate) fn resolve(&self, device: &Device, f32_bytes: impl FnOnce() -> Result<u64>) -> Result<Resolved> {
        self.resolve_for(DeviceKind::of(device), || device::free_memory(device), f32_bytes)
    }

    /// [`Self::resolve`] for a device described by its kind and its free memory (asked for only
    /// with `f32_bytes`): a test resolves for a device it does not have. Every op of ours that
    /// an option turns on is asked of `backends::route`, which refuses it where it has no forward.
    pub(crate) fn resolve_for(
        &self,
        device: DeviceKind,
        free_memory: impl FnOnce() -> Option<u64>,
        f32_bytes: impl FnOnce() -> Result<u64>,
    ) -> Result<Resolved> {
        let weights = resolve_weights(self.weights, device, free_memory, f32_bytes)?;
        check_precision(self.precision, device, weights, self.matmul)?;
        let attention = resolve_attention(self.attention, device)?;
        let fused_kernels = resolve_fused_kernels(self.fused_kernels, device)?;
        let kv_cache = resolve_kv_cache(self.kv_cache, device)?;
        Ok(Resolved { weights, kv_cache, attention, fused_kernels })
    }
}

/// `--weights auto` made concrete for `device`: native on the CPU and on Metal (whose memory is
/// the system's); on CUDA native when f32 weights would take more than half of the device's free
/// memory, f32 otherwise. (Native weights off the CPU are candle's quantised matmul; the float
/// encodings are held in f32 there all the same: `backends/route.rs`.)
fn resolve_weights(
    mode: WeightsMode,
    device: DeviceKind,
    free_memory: impl FnOnce() -> Option<u64>,
    f32_bytes: impl FnOnce() -> Result<u64>,
) -> Result<WeightsMode> {
    match mode {
        WeightsMode::Auto if device == DeviceKind::Cuda => {
            let f32_bytes = f32_bytes()?;
            Ok(match free_memory() {
                Some(free) if f32_bytes > free / 2 => WeightsMode::Native,
                _ => WeightsMode::F32,
            })
        }
        WeightsMode::Auto => Ok(WeightsMode::Native),
        mode => Ok(mode),
    }
}

/// `--precision` where it can be had: TF32 and bf16 are CUDA's (cuBLAS's math mode, its bf16
/// GEMM); the CPU's matmuls are f32 (or the integer kernel's) and Metal's are not wired to them.
/// bf16 holds dense weights in bf16, so it needs them dense: native weights on a GPU are
/// candle's quantised kernels, which take f32 inputs.
fn check_precision(precision: Precision, device: DeviceKind, weights: WeightsMode, matmul: MatmulPath) -> Result<()> {
    if precision == Precision::F32 {
        return Ok(());
    }
    if device != DeviceKind::Cuda {
        let on = if device == DeviceKind::Cpu { "the CPU" } else { "this GPU" };
        return Err(Error::Config(format!(
            "--precision {} needs a CUDA GPU; on {on} the matmuls are f32 (use --precision f32, or --device cuda)",
            precision.as_str()
        )));
    }
    if precision == Precision::Bf16 && matmul != MatmulPath::Dense {
        return Err(Error::Config(format!(
            "--precision bf16 is for the dense matmuls, and --matmul {} uses candle's quantised kernels: use --matmul dense",
            matmul.as_str()
        )));
    }
    if precision == Precision::Bf16 && weights == WeightsMode::Native {
        return Err(Error::Config(
            "--precision bf16 holds dense weights in bf16, and the weights were kept in the file's encoding \
             (--weights native, or auto for a model too large for f32 on this GPU): use --weights f32, or --precision tf32"
                .into(),
        ));
    }
    Ok(())
}

/// `--attention auto` resolved by the route of the attention op (`backends/route.rs`): the
/// kernel on a CUDA GPU (one launch a layer instead of several a segment; faster on the models
/// docs/gpu.md's CUDA table measures), the matmuls elsewhere. `kernel` on the CPU is the op's CPU
/// forward: each score and weighted sum in key order, so a prompt's numbers do not depend on what
/// shares its pass (the matmuls' sums do, by their blocking), at some cost in speed; on Metal the
/// op has no forward, and `kernel` is refused.
fn resolve_attention(mode: AttentionPath, device: DeviceKind) -> Result<AttentionPath> {
    let asked = match mode {
        AttentionPath::Auto => None,
        AttentionPath::Kernel => Some(true),
        AttentionPath::Matmuls => Some(false),
    };
    match route::resolve(Op::TreeAttention, device, asked) {
        Ok(true) => Ok(AttentionPath::Kernel),
        Ok(false) => Ok(AttentionPath::Matmuls),
        Err(_) => Err(Error::Config(format!(
            "--attention kernel runs on a CUDA GPU or the CPU, not on {}; here attention runs as matmuls (use --attention matmuls or auto)",
            device.name()
        ))),
    }
}

/// `--fused-kernels auto` resolved by the routes of the ops it turns on (`backends/route.rs`):
/// on on a CUDA GPU, off elsewhere; `on` asked for where any of them has no forward (the CPU,
/// whose own fused loops run whatever the setting; Metal) is refused.
fn resolve_fused_kernels(mode: FusedKernels, device: DeviceKind) -> Result<FusedKernels> {
    let asked = match mode {
        FusedKernels::Auto => None,
        FusedKernels::On => Some(true),
        FusedKernels::Off => Some(false),
    };
    let mut on = true;
    for op in [Op::AddRmsNorm, Op::QkvHeads] {
        match route::resolve(op, device, asked) {
            Ok(ours) => on &= ours,
            Err(_) => {
                let there = match device {
                    DeviceKind::Cpu => "the CPU has fused loops of its own",
                    DeviceKind::Cuda | DeviceKind::Metal => "here a layer runs candle's ops",
                };
                return Err(Error::Config(format!(
                    "--fused-kernels on is for CUDA GPUs; {there} (use --fused-kernels off or auto)"
                )));
            }
        }
    }
    Ok(if on { FusedKernels::On } else { FusedKernels::Off })
}

/// `--kv-cache auto` made concrete by the route of the f16 cache (`backends/route.rs`): f16 on
/// the CPU, f32 on a GPU (whose cache is f32 only).
fn resolve_kv_cache(mode: KvCache, device: DeviceKind) -> Result<KvCache> {
    let asked = match mode {
        KvCache::Auto => None,
        KvCache::F16 => Some(true),
        KvCache::F32 => Some(false),
    };
    match route::resolve(Op::KvCacheF16, device, asked) {
        Ok(true) => Ok(KvCache::F16),
        Ok(false) => Ok(KvCache::F32),
        Err(_) => Err(Error::Config(
            "--kv-cache f16 is for the CPU; on a GPU the KV cache is f32 (use --kv-cache auto or f32)".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_auto_is_the_matmuls_on_the_cpu_and_the_kernel_is_taken_there_when_asked() {
        let cpu = DeviceKind::Cpu;
        assert_eq!(resolve_attention(AttentionPath::Auto, cpu).unwrap(), AttentionPath::Matmuls);
        assert_eq!(resolve_attention(AttentionPath::Matmuls, cpu).unwrap(), AttentionPath::Matmuls);
        assert_eq!(resolve_attention(AttentionPath::Kernel, cpu).unwrap(), AttentionPath::Kernel);
    }

    #[test]
    fn fused_kernels_auto_is_off_on_the_cpu_and_on_is_refused_there() {
        let cpu = DeviceKind::Cpu;
        assert_eq!(resolve_fused_kernels(FusedKernels::Auto, cpu).unwrap(), FusedKernels::Off);
        assert_eq!(resolve_fused_kernels(FusedKernels::Off, cpu).unwrap(), FusedKernels::Off);
        let e = resolve_fused_kernels(FusedKernels::On, cpu).unwrap_err().to_string();
        assert!(e.contains("--fused-kernels off or auto"), "{e}");
        assert_eq!("on".parse::<FusedKernels>(), Ok(FusedKernels::On));
        assert_eq!(
            "yes".parse::<FusedKernels>(),
            Err("unknown fused-kernels setting `yes` (expected on, off or auto)".into())
        );
    }

    #[test]
    fn option_names_round_trip_and_a_wrong_one_says_what_is_expected() {
        for m in [MatmulPath::Dense, MatmulPath::Quantized, MatmulPath::Auto] {
            assert_eq!(m.as_str().parse::<MatmulPath>(), Ok(m));
        }
        for w in [WeightsMode::Native, WeightsMode::F32, WeightsMode::Auto] {
            assert_eq!(w.as_str().parse::<WeightsMode>(), Ok(w));
        }
        for k in [KvCache::F16, KvCache::F32, KvCache::Auto] {
            assert_eq!(k.as_str().parse::<KvCache>(), Ok(k));
        }
        for p in [Precision::F32, Precision::Tf32, Precision::Bf16] {
            assert_eq!(p.as_str().parse::<Precision>(), Ok(p));
        }
        assert_eq!(
            "f16".parse::<Precision>(),
            Err("unknown matmul precision `f16` (expected f32, tf32 or bf16)".into())
        );
        assert_eq!(
            "bf16".parse::<KvCache>(),
            Err("unknown KV cache precision `bf16` (expected f16, f32 or auto)".into())
        );
        assert_eq!("q4".parse::<WeightsMode>(), Err("unknown weights mode `q4` (expected native, f32 or auto)".into()));
    }

    #[test]
    fn reduced_precision_is_refused_off_cuda_and_bf16_needs_dense_weights() {
        let cpu = DeviceKind::Cpu;
        assert!(check_precision(Precision::F32, cpu, WeightsMode::Native, MatmulPath::Dense).is_ok());
        for p in [Precision::Tf32, Precision::Bf16] {
            let e = check_precision(p, cpu, WeightsMode::F32, MatmulPath::Dense).unwrap_err().to_string();
            assert!(e.contains("needs a CUDA GPU") && e.contains(p.as_str()), "{e}");
        }
    }

    #[test]
    fn on_metal_every_auto_resolves_to_candle_s_ops_and_our_ops_asked_for_are_refused() {
        let metal = DeviceKind::Metal;
        let no_memory = || -> Option<u64> { panic!("free memory is CUDA's question") };
        let no_size = || -> Result<u64> { panic!("the f32 size is CUDA's question") };
        let r = LoadOptions::default().resolve_for(metal, no_memory, no_size).unwrap();
        assert_eq!(
            (r.weights, r.attention, r.fused_kernels, r.kv_cache),
            (WeightsMode::Native, AttentionPath::Matmuls, FusedKernels::Off, KvCache::F32)
        );
        let refused = |opts: LoadOptions| opts.resolve_for(metal, || None, || Ok(0)).unwrap_err().to_string();
        let e = refused(LoadOptions { attention: AttentionPath::Kernel, ..LoadOptions::default() });
        assert!(e.contains("not on Metal") && e.contains("--attention matmuls or auto"), "{e}");
        let e = refused(LoadOptions { fused_kernels: FusedKernels::On, ..LoadOptions::default() });
        assert!(e.contains("candle's ops") && e.contains("--fused-kernels off or auto"), "{e}");
        let e = refused(LoadOptions { kv_cache: KvCache::F16, ..LoadOptions::default() });
        assert!(e.contains("--kv-cache auto or f32"), "{e}");
        for precision in [Precision::Tf32, Precision::Bf16] {
            let e = refused(LoadOptions { precision, ..LoadOptions::default() });
            assert!(e.contains("needs a CUDA GPU") && e.contains("this GPU"), "{e}");
        }
        // What is not refused runs candle's ops.
        let asked = LoadOptions {
            attention: AttentionPath::Matmuls,
            fused_kernels: FusedKernels::Off,
            kv_cache: KvCache::F32,
            weights: WeightsMode::F32,
            ..LoadOptions::default()
        };
        let r = asked.resolve_for(metal, || None, || Ok(0)).unwrap();
        assert_eq!(
            (r.attention, r.fused_kernels, r.kv_cache),
            (AttentionPath::Matmuls, FusedKernels::Off, KvCache::F32)
        );
    }

    #[test]
    fn cuda_s_autos_are_the_kernels_and_weights_by_free_memory() {
        let cuda = DeviceKind::Cuda;
        let r = LoadOptions::default().resolve_for(cuda, || Some(10), || Ok(4)).unwrap();
        assert_eq!(
            (r.weights, r.attention, r.fused_kernels, r.kv_cache),
            (WeightsMode::F32, AttentionPath::Kernel, FusedKernels::On, KvCache::F32)
        );
        let r = LoadOptions::default().resolve_for(cuda, || Some(10), || Ok(6)).unwrap();
        assert_eq!(r.weights, WeightsMode::Native);
        let r = LoadOptions {
            fused_kernels: FusedKernels::Off,
            attention: AttentionPath::Matmuls,
            ..LoadOptions::default()
        }
        .resolve_for(cuda, || None, || Ok(0))
        .unwrap();
        assert_eq!((r.attention, r.fused_kernels), (AttentionPath::Matmuls, FusedKernels::Off));
    }
}
