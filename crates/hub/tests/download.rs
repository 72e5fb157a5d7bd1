//! The download against a hub on loopback (a small std::net server below that answers as the hub
//! does: the API's file list, `resolve` with an LFS redirect to a CDN path, Range requests), made
//! to misbehave: a part left from an earlier download, a server that ignores Range, a stop part
//! way, a corrupt body, a cut connection, a file list without checksums, a part another program
//! holds. Every test has its own temporary cache.

use readout_hub::{resolve, Error, Fetched, HubOptions, HubSpec, Resolved};
use sha2::Digest;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const COMMIT: &str = "89abcdef0123456789abcdef0123456789abcdef";

struct File {
    name: String,
    bytes: Vec<u8>,
    lfs: bool,
}

impl File {
    fn sha256(&self) -> String {
        hex::encode(sha2::Sha256::digest(&self.bytes))
    }
    fn blob_id(&self) -> String {
        let mut h = sha1::Sha1::new();
        h.update(format!("blob {}\0", self.bytes.len()).as_bytes());
        h.update(&self.bytes);
        hex::encode(h.finalize())
    }
    /// The blob's name in the cache.
    fn checksum(&self) -> String {
        if self.lfs {
            self.sha256()
        } else {
            self.blob_id()
        }
    }
}

#[derive(Default)]
struct State {
    files: Vec<File>,
    /// Answer every request for bytes with the whole file (200), Range or not.
    ignore_range: bool,
    /// Bodies still to cut after `cut_at` bytes (the connection closed).
    cuts: usize,
    cut_at: usize,
    /// A kilobyte every two milliseconds.
    slow: bool,
    /// Serve this instead of the file's bytes (its checksum still the file's).
    corrupt: bool,
    /// The file list without sizes' checksums (no `lfs`, no `blobId`).
    no_checksums: bool,
    /// The Range header of every request answered with the file's bytes (or a 416).
    ranges: Vec<Option<String>>,
}

struct Hub {
    url: String,
    state: Arc<Mutex<State>>,
}

impl Hub {
    fn start(files: Vec<File>) -> Hub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State { files, ..State::default() }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &state);
                });
            }
        });
        Hub { url, state }
    }

    fn options(&self, cache: &Path) -> HubOptions {
        HubOptions { endpoint: self.url.clone(), retries: 0, ..HubOptions::new(cache.to_path_buf()) }
    }

    fn set(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.lock().unwrap());
    }

    fn ranges(&self) -> Vec<Option<String>> {
        self.state.lock().unwrap().ranges.clone()
    }
}

fn head(conn: &mut TcpStream, status: &str, headers: &[(&str, String)], len: usize) -> std::io::Result<()> {
    let mut h = format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {len}\r\n");
    for (k, v) in headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("\r\n");
    conn.write_all(h.as_bytes())
}

fn serve(mut conn: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or("").to_string(), words.next().unwrap_or("/").to_string());
    let mut range = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            if k.eq_ignore_ascii_case("range") {
                range = Some(v.trim().to_string());
            }
        }
    }
    let path = target.split('?').next().unwrap_or("").to_string();
    let mut st = state.lock().unwrap();
    if path == "/api/models/o/m/revision/main" {
        let siblings: Vec<serde_json::Value> = st
            .files
            .iter()
            .map(|f| {
                let mut v = serde_json::json!({"rfilename": f.name, "size": f.bytes.len()});
                if !st.no_checksums {
                    v["blobId"] = f.blob_id().into();
                    if f.lfs {
                        v["lfs"] = serde_json::json!({"sha256": f.sha256(), "size": f.bytes.len()});
                    }
                }
                v
            })
            .collect();
        let body = serde_json::json!({"sha": COMMIT, "siblings": siblings}).to_string();
        head(&mut conn, "200 OK", &[], body.len())?;
        return conn.write_all(body.as_bytes());
    }
    let file = |name: &str| st.files.iter().find(|f| f.name == name);
    let (bytes, etag) = if let Some(sha) = path.strip_prefix("/cdn/") {
        match st.files.iter().find(|f| f.sha256() == sha) {
            Some(f) => (f.bytes.clone(), f.sha256()),
            None => return head(&mut conn, "404 Not Found", &[("X-Error-Code", "EntryNotFound".into())], 0),
        }
    } else {
        let name = path.strip_prefix(&format!("/o/m/resolve/{COMMIT}/")).unwrap_or("");
        let Some(f) = file(name) else {
            return head(&mut conn, "404 Not Found", &[("X-Error-Code", "EntryNotFound".into())], 0);
        };
        if f.lfs {
            let headers =
                [("Location", format!("/cdn/{}", f.sha256())), ("X-Linked-Etag", format!("\"{}\"", f.sha256()))];
            return head(&mut conn, "302 Found", &headers, 0);
        }
        (f.bytes.clone(), f.blob_id())
    };
    let mut body = bytes;
    if st.corrupt {
        let mid = body.len() / 2;
        body[mid] ^= 0xff;
    }
    let len = body.len();
    let from = range
        .as_deref()
        .filter(|_| !st.ignore_range)
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|a| a.parse::<usize>().ok());
    let etag = ("ETag", format!("\"{etag}\""));
    if method == "GET" {
        st.ranges.push(range.clone());
    }
    let (status, part, headers) = match from {
        Some(a) if a >= len => {
            return head(&mut conn, "416 Range Not Satisfiable", &[("Content-Range", format!("bytes */{len}"))], 0)
        }
        Some(a) => {
            ("206 Partial Content", &body[a..], vec![etag, ("Content-Range", format!("bytes {a}-{}/{len}", len - 1))])
        }
        None => ("200 OK", &body[..], vec![etag]),
    };
    head(&mut conn, status, &headers, part.len())?;
    if method == "HEAD" {
        return Ok(());
    }
    let cut = (st.cuts > 0).then_some(st.cut_at);
    if cut.is_some() {
        st.cuts -= 1;
    }
    let slow = st.slow;
    let part = part.to_vec();
    drop(st);
    if let Some(at) = cut {
        conn.write_all(&part[..at.min(part.len())])?;
        conn.flush()?;
        return conn.shutdown(std::net::Shutdown::Both);
    }
    if slow {
        for chunk in part.chunks(1024) {
            conn.write_all(chunk)?;
            conn.flush()?;
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        return Ok(());
    }
    conn.write_all(&part)
}

/// Bytes no two tests' files share by accident.
fn bytes(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32).map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8).collect()
}

fn gguf(len: usize) -> File {
    File { name: "m.gguf".into(), bytes: bytes(len, 7), lfs: true }
}

fn get(hub: &Hub, cache: &Path) -> readout_hub::Result<Resolved> {
    resolve(&HubSpec::parse("hf:o/m").unwrap(), &hub.options(cache), &mut |_| true)
}

fn blobs(cache: &Path) -> PathBuf {
    cache.join("models--o--m").join("blobs")
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The file is in place as the hub's tools lay it out: the blob, the relative link, the ref.
fn assert_cached(r: &Resolved, cache: &Path, f: &File) {
    let repo = cache.join("models--o--m");
    assert_eq!(r.path, repo.join("snapshots").join(COMMIT).join(&f.name));
    assert_eq!(std::fs::read(&r.path).unwrap(), f.bytes);
    assert_eq!(names_in(&repo.join("blobs")), [f.checksum()]);
    assert_eq!(std::fs::read_link(&r.path).unwrap(), Path::new("../../blobs").join(f.checksum()));
    assert_eq!(std::fs::read_to_string(repo.join("refs/main")).unwrap(), COMMIT);
}

#[test]
fn a_part_left_behind_is_resumed_with_a_range_request_and_hashed_whole() {
    let f = gguf(300_000);
    let kept = 123_457;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(blobs(tmp.path())).unwrap();
    std::fs::write(blobs(tmp.path()).join(format!("{}.part", f.sha256())), &f.bytes[..kept]).unwrap();
    let hub = Hub::start(vec![File { name: f.name.clone(), bytes: f.bytes.clone(), lfs: true }]);
    let mut seen = Vec::new();
    let r = resolve(&HubSpec::parse("hf:o/m").unwrap(), &hub.options(tmp.path()), &mut |p| {
        seen.push((p.done, p.total));
        true
    })
    .unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: kept as u64 });
    assert_eq!(r.files[0].size, f.bytes.len() as u64);
    assert_cached(&r, tmp.path(), &f);
    assert_eq!(hub.ranges(), [Some(format!("bytes={kept}-"))], "one request, for the rest");
    let len = f.bytes.len() as u64;
    assert_eq!(seen.first(), Some(&(kept as u64, len)), "progress starts where the part ended");
    assert_eq!(seen.last(), Some(&(len, len)));
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn a_server_that_ignores_range_starts_the_part_over() {
    let f = gguf(200_000);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(blobs(tmp.path())).unwrap();
    // Bytes that are not the file's: resumed, they would fail the checksum.
    std::fs::write(blobs(tmp.path()).join(format!("{}.part", f.sha256())), vec![0u8; 50_000]).unwrap();
    let hub = Hub::start(vec![File { name: f.name.clone(), bytes: f.bytes.clone(), lfs: true }]);
    hub.set(|s| s.ignore_range = true);
    let r = get(&hub, tmp.path()).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: 0 });
    assert_cached(&r, tmp.path(), &f);
    assert_eq!(hub.ranges(), [Some("bytes=50000-".to_string())], "asked for the rest, got the whole");
}

#[test]
fn a_part_longer_than_the_file_starts_over_without_asking_for_a_range() {
    let f = gguf(10_000);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(blobs(tmp.path())).unwrap();
    std::fs::write(blobs(tmp.path()).join(format!("{}.part", f.sha256())), vec![1u8; 20_000]).unwrap();
    let hub = Hub::start(vec![File { name: f.name.clone(), bytes: f.bytes.clone(), lfs: true }]);
    let r = get(&hub, tmp.path()).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: 0 });
    assert_cached(&r, tmp.path(), &f);
    assert_eq!(hub.ranges(), [None]);
}

#[test]
fn a_download_stopped_mid_file_keeps_its_part_and_the_next_resumes_it() {
    let f = gguf(96 * 1024);
    let len = f.bytes.len() as u64;
    let tmp = tempfile::tempdir().unwrap();
    let hub = Hub::start(vec![File { name: f.name.clone(), bytes: f.bytes.clone(), lfs: true }]);
    hub.set(|s| s.slow = true);
    let spec = HubSpec::parse("hf:o/m").unwrap();
    let mut calls = 0;
    let err = resolve(&spec, &hub.options(tmp.path()), &mut |p| {
        calls += 1;
        p.done < len / 3
    })
    .unwrap_err();
    let Error::HubStopped { kept, total, part, .. } = &err else { panic!("{err}") };
    assert_eq!(*total, len);
    assert!(*kept >= len / 3 && *kept < len, "stopped at the chunk that crossed a third: {kept} of {len}");
    assert!(calls > 2, "asked at every chunk: {calls}");
    assert_eq!(part, &blobs(tmp.path()).join(format!("{}.part", f.sha256())));
    assert_eq!(std::fs::read(part).unwrap(), f.bytes[..*kept as usize], "what arrived, and nothing else");
    assert_eq!(names_in(&blobs(tmp.path())), [format!("{}.part", f.sha256())]);
    assert!(!tmp.path().join("models--o--m/snapshots").exists());
    assert!(!tmp.path().join("models--o--m/refs/main").exists());
    assert!(err.to_string().contains("resumes from there"), "{err}");

    hub.set(|s| s.slow = false);
    let r = get(&hub, tmp.path()).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: *kept });
    assert_cached(&r, tmp.path(), &f);
    assert_eq!(hub.ranges(), [None, Some(format!("bytes={kept}-"))]);
}

#[test]
fn a_body_that_does_not_match_its_checksum_is_removed_sha256_or_git_blob_id() {
    for (lfs, algorithm) in [(true, "sha256"), (false, "git blob id")] {
        let f = File { name: "m.gguf".into(), bytes: bytes(50_000, 3), lfs };
        let tmp = tempfile::tempdir().unwrap();
        let hub = Hub::start(vec![File { name: f.name.clone(), bytes: f.bytes.clone(), lfs }]);
        hub.set(|s| s.corrupt = true);
        let err = get(&hub, tmp.path()).unwrap_err();
        let Error::HubChecksum { algorithm: a, expected, blob, .. } = &err else { panic!("{err}") };
        assert_eq!((*a, expected.as_str()), (algorithm, f.checksum().as_str()));
        assert_eq!(blob, &blobs(tmp.path()).join(f.checksum()));
        assert!(err.to_string().contains("removed from the cache"), "{err}");
        assert_eq!(names_in(&blobs(tmp.path())), Vec::<String>::new(), "no blob, no part");
        assert!(!tmp.path().join("models--o--m/snapshots").exists());
        assert!(!tmp.path().join("models--o--m/refs/main").exists());
        // Served right, the next attempt downloads it whole.
        hub.set(|s| s.corrupt = false);
        let r = get(&hub, tmp.path()).unwrap();
        assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: 0 });
        assert_cached(&r, tmp.path(), &f);
    }
}

#[test]
fn a_cut_connection_keeps_its_bytes_and_retries_resume_it_at_once() {
    let f = gguf(120_000);
    let tmp = tempfile::tempdir().unwrap();
    let hub = Hub::start(vec![File { name: f.name.clone(), bytes: f.bytes.clone(), lfs: true }]);
    hub.set(|s| (s.cuts, s.cut_at) = (1, 40_000));
    // No retries: the error says what is kept.
    let err = get(&hub, tmp.path()).unwrap_err();
    assert!(matches!(err, Error::HubDownload { .. }), "{err}");
    assert!(err.to_string().contains("40000 of 120000 bytes are kept"), "{err}");
    let part = blobs(tmp.path()).join(format!("{}.part", f.sha256()));
    assert_eq!(std::fs::metadata(&part).unwrap().len(), 40_000);
    // Two cuts, two retries: one call gets the file, each request for what is missing.
    hub.set(|s| (s.cuts, s.cut_at) = (2, 30_000));
    let opts = HubOptions { retries: 2, ..hub.options(tmp.path()) };
    let r = resolve(&HubSpec::parse("hf:o/m").unwrap(), &opts, &mut |_| true).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: 40_000 });
    assert_cached(&r, tmp.path(), &f);
    let asked = ["bytes=40000-", "bytes=70000-", "bytes=100000-"].map(|r| Some(r.to_string()));
    assert_eq!(hub.ranges()[1..], asked);
}

#[test]
fn a_file_list_without_checksums_is_checked_by_the_etag() {
    let f = File { name: "config.json".into(), bytes: b"{\"architectures\": []}\n".to_vec(), lfs: false };
    let g = gguf(20_000);
    let tmp = tempfile::tempdir().unwrap();
    let hub = Hub::start(vec![
        File { name: f.name.clone(), bytes: f.bytes.clone(), lfs: false },
        File { name: g.name.clone(), bytes: g.bytes.clone(), lfs: true },
    ]);
    hub.set(|s| s.no_checksums = true);
    let opts = hub.options(tmp.path());
    let r = resolve(&HubSpec::parse("hf:o/m:m.gguf").unwrap(), &opts, &mut |_| true).unwrap();
    assert_eq!(std::fs::read(&r.path).unwrap(), g.bytes);
    assert!(blobs(tmp.path()).join(g.sha256()).is_file(), "named by the linked ETag, the sha256");
    let r = resolve(&HubSpec::parse("hf:o/m:config.json").unwrap(), &opts, &mut |_| true).unwrap();
    assert_eq!(std::fs::read(&r.path).unwrap(), f.bytes);
    assert!(blobs(tmp.path()).join(f.blob_id()).is_file());
}

#[test]
fn a_part_another_download_holds_is_left_alone() {
    let f = gguf(10_000);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(blobs(tmp.path())).unwrap();
    let part = blobs(tmp.path()).join(format!("{}.part", f.sha256()));
    std::fs::write(&part, &f.bytes[..100]).unwrap();
    let holder = std::fs::OpenOptions::new().write(true).open(&part).unwrap();
    holder.lock().unwrap();
    let hub = Hub::start(vec![File { name: f.name.clone(), bytes: f.bytes.clone(), lfs: true }]);
    let err = get(&hub, tmp.path()).unwrap_err().to_string();
    assert!(err.contains("another program is downloading m.gguf"), "{err}");
    assert_eq!(std::fs::read(&part).unwrap(), f.bytes[..100]);
    drop(holder);
    let r = get(&hub, tmp.path()).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: 100 });
}

#[test]
fn what_the_hub_refuses_is_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let hub = Hub::start(vec![gguf(100)]);
    let err =
        resolve(&HubSpec::parse("hf:o/m:other.gguf").unwrap(), &hub.options(tmp.path()), &mut |_| true).unwrap_err();
    assert!(matches!(err, Error::HubNotFound { .. }), "{err}");
    let err = get(&Hub { url: "http://127.0.0.1:9".into(), state: hub.state.clone() }, tmp.path()).unwrap_err();
    assert!(err.to_string().contains("cannot reach http://127.0.0.1:9"), "{err}");
}
