//! `readout mcp` through a real MCP client (rmcp's, over stdio) spawning the built binary on the
//! default model: the tools it lists, `score` against `readout score --json`, a bad rubric as the
//! tool's error.

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
        assert_eq!(names, ["models", "score"]);
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
