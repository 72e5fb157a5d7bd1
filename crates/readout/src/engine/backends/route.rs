//! Which implementation each device-specific step of the engine runs on a device: the one place
//! where that is decided. Why it exists: our ops are candle custom ops with a CPU and a CUDA
//! forward only, and candle answers one reached on another device (Metal) with an error at the
//! first pass ("no metal implementation for …"). Every call site that could run one of them
//! asks [`route`] (through [`resolve`] or [`uses`]): the options' `auto`s are resolved by it
//! (`options.rs`), the weights' forms are chosen by it at load (`model/linear.rs`,
//! `model/embedding.rs`), and a pass checks its flags against it (`model/pass.rs`). The device is
//! a [`DeviceKind`], which a test makes without the device: the tests below ask the route for
//! every op on Metal.
//!
//! # The ops, and the devices they have a forward for
//!
//! | [`Op`] | what (where) | candle trait | CPU | CUDA | Metal | chosen by |
//! |---|---|---|---|---|---|---|
//! | `Project` | projection over f32 weights in panels (`cpu/project.rs` `project`) | `CustomOp2` | yes | – | – | always on the CPU (`Linear::new`) |
//! | `ProjectEncoded` | projection over weights in the file's encoding, panels decoded as it goes, or the integer kernel (`cpu/project.rs` `project_encoded`; `cpu/int8.rs` and its instruction sets' kernels) | `CustomOp1` | yes | – | – | `--weights native` and `--matmul dense` on the CPU (`Linear::new`, `Linear::join`, `Table::new`) |
//! | `MaskedSoftmax` | attention's scaled, masked softmax in place (`cpu/fused.rs`) | `InplaceOp2` | yes | – | – | always on the CPU, attention as matmuls (`Pass::new`) |
//! | `KvCacheF16` | an f16 KV cache widened where it is joined (`kv.rs` `cat_f32`, reads `CpuStorage`) | – | yes | – | – | `--kv-cache` (`auto`: f16 on the CPU) |
//! | `TreeAttention` | a pass's attention in one op a layer (`ops/tree_attention.rs`; CUDA C in `cuda/kernels/`: f32, or TF32 on the tensor cores with `--precision` tf32 or bf16) | `CustomOp3` | yes | yes | – | `--attention` (`auto`: kernel on CUDA, matmuls on the CPU) |
//! | `AddRmsNorm` | the residual add and the RMSNorm after it (`ops/fused.rs`) | `CustomOp3` | reference | yes | – | `--fused-kernels` (`auto`: on on CUDA) |
//! | `QkvHeads` | q, k and v heads first, their norms, RoPE, the query scale (`ops/fused.rs`) | `CustomOp3` | reference | yes | – | `--fused-kernels` |
//! | `GatedActivation` | SwiGLU and GeGLU of the joint gate-and-up product (`ops/fused.rs`; the CPU's loops in `cpu/fused.rs`) | `CustomOp1` | yes | yes | – | always on the CPU; `--fused-kernels` on CUDA |
//! | `Bf16Product` | a projection of f32 activations by bf16 weights, f32 sums and result (`ops/bf16.rs`; cuBLAS's GemmEx in `cuda/gemm.rs`) | `CustomOp2` | reference | yes | – | `--precision bf16` on CUDA (`Linear::dense_product`) |
//!
//! "reference": the CPU forward exists (the CUDA kernel's tests check against it) but the CPU
//! path does not run it; it keeps candle's ops, bit for bit as before. No op has a Metal
//! forward, so on Metal every step is candle's own ops, each of which has a Metal kernel in
//! candle 0.9: `matmul` (MLX's GEMM), `softmax_last_dim`, `rms_norm`, `rope`, `rope_i`, `silu`,
//! `gelu`, `index_select`, `cat`, the reductions and the casts; and candle's quantised matmul
//! for native weights (below). The other device branches of the engine are not ops: TF32 is
//! cuBLAS's mode (`--precision tf32`, CUDA; `cuda::set_tf32` does nothing elsewhere), bf16
//! weights are candle's bf16 matmul (`--precision bf16`, refused off CUDA), and where the head's
//! logits are reduced (`read.rs`), the masks' shapes (`model/mask.rs`) and the warm-up pass at
//! load are candle's ops on every device.
//!
//! # Native weights on a GPU: candle's quantised matmul, by encoding
//!
//! Off the CPU, `--weights native` (the default on Metal) keeps each weight in the file's
//! encoding and multiplies it through candle's `QMatMul` ([`quantised`]; made by
//! `model/linear.rs`'s `quantised_matmul`).
//! The encodings Readout reads: the GGUF types of `gguf.rs`'s `tensor_type` (F32, F16, BF16,
//! Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; Q8_1, Q8_K and the IQ types are
//! refused when the header is read, `Error::UnsupportedTensorType`) and the safetensors dtypes
//! F32, F16 and BF16. Candle 0.9.2's Metal kernels (`candle-metal-kernels`, `quantized.metal`;
//! `call_quantized_matmul_mv_t` for one row, `call_quantized_matmul_mm_t` for more):
//!
//! | encoding | Metal matrix-vector | Metal matrix-matrix | what Readout does on Metal |
//! |---|---|---|---|
//! | Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 | yes | yes | candle's kernels ([`Quantised::Kernel`]) |
//! | Q2_K, Q3_K, Q4_K, Q5_K, Q6_K | yes | yes | candle's kernels ([`Quantised::Kernel`]) |
//! | F32 | yes (`f32_f32`) | yes (`f32_f32`) | decoded to f32 at load, candle's dense matmul ([`Quantised::DenseF32`]) |
//! | F16 | yes (`f16_f32`) | yes (`f16_f32`) | decoded to f32 at load ([`Quantised::DenseF32`]) |
//! | BF16 | **no** (`kernel_mul_mv_bf16_f32` is not in the library) | only where Metal has bfloat (`__HAVE_BFLOAT__`) | decoded to f32 at load ([`Quantised::DenseF32`]) |
//! | Q8_1, Q8_K | **no** | **no** (`UnsupportedDTypeForOp`) | never read; [`NoKernel`] if one were |
//!
//! Worse than the missing kernels: candle-core 0.9.2 maps `GgmlDType::BF16` to the metal
//! kernels' `F16` (`quantized/metal.rs`), so a BF16 `QTensor` multiplied on Metal would read
//! bf16 bits as f16, silently wrong. It does not happen in candle's `QMatMul::from_arc`, which
//! turns every F32, F16 and BF16 tensor into a dense f32 one; Readout makes that decision itself
//! ([`quantised`]) rather than rely on it, and decodes those weights on the host (the values are
//! candle's `dequantize`'s, bit for bit: `weights.rs`'s tests) without first copying the
//! encoded bytes to the device. So a Hugging Face checkpoint (BF16, or F16) with native weights
//! on Metal (or CUDA) takes f32's memory, twice the file's: native saves memory only for the
//! quantised GGUF encodings. The same holds for `--matmul quantized` and `auto` on every device.
//! The CUDA build of candle has kernels for the same quantised encodings.

use candle_core::quantized::GgmlDType;
use candle_core::Device;

/// A device as the routes see it: a test can describe one (Metal) without having it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeviceKind {
    Cpu,
    Cuda,
    Metal,
}

impl DeviceKind {
    #[cfg(test)]
    pub(crate) const ALL: [DeviceKind; 3] = [DeviceKind::Cpu, DeviceKind::Cuda, DeviceKind::Metal];

    pub(crate) fn of(device: &Device) -> Self {
        match device {
            Device::Cpu => DeviceKind::Cpu,
            Device::Cuda(_) => DeviceKind::Cuda,
            Device::Metal(_) => DeviceKind::Metal,
        }
    }

    /// The device in a sentence: "on {name}".
    pub(crate) fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "the CPU",
            DeviceKind::Cuda => "a CUDA GPU",
            DeviceKind::Metal => "Metal",
        }
    }
}

/// Every step of the engine with an implementation of ours for some device and not others (see
/// the module's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Project,
    ProjectEncoded,
    MaskedSoftmax,
    KvCacheF16,
    TreeAttention,
    AddRmsNorm,
    QkvHeads,
    GatedActivation,
    Bf16Product,
}

impl Op {
    /// Every op: what a test iterates.
    #[cfg(test)]
    pub(crate) const ALL: [Op; 9] = [
        Op::Project,
        Op::ProjectEncoded,
        Op::MaskedSoftmax,
        Op::KvCacheF16,
        Op::TreeAttention,
        Op::AddRmsNorm,
        Op::QkvHeads,
        Op::GatedActivation,
        Op::Bf16Product,
    ];

    /// The devices the op has a forward for: the `cpu_fwd` and `cuda_fwd` (and, once one is
    /// written, `metal_fwd`) its candle op implements. Candle's default for the others is an
    /// error; a `metal_fwd` added to an op is added here too.
    pub(crate) fn forwards(self) -> &'static [DeviceKind] {
        match self {
            Op::Project | Op::ProjectEncoded | Op::MaskedSoftmax | Op::KvCacheF16 => &[DeviceKind::Cpu],
            Op::TreeAttention | Op::AddRmsNorm | Op::QkvHeads | Op::GatedActivation | Op::Bf16Product => {
                &[DeviceKind::Cpu, DeviceKind::Cuda]
            }
        }
    }

    /// Its name in an error, with the option that asks for it where there is one.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Project => "the f32 panel projection",
            Op::ProjectEncoded => "the native-weight panel projection",
            Op::MaskedSoftmax => "the fused masked softmax",
            Op::KvCacheF16 => "the f16 KV cache (--kv-cache f16)",
            Op::TreeAttention => "the attention kernel (--attention kernel)",
            Op::AddRmsNorm => "the fused add and norm (--fused-kernels on)",
            Op::QkvHeads => "the fused q, k and v heads (--fused-kernels on)",
            Op::GatedActivation => "the fused gated activation (--fused-kernels on)",
            Op::Bf16Product => "the bf16 projection with an f32 result (--precision bf16)",
        }
    }
}

/// How a step runs on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Our op, always: its forward for the device.
    Ours,
    /// Our op when its option asks for it, candle's generic ops otherwise; `by_default`: what the
    /// option's `auto` gives.
    Optional { by_default: bool },
    /// candle's generic ops, which every device runs; an option asking for ours is refused.
    Candle,
}

/// How `op` runs on `device`. Never a route to a forward the op lacks (the tests check it).
pub(crate) fn route(op: Op, device: DeviceKind) -> Route {
    use DeviceKind::{Cpu, Cuda, Metal};
    let r = match (op, device) {
        (Op::Project | Op::ProjectEncoded | Op::MaskedSoftmax | Op::GatedActivation, Cpu) => Route::Ours,
        (Op::KvCacheF16, Cpu) => Route::Optional { by_default: true },
        // The CPU's kernel is for numbers that do not depend on the pass's shape, slower than
        // the matmuls: asked for only.
        (Op::TreeAttention, Cpu) => Route::Optional { by_default: false },
        // The reference forwards: the CPU path keeps candle's ops.
        (Op::AddRmsNorm | Op::QkvHeads | Op::Bf16Product, Cpu) => Route::Candle,
        // cuBLAS's bf16 product with an f32 result: one launch where candle's takes three.
        (Op::Bf16Product, Cuda) => Route::Ours,
        (Op::TreeAttention | Op::AddRmsNorm | Op::QkvHeads | Op::GatedActivation, Cuda) => {
            Route::Optional { by_default: true }
        }
        (Op::Project | Op::ProjectEncoded | Op::MaskedSoftmax | Op::KvCacheF16, Cuda) => Route::Candle,
        // No op of ours has a Metal forward.
        (_, Metal) => Route::Candle,
    };
    debug_assert!(r == Route::Candle || op.forwards().contains(&device), "{op:?} routed to a missing forward");
    r
}

/// An op asked for on a device it has no forward for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoForward {
    pub op: Op,
    pub device: DeviceKind,
}

impl std::fmt::Display for NoForward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} does not run on {}", self.op.name(), self.device.name())
    }
}

impl std::error::Error for NoForward {}

/// Whether `op` runs as ours on `device`: `asked` is its option (`None`: `auto`, `Some(true)`:
/// ours asked for, `Some(false)`: candle's asked for). Ours where it is the only route, whatever
/// was asked; refused where it is asked for and the device has no route to it.
pub(crate) fn resolve(op: Op, device: DeviceKind, asked: Option<bool>) -> Result<bool, NoForward> {
    match (route(op, device), asked) {
        (Route::Ours, _) => Ok(true),
        (Route::Optional { by_default }, None) => Ok(by_default),
        (Route::Optional { .. }, Some(on)) => Ok(on),
        (Route::Candle, Some(true)) => Err(NoForward { op, device }),
        (Route::Candle, _) => Ok(false),
    }
}

/// [`resolve`] for a resolved option (`asked`: it asks for ours), as a candle error: for the
/// model's code, whose flags the options have already checked.
pub(crate) fn uses(op: Op, device: DeviceKind, asked: bool) -> candle_core::Result<bool> {
    resolve(op, device, Some(asked)).map_err(candle_core::Error::wrap)
}

/// How candle's `QMatMul` is made for a weight in the file's encoding off our CPU panels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quantised {
    /// candle's quantised kernels for the encoding (the bytes copied to the device as they are).
    Kernel,
    /// A float encoding: decoded to f32 once, at load, and multiplied by candle's dense matmul
    /// (what `QMatMul::from_arc` does with it too; see the module's table for why it is ours).
    DenseF32,
}

/// An encoding with no quantised kernel on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoKernel {
    pub dtype: GgmlDType,
    pub device: DeviceKind,
}

impl std::fmt::Display for NoKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "weights encoded {:?} have no quantised matmul on {} in candle 0.9; use --weights f32",
            self.dtype,
            self.device.name()
        )
    }
}

impl std::error::Error for NoKernel {}

/// How a weight encoded as `dtype` goes through candle's quantised matmul on `device` (native
/// weights on a GPU; `--matmul quantized` or `auto` anywhere). The same on every device for the
/// encodings Readout reads; see the module's table for Metal.
pub(crate) fn quantised(dtype: GgmlDType, device: DeviceKind) -> Result<Quantised, NoKernel> {
    match dtype {
        GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16 => Ok(Quantised::DenseF32),
        GgmlDType::Q4_0
        | GgmlDType::Q4_1
        | GgmlDType::Q5_0
        | GgmlDType::Q5_1
        | GgmlDType::Q8_0
        | GgmlDType::Q2K
        | GgmlDType::Q3K
        | GgmlDType::Q4K
        | GgmlDType::Q5K
        | GgmlDType::Q6K => Ok(Quantised::Kernel),
        // Metal: no matrix-matrix kernel (`UnsupportedDTypeForOp`) and no matrix-vector one in
        // the library. Readout's readers refuse these two (`gguf.rs`), so no model reaches here
        // with one; elsewhere they are left to candle.
        GgmlDType::Q8_1 | GgmlDType::Q8K => match device {
            DeviceKind::Metal => Err(NoKernel { dtype, device }),
            DeviceKind::Cpu | DeviceKind::Cuda => Ok(Quantised::Kernel),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_route_leads_to_a_forward_the_op_lacks_on_any_device() {
        for device in DeviceKind::ALL {
            for op in Op::ALL {
                let r = route(op, device);
                assert!(
                    r == Route::Candle || op.forwards().contains(&device),
                    "{op:?} routes to {r:?} on {device:?}, and has forwards for {:?} only",
                    op.forwards()
                );
            }
        }
    }

    #[test]
    fn on_metal_every_op_is_candle_s_unless_it_has_a_metal_forward() {
        for op in Op::ALL {
            let r = route(op, DeviceKind::Metal);
            match op.forwards().contains(&DeviceKind::Metal) {
                true => assert_ne!(r, Route::Candle, "{op:?} has a Metal forward and does not use it"),
                false => {
                    assert_eq!(r, Route::Candle, "{op:?} has no Metal forward");
                    // Whatever its option says, ours is never run there: `auto` and off are
                    // candle's ops, asking for ours is refused.
                    assert_eq!(resolve(op, DeviceKind::Metal, None), Ok(false), "{op:?}");
                    assert_eq!(resolve(op, DeviceKind::Metal, Some(false)), Ok(false), "{op:?}");
                    let e = resolve(op, DeviceKind::Metal, Some(true)).unwrap_err();
                    assert_eq!(e, NoForward { op, device: DeviceKind::Metal });
                    assert!(e.to_string().ends_with("does not run on Metal"), "{e}");
                    assert!(uses(op, DeviceKind::Metal, true).is_err());
                }
            }
        }
    }

    #[test]
    fn the_cpu_and_cuda_keep_the_routes_they_had() {
        let on = |op, device, asked| resolve(op, device, asked).unwrap();
        // The CPU: its own projections, softmax and activation always; the f16 cache by
        // default; the attention kernel when asked; the fused ops' reference never (refused).
        for op in [Op::Project, Op::ProjectEncoded, Op::MaskedSoftmax, Op::GatedActivation] {
            assert!(on(op, DeviceKind::Cpu, None) && on(op, DeviceKind::Cpu, Some(false)), "{op:?}");
        }
        assert!(on(Op::KvCacheF16, DeviceKind::Cpu, None) && !on(Op::KvCacheF16, DeviceKind::Cpu, Some(false)));
        assert!(!on(Op::TreeAttention, DeviceKind::Cpu, None) && on(Op::TreeAttention, DeviceKind::Cpu, Some(true)));
        for op in [Op::AddRmsNorm, Op::QkvHeads] {
            assert!(!on(op, DeviceKind::Cpu, None));
            assert!(resolve(op, DeviceKind::Cpu, Some(true)).is_err());
        }
        // CUDA: the kernels by default and when asked, candle's when not; the CPU's own refused.
        for op in [Op::TreeAttention, Op::AddRmsNorm, Op::QkvHeads, Op::GatedActivation] {
            assert!(on(op, DeviceKind::Cuda, None) && !on(op, DeviceKind::Cuda, Some(false)), "{op:?}");
        }
        for op in [Op::Project, Op::ProjectEncoded, Op::MaskedSoftmax, Op::KvCacheF16] {
            assert!(!on(op, DeviceKind::Cuda, None) && resolve(op, DeviceKind::Cuda, Some(true)).is_err(), "{op:?}");
        }
    }

    /// Every encoding Readout reads has a quantised matmul on Metal (candle's kernel, or f32
    /// decoded at load for the float ones: never candle's BF16 path on Metal), and the two with
    /// none are those its GGUF reader refuses.
    #[test]
    fn every_encoding_readout_reads_has_a_route_on_metal() {
        let read: Vec<GgmlDType> = (0..64).filter_map(crate::engine::gguf::tensor_type).collect();
        // And the safetensors dtypes (`load/hf`): F32, F16, BF16.
        for dtype in read.iter().copied().chain([GgmlDType::F32, GgmlDType::F16, GgmlDType::BF16]) {
            let q = quantised(dtype, DeviceKind::Metal);
            let floats = matches!(dtype, GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16);
            assert_eq!(q, Ok(if floats { Quantised::DenseF32 } else { Quantised::Kernel }), "{dtype:?}");
        }
        assert_eq!(read.len(), 13, "{read:?}");
        for dtype in [GgmlDType::Q8_1, GgmlDType::Q8K] {
            assert!(!read.contains(&dtype));
            let e = quantised(dtype, DeviceKind::Metal).unwrap_err();
            assert!(e.to_string().contains("no quantised matmul on Metal"), "{e}");
        }
    }
}
