//! One error enum for the whole library: every variant names the file (and where possible the
//! line, field or tensor) and says what the user can do about it. Binaries wrap it with context.

use std::path::PathBuf;

/// Everything the library can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("model file {path} does not exist. {hint}")]
    ModelMissing { path: PathBuf, hint: String },

    #[error("{path}: not a readable GGUF file ({detail}). The file is truncated or corrupt: download it again (for the default model: `models/fetch`).")]
    CorruptGguf { path: PathBuf, detail: String },

    #[error("{path}: architecture `{arch}` is not supported. Readout runs `llama` and `qwen3` models (GGUF or a Hugging Face directory).")]
    UnsupportedArchitecture { path: PathBuf, arch: String },

    #[error("{path}: tensor `{tensor}` has type {dtype}, which Readout cannot load. Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q8_K; re-quantise the model with one of those.")]
    UnsupportedTensorType { path: PathBuf, tensor: String, dtype: String },

    #[error("{path}: tensor `{tensor}` is missing or has the wrong shape ({detail}). The file does not match its own metadata; get a complete copy of the model.")]
    BadTensor { path: PathBuf, tensor: String, detail: String },

    #[error("{path}: {detail}")]
    BadModelConfig { path: PathBuf, detail: String },

    #[error("tokenizer of {path}: {detail}")]
    Tokenizer { path: PathBuf, detail: String },

    #[error("tokenizer of {path}: option letter `{letter}` is not a single token after the prompt ({detail}). This model cannot be read out with letters; choose another model.")]
    LetterNotSingleToken { path: PathBuf, letter: String, detail: String },

    #[error("chat template of {path}: {detail}")]
    ChatTemplate { path: PathBuf, detail: String },

    #[error("{path}:{line}: field `{field}`: {reason}")]
    BadInput { path: PathBuf, line: usize, field: String, reason: String },

    #[error("{path}: {reason}")]
    BadFile { path: PathBuf, reason: String },

    #[error("{0}")]
    Config(String),

    #[error("prompt has {tokens} tokens but the model's context holds {context}; shorten the text")]
    ContextOverflow { tokens: usize, context: usize },

    #[error("device `{requested}` is not available: {reason}")]
    Device { requested: String, reason: String },

    /// The OS error is part of the message, not a separate source, so `{:#}` prints it once.
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },

    #[error("tensor computation failed: {0}")]
    Candle(#[from] candle_core::Error),
}

/// The library's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), err: source }
    }
}
