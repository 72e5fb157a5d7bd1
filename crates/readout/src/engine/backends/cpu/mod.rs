//! The CPU's own kernels, under candle's: the projections over weights laid out once in panels
//! (`project`), the integer dot products for block-quantised weights (`int8`; on AMX tiles
//! `amx`, on aarch64 `neon`), and attention's
//! masked softmax and the MLP's gated activations as fused SIMD loops (`fused`). They exist
//! because candle's stock CPU ops repack, allocate and call libm where the readout's passes
//! spend their time; each one's numbers depend neither on the rows sharing a pass nor on the
//! thread count.

pub(crate) mod amx;
pub(crate) mod fused;
pub(crate) mod int8;
pub(crate) mod neon;
pub(crate) mod peak;
pub(crate) mod project;

/// Whether the integer kernel's instructions `kernel` run on this CPU. Here, above the three
/// kernels, so that `int8` (whose types the AMX and NEON kernels read) knows neither of them.
pub(crate) fn runs(kernel: int8::Kernel) -> bool {
    match kernel {
        int8::Kernel::Avx512 => int8::available(),
        int8::Kernel::Amx => amx::available(),
        int8::Kernel::Neon => neon::available(),
    }
}

/// Output columns per panel of a laid-out weight: gemm's f32 AVX-512 kernel is 64 wide (four
/// vectors of 16). The projections' panels (`project`) and the integer kernel's decoded panels
/// (`int8`) are this wide.
pub(crate) const PANEL: usize = 64;
