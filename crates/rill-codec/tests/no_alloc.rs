//! The streaming step allocates nothing (a counting global allocator watches it).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use rill_codec::{LEVELS, SAMPLES_PER_FRAME, STFT_FRAMES_PER_FRAME, STFT_FRAME_LEN};
use rill_kernels::Pool;

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn step_does_not_allocate() {
    let codec = codec(0);
    let pool = Pool::new(2);
    let mut state = codec.new_state();
    let mut audio = vec![0f32; SAMPLES_PER_FRAME * 2];
    let mut stft = vec![0f32; STFT_FRAMES_PER_FRAME * STFT_FRAME_LEN];
    let ids: [u32; LEVELS] = std::array::from_fn(|k| 6 + 1024 * k as u32 + 7 * k as u32);
    codec.step(&mut state, &ids, &mut audio, Some(&mut stft), &pool); // warm-up
    let before = ALLOCS.load(Ordering::SeqCst);
    for _ in 0..3 {
        codec.step(&mut state, &ids, &mut audio, Some(&mut stft), &pool);
        codec.step(&mut state, &ids, &mut audio, None, &pool);
    }
    let n = ALLOCS.load(Ordering::SeqCst) - before;
    assert_eq!(n, 0, "step allocated {n} times");
}
