//! `readout mcp` through a real MCP client (rmcp's, over stdio) spawning the built binary on the
//! default model: the tools it lists, `score` against `readout score --json`, a bad rubric as the
//! tool's error. Then raw JSON-RPC lines: a line that is not JSON (-32700), a key given twice,
//! arguments of the wrong shape, and the server going on after each.

use crate::common;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

const RUBRIC: &str = "examples/support-ticket.rubric.json";
const TEXTS: [&str; 2] = ["I was charged twice this month, please refund one of them.", "The app crashes on start."];

fn text_of(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect::<Vec<_>>().join("\n")
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn a_real_client_lists_the_tools_and_scores_as_the_cli_does() {
    let m = common::default_model().display().to_string();
    let cli = common::readout(&[
        "score", "-r", RUBRIC, "-t", TEXTS[0], "--text", TEXTS[1], "--debias", "cyclic", "--json", "--device", "cpu",
        "--model", &m,
    ]);
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    let cli_lines = String::from_utf8(cli.stdout).unwrap();
    let cli_results: Vec<Value> = cli_lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let rubric: Value = serde_json::from_str(&std::fs::read_to_string(common::repo().join(RUBRIC)).unwrap()).unwrap();

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let server = tokio::process::Command::new(env!("CARGO_BIN_EXE_readout")).configure(|c| {
            c.args(["mcp", "--device", "cpu", "--model", &m]).current_dir(common::repo());
        });
        let client = ().serve(TokioChildProcess::new(server).unwrap()).await.expect("the MCP handshake");
        let info = client.peer_info().expect("the server says who it is");
        assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("readout"));

        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort();
        assert_eq!(names, ["decide", "models", "score"]);
        let score = tools.iter().find(|t| t.name == "score").unwrap();
        let required = score.input_schema["required"].as_array().unwrap();
        assert!(required.contains(&json!("rubric")) && required.contains(&json!("texts")), "{:?}", score.input_schema);

        // The rubric by path, the texts as strings: what `readout score --json` printed.
        let call = CallToolRequestParams::new("score")
            .with_arguments(args(json!({"rubric": RUBRIC, "texts": TEXTS, "debias": "cyclic"})));
        let by_path = client.call_tool(call).await.unwrap();
        assert_eq!(by_path.is_error, Some(false), "{}", text_of(&by_path));
        assert_eq!(text_of(&by_path), cli_lines.trim_end(), "the text content is score --json's lines");
        let structured = by_path.structured_content.clone().expect("structured content");
        assert_eq!(structured["results"].as_array().unwrap(), &cli_results);

        // The rubric inline and the texts as objects with ids: the same numbers, ids carried.
        let call = CallToolRequestParams::new("score").with_arguments(args(json!({
            "rubric": rubric,
            "texts": [{"id": "a", "text": TEXTS[0]}, {"id": 2, "text": TEXTS[1]}],
            "debias": "cyclic",
        })));
        let inline = client.call_tool(call).await.unwrap();
        let results = inline.structured_content.unwrap()["results"].as_array().unwrap().clone();
        assert_eq!(results[0]["id"], "a");
        assert_eq!(results[1]["id"], "2");
        for (r, c) in results.iter().zip(&cli_results) {
            assert_eq!(r["criteria"], c["criteria"]);
        }

        // What the caller can fix comes back as the tool's error, naming the field.
        let call = CallToolRequestParams::new("score").with_arguments(args(json!({
            "rubric": {"questions": {"q": {"type": "choice"}}},
            "texts": ["x"],
        })));
        let bad = client.call_tool(call).await.unwrap();
        assert_eq!(bad.is_error, Some(true));
        assert!(text_of(&bad).contains("questions.q.instructions"), "{}", text_of(&bad));
        let call = CallToolRequestParams::new("score")
            .with_arguments(args(json!({"rubric": RUBRIC, "texts": ["x"], "debias": "sideways"})));
        let bad = client.call_tool(call).await.unwrap();
        assert_eq!(bad.is_error, Some(true));
        assert!(text_of(&bad).contains("sideways"), "{}", text_of(&bad));

        let model = client.call_tool(CallToolRequestParams::new("models")).await.unwrap();
        let model = model.structured_content.unwrap();
        assert!(model["model"]["path"].as_str().unwrap().ends_with(readout::DEFAULT_MODEL_FILE), "{model}");

        client.cancel().await.unwrap();
    });
}

/// `readout mcp` on raw lines: each request written, its answer read (a minute at most).
struct RawMcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    /// What it wrote to standard error (its log).
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl RawMcp {
    fn start() -> RawMcp {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let m = common::default_model().display().to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_readout"))
            .args(["mcp", "--device", "cpu", "--model", &m])
            .current_dir(common::repo())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("readout mcp starts");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (sink, stderr) = (log.clone(), std::io::BufReader::new(child.stderr.take().unwrap()));
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        RawMcp { child, stdin, lines, log }
    }

    fn send(&mut self, line: &str) {
        use std::io::Write;
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message the server writes.
    fn next(&self) -> Value {
        let line = self.lines.recv_timeout(std::time::Duration::from_secs(120)).expect("an answer within two minutes");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"))
    }

    /// The answer to request `id`.
    fn answer(&self, id: u64) -> Value {
        loop {
            let v = self.next();
            if v["id"] == id {
                return v;
            }
        }
    }

    fn call(&mut self, id: u64, arguments: &str) -> Value {
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"score","arguments":{arguments}}}}}"#
        ));
        self.answer(id)
    }
}

impl Drop for RawMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn raw_lines_a_parse_error_a_key_given_twice_and_wrong_arguments() {
    let mut mcp = RawMcp::start();
    mcp.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
    assert!(mcp.answer(1)["result"]["serverInfo"].is_object());
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    // A line that is not JSON: JSON-RPC's parse error, with no id; the server goes on.
    mcp.send("this is not JSON {");
    let e = mcp.next();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert!(e["id"].is_null(), "{e}");

    // A key given twice in the rubric's options: refused naming the key, as over HTTP.
    let twice = r#"{"rubric": {"questions": {"t": {"type": "choice", "instructions": "Which?", "criteria": {"a": "A", "a": "B", "b": "C"}}}}, "texts": ["x"]}"#;
    let e = mcp.call(2, twice);
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("rubric.questions.t.criteria") && message.contains("key `a` is given twice"), "{e}");

    // Arguments of the wrong shape: the tool's error, saying what is expected.
    let text_of = |v: &Value| v["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let r = mcp.call(3, r#"{"rubric": 5, "texts": ["x"]}"#);
    assert_eq!(r["result"]["isError"], true, "{r}");
    let t = text_of(&r);
    assert!(t.contains("rubric object") && t.contains("path of a rubric file") && !t.contains("untagged"), "{t}");
    let r = mcp.call(4, r#"{"rubric": "examples/support-ticket.rubric.json", "texts": "x"}"#);
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text_of(&r).contains("`texts` must be a list"), "{r}");
    let r = mcp.call(5, r#"{"rubric": "examples/support-ticket.rubric.json", "texts": ["x", 7]}"#);
    assert!(text_of(&r).contains("texts[1]"), "{r}");

    // Still serving.
    mcp.send(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#);
    assert!(mcp.answer(6)["result"].is_object());
}

/// A call the client cancels (`notifications/cancelled`) is dropped: not read if its batch has
/// not started, its batch stopped after the pass in flight if it has; the server goes on.
#[test]
fn a_cancelled_call_stops_and_the_next_is_answered() {
    let mut mcp = RawMcp::start();
    mcp.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
    assert!(mcp.answer(1)["result"]["serverInfo"].is_object());
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let many: Vec<String> = (0..150).map(|i| format!("Ticket {i}: I was charged twice, please refund one.")).collect();
    let big = json!({"rubric": RUBRIC, "texts": many}).to_string();
    mcp.send(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"score","arguments":{big}}}}}"#
    ));
    mcp.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user gave up"}}"#,
    );
    let small = json!({"rubric": RUBRIC, "texts": [TEXTS[0]]}).to_string();
    let r = mcp.call(3, &small);
    assert_eq!(r["result"]["isError"], false, "{r}");
    let log = mcp.log.lock().unwrap().clone();
    // The 150 texts were either never read or their batch stopped: no batch of them ran out.
    let big_batches: Vec<&str> = log.lines().filter(|l| l.contains("batch read") && l.contains("texts=150")).collect();
    assert!(big_batches.iter().all(|l| l.contains("stopped=true")), "{log}");
    // The small one was read (the log is plain text: a pipe gets no colours).
    assert!(log.lines().any(|l| l.contains("batch read") && l.contains("texts=1 ")), "{log}");
}
