//! `readout serve`: Readout as an HTTP service, the model loaded once. This module is the shell:
//! HTTP (axum), the bearer key, the limits, the bounded queue and shutdown. What it serves is
//! the library's: a scheduler thread takes every request that queued while the last batch ran
//! and reads them in one batch per configuration with `score::score_requests` (shared passes,
//! every answer bit for bit the request's answer alone), replying to each request as its last
//! text is decided; a reply is what `readout score --json` prints for those texts.

use super::ModelArgs;
use anyhow::{bail, Context, Result};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use readout::config::RunConfig;
use readout::debias::DebiasMode;
use readout::engine::{Engine, MatmulPath};
use readout::rubric::Rubric;
use readout::score::{CriterionResult, OptionResult, Request as Scored, Text, TextResult};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use tokio::sync::{mpsc, oneshot};
use utoipa::{OpenApi, ToSchema};

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback needs --api-key-file (or --no-auth).
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to listen on (0: a free one); the address is printed once listening.
    #[arg(long, default_value_t = 8321)]
    port: u16,
    /// A file holding the key clients must send as `Authorization: Bearer KEY` (surrounding
    /// whitespace ignored). GET /health and /openapi.json need no key.
    #[arg(long)]
    api_key_file: Option<PathBuf>,
    /// Listen beyond loopback without a key.
    #[arg(long, conflicts_with = "api_key_file")]
    no_auth: bool,
    /// Largest request body in bytes (larger: 413).
    #[arg(long, default_value_t = 1 << 20)]
    max_body_bytes: usize,
    /// Most texts in one request (more: 422).
    #[arg(long, default_value_t = 256)]
    max_texts: usize,
    /// Most tokens in one text (more: 422 naming the text and its count).
    #[arg(long, default_value_t = 4096)]
    max_text_tokens: usize,
    /// Seconds a request may take, its wait in the queue included (longer: 504).
    #[arg(long, default_value_t = 300.0)]
    timeout_s: f64,
    /// Requests that may wait for the model at once (more: 503 with Retry-After).
    #[arg(long, default_value_t = 256)]
    queue: usize,
    #[command(flatten)]
    model: ModelArgs,
}

/// What the handlers share.
struct AppState {
    engine: Arc<Engine>,
    key: Option<String>,
    max_body_bytes: usize,
    max_texts: usize,
    max_text_tokens: usize,
    timeout: Duration,
    matmul: MatmulPath,
    jobs: mpsc::Sender<Job>,
    /// Requests sent to the scheduler and not yet taken into a batch.
    queued: Arc<AtomicUsize>,
    /// Score requests being handled (read, queued or read by the model).
    in_flight: AtomicUsize,
    /// How long the last batch took, in ms (for Retry-After).
    last_batch_ms: Arc<AtomicU64>,
}

/// A request for the scheduler.
struct Job {
    rubric: Rubric,
    texts: Vec<Text>,
    /// Requests of one key are read in one batch: (debias mode, truncate from the middle).
    key: (DebiasMode, bool),
    config: RunConfig,
    reply: oneshot::Sender<std::result::Result<Vec<TextResult>, ApiError>>,
    /// Set when the client's time ran out: not read if not started.
    gone: Arc<AtomicBool>,
}

pub fn run(a: ServeArgs) -> Result<i32> {
    let key = match &a.api_key_file {
        Some(p) => {
            let k = std::fs::read_to_string(p).with_context(|| format!("reading the API key file {}", p.display()))?;
            let k = k.trim().to_string();
            if k.is_empty() {
                bail!("the API key file {} is empty; put the key clients send in it", p.display());
            }
            Some(k)
        }
        None => None,
    };
    if key.is_none() && !a.host.is_loopback() && !a.no_auth {
        bail!(
            "listening on {} reaches beyond this machine: give --api-key-file FILE (clients send `Authorization: Bearer KEY`), or --no-auth to serve without a key",
            a.host
        );
    }
    if !(a.timeout_s > 0.0 && a.timeout_s.is_finite()) {
        bail!("--timeout-s must be a positive number of seconds, not {}", a.timeout_s);
    }
    if a.queue == 0 || a.max_texts == 0 || a.max_text_tokens == 0 || a.max_body_bytes == 0 {
        bail!("--queue, --max-texts, --max-text-tokens and --max-body-bytes must be at least 1");
    }
    let engine = Arc::new(a.model.load()?);
    let (tx, rx) = mpsc::channel::<Job>(a.queue);
    let queued = Arc::new(AtomicUsize::new(0));
    let last_batch_ms = Arc::new(AtomicU64::new(0));
    let scheduler = {
        let (engine, queued, last) = (engine.clone(), queued.clone(), last_batch_ms.clone());
        std::thread::Builder::new()
            .name("readout-scheduler".into())
            .spawn(move || schedule(&engine, rx, &queued, &last))
            .context("starting the scheduler thread")?
    };
    let state = Arc::new(AppState {
        engine,
        key,
        max_body_bytes: a.max_body_bytes,
        max_texts: a.max_texts,
        max_text_tokens: a.max_text_tokens,
        timeout: Duration::from_secs_f64(a.timeout_s),
        matmul: a.model.matmul,
        jobs: tx,
        queued,
        in_flight: AtomicUsize::new(0),
        last_batch_ms,
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(a.host, a.port))
            .await
            .with_context(|| format!("listening on {}:{}", a.host, a.port))?;
        let addr = listener.local_addr()?;
        eprintln!("readout: listening on http://{addr} (model {})", state.engine.info().name);
        axum::serve(listener, router(state)).with_graceful_shutdown(shutdown_signal()).await.context("serving")
    })?;
    // Every request in flight has had its answer; the senders are gone, so the scheduler ends.
    drop(rt);
    scheduler.join().map_err(|_| anyhow::anyhow!("the scheduler thread panicked"))?;
    eprintln!("readout: stopped");
    Ok(0)
}

fn router(state: Arc<AppState>) -> Router {
    let keyed = Router::new()
        .route("/v1/score", post(score))
        .route("/v1/models", get(models))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth));
    Router::new()
        .merge(keyed)
        .route("/health", get(health))
        .route("/openapi.json", get(openapi_json))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint; see GET /openapi.json")
        })
        .layer(middleware::from_fn(log))
        .with_state(state)
}

/// SIGINT (Ctrl-C) or SIGTERM: stop taking connections, finish the requests in flight.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    eprintln!("readout: shutting down after the requests in flight");
}

/// The scheduler: owns the model's time. Takes every request waiting, groups them by
/// configuration, reads each group in one batch, and answers each request as it completes.
fn schedule(engine: &Engine, mut rx: mpsc::Receiver<Job>, queued: &AtomicUsize, last_ms: &AtomicU64) {
    while let Some(first) = rx.blocking_recv() {
        let mut jobs = vec![first];
        while let Ok(j) = rx.try_recv() {
            jobs.push(j);
        }
        queued.fetch_sub(jobs.len(), Ordering::SeqCst);
        jobs.retain(|j| !j.gone.load(Ordering::SeqCst) && !j.reply.is_closed());
        let mut groups: Vec<Vec<Job>> = Vec::new();
        for j in jobs {
            match groups.iter_mut().find(|g| g[0].key == j.key) {
                Some(g) => g.push(j),
                None => groups.push(vec![j]),
            }
        }
        for group in groups {
            let start = Instant::now();
            let config = group[0].config.clone();
            let (bodies, replies): (Vec<(Rubric, Vec<Text>)>, Vec<_>) =
                group.into_iter().map(|j| ((j.rubric, j.texts), j.reply)).unzip();
            let mut replies: Vec<Option<_>> = replies.into_iter().map(Some).collect();
            let requests: Vec<Scored<'_>> = bodies.iter().map(|(rubric, texts)| Scored { rubric, texts }).collect();
            let mut got: Vec<Vec<TextResult>> = bodies.iter().map(|_| Vec::new()).collect();
            let out = readout::score::score_requests(engine, &requests, &config, &mut |k, r| {
                got[k].push(r.clone());
                if got[k].len() == bodies[k].1.len() {
                    let mut done = std::mem::take(&mut got[k]);
                    done.sort_by_key(|r| r.index);
                    if let Some(tx) = replies[k].take() {
                        let _ = tx.send(Ok(done));
                    }
                }
                true
            });
            tracing::info!(
                requests = requests.len(),
                texts = bodies.iter().map(|b| b.1.len()).sum::<usize>(),
                ms = start.elapsed().as_millis() as u64,
                "batch read"
            );
            last_ms.store(start.elapsed().as_millis() as u64, Ordering::SeqCst);
            match out {
                Ok(results) => {
                    for (tx, r) in replies.iter_mut().zip(results) {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(r.map_err(ApiError::from_library));
                        }
                    }
                }
                Err(e) => {
                    tracing::error!("a batch failed: {e}");
                    for tx in replies.iter_mut().filter_map(Option::take) {
                        let msg = format!("the batch this request was read in failed: {e}");
                        let _ = tx.send(Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", msg)));
                    }
                }
            }
        }
    }
}

/// An answer other than 200: `{ "error": { "kind", "message", "field"? } }`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    body: ErrorDetail,
    retry_after: Option<u64>,
}

/// An error's body.
#[derive(Debug, Serialize, ToSchema)]
struct ErrorBody {
    error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, Serialize, ToSchema)]
struct ErrorDetail {
    /// unauthorized, body_too_large, invalid_request, text_too_long, queue_full, timeout,
    /// not_found, shutting_down or internal.
    kind: String,
    message: String,
    /// The request field at fault (`texts[3]`, `rubric.questions.topic.type`), where one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: ErrorDetail { kind: kind.into(), message: message.into(), field: None },
            retry_after: None,
        }
    }

    fn invalid(field: impl Into<String>, message: impl Into<String>) -> ApiError {
        let mut e = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message);
        e.body.field = Some(field.into());
        e
    }

    fn from_library(e: readout::Error) -> ApiError {
        use readout::Error as E;
        match &e {
            E::PromptTooLong { .. } | E::ContextOverflow { .. } => {
                let mut a = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "text_too_long", e.to_string());
                a.body.field = Some("texts".into());
                a
            }
            E::Config(_) | E::BadInput { .. } => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", e.to_string())
            }
            _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, Json(ErrorBody { error: self.body })).into_response();
        if let Some(s) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}

/// The bearer key, compared in constant time.
async fn auth(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = &s.key {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let ok = given.is_some_and(|g| bool::from(g.as_bytes().ct_eq(key.as_bytes())));
        if !ok {
            let why = if given.is_some() {
                "the bearer key is wrong"
            } else {
                "this server needs `Authorization: Bearer KEY`"
            };
            return ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", why).into_response();
        }
    }
    next.run(req).await
}

/// A line per request: method, path, status, time.
async fn log(req: Request, next: Next) -> Response {
    let (method, path, start) = (req.method().clone(), req.uri().path().to_string(), Instant::now());
    let r = next.run(req).await;
    tracing::info!(%method, %path, status = r.status().as_u16(), ms = start.elapsed().as_millis() as u64, "request");
    r
}

/// POST /v1/score's body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ScoreRequest {
    /// A rubric as in examples/*.rubric.json (`name`, `description`, `questions`; docs/rubric.md).
    #[schema(value_type = Option<Object>)]
    rubric: Option<serde_json::Value>,
    /// A rubric's `questions` object alone, instead of `rubric`.
    #[schema(value_type = Option<Object>)]
    questions: Option<serde_json::Value>,
    /// The texts to decide: each a string, or an object with `text` and an optional `id`.
    #[schema(value_type = Vec<TextIn>)]
    texts: Vec<serde_json::Value>,
    /// How orderings of the options are scored and combined: none (the default), cyclic,
    /// permutation, calibrate, pride or batch (as `readout score --debias`).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    debias: DebiasMode,
    /// Cut a text too long for the model's context from the middle instead of refusing it.
    #[serde(default)]
    truncate_middle: bool,
}

/// One text of a request.
#[derive(ToSchema)]
#[allow(dead_code)] // The schema's shape; the handler reads texts from JSON values.
enum TextIn {
    Plain(String),
    WithId { text: String, id: Option<String> },
}

/// POST /v1/score's answer.
#[derive(Serialize, ToSchema)]
struct ScoreResponse {
    /// One per text, in the request's order: the line `readout score --json` prints for it.
    results: Vec<TextResult>,
}

#[utoipa::path(
    post,
    path = "/v1/score",
    request_body = ScoreRequest,
    responses(
        (status = 200, description = "every text decided", body = ScoreResponse),
        (status = 401, description = "no key or a wrong one", body = ErrorBody),
        (status = 413, description = "the body is larger than --max-body-bytes", body = ErrorBody),
        (status = 422, description = "a field is wrong, a text has too many tokens, or too many texts", body = ErrorBody),
        (status = 503, description = "the queue is full; try again after Retry-After seconds", body = ErrorBody),
        (status = 504, description = "not decided within --timeout-s", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
async fn score(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<ScoreResponse>, ApiError> {
    let deadline = Instant::now() + s.timeout;
    s.in_flight.fetch_add(1, Ordering::SeqCst);
    let _counted = InFlight(&s.in_flight);
    let bytes = read_body(&headers, body, s.max_body_bytes).await?;
    let req: ScoreRequest = serde_json::from_slice(&bytes).map_err(|e| {
        let msg = e.to_string();
        let field = msg.split('`').nth(1).filter(|_| msg.contains("field")).unwrap_or("(body)").to_string();
        ApiError::invalid(field, format!("the body is not a score request: {msg}"))
    })?;
    let rubric = request_rubric(req.rubric, req.questions)?;
    if req.texts.is_empty() {
        return Err(ApiError::invalid("texts", "no texts: give at least one"));
    }
    if req.texts.len() > s.max_texts {
        return Err(ApiError::invalid(
            "texts",
            format!(
                "{} texts in one request; this server takes at most {} (--max-texts)",
                req.texts.len(),
                s.max_texts
            ),
        ));
    }
    let texts = req.texts.into_iter().enumerate().map(|(i, v)| text_of(i, v)).collect::<Result<Vec<_>, _>>()?;
    // Counted off the async threads: a megabyte of text takes a while to tokenize.
    let (engine, max) = (s.engine.clone(), s.max_text_tokens);
    let texts = tokio::task::spawn_blocking(move || -> Result<Vec<Text>, ApiError> {
        for (i, t) in texts.iter().enumerate() {
            let n = engine.tokenizer().encode(&t.text).map_err(ApiError::from_library)?.len();
            if n > max {
                return Err(ApiError::invalid(
                    format!("texts[{i}]"),
                    format!("texts[{i}] has {n} tokens; this server takes at most {max} per text (--max-text-tokens)"),
                ));
            }
        }
        Ok(texts)
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))??;
    let config = RunConfig::builder()
        .debias(req.debias)
        .truncate(super::truncate(req.truncate_middle))
        .matmul(s.matmul)
        .build()
        .and_then(|c| readout::score::check_config(&c).map(|_| c))
        .map_err(ApiError::from_library)?;
    let (tx, rx) = oneshot::channel();
    let gone = Arc::new(AtomicBool::new(false));
    let n = texts.len();
    let job = Job { rubric, texts, key: (req.debias, req.truncate_middle), config, reply: tx, gone: gone.clone() };
    s.queued.fetch_add(1, Ordering::SeqCst);
    if let Err(e) = s.jobs.try_send(job) {
        s.queued.fetch_sub(1, Ordering::SeqCst);
        return Err(match e {
            mpsc::error::TrySendError::Full(_) => {
                let secs = s.last_batch_ms.load(Ordering::SeqCst).div_ceil(1000).max(1);
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "queue_full",
                    "the queue is full (--queue); try again after Retry-After seconds",
                );
                e.retry_after = Some(secs);
                e
            }
            mpsc::error::TrySendError::Closed(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the server is stopping")
            }
        });
    }
    match tokio::time::timeout_at(deadline.into(), rx).await {
        Ok(Ok(Ok(results))) => {
            debug_assert_eq!(results.len(), n);
            Ok(Json(ScoreResponse { results }))
        }
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(_)) => {
            Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the scheduler dropped the request"))
        }
        Err(_) => {
            gone.store(true, Ordering::SeqCst);
            Err(ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "timeout",
                format!("not decided within {:.1} s (--timeout-s)", s.timeout.as_secs_f64()),
            ))
        }
    }
}

/// Counts a score request in flight until it is answered.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The body, at most `max` bytes (more: 413, before reading it when its length is declared).
async fn read_body(headers: &HeaderMap, body: Body, max: usize) -> Result<axum::body::Bytes, ApiError> {
    let too_large = |n: String| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the body is {n} bytes; this server takes at most {max} (--max-body-bytes)"),
        )
    };
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|&n| n > max as u64) {
        return Err(too_large(n.to_string()));
    }
    axum::body::to_bytes(body, max).await.map_err(|_| too_large("more than that".into()))
}

/// The request's rubric: `rubric`, or `questions` alone.
fn request_rubric(rubric: Option<serde_json::Value>, questions: Option<serde_json::Value>) -> Result<Rubric, ApiError> {
    let (value, field) = match (rubric, questions) {
        (Some(r), None) => (r, "rubric"),
        (None, Some(q)) => (serde_json::json!({ "name": "inline", "questions": q }), "questions"),
        (Some(_), Some(_)) => return Err(ApiError::invalid("rubric", "give `rubric` or `questions`, not both")),
        (None, None) => {
            return Err(ApiError::invalid("rubric", "missing: give `rubric` (a rubric object) or `questions`"))
        }
    };
    Rubric::parse(&value.to_string(), Path::new(field)).map_err(|e| match e {
        readout::Error::BadInput { field: f, reason, .. } => {
            let f = if f.starts_with('(') {
                field.to_string()
            } else if field == "questions" {
                f
            } else {
                format!("rubric.{f}")
            };
            ApiError::invalid(f.clone(), format!("{f}: {reason}"))
        }
        other => ApiError::invalid(field, other.to_string()),
    })
}

/// Text `i` of the request: a string, or `{ "text": …, "id": … }`.
fn text_of(i: usize, v: serde_json::Value) -> Result<Text, ApiError> {
    let bad = |why: &str| ApiError::invalid(format!("texts[{i}]"), format!("texts[{i}] {why}"));
    match v {
        serde_json::Value::String(text) => Ok(Text { id: None, text }),
        serde_json::Value::Object(mut o) => {
            if let Some(k) = o.keys().find(|k| *k != "text" && *k != "id") {
                return Err(bad(&format!("has `{k}`; a text object has `text` and an optional `id`")));
            }
            let Some(serde_json::Value::String(text)) = o.remove("text") else {
                return Err(bad("needs `text`, a string"));
            };
            let id = match o.remove("id") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(s)) => Some(s),
                Some(other) => Some(other.to_string()),
            };
            Ok(Text { id, text })
        }
        _ => Err(bad("must be a string or an object with `text`")),
    }
}

/// GET /v1/models's answer (the shape of OpenAI's list).
#[derive(Serialize, ToSchema)]
struct ModelList {
    /// Always `list`.
    object: String,
    data: Vec<ModelEntry>,
}

/// The model this server decides with.
#[derive(Serialize, ToSchema)]
struct ModelEntry {
    /// The model's name.
    id: String,
    /// Always `model`.
    object: String,
    owned_by: String,
    architecture: String,
    quantisation: String,
    parameters: u64,
    context_length: usize,
    device: String,
    chat_template: String,
}

#[utoipa::path(get, path = "/v1/models", responses((status = 200, body = ModelList), (status = 401, body = ErrorBody)), security(("bearer" = [])))]
async fn models(State(s): State<Arc<AppState>>) -> Json<ModelList> {
    let i = s.engine.info();
    let arch = serde_json::to_value(i.architecture).ok().and_then(|v| v.as_str().map(String::from));
    Json(ModelList {
        object: "list".into(),
        data: vec![ModelEntry {
            id: i.name.clone(),
            object: "model".into(),
            owned_by: "readout".into(),
            architecture: arch.unwrap_or_else(|| format!("{:?}", i.architecture)),
            quantisation: i.quantisation.clone(),
            parameters: i.parameters,
            context_length: i.config.context_length,
            device: i.device.clone(),
            chat_template: i.chat_template.clone(),
        }],
    })
}

/// GET /health's answer.
#[derive(Serialize, ToSchema)]
struct Health {
    /// `ok` while the server takes requests.
    status: String,
    model: String,
    /// Requests waiting for the model.
    queued: usize,
    /// Score requests being handled.
    in_flight: usize,
}

#[utoipa::path(get, path = "/health", responses((status = 200, body = Health)))]
async fn health(State(s): State<Arc<AppState>>) -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        model: s.engine.info().name.clone(),
        queued: s.queued.load(Ordering::SeqCst),
        in_flight: s.in_flight.load(Ordering::SeqCst),
    })
}

#[utoipa::path(get, path = "/openapi.json", responses((status = 200, description = "this document")))]
async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

/// The bearer scheme the keyed endpoints name.
struct Bearer;

impl utoipa::Modify for Bearer {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Readout", description = "Decide rubric criteria with a small local language model by reading the logits of the answer letters."),
    paths(score, models, health, openapi_json),
    components(schemas(ScoreRequest, TextIn, ScoreResponse, TextResult, CriterionResult, OptionResult, ErrorBody, ErrorDetail, ModelList, ModelEntry, Health)),
    modifiers(&Bearer)
)]
struct ApiDoc;
