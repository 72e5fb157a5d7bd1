//! Log-likelihoods planned as one prefix tree (`readout::analysis::loglik`) against each request computed
//! alone, a token at a time, on tiny random-weights models (f32 weights and KV cache, where the two
//! ways sum the same products): shared contexts, multi-token continuations, a context that is a
//! strict prefix of another, a leaf longer than a pass; and against the full logits by hand.

use readout::analysis::loglik::{loglikelihood, loglikelihood_plain, Request};
use readout::engine::synthetic::{tiny_config, write_gguf};
use readout::engine::{Architecture, Engine, KvCache, LoadOptions, Prefix, WeightsMode};

fn engine(arch: Architecture, dir: &tempfile::TempDir) -> Engine {
    let path = dir.path().join(format!("{}.gguf", arch.as_str()));
    write_gguf(&path, &tiny_config(arch), 11, candle_core::quantized::GgmlDType::F32).unwrap();
    let opts = LoadOptions { weights: WeightsMode::F32, kv_cache: KvCache::F32, ..Default::default() };
    Engine::load(&path, &opts).unwrap()
}

fn req(context: &[u32], continuation: &[u32]) -> Request {
    Request { context: context.to_vec(), continuation: continuation.to_vec() }
}

fn requests() -> Vec<Request> {
    let shots: Vec<u32> = (40..70).collect();
    let item = |q: &[u32]| shots.iter().chain(q).copied().collect::<Vec<u32>>();
    vec![
        req(&item(&[80, 81, 82]), &[90]),
        req(&item(&[80, 81, 82]), &[91]),
        req(&item(&[80, 81, 82]), &[92, 93, 94]),
        req(&item(&[80, 81, 82]), &[92, 95]),
        req(&item(&[83]), &[90]),
        // A strict prefix of the others' contexts, and a one-token context.
        req(&shots, &[80, 81]),
        req(&[40], &[41, 42, 43, 44]),
        // The same request twice.
        req(&item(&[83]), &[90]),
    ]
}

#[test]
fn the_tree_gives_each_request_alone_token_by_token() {
    let dir = tempfile::tempdir().unwrap();
    for arch in [Architecture::Llama, Architecture::Qwen3, Architecture::Gemma3] {
        let e = engine(arch, &dir);
        let reqs = requests();
        let plain = loglikelihood_plain(&e, &reqs).unwrap();
        for pass_tokens in [1024, 3] {
            let opts = readout::engine::PassOptions { pass_tokens, ..e.pass_defaults() };
            let (tree, work) = loglikelihood(&e, &reqs, opts).unwrap();
            for (i, (t, p)) in tree.iter().zip(&plain).enumerate() {
                assert!((t.logprob - p.logprob).abs() < 1e-4, "{arch:?} request {i}: {t:?} vs {p:?}");
                assert_eq!(t.greedy, p.greedy, "{arch:?} request {i}");
                assert!(t.logprob < 0.0);
            }
            assert_eq!(tree[4], tree[7], "the same request, the same answer");
            // Shared: the 30 shot tokens once, not once a request.
            assert!(work.computed_tokens + 150 < work.request_tokens, "{work:?}");
            assert!(work.passes >= 1);
        }
    }
}

#[test]
fn a_request_is_the_sum_of_its_tokens_log_softmax_and_greedy_when_each_is_the_argmax() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(Architecture::Llama, &dir);
    let ctx = [40u32, 41, 42];
    // The model's own greedy continuation, and one that is not.
    let (p1, l1) = e.next_logits(&Prefix::empty(), &ctx).unwrap();
    let argmax = |l: &[f32]| (0..l.len()).max_by(|&a, &b| l[a].total_cmp(&l[b]).then(b.cmp(&a))).unwrap() as u32;
    let g1 = argmax(&l1);
    let (_, l2) = e.next_logits(&p1, &[g1]).unwrap();
    let g2 = argmax(&l2);
    let lsm = |l: &[f32], t: u32| {
        let m = l.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
        l[t as usize] as f64 - (m + l.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln())
    };
    let other = if g2 == 50 { 51 } else { 50 };
    let reqs = [req(&ctx, &[g1, g2]), req(&ctx, &[g1, other])];
    let (got, _) = loglikelihood(&e, &reqs, e.pass_defaults()).unwrap();
    assert!((got[0].logprob - (lsm(&l1, g1) + lsm(&l2, g2))).abs() < 1e-4);
    assert!((got[1].logprob - (lsm(&l1, g1) + lsm(&l2, other))).abs() < 1e-4);
    assert_eq!((got[0].greedy, got[1].greedy), (true, false));
}

#[test]
fn empty_parts_and_overlong_inputs_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(Architecture::Llama, &dir);
    let err = loglikelihood(&e, &[req(&[], &[1])], e.pass_defaults()).unwrap_err().to_string();
    assert!(err.contains("empty context") && err.contains("BOS"), "{err}");
    let err = loglikelihood(&e, &[req(&[1], &[])], e.pass_defaults()).unwrap_err().to_string();
    assert!(err.contains("empty continuation"), "{err}");
    let long: Vec<u32> = vec![40; e.info().config.context_length + 1];
    let err = loglikelihood(&e, &[req(&long, &[1])], e.pass_defaults()).unwrap_err();
    assert!(matches!(err, readout::Error::ContextOverflow { .. }), "{err}");
    assert_eq!(loglikelihood(&e, &[], e.pass_defaults()).unwrap().0, vec![]);
}
