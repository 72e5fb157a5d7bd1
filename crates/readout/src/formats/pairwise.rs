//! A pairs file: "which of these two responses to a request is better?", one comparison a line
//! (JSON Lines), and its eval set. Each line names the request, the two responses and the
//! systems that wrote them, and the right verdict:
//!
//! ```json
//! {"id": "p1", "group_id": "refund", "prompt": "…", "system_a": "concise", "response_a": "…",
//!  "system_b": "verbose", "response_b": "…", "winner": "a", "ties": false}
//! ```
//!
//! `winner` is `a`, `b` or `tie` (only where `ties` is true); `group_id` (the request, for the
//! bootstrap; default the id) and `ties` (default false) may be left out. A pair becomes an eval
//! set row whose options are the two responses, each under its system's name (and `tie` where
//! ties are allowed), so the readout reads the verdict as it reads any criterion's, and
//! `--debias cyclic` reads the two responses in both orders; a row whose orders disagree is
//! `order_unstable`. The figures over the verdicts are [`crate::pairwise`]'s.

use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::path::Path;

/// The family of a pairwise row in an eval set.
pub const FAMILY: &str = "pairwise";
/// The option id of a tie.
pub const TIE: &str = "tie";
/// The question a pairwise row asks.
pub const QUESTION: &str = "Which response answers the request better?";

/// One comparison of a pairs file.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub id: String,
    pub group_id: String,
    pub prompt: String,
    pub system_a: String,
    pub response_a: String,
    pub system_b: String,
    pub response_b: String,
    /// `a`, `b` or `tie`.
    pub winner: String,
    pub ties: bool,
}

impl Pair {
    /// The eval set row that asks for this pair's verdict.
    pub fn to_row(&self) -> Value {
        let mut options = vec![
            json!({"id": self.system_a, "description": self.response_a}),
            json!({"id": self.system_b, "description": self.response_b}),
        ];
        if self.ties {
            options.push(json!({"id": TIE, "description": "Both answer it equally well"}));
        }
        let label = match self.winner.as_str() {
            "a" => 0,
            "b" => 1,
            _ => 2,
        };
        json!({
            "id": self.id,
            "family": FAMILY,
            "group_id": self.group_id,
            "state": format!("Request: {}", self.prompt),
            "question": QUESTION,
            "options": options,
            "label": label,
        })
    }
}

/// Read a pairs file; a bad line is an error naming the line and the field.
pub fn read(path: &Path) -> Result<Vec<Pair>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut pairs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |field: &str, reason: String| Error::BadInput {
            path: path.to_path_buf(),
            line: line_no,
            field: field.into(),
            reason,
        };
        let obj: Map<String, Value> =
            serde_json::from_str(line).map_err(|e| bad("", format!("not a JSON object: {e}")))?;
        let text_field = |field: &str| -> Result<String> {
            match obj.get(field) {
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
                Some(Value::String(_)) => Err(bad(field, "is empty".into())),
                None | Some(Value::Null) => Err(bad(field, "is missing".into())),
                Some(v) => Err(bad(field, format!("is {v}, not a string"))),
            }
        };
        let id = text_field("id")?;
        if !seen.insert(id.clone()) {
            return Err(bad("id", format!("`{id}` is used by an earlier line")));
        }
        let ties = match obj.get("ties") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => return Err(bad("ties", format!("is {v}, not true or false"))),
        };
        let pair = Pair {
            group_id: match obj.get("group_id") {
                None | Some(Value::Null) => id.clone(),
                _ => text_field("group_id")?,
            },
            prompt: text_field("prompt")?,
            system_a: text_field("system_a")?,
            response_a: text_field("response_a")?,
            system_b: text_field("system_b")?,
            response_b: text_field("response_b")?,
            winner: text_field("winner")?,
            ties,
            id,
        };
        if pair.system_a == pair.system_b {
            return Err(bad("system_b", format!("is `{}`, the same system as system_a", pair.system_b)));
        }
        if pair.system_a == TIE || pair.system_b == TIE {
            return Err(bad("system_a", format!("`{TIE}` is the name of a tie; name the system otherwise")));
        }
        match (pair.winner.as_str(), ties) {
            ("a" | "b", _) | ("tie", true) => {}
            ("tie", false) => {
                return Err(bad("winner", "is `tie`, and the line does not allow ties (\"ties\": true)".into()))
            }
            (w, _) => return Err(bad("winner", format!("is `{w}`; give a, b or tie"))),
        }
        pairs.push(pair);
    }
    if pairs.is_empty() {
        return Err(Error::BadFile { path: path.to_path_buf(), reason: "holds no pairs".into() });
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pairs.jsonl");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    const LINE: &str = r#"{"id":"p1","prompt":"Say hi.","system_a":"x","response_a":"Hi.","system_b":"y","response_b":"Hello there.","winner":"b"}"#;

    #[test]
    fn a_pair_becomes_a_row_whose_options_are_the_responses() {
        let (_d, p) = file(LINE);
        let pairs = read(&p).unwrap();
        let row = pairs[0].to_row();
        assert_eq!(row["options"][0], json!({"id": "x", "description": "Hi."}));
        assert_eq!(row["options"][1]["id"], "y");
        assert_eq!(row["options"].as_array().unwrap().len(), 2);
        assert_eq!((row["label"].as_u64(), row["group_id"].as_str()), (Some(1), Some("p1")));
        let tie = LINE.replace(r#""winner":"b""#, r#""winner":"tie","ties":true"#);
        let (_d, p) = file(&tie);
        let row = read(&p).unwrap()[0].to_row();
        assert_eq!((row["options"][2]["id"].as_str(), row["label"].as_u64()), (Some(TIE), Some(2)));
    }

    #[test]
    fn a_bad_line_names_its_line_and_field() {
        let cases = [
            (LINE.replace(r#","response_b":"Hello there.""#, ""), "response_b"),
            (LINE.replace(r#""winner":"b""#, r#""winner":"tie""#), "winner"),
            (LINE.replace(r#""system_b":"y""#, r#""system_b":"x""#), "system_b"),
            (LINE.replace(r#""winner":"b""#, r#""winner":"c""#), "winner"),
        ];
        for (bad, want) in cases {
            let (_d, p) = file(&format!("{LINE}\n{}", bad.replace("p1", "p2")));
            match read(&p).unwrap_err() {
                Error::BadInput { line, field, .. } => assert_eq!((line, field.as_str()), (2, want), "{bad}"),
                e => panic!("{e}"),
            }
        }
    }
}
