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

/// Give the memory freed since the last call back to the system, where the allocator keeps it
/// (glibc's arenas keep what a long state's passes freed: a server that read twenty states of
/// 4,096 tokens held 441 MB where it started at 177 MB). A server calls this when its queue is
/// idle; elsewhere it does nothing. Returns whether memory was given back.
pub fn give_back() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks glibc's own free lists; it takes no pointer of ours.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Start measuring the peak anew, where the system allows it: on Linux the kernel's high-water
/// mark of this process's resident memory is reset (`/proc/self/clear_refs`, value 5), so that
/// [`peak_rss_since_reset`] gives the peak of what ran after. A jury's judges run one after
/// another in one process: each judge's peak is its own. Returns whether it was reset.
pub fn reset_peak() -> bool {
    #[cfg(target_os = "linux")]
    {
        std::fs::write("/proc/self/clear_refs", b"5").is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// The peak resident memory since the last [`reset_peak`] (Linux: `VmHWM` of
/// `/proc/self/status`); elsewhere, or where it cannot be read, the process's peak
/// ([`peak_rss`]).
pub fn peak_rss_since_reset() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string("/proc/self/status").ok();
        let hwm = status.as_deref().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        });
        if let Some(kib) = hwm {
            return Some(kib * 1024);
        }
    }
    peak_rss()
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
        the_peak_since_a_reset_forgets_what_went_before();
    }

    /// In the test above: two tests touching memory at once would see each other's.
    fn the_peak_since_a_reset_forgets_what_went_before() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let v = std::hint::black_box(vec![1u8; 256 << 20]);
        let high = super::peak_rss_since_reset().unwrap();
        assert!(high >= 256 << 20, "{high}");
        drop(v);
        if super::reset_peak() {
            let after = super::peak_rss_since_reset().unwrap();
            assert!(after + (128 << 20) < high, "{high} -> {after} after the 256 MiB went and the peak was reset");
        }
    }
}
