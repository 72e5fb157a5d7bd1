//! The Hugging Face cache's layout, read and written as the hub's own tools do, so that what they
//! downloaded is found here and what Readout downloads serves them:
//!
//! ```text
//! CACHE/models--ORG--REPO/
//!   blobs/HASH                  one file per content, named by its checksum
//!   blobs/HASH.part             a download under way or broken off (Readout's; resumed)
//!   snapshots/COMMIT/PATH       a relative link to ../../blobs/HASH (a copy where links fail)
//!   refs/REVISION               the commit a branch or tag pointed at when last asked
//! ```
//!
//! Every file here appears whole or not at all: written under another name in its folder, then
//! renamed into place.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The folder of a repository in the cache: `CACHE/models--ORG--REPO`.
pub fn repo_dir(cache_dir: &Path, repo: &str) -> PathBuf {
    cache_dir.join(format!("models--{}", repo.replace('/', "--")))
}

/// A full commit id: 40 lowercase hex digits.
pub(crate) fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The commit a revision points at in the cache: the commit itself when the revision is one and
/// its snapshot exists, else `refs/REVISION`.
pub(crate) fn cached_commit(dir: &Path, revision: &str) -> Option<String> {
    if is_commit(revision) {
        return dir.join("snapshots").join(revision).is_dir().then(|| revision.to_string());
    }
    let text = std::fs::read_to_string(dir.join("refs").join(revision)).ok()?;
    let commit = text.trim().to_string();
    is_commit(&commit).then_some(commit)
}

/// Every file under `root`, as `/`-separated paths relative to it (links followed: a link
/// whose blob is gone is left out).
pub(crate) fn list_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
            let path = e.path();
            if path.is_dir() {
                walk(&path, &rel, out);
            } else if path.is_file() {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, "", &mut out);
    out.sort();
    out
}

/// The blob of a checksum, and the partial download that becomes it.
pub(crate) fn blob_paths(dir: &Path, checksum: &str) -> (PathBuf, PathBuf) {
    let blobs = dir.join("blobs");
    (blobs.join(checksum), blobs.join(format!("{checksum}.part")))
}

fn create_parent(path: &Path) -> Result<&Path> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    Ok(parent)
}

/// Point `refs/REVISION` at `commit` (a branch or tag; a commit needs no ref).
pub(crate) fn set_ref(dir: &Path, revision: &str, commit: &str) -> Result<()> {
    if is_commit(revision) {
        return Ok(());
    }
    let path = dir.join("refs").join(revision);
    let parent = create_parent(&path)?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(|e| Error::io(parent, e))?;
    std::io::Write::write_all(&mut tmp, commit.as_bytes()).map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
    Ok(())
}

/// Link `link` (a path under `dir`, the repository's folder) to the blob `target`: relative, as
/// the hub's tools link them; a copy where links are not allowed. Replaces what is there.
pub(crate) fn link_blob(dir: &Path, target: &Path, link: &Path) -> Result<()> {
    let parent = create_parent(link)?;
    // snapshots/COMMIT/a/b.gguf → ../../../blobs/NAME: one `..` per folder below `dir`.
    let up = link.strip_prefix(dir).map(|rel| rel.components().count().saturating_sub(1)).unwrap_or(2);
    let rel = std::iter::repeat_n(std::path::Component::ParentDir.as_os_str(), up)
        .collect::<PathBuf>()
        .join("blobs")
        .join(target.file_name().unwrap_or_default());
    // A name no other writer uses, beside the link, then renamed over it.
    let tmp = tempfile::Builder::new().prefix(".link").tempfile_in(parent).map_err(|e| Error::io(parent, e))?;
    let tmp = tmp.into_temp_path();
    let _ = std::fs::remove_file(&tmp);
    if symlink(&rel, &tmp).is_err() {
        std::fs::copy(target, &tmp).map_err(|e| Error::io(link, e))?;
    }
    std::fs::rename(&tmp, link).map_err(|e| Error::io(link, e))?;
    // Renamed away: nothing is left for the guard to remove.
    let _ = tmp.keep();
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_file(target, link)
}

#[cfg(not(any(unix, windows)))]
fn symlink(_target: &Path, _link: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_folders_are_named_as_the_hub_names_them() {
        assert_eq!(repo_dir(Path::new("c"), "Qwen/Qwen3-0.6B-GGUF"), Path::new("c/models--Qwen--Qwen3-0.6B-GGUF"));
    }

    #[test]
    fn blob_links_are_relative_to_the_snapshot_and_replace_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("models--o--m");
        let blob = repo.join("blobs").join("abc");
        std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
        std::fs::write(&blob, "x").unwrap();
        for rel in ["f.gguf", "sub/dir/f.gguf"] {
            let link = repo.join("snapshots").join("c0mmit").join(rel);
            link_blob(&repo, &blob, &link).unwrap();
            assert_eq!(std::fs::read_to_string(&link).unwrap(), "x", "{rel}");
            #[cfg(unix)]
            assert!(std::fs::read_link(&link).unwrap().is_relative());
        }
        // A stale link (its blob gone) is replaced; no temporary name is left beside it.
        let other = repo.join("blobs").join("def");
        std::fs::write(&other, "y").unwrap();
        let link = repo.join("snapshots").join("c0mmit").join("f.gguf");
        std::fs::remove_file(&blob).unwrap();
        link_blob(&repo, &other, &link).unwrap();
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "y");
        assert_eq!(list_files(&repo.join("snapshots")), ["c0mmit/f.gguf"]);
    }

    #[test]
    fn refs_are_written_whole_and_commits_need_none() {
        let dir = tempfile::tempdir().unwrap();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        set_ref(dir.path(), "refs/pr/1", commit).unwrap();
        set_ref(dir.path(), "main", commit).unwrap();
        set_ref(dir.path(), "main", commit).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("refs/main")).unwrap(), commit);
        assert_eq!(cached_commit(dir.path(), "refs/pr/1").as_deref(), Some(commit));
        set_ref(dir.path(), commit, commit).unwrap();
        assert!(!dir.path().join("refs").join(commit).exists());
        assert_eq!(list_files(&dir.path().join("refs")), ["main", "refs/pr/1"]);
    }
}
