//! Crash safety of `readout run`, on the real CLI and the default model: a run is killed with
//! SIGKILL at several points (before anything is written, as soon as the first checkpoint
//! appears, when about half the rows are done); after each kill the result file is absent or a
//! valid partial file (JSON Schema) whose every row equals the uninterrupted run's row, bit for
//! bit; while the run goes, every read of the file parses (writes are atomic). `--resume` then
//! completes it with rows identical to the uninterrupted run's, and no temporary file is left.
//! An existing result is kept unless `--force`.

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SET: &str = "bench/evalsets/authored144.jsonl";
/// A small run whose rows finish over several passes, each followed by a checkpoint (small
/// passes, no wait between checkpoints: the kill points are there however fast the engine is).
const CONFIG: [&str; 8] = ["--limit", "16", "--debias", "cyclic", "--pass-tokens", "256", "--checkpoint-every", "0"];

fn schema() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(common::repo().join("schema/result.schema.json")).unwrap())
            .unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// The file as a schema-valid result document, or `None` when it does not exist.
fn read_valid(path: &Path, v: &jsonschema::Validator) -> Option<Value> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let doc: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not a whole JSON document ({e}): a torn write", path.display()));
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{} does not match the schema:\n{}", path.display(), errors.join("\n"));
    readout::formats::results::ResultFile::load(path).unwrap_or_else(|e| panic!("{e}"));
    Some(doc)
}

fn args<'a>(model: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["run", SET, "--device", "cpu", "--model", model];
    a.extend_from_slice(&CONFIG);
    a.extend_from_slice(extra);
    a
}

/// A running `readout`, killed if the test fails while it runs.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> Running {
    Running(
        Command::new(env!("CARGO_BIN_EXE_readout"))
            .args(args)
            .current_dir(common::repo())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("readout starts"),
    )
}

fn rows(doc: &Value) -> &Vec<Value> {
    doc["rows"].as_array().unwrap()
}

/// Poll the file while the run goes (every read must be a whole valid document) until `when`
/// says to kill, then SIGKILL. Returns false when the run ended by itself first.
fn kill_when(run: &mut Running, out: &Path, v: &jsonschema::Validator, when: impl Fn(Option<&Value>) -> bool) -> bool {
    let child = &mut run.0;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let doc = read_valid(out, v);
        if when(doc.as_ref()) {
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            return true;
        }
        assert!(Instant::now() < deadline, "the run neither ended nor reached the kill point");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// After a kill: no file, or a partial file whose every row is the reference's row, unchanged
/// (or the complete file, when the kill came between its last write and the exit).
fn check_after_kill(out: &Path, v: &jsonschema::Validator, reference: &Value, at: &str) -> usize {
    let Some(doc) = read_valid(out, v) else { return 0 };
    if doc["status"] == "complete" {
        assert_eq!(rows(&doc), rows(reference), "killed {at}: the complete file differs");
    }
    for row in rows(&doc) {
        let same = rows(reference).iter().find(|r| r["id"] == row["id"]);
        assert_eq!(Some(row), same, "killed {at}: row {} differs from the uninterrupted run's", row["id"]);
    }
    rows(&doc).len()
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tmp"))
        .collect()
}

#[test]
fn a_killed_run_leaves_no_file_or_a_valid_partial_one_and_resume_completes_it() {
    let v = schema();
    let m = common::default_model().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    // The uninterrupted run.
    let full = dir.path().join("full.json");
    let f = full.display().to_string();
    let out = common::readout(&args(&m, &["--out", &f]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reference = read_valid(&full, &v).unwrap();
    assert_eq!(reference["status"], "complete");
    let total = rows(&reference).len();
    assert_eq!(total, 16);

    let run_dir = dir.path().join("killed");
    std::fs::create_dir(&run_dir).unwrap();
    let killed = run_dir.join("run.json");
    let k = killed.display().to_string();
    // Start afresh while there is no file, resume once there is one.
    let next = |killed: &Path| -> Running {
        if killed.exists() {
            spawn(&args(&m, &["--resume", &k]))
        } else {
            spawn(&args(&m, &["--out", &k]))
        }
    };
    // 1. At once: the model is loading or the prompts are being planned.
    let mut child = next(&killed);
    let started = Instant::now();
    if kill_when(&mut child, &killed, &v, |_| started.elapsed() > Duration::from_millis(300)) {
        check_after_kill(&killed, &v, &reference, "at once");
    }
    // 2. As soon as the first checkpoint is on disk (or, resuming, as soon as it grows). The
    // file must show partial progress while the run goes: that is what a kill keeps.
    let partial_with = |d: Option<&Value>, n: usize| d.is_some_and(|d| d["status"] == "partial" && rows(d).len() >= n);
    let before = read_valid(&killed, &v).map_or(0, |d| rows(&d).len());
    let mut child = next(&killed);
    assert!(
        kill_when(&mut child, &killed, &v, |d| partial_with(d, before + 1)),
        "the run ended without a partial file ever holding a finished row"
    );
    let n = check_after_kill(&killed, &v, &reference, "after the first checkpoint");
    assert!(n > before, "the checkpoint that was seen is gone");
    // 3. When about half the rows are done.
    let mut child = next(&killed);
    assert!(
        kill_when(&mut child, &killed, &v, |d| partial_with(d, total / 2)),
        "the run ended without a partial file ever holding half the rows"
    );
    let n = check_after_kill(&killed, &v, &reference, "half way");
    assert!((total / 2..=total).contains(&n), "{n} rows after the kill half way");
    // Resume to the end: the rows of the uninterrupted run, bit for bit, in its order.
    if read_valid(&killed, &v).is_some_and(|d| d["status"] == "partial") {
        let out = common::readout(&args(&m, &["--resume", &k]));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let resumed = read_valid(&killed, &v).unwrap();
    assert_eq!(resumed["status"], "complete");
    if let Some((a, b)) = rows(&resumed).iter().zip(rows(&reference)).find(|(a, b)| a != b) {
        panic!("resumed row {} differs from the uninterrupted run's:\n{a}\n{b}", b["id"]);
    }
    assert_eq!(rows(&resumed).len(), total);
    assert_eq!(resumed["metrics"], reference["metrics"]);
    assert!(temp_files(&run_dir).is_empty(), "temporary files left: {:?}", temp_files(&run_dir));
    let names: Vec<_> = std::fs::read_dir(&run_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("run.json")]);

    // Run again: the complete file is kept (exit 2, the way out named) unless --force.
    let kept = std::fs::read(&killed).unwrap();
    let out = common::readout(&args(&m, &["--out", &k]));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&k) && err.contains("exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&killed).unwrap(), kept, "the file was touched");
    // Resuming a complete file is refused the same way.
    let out = common::readout(&args(&m, &["--resume", &k]));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already complete"));
    // --force overwrites (here with a smaller run, so the new file is told apart).
    let mut small = vec!["run", SET, "--device", "cpu", "--model", &m, "--limit", "2", "--out", &k, "--force"];
    let out = common::readout(&small);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let forced = read_valid(&killed, &v).unwrap();
    assert_eq!((forced["status"].as_str(), rows(&forced).len()), (Some("complete"), 2));
    small.pop();
    assert_eq!(common::readout(&small).status.code(), Some(2));
}

/// A partial file holding any subset of the rows (all but the last, every other one, the first
/// few) is completed with the uninterrupted run's rows, bit for bit: the resumed run computes the
/// units of the uninterrupted one, whatever is left.
#[test]
fn resuming_from_any_subset_of_rows_gives_the_uninterrupted_rows() {
    let v = schema();
    let m = common::default_model().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    for (name, config) in
        [("none", &["--limit", "12", "--shots", "1"]), ("cyclic", &["--limit", "8", "--debias", "cyclic"])]
    {
        let full = dir.path().join(format!("{name}.json"));
        let f = full.display().to_string();
        let mut a = vec!["run", SET, "--device", "cpu", "--model", &m, "--out", &f];
        a.extend_from_slice(config);
        let out = common::readout(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let reference = read_valid(&full, &v).unwrap();
        let n = rows(&reference).len();
        let subsets: [(&str, Vec<usize>); 3] = [
            ("all-but-last", (0..n - 1).collect()),
            ("every-other", (0..n).step_by(2).collect()),
            ("first-3", (0..3).collect()),
        ];
        for (what, keep) in subsets {
            let mut partial = reference.clone();
            partial["status"] = "partial".into();
            partial["rows"] = Value::Array(keep.iter().map(|&i| rows(&reference)[i].clone()).collect());
            let p = dir.path().join(format!("{name}-{what}.json"));
            std::fs::write(&p, serde_json::to_vec_pretty(&partial).unwrap()).unwrap();
            let ps = p.display().to_string();
            let out =
                common::readout(&["run", SET, "--device", "cpu", "--model", &m, "--limit", config[1], "--resume", &ps]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let resumed = read_valid(&p, &v).unwrap();
            assert_eq!(resumed["status"], "complete", "{name} {what}");
            if let Some((a, b)) = rows(&resumed).iter().zip(rows(&reference)).find(|(a, b)| a != b) {
                panic!("{name}, resumed from {what}: row {} differs:\n{a}\nuninterrupted:\n{b}", b["id"]);
            }
            assert_eq!(rows(&resumed).len(), n);
        }
    }
}
