//! Qwen3.5 (`qwen35`): Gated DeltaNet layers between gated full-attention layers, on tiny random
//! models written by transformers 5.23.0 and converted by llama.cpp b11434's own converter
//! (`tests/fixtures/qwen35/`, made by `bench/make-qwen35-fixtures`). Readout's logits must be
//! transformers' on the same token ids (f32 and bf16 weights, tied and untied head, a prompt
//! long enough to cross transformers' DeltaNet chunk of 64), its letter probabilities
//! llama.cpp's on the GGUF, and every way the prompt tree computes a token (a cached prefix,
//! suffixes batched on one prefix, a prefix in several passes) the plain pass's logits.

use readout::engine::{Engine, PassOptions, Prefix, Suffix};
use serde_json::Value;
use std::path::PathBuf;

use crate::common::{engine_at, rel_diff, repo};

fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/qwen35")
}

fn json(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

/// The reference prompts: name and token ids.
fn prompts() -> Vec<(String, Vec<u32>)> {
    let r = json("reference.json");
    r["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), ids(&p["token_ids"])))
        .collect()
}

fn softmax(x: &[f32]) -> Vec<f32> {
    let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f32> = x.iter().map(|v| (v - m).exp()).collect();
    let s: f32 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

const TRANSFORMERS: f32 = 1e-4;

#[test]
fn hugging_face_directories_give_transformers_logits() {
    let r = json("reference.json");
    for dir in ["hf-f32", "hf-bf16", "hf-f32-tied"] {
        let e = engine_at(&fixtures().join(dir));
        assert_eq!(e.info().config.architecture.as_str(), "qwen35");
        for (name, tokens) in prompts() {
            let want = floats(&r["models"][dir]["last_logits"][&name]);
            let got = e.next_logits(&Prefix::empty(), &tokens).unwrap().1;
            let d = rel_diff(&got, &want);
            assert!(d < TRANSFORMERS, "{dir} `{name}` ({} tokens): relative max |Δlogit| = {d}", tokens.len());
        }
    }
    // Every position of the short prompt, one token at a time through the cache.
    let e = engine_at(&fixtures().join("hf-f32"));
    let (_, tokens) = prompts().into_iter().find(|(n, _)| n == "short").unwrap();
    let all = r["models"]["hf-f32"]["all_logits"]["short"].as_array().unwrap().clone();
    let mut pre = Prefix::empty();
    for (i, t) in tokens.iter().enumerate() {
        let (next, got) = e.next_logits(&pre, &[*t]).unwrap();
        let d = rel_diff(&got, &floats(&all[i]));
        assert!(d < TRANSFORMERS, "position {i}, token by token: relative max |Δlogit| = {d}");
        pre = next;
    }
}

#[test]
fn the_gguf_gives_llama_cpp_s_probabilities() {
    let l = json("llamacpp.json");
    let e = engine_at(&fixtures().join("tiny-f32.gguf"));
    assert_eq!(e.info().config.architecture.as_str(), "qwen35");
    for item in l["items"].as_array().unwrap() {
        let tokens = ids(&item["token_ids"]);
        let want = floats(&item["probs"]);
        let got = softmax(&e.next_logits(&Prefix::empty(), &tokens).unwrap().1);
        let dp = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(dp < 0.005, "`{}`: max |Δp| against llama.cpp = {dp}", item["name"]);
        assert!(
            dp < 1e-4,
            "`{}`: max |Δp| against llama.cpp = {dp} (llama.cpp and transformers agree to 3e-7)",
            item["name"]
        );
    }
}

/// A cached prefix at several cuts, a prefix in passes of 7 tokens, and suffixes batched on
/// one prefix (each a branch of the tree that starts from the prefix's recurrent state) all give
/// the plain pass's logits.
fn tree_paths_equal_the_plain_pass(e: &Engine, what: &str) {
    const SAME: f32 = 2e-5;
    let (_, ids) = prompts().into_iter().find(|(n, _)| n == "text").unwrap();
    let all: Vec<u32> = (0..e.info().config.vocab_size as u32).collect();
    let full = e.next_logits(&Prefix::empty(), &ids).unwrap().1;
    for cut in [1, 2, 5, ids.len() / 2, ids.len() - 1] {
        let pre = e.extend(&Prefix::empty(), &ids[..cut]).unwrap();
        let r = e.read(&pre, &[Suffix { tokens: &ids[cut..], read: &all }]).unwrap();
        let d = rel_diff(&r[0].logits, &full);
        assert!(d < SAME, "{what}: cached prefix cut at {cut}: relative max |Δlogit| = {d}");
    }
    let opts = PassOptions { pass_tokens: 7, ..e.pass_defaults() };
    let pre = e.extend_with(&Prefix::empty(), &ids[..ids.len() - 2], opts).unwrap();
    let r = e.read(&pre, &[Suffix { tokens: &ids[ids.len() - 2..], read: &all }]).unwrap();
    assert!(rel_diff(&r[0].logits, &full) < SAME, "{what}: a prefix in passes of 7");
    let shared = &ids[..40];
    let pre = e.extend(&Prefix::empty(), shared).unwrap();
    let tails: Vec<&[u32]> = vec![&ids[40..], &ids[40..41], &ids[60..70], &ids[40..45]];
    let batch: Vec<Suffix> = tails.iter().map(|t| Suffix { tokens: t, read: &all }).collect();
    let together = e.read(&pre, &batch).unwrap();
    for (i, t) in tails.iter().enumerate() {
        let whole: Vec<u32> = shared.iter().chain(t.iter()).copied().collect();
        let alone = e.next_logits(&Prefix::empty(), &whole).unwrap().1;
        let d = rel_diff(&together[i].logits, &alone);
        assert!(d < SAME, "{what}: suffix {i} batched on a shared prefix: relative max |Δlogit| = {d}");
    }
}

#[test]
fn the_prompt_tree_gives_the_plain_pass_on_a_recurrent_model() {
    tree_paths_equal_the_plain_pass(&engine_at(&fixtures().join("hf-f32")), "hf-f32");
    tree_paths_equal_the_plain_pass(&engine_at(&fixtures().join("tiny-f32.gguf")), "gguf");
}

/// Decision GGUFs of each letter contract (`openjev`, `lev`, `nimble`; made from the tiny model
/// by `bench/systemone/make-decision-fixtures`) answer every request as llama.cpp b11434's
/// `/v1/systemone` answered it (`x_debias: none`: Readout's orderings on top are off): the same
/// pick, probabilities, scores and `noul` within 1e-4. Requests Readout's own checks refuse
/// (a choice of one option) are not compared.
#[test]
fn decision_ggufs_answer_as_llama_cpp_s_systemone_endpoint() {
    use readout::debias::DebiasMode;
    use readout::jobs::systemone::SystemOneRequest;
    let refs = json("decision-llamacpp.json");
    let mut compared = 0;
    for (file, x) in refs["files"].as_object().unwrap() {
        let e = engine_at(&fixtures().join(file));
        let contract = e.info().decision.clone().expect("a decision contract");
        assert_eq!(contract.kind, x["decision_type"].as_str().unwrap(), "{file}");
        for case in x["cases"].as_array().unwrap().iter().filter(|c| c["status"] == 200) {
            let name = case["name"].as_str().unwrap();
            let mut body = case["request"].clone();
            body["model"] = Value::from("jev-latest");
            body["x_debias"] = Value::from("none");
            let Ok(request) = SystemOneRequest::from_value(body) else { continue };
            let got = readout::jobs::decide::decide(&e, &request, Default::default(), DebiasMode::Cyclic)
                .unwrap_or_else(|err| panic!("{file} `{name}`: {err}"));
            assert_eq!(got.x_debias, "none");
            for (id, want) in case["response"]["answers"].as_object().unwrap() {
                let have = &got.answers[id];
                let at = format!("{file} `{name}` question `{id}`");
                assert_eq!(have["type"], want["type"], "{at}");
                assert_eq!(have["choice"], want["choice"], "{at}: {have} vs {want}");
                for k in ["noul", "score", "confidence"] {
                    if let Some(w) = want[k].as_f64() {
                        let h = have[k].as_f64().unwrap_or(f64::NAN);
                        assert!((h - w).abs() < 1e-4, "{at}: {k} {h} vs llama.cpp's {w}");
                    }
                }
                if let Some(p) = want["probabilities"].as_object() {
                    for (k, w) in p {
                        let h = have["probabilities"][k].as_f64().unwrap_or(f64::NAN);
                        assert!((h - w.as_f64().unwrap()).abs() < 1e-4, "{at}: P({k}) {h} vs llama.cpp's {w}");
                    }
                }
                assert_eq!(have["legend"], want["legend"], "{at}");
                assert_eq!(have["x_contract"], Value::from(contract.kind.clone()));
            }
            compared += 1;
        }
    }
    assert!(compared >= 45, "only {compared} requests compared");
}

/// `readout serve` on a decision GGUF answers `/v1/systemone` by the contract, over HTTP, as
/// llama.cpp's endpoint answered the same request (the queue's decide job, not the score job).
#[test]
fn serve_answers_by_the_contract_over_http() {
    use std::io::{BufRead, BufReader, Read, Write};
    let refs = json("decision-llamacpp.json");
    let file = "decision-lev.gguf";
    let case = refs["files"][file]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "several_questions")
        .unwrap()
        .clone();
    let model = fixtures().join(file).display().to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_readout"))
        .args(["serve", "--port", "0", "--device", "cpu", "--model", &model])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("readout serve says where it listens").unwrap();
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    let mut body = case["request"].clone();
    body["model"] = Value::from("jev-latest");
    body["x_debias"] = Value::from("none");
    let body = body.to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /v1/systemone HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let (head, json_body) = reply.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{reply}");
    let got: Value = serde_json::from_str(json_body).unwrap();
    for (id, want) in case["response"]["answers"].as_object().unwrap() {
        let have = &got["answers"][id];
        assert_eq!(have["x_contract"], "lev", "{id}: {have}");
        assert_eq!(have["choice"], want["choice"], "{id}");
        for k in ["noul", "score"] {
            if let Some(w) = want[k].as_f64() {
                assert!((have[k].as_f64().unwrap() - w).abs() < 1e-4, "{id}: {k} {} vs {w}", have[k]);
            }
        }
    }
    assert_eq!(got["x_debias"], "none");
}

/// What a contract cannot answer (27 options where a lev model reads 26 codes) is refused naming
/// the model file, the question and the limit, as llama.cpp refuses it.
#[test]
fn a_request_past_the_contract_is_refused_naming_the_file_and_question() {
    use readout::debias::DebiasMode;
    use readout::jobs::systemone::SystemOneRequest;
    let refs = json("decision-llamacpp.json");
    let case = refs["files"]["decision-lev.gguf"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "choice27")
        .unwrap()
        .clone();
    assert_eq!(case["status"], 400);
    let mut body = case["request"].clone();
    body["model"] = Value::from("jev-latest");
    let request = SystemOneRequest::from_value(body).unwrap();
    let e = engine_at(&fixtures().join("decision-lev.gguf"));
    let err =
        readout::jobs::decide::decide(&e, &request, Default::default(), DebiasMode::None).unwrap_err().to_string();
    assert!(err.contains("decision-lev.gguf"), "{err}");
    assert!(err.contains("question `animal` has 27 options; this lev model reads at most 26"), "{err}");
}
