//! Gemma 3 on tiny random-weights models (`synthetic::tiny_config(Gemma3)`: six layers, five
//! local with a sliding window of 4 tokens and one global, linear RoPE scaling on the global
//! one), as a GGUF file and as a Hugging Face directory. The prompts are far longer than the
//! window, so every way Readout computes a token — a cached prefix, suffixes batched under a
//! tree mask, units of several parents in one pass, grouped or not — must cut each local layer's
//! attention at the window along the token's own path, prefix included, and give the logits of
//! one plain forward pass over the whole sequence. They run on the CPU, or on the device
//! `READOUT_TEST_DEVICE` names.

use readout::engine::device::DeviceRequest;
use readout::engine::synthetic::{tiny_config, tiny_gemma3_with_window};
use readout::engine::{Architecture, Engine, ModelConfig, PassOptions, Prefix, Suffix, Unit, WeightsMode};
use std::path::{Path, PathBuf};

use crate::common::{rel_diff, test_device};

fn write(cfg: &ModelConfig, format: &str, dir: &Path, name: &str) -> PathBuf {
    crate::common::write_tiny(cfg, format, dir, name, 11)
}

fn load(path: &Path, weights: WeightsMode) -> Engine {
    crate::common::load_on_test_device(path, weights)
}

// `rel_diff`: the tiny model's logits reach ±150 (its head is its embedding, scaled by √256 on
// the way in). Rounding alone keeps it under 2e-6; the window's effect is a thousand times that.
const SAME: f32 = 2e-6;

const TEXT: &str = "<|im_start|>user\nText:\nThe parcel came two days late and the box was crushed.\n\nQuestion: Was it damaged?\nA. Yes\nB. No<|im_end|>\n<|im_start|>assistant\n";

/// The whole vocabulary's logits after `ids`, from one plain forward pass.
fn plain(e: &Engine, ids: &[u32]) -> Vec<f32> {
    e.next_logits(&Prefix::empty(), ids).unwrap().1
}

fn vocab(e: &Engine) -> Vec<u32> {
    (0..e.info().config.vocab_size as u32).collect()
}

#[test]
fn a_gemma3_model_loads_as_gemma3() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["f32", "hf"] {
        let e = load(&write(&tiny_config(Architecture::Gemma3), format, dir.path(), "g"), WeightsMode::Auto);
        let info = e.info();
        assert_eq!(info.architecture, Architecture::Gemma3);
        let g = info.config.gemma.as_ref().expect("gemma3 parameters");
        assert_eq!(g.sliding_window, 4);
        assert_eq!(g.local_layers, vec![true, true, true, true, true, false]);
        assert_eq!(
            (g.rope_local_theta, g.rope_global_scale, g.query_scale, g.embed_scale),
            (10_000.0, 0.5, 0.125, 16.0)
        );
        assert_eq!(info.config.rope_theta, 1_000_000.0);
        assert_eq!(info.parameters, tiny_config(Architecture::Gemma3).parameter_count());
    }
}

#[test]
fn gguf_and_hugging_face_forms_are_the_same_model() {
    // The directory stores each norm's `w` and the GGUF its `1 + w`, the MLP's norm under
    // another name, RoPE scaling as `rope_scaling`, the query scale as `query_pre_attn_scalar`:
    // read right, they are one model.
    let dir = tempfile::tempdir().unwrap();
    let cfg = tiny_config(Architecture::Gemma3);
    let gguf = load(&write(&cfg, "f32", dir.path(), "g"), WeightsMode::F32);
    let hf = load(&write(&cfg, "hf", dir.path(), "g"), WeightsMode::F32);
    let ids = gguf.tokenizer().encode(TEXT).unwrap();
    assert!(ids.len() > 10 * 4, "a prompt of {} tokens, against a window of 4", ids.len());
    let d = rel_diff(&plain(&gguf, &ids), &plain(&hf, &ids));
    assert!(d < SAME, "GGUF against Hugging Face: relative max |Δlogit| = {d}");
}

#[test]
fn the_window_changes_the_logits_and_only_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let narrow = load(&write(&tiny_gemma3_with_window(4), "f32", dir.path(), "w4"), WeightsMode::F32);
    let wide = load(&write(&tiny_gemma3_with_window(1024), "f32", dir.path(), "w1024"), WeightsMode::F32);
    let ids = narrow.tokenizer().encode(TEXT).unwrap();
    // Four tokens: every key is within the window, so the two models are one.
    assert_eq!(plain(&narrow, &ids[..4]), plain(&wide, &ids[..4]));
    // Five: the first token drops out of the local layers' view.
    let d = rel_diff(&plain(&narrow, &ids[..5]), &plain(&wide, &ids[..5]));
    assert!(d > 1e3 * SAME, "a window of 4 against one of 1024 over 5 tokens: relative max |Δlogit| = {d}");
    let d = rel_diff(&plain(&narrow, &ids), &plain(&wide, &ids));
    assert!(d > 1e3 * SAME, "over {} tokens: relative max |Δlogit| = {d}", ids.len());
}

#[test]
fn a_window_of_one_sees_only_the_token_itself() {
    // With W = 1 the local layers attend to the token alone, wherever its keys come from: a
    // prefix computed before gives the same logits as one pass.
    let dir = tempfile::tempdir().unwrap();
    let e = load(&write(&tiny_gemma3_with_window(1), "f32", dir.path(), "w1"), WeightsMode::F32);
    let ids = e.tokenizer().encode(TEXT).unwrap();
    let full = plain(&e, &ids);
    let pre = e.extend(&Prefix::empty(), &ids[..ids.len() - 3]).unwrap();
    let r = e.read(&pre, &[Suffix { tokens: &ids[ids.len() - 3..], read: &vocab(&e) }]).unwrap();
    let d = rel_diff(&full, &r[0].logits);
    assert!(d < SAME, "window 1: {d}");
}

#[test]
fn a_cached_prefix_past_the_window_gives_the_plain_pass() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["f32", "hf"] {
        let e = load(&write(&tiny_config(Architecture::Gemma3), format, dir.path(), "g"), WeightsMode::F32);
        let ids = e.tokenizer().encode(TEXT).unwrap();
        let all = vocab(&e);
        let full = plain(&e, &ids);
        for cut in [1, 3, 4, 5, ids.len() / 2, ids.len() - 4, ids.len() - 1] {
            let pre = e.extend(&Prefix::empty(), &ids[..cut]).unwrap();
            let r = e.read(&pre, &[Suffix { tokens: &ids[cut..], read: &all }]).unwrap();
            let d = rel_diff(&full, &r[0].logits);
            assert!(d < SAME, "{format} cut {cut}: relative max |Δlogit| = {d}");
            let (_, next) = e.next_logits(&pre, &ids[cut..]).unwrap();
            assert!(rel_diff(&next, &full) < SAME, "{format} cut {cut}, next_logits");
        }
        // A prefix in several passes of a few tokens each (each pass shorter than the window
        // and its keys from chunks of earlier passes).
        let opts = PassOptions { pass_tokens: 3, ..e.pass_defaults() };
        let pre = e.extend_with(&Prefix::empty(), &ids[..ids.len() - 2], opts).unwrap();
        let r = e.read(&pre, &[Suffix { tokens: &ids[ids.len() - 2..], read: &all }]).unwrap();
        let d = rel_diff(&full, &r[0].logits);
        assert!(d < SAME, "{format}, prefix in passes of 3: {d}");
    }
}

#[test]
fn batched_suffixes_past_the_window_equal_plain_passes() {
    let dir = tempfile::tempdir().unwrap();
    let e = load(&write(&tiny_config(Architecture::Gemma3), "f32", dir.path(), "g"), WeightsMode::F32);
    let enc = |t: &str| e.tokenizer().encode(t).unwrap();
    let prefix = enc("<|im_start|>user\nText:\nA shared state of some length.\n\n");
    let pre = e.extend(&Prefix::empty(), &prefix).unwrap();
    // Suffixes shorter than, as long as, and longer than the window.
    let tails =
        ["Question: one?\nA. x\nB. y", "Q: two, a longer one with more tokens in it?", "C", "abc", "abcd", "abcde"];
    let toks: Vec<Vec<u32>> = tails.iter().map(|t| enc(t)).collect();
    let all = vocab(&e);
    let batch: Vec<Suffix> = toks.iter().map(|t| Suffix { tokens: t, read: &all }).collect();
    let together = e.read(&pre, &batch).unwrap();
    for (i, t) in toks.iter().enumerate() {
        let whole: Vec<u32> = prefix.iter().chain(t).copied().collect();
        let d = rel_diff(&together[i].logits, &plain(&e, &whole));
        assert!(d < SAME, "suffix {i} ({} tokens) against one plain pass: {d}", t.len());
    }
}

#[test]
fn units_of_several_parents_in_one_pass_equal_plain_passes() {
    // Grouping off: one attention per unit; on: units on the same parent share one attention
    // under one mask (as on a GPU), and the window must hold within it too.
    let dir = tempfile::tempdir().unwrap();
    let e = load(&write(&tiny_config(Architecture::Gemma3), "f32", dir.path(), "g"), WeightsMode::F32);
    let enc = |t: &str| e.tokenizer().encode(t).unwrap();
    let root_ids = enc("<|im_start|>system\nShared root.\n");
    let other_ids = enc("A state under the root.");
    let root = e.extend(&Prefix::empty(), &root_ids).unwrap();
    let other = e.extend(&root, &other_ids).unwrap();
    let (stem_a, stem_b) = (enc("Stem of unit one"), enc("Unit two has its own, longer stem"));
    let leaves: Vec<Vec<u32>> = ["A. yes", "B. no, not at all", "C"].iter().map(|t| enc(t)).collect();
    let all = vocab(&e);
    let sfx: Vec<Suffix> = leaves.iter().map(|t| Suffix { tokens: t, read: &all }).collect();
    let units = vec![
        Unit { parent: &root, stem: &stem_a, leaves: sfx.clone(), keep: true },
        Unit { parent: &other, stem: &stem_b, leaves: sfx[..2].to_vec(), keep: true },
        Unit { parent: &root, stem: &[], leaves: sfx[2..].to_vec(), keep: true },
        Unit { parent: &other, stem: &stem_a, leaves: vec![], keep: true },
    ];
    for grouped in [false, true] {
        let opts = PassOptions { group_units: grouped, ..e.pass_defaults() };
        let out = e.pass_with(&units, opts).unwrap();
        for (u, got) in units.iter().zip(&out) {
            let base: Vec<u32> = u.parent.tokens().iter().chain(u.stem).copied().collect();
            assert_eq!(got.prefix.tokens(), &base[..]);
            for (leaf, r) in u.leaves.iter().zip(&got.readouts) {
                let whole: Vec<u32> = base.iter().chain(leaf.tokens).copied().collect();
                let d = rel_diff(&r.logits, &plain(&e, &whole));
                assert!(d < SAME, "grouped {grouped}: a leaf against one plain pass: {d}");
            }
            // The unit's new prefix carries on like the plain pass.
            let tail = enc(" and on, past the window");
            let whole: Vec<u32> = base.iter().chain(&tail).copied().collect();
            let x = e.read(&got.prefix, &[Suffix { tokens: &tail, read: &all }]).unwrap();
            assert!(rel_diff(&x[0].logits, &plain(&e, &whole)) < SAME, "grouped {grouped}: carrying on");
        }
    }
}

#[test]
fn native_q5_0_and_k_quant_weights_agree_with_f32() {
    // Q5_0 (the Gemma 3 270M file's attention and MLP matrices) and Q4_K, held in their
    // encoding: through the integer kernel with 16-bit activations where the CPU has it, f32
    // panels where not; within rounding of the same file expanded to f32.
    let dir = tempfile::tempdir().unwrap();
    let cpu = test_device() == DeviceRequest::Cpu;
    for format in ["q5_0", "q4_k", "q8_0"] {
        let path = write(&tiny_config(Architecture::Gemma3), format, dir.path(), "g");
        let f32e = load(&path, WeightsMode::F32);
        let native = load(&path, WeightsMode::Native);
        assert_eq!(native.info().weights, WeightsMode::Native);
        let ids = f32e.tokenizer().encode(TEXT).unwrap();
        let reference = plain(&f32e, &ids);
        let mean = reference.iter().sum::<f32>() / reference.len() as f32;
        let norm = reference.iter().map(|x| (x - mean).powi(2)).sum::<f32>().sqrt();
        let got = plain(&native, &ids);
        let err = got.iter().zip(&reference).map(|(a, b)| (a - b).powi(2)).sum::<f32>().sqrt() / norm;
        let bound = if cpu { 1e-3 } else { 0.05 };
        assert!(err < bound, "{format} native ({} activations): relative error {err}", native.info().activations);
        // The tree path on native weights, too.
        let pre = native.extend(&Prefix::empty(), &ids[..ids.len() / 2]).unwrap();
        let r = native.read(&pre, &[Suffix { tokens: &ids[ids.len() / 2..], read: &vocab(&native) }]).unwrap();
        let d = rel_diff(&r[0].logits, &got);
        assert!(d < SAME, "{format} native: prefix + suffix: {d}");
    }
}

#[test]
fn a_run_on_a_gemma3_model_writes_a_valid_result_file() {
    // The CLI end to end on a Q5_0 gemma3 file (its byte-level tokenizer and ChatML template):
    // the result file records the architecture and passes the schema.
    let dir = tempfile::tempdir().unwrap();
    let model = write(&tiny_config(Architecture::Gemma3), "q5_0", dir.path(), "g");
    let out = dir.path().join("r.json");
    let (m, o) = (model.to_str().unwrap(), out.to_str().unwrap());
    let args = ["run", "bench/evalsets/authored144.jsonl", "--model", m, "--device", "cpu", "--limit", "3"];
    let r = crate::common::readout(&[&args[..], &["--shots", "0", "--debias", "cyclic", "--out", o]].concat());
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let doc = crate::common::validate(&out);
    assert_eq!(doc["model"]["architecture"], "gemma3");
    assert_eq!(doc["model"]["quantisation"], "Q5_0");
}
