//! This process's memory, for the soak and overload reports (a leak shows as a
//! resident set that keeps rising; the peak alone would hide it).

/// Current resident set in bytes (Linux `/proc`); `None` elsewhere.
pub fn resident_bytes() -> Option<u64> {
    status_bytes("VmRSS")
}

/// Peak resident set in bytes (Linux `/proc`); `None` elsewhere.
pub fn peak_resident_bytes() -> Option<u64> {
    status_bytes("VmHWM")
}

fn status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s
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
    }
}
