//! A state longer than the model's context, through the real CLI. Without a flag the run (or
//! `score`) is refused before anything is scored: exit code 5, the item or text named, the token
//! counts given (and checked against the prompt the run would score), the way out said. With
//! `--truncate-middle` the state is cut from the middle, the run completes, and the result file
//! records the cut (`config.truncate`, `plan.truncated_rows`, the row's `truncated_tokens`).
//!
//! The refusals run on the default model (context 8192). A run that fills a whole 8192-token
//! context takes minutes on a 2-core machine, so the runs that complete use the tiny
//! random-weights model (context 1024) that `readout bench make-model` also writes.

use crate::common;

use common::readout;
use readout::engine::synthetic::{tiny_config, write_gguf};
use readout::engine::Architecture;
use serde_json::{json, Value};
use std::path::Path;

/// A varied text of `words` words (about 1.3 tokens a word on the default model).
fn long_text(words: usize) -> String {
    let pool =
        "the quick brown fox jumps over the lazy dog while seven wizards quietly hex a jovial pack of boxing zebras"
            .split(' ')
            .collect::<Vec<_>>();
    let body: Vec<String> =
        (0..words).map(|i| format!("{}{}", pool[i % pool.len()], if i % 13 == 12 { "." } else { "" })).collect();
    format!("START OF REPORT. {} END OF REPORT.", body.join(" "))
}

/// An eval set of three short items and one whose state is `state`.
fn write_set(path: &Path, state: &str) {
    let item = |id: &str, state: &str| {
        json!({"id": id, "family": "f", "group_id": id, "state": state, "question": "Is the report about animals?",
            "options": [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}, {"id": "unsure", "description": "Cannot tell"}],
            "label": 0})
    };
    let lines = [
        item("short-1", "A fox ran."),
        item("long-1", state),
        item("short-2", "The dog slept."),
        item("short-3", "Zebras box."),
    ];
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

fn tiny_model(dir: &Path) -> String {
    let path = dir.join("tiny.gguf");
    write_gguf(&path, &tiny_config(Architecture::Llama), 7, candle_core::quantized::GgmlDType::F32).unwrap();
    path.display().to_string()
}

/// The number after `before` in `text`.
fn number_after(text: &str, before: &str) -> usize {
    let at = text.find(before).unwrap_or_else(|| panic!("`{before}` not in: {text}")) + before.len();
    text[at..].chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().unwrap()
}

#[test]
fn an_over_long_state_is_refused_naming_the_item_and_the_token_counts() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("long.jsonl");
    let state = long_text(7000);
    write_set(&set, &state);
    let (s, m) = (set.display().to_string(), common::default_model().display().to_string());
    let out_file = dir.path().join("out.json");
    let o = out_file.display().to_string();
    let res = readout(&["run", &s, "--device", "cpu", "--model", &m, "--out", &o]);
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(5), "{err}");
    assert!(err.contains(&s) && err.contains("item `long-1`"), "{err}");
    assert!(
        err.contains("context holds 8192") && err.contains("shorten the state") && err.contains("--truncate-middle"),
        "{err}"
    );
    assert!(!out_file.exists(), "a refused run wrote a file");
    // The counts are those of the prompt the run would score.
    let prompt_tokens = number_after(&err, "the prompt is ");
    let state_tokens = number_after(&err, &format!("{prompt_tokens} tokens ("));
    let over = number_after(&err, "context holds 8192, ");
    let engine = common::default_engine();
    let set_doc = readout::formats::evalset::EvalSet::load(&set, &Default::default()).unwrap();
    let c = &set_doc.items[1].criteria[0];
    let render = |state: &str| {
        let user = readout::pipeline::prompt::user_turn(state, c, &[0, 1, 2]);
        let text = engine.template().render(&readout::pipeline::prompt::messages(&[], user)).unwrap();
        engine.tokenizer().encode(&text).unwrap().len()
    };
    assert_eq!(prompt_tokens, render(&state));
    assert_eq!(state_tokens, render(&state) - render(""));
    assert_eq!(over, prompt_tokens - 8192);
    // Generate mode keeps room for the reply, and says so.
    let res = readout(&["run", &s, "--device", "cpu", "--model", &m, "--out", &o, "--mode", "generate"]);
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(5), "{err}");
    assert!(err.contains("holds 8188 (8192 less 4 kept for the generated reply)"), "{err}");
}

#[test]
fn score_refuses_an_over_long_text_by_its_number() {
    let m = common::default_model().display().to_string();
    let text = long_text(7000);
    let res = readout(&[
        "score",
        "--rubric",
        "examples/support-ticket.rubric.json",
        "--device",
        "cpu",
        "--model",
        &m,
        "--text",
        "Please refund me.",
        "--text",
        &text,
    ]);
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(5), "{err}");
    assert!(err.contains("text 2:") && err.contains("of them the text") && err.contains("context holds 8192"), "{err}");
    assert!(err.contains("shorten the text") && err.contains("--truncate-middle"), "{err}");
    assert!(res.stdout.is_empty(), "a refused score printed results");
}

#[test]
fn truncate_middle_cuts_the_state_to_fit_and_the_result_file_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let set = dir.path().join("long.jsonl");
    // About 3000 byte tokens: three times the tiny model's context.
    let state = long_text(500);
    write_set(&set, &state);
    let s = set.display().to_string();
    let out_file = dir.path().join("out.json");
    let o = out_file.display().to_string();
    let base = ["run", &s, "--device", "cpu", "--model", &model, "--debias", "cyclic", "--out", &o];
    // Refused without the flag.
    let res = readout(&base);
    assert_eq!(res.status.code(), Some(5), "{}", String::from_utf8_lossy(&res.stderr));
    assert!(String::from_utf8_lossy(&res.stderr).contains("context holds 1024"));
    // Cut with it.
    let res = readout(&[&base[..], &["--truncate-middle"]].concat());
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    let doc = common::validate(&out_file);
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["config"]["truncate"], "middle");
    assert_eq!(doc["plan"]["truncated_rows"], 1);
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        if r["id"] == "long-1" {
            assert!(r["truncated_tokens"].as_u64().unwrap() > 1500, "{}", r["truncated_tokens"]);
        } else {
            assert!(r.get("truncated_tokens").is_none(), "row {} was not cut", r["id"]);
        }
    }
    // The prompts a run scores (`readout prompts`, same options) are the cut ones: head and tail
    // kept, the marker between them, every prompt within the context, and their hashes are the
    // ones the result file holds.
    let res =
        readout(&["prompts", &s, "--model", &model, "--device", "cpu", "--debias", "cyclic", "--truncate-middle"]);
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    let engine = common::engine_at(Path::new(&model));
    let mut seen = 0;
    for line in String::from_utf8(res.stdout).unwrap().lines() {
        let p: Value = serde_json::from_str(line).unwrap();
        let (id, text) = (p["id"].as_str().unwrap(), p["prompt"].as_str().unwrap());
        assert!(engine.tokenizer().encode(text).unwrap().len() <= 1024, "{id} does not fit");
        let (row, k) = id.split_once('#').unwrap();
        let rec = rows.iter().find(|r| r["id"] == row).unwrap();
        let k: usize = k.parse().unwrap();
        assert_eq!(rec["orderings"][k]["prompt_sha256"], readout::hash::sha256_bytes(text.as_bytes()), "{id}");
        if row == "long-1" {
            seen += 1;
            assert!(
                text.contains(&state[..200]) && text.contains(&state[state.len() - 200..]),
                "{id}: head or tail lost"
            );
            assert!(text.contains(" […] ") && !text.contains(&state[..state.len() / 2]), "{id}: not cut in the middle");
        } else {
            assert!(!text.contains("[…]"), "{id} was cut");
        }
    }
    assert_eq!(seen, 3);
}

#[test]
fn score_cuts_a_text_with_the_flag_and_refuses_what_no_cut_can_fit() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let state = long_text(500);
    let score = |rubric: &str, extra: &[&str]| {
        let mut a = vec!["score", "--rubric", rubric, "--model", &model, "--device", "cpu", "--json"];
        a.extend_from_slice(extra);
        a.extend_from_slice(&["--text", "short", "--text", &state]);
        readout(&a)
    };
    let res = score("examples/support-ticket.rubric.json", &["--truncate-middle"]);
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    let lines: Vec<Value> =
        String::from_utf8(res.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines[0].get("truncated_tokens").is_none());
    assert!(lines[1]["truncated_tokens"].as_u64().unwrap() > 1500, "{}", lines[1]);
    // A question longer than the context: no cut of the text helps, and the message says so.
    let rubric = dir.path().join("wordy.rubric.json");
    let wordy = json!({"questions": {"q": {"type": "noul", "instructions": long_text(300)}}});
    std::fs::write(&rubric, wordy.to_string()).unwrap();
    let res = score(&rubric.display().to_string(), &["--truncate-middle"]);
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(5), "{err}");
    assert!(err.contains("text 1:") && err.contains("cutting the text cannot make it fit"), "{err}");
}
