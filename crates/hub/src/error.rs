//! The hub client's one error enum: every variant says what went wrong with which repository,
//! revision or file, and what to do about it. The library wraps it (`readout::Error::Hub`), so
//! the shells read one error either way.

use std::path::PathBuf;

/// Everything getting a model from the hub can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A repository, revision or file the hub does not have.
    #[error("{what} is not on the hub ({endpoint}): {hint}")]
    HubNotFound { what: String, endpoint: String, hint: String },

    /// A gated or private repository, and no token (or one without access).
    #[error("{repo} on {endpoint} is refused without permission (HTTP {status}): {hint}")]
    HubAccess { repo: String, endpoint: String, status: u16, hint: String },

    /// Offline, and the cache lacks what a spec needs.
    #[error("{spec} is not in the Hugging Face cache {cache}{missing}, and offline mode downloads nothing: {hint}")]
    HubOffline { spec: String, cache: PathBuf, missing: String, hint: String },

    /// A downloaded file whose content does not match the hub's checksum; it is not kept.
    /// `file` names the file and the spec it was for.
    #[error("{file}: its {algorithm} is {actual} but the hub gives {expected}: the download is corrupt, so it was removed from the cache ({blob}); run again to download it anew")]
    HubChecksum { file: String, algorithm: &'static str, expected: String, actual: String, blob: PathBuf },

    /// A spec without a file whose repository does not settle which one to load.
    #[error("{spec}: {detail}")]
    HubChoice { spec: String, detail: String },

    /// The network, or an answer that is not the hub's.
    #[error("{spec}: {detail}")]
    HubDownload { spec: String, detail: String },

    /// A download stopped by its caller (the progress callback answered `false`). What arrived
    /// is kept in the cache's `.part` file, which the next attempt resumes.
    #[error("{spec}: the download of {file} was stopped after {kept} of {total} bytes; they are kept in {part}, and getting {spec} again resumes from there")]
    HubStopped { spec: String, file: String, kept: u64, total: u64, part: PathBuf },

    /// A spec that does not parse.
    #[error("{0}")]
    Config(String),

    /// A file or folder of the cache that cannot be read or written. The OS error is part of
    /// the message, not a separate source, so `{:#}` prints it once.
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },
}

/// The hub client's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), err: source }
    }
}
