//! System One on the real default model: a choice of more than 26 options is read as two-letter
//! codes through the prompt tree, and each code's probability is the product of its tokens'
//! probabilities that plain forwards of the prompt give; `readout decide` answers a request as
//! the library does, and names a wrong field.

use crate::common;
use readout::config::RunConfig;
use readout::debias::DebiasMode;
use readout::engine::{code, Prefix, Suffix};
use readout::jobs::decide::decide;
use readout::jobs::systemone::SystemOneRequest;
use readout::math::softmax;
use readout::pipeline::prompt;
use serde_json::json;

fn wide(n: usize) -> serde_json::Value {
    let criteria: serde_json::Map<String, serde_json::Value> =
        (0..n).map(|i| (format!("Queue {i:02}"), json!(format!("Tickets for team {i}")))).collect();
    json!({
        "model": "jev-latest",
        "state": "I was charged twice for my March invoice.",
        "questions": {"queue": {"type": "choice", "instructions": "Which queue?", "criteria": criteria}},
        "x_debias": "none"
    })
}

#[test]
fn codes_past_26_options_are_the_product_of_their_tokens_probabilities() {
    let engine = common::default_engine();
    let n = 40;
    let request = SystemOneRequest::from_value(wide(n)).unwrap();
    let answer = decide(&engine, &request, RunConfig::builder().build().unwrap(), DebiasMode::Cyclic).unwrap();
    assert_eq!(answer.x_debias, "none");
    let probs = answer.answers["queue"]["probabilities"].as_object().unwrap();
    assert_eq!(probs.len(), n);
    let total: f64 = probs.values().map(|p| p.as_f64().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-9, "the codes' probabilities sum to {total}");

    // The same prompt read by plain forwards: the codes' first tokens at its end, then each
    // first token's second tokens after it, every softmax over the tokens that may come there.
    let c = &request.questions[0].criterion;
    let ordering: Vec<usize> = (0..n).collect();
    let text =
        engine.template().render(&prompt::messages(&[], prompt::user_turn(&request.state, c, &ordering))).unwrap();
    assert!(text.contains("\nAB. Tickets for team 1\n") && text.contains("Answer with one code."), "{text}");
    let ids = engine.tokenizer().encode(&text).unwrap();
    let codes: Vec<Vec<u32>> = (0..n)
        .map(|s| engine.tokenizer().encode(&format!("{text}{}", code(s, n))).unwrap()[ids.len()..].to_vec())
        .collect();
    let mut firsts: Vec<u32> = Vec::new();
    for c in &codes {
        if !firsts.contains(&c[0]) {
            firsts.push(c[0]);
        }
    }
    let prefix = engine.extend(&Prefix::empty(), &ids[..ids.len() - 1]).unwrap();
    let root = engine.read(&prefix, &[Suffix { tokens: &ids[ids.len() - 1..], read: &firsts }]).unwrap();
    let p_first = softmax(&root[0].logits);
    for (s, c) in codes.iter().enumerate() {
        let f = firsts.iter().position(|&t| t == c[0]).unwrap();
        let mut p = p_first[f];
        if c.len() == 2 {
            let seconds: Vec<u32> = codes.iter().filter(|d| d[0] == c[0] && d.len() == 2).map(|d| d[1]).collect();
            let tail = [ids[ids.len() - 1], c[0]];
            let branch = engine.read(&prefix, &[Suffix { tokens: &tail, read: &seconds }]).unwrap();
            p *= softmax(&branch[0].logits)[seconds.iter().position(|&t| t == c[1]).unwrap()];
        }
        let got = probs[&format!("Queue {s:02}")].as_f64().unwrap();
        assert!((got - p).abs() < 1e-4, "code {}: the tree gives {got}, plain forwards {p}", code(s, n));
    }
}

#[test]
fn decide_prints_the_libraries_answer_and_names_a_wrong_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("request.json");
    let body = json!({
        "model": "jev-latest",
        "state": ["Charged twice.", "Refund promised, not received."],
        "questions": {
            "refund": {"type": "noul", "criteria": {"true": "A refund or chargeback"}},
            "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["Can wait", "Soon", "Now"]}
        }
    });
    std::fs::write(&path, body.to_string()).unwrap();
    let m = common::default_model().display().to_string();
    let p = path.display().to_string();
    let out = common::readout(&["decide", "--request", &p, "--model", &m, "--device", "cpu", "--compact"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let engine = common::default_engine();
    let request = SystemOneRequest::from_value(body.clone()).unwrap();
    let want = decide(&engine, &request, RunConfig::builder().build().unwrap(), DebiasMode::Cyclic).unwrap();
    assert_eq!(got["answers"], serde_json::to_value(&want.answers).unwrap());
    assert_eq!(got["x_debias"], "cyclic");

    std::fs::write(
        &path,
        json!({"model": "m", "state": "s", "questions": {"q": {"type": "score", "criteria": ["one"]}}}).to_string(),
    )
    .unwrap();
    let out = common::readout(&["decide", "--request", &p, "--model", &m, "--device", "cpu"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("body.questions.q.criteria: a score has 2 to 10 levels, not 1"), "{err}");
}
