//! Which chat template a model is read with, and where it came from: the model's own (GGUF
//! `tokenizer.chat_template`, an HF directory's `chat_template.jinja` or `tokenizer_config.json`),
//! a family named by the user (`--chat-template gemma`), or a Jinja file the user gives. A model
//! without a template of its own is refused with the names on offer, never quietly given one:
//! the template decides every prompt, so it is chosen knowingly and recorded (its name and the
//! sha256 of its source) in the result file.
//!
//! The families are llama.cpp's (`llm_chat_template` in `llama-chat.cpp`), under its names, each
//! written as a Jinja source that renders exactly what llama.cpp's C++ formatter writes for the
//! same messages, generation prompt included: no BOS (the tokenizer adds it, as llama.cpp's
//! does), contents trimmed where llama.cpp trims them. Jinja's `trim` strips Unicode white space
//! and llama.cpp's ASCII white space only; Readout's prompts start and end with neither.

use crate::error::{Error, Result};
use minijinja::{context, Environment};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One chat message.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        Message { role: role.to_string(), content: content.into() }
    }
}

/// A model's chat template, ready to render.
pub struct ChatTemplate {
    env: Environment<'static>,
    source_path: PathBuf,
    source: String,
    bos: String,
    eos: String,
}

impl ChatTemplate {
    /// Compile the chosen template (`template::choose`: the model's own, a named family or a
    /// file); errors name where it came from.
    pub fn new(chosen: &ChosenTemplate, bos: Option<String>, eos: Option<String>) -> Result<Self> {
        let path = chosen.origin.as_path();
        let mut env = Environment::new();
        minijinja_contrib::add_to_environment(&mut env);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> std::result::Result<String, minijinja::Error> {
            Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg))
        });
        env.add_function("strftime_now", |_fmt: String| "1 January 2026".to_string());
        env.add_template_owned("chat", chosen.source.clone())
            .map_err(|e| Error::ChatTemplate { path: path.to_path_buf(), detail: e.to_string() })?;
        Ok(ChatTemplate {
            env,
            source_path: path.to_path_buf(),
            source: chosen.source.clone(),
            bos: bos.unwrap_or_default(),
            eos: eos.unwrap_or_default(),
        })
    }

    /// Render messages with the generation prompt and thinking off.
    pub fn render(&self, messages: &[Message]) -> Result<String> {
        let tpl = self.env.get_template("chat").map_err(|e| self.err(e))?;
        tpl.render(context! {
            messages => messages,
            add_generation_prompt => true,
            enable_thinking => false,
            bos_token => self.bos,
            eos_token => self.eos,
        })
        .map_err(|e| self.err(e))
    }

    /// The template's Jinja source (what a client renders the same chats with).
    pub fn source(&self) -> &str {
        &self.source
    }

    fn err(&self, e: minijinja::Error) -> Error {
        Error::ChatTemplate { path: self.source_path.clone(), detail: format!("rendering failed: {e:#}") }
    }
}

/// Where the chat template comes from when the model's own is not wanted (`--chat-template`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSource {
    /// A family llama.cpp knows, by its name ([`NAMES`]).
    Name(String),
    /// A Jinja file.
    File(PathBuf),
}

impl std::str::FromStr for TemplateSource {
    type Err = String;
    /// A known family's name, else a file's path (checked when the model loads).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s.is_empty() {
            return Err(format!("name a chat template ({}) or a Jinja file", NAMES.join(", ")));
        }
        Ok(match builtin(s) {
            Some(_) => TemplateSource::Name(s.to_string()),
            None => TemplateSource::File(PathBuf::from(s)),
        })
    }
}

/// The chat template a model is read with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenTemplate {
    /// The family's name, `file:NAME` for a file the user gave, or `model` for the model's own.
    pub name: String,
    /// The Jinja source.
    pub source: String,
    /// Hex sha256 of the source's UTF-8 bytes.
    pub sha256: String,
    /// What errors in rendering name: the template file, or the model.
    pub origin: PathBuf,
}

/// Pick the template: the one asked for, else the model's own; refuse a model with neither.
/// `model` names the model in errors.
pub fn choose(asked: Option<&TemplateSource>, own: Option<String>, model: &Path) -> Result<ChosenTemplate> {
    let (name, source, origin) = match asked {
        Some(TemplateSource::Name(n)) => {
            let source = builtin(n).ok_or_else(|| Error::NoChatTemplate {
                path: model.to_path_buf(),
                detail: format!("`{n}` is not a chat template Readout knows"),
                names: NAMES.join(", "),
                asked: Some(n.clone()),
            })?;
            (n.clone(), source.to_string(), model.to_path_buf())
        }
        Some(TemplateSource::File(p)) => {
            let source = std::fs::read_to_string(p).map_err(|e| Error::NoChatTemplate {
                path: model.to_path_buf(),
                detail: format!("`{}` is neither a chat template Readout knows nor a readable file ({e})", p.display()),
                names: NAMES.join(", "),
                asked: Some(p.display().to_string()),
            })?;
            let file =
                p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string());
            (format!("file:{file}"), source, p.clone())
        }
        None => match own {
            Some(source) => ("model".to_string(), source, model.to_path_buf()),
            None => {
                return Err(Error::NoChatTemplate {
                    path: model.to_path_buf(),
                    detail: "the model carries no chat template (a base model?)".into(),
                    names: NAMES.join(", "),
                    asked: None,
                })
            }
        },
    };
    let sha256 = crate::hash::sha256_bytes(source.as_bytes());
    Ok(ChosenTemplate { name, source, sha256, origin })
}

/// The family whose template a model of `architecture` (GGUF `general.architecture`) most
/// likely expects, for a model that carries none: only where the architecture settles it
/// (Gemma's own turns; Qwen's ChatML). Llama and Mistral models have had several formats, so
/// none is guessed for them.
pub fn guess(architecture: &str) -> Option<&'static str> {
    match architecture {
        a if a.starts_with("gemma") => Some("gemma"),
        a if a.starts_with("qwen") => Some("chatml"),
        _ => None,
    }
}

/// The Jinja source of a known family.
pub fn builtin(name: &str) -> Option<&'static str> {
    FAMILIES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The names of the known families, in [`FAMILIES`]' order.
pub const NAMES: [&str; 24] = [
    "chatml",
    "gemma",
    "llama2",
    "llama2-sys",
    "llama3",
    "llama4",
    "mistral-v1",
    "mistral-v3",
    "mistral-v3-tekken",
    "mistral-v7",
    "mistral-v7-tekken",
    "phi3",
    "phi4",
    "falcon3",
    "zephyr",
    "monarch",
    "vicuna",
    "vicuna-orca",
    "deepseek",
    "deepseek2",
    "deepseek3",
    "command-r",
    "exaone3",
    "granite",
];

/// The families as Jinja, each rendering what llama.cpp's formatter of that name writes.
/// (llama2 and the mistral family have no generation prompt: the user turn ends in `[/INST]`.)
pub const FAMILIES: [(&str, &str); 24] = [
    (
        "chatml",
        "{%- for message in messages -%}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}{%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}",
    ),
    (
        // No system turn: the system messages, trimmed, open the first user turn.
        "gemma",
        "{%- set ns = namespace(system='') -%}\
         {%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{%- set ns.system = ns.system + (message['content'] | trim) -%}\
         {%- else -%}\
         {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}\
         {{- '<start_of_turn>' + role + '\\n' -}}\
         {%- if ns.system != '' and role != 'model' -%}{{- ns.system + '\\n\\n' -}}{%- set ns.system = '' -%}{%- endif -%}\
         {{- (message['content'] | trim) + '<end_of_turn>\\n' -}}\
         {%- endif -%}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}",
    ),
    (
        // The system message without <<SYS>>, a line of the first [INST].
        "llama2",
        "{{- '[INST] ' -}}{%- set ns = namespace(open=true) -%}\
         {%- for message in messages -%}\
         {%- if not ns.open -%}{{- '[INST] ' -}}{%- set ns.open = true -%}{%- endif -%}\
         {%- if message['role'] == 'system' -%}{{- message['content'] + '\\n' -}}\
         {%- elif message['role'] == 'user' -%}{{- message['content'] + ' [/INST]' -}}\
         {%- else -%}{{- message['content'] + '</s>' -}}{%- set ns.open = false -%}{%- endif -%}\
         {%- endfor -%}",
    ),
    (
        "llama2-sys",
        "{{- '[INST] ' -}}{%- set ns = namespace(open=true) -%}\
         {%- for message in messages -%}\
         {%- if not ns.open -%}{{- '[INST] ' -}}{%- set ns.open = true -%}{%- endif -%}\
         {%- if message['role'] == 'system' -%}{{- '<<SYS>>\\n' + message['content'] + '\\n<</SYS>>\\n\\n' -}}\
         {%- elif message['role'] == 'user' -%}{{- message['content'] + ' [/INST]' -}}\
         {%- else -%}{{- message['content'] + '</s>' -}}{%- set ns.open = false -%}{%- endif -%}\
         {%- endfor -%}",
    ),
    (
        "llama3",
        "{%- for message in messages -%}\
         {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + (message['content'] | trim) + '<|eot_id|>' -}}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}{%- endif -%}",
    ),
    (
        "llama4",
        "{%- for message in messages -%}\
         {{- '<|header_start|>' + message['role'] + '<|header_end|>\\n\\n' + (message['content'] | trim) + '<|eot|>' -}}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|header_start|>assistant<|header_end|>\\n\\n' -}}{%- endif -%}",
    ),
    ("mistral-v1", MISTRAL_V1),
    ("mistral-v3", MISTRAL_V3),
    ("mistral-v3-tekken", MISTRAL_V3_TEKKEN),
    (
        "mistral-v7",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- '[SYSTEM_PROMPT] ' + message['content'] + '[/SYSTEM_PROMPT]' -}}\
         {%- elif message['role'] == 'user' -%}{{- '[INST] ' + message['content'] + '[/INST]' -}}\
         {%- else -%}{{- ' ' + message['content'] + '</s>' -}}{%- endif -%}\
         {%- endfor -%}",
    ),
    (
        "mistral-v7-tekken",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- '[SYSTEM_PROMPT]' + message['content'] + '[/SYSTEM_PROMPT]' -}}\
         {%- elif message['role'] == 'user' -%}{{- '[INST]' + message['content'] + '[/INST]' -}}\
         {%- else -%}{{- message['content'] + '</s>' -}}{%- endif -%}\
         {%- endfor -%}",
    ),
    (
        "phi3",
        "{%- for message in messages -%}{{- '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' -}}{%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|assistant|>\\n' -}}{%- endif -%}",
    ),
    (
        "phi4",
        "{%- for message in messages -%}{{- '<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + '<|im_end|>' -}}{%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|im_start|>assistant<|im_sep|>' -}}{%- endif -%}",
    ),
    (
        "falcon3",
        "{%- for message in messages -%}{{- '<|' + message['role'] + '|>\\n' + message['content'] + '\\n' -}}{%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|assistant|>\\n' -}}{%- endif -%}",
    ),
    (
        "zephyr",
        "{%- for message in messages -%}{{- '<|' + message['role'] + '|>\\n' + message['content'] + '<|endoftext|>\\n' -}}{%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|assistant|>\\n' -}}{%- endif -%}",
    ),
    (
        // The first message without the <s> the later ones carry.
        "monarch",
        "{%- for message in messages -%}{{- ('' if loop.first else '<s>') + message['role'] + '\\n' + message['content'] + '</s>\\n' -}}{%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<s>assistant\\n' -}}{%- endif -%}",
    ),
    (
        "vicuna",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- message['content'] + '\\n\\n' -}}\
         {%- elif message['role'] == 'user' -%}{{- 'USER: ' + message['content'] + '\\n' -}}\
         {%- elif message['role'] == 'assistant' -%}{{- 'ASSISTANT: ' + message['content'] + '</s>\\n' -}}{%- endif -%}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- 'ASSISTANT:' -}}{%- endif -%}",
    ),
    (
        "vicuna-orca",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- 'SYSTEM: ' + message['content'] + '\\n' -}}\
         {%- elif message['role'] == 'user' -%}{{- 'USER: ' + message['content'] + '\\n' -}}\
         {%- elif message['role'] == 'assistant' -%}{{- 'ASSISTANT: ' + message['content'] + '</s>\\n' -}}{%- endif -%}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- 'ASSISTANT:' -}}{%- endif -%}",
    ),
    (
        "deepseek",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- message['content'] -}}\
         {%- elif message['role'] == 'user' -%}{{- '### Instruction:\\n' + message['content'] + '\\n' -}}\
         {%- elif message['role'] == 'assistant' -%}{{- '### Response:\\n' + message['content'] + '\\n<|EOT|>\\n' -}}{%- endif -%}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '### Response:\\n' -}}{%- endif -%}",
    ),
    (
        "deepseek2",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- message['content'] + '\\n\\n' -}}\
         {%- elif message['role'] == 'user' -%}{{- 'User: ' + message['content'] + '\\n\\n' -}}\
         {%- elif message['role'] == 'assistant' -%}{{- 'Assistant: ' + message['content'] + '<｜end▁of▁sentence｜>' -}}{%- endif -%}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}",
    ),
    (
        "deepseek3",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- message['content'] + '\\n\\n' -}}\
         {%- elif message['role'] == 'user' -%}{{- '<｜User｜>' + message['content'] -}}\
         {%- elif message['role'] == 'assistant' -%}{{- '<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>' -}}{%- endif -%}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<｜Assistant｜>' -}}{%- endif -%}",
    ),
    (
        "command-r",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + (message['content'] | trim) + '<|END_OF_TURN_TOKEN|>' -}}\
         {%- elif message['role'] == 'user' -%}{{- '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + (message['content'] | trim) + '<|END_OF_TURN_TOKEN|>' -}}\
         {%- elif message['role'] == 'assistant' -%}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' + (message['content'] | trim) + '<|END_OF_TURN_TOKEN|>' -}}{%- endif -%}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' -}}{%- endif -%}",
    ),
    (
        "exaone3",
        "{%- for message in messages -%}\
         {%- if message['role'] == 'system' -%}{{- '[|system|]' + (message['content'] | trim) + '[|endofturn|]\\n' -}}\
         {%- elif message['role'] == 'user' -%}{{- '[|user|]' + (message['content'] | trim) + '\\n' -}}\
         {%- elif message['role'] == 'assistant' -%}{{- '[|assistant|]' + (message['content'] | trim) + '[|endofturn|]\\n' -}}{%- endif -%}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '[|assistant|]' -}}{%- endif -%}",
    ),
    (
        "granite",
        "{%- for message in messages -%}\
         {{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' + message['content'] + '<|end_of_text|>\\n' -}}\
         {%- endfor -%}\
         {%- if add_generation_prompt -%}{{- '<|start_of_role|>assistant<|end_of_role|>' -}}{%- endif -%}",
    ),
];

// llama.cpp's mistral v1/v3/v3-tekken: `[INST]` opens a turn (with a leading space in v1, a
// trailing one but in tekken), the system message is a paragraph inside it, an answer closes it
// (trimmed in v3).
const MISTRAL_V1: &str = "{%- set ns = namespace(open=false) -%}\
    {%- for message in messages -%}\
    {%- if not ns.open -%}{{- ' [INST] ' -}}{%- set ns.open = true -%}{%- endif -%}\
    {%- if message['role'] == 'system' -%}{{- message['content'] + '\\n\\n' -}}\
    {%- elif message['role'] == 'user' -%}{{- message['content'] + ' [/INST]' -}}\
    {%- else -%}{{- ' ' + message['content'] + '</s>' -}}{%- set ns.open = false -%}{%- endif -%}\
    {%- endfor -%}";
const MISTRAL_V3: &str = "{%- set ns = namespace(open=false) -%}\
    {%- for message in messages -%}\
    {%- if not ns.open -%}{{- '[INST] ' -}}{%- set ns.open = true -%}{%- endif -%}\
    {%- if message['role'] == 'system' -%}{{- message['content'] + '\\n\\n' -}}\
    {%- elif message['role'] == 'user' -%}{{- message['content'] + '[/INST]' -}}\
    {%- else -%}{{- ' ' + (message['content'] | trim) + '</s>' -}}{%- set ns.open = false -%}{%- endif -%}\
    {%- endfor -%}";
const MISTRAL_V3_TEKKEN: &str = "{%- set ns = namespace(open=false) -%}\
    {%- for message in messages -%}\
    {%- if not ns.open -%}{{- '[INST]' -}}{%- set ns.open = true -%}{%- endif -%}\
    {%- if message['role'] == 'system' -%}{{- message['content'] + '\\n\\n' -}}\
    {%- elif message['role'] == 'user' -%}{{- message['content'] + '[/INST]' -}}\
    {%- else -%}{{- message['content'] + '</s>' -}}{%- set ns.open = false -%}{%- endif -%}\
    {%- endfor -%}";

#[cfg(test)]
mod tests {
    use super::*;

    fn render(name: &str, messages: &[Message]) -> String {
        let chosen = choose(Some(&TemplateSource::Name(name.into())), None, Path::new("m")).unwrap();
        ChatTemplate::new(&chosen, None, None).unwrap().render(messages).unwrap()
    }

    #[test]
    fn guess_names_a_family_only_where_the_architecture_settles_it() {
        assert_eq!(guess("gemma3"), Some("gemma"));
        assert_eq!(guess("qwen2"), Some("chatml"));
        assert_eq!(guess("qwen3"), Some("chatml"));
        assert_eq!(guess("llama"), None);
        assert_eq!(guess("mistral"), None);
        // Every guess is a family Readout knows.
        for a in ["gemma3", "qwen2"] {
            assert!(guess(a).and_then(builtin).is_some(), "{a}");
        }
    }

    fn system_user() -> Vec<Message> {
        vec![Message::new("system", "Be brief."), Message::new("user", "Hi?")]
    }

    fn with_shot() -> Vec<Message> {
        vec![
            Message::new("system", "Be brief."),
            Message::new("user", "Q1"),
            Message::new("assistant", "A"),
            Message::new("user", "Q2"),
        ]
    }

    /// What llama.cpp's `llama_chat_apply_template` writes for each family with the generation
    /// prompt (checked with llama-cpp-python 0.3.36): system + user, then system + a worked
    /// example + user.
    const EXPECTED: [(&str, &str, &str); 24] = [
        (
            "chatml",
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n",
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n",
        ),
        (
            "gemma",
            "<start_of_turn>user\nBe brief.\n\nHi?<end_of_turn>\n<start_of_turn>model\n",
            "<start_of_turn>user\nBe brief.\n\nQ1<end_of_turn>\n<start_of_turn>model\nA<end_of_turn>\n<start_of_turn>user\nQ2<end_of_turn>\n<start_of_turn>model\n",
        ),
        ("llama2", "[INST] Be brief.\nHi? [/INST]", "[INST] Be brief.\nQ1 [/INST]A</s>[INST] Q2 [/INST]"),
        (
            "llama2-sys",
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi? [/INST]",
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nQ1 [/INST]A</s>[INST] Q2 [/INST]",
        ),
        (
            "llama3",
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nQ1<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nA<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nQ2<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
        ),
        (
            "llama4",
            "<|header_start|>system<|header_end|>\n\nBe brief.<|eot|><|header_start|>user<|header_end|>\n\nHi?<|eot|><|header_start|>assistant<|header_end|>\n\n",
            "<|header_start|>system<|header_end|>\n\nBe brief.<|eot|><|header_start|>user<|header_end|>\n\nQ1<|eot|><|header_start|>assistant<|header_end|>\n\nA<|eot|><|header_start|>user<|header_end|>\n\nQ2<|eot|><|header_start|>assistant<|header_end|>\n\n",
        ),
        ("mistral-v1", " [INST] Be brief.\n\nHi? [/INST]", " [INST] Be brief.\n\nQ1 [/INST] A</s> [INST] Q2 [/INST]"),
        ("mistral-v3", "[INST] Be brief.\n\nHi?[/INST]", "[INST] Be brief.\n\nQ1[/INST] A</s>[INST] Q2[/INST]"),
        ("mistral-v3-tekken", "[INST]Be brief.\n\nHi?[/INST]", "[INST]Be brief.\n\nQ1[/INST]A</s>[INST]Q2[/INST]"),
        (
            "mistral-v7",
            "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi?[/INST]",
            "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Q1[/INST] A</s>[INST] Q2[/INST]",
        ),
        (
            "mistral-v7-tekken",
            "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Hi?[/INST]",
            "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Q1[/INST]A</s>[INST]Q2[/INST]",
        ),
        (
            "phi3",
            "<|system|>\nBe brief.<|end|>\n<|user|>\nHi?<|end|>\n<|assistant|>\n",
            "<|system|>\nBe brief.<|end|>\n<|user|>\nQ1<|end|>\n<|assistant|>\nA<|end|>\n<|user|>\nQ2<|end|>\n<|assistant|>\n",
        ),
        (
            "phi4",
            "<|im_start|>system<|im_sep|>Be brief.<|im_end|><|im_start|>user<|im_sep|>Hi?<|im_end|><|im_start|>assistant<|im_sep|>",
            "<|im_start|>system<|im_sep|>Be brief.<|im_end|><|im_start|>user<|im_sep|>Q1<|im_end|><|im_start|>assistant<|im_sep|>A<|im_end|><|im_start|>user<|im_sep|>Q2<|im_end|><|im_start|>assistant<|im_sep|>",
        ),
        (
            "falcon3",
            "<|system|>\nBe brief.\n<|user|>\nHi?\n<|assistant|>\n",
            "<|system|>\nBe brief.\n<|user|>\nQ1\n<|assistant|>\nA\n<|user|>\nQ2\n<|assistant|>\n",
        ),
        (
            "zephyr",
            "<|system|>\nBe brief.<|endoftext|>\n<|user|>\nHi?<|endoftext|>\n<|assistant|>\n",
            "<|system|>\nBe brief.<|endoftext|>\n<|user|>\nQ1<|endoftext|>\n<|assistant|>\nA<|endoftext|>\n<|user|>\nQ2<|endoftext|>\n<|assistant|>\n",
        ),
        (
            "monarch",
            "system\nBe brief.</s>\n<s>user\nHi?</s>\n<s>assistant\n",
            "system\nBe brief.</s>\n<s>user\nQ1</s>\n<s>assistant\nA</s>\n<s>user\nQ2</s>\n<s>assistant\n",
        ),
        ("vicuna", "Be brief.\n\nUSER: Hi?\nASSISTANT:", "Be brief.\n\nUSER: Q1\nASSISTANT: A</s>\nUSER: Q2\nASSISTANT:"),
        (
            "vicuna-orca",
            "SYSTEM: Be brief.\nUSER: Hi?\nASSISTANT:",
            "SYSTEM: Be brief.\nUSER: Q1\nASSISTANT: A</s>\nUSER: Q2\nASSISTANT:",
        ),
        (
            "deepseek",
            "Be brief.### Instruction:\nHi?\n### Response:\n",
            "Be brief.### Instruction:\nQ1\n### Response:\nA\n<|EOT|>\n### Instruction:\nQ2\n### Response:\n",
        ),
        (
            "deepseek2",
            "Be brief.\n\nUser: Hi?\n\nAssistant:",
            "Be brief.\n\nUser: Q1\n\nAssistant: A<｜end▁of▁sentence｜>User: Q2\n\nAssistant:",
        ),
        (
            "deepseek3",
            "Be brief.\n\n<｜User｜>Hi?<｜Assistant｜>",
            "Be brief.\n\n<｜User｜>Q1<｜Assistant｜>A<｜end▁of▁sentence｜><｜User｜>Q2<｜Assistant｜>",
        ),
        (
            "command-r",
            "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Be brief.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi?<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
            "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Be brief.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Q1<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>A<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Q2<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        ),
        (
            "exaone3",
            "[|system|]Be brief.[|endofturn|]\n[|user|]Hi?\n[|assistant|]",
            "[|system|]Be brief.[|endofturn|]\n[|user|]Q1\n[|assistant|]A[|endofturn|]\n[|user|]Q2\n[|assistant|]",
        ),
        (
            "granite",
            "<|start_of_role|>system<|end_of_role|>Be brief.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hi?<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>",
            "<|start_of_role|>system<|end_of_role|>Be brief.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Q1<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>A<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Q2<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>",
        ),
    ];

    #[test]
    fn every_family_renders_what_llama_cpp_writes() {
        assert_eq!(EXPECTED.map(|e| e.0), NAMES);
        assert_eq!(FAMILIES.map(|f| f.0), NAMES);
        for (name, one, shot) in EXPECTED {
            assert_eq!(render(name, &system_user()), one, "{name}, system + user");
            assert_eq!(render(name, &with_shot()), shot, "{name}, with a worked example");
        }
    }

    #[test]
    fn gemma_trims_and_merges_the_system_message_into_the_first_user_turn() {
        let m = vec![Message::new("system", "  Sys.\n"), Message::new("user", "\n Text:\nx \n")];
        assert_eq!(render("gemma", &m), "<start_of_turn>user\nSys.\n\nText:\nx<end_of_turn>\n<start_of_turn>model\n");
        // No system message: no blank paragraph.
        let m = vec![Message::new("user", "u")];
        assert_eq!(render("gemma", &m), "<start_of_turn>user\nu<end_of_turn>\n<start_of_turn>model\n");
    }

    #[test]
    fn a_model_without_a_template_is_refused_with_the_names() {
        let e = choose(None, None, Path::new("base.gguf")).unwrap_err().to_string();
        assert!(e.contains("base.gguf") && e.contains("--chat-template NAME|FILE"), "{e}");
        assert!(e.contains("chatml, gemma, llama2"), "{e}");
        let e = choose(Some(&TemplateSource::Name("nope".into())), None, Path::new("m")).unwrap_err().to_string();
        assert!(e.contains("`nope` is not a chat template"), "{e}");
    }

    #[test]
    fn names_files_and_the_models_own_are_told_apart() {
        assert_eq!("gemma".parse::<TemplateSource>(), Ok(TemplateSource::Name("gemma".into())));
        assert_eq!("t/x.jinja".parse::<TemplateSource>(), Ok(TemplateSource::File("t/x.jinja".into())));
        assert!("".parse::<TemplateSource>().is_err());
        let own = choose(None, Some("{{ 'x' }}".into()), Path::new("m")).unwrap();
        assert_eq!(
            (own.name.as_str(), own.sha256.as_str()),
            ("model", crate::hash::sha256_bytes(b"{{ 'x' }}").as_str())
        );
        // Asked for, a family wins over the model's own.
        let named = choose(Some(&TemplateSource::Name("chatml".into())), Some("x".into()), Path::new("m")).unwrap();
        assert_eq!(named.name, "chatml");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("mine.jinja");
        std::fs::write(&f, "{{ messages[0]['content'] }}").unwrap();
        let file = choose(Some(&TemplateSource::File(f.clone())), None, Path::new("m")).unwrap();
        assert_eq!((file.name.as_str(), file.origin.as_path()), ("file:mine.jinja", f.as_path()));
        let missing = dir.path().join("gone.jinja");
        let e = choose(Some(&TemplateSource::File(missing)), None, Path::new("m")).unwrap_err().to_string();
        assert!(e.contains("gone.jinja") && e.contains("nor a readable file"), "{e}");
    }
}
