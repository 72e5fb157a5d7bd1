//! The checksums the hub names files by, computed as the bytes stream in: sha256 (64 hex digits)
//! for LFS files, the git blob id (40: sha1 of `blob LEN\0` followed by the bytes) for the files
//! git keeps itself. A file's checksum is also its blob's name in the cache.

use crate::error::{Error, Result};
use sha1::Digest;
use std::io::Read;
use std::path::Path;

/// How a checksum is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    /// LFS files.
    Sha256,
    /// Files kept in git: sha1 of `blob LEN\0` and the content.
    GitBlob,
}

impl Algorithm {
    /// The name error messages give it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::GitBlob => "git blob id",
        }
    }
}

/// A checksum the hub gives for a file (lowercase hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checksum {
    pub algorithm: Algorithm,
    pub hex: String,
}

impl Checksum {
    /// The checksum `name` is (a sibling's sha256 or blob id, an ETag without its quotes):
    /// 64 hex digits a sha256, 40 a git blob id; `None` for anything else.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        if !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let algorithm = match name.len() {
            64 => Algorithm::Sha256,
            40 => Algorithm::GitBlob,
            _ => return None,
        };
        Some(Checksum { algorithm, hex: name.to_ascii_lowercase() })
    }
}

/// A checksum being computed over a file's bytes, in order.
pub(crate) enum Hasher {
    Sha256(sha2::Sha256),
    GitBlob(sha1::Sha1),
}

impl Hasher {
    /// A hasher for a file of `len` bytes (the git blob id starts with the length).
    pub(crate) fn new(algorithm: Algorithm, len: u64) -> Self {
        match algorithm {
            Algorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algorithm::GitBlob => {
                let mut h = sha1::Sha1::new();
                h.update(format!("blob {len}\0").as_bytes());
                Hasher::GitBlob(h)
            }
        }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::GitBlob(h) => h.update(bytes),
        }
    }

    /// The checksum, as lowercase hex.
    pub(crate) fn finish(self) -> String {
        match self {
            Hasher::Sha256(h) => hex::encode(h.finalize()),
            Hasher::GitBlob(h) => hex::encode(h.finalize()),
        }
    }

    /// Hash everything `reader` gives (`path` names it in errors); the bytes read.
    pub(crate) fn feed(&mut self, reader: &mut impl Read, path: &Path) -> Result<u64> {
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => return Ok(total),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(path, e)),
            };
            self.update(&buf[..n]);
            total += n as u64;
        }
    }
}

/// A file's checksum by `algorithm`, read through once.
#[cfg(test)]
pub(crate) fn of_file(path: &Path, algorithm: Algorithm) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut h = Hasher::new(algorithm, len);
    h.feed(&mut f, path)?;
    Ok(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sha256_or_git_blob_ids() {
        let sha = "5891B5B522D5DF086D0FF0B110FBD9D21BB4FC7163AF34D08286A2E846F6BE03";
        let c = Checksum::parse(sha).unwrap();
        assert_eq!((c.algorithm, c.hex), (Algorithm::Sha256, sha.to_ascii_lowercase()));
        let blob = Checksum::parse("ce013625030ba8dba906f756967f9e9ca394464a").unwrap();
        assert_eq!(blob.algorithm, Algorithm::GitBlob);
        for bad in ["", "not-a-checksum", "abc", &sha[..63], &format!("{sha}0"), "W/\"ce01\""] {
            assert!(Checksum::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn git_blob_ids_are_computed_as_git_does() {
        // `printf 'hello\n' | git hash-object --stdin` = ce013625030ba8dba906f756967f9e9ca394464a
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "hello\n").unwrap();
        assert_eq!(of_file(&p, Algorithm::GitBlob).unwrap(), "ce013625030ba8dba906f756967f9e9ca394464a");
        // sha256("hello\n")
        let sha = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
        assert_eq!(of_file(&p, Algorithm::Sha256).unwrap(), sha);
    }

    #[test]
    fn chunks_hash_as_the_whole() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for algorithm in [Algorithm::Sha256, Algorithm::GitBlob] {
            let mut whole = Hasher::new(algorithm, bytes.len() as u64);
            whole.update(&bytes);
            let mut parts = Hasher::new(algorithm, bytes.len() as u64);
            for chunk in bytes.chunks(999) {
                parts.update(chunk);
            }
            assert_eq!(whole.finish(), parts.finish());
        }
    }
}
