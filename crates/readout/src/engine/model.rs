//! Our own decoder forward on candle tensors: RMSNorm, RoPE, grouped-query attention with an
//! explicit mask, SwiGLU, Qwen3's per-head q/k norms, and Gemma 3's additions (norms after
//! attention and MLP, GELU MLP, scaled embedding, sliding-window local layers). It is ours (not
//! candle-transformers') because the readout needs what stock model code lacks: attention over a
//! cached prefix with a tree mask (several suffixes in one pass, each seeing the prefix and its own
//! tokens), arbitrary positions per token, and logits computed only at the rows that are read.

use super::config::{ModelConfig, RopeStyle};
use super::int8::Width;
use super::kv::{LayerKv, Prefix};
use super::weights::{Encoded, Stacked};
use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Module, Tensor};
use std::sync::Arc;

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
    /// multiply: on the CPU our panels (`project.rs`), on a GPU candle's quantised kernels.
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
    /// every f32 matmul of a pass, attention's included (CUDA).
    Tf32,
    /// The block projections' weights held in bf16 and their inputs rounded to bf16 (f32 sums,
    /// f32 outputs); attention, norms, the residual stream and the LM head stay f32 (CUDA).
    Bf16,
}

/// How a pass's attention is computed on a GPU: the `--attention` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionPath {
    /// Per segment: its prefix joined to the pass's keys and values, `q·kᵀ`, the mask added,
    /// softmax, `·v` (candle's ops; several launches a segment and layer).
    Matmuls,
    /// One kernel a layer for every segment of the pass (`attention.rs`; CUDA).
    Kernel,
    /// `kernel` on a CUDA GPU (faster there: bench/results/cuda/precision-*), `matmuls`
    /// elsewhere; a result file records the resolved path.
    Auto,
}

/// Whether a layer's element-wise steps run as our fused CUDA kernels: the `--fused-kernels`
/// option. On: the residual add with the RMSNorm after it, the q/k heads (their norms, RoPE and
/// the query scale) and the MLP's activation one launch each (`fused_cuda.rs`); off: candle's
/// ops, several launches each. The CPU path is the same either way (its own fused loops).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FusedKernels {
    Off,
    /// CUDA only.
    On,
    /// `on` on a CUDA GPU, `off` elsewhere; a result file records the resolved value.
    Auto,
}

option_names!(FusedKernels, "fused-kernels setting", "on, off or auto", { Off => "off", On => "on", Auto => "auto" });
option_names!(AttentionPath, "attention path", "matmuls, kernel or auto", { Matmuls => "matmuls", Kernel => "kernel", Auto => "auto" });
option_names!(Precision, "matmul precision", "f32, tf32 or bf16", { F32 => "f32", Tf32 => "tf32", Bf16 => "bf16" });
option_names!(MatmulPath, "matmul path", "dense, quantized or auto", { Dense => "dense", Quantized => "quantized", Auto => "auto" });
option_names!(WeightsMode, "weights mode", "native, f32 or auto", { Native => "native", F32 => "f32", Auto => "auto" });
option_names!(KvCache, "KV cache precision", "f16, f32 or auto", { F16 => "f16", F32 => "f32", Auto => "auto" });

/// How the weights are to be held: the matmul path, whether they stay in the file's encoding,
/// and the width of the activations the integer kernel multiplies them with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hold {
    pub matmul: MatmulPath,
    /// Keep the file's encoding (the resolved `--weights native`).
    pub native: bool,
    /// 8-bit activations for the integer kernel (`--int8-activations`) instead of 16-bit.
    pub int8_activations: bool,
    /// Dense weights held in bf16 and multiplied in bf16 (`--precision bf16`, a GPU's).
    pub bf16: bool,
}

impl Hold {
    /// The integer kernel's activation width for `w`, where the CPU and the encodings allow it.
    fn integer(&self, w: &Stacked) -> Option<Width> {
        w.int8_ready().then_some(if self.int8_activations { Width::I8 } else { Width::I16 })
    }
}

/// A weight matrix `[out, in]` in the forms the chosen path needs.
pub(crate) struct Linear {
    /// f32: `[out, in]` on a GPU; on the CPU in panels of 64 outputs (see `project.rs`).
    dense: Option<Tensor>,
    /// The file's encoding, decoded panel by panel as it multiplies (CPU, native weights), and
    /// the activation width when through the integer kernel.
    encoded: Option<(Stacked, Option<Width>)>,
    quant: Option<QMatMul>,
    /// The number of outputs, when `dense` is in panels (CPU).
    panels_out: Option<usize>,
}

impl Linear {
    pub(crate) fn new(w: LoadedWeight, hold: &Hold, device: &Device) -> candle_core::Result<Self> {
        let (path, native) = (hold.matmul, hold.native);
        let (dense, quant) = match w {
            LoadedWeight::Dense(t) => (Some(t.to_dtype(DType::F32)?), None),
            LoadedWeight::Encoded(e) if native && device.is_cpu() && path == MatmulPath::Dense => {
                let w = Stacked::new(vec![e])?;
                let integer = hold.integer(&w);
                return Ok(Linear { dense: None, encoded: Some((w, integer)), quant: None, panels_out: None });
            }
            LoadedWeight::Encoded(e) => {
                // Native weights on a GPU are candle's quantised ones, whatever the path.
                let path = if native && !device.is_cpu() { MatmulPath::Quantized } else { path };
                let dense = match path {
                    MatmulPath::Quantized => None,
                    _ => Some(e.to_dense(device)?),
                };
                let quant = match path {
                    MatmulPath::Dense => None,
                    _ => Some(QMatMul::from_arc(Arc::new(e.to_qtensor(device)?))?),
                };
                (dense, quant)
            }
        };
        match dense {
            Some(w) if hold.bf16 && !device.is_cpu() => {
                Ok(Linear { dense: Some(w.to_dtype(DType::BF16)?), encoded: None, quant, panels_out: None })
            }
            Some(w) if device.is_cpu() => {
                super::project::read_panels_in_place();
                let out = w.dim(0)?;
                Ok(Linear { dense: Some(super::project::pack(&w)?), encoded: None, quant, panels_out: Some(out) })
            }
            dense => Ok(Linear { dense, encoded: None, quant, panels_out: None }),
        }
    }

    /// `x [rows, in] -> [rows, out]`. A single row is multiplied as two (the copy dropped):
    /// alone it would take the matrix-vector kernel, whose sums round differently, and a token's
    /// numbers would depend on how many tokens share its pass.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let rows = x.dim(0)?;
        if let Some((w, integer)) = &self.encoded {
            return match rows {
                1 => super::project::project_encoded(&Tensor::cat(&[x, x], 0)?, w, *integer)?.narrow(0, 0, 1),
                _ => super::project::project_encoded(&x.contiguous()?, w, *integer),
            };
        }
        match (&self.dense, &self.quant) {
            (Some(_), Some(q)) if rows == 1 => q.forward(x),
            (Some(w), _) if rows == 1 => self.dense_product(&Tensor::cat(&[x, x], 0)?, w)?.narrow(0, 0, 1),
            (Some(w), _) => self.dense_product(x, w),
            (None, Some(q)) => q.forward(x),
            (None, None) => candle_core::bail!("linear layer holds no weights"),
        }
    }

    /// Projections of one input side by side along the output axis, as one product: for q, k
    /// and v, and for gate and up. One matmul of `rows × (their outputs together)` in place of
    /// several smaller ones: on a GPU fewer kernel launches, on a CPU fewer hand-offs between
    /// threads. Each output element is the same sum as in its own product, up to rounding
    /// (the CPU's panels of 64 outputs can fall differently). Native weights on the CPU are
    /// stacked where they lie in the file (no copy); f32 ones are put side by side at load;
    /// weights that keep candle's quantised form (a GPU's native weights, the quantised and auto
    /// paths) stay apart, and their products are put side by side after.
    pub(crate) fn join(ws: Vec<LoadedWeight>, hold: &Hold, device: &Device) -> candle_core::Result<Joined> {
        let (path, native) = (hold.matmul, hold.native);
        let all_encoded = ws.iter().all(|w| matches!(w, LoadedWeight::Encoded(_)));
        if native && device.is_cpu() && path == MatmulPath::Dense && all_encoded {
            let parts = ws
                .into_iter()
                .filter_map(|w| match w {
                    LoadedWeight::Encoded(e) => Some(e),
                    LoadedWeight::Dense(_) => None,
                })
                .collect();
            let w = Stacked::new(parts)?;
            let integer = hold.integer(&w);
            return Ok(Joined::One(Linear { dense: None, encoded: Some((w, integer)), quant: None, panels_out: None }));
        }
        let keeps_quant = (path != MatmulPath::Dense || (native && !device.is_cpu()))
            && ws.iter().any(|w| matches!(w, LoadedWeight::Encoded(_)));
        if keeps_quant || ws.len() < 2 {
            let parts = ws.into_iter().map(|w| Linear::new(w, hold, device)).collect::<candle_core::Result<_>>()?;
            return Ok(Joined::Apart(parts));
        }
        let dense = ws.into_iter().map(|w| w.into_dense(device)).collect::<candle_core::Result<Vec<_>>>()?;
        let joined = Tensor::cat(&dense, 0)?; // [out₁ + out₂ + …, in]
        drop(dense);
        Ok(Joined::One(Linear::new(LoadedWeight::Dense(joined), hold, device)?))
    }

    fn dense_product(&self, x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
        match self.panels_out {
            Some(out) => super::project::project(&x.contiguous()?, w, out),
            // bf16 weights (`--precision bf16`): the input rounded to bf16, the product back to f32.
            None if w.dtype() == DType::BF16 => x.to_dtype(DType::BF16)?.matmul(&w.t()?)?.to_dtype(DType::F32),
            None => x.matmul(&w.t()?),
        }
    }
}

/// Projections of the same input computed as one ([`Linear::join`]).
pub(crate) enum Joined {
    One(Linear),
    Apart(Vec<Linear>),
}

impl Joined {
    /// `x [rows, in] -> [rows, out₁ + out₂ + …]`, the parts' outputs side by side.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Joined::One(l) => l.forward(x),
            Joined::Apart(parts) => {
                let outs = parts.iter().map(|p| p.forward(x)).collect::<candle_core::Result<Vec<_>>>()?;
                Tensor::cat(&outs, 1)
            }
        }
    }
}

/// A table of rows looked up by token id: the embedding, and the LM head (the same table when
/// tied), in f32 or in the file's encoding.
pub(crate) enum Table {
    Dense(Tensor),
    /// Rows decoded on the host when looked up; the full-vocabulary product decodes panel by
    /// panel (CPU) or goes through candle's quantised kernels (`quant`, on a GPU).
    Encoded {
        rows: Stacked,
        quant: Option<QMatMul>,
    },
}

impl Table {
    /// The table of a loaded weight: kept in its encoding when `native`.
    pub(crate) fn new(w: LoadedWeight, native: bool, device: &Device) -> candle_core::Result<Self> {
        match w {
            LoadedWeight::Encoded(e) if native => {
                let quant = match device.is_cpu() {
                    true => None,
                    false => Some(QMatMul::from_arc(Arc::new(e.to_qtensor(device)?))?),
                };
                Ok(Table::Encoded { rows: Stacked::new(vec![e])?, quant })
            }
            w => Ok(Table::Dense(w.into_dense(device)?)),
        }
    }

    /// The rows `ids` as f32 `[ids.len(), hidden]` on `device`.
    pub(crate) fn rows(&self, ids: &[u32], device: &Device) -> candle_core::Result<Tensor> {
        match self {
            Table::Dense(t) => t.index_select(&Tensor::from_slice(ids, ids.len(), device)?, 0),
            Table::Encoded { rows, .. } => {
                let cols = rows.cols();
                let mut v = vec![0f32; ids.len() * cols];
                for (&id, row) in ids.iter().zip(v.chunks_mut(cols.max(1))) {
                    if id as usize >= rows.rows() {
                        candle_core::bail!("token id {id} is past the table's {} rows", rows.rows());
                    }
                    rows.decode_row(id as usize, row);
                }
                Tensor::from_vec(v, (ids.len(), cols), device)
            }
        }
    }

    /// `h [n, hidden] · tableᵀ -> [n, vocab]`.
    pub(crate) fn product(&self, h: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Table::Dense(t) => h.matmul(&t.t()?),
            Table::Encoded { quant: Some(q), .. } => q.forward(h),
            // The head in f32 panels: its logits are what the answers are read from.
            Table::Encoded { rows, quant: None } => super::project::project_encoded(&h.contiguous()?, rows, None),
        }
    }
}

/// Query tokens whose attention scores the CPU computes at once ([`attend_cpu`]).
const ATTEND_TOKENS: usize = 128;

/// Attention of one segment on the CPU: `q [kvh, group·n, hd]` (unscaled; rows (head in group,
/// token)) against `k`, `v` `[kvh, t, hd]` under `mask [n, t]`, as `[kvh, group·n, hd]`. The
/// scores of at most 128 query tokens exist at once: a segment of a thousand tokens over a
/// prefix of as many would otherwise hold scores of heads × 10⁶ floats (140 MB for Qwen3-0.6B)
/// per layer. A segment's cut depends only on its own length, so its numbers do not depend on
/// the pass it shares.
fn attend_cpu(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &Tensor,
    scale: f32,
    group: usize,
) -> candle_core::Result<Tensor> {
    let (kvh, rows, hd) = q.dims3()?;
    let (n, t) = mask.dims2()?;
    let kt = k.t()?;
    if n <= ATTEND_TOKENS {
        let att = q.matmul(&kt)?.reshape((kvh, group, n, t))?;
        let att = super::fused::masked_softmax(att, mask, scale)?;
        return att.reshape((kvh, rows, t))?.matmul(v);
    }
    let q = q.reshape((kvh, group, n, hd))?;
    let mut parts = Vec::with_capacity(n.div_ceil(ATTEND_TOKENS));
    for start in (0..n).step_by(ATTEND_TOKENS) {
        let len = ATTEND_TOKENS.min(n - start);
        let qc = q.narrow(2, start, len)?.contiguous()?.reshape((kvh, group * len, hd))?;
        let att = qc.matmul(&kt)?.reshape((kvh, group, len, t))?;
        let att = super::fused::masked_softmax(att, &mask.narrow(0, start, len)?, scale)?;
        parts.push(att.reshape((kvh, group * len, t))?.matmul(v)?.reshape((kvh, group, len, hd))?);
    }
    Tensor::cat(&parts, 2)?.reshape((kvh, rows, hd))
}

/// A segment's tree mask cut to a sliding window of `window` positions: a token at position `p`
/// keeps the keys at positions `q` with `p − q < window` (llama.cpp masks `p − q ≥ window`).
/// The past's keys are at positions `0..past` (a prefix is one path from the root), the
/// segment's own at `seg.positions`; the tree mask already hides every key off a token's path,
/// so along the path the window is a matter of positions alone. `None` when no key the tree
/// shows is that far back (the tree mask is then the window's too).
fn window_mask(seg: &Segment<'_>, window: usize, device: &Device) -> candle_core::Result<Option<Tensor>> {
    let past = seg.past.len();
    let pos = &seg.positions;
    let (Some(&hi), Some(&lo)) = (pos.iter().max(), pos.iter().min()) else { return Ok(None) };
    let oldest = if past > 0 { 0 } else { lo as usize };
    if (hi as usize) - oldest < window {
        return Ok(None);
    }
    let t = past + pos.len();
    let mut far = vec![0f32; pos.len() * t];
    for (row, &p) in far.chunks_exact_mut(t).zip(pos) {
        let p = p as usize;
        // Columns of the past are positions 0..past; those before p + 1 − window are out.
        let cut = (p + 1).saturating_sub(window).min(past);
        row[..cut].fill(f32::NEG_INFINITY);
        for (c, &q) in row[past..].iter_mut().zip(pos) {
            if (q as usize) + window <= p {
                *c = f32::NEG_INFINITY;
            }
        }
    }
    let far = Tensor::from_vec(far, (pos.len(), t), device)?;
    Ok(Some((&seg.mask + far)?))
}

/// Row indices into a `[heads · rows, hd]` view of a `[heads, rows, hd]` tensor that gather the
/// `(start, len)` blocks of rows, each with all its heads: rows in `(block, head, row)` order,
/// so that every block comes out as a contiguous `[heads, len, hd]`. One gather in place of a
/// copy per block (the pass's segments, or the stems it keeps).
pub(crate) fn block_head_rows(blocks: &[(usize, usize)], heads: usize, rows: usize) -> Vec<u32> {
    let mut idx = Vec::with_capacity(heads * blocks.iter().map(|b| b.1).sum::<usize>());
    for &(start, len) in blocks {
        for j in 0..heads {
            idx.extend((0..len).map(|t| (j * rows + start + t) as u32));
        }
    }
    idx
}

/// A tensor as it came out of the file: f32 in memory, or a view of the file's bytes.
pub(crate) enum LoadedWeight {
    Dense(Tensor),
    Encoded(Encoded),
}

impl LoadedWeight {
    pub(crate) fn into_dense(self, device: &Device) -> candle_core::Result<Tensor> {
        match self {
            LoadedWeight::Dense(t) => t.to_dtype(DType::F32),
            LoadedWeight::Encoded(e) if e.dims()[0] == 1 => e.to_dense(device)?.squeeze(0),
            LoadedWeight::Encoded(e) => e.to_dense(device),
        }
    }
    pub(crate) fn dims(&self) -> Vec<usize> {
        match self {
            LoadedWeight::Dense(t) => t.dims().to_vec(),
            LoadedWeight::Encoded(e) if e.dims()[0] == 1 => vec![e.dims()[1]],
            LoadedWeight::Encoded(e) => e.dims().to_vec(),
        }
    }
}

pub(crate) struct Layer {
    pub attn_norm: Tensor,
    /// q, k and v as one product: `[rows, (heads + 2·kv heads) · head_dim]`.
    pub wqkv: Joined,
    /// Qwen2's biases of q, k and v, added to the product: `[(heads + 2·kv heads) · head_dim]`.
    pub qkv_bias: Option<Tensor>,
    pub wo: Linear,
    pub q_norm: Option<Tensor>,
    pub k_norm: Option<Tensor>,
    /// Gemma 3: the norm of attention's output, before it joins the residual.
    pub attn_post_norm: Option<Tensor>,
    pub ffn_norm: Tensor,
    /// gate and up as one product: `[rows, 2 · intermediate]`.
    pub w_gate_up: Joined,
    pub w_down: Linear,
    /// Gemma 3: the norm of the MLP's output, before it joins the residual.
    pub ffn_post_norm: Option<Tensor>,
    /// A local layer (Gemma 3): attention over the sliding window only, with the local RoPE.
    pub local: bool,
}

/// A layer's q `[heads, S, hd]`, k and v `[kv_heads, S, hd]` ([`Transformer::layer_qkv`]).
struct LayerQkv {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    /// k and v side by side, `[2·kv_heads, S, hd]`, when they are (the fused kernel's output).
    kv_joint: Option<Tensor>,
}

/// Which of a pass's new keys and values [`Transformer::forward`] returns, per layer.
pub(crate) enum KeepKv {
    /// None (no unit of the pass is kept).
    Nothing,
    /// All rows, `[kv_heads, rows, hd]` (one unit is the whole pass).
    All,
    /// The rows of a `[kv_heads · rows, hd]` view these indices pick ([`block_head_rows`]), as
    /// `[picked, hd]`.
    Rows(Tensor),
}

/// New tokens on top of a cached prefix, one part of a pass.
pub(crate) struct Segment<'a> {
    pub past: &'a Prefix,
    pub tokens: Vec<u32>,
    /// Position of each token (the prefix length onwards, or branch-relative for tree suffixes).
    pub positions: Vec<u32>,
    /// Additive mask `[tokens, past.len() + tokens]`.
    pub mask: Tensor,
}

/// A decoder-only transformer with tied or separate LM head.
pub(crate) struct Transformer {
    pub cfg: ModelConfig,
    pub embed: Arc<Table>,
    pub layers: Vec<Layer>,
    pub norm: Tensor,
    /// `[vocab, hidden]`: the embedding table when tied.
    pub head: Arc<Table>,
    /// The head in its file's quantised form, used for full-vocabulary logits on the quantised path.
    pub head_q: Option<QMatMul>,
    /// RoPE's inverse frequencies ([`Transformer::rope_frequencies`]).
    pub rope_inv: Vec<f32>,
    /// Those of the local layers, when the model has some (Gemma 3).
    pub rope_local_inv: Option<Vec<f32>>,
    pub device: Device,
    /// Keys and values kept in f16 (CPU): see [`KvCache`].
    pub kv_f16: bool,
    /// f32 matmuls in TF32 (`--precision tf32`, CUDA): see [`Precision`].
    pub tf32: bool,
    /// A pass's attention in one kernel a layer (`--attention kernel`, CUDA).
    pub attention_kernel: bool,
    /// A layer's element-wise steps in fused kernels (`--fused-kernels on`, CUDA).
    pub fused_kernels: bool,
}

impl Linear {
    /// The integer kernel's activation width, when it multiplies this weight.
    fn integer(&self) -> Option<Width> {
        self.encoded.as_ref().and_then(|(_, w)| *w)
    }
}

impl Joined {
    fn integer(&self) -> Option<Width> {
        match self {
            Joined::One(l) => l.integer(),
            Joined::Apart(parts) => parts.iter().find_map(Linear::integer),
        }
    }
}

impl Transformer {
    /// What the block projections multiply with: `int8` or `int16` when any goes through the
    /// integer kernel, `f32` otherwise.
    pub(crate) fn activations(&self) -> &'static str {
        let widths = self
            .layers
            .iter()
            .flat_map(|l| [l.wqkv.integer(), l.wo.integer(), l.w_gate_up.integer(), l.w_down.integer()]);
        match widths.flatten().next() {
            Some(Width::I8) => "int8",
            Some(Width::I16) => "int16",
            None => "f32",
        }
    }

    /// Set cuBLAS's f32 math mode to this model's (`--precision tf32` or not) before its
    /// matmuls are queued. The mode is a process-wide setting in candle, so each pass sets it:
    /// two engines of different precisions in one process then each get their own (a pass of
    /// one running while the other's starts on another thread would not).
    fn set_matmul_mode(&self) {
        #[cfg(feature = "cuda")]
        if self.device.is_cuda() {
            candle_core::cuda_backend::set_gemm_reduced_precision_f32(self.tf32);
        }
    }

    /// RoPE's inverse frequencies, `θ^(-2i/d)` for each of the `head_dim / 2` pairs.
    pub(crate) fn rope_frequencies(theta: f32, head_dim: usize) -> Vec<f32> {
        let half = head_dim / 2;
        (0..half).map(|i| 1.0 / theta.powf(2.0 * i as f32 / head_dim as f32)).collect()
    }

    /// cos and sin of every position's angles, `[positions, head_dim / 2]`: made for each pass
    /// (a table for the whole context would hold 20 MB for Qwen3's 40k positions). `scale`
    /// multiplies the positions (linear RoPE scaling; `None`: unscaled).
    fn rope_rows(&self, inv: &[f32], positions: &[u32], scale: Option<f32>) -> candle_core::Result<(Tensor, Tensor)> {
        let half = inv.len();
        let mut cos = Vec::with_capacity(positions.len() * half);
        let mut sin = Vec::with_capacity(positions.len() * half);
        for &p in positions {
            let p = match scale {
                Some(s) => p as f32 * s,
                None => p as f32,
            };
            for f in inv {
                let a = p * f;
                cos.push(a.cos());
                sin.push(a.sin());
            }
        }
        let n = positions.len();
        Ok((Tensor::from_vec(cos, (n, half), &self.device)?, Tensor::from_vec(sin, (n, half), &self.device)?))
    }

    /// One pass over several segments, each a run of new tokens on top of its own cached
    /// prefix; `keep` says which of the new keys and values to return. The projections and the MLP run once over all rows together (one large matmul
    /// instead of many small ones); attention runs per segment against that segment's prefix
    /// under its mask. Returns the final-layer hidden states of all rows, segment after segment
    /// (before the output norm), and per layer the new keys and values `keep` asks for.
    ///
    /// With several segments, each layer puts q, k and v in segment order with one gather each
    /// (rows `(segment, head, token)`, so that every segment's block is contiguous) and the
    /// attention outputs back in token order with one more, instead of a copy per segment for
    /// each: on a GPU every copy is a kernel launch, and the host's launches are what a pass
    /// waits for. Gathers only copy, so the values are those of the per-segment copies.
    pub(crate) fn forward(&self, segs: &[Segment<'_>], keep: &KeepKv) -> candle_core::Result<(Tensor, Vec<LayerKv>)> {
        self.set_matmul_mode();
        let cfg = &self.cfg;
        let tokens: Vec<u32> = segs.iter().flat_map(|g| g.tokens.iter().copied()).collect();
        let positions: Vec<u32> = segs.iter().flat_map(|g| g.positions.iter().copied()).collect();
        let s = tokens.len();
        let gemma = cfg.gemma.as_ref();
        let global_scale = gemma.map(|g| g.rope_global_scale).filter(|&s| s != 1.0);
        let (cos, sin) = self.rope_rows(&self.rope_inv, &positions, global_scale)?;
        // The local layers' angles (their own base, never scaled), when the model has such layers.
        let local_rope = match &self.rope_local_inv {
            Some(inv) if self.layers.iter().any(|l| l.local) => Some(self.rope_rows(inv, &positions, None)?),
            _ => None,
        };
        let mut x = self.embed.rows(&tokens, &self.device)?;
        if let Some(g) = gemma {
            x = x.affine(g.embed_scale as f64, 0.0)?;
        }
        let (h, kvh, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let group = h / kvh;
        let scale = match gemma {
            Some(g) => g.query_scale,
            None => 1.0 / (hd as f64).sqrt(),
        };
        let eps = cfg.rms_eps as f32;
        // On CPU attention's softmax is our fused op (fused.rs), which takes the `[s, T]` masks
        // as they are; other devices add the mask with candle's broadcasting ops.
        let cpu = self.device.is_cpu();
        let local_masks = self.local_masks(segs)?;
        let for_device = |m: &Tensor| -> candle_core::Result<Tensor> {
            // [1, 1, s, T]
            m.unsqueeze(0)?.unsqueeze(0)
        };
        let (masks, local_masks_dev): (Vec<Tensor>, Vec<Option<Tensor>>) = if cpu {
            (Vec::new(), Vec::new())
        } else {
            (
                segs.iter().map(|g| for_device(&g.mask)).collect::<candle_core::Result<_>>()?,
                local_masks
                    .iter()
                    .map(|m| m.as_ref().map(for_device).transpose())
                    .collect::<candle_core::Result<_>>()?,
            )
        };
        let mut offsets = Vec::with_capacity(segs.len());
        let mut o = 0;
        for g in segs {
            offsets.push(o);
            o += g.tokens.len();
        }
        let multi = segs.len() > 1;
        let blocks: Vec<(usize, usize)> = segs.iter().zip(&offsets).map(|(g, &off)| (off, g.tokens.len())).collect();
        let seg_order = |heads: usize| -> candle_core::Result<Tensor> {
            let idx = block_head_rows(&blocks, heads, s);
            Tensor::from_slice(&idx, idx.len(), &self.device)
        };
        // And back: the row of `(segment, head, token)` order that holds token r's head j.
        let token_order = || -> candle_core::Result<Tensor> {
            let mut idx = vec![0u32; h * s];
            for (g, &off) in segs.iter().zip(&offsets) {
                let n = g.tokens.len();
                for t in 0..n {
                    for j in 0..h {
                        idx[(off + t) * h + j] = (h * off + j * n + t) as u32;
                    }
                }
            }
            Tensor::from_vec(idx, h * s, &self.device)
        };
        // The kernel reads q, k and v in token order and writes the outputs so: no gathers.
        let kernel = self.attention_kernel && !cpu;
        let orders = if multi && !kernel { Some((seg_order(h)?, seg_order(kvh)?, token_order()?)) } else { None };
        let mut new_kv: Vec<LayerKv> = Vec::with_capacity(self.layers.len());
        // The next layer's input, when the residual add made it too (`add_norm`).
        let mut normed: Option<Tensor> = None;
        for (li, layer) in self.layers.iter().enumerate() {
            let xn = match normed.take() {
                Some(xn) => xn,
                None => candle_nn::ops::rms_norm(&x, &layer.attn_norm, eps)?,
            };
            let rope = match (&local_rope, layer.local) {
                (Some((c, s)), true) => (c, s),
                _ => (&cos, &sin),
            };
            let LayerQkv { q, k, v, kv_joint } = self.layer_qkv(layer, &xn, rope, scale)?;
            // An f16 cache: this pass's own keys and values are rounded to f16 before its
            // attention too, so a token sees the same numbers whether its keys come from this
            // pass or from the cache of an earlier one.
            let (k, v, half, kv_joint) = if self.kv_f16 {
                let (k16, v16) = (k.to_dtype(DType::F16)?, v.to_dtype(DType::F16)?);
                (k16.to_dtype(DType::F32)?, v16.to_dtype(DType::F32)?, Some((k16, v16)), None)
            } else {
                (k, v, None, kv_joint)
            };

            // q, k and v with every segment's block contiguous (see above).
            let by_seg = match &orders {
                Some((qo, kvo, _)) => Some((
                    q.reshape((h * s, hd))?.index_select(qo, 0)?,
                    k.reshape((kvh * s, hd))?.index_select(kvo, 0)?,
                    v.reshape((kvh * s, hd))?.index_select(kvo, 0)?,
                )),
                None => None,
            };
            let mut outs = Vec::with_capacity(segs.len());
            let fused = match kernel {
                true => {
                    let parts = segs
                        .iter()
                        .enumerate()
                        .map(|(gi, g)| {
                            // The prefix's chunks as the cache holds them: the kernel reads
                            // the chain in place, so nothing is joined or copied per segment.
                            let past = g.past.layer_chunks(li);
                            let mask = match (layer.local, &local_masks[gi]) {
                                (true, Some(m)) => m.clone(),
                                _ => g.mask.clone(),
                            };
                            Ok(super::attention::SegmentAttention {
                                offset: offsets[gi],
                                len: g.tokens.len(),
                                past,
                                mask,
                            })
                        })
                        .collect::<candle_core::Result<Vec<_>>>()?;
                    Some(super::attention::tree_attention(&q, &k, &v, parts)?) // [S, h·hd]
                }
                false => None,
            };
            for (gi, g) in segs.iter().enumerate().filter(|_| fused.is_none()) {
                let (off, n) = (offsets[gi], g.tokens.len());
                // Grouped-query attention without repeating K/V: the query heads of a group
                // folded into the row dimension, `[kvh, group·n, hd]`.
                let (qg, kg, vg) = match &by_seg {
                    Some((qs, ks, vs)) => (
                        qs.narrow(0, h * off, h * n)?.reshape((kvh, group * n, hd))?,
                        ks.narrow(0, kvh * off, kvh * n)?.reshape((kvh, n, hd))?,
                        vs.narrow(0, kvh * off, kvh * n)?.reshape((kvh, n, hd))?,
                    ),
                    None => (q.reshape((kvh, group * n, hd))?, k.clone(), v.clone()),
                };
                let (k_all, v_all) = g.past.layer_then(li, &kg, &vg, !cpu)?;
                let t = k_all.dim(1)?;
                let local = if layer.local { local_masks[gi].as_ref() } else { None };
                let out = if cpu {
                    attend_cpu(&qg, &k_all, &v_all, local.unwrap_or(&g.mask), scale as f32, group)?
                } else {
                    // q scaled above.
                    let mask = match (layer.local, &local_masks_dev[gi]) {
                        (true, Some(m)) => m,
                        _ => &masks[gi],
                    };
                    let att = qg.matmul(&k_all.t()?)?.reshape((kvh, group, n, t))?;
                    let att = candle_nn::ops::softmax_last_dim(&att.broadcast_add(mask)?)?;
                    att.reshape((kvh, group * n, t))?.matmul(&v_all)? // [kvh, group*n, hd]
                };
                outs.push(out.reshape((h * n, hd))?); // rows (head, token)
            }
            // Only the keys and values the caller keeps outlive the layer: a pass of a thousand
            // tokens would otherwise hold every layer's (and, through v's view, the joint q, k,
            // v products) to its end, hundreds of MB for a model of Qwen3-0.6B's size.
            let (k, v) = match half {
                Some(kv16) => kv16,
                None => (k, v),
            };
            match keep {
                KeepKv::Nothing => {}
                KeepKv::All => new_kv.push(match &kv_joint {
                    // k and v side by side in the fused kernel's output: one copy holds both,
                    // apart from q.
                    Some(kv) => {
                        let kv = kv.copy()?;
                        LayerKv { k: kv.narrow(0, 0, kvh)?, v: kv.narrow(0, kvh, kvh)? }
                    }
                    // v copied out of the joint product, so the cache holds v alone.
                    None => LayerKv { k, v: v.copy()? },
                }),
                KeepKv::Rows(idx) => new_kv.push(LayerKv {
                    k: k.reshape((kvh * s, hd))?.index_select(idx, 0)?,
                    v: v.contiguous()?.reshape((kvh * s, hd))?.index_select(idx, 0)?,
                }),
            }
            let out = match (&orders, fused) {
                (_, Some(out)) => out,
                // Segment after segment, then every token's heads side by side: `[S, h·hd]`.
                (Some((_, _, back)), None) => Tensor::cat(&outs, 0)?.index_select(back, 0)?.reshape((s, h * hd))?,
                (None, None) => Tensor::cat(&outs, 0)?.reshape((h, s, hd))?.transpose(0, 1)?.reshape((s, h * hd))?,
            };
            let out = layer.wo.forward(&out)?;
            let out = match &layer.attn_post_norm {
                Some(w) => candle_nn::ops::rms_norm(&out, w, eps)?,
                None => out,
            };
            let (sum, xn) = self.add_norm(&x, &out, &layer.ffn_norm)?;
            x = sum;
            let out = self.mlp(layer, &xn)?;
            match self.layers.get(li + 1) {
                Some(next) => {
                    let (sum, xn) = self.add_norm(&x, &out, &next.attn_norm)?;
                    (x, normed) = (sum, Some(xn));
                }
                // The output norm is taken at the rows read (`head_at`).
                None => x = (&x + out)?,
            }
        }
        Ok((x, new_kv))
    }

    /// Whether this pass runs the fused CUDA kernels (`fused_cuda.rs`).
    fn fused_steps(&self) -> bool {
        self.fused_kernels && self.device.is_cuda()
    }

    /// `x + y` and its RMSNorm by `w`: the residual stream after a block's output joins it, and
    /// the next block's input. One kernel with the fused kernels; candle's add and norm otherwise.
    fn add_norm(&self, x: &Tensor, y: &Tensor, w: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        let eps = self.cfg.rms_eps as f32;
        if self.fused_steps() {
            return super::fused_cuda::add_rms_norm(x, y, w, eps);
        }
        let sum = (x + y)?;
        let normed = candle_nn::ops::rms_norm(&sum, w, eps)?;
        Ok((sum, normed))
    }

    /// A layer's q, k and v from its normed input `xn`: q and k through their norms (Qwen3,
    /// Gemma 3) and RoPE (`rope`: cos and sin of the pass's positions), q scaled by `scale`
    /// except on the CPU (whose softmax scales the scores); `[heads, S, hd]` and
    /// `[kv_heads, S, hd]`. With the fused kernels all of it is one launch after the product.
    fn layer_qkv(
        &self,
        layer: &Layer,
        xn: &Tensor,
        rope: (&Tensor, &Tensor),
        scale: f64,
    ) -> candle_core::Result<LayerQkv> {
        let cfg = &self.cfg;
        let (h, kvh, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let eps = cfg.rms_eps as f32;
        let s = xn.dim(0)?;
        let (cos, sin) = rope;
        let qkv = layer.wqkv.forward(xn)?; // [S, (heads + 2·kv heads)·hd]
        let qkv = match &layer.qkv_bias {
            Some(b) => qkv.broadcast_add(b)?,
            None => qkv,
        };
        if self.fused_steps() {
            let spec = super::fused_cuda::QkvSpec {
                heads: h,
                kv_heads: kvh,
                head_dim: hd,
                rope: cfg.rope_style,
                q_scale: scale as f32,
                q_norm: layer.q_norm.as_ref(),
                k_norm: layer.k_norm.as_ref(),
                eps,
            };
            let heads = super::fused_cuda::qkv_heads(&qkv.contiguous()?, cos, sin, &spec)?;
            return Ok(LayerQkv {
                q: heads.narrow(0, 0, h)?,
                k: heads.narrow(0, h, kvh)?,
                v: heads.narrow(0, h + kvh, kvh)?,
                kv_joint: Some(heads.narrow(0, h, 2 * kvh)?),
            });
        }
        // Heads first in one copy: `[heads + 2·kv heads, S, hd]`, whose q, k and v are
        // contiguous slices.
        let heads = qkv.reshape((s, h + 2 * kvh, hd))?.transpose(0, 1)?.contiguous()?;
        let q = heads.narrow(0, 0, h)?;
        let k = heads.narrow(0, h, kvh)?;
        let v = heads.narrow(0, h + kvh, kvh)?; // [kvh, S, hd]
        let q = match &layer.q_norm {
            Some(w) => candle_nn::ops::rms_norm(&q, w, eps)?,
            None => q,
        };
        let k = match &layer.k_norm {
            Some(w) => candle_nn::ops::rms_norm(&k, w, eps)?,
            None => k,
        };
        // [1, heads, S, hd] for the rope kernels.
        let (q, k) = (q.unsqueeze(0)?, k.unsqueeze(0)?);
        let (q, k) = match cfg.rope_style {
            RopeStyle::Interleaved => {
                (candle_nn::rotary_emb::rope_i(&q, cos, sin)?, candle_nn::rotary_emb::rope_i(&k, cos, sin)?)
            }
            RopeStyle::Halves => {
                (candle_nn::rotary_emb::rope(&q, cos, sin)?, candle_nn::rotary_emb::rope(&k, cos, sin)?)
            }
        };
        // On CPU the fused softmax scales the scores; elsewhere q is scaled here, once for
        // every segment of the pass, instead of each segment's scores.
        let q = if self.device.is_cpu() { q.squeeze(0)? } else { (q.squeeze(0)? * scale)? }; // [h, S, hd]
        Ok(LayerQkv { q, k: k.squeeze(0)?, v, kv_joint: None })
    }

    /// A layer's MLP on its normed input `xn`: gate and up as one product, SwiGLU (GELU for
    /// Gemma 3), down, and Gemma 3's norm after it.
    fn mlp(&self, layer: &Layer, xn: &Tensor) -> candle_core::Result<Tensor> {
        let eps = self.cfg.rms_eps as f32;
        let gate_up = layer.w_gate_up.forward(xn)?; // [S, 2·ff]
        let ff = gate_up.dim(1)? / 2;
        // Our ops on the CPU and with the fused kernels (one CUDA kernel each); candle's otherwise.
        let act = match (self.cfg.gemma.is_some(), self.device.is_cpu() || self.fused_steps()) {
            (false, true) => super::fused::swiglu(&gate_up)?,
            (true, true) => super::fused::geglu(&gate_up)?,
            (false, false) => (candle_nn::ops::silu(&gate_up.narrow(1, 0, ff)?)? * gate_up.narrow(1, ff, ff)?)?,
            // candle's `gelu` is the tanh approximation.
            (true, false) => (gate_up.narrow(1, 0, ff)?.gelu()? * gate_up.narrow(1, ff, ff)?)?,
        };
        let out = layer.w_down.forward(&act)?;
        match &layer.ffn_post_norm {
            Some(w) => candle_nn::ops::rms_norm(&out, w, eps),
            None => Ok(out),
        }
    }

    /// The local layers' mask of each segment: its tree mask cut to the sliding window, for the
    /// segments that reach past it (`None`: the window hides nothing, and the local layers use
    /// the tree mask; always so for a model without local layers).
    fn local_masks(&self, segs: &[Segment<'_>]) -> candle_core::Result<Vec<Option<Tensor>>> {
        match &self.cfg.gemma {
            Some(g) if self.layers.iter().any(|l| l.local) => {
                segs.iter().map(|seg| window_mask(seg, g.sliding_window, &self.device)).collect()
            }
            _ => Ok(vec![None; segs.len()]),
        }
    }

    /// Output norm and LM head at the given rows of `hidden`. With `ids`, only those rows of the
    /// head are used (a pruned head); otherwise the whole vocabulary.
    ///
    /// A row's logits do not depend on how many rows are read with it: the matmul library sums
    /// one row alone (a matrix-vector kernel), and up to 64 rows against at most 64 columns
    /// (the pruned head), in another order than a larger product, so the rows are padded past
    /// those sizes (copies of the first, dropped after). A resumed run, which reads fewer rows
    /// in a pass, then gives the bits an uninterrupted run gives.
    pub(crate) fn head_at(&self, hidden: &Tensor, rows: &[u32], ids: Option<&[u32]>) -> candle_core::Result<Tensor> {
        self.set_matmul_mode();
        let n = rows.len();
        let min_rows: usize = if ids.is_some() { 65 } else { 2 };
        let padded: Vec<u32> = rows
            .iter()
            .copied()
            .chain(std::iter::repeat_n(rows.first().copied().unwrap_or(0), min_rows.saturating_sub(n)))
            .collect();
        let rows = Tensor::from_slice(&padded, padded.len(), &self.device)?;
        let h = hidden.index_select(&rows, 0)?;
        let h = candle_nn::ops::rms_norm(&h, &self.norm, self.cfg.rms_eps as f32)?;
        let out = match ids {
            Some(ids) => h.matmul(&self.head.rows(ids, &self.device)?.t()?)?,
            None => match &self.head_q {
                Some(q) => q.forward(&h)?,
                None => self.head.product(&h)?,
            },
        };
        let out = match self.cfg.gemma.as_ref().and_then(|g| g.final_logit_softcap) {
            Some(cap) => (out.affine(1.0 / cap as f64, 0.0)?.tanh()? * cap as f64)?,
            None => out,
        };
        if padded.len() == n {
            Ok(out)
        } else {
            out.narrow(0, 0, n)
        }
    }

    /// Additive mask for a stem of `stem` tokens followed by `groups` of leaf tokens, over a
    /// prefix of `past` tokens: stem tokens see the prefix and the earlier stem tokens; a leaf
    /// token sees the prefix, the whole stem and the earlier tokens of its own group. It is
    /// [`Transformer::grouped_tree_mask`] of one unit.
    pub(crate) fn stem_tree_mask(
        past: usize,
        stem: usize,
        groups: &[usize],
        device: &Device,
    ) -> candle_core::Result<Tensor> {
        Self::grouped_tree_mask(past, &[(stem, groups.to_vec())], device)
    }

    /// The additive mask of several units computed on one parent of `past` tokens, their tokens
    /// one after the other: each unit's rows see the parent and, among the new tokens, only their
    /// own unit's, laid out as in [`Transformer::stem_tree_mask`]. `parts` holds each unit's stem
    /// length and leaf lengths.
    pub(crate) fn grouped_tree_mask(
        past: usize,
        parts: &[(usize, Vec<usize>)],
        device: &Device,
    ) -> candle_core::Result<Tensor> {
        let s: usize = parts.iter().map(|(stem, lens)| stem + lens.iter().sum::<usize>()).sum();
        let t = past + s;
        let mut m = vec![f32::NEG_INFINITY; s * t];
        let mut off = 0;
        for (stem, lens) in parts {
            let own = past + off; // this unit's first column
            for i in 0..*stem {
                let row = (off + i) * t;
                m[row..row + past].fill(0.0);
                m[row + own..row + own + i + 1].fill(0.0);
            }
            let mut start = *stem;
            for &g in lens {
                for i in 0..g {
                    let row = (off + start + i) * t;
                    m[row..row + past].fill(0.0);
                    m[row + own..row + own + stem].fill(0.0);
                    m[row + own + start..row + own + start + i + 1].fill(0.0);
                }
                start += g;
            }
            off += start;
        }
        Tensor::from_vec(m, (s, t), device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_projections_equal_the_parts_side_by_side() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::randn(0f32, 1., (7, 24), &dev)?;
        let ws: Vec<Tensor> =
            [16, 8, 8].iter().map(|&o| Tensor::randn(0f32, 1., (o, 24), &dev)).collect::<Result<_, _>>()?;
        let hold = Hold { matmul: MatmulPath::Dense, native: false, int8_activations: false, bf16: false };
        let lin = |w: &Tensor| Linear::new(LoadedWeight::Dense(w.clone()), &hold, &dev);
        let apart: Vec<Tensor> = ws.iter().map(|w| lin(w)?.forward(&x)).collect::<Result<_, _>>()?;
        let want = Tensor::cat(&apart, 1)?.to_vec2::<f32>()?;
        let loaded = ws.iter().map(|w| LoadedWeight::Dense(w.clone())).collect();
        let joined = Linear::join(loaded, &hold, &dev)?;
        assert!(matches!(joined, Joined::One(_)), "dense weights are joined into one product");
        let got = joined.forward(&x)?.to_vec2::<f32>()?;
        for (a, b) in got.iter().flatten().zip(want.iter().flatten()) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
        }
        // A single row (the path that multiplies it as two) gives the first row of the above.
        let one = joined.forward(&x.narrow(0, 0, 1)?)?.to_vec2::<f32>()?;
        for (a, b) in one[0].iter().zip(&want[0]) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
        }
        Ok(())
    }

    #[test]
    fn the_window_cuts_the_tree_mask_by_position() {
        // A past of 3 tokens (positions 0, 1, 2); a stem of 1 (position 3), then leaves of 2
        // (positions 4, 5) and 1 (position 4). Window 2: a token sees itself and one back.
        let past = Prefix::empty().push(vec![], &[7, 7, 7]);
        let mask = Transformer::stem_tree_mask(3, 1, &[2, 1], &Device::Cpu).unwrap();
        let seg = Segment { past: &past, tokens: vec![1, 2, 3, 4], positions: vec![3, 4, 5, 4], mask };
        let m: Vec<Vec<f32>> = window_mask(&seg, 2, &Device::Cpu).unwrap().unwrap().to_vec2().unwrap();
        let seen = |r: usize| m[r].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>();
        // columns: past 0 1 2 | stem 3 | leaf one 4 5 | leaf two 4
        assert_eq!(seen(0), vec![0, 0, 1, 1, 0, 0, 0]);
        assert_eq!(seen(1), vec![0, 0, 0, 1, 1, 0, 0]);
        assert_eq!(seen(2), vec![0, 0, 0, 0, 1, 1, 0]);
        assert_eq!(seen(3), vec![0, 0, 0, 1, 0, 0, 1]);
        // Window 6: nothing is that far back, and the tree mask is used as it is.
        assert!(window_mask(&seg, 6, &Device::Cpu).unwrap().is_none());
        // Window 3 reaches position 0 only from position 3 on: still a cut.
        let m: Vec<Vec<f32>> = window_mask(&seg, 3, &Device::Cpu).unwrap().unwrap().to_vec2().unwrap();
        assert_eq!(m[0].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>(), vec![0, 1, 1, 1, 0, 0, 0]);
    }

    #[test]
    fn tree_mask_shapes_and_visibility() {
        let m = Transformer::stem_tree_mask(2, 0, &[2, 1], &Device::Cpu).unwrap();
        let v: Vec<Vec<f32>> = m.to_vec2().unwrap();
        let seen = |r: usize| v[r].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>();
        assert_eq!(seen(0), vec![1, 1, 1, 0, 0]);
        assert_eq!(seen(1), vec![1, 1, 1, 1, 0]);
        assert_eq!(seen(2), vec![1, 1, 0, 0, 1]);
    }

    #[test]
    fn stem_tree_mask_leaves_see_the_stem() {
        // past 1, stem 2, leaves of 1 and 2 tokens.
        let m = Transformer::stem_tree_mask(1, 2, &[1, 2], &Device::Cpu).unwrap();
        let v: Vec<Vec<f32>> = m.to_vec2().unwrap();
        let seen = |r: usize| v[r].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>();
        assert_eq!(seen(0), vec![1, 1, 0, 0, 0, 0]);
        assert_eq!(seen(1), vec![1, 1, 1, 0, 0, 0]);
        assert_eq!(seen(2), vec![1, 1, 1, 1, 0, 0]);
        assert_eq!(seen(3), vec![1, 1, 1, 0, 1, 0]);
        assert_eq!(seen(4), vec![1, 1, 1, 0, 1, 1]);
    }
}
