//! `readout mcp`: Readout as a tool for language-model clients, over the Model Context Protocol
//! (the official Rust SDK, `rmcp`) on standard input and output. The model is loaded once, at
//! start; the `score` tool takes a rubric and texts and answers with what `readout score --json`
//! prints, as text and as structured content. Standard output carries JSON-RPC only: logs and
//! messages go to standard error.

use super::ModelArgs;
use anyhow::{Context, Result};
use clap::Args;
use readout::debias::DebiasMode;
use readout::engine::{Engine, MatmulPath};
use readout::rubric::Rubric;
use readout::score::{score_texts, Text, TextResult};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Args)]
pub struct McpArgs {
    #[command(flatten)]
    model: ModelArgs,
}

/// Load the model, then answer MCP requests on standard input and output until the client
/// closes them.
pub fn run(a: McpArgs) -> Result<i32> {
    let engine = a.model.load()?;
    let info = engine.info();
    eprintln!(
        "readout mcp: {} loaded ({}); serving the `score` tool on standard input and output",
        info.name, info.device
    );
    let server = Judge::new(Arc::new(engine), a.model.matmul);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async {
        let running = server.serve(rmcp::transport::stdio()).await.context("starting the MCP session")?;
        running.waiting().await.context("serving MCP")?;
        anyhow::Ok(())
    })?;
    Ok(0)
}

/// The `score` tool's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScoreParams {
    /// The rubric: a JSON object with `questions` (the format of docs/rubric.md in the Readout
    /// repository), or the path of a rubric file on the server's machine.
    pub rubric: RubricArg,
    /// The texts to decide: each a string, or an object with `text` and an optional `id`
    /// (carried into its result).
    pub texts: Vec<TextArg>,
    /// How orderings of the options are scored and combined: none (the default), cyclic (every
    /// rotation, averaged; flags order-unstable answers), permutation, calibrate, pride or batch.
    #[serde(default)]
    pub debias: Option<String>,
    /// Cut a text too long for the model's context from the middle instead of refusing it.
    #[serde(default)]
    pub truncate_middle: bool,
}

/// A rubric inline or by path.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RubricArg {
    /// The path of a rubric file.
    Path(String),
    /// The rubric itself.
    Inline(serde_json::Map<String, serde_json::Value>),
}

/// A text to decide.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TextArg {
    /// The text alone.
    Plain(String),
    /// The text with an id.
    WithId {
        text: String,
        /// Carried into the text's result (a number is kept as its JSON).
        #[serde(default)]
        id: Option<serde_json::Value>,
    },
}

impl TextArg {
    fn into_text(self) -> Text {
        match self {
            TextArg::Plain(text) => Text { id: None, text },
            TextArg::WithId { text, id } => {
                Text { id: id.map(|v| v.as_str().map(String::from).unwrap_or_else(|| v.to_string())), text }
            }
        }
    }
}

/// The MCP server: one loaded model, scoring one request at a time.
#[derive(Clone)]
pub struct Judge {
    engine: Arc<Engine>,
    matmul: MatmulPath,
    /// Held while a request scores: the engine's threads already use every core.
    busy: Arc<Mutex<()>>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Judge {
    fn new(engine: Arc<Engine>, matmul: MatmulPath) -> Judge {
        Judge { engine, matmul, busy: Arc::new(Mutex::new(())), tool_router: Self::tool_router() }
    }

    /// Decide every criterion of a rubric for each text.
    #[tool(
        description = "Decide each criterion of a rubric for each text with Readout's local judge model: for every text and criterion, every option's probability (read from the answer letters' logits), the chosen option, the margin to the runner-up and flags. Returns one JSON object per text, as `readout score --json` prints them (text content: one JSON line per text; structured content: {\"results\": [...]})."
    )]
    async fn score(&self, Parameters(p): Parameters<ScoreParams>) -> Result<CallToolResult, ErrorData> {
        let judge = self.clone();
        let scored = tokio::task::spawn_blocking(move || judge.score_blocking(p))
            .await
            .map_err(|e| ErrorData::internal_error(format!("scoring stopped: {e}"), None))?;
        Ok(match scored {
            Ok(results) => {
                let lines: Vec<String> =
                    results.iter().map(serde_json::to_string).collect::<Result<_, _>>().map_err(internal)?;
                let structured = serde_json::json!({ "results": results });
                let mut r = CallToolResult::structured(structured);
                r.content = vec![ContentBlock::text(lines.join("\n"))];
                r
            }
            // What the caller can fix (a bad rubric, an over-long text, an unknown debias mode)
            // goes back as the tool's error, for the model that called it to read.
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("{e:#}"))]),
        })
    }

    /// The model this server decides with.
    #[tool(
        description = "The model this Readout server loaded and decides with: its name, path, architecture, shape, quantisation, chat template and device."
    )]
    async fn models(&self) -> Result<CallToolResult, ErrorData> {
        let info = serde_json::to_value(self.engine.info()).map_err(internal)?;
        Ok(CallToolResult::structured(serde_json::json!({ "model": info })))
    }
}

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

impl Judge {
    fn score_blocking(&self, p: ScoreParams) -> Result<Vec<TextResult>> {
        let rubric = match p.rubric {
            RubricArg::Path(path) => Rubric::load(Path::new(&path))?,
            RubricArg::Inline(obj) => {
                // Pretty-printed, so that an error's line number points into something readable.
                let text = serde_json::to_string_pretty(&obj)?;
                Rubric::parse(&text, &PathBuf::from("(the rubric argument)"))?
            }
        };
        let texts: Vec<Text> = p.texts.into_iter().map(TextArg::into_text).collect();
        anyhow::ensure!(!texts.is_empty(), "no texts to score: give `texts`, a list of strings");
        let debias: DebiasMode = match p.debias.as_deref() {
            None => DebiasMode::None,
            Some(d) => d.parse().map_err(anyhow::Error::msg)?,
        };
        let config = readout::config::RunConfig::builder()
            .debias(debias)
            .truncate(super::truncate(p.truncate_middle))
            .matmul(self.matmul)
            .build()?;
        let _turn = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        Ok(score_texts(&self.engine, &rubric, &texts, &config, &Default::default(), &mut |_, _, _| true)?)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Judge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("readout", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Readout decides rubric criteria with a small local model by reading the answer letters' \
                 logits. Call `score` with a rubric (JSON object with `questions`, or a file path) and texts.",
            )
    }
}
