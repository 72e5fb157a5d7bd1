//! The tokenizer, from `tokenizer.json` or built from GGUF metadata so that it tokenizes exactly
//! as llama.cpp does: a byte-level BPE over `tokenizer.ggml.tokens` / `merges`, with the
//! pre-tokenizer that `tokenizer.ggml.pre` names, and control tokens matched as specials.
//! (candle's own GGUF tokenizer adds a prefix space on SmolLM2; llama.cpp does not.)

use super::load::GgufVocab;
use crate::error::{Error, Result};
use serde_json::json;
use std::path::{Path, PathBuf};

/// A loaded tokenizer and the file it came from.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
    /// Prepend this id to every prompt (GGUF `add_bos_token`), unless the prompt starts with it.
    bos: Option<u32>,
}

// llama.cpp's pre-tokenizer regexes (llama-vocab.cpp), by `tokenizer.ggml.pre`.
const GPT2_RE: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
const QWEN2_RE: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const LLAMA3_RE: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

impl Tokenizer {
    /// Load a `tokenizer.json`.
    pub fn from_json_file(path: &Path) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| Error::Tokenizer { path: path.to_path_buf(), detail: e.to_string() })?;
        Ok(Tokenizer { inner, path: path.to_path_buf(), bos: None })
    }

    /// Build the tokenizer llama.cpp would use for this GGUF vocabulary.
    pub(crate) fn from_gguf(v: &GgufVocab, path: &Path) -> Result<Self> {
        let err = |detail: String| Error::Tokenizer { path: path.to_path_buf(), detail };
        if v.model != "gpt2" {
            return Err(err(format!(
                "tokenizer model `{}` is not supported from GGUF metadata (only byte-level BPE, `gpt2`); use a Hugging Face directory with tokenizer.json",
                v.model
            )));
        }
        let (pre, ignore_merges) = match v.pre.as_str() {
            "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva-7b" => (
                json!({"type": "Sequence", "pretokenizers": [
                    {"type": "Digits", "individual_digits": true},
                    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]}),
                false,
            ),
            "qwen2" | "qwen35" => (split_then_bytes(QWEN2_RE), false),
            "llama3" | "llama-bpe" | "llama-v3" | "smaug-bpe" => (split_then_bytes(LLAMA3_RE), true),
            "gpt-2" | "gpt2" | "default" | "phi-2" | "jina-es" | "jina-de" | "olmo" | "jais" => (split_then_bytes(GPT2_RE), false),
            other => return Err(err(format!("pre-tokenizer `{other}` (tokenizer.ggml.pre) is not supported; use a Hugging Face directory with tokenizer.json"))),
        };
        let mut vocab = serde_json::Map::with_capacity(v.tokens.len());
        let mut added = Vec::new();
        for (i, t) in v.tokens.iter().enumerate() {
            vocab.insert(t.clone(), json!(i));
            // 3 = control, 4 = user-defined: matched whole in the text, as llama.cpp does with special=true.
            let ty = v.token_types.get(i).copied().unwrap_or(1);
            if ty == 3 || ty == 4 {
                added.push(json!({"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": ty == 3}));
            }
        }
        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": null,
            "pre_tokenizer": pre,
            "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            "model": {
                "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": ignore_merges,
                "vocab": vocab, "merges": v.merges,
            }
        });
        let inner: tokenizers::Tokenizer = serde_json::from_value::<tokenizers::Tokenizer>(spec)
            .map_err(|e| err(format!("building BPE from metadata: {e}")))?;
        Ok(Tokenizer { inner, path: path.to_path_buf(), bos: if v.add_bos { v.bos_id } else { None } })
    }

    /// Token ids of `text`, special tokens matched, no post-processing.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| Error::Tokenizer { path: self.path.clone(), detail: format!("encoding failed: {e}") })?;
        let mut ids = enc.get_ids().to_vec();
        if let Some(b) = self.bos {
            if ids.first() != Some(&b) {
                ids.insert(0, b);
            }
        }
        Ok(ids)
    }

    /// Text of `ids`, special tokens kept.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| Error::Tokenizer { path: self.path.clone(), detail: format!("decoding failed: {e}") })
    }

    /// The id of `token` when it is one vocabulary entry.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Number of entries, specials included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Where the tokenizer came from (a tokenizer.json or the model file).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn split_then_bytes(re: &str) -> serde_json::Value {
    json!({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": re}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]})
}
