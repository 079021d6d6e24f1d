//! [`collapse_resident`]: after loading, huge pages for the blocks below [`HUGE_PAGE`].
//!
//! [`HugePageAlloc`](super::HugePageAlloc) gives huge pages only to blocks of at least
//! 2 MB. The many smaller weight arrays (1024² int8 projections, the int8 scales, most
//! codec panels: about 150 MB for mrt2_small at int8) come from the C heap on 4 KB
//! pages, and the frame streams them too. Once a model is loaded those arrays stay put,
//! so the program asks Linux (6.1 or later) to rebuild every fully used 2 MB range of
//! its private anonymous memory as a huge page (`MADV_COLLAPSE`, which copies the
//! range once, about 70 ms for 440 MB). Ranges with pages never touched are left
//! alone, so the resident set does not grow. Measured on an Intel Xeon (`rill bench
//! --precision int8`, two stages, runs alternated with and without): AVX-512 step
//! 21.0–22.1 → 20.3–20.8 ms (3 pairs), AVX2 25.2–25.5 → 24.5–24.8 ms (2 pairs).
//!
//! It rebuilds the whole process's memory, so the `rill` binary calls it, and a
//! library loaded into someone else's process (the Python module) does not.

/// Pages of a 2 MB range (4 KB pages) that must be resident for it to be collapsed.
#[cfg(target_os = "linux")]
const RESIDENT_PAGES: usize = super::HUGE_PAGE / 4096;

/// Asks Linux to back every fully resident 2 MB range of this process's private
/// anonymous read-write memory (the heap and anonymous mappings, not stacks or files)
/// with a huge page. Returns the bytes asked for. Advice only: where the system lacks
/// `MADV_COLLAPSE` or transparent huge pages are off (`never`), or elsewhere than
/// Linux, it does nothing and returns 0. Call it once the weights are loaded, not
/// while frames run (it takes tens of milliseconds).
pub fn collapse_resident() -> usize {
    #[cfg(target_os = "linux")]
    {
        linux::collapse()
    }
    #[cfg(not(target_os = "linux"))]
    0
}

#[cfg(target_os = "linux")]
mod linux {
    use super::super::HUGE_PAGE;
    use super::RESIDENT_PAGES;

    pub(super) fn collapse() -> usize {
        // A kernel without THP has no mode; `never` is the owner's choice.
        if matches!(super::super::system_mode().as_deref(), None | Some("never")) {
            return 0;
        }
        // SAFETY: sysconf has no preconditions.
        if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != 4096 {
            return 0;
        }
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return 0;
        };
        let mut resident = vec![0u8; RESIDENT_PAGES];
        let mut asked = 0;
        for (start, end) in maps.lines().filter_map(anonymous_rw) {
            let mut at = start.next_multiple_of(HUGE_PAGE);
            while at + HUGE_PAGE <= end {
                let p = at as *mut libc::c_void;
                // SAFETY: `p..p + HUGE_PAGE` lies inside a mapping of this process
                // (a concurrent unmap makes mincore fail with ENOMEM, which skips
                // the range); `resident` has one byte per page of it.
                let full = unsafe { libc::mincore(p, HUGE_PAGE, resident.as_mut_ptr()) } == 0
                    && resident.iter().all(|&b| b & 1 == 1);
                if full {
                    // SAFETY: advice on memory of this process; the kernel copies the
                    // range into a huge page without changing its contents.
                    let r = unsafe { libc::madvise(p, HUGE_PAGE, libc::MADV_COLLAPSE) };
                    if r != 0
                        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
                    {
                        // A kernel before 6.1: no range will collapse.
                        return asked;
                    }
                    asked += HUGE_PAGE;
                }
                at += HUGE_PAGE;
            }
        }
        asked
    }

    /// The address range of a `/proc/self/maps` line if it is private anonymous
    /// read-write memory (no file, or the heap).
    pub(super) fn anonymous_rw(line: &str) -> Option<(usize, usize)> {
        let mut fields = line.split_whitespace();
        let range = fields.next()?;
        let perms = fields.next()?;
        let (_offset, _dev, inode) = (fields.next()?, fields.next()?, fields.next()?);
        let name = fields.next();
        if perms != "rw-p" || inode != "0" || !matches!(name, None | Some("[heap]")) {
            return None;
        }
        let (a, b) = range.split_once('-')?;
        Some((
            usize::from_str_radix(a, 16).ok()?,
            usize::from_str_radix(b, 16).ok()?,
        ))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::linux::anonymous_rw;

    #[test]
    fn only_private_anonymous_read_write_ranges_are_chosen() {
        let maps = "\
55d0c0000000-55d0c0400000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000200000 rw-p 00000000 00:00 0 
7f0000200000-7f0000400000 r--p 00000000 08:01 1234                       /usr/lib/libc.so.6
7f0000400000-7f0000600000 rw-p 00001000 08:01 1234                       /usr/lib/libc.so.6
7f0000600000-7f0000800000 rw-s 00000000 00:01 99                         /dev/zero (deleted)
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
7f0000800000-7f0000a00000 ---p 00000000 00:00 0 ";
        let got: Vec<_> = maps.lines().filter_map(anonymous_rw).collect();
        assert_eq!(
            got,
            [
                (0x55d0c0000000, 0x55d0c0400000),
                (0x7f0000000000, 0x7f0000200000)
            ]
        );
    }

    #[test]
    fn collapsing_keeps_the_contents() {
        // 1 MB blocks (below the allocator's threshold: heap memory), filled, must
        // read back the same after their ranges were collapsed.
        let blocks: Vec<Vec<u8>> = (0..40)
            .map(|i| (0..1 << 20).map(|j| ((i * 7 + j) % 251) as u8).collect())
            .collect();
        super::collapse_resident();
        for (i, b) in blocks.iter().enumerate() {
            assert!(b
                .iter()
                .enumerate()
                .all(|(j, &v)| v == ((i * 7 + j) % 251) as u8));
        }
    }
}
