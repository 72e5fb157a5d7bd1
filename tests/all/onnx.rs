//! ONNX exports (tests/fixtures/onnx/, made by bench/make-onnx-fixtures with Optimum and
//! onnxruntime-genai's builder): the weights Readout reads out of each graph are the model's own,
//! so the fp32 exports give the logits of the safetensors directory they were exported from, to
//! the bit; the int4 export decides too; `readout info` describes the graph; `readout score`
//! decides the example rubric; a file that is not an export is named. onnxruntime's own answers
//! on these files are checked by tests/onnx_fidelity.py (CI runs it).

use crate::common::{engine_at, readout, repo};
use readout::engine::{Engine, Prefix, Suffix};

const PROMPT: &str = "<|im_start|>system\nYou judge texts.<|im_end|>\n<|im_start|>user\nText:\nThe lenses were ordered but not fitted yet.\n\nQuestion: Fitted?\n\nOptions:\nA. Yes\nB. No\nC. Unsure\n\nAnswer with one letter.<|im_end|>\n<|im_start|>assistant\n";

fn fixture(arch: &str, export: &str) -> std::path::PathBuf {
    repo().join("tests/fixtures/onnx").join(arch).join(export)
}

/// The whole vocabulary's logits after [`PROMPT`].
fn logits(e: &Engine) -> Vec<f32> {
    let ids = e.tokenizer().encode(PROMPT).unwrap();
    let vocab: Vec<u32> = (0..e.info().config.vocab_size as u32).collect();
    e.read(&Prefix::empty(), &[Suffix { tokens: &ids, read: &vocab }]).unwrap().remove(0).logits
}

#[test]
fn fp32_exports_give_the_logits_of_the_directory_they_came_from() {
    for arch in ["llama", "qwen2", "qwen3", "gemma3"] {
        let want = logits(&engine_at(&fixture(arch, "hf")));
        // (Optimum 1.27 does not export Gemma 3.)
        let fp32 = if arch == "gemma3" { &["genai-fp32"][..] } else { &["optimum-fp32", "genai-fp32"][..] };
        for &export in fp32 {
            let e = engine_at(&fixture(arch, export));
            assert_eq!(e.info().config.num_layers, 2, "{arch} {export}");
            let got = logits(&e);
            let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            // The same f32 weights, multiplied in the same order: the same bits.
            assert!(worst == 0.0, "{arch} {export}: logits differ from the safetensors directory's by {worst}");
        }
        // The int4 export's weights are the builder's 4-bit blocks of the same weights: its
        // logits follow the f32 model's (these random weights round coarsely), and are not them.
        // (Qwen3's q4f16 export, the seed's layout, likewise: f16 scales and activations; and
        // its fp16 export, the weights rounded to f16.)
        let int4 = if arch == "qwen3" { &["genai-int4", "genai-q4f16", "genai-fp16"][..] } else { &["genai-int4"][..] };
        for export in int4 {
            let got = logits(&engine_at(&fixture(arch, export)));
            let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
            let (mg, mw) = (mean(&got), mean(&want));
            let cov: f32 = got.iter().zip(&want).map(|(a, b)| (a - mg) * (b - mw)).sum();
            let norm = |v: &[f32], m: f32| v.iter().map(|x| (x - m).powi(2)).sum::<f32>().sqrt();
            let corr = cov / (norm(&got, mg) * norm(&want, mw));
            assert!(
                corr > 0.5 && got != want,
                "{arch} {export}: the logits' correlation with the f32 model's is {corr}"
            );
        }
    }
}

#[test]
fn info_describes_the_graph_and_score_decides_the_example_rubric() {
    let dir = fixture("llama", "genai-int4");
    let out = readout(&["info", "-m", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = &info["onnx_graph"];
    assert_eq!((g["layers"].as_u64(), g["encodings"][0].as_str()), (Some(2), Some("int4 blocks of 32")), "{info:#}");
    assert!(g["ops"].as_array().unwrap().iter().any(|o| o[0] == "com.microsoft:MatMulNBits"), "{g:#}");
    let optimum = readout(&["info", "-m", fixture("qwen2", "optimum-fp32").to_str().unwrap()]);
    let info: serde_json::Value = serde_json::from_slice(&optimum.stdout).unwrap();
    assert_eq!(info["onnx_graph"]["encodings"], serde_json::json!(["f32"]), "{info:#}");
    assert_eq!(info["onnx_graph"]["tied_embeddings"], false);

    let out = readout(&[
        "score",
        "-m",
        fixture("qwen2", "optimum-fp32").to_str().unwrap(),
        "--rubric",
        "examples/support-ticket.rubric.json",
        "--text",
        "I was charged twice this month, please refund one of them.",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v.to_string();
    assert!(text.contains("\"chosen\""), "{text}");
}

#[test]
fn a_directory_whose_graph_is_not_an_export_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["config.json", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(fixture("llama", "hf").join(f), tmp.path().join(f)).unwrap();
    }
    std::fs::write(tmp.path().join("model.onnx"), b"not a protobuf at all").unwrap();
    let out = readout(&["info", "-m", tmp.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("model.onnx") && err.contains("not a readable ONNX model"), "{err}");
}

#[test]
fn onnx_edits_write_a_new_export_and_refuse_what_they_cannot_do() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("qwen2", "genai-int4");
    let trimmed = tmp.path().join("trimmed");
    let out = readout(&["onnx", "trim", "-m", src.to_str().unwrap(), "-o", trimmed.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The edited graph beside the original's weights and files.
    for f in ["model.onnx", "model.onnx.data", "config.json", "tokenizer.json"] {
        assert!(trimmed.join(f).is_file(), "{f} missing from the edited export");
    }
    let graph = std::fs::read(trimmed.join("model.onnx")).unwrap();
    let name = b"/readout/trim/Gather";
    assert!(graph.windows(name.len()).any(|w| w == name), "the edited graph has no Gather of the last position");
    // Writing over an edited export is refused; so is a letter that is not one token.
    let again = readout(&["onnx", "trim", "-m", src.to_str().unwrap(), "-o", trimmed.to_str().unwrap()]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("exists already"));
    let bad = tmp.path().join("bad");
    let out =
        readout(&["onnx", "prune", "-m", src.to_str().unwrap(), "--to", "A\u{2603}", "-o", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("is not one token"), "{err}");
    let pruned = tmp.path().join("pruned");
    let out =
        readout(&["onnx", "prune", "-m", trimmed.to_str().unwrap(), "--to", "ABC", "-o", pruned.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut to ABC"));
}
