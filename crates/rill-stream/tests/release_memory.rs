//! `process::release_free_memory` hands freed heap pages back to the OS (glibc),
//! which is what lets the server's memory return to its baseline after a flood.
//! Its own test binary: other tests allocating at the same time would blur the
//! resident-set readings.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn freed_small_allocations_leave_the_resident_set() {
    use rill_stream::process::{release_free_memory, resident_bytes};
    const MB: u64 = 1 << 20;
    // Small blocks (below glibc's mmap threshold) live in an arena; filling
    // them makes every page resident.
    let blocks: Vec<Box<[u8; 512]>> = (0..120_000).map(|i| Box::new([i as u8; 512])).collect();
    let full = resident_bytes().unwrap();
    drop(blocks);
    let freed = resident_bytes().unwrap();
    release_free_memory();
    let released = resident_bytes().unwrap();
    eprintln!(
        "resident: {} MB with 58 MB of blocks, {} MB after freeing, {} MB after release",
        full / MB,
        freed / MB,
        released / MB
    );
    assert!(
        released + 40 * MB < full,
        "release_free_memory returned less than 40 of 58 MB: {full} → {released} bytes"
    );
}
