//! Atomic writes: every file Readout writes that a reader, a resumed job or a crash may meet
//! half-written (result files, calibration files, checkpoints, the app's settings and labels)
//! goes through [`write`], so none of them is ever seen half-written.

use crate::error::{Error, Result};
use std::path::Path;

/// Write `bytes` to `path` atomically: a temporary file beside it with a name unique to this
/// writer (`.NAME.XXXXXX.tmp`, its folder created), flushed to disk, then renamed over it. A
/// reader, or a process killed at any moment, sees the old file or the new one, never half of one;
/// two writers of the same path (threads or processes) never share a temporary file, and the last
/// rename wins whole. A write that fails removes its temporary file.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    {
        use std::io::Write;
        tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
        tmp.as_file().sync_all().map_err(|e| Error::io(tmp.path(), e))?;
    }
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    // The rename itself on disk too (power loss); a folder that cannot be opened is not an error.
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_writers_of_one_path_both_succeed_and_leave_one_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sets").join("set.jsonl");
        let texts: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'a' + i; 64 * 1024]).collect();
        std::thread::scope(|s| {
            for t in &texts {
                let p = &p;
                s.spawn(move || {
                    for _ in 0..20 {
                        super::write(p, t).unwrap();
                    }
                });
            }
        });
        let got = std::fs::read(&p).unwrap();
        assert!(texts.contains(&got), "the file is not one writer's bytes");
        let left: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, ["set.jsonl"], "temporary files left behind");
    }
}
