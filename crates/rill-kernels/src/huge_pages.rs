//! [`HugePageAlloc`]: the system allocator, asking Linux for transparent huge pages
//! for large blocks.
//!
//! Every frame streams a few hundred megabytes of weights from memory (the language
//! model's matrices, the codec's panels). Through 4 KB pages that is a TLB miss and
//! a page walk every 4 KB of every stream; 2 MB pages remove nearly all of them. Where
//! the kernel's transparent huge pages are in `madvise` mode (as on the machine this was
//! measured on, and by default on Ubuntu) memory gets them only when asked, so blocks of at least
//! [`HUGE_PAGE`] get mappings of their own that start on a huge-page boundary
//! (the block a few KB in, a different "colour" per block, so that buffers do not
//! all share cache sets) and are advised `MADV_HUGEPAGE` before anything touches
//! them. Measured on Zen 3
//! (`rill bench`, int8, 2 threads, alternated runs): the language model 20.3–23.1 →
//! 17.4–18.3 ms per frame; bf16 and f32, which stream more bytes, gain more.
//! Elsewhere (other systems, THP `never`, a kernel without THP) the advice is a no-op.
//!
//! Binaries opt in: `#[global_allocator] static A: HugePageAlloc = HugePageAlloc;`.

use std::alloc::{GlobalAlloc, Layout, System};

/// Size and alignment of a transparent huge page on x86-64 and (4 KB-granule)
/// AArch64 Linux.
pub const HUGE_PAGE: usize = 2 << 20;

/// The system allocator, except that on Linux blocks of at least [`HUGE_PAGE`] bytes
/// are their own anonymous mappings, starting on a huge-page boundary and advised to
/// use huge pages (see the module docs). Fresh mappings are zero and use no memory
/// until touched, so large zeroed blocks cost nothing up front (as with `calloc`).
pub struct HugePageAlloc;

/// Whether `layout` gets its own huge-page mapping.
fn is_large(layout: Layout) -> bool {
    cfg!(target_os = "linux") && layout.size() >= HUGE_PAGE && layout.align() <= HUGE_PAGE
}

#[cfg(target_os = "linux")]
mod mapping {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::HUGE_PAGE;

    fn page_size() -> usize {
        // SAFETY: sysconf only reads a system constant.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(n).unwrap_or(4096).max(1)
    }

    /// Blocks placed so far (picks each block's colour).
    static PLACED: AtomicUsize = AtomicUsize::new(0);

    /// Where in its mapping a new block starts, a multiple of `align`. Blocks that
    /// all started on a 2 MB boundary would put the same elements of different
    /// buffers (input, output, weights) in the same cache sets; 16 colours 4 KB + 64 B
    /// apart spread them over the L1 and L2 sets (NanoCodec's frame was ≈ 3 % slower
    /// without this).
    fn colour(align: usize) -> usize {
        let k = PLACED.fetch_add(1, Ordering::Relaxed) % 16;
        k * (4096 + 64) / align * align
    }

    /// A fresh zeroed block of `size` bytes, aligned to `align` (at most 2 MB), in a
    /// mapping of its own that starts on a huge-page boundary and is advised
    /// `MADV_HUGEPAGE`; null if the system has no memory for it.
    pub(super) fn map(size: usize, align: usize) -> *mut u8 {
        let offset = colour(align);
        let Some(len) = size
            .checked_add(offset)
            .and_then(|n| n.checked_next_multiple_of(page_size()))
        else {
            return std::ptr::null_mut();
        };
        let Some(span) = len.checked_add(HUGE_PAGE) else {
            return std::ptr::null_mut();
        };
        // SAFETY: an anonymous private mapping at an address of the kernel's choice
        // touches no existing memory; the slack around the aligned part is unmapped
        // (page-aligned ranges inside the new mapping), and the advice changes only
        // how the remaining pages are backed.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return std::ptr::null_mut();
            }
            let base = p as usize;
            let start = base.next_multiple_of(HUGE_PAGE);
            let (head, tail) = (start - base, span - (start - base) - len);
            if head > 0 {
                libc::munmap(p, head);
            }
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
            // A failure (a kernel without THP) leaves ordinary pages: only slower.
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            (start + offset) as *mut u8
        }
    }

    /// Returns a block of `size` bytes made by [`map`].
    ///
    /// # Safety
    /// `p` came from `map(size, _)` and is not used afterwards.
    pub(super) unsafe fn unmap(p: *mut u8, size: usize) {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            // The mapping starts at the huge-page boundary below the block (its colour
            // offset is under 2 MB) and ends where `map` rounded it to.
            let start = p as usize / HUGE_PAGE * HUGE_PAGE;
            let len = (p as usize - start + size).next_multiple_of(page_size());
            libc::munmap(start as *mut libc::c_void, len);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod mapping {
    pub(super) fn map(_: usize, _: usize) -> *mut u8 {
        unreachable!("only Linux maps large blocks itself")
    }
    /// # Safety
    /// Never called: only Linux maps large blocks itself.
    pub(super) unsafe fn unmap(_: *mut u8, _: usize) {
        unreachable!("only Linux maps large blocks itself")
    }
}

// SAFETY: small blocks come from and return to `System` with their own layouts;
// large ones (`is_large`, decided by the layout alone, so the same for a block's
// allocation and its release) lie in mappings of their own at an offset that is a
// multiple of the layout's alignment, are zero when fresh, and are unmapped once.
unsafe impl GlobalAlloc for HugePageAlloc {
    /// # Safety
    /// As [`GlobalAlloc::alloc`].
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            if is_large(layout) {
                mapping::map(layout.size(), layout.align())
            } else {
                System.alloc(layout)
            }
        }
    }

    /// # Safety
    /// As [`GlobalAlloc::alloc_zeroed`].
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            if is_large(layout) {
                mapping::map(layout.size(), layout.align())
            } else {
                System.alloc_zeroed(layout)
            }
        }
    }

    /// # Safety
    /// As [`GlobalAlloc::dealloc`].
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            if is_large(layout) {
                mapping::unmap(ptr, layout.size())
            } else {
                System.dealloc(ptr, layout)
            }
        }
    }

    /// # Safety
    /// As [`GlobalAlloc::realloc`].
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            // SAFETY (of the layout): the caller guarantees that `new_size` with this
            // alignment is a valid layout.
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            if !is_large(layout) && !is_large(new_layout) {
                return System.realloc(ptr, layout, new_size);
            }
            let q = self.alloc(new_layout);
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            q
        }
    }
}

/// The system's transparent-huge-page mode (`always`, `madvise` or `never`), if known
/// (Linux sysfs; `None` elsewhere or on a kernel without THP).
pub fn system_mode() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let start = s.find('[')? + 1;
    let len = s[start..].find(']')?;
    Some(s[start..start + len].to_string())
}

/// Huge pages for the blocks below [`HUGE_PAGE`], once they are loaded.
mod collapse;
pub use collapse::collapse_resident;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_their_contents_across_the_threshold() {
        let a = HugePageAlloc;
        for (from, to) in [
            (64, 3 << 20),
            (3 << 20, 5 << 20),
            (5 << 20, 100),
            (100, 200),
        ] {
            let layout = Layout::from_size_align(from, 8).unwrap();
            // SAFETY: valid layouts; every pointer is checked and freed once with
            // the layout it was allocated or reallocated with.
            unsafe {
                let p = a.alloc(layout);
                assert!(!p.is_null());
                for i in 0..from {
                    *p.add(i) = (i % 251) as u8;
                }
                let q = a.realloc(p, layout, to);
                assert!(!q.is_null());
                for i in 0..from.min(to) {
                    assert_eq!(*q.add(i), (i % 251) as u8, "byte {i} of {from} -> {to}");
                }
                if cfg!(target_os = "linux") && to >= HUGE_PAGE {
                    let offset = q as usize % HUGE_PAGE;
                    assert!(
                        offset < 16 * 4160,
                        "a large block starts near a 2 MB boundary"
                    );
                }
                a.dealloc(q, Layout::from_size_align(to, 8).unwrap());
            }
        }
    }

    #[test]
    fn large_blocks_keep_their_alignment_and_zero_fill() {
        let a = HugePageAlloc;
        for align in [1, 8, 64, 4096, 1 << 16, HUGE_PAGE] {
            // More blocks than colours, to reach every offset.
            let layouts: Vec<Layout> = (0..20)
                .map(|i| Layout::from_size_align((2 << 20) + i * 4099, align).unwrap())
                .collect();
            // SAFETY: valid layouts; each block is checked, written and freed once.
            unsafe {
                let blocks: Vec<*mut u8> = layouts.iter().map(|&l| a.alloc_zeroed(l)).collect();
                for (&p, l) in blocks.iter().zip(&layouts) {
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "align {align}"
                    );
                    let bytes = std::slice::from_raw_parts_mut(p, l.size());
                    assert!(bytes[0] == 0 && bytes[l.size() - 1] == 0);
                    bytes.fill(0xa5);
                }
                for (p, l) in blocks.into_iter().zip(layouts) {
                    a.dealloc(p, l);
                }
            }
        }
    }

    #[test]
    fn zeroed_large_blocks_are_zero() {
        let a = HugePageAlloc;
        let layout = Layout::from_size_align(3 << 20, 64).unwrap();
        // SAFETY: a valid layout, freed once with it.
        unsafe {
            let p = a.alloc_zeroed(layout);
            assert!(!p.is_null());
            assert!(std::slice::from_raw_parts(p, layout.size())
                .iter()
                .all(|&b| b == 0));
            a.dealloc(p, layout);
        }
    }
}
