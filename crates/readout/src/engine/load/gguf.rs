//! A GGUF model: weights, shape, tokenizer and chat template, all in the file. The header is
//! read by the bounded reader (`engine/gguf.rs`) before anything in it is trusted; the shape comes
//! from the metadata as llama.cpp reads it, each family's keys and quirks included (Gemma 3's
//! window and query scale, Llama 3's RoPE factors tensor); the weights are views of the mapped
//! file.

use super::build::{build, BlockKeys, DeltaKeys};
use super::{file_stem, map, Loaded, Metadata, TokenizerSource};
use crate::engine::config::{self, Architecture, Gemma, Hybrid, ModelConfig, RopeStyle};
use crate::engine::model::{Hold, LoadedWeight};
use crate::engine::weights::Encoded;
use crate::error::{Error, Result};
use candle_core::quantized::gguf_file;
use candle_core::Device;
use std::collections::HashMap;
use std::path::Path;

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

pub(super) fn corrupt(path: &Path, detail: impl std::fmt::Display) -> Error {
    Error::CorruptGguf { path: path.to_path_buf(), detail: detail.to_string() }
}

/// Load a GGUF file.
pub(super) fn load(path: &Path, device: &Device, hold: Hold) -> Result<Loaded> {
    // Our bounded reader checks the header and that every tensor lies inside the file; the
    // tensors are then views of the mapped file (checked again as they are made).
    let (_, content) = crate::engine::gguf::open(path)?;
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
        if cfg.hybrid.is_some() { QWEN35_KEYS } else { GGUF_KEYS },
    )?;

    let eos_id = md.get("tokenizer.ggml.eos_token_id").and_then(|v| v.to_u32().ok());
    let tok_text = |i: Option<u32>| i.and_then(|i| vocab.tokens.get(i as usize).cloned());
    let (bos_token, eos_token) = (tok_text(vocab.bos_id), tok_text(eos_id));
    let quantisation = encoding(&content);
    Ok(Loaded {
        model,
        tokenizer_source: TokenizerSource::Gguf(Box::new(vocab)),
        chat_template: get_str("tokenizer.chat_template"),
        bos_token,
        eos_token,
        quantisation,
        name: get_str("general.name").unwrap_or_else(|| file_stem(path)),
        decision: contract(md),
    })
}

/// A decision GGUF's contract: `<arch>.decision.type`, the `systemone` template and the
/// temperatures (as llama.cpp reads every key under `<arch>.decision.temperature.`); `None` for
/// a file without a decision type.
fn contract(md: &HashMap<String, gguf_file::Value>) -> Option<crate::engine::decision::Contract> {
    let arch = md.get("general.architecture")?.to_string().ok()?.clone();
    let kind = md.get(&format!("{arch}.decision.type"))?.to_string().ok()?.clone();
    let prefix = format!("{arch}.decision.temperature.");
    let temperatures = md
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix(&prefix)?;
            let t = v.to_f32().ok().or_else(|| v.to_f64().ok().map(|x| x as f32))?;
            // llama.cpp reads the value as text printed with six decimals.
            Some((name.to_string(), format!("{t:.6}").parse::<f32>().unwrap_or(t)))
        })
        .collect();
    let template = md.get("tokenizer.chat_template.systemone").and_then(|v| v.to_string().ok()).cloned();
    Some(crate::engine::decision::Contract { kind, template, temperatures })
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
        Architecture::Llama | Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Qwen35 => None,
    };
    let hybrid = match arch {
        // As llama.cpp's `qwen35` loader reads it: the DeltaNet shape from the `ssm` keys (key
        // and value heads one width, `state_size`), the layer types from
        // `attention.recurrent_layers` or else every `full_attention_interval`-th layer (4)
        // full attention, and RoPE over `rope.dimension_count` dimensions. The converter
        // reorders the value heads so that they read their key heads tiled.
        Architecture::Qwen35 => {
            let width = get_u("ssm.state_size")?;
            let recurrent = md
                .get(&format!("{a}.attention.recurrent_layers"))
                .and_then(|v| v.to_vec().ok())
                .map(|v| v.iter().take(num_layers).map(|b| b.to_bool().unwrap_or(false)).collect::<Vec<bool>>());
            let interval = get_u("full_attention_interval").unwrap_or(4);
            let value_heads = get_u("ssm.time_step_rank")?;
            let value_dim = get_u("ssm.inner_size").map(|n| n / value_heads.max(1)).unwrap_or(width);
            Some(Hybrid {
                recurrent_layers: recurrent.unwrap_or_else(|| Hybrid::pattern(num_layers, interval)),
                rotary_dim: get_u("rope.dimension_count").unwrap_or(head_dim),
                key_heads: get_u("ssm.group_count")?,
                key_dim: width,
                value_heads,
                value_dim,
                conv_kernel: get_u("ssm.conv_kernel")?,
                tiled_heads: true,
            })
        }
        _ => None,
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
        context_length: get_u("context_length").unwrap_or(4096).min(config::MAX_CONTEXT),
        tie_embeddings: !has_output,
        rope_style: match arch {
            Architecture::Llama => RopeStyle::Interleaved,
            Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Gemma3 | Architecture::Qwen35 => {
                RopeStyle::Halves
            }
        },
        rope_factors: None,
        gemma,
        hybrid,
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

/// What a GGUF file says about itself ([`super::read_metadata`]); `data` is the whole file.
pub(super) fn metadata(content: &gguf_file::Content, data: &[u8], path: &Path, file_bytes: u64) -> Result<Metadata> {
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
    let licence = content.metadata.get("general.license").and_then(|v| v.to_string().ok()).cloned();
    let decision = contract(&content.metadata).map(|c| c.kind);
    Ok(Metadata { config, name, quantisation: encoding(content), file_bytes, has_chat_template, licence, decision })
}

/// The file's encoding as a person names it (`Q4_K_M`, `Q8_0`, `F16`): the type mix the file
/// states it was made as (`general.file_type`, llama.cpp's names), else the type most of the
/// blocks' weights are in. Not the type of most elements overall: converters keep the embedding
/// wider (Gemma 3 270M's Q4_K_M file holds its 262,144-row embedding, more than half its weights,
/// in Q8_0).
pub(crate) fn encoding(content: &gguf_file::Content) -> String {
    let stated = content
        .metadata
        .get("general.file_type")
        .and_then(|v| v.to_u32().ok().or_else(|| v.to_i32().ok().map(|t| t as u32)));
    if let Some(name) = stated.and_then(file_type_name) {
        return name.to_string();
    }
    let mut weights: Vec<&gguf_file::TensorInfo> = content
        .tensor_infos
        .iter()
        .filter(|(n, i)| n.starts_with("blk.") && i.shape.dims().len() == 2)
        .map(|(_, i)| i)
        .collect();
    if weights.is_empty() {
        weights = content.tensor_infos.values().collect();
    }
    let mut by: HashMap<String, u64> = HashMap::new();
    for info in weights {
        *by.entry(type_name(info.ggml_dtype)).or_default() += info.shape.elem_count() as u64;
    }
    // Ties (never in a real file) go to the name first in order, so the answer does not vary.
    by.into_iter().max_by(|(a, n), (b, m)| n.cmp(m).then(b.cmp(a))).map(|(t, _)| t).unwrap_or_default()
}

/// A tensor type as GGUF and llama.cpp name it: `Q4_K`, `Q8_0`, `F32`.
fn type_name(t: candle_core::quantized::GgmlDType) -> String {
    let debug = format!("{t:?}").to_uppercase();
    match debug.strip_suffix('K') {
        Some(base) if base.starts_with('Q') => format!("{base}_K"),
        _ => debug,
    }
}

/// llama.cpp's name of a `general.file_type` (its `llama_ftype`), for the types it still makes.
fn file_type_name(t: u32) -> Option<&'static str> {
    Some(match t {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        _ => return None,
    })
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
    delta: None,
};

/// Qwen3.5's names in llama.cpp's files: the norm before the MLP is `post_attention_norm`.
const QWEN35_KEYS: BlockKeys = BlockKeys {
    ffn_norm: "post_attention_norm",
    attn_post_norm: "",
    ffn_post_norm: "",
    delta: Some(DeltaKeys {
        qkv: "attn_qkv",
        z: "attn_gate",
        b: "ssm_beta",
        a: "ssm_alpha",
        conv: "ssm_conv1d",
        dt_bias: "ssm_dt.bias",
        a_param: "ssm_a",
        a_is_log: false,
        norm: "ssm_norm",
        out: "ssm_out",
    }),
    ..GGUF_KEYS
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gemma3_gguf_as_llama_cpp_reads_it() {
        use candle_core::quantized::gguf_file::Value;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.gguf");
        let tiny = crate::engine::synthetic::tiny_config(Architecture::Gemma3);
        crate::engine::synthetic::write_gguf(&path, &tiny, 1, candle_core::quantized::GgmlDType::F32).unwrap();
        let (_, mut content) = crate::engine::gguf::open(&path).unwrap();
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
    fn the_encoding_is_the_type_mix_the_file_states_not_its_widest_tensor() {
        use candle_core::quantized::gguf_file::{Content, TensorInfo, Value, VersionedMagic};
        use candle_core::quantized::GgmlDType as T;
        // Gemma 3 270M's Q4_K_M file, in small: the embedding (Q8_0) holds most elements; the
        // blocks are Q5_0 with Q4_K and Q6_K; general.file_type says 15 (Q4_K_M).
        let tensor = |t: T, dims: &[usize]| TensorInfo { ggml_dtype: t, shape: dims.into(), offset: 0 };
        let mut content = Content {
            magic: VersionedMagic::GgufV3,
            metadata: HashMap::from([("general.file_type".to_string(), Value::U32(15))]),
            tensor_infos: HashMap::from([
                ("token_embd.weight".to_string(), tensor(T::Q8_0, &[262_144, 640])),
                ("blk.0.attn_q.weight".to_string(), tensor(T::Q5_0, &[1024, 640])),
                ("blk.0.ffn_gate.weight".to_string(), tensor(T::Q5_0, &[2048, 640])),
                ("blk.0.attn_output.weight".to_string(), tensor(T::Q4K, &[640, 1024])),
                ("blk.0.ffn_down.weight".to_string(), tensor(T::Q6K, &[640, 2048])),
                ("blk.0.attn_norm.weight".to_string(), tensor(T::F32, &[640])),
            ]),
            tensor_data_offset: 0,
        };
        assert_eq!(encoding(&content), "Q4_K_M");
        // Written as a signed integer by some converters.
        content.metadata.insert("general.file_type".into(), Value::I32(3));
        assert_eq!(encoding(&content), "Q4_1");
        // Without it (Readout's own quantizer drops it): the blocks' main type, not the embedding's.
        content.metadata.clear();
        assert_eq!(encoding(&content), "Q5_0");
        // A number llama.cpp no longer makes: the blocks' main type, too.
        content.metadata.insert("general.file_type".into(), Value::U32(4));
        assert_eq!(encoding(&content), "Q5_0");
        // K-quants are named with their underscore, as the file types are.
        content.tensor_infos.retain(|n, _| n != "blk.0.attn_q.weight" && n != "blk.0.ffn_gate.weight");
        assert_eq!(encoding(&content), "Q6_K");
        assert_eq!(type_name(T::Q4K), "Q4_K");
        assert_eq!(type_name(T::BF16), "BF16");
        // No block weights at all: every tensor counts.
        content.tensor_infos.retain(|n, _| !n.starts_with("blk."));
        assert_eq!(encoding(&content), "Q8_0");
    }
}
