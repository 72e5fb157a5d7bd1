//! The Hugging Face hub on loopback, for the tests of the library (tests/all/hub.rs) and of the
//! app's shell (src-tauri/tests/commands.rs, which includes this file by path): a small HTTP
//! server (std threads) that answers as the hub does — the API's revision info with sizes and
//! checksums, `resolve` with `x-repo-commit` and `etag`, LFS files through a redirect that carries
//! `x-linked-etag`, Range requests — and can cut a download in the middle, serve it slowly, or
//! serve bytes that do not match their checksum.
#![allow(dead_code)]

use readout::hub::HubOptions;
use sha2::Digest;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

pub struct HubFile {
    pub name: String,
    pub bytes: Vec<u8>,
    /// Kept in LFS (a redirect and a sha256) rather than git (a blob id).
    pub lfs: bool,
    /// Bytes served instead of `bytes` (the checksum still says `bytes`'): a corrupt download.
    pub served: Option<Vec<u8>>,
    /// Full downloads still to cut in the middle (the server closes the connection halfway).
    pub cuts: usize,
    /// Served a kilobyte every few milliseconds, so that a download can be stopped part way.
    pub slow: bool,
}

impl HubFile {
    pub fn new(name: &str, bytes: Vec<u8>, lfs: bool) -> Self {
        HubFile { name: name.into(), bytes, lfs, served: None, cuts: 0, slow: false }
    }
    pub fn sha256(&self) -> String {
        hex::encode(sha2::Sha256::digest(&self.bytes))
    }
    pub fn blob_id(&self) -> String {
        use sha1::Digest as _;
        let mut h = sha1::Sha1::new();
        h.update(format!("blob {}\0", self.bytes.len()).as_bytes());
        h.update(&self.bytes);
        hex::encode(h.finalize())
    }
}

pub struct HubRepo {
    pub commit: String,
    pub files: Vec<HubFile>,
    /// Answers only requests with `Authorization: Bearer secret`.
    pub gated: bool,
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub range: Option<String>,
    pub auth: Option<String>,
}

#[derive(Default)]
pub struct State {
    pub repos: HashMap<String, HubRepo>,
    pub seen: Vec<Seen>,
}

/// The hub on loopback.
pub struct FakeHub {
    pub url: String,
    pub state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl FakeHub {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st, base) = (state.clone(), stop.clone(), url.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (s, base) = (s.clone(), base.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &s, &base);
                });
            }
        });
        FakeHub { url, state, stop }
    }

    pub fn add(&self, repo: &str, files: Vec<HubFile>) {
        self.state.lock().unwrap().repos.insert(repo.into(), HubRepo { commit: COMMIT.into(), files, gated: false });
    }

    pub fn with_file(&self, repo: &str, name: &str, f: impl FnOnce(&mut HubFile)) {
        let mut st = self.state.lock().unwrap();
        f(st.repos.get_mut(repo).unwrap().files.iter_mut().find(|x| x.name == name).unwrap());
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    pub fn options(&self, cache: &Path) -> HubOptions {
        HubOptions { endpoint: self.url.clone(), retries: 0, ..HubOptions::new(cache.to_path_buf()) }
    }
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

fn respond(conn: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.write_all(body)?;
    conn.flush()
}

fn not_found(conn: &mut TcpStream, code: &str) -> std::io::Result<()> {
    let body = format!("{{\"error\": \"{code}\"}}");
    respond(conn, "404 Not Found", &[("X-Error-Code", code.into()), ("X-Error-Message", code.into())], body.as_bytes())
}

/// `bytes=A-B` or `bytes=A-` of a body of `len` bytes: the first and last byte.
fn range_of(range: Option<&str>, len: usize) -> Option<(usize, usize)> {
    let (a, b) = range?.strip_prefix("bytes=")?.split_once('-')?;
    let a: usize = a.parse().ok()?;
    let b: usize = if b.is_empty() { len.saturating_sub(1) } else { b.parse::<usize>().ok()?.min(len - 1) };
    Some((a, b))
}

/// Serve `body`, honouring Range; `cut` sends half of it and closes the connection.
fn send_body(
    conn: &mut TcpStream,
    body: &[u8],
    range: Option<&str>,
    headers: &[(&str, String)],
    cut: bool,
    slow: bool,
) -> std::io::Result<()> {
    let (status, part, mut hs) = match range_of(range, body.len()) {
        Some((a, b)) => {
            ("206 Partial Content", &body[a..=b], vec![("Content-Range", format!("bytes {a}-{b}/{}", body.len()))])
        }
        None => ("200 OK", body, vec![]),
    };
    hs.push(("Accept-Ranges", "bytes".into()));
    hs.extend(headers.iter().map(|(k, v)| (*k, v.clone())));
    if !cut && !slow {
        return respond(conn, status, &hs, part);
    }
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n", part.len());
    for (k, v) in &hs {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    if slow {
        for chunk in part.chunks(1024) {
            conn.write_all(chunk)?;
            conn.flush()?;
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        return Ok(());
    }
    conn.write_all(&part[..part.len() / 2])?;
    conn.flush()?;
    conn.shutdown(std::net::Shutdown::Both)
}

fn serve(mut conn: TcpStream, state: &Mutex<State>, base: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers: HashMap<String, String> = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let path = target.split('?').next().unwrap_or("").replace("%2F", "/");
    let range = headers.get("range").cloned();
    let mut st = state.lock().unwrap();
    st.seen.push(Seen { path: path.clone(), range: range.clone(), auth: headers.get("authorization").cloned() });
    let authorised = headers.get("authorization").map(String::as_str) == Some("Bearer secret");

    // The CDN: LFS content by sha256.
    if let Some(sha) = path.strip_prefix("/cdn/") {
        let mut hit = None;
        for repo in st.repos.values_mut() {
            for f in repo.files.iter_mut() {
                if f.lfs && f.sha256() == sha {
                    let probe = range.as_deref() == Some("bytes=0-0");
                    let cut = !probe && f.cuts > 0;
                    if cut {
                        f.cuts -= 1;
                    }
                    hit = Some((f.served.clone().unwrap_or_else(|| f.bytes.clone()), cut, f.slow && !probe));
                }
            }
        }
        drop(st);
        return match hit {
            Some((body, cut, slow)) => send_body(&mut conn, &body, range.as_deref(), &[], cut, slow),
            None => not_found(&mut conn, "EntryNotFound"),
        };
    }
    // The API: /api/models/ORG/NAME/revision/REV
    if let Some(rest) = path.strip_prefix("/api/models/") {
        let parts: Vec<&str> = rest.splitn(4, '/').collect();
        let (repo_id, rev) = match parts[..] {
            [org, name, "revision", rev] => (format!("{org}/{name}"), rev.to_string()),
            _ => return not_found(&mut conn, "RepoNotFound"),
        };
        let Some(repo) = st.repos.get(&repo_id) else { return not_found(&mut conn, "RepoNotFound") };
        if repo.gated && !authorised {
            return respond(&mut conn, "401 Unauthorized", &[("X-Error-Code", "GatedRepo".into())], b"{}");
        }
        if rev != "main" && rev != repo.commit {
            return not_found(&mut conn, "RevisionNotFound");
        }
        let siblings: Vec<serde_json::Value> = repo
            .files
            .iter()
            .map(|f| {
                let mut v = serde_json::json!({"rfilename": f.name, "size": f.bytes.len(), "blobId": f.blob_id()});
                if f.lfs {
                    v["lfs"] = serde_json::json!({"sha256": f.sha256(), "size": f.bytes.len(), "pointerSize": 134});
                }
                v
            })
            .collect();
        let body = serde_json::json!({"id": repo_id, "modelId": repo_id, "sha": repo.commit, "siblings": siblings});
        drop(st);
        return respond(
            &mut conn,
            "200 OK",
            &[("Content-Type", "application/json".into())],
            body.to_string().as_bytes(),
        );
    }
    // A file: /ORG/NAME/resolve/REV/FILE
    let parts: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
    let [org, name, "resolve", rev, file] = parts[..] else { return not_found(&mut conn, "RepoNotFound") };
    let Some(repo) = st.repos.get(&format!("{org}/{name}")) else { return not_found(&mut conn, "RepoNotFound") };
    if repo.gated && !authorised {
        return respond(&mut conn, "401 Unauthorized", &[("X-Error-Code", "GatedRepo".into())], b"{}");
    }
    if rev != "main" && rev != repo.commit {
        return not_found(&mut conn, "RevisionNotFound");
    }
    let commit = repo.commit.clone();
    let Some(f) = repo.files.iter().find(|f| f.name == file) else { return not_found(&mut conn, "EntryNotFound") };
    if f.lfs {
        let headers = [
            ("Location", format!("{base}/cdn/{}", f.sha256())),
            ("X-Repo-Commit", commit),
            ("X-Linked-Etag", format!("\"{}\"", f.sha256())),
            ("X-Linked-Size", f.bytes.len().to_string()),
            ("ETag", format!("\"{}\"", f.blob_id())),
        ];
        drop(st);
        return respond(&mut conn, "302 Found", &headers, b"");
    }
    let body = f.served.clone().unwrap_or_else(|| f.bytes.clone());
    let slow = f.slow && range.as_deref() != Some("bytes=0-0");
    let headers = [("X-Repo-Commit", commit), ("ETag", format!("\"{}\"", f.blob_id()))];
    drop(st);
    send_body(&mut conn, &body, range.as_deref(), &headers, false, slow)
}
