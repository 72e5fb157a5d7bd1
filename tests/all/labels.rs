//! `readout labels` end to end on the real default model: score the example tickets into an
//! answers file, draw a sheet, fill it as a person would in a spreadsheet, read agreement and
//! corrected rates back; bad sheets refused by line and column with nothing written; the labels
//! as an eval set that `readout run` takes.

use std::path::Path;

use crate::common;
use common::readout;

const RUBRIC: &str = "examples/support-ticket.rubric.json";
const TEXTS: &str = "examples/support-tickets.csv";

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Score the example into `dir/answers.jsonl`.
fn answers(dir: &Path) -> String {
    let m = common::default_model().display().to_string();
    let answers = dir.join("answers.jsonl").display().to_string();
    let args = ["score", "--rubric", RUBRIC, "--texts", TEXTS, "--out", &answers, "--device", "cpu", "--model", &m];
    ok(&readout(&args));
    answers
}

/// Fill a drawn CSV sheet: topic `billing`, refund `yes`, urgency level 1, except that the person
/// disagrees with `topic` on the first row by taking `technical`.
fn fill(sheet: &str) -> String {
    let mut rdr = csv::Reader::from_reader(sheet.as_bytes());
    let header = rdr.headers().unwrap().clone();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&header).unwrap();
    for (k, rec) in rdr.records().enumerate() {
        let rec = rec.unwrap();
        let row: Vec<String> = header
            .iter()
            .zip(rec.iter())
            .map(|(h, v)| match h {
                "topic" if k == 0 => "technical".to_string(),
                "topic" => "billing".to_string(),
                "refund_requested" => "yes".to_string(),
                "urgency" => "1".to_string(),
                _ => v.to_string(),
            })
            .collect();
        w.write_record(&row).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

#[test]
fn a_filled_sheet_gives_agreement_and_corrected_rates() {
    let dir = tempfile::tempdir().unwrap();
    let answers = answers(dir.path());
    let sheet = dir.path().join("sheet.csv");
    let s = sheet.display().to_string();
    ok(&readout(&["labels", "draw", &answers, "--rubric", RUBRIC, "--texts", TEXTS, "-n", "5", "-o", &s]));
    let drawn = std::fs::read_to_string(&sheet).unwrap();
    let mut lines = drawn.lines();
    assert_eq!(lines.next().unwrap(), "index,id,pi,text,topic,refund_requested,urgency");
    assert_eq!(lines.count(), 5);
    // Drawing again onto the sheet is refused: it may hold labels.
    let again = readout(&["labels", "draw", &answers, "--rubric", RUBRIC, "--texts", TEXTS, "-n", "5", "-o", &s]);
    assert!(!again.status.success());

    std::fs::write(&sheet, fill(&drawn)).unwrap();
    let set = dir.path().join("labels.jsonl");
    let set_arg = set.display().to_string();
    let json = ok(&readout(&["labels", "report", &answers, &s, "--rubric", RUBRIC, "--json", "--eval-set", &set_arg]));
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(r["labelled"], 5);
    let topic = &r["criteria"][0];
    assert_eq!(topic["criterion"], "topic");
    assert_eq!(topic["agreement"]["n"], 5);
    let confusion = topic["agreement"]["confusion"].as_array().unwrap();
    let total: u64 = confusion.iter().flat_map(|row| row.as_array().unwrap()).map(|x| x.as_u64().unwrap()).sum();
    assert_eq!(total, 5);
    // Every option of every criterion has a corrected share with an interval around it.
    for c in r["criteria"].as_array().unwrap() {
        for o in c["rates"].as_array().unwrap() {
            let e = &o["corrected"];
            let (share, lo, hi) = (e["share"].as_f64().unwrap(), e["lo"].as_f64().unwrap(), e["hi"].as_f64().unwrap());
            assert!(lo <= share && share <= hi, "{o}");
        }
    }
    // The person said "refund: yes" for every labelled text; the draw followed uncertainty, so
    // the labels-only share is Horvitz–Thompson's: the sum of 1/π over the 20 texts.
    let refund = &r["criteria"][1]["rates"][0];
    assert_eq!(refund["method"], "active");
    let ht: f64 = csv::Reader::from_reader(drawn.as_bytes())
        .records()
        .map(|rec| 1.0 / rec.unwrap()[2].parse::<f64>().unwrap())
        .sum::<f64>()
        / 20.0;
    assert!((refund["labels_only"]["share"].as_f64().unwrap() - ht).abs() < 1e-12, "{refund} vs {ht}");

    // The table prints the same figures.
    let table = ok(&readout(&["labels", "report", &answers, &s, "--rubric", RUBRIC]));
    assert!(table.contains("Cohen's κ") && table.contains("weighted κ") && table.contains("corrected"), "{table}");

    // The labels as an eval set: the report reads it back the same, and `readout run` scores it.
    let again = ok(&readout(&["labels", "report", &answers, &set_arg, "--json"]));
    let r2: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(r2["criteria"], r["criteria"]);
    let m = common::default_model().display().to_string();
    let result = dir.path().join("run.json");
    let res = result.display().to_string();
    ok(&readout(&["run", &set_arg, "--device", "cpu", "--model", &m, "--out", &res]));
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    assert_eq!(run["rows"].as_array().unwrap().len(), 15);
}

#[test]
fn bad_sheets_are_refused_by_line_and_column_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let answers = answers(dir.path());
    let sheet = dir.path().join("sheet.csv");
    let s = sheet.display().to_string();
    ok(&readout(&["labels", "draw", &answers, "--rubric", RUBRIC, "--texts", TEXTS, "-n", "3", "-o", &s]));
    let good = fill(&std::fs::read_to_string(&sheet).unwrap());
    let rows: Vec<&str> = good.lines().collect();
    let first_index = rows[1].split(',').next().unwrap();
    let cases: Vec<(String, String)> = vec![
        (
            good.replacen(",billing,", ",refunds,", 1),
            "field `topic`: `refunds` is not an option of `topic`; write one of: billing".into(),
        ),
        (
            format!("{}\n{}\n", good.trim_end(), rows[1]),
            format!(":5: field `index`: text {first_index} is already on line 2"),
        ),
        (good.replacen(",yes,", ",,", 1), ":2: field `refund_requested`: is empty".into()),
        (
            good.replacen(&format!("{first_index},"), "99,", 1),
            ":2: field `index`: text 99 is not among the 20 scored texts".into(),
        ),
    ];
    let set = dir.path().join("set.jsonl");
    let set_arg = set.display().to_string();
    for (body, want) in cases {
        std::fs::write(&sheet, &body).unwrap();
        let out = readout(&["labels", "report", &answers, &s, "--rubric", RUBRIC, "--eval-set", &set_arg]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{body}\n{err}");
        assert!(err.contains(&want), "want `{want}` in: {err}");
        assert!(!set.exists(), "a refused sheet wrote {}", set.display());
    }
}
