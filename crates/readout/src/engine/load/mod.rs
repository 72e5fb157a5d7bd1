//! Loading a model from disk: a GGUF file (weights, shape, tokenizer and chat template all in
//! its metadata), a Hugging Face directory (`config.json`, `tokenizer.json`,
//! `tokenizer_config.json`, safetensors) or an ONNX export's directory (`model.onnx` and the same
//! files beside it). Every failure names the file and says what to do.
//!
//! Loading is apart from the model: `gguf`, `hf` and `onnx` read each format (its shape, its weights as
//! views of the mapped files, its tokenizer's and chat template's sources), `tokenizer_config`
//! a directory's special tokens and template, and `build` makes the model of the named tensors
//! whichever format they come from.

mod build;
mod gguf;
mod hf;
mod onnx;
mod onnx_edit;
mod tokenizer_config;

pub(crate) use gguf::{gguf_vocab, GgufVocab};
pub(crate) use hf::{hf_config, safetensors_files};
pub(crate) use onnx::graph_of as onnx_graph;
pub use onnx::GraphSummary;
pub(crate) use onnx_edit::edit as onnx_edit;
pub use onnx_edit::{EditReport, OnnxEdit};
pub(crate) use tokenizer_config::{hf_chat_template, read_tokenizer_config};

use crate::engine::config::ModelConfig;
use crate::engine::model::{Hold, Transformer};
use crate::error::{Error, Result};
use candle_core::Device;
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
    /// A decision GGUF's contract.
    pub decision: Option<crate::engine::decision::Contract>,
}

/// Where the tokenizer comes from.
pub(crate) enum TokenizerSource {
    /// A `tokenizer.json`.
    Json(PathBuf),
    /// The GGUF metadata.
    Gguf(Box<GgufVocab>),
}

/// Load any supported model: a `.gguf` file or a Hugging Face directory.
pub(crate) fn load(path: &Path, device: &Device, hold: Hold) -> Result<Loaded> {
    if !path.exists() {
        return Err(Error::ModelMissing { path: path.to_path_buf(), hint: missing_hint(path) });
    }
    if path.is_dir() {
        match onnx::graph_file(path) {
            Some(graph) => onnx::load(path, &graph, device, hold),
            None => hf::load(path, device, hold),
        }
    } else {
        gguf::load(path, device, hold)
    }
}

/// A model file mapped read-only.
fn map(path: &Path) -> Result<crate::engine::weights::Mapped> {
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
        "Pass a GGUF file, a Hugging Face model directory or an ONNX export's directory with --model, or run models/fetch for the default model."
            .to_string()
    }
}

/// What a model says about itself without its weights being read.
#[derive(Debug, Clone)]
pub struct Metadata {
    pub config: ModelConfig,
    pub name: String,
    /// The encoding: the type mix a GGUF states (`Q4_K_M`), else its blocks' main tensor type;
    /// a directory's `torch_dtype` of config.json.
    pub quantisation: String,
    /// Bytes of the GGUF file, or of the directory's safetensors.
    pub file_bytes: u64,
    /// Whether the model carries a chat template of its own (GGUF `tokenizer.chat_template`, a
    /// directory's `chat_template.jinja` or `tokenizer_config.json`); without one, loading it
    /// needs a template named (`LoadOptions::chat_template`).
    pub has_chat_template: bool,
    /// The licence the file states (GGUF `general.license`, e.g. `apache-2.0`), if it does.
    pub licence: Option<String>,
    /// A decision GGUF's contract type (`openjev`, `lev`, `nimble` …), if it states one.
    pub decision: Option<String>,
}

/// Read only the shape of a model: the GGUF header (metadata and tensor table) or config.json.
pub(crate) fn read_metadata(path: &Path) -> Result<Metadata> {
    if !path.exists() {
        return Err(Error::ModelMissing { path: path.to_path_buf(), hint: missing_hint(path) });
    }
    if let Some(graph) = path.is_dir().then(|| onnx::graph_file(path)).flatten() {
        let s = onnx::summary(path)?;
        let graph_dir = graph.parent().unwrap_or(path);
        let (config, _) = hf_config(if graph_dir.join("config.json").is_file() { graph_dir } else { path })?;
        let tok_dir = if graph_dir.join("tokenizer_config.json").is_file() { graph_dir } else { path };
        let from_config = read_tokenizer_config(&tok_dir.join("tokenizer_config.json"))?.chat_template;
        return Ok(Metadata {
            config,
            name: path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
            quantisation: format!("ONNX {}", s.encodings.join("+")),
            file_bytes: s.weight_bytes,
            has_chat_template: hf_chat_template(tok_dir, from_config)?.is_some(),
            licence: None,
            decision: None,
        });
    }
    if path.is_dir() {
        let (config, torch_dtype) = hf_config(path)?;
        let file_bytes =
            safetensors_files(path)?.iter().map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)).sum();
        let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let from_config = read_tokenizer_config(&path.join("tokenizer_config.json"))?.chat_template;
        let has_chat_template = hf_chat_template(path, from_config)?.is_some();
        return Ok(Metadata {
            config,
            name,
            quantisation: torch_dtype.to_uppercase(),
            file_bytes,
            has_chat_template,
            licence: None,
            decision: None,
        });
    }
    let (file, content) = crate::engine::gguf::open(path)?;
    let file_bytes = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mapped = map(path)?;
    gguf::metadata(&content, &mapped[..], path, file_bytes)
}

/// [`read_metadata`] of GGUF bytes; `path` names the source in errors.
pub(crate) fn read_metadata_bytes(bytes: &[u8], path: &Path) -> Result<Metadata> {
    let content = crate::engine::gguf::parse(bytes, path)?;
    gguf::metadata(&content, bytes, path, bytes.len() as u64)
}

fn file_stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}
