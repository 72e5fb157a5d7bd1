//! A Hugging Face model directory (`config.json`, `*.safetensors`, `tokenizer.json`,
//! `tokenizer_config.json`) written as one GGUF file, so that a checkpoint can be quantised and
//! handed to llama.cpp (or loaded by Readout as a GGUF) without Python. It mirrors llama.cpp's
//! `convert_hf_to_gguf.py`: the same tensor names, the same metadata keys, the q/k rows of a
//! `llama` model permuted for llama.cpp's adjacent-pair RoPE, and the vocabulary with its token
//! types and merges. The pre-tokenizer is named from `tokenizer.json` and the written vocabulary
//! is checked to tokenize exactly as `tokenizer.json` does before anything is written.

use super::{tensor_encoding, write_gguf_file, QuantMode};
use crate::engine::config::{Architecture, ModelConfig};
use crate::engine::load::{hf_chat_template, hf_config, read_tokenizer_config, safetensors_files, GgufVocab};
use crate::engine::Tokenizer;
use crate::error::{Error, Result};
use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Tensor};
use serde_json::Value as Json;
use std::collections::HashSet;
use std::path::Path;

/// Block tensors: the name inside `model.layers.N.` (Hugging Face) and inside `blk.N.` (GGUF).
const BLOCK_NAMES: [(&str, &str); 11] = [
    ("input_layernorm", "attn_norm"),
    ("self_attn.q_proj", "attn_q"),
    ("self_attn.k_proj", "attn_k"),
    ("self_attn.v_proj", "attn_v"),
    ("self_attn.o_proj", "attn_output"),
    ("self_attn.q_norm", "attn_q_norm"),
    ("self_attn.k_norm", "attn_k_norm"),
    ("post_attention_layernorm", "ffn_norm"),
    ("mlp.gate_proj", "ffn_gate"),
    ("mlp.up_proj", "ffn_up"),
    ("mlp.down_proj", "ffn_down"),
];

/// GGUF token types (gguf-py `TokenType`).
const TOKEN_NORMAL: i32 = 1;
const TOKEN_CONTROL: i32 = 3;
const TOKEN_USER_DEFINED: i32 = 4;
const TOKEN_UNUSED: i32 = 5;

/// One tensor to write: its GGUF name, its safetensors name, its shape `[out, in]` (or `[n]`),
/// and, for the q/k projections of a `llama` model, the head count its rows are permuted over.
#[derive(Debug, Clone, PartialEq)]
struct Planned {
    gguf: String,
    hf: String,
    shape: Vec<usize>,
    permute_heads: Option<usize>,
}

/// Every tensor of a model of shape `cfg`, in the order they are written.
fn plan(cfg: &ModelConfig) -> Vec<Planned> {
    let (d, ff, hd) = (cfg.hidden_size, cfg.intermediate_size, cfg.head_dim);
    let (q, kv) = (cfg.num_heads * hd, cfg.num_kv_heads * hd);
    let llama = cfg.architecture == Architecture::Llama;
    let one = |gguf: &str, hf: &str, shape: Vec<usize>| Planned {
        gguf: gguf.to_string(),
        hf: hf.to_string(),
        shape,
        permute_heads: None,
    };
    let mut out = vec![one("token_embd.weight", "model.embed_tokens.weight", vec![cfg.vocab_size, d])];
    for i in 0..cfg.num_layers {
        for (hf, gguf) in BLOCK_NAMES {
            let (shape, permute_heads) = match gguf {
                "attn_norm" | "ffn_norm" => (vec![d], None),
                "attn_q_norm" | "attn_k_norm" if !cfg.architecture.has_qk_norms() => continue,
                "attn_q_norm" | "attn_k_norm" => (vec![hd], None),
                "attn_q" => (vec![q, d], llama.then_some(cfg.num_heads)),
                "attn_k" => (vec![kv, d], llama.then_some(cfg.num_kv_heads)),
                "attn_v" => (vec![kv, d], None),
                "attn_output" => (vec![d, q], None),
                "ffn_gate" | "ffn_up" => (vec![ff, d], None),
                _ => (vec![d, ff], None),
            };
            out.push(Planned {
                gguf: format!("blk.{i}.{gguf}.weight"),
                hf: format!("model.layers.{i}.{hf}.weight"),
                shape,
                permute_heads,
            });
        }
        if cfg.architecture.has_qkv_bias() {
            // Qwen2's biases, after the block's weights (convert_hf_to_gguf.py keeps them F32).
            for (hf, gguf, n) in [
                ("self_attn.q_proj", "attn_q", q),
                ("self_attn.k_proj", "attn_k", kv),
                ("self_attn.v_proj", "attn_v", kv),
            ] {
                out.push(one(&format!("blk.{i}.{gguf}.bias"), &format!("model.layers.{i}.{hf}.bias"), vec![n]));
            }
        }
    }
    out.push(one("output_norm.weight", "model.norm.weight", vec![d]));
    if !cfg.tie_embeddings {
        out.push(one("output.weight", "lm_head.weight", vec![cfg.vocab_size, d]));
    }
    out
}

/// Safetensors entries a conversion leaves out, as `convert_hf_to_gguf.py` does: RoPE frequency
/// buffers (recomputed from the metadata) and an LM head that the config ties to the embedding.
fn skipped(name: &str, cfg: &ModelConfig) -> bool {
    name.ends_with(".rotary_emb.inv_freq") || (cfg.tie_embeddings && name == "lm_head.weight")
}

/// llama.cpp's `permute` of q/k rows: within each head, the two halves RoPE rotates together in
/// Hugging Face checkpoints become adjacent pairs, which llama.cpp's `llama` RoPE expects.
fn permute_rows(w: &Tensor, heads: usize) -> candle_core::Result<Tensor> {
    let (rows, cols) = w.dims2()?;
    let hd = rows / heads;
    w.reshape((heads, 2, hd / 2, cols))?.transpose(1, 2)?.contiguous()?.reshape((rows, cols))
}

/// `tokenizer.ggml.pre` for a `tokenizer.json` pre-tokenizer: the llama.cpp pre-tokenizer that
/// splits text the same way, or `None` when there is no such one Readout knows.
fn pre_tokenizer_name(pre: &Json) -> Option<&'static str> {
    // The Split regexes of Qwen2/2.5/3 and Llama 3 tokenizer.json files, and the same regexes as
    // llama.cpp writes them.
    const QWEN2: [&str; 2] = [
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ];
    const LLAMA3: [&str; 2] = [
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ];
    let ty = |v: &Json| v.get("type").and_then(Json::as_str).unwrap_or_default().to_string();
    let flag = |v: &Json, k: &str| v.get(k).and_then(Json::as_bool);
    // GPT-2's own byte-level split: ByteLevel with its regex and no prefix space.
    let gpt2_bytes = |v: &Json| {
        ty(v) == "ByteLevel" && flag(v, "add_prefix_space") != Some(true) && flag(v, "use_regex") != Some(false)
    };
    if gpt2_bytes(pre) {
        return Some("gpt-2");
    }
    if ty(pre) != "Sequence" {
        return None;
    }
    let parts = pre.get("pretokenizers").and_then(Json::as_array)?;
    match parts.as_slice() {
        // SmolLM / StarCoder: every digit its own piece, then GPT-2's byte-level split.
        [digits, bytes]
            if ty(digits) == "Digits" && flag(digits, "individual_digits") == Some(true) && gpt2_bytes(bytes) =>
        {
            Some("smollm")
        }
        // A regex split, then bytes mapped without a second split.
        [split, bytes]
            if ty(split) == "Split"
                && ty(bytes) == "ByteLevel"
                && flag(bytes, "use_regex") == Some(false)
                && flag(bytes, "add_prefix_space") != Some(true)
                && split.get("behavior").and_then(Json::as_str) == Some("Isolated")
                && flag(split, "invert") != Some(true) =>
        {
            let re = split.get("pattern").and_then(|p| p.get("Regex")).and_then(Json::as_str)?;
            if QWEN2.contains(&re) {
                Some("qwen2")
            } else if LLAMA3.contains(&re) {
                Some("llama-bpe")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Texts the written vocabulary must tokenize exactly as `tokenizer.json` does: llama.cpp's
/// pre-tokenizer check text (`convert_hf_to_gguf.py`'s `chktxt`) and a chat-formatted prompt.
const CHECK_TEXTS: [&str; 3] = [
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u{200d}🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL",
    "<|im_start|>system\nAnswer with a letter.<|im_end|>\n<|im_start|>user\nText:\nThe lenses were ordered but not fitted yet (2024-05-17, 3 pairs).\n\nQuestion: Fitted?\n\nOptions:\nA. Yes\nB. No\n<|im_end|>\n<|im_start|>assistant\n",
    "<s>[INST] Hello, world! [/INST] A\nB\n C\t D</s><|endoftext|>",
];

/// The vocabulary of a `tokenizer.json`, as GGUF metadata wants it.
struct Vocab {
    pre: &'static str,
    tokens: Vec<String>,
    types: Vec<i32>,
    merges: Vec<String>,
}

/// Read `tokenizer.json` the way `convert_hf_to_gguf.py` does (`get_vocab_base`): ids without a
/// token up to `vocab_size` become `[PADi]` (unused); added tokens are control tokens when
/// special or when they look special (`<|…|>`), user-defined otherwise.
fn read_vocab(path: &Path, vocab_size: usize) -> Result<Vocab> {
    let err = |detail: String| Error::Tokenizer { path: path.to_path_buf(), detail };
    if !path.exists() {
        return Err(err("missing; a Hugging Face model directory needs tokenizer.json".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let json: Json = serde_json::from_str(&text)
        .map_err(|e| err(format!("not valid JSON ({e}); get a complete copy of the model directory")))?;
    let model = json.get("model").ok_or_else(|| err("no `model` object".into()))?;
    let model_type = model.get("type").and_then(Json::as_str).unwrap_or("BPE");
    if model_type != "BPE" {
        return Err(err(format!(
            "tokenizer model `{model_type}` cannot be written to GGUF by Readout (only byte-level BPE, as Qwen, Llama 3 and SmolLM use); convert this model with llama.cpp's convert_hf_to_gguf.py"
        )));
    }
    let pre_json = json.get("pre_tokenizer").cloned().unwrap_or(Json::Null);
    let pre = pre_tokenizer_name(&pre_json).ok_or_else(|| {
        err(format!(
            "pre-tokenizer {} is not one Readout can name for llama.cpp (it knows GPT-2's byte-level split, SmolLM's, Qwen2's and Llama 3's); convert this model with llama.cpp's convert_hf_to_gguf.py",
            serde_json::to_string(&pre_json).unwrap_or_default()
        ))
    })?;
    let mut by_id: Vec<Option<(String, i32)>> = vec![None; vocab_size];
    let mut put = |id: u64, token: &str, ty: i32| -> Result<()> {
        match by_id.get_mut(id as usize) {
            Some(slot) => {
                *slot = Some((token.to_string(), ty));
                Ok(())
            }
            None => Err(err(format!(
                "token `{token}` has id {id}, but config.json's vocab_size is {vocab_size}: the tokenizer does not fit the model; get matching files"
            ))),
        }
    };
    let vocab = model.get("vocab").and_then(Json::as_object).ok_or_else(|| err("no `model.vocab` object".into()))?;
    for (token, id) in vocab {
        let id = id.as_u64().ok_or_else(|| err(format!("token `{token}` has id {id}, not a number")))?;
        put(id, token, TOKEN_NORMAL)?;
    }
    for added in json.get("added_tokens").and_then(Json::as_array).map(Vec::as_slice).unwrap_or_default() {
        let (Some(id), Some(content)) =
            (added.get("id").and_then(Json::as_u64), added.get("content").and_then(Json::as_str))
        else {
            return Err(err(format!("added token {added} has no numeric `id` and string `content`")));
        };
        let special = added.get("special").and_then(Json::as_bool).unwrap_or(false);
        let looks_special = (content.starts_with("<|") && content.ends_with("|>"))
            || (content.starts_with("<｜") && content.ends_with("｜>"))
            || ["<pad>", "<mask>"].contains(&content);
        put(id, content, if special || looks_special { TOKEN_CONTROL } else { TOKEN_USER_DEFINED })?;
    }
    let (tokens, types) =
        by_id.into_iter().enumerate().map(|(i, t)| t.unwrap_or_else(|| (format!("[PAD{i}]"), TOKEN_UNUSED))).unzip();
    let mut merges = Vec::new();
    for m in model.get("merges").and_then(Json::as_array).map(Vec::as_slice).unwrap_or_default() {
        let merge = match m {
            Json::String(s) => Some(s.clone()),
            Json::Array(pair) => match pair.as_slice() {
                [Json::String(a), Json::String(b)] => Some(format!("{a} {b}")),
                _ => None,
            },
            _ => None,
        };
        merges.push(merge.ok_or_else(|| err(format!("merge {m} is neither \"a b\" nor [\"a\", \"b\"]")))?);
    }
    Ok(Vocab { pre, tokens, types, merges })
}

/// The id of a special token named in `tokenizer_config.json` (by text), else in `config.json`
/// (by id), as llama.cpp's `SpecialVocab` finds them.
fn special_id(text: Option<&str>, tokens: &[String], config: &Json, id_key: &str) -> Option<u32> {
    text.and_then(|t| tokens.iter().position(|x| x == t))
        .map(|i| i as u32)
        .or_else(|| config.get(id_key).and_then(Json::as_u64).map(|i| i as u32))
        .filter(|&i| (i as usize) < tokens.len())
}

/// The `pad_token` and `add_bos_token`/`add_eos_token` of `tokenizer_config.json`, which the
/// engine's own reader does not need.
fn extra_tokenizer_config(path: &Path) -> Result<(Option<String>, Option<bool>, Option<bool>)> {
    if !path.exists() {
        return Ok((None, None, None));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let v: Json = serde_json::from_str(&text).map_err(|e| Error::BadModelConfig {
        path: path.to_path_buf(),
        detail: format!("not valid JSON ({e}); get a complete copy of the model directory"),
    })?;
    let pad = match v.get("pad_token") {
        Some(Json::String(s)) => Some(s.clone()),
        Some(Json::Object(o)) => o.get("content").and_then(Json::as_str).map(String::from),
        _ => None,
    };
    Ok((pad, v.get("add_bos_token").and_then(Json::as_bool), v.get("add_eos_token").and_then(Json::as_bool)))
}

/// Check that the vocabulary about to be written tokenizes as `tokenizer.json` does.
fn check_round_trip(vocab: &Vocab, tok_path: &Path, output: &Path) -> Result<()> {
    let gguf_vocab = GgufVocab {
        model: "gpt2".into(),
        pre: vocab.pre.into(),
        tokens: vocab.tokens.clone(),
        token_types: vocab.types.clone(),
        merges: vocab.merges.clone(),
        ..Default::default()
    };
    let ours = Tokenizer::from_gguf(&gguf_vocab, output)?;
    let theirs = Tokenizer::from_json_file(tok_path)?;
    for text in CHECK_TEXTS {
        let (a, b) = (theirs.encode(text)?, ours.encode(text)?);
        if a != b {
            let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            return Err(Error::Tokenizer {
                path: tok_path.to_path_buf(),
                detail: format!(
                    "written as GGUF with pre-tokenizer `{}`, it would tokenize {text:?} differently (from token {at}: {:?} here, {:?} from the GGUF vocabulary); convert this model with llama.cpp's convert_hf_to_gguf.py",
                    vocab.pre,
                    &a[at..a.len().min(at + 5)],
                    &b[at..b.len().min(at + 5)],
                ),
            });
        }
    }
    Ok(())
}

/// The GGUF metadata of a model: shape keys under the architecture's name, then the tokenizer.
fn metadata(
    cfg: &ModelConfig,
    context_length: usize,
    name: &str,
    vocab: Vocab,
    specials: [(&str, Option<u32>); 3],
    add_bos_eos: [(&str, Option<bool>); 2],
    chat_template: Option<String>,
) -> Vec<(String, Value)> {
    let a = cfg.architecture.as_str();
    let u = |v: usize| Value::U32(v as u32);
    let mut md: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(a.into())),
        ("general.name".into(), Value::String(name.into())),
        (format!("{a}.context_length"), u(context_length)),
        (format!("{a}.embedding_length"), u(cfg.hidden_size)),
        (format!("{a}.block_count"), u(cfg.num_layers)),
        (format!("{a}.feed_forward_length"), u(cfg.intermediate_size)),
        (format!("{a}.attention.head_count"), u(cfg.num_heads)),
        (format!("{a}.attention.head_count_kv"), u(cfg.num_kv_heads)),
        (format!("{a}.attention.key_length"), u(cfg.head_dim)),
        (format!("{a}.attention.value_length"), u(cfg.head_dim)),
        (format!("{a}.rope.freq_base"), Value::F32(cfg.rope_theta)),
        (format!("{a}.attention.layer_norm_rms_epsilon"), Value::F32(cfg.rms_eps as f32)),
    ];
    if cfg.architecture == Architecture::Llama {
        md.push((format!("{a}.rope.dimension_count"), u(cfg.head_dim)));
        md.push((format!("{a}.vocab_size"), u(cfg.vocab_size)));
    }
    md.push(("tokenizer.ggml.model".into(), Value::String("gpt2".into())));
    md.push(("tokenizer.ggml.pre".into(), Value::String(vocab.pre.into())));
    md.push(("tokenizer.ggml.tokens".into(), Value::Array(vocab.tokens.into_iter().map(Value::String).collect())));
    md.push(("tokenizer.ggml.token_type".into(), Value::Array(vocab.types.into_iter().map(Value::I32).collect())));
    md.push(("tokenizer.ggml.merges".into(), Value::Array(vocab.merges.into_iter().map(Value::String).collect())));
    for (key, id) in specials {
        if let Some(id) = id {
            md.push((format!("tokenizer.ggml.{key}"), Value::U32(id)));
        }
    }
    for (key, flag) in add_bos_eos {
        if let Some(flag) = flag {
            md.push((format!("tokenizer.ggml.{key}"), Value::Bool(flag)));
        }
    }
    if let Some(t) = chat_template {
        md.push(("tokenizer.chat_template".into(), Value::String(t)));
    }
    md
}

/// Convert the Hugging Face directory `dir` into the GGUF `output`, matrices encoded as `mode`
/// (with [`super::encoding_for`]'s fallbacks), norms in F32. Returns the number of tensors
/// written. Nothing is written when the directory cannot be converted faithfully.
pub fn quantize_hf_dir(dir: &Path, output: &Path, mode: QuantMode) -> Result<usize> {
    let (cfg, _) = hf_config(dir)?;
    let cfg_path = dir.join("config.json");
    if cfg.architecture == Architecture::Gemma3 {
        return Err(Error::BadModelConfig {
            path: cfg_path,
            detail: "is a gemma3 model; Readout runs gemma3 Hugging Face directories but does not convert them to GGUF (its norms, post-norms and SentencePiece vocabulary need llama.cpp's converter). Convert it with llama.cpp's convert_hf_to_gguf.py, or run the directory as it is".into(),
        });
    }
    let config_json: Json =
        std::fs::read_to_string(&cfg_path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Json::Null);
    if let Some(scaling) = config_json.get("rope_scaling").filter(|v| !v.is_null()) {
        return Err(Error::BadModelConfig {
            path: cfg_path,
            detail: format!("`rope_scaling` is {scaling}; Readout neither runs nor converts scaled RoPE. Convert this model with llama.cpp's convert_hf_to_gguf.py"),
        });
    }

    // The tokenizer first: it is quick to read and the likelier to be refused.
    let tok_path = dir.join("tokenizer.json");
    let vocab = read_vocab(&tok_path, cfg.vocab_size)?;
    check_round_trip(&vocab, &tok_path, output)?;
    let tc_path = dir.join("tokenizer_config.json");
    let tc = read_tokenizer_config(&tc_path)?;
    let (pad, add_bos, add_eos) = extra_tokenizer_config(&tc_path)?;
    let specials = [
        ("bos_token_id", special_id(tc.bos_token.as_deref(), &vocab.tokens, &config_json, "bos_token_id")),
        ("eos_token_id", special_id(tc.eos_token.as_deref(), &vocab.tokens, &config_json, "eos_token_id")),
        ("padding_token_id", special_id(pad.as_deref(), &vocab.tokens, &config_json, "pad_token_id")),
    ];

    let files = safetensors_files(dir)?;
    // SAFETY: the files are mapped read-only; a file changed under us while converting is the
    // user's to avoid, as with every mmap-based loader.
    let st = unsafe { candle_core::safetensors::MmapedSafetensors::multi(&files) }
        .map_err(|e| Error::BadModelConfig { path: dir.to_path_buf(), detail: format!("reading safetensors: {e}") })?;
    let planned = plan(&cfg);
    let wanted: HashSet<&str> = planned.iter().map(|p| p.hf.as_str()).collect();
    let mut present: Vec<String> = st.tensors().into_iter().map(|(n, _)| n).collect();
    present.sort();
    if let Some(extra) = present.iter().find(|n| !wanted.contains(n.as_str()) && !skipped(n, &cfg)) {
        return Err(Error::BadTensor {
            path: dir.to_path_buf(),
            tensor: extra.clone(),
            detail: format!(
                "not a tensor of the {} model config.json describes (biases and other extra weights are not converted); convert this model with llama.cpp's convert_hf_to_gguf.py",
                cfg.architecture.as_str()
            ),
        });
    }

    let target = mode.dtype();
    let mut tensors = Vec::with_capacity(planned.len());
    for p in &planned {
        let bad = |detail: String| Error::BadTensor { path: dir.to_path_buf(), tensor: p.hf.clone(), detail };
        let t = st.load(&p.hf, &Device::Cpu).map_err(|e| bad(e.to_string()))?;
        if t.dims() != p.shape.as_slice() {
            return Err(bad(format!("shape {:?}, expected {:?} from config.json", t.dims(), p.shape)));
        }
        let mut t = t.to_dtype(DType::F32)?;
        if let Some(heads) = p.permute_heads {
            t = permute_rows(&t, heads)?;
        }
        let q = QTensor::quantize(&t, tensor_encoding(&p.shape, target))?;
        tensors.push((p.gguf.clone(), q));
    }

    let name = dir
        .canonicalize()
        .ok()
        .as_deref()
        .unwrap_or(dir)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    // config.json's own context length: the engine's config caps it at what Readout runs.
    let context_length = config_json
        .get("max_position_embeddings")
        .and_then(Json::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .map_or(cfg.context_length, |n| n as usize);
    let md = metadata(
        &cfg,
        context_length,
        &name,
        vocab,
        specials,
        [("add_bos_token", add_bos), ("add_eos_token", add_eos)],
        hf_chat_template(dir, tc.chat_template)?,
    );
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    write_gguf_file(output, &md_refs, &tensors)?;
    Ok(tensors.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::synthetic::{shape_config, tiny_config};
    use serde_json::json;

    #[test]
    fn qwen3_names_follow_convert_hf_to_gguf() {
        let cfg = shape_config("qwen3-0.6b").unwrap();
        let p = plan(&cfg);
        // Embedding, 11 per block, final norm; the head is tied.
        assert_eq!(p.len(), 1 + 11 * 28 + 1);
        let find = |g: &str| p.iter().find(|x| x.gguf == g).unwrap().clone();
        assert_eq!(find("token_embd.weight").hf, "model.embed_tokens.weight");
        assert_eq!(find("blk.3.attn_q_norm.weight").hf, "model.layers.3.self_attn.q_norm.weight");
        assert_eq!(find("blk.3.attn_q_norm.weight").shape, vec![128]);
        assert_eq!(find("blk.27.ffn_down.weight").hf, "model.layers.27.mlp.down_proj.weight");
        assert_eq!(find("blk.27.ffn_down.weight").shape, vec![1024, 3072]);
        assert_eq!(find("blk.0.attn_output.weight").hf, "model.layers.0.self_attn.o_proj.weight");
        assert_eq!(find("blk.0.ffn_norm.weight").hf, "model.layers.0.post_attention_layernorm.weight");
        assert_eq!(find("output_norm.weight").hf, "model.norm.weight");
        // qwen3 rotates halves in llama.cpp too: nothing is permuted.
        assert!(p.iter().all(|x| x.permute_heads.is_none()));
        assert!(skipped("lm_head.weight", &cfg));
    }

    #[test]
    fn llama_permutes_q_and_k_and_keeps_an_untied_head() {
        let mut cfg = tiny_config(Architecture::Llama);
        cfg.tie_embeddings = false;
        let p = plan(&cfg);
        assert_eq!(p.len(), 1 + 9 * 2 + 2);
        assert!(!p.iter().any(|x| x.gguf.contains("q_norm")));
        let find = |g: &str| p.iter().find(|x| x.gguf == g).unwrap().clone();
        assert_eq!(find("blk.1.attn_q.weight").permute_heads, Some(4));
        assert_eq!(find("blk.1.attn_k.weight").permute_heads, Some(2));
        assert_eq!(find("blk.1.attn_v.weight").permute_heads, None);
        assert_eq!(find("output.weight").hf, "lm_head.weight");
        assert!(!skipped("lm_head.weight", &cfg));
        assert!(skipped("model.layers.0.self_attn.rotary_emb.inv_freq", &cfg));
    }

    #[test]
    fn permutation_is_llama_cpps() {
        // Two heads of four rows: each head's halves [0 1 | 2 3] become pairs [0 2 1 3].
        let w = Tensor::arange(0f32, 8.0, &Device::Cpu).unwrap().reshape((8, 1)).unwrap();
        let p = permute_rows(&w, 2).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(p, vec![0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]);
    }

    #[test]
    fn pre_tokenizers_are_named_or_refused() {
        let byte_level =
            json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true});
        assert_eq!(pre_tokenizer_name(&byte_level), Some("gpt-2"));
        let smollm = json!({"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true}, byte_level]});
        assert_eq!(pre_tokenizer_name(&smollm), Some("smollm"));
        let split = |re: &str| {
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": re}, "behavior": "Isolated", "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]})
        };
        let qwen = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
        assert_eq!(pre_tokenizer_name(&split(qwen)), Some("qwen2"));
        assert_eq!(pre_tokenizer_name(&split(&qwen.replace(r"\p{N}|", r"\p{N}{1,3}|"))), Some("llama-bpe"));
        assert_eq!(pre_tokenizer_name(&split(r"\s+|\w+")), None);
        assert_eq!(pre_tokenizer_name(&json!({"type": "Metaspace", "replacement": "▁"})), None);
        assert_eq!(pre_tokenizer_name(&Json::Null), None);
    }
}
