//! The process's own memory, for the result files: every run records its peak resident memory,
//! because a judge that does not fit the user's machine is no judge at all.

/// The most resident memory this process has held so far, in bytes (`getrusage`'s
/// `ru_maxrss`: kibibytes on Linux, bytes on macOS); `None` where it cannot be read.
pub fn peak_rss() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes one rusage into the pointer, which points at room for one.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: getrusage returned 0, so it filled the struct (zeroed before, in any case).
        let max = unsafe { usage.assume_init() }.ru_maxrss;
        let max = u64::try_from(max).ok()?;
        Some(if cfg!(target_os = "macos") { max } else { max * 1024 })
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn peak_rss_grows_with_memory_touched() {
        let before = super::peak_rss().unwrap();
        assert!(before > 1 << 20, "{before} bytes: a running test binary holds more than a MiB");
        // Touch 64 MiB more than was ever held.
        let v = vec![1u8; (before as usize) + (64 << 20)];
        let after = super::peak_rss().unwrap();
        assert!(after >= before + (32 << 20), "{before} -> {after} after touching {} bytes", v.len());
        drop(v);
    }
}
