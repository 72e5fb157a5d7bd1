//! `readout serve` as a client sees it: the real binary on a free loopback port, the default
//! model, real HTTP (ureq). Concurrent clients get exactly what `readout score --json` prints;
//! the key, the limits (413, 422 naming the field, the text and its token count), the full queue
//! (503 with Retry-After), the timeout, /health, /v1/models, /openapi.json, and a SIGTERM that
//! lets the request in flight finish. Then the server under abuse, with raw TCP clients: stalled
//! headers and bodies, the cap on connections, a SIGTERM with stalled clients, cut and malformed
//! bodies, a key given twice, and a browser page (its Content-Type, its Host, no CORS).

use super::common;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const RUBRIC: &str = "examples/support-ticket.rubric.json";

/// A running `readout serve`; killed when dropped.
struct Server {
    child: Child,
    base: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let model = common::default_model().display().to_string();
        let mut args = vec!["serve", "--port", "0", "--model", &model];
        args.extend_from_slice(extra);
        let mut child = Command::new(env!("CARGO_BIN_EXE_readout"))
            .args(&args)
            .current_dir(common::repo())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("readout serve starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(String::new()));
        let base = loop {
            let line = lines.next().expect("readout serve says where it listens").unwrap();
            log.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep reading its log, so that it never blocks on a full pipe.
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Server { child, base, log }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `127.0.0.1:PORT`.
    fn addr(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// Wait (at most a minute) for the server to exit; its exit code.
    fn exited_within_a_minute(&mut self) -> Option<i32> {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the server was still running a minute after SIGTERM:\n{}", self.log.lock().unwrap());
    }
}

/// A raw HTTP answer: status, header lines (lowercase) and the body as JSON (null when not JSON).
struct Raw {
    status: u16,
    headers: String,
    body: Value,
}

impl Raw {
    fn answer(self) -> Answer {
        Answer { status: self.status, retry_after: None, body: self.body }
    }
}

/// Read one answer from `stream`, waiting at most a minute for it; the connection may stay open.
fn read_answer(stream: &mut TcpStream) -> Raw {
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..at]).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |n| n.trim().parse::<usize>().unwrap());
            if got.len() >= at + 4 + length {
                let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
                let body = serde_json::from_slice(&got[at + 4..at + 4 + length]).unwrap_or(Value::Null);
                return Raw { status, headers: head, body };
            }
        }
        match stream.read(&mut buf) {
            Ok(0) => panic!("the connection closed before an answer: {}", String::from_utf8_lossy(&got)),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("no answer within a minute ({e}): {}", String::from_utf8_lossy(&got)),
        }
    }
}

/// Send `request` (raw HTTP/1.1) on a new connection and read its answer.
fn raw(addr: &str, request: &str) -> Raw {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    read_answer(&mut stream)
}

/// Whether the server closed `stream` (end of stream or reset) within a minute.
fn closed_within_a_minute(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => return !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        }
    }
}

/// A client that sends a score request's headers and the start of its body, then nothing.
fn stalled_body(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST /v1/score HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    );
    s.write_all(format!("{head}{{\"rubric\": ").as_bytes()).unwrap();
    s
}

/// A client that sends part of a request's headers, then nothing.
fn stalled_head(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes()).unwrap();
    s
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Status, headers we look at, and the JSON body.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

fn call(method: &str, url: &str, key: Option<&str>, body: Option<&str>) -> Answer {
    let mut req = ureq::request(method, url).timeout(Duration::from_secs(300));
    if let Some(k) = key {
        req = req.set("Authorization", &format!("Bearer {k}"));
    }
    let res = match body {
        Some(b) => req.set("Content-Type", "application/json").send_string(b),
        None => req.call(),
    };
    let r = match res {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = r.status();
    let retry_after = r.header("Retry-After").map(String::from);
    let text = r.into_string().unwrap();
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{method} {url} gave {status} and not JSON ({e}): {text}"));
    Answer { status, retry_after, body }
}

fn rubric() -> Value {
    serde_json::from_str(&std::fs::read_to_string(common::repo().join(RUBRIC)).unwrap()).unwrap()
}

fn score_body(texts: &[&str]) -> String {
    json!({ "rubric": rubric(), "texts": texts }).to_string()
}

fn assert_error(a: &Answer, status: u16, kind: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert_eq!(a.body["error"]["kind"], kind, "{}", a.body);
    assert!(a.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", a.body);
}

/// What `readout score --json` prints for these texts, a JSON value per text.
fn cli_score(texts: &[&str]) -> Vec<Value> {
    let model = common::default_model().display().to_string();
    let mut args = vec!["score", "-r", RUBRIC, "--json", "--model", &model];
    for t in texts {
        args.extend(["-t", t]);
    }
    let out = common::readout(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn concurrent_clients_get_what_score_json_prints() {
    let server = Server::start(&[]);
    let sets: [&[&str]; 4] = [
        &["I was charged twice this month, please refund one of them.", "The app crashes on start."],
        &["I was charged twice this month, please refund one of them."],
        &["How do I change my password?", "Thanks, all sorted!", "Refund me now, this is urgent."],
        &["The app crashes on start."],
    ];
    let want: Vec<Vec<Value>> = sets.iter().map(|s| cli_score(s)).collect();
    // 4 clients × 3 requests each, all at once: the server reads them in shared batches.
    let got: Vec<Vec<Answer>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sets
            .iter()
            .map(|s| {
                let (url, body) = (server.url("/v1/score"), score_body(s));
                scope.spawn(move || (0..3).map(|_| call("POST", &url, None, Some(&body))).collect::<Vec<_>>())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (c, answers) in got.iter().enumerate() {
        assert_eq!(answers.len(), 3, "client {c}: no request lost");
        for a in answers {
            assert_eq!(a.status, 200, "client {c}: {}", a.body);
            let results = a.body["results"].as_array().unwrap();
            assert_eq!(results, &want[c], "client {c}: the answer differs from `readout score --json`");
        }
    }
    // Inline questions and ids: the same decisions as the rubric file gives.
    let body =
        json!({ "questions": rubric()["questions"], "texts": [{"text": "The app crashes on start.", "id": "t-7"}] });
    let a = call("POST", &server.url("/v1/score"), None, Some(&body.to_string()));
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["results"][0]["id"], "t-7");
    assert_eq!(a.body["results"][0]["criteria"], want[3][0]["criteria"]);
}

#[test]
fn health_models_and_the_openapi_document() {
    let server = Server::start(&[]);
    let h = call("GET", &server.url("/health"), None, None);
    assert_eq!(h.status, 200);
    assert_eq!(h.body["status"], "ok");
    let m = call("GET", &server.url("/v1/models"), None, None);
    assert_eq!(m.status, 200);
    assert_eq!(m.body["object"], "list");
    assert_eq!(m.body["data"][0]["id"], h.body["model"]);
    assert_eq!(m.body["data"][0]["architecture"], "llama");
    assert!(m.body["data"][0]["context_length"].as_u64().unwrap() > 0);
    let doc = call("GET", &server.url("/openapi.json"), None, None);
    assert_eq!(doc.status, 200);
    assert!(doc.body["openapi"].as_str().unwrap().starts_with("3."));
    for path in ["/v1/score", "/v1/models", "/health", "/openapi.json"] {
        assert!(doc.body["paths"][path].is_object(), "{path} missing from /openapi.json");
    }
    let schemas = &doc.body["components"]["schemas"];
    for s in ["ScoreRequest", "ScoreResponse", "TextResult", "CriterionResult", "ErrorBody"] {
        assert!(schemas[s].is_object(), "schema {s} missing");
    }
    assert!(schemas["TextResult"]["properties"]["criteria"].is_object());
    let missing = call("GET", &server.url("/v2/nothing"), None, None);
    assert_error(&missing, 404, "not_found");
}

#[test]
fn a_key_is_needed_when_one_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, "s3cret-key\n").unwrap();
    let server = Server::start(&["--api-key-file", key_file.to_str().unwrap()]);
    let body = score_body(&["Refund me."]);
    assert_error(&call("POST", &server.url("/v1/score"), None, Some(&body)), 401, "unauthorized");
    assert_error(&call("POST", &server.url("/v1/score"), Some("s3cret-kez"), Some(&body)), 401, "unauthorized");
    assert_error(&call("GET", &server.url("/v1/models"), Some("s3cret"), None), 401, "unauthorized");
    let ok = call("POST", &server.url("/v1/score"), Some("s3cret-key"), Some(&body));
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(call("GET", &server.url("/v1/models"), Some("s3cret-key"), None).status, 200);
    // Health and the document are open.
    assert_eq!(call("GET", &server.url("/health"), None, None).status, 200);
    // The scheme's name in any case (RFC 9110); with a key, any Host.
    let addr = server.addr();
    for scheme in ["bearer", "BEARER"] {
        let a = raw(addr, &format!("GET /v1/models HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {scheme} s3cret-key\r\nConnection: close\r\n\r\n"));
        assert_eq!(a.status, 200, "{scheme}: {}", a.body);
    }
    let a = raw(addr, "GET /v1/models HTTP/1.1\r\nHost: judge.example\r\nAuthorization: Bearer s3cret-key\r\nConnection: close\r\n\r\n");
    assert_eq!(a.status, 200, "{}", a.body);
}

#[test]
fn beyond_loopback_without_a_key_is_refused() {
    let model = common::default_model().display().to_string();
    let out = common::readout(&["serve", "--host", "0.0.0.0", "--port", "0", "--model", &model]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--api-key-file") && err.contains("--no-auth"), "{err}");
}

#[test]
fn limits_answer_naming_the_field() {
    let server = Server::start(&["--max-body-bytes", "4000", "--max-texts", "3", "--max-text-tokens", "40"]);
    let url = server.url("/v1/score");
    // 413: a body over the limit.
    let big = score_body(&[&"word ".repeat(1000)]);
    assert_error(&call("POST", &url, None, Some(&big)), 413, "body_too_large");
    // 422: too many texts.
    let a = call("POST", &url, None, Some(&score_body(&["a", "b", "c", "d"])));
    assert_error(&a, 422, "invalid_request");
    assert_eq!(a.body["error"]["field"], "texts");
    assert!(a.body["error"]["message"].as_str().unwrap().contains("at most 3"), "{}", a.body);
    // 422: a text over the token limit, named by index with its count.
    let long = "please refund my order because it never arrived and nobody answers my emails, ".repeat(3);
    let n = common::default_engine().tokenizer().encode(&long).unwrap().len();
    assert!(n > 40);
    let a = call("POST", &url, None, Some(&score_body(&["Refund me.", &long])));
    assert_error(&a, 422, "invalid_request");
    assert_eq!(a.body["error"]["field"], "texts[1]");
    assert!(a.body["error"]["message"].as_str().unwrap().contains(&format!("{n} tokens")), "{}", a.body);
    // 422: a rubric field, named.
    let mut r = rubric();
    r["questions"]["topic"]["type"] = json!("multiple");
    let a = call("POST", &url, None, Some(&json!({"rubric": r, "texts": ["x"]}).to_string()));
    assert_error(&a, 422, "invalid_request");
    assert_eq!(a.body["error"]["field"], "rubric.questions.topic.type", "{}", a.body);
    // 422: a field that is not a score request's; a text that is neither string nor object.
    let a =
        call("POST", &url, None, Some(&json!({"rubric": rubric(), "texts": ["x"], "debias": "sideways"}).to_string()));
    assert_error(&a, 422, "invalid_request");
    let a = call("POST", &url, None, Some(&json!({"rubric": rubric(), "texts": ["x", 5]}).to_string()));
    assert_eq!(a.body["error"]["field"], "texts[1]", "{}", a.body);
    let a = call("POST", &url, None, Some(&json!({"texts": ["x"]}).to_string()));
    assert_eq!(a.body["error"]["field"], "rubric", "{}", a.body);
    // 422: a field of the wrong type, named.
    let a = call("POST", &url, None, Some(&json!({"rubric": rubric(), "texts": 5}).to_string()));
    assert_error(&a, 422, "invalid_request");
    assert_eq!(a.body["error"]["field"], "texts", "{}", a.body);
    // 422: a key given twice, refused as in a rubric file (JSON would keep the last).
    let twice = r#"{"rubric": {"questions": {"t": {"type": "choice", "instructions": "Which?",
        "criteria": {"a": "A", "a": "B", "b": "C"}}}}, "texts": ["x"]}"#;
    let a = call("POST", &url, None, Some(twice));
    assert_error(&a, 422, "invalid_request");
    assert_eq!(a.body["error"]["field"], "rubric.questions.t.criteria", "{}", a.body);
    assert!(a.body["error"]["message"].as_str().unwrap().contains("key `a` is given twice"), "{}", a.body);
}

#[test]
fn a_full_queue_answers_503_with_retry_after_and_a_slow_request_504() {
    let server = Server::start(&["--queue", "1"]);
    let texts: Vec<String> = (0..6).map(|i| format!("Ticket {i}: the app crashes and I want a refund.")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let body = score_body(&refs);
    let answers: Vec<Answer> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let (url, body) = (server.url("/v1/score"), body.clone());
                scope.spawn(move || call("POST", &url, None, Some(&body)))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let full: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    assert!(!full.is_empty(), "8 requests at once on a queue of 1: some must be turned away");
    for a in &full {
        assert_error(a, 503, "queue_full");
        let secs: u64 = a.retry_after.as_deref().expect("Retry-After").parse().unwrap();
        assert!(secs >= 1);
    }
    assert!(answers.iter().all(|a| a.status == 200 || a.status == 503), "only decided or turned away");
    drop(server);
    let server = Server::start(&["--timeout-s", "0.001"]);
    assert_error(&call("POST", &server.url("/v1/score"), None, Some(&body)), 504, "timeout");
}

#[cfg(unix)]
#[test]
fn sigterm_finishes_the_request_in_flight() {
    let mut server = Server::start(&[]);
    let texts: Vec<String> = (0..40).map(|i| format!("Message {i}: my invoice is wrong, please fix it.")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (url, body) = (server.url("/v1/score"), score_body(&refs));
    let client = std::thread::spawn(move || call("POST", &url, None, Some(&body)));
    // Wait until the server has the request, then ask it to stop.
    let start = Instant::now();
    loop {
        let h = call("GET", &server.url("/health"), None, None);
        if h.body["in_flight"].as_u64() == Some(1) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the request never arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) }, 0);
    let a = client.join().unwrap();
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["results"].as_array().unwrap().len(), 40);
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", server.log.lock().unwrap());
    assert!(server.log.lock().unwrap().contains("shutting down"));
}

#[test]
fn a_stalled_client_gets_408_and_others_are_still_served() {
    let server = Server::start(&["--read-timeout-s", "1"]);
    let addr = server.addr();
    let mut body = stalled_body(addr);
    let mut head = stalled_head(addr);
    assert_eq!(call("GET", &server.url("/health"), None, None).status, 200, "served meanwhile");
    let start = Instant::now();
    let a = read_answer(&mut body);
    assert_eq!(a.status, 408, "{}", a.body);
    assert_eq!(a.body["error"]["kind"], "request_timeout", "{}", a.body);
    assert!(a.body["error"]["message"].as_str().unwrap().contains("--read-timeout-s"), "{}", a.body);
    assert!(closed_within_a_minute(&mut body), "the connection of the 408 is closed");
    assert!(closed_within_a_minute(&mut head), "a client slow with its headers is dropped");
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_eq!(call("GET", &server.url("/health"), None, None).status, 200);
}

#[test]
fn connections_beyond_the_cap_wait_for_a_slot() {
    let server = Server::start(&["--max-connections", "1", "--read-timeout-s", "600"]);
    let addr = server.addr();
    // The one slot, held by a client that says nothing more.
    let holder = stalled_head(addr);
    std::thread::sleep(Duration::from_millis(200));
    let mut waiting = TcpStream::connect(addr).unwrap();
    waiting.write_all(format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    waiting.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut buf = [0u8; 64];
    let early = waiting.read(&mut buf);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "a second connection is not served while the only slot is held: {early:?}"
    );
    holder.shutdown(Shutdown::Both).unwrap();
    drop(holder);
    let a = read_answer(&mut waiting);
    assert_eq!(a.status, 200, "served once the slot is free: {}", a.body);
}

#[cfg(unix)]
#[test]
fn stalled_clients_do_not_keep_sigterm_from_ending_the_server() {
    let mut server = Server::start(&["--read-timeout-s", "600", "--shutdown-grace-s", "1"]);
    let addr = server.addr().to_string();
    let mut body = stalled_body(&addr);
    let mut head = stalled_head(&addr);
    let start = Instant::now();
    while call("GET", &server.url("/health"), None, None).body["in_flight"].as_u64() != Some(1) {
        assert!(start.elapsed() < Duration::from_secs(60), "the stalled request never arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(server.exited_within_a_minute(), Some(0), "{}", server.log.lock().unwrap());
    assert!(server.log.lock().unwrap().contains("shutting down"));
    // The stalled body was refused as the server stopped; both connections are closed.
    let a = read_answer(&mut body);
    assert_eq!((a.status, a.body["error"]["kind"].as_str()), (503, Some("shutting_down")), "{}", a.body);
    assert!(closed_within_a_minute(&mut body) && closed_within_a_minute(&mut head));
}

#[test]
fn a_cut_or_malformed_body_is_400_and_only_a_large_one_413() {
    let server = Server::start(&["--max-body-bytes", "4000"]);
    let addr = server.addr();
    let head = format!(
        "POST /v1/score HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    // A chunk size that is not hexadecimal.
    let a = raw(addr, &format!("{head}5\r\n{{\"rub\r\nZZ\r\n"));
    assert_error(&a.answer(), 400, "bad_body");
    // Cut: the client ends its side before the last chunk.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(format!("{head}5\r\n{{\"rub\r\n").as_bytes()).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let a = read_answer(&mut s);
    assert_error(&a.answer(), 400, "bad_body");
    // Chunked and over the limit: still 413.
    let big = "x".repeat(5000);
    let a = raw(addr, &format!("{head}{:x}\r\n{big}\r\n0\r\n\r\n", big.len()));
    assert_error(&a.answer(), 413, "body_too_large");
}

#[test]
fn a_browser_page_cannot_drive_a_keyless_server() {
    let server = Server::start(&[]);
    let addr = server.addr();
    let port = addr.rsplit(':').next().unwrap();
    let post = |content_type: Option<&str>, body: &str| {
        let ct = content_type.map(|c| format!("Content-Type: {c}\r\n")).unwrap_or_default();
        raw(
            addr,
            &format!(
                "POST /v1/score HTTP/1.1\r\nHost: {addr}\r\n{ct}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
    };
    // 415: a body not sent as JSON, as a page's form or text/plain is.
    let body = json!({"texts": ["x"]}).to_string();
    for ct in [Some("text/plain"), Some("application/x-www-form-urlencoded"), None] {
        let a = post(ct, &body);
        assert_eq!(
            (a.status, a.body["error"]["kind"].as_str()),
            (415, Some("unsupported_media_type")),
            "{ct:?}: {}",
            a.body
        );
    }
    // JSON in UTF-8 is read (and this one lacks its rubric).
    let a = post(Some("application/json; charset=utf-8"), &body);
    assert_eq!((a.status, a.body["error"]["field"].as_str()), (422, Some("rubric")), "{}", a.body);
    // 421: a Host that is not this server (a page's own name, resolved to 127.0.0.1).
    let get = |host: &str, extra: &str| {
        raw(addr, &format!("GET /health HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"))
    };
    for host in [format!("evil.example:{port}"), "127.0.0.1:1".to_string(), format!("localhost.evil.example:{port}")] {
        let a = get(&host, "");
        assert_eq!((a.status, a.body["error"]["kind"].as_str()), (421, Some("wrong_host")), "{host}: {}", a.body);
    }
    for host in [addr.to_string(), format!("localhost:{port}"), format!("[::1]:{port}")] {
        assert_eq!(get(&host, "").status, 200, "{host}");
    }
    // No CORS: neither a preflight nor a request from another origin is let through.
    let a = raw(
        addr,
        &format!("OPTIONS /v1/score HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\nConnection: close\r\n\r\n"),
    );
    assert!(!a.headers.contains("access-control-"), "{}", a.headers);
    let a = get(addr, "Origin: http://evil.example\r\n");
    assert_eq!(a.status, 200);
    assert!(!a.headers.contains("access-control-"), "{}", a.headers);
}

#[test]
fn serve_times_beyond_a_day_are_refused_before_the_model_loads() {
    let model = common::default_model().display().to_string();
    for (option, value) in [
        ("--timeout-s", "1e19"),
        ("--timeout-s", "1e30"),
        ("--timeout-s", "inf"),
        ("--timeout-s", "NaN"),
        ("--timeout-s", "0"),
        ("--read-timeout-s", "86401"),
        ("--shutdown-grace-s", "1e19"),
    ] {
        let out = common::readout(&["serve", "--port", "0", option, value, "--model", &model]);
        assert!(!out.status.success(), "{option} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(option) && err.contains("a day"), "{option} {value}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The OpenAI-compatible routes: lm-evaluation-harness's `local-completions` request (token-id
/// prompts sharing a prefix, echo, one token, logprobs) answered with what the library's
/// log-likelihood tree computes (the harness's own Readout backend); vLLM's tokenizer routes agreeing with the tokenizer.
#[test]
fn openai_completions_give_the_log_likelihood_tree_s_numbers() {
    // Attention as the kernel on both sides: a prompt's numbers do not depend on what shares
    // its pass (the server's trie of this request against the tree of the library's call).
    let server = Server::start(&["--attention", "kernel"]);
    let opts = readout::engine::LoadOptions {
        device: readout::engine::device::DeviceRequest::Cpu,
        attention: readout::engine::AttentionPath::Kernel,
        ..Default::default()
    };
    let engine = readout::engine::Engine::load(&common::default_model(), &opts).unwrap();
    let tok = engine.tokenizer();
    let shots = tok.encode_plain("Question: Is water wet?\nAnswer: yes\n\nQuestion: Is fire cold?\nAnswer:").unwrap();
    let prompts: Vec<Vec<u32>> = [" no", " yes", " maybe not"]
        .iter()
        .map(|c| shots.iter().copied().chain(tok.encode_plain(c).unwrap()).collect())
        .collect();
    let body = json!({"model": "judge", "prompt": prompts, "temperature": 0, "max_tokens": 1, "logprobs": 1, "echo": true, "seed": 1234});
    let a = call("POST", &server.url("/v1/completions"), None, Some(&body.to_string()));
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["object"], "text_completion");
    // What lm-evaluation-harness's own Readout backend computes: the log-likelihood tree.
    let conts: Vec<Vec<u32>> = prompts.iter().map(|p| p[shots.len()..].to_vec()).collect();
    let ll: Vec<readout::analysis::loglik::Request> = conts
        .iter()
        .map(|c| readout::analysis::loglik::Request { context: shots.clone(), continuation: c.clone() })
        .collect();
    let (want, _) = readout::analysis::loglik::loglikelihood(&engine, &ll, engine.pass_defaults()).unwrap();
    let choices = a.body["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3);
    for (i, (c, want)) in choices.iter().zip(&want).enumerate() {
        assert_eq!(c["index"], i);
        let lp = &c["logprobs"];
        let got: Vec<Option<f64>> = lp["token_logprobs"].as_array().unwrap().iter().map(Value::as_f64).collect();
        // The prompt's tokens, then the one generated token.
        assert_eq!(got.len(), prompts[i].len() + 1, "{lp}");
        assert_eq!(got[0], None, "nothing comes before the first token");
        assert!(got[1..].iter().all(Option::is_some));
        // lm-evaluation-harness reads `token_logprobs[ctxlen:-1]` and `top_logprobs[ctxlen:-1]`.
        let tail = shots.len()..prompts[i].len();
        let sum: f64 = got[tail.clone()].iter().map(|g| g.unwrap()).sum();
        assert!((sum - want.logprob).abs() < 1e-4, "prompt {i}: {sum} vs {}", want.logprob);
        let tops = lp["top_logprobs"].as_array().unwrap();
        assert!(tops[0].is_null() && tops[1..].iter().all(|t| t.as_object().is_some_and(|m| m.len() == 1)));
        let greedy = tail.clone().all(|k| {
            let best = tops[k].as_object().unwrap().values().filter_map(Value::as_f64).fold(f64::MIN, f64::max);
            got[k].unwrap() >= best
        });
        assert_eq!(greedy, want.greedy, "prompt {i}");
        assert_eq!(lp["tokens"].as_array().unwrap().len(), got.len());
        assert_eq!(lp["text_offset"][0], 0);
    }
    assert_eq!(a.body["usage"]["prompt_tokens"], prompts.iter().map(Vec::len).sum::<usize>());
    assert_eq!(a.body["usage"]["completion_tokens"], 3);

    // lm-evaluation-harness's remote tokenizer: the end-of-turn token by its text, no BOS added.
    let info = call("GET", &server.url("/tokenizer_info"), None, None);
    let eos = info.body["eos_token"].as_str().expect("an eos_token").to_string();
    assert!(info.body["chat_template"].as_str().is_some_and(|t| t.contains("messages")));
    let t = call(
        "POST",
        &server.url("/tokenize"),
        None,
        Some(&json!({"prompt": eos, "add_special_tokens": false}).to_string()),
    );
    assert_eq!(t.body["tokens"].as_array().unwrap().len(), 1, "{}", t.body);
    let t = call(
        "POST",
        &server.url("/tokenize"),
        None,
        Some(&json!({"prompt": "Is fire cold?", "add_special_tokens": false}).to_string()),
    );
    let ids: Vec<u32> = t.body["tokens"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
    assert_eq!(ids, tok.encode_plain("Is fire cold?").unwrap());
    let d = call("POST", &server.url("/detokenize"), None, Some(&json!({"tokens": ids}).to_string()));
    assert_eq!(d.body["prompt"], "Is fire cold?");
}

/// A chat with `logprobs` and `top_logprobs`: greedy (the chosen token the first alternative),
/// the same reply streamed, and what Readout does not do refused in OpenAI's error shape.
#[test]
fn openai_chat_gives_top_logprobs_and_streams_the_same_reply() {
    let server = Server::start(&[]);
    let chat = |extra: Value| {
        let mut body = json!({"model": "judge", "messages": [
            {"role": "system", "content": "Answer with one word."},
            {"role": "user", "content": [{"type": "text", "text": "Is the sky blue? Yes or No?"}]}],
            "max_tokens": 6});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body.to_string()
    };
    let a = call(
        "POST",
        &server.url("/v1/chat/completions"),
        None,
        Some(&chat(json!({"logprobs": true, "top_logprobs": 5}))),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let choice = &a.body["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    let reply = choice["message"]["content"].as_str().unwrap().to_string();
    let content = choice["logprobs"]["content"].as_array().unwrap();
    assert!(!content.is_empty() && content.len() <= 6);
    for t in content {
        let top = t["top_logprobs"].as_array().unwrap();
        assert_eq!(top.len(), 5);
        assert_eq!(top[0]["token"], t["token"], "greedy: the chosen token is the most likely");
        assert!(top.windows(2).all(|w| w[0]["logprob"].as_f64() >= w[1]["logprob"].as_f64()));
        let bytes: Vec<u8> = t["bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8).collect();
        assert_eq!(String::from_utf8_lossy(&bytes), t["token"].as_str().unwrap());
    }
    let texts: String = content.iter().map(|t| t["token"].as_str().unwrap()).collect();
    assert!(texts.starts_with(&reply), "{texts:?} vs {reply:?}");

    let url = server.url("/v1/chat/completions");
    let streamed = ureq::post(&url)
        .set("Content-Type", "application/json")
        .send_string(&chat(json!({"stream": true, "stream_options": {"include_usage": true}})))
        .unwrap();
    assert_eq!(streamed.header("Content-Type"), Some("text/event-stream"));
    let events = streamed.into_string().unwrap();
    let datas: Vec<&str> = events.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    assert_eq!(datas.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = datas[..datas.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    let joined: String = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0).and_then(|ch| ch["delta"]["content"].as_str()).map(String::from))
        .collect();
    assert_eq!(joined, reply);
    assert!(chunks.last().unwrap()["usage"]["completion_tokens"].as_u64().is_some());

    // Sampling, several choices, too many alternatives: refused, saying why, in OpenAI's shape.
    for (extra, param) in [
        (json!({"temperature": 0.7}), "temperature"),
        (json!({"n": 2}), "n"),
        (json!({"logprobs": true, "top_logprobs": 21}), "top_logprobs"),
    ] {
        let a = call("POST", &url, None, Some(&chat(extra)));
        assert_eq!(a.status, 400, "{}", a.body);
        assert_eq!(a.body["error"]["type"], "invalid_request_error");
        assert_eq!(a.body["error"]["param"], param);
    }
    let long = json!({"prompt": vec![1u32; 9000], "max_tokens": 1}).to_string();
    let a = call("POST", &server.url("/v1/completions"), None, Some(&long));
    assert_eq!((a.status, a.body["error"]["code"].as_str()), (400, Some("context_length_exceeded")), "{}", a.body);
}

/// Streams cut by their clients: the server goes on serving the others, and a client that reads
/// a stream to its end gets every chunk and `[DONE]`.
#[test]
fn openai_streams_cut_by_their_clients_leave_the_server_serving() {
    let server = Server::start(&[]);
    let body = json!({"messages": [{"role": "user", "content": "Count to twenty."}], "max_tokens": 40, "stream": true})
        .to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        server.addr(),
        body.len()
    );
    for _ in 0..4 {
        // Sent, then gone before the answer (or in its middle).
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut first = [0u8; 64];
        let _ = stream.read(&mut first);
        stream.shutdown(Shutdown::Both).unwrap();
    }
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.write_all(request.replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1).as_bytes()).unwrap();
    let mut answer = String::new();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("text/event-stream") && answer.trim_end().ends_with("data: [DONE]"), "{answer}");
    let a = call("GET", &server.url("/health"), None, None);
    assert_eq!((a.status, a.body["status"].as_str()), (200, Some("ok")));
}
