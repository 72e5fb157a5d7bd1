//! Engine tests on tiny random-weights models of both architectures, written by the test:
//! a prefix and a suffix give the same logits as the full prompt; several suffixes read in one
//! batch give the same logits as each read alone; every format loads. They run on the CPU, or on
//! the device `READOUT_TEST_DEVICE` names (`cuda`, `metal`).

use candle_core::quantized::GgmlDType;
use readout::engine::device::DeviceRequest;
use readout::engine::synthetic::{tiny_config, write_gguf, write_hf_dir};
use readout::engine::{
    Architecture, AttentionPath, Engine, FusedKernels, LoadOptions, MatmulPath, PassOptions, Precision, Prefix, Suffix,
    Unit, WeightsMode,
};
use std::path::PathBuf;

fn tiny(arch: Architecture, format: &str, dir: &tempfile::TempDir) -> PathBuf {
    let cfg = tiny_config(arch);
    let path = dir.path().join(format!("{}-{format}", arch.as_str()));
    match format {
        "hf" => write_hf_dir(&path, &cfg, 7, None).unwrap(),
        f => {
            let ty = match f {
                "f32" => GgmlDType::F32,
                "f16" => GgmlDType::F16,
                "bf16" => GgmlDType::BF16,
                "q4_0" => GgmlDType::Q4_0,
                "q4_1" => GgmlDType::Q4_1,
                "q8_0" => GgmlDType::Q8_0,
                "q4_k" => GgmlDType::Q4K,
                "q6_k" => GgmlDType::Q6K,
                _ => unreachable!(),
            };
            let path = path.with_extension("gguf");
            write_gguf(&path, &cfg, 7, ty).unwrap();
            return path;
        }
    }
    path
}

/// The device the engine tests run on: `READOUT_TEST_DEVICE` (cpu, cuda, metal, auto), CPU when
/// unset. A binary built with `--features cuda` runs them on the GPU with `READOUT_TEST_DEVICE=cuda`.
fn test_device() -> DeviceRequest {
    match std::env::var("READOUT_TEST_DEVICE") {
        Ok(d) => d.parse().unwrap_or_else(|e| panic!("READOUT_TEST_DEVICE: {e}")),
        Err(_) => DeviceRequest::Cpu,
    }
}

fn load(path: &std::path::Path, matmul: MatmulPath) -> Engine {
    let e = Engine::load(path, &LoadOptions { device: test_device(), matmul, ..Default::default() }).unwrap();
    if test_device() != DeviceRequest::Cpu {
        eprintln!("engine test on {}", e.info().device);
    }
    e
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

const PROMPT: &str = "<|im_start|>system\nAnswer with a letter.<|im_end|>\n<|im_start|>user\nText:\nThe lenses were ordered but not fitted yet.\n\nQuestion: Fitted?\n\nOptions:\nA. Yes\nB. No\n<|im_end|>\n<|im_start|>assistant\n";

#[test]
fn prefix_plus_suffix_equals_full_prompt() {
    let dir = tempfile::tempdir().unwrap();
    for arch in [Architecture::Llama, Architecture::Qwen3] {
        for format in ["f32", "q8_0", "hf"] {
            let e = load(&tiny(arch, format, &dir), MatmulPath::Dense);
            let ids = e.tokenizer().encode(PROMPT).unwrap();
            let vocab: Vec<u32> = (0..e.info().config.vocab_size as u32).collect();
            let (_, full) = e.next_logits(&Prefix::empty(), &ids).unwrap();
            for cut in [1, ids.len() / 2, ids.len() - 1] {
                let pre = e.extend(&Prefix::empty(), &ids[..cut]).unwrap();
                let r = e.read(&pre, &[Suffix { tokens: &ids[cut..], read: &vocab }]).unwrap();
                let d = max_diff(&full, &r[0].logits);
                assert!(d < 1e-4, "{arch:?} {format} cut {cut}: max |Δlogit| = {d}");
            }
            // A prefix built in two steps equals one built at once.
            let a = e.extend(&e.extend(&Prefix::empty(), &ids[..10]).unwrap(), &ids[10..40]).unwrap();
            let r1 = e.read(&a, &[Suffix { tokens: &ids[40..], read: &vocab }]).unwrap();
            let d = max_diff(&full, &r1[0].logits);
            assert!(d < 1e-4, "{arch:?} {format} two-step prefix: {d}");
        }
    }
}

#[test]
fn batched_suffixes_equal_separate_reads() {
    let dir = tempfile::tempdir().unwrap();
    for arch in [Architecture::Llama, Architecture::Qwen3] {
        let e = load(&tiny(arch, "f32", &dir), MatmulPath::Dense);
        let prefix_ids = e.tokenizer().encode("<|im_start|>user\nText:\nA shared state of some length.\n\n").unwrap();
        let pre = e.extend(&Prefix::empty(), &prefix_ids).unwrap();
        let tails = ["Question: one?\nA. x\nB. y", "Q: two, a longer one with more tokens in it?", "C"];
        let toks: Vec<Vec<u32>> = tails.iter().map(|t| e.tokenizer().encode(t).unwrap()).collect();
        let read = [65u32, 66, 67];
        let batch: Vec<Suffix> = toks.iter().map(|t| Suffix { tokens: t, read: &read }).collect();
        let together = e.read(&pre, &batch).unwrap();
        for (i, t) in toks.iter().enumerate() {
            let alone = e.read(&pre, &[Suffix { tokens: t, read: &read }]).unwrap();
            let d = max_diff(&together[i].logits, &alone[0].logits);
            assert!(d < 1e-4, "{arch:?} suffix {i}: {d}");
            let mass_diff = (together[i].letter_mass.unwrap() - alone[0].letter_mass.unwrap()).abs();
            assert!(mass_diff < 1e-5);
        }
        // The prefix is unchanged by reading on it.
        assert_eq!(pre.len(), prefix_ids.len());
    }
}

#[test]
fn one_pass_over_units_of_different_parents_equals_separate_calls() {
    let dir = tempfile::tempdir().unwrap();
    // Grouping off: one attention per unit; on: units on the same parent (the first and third
    // here) share one, as on a GPU by default.
    for (arch, grouped) in [Architecture::Llama, Architecture::Qwen3].into_iter().flat_map(|a| [(a, false), (a, true)])
    {
        let e = load(&tiny(arch, "f32", &dir), MatmulPath::Dense);
        let opts = PassOptions { group_units: grouped, ..e.pass_defaults() };
        let enc = |t: &str| e.tokenizer().encode(t).unwrap();
        let root = e.extend(&Prefix::empty(), &enc("<|im_start|>system\nShared root.\n")).unwrap();
        let other = e.extend(&root, &enc("A state under the root.")).unwrap();
        let (stem_a, stem_b) = (enc("Stem of unit one"), enc("Unit two has its own, longer stem"));
        let leaves: Vec<Vec<u32>> = ["A. yes", "B. no, not at all", "C"].iter().map(|t| enc(t)).collect();
        let read = [65u32, 66];
        let sfx: Vec<Suffix> = leaves.iter().map(|t| Suffix { tokens: t, read: &read }).collect();
        let units = vec![
            Unit { parent: &root, stem: &stem_a, leaves: sfx.clone(), keep: true },
            Unit { parent: &other, stem: &stem_b, leaves: sfx[..2].to_vec(), keep: true },
            Unit { parent: &root, stem: &[], leaves: sfx[2..].to_vec(), keep: true },
            Unit { parent: &other, stem: &stem_a, leaves: vec![], keep: true },
        ];
        let together = e.pass_with(&units, opts).unwrap();
        for (u, out) in units.iter().zip(&together) {
            let prefix = e.extend(u.parent, u.stem).unwrap();
            assert_eq!(out.prefix.tokens(), prefix.tokens());
            let alone = e.read(&prefix, &u.leaves).unwrap();
            assert_eq!(out.readouts.len(), alone.len());
            for (a, b) in out.readouts.iter().zip(&alone) {
                let d = max_diff(&a.logits, &b.logits);
                assert!(d < 1e-4, "{arch:?} grouped {grouped}: {d}");
            }
            // The new prefix carries on exactly like one computed alone.
            let tail = enc(" and on");
            let x = e.read(&out.prefix, &[Suffix { tokens: &tail, read: &read }]).unwrap();
            let y = e.read(&prefix, &[Suffix { tokens: &tail, read: &read }]).unwrap();
            assert!(max_diff(&x[0].logits, &y[0].logits) < 1e-4);
        }
    }
}

#[test]
fn every_gguf_tensor_type_loads_and_agrees_with_f32() {
    // Relative L2 error of the full logit vector against the f32 model: quantisation noise,
    // not a different model. Both matmul paths are checked.
    let dir = tempfile::tempdir().unwrap();
    let f32e = load(&tiny(Architecture::Qwen3, "f32", &dir), MatmulPath::Dense);
    let ids = f32e.tokenizer().encode(PROMPT).unwrap();
    let vocab: Vec<u32> = (0..f32e.info().config.vocab_size as u32).collect();
    let reference = f32e.read(&Prefix::empty(), &[Suffix { tokens: &ids, read: &vocab }]).unwrap().remove(0).logits;
    let mean = reference.iter().sum::<f32>() / reference.len() as f32;
    let norm = reference.iter().map(|x| (x - mean).powi(2)).sum::<f32>().sqrt();
    for (format, bound) in
        [("f16", 0.01), ("bf16", 0.05), ("q8_0", 0.05), ("q6_k", 0.1), ("q4_k", 0.25), ("q4_1", 0.25), ("q4_0", 0.3)]
    {
        for matmul in [MatmulPath::Dense, MatmulPath::Quantized] {
            let e = load(&tiny(Architecture::Qwen3, format, &dir), matmul);
            let r = e.read(&Prefix::empty(), &[Suffix { tokens: &ids, read: &vocab }]).unwrap().remove(0).logits;
            let err = r.iter().zip(&reference).map(|(a, b)| (a - b).powi(2)).sum::<f32>().sqrt() / norm;
            assert!(err < bound, "{format} {matmul:?}: relative error {err}");
        }
    }
}

#[test]
fn native_weights_agree_with_the_same_file_expanded_to_f32() {
    // One file, its weights held in their encoding (multiplied by the integer kernel where the
    // CPU has it, decoded to f32 panels where not) and expanded to f32 at load: 16-bit
    // activations stay within rounding of the f32 path, 8-bit ones within a few percent.
    let dir = tempfile::tempdir().unwrap();
    let cpu = test_device() == DeviceRequest::Cpu;
    for format in ["f16", "bf16", "q8_0", "q6_k", "q4_k", "q4_1", "q4_0"] {
        let path = tiny(Architecture::Qwen3, format, &dir);
        let with = |weights, int8_activations| {
            let opts = LoadOptions { device: test_device(), weights, int8_activations, ..Default::default() };
            Engine::load(&path, &opts).unwrap()
        };
        let f32e = with(WeightsMode::F32, false);
        assert_eq!((f32e.info().weights, f32e.info().activations), (WeightsMode::F32, "f32"));
        let ids = f32e.tokenizer().encode(PROMPT).unwrap();
        let vocab: Vec<u32> = (0..f32e.info().config.vocab_size as u32).collect();
        let logits =
            |e: &Engine| e.read(&Prefix::empty(), &[Suffix { tokens: &ids, read: &vocab }]).unwrap().remove(0).logits;
        let reference = logits(&f32e);
        let mean = reference.iter().sum::<f32>() / reference.len() as f32;
        let norm = reference.iter().map(|x| (x - mean).powi(2)).sum::<f32>().sqrt();
        for (int8, bound) in [(false, if cpu { 1e-3 } else { 0.05 }), (true, 0.05)] {
            let e = with(WeightsMode::Native, int8);
            assert_eq!(e.info().weights, WeightsMode::Native);
            let err = logits(&e).iter().zip(&reference).map(|(a, b)| (a - b).powi(2)).sum::<f32>().sqrt() / norm;
            let tag = format!("{format} native, {} activations", e.info().activations);
            assert!(err < bound, "{tag}: relative error {err}");
            if cpu && ["f16", "bf16"].contains(&format) {
                // Not a block encoding of the integer kernel: decoded to f32, the same bits.
                assert_eq!((e.info().activations, err), ("f32", 0.0), "{tag}");
            }
        }
    }
}

#[test]
fn reduced_precision_stays_near_f32_on_a_gpu_and_is_refused_on_the_cpu() {
    // `--precision tf32|bf16`: on CUDA within a few percent of the f32 logits (bf16 rounds every
    // projection's input, so it moves them); on the CPU refused, saying what to use.
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(Architecture::Qwen3, "f32", &dir);
    let with = |precision| Engine::load(&path, &LoadOptions { device: test_device(), precision, ..Default::default() });
    if test_device() == DeviceRequest::Cpu {
        for p in [Precision::Tf32, Precision::Bf16] {
            let e = with(p).err().expect("refused on the CPU").to_string();
            assert!(e.contains("needs a CUDA GPU") && e.contains("--precision f32"), "{e}");
        }
        assert_eq!(with(Precision::F32).unwrap().info().precision, Precision::F32);
        return;
    }
    let f32e = with(Precision::F32).unwrap();
    let ids = f32e.tokenizer().encode(PROMPT).unwrap();
    let vocab: Vec<u32> = (0..f32e.info().config.vocab_size as u32).collect();
    let logits =
        |e: &Engine| e.read(&Prefix::empty(), &[Suffix { tokens: &ids, read: &vocab }]).unwrap().remove(0).logits;
    let reference = logits(&f32e);
    let mean = reference.iter().sum::<f32>() / reference.len() as f32;
    let norm = reference.iter().map(|x| (x - mean).powi(2)).sum::<f32>().sqrt();
    for p in [Precision::Tf32, Precision::Bf16] {
        let e = with(p).unwrap();
        assert_eq!(e.info().precision, p);
        let err = logits(&e).iter().zip(&reference).map(|(a, b)| (a - b).powi(2)).sum::<f32>().sqrt() / norm;
        assert!(err < 0.05, "{p:?}: relative error {err}");
        if p == Precision::Bf16 {
            assert!(err > 0.0, "bf16 gave the f32 logits bit for bit: its matmuls did not run in bf16");
        }
    }
    // f32 again after the others: the process-wide TF32 switch is set back by each pass.
    assert_eq!(logits(&f32e), reference);
}

#[test]
fn the_attention_kernel_gives_the_matmul_path_s_probabilities() {
    // `--attention kernel` (one CUDA kernel a layer, every segment's prefix read in place):
    // units of different parents in one pass, grouped and not, on Llama, Qwen3 and Gemma 3 (a
    // sliding window of 4, so the local layers' masks are cut), give the matmul path's letter
    // probabilities within 1e-4 and the kept prefixes carry on alike. The texts are long enough
    // that a segment spans several of the kernel's tiles (32 query vectors) and its keys several
    // chunks (32 keys). On the CPU the kernel is each row's attention summed in key order.
    let dir = tempfile::tempdir().unwrap();
    for arch in [Architecture::Llama, Architecture::Qwen3, Architecture::Gemma3] {
        let path = tiny(arch, "f32", &dir);
        let with =
            |attention| Engine::load(&path, &LoadOptions { device: test_device(), attention, ..Default::default() });
        let (m, k) = (with(AttentionPath::Matmuls).unwrap(), with(AttentionPath::Kernel).unwrap());
        assert_eq!(k.info().attention, AttentionPath::Kernel);
        for grouped in [false, true] {
            let (a, b) = (tree_probs(&m, grouped), tree_probs(&k, grouped));
            assert_eq!(a.len(), b.len());
            let d = a.iter().zip(&b).map(|(x, y)| max_diff(x, y)).fold(0.0, f32::max);
            assert!(d <= 1e-4, "{arch:?} grouped {grouped}: largest |Δp| {d}");
        }
    }
}

#[test]
fn the_attention_kernel_on_tensor_cores_stays_near_the_matmul_path() {
    // `--precision tf32|bf16` with `--attention kernel` on CUDA: the kernel's q·k and p·v in TF32
    // on the tensor cores (compute capability 8.0 and later, head dims 64 and 128: the tiny
    // models' 64). Against the matmul path at the same precision, the same texts as above:
    // within 1e-2 of each letter probability (TF32 keeps 10 bits of each factor). Reduced
    // precision is refused on the CPU (tested above).
    if test_device() == DeviceRequest::Cpu {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for arch in [Architecture::Llama, Architecture::Qwen3, Architecture::Gemma3] {
        let path = tiny(arch, "f32", &dir);
        for precision in [Precision::Tf32, Precision::Bf16] {
            let with = |attention| {
                Engine::load(&path, &LoadOptions { device: test_device(), attention, precision, ..Default::default() })
            };
            let (m, k) = (with(AttentionPath::Matmuls).unwrap(), with(AttentionPath::Kernel).unwrap());
            let (a, b) = (tree_probs(&m, true), tree_probs(&k, true));
            assert_eq!(a.len(), b.len());
            let d = a.iter().zip(&b).map(|(x, y)| max_diff(x, y)).fold(0.0, f32::max);
            assert!(d <= 1e-2, "{arch:?} {precision:?}: largest |Δp| {d}");
        }
    }
}

/// The letter probabilities of a pass over units of different parents (a root, a chain of
/// chunks, the empty prefix; stems long enough to span several of the attention kernel's tiles
/// and chunks, and to pass a sliding window of 4), then of a read on top of a kept prefix.
fn tree_probs(e: &Engine, grouped: bool) -> Vec<Vec<f32>> {
    let enc = |t: &str| e.tokenizer().encode(t).unwrap();
    let read = [65u32, 66, 67];
    let long = |t: &str, times: usize| enc(&t.repeat(times));
    let root =
        e.extend(&Prefix::empty(), &enc("<|im_start|>system\nShared root, long enough to pass a window.\n")).unwrap();
    let other = e.extend(&root, &long("A state under the root. ", 6)).unwrap();
    let deeper = e.extend(&other, &enc(" And one more chunk on it.")).unwrap();
    let empty = Prefix::empty();
    let (stem_a, stem_b) = (long("Stem of unit one, ", 8), long("Unit two has its own, longer stem. ", 5));
    let leaves: Vec<Vec<u32>> = ["A. yes", "B. no, not at all", "C"].iter().map(|t| enc(t)).collect();
    let sfx: Vec<Suffix> = leaves.iter().map(|t| Suffix { tokens: t, read: &read }).collect();
    let units = vec![
        Unit { parent: &root, stem: &stem_a, leaves: sfx.clone(), keep: true },
        Unit { parent: &deeper, stem: &stem_b, leaves: sfx[..2].to_vec(), keep: true },
        Unit { parent: &empty, stem: &stem_b, leaves: sfx[2..].to_vec(), keep: true },
        Unit { parent: &root, stem: &[], leaves: sfx[1..].to_vec(), keep: false },
    ];
    let opts = PassOptions { group_units: grouped, ..e.pass_defaults() };
    let outs = e.pass_with(&units, opts).unwrap();
    let mut p: Vec<Vec<f32>> = outs.iter().flat_map(|o| o.readouts.iter().map(|r| softmax(&r.logits))).collect();
    // and on top of a kept prefix (a chain of chunks, read in place)
    let tail = enc(" and on");
    let r = e.read(&outs[1].prefix, &[Suffix { tokens: &tail, read: &read }]).unwrap();
    p.push(softmax(&r[0].logits));
    p
}

#[test]
fn the_fused_kernels_give_the_unfused_path_s_probabilities() {
    // `--fused-kernels on` (one CUDA kernel each for the residual add with the next RMSNorm,
    // for q and k's norms with RoPE and the query scale, and for the MLP's activation): the
    // passes of `tree_probs` (units of different parents, grouped and not, kept prefixes carried
    // on) with either attention path, on Llama (RoPE in pairs side by side), Qwen3 (q/k norms,
    // RoPE in halves) and Gemma 3 (norms after attention and MLP, GELU, the local layers' own
    // RoPE), give the unfused path's letter probabilities within 1e-4. On the CPU it is refused.
    let dir = tempfile::tempdir().unwrap();
    for arch in [Architecture::Llama, Architecture::Qwen3, Architecture::Gemma3] {
        let path = tiny(arch, "f32", &dir);
        let with = |attention, fused_kernels| {
            Engine::load(&path, &LoadOptions { device: test_device(), attention, fused_kernels, ..Default::default() })
        };
        if test_device() == DeviceRequest::Cpu {
            let e = with(AttentionPath::Auto, FusedKernels::On).err().expect("refused on the CPU").to_string();
            assert!(e.contains("--fused-kernels off or auto"), "{e}");
            assert_eq!(with(AttentionPath::Auto, FusedKernels::Auto).unwrap().info().fused_kernels, FusedKernels::Off);
            continue;
        }
        for attention in [AttentionPath::Matmuls, AttentionPath::Kernel] {
            let (off, on) = (with(attention, FusedKernels::Off).unwrap(), with(attention, FusedKernels::On).unwrap());
            assert_eq!(on.info().fused_kernels, FusedKernels::On);
            for grouped in [false, true] {
                let (a, b) = (tree_probs(&off, grouped), tree_probs(&on, grouped));
                assert_eq!(a.len(), b.len());
                let d = a.iter().zip(&b).map(|(x, y)| max_diff(x, y)).fold(0.0, f32::max);
                assert!(d <= 1e-4, "{arch:?} {attention:?} grouped {grouped}: largest |Δp| {d}");
            }
        }
    }
}

fn softmax(x: &[f32]) -> Vec<f32> {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = x.iter().map(|v| (v - m).exp()).collect();
    let s: f32 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

#[test]
fn pruned_head_gives_the_same_letter_logits() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(Architecture::Llama, "q8_0", &dir);
    let full = load(&path, MatmulPath::Dense);
    let ids = full.tokenizer().encode(PROMPT).unwrap();
    let read = [66u32, 65, 67];
    let a = full.read(&Prefix::empty(), &[Suffix { tokens: &ids, read: &read }]).unwrap();
    let pruned = PassOptions { prune_head: true, ..full.pass_defaults() };
    let b = full.read_with(&Prefix::empty(), &[Suffix { tokens: &ids, read: &read }], pruned).unwrap();
    assert!(max_diff(&a[0].logits, &b[0].logits) < 1e-5);
    assert!(a[0].letter_mass.is_some() && b[0].letter_mass.is_none());
}

#[test]
fn letters_are_checked_in_context() {
    let dir = tempfile::tempdir().unwrap();
    let e = load(&tiny(Architecture::Llama, "f32", &dir), MatmulPath::Dense);
    let ids = e.tokenizer().encode(PROMPT).unwrap();
    let letters = e.answer_tokens(PROMPT, &ids, 3).unwrap();
    assert_eq!(letters, vec![b'A' as u32, b'B' as u32, b'C' as u32]);
}
