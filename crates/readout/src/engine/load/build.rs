//! The model built from its named tensors, whichever file they come from: each tensor fetched
//! by name and checked against the shape the configuration gives it, and held as the matmul
//! path and `--weights` ask (`Hold`). The names differ by format (`BlockKeys`: GGUF's in
//! `gguf.rs`, Hugging Face's in `hf.rs`); what the model is made of does not.

use crate::engine::config::{Architecture, Hybrid, ModelConfig};
use crate::engine::model::{
    quantised_matmul, Attention, DeltaNet, Embedding, Head, Hold, Layer, Linear, LoadedWeight, Mixer, Mlp, RmsNorm,
    Rope, Table, Transformer,
};
use crate::engine::options::MatmulPath;
use crate::error::{Error, Result};
use candle_core::quantized::QMatMul;
use candle_core::{Device, Tensor};
use std::path::Path;
use std::sync::Arc;

/// Tensor names inside a block, GGUF then Hugging Face.
pub(super) struct BlockKeys {
    pub attn_norm: &'static str,
    pub q: &'static str,
    pub k: &'static str,
    pub v: &'static str,
    pub o: &'static str,
    pub q_norm: &'static str,
    pub k_norm: &'static str,
    pub ffn_norm: &'static str,
    /// Gemma 3's norms after attention and after the MLP.
    pub attn_post_norm: &'static str,
    pub ffn_post_norm: &'static str,
    pub gate: &'static str,
    pub up: &'static str,
    pub down: &'static str,
    /// Added to every norm weight as it is read (the final norm's too): 1 for Gemma 3's
    /// Hugging Face checkpoints, which store `w` of the `1 + w` the norms multiply by (GGUF
    /// converters add the 1 themselves).
    pub norm_shift: f32,
    /// Qwen3.5's Gated DeltaNet layers' names, for a format that has them.
    pub delta: Option<DeltaKeys>,
}

/// Tensor names of a Gated DeltaNet layer (Qwen3.5), GGUF then Hugging Face.
pub(super) struct DeltaKeys {
    /// q, k and v, the convolution's channels (`attn_qkv`, `linear_attn.in_proj_qkv`).
    pub qkv: &'static str,
    /// The output norm's gate z.
    pub z: &'static str,
    /// β before its sigmoid, and the decay's input a.
    pub b: &'static str,
    pub a: &'static str,
    pub conv: &'static str,
    /// Without the `.weight` the other names take.
    pub dt_bias: &'static str,
    /// `A = −exp(A_log)`: stored as `A` (GGUF's `ssm_a`) or as `A_log` (`a_is_log`).
    pub a_param: &'static str,
    pub a_is_log: bool,
    pub norm: &'static str,
    pub out: &'static str,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn build(
    cfg: &ModelConfig,
    device: &Device,
    hold: Hold,
    path: &Path,
    get: &mut dyn FnMut(&str) -> Result<LoadedWeight>,
    embed_name: &str,
    norm_name: &str,
    head_name: &str,
    names: impl Fn(usize, &str) -> String,
    keys: BlockKeys,
) -> Result<Transformer> {
    let (d, kv, q, ff, hd) = (
        cfg.hidden_size,
        cfg.num_kv_heads * cfg.head_dim,
        cfg.num_heads * cfg.head_dim,
        cfg.intermediate_size,
        cfg.head_dim,
    );
    let mut shaped = |name: String, want: &[usize]| -> Result<LoadedWeight> {
        let w = get(&name)?;
        if w.dims() != want {
            return Err(Error::BadTensor {
                path: path.to_path_buf(),
                tensor: name,
                detail: format!("shape {:?}, expected {:?}", w.dims(), want),
            });
        }
        Ok(w)
    };
    let (matmul, native) = (hold.matmul, hold.native);
    let hold = &hold;
    // The quantised head, when the quantised path is asked for and the file has one.
    let quant_of = |w: &LoadedWeight| -> Result<Option<QMatMul>> {
        match (matmul, w) {
            (MatmulPath::Quantized, LoadedWeight::Encoded(e)) => Ok(Some(quantised_matmul(e, device)?)),
            _ => Ok(None),
        }
    };
    // The norms' epsilon, the same for every norm of the model.
    let eps = cfg.rms_eps as f32;
    let norm_of = |weight: Tensor| RmsNorm { weight, eps };
    // A norm weight as the forward multiplies by it (see `BlockKeys::norm_shift`).
    let norm_shift = keys.norm_shift;
    let shift =
        |t: Tensor| -> Result<Tensor> { Ok(if norm_shift == 0.0 { t } else { t.affine(1.0, norm_shift as f64)? }) };
    let embed_w = shaped(embed_name.to_string(), &[cfg.vocab_size, d])?;
    let norm = shift(shaped(norm_name.to_string(), &[d])?.into_dense(device)?)?;
    let (head, head_q, embed) = if cfg.tie_embeddings {
        let q = quant_of(&embed_w)?;
        let e = Arc::new(Table::new(embed_w, native, device)?);
        (e.clone(), q, e)
    } else {
        let hw = shaped(head_name.to_string(), &[cfg.vocab_size, d])?;
        let q = quant_of(&hw)?;
        (Arc::new(Table::new(hw, native, device)?), q, Arc::new(Table::new(embed_w, native, device)?))
    };
    let mut layers = Vec::with_capacity(cfg.num_layers);
    for i in 0..cfg.num_layers {
        let mut w = |k: &str, shape: &[usize]| shaped(names(i, k), shape);
        let w_gate_up = Linear::join(vec![w(keys.gate, &[ff, d])?, w(keys.up, &[ff, d])?], hold, device)?;
        let w_down = Linear::new(w(keys.down, &[d, ff])?, hold, device)?;
        let mut vecw = |k: &str, n: usize| -> Result<Tensor> { shift(shaped(names(i, k), &[n])?.into_dense(device)?) };
        let attn_norm = vecw(keys.attn_norm, d)?;
        let ffn_norm = vecw(keys.ffn_norm, d)?;
        let mlp = |post_norm: Option<Tensor>| Mlp {
            gate_up: w_gate_up,
            down: w_down,
            post_norm: post_norm.map(norm_of),
            gelu: cfg.gemma.is_some(),
        };
        if let (Some(h), Some(dk)) = (cfg.hybrid.as_ref().filter(|h| h.recurrent_layers[i]), keys.delta.as_ref()) {
            let delta = delta(h, dk, i, &mut shaped, &names, hold, device, d, eps)?;
            layers.push(Layer {
                attn_norm: norm_of(attn_norm),
                mixer: Mixer::Delta(delta),
                ffn_norm: norm_of(ffn_norm),
                mlp: mlp(None),
            });
            continue;
        }
        // Qwen3.5's query projection gives each head's query and its gate.
        let gated = cfg.hybrid.is_some();
        let qw = if gated { 2 * q } else { q };
        let mut w = |k: &str, shape: &[usize]| shaped(names(i, k), shape);
        let qkv = vec![w(keys.q, &[qw, d])?, w(keys.k, &[kv, d])?, w(keys.v, &[kv, d])?];
        let wqkv = Linear::join(qkv, hold, device)?;
        let wo = Linear::new(w(keys.o, &[d, q])?, hold, device)?;
        let mut vecw = |k: &str, n: usize| -> Result<Tensor> { shift(shaped(names(i, k), &[n])?.into_dense(device)?) };
        let (q_norm, k_norm) = if cfg.architecture.has_qk_norms() {
            (Some(vecw(keys.q_norm, hd)?), Some(vecw(keys.k_norm, hd)?))
        } else {
            (None, None)
        };
        let (attn_post_norm, ffn_post_norm) = match cfg.architecture {
            Architecture::Gemma3 => (Some(vecw(keys.attn_post_norm, d)?), Some(vecw(keys.ffn_post_norm, d)?)),
            Architecture::Llama | Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Qwen35 => (None, None),
        };
        // Qwen2's q, k and v biases, joined as the product's columns are: `[q + 2·kv]`.
        let qkv_bias = if cfg.architecture.has_qkv_bias() {
            let mut b = |k: &str, n: usize| -> Result<Tensor> {
                let weight = names(i, k);
                let name = format!("{}.bias", weight.strip_suffix(".weight").unwrap_or(&weight));
                Ok(shaped(name, &[n])?.into_dense(device)?)
            };
            let parts = [b(keys.q, q)?, b(keys.k, kv)?, b(keys.v, kv)?];
            Some(Tensor::cat(&parts, 0)?)
        } else {
            None
        };
        let local = cfg.gemma.as_ref().is_some_and(|g| g.local_layers[i]);
        layers.push(Layer {
            attn_norm: norm_of(attn_norm),
            mixer: Mixer::Attention(Attention {
                wqkv,
                qkv_bias,
                wo,
                q_norm: q_norm.map(norm_of),
                k_norm: k_norm.map(norm_of),
                post_norm: attn_post_norm.map(norm_of),
                local,
                gated,
            }),
            ffn_norm: norm_of(ffn_norm),
            mlp: mlp(ffn_post_norm),
        });
    }
    let gemma = cfg.gemma.as_ref();
    Ok(Transformer {
        cfg: cfg.clone(),
        embed: Embedding { table: embed, scale: gemma.map(|g| g.embed_scale) },
        layers,
        head: Head {
            norm: norm_of(norm),
            table: head,
            quant: head_q,
            softcap: gemma.and_then(|g| g.final_logit_softcap),
        },
        rope: Rope::new(cfg),
        device: device.clone(),
        kv_f16: false,
        tf32: false,
        attention_kernel: false,
        attention_tensor_cores: false,
        fused_kernels: false,
    })
}

/// A Gated DeltaNet layer `i` of shape `h`, its tensors named by `keys`.
#[allow(clippy::too_many_arguments)]
fn delta(
    h: &Hybrid,
    keys: &DeltaKeys,
    i: usize,
    shaped: &mut dyn FnMut(String, &[usize]) -> Result<LoadedWeight>,
    names: &dyn Fn(usize, &str) -> String,
    hold: &Hold,
    device: &Device,
    d: usize,
    eps: f32,
) -> Result<DeltaNet> {
    let (c, vd, vh) = (h.conv_dim(), h.value_heads * h.value_dim, h.value_heads);
    // A name without the `.weight` the others take (`dt_bias`, `A_log`, `ssm_a`, `ssm_dt.bias`).
    let bare = |k: &str| {
        let w = names(i, k);
        w.strip_suffix(".weight").map(String::from).unwrap_or(w)
    };
    let host = |w: LoadedWeight| -> Result<Vec<f32>> {
        Ok(w.into_dense(&Device::Cpu)?.to_dtype(candle_core::DType::F32)?.flatten_all()?.to_vec1::<f32>()?)
    };
    let proj = Linear::join(
        vec![
            shaped(names(i, keys.qkv), &[c, d])?,
            shaped(names(i, keys.z), &[vd, d])?,
            shaped(names(i, keys.b), &[vh, d])?,
            shaped(names(i, keys.a), &[vh, d])?,
        ],
        hold,
        device,
    )?;
    let out = Linear::new(shaped(names(i, keys.out), &[d, vd])?, hold, device)?;
    let conv = host(shaped(names(i, keys.conv), &[c, h.conv_kernel])?)?;
    let a = host(shaped(bare(keys.a_param), &[vh])?)?;
    let a = if keys.a_is_log { a.iter().map(|x| -x.exp()).collect() } else { a };
    Ok(DeltaNet {
        proj,
        conv,
        a,
        dt_bias: host(shaped(bare(keys.dt_bias), &[vh])?)?,
        norm: host(shaped(names(i, keys.norm), &[h.value_dim])?)?,
        out,
        shape: h.clone(),
        eps,
    })
}
