//! The HTTP API: `POST /v1/score` (the library's [`ScoreRequest`] as JSON, answered with what
//! `readout score --json` prints for its texts), `GET /v1/models`, `GET /health` and
//! `GET /openapi.json`, with the bearer key, the limits, the bounded [`Queue`] and a graceful
//! shutdown. Every status and error body is here; what is scored is the library's.

use crate::queue::{Failed, Queue, Refused};
use crate::Error;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use readout::engine::Engine;
use readout::jobs::request::{field_of, Policy, ScoreRequest, TextIn};
use readout::jobs::score::{CriterionResult, OptionResult, Text, TextResult};
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use utoipa::{OpenApi, ToSchema};

/// The service's limits and key.
#[derive(Debug, Clone)]
pub struct Options {
    /// The key clients must send as `Authorization: Bearer KEY`; `None`: no key asked.
    pub key: Option<String>,
    /// Largest request body in bytes (larger: 413).
    pub max_body_bytes: usize,
    /// Most texts in one request (more: 422).
    pub max_texts: usize,
    /// Most tokens in one text (more: 422 naming the text and its count).
    pub max_text_tokens: usize,
    /// How long a request may take, its wait in the queue included (longer: 504).
    pub timeout: Duration,
    /// Requests that may wait for the model at once (more: 503 with Retry-After).
    pub queue: usize,
}

/// What the handlers share.
struct AppState {
    engine: Arc<Engine>,
    options: Options,
    queue: Queue,
    /// Score requests being handled (read, queued or read by the model).
    in_flight: AtomicUsize,
}

/// Serve `engine` on `addr` until SIGINT or SIGTERM, then finish the requests in flight.
/// `listening` is told the bound address (a port of 0 picks a free one) once requests are taken.
pub fn serve(
    engine: Arc<Engine>,
    addr: SocketAddr,
    options: Options,
    listening: impl FnOnce(SocketAddr),
) -> crate::Result<()> {
    let (queue, thread) =
        Queue::start(engine.clone(), options.queue).map_err(|err| Error::Start { what: "queue", err })?;
    let state = Arc::new(AppState { engine, options, queue, in_flight: AtomicUsize::new(0) });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| Error::Start { what: "async runtime", err })?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|err| Error::Listen { addr, err })?;
        let bound = listener.local_addr().map_err(|err| Error::Listen { addr, err })?;
        listening(bound);
        axum::serve(listener, router(state))
            .with_graceful_shutdown(shutdown_signal())
            .await
            .map_err(|e| Error::Serve(e.to_string()))
    })?;
    // Every request in flight has had its answer; the senders are gone, so the queue ends.
    drop(rt);
    thread.join().map_err(|_| Error::Serve("the queue's thread panicked".into()))
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
    tracing::info!("shutting down after the requests in flight");
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
                // The library gives the facts; the advice is this shell's, in its request's words.
                let message = match &e {
                    E::PromptTooLong { cut_helps: true, .. } => {
                        format!("{e}: shorten the text, or send \"truncate_middle\": true to cut it from the middle")
                    }
                    E::PromptTooLong { .. } => {
                        format!("{e}: without the text the prompt still does not fit; shorten the rubric's questions or use a model with a longer context")
                    }
                    _ => e.to_string(),
                };
                let mut a = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "text_too_long", message);
                a.body.field = Some("texts".into());
                a
            }
            E::Request { .. } | E::BadInput { .. } if field_of(&e).is_some() => {
                ApiError::invalid(field_of(&e).unwrap_or_default(), e.to_string())
            }
            E::Config(_) | E::BadInput { .. } | E::Request { .. } => {
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
    if let Some(key) = &s.options.key {
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
    let deadline = Instant::now() + s.options.timeout;
    s.in_flight.fetch_add(1, Ordering::SeqCst);
    let _counted = InFlight(&s.in_flight);
    let bytes = read_body(&headers, body, s.options.max_body_bytes).await?;
    let policy = Policy { paths: false, max_texts: Some(s.options.max_texts) };
    let job = ScoreRequest::from_json(&bytes).and_then(|r| r.validate(policy)).map_err(ApiError::from_library)?;
    // Counted off the async threads: a megabyte of text takes a while to tokenize.
    let (engine, max) = (s.engine.clone(), s.options.max_text_tokens);
    let job = tokio::task::spawn_blocking(move || -> Result<_, ApiError> {
        check_lengths(&engine, &job.texts, max)?;
        Ok(job)
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))??;
    let n = job.texts.len();
    let pending = s.queue.submit(job).map_err(|e| match e {
        Refused::Full { retry_after_s } => {
            let mut e = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "queue_full",
                "the queue is full (--queue); try again after Retry-After seconds",
            );
            e.retry_after = Some(retry_after_s);
            e
        }
        Refused::Closed => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the server is stopping"),
    })?;
    // Dropped when the time runs out: the request is then not read if it has not started.
    match tokio::time::timeout_at(deadline.into(), pending.answer()).await {
        Ok(Ok(results)) => {
            debug_assert_eq!(results.len(), n);
            Ok(Json(ScoreResponse { results }))
        }
        Ok(Err(Failed::Request(e))) => Err(ApiError::from_library(e)),
        Ok(Err(Failed::Batch(msg))) => Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", msg)),
        Ok(Err(Failed::Dropped)) => {
            Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the scheduler dropped the request"))
        }
        Err(_) => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!("not decided within {:.1} s (--timeout-s)", s.options.timeout.as_secs_f64()),
        )),
    }
}

/// Every text at most `max` tokens (`--max-text-tokens`).
fn check_lengths(engine: &Engine, texts: &[Text], max: usize) -> Result<(), ApiError> {
    for (i, t) in texts.iter().enumerate() {
        let n = engine.tokenizer().encode(&t.text).map_err(ApiError::from_library)?.len();
        if n > max {
            return Err(ApiError::invalid(
                format!("texts[{i}]"),
                format!("texts[{i}] has {n} tokens; this server takes at most {max} per text (--max-text-tokens)"),
            ));
        }
    }
    Ok(())
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
        queued: s.queue.waiting(),
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
