//! The per-frame path allocates nothing after warm-up (alone in its binary: the
//! counting allocator sees every thread).

mod common;

use rill_kernels::Pool;
use rill_magpie::{InferenceParams, Session};

#[global_allocator]
static A: rill_testkit::CountingAlloc = rill_testkit::CountingAlloc;

#[test]
fn steps_allocate_nothing_after_warm_up() {
    let m = common::oracle_model();
    let pool = Pool::new(2);
    let params = InferenceParams {
        max_decoder_steps: 12,
        ..InferenceParams::default()
    };
    let tokens: Vec<u32> = (0..20).map(|i| (i * 7 % 96) as u32).collect();
    let mut s = Session::new(m, &tokens, 1, params, 3, &pool).unwrap();
    // Warm-up: the first steps grow the scratch the session owns.
    for _ in 0..2 {
        s.step(&pool).unwrap();
    }
    let before = rill_testkit::allocations();
    let mut frames = 0;
    while let Some(f) = s.step(&pool).unwrap() {
        assert!(f.iter().all(|&c| c < 2016));
        frames += 1;
    }
    let after = rill_testkit::allocations();
    assert!(frames >= 1);
    assert_eq!(
        after - before,
        0,
        "{} allocations in {frames} steps",
        after - before
    );
}
