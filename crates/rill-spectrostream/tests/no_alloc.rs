//! The streaming step allocates nothing (a counting global allocator watches it).

mod common;

use common::*;
use rill_kernels::Pool;
use rill_spectrostream::{LEVELS, SAMPLES_PER_FRAME, STFT_FRAMES_PER_FRAME, STFT_FRAME_LEN};

#[global_allocator]
static GLOBAL: rill_testkit::CountingAlloc = rill_testkit::CountingAlloc;

#[test]
fn step_does_not_allocate() {
    let codec = codec(0);
    let pool = Pool::new(2);
    let mut state = codec.new_state();
    let mut audio = vec![0f32; SAMPLES_PER_FRAME * 2];
    let mut stft = vec![0f32; STFT_FRAMES_PER_FRAME * STFT_FRAME_LEN];
    let ids: [u32; LEVELS] = std::array::from_fn(|k| 6 + 1024 * k as u32 + 7 * k as u32);
    codec
        .step(&mut state, &ids, &mut audio, Some(&mut stft), &pool)
        .unwrap(); // warm-up
    let before = rill_testkit::allocations();
    for _ in 0..3 {
        codec
            .step(&mut state, &ids, &mut audio, Some(&mut stft), &pool)
            .unwrap();
        codec
            .step(&mut state, &ids, &mut audio, None, &pool)
            .unwrap();
    }
    let n = rill_testkit::allocations() - before;
    assert_eq!(n, 0, "step allocated {n} times");
}
