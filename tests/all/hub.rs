//! Models from the Hugging Face hub, end to end against a hub served on loopback
//! (`tests/fake_hub`). Every test has a temporary cache; none touches the real home.

use crate::common;
use crate::fake_hub::{FakeHub, HubFile, COMMIT};
use readout::hub::{resolve, Error, Fetched, HubOptions, HubSpec, Resolved};
use std::path::{Path, PathBuf};
use std::process::Command;

const TEXT: &str = "I was charged twice this month, please refund one of them.";

/// A tiny synthetic GGUF model's bytes.
fn tiny_gguf() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tiny.gguf");
    let cfg = readout::engine::synthetic::tiny_config(readout::engine::Architecture::Llama);
    readout::engine::synthetic::write_gguf(&p, &cfg, 7, candle_core::quantized::GgmlDType::Q8_0).unwrap();
    std::fs::read(p).unwrap()
}

fn get(spec: &str, opts: &HubOptions) -> readout::hub::Result<Resolved> {
    resolve(&HubSpec::parse(spec).unwrap(), opts, &mut |_| true)
}

/// The built CLI with the hub's variables pointing at `hub` and `cache` (and nothing else's).
fn readout_with(hub: &str, cache: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_readout"))
        .args(args)
        .current_dir(common::repo())
        .env("HF_ENDPOINT", hub)
        .env("HF_HUB_CACHE", cache)
        .env("HF_HOME", cache.join("home"))
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("READOUT_MODEL")
        .output()
        .expect("readout runs")
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}

#[test]
fn a_gguf_repo_scores_through_the_cli_and_runs_pinned_then_offline() {
    let hub = FakeHub::start();
    let gguf = HubFile::new("tiny.gguf", tiny_gguf(), true);
    let sha = gguf.sha256();
    hub.add("test/tiny", vec![gguf, HubFile::new("README.md", b"# tiny\n".to_vec(), false)]);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    let rubric = "examples/support-ticket.rubric.json";
    let score = ["score", "--rubric", rubric, "--text", TEXT, "--json", "--device", "cpu", "--model", "hf:test/tiny"];
    let out = readout_with(&hub.url, &cache, &score);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stderr.contains("downloaded tiny.gguf") && stderr.contains("checksum ok"), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    assert_eq!(v["criteria"].as_array().unwrap().len(), 3);
    // The hub's cache layout, as other tools read it; the README was not fetched.
    let repo = cache.join("models--test--tiny");
    assert_eq!(files_under(&repo.join("blobs")), vec![sha.clone()]);
    assert_eq!(std::fs::read_to_string(repo.join("refs/main")).unwrap(), COMMIT);
    let link = repo.join("snapshots").join(COMMIT).join("tiny.gguf");
    assert_eq!(std::fs::read_link(&link).unwrap(), PathBuf::from("../../blobs").join(&sha));
    assert!(hub.seen().iter().all(|s| !s.path.contains("README")));
    let before = hub.seen().len();

    // A run: from the cache now (no request), and the result file pins the commit.
    let res = tmp.path().join("r.json");
    let r = res.display().to_string();
    let run = ["run", "bench/evalsets/authored144.jsonl", "--limit", "2", "--device", "cpu"];
    let out = readout_with(&hub.url, &cache, &[&run[..], &["--model", "hf:test/tiny", "--out", &r]].concat());
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(hub.seen().len(), before, "a cached model asks the hub nothing");
    let doc = common::validate(&res);
    assert_eq!(
        doc["model"]["source"],
        serde_json::json!({"hub": "test/tiny", "revision": COMMIT, "file": "tiny.gguf"})
    );
    assert_eq!(doc["model"]["sha256"], sha.as_str());

    // Offline, with the server gone: the cache alone.
    let url = hub.url.clone();
    drop(hub);
    let pinned = format!("hf:test/tiny@{COMMIT}:tiny.gguf");
    let out =
        readout_with(&url, &cache, &["score", "--rubric", rubric, "--text", TEXT, "--offline", "--model", &pinned]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_missing_repo_or_file_is_a_clear_not_found_with_exit_4() {
    let hub = FakeHub::start();
    hub.add("test/tiny", vec![HubFile::new("a.gguf", b"GGUF".to_vec(), true)]);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    for (spec, words) in [
        ("test/missing", "repository test/missing is not on the hub"),
        ("test/tiny:b.gguf", "file `b.gguf` of test/tiny is not on the hub"),
        ("test/tiny@v9", "revision `v9` of test/tiny is not on the hub"),
    ] {
        let out = readout_with(&hub.url, &cache, &["pull", spec]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{spec}: {stderr}");
        assert!(stderr.contains(words) && stderr.contains(&hub.url), "{spec}: {stderr}");
    }
    // The same through --model, as every model-using command takes it.
    let out = readout_with(&hub.url, &cache, &["info", "--model", "hf:test/missing"]);
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    // Nothing was cached for what the hub does not have.
    assert!(!cache.join("models--test--missing").exists());
}

#[test]
fn an_hf_directory_repo_downloads_what_the_loader_reads_and_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let cfg = readout::engine::synthetic::tiny_config(readout::engine::Architecture::Qwen3);
    readout::engine::synthetic::write_hf_dir(&src, &cfg, 3, None).unwrap();
    let mut files = Vec::new();
    for name in ["config.json", "tokenizer.json", "tokenizer_config.json"] {
        files.push(HubFile::new(name, std::fs::read(src.join(name)).unwrap(), false));
    }
    files.push(HubFile::new("model.safetensors", std::fs::read(src.join("model.safetensors")).unwrap(), true));
    files.push(HubFile::new("pytorch_model.bin", vec![1; 1000], true));
    files.push(HubFile::new("README.md", b"# dir\n".to_vec(), false));
    let hub = FakeHub::start();
    hub.add("test/dir", files);
    let cache = tmp.path().join("hub");
    let r = get("hf:test/dir", &hub.options(&cache)).unwrap();
    assert_eq!(r.path, cache.join("models--test--dir/snapshots").join(COMMIT));
    assert_eq!(r.source.file, None);
    let names: Vec<&str> = r.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"]);
    assert!(r.files.iter().all(|f| f.fetched == Fetched::Downloaded { resumed_from: 0 }));
    let seen = hub.seen();
    assert!(seen.iter().all(|s| !s.path.contains("pytorch_model") && !s.path.contains("README")), "{seen:?}");
    let mut engine = common::engine_at(&r.path);
    engine.set_source(r.source.clone());
    assert_eq!(engine.info().name, "dir");
    assert_eq!(engine.info().architecture.as_str(), "qwen3");
}

#[test]
fn a_download_that_does_not_match_its_sha256_is_refused_and_not_cached() {
    let hub = FakeHub::start();
    let good = tiny_gguf();
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    let file = HubFile { served: Some(bad), ..HubFile::new("tiny.gguf", good, true) };
    let sha = file.sha256();
    hub.add("test/tiny", vec![file]);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    let err = get("hf:test/tiny", &hub.options(&cache)).unwrap_err();
    assert!(matches!(&err, Error::HubChecksum { expected, .. } if *expected == sha), "{err}");
    assert!(err.to_string().contains("removed from the cache"), "{err}");
    let repo = cache.join("models--test--tiny");
    assert_eq!(files_under(&repo.join("blobs")), Vec::<String>::new(), "no blob, no partial file");
    assert!(!repo.join("snapshots").join(COMMIT).join("tiny.gguf").exists());
    assert!(!repo.join("refs/main").exists());
    // Served right, the next attempt downloads it whole and keeps it.
    hub.with_file("test/tiny", "tiny.gguf", |f| f.served = None);
    let r = get("hf:test/tiny", &hub.options(&cache)).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: 0 });
    assert_eq!(readout::hash::sha256_file(&r.path).unwrap(), sha);
}

#[test]
fn a_download_cut_in_the_middle_resumes_with_a_range_request() {
    let hub = FakeHub::start();
    let file = HubFile { cuts: 1, ..HubFile::new("tiny.gguf", tiny_gguf(), true) };
    let (sha, len) = (file.sha256(), file.bytes.len() as u64);
    hub.add("test/tiny", vec![file]);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    let err = get("hf:test/tiny", &hub.options(&cache)).unwrap_err();
    assert!(matches!(err, Error::HubDownload { .. }), "{err}");
    let part = cache.join("models--test--tiny/blobs").join(format!("{sha}.part"));
    let half = len / 2;
    assert_eq!(std::fs::metadata(&part).unwrap().len(), half, "the bytes received are kept");
    assert!(err.to_string().contains("resumes"), "{err}");

    let mut progress = Vec::new();
    let r = resolve(&HubSpec::parse("hf:test/tiny").unwrap(), &hub.options(&cache), &mut |p| {
        progress.push((p.done, p.total));
        true
    })
    .unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: half });
    let wanted = format!("bytes={half}-");
    let seen = hub.seen();
    assert!(
        seen.iter().any(|s| s.path.starts_with("/cdn/") && s.range.as_deref() == Some(wanted.as_str())),
        "{seen:?}"
    );
    assert_eq!(readout::hash::sha256_file(&r.path).unwrap(), sha);
    assert!(!part.exists());
    // Progress went from where the partial file ended to the whole file.
    assert!(progress.iter().all(|&(_, t)| t == len), "{progress:?}");
    assert_eq!(progress.iter().find(|&&(d, _)| d > 0).map(|&(d, _)| d), Some(half));
    assert_eq!(progress.last().map(|&(d, _)| d), Some(len));

    // With retries, one call gets past a cut on its own.
    let hub2 = FakeHub::start();
    hub2.add("test/tiny", vec![HubFile { cuts: 1, ..HubFile::new("tiny.gguf", tiny_gguf(), true) }]);
    let cache2 = tmp.path().join("hub2");
    let r = get("hf:test/tiny", &HubOptions { retries: 1, ..hub2.options(&cache2) }).unwrap();
    assert_eq!(readout::hash::sha256_file(&r.path).unwrap(), sha);
}

/// The caller stops a download part way (its progress callback answers `false`): a typed
/// error, the bytes that arrived kept in the `.part` file, no lock file left, nothing in the
/// snapshot; the next attempt resumes from there and the file checks out.
#[test]
fn a_download_stopped_by_its_caller_keeps_what_arrived_and_resumes() {
    let hub = FakeHub::start();
    let bytes = tiny_gguf();
    let (len, sha) = (bytes.len() as u64, HubFile::new("t", bytes.clone(), true).sha256());
    hub.add("test/tiny", vec![HubFile { slow: true, ..HubFile::new("tiny.gguf", bytes, true) }]);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    let spec = HubSpec::parse("hf:test/tiny").unwrap();
    let err = resolve(&spec, &hub.options(&cache), &mut |p| p.done < len / 2).unwrap_err();
    let Error::HubStopped { kept, total, part, .. } = &err else { panic!("{err}") };
    assert_eq!(*total, len);
    assert!(*kept > 0 && *kept < len, "{kept} of {len}");
    assert_eq!(std::fs::metadata(part).unwrap().len(), *kept, "{err}");
    assert!(err.to_string().contains("resumes"), "{err}");
    let blobs = cache.join("models--test--tiny/blobs");
    let left: Vec<String> =
        std::fs::read_dir(&blobs).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec![format!("{sha}.part")], "only the partial file stays");
    assert!(!cache.join("models--test--tiny/snapshots").join(COMMIT).join("tiny.gguf").exists());

    let r = resolve(&spec, &hub.options(&cache), &mut |_| true).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Downloaded { resumed_from: *kept });
    assert_eq!(readout::hash::sha256_file(&r.path).unwrap(), sha);
}

#[test]
fn offline_uses_the_cache_alone_and_names_what_is_missing() {
    let hub = FakeHub::start();
    hub.add("test/tiny", vec![HubFile::new("tiny.gguf", tiny_gguf(), true)]);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    let offline = HubOptions { offline: true, ..hub.options(&cache) };
    let err = get("hf:test/tiny:tiny.gguf", &offline).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::HubOffline { .. }), "{msg}");
    assert!(msg.contains("hf:test/tiny:tiny.gguf") && msg.contains("readout pull test/tiny:tiny.gguf"), "{msg}");
    assert!(hub.seen().is_empty(), "offline asks nothing");
    get("hf:test/tiny", &hub.options(&cache)).unwrap();
    let asked = hub.seen().len();
    let r = get("hf:test/tiny", &offline).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Cached);
    assert_eq!(r.source.revision, COMMIT);
    // A file the snapshot lacks is named.
    let err = get("hf:test/tiny:other.gguf", &offline).unwrap_err().to_string();
    assert!(err.contains("has no other.gguf"), "{err}");
    assert_eq!(hub.seen().len(), asked);
    // The CLI: --offline and HF_HUB_OFFLINE=1 alike, exit 4 when missing.
    let out = readout_with(&hub.url, &cache, &["pull", "--offline", "test/other"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("readout pull test/other"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_readout"));
    cmd.args(["pull", "test/other"])
        .env("HF_ENDPOINT", &hub.url)
        .env("HF_HUB_CACHE", &cache)
        .env("HF_HUB_OFFLINE", "1");
    assert_eq!(cmd.output().unwrap().status.code(), Some(4));
    assert_eq!(hub.seen().len(), asked);
}

#[test]
fn files_other_tools_put_in_the_cache_are_used_without_a_request() {
    let hub = FakeHub::start();
    let file = HubFile::new("tiny.gguf", tiny_gguf(), true);
    hub.add("test/tiny", vec![HubFile::new("tiny.gguf", file.bytes.clone(), true)]);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    // As huggingface_hub lays a download out.
    let repo = cache.join("models--test--tiny");
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(repo.join("snapshots").join(COMMIT)).unwrap();
    std::fs::write(repo.join("blobs").join(file.sha256()), &file.bytes).unwrap();
    std::fs::write(repo.join("refs/main"), COMMIT).unwrap();
    std::os::unix::fs::symlink(
        PathBuf::from("../../blobs").join(file.sha256()),
        repo.join("snapshots").join(COMMIT).join("tiny.gguf"),
    )
    .unwrap();
    let r = get("hf:test/tiny", &hub.options(&cache)).unwrap();
    assert_eq!(r.files[0].fetched, Fetched::Cached);
    assert_eq!(r.path, repo.join("snapshots").join(COMMIT).join("tiny.gguf"));
    assert!(hub.seen().is_empty(), "{:?}", hub.seen());
    // `pull` asks the hub for the commit, and finds nothing to download.
    let out = readout_with(&hub.url, &cache, &["pull", "test/tiny", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"][0]["fetched"], "cached");
    assert_eq!(v["model"], format!("hf:test/tiny@{COMMIT}:tiny.gguf"));
    assert!(hub.seen().iter().all(|s| s.path.starts_with("/api/")), "{:?}", hub.seen());

    // A blob the cache has under another commit is linked, not downloaded.
    let newer = "fedcba9876543210fedcba9876543210fedcba98";
    hub.state.lock().unwrap().repos.get_mut("test/tiny").unwrap().commit = newer.into();
    let before = hub.seen().len();
    let r = get("hf:test/tiny", &HubOptions { refresh: true, ..hub.options(&cache) }).unwrap();
    assert_eq!((r.files[0].fetched, r.source.revision.as_str()), (Fetched::Linked, newer));
    assert_eq!(std::fs::read_to_string(repo.join("refs/main")).unwrap(), newer);
    assert!(hub.seen()[before..].iter().all(|s| s.path.starts_with("/api/")), "{:?}", hub.seen());
}

#[test]
fn a_gated_repo_needs_the_token() {
    let hub = FakeHub::start();
    hub.add("test/gated", vec![HubFile::new("g.gguf", b"GGUF-not-really".to_vec(), true)]);
    hub.state.lock().unwrap().repos.get_mut("test/gated").unwrap().gated = true;
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    let err = get("hf:test/gated", &hub.options(&cache)).unwrap_err();
    assert!(matches!(err, Error::HubAccess { status: 401, .. }), "{err}");
    assert!(err.to_string().contains("HF_TOKEN"), "{err}");
    let with = HubOptions { token: Some("secret".into()), ..hub.options(&cache) };
    let r = get("hf:test/gated", &with).unwrap();
    assert_eq!(std::fs::read(&r.path).unwrap(), b"GGUF-not-really");
    assert!(hub.seen().iter().any(|s| s.auth.as_deref() == Some("Bearer secret")));
    // The CLI passes HF_TOKEN.
    let out = readout_with(&hub.url, &tmp.path().join("hub2"), &["pull", "test/gated"]);
    assert_eq!(out.status.code(), Some(4));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_readout"));
    cmd.args(["pull", "test/gated"])
        .env("HF_ENDPOINT", &hub.url)
        .env("HF_HUB_CACHE", tmp.path().join("hub3"))
        .env("HF_TOKEN", "secret");
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn readout_models_lists_the_cache_by_catalogue_name_and_the_catalogue() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("hub");
    let repo = cache.join("models--Qwen--Qwen3-0.6B-GGUF");
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(repo.join("snapshots").join(COMMIT)).unwrap();
    std::fs::write(repo.join("blobs/abc"), vec![0u8; 1234]).unwrap();
    std::fs::write(repo.join("refs/main"), COMMIT).unwrap();
    std::os::unix::fs::symlink("../../blobs/abc", repo.join("snapshots").join(COMMIT).join("Qwen3-0.6B-Q8_0.gguf"))
        .unwrap();
    let out = readout_with("http://127.0.0.1:9", &cache, &["models", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = v["found"].as_array().unwrap();
    let q = found.iter().find(|m| m["model_arg"] == "hf:Qwen/Qwen3-0.6B-GGUF:Qwen3-0.6B-Q8_0.gguf").unwrap();
    assert_eq!((q["name"].as_str(), q["size_bytes"].as_u64()), (Some("Qwen3 0.6B (Q8_0)"), Some(1234)));
    let cat = v["catalogue"].as_array().unwrap();
    assert!(cat.len() >= 6);
    assert!(cat.iter().all(|e| e["size_bytes"].as_u64().unwrap() > 0 && e["size_basis"].is_string()));
    let table = readout_with("http://127.0.0.1:9", &cache, &["models"]);
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("Qwen3 0.6B (Q8_0)") && text.contains("Gemma 3 1B") && text.contains("approximate"),
        "{text}"
    );
}
