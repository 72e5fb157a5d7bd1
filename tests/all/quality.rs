//! Judge quality end to end (issue 20), the built CLI on the real default model: `readout
//! calibrate` on a committed run (its file held to `schema/calibration.schema.json`, refusals
//! with their thresholds), `--calibration` applied in combine and recorded, `--debias batch`
//! checked against its prior recomputed from the rows, abstaining in `score`, the bootstrap
//! interval of `compare`, the new metrics in every written result file, and `readout jury` over
//! the three real judges' committed runs.

use crate::common;

use common::readout;
use readout::debias;
use serde_json::Value;
use std::path::Path;

const SET: &str = "bench/evalsets/authored144.jsonl";
const CYCLIC: &str = "bench/results/authored144_smollm2-135m-instruct.q4_1_readout_3shot_cyclic.json";
const RUBRIC: &str = "examples/support-ticket.rubric.json";
const TEXT: &str = "I was charged twice this month, please refund one of them.";

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `doc` is valid against the repository's JSON Schema at `schema`.
fn held_to(schema: &str, doc: &Value) {
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(common::repo().join(schema)).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(doc).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Fit a temperature on the committed cyclic run into `dir`; the file is held to its schema.
fn calibrate(dir: &Path) -> (String, Value) {
    let cal = dir.join("cal.json").display().to_string();
    let text = ok(&readout(&["calibrate", CYCLIC, "-o", &cal]));
    assert!(text.contains("temperature") && text.contains("ECE"), "{text}");
    let doc = json(Path::new(&cal));
    held_to("schema/calibration.schema.json", &doc);
    (cal, doc)
}

#[test]
fn calibrate_fits_a_temperature_with_a_held_out_check() {
    let dir = tempfile::tempdir().unwrap();
    let (_, doc) = calibrate(dir.path());
    let t = doc["temperature"].as_f64().unwrap();
    assert!(t > 0.0 && t.is_finite());
    assert_eq!(doc["held_out"]["folds"], 5);
    assert_eq!(doc["held_out"]["fold_temperatures"].as_array().unwrap().len(), 5);
    assert_eq!(doc["fitted_on"]["rows"], 144);
    assert_eq!(doc["fitted_on"]["debias"], "cyclic");
    // The in-sample NLL at the fitted temperature is never above the NLL of the run as it was
    // (T = 1 is among the temperatures searched).
    assert!(doc["in_sample"]["nll"].as_f64().unwrap() <= doc["held_out"]["before"]["nll"].as_f64().unwrap() + 1e-12);
    // The same input gives the same temperature.
    let again = dir.path().join("again.json").display().to_string();
    ok(&readout(&["calibrate", CYCLIC, "-o", &again]));
    assert_eq!(json(Path::new(&again))["temperature"], doc["temperature"]);
}

#[test]
fn calibrate_refuses_too_few_rows_naming_the_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = json(&common::repo().join(CYCLIC));
    doc["rows"].as_array_mut().unwrap().truncate(30);
    let small = dir.path().join("small.json");
    std::fs::write(&small, serde_json::to_vec(&doc).unwrap()).unwrap();
    let cal = dir.path().join("cal.json");
    let out = readout(&["calibrate", &small.display().to_string(), "-o", &cal.display().to_string()]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("30 rows") && err.contains("at least 50 rows") && err.contains("10 wrong"), "{err}");
    assert!(!cal.exists());
    // A generate run has no probabilities to calibrate.
    let gen = "bench/results/authored144_smollm2-135m-instruct.q4_1_generate_3shot_none.json";
    let out = readout(&["calibrate", gen, "-o", &cal.display().to_string()]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_calibrated_run_is_the_plain_run_at_the_temperature_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let (cal, cal_doc) = calibrate(dir.path());
    let t = cal_doc["temperature"].as_f64().unwrap();
    let m = common::default_model().display().to_string();
    let plain = dir.path().join("plain.json").display().to_string();
    let hot = dir.path().join("hot.json").display().to_string();
    let base = ["run", SET, "--limit", "4", "--debias", "cyclic", "--device", "cpu", "--model", &m];
    ok(&readout(&[&base[..], &["--out", &plain]].concat()));
    ok(&readout(&[&base[..], &["--out", &hot, "--calibration", &cal]].concat()));
    let (p, h) = (common::validate(Path::new(&plain)), common::validate(Path::new(&hot)));
    let rec = &h["config"]["calibration"];
    assert_eq!(rec["temperature"].as_f64().unwrap(), t);
    assert_eq!(rec["sha256"].as_str().unwrap(), readout::hash::sha256_file(Path::new(&cal)).unwrap());
    assert_eq!(rec["file"], "cal.json");
    assert!(p["config"].get("calibration").is_none());
    for (rp, rh) in p["rows"].as_array().unwrap().iter().zip(h["rows"].as_array().unwrap()) {
        let probs =
            |r: &Value| -> Vec<f64> { r["probs"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect() };
        let want = readout::formats::calibration::apply_temperature(&probs(rp), t);
        for (a, b) in want.iter().zip(probs(rh)) {
            assert!((a - b).abs() < 1e-12, "{want:?} against {:?}", probs(rh));
        }
        assert_eq!(rp["predicted"], rh["predicted"]);
        assert_eq!(rp["orderings"], rh["orderings"]);
    }
    // Under another debias mode than it was fitted on, it is refused before the model loads.
    let out =
        readout(&["run", SET, "--limit", "4", "--debias", "none", "--calibration", &cal, "--out", &plain, "--force"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--debias cyclic"));
}

#[test]
fn batch_calibration_divides_out_the_mean_letter_probabilities_of_each_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let m = common::default_model().display().to_string();
    let out = dir.path().join("batch.json");
    let o = out.display().to_string();
    let args = [
        "run", SET, "--limit", "6", "--shots", "1", "--debias", "batch", "--device", "cpu", "--model", &m, "--out", &o,
    ];
    ok(&readout(&args));
    let doc = common::validate(&out);
    assert_eq!(doc["config"]["debias"], "batch");
    let rows = doc["rows"].as_array().unwrap();
    let f = |v: &Value| -> Vec<f64> { v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
    // The prior, recomputed from the rows: per option count and rotation, the mean letter probabilities.
    for (n, per_rotation) in doc["debias_state"]["prior"].as_object().unwrap() {
        let n: usize = n.parse().unwrap();
        for (k, prior) in per_rotation.as_array().unwrap().iter().enumerate() {
            let under_k: Vec<Vec<f64>> = rows
                .iter()
                .filter(|r| r["option_ids"].as_array().unwrap().len() == n)
                .map(|r| f(&r["orderings"][k]["letter_probs"]))
                .collect();
            let want = debias::batch_prior(&under_k);
            assert!(want.iter().zip(f(prior)).all(|(a, b)| (a - b).abs() < 1e-12), "{want:?} {prior}");
        }
    }
    // Each row: every rotation divided by its prior, mapped to options, averaged.
    for r in rows {
        let n = r["option_ids"].as_array().unwrap().len();
        let per: Vec<Vec<f64>> = r["orderings"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(k, o)| {
                let prior = f(&doc["debias_state"]["prior"][n.to_string()][k]);
                let order: Vec<usize> =
                    o["order"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
                debias::to_option_space(&debias::prior_debias(&f(&o["letter_probs"]), &prior), &order)
            })
            .collect();
        let want = debias::average(&per);
        assert!(want.iter().zip(f(&r["probs"])).all(|(a, b)| (a - b).abs() < 1e-12), "{want:?} {}", r["probs"]);
    }
    // The new metrics are in the file.
    let metrics = &doc["metrics"];
    assert_eq!(metrics["selective"]["coverage_at_risk"].as_array().unwrap().len(), 3);
    let curve = metrics["selective"]["curve"].as_array().unwrap();
    assert_eq!(curve.last().unwrap()["coverage"].as_f64().unwrap(), 1.0);
    let letters = metrics["position_bias"]["letters"].as_array().unwrap();
    let chosen: u64 = letters.iter().map(|l| l["chosen"].as_u64().unwrap()).sum();
    assert_eq!(chosen, metrics["position_bias"]["readings"].as_u64().unwrap());
}

#[test]
fn score_abstains_below_a_confidence_or_a_letter_mass() {
    let m = common::default_model().display().to_string();
    let base = ["score", "--rubric", RUBRIC, "--text", TEXT, "--device", "cpu", "--model", &m];
    // Every top probability is below 0.99 on this small model: every criterion abstains.
    let line = ok(&readout(&[&base[..], &["--json", "--abstain-below", "0.99"]].concat()));
    let v: Value = serde_json::from_str(line.trim()).unwrap();
    for c in v["criteria"].as_array().unwrap() {
        assert_eq!(c["chosen"], Value::Null, "{c}");
        assert_eq!(c["abstained"], "confidence");
        assert!(c["probability"].as_f64().unwrap() < 0.99);
    }
    // The letters never hold all of the next-token mass: a threshold of 1 abstains on it.
    let line =
        ok(&readout(&[&base[..], &["--json", "--abstain-letter-mass", "1", "--abstain-below", "0.99"]].concat()));
    let v: Value = serde_json::from_str(line.trim()).unwrap();
    assert!(v["criteria"].as_array().unwrap().iter().all(|c| c["abstained"] == "letter_mass"));
    // Without thresholds nothing abstains, and the field is absent.
    let line = ok(&readout(&[&base[..], &["--json", "--abstain-below", "0"]].concat()));
    let v: Value = serde_json::from_str(line.trim()).unwrap();
    assert!(v["criteria"].as_array().unwrap().iter().all(|c| c["chosen"].is_string() && c.get("abstained").is_none()));
    // The table says so.
    let table = ok(&readout(&[&base[..], &["--abstain-below", "0.99"]].concat()));
    assert!(table.contains("no answer"), "{table}");
    // A probability out of range is refused.
    let out = readout(&[&base[..], &["--abstain-below", "1.5"]].concat());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compare_gives_a_group_bootstrap_interval_beside_mcnemar() {
    let a = "bench/results/authored144_smollm2-135m-instruct.q4_1_readout_3shot_none.json";
    let text = ok(&readout(&["compare", a, CYCLIC, "--json"]));
    let c: Value = serde_json::from_str(&text).unwrap();
    let d = &c["difference"];
    assert_eq!((d["resamples"].as_u64(), d["seed"].as_u64()), (Some(1000), Some(0)));
    let est = d["accuracy"]["estimate"].as_f64().unwrap();
    let want = c["accuracy_b"].as_f64().unwrap() - c["accuracy_a"].as_f64().unwrap();
    assert!((est - want).abs() < 1e-12);
    for k in ["accuracy", "balanced_accuracy"] {
        let (lo, e, hi) =
            (d[k]["lo"].as_f64().unwrap(), d[k]["estimate"].as_f64().unwrap(), d[k]["hi"].as_f64().unwrap());
        assert!(lo <= e && e <= hi && lo < hi, "{k}: {lo} {e} {hi}");
    }
    // The same seed, the same interval; the human output names it.
    assert_eq!(serde_json::from_str::<Value>(&ok(&readout(&["compare", a, CYCLIC, "--json"]))).unwrap(), c);
    let human = ok(&readout(&["compare", a, CYCLIC]));
    assert!(human.contains("group bootstrap") && human.contains("McNemar"), "{human}");
}

const JUDGES: [&str; 3] = [
    CYCLIC,
    "bench/results/authored144_gemma-3-270m-q4_k_m_readout_3shot_cyclic.json",
    "bench/results/authored144_qwen2.5-coder-1.5b-instruct-q4_k_m_readout_3shot_cyclic.json",
];

/// `readout jury` on `results` with `extra` flags, the file held to `schema/jury.schema.json`.
fn jury(dir: &Path, name: &str, results: &[&str], extra: &[&str]) -> (String, Value) {
    let out = dir.join(name).display().to_string();
    let mut args = vec!["jury"];
    args.extend(results);
    args.extend(["-o", &out, "--resamples", "200"]);
    args.extend(extra);
    let text = ok(&readout(&args));
    let doc = json(Path::new(&out));
    held_to("schema/jury.schema.json", &doc);
    (text, doc)
}

#[test]
fn a_jury_pools_the_judges_probabilities_and_records_every_judge() {
    let dir = tempfile::tempdir().unwrap();
    let (text, doc) = jury(dir.path(), "equal.json", &JUDGES, &[]);
    assert!(text.contains("jury of 3 judges") && text.contains("Krippendorff"), "{text}");
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 144);
    assert_eq!(doc["judges"].as_array().unwrap().len(), 3);
    // Equal weights: each row's pool is the mean of the judges' probabilities as their runs
    // gave them, and its answer the pool's largest.
    let runs: Vec<Value> = JUDGES.iter().map(|p| json(&common::repo().join(p))).collect();
    for (i, row) in rows.iter().enumerate() {
        let probs: Vec<f64> = row["probs"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        for (o, p) in probs.iter().enumerate() {
            let mean = runs.iter().map(|r| r["rows"][i]["probs"][o].as_f64().unwrap()).sum::<f64>() / 3.0;
            assert!((p - mean).abs() < 1e-12, "row {i} option {o}: {p} against {mean}");
        }
        let best = (0..probs.len()).fold(0, |b, o| if probs[o] > probs[b] { o } else { b });
        assert_eq!(row["predicted"], best);
        let answers: Vec<&Value> = row["judges"].as_array().unwrap().iter().map(|j| &j["predicted"]).collect();
        assert_eq!(row["disagree"], answers.iter().any(|a| *a != answers[0]));
    }
    for (j, run) in runs.iter().enumerate() {
        assert_eq!(doc["judges"][j]["weight"].as_f64().unwrap(), 1.0 / 3.0);
        assert_eq!(doc["judges"][j]["model_sha256"], run["model"]["sha256"]);
    }
    assert_eq!(doc["agreement"].as_array().unwrap().last().unwrap()["criterion"], "all");

    // Fitted weights: on the simplex, one set per fold, every row pooled by its fold's.
    let (_, fitted) = jury(dir.path(), "fitted.json", &JUDGES, &["--weights", "fitted"]);
    let w = &fitted["weights"];
    assert_eq!((w["method"].as_str(), w["folds"].as_u64()), (Some("fitted"), Some(5)));
    for fold in w["fold_weights"].as_array().unwrap() {
        let sum: f64 = fold.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{fold}");
    }
    // Abstaining where the judges disagree answers only the rows where they agree.
    let (_, abstain) = jury(dir.path(), "abstain.json", &JUDGES[..2], &["--abstain-on-disagreement"]);
    let rows = abstain["rows"].as_array().unwrap();
    let agreed = rows.iter().filter(|r| r["disagree"] == false).count();
    assert_eq!(abstain["answered"].as_u64().unwrap() as usize, agreed);
    assert!(rows.iter().all(|r| (r["disagree"] == true) == r["predicted"].is_null()));
}

#[test]
fn a_jury_of_different_rows_names_the_judge_and_the_row() {
    let dir = tempfile::tempdir().unwrap();
    // A copy of a judge's run without its first row.
    let mut run = json(&common::repo().join(JUDGES[1]));
    let first = run["rows"][0]["id"].as_str().unwrap().to_string();
    run["rows"].as_array_mut().unwrap().remove(0);
    let short = dir.path().join("short.json");
    std::fs::write(&short, serde_json::to_vec(&run).unwrap()).unwrap();
    let out = dir.path().join("j.json").display().to_string();
    let res = readout(&["jury", JUDGES[0], short.to_str().unwrap(), "-o", &out]);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(!res.status.success());
    assert!(err.contains("short.json") && err.contains(&first), "{err}");
    // One result file is a judge, not a jury: clap refuses it.
    let res = readout(&["jury", JUDGES[0], "-o", &out]);
    assert_eq!(res.status.code(), Some(2));
}

#[test]
fn a_pairwise_set_runs_with_both_orders_and_gives_standings() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("pairs.jsonl").display().to_string();
    ok(&readout(&["pairwise", "evalset", "bench/evalsets/pairwise24.pairs.jsonl", "-o", &set]));
    // The committed eval set is what the command makes of the committed pairs file.
    let committed = std::fs::read_to_string(common::repo().join("bench/evalsets/pairwise24.jsonl")).unwrap();
    assert_eq!(std::fs::read_to_string(&set).unwrap(), committed);
    let out = dir.path().join("run.json").display().to_string();
    ok(&readout(&["run", &set, "--debias", "cyclic", "--out", &out]));
    // Every pair read in both orders of its two responses (and a tie's three rotations).
    let run = json(Path::new(&out));
    for row in run["rows"].as_array().unwrap() {
        let n = row["option_ids"].as_array().unwrap().len();
        assert_eq!(row["orderings"].as_array().unwrap().len(), n, "{}", row["id"]);
        assert!(row["order_unstable"].is_boolean());
    }
    let report: Value = serde_json::from_str(&ok(&readout(&["pairwise", "standings", &out, "--json"]))).unwrap();
    assert_eq!(report["pairs"], 24);
    let systems = report["systems"].as_array().unwrap();
    assert_eq!(systems.len(), 3);
    for s in systems {
        assert_eq!(s["judge"]["games"], 16);
        let (lo, est, hi) = (&s["judge"]["score"]["lo"], &s["judge"]["score"]["estimate"], &s["judge"]["score"]["hi"]);
        assert!(lo.as_f64() <= est.as_f64() && est.as_f64() <= hi.as_f64(), "{s}");
        // By gold, accurate wins all 16 of its games; the others lose 8 to it and tie 8 with each other.
        let gold = s["gold"]["win_rate"]["estimate"].as_f64().unwrap();
        assert_eq!(gold, if s["system"] == "accurate" { 1.0 } else { 0.25 }, "{s}");
    }
    // A pairs file with a bad line names it.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"id\":\"x\",\"prompt\":\"p\",\"system_a\":\"s\",\"response_a\":\"r\",\"system_b\":\"t\",\"winner\":\"a\"}\n",
    )
    .unwrap();
    let res = readout(&[
        "pairwise",
        "evalset",
        bad.to_str().unwrap(),
        "-o",
        &dir.path().join("o.jsonl").display().to_string(),
    ]);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(!res.status.success() && err.contains("bad.jsonl:1") && err.contains("response_b"), "{err}");
}

const GEMMA: &str = "models/gemma-3-270m-q4_k_m.gguf";

/// A judges file in `dir`: the default model with weight 3 and Gemma 3 (its template named)
/// with weight 1, held to `schema/judges.schema.json`.
fn weighted_judges(dir: &Path) -> String {
    let doc = serde_json::json!({
        "schema": "readout.judges",
        "judges": [
            { "model": common::default_model(), "weight": 3.0 },
            { "model": common::repo().join(GEMMA), "chat_template": "gemma", "weight": 1.0 },
        ]
    });
    held_to("schema/judges.schema.json", &doc);
    let path = dir.join("judges.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    path.display().to_string()
}

fn probs(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn a_jury_scores_texts_with_each_judge_s_answer_under_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let judges = weighted_judges(dir.path());
    let texts = [TEXT, "The app crashes every time I open the settings page."];
    let base =
        ["score", "--rubric", RUBRIC, "--text", texts[0], "--text", texts[1], "--debias", "cyclic", "--device", "cpu"];
    let jury = ok(&readout(&[&base[..], &["--judges", &judges, "--json"]].concat()));
    let m = common::default_model().display().to_string();
    let alone = ok(&readout(&[&base[..], &["--model", &m, "--json"]].concat()));
    let mut disagreements = 0;
    for (line, alone) in jury.lines().zip(alone.lines()) {
        let (v, alone): (Value, Value) = (serde_json::from_str(line).unwrap(), serde_json::from_str(alone).unwrap());
        for (c, solo) in v["criteria"].as_array().unwrap().iter().zip(alone["criteria"].as_array().unwrap()) {
            let js = c["judges"].as_array().unwrap();
            assert_eq!(js.len(), 2);
            assert_eq!((js[0]["weight"].as_f64(), js[1]["weight"].as_f64()), (Some(0.75), Some(0.25)));
            // The first judge reads as it does alone.
            let (p0, p1) = (probs(&js[0]["probabilities"]), probs(&js[1]["probabilities"]));
            let solo_p: Vec<f64> =
                solo["options"].as_array().unwrap().iter().map(|o| o["probability"].as_f64().unwrap()).collect();
            for (a, b) in p0.iter().zip(&solo_p) {
                assert!((a - b).abs() < 1e-9, "{p0:?} against the judge alone {solo_p:?}");
            }
            assert_eq!(js[0]["chosen"], solo["chosen"]);
            // The jury's probability of each option is 0.75·p₁ + 0.25·p₂.
            for (o, opt) in c["options"].as_array().unwrap().iter().enumerate() {
                let want = 0.75 * p0[o] + 0.25 * p1[o];
                assert!((opt["probability"].as_f64().unwrap() - want).abs() < 1e-12, "{c}");
            }
            let top = |p: &[f64]| (0..p.len()).fold(0, |b, o| if p[o] > p[b] { o } else { b });
            let disagree = top(&p0) != top(&p1);
            assert_eq!(c["disagree"], disagree, "{c}");
            disagreements += disagree as usize;
        }
    }
    // The table shows each judge under the jury's row.
    let table = ok(&readout(&[&base[..], &["--judges", &judges]].concat()));
    assert!(table.contains("topic (jury)") && table.matches("  └ ").count() == 12, "{table}");
    // Abstaining on disagreement leaves exactly the disagreements without an answer.
    let abstained = ok(&readout(&[&base[..], &["--judges", &judges, "--json", "--abstain-on-disagreement"]].concat()));
    let none: usize = abstained
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["criteria"].as_array().unwrap().iter().filter(|c| c["abstained"] == "disagreement").count()
        })
        .sum();
    assert_eq!(none, disagreements);
    // The same model twice (`--model A --model A`): the pool is the judge, and they never disagree.
    let twice = ok(&readout(&[&base[..], &["--model", &m, "--model", &m, "--json"]].concat()));
    for (line, alone) in twice.lines().zip(alone.lines()) {
        let (v, alone): (Value, Value) = (serde_json::from_str(line).unwrap(), serde_json::from_str(alone).unwrap());
        for (c, solo) in v["criteria"].as_array().unwrap().iter().zip(alone["criteria"].as_array().unwrap()) {
            assert_eq!(c["disagree"], false);
            assert_eq!(c["chosen"], solo["chosen"]);
            assert!((c["probability"].as_f64().unwrap() - solo["probability"].as_f64().unwrap()).abs() < 1e-9);
        }
    }
}

#[test]
fn a_jury_runs_an_eval_set_and_records_every_judge_s_run() {
    let dir = tempfile::tempdir().unwrap();
    let judges = weighted_judges(dir.path());
    let out = dir.path().join("jury.json");
    let o = out.display().to_string();
    let run = ["run", SET, "--limit", "12", "--shots", "3", "--debias", "cyclic", "--device", "cpu"];
    let text = ok(&readout(&[&run[..], &["--judges", &judges, "--out", &o]].concat()));
    assert!(text.contains("jury of 2 judges") && text.contains("peak RSS") && text.contains("weights given"), "{text}");
    let doc = json(&out);
    held_to("schema/jury.schema.json", &doc);
    assert_eq!(doc["weights"]["method"], "given");
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    // Each judge's run is a result file beside the jury's, named and hashed in it.
    let files = ["jury.judge-1.SmolLM2-135M-Instruct.Q4_1.json", "jury.judge-2.gemma-3-270m-q4_k_m.json"];
    let runs: Vec<Value> = files.iter().map(|f| common::validate(&dir.path().join(f))).collect();
    for (j, (f, r)) in files.iter().zip(&runs).enumerate() {
        let judge = &doc["judges"][j];
        assert!(judge["file"].as_str().unwrap().ends_with(f), "{judge}");
        assert_eq!(judge["model_sha256"], r["model"]["sha256"]);
        assert_eq!(judge["chat_template"], r["model"]["chat_template"]);
        assert!(judge["peak_rss_bytes"].as_u64().unwrap() > 0);
        assert_eq!(r["timing"]["peak_rss_bytes"], judge["peak_rss_bytes"]);
    }
    assert_eq!(doc["judges"][0]["weight"].as_f64(), Some(0.75));
    for (i, row) in rows.iter().enumerate() {
        for (o, p) in probs(&row["probs"]).iter().enumerate() {
            let want = 0.75 * runs[0]["rows"][i]["probs"][o].as_f64().unwrap()
                + 0.25 * runs[1]["rows"][i]["probs"][o].as_f64().unwrap();
            assert!((p - want).abs() < 1e-12, "row {i}: {p} against {want}");
        }
    }
    // The files are kept: a second run names the one in the way.
    let again = readout(&[&run[..], &["--judges", &judges, "--out", &o]].concat());
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("jury.json"));
    // `--model A --model B` with equal weights: one judge's result file per model.
    let m = common::default_model().display().to_string();
    let two = dir.path().join("two.json").display().to_string();
    let text = ok(&readout(&[&run[..], &["--model", &m, "--model", &m, "--out", &two]].concat()));
    assert!(text.contains("weights equal"), "{text}");
    let doc = json(Path::new(&two));
    assert_eq!(doc["judges"][1]["weight"].as_f64(), Some(0.5));
    assert!(doc["rows"].as_array().unwrap().iter().all(|r| r["disagree"] == false));
}

#[test]
fn a_jury_s_refusals_name_the_judge_and_the_text_or_field() {
    let dir = tempfile::tempdir().unwrap();
    let m = common::default_model().display().to_string();
    // A text longer than the context: judge 1 and text 2 are named.
    let long = "word ".repeat(12_000);
    let out = readout(&["score", "--rubric", RUBRIC, "-t", TEXT, "-t", &long, "--model", &m, "--model", &m]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("judge 1") && err.contains("text 2") && err.contains("context"),
        "{err}"
    );
    // A judges file with a misspelt field names the file and the field.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, format!(r#"{{"judges": [{{"model": "{m}", "wieght": 1}}, {{"model": "{m}"}}]}}"#)).unwrap();
    let out = readout(&["score", "--rubric", RUBRIC, "-t", TEXT, "--judges", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bad.json") && err.contains("judges[0].wieght"), "{err}");
    // A missing model is named before any judge loads.
    std::fs::write(&bad, format!(r#"{{"judges": [{{"model": "{m}"}}, {{"model": "nowhere.gguf"}}]}}"#)).unwrap();
    let out = readout(&[
        "run",
        SET,
        "--limit",
        "3",
        "--judges",
        bad.to_str().unwrap(),
        "--out",
        dir.path().join("j.json").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("judge 2") && err.contains("nowhere.gguf"), "{err}");
    assert!(!dir.path().join("j.judge-1.SmolLM2-135M-Instruct.Q4_1.json").exists(), "no judge ran");
}
