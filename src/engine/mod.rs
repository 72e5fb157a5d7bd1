//! The readout engine: a loaded model, its tokenizer and chat template, and the one call the
//! readout needs — given a computed prefix and a set of suffixes, the logits of the answer
//! letters at the end of each suffix. The prefix is computed once; all suffixes of one prefix go
//! through the model in one pass under a tree mask; the LM head runs only at the read rows.

pub mod config;
pub mod kv;
pub(crate) mod load;
pub mod model;
pub mod synthetic;
pub mod tokenizer;

use crate::device::{self, DeviceRequest};
use crate::error::{Error, Result};
use crate::prompt::{ChatTemplate, LETTERS};
use candle_core::{Device, Tensor};
pub use config::{Architecture, ModelConfig};
pub use kv::Prefix;
pub use load::Metadata;
pub use model::MatmulPath;
use model::Transformer;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
pub use tokenizer::Tokenizer;

/// How to load a model.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub device: DeviceRequest,
    pub matmul: MatmulPath,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { device: DeviceRequest::Auto, matmul: MatmulPath::Dense }
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

/// Read a model's shape without loading its weights: the GGUF header (metadata and tensor
/// table) or a Hugging Face directory's `config.json`. For `readout derive` and the like.
pub fn read_metadata(path: &Path) -> Result<Metadata> {
    load::read_metadata(path)
}

/// A model ready to read out.
pub struct Engine {
    info: ModelInfo,
    model: Transformer,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    sha256: OnceLock<String>,
    /// Compute only the head rows of the letters read (`--prune-to`).
    prune_head: bool,
    /// Most new tokens in one forward pass.
    max_batch_tokens: usize,
}

impl Engine {
    /// Load a GGUF file or a Hugging Face directory.
    pub fn load(path: &Path, opts: &LoadOptions) -> Result<Self> {
        let device = device::select(opts.device)?;
        let loaded = load::load(path, &device, opts.matmul)?;
        let tokenizer = match &loaded.tokenizer_source {
            load::TokenizerSource::Json(p) => Tokenizer::from_json_file(p)?,
            load::TokenizerSource::Gguf(v) => Tokenizer::from_gguf(v, path)?,
        };
        let template =
            ChatTemplate::new(loaded.chat_template.clone(), loaded.bos_token.clone(), loaded.eos_token.clone(), path)?;
        let cfg = loaded.model.cfg.clone();
        let info = ModelInfo {
            name: loaded.name.clone(),
            path: path.to_path_buf(),
            architecture: cfg.architecture,
            quantisation: loaded.quantisation.clone(),
            parameters: cfg.parameter_count(),
            config: cfg,
            device: device::describe(&device),
            matmul: opts.matmul,
        };
        Ok(Engine {
            info,
            model: loaded.model,
            tokenizer,
            template,
            sha256: OnceLock::new(),
            prune_head: false,
            max_batch_tokens: 1024,
        })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
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

    /// Use only the letters' rows of the LM head.
    pub fn set_prune_head(&mut self, on: bool) {
        self.prune_head = on;
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
        if tokens.is_empty() {
            return Ok(parent.clone());
        }
        self.check_context(parent.len() + tokens.len())?;
        let mut cur = parent.clone();
        for chunk in tokens.chunks(self.max_batch_tokens) {
            let positions: Vec<u32> = (cur.len()..cur.len() + chunk.len()).map(|p| p as u32).collect();
            let mask = Transformer::tree_mask(cur.len(), &[chunk.len()], self.device())?;
            let (_, new_kv) = self.model.forward(chunk, &positions, &cur, &mask)?;
            cur = append(&cur, new_kv, chunk)?;
        }
        Ok(cur)
    }

    /// Read the letter logits at the end of every suffix, each computed on top of `prefix`.
    /// Suffixes of one batch go through the model together under a tree mask.
    pub fn read(&self, prefix: &Prefix, suffixes: &[Suffix<'_>]) -> Result<Vec<Readout>> {
        let mut out = Vec::with_capacity(suffixes.len());
        let mut start = 0;
        while start < suffixes.len() {
            let mut end = start;
            let mut total = 0;
            while end < suffixes.len() && (end == start || total + suffixes[end].tokens.len() <= self.max_batch_tokens)
            {
                total += suffixes[end].tokens.len();
                end += 1;
            }
            out.extend(self.read_batch(prefix, &suffixes[start..end])?);
            start = end;
        }
        Ok(out)
    }

    fn read_batch(&self, prefix: &Prefix, batch: &[Suffix<'_>]) -> Result<Vec<Readout>> {
        let lens: Vec<usize> = batch.iter().map(|s| s.tokens.len()).collect();
        if let Some(i) = lens.iter().position(|&l| l == 0) {
            return Err(Error::Candle(candle_core::Error::Msg(format!(
                "suffix {i} is empty; the plan must leave at least one token after the prefix"
            ))));
        }
        let longest = lens.iter().copied().max().unwrap_or(0);
        self.check_context(prefix.len() + longest)?;
        let mut tokens = Vec::with_capacity(lens.iter().sum());
        let mut positions = Vec::with_capacity(tokens.capacity());
        let mut rows = Vec::with_capacity(batch.len());
        for s in batch {
            tokens.extend_from_slice(s.tokens);
            positions.extend((prefix.len()..prefix.len() + s.tokens.len()).map(|p| p as u32));
            rows.push((tokens.len() - 1) as u32);
        }
        let mask = Transformer::tree_mask(prefix.len(), &lens, self.device())?;
        let (hidden, _) = self.model.forward(&tokens, &positions, prefix, &mask)?;
        if self.prune_head {
            let mut all: Vec<u32> = batch.iter().flat_map(|s| s.read.iter().copied()).collect();
            all.sort_unstable();
            all.dedup();
            let ids = Tensor::from_slice(&all, all.len(), self.device())?;
            let logits: Vec<Vec<f32>> = self.model.head_at(&hidden, &rows, Some(&ids))?.to_vec2()?;
            Ok(batch
                .iter()
                .zip(logits)
                .map(|(s, row)| Readout {
                    logits: s.read.iter().map(|id| row[all.binary_search(id).unwrap_or(0)]).collect(),
                    letter_mass: None,
                })
                .collect())
        } else {
            let logits: Vec<Vec<f32>> = self.model.head_at(&hidden, &rows, None)?.to_vec2()?;
            Ok(batch
                .iter()
                .zip(logits)
                .map(|(s, row)| {
                    let picked: Vec<f32> =
                        s.read.iter().map(|&id| row.get(id as usize).copied().unwrap_or(f32::NEG_INFINITY)).collect();
                    let mass = (crate::math::log_sum_exp(&picked) - crate::math::log_sum_exp(&row)).exp();
                    Readout { logits: picked, letter_mass: Some(mass) }
                })
                .collect())
        }
    }

    /// Full next-token logits after `tokens` on `prefix` (for generation).
    pub fn next_logits(&self, prefix: &Prefix, tokens: &[u32]) -> Result<(Prefix, Vec<f32>)> {
        if tokens.is_empty() {
            return Err(Error::Candle(candle_core::Error::Msg("next_logits needs at least one token".into())));
        }
        self.check_context(prefix.len() + tokens.len())?;
        let positions: Vec<u32> = (prefix.len()..prefix.len() + tokens.len()).map(|p| p as u32).collect();
        let mask = Transformer::tree_mask(prefix.len(), &[tokens.len()], self.device())?;
        let (hidden, new_kv) = self.model.forward(tokens, &positions, prefix, &mask)?;
        let logits = self.model.head_at(&hidden, &[(tokens.len() - 1) as u32], None)?.squeeze(0)?.to_vec1()?;
        Ok((append(prefix, new_kv, tokens)?, logits))
    }

    fn check_context(&self, tokens: usize) -> Result<()> {
        let context = self.info.config.context_length;
        if tokens > context {
            return Err(Error::ContextOverflow { tokens, context });
        }
        Ok(())
    }
}

fn append(parent: &Prefix, new_kv: Vec<kv::LayerKv>, tokens: &[u32]) -> Result<Prefix> {
    let layers = if parent.layers.is_empty() {
        new_kv
    } else {
        parent
            .layers
            .iter()
            .zip(new_kv)
            .map(|(p, n)| Ok(kv::LayerKv { k: Tensor::cat(&[&p.k, &n.k], 1)?, v: Tensor::cat(&[&p.v, &n.v], 1)? }))
            .collect::<candle_core::Result<Vec<_>>>()?
    };
    let mut all = parent.tokens.clone();
    all.extend_from_slice(tokens);
    Ok(Prefix { layers, tokens: all })
}
