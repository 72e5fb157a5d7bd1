//! Models from the Hugging Face hub: a spec `hf:ORG/REPO[@REVISION][:FILE]` resolved to a local
//! path (a GGUF file, or a Hugging Face model directory) in the standard Hugging Face cache, so
//! that files other tools downloaded are found and reused, and files Readout downloads serve them.
//!
//! The cache layout is the hub's own (the `cache` module reads and writes it): `models--ORG--REPO/`
//! holds `blobs/` (one file per content, named by its sha256 for LFS files or its git blob id
//! otherwise), `snapshots/COMMIT/PATH` (links to the blobs) and `refs/BRANCH` (the commit a
//! branch pointed at when last asked). The download is this crate's own, on a blocking ureq
//! client with rustls (no system TLS library):
//!
//! - the cache first: a spec whose files are in the cache resolves with no request at all
//!   (`HubOptions::refresh` asks the hub which commit the revision is now, as `readout pull` does);
//! - offline resolution from the cache alone, with an error that names what is missing;
//! - the files to fetch, from one call to the hub's API (`/api/models/REPO/revision/REV?blobs=true`):
//!   the commit, every file's size and checksum; without `:FILE`, the GGUF or the directory's files;
//! - each file downloaded into `blobs/HASH.part` and resumed from there with a Range request
//!   (a server that ignores Range starts it over), its checksum (sha256 for LFS files, the git
//!   blob id otherwise) computed as the bytes stream in; a file that does not match is removed
//!   from the cache and refused; one that does is renamed into place and linked;
//! - blobs already in the cache (another commit, another tool) linked instead of downloaded;
//! - typed errors ([`Error`]) that say what to do (not found, needs a token, offline, corrupt,
//!   network).
//!
//! Settings come in [`HubOptions`] (the shell reads `HF_ENDPOINT`, `HF_HOME`, `HF_HUB_CACHE`,
//! `HF_TOKEN`, `HF_HUB_OFFLINE` and hands them to [`HubOptions::from_vars`]); progress goes to a
//! callback, called for every chunk, which stops the download by answering `false` (the bytes
//! that arrived stay in the cache's `.part` file for the next attempt to resume). Nothing here
//! prints or reads the environment. The commit a spec resolved to comes back in
//! [`ModelSource`], which result files record so that a run can be repeated on exactly the same
//! files.

mod cache;
mod checksum;
mod client;
mod download;
mod error;

pub use cache::repo_dir;
pub use error::{Error, Result};

use cache::{cached_commit, set_ref};
use client::Hub;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The public hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// The revision asked for when a spec names none.
pub const DEFAULT_REVISION: &str = "main";

/// What `--model` starts with to name a model on the hub.
pub const PREFIX: &str = "hf:";

/// The quantisation chosen when a repository holds several GGUF files and the spec names none:
/// llama.cpp's usual middle ground of size and fidelity.
pub const PREFERRED_QUANT: &str = "Q4_K_M";

/// A model on the hub: `ORG/REPO`, a revision (branch, tag or commit; `main` when absent) and a
/// file in it (absent: Readout chooses, see [`resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSpec {
    pub repo: String,
    pub revision: Option<String>,
    pub file: Option<String>,
}

impl HubSpec {
    /// Parse `ORG/REPO[@REVISION][:FILE]`, with or without the `hf:` prefix.
    pub fn parse(text: &str) -> Result<Self> {
        let s = text.strip_prefix(PREFIX).unwrap_or(text);
        let bad = |why: &str| {
            Error::Config(format!(
                "`{text}` is not a hub model: {why}; write ORG/REPO, ORG/REPO@REVISION, ORG/REPO:FILE or ORG/REPO@REVISION:FILE (e.g. Qwen/Qwen3-0.6B-GGUF:Qwen3-0.6B-Q8_0.gguf)"
            ))
        };
        let (head, file) = match s.split_once(':') {
            Some((h, f)) => (h, Some(f)),
            None => (s, None),
        };
        let (repo, revision) = match head.split_once('@') {
            Some((r, v)) => (r, Some(v)),
            None => (head, None),
        };
        let name_ok = |p: &str| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        match repo.split_once('/') {
            Some((org, name)) if name_ok(org) && name_ok(name) => {}
            _ => return Err(bad("the repository must be ORG/NAME (letters, digits, `-`, `_`, `.`)")),
        }
        if let Some(v) = revision {
            let ok = !v.is_empty()
                && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
                && v.split('/').all(name_ok);
            if !ok {
                return Err(bad("the revision must be a branch, tag or commit"));
            }
        }
        if let Some(f) = file {
            if !relative_path_ok(f) {
                return Err(bad("the file must be a path inside the repository"));
            }
        }
        Ok(HubSpec { repo: repo.to_string(), revision: revision.map(String::from), file: file.map(String::from) })
    }

    /// `Some` when a `--model` value names a hub model (`hf:…`), with the parse's result.
    pub fn from_model_arg(text: &str) -> Option<Result<Self>> {
        text.starts_with(PREFIX).then(|| Self::parse(text))
    }

    /// The revision asked for (`main` when the spec names none).
    pub fn revision(&self) -> &str {
        self.revision.as_deref().unwrap_or(DEFAULT_REVISION)
    }

    /// The same spec with a file named.
    pub fn with_file(&self, file: &str) -> Self {
        HubSpec { file: Some(file.to_string()), ..self.clone() }
    }
}

impl std::fmt::Display for HubSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{PREFIX}{}", self.repo)?;
        if let Some(r) = &self.revision {
            write!(f, "@{r}")?;
        }
        if let Some(p) = &self.file {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// A path inside a repository: relative, no `..`, no empty parts.
fn relative_path_ok(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && !p.contains('\\')
        && p.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

/// Where and how to reach the hub, and where its cache is. Built by the shell.
#[derive(Debug, Clone)]
pub struct HubOptions {
    /// The hub's address ([`DEFAULT_ENDPOINT`], or a mirror; `HF_ENDPOINT` in the CLI).
    pub endpoint: String,
    /// The hub cache folder: `HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`.
    pub cache_dir: PathBuf,
    /// A token for gated or private repositories (`HF_TOKEN`).
    pub token: Option<String>,
    /// Use the cache alone; never a request (`--offline`, `HF_HUB_OFFLINE=1`).
    pub offline: bool,
    /// Ask the hub which commit the revision is now even when the cache has the files
    /// (`readout pull`); otherwise a spec found in the cache makes no request.
    pub refresh: bool,
    /// How often a broken download is resumed at once (after a short wait) before giving up; the
    /// partial file stays for a later attempt either way.
    pub retries: usize,
}

impl HubOptions {
    /// The public hub, no token, online, with the cache at `cache_dir`.
    pub fn new(cache_dir: PathBuf) -> Self {
        HubOptions {
            endpoint: DEFAULT_ENDPOINT.to_string(),
            cache_dir,
            token: None,
            offline: false,
            refresh: false,
            retries: 3,
        }
    }

    /// The options the hub's own tools take from their environment, with `var` looking a
    /// variable up (the shell passes the environment; empty values count as unset) and `home`
    /// the user's home folder: the cache `HF_HUB_CACHE`, else `HF_HOME/hub`, else
    /// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`; the endpoint
    /// `HF_ENDPOINT`; the token `HF_TOKEN`, else the file `HF_TOKEN_PATH`, else `HF_HOME/token`
    /// (what `hf auth login` saves); offline when `HF_HUB_OFFLINE` is 1, true, yes or on.
    /// `None` when no cache folder can be named (no variable and no home folder).
    pub fn from_vars(var: &dyn Fn(&str) -> Option<String>, home: Option<PathBuf>) -> Option<Self> {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        let hf_home = var("HF_HOME").map(PathBuf::from).or_else(|| {
            var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".cache")))
                .map(|c| c.join("huggingface"))
        });
        let cache = var("HF_HUB_CACHE").map(PathBuf::from).or_else(|| hf_home.as_ref().map(|h| h.join("hub")))?;
        let mut opts = HubOptions::new(cache);
        if let Some(e) = var("HF_ENDPOINT") {
            opts.endpoint = e;
        }
        let token_file = var("HF_TOKEN_PATH").map(PathBuf::from).or_else(|| hf_home.map(|h| h.join("token")));
        opts.token = var("HF_TOKEN").or_else(|| {
            token_file
                .and_then(|p| std::fs::read_to_string(p).ok())
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        });
        opts.offline = var("HF_HUB_OFFLINE")
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
        Some(opts)
    }
}

/// Where a model came from, as the result file records it: the repository, the commit its
/// revision resolved to, and the file (absent for a model directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelSource {
    /// `ORG/REPO`.
    pub hub: String,
    /// The commit (40 hex digits).
    pub revision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl ModelSource {
    /// The spec that names exactly these files again: `hf:ORG/REPO@COMMIT[:FILE]`.
    pub fn pinned(&self) -> HubSpec {
        HubSpec { repo: self.hub.clone(), revision: Some(self.revision.clone()), file: self.file.clone() }
    }
}

/// How one file got into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetched {
    /// It was in the snapshot already.
    Cached,
    /// Its content was in the cache's blobs (another commit, another tool): linked, not downloaded.
    Linked,
    /// Downloaded and checked; `resumed_from` bytes came from an earlier, broken download.
    Downloaded { resumed_from: u64 },
}

/// One file of a resolved model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    pub name: String,
    pub size: u64,
    pub fetched: Fetched,
}

/// A spec resolved to local files.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The GGUF file, or the model directory (the snapshot), to load.
    pub path: PathBuf,
    pub source: ModelSource,
    pub files: Vec<FileReport>,
    /// How the file was chosen when the spec named none among several (for the shell to show).
    pub chosen: Option<String>,
}

/// A download's progress: `done` of `total` bytes of `file` (`done` starts at the bytes a
/// resumed download already had).
#[derive(Debug, Clone, Copy)]
pub struct DownloadProgress<'a> {
    pub file: &'a str,
    pub done: u64,
    pub total: u64,
}

/// Resolve `spec` to local files: from the cache when they are there (and `refresh` is off),
/// else from the hub, downloading what is missing. Without a file in the spec, a repository
/// with GGUF files gives one GGUF (the only one; else the [`PREFERRED_QUANT`] one; else an error
/// listing them), and one without gives its model directory (config.json, tokenizer files and
/// safetensors weights: what the loader reads).
///
/// `progress` hears about every downloaded chunk and answers whether to go on: `false` stops
/// the download ([`Error::HubStopped`]), keeping what arrived for the next attempt to resume.
pub fn resolve(
    spec: &HubSpec,
    opts: &HubOptions,
    progress: &mut dyn FnMut(&DownloadProgress<'_>) -> bool,
) -> Result<Resolved> {
    let dir = repo_dir(&opts.cache_dir, &spec.repo);
    if !opts.refresh || opts.offline {
        if let Some(found) = from_cache(spec, &dir)? {
            return Ok(found);
        }
    }
    if opts.offline {
        return Err(offline_error(spec, opts, &dir));
    }
    let hub = Hub::new(spec, opts);
    let details = hub.details()?;
    let names: Vec<&str> = details.siblings.iter().map(|s| s.rfilename.as_str()).collect();
    let (choice, chosen) = choose(spec, &names, &opts.endpoint)?;
    let snapshot = dir.join("snapshots").join(&details.sha);
    let mut files = Vec::new();
    for name in choice.files() {
        let sibling = details
            .siblings
            .iter()
            .find(|s| s.rfilename == name)
            .ok_or_else(|| hub.download_error(format!("the hub's file list lost `{name}`")))?;
        files.push(download::ensure(&hub, &dir, &details.sha, sibling, progress)?);
    }
    set_ref(&dir, spec.revision(), &details.sha)?;
    let (path, file) = match &choice {
        Choice::File(f) => (snapshot.join(f), Some(f.clone())),
        Choice::Directory(_) => (snapshot, None),
    };
    Ok(Resolved { path, source: ModelSource { hub: spec.repo.clone(), revision: details.sha, file }, files, chosen })
}

/// What to fetch for a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    /// One file (a GGUF, or the file the spec named).
    File(String),
    /// A model directory: these files of the repository.
    Directory(Vec<String>),
}

impl Choice {
    fn files(&self) -> Vec<String> {
        match self {
            Choice::File(f) => vec![f.clone()],
            Choice::Directory(fs) => fs.clone(),
        }
    }
}

/// A multimodal projector (`mmproj-*.gguf`): beside a GGUF model, never the model.
fn is_projector(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    base.starts_with("mmproj")
}

/// The files of a Hugging Face model directory the loader reads, out of a repository's `names`;
/// `Err` with what is missing when they are not all there.
fn directory_files(names: &[&str]) -> std::result::Result<Vec<String>, String> {
    let has = |n: &str| names.contains(&n);
    let mut missing = Vec::new();
    for need in ["config.json", "tokenizer.json"] {
        if !has(need) {
            missing.push(need.to_string());
        }
    }
    let top_level = |n: &&&str| !n.contains('/');
    let weights: Vec<String> = if has("model.safetensors") {
        vec!["model.safetensors".to_string()]
    } else {
        let mut w: Vec<String> =
            names.iter().filter(top_level).filter(|n| n.ends_with(".safetensors")).map(|n| n.to_string()).collect();
        w.sort();
        w
    };
    if weights.is_empty() {
        missing.push("*.safetensors weights".to_string());
    }
    if !missing.is_empty() {
        return Err(missing.join(", "));
    }
    let mut files: Vec<String> = ["config.json", "tokenizer.json"].map(String::from).to_vec();
    for optional in ["tokenizer_config.json", "chat_template.jinja", "model.safetensors.index.json"] {
        if has(optional) {
            files.push(optional.to_string());
        }
    }
    files.extend(weights);
    Ok(files)
}

/// Which files a spec needs, out of the repository's (or the cached snapshot's) `names`, and a
/// note when Readout chose among several GGUF files.
fn choose(spec: &HubSpec, names: &[&str], endpoint: &str) -> Result<(Choice, Option<String>)> {
    let ggufs: Vec<&str> = {
        let mut g: Vec<&str> =
            names.iter().copied().filter(|n| n.to_ascii_lowercase().ends_with(".gguf") && !is_projector(n)).collect();
        g.sort();
        g
    };
    if let Some(file) = &spec.file {
        if names.contains(&file.as_str()) {
            return Ok((Choice::File(file.clone()), None));
        }
        let listed = if ggufs.is_empty() { String::new() } else { format!("; its GGUF files: {}", ggufs.join(", ")) };
        return Err(Error::HubNotFound {
            what: format!("file `{file}` of {}", spec.repo),
            endpoint: endpoint.to_string(),
            hint: format!("the repository at revision {} has no such file{listed}", spec.revision()),
        });
    }
    match ggufs.len() {
        1 => return Ok((Choice::File(ggufs[0].to_string()), None)),
        0 => {}
        n => {
            let want = PREFERRED_QUANT.to_ascii_lowercase();
            let preferred: Vec<&str> =
                ggufs.iter().copied().filter(|g| g.to_ascii_lowercase().contains(&want)).collect();
            if let [one] = preferred[..] {
                let note = format!(
                    "{} has {n} GGUF files; using {one} ({PREFERRED_QUANT}, chosen when none is named); name another with {}",
                    spec.repo,
                    spec.with_file("FILE")
                );
                return Ok((Choice::File(one.to_string()), Some(note)));
            }
            return Err(Error::HubChoice {
                spec: spec.to_string(),
                detail: format!(
                    "the repository has {n} GGUF files and none is the one {PREFERRED_QUANT}: {}; name one, e.g. {}",
                    ggufs.join(", "),
                    spec.with_file(ggufs[0])
                ),
            });
        }
    }
    if names.contains(&"config.json") {
        return match directory_files(names) {
            Ok(files) => Ok((Choice::Directory(files), None)),
            Err(missing) => Err(Error::HubChoice {
                spec: spec.to_string(),
                detail: format!(
                    "a Hugging Face model directory, but without {missing}; Readout loads GGUF files, or directories with config.json, tokenizer.json and safetensors weights"
                ),
            }),
        };
    }
    Err(Error::HubChoice {
        spec: spec.to_string(),
        detail: "the repository has no GGUF file and no config.json: it is not a model Readout loads (look for a GGUF repository of the model)".to_string(),
    })
}

/// The spec from the cache alone, when its files are there.
fn from_cache(spec: &HubSpec, dir: &Path) -> Result<Option<Resolved>> {
    let Some(commit) = cached_commit(dir, spec.revision()) else { return Ok(None) };
    let snapshot = dir.join("snapshots").join(&commit);
    let names = cache::list_files(&snapshot);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ggufs = refs.iter().filter(|n| n.to_ascii_lowercase().ends_with(".gguf") && !is_projector(n)).count();
    let (choice, chosen) = match choose(spec, &refs, "the cache") {
        Ok(c) => c,
        // Several GGUF files cached and none named: the hub cannot settle that either.
        Err(e @ Error::HubChoice { .. }) if spec.file.is_none() && ggufs > 1 => return Err(e),
        // Not (all) in the cache: the hub may have it.
        Err(Error::HubNotFound { .. } | Error::HubChoice { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for name in choice.files() {
        let p = snapshot.join(&name);
        let size = std::fs::metadata(&p).map_err(|e| Error::io(&p, e))?.len();
        files.push(FileReport { name, size, fetched: Fetched::Cached });
    }
    let (path, file) = match choice {
        Choice::File(f) => (snapshot.join(&f), Some(f)),
        Choice::Directory(_) => (snapshot, None),
    };
    Ok(Some(Resolved { path, source: ModelSource { hub: spec.repo.clone(), revision: commit, file }, files, chosen }))
}

fn offline_error(spec: &HubSpec, opts: &HubOptions, dir: &Path) -> Error {
    let missing = match cached_commit(dir, spec.revision()) {
        None if dir.is_dir() => {
            format!(" (the cache has {} but not its revision {})", spec.repo, spec.revision())
        }
        None => String::new(),
        Some(commit) => match &spec.file {
            Some(f) => format!(" (its snapshot {} has no {f})", &commit[..12]),
            None => format!(" (its snapshot {} has no GGUF file and no complete model directory)", &commit[..12]),
        },
    };
    Error::HubOffline {
        spec: spec.to_string(),
        cache: opts.cache_dir.clone(),
        missing,
        hint: format!(
            "get it while online with `readout pull {}`, then run again",
            spec.to_string().trim_start_matches(PREFIX)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        let s = HubSpec::parse("hf:Qwen/Qwen3-0.6B-GGUF@v1.0:Qwen3-0.6B-Q8_0.gguf").unwrap();
        assert_eq!(s.repo, "Qwen/Qwen3-0.6B-GGUF");
        assert_eq!(s.revision.as_deref(), Some("v1.0"));
        assert_eq!(s.file.as_deref(), Some("Qwen3-0.6B-Q8_0.gguf"));
        assert_eq!(s.to_string(), "hf:Qwen/Qwen3-0.6B-GGUF@v1.0:Qwen3-0.6B-Q8_0.gguf");
        let bare = HubSpec::parse("org/name").unwrap();
        assert_eq!((bare.revision(), bare.file.as_deref()), ("main", None));
        let nested = HubSpec::parse("org/name@refs/pr/1:sub/dir/m.gguf").unwrap();
        assert_eq!(nested.revision(), "refs/pr/1");
        assert_eq!(nested.file.as_deref(), Some("sub/dir/m.gguf"));
        for bad in [
            "",
            "hf:",
            "name",
            "a/b/c",
            "/name",
            "org/",
            "o rg/n",
            "org/name@",
            "org/name:",
            "org/name:../x",
            "org/name:/etc/passwd",
            "org/name@..:f",
            "org/..:f",
        ] {
            assert!(HubSpec::parse(bad).is_err(), "{bad} should not parse");
        }
        assert!(HubSpec::from_model_arg("models/x.gguf").is_none());
        assert!(HubSpec::from_model_arg("hf:org/name").is_some());
    }

    fn spec(file: Option<&str>) -> HubSpec {
        HubSpec { repo: "org/m".into(), revision: None, file: file.map(String::from) }
    }

    #[test]
    fn one_gguf_is_taken_and_projectors_are_not_models() {
        let (c, note) = choose(&spec(None), &["README.md", "m-Q8_0.gguf", "mmproj-m-f16.gguf"], "e").unwrap();
        assert_eq!(c, Choice::File("m-Q8_0.gguf".into()));
        assert!(note.is_none());
    }

    #[test]
    fn several_ggufs_take_the_one_q4_k_m_and_say_so() {
        let names = ["m-Q8_0.gguf", "m-q4_k_m.gguf", "m-Q6_K.gguf"];
        let (c, note) = choose(&spec(None), &names, "e").unwrap();
        assert_eq!(c, Choice::File("m-q4_k_m.gguf".into()));
        let note = note.unwrap();
        assert!(note.contains("3 GGUF files") && note.contains("hf:org/m:FILE"), "{note}");
    }

    #[test]
    fn several_ggufs_without_one_q4_k_m_are_listed() {
        let err = choose(&spec(None), &["b-Q8_0.gguf", "a-F16.gguf"], "e").unwrap_err().to_string();
        assert!(err.contains("a-F16.gguf, b-Q8_0.gguf") && err.contains("hf:org/m:a-F16.gguf"), "{err}");
        let two = choose(&spec(None), &["x-Q4_K_M.gguf", "y-Q4_K_M.gguf"], "e").unwrap_err();
        assert!(matches!(two, Error::HubChoice { .. }));
    }

    #[test]
    fn a_named_file_must_be_there() {
        let (c, _) = choose(&spec(Some("b.gguf")), &["a.gguf", "b.gguf"], "e").unwrap();
        assert_eq!(c, Choice::File("b.gguf".into()));
        let err = choose(&spec(Some("c.gguf")), &["a.gguf", "b.gguf"], "e").unwrap_err();
        assert!(matches!(err, Error::HubNotFound { .. }));
        assert!(err.to_string().contains("a.gguf, b.gguf"), "{err}");
    }

    #[test]
    fn a_directory_gets_what_the_loader_reads() {
        let names = [
            ".gitattributes",
            "README.md",
            "config.json",
            "generation_config.json",
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "model.safetensors.index.json",
            "pytorch_model.bin",
            "tokenizer.json",
            "tokenizer_config.json",
            "onnx/model.safetensors",
        ];
        let (c, _) = choose(&spec(None), &names, "e").unwrap();
        assert_eq!(
            c,
            Choice::Directory(
                [
                    "config.json",
                    "tokenizer.json",
                    "tokenizer_config.json",
                    "model.safetensors.index.json",
                    "model-00001-of-00002.safetensors",
                    "model-00002-of-00002.safetensors",
                ]
                .map(String::from)
                .to_vec()
            )
        );
        let err = choose(&spec(None), &["config.json", "model.safetensors"], "e").unwrap_err().to_string();
        assert!(err.contains("tokenizer.json"), "{err}");
        let err = choose(&spec(None), &["README.md"], "e").unwrap_err().to_string();
        assert!(err.contains("no GGUF file and no config.json"), "{err}");
    }
}
