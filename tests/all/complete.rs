//! Completions planned as one prompt trie (`readout::analysis::complete`) against each prompt
//! computed alone, a token at a time, on tiny random-weights models (f32 weights and KV cache):
//! echoed prompts that share a prefix, one a strict prefix of another, alternatives at every
//! position, greedy generation of several tokens, a node longer than a pass; and the echo's
//! continuation log-probabilities against the log-likelihood tree's.

use readout::analysis::complete::{complete, complete_plain, Finish, Request};
use readout::analysis::loglik::{loglikelihood, Request as LlRequest};
use readout::engine::synthetic::{tiny_config, write_gguf};
use readout::engine::{Architecture, Engine, KvCache, LoadOptions, PassOptions, WeightsMode};

fn engine(arch: Architecture, dir: &tempfile::TempDir) -> Engine {
    let path = dir.path().join(format!("{}.gguf", arch.as_str()));
    write_gguf(&path, &tiny_config(arch), 11, candle_core::quantized::GgmlDType::F32).unwrap();
    let opts = LoadOptions { weights: WeightsMode::F32, kv_cache: KvCache::F32, ..Default::default() };
    Engine::load(&path, &opts).unwrap()
}

fn requests() -> Vec<Request> {
    let shots: Vec<u32> = (40..70).collect();
    let item = |q: &[u32]| shots.iter().chain(q).copied().collect::<Vec<u32>>();
    let r = |prompt: Vec<u32>, max_tokens: usize, echo: bool, top: usize| Request {
        prompt,
        max_tokens,
        echo,
        top,
        stop: vec![],
    };
    vec![
        // lm-evaluation-harness's loglikelihood request: echo, one token, one alternative.
        r(item(&[80, 81, 82, 90]), 1, true, 1),
        r(item(&[80, 81, 82, 91]), 1, true, 1),
        // The prompt's log-probabilities alone.
        r(item(&[80, 81, 82, 92, 93]), 0, true, 5),
        // A strict prefix of the others, generating; a chat request (no echo) with alternatives.
        r(shots.clone(), 4, false, 3),
        r(item(&[83]), 6, false, 20),
        r(vec![40], 3, true, 2),
        // The same request twice.
        r(item(&[83]), 6, false, 20),
    ]
}

#[test]
fn the_trie_gives_each_prompt_alone_token_by_token() {
    let dir = tempfile::tempdir().unwrap();
    for arch in [Architecture::Llama, Architecture::Qwen3] {
        let e = engine(arch, &dir);
        let reqs = requests();
        let plain = complete_plain(&e, &reqs).unwrap();
        for pass_tokens in [1024, 3] {
            let opts = PassOptions { pass_tokens, ..e.pass_defaults() };
            let (tree, work) = complete(&e, &reqs, opts, &|_| true).unwrap();
            for (i, (t, p)) in tree.iter().zip(&plain).enumerate() {
                assert_eq!(t.prompt.len(), p.prompt.len(), "{arch:?} request {i}");
                for (a, b) in t.prompt.iter().chain(&t.tokens).zip(p.prompt.iter().chain(&p.tokens)) {
                    assert_eq!(a.token, b.token, "{arch:?} request {i}");
                    match (a.logprob, b.logprob) {
                        (Some(x), Some(y)) => assert!((x - y).abs() < 1e-4, "{arch:?} request {i}: {x} vs {y}"),
                        (x, y) => assert_eq!(x, y, "{arch:?} request {i}"),
                    }
                    assert_eq!(a.top.len(), b.top.len());
                    for (x, y) in a.top.iter().zip(&b.top) {
                        assert!((x.1 - y.1).abs() < 1e-4, "{arch:?} request {i}: {x:?} vs {y:?}");
                    }
                }
                assert_eq!(t.tokens.len(), p.tokens.len(), "{arch:?} request {i}");
                assert_eq!((&t.text, t.finish), (&p.text, p.finish), "{arch:?} request {i}");
            }
            // What each asked: echo or not, as many tokens and alternatives.
            assert_eq!(tree[0].prompt.len(), 34);
            assert_eq!(tree[0].prompt[0].logprob, None);
            assert!(tree[0].prompt[1..].iter().all(|t| t.logprob.is_some_and(|l| l < 0.0) && t.top.len() == 1));
            assert_eq!(tree[0].tokens.len(), 1);
            assert!(tree[2].tokens.is_empty() && tree[2].prompt[5].top.len() == 5);
            assert!(tree[3].prompt.is_empty());
            assert!(tree[4].tokens.iter().all(|t| t.top.len() == 20));
            assert!(tree[4].tokens.len() <= 6 && (tree[4].tokens.len() == 6 || tree[4].finish == Finish::Stop));
            assert_eq!(tree[4], tree[6], "the same request, the same answer");
            // The greedy token is the first alternative.
            assert!(tree[4].tokens.iter().all(|t| t.top[0].0 == t.token));
            // Shared: the 30 shot tokens once, not once a prompt.
            assert!(work.computed_tokens + 100 < work.prompt_tokens, "{work:?}");
        }
    }
}

#[test]
fn the_echo_gives_the_log_likelihood_tree_s_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(Architecture::Llama, &dir);
    let context: Vec<u32> = (40..75).collect();
    let continuations: [&[u32]; 3] = [&[90], &[91, 92], &[93, 94, 95]];
    let echo: Vec<Request> = continuations
        .iter()
        .map(|c| Request {
            prompt: context.iter().chain(*c).copied().collect(),
            max_tokens: 0,
            echo: true,
            top: 1,
            stop: vec![],
        })
        .collect();
    let (got, _) = complete(&e, &echo, e.pass_defaults(), &|_| true).unwrap();
    let ll: Vec<LlRequest> =
        continuations.iter().map(|c| LlRequest { context: context.clone(), continuation: c.to_vec() }).collect();
    let (want, _) = loglikelihood(&e, &ll, e.pass_defaults()).unwrap();
    for ((g, w), c) in got.iter().zip(&want).zip(continuations) {
        let tail = &g.prompt[context.len()..];
        let sum: f64 = tail.iter().map(|t| t.logprob.unwrap()).sum();
        assert!((sum - w.logprob).abs() < 1e-4, "{sum} vs {}", w.logprob);
        // lm-evaluation-harness's greedy test: each token's log-probability is its position's best.
        let greedy = tail.iter().all(|t| t.logprob.unwrap() >= t.top[0].1 - 1e-9);
        assert_eq!(greedy, w.greedy, "{c:?}");
    }
}

#[test]
fn a_request_no_longer_wanted_is_not_computed_and_bad_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(Architecture::Llama, &dir);
    let reqs = requests();
    let (_, all) = complete(&e, &reqs, e.pass_defaults(), &|_| true).unwrap();
    let (none, work) = complete(&e, &reqs, e.pass_defaults(), &|_| false).unwrap();
    assert_eq!((work.passes, work.computed_tokens, work.generated_tokens), (0, 0, 0), "{work:?} vs {all:?}");
    assert!(none.iter().all(|c| c.tokens.is_empty()));
    let bad = |r: Request| complete(&e, &[r], e.pass_defaults(), &|_| true).err().map(|e| e.to_string());
    let ok = Request { prompt: vec![1, 2], max_tokens: 1, ..Default::default() };
    assert!(bad(Request { prompt: vec![], ..ok.clone() }).unwrap().contains("empty"));
    assert!(bad(Request { top: 21, ..ok.clone() }).unwrap().contains("at most 20"));
    let long = vec![1u32; e.info().config.context_length + 1];
    assert!(bad(Request { prompt: long, ..ok }).unwrap().contains("context"));
}

/// With attention as the kernel (`--attention kernel`), the CPU's attention sums each row in key
/// order: a prompt's numbers are the same bits alone or beside another that shares part of it
/// (a trie node then, a pass cut elsewhere), with the f16 cache and the native weights.
#[test]
fn the_attention_kernel_gives_a_prompt_the_same_bits_whatever_shares_its_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("llama.gguf");
    write_gguf(&path, &tiny_config(Architecture::Llama), 11, candle_core::quantized::GgmlDType::Q8_0).unwrap();
    let opts =
        LoadOptions { kv_cache: KvCache::F16, attention: readout::engine::AttentionPath::Kernel, ..Default::default() };
    let e = Engine::load(&path, &opts).unwrap();
    let a: Vec<u32> = (10..50).collect();
    let b: Vec<u32> = a[..20].iter().copied().chain(60..80).collect();
    let r = |prompt: &[u32]| Request { prompt: prompt.to_vec(), max_tokens: 2, echo: true, top: 3, stop: vec![] };
    let (alone, _) = complete(&e, &[r(&a)], e.pass_defaults(), &|_| true).unwrap();
    let (beside, _) = complete(&e, &[r(&a), r(&b)], e.pass_defaults(), &|_| true).unwrap();
    assert_eq!(alone[0], beside[0]);
}
