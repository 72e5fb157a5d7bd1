//! Several scoring requests read in shared passes (`score::score_requests`, what `readout serve`
//! batches with) decide every text bit for bit as each request alone (`score::score_texts`, what
//! `readout score` runs), on the real default model: rubrics that differ, texts shared between
//! requests and texts that are not, each debias mode.

use super::common;
use readout::config::RunConfig;
use readout::debias::DebiasMode;
use readout::formats::rubric::Rubric;
use readout::jobs::score::{score_requests, score_texts, Request, Text, TextResult};

fn texts(t: &[&str]) -> Vec<Text> {
    t.iter().map(|s| Text { id: None, text: s.to_string() }).collect()
}

fn rubrics() -> (Rubric, Rubric) {
    let example = Rubric::load(&common::repo().join("examples/support-ticket.rubric.json")).unwrap();
    let other = Rubric::parse(
        r#"{"name": "tone", "questions": {
            "polite": {"type": "noul", "instructions": "Is the message polite?"},
            "topic": {"type": "choice", "instructions": "What is the message mainly about?",
                      "criteria": {"billing": "Payments, charges, invoices or refunds", "technical": "Something in the product does not work", "other": "Anything else"}}
        }}"#,
        std::path::Path::new("tone.json"),
    )
    .unwrap();
    (example, other)
}

fn json(r: &[TextResult]) -> Vec<String> {
    r.iter().map(|t| serde_json::to_string(t).unwrap()).collect()
}

#[test]
fn requests_in_shared_passes_equal_each_request_alone() {
    let engine = common::default_engine();
    let (example, tone) = rubrics();
    let a = texts(&["I was charged twice this month, please refund one of them.", "The app crashes when I log in."]);
    let b = texts(&["I was charged twice this month, please refund one of them.", "Thanks, all good now!"]);
    let c = texts(&["I was charged twice this month, please refund one of them."]);
    let d = texts(&["I need a new password, mine expired.", "Where is my invoice for March?", "Hello"]);
    let requests = [
        Request { rubric: &example, texts: &a },
        Request { rubric: &tone, texts: &b },
        Request { rubric: &example, texts: &c },
        Request { rubric: &example, texts: &c },
        Request { rubric: &tone, texts: &d },
    ];
    for debias in [DebiasMode::None, DebiasMode::Cyclic, DebiasMode::Calibrate, DebiasMode::Pride] {
        let config = RunConfig::builder().debias(debias).build().unwrap();
        let mut finished = Vec::new();
        let together = score_requests(
            &engine,
            &requests,
            &config,
            &mut |k, r| {
                finished.push((k, r.index));
                true
            },
            &|| true,
        )
        .unwrap();
        assert_eq!(finished.len(), 2 + 2 + 1 + 1 + 3, "{debias:?}: every text reported once");
        for (k, (req, got)) in requests.iter().zip(together).enumerate() {
            let got = got.unwrap();
            let alone =
                score_texts(&engine, req.rubric, req.texts, &config, &Default::default(), &mut |_, _, _| true).unwrap();
            assert_eq!(json(&got), json(&alone), "{debias:?}: request {k} differs from itself alone");
        }
    }
}

#[test]
fn a_request_too_long_fails_alone_and_the_others_are_scored() {
    let engine = common::default_engine();
    let (example, _) = rubrics();
    let long = "word ".repeat(10_000);
    let bad = texts(&[long.as_str()]);
    let good = texts(&["Refund me."]);
    let requests = [Request { rubric: &example, texts: &bad }, Request { rubric: &example, texts: &good }];
    let out = score_requests(&engine, &requests, &RunConfig::default(), &mut |_, _| true, &|| true).unwrap();
    assert!(matches!(out[0], Err(readout::Error::PromptTooLong { .. })), "{:?}", out[0].as_ref().err());
    let alone =
        score_texts(&engine, &example, &good, &RunConfig::default(), &Default::default(), &mut |_, _, _| true).unwrap();
    assert_eq!(json(out[1].as_ref().unwrap()), json(&alone));
}

#[test]
fn a_batch_whose_clients_are_gone_stops_after_the_pass_in_flight() {
    let engine = common::default_engine();
    let (example, _) = rubrics();
    let many = texts(&["Refund me.", "The app crashes.", "Thanks!", "Where is my parcel?"]);
    let requests = [Request { rubric: &example, texts: &many }];
    let config = RunConfig::builder().debias(DebiasMode::Cyclic).build().unwrap();
    let asked = std::cell::Cell::new(0);
    let mut decided = 0;
    // Gone after the first pass: nothing more is computed.
    let out = score_requests(
        &engine,
        &requests,
        &config,
        &mut |_, _| {
            decided += 1;
            true
        },
        &|| {
            asked.set(asked.get() + 1);
            asked.get() < 2
        },
    )
    .unwrap();
    assert_eq!(asked.get(), 2, "asked before the batch and after its first pass");
    assert!(decided < many.len(), "{decided} texts decided after the stop");
    assert!(out[0].as_ref().unwrap().len() < many.len());
}
