//! Determinism on CPU, through the real CLI and the default model: the same configuration run
//! twice gives the same result file bit for bit (every probability, every metric; only the
//! timestamp, the timings and the machine line may differ), and the thread count changes
//! nothing either: one thread and two give bit-identical probabilities (README, "Determinism").

use crate::common;

use serde_json::Value;

const SET: &str = "bench/evalsets/authored144.jsonl";

/// A run with shots (a deeper prompt tree, units of several items batched in one pass) and every
/// cyclic ordering, at `threads` (all cores when `None`). Returns the result document.
fn run(dir: &std::path::Path, name: &str, threads: Option<&str>) -> Value {
    let out = dir.join(name);
    let o = out.display().to_string();
    let m = common::default_model().display().to_string();
    let mut args = vec!["run", SET, "--device", "cpu", "--model", &m, "--limit", "12", "--shots", "1"];
    args.extend_from_slice(&["--debias", "cyclic", "--out", &o]);
    if let Some(t) = threads {
        args.extend_from_slice(&["--threads", t]);
    }
    let res = common::readout(&args);
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

/// The document without what may differ between two runs of one configuration.
fn numbers(doc: &Value) -> Value {
    let mut d = doc.clone();
    let o = d.as_object_mut().unwrap();
    for k in ["created", "timing", "machine"] {
        assert!(o.remove(k).is_some(), "no `{k}` in the result file");
    }
    d
}

/// Every letter probability of every ordering, and every combined probability, in order.
fn probabilities(doc: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    for row in doc["rows"].as_array().unwrap() {
        for o in row["orderings"].as_array().unwrap() {
            out.extend(o["letter_probs"].as_array().unwrap().iter().map(|p| p.as_f64().unwrap()));
        }
        out.extend(row["probs"].as_array().unwrap().iter().map(|p| p.as_f64().unwrap()));
    }
    out
}

#[test]
fn the_same_configuration_twice_gives_bit_identical_results() {
    let dir = tempfile::tempdir().unwrap();
    let a = run(dir.path(), "a.json", None);
    let b = run(dir.path(), "b.json", None);
    assert_eq!(a["rows"].as_array().unwrap().len(), 12);
    let (pa, pb) = (probabilities(&a), probabilities(&b));
    assert_eq!(pa.len(), 12 * (3 * 3 + 3), "3 orderings of 3 letters and 3 combined, per row");
    // serde_json writes the shortest decimal that reads back as the same f64: equal numbers in
    // the files are equal bits.
    assert!(pa.iter().zip(&pb).all(|(x, y)| x.to_bits() == y.to_bits()), "probabilities differ between two runs");
    assert_eq!(numbers(&a), numbers(&b));
}

#[test]
fn the_thread_count_does_not_change_the_probabilities() {
    let dir = tempfile::tempdir().unwrap();
    let one = run(dir.path(), "t1.json", Some("1"));
    let two = run(dir.path(), "t2.json", Some("2"));
    assert_eq!(one["machine"]["device"], "cpu (1 threads)");
    assert_eq!(two["machine"]["device"], "cpu (2 threads)");
    let predicted =
        |d: &Value| -> Vec<Value> { d["rows"].as_array().unwrap().iter().map(|r| r["predicted"].clone()).collect() };
    assert_eq!(predicted(&one), predicted(&two), "the thread count changed a prediction");
    let (p1, p2) = (probabilities(&one), probabilities(&two));
    let worst = p1.iter().zip(&p2).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    assert!(p1.iter().zip(&p2).all(|(x, y)| x.to_bits() == y.to_bits()), "probabilities differ by up to {worst:e}");
    // Two passes side by side only with two threads: the file records it, and nothing else differs.
    assert_eq!(
        (&one["config"]["levers"]["side_by_side"], &two["config"]["levers"]["side_by_side"]),
        (&false.into(), &true.into())
    );
    let without_side_by_side = |d: &Value| {
        let mut n = numbers(d);
        n["config"]["levers"].as_object_mut().unwrap().remove("side_by_side");
        n
    };
    assert_eq!(without_side_by_side(&one), without_side_by_side(&two));
}
