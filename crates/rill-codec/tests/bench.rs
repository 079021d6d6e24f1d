//! Step-mode timing (not asserted): `cargo test --release -p rill-codec --test bench -- --ignored --nocapture`.

mod common;

use common::*;
use rill_codec::LEVELS;
use rill_kernels::Pool;

#[test]
#[ignore]
fn step_ms_per_frame() {
    let codec = codec(0);
    let z = rill_testkit::fixture("D1.npz");
    let (_, tokens) = z.i64("tokens").unwrap();
    let frames: Vec<[u32; LEVELS]> = tokens
        .chunks_exact(LEVELS)
        .map(|c| std::array::from_fn(|k| c[k] as u32))
        .collect();
    for threads in [1, 2] {
        let pool = Pool::new(threads);
        let mut st = codec.new_state();
        run_steps(&codec, &mut st, &frames[..5], &pool); // warm-up
        let mut times = Vec::new();
        for chunk in frames[5..65].chunks(10) {
            times.push(run_steps(&codec, &mut st, chunk, &pool).ms_per_frame);
        }
        times.sort_by(f64::total_cmp);
        eprintln!(
            "step, {threads} thread(s), {:?}: {:.1} ms/frame median of {} runs of 10 frames (min {:.1}, max {:.1})",
            codec.isa(),
            times[times.len() / 2],
            times.len(),
            times[0],
            times[times.len() - 1]
        );
        let t = std::time::Instant::now();
        let n = 40;
        let _ = codec.decode_batched(&frames[..n], &pool);
        eprintln!(
            "batched, {threads} thread(s): {:.1} ms/frame",
            t.elapsed().as_secs_f64() * 1e3 / n as f64
        );
    }
}
