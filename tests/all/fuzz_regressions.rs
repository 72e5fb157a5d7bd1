//! The fuzz targets' committed inputs (`tests/fuzz-regressions/<target>/`), replayed on stable
//! Rust through the very calls the targets make (`fuzz/fuzz_targets/exercise.rs`). None may
//! panic. An input the fuzzer once broke the library with keeps libFuzzer's name for it
//! (`crash-*`, `oom-*`, `timeout-*`, `slow-unit-*`) and must now be refused with an error, as
//! must the hand-made `hostile-*` inputs (GGUF headers that make candle's own reader abort on a
//! huge allocation, divide by zero or overflow); `seed-*` files are the small, valid seed corpus
//! the fuzz runs start from and must be accepted; `corpus-*` files (a sample, spread over sizes, of
//! the inputs that reached new code in the fuzz runs, after libFuzzer's set-cover merge) and other
//! interesting inputs must only not panic. How to fuzz: `fuzz/README.md`.
//!
//! The GGUF seeds are written by
//! `cargo test --release --test fuzz_regressions -- --ignored regenerate_gguf_seeds`.

use crate::common;

#[path = "../../fuzz/fuzz_targets/exercise.rs"]
mod exercise;

use std::path::{Path, PathBuf};

type Exercise = fn(&[u8]) -> bool;

const TARGETS: [(&str, Exercise); 4] = [
    ("evalset", exercise::evalset),
    ("rubric", exercise::rubric),
    ("gguf_metadata", exercise::gguf_metadata),
    ("result_file", exercise::result_file),
];

/// The names libFuzzer gives the inputs it stopped on, and the hand-made hostile inputs: all must
/// be refused.
const FOUND: [&str; 5] = ["crash-", "oom-", "timeout-", "slow-unit-", "hostile-"];

fn dir() -> PathBuf {
    common::repo().join("tests/fuzz-regressions")
}

fn files(target: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir().join(target))
        .unwrap_or_else(|e| panic!("tests/fuzz-regressions/{target}: {e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn every_committed_fuzz_input_is_handled_without_a_panic() {
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for (target, exercise) in TARGETS {
        let files = files(target);
        let seeds = files.iter().filter(|p| name(p).starts_with("seed-")).count();
        assert!(seeds > 0, "tests/fuzz-regressions/{target} has no seed-* input");
        counts.push(format!("{target}: {}", files.len()));
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            let n = name(&file);
            let what = format!("{target}/{n}");
            match std::panic::catch_unwind(|| exercise(&bytes)) {
                Err(_) => failures.push(format!("{what}: panicked")),
                Ok(true) if FOUND.iter().any(|p| n.starts_with(p)) => {
                    failures.push(format!("{what}: a found input that is accepted; it should be refused"))
                }
                Ok(false) if n.starts_with("seed-") => failures.push(format!("{what}: a seed that is refused")),
                Ok(_) => {}
            }
        }
    }
    eprintln!("replayed: {}", counts.join(", "));
    assert!(failures.is_empty(), "{} input(s) failed:\n{}", failures.len(), failures.join("\n"));
}

/// The committed corpus stays small (the fuzz runs' own corpora are not committed).
#[test]
fn the_committed_corpus_is_small() {
    let total: u64 = TARGETS.iter().flat_map(|(t, _)| files(t)).map(|p| std::fs::metadata(p).unwrap().len()).sum();
    assert!(total < 1 << 20, "tests/fuzz-regressions holds {total} bytes; keep it under 1 MiB (minimise inputs)");
}

/// The refusals of found and hostile GGUF inputs are typed, name the file and the field, tensor
/// or byte, and say what to do (not only "no panic").
#[test]
fn found_gguf_inputs_are_refused_with_a_named_field() {
    let mut checked = 0;
    for file in files("gguf_metadata") {
        let n = name(&file);
        if !FOUND.iter().any(|p| n.starts_with(p)) {
            continue;
        }
        let bytes = std::fs::read(&file).unwrap();
        let e = readout::engine::read_metadata_bytes(&bytes, Path::new("model.gguf")).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("model.gguf: "), "{n}: {text}");
        match &e {
            readout::Error::Gguf { field, .. } => assert!(!field.is_empty(), "{n}: {text}"),
            readout::Error::BadTensor { tensor, .. } | readout::Error::UnsupportedTensorType { tensor, .. } => {
                assert!(!tensor.is_empty(), "{n}: {text}")
            }
            other => panic!("{n}: not a GGUF header error: {other}"),
        }
        assert!(
            ["download it again", "convert the model again", "re-quantise"].iter().any(|w| text.contains(w)),
            "{n}: says what to do: {text}"
        );
        checked += 1;
    }
    assert!(checked >= 8, "the hostile GGUF inputs are there ({checked})");
}

// ---------------------------------------------------------------------------------------------
// The GGUF seeds: tiny llama-shaped headers in each GGUF version, every value type, a few tensors.

/// A GGUF writer for any version (1 writes lengths and counts as u32).
struct Gguf {
    version: u32,
    out: Vec<u8>,
}

enum V<'a> {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(&'a str),
    Arr(u32, Vec<V<'a>>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl V<'_> {
    fn ty(&self) -> u32 {
        match self {
            V::U8(_) => 0,
            V::I8(_) => 1,
            V::U16(_) => 2,
            V::I16(_) => 3,
            V::U32(_) => 4,
            V::I32(_) => 5,
            V::F32(_) => 6,
            V::Bool(_) => 7,
            V::Str(_) => 8,
            V::Arr(..) => 9,
            V::U64(_) => 10,
            V::I64(_) => 11,
            V::F64(_) => 12,
        }
    }
}

impl Gguf {
    fn len(&mut self, n: usize) {
        if self.version == 1 {
            self.out.extend_from_slice(&(n as u32).to_le_bytes());
        } else {
            self.out.extend_from_slice(&(n as u64).to_le_bytes());
        }
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.out.extend_from_slice(s.as_bytes());
    }
    fn value(&mut self, v: &V) {
        match v {
            V::U8(x) => self.out.push(*x),
            V::I8(x) => self.out.push(*x as u8),
            V::U16(x) => self.out.extend_from_slice(&x.to_le_bytes()),
            V::I16(x) => self.out.extend_from_slice(&x.to_le_bytes()),
            V::U32(x) => self.out.extend_from_slice(&x.to_le_bytes()),
            V::I32(x) => self.out.extend_from_slice(&x.to_le_bytes()),
            V::F32(x) => self.out.extend_from_slice(&x.to_le_bytes()),
            V::Bool(x) => self.out.push(*x as u8),
            V::Str(s) => self.str(s),
            V::Arr(ty, items) => {
                self.out.extend_from_slice(&ty.to_le_bytes());
                self.len(items.len());
                for i in items {
                    self.value(i);
                }
            }
            V::U64(x) => self.out.extend_from_slice(&x.to_le_bytes()),
            V::I64(x) => self.out.extend_from_slice(&x.to_le_bytes()),
            V::F64(x) => self.out.extend_from_slice(&x.to_le_bytes()),
        }
    }

    /// A whole file: header, metadata, tensor table, padding, tensor data (zeros).
    fn file(version: u32, md: &[(&str, V)], tensors: &[(&str, &[u64], u32, u64)]) -> Vec<u8> {
        let mut g = Gguf { version, out: b"GGUF".to_vec() };
        g.out.extend_from_slice(&version.to_le_bytes());
        g.len(tensors.len());
        g.len(md.len());
        for (k, v) in md {
            g.str(k);
            g.out.extend_from_slice(&v.ty().to_le_bytes());
            g.value(v);
        }
        let mut offset = 0u64;
        for (name, dims, ty, bytes) in tensors {
            g.str(name);
            g.out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for &d in *dims {
                if version == 1 {
                    g.out.extend_from_slice(&(d as u32).to_le_bytes());
                } else {
                    g.out.extend_from_slice(&d.to_le_bytes());
                }
            }
            g.out.extend_from_slice(&ty.to_le_bytes());
            g.out.extend_from_slice(&offset.to_le_bytes());
            offset += bytes.div_ceil(32) * 32;
        }
        g.out.resize(g.out.len().div_ceil(32) * 32, 0);
        g.out.resize(g.out.len() + offset as usize, 0);
        g.out
    }
}

fn seed(version: u32, arch: &str) -> Vec<u8> {
    let a = |k: &str| format!("{arch}.{k}");
    let keys: Vec<String> = [
        "block_count",
        "context_length",
        "embedding_length",
        "feed_forward_length",
        "attention.head_count",
        "attention.head_count_kv",
        "attention.key_length",
        "vocab_size",
        "rope.freq_base",
        "attention.layer_norm_rms_epsilon",
    ]
    .iter()
    .map(|k| a(k))
    .collect();
    let tokens = ["<|im_start|>", "<|im_end|>", "A", "B", "Ġ", "ĠA"];
    let md: Vec<(&str, V)> = vec![
        ("general.architecture", V::Str(arch)),
        ("general.name", V::Str("fuzz seed")),
        ("general.alignment", V::U32(32)),
        (&keys[0], V::U32(1)),
        (&keys[1], V::U64(64)),
        (&keys[2], V::U32(8)),
        (&keys[3], V::U32(16)),
        (&keys[4], V::U32(2)),
        (&keys[5], V::U32(1)),
        (&keys[6], V::U32(4)),
        (&keys[7], V::U32(tokens.len() as u32)),
        (&keys[8], V::F32(10_000.0)),
        (&keys[9], V::F32(1e-5)),
        ("tokenizer.ggml.model", V::Str("gpt2")),
        ("tokenizer.ggml.pre", V::Str("smollm")),
        ("tokenizer.ggml.tokens", V::Arr(8, tokens.iter().map(|t| V::Str(t)).collect())),
        (
            "tokenizer.ggml.token_type",
            V::Arr(5, vec![V::I32(3), V::I32(3), V::I32(1), V::I32(1), V::I32(1), V::I32(1)]),
        ),
        ("tokenizer.ggml.merges", V::Arr(8, vec![V::Str("Ġ A")])),
        ("tokenizer.ggml.bos_token_id", V::U32(0)),
        ("tokenizer.ggml.add_bos_token", V::Bool(false)),
        ("tokenizer.chat_template", V::Str("{% for m in messages %}{{ m['content'] }}{% endfor %}")),
        ("seed.u8", V::U8(7)),
        ("seed.i8", V::I8(-7)),
        ("seed.u16", V::U16(700)),
        ("seed.i16", V::I16(-700)),
        ("seed.i64", V::I64(-7)),
        ("seed.f64", V::F64(0.5)),
        ("seed.nested", V::Arr(9, vec![V::Arr(4, vec![V::U32(1), V::U32(2)]), V::Arr(4, vec![])])),
    ];
    let tensors: [(&str, &[u64], u32, u64); 4] = [
        ("token_embd.weight", &[8, 6], 0, 8 * 6 * 4),
        ("output_norm.weight", &[8], 0, 8 * 4),
        ("blk.0.attn_q.weight", &[32, 8], 2, 8 * 18),
        ("blk.0.ffn_down.weight", &[256, 1], 12, 144),
    ];
    Gguf::file(version, &md, &tensors)
}

#[test]
#[ignore = "rewrites the committed GGUF seeds"]
fn regenerate_gguf_seeds() {
    let dir = dir().join("gguf_metadata");
    std::fs::create_dir_all(&dir).unwrap();
    for (file, bytes) in [
        ("seed-v3-llama.gguf", seed(3, "llama")),
        ("seed-v2-qwen3.gguf", seed(2, "qwen3")),
        ("seed-v1-llama.gguf", seed(1, "llama")),
    ] {
        readout::engine::read_metadata_bytes(&bytes, Path::new(file)).unwrap();
        std::fs::write(dir.join(file), bytes).unwrap();
    }
}
