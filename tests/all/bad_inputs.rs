//! The bad-input corpus (`tests/bad-inputs/`): every file there is a broken eval set, rubric,
//! texts file, model or result file, and `cases.json` says which command it is given to, which
//! exit code it must get (docs/troubleshooting.md) and what the message must say:
//! the file, the line / field / tensor, and what to do. Each case runs the real `readout` binary.
//!
//! Placeholders in a case's `args`: `{file}` (the corpus file), `{model}` (a tiny valid model
//! written by this test), `{rubric}` (a valid rubric), `{result}` (a valid result file),
//! `{tmp}` (a fresh folder). The small model files are written by
//! `cargo test --release --test bad_inputs -- --ignored regenerate_model_corpus`.

use crate::common;

use readout::engine::synthetic::{byte_tokens, tiny_config, write_gguf, SPECIALS};
use readout::engine::Architecture;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// The input, relative to `tests/bad-inputs/` (a file, or a folder for model directories).
    file: String,
    /// The command line, one argument per element.
    args: Vec<String>,
    /// The documented exit code.
    exit: i32,
    /// Substrings the error message must hold (besides the file name, which is always checked).
    expect: Vec<String>,
}

fn corpus() -> PathBuf {
    common::repo().join("tests/bad-inputs")
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(corpus().join("cases.json")).expect("tests/bad-inputs/cases.json");
    serde_json::from_str(&text).expect("cases.json parses")
}

/// Every committed input file (not the manifest or the README), relative to the corpus root.
fn corpus_files() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let root = corpus();
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.retain(|f| f != "cases.json" && f != "README.md");
    out.sort();
    out
}

/// What a user must never see: a panic, a backtrace hint, or the frames of one.
fn assert_clean(stderr: &str, what: &str) {
    assert!(!stderr.trim().is_empty(), "{what}: stderr is empty");
    for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace", "note: run with"] {
        assert!(!stderr.contains(bad), "{what}: stderr holds `{bad}`:\n{stderr}");
    }
    for line in stderr.lines() {
        let t = line.trim_start();
        let frame = t.split_once(": ").map(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        assert!(frame != Some(true) && !t.starts_with("at src/"), "{what}: a stack frame in stderr:\n{stderr}");
    }
}

#[test]
fn every_corpus_file_has_a_case_and_there_are_at_least_40() {
    let cases = cases();
    let files = corpus_files();
    assert!(files.len() >= 40, "the corpus holds {} files; it should hold at least 40", files.len());
    for f in &files {
        let covered = cases.iter().any(|c| *f == c.file || f.starts_with(&format!("{}/", c.file)));
        assert!(covered, "tests/bad-inputs/{f} has no case in cases.json");
    }
    let mut seen = BTreeSet::new();
    for c in &cases {
        assert!(corpus().join(&c.file).exists(), "cases.json names {} which is not in the corpus", c.file);
        assert!(seen.insert(c.file.clone()), "{} has two cases", c.file);
        assert!((1..=6).contains(&c.exit), "{}: exit {} is not a documented failure code", c.file, c.exit);
        assert!(!c.expect.is_empty(), "{}: say what the message must hold", c.file);
    }
}

#[test]
fn every_bad_input_gets_its_documented_error() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("tiny.gguf");
    write_gguf(&model, &tiny_config(Architecture::Llama), 7, candle_core::quantized::GgmlDType::F32).unwrap();
    let rubric = common::repo().join("examples/support-ticket.rubric.json");
    let result = common::repo().join("bench/results/authored144_smollm2-135m-instruct.q4_1_readout_0shot_none.json");
    let mut failures = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        let file = corpus().join(&case.file);
        let work = tmp.path().join(format!("case{i}"));
        std::fs::create_dir_all(&work).unwrap();
        let args: Vec<String> = case
            .args
            .iter()
            .map(|a| {
                a.replace("{file}", &file.display().to_string())
                    .replace("{model}", &model.display().to_string())
                    .replace("{rubric}", &rubric.display().to_string())
                    .replace("{result}", &result.display().to_string())
                    .replace("{tmp}", &work.display().to_string())
            })
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_readout"))
            .args(&args)
            .current_dir(common::repo())
            // A user may have backtraces on; the message must still be one clean error.
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("readout runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let what = format!("{} (readout {})", case.file, case.args.join(" "));
        let code = out.status.code().unwrap_or(-1);
        let mut problems = Vec::new();
        if code != case.exit {
            problems.push(format!("exit {code}, expected {}", case.exit));
        }
        let name = Path::new(&case.file).file_name().unwrap().to_string_lossy().into_owned();
        for want in std::iter::once(&name).chain(&case.expect) {
            if !stderr.contains(want.as_str()) {
                problems.push(format!("message lacks `{want}`"));
            }
        }
        if let Err(p) = std::panic::catch_unwind(|| assert_clean(&stderr, &what)) {
            problems.push(p.downcast_ref::<String>().cloned().unwrap_or_default());
        }
        if !problems.is_empty() {
            failures.push(format!("{what}\n  {}\n  stderr: {}", problems.join("\n  "), stderr.trim()));
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// A 2 MB state is read (an eval set has no length limit), then refused before any scoring
/// because its prompt is longer than the model's context: exit 5, naming the item and its line.
#[test]
fn a_two_megabyte_state_is_refused_for_the_context_not_crashed_on() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("tiny.gguf");
    write_gguf(&model, &tiny_config(Architecture::Llama), 7, candle_core::quantized::GgmlDType::F32).unwrap();
    let set = tmp.path().join("huge-state.jsonl");
    let state = "All work and no play makes a long ticket. ".repeat(2 * 1024 * 1024 / 42 + 1);
    let line = serde_json::json!({"id": "huge", "state": state, "question": "Is it long?",
        "options": [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}], "label": 0});
    std::fs::write(&set, format!("{line}\n")).unwrap();
    assert!(std::fs::metadata(&set).unwrap().len() > 2_000_000);
    let out = Command::new(env!("CARGO_BIN_EXE_readout"))
        .args(["run", &set.display().to_string(), "--device", "cpu", "--model", &model.display().to_string()])
        .arg("--out")
        .arg(tmp.path().join("out.json"))
        .current_dir(common::repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_clean(&stderr, "huge state");
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("context") && stderr.contains("shorten"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// The model files of the corpus, written deterministically (run with --ignored to refresh them).

/// A tiny llama shape whose every matrix is a whole number of 32-element blocks.
fn micro() -> readout::engine::ModelConfig {
    let mut c = tiny_config(Architecture::Llama);
    c.hidden_size = 32;
    c.intermediate_size = 64;
    c.num_layers = 1;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_dim = 16;
    c.context_length = 256;
    c
}

const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

struct Micro {
    arch: String,
    cfg: readout::engine::ModelConfig,
    drop_keys: Vec<String>,
    drop_tensors: Vec<String>,
    reshape: Option<(String, Vec<usize>)>,
    extra_tokens: Vec<String>,
    merges: Vec<String>,
    template: String,
}

impl Micro {
    fn new() -> Self {
        Micro {
            arch: "llama".into(),
            cfg: micro(),
            drop_keys: vec![],
            drop_tensors: vec![],
            reshape: None,
            extra_tokens: vec![],
            merges: vec![],
            template: CHATML.into(),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        use candle_core::quantized::{gguf_file::Value, GgmlDType, QTensor};
        use candle_core::{Device, Tensor};
        let a = self.arch.as_str();
        let c = &self.cfg;
        let mut tokens = byte_tokens();
        tokens.extend(SPECIALS.iter().map(|s| s.to_string()));
        tokens.extend(self.extra_tokens.iter().cloned());
        let vocab = tokens.len();
        let types: Vec<Value> =
            (0..vocab).map(|i| Value::I32(if (256..256 + SPECIALS.len()).contains(&i) { 3 } else { 1 })).collect();
        let md: Vec<(String, Value)> = vec![
            ("general.architecture".into(), Value::String(a.into())),
            ("general.name".into(), Value::String("bad-input".into())),
            (format!("{a}.block_count"), Value::U32(c.num_layers as u32)),
            (format!("{a}.context_length"), Value::U32(c.context_length as u32)),
            (format!("{a}.embedding_length"), Value::U32(c.hidden_size as u32)),
            (format!("{a}.feed_forward_length"), Value::U32(c.intermediate_size as u32)),
            (format!("{a}.attention.head_count"), Value::U32(c.num_heads as u32)),
            (format!("{a}.attention.head_count_kv"), Value::U32(c.num_kv_heads as u32)),
            (format!("{a}.attention.key_length"), Value::U32(c.head_dim as u32)),
            (format!("{a}.vocab_size"), Value::U32(vocab as u32)),
            ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
            ("tokenizer.ggml.pre".into(), Value::String("gpt2".into())),
            ("tokenizer.ggml.tokens".into(), Value::Array(tokens.iter().map(|t| Value::String(t.clone())).collect())),
            ("tokenizer.ggml.token_type".into(), Value::Array(types)),
            (
                "tokenizer.ggml.merges".into(),
                Value::Array(self.merges.iter().map(|m| Value::String(m.clone())).collect()),
            ),
            ("tokenizer.ggml.bos_token_id".into(), Value::U32(256)),
            ("tokenizer.ggml.eos_token_id".into(), Value::U32(258)),
            ("tokenizer.chat_template".into(), Value::String(self.template.clone())),
        ];
        let md: Vec<(String, Value)> = md.into_iter().filter(|(k, _)| !self.drop_keys.contains(k)).collect();
        let (d, ff, hd) = (c.hidden_size, c.intermediate_size, c.head_dim);
        let (q, kv) = (c.num_heads * hd, c.num_kv_heads * hd);
        let mut shapes: Vec<(String, Vec<usize>)> = vec![("token_embd.weight".into(), vec![vocab, d])];
        for (k, s) in [
            ("attn_norm", vec![d]),
            ("attn_q", vec![q, d]),
            ("attn_k", vec![kv, d]),
            ("attn_v", vec![kv, d]),
            ("attn_output", vec![d, q]),
            ("ffn_norm", vec![d]),
            ("ffn_gate", vec![ff, d]),
            ("ffn_up", vec![ff, d]),
            ("ffn_down", vec![d, ff]),
        ] {
            shapes.push((format!("blk.0.{k}.weight"), s));
        }
        if a == "qwen2" {
            for (k, n) in [("attn_q", q), ("attn_k", kv), ("attn_v", kv)] {
                shapes.push((format!("blk.0.{k}.bias"), vec![n]));
            }
        }
        shapes.push(("output_norm.weight".into(), vec![d]));
        let mut qs = Vec::new();
        for (name, mut shape) in shapes {
            if self.drop_tensors.contains(&name) {
                continue;
            }
            if let Some((n, s)) = &self.reshape {
                if *n == name {
                    shape = s.clone();
                }
            }
            let n: usize = shape.iter().product();
            let vals: Vec<f32> = (0..n).map(|i| ((i * 7919) % 101) as f32 / 500.0 - 0.1).collect();
            let t = Tensor::from_vec(vals, shape.as_slice(), &Device::Cpu).unwrap();
            qs.push((name, QTensor::quantize(&t, GgmlDType::F32).unwrap()));
        }
        let mut buf = std::io::Cursor::new(Vec::new());
        let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let t_refs: Vec<(&str, &QTensor)> = qs.iter().map(|(k, v)| (k.as_str(), v)).collect();
        candle_core::quantized::gguf_file::write(&mut buf, &md_refs, &t_refs).unwrap();
        buf.into_inner()
    }
}

#[test]
#[ignore = "rewrites the committed model files of the corpus"]
fn regenerate_model_corpus() {
    let dir = corpus().join("models");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
    let good = Micro::new().bytes();
    write("empty.gguf", b"");
    write("not-a-gguf.gguf", b"This is a text file that was renamed to .gguf.\n");
    write("truncated-header.gguf", &good[..1000]);
    write("truncated-data.gguf", &good[..good.len() - 9000]);
    write("arch-gpt2.gguf", &Micro { arch: "gpt2".into(), ..Micro::new() }.bytes());
    write("no-architecture.gguf", &Micro { drop_keys: vec!["general.architecture".into()], ..Micro::new() }.bytes());
    write(
        "missing-head-count.gguf",
        &Micro { drop_keys: vec!["llama.attention.head_count".into()], ..Micro::new() }.bytes(),
    );
    write("missing-tensor.gguf", &Micro { drop_tensors: vec!["blk.0.ffn_down.weight".into()], ..Micro::new() }.bytes());
    write(
        "qwen2-missing-bias.gguf",
        &Micro { arch: "qwen2".into(), drop_tensors: vec!["blk.0.attn_k.bias".into()], ..Micro::new() }.bytes(),
    );
    write(
        "wrong-tensor-shape.gguf",
        &Micro { reshape: Some(("blk.0.attn_k.weight".into(), vec![32, 32])), ..Micro::new() }.bytes(),
    );
    write("no-tokenizer.gguf", &Micro { drop_keys: vec!["tokenizer.ggml.tokens".into()], ..Micro::new() }.bytes());
    write(
        "no-chat-template.gguf",
        &Micro { drop_keys: vec!["tokenizer.chat_template".into()], ..Micro::new() }.bytes(),
    );
    // The chat template leaves the model to answer after "Answer: ", and the vocabulary merges a
    // space with a letter, so `prompt + "A"` does not tokenize as `prompt` then `A`.
    let template = CHATML.replace("assistant\\n' }}{% endif %}", "assistant\\nAnswer: ' }}{% endif %}");
    assert_ne!(template, CHATML);
    let letters: Vec<String> = ('A'..='Z').map(|l| format!("\u{120}{l}")).collect();
    let merges: Vec<String> = ('A'..='Z').map(|l| format!("\u{120} {l}")).collect();
    write("letters-merge-with-prompt.gguf", &Micro { extra_tokens: letters, merges, template, ..Micro::new() }.bytes());
}
