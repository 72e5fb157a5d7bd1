//! The decoder families beside `gemma3` (which has its own module), on tiny random-weights
//! models: `qwen2` (biases on q, k and v, no q/k norms, an LM head of its own) as a GGUF file
//! and as a Hugging Face directory; Llama 3's `llama3` RoPE scaling (GGUF `rope_freqs.weight`);
//! a `MistralForCausalLM` directory, which is llama's graph under another name. Each way
//! Readout computes a token — a cached prefix, suffixes batched under a tree mask, a prefix in
//! several passes, native quantised weights — must give the logits of one plain forward pass
//! over the whole sequence. They run on the CPU, or on the device `READOUT_TEST_DEVICE` names.

use readout::engine::device::DeviceRequest;
use readout::engine::synthetic::{tiny_config, tiny_llama3};
use readout::engine::{Architecture, Engine, ModelConfig, PassOptions, Prefix, Suffix, WeightsMode};
use std::path::{Path, PathBuf};

use crate::common::{rel_diff, test_device};

fn write(cfg: &ModelConfig, format: &str, dir: &Path, name: &str) -> PathBuf {
    crate::common::write_tiny(cfg, format, dir, name, 5)
}

fn load(path: &Path, weights: WeightsMode) -> Engine {
    crate::common::load_on_test_device(path, weights)
}

const SAME: f32 = 2e-5;

const TEXT: &str = "<|im_start|>system\nAnswer with one letter.<|im_end|>\n<|im_start|>user\nText:\nThe parcel came two days late and the box was crushed; the driver left it in the rain.\n\nQuestion: Was it damaged?\nA. Yes\nB. No<|im_end|>\n<|im_start|>assistant\n";

fn plain(e: &Engine, ids: &[u32]) -> Vec<f32> {
    e.next_logits(&Prefix::empty(), ids).unwrap().1
}

fn vocab(e: &Engine) -> Vec<u32> {
    (0..e.info().config.vocab_size as u32).collect()
}

/// A cached prefix at several cuts, a prefix built in passes of 3 tokens, and suffixes batched
/// on one prefix all give the plain pass's logits.
fn tree_paths_equal_the_plain_pass(e: &Engine, what: &str) {
    let ids = e.tokenizer().encode(TEXT).unwrap();
    let all = vocab(e);
    let full = plain(e, &ids);
    for cut in [1, 5, ids.len() / 2, ids.len() - 1] {
        let pre = e.extend(&Prefix::empty(), &ids[..cut]).unwrap();
        let r = e.read(&pre, &[Suffix { tokens: &ids[cut..], read: &all }]).unwrap();
        let d = rel_diff(&r[0].logits, &full);
        assert!(d < SAME, "{what}: cached prefix cut at {cut}: relative max |Δlogit| = {d}");
    }
    let opts = PassOptions { pass_tokens: 3, ..e.pass_defaults() };
    let pre = e.extend_with(&Prefix::empty(), &ids[..ids.len() - 2], opts).unwrap();
    let r = e.read(&pre, &[Suffix { tokens: &ids[ids.len() - 2..], read: &all }]).unwrap();
    assert!(rel_diff(&r[0].logits, &full) < SAME, "{what}: a prefix in passes of 3");
    let enc = |t: &str| e.tokenizer().encode(t).unwrap();
    let shared = enc("<|im_start|>user\nText:\nA shared state.\n\n");
    let pre = e.extend(&Prefix::empty(), &shared).unwrap();
    let tails: Vec<Vec<u32>> =
        ["Question: one?\nA. x\nB. y", "C", "A longer question with more tokens?"].iter().map(|t| enc(t)).collect();
    let batch: Vec<Suffix> = tails.iter().map(|t| Suffix { tokens: t, read: &all }).collect();
    let together = e.read(&pre, &batch).unwrap();
    for (i, t) in tails.iter().enumerate() {
        let whole: Vec<u32> = shared.iter().chain(t).copied().collect();
        let d = rel_diff(&together[i].logits, &plain(e, &whole));
        assert!(d < SAME, "{what}: batched suffix {i} against one plain pass: {d}");
    }
}

#[test]
fn a_qwen2_model_loads_as_qwen2_with_its_biases_and_own_head() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = tiny_config(Architecture::Qwen2);
    assert!(!cfg.tie_embeddings);
    for format in ["f32", "hf"] {
        let e = load(&write(&cfg, format, dir.path(), "q"), WeightsMode::F32);
        let info = e.info();
        assert_eq!(info.architecture, Architecture::Qwen2);
        assert!(!info.config.tie_embeddings);
        // Per layer 4·256² (q, k, v, o at 256 × 256, 128, 128, 256) … by hand: q 65,536 + k and
        // v 65,536 + o 65,536 + MLP 393,216 + norms 512 + biases 512 = 590,848; two layers,
        // the embedding and the head (259 × 256 each) and the output norm: 1,314,560.
        assert_eq!(info.parameters, 1_314_560);
        tree_paths_equal_the_plain_pass(&e, &format!("qwen2 {format}"));
    }
}

#[test]
fn qwen2_gguf_and_hugging_face_forms_are_the_same_model() {
    // The biases under their two names (`blk.N.attn_q.bias`, `model.layers.N.self_attn.q_proj.bias`),
    // the head as `output.weight` and `lm_head.weight`: read right, they are one model.
    let dir = tempfile::tempdir().unwrap();
    let cfg = tiny_config(Architecture::Qwen2);
    let gguf = load(&write(&cfg, "f32", dir.path(), "q"), WeightsMode::F32);
    let hf = load(&write(&cfg, "hf", dir.path(), "q"), WeightsMode::F32);
    let ids = gguf.tokenizer().encode(TEXT).unwrap();
    assert_eq!(ids, hf.tokenizer().encode(TEXT).unwrap());
    let d = rel_diff(&plain(&gguf, &ids), &plain(&hf, &ids));
    assert!(d < 2e-6, "GGUF against Hugging Face: relative max |Δlogit| = {d}");
    // The biases are what they seem: the directory with them set to zero is the same weights
    // read as llama (no biases) to rounding, and with them as written it is not.
    let no_bias = |zero: bool, name: &str| -> PathBuf {
        let to = dir.path().join(name);
        std::fs::create_dir_all(&to).unwrap();
        let from = dir.path().join("q-hf");
        for f in ["tokenizer.json", "tokenizer_config.json"] {
            std::fs::copy(from.join(f), to.join(f)).unwrap();
        }
        let mut t = candle_core::safetensors::load(from.join("model.safetensors"), &candle_core::Device::Cpu).unwrap();
        let biases: Vec<String> = t.keys().filter(|k| k.ends_with(".bias")).cloned().collect();
        assert_eq!(biases.len(), 3 * cfg.num_layers);
        for k in biases {
            let b = t.remove(&k).unwrap();
            if zero {
                t.insert(k, b.zeros_like().unwrap());
            }
        }
        candle_core::safetensors::save(&t, to.join("model.safetensors")).unwrap();
        let mut config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(from.join("config.json")).unwrap()).unwrap();
        if !zero {
            config["architectures"] = serde_json::json!(["LlamaForCausalLM"]);
            config["model_type"] = serde_json::json!("llama");
        }
        std::fs::write(to.join("config.json"), config.to_string()).unwrap();
        to
    };
    let zeroed = plain(&load(&no_bias(true, "zeroed"), WeightsMode::F32), &ids);
    let without = plain(&load(&no_bias(false, "llama"), WeightsMode::F32), &ids);
    assert!(rel_diff(&zeroed, &without) < 2e-6, "zero biases are not no biases");
    let d = rel_diff(&plain(&hf, &ids), &without);
    assert!(d > 1e-3, "the biases changed nothing: {d}");
}

#[test]
fn qwen2_native_k_quants_agree_with_f32_and_keep_the_tree_paths() {
    // Q4_K and Q6_K, the real judge's encodings, held in their encoding.
    let dir = tempfile::tempdir().unwrap();
    let cpu = test_device() == DeviceRequest::Cpu;
    for format in ["q4_k", "q6_k"] {
        let path = write(&tiny_config(Architecture::Qwen2), format, dir.path(), "q");
        let f32e = load(&path, WeightsMode::F32);
        let native = load(&path, WeightsMode::Native);
        let ids = f32e.tokenizer().encode(TEXT).unwrap();
        let reference = plain(&f32e, &ids);
        let mean = reference.iter().sum::<f32>() / reference.len() as f32;
        let norm = reference.iter().map(|x| (x - mean).powi(2)).sum::<f32>().sqrt();
        let got = plain(&native, &ids);
        let err = got.iter().zip(&reference).map(|(a, b)| (a - b).powi(2)).sum::<f32>().sqrt() / norm;
        assert!(err < if cpu { 1e-3 } else { 0.05 }, "{format} native: relative error {err}");
        tree_paths_equal_the_plain_pass(&native, &format!("qwen2 {format} native"));
    }
}

#[test]
fn llama3_rope_scaling_loads_from_rope_freqs_and_changes_only_the_frequencies() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = tiny_llama3();
    let e = load(&write(&cfg, "f32", dir.path(), "l3"), WeightsMode::F32);
    assert_eq!(e.info().architecture, Architecture::Llama);
    assert_eq!(e.info().config.rope_factors, cfg.rope_factors);
    tree_paths_equal_the_plain_pass(&e, "llama3 rope");
    // The same weights without the factors: the same first token (position 0 is not rotated),
    // other logits further on.
    let unscaled = load(&write(&tiny_config(Architecture::Llama), "f32", dir.path(), "l"), WeightsMode::F32);
    let ids = e.tokenizer().encode(TEXT).unwrap();
    assert!(rel_diff(&plain(&e, &ids[..1]), &plain(&unscaled, &ids[..1])) < 2e-6);
    let d = rel_diff(&plain(&e, &ids), &plain(&unscaled, &ids));
    assert!(d > 1e-4, "the RoPE factors changed nothing: {d}");
}

#[test]
fn a_mistral_directory_is_the_llama_graph() {
    // MistralForCausalLM with the same weights as a LlamaForCausalLM directory: the same logits.
    let dir = tempfile::tempdir().unwrap();
    let cfg = tiny_config(Architecture::Llama);
    let llama_dir = write(&cfg, "hf", dir.path(), "l");
    let mistral_dir = dir.path().join("mistral");
    std::fs::create_dir_all(&mistral_dir).unwrap();
    for f in ["model.safetensors", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(llama_dir.join(f), mistral_dir.join(f)).unwrap();
    }
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(llama_dir.join("config.json")).unwrap()).unwrap();
    config["architectures"] = serde_json::json!(["MistralForCausalLM"]);
    config["model_type"] = serde_json::json!("mistral");
    config["sliding_window"] = serde_json::json!(null);
    std::fs::write(mistral_dir.join("config.json"), config.to_string()).unwrap();
    let (l, m) = (load(&llama_dir, WeightsMode::F32), load(&mistral_dir, WeightsMode::F32));
    assert_eq!(m.info().architecture, Architecture::Llama);
    let ids = l.tokenizer().encode(TEXT).unwrap();
    assert!(rel_diff(&plain(&m, &ids), &plain(&l, &ids)) < 2e-6);
    tree_paths_equal_the_plain_pass(&m, "mistral");
    // Mistral 7B v0.1's window of 4,096 tokens bounds the context Readout runs it with.
    config["sliding_window"] = serde_json::json!(512);
    std::fs::write(mistral_dir.join("config.json"), config.to_string()).unwrap();
    assert_eq!(load(&mistral_dir, WeightsMode::F32).info().config.context_length, 512);
}
