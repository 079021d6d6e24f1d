//! This process's memory, for the soak and overload reports (a leak shows as a
//! resident set that keeps rising; the peak alone would hide it), and handing
//! freed memory back to the OS.

/// Current resident set in bytes (Linux `/proc`); `None` elsewhere.
pub fn resident_bytes() -> Option<u64> {
    status_bytes("VmRSS")
}

/// Peak resident set in bytes (Linux `/proc`); `None` elsewhere.
pub fn peak_resident_bytes() -> Option<u64> {
    status_bytes("VmHWM")
}

/// Resident bytes on transparent huge pages (Linux `/proc`); `None` elsewhere. The
/// weights are asked to use them (`rill_kernels::huge_pages`); whether the system
/// gives them shows here, and explains part of a speed difference between machines.
pub fn huge_page_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    kb_field(&s, "AnonHugePages")
}

/// The system's transparent-huge-page mode (`always`, `madvise` or `never`), if known.
pub fn huge_page_mode() -> Option<String> {
    rill_kernels::huge_pages::system_mode()
}

/// Returns the allocator's free pages to the OS (glibc's `malloc_trim`; a no-op
/// elsewhere). glibc keeps freed memory resident in the arena of the thread that
/// allocated it, so without this a finished stream, a connection flood or the
/// temporaries of loading a model stay in the resident set for good. Call it when
/// the process goes idle, not per frame: it walks the whole heap.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` has no preconditions; it only releases pages the
    // allocator itself holds as free.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    kb_field(&s, field)
}

/// The value of a `Field:   123 kB` line, in bytes.
fn kb_field(text: &str, field: &str) -> Option<u64> {
    let line = text
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn reads_a_plausible_resident_set() {
        let rss = super::resident_bytes().expect("VmRSS on Linux");
        let peak = super::peak_resident_bytes().expect("VmHWM on Linux");
        assert!(rss > 100_000 && peak >= rss, "rss {rss} peak {peak}");
        let huge = super::huge_page_bytes().expect("smaps_rollup on Linux");
        assert!(huge <= rss, "huge {huge} of rss {rss}");
    }

    #[test]
    fn reads_kb_fields_by_exact_name() {
        let text = "Rss:  473268 kB\nAnonHugePages:  268288 kB\nAnon:  1 kB\n";
        assert_eq!(super::kb_field(text, "AnonHugePages"), Some(268288 * 1024));
        assert_eq!(super::kb_field(text, "Anon"), Some(1024));
        assert_eq!(super::kb_field(text, "Huge"), None);
    }
}

/// The CPU's model name as `/proc/cpuinfo` gives it (x86 `model name`, some ARM
/// kernels' `Model`), else the architecture's name.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}
