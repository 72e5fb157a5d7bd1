//! `readout run`, `compare` and `table` end to end: the built CLI on the real default model and
//! a few authored144 rows. Every result file written is held to schema/result.schema.json.

use crate::common;

use common::readout;
use serde_json::Value;

const SET: &str = "bench/evalsets/authored144.jsonl";

fn run(args: &[&str]) -> std::process::Output {
    let m = common::default_model().display().to_string();
    let mut all: Vec<&str> = vec!["run", SET, "--device", "cpu", "--model", &m];
    all.extend_from_slice(args);
    let out = readout(&all);
    assert!(out.status.success(), "readout {all:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn cyclic_run_writes_a_valid_result_with_the_tree_counted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cyclic.json");
    let o = out.display().to_string();
    let stdout = String::from_utf8(run(&["--limit", "12", "--debias", "cyclic", "--out", &o]).stdout).unwrap();
    assert!(stdout.contains("mean family balanced accuracy"), "{stdout}");
    let doc = common::validate(&out);
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["rows"].as_array().unwrap().len(), 12);
    let row = &doc["rows"][0];
    assert_eq!(row["orderings"].as_array().unwrap().len(), 3);
    let p: f64 = row["probs"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum();
    assert!((p - 1.0).abs() < 1e-9);
    assert!(row["order_unstable"].is_boolean());
    assert!(doc["metrics"]["overall"]["order_unstable"].is_u64());
    // Each shared prefix once: every token of the tree once, far fewer than the prompts hold.
    let plan = &doc["plan"];
    assert_eq!(plan["computed_tokens"], plan["unique_tokens"]);
    assert!(plan["computed_tokens"].as_u64().unwrap() * 2 < plan["prompt_tokens"].as_u64().unwrap());
    assert_eq!(doc["model"]["sha256"], "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
}

#[test]
fn single_ordering_is_not_checked_and_shots_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shots.json");
    let o = out.display().to_string();
    run(&["--limit", "24", "--shots", "2", "--out", &o]);
    let doc = common::validate(&out);
    assert!(doc["metrics"]["overall"]["order_unstable"].is_null());
    assert!(doc["metrics"]["overall"]["order_consistency"].is_null());
    let primary: Vec<&str> = doc["shots"]["primary"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(primary.len(), 2);
    for row in doc["rows"].as_array().unwrap() {
        let shots: Vec<&str> = row["shots"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        assert_eq!(shots.len(), 2);
        // Never the scored row, never a row of its group.
        assert!(!shots.contains(&row["id"].as_str().unwrap()));
        // The shots come from the whole set, so a shot's group is read from the set itself.
        for s in &shots {
            assert_ne!(group_of(s), row["group_id"].as_str().unwrap(), "{s}");
        }
    }
}

/// The group of an authored144 row, from the set's own file.
fn group_of(id: &str) -> String {
    let text = std::fs::read_to_string(common::repo().join(SET)).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["id"] == id)
        .map(|v| v["group_id"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("{id} is not in {SET}"))
}

#[test]
fn limit_picks_the_rows_and_the_shots_come_from_the_whole_set() {
    // `--limit 12 --shots 3` once drew the shots from the 12 rows, and failed ("needs 6 rows
    // from distinct groups"). Now the limited run's prompts are the whole set's first ones.
    let m = common::default_model().display().to_string();
    let prompts = |limit: &[&str]| -> Vec<Value> {
        let mut args = vec!["prompts", SET, "--shots", "3", "--debias", "cyclic", "--device", "cpu", "--model", &m];
        args.extend_from_slice(limit);
        let out = readout(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let (some, all) = (prompts(&["--limit", "12"]), prompts(&[]));
    assert_eq!(some.len(), 12 * 3);
    assert_eq!(some[..], all[..some.len()]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("limited.json");
    run(&["--limit", "12", "--shots", "3", "--debias", "cyclic", "--out", &out.display().to_string()]);
    let doc = common::validate(&out);
    assert_eq!(doc["rows"].as_array().unwrap().len(), 12);
    assert_eq!(doc["eval_set"]["limit"], 12);
}

#[test]
fn the_default_result_name_never_overwrites() {
    // A run without --out, where a file of the default name exists (a committed result): the
    // next free name beside it, not a refusal.
    let dir = tempfile::tempdir().unwrap();
    let m = common::default_model().display().to_string();
    let run_in = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_readout"))
            .args([
                "run",
                &common::repo().join(SET).display().to_string(),
                "--limit",
                "2",
                "--device",
                "cpu",
                "--model",
                &m,
            ])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    run_in();
    run_in();
    let name = "authored144_smollm2-135m-instruct.q4_1_readout_0shot_none";
    let results = dir.path().join("bench/results");
    assert!(results.join(format!("{name}.json")).exists());
    assert!(results.join(format!("{name}-2.json")).exists());
}

#[test]
fn generate_mode_records_replies() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen.json");
    let o = out.display().to_string();
    run(&["--limit", "4", "--mode", "generate", "--out", &o]);
    let doc = common::validate(&out);
    for row in doc["rows"].as_array().unwrap() {
        assert!(row["orderings"][0]["reply"].is_string());
        assert_eq!(row["invalid"].as_bool().unwrap(), row["predicted"].is_null());
    }
}

#[test]
fn resume_completes_a_partial_file_with_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.json");
    let f = full.display().to_string();
    run(&["--limit", "10", "--debias", "cyclic", "--out", &f]);
    let whole = common::validate(&full);
    // A partial file holding the first 4 rows, as a stopped run leaves it.
    let mut partial = whole.clone();
    partial["status"] = "partial".into();
    partial["rows"] = Value::Array(whole["rows"].as_array().unwrap()[..4].to_vec());
    let part = dir.path().join("part.json");
    std::fs::write(&part, serde_json::to_vec(&partial).unwrap()).unwrap();
    common::validate(&part);
    let p = part.display().to_string();
    // Resumed with another chat template, the file is refused and kept as it was.
    let m = common::default_model().display().to_string();
    let other = readout(&[
        "run",
        SET,
        "--device",
        "cpu",
        "--model",
        &m,
        "--limit",
        "10",
        "--resume",
        &p,
        "--chat-template",
        "llama3",
    ]);
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(!other.status.success() && err.contains("another chat template (model"), "{err}");
    assert!(err.contains("without --chat-template"), "{err}");
    assert_eq!(common::validate(&part)["rows"], partial["rows"]);
    run(&["--limit", "10", "--resume", &p]);
    let resumed = common::validate(&part);
    assert_eq!(resumed["status"], "complete");
    // Bit for bit: the kept rows as they were read, the new ones as an uninterrupted run gives them.
    assert_eq!(whole["rows"], resumed["rows"]);
    assert_eq!(whole["metrics"], resumed["metrics"]);
}

#[test]
fn compare_and_table_read_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let (sa, sb) = (a.display().to_string(), b.display().to_string());
    run(&["--limit", "9", "--out", &sa]);
    run(&["--limit", "9", "--debias", "cyclic", "--out", &sb]);
    let out = readout(&["compare", &sa, &sb]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("McNemar") && text.contains("9 paired rows"), "{text}");
    let md = dir.path().join("table.md");
    let d = dir.path().display().to_string();
    let m = md.display().to_string();
    let out = readout(&["table", &d, "--markdown", &m]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = std::fs::read_to_string(&md).unwrap();
    assert!(table.contains("a.json") && table.contains("b.json") && table.contains("not checked"), "{table}");
    // Re-running replaces the generated block instead of appending another.
    readout(&["table", &d, "--markdown", &m]);
    assert_eq!(std::fs::read_to_string(&md).unwrap().matches("a.json").count(), 2);
    // A result of another eval set is refused by name.
    let other = dir.path().join("other.json");
    let mut doc = common::validate(&a);
    doc["eval_set"]["sha256"] = Value::String("0".repeat(64));
    std::fs::write(&other, serde_json::to_vec(&doc).unwrap()).unwrap();
    let so = other.display().to_string();
    let out = readout(&["compare", &sa, &so]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("different eval set"));
}

#[test]
fn an_existing_result_is_not_overwritten_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.json");
    std::fs::write(&out, "keep me").unwrap();
    let o = out.display().to_string();
    let m = common::default_model().display().to_string();
    let res = readout(&["run", SET, "--limit", "3", "--out", &o, "--device", "cpu", "--model", &m]);
    assert!(!res.status.success());
    assert!(String::from_utf8_lossy(&res.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
}

#[test]
fn a_bad_eval_set_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("bad.jsonl");
    let good = std::fs::read_to_string(common::repo().join(SET)).unwrap();
    let first = good.lines().next().unwrap();
    std::fs::write(
        &set,
        format!("{first}\n{{\"id\": \"x\", \"state\": \"s\", \"question\": \"q\", \"options\": [], \"label\": 0}}\n"),
    )
    .unwrap();
    let s = set.display().to_string();
    let out = readout(&["run", &s, "--out", "/dev/null"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(":2:") && err.contains("options"), "{err}");
}

#[test]
fn ctrl_c_leaves_a_valid_partial_file_that_resume_completes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stopped.json");
    let o = out.display().to_string();
    let m = common::default_model().display().to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_readout"))
        .args(["run", SET, "--limit", "30", "--debias", "cyclic", "--device", "cpu", "--model", &m, "--out", &o])
        .current_dir(common::repo())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(4));
    let _ = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let status = child.wait().unwrap();
    if status.success() {
        // The machine was fast enough to finish before the signal; nothing partial to check.
        common::validate(&out);
        return;
    }
    assert_eq!(status.code(), Some(130));
    let partial = common::validate(&out);
    assert_eq!(partial["status"], "partial");
    let done = partial["rows"].as_array().unwrap().len();
    assert!(done < 30);
    run(&["--limit", "30", "--resume", &o]);
    let resumed = common::validate(&out);
    assert_eq!(resumed["status"], "complete");
    assert_eq!(resumed["rows"].as_array().unwrap().len(), 30);
    // The rows finished before the stop are kept as they were.
    for row in partial["rows"].as_array().unwrap() {
        let same = resumed["rows"].as_array().unwrap().iter().find(|r| r["id"] == row["id"]).unwrap();
        assert_eq!(same, row);
    }
}

#[test]
fn native_weights_answer_as_the_f32_path_does_in_less_memory() {
    // The default model held in its Q4_1 encoding (the default) against the same file expanded to
    // f32: every probability within 0.005 (the accuracy bound of native weights), the same
    // predictions, and each run's peak memory recorded.
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| dir.path().join(name).display().to_string();
    let (native, f32) = (file("native.json"), file("f32.json"));
    run(&["--limit", "12", "--debias", "cyclic", "--out", &native]);
    run(&["--limit", "12", "--debias", "cyclic", "--weights", "f32", "--out", &f32]);
    let (a, b) = (common::validate(std::path::Path::new(&native)), common::validate(std::path::Path::new(&f32)));
    assert_eq!((a["model"]["weights"].as_str(), b["model"]["weights"].as_str()), (Some("native"), Some("f32")));
    assert_eq!(b["model"]["activations"], "f32");
    for (ra, rb) in a["rows"].as_array().unwrap().iter().zip(b["rows"].as_array().unwrap()) {
        assert_eq!(ra["predicted"], rb["predicted"], "{}", ra["id"]);
        for (oa, ob) in ra["orderings"].as_array().unwrap().iter().zip(rb["orderings"].as_array().unwrap()) {
            for (x, y) in oa["letter_probs"].as_array().unwrap().iter().zip(ob["letter_probs"].as_array().unwrap()) {
                let d = (x.as_f64().unwrap() - y.as_f64().unwrap()).abs();
                assert!(d <= 0.005, "{}: |dp| {d}", ra["id"]);
            }
        }
    }
    let peak = |d: &Value| d["timing"]["peak_rss_bytes"].as_u64().unwrap();
    // The f32 path holds every weight expanded (about 4x the 98 MB file); native ones are mapped.
    assert!(peak(&a) < peak(&b), "native {} bytes, f32 {} bytes", peak(&a), peak(&b));
}
