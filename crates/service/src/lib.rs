//! Readout as a service, over the library: the score requests' coalescing [`queue`] (every
//! request waiting while a batch runs is read in the next batch, one per configuration, with
//! shared passes), the HTTP API ([`http`]: `POST /v1/score`, `GET /v1/models`, `/health`,
//! `/openapi.json`), the OpenAI-compatible API other eval tools speak ([`openai`]:
//! `/v1/completions`, `/v1/chat/completions`, vLLM's `/tokenize`, `/detokenize` and
//! `/tokenizer_info`), TypeSafe's System One API ([`systemone`]: `POST /v1/systemone`), joined
//! on one listener by [`server`], and the Model Context Protocol
//! server ([`mcp`]). Requests arrive as the library's one
//! [`readout::jobs::request::ScoreRequest`]; what comes back is what `readout score --json`
//! prints. The CLI's `serve` and `mcp` only parse their arguments and load the model.

pub mod http;
pub mod mcp;
pub mod openai;
pub mod queue;
pub mod server;
mod stdio;
pub mod systemone;

/// What can go wrong running a service, and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("listening on {addr}: {err}; choose another --host or --port")]
    Listen { addr: std::net::SocketAddr, err: std::io::Error },
    #[error("starting the service's {what}: {err}")]
    Start { what: &'static str, err: std::io::Error },
    #[error("serving: {0}")]
    Serve(String),
}

pub type Result<T> = std::result::Result<T, Error>;
