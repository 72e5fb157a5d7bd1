//! A Hugging Face directory's `tokenizer_config.json` (the special tokens' texts and the chat
//! template, in any of the forms transformers writes) and its `chat_template.jinja`: what the
//! chat template is rendered with, read apart from the weights.

use crate::error::{Error, Result};
use std::path::Path;

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
