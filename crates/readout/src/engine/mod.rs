//! The readout engine: a loaded model, its tokenizer and chat template, and the one call the
//! readout needs — given a computed prefix and a set of suffixes, the logits of the answer
//! letters at the end of each suffix. The prefix is computed once; all suffixes of one prefix go
//! through the model in one pass under a tree mask; the LM head runs only at the read rows.
//!
//! This module is the facade: [`Engine`] (and [`BareModel`], the model without its tokenizer)
//! with the call interface (`Unit`, `Suffix`, `UnitOut`, …) and the re-exports the rest of
//! Readout uses. Below it, each concern in its own place: `options` (what a user chooses, and
//! its resolution for a device), `batch` (units laid out as one pass's segments), `read` (what
//! a pass reads from its hidden states), `load` (model files), `model` (the transformer, block by
//! block), `backends` (the CPU's and CUDA's kernels), and the tokenizer, chat template, KV cache,
//! device choice and file formats beside them.

mod backends;
mod batch;
pub mod config;
pub mod decision;
pub mod device;
pub mod gguf;
pub mod kv;
pub(crate) mod load;
mod model;
pub mod options;
pub mod profile;
mod read;
pub mod synthetic;
pub mod template;
pub mod tokenizer;
pub(crate) mod weights;

use crate::engine::template::ChatTemplate;
use crate::error::{Error, Result};
use backends::cpu::int8::Kernel;
pub use backends::cpu::peak::{peaks, Peak};
use candle_core::Device;
pub use config::{Architecture, ModelConfig};
pub use kv::Prefix;
pub use load::{EditReport, GraphSummary, Metadata, OnnxEdit};

/// The graph of an ONNX model directory (its ops, encodings and layers, as `readout info` shows
/// them); `None` for a GGUF file or a safetensors directory.
pub fn onnx_graph(path: &std::path::Path) -> crate::error::Result<Option<GraphSummary>> {
    load::onnx_graph(path)
}

/// The ONNX export in `dir` with `edit` applied (the seed's levers, for onnxruntime to run),
/// written into the new directory `out`.
pub fn edit_onnx(dir: &std::path::Path, out: &std::path::Path, edit: &OnnxEdit) -> crate::error::Result<EditReport> {
    load::onnx_edit(dir, out, edit)
}
use model::{Hold, Transformer};
pub use options::{
    AttentionPath, CpuKernel, DeviceProfile, FusedKernels, KvCache, LoadOptions, MatmulPath, PassOptions, Precision,
    WeightsMode, CPU_PASS_TOKENS, DEFAULT_PASS_TOKENS, GPU_PASS_TOKENS,
};
pub use read::{token_read, token_read_top};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
pub use tokenizer::Tokenizer;

/// The answer letters a readout reads, in order (option `i` is shown as letter `i`).
pub const LETTERS: [&str; 26] = [
    "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W",
    "X", "Y", "Z",
];

/// The most options a criterion may have: a letter each up to 26 ([`LETTERS`]), beyond that a
/// two-letter code each (`AA`, `AB` … [`code`]), as TypeSafe's System One allows up to 255.
pub const MAX_CODES: usize = 255;

/// The code option `slot` of `n` is shown as: its letter when `n` is at most 26, else two letters
/// (`AA` … `ZZ`), so that no code is the start of another and each is read as one branch of the
/// prompt tree ([`Engine::answer_codes`]).
pub fn code(slot: usize, n: usize) -> String {
    if n <= LETTERS.len() {
        LETTERS[slot % LETTERS.len()].to_string()
    } else {
        format!("{}{}", LETTERS[(slot / LETTERS.len()) % LETTERS.len()], LETTERS[slot % LETTERS.len()])
    }
}

/// What a result file records about the model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub name: String,
    pub path: PathBuf,
    pub architecture: Architecture,
    pub quantisation: String,
    pub parameters: u64,
    pub config: ModelConfig,
    pub device: String,
    pub matmul: MatmulPath,
    /// How the weights were held: `native` (the file's encoding) or `f32`, `auto` resolved.
    pub weights: WeightsMode,
    /// What the projections multiply the weights with: `f32`, or the integer kernel's `int16`
    /// or `int8` activations (CPU, native weights in its encodings).
    pub activations: &'static str,
    /// The integer kernel's instructions, when it multiplies: `amx` or `avx512` (the same bits;
    /// not in result files).
    #[serde(skip)]
    pub cpu_kernel: Option<&'static str>,
    /// How the KV cache holds keys and values: `f16` or `f32`, `auto` resolved.
    pub kv_cache: KvCache,
    /// The dense matmuls' arithmetic (`--precision`): `f32`, `tf32` or `bf16`.
    pub precision: Precision,
    /// How a pass's attention was computed (`--attention`): `matmuls` or `kernel`, `auto` resolved.
    pub attention: AttentionPath,
    /// Whether a layer's element-wise steps ran as fused kernels (`--fused-kernels`): `on` or
    /// `off`, `auto` resolved.
    pub fused_kernels: FusedKernels,
    /// The chat template the prompts are rendered with: a family's name, `file:NAME`, or
    /// `model` for the model's own (`template::ChosenTemplate`).
    pub chat_template: String,
    /// Hex sha256 of the chat template's source.
    pub chat_template_sha256: String,
    /// Why `--device auto` fell back to the CPU (a GPU feature built in, its device or libraries
    /// missing); for the shell to show. `None` when the requested device was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_fallback: Option<String>,
    /// The hub repository and commit the model came from (`--model hf:…`), set by
    /// [`Engine::set_source`]; `None` for a model named by its path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::hub::ModelSource>,
    /// A decision model's contract (its GGUF's `<arch>.decision.*`): how `/v1/systemone`
    /// and `decide` ask it ([`crate::jobs::decide`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<decision::Contract>,
}

/// The letter logits read at the end of one suffix.
#[derive(Debug, Clone, PartialEq)]
pub struct Readout {
    /// Logits of the requested letter tokens, in the order asked.
    pub logits: Vec<f32>,
    /// Share of the full next-token distribution on these letters; `None` when the head was
    /// pruned to the letters (it cannot be known without the full head).
    pub letter_mass: Option<f32>,
}

/// A suffix to score on a prefix, and the tokens to read at its end.
#[derive(Debug, Clone)]
pub struct Suffix<'a> {
    pub tokens: &'a [u32],
    pub read: &'a [u32],
}

/// One unit of a pass: compute `stem` on top of `parent`, and read the letters at the end of
/// each leaf (leaves continue the stem).
#[derive(Debug, Clone)]
pub struct Unit<'a> {
    pub parent: &'a Prefix,
    pub stem: &'a [u32],
    pub leaves: Vec<Suffix<'a>>,
    /// Whether the caller goes on from this unit's prefix (computes more on top of it). When
    /// false the stem's keys and values are not kept, and [`UnitOut::prefix`] is the parent: a
    /// unit with only leaves below it saves the copies (on a GPU, two kernels a layer).
    pub keep: bool,
}

/// What a unit gives back: the parent extended by the stem, and one readout per leaf.
#[derive(Debug, Clone)]
pub struct UnitOut {
    pub prefix: Prefix,
    pub readouts: Vec<Readout>,
}

/// The full next-token distribution at one row of a leaf, reduced to what a log-likelihood needs
/// ([`Engine::pass_rows`]): its log-normaliser, its most likely token, and the logits of the
/// tokens asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenRead {
    /// log Σ exp(logit) over the whole vocabulary (summed in f64), so that a token's log
    /// probability is its logit minus this.
    pub log_norm: f64,
    /// The most likely token (the first of equal maxima, as `argmax` takes it).
    pub argmax: u32,
    /// Logits of the leaf's `read` tokens, in the order asked.
    pub logits: Vec<f32>,
    /// The most likely tokens and their logits, highest first (as many as asked; none unless
    /// asked: [`Engine::pass_rows_with`]).
    pub top: Vec<(u32, f32)>,
}

/// Rows of a unit's stem to read in [`Engine::pass_rows_with`]: each a [`TokenRead`] of the
/// `read` tokens (row `r` predicts the token after the stem's `r`-th).
#[derive(Debug, Clone, Default)]
pub struct StemRead<'a> {
    pub rows: &'a [usize],
    pub read: &'a [u32],
}

/// What a unit of [`Engine::pass_rows`] gives back: the parent extended by the stem, and a
/// [`TokenRead`] at every row of every leaf, the leaves one after another.
#[derive(Debug, Clone)]
pub struct RowsOut {
    pub prefix: Prefix,
    pub rows: Vec<TokenRead>,
}

/// Read a model's shape without loading its weights: the GGUF header (metadata and tensor
/// table) or a Hugging Face directory's `config.json`. For `readout derive` and the like.
pub fn read_metadata(path: &Path) -> Result<Metadata> {
    load::read_metadata(path)
}

/// [`read_metadata`] of a GGUF file's bytes; `path` only names the source in errors.
pub fn read_metadata_bytes(bytes: &[u8], path: &Path) -> Result<Metadata> {
    load::read_metadata_bytes(bytes, path)
}

/// The tokenizer a GGUF file's metadata describes (what loading the model builds), from the
/// file's bytes, without its weights; `path` only names the source in errors.
pub fn read_tokenizer_bytes(bytes: &[u8], path: &Path) -> Result<Tokenizer> {
    let content = gguf::parse(bytes, path)?;
    Tokenizer::from_gguf(&load::gguf_vocab(&content, path)?, path)
}

/// The tokenizer a GGUF file's metadata describes, read from its header alone (no weights): for
/// checking a tokenizer against llama.cpp without a model that runs.
pub fn read_tokenizer(path: &Path) -> Result<Tokenizer> {
    let (_, content) = gguf::open(path)?;
    Tokenizer::from_gguf(&load::gguf_vocab(&content, path)?, path)
}

/// Letters checked by [`Engine::answer_tokens_cached`]: by the last special token of a prompt, the
/// text after it and the number of letters, the tokens the prompt ended with (from that special
/// token on) and the letters' ids. One a planning, shared by its threads.
#[derive(Default)]
pub struct LetterCache(std::sync::Mutex<std::collections::HashMap<LetterKey, LetterEntry>>);

/// The last special token, the text after it, the number of letters.
type LetterKey = (String, String, usize);
/// The tokens a prompt ended with (from its last special token on), the letters' ids.
type LetterEntry = (Vec<u32>, Vec<u32>);

impl LetterCache {
    /// How many endings were checked in full (and kept).
    pub fn entries(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A model ready to read out.
pub struct Engine {
    info: ModelInfo,
    model: Transformer,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    sha256: OnceLock<String>,
    /// The threads the CPU work runs on (`LoadOptions::threads`): every pass runs inside it.
    pool: rayon::ThreadPool,
}

/// A model's weights loaded as `opts` asks, on the threads `opts` asks for, and what a result
/// file records about them: the part of [`Engine::load`] that does not read the tokenizer.
fn load_model(path: &Path, opts: &LoadOptions) -> Result<(load::Loaded, ModelInfo, rayon::ThreadPool)> {
    let mut pool = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("readout-{i}"));
    if let Some(n) = opts.threads {
        pool = pool.num_threads(n.max(1));
    }
    let pool = pool.build().map_err(|e| Error::Config(format!("starting {:?} CPU threads: {e}", opts.threads)))?;
    // The device is made on the calling thread, and its CUDA context made current on every
    // thread of the pool: a tensor freed on a thread without it fails (cudarc frees without
    // binding), and that error surfaces at the next operation.
    let (device, fallback) = device::select(opts.device)?;
    pool.broadcast(|_| device::bind_to_thread(&device));
    // Loading decodes and lays out weights on all of the engine's threads.
    let (loaded, resolved) = pool.install(|| -> Result<_> {
        // What f32 weights would take, asked only by `--weights auto` on CUDA.
        let f32_bytes = || Ok(load::read_metadata(path)?.config.parameter_count().saturating_mul(4));
        let resolved = opts.resolve(&device, f32_bytes)?;
        let hold = Hold {
            matmul: opts.matmul,
            native: resolved.weights == WeightsMode::Native,
            int8_activations: opts.int8_activations,
            kernel: match opts.cpu_kernel {
                CpuKernel::Auto => backends::cpu::amx::best(),
                CpuKernel::Avx512 => Kernel::Avx512,
            },
            bf16: opts.precision == Precision::Bf16,
        };
        let mut loaded = load::load(path, &device, hold)?;
        loaded.model.kv_f16 = resolved.kv_cache == KvCache::F16;
        loaded.model.tf32 = opts.precision == Precision::Tf32;
        loaded.model.attention_kernel = resolved.attention == AttentionPath::Kernel;
        loaded.model.attention_tensor_cores = opts.precision != Precision::F32;
        loaded.model.fused_kernels = resolved.fused_kernels == FusedKernels::On;
        Ok((loaded, resolved))
    })?;
    let cfg = loaded.model.cfg.clone();
    let info = ModelInfo {
        name: loaded.name.clone(),
        path: path.to_path_buf(),
        architecture: cfg.architecture,
        quantisation: loaded.quantisation.clone(),
        parameters: cfg.parameter_count(),
        config: cfg,
        device: device::describe(&device, pool.current_num_threads()),
        device_fallback: fallback,
        matmul: opts.matmul,
        weights: resolved.weights,
        activations: loaded.model.activations(),
        cpu_kernel: loaded.model.cpu_kernel(),
        kv_cache: resolved.kv_cache,
        precision: opts.precision,
        attention: resolved.attention,
        fused_kernels: resolved.fused_kernels,
        source: None,
        decision: loaded.decision.clone(),
        // No template chosen yet ([`Engine::load`] chooses one; a [`BareModel`] renders nothing).
        chat_template: "none".into(),
        chat_template_sha256: String::new(),
    };
    Ok((loaded, info, pool))
}

/// A model loaded without its tokenizer and chat template: it runs token ids made elsewhere.
/// It exists to compare logits with another engine on the very same ids (`readout bench
/// logits`), also for a model whose tokenizer Readout does not build (yet); everything else
/// goes through [`Engine`].
pub struct BareModel {
    info: ModelInfo,
    model: Transformer,
    pool: rayon::ThreadPool,
}

impl BareModel {
    /// Load the weights of a GGUF file or a Hugging Face directory, as [`Engine::load`] does.
    pub fn load(path: &Path, opts: &LoadOptions) -> Result<Self> {
        let (loaded, info, pool) = load_model(path, opts)?;
        Ok(BareModel { info, model: loaded.model, pool })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Full next-token logits after `tokens` on `prefix` (as [`Engine::next_logits`]).
    pub fn next_logits(&self, prefix: &Prefix, tokens: &[u32]) -> Result<(Prefix, Vec<f32>)> {
        device::bind_to_thread(&self.model.device);
        self.pool.install(|| batch::next_logits(&self.model, prefix, tokens))
    }
}

impl Engine {
    /// Load a GGUF file or a Hugging Face directory.
    pub fn load(path: &Path, opts: &LoadOptions) -> Result<Self> {
        let (loaded, info, pool) = load_model(path, opts)?;
        let tokenizer = match &loaded.tokenizer_source {
            load::TokenizerSource::Json(p) => Tokenizer::from_json_file(p)?,
            load::TokenizerSource::Gguf(v) => Tokenizer::from_gguf(v, path)?,
        };
        let chosen = template::choose(opts.chat_template.as_ref(), loaded.chat_template.clone(), path)?;
        let template = ChatTemplate::new(&chosen, loaded.bos_token.clone(), loaded.eos_token.clone())?;
        let info = ModelInfo { chat_template: chosen.name, chat_template_sha256: chosen.sha256, ..info };
        let device = loaded.model.device.clone();
        let engine = Engine { info, model: loaded.model, tokenizer, template, sha256: OnceLock::new(), pool };
        if !device.is_cpu() {
            engine.warm_up()?;
        }
        Ok(engine)
    }

    /// One small pass of every kind the readout makes (a stem, batched leaves on two parents,
    /// the full and the pruned head), run once at load on a GPU: the driver compiles candle's
    /// kernels from PTX on first use and cuBLAS sets itself up, and that belongs to the model's
    /// load, not to the first rows of a run.
    fn warm_up(&self) -> Result<()> {
        let root = self.extend(&Prefix::empty(), &[1, 2, 3])?;
        let other = self.extend(&root, &[4])?;
        let read = [5u32, 6];
        let leaves = [Suffix { tokens: &[7, 8], read: &read }, Suffix { tokens: &[9], read: &read }];
        let units = [
            Unit { parent: &root, stem: &[10, 11], leaves: leaves.to_vec(), keep: true },
            Unit { parent: &other, stem: &[12], leaves: leaves[..1].to_vec(), keep: true },
        ];
        for prune in [false, true] {
            self.pass_with(&units, PassOptions { prune_head: prune, ..self.pass_defaults() })?;
        }
        self.model.device.synchronize()?;
        Ok(())
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Record where the model came from on the hub (result files carry it). A model directory
    /// from the hub cache is a snapshot folder named by its commit: the repository names it.
    pub fn set_source(&mut self, source: crate::hub::ModelSource) {
        if source.file.is_none() {
            self.info.name = source.hub.rsplit('/').next().unwrap_or(&source.hub).to_string();
        }
        self.info.source = Some(source);
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    pub fn device(&self) -> &Device {
        &self.model.device
    }

    /// The pass options for this engine's device ([`DeviceProfile::pass_defaults`]).
    pub fn pass_defaults(&self) -> PassOptions {
        self.profile().pass_defaults()
    }

    /// What the device defaults are decided by: a GPU or not, and the CPU threads.
    pub fn profile(&self) -> DeviceProfile {
        DeviceProfile { gpu: !self.device().is_cpu(), threads: self.threads() }
    }

    /// The number of threads the engine's CPU work runs on.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The sha256 of the model file (or of config.json for a directory), computed once.
    pub fn sha256(&self) -> Result<String> {
        if let Some(s) = self.sha256.get() {
            return Ok(s.clone());
        }
        let p = if self.info.path.is_dir() { self.info.path.join("config.json") } else { self.info.path.clone() };
        let s = crate::hash::sha256_file(&p)?;
        Ok(self.sha256.get_or_init(|| s).clone())
    }

    /// [`Engine::answer_tokens`], checked once for all prompts that end alike: prompts whose text
    /// after their last special token is the same (a chat template's assistant turn, which every
    /// prompt of a run ends with) take the same letters, since the tokenizer encodes that text
    /// alone ([`Tokenizer::after_last_special`]). A prompt takes the cached letters only when its
    /// tokens end with that special token and the tokens the first such prompt ended with; any
    /// other prompt is checked in full. Answers are the same as `answer_tokens`'s; a run's
    /// planning encodes each prompt once instead of once and once a letter.
    pub fn answer_tokens_cached(
        &self,
        prompt: &str,
        prompt_ids: &[u32],
        n: usize,
        cache: &LetterCache,
    ) -> Result<Vec<u32>> {
        let Some((special, tail)) = self.tokenizer.after_last_special(prompt) else {
            return self.answer_tokens(prompt, prompt_ids, n);
        };
        let Some(at) = self.tokenizer.token_id(special).and_then(|id| prompt_ids.iter().rposition(|&t| t == id)) else {
            return self.answer_tokens(prompt, prompt_ids, n);
        };
        let ends = &prompt_ids[at..];
        let key = (special.to_string(), tail.to_string(), n);
        let hit = {
            let map = cache.0.lock().unwrap_or_else(|e| e.into_inner());
            map.get(&key).filter(|(t, _)| t.as_slice() == ends).map(|(_, l)| l.clone())
        };
        if let Some(letters) = hit {
            return Ok(letters);
        }
        let letters = self.answer_tokens(prompt, prompt_ids, n)?;
        cache
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert_with(|| (ends.to_vec(), letters.clone()));
        Ok(letters)
    }

    /// The token ids of the first `n` letters as they follow `prompt`, checked so that
    /// `encode(prompt + letter) == encode(prompt) + [letter]` for each one.
    pub fn answer_tokens(&self, prompt: &str, prompt_ids: &[u32], n: usize) -> Result<Vec<u32>> {
        let mut ids = Vec::with_capacity(n);
        for letter in LETTERS.iter().take(n) {
            let with = self.tokenizer.encode(&format!("{prompt}{letter}"))?;
            let ok = with.len() == prompt_ids.len() + 1 && with[..prompt_ids.len()] == *prompt_ids;
            if !ok {
                let tail: Vec<u32> = with.iter().skip(prompt_ids.len().saturating_sub(1)).copied().collect();
                return Err(Error::LetterNotSingleToken {
                    path: self.tokenizer.path().to_path_buf(),
                    letter: letter.to_string(),
                    detail: format!(
                        "the prompt's {} tokens become {} with the letter; the tail is {:?}",
                        prompt_ids.len(),
                        with.len(),
                        tail
                    ),
                });
            }
            ids.push(with[prompt_ids.len()]);
        }
        Ok(ids)
    }

    /// The token ids of the first `n` codes ([`code`]) as they follow `prompt`: one token each up
    /// to 26 options (the letters, as [`Engine::answer_tokens`]), else one or two each, checked so
    /// that `encode(prompt + code) == encode(prompt) + ids`. Two-letter codes have the same
    /// length, so none is the start of another: a code's first token either ends it or opens a
    /// branch on which its second token is read.
    pub fn answer_codes(
        &self,
        prompt: &str,
        prompt_ids: &[u32],
        n: usize,
        cache: &LetterCache,
    ) -> Result<Vec<Vec<u32>>> {
        if n <= LETTERS.len() {
            return Ok(self.answer_tokens_cached(prompt, prompt_ids, n, cache)?.into_iter().map(|t| vec![t]).collect());
        }
        if n > MAX_CODES {
            return Err(Error::Config(format!("{n} options; at most {MAX_CODES} can be given a code")));
        }
        (0..n)
            .map(|slot| {
                let c = code(slot, n);
                let with = self.tokenizer.encode(&format!("{prompt}{c}"))?;
                let extra = with.len().saturating_sub(prompt_ids.len());
                if !(1..=2).contains(&extra) || with[..prompt_ids.len()] != *prompt_ids {
                    return Err(Error::LetterNotSingleToken {
                        path: self.tokenizer.path().to_path_buf(),
                        letter: c,
                        detail: format!(
                            "the code must follow the prompt as one or two tokens of its own; the prompt's {} tokens become {}",
                            prompt_ids.len(),
                            with.len()
                        ),
                    });
                }
                Ok(with[prompt_ids.len()..].to_vec())
            })
            .collect()
    }

    /// Compute `tokens` on top of `parent`, giving a longer prefix. `parent` is unchanged.
    pub fn extend(&self, parent: &Prefix, tokens: &[u32]) -> Result<Prefix> {
        self.extend_with(parent, tokens, self.pass_defaults())
    }

    /// `extend` in passes of at most `opts.pass_tokens` tokens.
    pub fn extend_with(&self, parent: &Prefix, tokens: &[u32], opts: PassOptions) -> Result<Prefix> {
        // Refuse before computing anything: a long text must not cost minutes to be refused.
        batch::check_context(parent.len() + tokens.len(), self.info.config.context_length)?;
        let mut cur = parent.clone();
        for chunk in tokens.chunks(opts.pass_tokens.max(1)) {
            let unit = Unit { parent: &cur, stem: chunk, leaves: vec![], keep: true };
            let out = self.pass_with(std::slice::from_ref(&unit), opts)?;
            cur = out.into_iter().next().map(|o| o.prefix).unwrap_or_else(|| cur.clone());
        }
        Ok(cur)
    }

    /// Read the letter logits at the end of every suffix, each computed on top of `prefix`.
    /// Suffixes of one batch go through the model together under a tree mask.
    pub fn read(&self, prefix: &Prefix, suffixes: &[Suffix<'_>]) -> Result<Vec<Readout>> {
        self.read_with(prefix, suffixes, self.pass_defaults())
    }

    /// `read` with the given options: the suffixes in passes of at most `opts.pass_tokens`.
    pub fn read_with(&self, prefix: &Prefix, suffixes: &[Suffix<'_>], opts: PassOptions) -> Result<Vec<Readout>> {
        let mut out = Vec::with_capacity(suffixes.len());
        let mut start = 0;
        while start < suffixes.len() {
            let mut end = start;
            let mut total = 0;
            while end < suffixes.len() && (end == start || total + suffixes[end].tokens.len() <= opts.pass_tokens) {
                total += suffixes[end].tokens.len();
                end += 1;
            }
            let unit = Unit { parent: prefix, stem: &[], leaves: suffixes[start..end].to_vec(), keep: false };
            out.extend(self.pass_with(std::slice::from_ref(&unit), opts)?.into_iter().flat_map(|o| o.readouts));
            start = end;
        }
        Ok(out)
    }

    /// One forward pass over several units. Each unit computes its stem on top of its own
    /// parent prefix (giving the unit's new prefix) and reads the letters at the end of each of
    /// its leaves, which continue the stem and see only the parent, the stem and their own
    /// earlier tokens (a tree mask). Units of different parents share the pass: the matmuls run
    /// once over all their rows, attention runs per unit. A caller keeps the pass within
    /// `pass_tokens`; this does not split it.
    pub fn pass(&self, units: &[Unit<'_>]) -> Result<Vec<UnitOut>> {
        self.pass_with(units, self.pass_defaults())
    }

    /// `pass` with the given options (head, grouping), on the engine's threads.
    pub fn pass_with(&self, units: &[Unit<'_>], opts: PassOptions) -> Result<Vec<UnitOut>> {
        // The caller's thread frees what the pass returns (see `load_model`).
        device::bind_to_thread(&self.model.device);
        self.pool.install(|| self.pass_in_pool(units, opts))
    }

    /// Two passes side by side on the engine's threads (each as [`Engine::pass_with`]): on a CPU
    /// of several cores, the steps of one pass that run on one core (copies, the attention's
    /// small products) leave the other core to the other pass. A unit's numbers do not depend
    /// on its pass, so the bits are those of two passes one after the other.
    pub fn pass_pair(
        &self,
        a: &[Unit<'_>],
        b: &[Unit<'_>],
        opts: PassOptions,
    ) -> (Result<Vec<UnitOut>>, Result<Vec<UnitOut>>) {
        device::bind_to_thread(&self.model.device);
        self.pool.install(|| rayon::join(|| self.pass_in_pool(a, opts), || self.pass_in_pool(b, opts)))
    }

    /// One forward pass as [`Engine::pass_with`], reading every row of every leaf instead of
    /// its end: at each row the full vocabulary's log-normaliser, the most likely token and the
    /// logits of the leaf's `read` tokens (the log-likelihood of a continuation, each of its
    /// tokens read in the same pass; [`crate::analysis::loglik`]).
    pub fn pass_rows(&self, units: &[Unit<'_>], opts: PassOptions) -> Result<Vec<RowsOut>> {
        self.pass_rows_with(units, &[], 0, opts)
    }

    /// [`Engine::pass_rows`], reading besides every leaf row the rows of each unit's stem that
    /// `stems[i]` names (before its leaves' rows in [`RowsOut::rows`]; `stems` empty: none), and
    /// keeping the `top` most likely tokens of every row read ([`TokenRead::top`]). A stem's
    /// keys and values are kept as [`Unit::keep`] says, so a prompt is computed once whether its
    /// rows are read or not (the echo of an OpenAI-style completion, then its generation).
    pub fn pass_rows_with(
        &self,
        units: &[Unit<'_>],
        stems: &[StemRead<'_>],
        top: usize,
        opts: PassOptions,
    ) -> Result<Vec<RowsOut>> {
        let model = &self.model;
        device::bind_to_thread(&model.device);
        let (prefixes, rows) = self.pool.install(|| {
            batch::run(model, units, stems, opts, true, |hidden, rows, reads| {
                read::rows(model, hidden, rows, reads, top)
            })
        })?;
        Ok(prefixes.into_iter().zip(rows).map(|(prefix, rows)| RowsOut { prefix, rows }).collect())
    }

    fn pass_in_pool(&self, units: &[Unit<'_>], opts: PassOptions) -> Result<Vec<UnitOut>> {
        let model = &self.model;
        let (prefixes, readouts) = batch::run(model, units, &[], opts, false, |hidden, rows, reads| {
            read::letters(model, hidden, rows, reads, opts.prune_head)
        })?;
        Ok(prefixes.into_iter().zip(readouts).map(|(prefix, readouts)| UnitOut { prefix, readouts }).collect())
    }

    /// Full next-token logits after `tokens` on `prefix` (for generation).
    pub fn next_logits(&self, prefix: &Prefix, tokens: &[u32]) -> Result<(Prefix, Vec<f32>)> {
        batch::next_logits(&self.model, prefix, tokens)
    }
}
