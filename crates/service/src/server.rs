//! The server: the HTTP API ([`crate::http`]) and the OpenAI-compatible API ([`crate::openai`])
//! on one router, one queue and one listener, with one OpenAPI document for both. It sits above
//! both so that neither knows the other: each brings its routes, this joins them.

use crate::http::{self, accept, ApiDoc, ApiError, AppState, Limits, Options, Phase, Reading};
use crate::openai;
use crate::queue::Queue;
use crate::systemone;
use crate::Error;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use readout::engine::Engine;
use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use utoipa::OpenApi;

/// Serve `engine` on `addr` until SIGINT or SIGTERM, then finish the requests in flight (see
/// [`accept`]). `listening` is told the bound address (a port of 0 picks a free one) once
/// requests are taken.
pub fn serve(
    engine: Arc<Engine>,
    addr: SocketAddr,
    options: Options,
    listening: impl FnOnce(SocketAddr),
) -> crate::Result<()> {
    let (queue, thread) =
        Queue::start(engine.clone(), options.queue).map_err(|err| Error::Start { what: "queue", err })?;
    // Bound before the state is made: a keyless server checks `Host` against the address.
    let listener = std::net::TcpListener::bind(addr).map_err(|err| Error::Listen { addr, err })?;
    let bound = listener.local_addr().map_err(|err| Error::Listen { addr, err })?;
    listener.set_nonblocking(true).map_err(|err| Error::Listen { addr, err })?;
    let (stop, phase) = watch::channel(Phase::Serving);
    let reading = Reading { timeout: options.read_timeout, phase };
    let limits =
        Limits { max: options.max_connections, read_timeout: options.read_timeout, grace: options.shutdown_grace };
    let state = Arc::new(AppState { engine, options, queue, in_flight: AtomicUsize::new(0), bound, reading });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| Error::Start { what: "async runtime", err })?;
    rt.block_on(async move {
        let listener = TcpListener::from_std(listener).map_err(|err| Error::Listen { addr, err })?;
        listening(bound);
        accept(listener, router(state), stop, limits).await;
        Ok::<(), Error>(())
    })?;
    // Every request in flight has had its answer; the senders are gone, so the queue ends.
    drop(rt);
    thread.join().map_err(|_| Error::Serve("the queue's thread panicked".into()))
}

fn router(state: Arc<AppState>) -> Router {
    let keyed = Router::new()
        .merge(http::routes())
        .merge(openai::routes())
        .merge(systemone::routes())
        .route_layer(middleware::from_fn_with_state(state.clone(), http::auth));
    Router::new()
        .merge(keyed)
        .merge(http::open_routes())
        .route("/openapi.json", get(openapi_json))
        .fallback(|uri: axum::http::Uri| async move {
            // OpenAI's clients read OpenAI's error shape (the Responses API's, say).
            match uri.path().starts_with("/v1/") {
                true => openai::not_found(uri.path()).into_response(),
                false => ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint; see GET /openapi.json")
                    .into_response(),
            }
        })
        .layer(middleware::from_fn_with_state(state.clone(), http::check_host))
        .layer(middleware::from_fn(systemone::typesafe_errors))
        .layer(middleware::from_fn(http::log))
        .with_state(state)
}

#[utoipa::path(get, path = "/openapi.json", responses((status = 200, description = "this document")))]
async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    let mut api = ApiDoc::openapi();
    api.merge(ServerDoc::openapi());
    api.merge(openai::OpenAiDoc::openapi());
    api.merge(systemone::SystemOneDoc::openapi());
    Json(api)
}

/// The document's own path, beside the two APIs'.
#[derive(OpenApi)]
#[openapi(paths(openapi_json))]
struct ServerDoc;
