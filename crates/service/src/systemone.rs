//! TypeSafe's System One API on Readout's queue: `POST /v1/systemone` (the library's
//! [`SystemOneRequest`], answered as TypeSafe's schema has it), the `models` list that
//! `GET /v1/models` adds beside OpenAI's, and TypeSafe's error shapes on that path — 422
//! `{"detail": [{"loc", "msg", "type"}]}` for a wrong body, `{"detail": {"error_type",
//! "message"}}` for everything else — with the `x-typesafe-request-id` header on every answer.
//! Bodies may come `Content-Encoding: zstd` (the official SDK compresses bodies of 1 KiB and
//! more); what they inflate to is held to `--max-body-bytes` as it is read.

use crate::http::{read_body, ApiError, AppState, InFlight};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use readout::config::RunConfig;
use readout::jobs::systemone::{SystemOneRequest, Usage, ALIAS};
use readout::{Error, Invalid, Loc};
use serde::Serialize;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The endpoint's path.
pub(crate) const PATH: &str = "/v1/systemone";
/// The header naming each answer, as TypeSafe's servers send it.
const REQUEST_ID: &str = "x-typesafe-request-id";

/// The keyed route: `POST /v1/systemone`.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route(PATH, post(systemone))
}

/// TypeSafe's error body for anything but a wrong request body.
#[derive(Serialize)]
struct ErrorBody {
    detail: ErrorDetail,
}

#[derive(Serialize)]
struct ErrorDetail {
    error_type: String,
    message: String,
}

/// TypeSafe's 422 body.
#[derive(Serialize)]
struct ValidationBody {
    detail: Vec<Invalid>,
}

fn validation(errors: Vec<Invalid>) -> Response {
    (StatusCode::UNPROCESSABLE_ENTITY, Json(ValidationBody { detail: errors })).into_response()
}

fn one_invalid(loc: &[&str], msg: impl Into<String>, kind: &str) -> Response {
    let loc = loc.iter().map(|k| Loc::Key(k.to_string())).collect();
    validation(vec![Invalid { loc, msg: msg.into(), kind: kind.into() }])
}

/// TypeSafe's `error_type` for one of the service's own error kinds.
fn error_type(kind: &str, status: StatusCode) -> &'static str {
    match kind {
        "unauthorized" => "authentication_error",
        "queue_full" => "overloaded_error",
        "shutting_down" => "overloaded_error",
        "timeout" => "timeout_error",
        "body_too_large" => "request_too_large",
        "not_found" => "not_found_error",
        _ if status.is_server_error() => "api_error",
        _ => "invalid_request_error",
    }
}

/// On the System One path, every answer gets a request id, and an error in the service's own
/// shape (`{"error": {"kind", "message"}}`: the key, `Host`, the body's limits, the queue) is
/// given in TypeSafe's, with its status and headers (`Retry-After`) kept.
pub(crate) async fn typesafe_errors(req: Request, next: Next) -> Response {
    if req.uri().path() != PATH {
        return next.run(req).await;
    }
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let id = format!("req_{:x}{:04x}", nanos & 0xffff_ffff_ffff, SEQ.fetch_add(1, Ordering::Relaxed) & 0xffff);
    let r = next.run(req).await;
    let status = r.status();
    let (mut parts, body) = if status.is_success() || status == StatusCode::UNPROCESSABLE_ENTITY {
        r.into_parts()
    } else {
        let (parts, body) = r.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
        let own = serde_json::from_slice::<serde_json::Value>(&bytes).ok();
        let detail = own.as_ref().and_then(|v| v.get("error")).map(|e| {
            let kind = e.get("kind").and_then(|k| k.as_str()).unwrap_or("");
            let message = e.get("message").and_then(|m| m.as_str()).unwrap_or("").to_string();
            ErrorDetail { error_type: error_type(kind, status).into(), message }
        });
        match detail {
            Some(detail) => {
                let mut fresh = (status, Json(ErrorBody { detail })).into_response();
                for (name, value) in parts.headers.iter() {
                    if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
                        fresh.headers_mut().insert(name.clone(), value.clone());
                    }
                }
                fresh.into_parts()
            }
            None => (parts, Body::from(bytes)),
        }
    };
    if let Ok(v) = HeaderValue::from_str(&id) {
        parts.headers.insert(REQUEST_ID, v);
    }
    Response::from_parts(parts, body)
}

/// The body, inflated where it came `Content-Encoding: zstd`: read as [`read_body`] reads any
/// body, then inflated up to `max` bytes — a body that would inflate past it is refused (413)
/// without inflating the rest, one that is cut or not zstd is refused (400).
async fn body_of(s: &AppState, headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let max = s.options.max_body_bytes;
    let raw = read_body(headers, body, max, &s.reading).await?;
    let encoding =
        headers.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("(not text)").trim().to_ascii_lowercase());
    match encoding.as_deref() {
        None | Some("") | Some("identity") => Ok(raw),
        Some("zstd") => inflate(&raw, max),
        Some(other) => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("`Content-Encoding: {other}` is not taken; send the body as it is or compressed with zstd"),
        )),
    }
}

/// A zstd frame inflated to at most `max` bytes.
fn inflate(raw: &[u8], max: usize) -> Result<Bytes, ApiError> {
    let bad = |e: String| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_body",
            format!("the body is sent as `Content-Encoding: zstd` but is not a whole zstd frame ({e})"),
        )
    };
    let decoder = ruzstd::decoding::StreamingDecoder::new(raw).map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::new();
    decoder.take(max as u64 + 1).read_to_end(&mut out).map_err(|e| bad(e.to_string()))?;
    if out.len() > max {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the body inflates to more than {max} bytes; this server takes at most {max} (--max-body-bytes)"),
        ));
    }
    Ok(Bytes::from(out))
}

/// Whether `name` names the model this server decides with: TypeSafe's alias, the model's name,
/// or its file's name with or without the extension.
fn names_model(s: &AppState, name: &str) -> bool {
    let info = s.engine.info();
    let file = info.path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let stem = info.path.file_stem().and_then(|f| f.to_str()).unwrap_or("");
    [ALIAS, info.name.as_str(), file, stem].iter().any(|n| !n.is_empty() && *n == name)
}

#[utoipa::path(
    post,
    path = "/v1/systemone",
    request_body(content = Object, description = "TypeSafe's SystemOneRequest: `model`, `state` (a string, an object or an array), `questions` (id → `choice`, `noul` or `score` question); `x_debias` picks the debias mode"),
    responses(
        (status = 200, description = "TypeSafe's SystemOneResponse: `model`, `answers` (id → answer), `usage`, and `x_debias`"),
        (status = 401, description = "no key or a wrong one: `{\"detail\": {\"error_type\": \"authentication_error\", \"message\"}}`"),
        (status = 404, description = "a model this server does not serve"),
        (status = 413, description = "the body, or what it inflates to, is larger than --max-body-bytes"),
        (status = 415, description = "not `application/json`, or a `Content-Encoding` other than zstd"),
        (status = 422, description = "a wrong field: `{\"detail\": [{\"loc\": [\"body\", …], \"msg\", \"type\"}]}`"),
        (status = 503, description = "the queue is full; try again after Retry-After seconds"),
        (status = 504, description = "not decided within --timeout-s"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn systemone(State(s): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    match decide(&s, &headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn decide(s: &Arc<AppState>, headers: &HeaderMap, body: Body) -> Result<Response, ApiError> {
    let deadline = Instant::now() + s.options.timeout;
    s.in_flight.fetch_add(1, Ordering::SeqCst);
    let _counted = InFlight(&s.in_flight);
    let bytes = body_of(s, headers, body).await?;
    let request = match SystemOneRequest::from_json(&bytes) {
        Ok(r) => r,
        Err(Error::Invalid(errors)) => return Ok(validation(errors)),
        Err(e) => return Err(ApiError::from_library(e)),
    };
    if !names_model(s, &request.model) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!(
                "this server decides with `{}` (also named `{ALIAS}`), not `{}`; see GET /v1/models",
                s.engine.info().name,
                request.model
            ),
        ));
    }
    // Counted off the async threads: a long state takes a while to tokenize.
    let (engine, max) = (s.engine.clone(), s.options.max_text_tokens);
    let counted = tokio::task::spawn_blocking(move || -> Result<_, Box<Response>> {
        let refused = |e| Box::new(ApiError::from_library(e).into_response());
        let n = engine.tokenizer().encode(&request.state).map_err(refused)?.len();
        if n > max {
            return Err(Box::new(one_invalid(
                &["body", "state"],
                format!("the state has {n} tokens; this server takes at most {max} (--max-text-tokens)"),
                "too_long",
            )));
        }
        // A decision model counts its own prompts as it reads them.
        if engine.info().decision.is_some() {
            return Ok((request, Usage { input_tokens: 0, output_tokens: 0 }));
        }
        let input_tokens = request.input_tokens(&engine).map_err(refused)?;
        let usage = Usage { input_tokens, output_tokens: 0 };
        Ok((request, usage))
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    let (request, usage) = match counted {
        Ok(c) => c,
        Err(refused) => return Ok(*refused),
    };
    if s.engine.info().decision.is_some() {
        // A decision model: asked by its own contract, one request at a time.
        let pending = s
            .queue
            .submit(crate::queue::Job::Decide(Box::new(request), s.options.debias))
            .map_err(ApiError::refused)?;
        return match tokio::time::timeout_at(deadline.into(), pending.decided()).await {
            Ok(Ok(response)) => Ok(Json(response).into_response()),
            Ok(Err(e)) => Err(ApiError::failed(e)),
            Err(_) => Err(ApiError::timeout(s.options.timeout)),
        };
    }
    let config = RunConfig::builder().build().map_err(ApiError::from_library)?;
    let job = request.job(config, s.options.debias).map_err(ApiError::from_library)?;
    let debias = job.config.debias;
    let pending = s.queue.submit(crate::queue::Job::Score(Box::new(job))).map_err(ApiError::refused)?;
    let results = match tokio::time::timeout_at(deadline.into(), pending.scored()).await {
        Ok(Ok(results)) => results,
        Ok(Err(e)) => return Err(ApiError::failed(e)),
        Err(_) => return Err(ApiError::timeout(s.options.timeout)),
    };
    let Some(result) = results.first() else {
        return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the state was not decided"));
    };
    let response = request.response(&s.engine.info().name, result, usage, debias);
    Ok(Json(response).into_response())
}

/// The System One path of the OpenAPI document, merged with the others by the server.
#[derive(utoipa::OpenApi)]
#[openapi(paths(systemone))]
pub(crate) struct SystemOneDoc;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zstd_body_inflates_within_the_limit() {
        let frame = |n: usize| {
            let data = vec![b'a'; n];
            ruzstd::encoding::compress_to_vec(&data[..], ruzstd::encoding::CompressionLevel::Fastest)
        };
        assert_eq!(inflate(&frame(1000), 1000).map(|b| b.len()).ok(), Some(1000));
        let big = frame(10_000_000);
        assert!(big.len() < 10_000);
        let e = inflate(&big, 1000).unwrap_err();
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        let whole = frame(1000);
        let e = inflate(&whole[..whole.len() / 2], 1000).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(inflate(b"not zstd", 1000).unwrap_err().status, StatusCode::BAD_REQUEST);
    }
}
