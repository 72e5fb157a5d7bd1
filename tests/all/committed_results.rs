//! Every committed result file in bench/results/ matches the schema, and the table generated from
//! them is the one committed in bench/README.md (figures come from files, never typed).

use crate::common;

use serde_json::Value;

#[test]
fn committed_result_files_match_the_schema() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(common::repo().join("schema/result.schema.json")).unwrap())
            .unwrap();
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let mut n = 0;
    // bench/results and its subfolders (the lever benchmark's variants live in results/levers/).
    let mut files = Vec::new();
    let mut dirs = vec![common::repo().join("bench/results")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if doc["schema"] != "readout.result" {
            continue;
        }
        let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path)).collect();
        assert!(errors.is_empty(), "{}:\n{}", p.display(), errors.join("\n"));
        readout::formats::results::ResultFile::load(&p).unwrap();
        n += 1;
    }
    assert!(n >= 6, "the performance table needs its six result files");
}

#[test]
fn the_committed_table_is_generated_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("t.md");
    let m = md.display().to_string();
    let out = common::readout(&["table", "bench/results", "--markdown", &m]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fresh = std::fs::read_to_string(&md).unwrap();
    let committed = std::fs::read_to_string(common::repo().join("bench/README.md")).unwrap();
    // Links differ only in their folder (relative to each Markdown file); compare the rows.
    let rows = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains("| MEASURED | [`"))
            .map(|l| l.split("[`").next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(rows(&fresh), rows(&committed));
    // The performance page's six runs, for the default model, Gemma 3 270M and Qwen2.5-Coder-1.5B.
    assert_eq!(rows(&committed).len(), 18);
}

#[test]
fn the_committed_lever_table_is_generated_from_its_summary() {
    let dir = common::repo().join("bench/results");
    let path = dir.join("levers-authored144-cyclic-3shot-smollm2-135m-q4_1-cpu.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        panic!("{} is missing: run `readout bench levers` (see bench/README.md)", path.display())
    };
    let doc: Value = serde_json::from_str(&text).unwrap();
    let rows: Vec<readout::analysis::levers::LeverRow> = serde_json::from_value(doc["rows"].clone()).unwrap();
    // Every variant's result file is there and says what the summary says.
    for r in &rows {
        let f = readout::formats::results::ResultFile::load(&dir.join(&r.file)).unwrap();
        assert_eq!(f.plan.computed_tokens, r.computed_tokens, "{}", r.file);
        assert_eq!(f.rows.len(), r.rows, "{}", r.file);
    }
    let table = readout::analysis::levers::markdown(&rows);
    let committed = std::fs::read_to_string(common::repo().join("bench/README.md")).unwrap();
    assert!(committed.contains(&table), "bench/README.md's lever table differs from {}", path.display());
}

#[test]
fn the_committed_quality_table_is_generated_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("t.md");
    let m = md.display().to_string();
    let out = common::readout(&["table", "bench/results/quality", "--quality", "--markdown", &m]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The rows between the quality table's markers, without their links (whose folder differs).
    let block = |s: &str| -> Vec<String> {
        let begin = s.find("<!-- readout quality table: begin").expect("the quality table's markers");
        let end = s.find("<!-- readout quality table: end").unwrap();
        s[begin..end]
            .lines()
            .filter(|l| l.contains("| [`"))
            .map(|l| l.split("[`").next().unwrap_or("").into())
            .collect()
    };
    let committed = std::fs::read_to_string(common::repo().join("bench/README.md")).unwrap();
    let fresh = block(&std::fs::read_to_string(&md).unwrap());
    assert_eq!(fresh, block(&committed));
    // Six runs (five debias modes and the temperature) for each of the two models.
    assert_eq!(fresh.len(), 12);
}
