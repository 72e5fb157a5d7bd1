//! The OpenAI-compatible API, so that the eval tools people already use can run on Readout's
//! engine unchanged: `POST /v1/completions` (with `echo` and `logprobs`, what
//! lm-evaluation-harness's `local-completions` reads its log-likelihoods from),
//! `POST /v1/chat/completions` (with `logprobs` and `top_logprobs`, what G-Eval-style judges weigh
//! their scores by), and vLLM's `POST /tokenize`, `POST /detokenize` and `GET /tokenizer_info`
//! (lm-evaluation-harness's `tokenizer_backend=remote`: no tokenizer download on the client).
//!
//! The requests waiting together go through the model as one prompt trie
//! ([`readout::analysis::complete`]), so the shots and questions that many requests share are
//! computed once. Decoding is greedy: a request asking for sampling (`temperature` above 0, `n`
//! above 1) is refused with a message saying so rather than answered with something else.
//! `stream: true` is answered as server-sent events, sent once the request's completion is done.
//! Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`.

use crate::http::{read_body, ApiError, AppState, InFlight};
use crate::queue::Job;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use readout::analysis::complete::{self, Completion, TokenLogprob, MAX_TOP};
use readout::engine::template::Message;
use readout::engine::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use utoipa::ToSchema;

/// The routes, behind the bearer key as `/v1/score` is.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat))
        .route("/tokenize", post(tokenize))
        .route("/detokenize", post(detokenize))
        .route("/tokenizer_info", get(tokenizer_info))
}

/// An error in OpenAI's shape.
#[derive(Debug)]
pub(crate) struct OaiError {
    status: StatusCode,
    message: String,
    param: Option<String>,
    code: String,
    retry_after: Option<u64>,
}

/// OpenAI's error body.
#[derive(Serialize, ToSchema)]
pub(crate) struct OaiErrorBody {
    error: OaiErrorDetail,
}

/// What went wrong, as OpenAI says it.
#[derive(Serialize, ToSchema)]
pub(crate) struct OaiErrorDetail {
    message: String,
    /// `invalid_request_error` (4xx) or `server_error` (5xx).
    #[serde(rename = "type")]
    kind: String,
    /// The request field at fault, where one is.
    param: Option<String>,
    /// The same kinds as Readout's own errors (`invalid_request`, `context_length_exceeded`,
    /// `queue_full`, `timeout`, ...).
    code: String,
}

impl OaiError {
    fn invalid(param: &str, message: impl Into<String>) -> OaiError {
        OaiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            param: Some(param.into()),
            code: "invalid_request".into(),
            retry_after: None,
        }
    }

    fn internal(message: impl Into<String>) -> OaiError {
        OaiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            param: None,
            code: "internal".into(),
            retry_after: None,
        }
    }
}

impl From<ApiError> for OaiError {
    fn from(e: ApiError) -> OaiError {
        // A library refusal is the request's fault here (OpenAI answers those 400).
        let status = if e.status == StatusCode::UNPROCESSABLE_ENTITY { StatusCode::BAD_REQUEST } else { e.status };
        OaiError { status, message: e.body.message, param: e.body.field, code: e.body.kind, retry_after: e.retry_after }
    }
}

impl IntoResponse for OaiError {
    fn into_response(self) -> Response {
        let kind = if self.status.is_server_error() { "server_error" } else { "invalid_request_error" };
        let body = OaiErrorBody {
            error: OaiErrorDetail { message: self.message, kind: kind.into(), param: self.param, code: self.code },
        };
        let mut r = (self.status, Json(body)).into_response();
        if let Some(s) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        r
    }
}

/// A `/v1/` path this server does not serve, in OpenAI's shape.
pub(crate) fn not_found(path: &str) -> OaiError {
    OaiError {
        status: StatusCode::NOT_FOUND,
        message: format!(
            "{path} is not served: Readout speaks /v1/chat/completions, /v1/completions and /v1/models of the OpenAI API (and its own /v1/score); see GET /openapi.json"
        ),
        param: None,
        code: "not_found".into(),
        retry_after: None,
    }
}

/// A prompt as OpenAI takes it: a text, token ids, or a list of either.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged, expecting = "a text, a list of token ids, or a list of either")]
enum Prompt {
    Text(String),
    Tokens(Vec<u32>),
    Texts(Vec<String>),
    TokenLists(Vec<Vec<u32>>),
}

/// One text or several.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged, expecting = "a text or a list of texts")]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize, ToSchema)]
struct StreamOptions {
    /// Send a last chunk with the usage.
    #[serde(default)]
    include_usage: bool,
}

/// POST /v1/completions's body (fields not listed are accepted and ignored).
#[derive(Debug, Deserialize, ToSchema)]
struct CompletionRequest {
    /// Any name: the server has one model, and answers with its name.
    #[serde(default)]
    #[allow(dead_code)]
    model: Option<String>,
    /// A text, a list of token ids, or a list of either (one choice each).
    #[schema(value_type = Object)]
    prompt: Prompt,
    /// Tokens to generate at most (default 16; 0 with `echo` reads the prompt alone).
    #[serde(default)]
    max_tokens: Option<usize>,
    /// Give the prompt back before the completion, its tokens' log-probabilities too.
    #[serde(default)]
    echo: bool,
    /// Log-probabilities of the tokens and this many most likely alternatives at each (at most 20).
    #[serde(default)]
    logprobs: Option<usize>,
    /// 0 or absent: decoding is greedy.
    #[serde(default)]
    temperature: Option<f64>,
    /// 1 or absent.
    #[serde(default)]
    n: Option<usize>,
    /// 1 or absent.
    #[serde(default)]
    best_of: Option<usize>,
    /// Up to 4 texts that end the completion (not included).
    #[serde(default)]
    #[schema(value_type = Object)]
    stop: Option<OneOrMany>,
    /// Answer as server-sent events.
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
}

/// A chat message's content: a text, or parts of which the text ones are read.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged, expecting = "a text, or a list of parts such as {\"type\": \"text\", \"text\": \"...\"}")]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize, ToSchema)]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

/// One chat message.
#[derive(Debug, Deserialize, ToSchema)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    content: Option<Content>,
}

/// POST /v1/chat/completions's body (fields not listed are accepted and ignored).
#[derive(Debug, Deserialize, ToSchema)]
struct ChatRequest {
    #[serde(default)]
    #[allow(dead_code)]
    model: Option<String>,
    /// Rendered with the model's chat template, the assistant's turn opened.
    messages: Vec<ChatMessage>,
    /// Tokens to generate at most (default: until the model ends its turn or the context is full).
    #[serde(default)]
    max_tokens: Option<usize>,
    /// The newer name of `max_tokens`.
    #[serde(default)]
    max_completion_tokens: Option<usize>,
    /// Give each generated token's log-probability.
    #[serde(default)]
    logprobs: bool,
    /// With `logprobs`: this many most likely alternatives at each token (at most 20).
    #[serde(default)]
    top_logprobs: Option<usize>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    n: Option<usize>,
    #[serde(default)]
    #[schema(value_type = Object)]
    stop: Option<OneOrMany>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
}

/// Token counts, as OpenAI gives them.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
struct Usage {
    prompt_tokens: usize,
    completion_tokens: usize,
    total_tokens: usize,
}

/// Refuse what Readout does not do, saying what it does.
fn check_greedy(temperature: Option<f64>, n: Option<usize>, best_of: Option<usize>) -> Result<(), OaiError> {
    if let Some(t) = temperature.filter(|&t| t != 0.0) {
        return Err(OaiError::invalid(
            "temperature",
            format!("temperature {t}: Readout decodes greedily (it reads distributions, it does not sample); send temperature 0 or leave it out"),
        ));
    }
    for (name, v) in [("n", n), ("best_of", best_of)] {
        if let Some(v) = v.filter(|&v| v != 1) {
            return Err(OaiError::invalid(
                name,
                format!("{name} {v}: greedy decoding gives one completion a prompt; send {name} 1 or leave it out"),
            ));
        }
    }
    Ok(())
}

fn check_top(param: &str, top: usize) -> Result<(), OaiError> {
    if top > MAX_TOP {
        return Err(OaiError::invalid(
            param,
            format!("{param} {top}: at most {MAX_TOP} alternatives a token are given"),
        ));
    }
    Ok(())
}

fn check_stop(stop: Option<OneOrMany>) -> Result<Vec<String>, OaiError> {
    let stop = stop.map(OneOrMany::into_vec).unwrap_or_default();
    if stop.len() > 4 {
        return Err(OaiError::invalid("stop", format!("{} stop texts: at most 4 are taken", stop.len())));
    }
    Ok(stop)
}

/// The body as `T`; a field of the wrong type is named as the error's `param`.
fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, OaiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let param = if path == "." { "body".to_string() } else { path };
        OaiError::invalid(&param, format!("{param}: {}", e.inner()))
    })
}

/// Queue the prompts and wait for their completions within the request's time.
async fn run(s: &AppState, requests: Vec<complete::Request>, deadline: Instant) -> Result<Vec<Completion>, OaiError> {
    let pending = s.queue.submit(Job::Complete(requests)).map_err(|e| OaiError::from(ApiError::refused(e)))?;
    // Dropped when the time runs out (or the client goes): its prompts are then not read.
    match tokio::time::timeout_at(deadline.into(), pending.completed()).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(ApiError::failed(e).into()),
        Err(_) => Err(ApiError::timeout(s.options.timeout).into()),
    }
}

/// Tokenizing off the async threads: a long prompt takes a while.
async fn blocking<T: Send + 'static>(
    engine: &Arc<Engine>,
    f: impl FnOnce(&Engine) -> Result<T, OaiError> + Send + 'static,
) -> Result<T, OaiError> {
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || f(&engine)).await.map_err(|e| OaiError::internal(e.to_string()))?
}

/// Every prompt's tokens: texts encoded as the model reads them (its BOS token first where it
/// wants one), token ids checked against the vocabulary and the context; at most `max_prompts`
/// of them (a request's cost is bounded before it is queued).
fn prompt_tokens(engine: &Engine, prompt: Prompt, max_prompts: usize) -> Result<Vec<Vec<u32>>, OaiError> {
    let lists = match prompt {
        Prompt::Text(t) => vec![encode(engine, &t)?],
        Prompt::Texts(ts) => ts.iter().map(|t| encode(engine, t)).collect::<Result<_, _>>()?,
        Prompt::Tokens(t) => vec![t],
        Prompt::TokenLists(l) => l,
    };
    if lists.is_empty() {
        return Err(OaiError::invalid("prompt", "no prompt: give a text, token ids, or a list of either"));
    }
    if lists.len() > max_prompts {
        return Err(OaiError::invalid(
            "prompt",
            format!("{} prompts; this server takes at most {max_prompts} in one request (--max-texts)", lists.len()),
        ));
    }
    let vocab = engine.info().config.vocab_size;
    let context = engine.info().config.context_length;
    for (i, p) in lists.iter().enumerate() {
        if p.is_empty() {
            return Err(OaiError::invalid("prompt", format!("prompt {i} has no tokens")));
        }
        if let Some(t) = p.iter().find(|&&t| t as usize >= vocab) {
            return Err(OaiError::invalid(
                "prompt",
                format!("prompt {i} has token id {t}; this model's ids are 0 to {}", vocab - 1),
            ));
        }
        if p.len() > context {
            return Err(too_long(p.len(), context));
        }
    }
    Ok(lists)
}

fn too_long(tokens: usize, context: usize) -> OaiError {
    OaiError {
        status: StatusCode::BAD_REQUEST,
        message: format!(
            "this model's maximum context length is {context} tokens; the prompt has {tokens}: shorten it"
        ),
        param: Some("prompt".into()),
        code: "context_length_exceeded".into(),
        retry_after: None,
    }
}

fn encode(engine: &Engine, text: &str) -> Result<Vec<u32>, OaiError> {
    engine.tokenizer().encode(text).map_err(|e| ApiError::from_library(e).into())
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// `cmpl-…` / `chatcmpl-…`: unique within a server's life.
fn new_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{prefix}-{:x}{:06x}", now(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// `top` as OpenAI's completions give it: each alternative's text and log-probability, the
/// first of two alternatives with the same text kept.
fn top_map(engine: &Engine, top: &[(u32, f64)]) -> Value {
    let mut m = Map::new();
    for &(t, lp) in top {
        m.entry(engine.tokenizer().token_text(t)).or_insert(json!(lp));
    }
    Value::Object(m)
}

/// Text pieces of `ids` one token each, so that the pieces make the whole decoded text (a
/// character split over two tokens comes with the second).
fn pieces(engine: &Engine, ids: &[u32]) -> Vec<String> {
    let mut out = Vec::with_capacity(ids.len());
    let mut done = String::new();
    for k in 1..=ids.len() {
        let text = engine.tokenizer().decode(&ids[..k]).unwrap_or_default();
        if text.ends_with('\u{fffd}') && k < ids.len() {
            out.push(String::new());
            continue;
        }
        out.push(text.get(done.len()..).unwrap_or_default().to_string());
        done = text;
    }
    out
}

/// A completion's `logprobs` object: the prompt's tokens first when echoed (the first with
/// `null`: nothing comes before it), then the generated ones, an end-of-turn token included.
fn completion_logprobs(engine: &Engine, c: &Completion, offset: usize) -> Value {
    let all: Vec<&TokenLogprob> = c.prompt.iter().chain(&c.tokens).collect();
    let mut at = offset;
    let mut text_offset = Vec::with_capacity(all.len());
    let mut tokens = Vec::with_capacity(all.len());
    for t in &all {
        let s = engine.tokenizer().token_text(t.token);
        text_offset.push(at);
        at += s.chars().count();
        tokens.push(s);
    }
    json!({
        "tokens": tokens,
        "token_logprobs": all.iter().map(|t| t.logprob).collect::<Vec<_>>(),
        "top_logprobs": all.iter().map(|t| if t.logprob.is_none() { Value::Null } else { top_map(engine, &t.top) }).collect::<Vec<_>>(),
        "text_offset": text_offset,
    })
}

fn usage(prompts: &[Vec<u32>], done: &[Completion]) -> Usage {
    let prompt_tokens = prompts.iter().map(Vec::len).sum();
    let completion_tokens = done.iter().map(|c| c.tokens.len()).sum();
    Usage { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
}

/// Server-sent events: each chunk a `data:` line, then `data: [DONE]`.
fn events(chunks: Vec<Value>) -> Response {
    let mut body = String::new();
    for c in chunks {
        body.push_str("data: ");
        body.push_str(&c.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    let mut r = Response::new(Body::from(body));
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

#[utoipa::path(
    post,
    path = "/v1/completions",
    request_body = CompletionRequest,
    responses(
        (status = 200, description = "OpenAI's `text_completion` (or its chunks as server-sent events with `stream`)"),
        (status = 400, description = "a field is wrong, sampling was asked for, or a prompt is longer than the context", body = OaiErrorBody),
        (status = 401, description = "no key or a wrong one"),
        (status = 503, description = "the queue is full; try again after Retry-After seconds", body = OaiErrorBody),
        (status = 504, description = "not done within --timeout-s", body = OaiErrorBody),
    ),
    security(("bearer" = []))
)]
async fn completions(State(s): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Result<Response, OaiError> {
    let deadline = Instant::now() + s.options.timeout;
    s.in_flight.fetch_add(1, Ordering::SeqCst);
    let _counted = InFlight(&s.in_flight);
    let bytes = read_body(&headers, body, s.options.max_body_bytes, &s.reading).await?;
    let req: CompletionRequest = parse(&bytes)?;
    check_greedy(req.temperature, req.n, req.best_of)?;
    let top = req.logprobs.unwrap_or(0);
    check_top("logprobs", top)?;
    let stop = check_stop(req.stop)?;
    let max_tokens = req.max_tokens.unwrap_or(16);
    let (echo, prompt) = (req.echo, req.prompt);
    let max_prompts = s.options.max_texts;
    let prompts = blocking(&s.engine, move |e| prompt_tokens(e, prompt, max_prompts)).await?;
    let requests = prompts
        .iter()
        .map(|p| complete::Request { prompt: p.clone(), max_tokens, echo, top, stop: stop.clone() })
        .collect();
    let done = run(&s, requests, deadline).await?;
    let usage = usage(&prompts, &done);
    let (id, created, model) = (new_id("cmpl"), now(), s.engine.info().name.clone());
    let logprobs = req.logprobs.is_some();
    let engine = s.engine.clone();
    let choices: Vec<(String, Value, &'static str)> = tokio::task::spawn_blocking(move || {
        prompts
            .iter()
            .zip(&done)
            .map(|(p, c)| {
                let head = if echo { engine.tokenizer().decode(p).unwrap_or_default() } else { String::new() };
                let offset = if echo { 0 } else { engine.tokenizer().decode(p).unwrap_or_default().chars().count() };
                let lp = if logprobs { completion_logprobs(&engine, c, offset) } else { Value::Null };
                (head + &c.text, lp, c.finish.as_str())
            })
            .collect()
    })
    .await
    .map_err(|e| OaiError::internal(e.to_string()))?;
    if req.stream {
        let mut chunks: Vec<Value> = choices
            .into_iter()
            .enumerate()
            .map(|(i, (text, lp, finish))| {
                json!({"id": id, "object": "text_completion", "created": created, "model": model,
                       "choices": [{"index": i, "text": text, "logprobs": lp, "finish_reason": finish}]})
            })
            .collect();
        if req.stream_options.unwrap_or_default().include_usage {
            chunks.push(json!({"id": id, "object": "text_completion", "created": created, "model": model, "choices": [], "usage": usage}));
        }
        return Ok(events(chunks));
    }
    let choices: Vec<Value> = choices
        .into_iter()
        .enumerate()
        .map(|(i, (text, lp, finish))| json!({"index": i, "text": text, "logprobs": lp, "finish_reason": finish}))
        .collect();
    Ok(Json(json!({"id": id, "object": "text_completion", "created": created, "model": model, "choices": choices, "usage": usage}))
        .into_response())
}

/// One generated token as a chat's `logprobs.content` entry.
fn chat_token(engine: &Engine, t: &TokenLogprob) -> Value {
    let one = |id: u32, lp: Option<f64>| {
        let bytes = engine.tokenizer().token_bytes(id);
        json!({"token": engine.tokenizer().token_text(id), "logprob": lp, "bytes": bytes})
    };
    let mut v = one(t.token, t.logprob);
    v["top_logprobs"] = t.top.iter().map(|&(id, lp)| one(id, Some(lp))).collect();
    v
}

#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    request_body = ChatRequest,
    responses(
        (status = 200, description = "OpenAI's `chat.completion` (or `chat.completion.chunk`s as server-sent events with `stream`)"),
        (status = 400, description = "a field is wrong, sampling was asked for, or the chat is longer than the context", body = OaiErrorBody),
        (status = 401, description = "no key or a wrong one"),
        (status = 503, description = "the queue is full; try again after Retry-After seconds", body = OaiErrorBody),
        (status = 504, description = "not done within --timeout-s", body = OaiErrorBody),
    ),
    security(("bearer" = []))
)]
async fn chat(State(s): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Result<Response, OaiError> {
    let deadline = Instant::now() + s.options.timeout;
    s.in_flight.fetch_add(1, Ordering::SeqCst);
    let _counted = InFlight(&s.in_flight);
    let bytes = read_body(&headers, body, s.options.max_body_bytes, &s.reading).await?;
    let req: ChatRequest = parse(&bytes)?;
    check_greedy(req.temperature, req.n, None)?;
    if req.top_logprobs.is_some() && !req.logprobs {
        return Err(OaiError::invalid("top_logprobs", "top_logprobs needs \"logprobs\": true"));
    }
    let top = if req.logprobs { req.top_logprobs.unwrap_or(0) } else { 0 };
    check_top("top_logprobs", top)?;
    if req.messages.is_empty() {
        return Err(OaiError::invalid("messages", "no messages: give at least one"));
    }
    let stop = check_stop(req.stop)?;
    let messages: Vec<Message> = req
        .messages
        .into_iter()
        .map(|m| {
            let text = match m.content {
                None => String::new(),
                Some(Content::Text(t)) => t,
                Some(Content::Parts(parts)) => {
                    parts.into_iter().filter(|p| p.kind == "text").filter_map(|p| p.text).collect::<Vec<_>>().join("\n")
                }
            };
            Message::new(&m.role, text)
        })
        .collect();
    let prompt = blocking(&s.engine, move |e| {
        let text = e.template().render(&messages).map_err(|e| OaiError::from(ApiError::from_library(e)))?;
        let ids = encode(e, &text)?;
        let context = e.info().config.context_length;
        if ids.len() > context {
            return Err(too_long(ids.len(), context));
        }
        Ok(ids)
    })
    .await?;
    let room = s.engine.info().config.context_length - prompt.len();
    let max_tokens = req.max_completion_tokens.or(req.max_tokens).unwrap_or(room);
    let request = complete::Request { prompt: prompt.clone(), max_tokens, echo: false, top, stop };
    let done = run(&s, vec![request], deadline).await?;
    let usage = usage(std::slice::from_ref(&prompt), &done);
    let c = done.into_iter().next().ok_or_else(|| OaiError::internal("no completion came back"))?;
    let (id, created, model) = (new_id("chatcmpl"), now(), s.engine.info().name.clone());
    let engine = s.engine.clone();
    let want_logprobs = req.logprobs;
    // The tokens whose text is the reply: an end-of-turn token that ended it is not shown.
    let stops = complete::stop_tokens(&engine);
    let shown: Vec<TokenLogprob> = {
        let mut t = c.tokens.clone();
        if t.last().is_some_and(|l| stops.contains(&l.token)) {
            t.pop();
        }
        t
    };
    let (entries, parts) = tokio::task::spawn_blocking(move || {
        let entries: Vec<Value> = shown.iter().map(|t| chat_token(&engine, t)).collect();
        let ids: Vec<u32> = shown.iter().map(|t| t.token).collect();
        (entries, pieces(&engine, &ids))
    })
    .await
    .map_err(|e| OaiError::internal(e.to_string()))?;
    let finish = c.finish.as_str();
    if req.stream {
        let chunk = |delta: Value, lp: Value, finish: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "logprobs": lp, "finish_reason": finish}]})
        };
        let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null, Value::Null)];
        // The pieces make the reply up to a stop text; what lies past it is not sent.
        let mut sent = 0;
        for (k, piece) in parts.iter().enumerate() {
            if sent >= c.text.len() {
                break;
            }
            let piece: String = piece
                .chars()
                .scan(sent, |at, ch| {
                    *at += ch.len_utf8();
                    (*at <= c.text.len()).then_some(ch)
                })
                .collect();
            sent += piece.len();
            let lp = if want_logprobs { json!({"content": [entries[k].clone()]}) } else { Value::Null };
            chunks.push(chunk(json!({"content": piece}), lp, Value::Null));
        }
        chunks.push(chunk(json!({}), Value::Null, json!(finish)));
        if req.stream_options.unwrap_or_default().include_usage {
            chunks.push(json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [], "usage": usage}));
        }
        return Ok(events(chunks));
    }
    let logprobs = if want_logprobs { json!({"content": entries}) } else { Value::Null };
    Ok(Json(json!({
        "id": id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": c.text}, "logprobs": logprobs, "finish_reason": finish}],
        "usage": usage,
    }))
    .into_response())
}

/// POST /tokenize's body (vLLM's).
#[derive(Debug, Deserialize, ToSchema)]
struct TokenizeRequest {
    prompt: String,
    /// Put the model's BOS token first where it wants one (default true; lm-evaluation-harness
    /// sends false).
    #[serde(default = "yes")]
    add_special_tokens: bool,
}

fn yes() -> bool {
    true
}

/// POST /tokenize's answer.
#[derive(Serialize, ToSchema)]
struct Tokenized {
    tokens: Vec<u32>,
    count: usize,
    max_model_len: usize,
}

#[utoipa::path(post, path = "/tokenize", request_body = TokenizeRequest, responses((status = 200, body = Tokenized), (status = 400, body = OaiErrorBody)), security(("bearer" = [])))]
async fn tokenize(State(s): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Result<Json<Tokenized>, OaiError> {
    let bytes = read_body(&headers, body, s.options.max_body_bytes, &s.reading).await?;
    let req: TokenizeRequest = parse(&bytes)?;
    let tokens = blocking(&s.engine, move |e| {
        let t = e.tokenizer();
        let ids = if req.add_special_tokens { t.encode(&req.prompt) } else { t.encode_plain(&req.prompt) };
        ids.map_err(|e| ApiError::from_library(e).into())
    })
    .await?;
    Ok(Json(Tokenized { count: tokens.len(), tokens, max_model_len: s.engine.info().config.context_length }))
}

/// POST /detokenize's body.
#[derive(Debug, Deserialize, ToSchema)]
struct DetokenizeRequest {
    tokens: Vec<u32>,
}

/// POST /detokenize's answer.
#[derive(Serialize, ToSchema)]
struct Detokenized {
    prompt: String,
}

#[utoipa::path(post, path = "/detokenize", request_body = DetokenizeRequest, responses((status = 200, body = Detokenized), (status = 400, body = OaiErrorBody)), security(("bearer" = [])))]
async fn detokenize(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Detokenized>, OaiError> {
    let bytes = read_body(&headers, body, s.options.max_body_bytes, &s.reading).await?;
    let req: DetokenizeRequest = parse(&bytes)?;
    let vocab = s.engine.info().config.vocab_size;
    if let Some(t) = req.tokens.iter().find(|&&t| t as usize >= vocab) {
        return Err(OaiError::invalid("tokens", format!("token id {t}; this model's ids are 0 to {}", vocab - 1)));
    }
    let prompt =
        blocking(&s.engine, move |e| e.tokenizer().decode(&req.tokens).map_err(|e| ApiError::from_library(e).into()))
            .await?;
    Ok(Json(Detokenized { prompt }))
}

/// GET /tokenizer_info's answer (vLLM's): what a client needs to tokenize and render chats as
/// this server does.
#[derive(Serialize, ToSchema)]
struct TokenizerInfo {
    /// The token that ends the model's turn.
    eos_token: Option<String>,
    /// The token put before every prompt, where the model wants one.
    bos_token: Option<String>,
    pad_token: Option<String>,
    /// The chat template's Jinja source.
    chat_template: String,
    model_max_length: usize,
    tokenizer_class: String,
}

#[utoipa::path(get, path = "/tokenizer_info", responses((status = 200, body = TokenizerInfo)), security(("bearer" = [])))]
async fn tokenizer_info(State(s): State<Arc<AppState>>) -> Json<TokenizerInfo> {
    let e = &s.engine;
    let eos = complete::stop_tokens(e).first().map(|&t| e.tokenizer().token_text(t));
    Json(TokenizerInfo {
        eos_token: eos,
        bos_token: e.tokenizer().bos_token(),
        pad_token: None,
        chat_template: e.template().source().to_string(),
        model_max_length: e.info().config.context_length,
        tokenizer_class: "readout".into(),
    })
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(completions, chat, tokenize, detokenize, tokenizer_info),
    components(schemas(
        CompletionRequest,
        ChatRequest,
        ChatMessage,
        StreamOptions,
        OaiErrorBody,
        OaiErrorDetail,
        TokenizeRequest,
        Tokenized,
        DetokenizeRequest,
        Detokenized,
        TokenizerInfo
    ))
)]
pub(crate) struct OpenAiDoc;
