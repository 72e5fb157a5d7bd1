//! The MCP server's standard input, checked line by line before rmcp reads it. rmcp ignores a
//! line that is not JSON (its choice, against two peers answering each other's garbage forever),
//! and parses a message into maps that keep the last of a key given twice, so neither can be
//! seen after it. Here a line that is not JSON is answered with JSON-RPC's parse error (-32700,
//! no id) and a request that gives a key twice with an invalid-params (or invalid-request) error
//! naming the key, as a rubric file giving it twice is refused; the server goes on reading. Every
//! other line goes to rmcp's own transport unchanged.

use readout::formats::rubric::duplicate_key;
use rmcp::model::{ClientJsonRpcMessage, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// rmcp's transport on standard output and on the lines of standard input that pass, with the
/// answers to those that do not. Must be made inside the tokio runtime (it starts the reader).
pub(crate) fn checked<R, W>(input: R, output: W) -> Checked<W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (passed, rmcp_reads) = tokio::io::duplex(64 * 1024);
    let (refuse, refusals) = mpsc::channel(64);
    tokio::spawn(check_lines(BufReader::new(input), passed, refuse));
    Checked { inner: AsyncRwTransport::new_server(rmcp_reads, output), refusals }
}

/// The transport the server runs on ([`checked`]).
pub(crate) struct Checked<W: AsyncWrite + Send + Unpin + 'static> {
    inner: AsyncRwTransport<RoleServer, tokio::io::DuplexStream, W>,
    refusals: mpsc::Receiver<ServerJsonRpcMessage>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Transport<RoleServer> for Checked<W> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            tokio::select! {
                biased;
                Some(refusal) = self.refusals.recv() => {
                    // Sent on its own task: rmcp may drop this future for another of its
                    // branches, and a refusal taken from the channel must not be lost with it.
                    let sending = self.inner.send(refusal);
                    tokio::spawn(async move {
                        if let Err(e) = sending.await {
                            tracing::warn!(error = %e, "answering a refused line");
                        }
                    });
                }
                message = self.inner.receive() => return message,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// Read `input` line by line: a line that passes goes to `passed`, the answer to one that does
/// not to `refuse`. A line over rmcp's length limit is dropped, as rmcp drops it. Ends at the end
/// of `input`, which closes `passed`, so that rmcp sees the end too.
async fn check_lines(
    mut input: impl AsyncBufRead + Unpin,
    mut passed: impl AsyncWrite + Unpin,
    refuse: mpsc::Sender<ServerJsonRpcMessage>,
) {
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = DEFAULT_MAX_LINE_LENGTH as u64 + 1;
        match (&mut input).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "reading standard input");
                return;
            }
        }
        if !line.ends_with(b"\n") && line.len() as u64 == limit {
            tracing::error!(max = DEFAULT_MAX_LINE_LENGTH, "a line over the length limit, dropped");
            if skip_line(&mut input).await {
                continue;
            }
            return;
        }
        match refusal(&line) {
            Some(answer) => {
                if refuse.send(answer).await.is_err() {
                    return;
                }
            }
            None => {
                if passed.write_all(&line).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Read up to the end of the line; false at the end of the input.
async fn skip_line(input: &mut (impl AsyncBufRead + Unpin)) -> bool {
    loop {
        let Ok(buf) = input.fill_buf().await else { return false };
        if buf.is_empty() {
            return false;
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return true;
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}

/// The answer to `line` when it is refused: it is not JSON, or it is a request giving a key twice.
/// A notification or a response that gives a key twice passes (nothing may answer it).
fn refusal(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let value: serde_json::Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Some(ServerJsonRpcMessage::error(ErrorData::parse_error(format!("not JSON: {e}"), None), None))
        }
    };
    let id = value.get("id").and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    let (Some(id), Some(_)) = (id, value.get("method")) else { return None };
    let d = duplicate_key(std::str::from_utf8(line).ok()?)?;
    let error = match d.field.as_str() {
        "(json)" => ErrorData::invalid_request(d.reason(), None),
        field if field.starts_with("params") => ErrorData::invalid_params(format!("`{field}`: {}", d.reason()), None),
        field => ErrorData::invalid_request(format!("`{field}`: {}", d.reason()), None),
    };
    Some(ServerJsonRpcMessage::error(error, Some(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Option<serde_json::Value> {
        refusal(line.as_bytes()).map(|m| serde_json::to_value(m).unwrap())
    }

    #[test]
    fn not_json_is_a_parse_error_and_a_key_twice_names_the_key() {
        let a = answer("{not json\n").unwrap();
        assert_eq!(a["error"]["code"], -32700, "{a}");
        assert!(a["id"].is_null(), "{a}");
        let a = answer(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"score","arguments":{"texts":["x"],"texts":[]}}}"#).unwrap();
        assert_eq!((a["id"].clone(), a["error"]["code"].clone()), (serde_json::json!(7), serde_json::json!(-32602)));
        let message = a["error"]["message"].as_str().unwrap();
        assert!(message.contains("params.arguments") && message.contains("key `texts`"), "{message}");
    }

    #[test]
    fn everything_else_passes() {
        for line in [
            "\n",
            "\r\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{\"a\":1,\"a\":2}}\n",
            "[1, 2]\n",
        ] {
            assert!(answer(line).is_none(), "{line:?}");
        }
    }

    #[tokio::test]
    async fn lines_pass_or_are_answered_and_reading_goes_on() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnot json\n{\"id\":2,\"method\":\"m\",\"params\":{\"k\":1,\"k\":1}}\n\"last\"\n";
        let (tx, mut rx) = mpsc::channel(8);
        let mut passed = Vec::new();
        check_lines(&input[..], &mut passed, tx).await;
        assert_eq!(
            String::from_utf8(passed).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\"last\"\n"
        );
        let codes: Vec<serde_json::Value> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|m| serde_json::to_value(m).unwrap()["error"]["code"].clone())
            .collect();
        assert_eq!(codes, [serde_json::json!(-32700), serde_json::json!(-32602)]);
    }
}
