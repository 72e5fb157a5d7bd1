//! Loading a model from disk: a GGUF file (weights, shape, tokenizer and chat template all in
//! its metadata) or a Hugging Face directory (`config.json`, `tokenizer.json`,
//! `tokenizer_config.json`, safetensors). Every failure names the file and says what to do.

use super::config::{Architecture, Gemma, ModelConfig, RopeStyle};
pub(crate) use super::model::Hold;
use super::model::{Layer, Linear, LoadedWeight, MatmulPath, Table, Transformer};
use super::weights::Encoded;
use crate::error::{Error, Result};
use candle_core::quantized::{gguf_file, QMatMul};
use candle_core::{Device, Tensor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a model file says about itself, besides its weights.
pub(crate) struct Loaded {
    pub model: Transformer,
    pub tokenizer_source: TokenizerSource,
    pub chat_template: Option<String>,
    pub bos_token: Option<String>,
    pub eos_token: Option<String>,
    pub quantisation: String,
    pub name: String,
}

/// Where the tokenizer comes from.
pub(crate) enum TokenizerSource {
    /// A `tokenizer.json`.
    Json(PathBuf),
    /// The GGUF metadata.
    Gguf(Box<GgufVocab>),
}

/// The tokenizer fields of a GGUF file. The `Option`s are absent keys: what llama.cpp assumes
/// then depends on the tokenizer model (see `Tokenizer::from_gguf`).
#[derive(Default)]
pub(crate) struct GgufVocab {
    pub model: String,
    pub pre: String,
    pub tokens: Vec<String>,
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.scores`: a SentencePiece (`llama`) vocabulary's merge priorities.
    pub scores: Vec<f32>,
    pub merges: Vec<String>,
    pub add_bos: Option<bool>,
    pub add_space_prefix: Option<bool>,
    pub bos_id: Option<u32>,
    pub unk_id: Option<u32>,
}

/// Load any supported model: a `.gguf` file or a Hugging Face directory.
pub(crate) fn load(path: &Path, device: &Device, hold: Hold) -> Result<Loaded> {
    if !path.exists() {
        return Err(Error::ModelMissing { path: path.to_path_buf(), hint: missing_hint(path) });
    }
    if path.is_dir() {
        load_hf(path, device, hold)
    } else {
        load_gguf(path, device, hold)
    }
}

/// A model file mapped read-only.
fn map(path: &Path) -> Result<super::weights::Mapped> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: the map is read-only and private to this process; a file changed under us while
    // it is mapped is the user's to avoid, as with every mmap-based loader (llama.cpp's too).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    Ok(Arc::new(map))
}

fn missing_hint(path: &Path) -> String {
    if path.file_name().map(|n| n == crate::DEFAULT_MODEL_FILE).unwrap_or(false) {
        "Fetch the default model with: models/fetch".to_string()
    } else {
        "Pass a GGUF file or a Hugging Face model directory with --model, or run models/fetch for the default model."
            .to_string()
    }
}

fn corrupt(path: &Path, detail: impl std::fmt::Display) -> Error {
    Error::CorruptGguf { path: path.to_path_buf(), detail: detail.to_string() }
}

fn load_gguf(path: &Path, device: &Device, hold: Hold) -> Result<Loaded> {
    // Our bounded reader checks the header and that every tensor lies inside the file; the
    // tensors are then views of the mapped file (checked again as they are made).
    let (_, content) = super::gguf::open(path)?;
    let mapped = map(path)?;
    let mut cfg = gguf_config(&content, path)?;
    cfg.rope_factors = gguf_rope_factors(&content, &mapped[..], path)?;
    let md = &content.metadata;
    let get_str = |k: &str| md.get(k).and_then(|v| v.to_string().ok()).cloned();
    let vocab = gguf_vocab(&content, path)?;
    cfg.validate().map_err(|d| Error::BadModelConfig { path: path.to_path_buf(), detail: d })?;

    let mut get = |name: &str| -> Result<LoadedWeight> {
        let info = content.tensor_infos.get(name).ok_or_else(|| Error::BadTensor {
            path: path.to_path_buf(),
            tensor: name.to_string(),
            detail: "not in the file".into(),
        })?;
        let (rows, cols) = match info.shape.dims() {
            [n] => (1, *n),
            [r, c] => (*r, *c),
            dims => {
                return Err(Error::BadTensor {
                    path: path.to_path_buf(),
                    tensor: name.to_string(),
                    detail: format!("has {} dimensions ({dims:?}); a weight has one or two", dims.len()),
                })
            }
        };
        let offset = usize::try_from(content.tensor_data_offset + info.offset).unwrap_or(usize::MAX);
        let e = Encoded::new(mapped.clone(), offset, info.ggml_dtype, rows, cols)
            .map_err(|d| corrupt(path, format!("tensor `{name}`: {d}")))?;
        Ok(LoadedWeight::Encoded(e))
    };
    let names = |i: usize, k: &str| format!("blk.{i}.{k}.weight");
    let model = build(
        &cfg,
        device,
        hold,
        path,
        &mut get,
        "token_embd.weight",
        "output_norm.weight",
        "output.weight",
        names,
        GGUF_KEYS,
    )?;

    let eos_id = md.get("tokenizer.ggml.eos_token_id").and_then(|v| v.to_u32().ok());
    let tok_text = |i: Option<u32>| i.and_then(|i| vocab.tokens.get(i as usize).cloned());
    let (bos_token, eos_token) = (tok_text(vocab.bos_id), tok_text(eos_id));
    let quantisation = dominant_type(&content);
    Ok(Loaded {
        model,
        tokenizer_source: TokenizerSource::Gguf(Box::new(vocab)),
        chat_template: get_str("tokenizer.chat_template"),
        bos_token,
        eos_token,
        quantisation,
        name: get_str("general.name").unwrap_or_else(|| file_stem(path)),
    })
}

/// The tokenizer fields of GGUF metadata; an error when the file carries no vocabulary.
pub(crate) fn gguf_vocab(content: &gguf_file::Content, path: &Path) -> Result<GgufVocab> {
    let md = &content.metadata;
    let get_str = |k: &str| md.get(k).and_then(|v| v.to_string().ok()).cloned();
    let strings = |k: &str| -> Option<Vec<String>> {
        md.get(k)
            .and_then(|v| v.to_vec().ok())
            .map(|v| v.iter().map(|t| t.to_string().cloned().unwrap_or_default()).collect())
    };
    let Some(tokens) = strings("tokenizer.ggml.tokens") else {
        return Err(Error::Tokenizer {
            path: path.to_path_buf(),
            detail: "no `tokenizer.ggml.tokens` in the metadata: this GGUF carries no tokenizer. Use a GGUF converted with its tokenizer, or a Hugging Face directory with tokenizer.json".into(),
        });
    };
    let token_types: Vec<i32> = md
        .get("tokenizer.ggml.token_type")
        .and_then(|v| v.to_vec().ok())
        .map(|v| v.iter().map(|t| t.to_i32().unwrap_or(1)).collect())
        .unwrap_or_default();
    let scores: Vec<f32> = md
        .get("tokenizer.ggml.scores")
        .and_then(|v| v.to_vec().ok())
        .map(|v| v.iter().map(|s| s.to_f32().unwrap_or(0.0)).collect())
        .unwrap_or_default();
    let flag = |k: &str| md.get(k).and_then(|v| v.to_bool().ok());
    let id = |k: &str| md.get(k).and_then(|v| v.to_u32().ok());
    Ok(GgufVocab {
        model: get_str("tokenizer.ggml.model").unwrap_or_else(|| "gpt2".into()),
        pre: get_str("tokenizer.ggml.pre").unwrap_or_else(|| "default".into()),
        token_types,
        scores,
        merges: strings("tokenizer.ggml.merges").unwrap_or_default(),
        add_bos: flag("tokenizer.ggml.add_bos_token"),
        add_space_prefix: flag("tokenizer.ggml.add_space_prefix"),
        bos_id: id("tokenizer.ggml.bos_token_id"),
        unk_id: id("tokenizer.ggml.unknown_token_id"),
        tokens,
    })
}

/// The model's shape from GGUF metadata (and which tensors exist), without reading weights;
/// not yet validated (the caller checks the tokenizer first, then validates).
fn gguf_config(content: &gguf_file::Content, path: &Path) -> Result<ModelConfig> {
    let md = &content.metadata;
    let get_str = |k: &str| md.get(k).and_then(|v| v.to_string().ok()).cloned();
    let arch_name = get_str("general.architecture")
        .ok_or_else(|| corrupt(path, "no `general.architecture` key in the metadata"))?;
    let arch = Architecture::from_name(&arch_name)
        .ok_or_else(|| Error::UnsupportedArchitecture { path: path.to_path_buf(), arch: arch_name.clone() })?;
    let a = arch.as_str();
    let bad_cfg = |k: &str| {
        Error::BadModelConfig {
        path: path.to_path_buf(),
        detail: format!(
            "metadata key `{k}` is missing or not a number. The GGUF metadata is incomplete: get a complete copy of the model, or convert it again with llama.cpp's convert_hf_to_gguf.py"
        ),
    }
    };
    let get_u = |k: &str| -> Result<usize> {
        let key = format!("{a}.{k}");
        md.get(&key)
            .and_then(|v| v.to_u64().ok().or_else(|| v.to_u32().ok().map(u64::from)))
            .map(|v| v as usize)
            .ok_or_else(|| bad_cfg(&key))
    };
    let get_f = |k: &str| -> Option<f32> { md.get(&format!("{a}.{k}")).and_then(|v| v.to_f32().ok()) };
    let hidden = get_u("embedding_length")?;
    let heads = get_u("attention.head_count")?;
    let kv_heads = get_u("attention.head_count_kv").unwrap_or(heads);
    let head_dim = get_u("attention.key_length").unwrap_or(hidden / heads.max(1));
    let n_tokens = md.get("tokenizer.ggml.tokens").and_then(|v| v.to_vec().ok()).map(|v| v.len()).unwrap_or(0);
    let has_output = content.tensor_infos.contains_key("output.weight");
    let num_layers = get_u("block_count")?;
    let gemma = match arch {
        Architecture::Gemma3 => {
            // As llama.cpp's `gemma3` loader: the window is required, five local layers to one
            // global, local RoPE base 10,000 unscaled; the global layers take the file's base
            // and its (linear) scaling factor.
            let window = get_u("attention.sliding_window")?;
            let scaling = get_str(&format!("{a}.rope.scaling.type"));
            if let Some(t) = scaling.as_deref().filter(|t| !matches!(*t, "none" | "linear")) {
                return Err(Error::BadModelConfig {
                    path: path.to_path_buf(),
                    detail: format!(
                        "`{a}.rope.scaling.type` is `{t}`; Readout runs gemma3 models with linear RoPE scaling or none"
                    ),
                });
            }
            let factor = get_f("rope.scaling.factor").or_else(|| get_f("rope.scale_linear")).unwrap_or(0.0);
            // llama.cpp's hparams.f_attention_scale: 27B (62 layers) scales by hidden / heads.
            let query_len = if num_layers == 62 { hidden / heads.max(1) } else { head_dim };
            Some(Gemma {
                sliding_window: window,
                local_layers: Gemma::pattern(num_layers, Gemma::PATTERN),
                rope_local_theta: Gemma::LOCAL_ROPE_THETA,
                rope_global_scale: if factor == 0.0 { 1.0 } else { 1.0 / factor },
                query_scale: 1.0 / (query_len as f32).sqrt() as f64,
                // llama.cpp scales the f32 rows it looked up by sqrtf(n_embd).
                embed_scale: (hidden as f32).sqrt(),
                final_logit_softcap: get_f("final_logit_softcapping").filter(|&c| c != 0.0),
            })
        }
        Architecture::Llama | Architecture::Qwen2 | Architecture::Qwen3 => None,
    };
    if arch != Architecture::Gemma3 {
        // Llama 3.x's `llama3` scaling is the `rope_freqs.weight` tensor ([`gguf_rope_factors`]);
        // a scaling type in the metadata is one Readout does not compute.
        if let Some(t) = get_str(&format!("{a}.rope.scaling.type")).filter(|t| t != "none") {
            let factor = get_f("rope.scaling.factor").unwrap_or(1.0);
            if !(t == "linear" && factor == 1.0) {
                return Err(Error::BadModelConfig {
                    path: path.to_path_buf(),
                    detail: format!(
                        "`{a}.rope.scaling.type` is `{t}` (factor {factor}); Readout runs {a} models with unscaled RoPE or Llama 3's frequency factors (`rope_freqs.weight`)"
                    ),
                });
            }
        }
    }
    let cfg = ModelConfig {
        architecture: arch,
        vocab_size: get_u("vocab_size").unwrap_or(n_tokens),
        hidden_size: hidden,
        intermediate_size: get_u("feed_forward_length")?,
        num_layers,
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        rope_theta: get_f("rope.freq_base").unwrap_or(10_000.0),
        rms_eps: get_f("attention.layer_norm_rms_epsilon").unwrap_or(1e-5) as f64,
        context_length: get_u("context_length").unwrap_or(4096).min(super::config::MAX_CONTEXT),
        tie_embeddings: !has_output,
        rope_style: match arch {
            Architecture::Llama => RopeStyle::Interleaved,
            Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Gemma3 => RopeStyle::Halves,
        },
        rope_factors: None,
        gemma,
    };
    Ok(cfg)
}

/// Llama 3's RoPE frequency factors, as llama.cpp's converter stores them: an F32 tensor
/// `rope_freqs.weight` of `head_dim / 2` divisors (llama.cpp divides each pair's angle by its
/// factor); `None` when the file has none. `data` is the whole file.
fn gguf_rope_factors(content: &gguf_file::Content, data: &[u8], path: &Path) -> Result<Option<Vec<f32>>> {
    const NAME: &str = "rope_freqs.weight";
    let Some(info) = content.tensor_infos.get(NAME) else { return Ok(None) };
    let bad = |detail: String| Error::BadTensor { path: path.to_path_buf(), tensor: NAME.into(), detail };
    if info.ggml_dtype != candle_core::quantized::GgmlDType::F32 || info.shape.rank() != 1 {
        return Err(bad(format!(
            "is {:?} of shape {:?}; llama.cpp writes it as one F32 row",
            info.ggml_dtype,
            info.shape.dims()
        )));
    }
    let n = info.shape.elem_count();
    let start = usize::try_from(content.tensor_data_offset + info.offset).unwrap_or(usize::MAX);
    let bytes = start
        .checked_add(4 * n)
        .and_then(|end| data.get(start..end))
        .ok_or_else(|| bad("lies past the end of the file; the file is cut short".into()))?;
    Ok(Some(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()))
}

/// Llama 3's `rope_scaling` of `config.json` as per-frequency divisors, computed as llama.cpp's
/// converter computes the `rope_freqs.weight` it writes (the same scaled frequencies as
/// transformers' `_compute_llama3_parameters`): wavelengths shorter than
/// `original / high_freq_factor` keep their frequency, those longer than `original /
/// low_freq_factor` are divided by `factor`, and those between are blended smoothly.
pub(crate) fn llama3_rope_factors(
    theta: f32,
    head_dim: usize,
    factor: f64,
    low_freq_factor: f64,
    high_freq_factor: f64,
    original_context: f64,
) -> Vec<f32> {
    let low_wavelen = original_context / low_freq_factor;
    let high_wavelen = original_context / high_freq_factor;
    (0..head_dim / 2)
        .map(|i| {
            let freq = 1.0 / (theta as f64).powf(2.0 * i as f64 / head_dim as f64);
            let wavelen = 2.0 * std::f64::consts::PI / freq;
            if wavelen < high_wavelen {
                1.0
            } else if wavelen > low_wavelen {
                factor as f32
            } else {
                let smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
                (1.0 / ((1.0 - smooth) / factor + smooth)) as f32
            }
        })
        .collect()
}

/// What a model says about itself without its weights being read.
#[derive(Debug, Clone)]
pub struct Metadata {
    pub config: ModelConfig,
    pub name: String,
    /// The tensor type most weights are in (GGUF), or the `torch_dtype` of config.json.
    pub quantisation: String,
    /// Bytes of the GGUF file, or of the directory's safetensors.
    pub file_bytes: u64,
    /// Whether the model carries a chat template of its own (GGUF `tokenizer.chat_template`, a
    /// directory's `chat_template.jinja` or `tokenizer_config.json`); without one, loading it
    /// needs a template named (`LoadOptions::chat_template`).
    pub has_chat_template: bool,
}

/// Read only the shape of a model: the GGUF header (metadata and tensor table) or config.json.
pub(crate) fn read_metadata(path: &Path) -> Result<Metadata> {
    if !path.exists() {
        return Err(Error::ModelMissing { path: path.to_path_buf(), hint: missing_hint(path) });
    }
    if path.is_dir() {
        let (config, torch_dtype) = hf_config(path)?;
        let file_bytes =
            safetensors_files(path)?.iter().map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)).sum();
        let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let from_config = read_tokenizer_config(&path.join("tokenizer_config.json"))?.chat_template;
        let has_chat_template = hf_chat_template(path, from_config)?.is_some();
        return Ok(Metadata { config, name, quantisation: torch_dtype.to_uppercase(), file_bytes, has_chat_template });
    }
    let (file, content) = super::gguf::open(path)?;
    let file_bytes = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mapped = map(path)?;
    gguf_metadata(&content, &mapped[..], path, file_bytes)
}

/// [`read_metadata`] of GGUF bytes; `path` names the source in errors.
pub(crate) fn read_metadata_bytes(bytes: &[u8], path: &Path) -> Result<Metadata> {
    let content = super::gguf::parse(bytes, path)?;
    gguf_metadata(&content, bytes, path, bytes.len() as u64)
}

fn gguf_metadata(content: &gguf_file::Content, data: &[u8], path: &Path, file_bytes: u64) -> Result<Metadata> {
    let mut config = gguf_config(content, path)?;
    config.rope_factors = gguf_rope_factors(content, data, path)?;
    config.validate().map_err(|d| Error::BadModelConfig { path: path.to_path_buf(), detail: d })?;
    let name = content
        .metadata
        .get("general.name")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .unwrap_or_else(|| file_stem(path));
    let has_chat_template = content.metadata.contains_key("tokenizer.chat_template");
    Ok(Metadata { config, name, quantisation: dominant_type(content), file_bytes, has_chat_template })
}

/// The tensor type most of the weight bytes are in, as GGUF names it.
fn dominant_type(content: &gguf_file::Content) -> String {
    let mut by: HashMap<String, u64> = HashMap::new();
    for info in content.tensor_infos.values() {
        *by.entry(format!("{:?}", info.ggml_dtype)).or_default() += info.shape.elem_count() as u64;
    }
    by.into_iter().max_by_key(|(_, n)| *n).map(|(t, _)| t.to_uppercase()).unwrap_or_default()
}

fn file_stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Tensor names inside a block, GGUF then Hugging Face.
struct BlockKeys {
    attn_norm: &'static str,
    q: &'static str,
    k: &'static str,
    v: &'static str,
    o: &'static str,
    q_norm: &'static str,
    k_norm: &'static str,
    ffn_norm: &'static str,
    /// Gemma 3's norms after attention and after the MLP.
    attn_post_norm: &'static str,
    ffn_post_norm: &'static str,
    gate: &'static str,
    up: &'static str,
    down: &'static str,
    /// Added to every norm weight as it is read (the final norm's too): 1 for Gemma 3's
    /// Hugging Face checkpoints, which store `w` of the `1 + w` the norms multiply by (GGUF
    /// converters add the 1 themselves).
    norm_shift: f32,
}

const GGUF_KEYS: BlockKeys = BlockKeys {
    attn_norm: "attn_norm",
    q: "attn_q",
    k: "attn_k",
    v: "attn_v",
    o: "attn_output",
    q_norm: "attn_q_norm",
    k_norm: "attn_k_norm",
    ffn_norm: "ffn_norm",
    attn_post_norm: "post_attention_norm",
    ffn_post_norm: "post_ffw_norm",
    gate: "ffn_gate",
    up: "ffn_up",
    down: "ffn_down",
    norm_shift: 0.0,
};

const HF_KEYS: BlockKeys = BlockKeys {
    attn_norm: "input_layernorm",
    q: "self_attn.q_proj",
    k: "self_attn.k_proj",
    v: "self_attn.v_proj",
    o: "self_attn.o_proj",
    q_norm: "self_attn.q_norm",
    k_norm: "self_attn.k_norm",
    ffn_norm: "post_attention_layernorm",
    attn_post_norm: "",
    ffn_post_norm: "",
    gate: "mlp.gate_proj",
    up: "mlp.up_proj",
    down: "mlp.down_proj",
    norm_shift: 0.0,
};

/// Gemma 3's block in a Hugging Face checkpoint: there `post_attention_layernorm` is the norm
/// after attention, and the MLP's own norm is `pre_feedforward_layernorm`.
const GEMMA_HF_KEYS: BlockKeys = BlockKeys {
    ffn_norm: "pre_feedforward_layernorm",
    attn_post_norm: "post_attention_layernorm",
    ffn_post_norm: "post_feedforward_layernorm",
    norm_shift: 1.0,
    ..HF_KEYS
};

#[allow(clippy::too_many_arguments)]
fn build(
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
            (MatmulPath::Quantized, LoadedWeight::Encoded(e)) => {
                Ok(Some(QMatMul::from_arc(Arc::new(e.to_qtensor(device)?))?))
            }
            _ => Ok(None),
        }
    };
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
        let qkv = vec![w(keys.q, &[q, d])?, w(keys.k, &[kv, d])?, w(keys.v, &[kv, d])?];
        let wqkv = Linear::join(qkv, hold, device)?;
        let wo = Linear::new(w(keys.o, &[d, q])?, hold, device)?;
        let w_gate_up = Linear::join(vec![w(keys.gate, &[ff, d])?, w(keys.up, &[ff, d])?], hold, device)?;
        let w_down = Linear::new(w(keys.down, &[d, ff])?, hold, device)?;
        let mut vecw = |k: &str, n: usize| -> Result<Tensor> { shift(shaped(names(i, k), &[n])?.into_dense(device)?) };
        let attn_norm = vecw(keys.attn_norm, d)?;
        let ffn_norm = vecw(keys.ffn_norm, d)?;
        let (q_norm, k_norm) = if cfg.architecture.has_qk_norms() {
            (Some(vecw(keys.q_norm, hd)?), Some(vecw(keys.k_norm, hd)?))
        } else {
            (None, None)
        };
        let (attn_post_norm, ffn_post_norm) = match cfg.architecture {
            Architecture::Gemma3 => (Some(vecw(keys.attn_post_norm, d)?), Some(vecw(keys.ffn_post_norm, d)?)),
            Architecture::Llama | Architecture::Qwen2 | Architecture::Qwen3 => (None, None),
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
            attn_norm,
            wqkv,
            qkv_bias,
            wo,
            q_norm,
            k_norm,
            attn_post_norm,
            ffn_norm,
            w_gate_up,
            w_down,
            ffn_post_norm,
            local,
        });
    }
    let mut rope_inv = Transformer::rope_frequencies(cfg.rope_theta, cfg.head_dim);
    // Llama 3's scaling divides each pair's frequency by its factor, as llama.cpp's rope does.
    if let Some(f) = &cfg.rope_factors {
        for (inv, f) in rope_inv.iter_mut().zip(f) {
            *inv /= f;
        }
    }
    let rope_local_inv = cfg.gemma.as_ref().map(|g| Transformer::rope_frequencies(g.rope_local_theta, cfg.head_dim));
    Ok(Transformer {
        cfg: cfg.clone(),
        embed,
        layers,
        norm,
        head,
        head_q,
        rope_inv,
        rope_local_inv,
        device: device.clone(),
        kv_f16: false,
        tf32: false,
        attention_kernel: false,
        fused_kernels: false,
    })
}

/// The fields of a Hugging Face `config.json` we read.
#[derive(serde::Deserialize)]
struct HfConfig {
    #[serde(default)]
    architectures: Vec<String>,
    #[serde(default)]
    model_type: Option<String>,
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    #[serde(default)]
    num_key_value_heads: Option<usize>,
    #[serde(default)]
    head_dim: Option<usize>,
    #[serde(default)]
    rope_theta: Option<f32>,
    #[serde(default)]
    rms_norm_eps: Option<f64>,
    #[serde(default)]
    max_position_embeddings: Option<usize>,
    #[serde(default)]
    tie_word_embeddings: Option<bool>,
    #[serde(default)]
    torch_dtype: Option<String>,
    /// Newer transformers write `dtype` where older ones wrote `torch_dtype`.
    #[serde(default)]
    dtype: Option<String>,
    // Gemma 3 (`Gemma3TextConfig`).
    #[serde(default)]
    sliding_window: Option<usize>,
    #[serde(default)]
    sliding_window_pattern: Option<usize>,
    #[serde(default)]
    layer_types: Option<Vec<String>>,
    #[serde(default)]
    rope_local_base_freq: Option<f32>,
    #[serde(default)]
    rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    rope_parameters: Option<serde_json::Value>,
    #[serde(default)]
    query_pre_attn_scalar: Option<f64>,
    #[serde(default)]
    final_logit_softcapping: Option<f32>,
    #[serde(default)]
    attn_logit_softcapping: Option<f32>,
    #[serde(default)]
    hidden_activation: Option<String>,
    /// Qwen2's sliding window switch (off in every released Qwen2 and Qwen2.5 checkpoint).
    #[serde(default)]
    use_sliding_window: Option<bool>,
}

/// The RoPE scaling of a llama-family `config.json` (`rope_scaling`, or newer transformers'
/// `rope_parameters`) as per-frequency divisors: `None` for unscaled RoPE, Llama 3's factors for
/// `llama3`; any other kind is refused by name.
fn hf_rope_factors(hf: &HfConfig, theta: f32, head_dim: usize, cfg_path: &Path) -> Result<Option<Vec<f32>>> {
    let bad = |detail: String| Error::BadModelConfig { path: cfg_path.to_path_buf(), detail };
    let Some(v) = hf.rope_scaling.as_ref().or(hf.rope_parameters.as_ref()).filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let kind = v.get("rope_type").or_else(|| v.get("type")).and_then(|t| t.as_str()).unwrap_or("default");
    let num = |k: &str| v.get(k).and_then(|x| x.as_f64());
    match kind {
        "default" => Ok(None),
        "linear" if num("factor") == Some(1.0) => Ok(None),
        "llama3" => {
            let (Some(factor), Some(low), Some(high), Some(original)) = (
                num("factor"),
                num("low_freq_factor"),
                num("high_freq_factor"),
                num("original_max_position_embeddings"),
            ) else {
                return Err(bad("`rope_scaling` is llama3 without all of `factor`, `low_freq_factor`, `high_freq_factor` and `original_max_position_embeddings`; get a complete config.json".into()));
            };
            if !(factor > 0.0 && low > 0.0 && high > low && original > 0.0) {
                return Err(bad(format!("`rope_scaling` is llama3 with factor {factor}, low_freq_factor {low}, high_freq_factor {high}, original_max_position_embeddings {original}: each must be positive and high_freq_factor above low_freq_factor")));
            }
            Ok(Some(llama3_rope_factors(theta, head_dim, factor, low, high, original)))
        }
        other => Err(bad(format!(
            "the RoPE scaling is of type `{other}`; Readout runs llama-family models with unscaled RoPE or Llama 3's `llama3` scaling"
        ))),
    }
}

/// `√hidden` rounded to `dtype` (`bfloat16`, `float16`, else f32), as transformers' Gemma 3
/// embedding multiplies by it: `embed_scale.to(weight.dtype)`.
fn gemma_embed_scale(hidden: usize, dtype: &str) -> f32 {
    let s = (hidden as f64).sqrt() as f32;
    match dtype {
        "bfloat16" | "bf16" => half::bf16::from_f32(s).to_f32(),
        "float16" | "f16" => half::f16::from_f32(s).to_f32(),
        _ => s,
    }
}

/// Gemma 3's fields of `config.json` as [`Gemma`]; `dtype` is the checkpoint's.
fn hf_gemma(hf: &HfConfig, dtype: &str, cfg_path: &Path) -> Result<Gemma> {
    let bad = |detail: String| Error::BadModelConfig { path: cfg_path.to_path_buf(), detail };
    let n = hf.num_hidden_layers;
    let local_layers = match (&hf.layer_types, hf.sliding_window_pattern) {
        (Some(types), _) => types
            .iter()
            .map(|t| match t.as_str() {
                "sliding_attention" => Ok(true),
                "full_attention" => Ok(false),
                other => Err(bad(format!(
                    "layer type `{other}` in `layer_types`; a gemma3 layer is `sliding_attention` or `full_attention`"
                ))),
            })
            .collect::<Result<Vec<bool>>>()?,
        (None, pattern) => Gemma::pattern(n, pattern.unwrap_or(Gemma::PATTERN)),
    };
    // RoPE: `rope_parameters` per layer type (newer transformers), else `rope_theta`,
    // `rope_local_base_freq` and `rope_scaling` (for the global layers).
    let per_type = |t: &str| hf.rope_parameters.as_ref().and_then(|p| p.get(t)).filter(|v| v.is_object());
    let (global, local) = (per_type("full_attention"), per_type("sliding_attention"));
    let theta_of = |v: Option<&serde_json::Value>| v.and_then(|v| v.get("rope_theta")).and_then(|t| t.as_f64());
    let linear_factor = |v: Option<&serde_json::Value>, what: &str| -> Result<f32> {
        let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(1.0) };
        let kind = v.get("rope_type").or_else(|| v.get("type")).and_then(|t| t.as_str()).unwrap_or("default");
        match kind {
            "default" => Ok(1.0),
            "linear" => match v.get("factor").and_then(|f| f.as_f64()) {
                Some(f) if f > 0.0 => Ok(f as f32),
                _ => Err(bad(format!("{what} is linear without a positive `factor`"))),
            },
            other => Err(bad(format!(
                "{what} is of type `{other}`; Readout runs gemma3 models with linear RoPE scaling or none"
            ))),
        }
    };
    let global_factor = match global {
        Some(g) => linear_factor(Some(g), "the full-attention layers' RoPE")?,
        None => linear_factor(hf.rope_scaling.as_ref(), "`rope_scaling`")?,
    };
    if linear_factor(local, "the sliding-attention layers' RoPE")? != 1.0 {
        return Err(bad("the sliding-attention layers' RoPE is scaled; Readout scales only the global layers' RoPE, as Gemma 3 does".into()));
    }
    if let Some(c) = hf.attn_logit_softcapping {
        return Err(bad(format!("`attn_logit_softcapping` is {c}; Gemma 3 has none and Readout does not run it")));
    }
    if let Some(act) = hf.hidden_activation.as_deref().filter(|a| !matches!(*a, "gelu_pytorch_tanh" | "gelu_tanh")) {
        return Err(bad(format!("`hidden_activation` is `{act}`; a gemma3 MLP is `gelu_pytorch_tanh`")));
    }
    let window = hf.sliding_window;
    if window.is_none() && local_layers.iter().any(|&l| l) {
        return Err(bad("`sliding_window` is missing, and the model has sliding-attention layers".into()));
    }
    let scalar = hf.query_pre_attn_scalar.unwrap_or(hf.head_dim.unwrap_or(256) as f64);
    if !(scalar.is_finite() && scalar > 0.0) {
        return Err(bad(format!("`query_pre_attn_scalar` is {scalar}; it must be a positive number")));
    }
    Ok(Gemma {
        sliding_window: window.unwrap_or(usize::MAX).max(1),
        local_layers,
        rope_local_theta: theta_of(local)
            .map(|t| t as f32)
            .or(hf.rope_local_base_freq)
            .unwrap_or(Gemma::LOCAL_ROPE_THETA),
        rope_global_scale: 1.0 / global_factor,
        query_scale: scalar.powf(-0.5),
        embed_scale: gemma_embed_scale(hf.hidden_size, dtype),
        final_logit_softcap: hf.final_logit_softcapping.filter(|&c| c != 0.0),
    })
}

/// The model's shape from `config.json` (validated), and its `torch_dtype`.
pub(crate) fn hf_config(dir: &Path) -> Result<(ModelConfig, String)> {
    let cfg_path = dir.join("config.json");
    if !cfg_path.exists() {
        return Err(Error::BadModelConfig {
            path: dir.to_path_buf(),
            detail: "is a directory without config.json. Pass a GGUF file, or a Hugging Face model directory (config.json, tokenizer.json and *.safetensors)".into(),
        });
    }
    let text = std::fs::read_to_string(&cfg_path).map_err(|e| Error::BadModelConfig {
        path: cfg_path.clone(),
        detail: format!(
            "cannot read it ({e}); a Hugging Face model directory needs config.json, tokenizer.json and *.safetensors"
        ),
    })?;
    let hf: HfConfig = serde_json::from_str(&text).map_err(|e| Error::BadModelConfig {
        path: cfg_path.clone(),
        detail: format!("not a usable config.json ({e}); get a complete copy of the model directory from its source"),
    })?;
    let arch_name = hf.architectures.first().cloned().or(hf.model_type.clone()).unwrap_or_default();
    let arch = Architecture::from_name(&arch_name)
        .or_else(|| hf.model_type.as_deref().and_then(Architecture::from_name))
        .ok_or_else(|| Error::UnsupportedArchitecture { path: cfg_path.clone(), arch: arch_name.clone() })?;
    let dtype = hf.torch_dtype.clone().or(hf.dtype.clone()).unwrap_or_else(|| "float32".into());
    let gemma = match arch {
        Architecture::Gemma3 => Some(hf_gemma(&hf, &dtype, &cfg_path)?),
        Architecture::Llama | Architecture::Qwen2 | Architecture::Qwen3 => None,
    };
    if arch == Architecture::Qwen2 && hf.use_sliding_window == Some(true) {
        return Err(Error::BadModelConfig {
            path: cfg_path,
            detail: "`use_sliding_window` is true; Readout runs qwen2 models with full attention (every released Qwen2 and Qwen2.5 checkpoint has it false)".into(),
        });
    }
    let global_theta = hf
        .rope_parameters
        .as_ref()
        .and_then(|p| p.get("full_attention"))
        .and_then(|g| g.get("rope_theta"))
        .and_then(|t| t.as_f64())
        .map(|t| t as f32);
    let head_dim = hf.head_dim.unwrap_or(hf.hidden_size / hf.num_attention_heads.max(1));
    let param_theta = hf.rope_parameters.as_ref().and_then(|p| p.get("rope_theta")).and_then(|t| t.as_f64());
    let rope_theta = match (arch, gemma.is_some()) {
        // Gemma3TextConfig's default base is 1,000,000.
        (Architecture::Gemma3, true) => global_theta.or(hf.rope_theta).unwrap_or(1_000_000.0),
        _ => hf.rope_theta.or(param_theta.map(|t| t as f32)).unwrap_or(10_000.0),
    };
    let rope_factors = match arch {
        Architecture::Gemma3 => None,
        _ => hf_rope_factors(&hf, rope_theta, head_dim, &cfg_path)?,
    };
    let cfg = ModelConfig {
        architecture: arch,
        vocab_size: hf.vocab_size,
        hidden_size: hf.hidden_size,
        intermediate_size: hf.intermediate_size,
        num_layers: hf.num_hidden_layers,
        num_heads: hf.num_attention_heads,
        num_kv_heads: hf.num_key_value_heads.unwrap_or(hf.num_attention_heads),
        head_dim,
        rope_theta,
        rms_eps: hf.rms_norm_eps.unwrap_or(1e-6),
        // Mistral's sliding window (4,096 tokens in 7B v0.1; none later): Readout runs such a
        // model within one window, where its attention is the full attention of llama's graph.
        context_length: hf.max_position_embeddings.unwrap_or(4096).min(32_768).min(if arch == Architecture::Llama {
            hf.sliding_window.unwrap_or(usize::MAX)
        } else {
            usize::MAX
        }),
        // Gemma 3 ties its head to the embedding unless config.json says otherwise.
        tie_embeddings: hf.tie_word_embeddings.unwrap_or(arch == Architecture::Gemma3),
        rope_style: RopeStyle::Halves,
        rope_factors,
        gemma,
    };
    cfg.validate().map_err(|d| Error::BadModelConfig { path: cfg_path.clone(), detail: d })?;
    Ok((cfg, dtype))
}

/// The `*.safetensors` files of a directory, sorted; an error when there are none.
pub(crate) fn safetensors_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().map(|x| x == "safetensors").unwrap_or(false))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::BadModelConfig {
            path: dir.to_path_buf(),
            detail: "no *.safetensors weights in the directory".into(),
        });
    }
    Ok(files)
}

fn load_hf(dir: &Path, device: &Device, hold: Hold) -> Result<Loaded> {
    let (mut cfg, torch_dtype) = hf_config(dir)?;
    let files = safetensors_files(dir)?;
    // Every tensor a view of its mapped file: where it lies, and in which encoding.
    let mut where_: HashMap<String, (super::weights::Mapped, usize, candle_core::quantized::GgmlDType, Vec<usize>)> =
        HashMap::new();
    for file in &files {
        let mapped = map(file)?;
        let st = safetensors::SafeTensors::deserialize(&mapped[..]).map_err(|e| Error::BadModelConfig {
            path: file.clone(),
            detail: format!("not a readable safetensors file ({e}); get a complete copy of the model directory"),
        })?;
        for (name, view) in st.tensors() {
            use candle_core::quantized::GgmlDType;
            let dtype = match view.dtype() {
                safetensors::Dtype::F32 => GgmlDType::F32,
                safetensors::Dtype::F16 => GgmlDType::F16,
                safetensors::Dtype::BF16 => GgmlDType::BF16,
                other => {
                    return Err(Error::BadTensor {
                        path: file.clone(),
                        tensor: name,
                        detail: format!(
                        "is {other:?}; Readout reads F32, F16 and BF16 safetensors (or GGUF files of any quantisation)"
                    ),
                    })
                }
            };
            let offset = view.data().as_ptr() as usize - mapped.as_ptr() as usize;
            where_.insert(name, (mapped.clone(), offset, dtype, view.shape().to_vec()));
        }
    }
    let mut get = |name: &str| -> Result<LoadedWeight> {
        let bad = |detail: String| Error::BadTensor { path: dir.to_path_buf(), tensor: name.to_string(), detail };
        let (mapped, offset, dtype, shape) =
            where_.get(name).ok_or_else(|| bad("not in the safetensors files".into()))?;
        let (rows, cols) = match shape[..] {
            [n] => (1, n),
            [r, c] => (r, c),
            _ => return Err(bad(format!("has shape {shape:?}; a weight has one or two dimensions"))),
        };
        Ok(LoadedWeight::Encoded(Encoded::new(mapped.clone(), *offset, *dtype, rows, cols).map_err(bad)?))
    };
    let gemma = cfg.architecture == Architecture::Gemma3;
    // Gemma 3's embedding scale is rounded to the embedding's own dtype.
    if let (Some(g), Some((_, _, dtype, _))) = (cfg.gemma.as_mut(), where_.get("model.embed_tokens.weight")) {
        use candle_core::quantized::GgmlDType;
        let name = match dtype {
            GgmlDType::BF16 => "bfloat16",
            GgmlDType::F16 => "float16",
            _ => "float32",
        };
        g.embed_scale = gemma_embed_scale(cfg.hidden_size, name);
    }
    let names = |i: usize, k: &str| format!("model.layers.{i}.{k}.weight");
    let model = build(
        &cfg,
        device,
        Hold { matmul: MatmulPath::Dense, ..hold },
        dir,
        &mut get,
        "model.embed_tokens.weight",
        "model.norm.weight",
        "lm_head.weight",
        names,
        if gemma { GEMMA_HF_KEYS } else { HF_KEYS },
    )?;
    let tok_path = dir.join("tokenizer.json");
    if !tok_path.exists() {
        return Err(Error::Tokenizer {
            path: tok_path,
            detail: "missing; a Hugging Face model directory needs tokenizer.json".into(),
        });
    }
    let tc = read_tokenizer_config(&dir.join("tokenizer_config.json"))?;
    Ok(Loaded {
        model,
        tokenizer_source: TokenizerSource::Json(tok_path),
        chat_template: hf_chat_template(dir, tc.chat_template)?,
        bos_token: tc.bos_token,
        eos_token: tc.eos_token,
        quantisation: torch_dtype.to_uppercase(),
        name: dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
    })
}

/// A Hugging Face directory's chat template: `chat_template.jinja` (the file newer transformers
/// writes beside `tokenizer_config.json`), else `tokenizer_config.json`'s `chat_template`. The
/// file wins, as in transformers (`from_pretrained`: "the file template clobbers any template in
/// the config").
pub(crate) fn hf_chat_template(dir: &Path, from_config: Option<String>) -> Result<Option<String>> {
    let file = dir.join("chat_template.jinja");
    match std::fs::read_to_string(&file) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(from_config),
        Err(e) => Err(Error::io(&file, e)),
    }
}

/// The fields of `tokenizer_config.json` Readout reads.
pub(crate) struct TokenizerConfig {
    pub chat_template: Option<String>,
    pub bos_token: Option<String>,
    pub eos_token: Option<String>,
}

pub(crate) fn read_tokenizer_config(path: &Path) -> Result<TokenizerConfig> {
    if !path.exists() {
        return Ok(TokenizerConfig { chat_template: None, bos_token: None, eos_token: None });
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::BadModelConfig {
        path: path.to_path_buf(),
        detail: format!("not valid JSON ({e}); get a complete copy of the model directory"),
    })?;
    let tok = |k: &str| match v.get(k) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Object(o)) => o.get("content").and_then(|c| c.as_str()).map(String::from),
        _ => None,
    };
    let chat_template = match v.get("chat_template") {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
            .and_then(|t| t.get("template"))
            .and_then(|t| t.as_str())
            .map(String::from),
        _ => None,
    };
    Ok(TokenizerConfig { chat_template, bos_token: tok("bos_token"), eos_token: tok("eos_token") })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `config.json` of a tiny Gemma 3 with `extra` fields set (a `null` removes one).
    fn gemma_dir(extra: serde_json::Value) -> (tempfile::TempDir, Result<(ModelConfig, String)>) {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = serde_json::json!({
            "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": 300,
            "hidden_size": 640, "intermediate_size": 2048, "num_hidden_layers": 18, "num_attention_heads": 4,
            "num_key_value_heads": 1, "head_dim": 256, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
            "rms_norm_eps": 1e-6, "max_position_embeddings": 32768, "sliding_window": 512,
            "query_pre_attn_scalar": 256, "torch_dtype": "bfloat16", "hidden_activation": "gelu_pytorch_tanh",
        });
        for (k, v) in extra.as_object().unwrap() {
            match v {
                serde_json::Value::Null => cfg.as_object_mut().unwrap().remove(k),
                v => cfg.as_object_mut().unwrap().insert(k.clone(), v.clone()),
            };
        }
        std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
        let r = hf_config(dir.path());
        (dir, r)
    }

    #[test]
    fn a_gemma3_config_json_as_transformers_reads_it() {
        let (_d, r) = gemma_dir(serde_json::json!({}));
        let (cfg, dtype) = r.unwrap();
        let g = cfg.gemma.unwrap();
        assert_eq!((cfg.architecture, dtype.as_str(), cfg.tie_embeddings), (Architecture::Gemma3, "bfloat16", true));
        assert_eq!(g.local_layers, Gemma::pattern(18, 6));
        assert_eq!((g.sliding_window, g.rope_local_theta, g.rope_global_scale), (512, 10_000.0, 1.0));
        assert_eq!(g.query_scale, 1.0 / 16.0);
        // √640 = 25.2982…, in bfloat16 25.25.
        assert_eq!(g.embed_scale, 25.25);
        assert_eq!(cfg.rope_theta, 1_000_000.0);
        // Older files: `sliding_window_pattern`; newer: `layer_types`, `rope_parameters`.
        let (_d, r) = gemma_dir(serde_json::json!({"sliding_window_pattern": 2, "num_hidden_layers": 4}));
        assert_eq!(r.unwrap().0.gemma.unwrap().local_layers, vec![true, false, true, false]);
        let (_d, r) = gemma_dir(serde_json::json!({
            "num_hidden_layers": 3, "layer_types": ["full_attention", "sliding_attention", "full_attention"],
            "rope_theta": null, "rope_local_base_freq": null, "torch_dtype": null, "dtype": "float32",
            "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 500000.0},
                                "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},
        }));
        let (cfg, dtype) = r.unwrap();
        let g = cfg.gemma.unwrap();
        assert_eq!(
            (g.local_layers, cfg.rope_theta, g.rope_local_theta),
            (vec![false, true, false], 500_000.0, 20_000.0)
        );
        assert_eq!((g.rope_global_scale, dtype.as_str(), g.embed_scale), (0.125, "float32", 640f32.sqrt()));
        let (_d, r) = gemma_dir(serde_json::json!({"rope_scaling": {"rope_type": "linear", "factor": 8.0}}));
        assert_eq!(r.unwrap().0.gemma.unwrap().rope_global_scale, 0.125);
    }

    #[test]
    fn a_gemma3_gguf_as_llama_cpp_reads_it() {
        use candle_core::quantized::gguf_file::Value;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.gguf");
        let tiny = crate::engine::synthetic::tiny_config(Architecture::Gemma3);
        crate::engine::synthetic::write_gguf(&path, &tiny, 1, candle_core::quantized::GgmlDType::F32).unwrap();
        let (_, mut content) = super::super::gguf::open(&path).unwrap();
        let cfg = gguf_config(&content, &path).unwrap();
        assert_eq!(cfg.gemma, tiny.gemma);
        assert_eq!(cfg.rope_style, RopeStyle::Halves);
        // llama.cpp's 27B rule: 62 layers scale the queries by hidden / heads, not the key length.
        content.metadata.insert("gemma3.block_count".into(), Value::U32(62));
        let g = gguf_config(&content, &path).unwrap().gemma.unwrap();
        assert_eq!((g.query_scale, g.local_layers.iter().filter(|&&l| !l).count()), (1.0 / 8.0, 10));
        content.metadata.insert("gemma3.rope.scaling.type".into(), Value::String("yarn".into()));
        let e = gguf_config(&content, &path).unwrap_err().to_string();
        assert!(e.contains("`yarn`") && e.contains("linear"), "{e}");
        content.metadata.remove("gemma3.attention.sliding_window");
        let e = gguf_config(&content, &path).unwrap_err().to_string();
        assert!(e.contains("gemma3.attention.sliding_window"), "{e}");
    }

    #[test]
    fn llama3_factors_as_llama_cpp_writes_rope_freqs() {
        // Llama 3.1 8B: base 500,000, head 128, factor 8, low/high frequency factors 1 and 4,
        // original context 8,192. By hand for pair 30: its frequency 500000^(−60/128) = 2.1311e-3,
        // wavelength 2π / that = 2,948.3, between 8192/4 and 8192/1; smooth = (8192/2948.3 − 1)/3
        // = 0.59285; factor = 1 / ((1 − 0.59285)/8 + 0.59285) = 1.5534.
        let f = llama3_rope_factors(500_000.0, 128, 8.0, 1.0, 4.0, 8192.0);
        assert_eq!(f.len(), 64);
        assert!(f[..29].iter().all(|&x| x == 1.0));
        assert!(f[35..].iter().all(|&x| x == 8.0));
        assert!((f[30] - 1.5534).abs() < 2e-4, "{}", f[30]);
        assert!(f[29..35].windows(2).all(|w| w[0] < w[1]), "the blend rises: {:?}", &f[29..35]);
    }

    /// `config.json` of a tiny llama-family model with `extra` fields set.
    fn family_dir(extra: serde_json::Value) -> (tempfile::TempDir, Result<(ModelConfig, String)>) {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = serde_json::json!({
            "architectures": ["LlamaForCausalLM"], "vocab_size": 300, "hidden_size": 256,
            "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "rope_theta": 500000.0, "max_position_embeddings": 131072,
        });
        for (k, v) in extra.as_object().unwrap() {
            cfg.as_object_mut().unwrap().insert(k.clone(), v.clone());
        }
        std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
        let r = hf_config(dir.path());
        (dir, r)
    }

    #[test]
    fn llama_family_config_json_variants() {
        let scaling = serde_json::json!({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 64});
        let (_d, r) = family_dir(serde_json::json!({"rope_scaling": scaling}));
        let cfg = r.unwrap().0;
        assert_eq!(cfg.rope_factors, Some(llama3_rope_factors(500_000.0, 64, 8.0, 1.0, 4.0, 64.0)));
        // Newer transformers: the same under `rope_parameters`, with the base inside.
        let mut params = scaling.clone();
        params["rope_theta"] = serde_json::json!(500000.0);
        let (_d, r) = family_dir(serde_json::json!({"rope_parameters": params, "rope_theta": null}));
        let cfg2 = r.unwrap().0;
        assert_eq!((cfg2.rope_factors, cfg2.rope_theta), (cfg.rope_factors, 500_000.0));
        let (_d, r) = family_dir(serde_json::json!({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}));
        let e = r.unwrap_err().to_string();
        assert!(e.contains("`yarn`") && e.contains("llama3"), "{e}");
        let (_d, r) = family_dir(serde_json::json!({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}));
        assert!(r.unwrap_err().to_string().contains("low_freq_factor"));
        // Qwen2: its own architecture, the window switch refused when on.
        let (_d, r) =
            family_dir(serde_json::json!({"architectures": ["Qwen2ForCausalLM"], "tie_word_embeddings": false}));
        let cfg = r.unwrap().0;
        assert_eq!(
            (cfg.architecture, cfg.tie_embeddings, cfg.rope_style),
            (Architecture::Qwen2, false, RopeStyle::Halves)
        );
        let (_d, r) =
            family_dir(serde_json::json!({"architectures": ["Qwen2ForCausalLM"], "use_sliding_window": true}));
        assert!(r.unwrap_err().to_string().contains("use_sliding_window"));
        // Mistral: llama's graph, run within its sliding window.
        let (_d, r) = family_dir(serde_json::json!({"architectures": ["MistralForCausalLM"], "sliding_window": 4096}));
        let cfg = r.unwrap().0;
        assert_eq!((cfg.architecture, cfg.context_length), (Architecture::Llama, 4096));
    }

    #[test]
    fn a_gemma3_config_json_readout_cannot_run_is_refused_with_the_reason() {
        for (extra, says) in [
            (serde_json::json!({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}), "`yarn`"),
            (serde_json::json!({"attn_logit_softcapping": 50.0}), "attn_logit_softcapping"),
            (serde_json::json!({"hidden_activation": "gelu"}), "gelu_pytorch_tanh"),
            (serde_json::json!({"sliding_window": null}), "`sliding_window` is missing"),
            (serde_json::json!({"layer_types": ["chunked_attention"], "num_hidden_layers": 1}), "chunked_attention"),
            (serde_json::json!({"layer_types": ["full_attention"]}), "1 layer types are given for 18 layers"),
        ] {
            let (_d, r) = gemma_dir(extra.clone());
            let e = r.err().unwrap_or_else(|| panic!("{extra} was accepted")).to_string();
            assert!(e.contains(says) && e.contains("config.json"), "{extra}: {e}");
        }
    }
}
