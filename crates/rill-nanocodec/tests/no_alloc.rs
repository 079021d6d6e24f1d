//! The streaming step allocates nothing after warm-up (a counting allocator watches it).

mod common;

use common::*;
use rill_kernels::Pool;
use rill_nanocodec::{NanoCodec, SAMPLES_PER_FRAME};

#[global_allocator]
static GLOBAL: rill_testkit::CountingAlloc = rill_testkit::CountingAlloc;

#[test]
fn step_does_not_allocate() {
    let codec = NanoCodec::new(weights()).unwrap();
    let frames = frames();
    for threads in [1, 2] {
        let pool = Pool::new(threads);
        let mut state = codec.new_state();
        let mut audio = [0f32; SAMPLES_PER_FRAME];
        codec
            .step(&mut state, &frames[0], &mut audio, &pool)
            .unwrap(); // warm-up
        let before = rill_testkit::allocations();
        for f in &frames[1..6] {
            codec.step(&mut state, f, &mut audio, &pool).unwrap();
        }
        let n = rill_testkit::allocations() - before;
        assert_eq!(n, 0, "step allocated {n} times with {threads} thread(s)");
    }
}
