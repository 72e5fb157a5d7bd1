//! Every committed result file in bench/results/ matches the schema, and the table generated from
//! them is the one committed in bench/README.md (figures come from files, never typed).

mod common;

use serde_json::Value;

#[test]
fn committed_result_files_match_the_schema() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(common::repo().join("schema/result.schema.json")).unwrap())
            .unwrap();
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let mut n = 0;
    for e in std::fs::read_dir(common::repo().join("bench/results")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if doc["schema"] != "readout.result" {
            continue;
        }
        let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path)).collect();
        assert!(errors.is_empty(), "{}:\n{}", p.display(), errors.join("\n"));
        readout::results::ResultFile::load(&p).unwrap();
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
            .filter(|l| l.starts_with("| readout") || l.starts_with("| generate"))
            .map(|l| l.split("[`").next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(rows(&fresh), rows(&committed));
    assert_eq!(rows(&committed).len(), 6);
}
