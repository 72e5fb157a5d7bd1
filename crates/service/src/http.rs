//! The HTTP API: `POST /v1/score` (the library's [`ScoreRequest`] as JSON, answered with what
//! `readout score --json` prints for its texts), `GET /v1/models`, `GET /health` and
//! `GET /openapi.json`, with the bearer key, the limits, the bounded [`Queue`] and a graceful
//! shutdown. Every status and error body is here; what is scored is the library's.

use crate::queue::{Failed, Queue, Refused};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use readout::engine::Engine;
use readout::jobs::request::{field_of, Policy, ScoreRequest, TextIn};
use readout::jobs::score::{CriterionResult, OptionResult, Text, TextResult};
use readout::jobs::systemone::ALIAS;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
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
    /// How long a client may take to send a request's headers (slower: the connection is closed;
    /// also how long an idle connection is kept), and again its body (slower: 408).
    pub read_timeout: Duration,
    /// Connections open at once (more wait to be taken).
    pub max_connections: usize,
    /// After SIGINT or SIGTERM, how long bodies still arriving are waited for; then they are cut
    /// (503) and connections with no request being handled are closed.
    pub shutdown_grace: Duration,
    /// The debias mode of a System One request that names none (`x_debias`).
    pub debias: readout::debias::DebiasMode,
}

/// What the handlers share.
pub(crate) struct AppState {
    pub(crate) engine: Arc<Engine>,
    pub(crate) options: Options,
    pub(crate) queue: Queue,
    /// Requests being handled (read, queued or read by the model).
    pub(crate) in_flight: AtomicUsize,
    /// The address served on, which a keyless server's clients must name in `Host`.
    pub(crate) bound: SocketAddr,
    /// How bodies are read.
    pub(crate) reading: Reading,
}

/// Where the server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    Serving,
    /// SIGINT or SIGTERM: no new connections, idle ones closed, requests going on.
    Draining,
    /// The grace is over: bodies still arriving are cut, connections with no request being
    /// handled closed.
    Closing,
}

/// How request bodies are read ([`read_body`]): each within `timeout`, none past the shutdown's
/// grace.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    pub(crate) timeout: Duration,
    pub(crate) phase: watch::Receiver<Phase>,
}

/// The keyed routes: `POST /v1/score` and `GET /v1/models`.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/v1/score", post(score)).route("/v1/models", get(models))
}

/// The routes open without the key: `GET /health`.
pub(crate) fn open_routes() -> Router<Arc<AppState>> {
    Router::new().route("/health", get(health))
}

/// The connections' limits, from [`Options`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max: usize,
    pub(crate) read_timeout: Duration,
    pub(crate) grace: Duration,
}

/// Take HTTP/1 connections, at most `limits.max` open at once (more wait in the listen queue),
/// each closed when its client takes longer than `limits.read_timeout` to send a request's
/// headers, until SIGINT or SIGTERM. Then take no more, close the idle ones and let the requests
/// being read or computed go on; `limits.grace` later, cut the bodies still arriving (503, in
/// [`read_body`]) and close the connections with no request being handled, so that no stalled
/// client keeps the server from stopping. Return once every connection is closed.
pub(crate) async fn accept(listener: TcpListener, app: Router, stop: watch::Sender<Phase>, limits: Limits) {
    let permits = u32::try_from(limits.max.clamp(1, Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
    let slots = Arc::new(Semaphore::new(permits as usize));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.read_timeout);
    let signal = shutdown_signal();
    tokio::pin!(signal);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut signal => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, most likely: wait for some to be closed.
                    tracing::warn!(error = %e, "accepting a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        tokio::spawn(connection(stream, http.clone(), app.clone(), stop.subscribe(), limits.grace, slot));
    }
    drop(listener);
    stop.send_replace(Phase::Draining);
    // Every connection holds a slot until it is closed.
    tokio::select! {
        _ = slots.acquire_many(permits) => return,
        () = tokio::time::sleep(limits.grace) => {}
    }
    stop.send_replace(Phase::Closing);
    let _ = slots.acquire_many(permits).await;
}

/// Serve one connection until it closes, or until the shutdown closes it ([`accept`]).
async fn connection(
    stream: TcpStream,
    http: http1::Builder,
    app: Router,
    mut phase: watch::Receiver<Phase>,
    grace: Duration,
    _slot: OwnedSemaphorePermit,
) {
    // The requests being handled on this connection: counted from their head to their answer.
    let (handling, mut handled) = watch::channel(0usize);
    let handling = Arc::new(handling);
    let router = TowerToHyperService::new(app);
    let service = hyper::service::service_fn(move |req| {
        let counted = Handling::start(handling.clone());
        let answer = hyper::service::Service::call(&router, req);
        async move {
            let answer = answer.await;
            drop(counted);
            answer
        }
    });
    let conn = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let ended = |r: hyper::Result<()>| {
        if let Err(e) = r {
            tracing::debug!(error = %e, "connection ended");
        }
    };
    tokio::select! {
        r = conn.as_mut() => return ended(r),
        () = reached(&mut phase, Phase::Draining) => conn.as_mut().graceful_shutdown(),
    }
    tokio::select! {
        r = conn.as_mut() => return ended(r),
        () = reached(&mut phase, Phase::Closing) => {}
    }
    // Past the grace, a request still handled is being computed (a body still arriving was cut):
    // it is finished, and its answer given the grace again to be sent.
    let busy = *handled.borrow() > 0;
    if busy {
        let answered = async {
            let _ = handled.wait_for(|n| *n == 0).await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            r = conn.as_mut() => return ended(r),
            () = answered => {}
        }
    }
    tracing::info!("closing a stalled connection at shutdown");
}

/// Wait until the server's phase is `at` or later.
async fn reached(phase: &mut watch::Receiver<Phase>, at: Phase) {
    let _ = phase.wait_for(|p| *p >= at).await;
}

/// A request being handled on a connection, counted until its answer is made.
struct Handling(Arc<watch::Sender<usize>>);

impl Handling {
    fn start(count: Arc<watch::Sender<usize>>) -> Handling {
        count.send_modify(|n| *n += 1);
        Handling(count)
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// SIGINT (Ctrl-C) or SIGTERM: stop taking connections, finish the requests in flight ([`accept`]).
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
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) body: ErrorDetail,
    pub(crate) retry_after: Option<u64>,
}

/// An error's body.
#[derive(Debug, Serialize, ToSchema)]
struct ErrorBody {
    error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    /// unauthorized, wrong_host, unsupported_media_type, bad_body, request_timeout,
    /// body_too_large, invalid_request, text_too_long, queue_full, timeout, not_found,
    /// shutting_down or internal.
    pub(crate) kind: String,
    pub(crate) message: String,
    /// The request field at fault (`texts[3]`, `rubric.questions.topic.type`), where one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) field: Option<String>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, kind: &str, message: impl Into<String>) -> ApiError {
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

    /// The queue did not take the request.
    pub(crate) fn refused(e: Refused) -> ApiError {
        match e {
            Refused::Full { retry_after_s } => {
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "queue_full",
                    "the queue is full (--queue); try again after Retry-After seconds",
                );
                e.retry_after = Some(retry_after_s);
                e
            }
            Refused::Closed => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the server is stopping")
            }
        }
    }

    /// The queue's answer was not one.
    pub(crate) fn failed(e: Failed) -> ApiError {
        match e {
            Failed::Request(e) => ApiError::from_library(e),
            Failed::Batch(msg) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", msg),
            Failed::Dropped => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the scheduler dropped the request")
            }
        }
    }

    /// Not answered within `--timeout-s`.
    pub(crate) fn timeout(t: Duration) -> ApiError {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!("not decided within {:.1} s (--timeout-s)", t.as_secs_f64()),
        )
    }

    pub(crate) fn from_library(e: readout::Error) -> ApiError {
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

/// The bearer key (the scheme's name in any case, as RFC 9110 has it), compared in constant time.
pub(crate) async fn auth(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = &s.options.key {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim_start().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, key)| key.trim());
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

/// Without a key, a request must name this server in `Host`: a page in a browser whose own name
/// was made to resolve to this machine (DNS rebinding) sends that name, so it cannot drive a
/// keyless server on loopback. With a key, the key is the check.
pub(crate) async fn check_host(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if s.options.key.is_none() {
        let host = req.headers().get(header::HOST).and_then(|v| v.to_str().ok());
        let host = host.or_else(|| req.uri().authority().map(|a| a.as_str()));
        if !host.is_some_and(|h| names_server(h, s.bound)) {
            let port = s.bound.port();
            let message = format!(
                "`Host: {}` does not name this server: a server without --api-key-file answers only requests to \
                 {}, localhost:{port}, 127.0.0.1:{port} or [::1]:{port}",
                host.unwrap_or(""),
                s.bound
            );
            return ApiError::new(StatusCode::MISDIRECTED_REQUEST, "wrong_host", message).into_response();
        }
    }
    next.run(req).await
}

/// Whether `host` (a `Host` header: `name`, `name:port` or `[v6]:port`) names the server bound at
/// `bound`: `localhost`, a loopback address or the bound one (any address when bound to all),
/// with the bound port. An address, unlike a name, cannot be a page's own.
fn names_server(host: &str, bound: SocketAddr) -> bool {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((ip, "")) => (ip, None),
            Some((ip, port)) => match port.strip_prefix(':') {
                Some(port) => (ip, Some(port)),
                None => return false,
            },
            None => return false,
        },
        None => match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    // No port: HTTP's own, 80.
    let port = port.map_or(Some(80), |p| p.parse::<u16>().ok());
    if port != Some(bound.port()) {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback() || ip == bound.ip() || bound.ip().is_unspecified())
}

/// A line per request: method, path, status, time.
pub(crate) async fn log(req: Request, next: Next) -> Response {
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
        (status = 400, description = "the body was cut or malformed (chunked encoding)", body = ErrorBody),
        (status = 401, description = "no key or a wrong one", body = ErrorBody),
        (status = 408, description = "the body did not arrive within --read-timeout-s", body = ErrorBody),
        (status = 413, description = "the body is larger than --max-body-bytes", body = ErrorBody),
        (status = 415, description = "the body is not sent as `Content-Type: application/json`", body = ErrorBody),
        (status = 421, description = "without a key: `Host` does not name this server", body = ErrorBody),
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
    let bytes = read_body(&headers, body, s.options.max_body_bytes, &s.reading).await?;
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
    let pending = s.queue.submit(crate::queue::Job::Score(Box::new(job))).map_err(ApiError::refused)?;
    // Dropped when the time runs out: the request is then not read if it has not started.
    match tokio::time::timeout_at(deadline.into(), pending.scored()).await {
        Ok(Ok(results)) => {
            debug_assert_eq!(results.len(), n);
            Ok(Json(ScoreResponse { results }))
        }
        Ok(Err(e)) => Err(ApiError::failed(e)),
        Err(_) => Err(ApiError::timeout(s.options.timeout)),
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

/// Counts a request in flight until it is answered.
pub(crate) struct InFlight<'a>(pub(crate) &'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The body: JSON (`Content-Type: application/json`, else 415), at most `max` bytes (more: 413,
/// before reading it when its length is declared), whole (cut or malformed: 400), arrived within
/// `reading`'s timeout (slower: 408) and before the shutdown's grace is over (else 503).
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    max: usize,
    reading: &Reading,
) -> Result<axum::body::Bytes, ApiError> {
    check_json(headers)?;
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
    let mut phase = reading.phase.clone();
    tokio::select! {
        read = tokio::time::timeout(reading.timeout, axum::body::to_bytes(body, max)) => match read {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(e)) if std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>()) => {
                Err(too_large("more than that".into()))
            }
            Ok(Err(e)) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_body",
                format!("the body could not be read ({e}): send it whole, with a right Content-Length or chunked encoding"),
            )),
            Err(_) => Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!("the body did not arrive within {:.1} s (--read-timeout-s)", reading.timeout.as_secs_f64()),
            )),
        },
        () = reached(&mut phase, Phase::Closing) => {
            Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the server is stopping and the body had not arrived"))
        }
    }
}

/// A body must be JSON, sent as `application/json` (UTF-8, if a charset is named): a page in a
/// browser may POST a form or `text/plain` anywhere without asking, but not JSON.
fn check_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let given = headers.get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or("(not text)"));
    let mut parts = given.unwrap_or_default().split(';').map(str::trim);
    let json = parts.next().is_some_and(|m| m.eq_ignore_ascii_case("application/json"));
    let utf8 = parts.all(|p| match p.split_once('=') {
        Some((k, v)) if k.trim().eq_ignore_ascii_case("charset") => {
            let v = v.trim().trim_matches('"');
            v.eq_ignore_ascii_case("utf-8") || v.eq_ignore_ascii_case("utf8")
        }
        _ => true,
    });
    if json && utf8 {
        return Ok(());
    }
    let sent = given.map_or("no Content-Type".to_string(), |g| format!("`Content-Type: {g}`"));
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!("the body must be JSON, sent with `Content-Type: application/json`, not {sent}"),
    ))
}

/// GET /v1/models's answer: OpenAI's list (`object`, `data`) and TypeSafe's (`models`) in one body.
#[derive(Serialize, ToSchema)]
struct ModelList {
    /// Always `list`.
    object: String,
    data: Vec<ModelEntry>,
    /// TypeSafe's list: the names a System One request may give as `model`.
    models: Vec<ModelMetadata>,
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
        models: models_of(&s),
    })
}

/// TypeSafe's entry of `GET /v1/models`: the model under its own name, and the alias.
#[derive(Serialize, ToSchema)]
struct ModelMetadata {
    name: String,
    description: String,
    /// The model file's date (its modification day, UTC), `YYYY-MM-DD`.
    release_date: String,
}

/// The models a System One client may name: the model, and [`ALIAS`] for it.
fn models_of(s: &AppState) -> Vec<ModelMetadata> {
    let info = s.engine.info();
    let date = std::fs::metadata(&info.path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or_else(|| "1970-01-01".to_string(), |d| civil_date(d.as_secs() / 86_400));
    let what = format!(
        "{} ({}, {}) read by Readout: calibrated letter probabilities, order debiasing (x_debias)",
        info.name, info.quantisation, info.device
    );
    vec![
        ModelMetadata { name: info.name.clone(), description: what.clone(), release_date: date.clone() },
        ModelMetadata { name: ALIAS.into(), description: format!("alias of {}", info.name), release_date: date },
    ]
}

/// `YYYY-MM-DD` of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// GET /health's answer.
#[derive(Serialize, ToSchema)]
struct Health {
    /// `ok` while the server takes requests.
    status: String,
    model: String,
    /// Requests waiting for the model.
    queued: usize,
    /// Requests being handled (scores and completions).
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
    paths(score, models, health),
    components(schemas(ScoreRequest, TextIn, ScoreResponse, TextResult, CriterionResult, OptionResult, ErrorBody, ErrorDetail, ModelList, ModelEntry, ModelMetadata, Health)),
    modifiers(&Bearer)
)]
pub(crate) struct ApiDoc;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        // 2026-12-07 is day 20,794: 56 years of 365 days, 14 leap days, then 334 + 6.
        assert_eq!(civil_date(20_794), "2026-12-07");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }

    #[test]
    fn a_keyless_server_answers_only_requests_naming_it() {
        let loopback: SocketAddr = "127.0.0.1:8321".parse().unwrap();
        for host in ["127.0.0.1:8321", "localhost:8321", "LocalHost:8321", "[::1]:8321", "127.0.0.2:8321"] {
            assert!(names_server(host, loopback), "{host}");
        }
        for host in [
            "evil.example:8321",
            "localhost:8322",
            "localhost",
            "127.0.0.1",
            "10.0.0.2:8321",
            "[::1]",
            "[::1]x",
            "",
            "localhost:",
        ] {
            assert!(!names_server(host, loopback), "{host}");
        }
        let all: SocketAddr = "0.0.0.0:80".parse().unwrap();
        for host in ["10.0.0.2", "10.0.0.2:80", "[fe80::1]:80", "localhost"] {
            assert!(names_server(host, all), "{host}");
        }
        assert!(!names_server("judge.example", all));
        let lan: SocketAddr = "192.168.1.5:8321".parse().unwrap();
        assert!(names_server("192.168.1.5:8321", lan) && !names_server("192.168.1.6:8321", lan));
    }

    #[test]
    fn a_body_is_json_in_utf8() {
        let with = |ct: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(ct) = ct {
                h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            }
            check_json(&h).map_err(|e| (e.status, e.body.kind))
        };
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            assert!(with(Some(ok)).is_ok(), "{ok}");
        }
        for bad in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("application/json; charset=latin1"),
            Some("application/jsonx"),
        ] {
            assert_eq!(
                with(bad),
                Err((StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type".to_string())),
                "{bad:?}"
            );
        }
    }
}
