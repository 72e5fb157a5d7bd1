//! One error enum for the whole library: every variant names the file (and where possible the
//! line, field or tensor) and says what the user can do about it. Binaries wrap it with context.

use std::path::PathBuf;

/// One wrong field of a request, as TypeSafe's (and FastAPI's) 422 answer names it: where it is
/// (`["body", "questions", "q1", "criteria"]`), what is wrong, and a machine-readable kind
/// (`missing`, `string_type`, `too_short` …).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Invalid {
    pub loc: Vec<Loc>,
    pub msg: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// One step of an [`Invalid`]'s place: a key or an index.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Loc {
    Key(String),
    Index(usize),
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at: Vec<String> = self
            .loc
            .iter()
            .map(|l| match l {
                Loc::Key(k) => k.clone(),
                Loc::Index(i) => i.to_string(),
            })
            .collect();
        write!(f, "{}: {}", at.join("."), self.msg)
    }
}

/// Everything the library can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("model file {path} does not exist. {hint}")]
    ModelMissing { path: PathBuf, hint: String },

    #[error("{path}: not a readable GGUF file ({detail}). The file is truncated or corrupt: download it again (for the default model: `models/fetch`).")]
    CorruptGguf { path: PathBuf, detail: String },

    /// A GGUF header Readout refuses before trusting any length in it (see `engine::gguf`).
    #[error("{path}: GGUF header: {field}, at byte {offset}: {problem}")]
    Gguf { path: PathBuf, field: String, offset: u64, problem: GgufProblem },

    #[error("{path}: architecture `{arch}` is not supported. Readout reads these (GGUF `general.architecture`, or config.json's `architectures`): llama (LlamaForCausalLM), mistral (MistralForCausalLM, run as llama), qwen2 (Qwen2ForCausalLM), qwen3 (Qwen3ForCausalLM), gemma3 (Gemma3ForCausalLM). Use a model of one of those families.")]
    UnsupportedArchitecture { path: PathBuf, arch: String },

    #[error("{path}: tensor `{tensor}` has type {dtype}, which Readout cannot load. Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K; re-quantise the model with one of those.")]
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

    /// No usable chat template: the model has none and none was named, or the one named is
    /// neither a known family nor a readable file (`template::choose`).
    /// `asked` is the name or file asked for that could not be used; `None` when the model
    /// carries no template and none was asked for.
    #[error("{path}: {detail}. Name the chat template to read it with: --chat-template NAME|FILE, where NAME is one of {names} (llama.cpp's names), or FILE a Jinja template")]
    NoChatTemplate { path: PathBuf, detail: String, names: String, asked: Option<String> },

    #[error("{path}:{line}: field `{field}`: {reason}")]
    BadInput { path: PathBuf, line: usize, field: String, reason: String },

    #[error("{path}: {reason}")]
    BadFile { path: PathBuf, reason: String },

    #[error("{0}")]
    Config(String),

    /// What a judge of a jury refused or failed at: which judge (from 1) and its model, then
    /// the judge's own error (a text too long for its context names the text or row).
    #[error("judge {judge} ({model}): {error}")]
    Judge { judge: usize, model: String, error: Box<Error> },

    /// A score request ([`crate::jobs::request::ScoreRequest`]) with a wrong field; `reason` says
    /// what to give instead.
    #[error("{reason}")]
    Request { field: String, reason: String },

    /// A System One request ([`crate::jobs::systemone`]) with wrong fields, each named by its
    /// place in the body as TypeSafe's 422 names it.
    #[error("the request is not valid: {}", .0.iter().map(|i| i.to_string()).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<Invalid>),

    /// A result file with too little in it to fit a temperature and check it (`calibrate`).
    #[error("{path}: {rows} rows ({wrong} wrong, {right} right, {groups} groups) are too few to fit a temperature and check it on {folds} held-out folds: that needs at least {min_rows} rows, {min_errors} wrong and {min_errors} right, and a group per fold. Fit it on a larger run of the same configuration (the whole eval set, without --limit or --family)")]
    TooFewToCalibrate {
        path: PathBuf,
        rows: usize,
        wrong: usize,
        right: usize,
        groups: usize,
        folds: usize,
        min_rows: usize,
        min_errors: usize,
    },

    #[error("prompt has {tokens} tokens but the model's context holds {context}; shorten the text")]
    ContextOverflow { tokens: usize, context: usize },

    /// A state (eval-set item) or text (score) whose prompt does not fit the model's context,
    /// found before anything is scored. `what` names it (the file and item id, or the text
    /// number); `state_tokens` is the state's share of `prompt_tokens`; `budget` is the context
    /// less the tokens kept for a generated reply; `without` is the prompt's length without the
    /// state, and `cut_helps` whether cutting the state from the middle can make it fit. The
    /// message gives the facts; each shell words the advice (the CLI names its flags).
    #[error("{what}: the prompt is {prompt_tokens} tokens ({state_tokens} of them the {part}) but the model's context holds {budget}{reserved}, {over} too many", over = .prompt_tokens.saturating_sub(*.budget))]
    PromptTooLong {
        what: String,
        part: &'static str,
        prompt_tokens: usize,
        state_tokens: usize,
        budget: usize,
        /// Empty, or what the budget leaves out (", less 4 kept for the reply").
        reserved: String,
        without: usize,
        cut_helps: bool,
    },

    #[error("device `{requested}` is not available: {reason}")]
    Device { requested: String, reason: String },

    /// Getting a model from the hub ([`crate::hub`]): not found, refused, offline, corrupt,
    /// stopped, the network.
    #[error(transparent)]
    Hub(#[from] readout_hub::Error),

    /// The OS error is part of the message, not a separate source, so `{:#}` prints it once.
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },

    #[error("tensor computation failed: {0}")]
    Candle(#[from] candle_core::Error),
}

/// What is wrong in a GGUF header, and what to do about it. Every length, count and size in the
/// header is checked before anything is allocated for it (`engine::gguf`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GgufProblem {
    #[error("{need} byte(s) are needed here but only {left} remain: the header ends early (the file has only {file_len} bytes), so the file is cut short: download it again (for the default model: `models/fetch`)")]
    Truncated { need: u64, left: u64, file_len: u64 },

    #[error("{what} is {value}, more than the {limit} Readout accepts; no real model comes near that, so the file is corrupt or not a model: download it again, or convert the model again with llama.cpp")]
    TooLarge { what: &'static str, value: u64, limit: u64 },

    #[error("GGUF version {0} is not one Readout reads (1, 2 or 3); convert the model again with a current llama.cpp")]
    Version(u32),

    #[error("this is a big-endian GGUF (version {0}, byte-swapped); Readout reads little-endian files: convert the model again without `--bigendian`")]
    BigEndian(u32),

    #[error("value type {0} is not a GGUF type (0 to 12): the file is corrupt; download it again")]
    ValueType(u32),

    #[error("a boolean must be 0 or 1, not {0}: the file is corrupt; download it again")]
    Bool(u8),

    #[error("arrays nested {depth} deep; Readout reads at most {max} levels: the file is corrupt or not a model; download it again")]
    Nesting { depth: usize, max: usize },

    #[error(
        "`{0}` is given twice; a GGUF names each key and tensor once: the file is corrupt; convert the model again"
    )]
    Duplicate(String),

    #[error("{dims} dimensions; a GGUF tensor has at most {max}: the file is corrupt; download it again")]
    Dimensions { dims: u32, max: u32 },

    #[error("a dimension is 0; every dimension of a weight is at least 1: the file is corrupt; download it again")]
    ZeroDimension,

    #[error("its {what} overflows 64 bits: the file is corrupt; download it again")]
    Overflow { what: &'static str },

    #[error("`general.alignment` is {value}, but it must be a power of two from 1 to {max}: the file is corrupt; convert the model again")]
    Alignment { value: u64, max: u64 },

    #[error("its data ends at byte {end} but the file has only {file_len} bytes: the weights are cut short; download it again (for the default model: `models/fetch`)")]
    PastEnd { end: u64, file_len: u64 },
}

/// The library's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), err: source }
    }
}
