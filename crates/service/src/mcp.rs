//! The Model Context Protocol server (the official Rust SDK, `rmcp`) on standard input and
//! output: the `score` tool takes a rubric and texts and answers with what `readout score
//! --json` prints, as text and as structured content. Its requests go through the library's
//! [`ScoreRequest`] and the same [`Queue`] as the HTTP API's. Standard input is checked line by
//! line first ([`crate::stdio`]: a line that is not JSON, a key given twice). Standard output
//! carries JSON-RPC only: logs go to standard error.

use crate::queue::{Failed, Queue};
use crate::Error;
use readout::config::RunConfig;
use readout::debias::DebiasMode;
use readout::engine::Engine;
use readout::jobs::request::{Policy, ScoreJob, ScoreRequest};
use readout::jobs::score::TextResult;
use readout::jobs::systemone::{SystemOneRequest, SystemOneResponse, Usage, ALIAS};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Answer MCP requests on standard input and output with `engine` until the client closes them.
pub fn serve_stdio(engine: Arc<Engine>) -> crate::Result<()> {
    let (queue, thread) = Queue::start(engine.clone(), 64).map_err(|err| Error::Start { what: "queue", err })?;
    let server = Judge::new(engine, queue);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::Start { what: "async runtime", err })?;
    runtime.block_on(async {
        let (input, output) = rmcp::transport::stdio();
        let transport = crate::stdio::checked(input, output);
        let running = server.serve(transport).await.map_err(|e| Error::Serve(e.to_string()))?;
        running.waiting().await.map_err(|e| Error::Serve(e.to_string()))?;
        Ok::<(), Error>(())
    })?;
    drop(runtime);
    thread.join().map_err(|_| Error::Serve("the queue's thread panicked".into()))
}

/// The `score` tool's input. `rubric` and `texts` are taken as any JSON, as the schema's types
/// say, and checked by the library's [`ScoreRequest`], whose messages name the field and the text.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScoreParams {
    /// The rubric: a JSON object with `questions` (the format of docs/rubric.md in the Readout
    /// repository), or the path of a rubric file on the server's machine.
    #[schemars(with = "RubricArg")]
    pub rubric: serde_json::Value,
    /// The texts to decide: each a string, or an object with `text` and an optional `id`
    /// (carried into its result).
    #[schemars(with = "Vec<TextArg>")]
    pub texts: serde_json::Value,
    /// How orderings of the options are scored and combined: none (the default), cyclic (every
    /// rotation, averaged; flags order-unstable answers), permutation, calibrate, pride or batch.
    #[serde(default)]
    pub debias: Option<String>,
    /// Cut a text too long for the model's context from the middle instead of refusing it.
    #[serde(default)]
    pub truncate_middle: bool,
}

/// The `decide` tool's input: a System One request, checked by the library's
/// [`SystemOneRequest`] (`model` may be left out: this server has one).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DecideParams {
    /// The state the questions are about: a string, or any JSON value (read as its JSON text).
    pub state: serde_json::Value,
    /// The questions by id: each `{"type": "choice"|"noul"|"score", "instructions"?, "criteria"}`.
    pub questions: serde_json::Map<String, serde_json::Value>,
    /// The model's name, or `jev-latest`; this server has one model either way.
    #[serde(default)]
    pub model: Option<String>,
    /// How the orders of the options are read: none, cyclic (the default) or permutation.
    #[serde(default)]
    pub x_debias: Option<String>,
}

/// A rubric inline or by path (the schema of [`ScoreParams::rubric`]).
#[derive(Debug, JsonSchema)]
#[schemars(untagged)]
pub enum RubricArg {
    /// The path of a rubric file.
    Path(String),
    /// The rubric itself.
    Inline(serde_json::Map<String, serde_json::Value>),
}

/// A text to decide (the schema of one of [`ScoreParams::texts`]).
#[derive(Debug, JsonSchema)]
#[schemars(untagged)]
pub enum TextArg {
    /// The text alone.
    Plain(String),
    /// The text with an id.
    WithId {
        text: String,
        /// Carried into the text's result (a number is kept as its JSON).
        #[schemars(default)]
        id: Option<serde_json::Value>,
    },
}

impl ScoreParams {
    /// The library's request: the transport's shape, nothing decided here but that `texts` is a
    /// list.
    fn into_request(self) -> Result<ScoreRequest, String> {
        let serde_json::Value::Array(texts) = self.texts else {
            return Err("`texts` must be a list of texts, each a string or an object with `text`".into());
        };
        Ok(ScoreRequest {
            rubric: Some(self.rubric),
            texts,
            debias: self.debias,
            truncate_middle: self.truncate_middle,
            ..ScoreRequest::default()
        })
    }
}

/// The MCP server: one loaded model, its requests through the queue.
#[derive(Clone)]
pub struct Judge {
    engine: Arc<Engine>,
    queue: Queue,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Judge {
    fn new(engine: Arc<Engine>, queue: Queue) -> Judge {
        Judge { engine, queue, tool_router: Self::tool_router() }
    }

    /// Decide every criterion of a rubric for each text.
    #[tool(
        description = "Decide each criterion of a rubric for each text with Readout's local judge model: for every text and criterion, every option's probability (read from the answer letters' logits), the chosen option, the margin to the runner-up and flags. Returns one JSON object per text, as `readout score --json` prints them (text content: one JSON line per text; structured content: {\"results\": [...]})."
    )]
    async fn score(
        &self,
        Parameters(p): Parameters<ScoreParams>,
        cancelled: CancellationToken,
    ) -> Result<CallToolResult, ErrorData> {
        let scored = self.score_queued(p, cancelled).await;
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
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        })
    }

    /// Decide a System One request.
    #[tool(
        description = "Decide a System One request (TypeSafe's /v1/systemone body: `state`, a string or JSON value, and `questions`, a map from id to a `choice` (criteria: option name -> description or null), `noul` (yes/no; optional criteria {\"true\": ..., \"false\": ...}) or `score` (criteria: 2-10 levels, lowest first) question; optional `x_debias`: none, cyclic or permutation) with Readout's local judge model. Returns TypeSafe's answer: `answers` by question id (choice: choice, confidence, probabilities; noul: the probability of yes; score: the expected level, confidence, legend, probabilities), `usage` and Readout's `x_` fields."
    )]
    async fn decide(
        &self,
        Parameters(p): Parameters<DecideParams>,
        cancelled: CancellationToken,
    ) -> Result<CallToolResult, ErrorData> {
        let decided = self.decide_queued(p, cancelled).await;
        Ok(match decided {
            Ok(answer) => {
                let value = serde_json::to_value(&answer).map_err(internal)?;
                let mut r = CallToolResult::structured(value.clone());
                r.content = vec![ContentBlock::text(value.to_string())];
                r
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
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
    /// The request validated, queued and answered; a message for the caller when it fails.
    /// Queue the request; a `notifications/cancelled` for it drops it, so that it is not read if
    /// it has not started and its batch stops after the pass in flight when no one else waits.
    async fn score_queued(&self, p: ScoreParams, cancelled: CancellationToken) -> Result<Vec<TextResult>, String> {
        let job = p.into_request()?.validate(Policy::LOCAL).map_err(|e| e.to_string())?;
        self.queued(job, cancelled).await
    }

    /// A score job queued and answered, or a message for the caller.
    async fn queued(&self, job: ScoreJob, cancelled: CancellationToken) -> Result<Vec<TextResult>, String> {
        let pending = self
            .queue
            .submit(crate::queue::Job::Score(Box::new(job)))
            .map_err(|_| "the server is busy or stopping; try again".to_string())?;
        let answer = tokio::select! {
            a = pending.scored() => a,
            () = cancelled.cancelled() => return Err("the request was cancelled".into()),
        };
        match answer {
            Ok(results) => Ok(results),
            Err(Failed::Request(e)) => Err(e.to_string()),
            Err(Failed::Batch(msg)) => Err(msg),
            Err(Failed::Dropped) => Err("the queue dropped the request".into()),
        }
    }
}

impl Judge {
    /// The System One request read, queued and answered, as `decide` in [`readout::jobs::decide`].
    async fn decide_queued(&self, p: DecideParams, cancelled: CancellationToken) -> Result<SystemOneResponse, String> {
        let body = serde_json::json!({
            "model": p.model.unwrap_or_else(|| ALIAS.to_string()),
            "state": p.state,
            "questions": p.questions,
            "x_debias": p.x_debias,
        });
        let request = SystemOneRequest::from_value(body).map_err(|e| e.to_string())?;
        if self.engine.info().decision.is_some() {
            // A decision model: asked by its own contract.
            let pending = self
                .queue
                .submit(crate::queue::Job::Decide(Box::new(request), DebiasMode::Cyclic))
                .map_err(|_| "the server is busy or stopping; try again".to_string())?;
            let answer = tokio::select! {
                a = pending.decided() => a,
                () = cancelled.cancelled() => return Err("the request was cancelled".into()),
            };
            return answer.map_err(|e| match e {
                Failed::Request(e) => e.to_string(),
                Failed::Batch(msg) => msg,
                Failed::Dropped => "the queue dropped the request".into(),
            });
        }
        let config = RunConfig::builder().build().map_err(|e| e.to_string())?;
        let job = request.job(config, DebiasMode::Cyclic).map_err(|e| e.to_string())?;
        let debias = job.config.debias;
        let engine = self.engine.clone();
        let usage = Usage { input_tokens: request.input_tokens(&engine).map_err(|e| e.to_string())?, output_tokens: 0 };
        let results = self.queued(job, cancelled).await?;
        let result = results.first().ok_or("the state was not decided")?;
        Ok(request.response(&engine.info().name, result, usage, debias))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Judge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("readout", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Readout decides rubric criteria with a small local model by reading the answer letters' \
                 logits. Call `score` with a rubric (JSON object with `questions`, or a file path) and texts, \
                 or `decide` with a System One request (`state` and typed `questions`).",
            )
    }
}
