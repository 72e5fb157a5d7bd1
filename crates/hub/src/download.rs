//! One file of a snapshot into the cache: there already; linked to a blob the cache holds
//! (another commit's, another tool's); or downloaded.
//!
//! A download goes into `blobs/HASH.part`, locked while it is written so that two programs never
//! append to one file. What an earlier attempt left there is resumed with a Range request (a
//! server that ignores Range sends the whole file, and the part starts over); the checksum is
//! computed as the bytes arrive (the kept bytes are read once to start it). The caller's
//! progress callback hears about every chunk and stops the download by answering `false`: the
//! bytes stay in the part for the next attempt. A broken connection is resumed at once, up to
//! `HubOptions::retries` times. A whole file whose checksum matches is renamed to `blobs/HASH`
//! and linked from the snapshot; one that does not match is removed.

use crate::cache::{blob_paths, link_blob};
use crate::checksum::{Checksum, Hasher};
use crate::client::{Hub, Sibling};
use crate::error::{Error, Result};
use crate::{DownloadProgress, Fetched, FileReport};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The most read from the network at once (and so between two progress reports).
const CHUNK: usize = 256 << 10;

/// One file of the snapshot `commit` in place: already there, linked to a blob the cache has,
/// or downloaded (resuming a partial download) and checked.
pub(crate) fn ensure(
    hub: &Hub<'_>,
    dir: &Path,
    commit: &str,
    sibling: &Sibling,
    progress: &mut dyn FnMut(&DownloadProgress<'_>) -> bool,
) -> Result<FileReport> {
    let name = sibling.rfilename.as_str();
    let report = |size, fetched| FileReport { name: name.to_string(), size, fetched };
    let pointer = dir.join("snapshots").join(commit).join(name);
    if pointer.is_file() {
        let size = std::fs::metadata(&pointer).map_err(|e| Error::io(&pointer, e))?.len();
        return Ok(report(size, Fetched::Cached));
    }
    let url = hub.file_url(commit, name);
    let checksum = match sibling.checksum() {
        Some(c) => c,
        None => hub.probe_checksum(&url).map_err(|e| hub.ureq_error(e, Some(name)))?.ok_or_else(|| {
            hub.download_error(format!(
                "the hub gives no checksum for {name} (none in its file list, none in its ETag), so a download of it could not be checked; is {} a Hugging Face hub?",
                hub.opts.endpoint
            ))
        })?,
    };
    let (blob, part) = blob_paths(dir, &checksum.hex);
    let blob_size = std::fs::metadata(&blob).map(|m| m.len()).ok();
    if let Some(size) = blob_size.filter(|&s| Some(s) == sibling.size()) {
        // A link whose blob was gone (`is_file` above failed) is replaced.
        link_blob(dir, &blob, &pointer)?;
        return Ok(report(size, Fetched::Linked));
    }
    let mut download = Download::open(hub, name, url, &checksum, sibling.size(), (blob.clone(), part), progress)?;
    let (resumed_from, size) = download.run()?;
    download.keep()?;
    link_blob(dir, &blob, &pointer)?;
    Ok(report(size, Fetched::Downloaded { resumed_from }))
}

/// A file being downloaded into its part file.
struct Download<'a, 'p> {
    hub: &'a Hub<'a>,
    name: &'a str,
    url: String,
    checksum: &'a Checksum,
    /// The file's size, when the hub's file list gives it.
    size: Option<u64>,
    /// Where the checked file goes.
    blob: PathBuf,
    part: PathBuf,
    /// The part, open and locked.
    file: File,
    /// The bytes in the part.
    have: u64,
    /// The checksum of those bytes so far (absent until the file's size is known).
    hasher: Option<Hasher>,
    /// The bytes an earlier download left that this one kept.
    resumed_from: u64,
    progress: &'p mut dyn FnMut(&DownloadProgress<'_>) -> bool,
}

/// How one request for the file ended.
enum Attempt {
    /// The whole file is in the part; its checksum.
    Done { total: u64, actual: String },
    /// The caller answered `false`.
    Stopped { total: u64 },
    /// The server cannot serve the bytes after the part (416): the part starts over.
    Restart,
}

/// Why one request for the file failed.
enum Failure {
    /// No answer, or an error status.
    Request(Box<ureq::Error>),
    /// The connection broke in the body.
    Body(std::io::Error),
    /// The body ended before the file did.
    Short { total: u64 },
    /// Nothing a second attempt would change.
    Fatal(Error),
}

impl Failure {
    /// Whether resuming at once may get past it.
    fn retry(&self) -> bool {
        match self {
            Failure::Request(e) => match e.as_ref() {
                ureq::Error::Status(status, _) => *status >= 500 || *status == 429,
                ureq::Error::Transport(_) => true,
            },
            Failure::Body(_) | Failure::Short { .. } => true,
            Failure::Fatal(_) => false,
        }
    }
}

impl<'a, 'p> Download<'a, 'p> {
    fn open(
        hub: &'a Hub<'a>,
        name: &'a str,
        url: String,
        checksum: &'a Checksum,
        size: Option<u64>,
        (blob, part): (PathBuf, PathBuf),
        progress: &'p mut dyn FnMut(&DownloadProgress<'_>) -> bool,
    ) -> Result<Self> {
        if let Some(blobs) = part.parent() {
            std::fs::create_dir_all(blobs).map_err(|e| Error::io(blobs, e))?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&part)
            .map_err(|e| Error::io(&part, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(hub.download_error(format!(
                    "another program is downloading {name} into the cache (it holds {}); wait for it, then run again",
                    part.display()
                )))
            }
            // A file system without locks: go on unlocked, as the hub's tools do.
            Err(std::fs::TryLockError::Error(_)) => {}
        }
        let have = file.metadata().map_err(|e| Error::io(&part, e))?.len();
        Ok(Download {
            hub,
            name,
            url,
            checksum,
            size,
            blob,
            part,
            file,
            have,
            hasher: None,
            resumed_from: have,
            progress,
        })
    }

    /// Download until the part holds the whole file and its checksum matches: the bytes an
    /// earlier download left that were kept, and the file's size.
    fn run(&mut self) -> Result<(u64, u64)> {
        let mut retried = 0;
        loop {
            match self.attempt() {
                Ok(Attempt::Done { total, actual }) => {
                    self.check(actual)?;
                    return Ok((self.resumed_from, total));
                }
                Ok(Attempt::Stopped { total }) => {
                    return Err(Error::HubStopped {
                        spec: self.hub.spec.to_string(),
                        file: self.name.to_string(),
                        kept: self.have,
                        total,
                        part: self.part.clone(),
                    })
                }
                Ok(Attempt::Restart) => {}
                Err(f) if f.retry() && retried < self.hub.opts.retries => {
                    // 0.3 s, doubling, at most 10 s.
                    let wait = 300u64.saturating_mul(1 << retried.min(6)).min(10_000);
                    std::thread::sleep(std::time::Duration::from_millis(wait));
                    retried += 1;
                }
                Err(f) => return Err(self.failure(f)),
            }
        }
    }

    /// One request for the bytes after the part, streamed into it.
    fn attempt(&mut self) -> std::result::Result<Attempt, Failure> {
        if let Some(size) = self.size {
            if self.have > size {
                // Longer than the file: not a prefix of it.
                self.restart().map_err(Failure::Fatal)?;
            }
            if self.have == size {
                // Whole already (a download stopped before its rename): nothing to ask.
                let hasher = self.hasher_for(size).map_err(Failure::Fatal)?;
                let _ = (self.progress)(&DownloadProgress { file: self.name, done: size, total: size });
                return Ok(Attempt::Done { total: size, actual: hasher.finish() });
            }
        }
        let resp = self.hub.get_file(&self.url, self.have).map_err(Failure::Request)?;
        let (start, total) = match resp.status() {
            206 => content_range(resp.header("content-range"))
                .ok_or_else(|| Failure::Fatal(self.not_hub("lacks a valid `Content-Range` header".to_string())))?,
            // The whole file: no Range asked, or the server ignores Range.
            200 => (0, resp.header("content-length").and_then(|l| l.parse().ok())),
            416 if self.have > 0 => {
                self.restart().map_err(Failure::Fatal)?;
                return Ok(Attempt::Restart);
            }
            status => return Err(Failure::Fatal(self.not_hub(format!("is HTTP {status}")))),
        };
        if start == 0 && self.have > 0 {
            self.restart().map_err(Failure::Fatal)?;
        } else if start != self.have {
            return Err(Failure::Fatal(self.not_hub(format!("starts at byte {start}, not {}", self.have))));
        }
        let total = match (self.size, total) {
            (Some(s), Some(t)) if s != t => {
                return Err(Failure::Fatal(self.not_hub(format!("has {t} bytes, but the file list gives {s}"))))
            }
            (Some(s), _) | (None, Some(s)) => s,
            (None, None) => return Err(Failure::Fatal(self.not_hub("does not say its size".to_string()))),
        };
        let mut hasher = self.hasher_for(total).map_err(Failure::Fatal)?;
        self.file.seek(SeekFrom::Start(self.have)).map_err(|e| Failure::Fatal(Error::io(&self.part, e)))?;
        if !(self.progress)(&DownloadProgress { file: self.name, done: self.have, total }) {
            return Ok(Attempt::Stopped { total });
        }
        let mut body = resp.into_reader();
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.hasher = Some(hasher);
                    return Err(Failure::Body(e));
                }
            };
            if self.have + n as u64 > total {
                self.restart().map_err(Failure::Fatal)?;
                return Err(Failure::Fatal(self.not_hub(format!("goes on past its {total} bytes"))));
            }
            self.file.write_all(&buf[..n]).map_err(|e| Failure::Fatal(Error::io(&self.part, e)))?;
            hasher.update(&buf[..n]);
            self.have += n as u64;
            if !(self.progress)(&DownloadProgress { file: self.name, done: self.have, total }) {
                return Ok(Attempt::Stopped { total });
            }
        }
        if self.have < total {
            self.hasher = Some(hasher);
            return Err(Failure::Short { total });
        }
        Ok(Attempt::Done { total, actual: hasher.finish() })
    }

    /// The checksum of the part's bytes so far: carried over from the last attempt, or computed
    /// from the part (what an earlier download left) for a file of `total` bytes.
    fn hasher_for(&mut self, total: u64) -> Result<Hasher> {
        if let Some(h) = self.hasher.take() {
            return Ok(h);
        }
        let mut h = Hasher::new(self.checksum.algorithm, total);
        self.file.seek(SeekFrom::Start(0)).map_err(|e| Error::io(&self.part, e))?;
        let read = h.feed(&mut (&self.file).take(self.have), &self.part)?;
        if read != self.have {
            let why = format!("the partial download was cut to {read} of its {} bytes while it was read", self.have);
            return Err(Error::io(&self.part, std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why)));
        }
        Ok(h)
    }

    /// Empty the part: the download starts over.
    fn restart(&mut self) -> Result<()> {
        self.file.set_len(0).map_err(|e| Error::io(&self.part, e))?;
        self.file.seek(SeekFrom::Start(0)).map_err(|e| Error::io(&self.part, e))?;
        self.have = 0;
        self.hasher = None;
        self.resumed_from = 0;
        Ok(())
    }

    /// The whole file's checksum against the hub's; a mismatch removes the part.
    fn check(&self, actual: String) -> Result<()> {
        if actual == self.checksum.hex {
            return Ok(());
        }
        let _ = std::fs::remove_file(&self.part);
        Err(Error::HubChecksum {
            file: format!("{} of {}", self.name, self.hub.spec),
            algorithm: self.checksum.algorithm.label(),
            expected: self.checksum.hex.clone(),
            actual,
            blob: self.blob.clone(),
        })
    }

    /// The checked part, on disk, renamed to its blob (still locked: no one appends to it).
    fn keep(&mut self) -> Result<()> {
        self.file.sync_all().map_err(|e| Error::io(&self.part, e))?;
        std::fs::rename(&self.part, &self.blob).map_err(|e| Error::io(&self.blob, e))
    }

    /// An answer for the file that is not what the hub sends.
    fn not_hub(&self, what: String) -> Error {
        self.hub.download_error(format!(
            "the hub's answer for {} {what}; is {} a Hugging Face hub?",
            self.name, self.hub.opts.endpoint
        ))
    }

    /// The error a failure ends with, saying what is kept for the next attempt.
    fn failure(&self, f: Failure) -> Error {
        let kept = match self.size {
            Some(total) if self.have > 0 => format!(
                "; {} of {total} bytes are kept in {} and the next attempt resumes from there",
                self.have,
                self.part.display()
            ),
            _ => String::new(),
        };
        let name = self.name;
        match f {
            Failure::Request(e) => self.hub.ureq_error(e, Some(name)),
            Failure::Body(e) => self.hub.download_error(format!("downloading {name}: {e}{kept}; run again")),
            Failure::Short { total } => self.hub.download_error(format!(
                "downloading {name}: the connection closed after {} of {total} bytes{kept}; run again",
                self.have
            )),
            Failure::Fatal(e) => e,
        }
    }
}

/// `Content-Range: bytes A-B/TOTAL` (TOTAL may be `*`): the first byte and the total.
fn content_range(header: Option<&str>) -> Option<(u64, Option<u64>)> {
    let (range, total) = header?.trim().strip_prefix("bytes ")?.split_once('/')?;
    let (a, b) = range.split_once('-')?;
    let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    let total = if total.trim() == "*" { None } else { Some(total.trim().parse().ok()?) };
    (a <= b && total.is_none_or(|t| b < t)).then_some((a, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_are_read_strictly() {
        assert_eq!(content_range(Some("bytes 100-199/200")), Some((100, Some(200))));
        assert_eq!(content_range(Some("bytes 0-0/*")), Some((0, None)));
        for bad in ["", "bytes */200", "bytes 5-4/10", "bytes 0-10/10", "items 0-1/2", "bytes x-1/2"] {
            assert_eq!(content_range(Some(bad)), None, "{bad}");
        }
        assert_eq!(content_range(None), None);
    }
}
