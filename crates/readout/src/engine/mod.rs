//! The readout engine: a loaded model, its tokenizer and chat template, and the one call the
//! readout needs — given a computed prefix and a set of suffixes, the logits of the answer
//! letters at the end of each suffix. The prefix is computed once; all suffixes of one prefix go
//! through the model in one pass under a tree mask; the LM head runs only at the read rows.

mod attention;
pub mod config;
pub mod device;
mod fused;
mod fused_cuda;
pub mod gguf;
mod int8;
pub mod kv;
pub(crate) mod load;
pub mod model;
mod project;
pub mod synthetic;
pub mod template;
pub mod tokenizer;
pub(crate) mod weights;

use crate::engine::template::{ChatTemplate, TemplateSource};
use crate::error::{Error, Result};
use candle_core::{Device, Tensor};
pub use config::{Architecture, ModelConfig};
use device::DeviceRequest;
pub use kv::Prefix;
pub use load::Metadata;
use model::Transformer;
pub use model::{AttentionPath, FusedKernels, KvCache, MatmulPath, Precision, WeightsMode};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
pub use tokenizer::Tokenizer;

/// The answer letters a readout reads, in order (option `i` is shown as letter `i`).
pub const LETTERS: [&str; 26] = [
    "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W",
    "X", "Y", "Z",
];

/// A device as its defaults see it (`RunConfig::resolve_for`): a test can describe a GPU
/// without having one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceProfile {
    /// A GPU (CUDA, Metal) rather than the CPU.
    pub gpu: bool,
    /// The CPU threads the engine's work runs on.
    pub threads: usize,
}

impl DeviceProfile {
    /// The pass options for the device: full head, trimmed, [`DEFAULT_PASS_TOKENS`] a pass on
    /// the CPU and [`GPU_PASS_TOKENS`] on a GPU, units grouped on a GPU only.
    pub fn pass_defaults(&self) -> PassOptions {
        PassOptions {
            prune_head: false,
            trim: true,
            pass_tokens: if self.gpu { GPU_PASS_TOKENS } else { DEFAULT_PASS_TOKENS },
            group_units: self.gpu,
        }
    }
}

/// How to load a model.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub device: DeviceRequest,
    pub matmul: MatmulPath,
    /// In the file's encoding, or expanded to f32 (`--weights`).
    pub weights: WeightsMode,
    /// 8-bit activations in the integer kernel (`--int8-activations`): faster, and answers move.
    pub int8_activations: bool,
    /// How the KV cache holds keys and values (`--kv-cache`).
    pub kv_cache: KvCache,
    /// The dense matmuls' arithmetic on a GPU (`--precision`): f32, TF32 or bf16.
    pub precision: Precision,
    /// How a pass's attention is computed on a GPU (`--attention`).
    pub attention: AttentionPath,
    /// A layer's element-wise steps in fused CUDA kernels (`--fused-kernels`).
    pub fused_kernels: FusedKernels,
    /// CPU threads for the engine's work (`--threads`); `None`: one per core.
    pub threads: Option<usize>,
    /// The chat template to read the model with (`--chat-template`); `None`: the model's own,
    /// and a model without one is refused.
    pub chat_template: Option<TemplateSource>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            device: DeviceRequest::Auto,
            matmul: MatmulPath::Dense,
            weights: WeightsMode::Auto,
            int8_activations: false,
            kv_cache: KvCache::Auto,
            precision: Precision::F32,
            attention: AttentionPath::Auto,
            fused_kernels: FusedKernels::Auto,
            threads: None,
            chat_template: None,
        }
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

/// How the engine makes its passes: chosen per call by the caller's configuration (a run's
/// levers), so a setting is applied where it is recorded. [`Engine::pass_defaults`] gives the
/// defaults for the engine's device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassOptions {
    /// The LM head cut to the letters read (`--prune-head`).
    pub prune_head: bool,
    /// Logits only at the read rows (on); off computes the full head at every row of a pass,
    /// as a plain forward does, to measure what trimming saves.
    pub trim: bool,
    /// Most new tokens in one forward pass (`--pass-tokens`).
    pub pass_tokens: usize,
    /// Units of one pass that share a parent run their attention together: on by default on a
    /// GPU, where fewer and larger kernels pay; off on the CPU, where the masked-out columns
    /// would cost arithmetic.
    pub group_units: bool,
}

/// Most new tokens in one pass unless the caller says otherwise.
pub const DEFAULT_PASS_TOKENS: usize = 1024;

/// Most new tokens in one pass on a GPU unless the caller says otherwise: there a pass costs
/// the host its launches whatever its size, so fewer, larger passes pay (on an H200 the
/// Qwen3-0.6B-shaped run takes 0.63 s with 1024, 0.54 s with 4096 and 0.52 s with 16384 tokens a
/// pass in TF32; the default model's twin 0.59, 0.50 and 0.46 s in f32, for 1 GiB more device memory:
/// bench/results/cuda/pass-tokens-authored144-cyclic-3shot-*-h200.json).
pub const GPU_PASS_TOKENS: usize = 16384;

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

/// A model ready to read out.
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
    let (loaded, weights, kv_cache, attention, fused_kernels) = pool.install(|| -> Result<_> {
        let weights = resolve_weights(opts.weights, &device, path)?;
        check_precision(opts.precision, &device, weights, opts.matmul)?;
        let attention = resolve_attention(opts.attention, &device)?;
        let fused_kernels = resolve_fused_kernels(opts.fused_kernels, &device)?;
        let hold = load::Hold {
            matmul: opts.matmul,
            native: weights == WeightsMode::Native,
            int8_activations: opts.int8_activations,
            bf16: opts.precision == Precision::Bf16,
        };
        let kv_cache = resolve_kv_cache(opts.kv_cache, &device)?;
        let mut loaded = load::load(path, &device, hold)?;
        loaded.model.kv_f16 = kv_cache == KvCache::F16;
        loaded.model.tf32 = opts.precision == Precision::Tf32;
        loaded.model.attention_kernel = attention == AttentionPath::Kernel;
        loaded.model.fused_kernels = fused_kernels == FusedKernels::On;
        Ok((loaded, weights, kv_cache, attention, fused_kernels))
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
        weights,
        activations: loaded.model.activations(),
        kv_cache,
        precision: opts.precision,
        attention,
        fused_kernels,
        source: None,
        // No template chosen yet ([`Engine::load`] chooses one; a [`BareModel`] renders nothing).
        chat_template: "none".into(),
        chat_template_sha256: String::new(),
    };
    Ok((loaded, info, pool))
}

/// Full next-token logits after `tokens` on `prefix`, and the prefix extended by them.
fn next_logits_of(model: &Transformer, context: usize, prefix: &Prefix, tokens: &[u32]) -> Result<(Prefix, Vec<f32>)> {
    if tokens.is_empty() {
        return Err(Error::Candle(candle_core::Error::Msg("next_logits needs at least one token".into())));
    }
    let total = prefix.len() + tokens.len();
    if total > context {
        return Err(Error::ContextOverflow { tokens: total, context });
    }
    let positions: Vec<u32> = (prefix.len()..total).map(|p| p as u32).collect();
    let mask = Transformer::stem_tree_mask(prefix.len(), tokens.len(), &[], &model.device)?;
    let seg = model::Segment { past: prefix, tokens: tokens.to_vec(), positions, mask };
    let (hidden, new_kv) = model.forward(std::slice::from_ref(&seg), &model::KeepKv::All)?;
    let logits = model.head_at(&hidden, &[(tokens.len() - 1) as u32], None)?.squeeze(0)?.to_vec1()?;
    Ok((prefix.push(new_kv, tokens), logits))
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
        let context = self.info.config.context_length;
        device::bind_to_thread(&self.model.device);
        self.pool.install(|| next_logits_of(&self.model, context, prefix, tokens))
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
        let chosen = crate::engine::template::choose(opts.chat_template.as_ref(), loaded.chat_template.clone(), path)?;
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

    /// Compute `tokens` on top of `parent`, giving a longer prefix. `parent` is unchanged.
    pub fn extend(&self, parent: &Prefix, tokens: &[u32]) -> Result<Prefix> {
        self.extend_with(parent, tokens, self.pass_defaults())
    }

    /// `extend` in passes of at most `opts.pass_tokens` tokens.
    pub fn extend_with(&self, parent: &Prefix, tokens: &[u32], opts: PassOptions) -> Result<Prefix> {
        // Refuse before computing anything: a long text must not cost minutes to be refused.
        self.check_context(parent.len() + tokens.len())?;
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
        let (prefixes, rows) = self
            .pool
            .install(|| self.pass_core(units, opts, true, |hidden, rows, reads| self.head_rows(hidden, rows, reads)))?;
        Ok(prefixes.into_iter().zip(rows).map(|(prefix, rows)| RowsOut { prefix, rows }).collect())
    }

    fn pass_in_pool(&self, units: &[Unit<'_>], opts: PassOptions) -> Result<Vec<UnitOut>> {
        let (prefixes, readouts) =
            self.pass_core(units, opts, false, |hidden, rows, reads| self.head(hidden, rows, reads, opts.prune_head))?;
        Ok(prefixes.into_iter().zip(readouts).map(|(prefix, readouts)| UnitOut { prefix, readouts }).collect())
    }

    /// The pass itself: every unit's prefix, and what `head` reads at each leaf's last row
    /// (`every_row`: at each of its rows), per unit in leaf order.
    #[allow(clippy::type_complexity)]
    fn pass_core<R>(
        &self,
        units: &[Unit<'_>],
        opts: PassOptions,
        every_row: bool,
        head: impl FnOnce(&Tensor, &[u32], &[&[u32]]) -> Result<Vec<R>>,
    ) -> Result<(Vec<Prefix>, Vec<Vec<R>>)> {
        let mut seg_tokens: Vec<Vec<u32>> = Vec::with_capacity(units.len());
        for u in units {
            if let Some(i) = u.leaves.iter().position(|l| l.tokens.is_empty()) {
                return Err(Error::Candle(candle_core::Error::Msg(format!(
                    "suffix {i} is empty; the plan must leave at least one token after the prefix"
                ))));
            }
            let longest = u.leaves.iter().map(|l| l.tokens.len()).max().unwrap_or(0);
            self.check_context(u.parent.len() + u.stem.len() + longest)?;
            let mut tokens = u.stem.to_vec();
            for l in &u.leaves {
                tokens.extend_from_slice(l.tokens);
            }
            seg_tokens.push(tokens);
        }
        // Units with nothing to compute give their parent back and take no part in the pass.
        let busy: Vec<usize> = (0..units.len()).filter(|&i| !seg_tokens[i].is_empty()).collect();
        // One segment per unit, or (grouping on) one per set of units on the same parent: their
        // attention then runs as one, under a mask that keeps each unit to its parent and its own
        // tokens — fewer, larger kernels, which is what a GPU wants.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &i in &busy {
            let same = |g: &&mut Vec<usize>| units[g[0]].parent.same_as(units[i].parent);
            match groups.iter_mut().find(|g| opts.group_units && same(g)) {
                Some(g) => g.push(i),
                None => groups.push(vec![i]),
            }
        }
        let mut read_rows: Vec<u32> = Vec::new();
        let mut read_owner: Vec<usize> = Vec::new();
        let mut reads: Vec<&[u32]> = Vec::new();
        // Per unit: its segment and where its tokens start in it.
        let mut placed: Vec<(usize, usize)> = vec![(0, 0); units.len()];
        let mut offset = 0usize;
        let mut segs = Vec::with_capacity(groups.len());
        for (si, group) in groups.iter().enumerate() {
            let base = units[group[0]].parent.len();
            let (mut tokens, mut positions, mut parts) = (Vec::new(), Vec::new(), Vec::with_capacity(group.len()));
            for &i in group {
                let u = &units[i];
                placed[i] = (si, tokens.len());
                positions.extend((base..base + u.stem.len()).map(|p| p as u32));
                let mut end = offset + tokens.len() + u.stem.len();
                for l in &u.leaves {
                    let at = base + u.stem.len();
                    positions.extend((at..at + l.tokens.len()).map(|p| p as u32));
                    end += l.tokens.len();
                    let first = if every_row { end - l.tokens.len() } else { end - 1 };
                    for row in first..end {
                        read_rows.push(row as u32);
                        read_owner.push(i);
                        reads.push(l.read);
                    }
                }
                tokens.extend_from_slice(&seg_tokens[i]);
                parts.push((u.stem.len(), u.leaves.iter().map(|l| l.tokens.len()).collect::<Vec<_>>()));
            }
            let mask = Transformer::grouped_tree_mask(base, &parts, self.device())?;
            offset += tokens.len();
            segs.push(model::Segment { past: units[group[0]].parent, tokens, positions, mask });
        }
        // Per unit: its prefix (the parent until the stem is kept) and what was read.
        let mut out: Vec<(Prefix, Vec<R>)> = units.iter().map(|u| (u.parent.clone(), vec![])).collect();
        if segs.is_empty() {
            return Ok(out.into_iter().unzip());
        }
        let seg_lens: Vec<usize> = segs.iter().map(|g| g.tokens.len()).collect();
        let past_chunks: usize = segs.iter().map(|g| g.past.chunks.len()).sum();
        let started = std::time::Instant::now();
        // The kept stems' keys and values, `[kv_heads, n, hd]` each: one gather a layer for all
        // of them, inside the forward (rows `(unit, head, token)`, each unit's block contiguous),
        // not a copy a unit.
        let rows_total: usize = seg_lens.iter().sum();
        let mut seg_start = Vec::with_capacity(seg_lens.len());
        let mut acc = 0;
        for &n in &seg_lens {
            seg_start.push(acc);
            acc += n;
        }
        let kept: Vec<(usize, usize, usize)> = busy
            .iter()
            .filter(|&&i| !units[i].stem.is_empty() && units[i].keep)
            .map(|&i| (i, seg_start[placed[i].0] + placed[i].1, units[i].stem.len()))
            .collect();
        let (kvh, hd) = (self.info.config.num_kv_heads, self.info.config.head_dim);
        let keep = match &kept[..] {
            [] => model::KeepKv::Nothing,
            &[(_, 0, n)] if n == rows_total => model::KeepKv::All,
            _ => {
                let blocks: Vec<(usize, usize)> = kept.iter().map(|&(_, at, n)| (at, n)).collect();
                let idx = model::block_head_rows(&blocks, kvh, rows_total);
                model::KeepKv::Rows(Tensor::from_slice(&idx, idx.len(), self.device())?)
            }
        };
        let (hidden, new_kv) = self.model.forward(&segs, &keep)?;
        // On a GPU the forward only queues its kernels; the head below waits for them. So the
        // two times say whether a pass is bound by the host issuing kernels or by the device.
        let queued = started.elapsed();
        drop(segs);
        if !opts.trim {
            // What an untrimmed forward pays: the full head at every row (the values are the same
            // at the read rows, so they are read below as usual).
            let all: Vec<u32> = (0..hidden.dim(0)? as u32).collect();
            let _ = self.model.head_at(&hidden, &all, None)?;
        }
        if !read_rows.is_empty() {
            for (r, &i) in head(&hidden, &read_rows, &reads)?.into_iter().zip(&read_owner) {
                out[i].1.push(r);
            }
        }
        let read = started.elapsed();
        match keep {
            model::KeepKv::Nothing => {}
            // One unit is the whole pass: its keys and values as they are.
            model::KeepKv::All => {
                let i = kept[0].0;
                out[i].0 = units[i].parent.push(new_kv, units[i].stem);
            }
            // Each kept unit's block of the gathered rows.
            model::KeepKv::Rows(_) => {
                let mut off = 0;
                for &(i, _, n) in &kept {
                    let layers = new_kv
                        .iter()
                        .map(|l| {
                            Ok(kv::LayerKv {
                                k: l.k.narrow(0, off, kvh * n)?.reshape((kvh, n, hd))?,
                                v: l.v.narrow(0, off, kvh * n)?.reshape((kvh, n, hd))?,
                            })
                        })
                        .collect::<candle_core::Result<Vec<_>>>()?;
                    off += kvh * n;
                    out[i].0 = units[i].parent.push(layers, units[i].stem);
                }
            }
        }
        tracing::debug!(
            units = busy.len(),
            kept = kept.len(),
            segments = seg_lens.len(),
            past_chunks,
            rows = rows_total,
            forward_queued_ms = queued.as_secs_f64() * 1e3,
            read_ms = read.as_secs_f64() * 1e3,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "pass"
        );
        Ok(out.into_iter().unzip())
    }

    /// Letter logits at `rows` of `hidden`; `reads[i]` are the tokens read at `rows[i]`.
    fn head(&self, hidden: &Tensor, rows: &[u32], reads: &[&[u32]], prune: bool) -> Result<Vec<Readout>> {
        if prune {
            let mut all: Vec<u32> = reads.iter().flat_map(|r| r.iter().copied()).collect();
            all.sort_unstable();
            all.dedup();
            let logits: Vec<Vec<f32>> = self.model.head_at(hidden, rows, Some(&all))?.to_vec2()?;
            Ok(reads
                .iter()
                .zip(logits)
                .map(|(read, row)| Readout {
                    logits: read.iter().map(|id| row[all.binary_search(id).unwrap_or(0)]).collect(),
                    letter_mass: None,
                })
                .collect())
        } else if !self.device().is_cpu() {
            // On a GPU the full rows stay there: only the letters' logits and each row's
            // log-sum-exp over the vocabulary come back.
            let mut all: Vec<u32> = reads.iter().flat_map(|r| r.iter().copied()).collect();
            all.sort_unstable();
            all.dedup();
            let ids = Tensor::from_slice(&all, all.len(), self.device())?;
            let logits = self.model.head_at(hidden, rows, None)?;
            let m = logits.max_keepdim(1)?;
            let lse = (logits.broadcast_sub(&m)?.exp()?.sum_keepdim(1)?.log()? + &m)?.squeeze(1)?.to_vec1::<f32>()?;
            let picked: Vec<Vec<f32>> = logits.index_select(&ids, 1)?.to_vec2()?;
            Ok(reads
                .iter()
                .zip(picked.iter().zip(lse))
                .map(|(read, (row, lse))| {
                    let picked: Vec<f32> = read.iter().map(|id| row[all.binary_search(id).unwrap_or(0)]).collect();
                    let mass = (crate::math::log_sum_exp(&picked) - lse).exp();
                    Readout { logits: picked, letter_mass: Some(mass) }
                })
                .collect())
        } else {
            // A few rows at a time: a row of full logits is the vocabulary in f32 (600 KB for
            // Qwen3's), and a pass reads hundreds of rows; only the letters' logits and the
            // row's mass on them are kept.
            let mut out = Vec::with_capacity(rows.len());
            for (rows, reads) in rows.chunks(HEAD_ROWS).zip(reads.chunks(HEAD_ROWS)) {
                let logits: Vec<Vec<f32>> = self.model.head_at(hidden, rows, None)?.to_vec2()?;
                out.extend(reads.iter().zip(logits).map(|(read, row)| {
                    let picked: Vec<f32> =
                        read.iter().map(|&id| row.get(id as usize).copied().unwrap_or(f32::NEG_INFINITY)).collect();
                    let mass = (crate::math::log_sum_exp(&picked) - crate::math::log_sum_exp(&row)).exp();
                    Readout { logits: picked, letter_mass: Some(mass) }
                }));
            }
            Ok(out)
        }
    }

    /// The full next-token distribution at `rows` of `hidden`, reduced to a [`TokenRead`] each
    /// (`reads[i]`: the tokens whose logits row `i` keeps). A few rows at a time, as [`Self::head`]
    /// does on the CPU: a row is the whole vocabulary in f32.
    fn head_rows(&self, hidden: &Tensor, rows: &[u32], reads: &[&[u32]]) -> Result<Vec<TokenRead>> {
        let mut out = Vec::with_capacity(rows.len());
        for (rows, reads) in rows.chunks(HEAD_ROWS).zip(reads.chunks(HEAD_ROWS)) {
            let logits: Vec<Vec<f32>> = self.model.head_at(hidden, rows, None)?.to_vec2()?;
            out.extend(reads.iter().zip(logits).map(|(read, row)| token_read(&row, read)));
        }
        Ok(out)
    }

    /// Full next-token logits after `tokens` on `prefix` (for generation).
    pub fn next_logits(&self, prefix: &Prefix, tokens: &[u32]) -> Result<(Prefix, Vec<f32>)> {
        next_logits_of(&self.model, self.info.config.context_length, prefix, tokens)
    }

    fn check_context(&self, tokens: usize) -> Result<()> {
        let context = self.info.config.context_length;
        if tokens > context {
            return Err(Error::ContextOverflow { tokens, context });
        }
        Ok(())
    }
}

/// A row of full-vocabulary logits reduced to a [`TokenRead`]: the log-normaliser summed in
/// f64, the first maximum, and the logits of `read` (−∞ for an id past the vocabulary).
pub fn token_read(row: &[f32], read: &[u32]) -> TokenRead {
    let (mut argmax, mut best) = (0u32, f32::NEG_INFINITY);
    for (i, &x) in row.iter().enumerate() {
        if x > best {
            (argmax, best) = (i as u32, x);
        }
    }
    let m = best as f64;
    let log_norm = if m.is_finite() { m + row.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln() } else { m };
    let logits = read.iter().map(|&id| row.get(id as usize).copied().unwrap_or(f32::NEG_INFINITY)).collect();
    TokenRead { log_norm, argmax, logits }
}

/// Rows of full-vocabulary logits computed at once on the CPU ([`Engine::head`]). A row's
/// logits do not depend on the rows computed with it (`Transformer::head_at`).
const HEAD_ROWS: usize = 32;

/// `--weights auto` made concrete for `device`: native on the CPU and on Metal (whose memory is
/// the system's); on CUDA native when f32 weights would take more than half of the device's free
/// memory, f32 otherwise.
fn resolve_weights(mode: WeightsMode, device: &Device, path: &Path) -> Result<WeightsMode> {
    match mode {
        WeightsMode::Auto if device.is_cuda() => {
            let f32_bytes = load::read_metadata(path)?.config.parameter_count().saturating_mul(4);
            Ok(match device::free_memory(device) {
                Some(free) if f32_bytes > free / 2 => WeightsMode::Native,
                _ => WeightsMode::F32,
            })
        }
        WeightsMode::Auto => Ok(WeightsMode::Native),
        mode => Ok(mode),
    }
}

/// `--precision` where it can be had: TF32 and bf16 are CUDA's (cuBLAS's math mode, its bf16
/// GEMM); the CPU's matmuls are f32 (or the integer kernel's) and Metal's are not wired to them.
/// bf16 holds dense weights in bf16, so it needs them dense: native weights on a GPU are
/// candle's quantised kernels, which take f32 inputs.
fn check_precision(precision: Precision, device: &Device, weights: WeightsMode, matmul: MatmulPath) -> Result<()> {
    if precision == Precision::F32 {
        return Ok(());
    }
    if !device.is_cuda() {
        let on = if device.is_cpu() { "the CPU" } else { "this GPU" };
        return Err(Error::Config(format!(
            "--precision {} needs a CUDA GPU; on {on} the matmuls are f32 (use --precision f32, or --device cuda)",
            precision.as_str()
        )));
    }
    if precision == Precision::Bf16 && matmul != MatmulPath::Dense {
        return Err(Error::Config(format!(
            "--precision bf16 is for the dense matmuls, and --matmul {} uses candle's quantised kernels: use --matmul dense",
            matmul.as_str()
        )));
    }
    if precision == Precision::Bf16 && weights == WeightsMode::Native {
        return Err(Error::Config(
            "--precision bf16 holds dense weights in bf16, and the weights were kept in the file's encoding \
             (--weights native, or auto for a model too large for f32 on this GPU): use --weights f32, or --precision tf32"
                .into(),
        ));
    }
    Ok(())
}

/// `--attention auto` resolved: the kernel on a CUDA GPU (one launch a layer instead of several
/// a segment; faster on the models docs/gpu.md's CUDA table measures), the matmuls elsewhere;
/// `kernel` asked for off CUDA is refused.
fn resolve_attention(mode: AttentionPath, device: &Device) -> Result<AttentionPath> {
    match mode {
        AttentionPath::Auto if device.is_cuda() => Ok(AttentionPath::Kernel),
        AttentionPath::Auto => Ok(AttentionPath::Matmuls),
        AttentionPath::Kernel if !device.is_cuda() => Err(Error::Config(
            "--attention kernel is a CUDA kernel; elsewhere attention runs as matmuls (use --attention matmuls or auto)"
                .into(),
        )),
        mode => Ok(mode),
    }
}

/// `--fused-kernels auto` resolved: on on a CUDA GPU, off elsewhere; `on` asked for off CUDA is
/// refused.
fn resolve_fused_kernels(mode: FusedKernels, device: &Device) -> Result<FusedKernels> {
    match mode {
        FusedKernels::Auto if device.is_cuda() => Ok(FusedKernels::On),
        FusedKernels::Auto => Ok(FusedKernels::Off),
        FusedKernels::On if !device.is_cuda() => Err(Error::Config(
            "--fused-kernels on is for CUDA GPUs; the CPU has fused loops of its own (use --fused-kernels off or auto)"
                .into(),
        )),
        mode => Ok(mode),
    }
}

/// `--kv-cache auto` made concrete: f16 on the CPU, f32 on a GPU (whose cache is f32 only).
fn resolve_kv_cache(mode: KvCache, device: &Device) -> Result<KvCache> {
    match mode {
        KvCache::Auto if device.is_cpu() => Ok(KvCache::F16),
        KvCache::Auto => Ok(KvCache::F32),
        KvCache::F16 if !device.is_cpu() => Err(Error::Config(
            "--kv-cache f16 is for the CPU; on a GPU the KV cache is f32 (use --kv-cache auto or f32)".into(),
        )),
        mode => Ok(mode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_auto_is_the_matmuls_on_the_cpu_and_the_kernel_is_refused_there() {
        let cpu = Device::Cpu;
        assert_eq!(resolve_attention(AttentionPath::Auto, &cpu).unwrap(), AttentionPath::Matmuls);
        assert_eq!(resolve_attention(AttentionPath::Matmuls, &cpu).unwrap(), AttentionPath::Matmuls);
        let e = resolve_attention(AttentionPath::Kernel, &cpu).unwrap_err().to_string();
        assert!(e.contains("--attention matmuls or auto"), "{e}");
    }

    #[test]
    fn fused_kernels_auto_is_off_on_the_cpu_and_on_is_refused_there() {
        let cpu = Device::Cpu;
        assert_eq!(resolve_fused_kernels(FusedKernels::Auto, &cpu).unwrap(), FusedKernels::Off);
        assert_eq!(resolve_fused_kernels(FusedKernels::Off, &cpu).unwrap(), FusedKernels::Off);
        let e = resolve_fused_kernels(FusedKernels::On, &cpu).unwrap_err().to_string();
        assert!(e.contains("--fused-kernels off or auto"), "{e}");
        assert_eq!("on".parse::<FusedKernels>(), Ok(FusedKernels::On));
        assert_eq!(
            "yes".parse::<FusedKernels>(),
            Err("unknown fused-kernels setting `yes` (expected on, off or auto)".into())
        );
    }

    #[test]
    fn option_names_round_trip_and_a_wrong_one_says_what_is_expected() {
        for m in [MatmulPath::Dense, MatmulPath::Quantized, MatmulPath::Auto] {
            assert_eq!(m.as_str().parse::<MatmulPath>(), Ok(m));
        }
        for w in [WeightsMode::Native, WeightsMode::F32, WeightsMode::Auto] {
            assert_eq!(w.as_str().parse::<WeightsMode>(), Ok(w));
        }
        for k in [KvCache::F16, KvCache::F32, KvCache::Auto] {
            assert_eq!(k.as_str().parse::<KvCache>(), Ok(k));
        }
        for p in [Precision::F32, Precision::Tf32, Precision::Bf16] {
            assert_eq!(p.as_str().parse::<Precision>(), Ok(p));
        }
        assert_eq!(
            "f16".parse::<Precision>(),
            Err("unknown matmul precision `f16` (expected f32, tf32 or bf16)".into())
        );
        assert_eq!(
            "bf16".parse::<KvCache>(),
            Err("unknown KV cache precision `bf16` (expected f16, f32 or auto)".into())
        );
        assert_eq!("q4".parse::<WeightsMode>(), Err("unknown weights mode `q4` (expected native, f32 or auto)".into()));
    }

    #[test]
    fn reduced_precision_is_refused_off_cuda_and_bf16_needs_dense_weights() {
        let cpu = Device::Cpu;
        assert!(check_precision(Precision::F32, &cpu, WeightsMode::Native, MatmulPath::Dense).is_ok());
        for p in [Precision::Tf32, Precision::Bf16] {
            let e = check_precision(p, &cpu, WeightsMode::F32, MatmulPath::Dense).unwrap_err().to_string();
            assert!(e.contains("needs a CUDA GPU") && e.contains(p.as_str()), "{e}");
        }
    }

    #[test]
    fn token_read_normalises_over_the_whole_row_and_takes_the_first_maximum() {
        // log(e^0 + e^ln2 + e^ln2) = log 5; the first of the two maxima is index 1.
        let row = [0.0f32, 2f32.ln(), 2f32.ln()];
        let r = token_read(&row, &[2, 0, 7]);
        assert!((r.log_norm - 5f64.ln()).abs() < 1e-6, "{}", r.log_norm);
        assert_eq!(r.argmax, 1);
        assert_eq!(r.logits, vec![2f32.ln(), 0.0, f32::NEG_INFINITY]);
    }

    #[test]
    fn a_group_of_one_is_the_stem_tree_mask() {
        for (past, stem, lens) in [(2, 0, vec![2, 1]), (1, 2, vec![1, 2]), (0, 3, vec![]), (4, 1, vec![3])] {
            let a: Vec<Vec<f32>> =
                Transformer::stem_tree_mask(past, stem, &lens, &Device::Cpu).unwrap().to_vec2().unwrap();
            let b: Vec<Vec<f32>> =
                Transformer::grouped_tree_mask(past, &[(stem, lens.clone())], &Device::Cpu).unwrap().to_vec2().unwrap();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn grouped_units_see_the_parent_and_only_their_own_tokens() {
        // past 1; unit one: stem 1, a leaf of 1; unit two: no stem, leaves of 1 and 1.
        let m: Vec<Vec<f32>> = Transformer::grouped_tree_mask(1, &[(1, vec![1]), (0, vec![1, 1])], &Device::Cpu)
            .unwrap()
            .to_vec2()
            .unwrap();
        let seen = |r: usize| m[r].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>();
        assert_eq!(seen(0), vec![1, 1, 0, 0, 0]);
        assert_eq!(seen(1), vec![1, 1, 1, 0, 0]);
        assert_eq!(seen(2), vec![1, 0, 0, 1, 0]);
        assert_eq!(seen(3), vec![1, 0, 0, 0, 1]);
    }
}
