//! The CLI in pipes, end to end on the default model: texts from standard input (JSON Lines and
//! CSV), `score --csv` against `score --json`, each text printed while the job still runs,
//! `table --json`, shell completions and man pages.

use crate::common;

use common::{readout, readout_piped};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Output, Stdio};

const RUBRIC: &str = "examples/support-ticket.rubric.json";

fn model_arg() -> String {
    common::default_model().display().to_string()
}

fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    std::str::from_utf8(&out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn texts_from_standard_input_as_json_lines_or_csv_equal_a_file() {
    let m = model_arg();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = "\"My password reset link never arrives.\"\n{\"id\": \"t2\", \"text\": \"The app crashes, and I was charged twice.\"}\n";
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, jsonl).unwrap();
    let f = file.to_str().unwrap();
    let base = ["score", "-r", RUBRIC, "--json", "--device", "cpu", "--model", &m];
    let from_file = readout(&[&base[..], &["--texts", f]].concat());
    let from_stdin = readout_piped(&[&base[..], &["--texts", "-"]].concat(), jsonl);
    assert_eq!(json_lines(&from_stdin).len(), 2);
    assert_eq!(from_stdin.stdout, from_file.stdout, "standard input reads as the file does");
    // The same texts as CSV on standard input (a quoted comma, the id column first, an empty id).
    let csv = "id,text\n,My password reset link never arrives.\nt2,\"The app crashes, and I was charged twice.\"\n";
    let from_csv = readout_piped(&[&base[..], &["--texts", "-", "--texts-format", "csv"]].concat(), csv);
    assert_eq!(from_csv.stdout, from_file.stdout, "CSV texts decide as JSON Lines texts do");
    // A .csv file is read as CSV without being told.
    let csv_file = dir.path().join("t.csv");
    std::fs::write(&csv_file, csv).unwrap();
    let by_name = readout(&[&base[..], &["--texts", csv_file.to_str().unwrap()]].concat());
    assert_eq!(by_name.stdout, from_file.stdout);
}

#[test]
fn bad_texts_on_standard_input_are_refused_by_line() {
    let m = model_arg();
    let args = ["score", "-r", RUBRIC, "--texts", "-", "--model", &m];
    let out = readout_piped(&args, "\"fine\"\n{\"id\": \"no text\"}\n");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(standard input):2: field `text`"), "{err}");
    let args = ["score", "-r", RUBRIC, "--texts", "-", "--texts-format", "csv", "--model", &m];
    let out = readout_piped(&args, "id,text\n1,fine\n2,not, quoted\n");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(standard input):3:") && err.contains("quote a text that holds a comma"), "{err}");
    let out = readout_piped(&args, "id,body\n1,fine\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(standard input):1:") && err.contains("no `text` column"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn csv_answers_hold_what_the_json_lines_hold() {
    let m = model_arg();
    let base =
        ["score", "-r", RUBRIC, "-t", "Refund me now.", "-t", "Where do I change my email?", "--debias", "cyclic"];
    let tail = ["--device", "cpu", "--model", &m];
    let json = json_lines(&readout(&[&base[..], &["--json"], &tail[..]].concat()));
    let out = readout(&[&base[..], &["--csv"], &tail[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut reader = csv::Reader::from_reader(&out.stdout[..]);
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    // The one table of answers: the app's Export CSV writes the same columns.
    assert_eq!(header, readout::jobs::answers::CSV_HEADER);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let want: Vec<(&serde_json::Value, &serde_json::Value)> =
        json.iter().flat_map(|t| t["criteria"].as_array().unwrap().iter().map(move |c| (t, c))).collect();
    assert_eq!(rows.len(), want.len(), "one row per text and criterion");
    assert_eq!(rows.len(), 6);
    let num = |s: &str| s.parse::<f64>().unwrap();
    let texts = ["Refund me now.", "Where do I change my email?"];
    for (row, (t, c)) in rows.iter().zip(want) {
        let at = |name: &str| &row[col(name)];
        assert_eq!(at("index").parse::<u64>().unwrap(), t["index"].as_u64().unwrap());
        assert_eq!(at("id"), t["id"].as_str().unwrap_or(""));
        assert_eq!(at("text"), texts[t["index"].as_u64().unwrap() as usize]);
        assert_eq!(at("criterion"), c["criterion"].as_str().unwrap());
        assert_eq!(at("type"), c["type"].as_str().unwrap());
        assert_eq!(at("chosen"), c["chosen"].as_str().unwrap());
        assert_eq!(num(at("probability")), c["probability"].as_f64().unwrap(), "the same number, to the last bit");
        assert_eq!(num(at("margin")), c["margin"].as_f64().unwrap());
        assert_eq!(at("close").parse::<bool>().unwrap(), c["close"].as_bool().unwrap());
        assert_eq!(
            at("order_unstable").parse::<bool>().unwrap(),
            c["order_unstable"].as_bool().unwrap(),
            "cyclic checks order"
        );
        match c["expected_level"].as_f64() {
            Some(e) => assert_eq!(num(at("expected_level")), e),
            None => assert_eq!(at("expected_level"), ""),
        }
        assert_eq!(num(at("letter_mass")), c["letter_mass"].as_f64().unwrap());
        assert_eq!(at("abstained"), "", "no threshold was given: nothing withheld");
        let options = c["options"].as_array().unwrap().len();
        assert_eq!(at("options").split("; ").count(), options);
    }
}

/// `n` tickets, one a line, with ids.
fn many_texts(n: usize) -> String {
    (0..n)
        .map(|i| {
            serde_json::json!({"id": format!("t{i}"), "text": format!("Ticket {i}: I was charged {} dollars twice for one order and the app crashed.", i * 7)})
                .to_string()
                + "\n"
        })
        .collect()
}

#[test]
fn score_json_prints_the_first_text_while_the_job_still_runs() {
    // Forty texts take many passes; the first text's line must come out while the rest are still
    // being scored. Without streaming every line comes out at the end, all at once, and killing
    // the process once the first line is read finds every line written.
    let n = 40;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.jsonl");
    std::fs::write(&file, many_texts(n)).unwrap();
    let m = model_arg();
    let mut child = Command::new(env!("CARGO_BIN_EXE_readout"))
        .args(["score", "-r", RUBRIC, "--texts", file.to_str().unwrap(), "--json", "--device", "cpu", "--model", &m])
        .current_dir(common::repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().unwrap();
    child.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["index"], 0, "text order: the first line is the first text's");
    assert!(still_running, "the first line came out only as the process ended");
    let printed = 1 + rest.lines().count();
    assert!(printed < n, "{printed} of {n} lines were out when the first was read: they were not streamed");
}

#[test]
fn as_finished_prints_every_text_once_in_finishing_order() {
    let m = model_arg();
    // Twelve tickets: the prompt tree puts "Ticket 1" beside "Ticket 10" and "Ticket 11", so the
    // texts do not finish in their own order.
    let texts = many_texts(12);
    let args = ["score", "-r", RUBRIC, "--texts", "-", "--json", "--device", "cpu", "--model", &m];
    let ordered = json_lines(&readout_piped(&args, &texts));
    let finished = json_lines(&readout_piped(&[&args[..], &["--as-finished"]].concat(), &texts));
    let indices = |v: &[serde_json::Value]| v.iter().map(|v| v["index"].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!(indices(&ordered), (0..12).collect::<Vec<u64>>(), "text order by default");
    assert_ne!(indices(&finished), indices(&ordered), "--as-finished prints in finishing order");
    let mut by_index = finished.clone();
    by_index.sort_by_key(|v| v["index"].as_u64().unwrap());
    assert_eq!(by_index, ordered, "the same decisions, each once");
}

#[test]
fn table_json_has_a_row_per_result_file() {
    let out = readout(&["table", "bench/results", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let files = std::fs::read_dir(common::repo().join("bench/results"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.path().extension().is_some_and(|x| x == "json")
                && std::fs::read_to_string(e.path()).unwrap().contains("\"readout.result\"")
        })
        .count();
    assert_eq!(rows.len(), files);
    let text = String::from_utf8(readout(&["table", "bench/results"]).stdout).unwrap();
    for r in &rows {
        let source = r["source"].as_str().unwrap();
        assert!(text.contains(source), "{source} is a row of the table too");
        let path = common::repo().join(r["path"].as_str().unwrap());
        let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(r["shots"], file["config"]["shots"]);
        assert_eq!(r["rows"].as_u64().unwrap() as usize, file["rows"].as_array().unwrap().len());
        assert_eq!(r["seconds"], file["timing"]["wall_seconds"]);
        assert_eq!(r["mean_family_balanced_accuracy"], file["metrics"]["mean_family_balanced_accuracy"]);
    }
}

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = readout(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for sub in ["score", "table", "mcp", "completions"] {
            assert!(script.contains(sub), "{shell} completions lack {sub}");
        }
    }
    let bash = String::from_utf8(readout(&["completions", "bash"]).stdout).unwrap();
    assert!(bash.contains("complete -F _readout"), "bash registers the function");
    assert!(bash.contains("--texts-format"), "score's flags complete too");
    assert_eq!(readout(&["completions", "tcsh"]).status.code(), Some(2), "an unknown shell is refused");
}

#[test]
fn man_pages_for_the_command_and_each_subcommand() {
    let out = readout(&["man"]);
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH readout 1") && page.contains("score"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("man1");
    let out = readout(&["man", "-o", d.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let score = std::fs::read_to_string(d.join("readout-score.1")).unwrap();
    assert!(score.contains(".TH readout-score 1") && score.contains("texts\\-format"), "{score}");
    assert!(d.join("readout.1").exists() && d.join("readout-mcp.1").exists());
}
