//! `readout quantize` from a Hugging Face directory: the GGUF it writes loads in Readout and gives
//! the logits the directory gives (to rounding in f32, within quantisation noise in q8_0), with
//! the same token ids; tokenizers it cannot name for llama.cpp are refused before writing.

use readout::engine::synthetic::{tiny_config, write_hf_dir};
use readout::engine::{Architecture, Engine, LoadOptions, MatmulPath, Prefix, Suffix};
use readout::quantize::{quantize, QuantMode};
use std::path::Path;

const PROMPT: &str = "<|im_start|>system\nAnswer with a letter.<|im_end|>\n<|im_start|>user\nText:\nThe lenses were ordered but not fitted yet (3 of 12).\n\nQuestion: Fitted?\n\nOptions:\nA. Yes\nB. No\nC. Unsure\n<|im_end|>\n<|im_start|>assistant\n";

fn load(path: &Path) -> Engine {
    Engine::load(
        path,
        &LoadOptions {
            device: readout::engine::device::DeviceRequest::Cpu,
            matmul: MatmulPath::Dense,
            ..Default::default()
        },
    )
    .unwrap()
}

/// Logits of the whole vocabulary and of the letters A, B, C after [`PROMPT`].
fn logits(e: &Engine) -> (Vec<f32>, Vec<f32>) {
    let ids = e.tokenizer().encode(PROMPT).unwrap();
    let vocab: Vec<u32> = (0..e.info().config.vocab_size as u32).collect();
    let all = e.read(&Prefix::empty(), &[Suffix { tokens: &ids, read: &vocab }]).unwrap().remove(0).logits;
    let letters = e.answer_tokens(PROMPT, &ids, 3).unwrap();
    let at: Vec<f32> = letters.iter().map(|&t| all[t as usize]).collect();
    (all, at)
}

fn relative_error(a: &[f32], reference: &[f32]) -> f32 {
    let mean = reference.iter().sum::<f32>() / reference.len() as f32;
    let norm = reference.iter().map(|x| (x - mean).powi(2)).sum::<f32>().sqrt();
    a.iter().zip(reference).map(|(x, y)| (x - y).powi(2)).sum::<f32>().sqrt() / norm
}

#[test]
fn hf_directory_quantizes_to_a_gguf_with_the_same_logits() {
    let dir = tempfile::tempdir().unwrap();
    // Llama with an untied head (its q/k rows are permuted for llama.cpp's RoPE), Qwen3 tied,
    // Qwen2 untied with its q/k/v biases (kept F32, as convert_hf_to_gguf.py keeps them).
    for (arch, tied) in [(Architecture::Llama, false), (Architecture::Qwen3, true), (Architecture::Qwen2, false)] {
        let mut cfg = tiny_config(arch);
        cfg.tie_embeddings = tied;
        let hf = dir.path().join(format!("{}-hf", arch.as_str()));
        write_hf_dir(&hf, &cfg, 11, None).unwrap();
        let reference = load(&hf);
        let (ref_all, ref_letters) = logits(&reference);
        for (mode, all_bound, letter_bound) in [(QuantMode::F32, 1e-5, 1e-4), (QuantMode::Q8_0, 0.05, 0.1)] {
            let out = dir.path().join(format!("{}-{mode:?}.gguf", arch.as_str()));
            let n = quantize(&hf, &out, mode).unwrap();
            assert_eq!(
                n,
                1 + cfg.num_layers
                    * match arch {
                        Architecture::Qwen3 => 11,
                        Architecture::Qwen2 => 12,
                        _ => 9,
                    }
                    + 1
                    + usize::from(!tied)
            );
            let e = load(&out);
            assert_eq!(e.info().config.architecture, arch);
            assert_eq!(e.info().config.tie_embeddings, tied);
            for text in [PROMPT, "plain text, digits 12345 and   spaces\n\n", "<|im_end|>x<|endoftext|>"] {
                assert_eq!(
                    e.tokenizer().encode(text).unwrap(),
                    reference.tokenizer().encode(text).unwrap(),
                    "{text:?}"
                );
            }
            let (all, letters) = logits(&e);
            let err = relative_error(&all, &ref_all);
            assert!(err < all_bound, "{arch:?} {mode:?}: relative logit error {err}");
            let d = letters.iter().zip(&ref_letters).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(d < letter_bound, "{arch:?} {mode:?}: letter logits {letters:?} vs {ref_letters:?}");
        }
    }
}

#[test]
fn quantizing_an_hf_directory_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let hf = dir.path().join("hf");
    write_hf_dir(&hf, &tiny_config(Architecture::Qwen3), 3, None).unwrap();
    let (a, b) = (dir.path().join("a.gguf"), dir.path().join("b.gguf"));
    quantize(&hf, &a, QuantMode::Q4K).unwrap();
    quantize(&hf, &b, QuantMode::Q4K).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn unknown_pre_tokenizer_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let hf = dir.path().join("hf");
    write_hf_dir(&hf, &tiny_config(Architecture::Llama), 3, None).unwrap();
    let tok_path = hf.join("tokenizer.json");
    let mut tok: serde_json::Value = serde_json::from_slice(&std::fs::read(&tok_path).unwrap()).unwrap();
    tok["pre_tokenizer"] = serde_json::json!({"type": "Whitespace"});
    std::fs::write(&tok_path, serde_json::to_vec(&tok).unwrap()).unwrap();
    let out = dir.path().join("out.gguf");
    let err = quantize(&hf, &out, QuantMode::F32).unwrap_err().to_string();
    assert!(
        err.contains("tokenizer.json") && err.contains("pre-tokenizer") && err.contains("convert_hf_to_gguf"),
        "{err}"
    );
    assert!(!out.exists() && !out.with_extension("gguf.part").exists());
}

#[test]
fn extra_tensor_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let hf = dir.path().join("hf");
    write_hf_dir(&hf, &tiny_config(Architecture::Qwen3), 3, None).unwrap();
    let st = hf.join("model.safetensors");
    let mut tensors = candle_core::safetensors::load(&st, &candle_core::Device::Cpu).unwrap();
    tensors.insert(
        "model.layers.0.self_attn.q_proj.bias".into(),
        candle_core::Tensor::zeros(256, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap(),
    );
    candle_core::safetensors::save(&tensors, &st).unwrap();
    let err = quantize(&hf, &dir.path().join("out.gguf"), QuantMode::F32).unwrap_err().to_string();
    assert!(err.contains("model.layers.0.self_attn.q_proj.bias"), "{err}");
}
