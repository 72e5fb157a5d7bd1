//! The hub's HTTP side, on a blocking ureq agent: the revision's file list from its API, a file's
//! bytes from `resolve/COMMIT/PATH` (from an offset, with a Range request), redirects followed
//! here so that the token goes to the hub's own host only, and the hub's answers read into typed
//! errors (not found, needs a token, network).

use crate::checksum::Checksum;
use crate::error::{Error, Result};
use crate::{relative_path_ok, HubOptions, HubSpec};
use serde::Deserialize;
use std::io::Read;

/// Redirects followed for one request (the hub sends LFS files to its CDN: one or two).
const MAX_REDIRECTS: usize = 10;

/// The most of the API's answer read (a repository with thousands of files is a few MB).
const MAX_DETAILS_BYTES: u64 = 64 << 20;

/// The hub's answer about a revision: its commit and its files.
#[derive(Debug, Deserialize)]
pub(crate) struct RepoDetails {
    pub sha: String,
    #[serde(default)]
    pub siblings: Vec<Sibling>,
}

/// One file of a revision, as the API lists it.
#[derive(Debug, Deserialize)]
pub(crate) struct Sibling {
    pub rfilename: String,
    size: Option<u64>,
    #[serde(rename = "blobId")]
    blob_id: Option<String>,
    lfs: Option<Lfs>,
}

#[derive(Debug, Deserialize)]
struct Lfs {
    sha256: String,
    size: u64,
}

impl Sibling {
    /// The checksum the hub gives for the file, which is also its blob's name in the cache.
    pub(crate) fn checksum(&self) -> Option<Checksum> {
        match (&self.lfs, &self.blob_id) {
            (Some(l), _) => Checksum::parse(&l.sha256),
            (None, Some(b)) => Checksum::parse(b),
            (None, None) => None,
        }
    }

    pub(crate) fn size(&self) -> Option<u64> {
        self.lfs.as_ref().map(|l| l.size).or(self.size)
    }
}

/// The hub's client for one spec, and what its answers mean.
pub(crate) struct Hub<'a> {
    pub spec: &'a HubSpec,
    pub opts: &'a HubOptions,
    agent: ureq::Agent,
}

impl<'a> Hub<'a> {
    pub(crate) fn new(spec: &'a HubSpec, opts: &'a HubOptions) -> Self {
        let agent = ureq::AgentBuilder::new()
            .redirects(0)
            .try_proxy_from_env(true)
            .timeout_connect(std::time::Duration::from_secs(30))
            .timeout_read(std::time::Duration::from_secs(60))
            .user_agent(&format!("readout/{}", env!("CARGO_PKG_VERSION")))
            .build();
        Hub { spec, opts, agent }
    }

    fn endpoint(&self) -> &str {
        self.opts.endpoint.trim_end_matches('/')
    }

    pub(crate) fn download_error(&self, detail: String) -> Error {
        Error::HubDownload { spec: self.spec.to_string(), detail }
    }

    /// An HTTP error status as a typed error; `file` when the request was for one file.
    fn status_error(&self, status: u16, code: Option<&str>, message: &str, file: Option<&str>) -> Error {
        let endpoint = self.opts.endpoint.clone();
        let repo = &self.spec.repo;
        let said = if message.is_empty() { String::new() } else { format!(" (the hub says: {message})") };
        match (status, code) {
            (_, Some("GatedRepo")) | (403, _) => Error::HubAccess {
                repo: repo.clone(),
                endpoint,
                status,
                hint: format!(
                    "the repository is gated{said}: accept its terms on its page while logged in, then set HF_TOKEN to a token of that account"
                ),
            },
            (_, Some("RevisionNotFound")) => Error::HubNotFound {
                what: format!("revision `{}` of {repo}", self.spec.revision()),
                endpoint,
                hint: format!("name a branch, tag or commit the repository has{said}"),
            },
            (_, Some("EntryNotFound")) => Error::HubNotFound {
                what: format!("file `{}` of {repo}", file.unwrap_or("?")),
                endpoint,
                hint: format!("the repository at revision {} has no such file{said}", self.spec.revision()),
            },
            (404, _) | (401, _) if file.is_none() || code == Some("RepoNotFound") => Error::HubNotFound {
                what: format!("repository {repo}"),
                endpoint,
                hint: format!(
                    "check its name (ORG/REPO, as in the address of its page){said}; a private repository needs HF_TOKEN"
                ),
            },
            (404, _) => Error::HubNotFound {
                what: format!("file `{}` of {repo}", file.unwrap_or("?")),
                endpoint,
                hint: format!("the repository at revision {} has no such file{said}", self.spec.revision()),
            },
            (401, _) => Error::HubAccess {
                repo: repo.clone(),
                endpoint,
                status,
                hint: format!("the hub wants a token{said}: set HF_TOKEN to a token that can read it"),
            },
            _ => self.download_error(format!("the hub answered HTTP {status}{said}; try again later")),
        }
    }

    /// A failed request as a typed error; `file` when the request was for one file.
    pub(crate) fn ureq_error(&self, e: Box<ureq::Error>, file: Option<&str>) -> Error {
        match *e {
            ureq::Error::Status(status, resp) => {
                let code = resp.header("x-error-code").map(String::from);
                let message = resp.header("x-error-message").map(String::from).unwrap_or_default();
                self.status_error(status, code.as_deref(), &message, file)
            }
            ureq::Error::Transport(t) => self.download_error(format!(
                "cannot reach {} ({t}); check the network, or use --offline",
                self.opts.endpoint
            )),
        }
    }

    /// The revision's commit and files (`?blobs=true`: sizes and checksums).
    pub(crate) fn details(&self) -> Result<RepoDetails> {
        let url = format!(
            "{}/api/models/{}/revision/{}?blobs=true",
            self.endpoint(),
            self.spec.repo,
            self.spec.revision().replace('/', "%2F")
        );
        let resp = self.request("GET", &url, None).map_err(|e| self.ureq_error(e, None))?;
        let not_hub = |why: String| {
            self.download_error(format!(
                "the hub's answer about the repository is not what Readout reads ({why}); is {} a Hugging Face hub?",
                self.opts.endpoint
            ))
        };
        if resp.status() != 200 {
            return Err(not_hub(format!("HTTP {}", resp.status())));
        }
        let details: RepoDetails =
            serde_json::from_reader(resp.into_reader().take(MAX_DETAILS_BYTES)).map_err(|e| not_hub(e.to_string()))?;
        if !crate::cache::is_commit(&details.sha) {
            return Err(self.download_error(format!("the hub gave `{}` as the commit, not 40 hex digits", details.sha)));
        }
        if let Some(bad) = details.siblings.iter().find(|s| !relative_path_ok(&s.rfilename)) {
            return Err(self.download_error(format!("the hub lists a file `{}` outside the repository", bad.rfilename)));
        }
        Ok(details)
    }

    /// The address of a file of a commit.
    pub(crate) fn file_url(&self, commit: &str, name: &str) -> String {
        format!("{}/{}/resolve/{commit}/{}", self.endpoint(), self.spec.repo, url_path(name))
    }

    /// The file's bytes from byte `from` on (a Range request when `from > 0`), redirects followed.
    /// A server that ignores Range answers 200 with the whole file.
    pub(crate) fn get_file(&self, url: &str, from: u64) -> std::result::Result<ureq::Response, Box<ureq::Error>> {
        self.request("GET", url, (from > 0).then_some(from))
    }

    /// The checksum a file's own answer names when the file list gave none: the ETag of the hub's
    /// `resolve` (`X-Linked-Etag` for LFS files, whose `ETag` is the pointer's).
    pub(crate) fn probe_checksum(&self, url: &str) -> std::result::Result<Option<Checksum>, Box<ureq::Error>> {
        let resp = self.agent_request("HEAD", url).call().map_err(Box::new)?;
        let etag = resp.header("x-linked-etag").or_else(|| resp.header("etag")).unwrap_or("");
        Ok(Checksum::parse(etag.trim_start_matches("W/").trim_matches('"')))
    }

    /// A request on the agent: the user agent, no compression (byte offsets must be the
    /// file's), the token when `url` is on the hub's own host.
    fn agent_request(&self, method: &str, url: &str) -> ureq::Request {
        let mut req = self.agent.request(method, url).set("Accept-Encoding", "identity");
        if let Some(token) = self.opts.token.as_deref().filter(|_| origin(url) == origin(self.endpoint())) {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        req
    }

    /// `method` on `url`, following redirects (relative or to another host, where the token
    /// does not go); `from` asks for the bytes from there on.
    fn request(
        &self,
        method: &str,
        url: &str,
        from: Option<u64>,
    ) -> std::result::Result<ureq::Response, Box<ureq::Error>> {
        let mut url = url.to_string();
        let mut redirects = 0;
        loop {
            let mut req = self.agent_request(method, &url);
            if let Some(from) = from {
                req = req.set("Range", &format!("bytes={from}-"));
            }
            let resp = req.call().map_err(Box::new)?;
            let location = resp.header("location").filter(|_| (300..400).contains(&resp.status()));
            match location {
                // Past the limit the redirect itself comes back, for the caller to refuse.
                Some(loc) if redirects < MAX_REDIRECTS => url = join(&url, loc),
                _ => return Ok(resp),
            }
            redirects += 1;
        }
    }
}

/// `scheme://host[:port]` of an absolute URL (the whole URL when it has no path).
fn origin(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    url[after..].find('/').map_or(url, |i| &url[..after + i])
}

/// A redirect's `Location` read against the URL that answered it.
fn join(base: &str, location: &str) -> String {
    if location.contains("://") {
        location.to_string()
    } else if let Some(rest) = location.strip_prefix("//") {
        let scheme = base.split("://").next().unwrap_or("https");
        format!("{scheme}://{rest}")
    } else if location.starts_with('/') {
        format!("{}{location}", origin(base))
    } else {
        let path = base.split(['?', '#']).next().unwrap_or(base);
        let dir = path.rfind('/').filter(|&i| i >= origin(base).len()).map_or(path.len(), |i| i + 1);
        let sep = if dir == path.len() { "/" } else { "" };
        format!("{}{sep}{location}", &path[..dir])
    }
}

/// A path in a repository as a URL's path: `/` kept, everything but unreserved characters
/// percent-encoded.
fn url_path(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_are_read_against_the_url_that_answered() {
        let base = "https://huggingface.co/org/m/resolve/abc/sub/f.gguf?x=1";
        assert_eq!(origin(base), "https://huggingface.co");
        assert_eq!(origin("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(join(base, "https://cdn.example/x?sig=1"), "https://cdn.example/x?sig=1");
        assert_eq!(join(base, "//cdn.example/x"), "https://cdn.example/x");
        assert_eq!(join(base, "/api/x"), "https://huggingface.co/api/x");
        assert_eq!(join(base, "g.gguf"), "https://huggingface.co/org/m/resolve/abc/sub/g.gguf");
        assert_eq!(join("http://h:1", "a"), "http://h:1/a");
    }

    #[test]
    fn file_paths_are_percent_encoded_but_their_folders_kept() {
        assert_eq!(url_path("sub/Model Q4 #1.gguf"), "sub/Model%20Q4%20%231.gguf");
        assert_eq!(url_path("model-00001-of-00002.safetensors"), "model-00001-of-00002.safetensors");
    }
}
