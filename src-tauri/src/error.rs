//! The app's errors, in the words of the people it is for. The library's messages are written
//! for the CLI: they name flags, byte counts, blob paths and OS error numbers. Here each library
//! error becomes one plain sentence the app words itself (`message`), a typed fix the window
//! turns into a button (`fix`), and the library's full text (`details`), which the window keeps
//! folded under "Details".

use readout::engine::template;
use readout::formats::evalset::SKIP_HINT;
use readout::hub::Error as HubError;
use readout::Error as E;
use serde::{Deserialize, Serialize};
use std::path::Path;
use ts_rs::TS;

/// An error as a command gives it to the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AppError {
    /// One plain sentence: what went wrong, in the app's words (no flags, paths or byte counts).
    pub message: String,
    /// What the window can do about it, as a button.
    pub fix: Option<Fix>,
    /// The library's own text (paths, counts, the OS error), folded under "Details".
    pub details: Option<String>,
}

/// A fix the window offers as a button; the page that shows the error applies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fix {
    /// Cut long texts from the middle (their head and tail kept) and score again.
    TruncateMiddle,
    /// Run the good lines of the eval set, leaving out (and recording) the bad ones.
    SkipBadLines,
    /// Read the model at `model` with the chat template `name` (a family's), and score again.
    UseTemplate {
        name: String,
        #[ts(type = "string")]
        model: std::path::PathBuf,
    },
    /// Choose a chat template (or another model) on the Models page.
    OpenModels,
    /// Go on with a download that was stopped; what arrived is kept.
    ResumeDownload,
    /// The same again: the failure may not happen twice (the network, a busy file).
    Retry,
}

impl AppError {
    /// An error the app words itself, with nothing more to show.
    pub fn new(message: impl Into<String>) -> AppError {
        AppError { message: message.into(), fix: None, details: None }
    }

    /// The same error with `details` folded under it.
    pub fn details(self, details: impl Into<String>) -> AppError {
        AppError { details: Some(details.into()), ..self }
    }

    /// The same error with `fix` offered.
    pub fn fix(self, fix: Fix) -> AppError {
        AppError { fix: Some(fix), ..self }
    }

    /// Something inside the app failed (a thread, a lock, JSON it wrote itself): nothing a
    /// person did, so "try again", with the internal text under Details.
    pub fn internal(e: impl std::fmt::Display) -> AppError {
        AppError::new("Something went wrong inside the app.").fix(Fix::Retry).details(e.to_string())
    }

    /// A file that could not be read or written, named by its file name (the path under Details).
    pub fn io(path: &Path, err: &std::io::Error) -> AppError {
        let name = file_name(path);
        let message = match err.kind() {
            std::io::ErrorKind::NotFound => format!("{name} is not there: it may have been moved, renamed or deleted."),
            std::io::ErrorKind::PermissionDenied => format!("Readout is not allowed to open {name}."),
            _ => format!("{name} could not be read or written."),
        };
        AppError::new(message).details(format!("{}: {err}", path.display()))
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for AppError {
    fn from(message: String) -> AppError {
        AppError::new(message)
    }
}

impl From<&str> for AppError {
    fn from(message: &str) -> AppError {
        AppError::new(message)
    }
}

impl From<serde_json::Error> for AppError {
    fn from(e: serde_json::Error) -> AppError {
        AppError::internal(e)
    }
}

impl From<tauri::Error> for AppError {
    fn from(e: tauri::Error) -> AppError {
        AppError::internal(e)
    }
}

impl<T> From<std::sync::PoisonError<T>> for AppError {
    fn from(_: std::sync::PoisonError<T>) -> AppError {
        AppError::new("The app ran into a problem it cannot recover from; close it and open it again.")
    }
}

impl From<HubError> for AppError {
    fn from(e: HubError) -> AppError {
        let details = e.to_string();
        let err = match &e {
            HubError::HubNotFound { .. } => {
                AppError::new("The hub has no model of that name: check the name, as in the address of its page.")
            }
            HubError::HubAccess { .. } => AppError::new(
                "The hub refuses this model without permission: it is gated or private, so accept its terms on its page first.",
            ),
            HubError::HubOffline { .. } => {
                AppError::new("This model is not downloaded yet, and the app is set to work offline.")
            }
            HubError::HubChecksum { .. } => {
                AppError::new("The download arrived damaged, so it was thrown away; download it again.").fix(Fix::Retry)
            }
            HubError::HubChoice { .. } => AppError::new(
                "That repository holds several model files: add the name of the one you want after a colon.",
            ),
            HubError::HubDownload { .. } => {
                AppError::new("The download failed: the hub or the network did not answer as expected.").fix(Fix::Retry)
            }
            HubError::HubStopped { kept, total, .. } => AppError::new(format!(
                "The download was stopped after {}; what arrived is kept, and it goes on from there.",
                mb_of(*kept, *total)
            ))
            .fix(Fix::ResumeDownload),
            HubError::Config(_) => AppError::new(
                "That is not the name of a model on the hub: write the organisation and the repository, as in the address of its page.",
            ),
            HubError::Io { path, err } => return AppError::io(path, err),
        };
        err.details(details)
    }
}

impl From<E> for AppError {
    fn from(e: E) -> AppError {
        let e = match e {
            E::Hub(h) => return AppError::from(h),
            // A jury's judge: its own error, with the judge named.
            E::Judge { judge, model, error } => {
                let details = format!("judge {judge} ({model}): {error}");
                let inner = AppError::from(*error);
                let message = format!("Judge {judge} ({}): {}", file_name(Path::new(&model)), inner.message);
                return AppError { message, ..inner }.details(details);
            }
            e => e,
        };
        let details = e.to_string();
        let err = match &e {
            E::ModelMissing { path, .. } => {
                AppError::new(format!("There is no model file {}: it may have been moved or deleted.", file_name(path)))
                    .fix(Fix::OpenModels)
            }
            E::CorruptGguf { path, .. } | E::Gguf { path, .. } => AppError::new(format!(
                "The model file {} is incomplete or damaged: download it again.",
                file_name(path)
            )),
            E::UnsupportedArchitecture { path, arch } => AppError::new(format!(
                "Readout cannot run {}: it is a {arch} model, and Readout runs Llama, Mistral, Qwen and Gemma 3 models.",
                file_name(path)
            )),
            E::UnsupportedTensorType { path, .. } => AppError::new(format!(
                "Readout cannot load {}: its weights are stored in a way Readout does not read.",
                file_name(path)
            )),
            E::BadTensor { path, .. } | E::BadModelConfig { path, .. } => AppError::new(format!(
                "The model file {} does not match its own description: get a complete copy of the model.",
                file_name(path)
            )),
            E::Tokenizer { path, .. } => {
                AppError::new(format!("The word list (tokenizer) of {} cannot be read.", file_name(path)))
            }
            E::LetterNotSingleToken { .. } => AppError::new(
                "This model cannot be a judge here: it does not read the answer letters on their own. Choose another model.",
            )
            .fix(Fix::OpenModels),
            E::ChatTemplate { .. } => {
                AppError::new("The chat template chosen for this model does not work with it: choose another.")
                    .fix(Fix::OpenModels)
            }
            E::NoChatTemplate { asked: Some(asked), .. } => AppError::new(format!(
                "“{}” is not a chat template Readout knows, nor a file it can read.",
                file_name(Path::new(asked))
            )),
            E::NoChatTemplate { asked: None, .. } => AppError::new(
                "This model has no chat template, the way of writing a conversation it was trained on: choose one for it.",
            )
            .fix(Fix::OpenModels),
            E::BadInput { path, line, field, reason } => {
                let reason = reason.strip_suffix(&format!(". {SKIP_HINT}")).unwrap_or(reason);
                let place = format!("Line {line} of {}, field “{field}”", file_name(path));
                match plain(reason) {
                    Some(r) => AppError::new(format!("{place}: {r}.")),
                    None => AppError::new(format!("{place}, cannot be read.")),
                }
            }
            E::BadFile { path, reason } => match plain(reason) {
                Some(r) => AppError::new(format!("{} cannot be used: {r}.", file_name(path))),
                None => AppError::new(format!("{} cannot be used as it is.", file_name(path))),
            },
            E::Config(reason) => match plain(reason) {
                Some(r) => AppError::new(sentence(&r)),
                None => AppError::new("These settings cannot be used together."),
            },
            E::Request { field, reason } => match plain(reason) {
                Some(r) => AppError::new(sentence(&r)),
                None => AppError::new(format!("The {field} given cannot be used.")),
            },
            E::TooFewToCalibrate { rows, wrong, right, min_rows, min_errors, .. } => AppError::new(format!(
                "There are too few answers to fit a temperature: {rows} ({wrong} wrong, {right} right), where at least {min_rows} are needed, {min_errors} of them wrong and {min_errors} right."
            )),
            E::ContextOverflow { tokens, context } => AppError::new(format!(
                "A text is too long for the model: {tokens} tokens, where the model reads at most {context}."
            ))
            .fix(Fix::TruncateMiddle),
            E::PromptTooLong { part, prompt_tokens, budget, cut_helps, .. } => {
                let what = if *part == "state" { "An item of the eval set" } else { "A text" };
                let head = format!(
                    "{what} is too long for the model: its prompt is {prompt_tokens} tokens, where the model reads at most {budget}."
                );
                if *cut_helps {
                    AppError::new(head).fix(Fix::TruncateMiddle)
                } else {
                    AppError::new(format!(
                        "{head} Even without the {}, the rubric's questions and options do not fit: shorten them, or choose a model that reads more.",
                        if *part == "state" { "item" } else { "text" }
                    ))
                }
            }
            E::Device { requested, .. } => AppError::new(format!(
                "The {} device is not available on this computer: choose Automatic or CPU in the settings.",
                requested.to_uppercase()
            )),
            // Taken apart above (by value); these arms are for the match to be whole.
            E::Hub(h) => AppError::new("The download failed.").details(h.to_string()),
            E::Judge { judge, .. } => AppError::new(format!("Judge {judge} of the jury failed.")),
            E::Io { path, err } => return AppError::io(path, err).details(details),
            E::Candle(_) => AppError::new("The model failed while working out an answer.").fix(Fix::Retry),
            E::Invalid(list) => AppError::new(format!(
                "The request cannot be used: {}.",
                list.iter().map(|i| i.msg.trim_end_matches('.').to_string()).collect::<Vec<_>>().join("; ")
            )),
        };
        err.details(details)
    }
}

/// A model without a chat template, when it is loaded to score or run: the fix is the family
/// its architecture most likely expects (`template::guess`), or the Models page to choose one.
pub fn no_template(e: E) -> AppError {
    let E::NoChatTemplate { path, asked: None, .. } = &e else { return e.into() };
    let path = path.clone();
    let guess =
        readout::engine::read_metadata(&path).ok().and_then(|md| template::guess(md.config.architecture.as_str()));
    let err = AppError::from(e);
    match guess {
        Some(name) => AppError {
            message: format!("This model has no chat template, the way of writing a conversation it was trained on; it is most likely {name}'s."),
            fix: Some(Fix::UseTemplate { name: name.to_string(), model: path.clone() }),
            ..err
        },
        None => err,
    }
}

/// A file's name without its folder ("the file" when it has none).
pub fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "the file".to_string())
}

/// `kept` of `total` bytes in megabytes, as a person reads them: "23 of 253 MB" (a tenth under
/// 10 MB, so a short download is not "0").
pub fn mb_of(kept: u64, total: u64) -> String {
    let mb = |b: u64| {
        let m = b as f64 / 1e6;
        if m < 10.0 {
            format!("{m:.1}")
        } else {
            format!("{m:.0}")
        }
    };
    format!("{} of {} MB", mb(kept), mb(total))
}

/// The library's reason, when it is plain enough for the window: no flag, command, path, byte
/// count or OS error in it. Code quotes become typographic ones.
fn plain(reason: &str) -> Option<String> {
    let reason = reason.trim().trim_end_matches('.');
    let flaggy = reason.contains("--") || reason.contains("readout ") || reason.contains("os error");
    let pathy = reason.contains('/') || reason.contains('\\');
    if reason.is_empty() || flaggy || pathy || long_number(reason) {
        return None;
    }
    let mut open = true;
    Some(
        reason
            .chars()
            .map(|c| match c {
                '`' => {
                    open = !open;
                    if open {
                        '”'
                    } else {
                        '“'
                    }
                }
                c => c,
            })
            .collect(),
    )
}

/// Whether `s` holds a run of six or more digits (a byte count, a hash).
pub fn long_number(s: &str) -> bool {
    s.split(|c: char| !c.is_ascii_digit()).any(|run| run.len() >= 6)
}

/// `s` as a sentence: a capital first and a full stop last.
fn sentence(s: &str) -> String {
    let mut c = s.chars();
    let head: String = c.next().map(|f| f.to_uppercase().collect()).unwrap_or_default();
    format!("{head}{}.", c.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use readout::error::GgufProblem;
    use std::path::PathBuf;

    fn p(name: &str) -> PathBuf {
        PathBuf::from("/home/me/.cache/huggingface/hub/blobs").join(name)
    }

    fn io(kind: std::io::ErrorKind) -> std::io::Error {
        std::io::Error::from(kind)
    }

    /// One of every library error, with the CLI's words in its fields where the library puts them.
    fn every_error() -> Vec<E> {
        let hub = |h: HubError| E::Hub(h);
        vec![
            E::ModelMissing { path: p("m.gguf"), hint: "run models/fetch or pass --model".into() },
            E::Judge {
                judge: 2,
                model: "models/gemma.gguf".into(),
                error: Box::new(E::ModelMissing { path: p("gemma.gguf"), hint: "Check the judge's path".into() }),
            },
            E::CorruptGguf { path: p("m.gguf"), detail: "failed to fill whole buffer".into() },
            E::Gguf {
                path: p("m.gguf"),
                field: "tensor data".into(),
                offset: 23330816,
                problem: GgufProblem::PastEnd { end: 253113024, file_len: 23330816 },
            },
            E::UnsupportedArchitecture { path: p("m.gguf"), arch: "phi3".into() },
            E::UnsupportedTensorType { path: p("m.gguf"), tensor: "blk.0".into(), dtype: "IQ2_XS".into() },
            E::BadTensor { path: p("m.gguf"), tensor: "blk.0".into(), detail: "shape [2048, 1024]".into() },
            E::BadModelConfig { path: p("config.json"), detail: "no hidden_size".into() },
            E::Tokenizer { path: p("tokenizer.json"), detail: "bad merges".into() },
            E::LetterNotSingleToken { path: p("m.gguf"), letter: "A".into(), detail: "[330, 32]".into() },
            E::ChatTemplate { path: p("m.gguf"), detail: "undefined value".into() },
            E::NoChatTemplate {
                path: p("m.gguf"),
                detail: "the model carries no chat template (a base model?)".into(),
                names: template::NAMES.join(", "),
                asked: None,
            },
            E::NoChatTemplate {
                path: p("m.gguf"),
                detail: "`/home/me/t.jinja` is neither ... (No such file or directory (os error 2))".into(),
                names: template::NAMES.join(", "),
                asked: Some("/home/me/t.jinja".into()),
            },
            E::BadInput {
                path: p("bad.jsonl"),
                line: 2,
                field: "options".into(),
                reason: format!("has 0 option(s); a criterion needs at least 2. {SKIP_HINT}"),
            },
            E::BadInput {
                path: p("answers.jsonl"),
                line: 2,
                field: "(line)".into(),
                reason: "not a decision `readout score --out` writes".into(),
            },
            E::BadFile {
                path: p("r.json"),
                reason: "is a partial run; complete it with `readout run --resume` first".into(),
            },
            E::BadFile { path: p("r.json"), reason: "holds no rows".into() },
            E::Config("--precision bf16 needs a CUDA GPU; use --device cuda".into()),
            E::Config("the rubric has no questions".into()),
            E::Request { field: "texts".into(), reason: "1000 texts in one request; at most 100 (--max-texts)".into() },
            E::TooFewToCalibrate {
                path: p("r.json"),
                rows: 12,
                wrong: 1,
                right: 11,
                groups: 3,
                folds: 5,
                min_rows: 40,
                min_errors: 5,
            },
            E::ContextOverflow { tokens: 9312, context: 8192 },
            E::PromptTooLong {
                what: "text 2".into(),
                part: "text",
                prompt_tokens: 9312,
                state_tokens: 9000,
                budget: 8192,
                reserved: String::new(),
                without: 312,
                cut_helps: true,
            },
            E::PromptTooLong {
                what: format!("{}: item `x`", p("set.jsonl").display()),
                part: "state",
                prompt_tokens: 9312,
                state_tokens: 100,
                budget: 8192,
                reserved: " (8192 less 4 kept for the generated reply)".into(),
                without: 9212,
                cut_helps: false,
            },
            E::Device { requested: "cuda".into(), reason: "built without `--features cuda`".into() },
            hub(HubError::HubNotFound {
                what: "repository org/x".into(),
                endpoint: "https://huggingface.co".into(),
                hint: "check its name; a private repository needs HF_TOKEN".into(),
            }),
            hub(HubError::HubAccess {
                repo: "org/x".into(),
                endpoint: "https://huggingface.co".into(),
                status: 401,
                hint: "set HF_TOKEN".into(),
            }),
            hub(HubError::HubOffline {
                spec: "hf:org/x".into(),
                cache: p(""),
                missing: " (no snapshot)".into(),
                hint: "unset HF_HUB_OFFLINE".into(),
            }),
            hub(HubError::HubChecksum {
                file: "m.gguf".into(),
                algorithm: "sha256",
                expected: "ab12cd34ef5678".into(),
                actual: "0099887766554433".into(),
                blob: p("0099887766554433"),
            }),
            hub(HubError::HubChoice { spec: "hf:org/x".into(), detail: "3 GGUF files: name one".into() }),
            hub(HubError::HubDownload { spec: "hf:org/x".into(), detail: "connection reset (os error 104)".into() }),
            hub(HubError::HubStopped {
                spec: "hf:google/gemma-3-270m-GGUF:gemma-3-270m-q4_k_m.gguf".into(),
                file: "gemma-3-270m-q4_k_m.gguf".into(),
                kept: 23330816,
                total: 253113024,
                part: std::env::temp_dir().join("blobs").join("abc.part"),
            }),
            hub(HubError::Config("`no-slash` is not a hub model: write ORG/REPO".into())),
            hub(HubError::Io { path: p("abc.part"), err: io(std::io::ErrorKind::PermissionDenied) }),
            E::Io { path: p("set.jsonl"), err: io(std::io::ErrorKind::NotFound) },
            E::Io { path: p("set.jsonl"), err: std::io::Error::other("disk full") },
            E::Candle(candle_core::Error::Msg("out of memory".into())),
            E::Invalid(vec![readout::Invalid {
                loc: vec![readout::Loc::Key("body".into()), readout::Loc::Key("questions".into())],
                msg: "a score has 2 to 10 levels, not 1".into(),
                kind: "too_short".into(),
            }]),
        ]
    }

    #[test]
    fn every_library_error_is_plain_with_its_text_under_details() {
        for e in every_error() {
            let library = e.to_string();
            let a = AppError::from(e);
            let m = &a.message;
            assert!(!m.contains("--"), "a flag: {m}");
            assert!(!m.contains("os error"), "an OS error: {m}");
            assert!(!long_number(m), "a byte count: {m}");
            assert!(!m.contains("/home/me") && !m.contains('\\') && !m.contains("blobs"), "a path: {m}");
            assert!(!m.contains("readout "), "a command: {m}");
            assert!(m.ends_with('.'), "one sentence: {m}");
            assert_eq!(a.details.as_deref(), Some(library.as_str()), "the library's text under Details");
        }
    }

    /// The `n`th error of `every_error` that `pick` picks, as the app shows it.
    fn shown(pick: fn(&E) -> bool, n: usize) -> AppError {
        let e = every_error().into_iter().filter(pick).nth(n);
        AppError::from(e.expect("every_error has it"))
    }

    #[test]
    fn the_fix_fits_the_error() {
        // The text that cutting can make fit offers the cut; the item it cannot help does not.
        let too_long = |e: &E| matches!(e, E::PromptTooLong { .. });
        let text = shown(too_long, 0);
        assert_eq!(
            text.message,
            "A text is too long for the model: its prompt is 9312 tokens, where the model reads at most 8192."
        );
        assert_eq!(text.fix, Some(Fix::TruncateMiddle));
        let state = shown(too_long, 1);
        assert!(state.message.starts_with("An item of the eval set is too long"), "{}", state.message);
        assert_eq!(state.fix, None);
        assert_eq!(shown(|e| matches!(e, E::Hub(HubError::HubStopped { .. })), 0).fix, Some(Fix::ResumeDownload));
        assert_eq!(shown(|e| matches!(e, E::NoChatTemplate { asked: None, .. }), 0).fix, Some(Fix::OpenModels));
        // A jury's judge: its own error and fix, the judge named.
        let judge = shown(|e| matches!(e, E::Judge { .. }), 0);
        assert_eq!(
            judge.message,
            "Judge 2 (gemma.gguf): There is no model file gemma.gguf: it may have been moved or deleted."
        );
        assert_eq!(judge.fix, Some(Fix::OpenModels));
        // The bad line: its place and reason, without the CLI's advice on skipping it.
        let bad = |e: &E| matches!(e, E::BadInput { .. });
        assert_eq!(
            shown(bad, 0).message,
            "Line 2 of bad.jsonl, field “options”: has 0 option(s); a criterion needs at least 2."
        );
        // A reason worded for the CLI is left to Details.
        assert_eq!(shown(bad, 1).message, "Line 2 of answers.jsonl, field “(line)”, cannot be read.");
        assert_eq!(shown(|e| matches!(e, E::Config(_)), 1).message, "The rubric has no questions.");
        assert_eq!(shown(|e| matches!(e, E::Config(_)), 0).message, "These settings cannot be used together.");
    }

    #[test]
    fn a_stopped_download_is_told_in_megabytes() {
        let a = shown(|e| matches!(e, E::Hub(HubError::HubStopped { .. })), 0);
        // 23330816 bytes = 23.3 MB, 253113024 = 253.1 MB: whole megabytes from 10 MB.
        assert_eq!(
            a.message,
            "The download was stopped after 23 of 253 MB; what arrived is kept, and it goes on from there."
        );
        assert!(a.details.unwrap_or_default().contains("23330816 of 253113024 bytes"));
        // Under 10 MB a tenth: 2340000 bytes = 2.34 MB → 2.3; 9960000 = 9.96 MB → 10.0.
        assert_eq!(mb_of(2_340_000, 9_960_000), "2.3 of 10.0 MB");
        assert_eq!(mb_of(0, 98_362_432), "0.0 of 98 MB");
    }

    #[test]
    fn plain_turns_code_quotes_into_words_and_refuses_flags() {
        assert_eq!(plain("option `a` is empty.").as_deref(), Some("option “a” is empty"));
        assert_eq!(plain("use --debias none"), None);
        assert_eq!(plain("/tmp/x: gone"), None);
        assert_eq!(plain("253113024 bytes"), None);
        assert_eq!(plain("12345 tokens").as_deref(), Some("12345 tokens"));
        assert!(long_number("a 123456 b") && !long_number("12345 and 99999"));
    }
}
