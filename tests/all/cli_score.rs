//! `readout score` end to end: the built CLI on the real default model.

use crate::common;

use common::readout;

const RUBRIC: &str = "examples/support-ticket.rubric.json";
const TEXT: &str = "I was charged twice this month, please refund one of them.";

fn model_arg() -> String {
    common::default_model().display().to_string()
}

#[test]
fn decides_the_example_rubric_as_json() {
    let m = model_arg();
    let out = readout(&["score", "--rubric", RUBRIC, "--text", TEXT, "--json", "--device", "cpu", "--model", &m]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    let criteria = v["criteria"].as_array().unwrap();
    assert_eq!(criteria.len(), 3);
    for c in criteria {
        let opts = c["options"].as_array().unwrap();
        let sum: f64 = opts.iter().map(|o| o["probability"].as_f64().unwrap()).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{c}");
        let best = opts
            .iter()
            .max_by(|a, b| a["probability"].as_f64().unwrap().total_cmp(&b["probability"].as_f64().unwrap()))
            .unwrap();
        assert_eq!(c["chosen"], best["id"]);
        let mass = c["letter_mass"].as_f64().unwrap();
        assert!(mass > 0.0 && mass <= 1.0);
    }
    assert_eq!(criteria[1]["options"][0]["id"], "yes");
    let level = criteria[2]["expected_level"].as_f64().unwrap();
    assert!((0.0..=3.0).contains(&level));
}

#[test]
fn scores_a_texts_file_one_line_per_text_and_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let texts = dir.path().join("t.jsonl");
    std::fs::write(&texts, "\"My password reset link never arrives.\"\n{\"id\": \"t2\", \"text\": \"The app crashes when I open settings.\"}\n").unwrap();
    let m = model_arg();
    let t = texts.display().to_string();
    let out = readout(&["score", "--rubric", RUBRIC, "--texts", &t, "--json", "--device", "cpu", "--model", &m]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["id"], "t2");
    // Cyclic orderings report order stability; the table names every criterion.
    let out =
        readout(&["score", "--rubric", RUBRIC, "--text", TEXT, "--debias", "cyclic", "--device", "cpu", "--model", &m]);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    for name in ["topic", "refund_requested", "urgency"] {
        assert!(table.contains(name), "{table}");
    }
}

#[test]
fn plain_lines_piped_in_are_one_text_each_and_the_format_is_said() {
    let m = model_arg();
    let base = ["score", "-r", RUBRIC, "--json", "--device", "cpu", "--model", &m];
    let out = common::readout_piped(
        &[&base[..], &["--texts", "-"]].concat(),
        "I was charged twice.\nThe app crashes when I open it.\n",
    );
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("read 2 texts from standard input as lines"), "{err}");
    let lines: Vec<serde_json::Value> =
        std::str::from_utf8(&out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!((l["index"].as_u64(), l.get("id")), (Some(i as u64), None), "{l}");
    }
    // Each line is the text, whole: as if given with --text.
    let given = readout(
        &[&base[..], &["--text", "I was charged twice.", "--text", "The app crashes when I open it."]].concat(),
    );
    assert_eq!(out.stdout, given.stdout);
}

#[test]
fn plain_text_given_as_json_lines_is_still_refused_as_not_json() {
    let m = model_arg();
    let args = ["score", "-r", RUBRIC, "--texts", "-", "--texts-format", "jsonl", "--device", "cpu", "--model", &m];
    let out = common::readout_piped(&args, "I was charged twice.\n");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(standard input):1: field `text`") && err.contains("not JSON"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn texts_scored_together_equal_texts_scored_alone() {
    // Sharing prefixes must not change the numbers beyond float rounding: scored together, the
    // texts' common head is a unit of its own (alone it is part of the text's unit), so its
    // attention rows are shorter and their sums are taken in another order (about 1e-4 apart).
    let m = model_arg();
    let a = "Refund me now.";
    let b = "Where do I change my email address?";
    let both = readout(&["score", "-r", RUBRIC, "-t", a, "-t", b, "--json", "--device", "cpu", "--model", &m]);
    let alone = readout(&["score", "-r", RUBRIC, "-t", b, "--json", "--device", "cpu", "--model", &m]);
    let second: serde_json::Value =
        serde_json::from_str(String::from_utf8(both.stdout).unwrap().lines().nth(1).unwrap()).unwrap();
    let single: serde_json::Value = serde_json::from_str(String::from_utf8(alone.stdout).unwrap().trim()).unwrap();
    for (x, y) in second["criteria"].as_array().unwrap().iter().zip(single["criteria"].as_array().unwrap()) {
        for (p, q) in x["options"].as_array().unwrap().iter().zip(y["options"].as_array().unwrap()) {
            let d = (p["probability"].as_f64().unwrap() - q["probability"].as_f64().unwrap()).abs();
            assert!(d < 1e-3, "{d}");
        }
    }
}

#[test]
fn a_missing_model_says_what_to_run() {
    let out = readout(&["score", "-r", RUBRIC, "-t", TEXT, "--model", "models/nope/SmolLM2-135M-Instruct.Q4_1.gguf"]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("models/fetch") && err.contains("does not exist"), "{err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn bad_model_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.gguf");
    std::fs::write(&empty, b"").unwrap();
    let truncated = dir.path().join("truncated.gguf");
    let bytes = std::fs::read(common::default_model()).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let nodir = dir.path().join("hf-without-config");
    std::fs::create_dir(&nodir).unwrap();
    for (p, want) in
        [(&empty, "not a readable GGUF"), (&truncated, "the weights are cut short"), (&nodir, "config.json")]
    {
        let ps = p.display().to_string();
        let out = readout(&["score", "-r", RUBRIC, "-t", TEXT, "--device", "cpu", "--model", &ps]);
        assert_eq!(out.status.code(), Some(4), "{ps}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want) && err.contains(&ps), "{ps}: {err}");
    }
}

#[test]
fn a_bad_rubric_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("r.json");
    std::fs::write(&r, r#"{"questions": {"q": {"type": "choice", "instructions": "x", "criteria": {"a": "only"}}}}"#)
        .unwrap();
    let rs = r.display().to_string();
    let out = readout(&["score", "-r", &rs, "-t", TEXT]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("questions.q.criteria") && err.contains(&rs), "{err}");
}

#[test]
fn scoring_stops_after_the_text_where_progress_says_so() {
    // The app's Cancel: `progress` answers false, and the texts scored so far come back.
    let engine = common::default_engine();
    let rubric =
        readout::formats::rubric::Rubric::load(&common::repo().join("examples/support-ticket.rubric.json")).unwrap();
    let texts: Vec<readout::jobs::score::Text> = ["Refund me.", "The app crashes.", "Thanks!"]
        .iter()
        .map(|t| readout::jobs::score::Text { id: None, text: t.to_string() })
        .collect();
    let mut seen = Vec::new();
    // Small passes, so that the texts finish in passes of their own.
    let config = readout::config::RunConfig::builder().pass_tokens(8).build().unwrap();
    let out = readout::jobs::score::score_texts(
        &engine,
        &rubric,
        &texts,
        &config,
        &Default::default(),
        &mut |r, done, total| {
            seen.push((r.index, done, total));
            done < 2
        },
    )
    .unwrap();
    // Texts finish in the prompt tree's order, which is not the texts' order.
    assert_eq!(seen.iter().map(|&(_, done, total)| (done, total)).collect::<Vec<_>>(), vec![(1, 3), (2, 3)]);
    let mut first_two: Vec<usize> = seen.iter().map(|&(i, _, _)| i).collect();
    first_two.sort();
    assert_eq!(out.iter().map(|r| r.index).collect::<Vec<_>>(), first_two);
}

#[test]
fn score_takes_every_debias_mode_that_run_takes() {
    // Scoring texts is a run without gold: the same orderings and adjustments. The content-free
    // calibration and PriDe's prior move the probabilities; permutation scores all 3! orderings.
    let m = model_arg();
    let json = |debias: &str| -> serde_json::Value {
        let out =
            readout(&["score", "-r", RUBRIC, "-t", TEXT, "-t", "Thanks!", "--json", "--debias", debias, "--model", &m]);
        assert!(out.status.success(), "{debias}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(String::from_utf8(out.stdout).unwrap().lines().next().unwrap()).unwrap()
    };
    let probs = |v: &serde_json::Value| -> Vec<f64> {
        v["criteria"][0]["options"].as_array().unwrap().iter().map(|o| o["probability"].as_f64().unwrap()).collect()
    };
    let none = json("none");
    assert!(none["criteria"][0]["order_unstable"].is_null(), "one ordering: not checked");
    for mode in ["cyclic", "permutation", "calibrate", "pride"] {
        let v = json(mode);
        let p = probs(&v);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{mode}: {p:?}");
        assert_ne!(p, probs(&none), "{mode} changed nothing");
        if mode != "pride" {
            assert!(v["criteria"][0]["order_unstable"].is_boolean(), "{mode}: {v}");
        }
    }
    let out = readout(&["score", "-r", RUBRIC, "-t", TEXT, "--mode", "generate", "--model", &m]);
    assert_eq!(out.status.code(), Some(2), "score has no --mode");
}

#[test]
fn a_stopped_score_resumes_from_its_out_file_to_the_same_decisions() {
    let m = model_arg();
    let dir = tempfile::tempdir().unwrap();
    let texts = dir.path().join("texts.jsonl");
    std::fs::write(
        &texts,
        (0..6)
            .map(|i| format!("{{\"id\": \"t{i}\", \"text\": \"Ticket {i}: the app crashes when I pay.\"}}\n"))
            .collect::<String>(),
    )
    .unwrap();
    let t = texts.to_str().unwrap();
    let whole = readout(&["score", "-r", RUBRIC, "--texts", t, "--json", "--debias", "cyclic", "--model", &m]);
    assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
    // An out file of a job killed after three texts, its last line cut short by the kill.
    let out = dir.path().join("decisions.jsonl");
    let lines: Vec<&str> = std::str::from_utf8(&whole.stdout).unwrap().lines().collect();
    std::fs::write(&out, format!("{}\n{}\n{}", lines[0], lines[2], &lines[4][..40])).unwrap();
    let o = out.to_str().unwrap();
    let again =
        readout(&["score", "-r", RUBRIC, "--texts", t, "--json", "--debias", "cyclic", "--model", &m, "--out", o]);
    assert_eq!(again.status.code(), Some(1), "an existing --out is kept without --resume");
    let resumed = readout(&[
        "score", "-r", RUBRIC, "--texts", t, "--json", "--debias", "cyclic", "--model", &m, "--out", o, "--resume",
    ]);
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(String::from_utf8_lossy(&resumed.stdout), String::from_utf8_lossy(&whole.stdout), "bit for bit");
    let file = std::fs::read_to_string(&out).unwrap();
    let mut indices: Vec<u64> = file
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["index"].as_u64().unwrap())
        .collect();
    indices.sort();
    assert_eq!(indices, vec![0, 1, 2, 3, 4, 5], "the out file holds every text once");
    // Texts that are not the ones the file was made with are refused.
    std::fs::write(&texts, "{\"id\": \"other\", \"text\": \"x\"}\n").unwrap();
    let wrong = readout(&["score", "-r", RUBRIC, "--texts", t, "--model", &m, "--out", o, "--resume"]);
    assert_ne!(wrong.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("not among these texts"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
}
