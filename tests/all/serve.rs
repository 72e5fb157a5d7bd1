//! `readout serve` as a client sees it: the real binary on a free loopback port, the default
//! model, real HTTP (ureq). Concurrent clients get exactly what `readout score --json` prints;
//! the key, the limits (413, 422 naming the field, the text and its token count), the full queue
//! (503 with Retry-After), the timeout, /health, /v1/models, /openapi.json, and a SIGTERM that
//! lets the request in flight finish.

use super::common;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
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
