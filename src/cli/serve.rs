//! `readout serve`: the HTTP service of `readout-service` on a model loaded once. This shell
//! parses the arguments, checks the key and the limits, loads the model and starts the service.

use super::ModelArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use readout_service::http::Options;
use readout_service::server;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
    /// Seconds a request may take, its wait in the queue included (longer: 504); at most a day.
    #[arg(long, default_value = "300", value_parser = seconds)]
    timeout_s: Duration,
    /// Requests that may wait for the model at once (more: 503 with Retry-After).
    #[arg(long, default_value_t = 256)]
    queue: usize,
    /// Seconds a client may take to send a request's headers (slower: the connection is closed;
    /// also how long an idle connection stays open), and again its body (slower: 408).
    #[arg(long, default_value = "30", value_parser = seconds)]
    read_timeout_s: Duration,
    /// Connections open at once; more wait to be taken.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_connections: u32,
    /// After SIGINT or SIGTERM, seconds to wait for bodies still arriving; then they are refused
    /// (503) and stalled connections closed. Requests being decided are finished.
    #[arg(long, default_value = "5", value_parser = seconds)]
    shutdown_grace_s: Duration,
    /// How a System One request (`POST /v1/systemone`) that names no `x_debias` reads the orders
    /// of its options: none, cyclic (every rotation, averaged) or permutation (docs/systemone.md
    /// says why cyclic is the default, with its measurement).
    #[arg(long, default_value = "cyclic")]
    debias: readout::debias::DebiasMode,
    #[command(flatten)]
    model: ModelArgs,
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
    if a.queue == 0 || a.max_texts == 0 || a.max_text_tokens == 0 || a.max_body_bytes == 0 {
        bail!("--queue, --max-texts, --max-text-tokens and --max-body-bytes must be at least 1");
    }
    let engine = Arc::new(a.model.load()?);
    let name = engine.info().name.clone();
    let options = Options {
        key,
        max_body_bytes: a.max_body_bytes,
        max_texts: a.max_texts,
        max_text_tokens: a.max_text_tokens,
        timeout: a.timeout_s,
        queue: a.queue,
        read_timeout: a.read_timeout_s,
        max_connections: a.max_connections as usize,
        shutdown_grace: a.shutdown_grace_s,
        debias: a.debias,
    };
    server::serve(engine, SocketAddr::new(a.host, a.port), options, |addr| {
        eprintln!("readout: listening on http://{addr} (model {name})");
    })
    .with_context(|| format!("serving on {}:{}", a.host, a.port))?;
    eprintln!("readout: stopped");
    Ok(0)
}

/// The longest any of serve's times may be: a day.
const MAX_SECONDS: f64 = 86_400.0;

/// A number of seconds, more than 0 and at most [`MAX_SECONDS`] (a larger one would overflow
/// the clock's arithmetic, and means no limit anyway).
fn seconds(s: &str) -> std::result::Result<Duration, String> {
    let n: f64 = s.trim().parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if n.is_nan() || n <= 0.0 || n > MAX_SECONDS {
        return Err(format!("must be more than 0 and at most {MAX_SECONDS} seconds (a day), not {s}"));
    }
    Ok(Duration::from_secs_f64(n))
}
