//! Step-mode timing (not asserted): `cargo test --release -p rill-spectrostream --test bench -- --ignored --nocapture`.
//!
//! Besides wall time, the 1-thread runs report the calling thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), which other processes on a shared machine
//! disturb much less.

mod common;

use common::*;
use rill_kernels::Pool;
use rill_spectrostream::LEVELS;
use rill_testkit::thread_cpu_ms;

#[test]
#[ignore]
fn step_ms_per_frame() {
    let codec = codec(0);
    let frames = d1_frames();
    for threads in [1, 2] {
        let pool = Pool::new(threads);
        let mut st = codec.new_state();
        run_steps(&codec, &mut st, &frames[..5], &pool); // warm-up
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        for chunk in frames[5..65].chunks(10) {
            let c0 = thread_cpu_ms();
            times.push(run_steps(&codec, &mut st, chunk, &pool).ms_per_frame);
            cpu.push((thread_cpu_ms() - c0) / chunk.len() as f64);
        }
        cpu.sort_by(f64::total_cmp);
        if threads == 1 {
            eprintln!(
                "step, 1 thread, CPU time: {:.1} ms/frame median (min {:.1})",
                cpu[cpu.len() / 2],
                cpu[0]
            );
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
        codec.decode_batched(&frames[..n], &pool).unwrap();
        eprintln!(
            "batched, {threads} thread(s): {:.1} ms/frame",
            t.elapsed().as_secs_f64() * 1e3 / n as f64
        );
    }
}

/// Per-stage step timing (median over frames):
/// `cargo test --release -p rill-spectrostream --test bench layer_profile -- --ignored --nocapture`.
#[test]
#[ignore]
fn layer_profile() {
    let codec = codec(0);
    let frames = d1_frames();
    let mut audio = vec![0f32; rill_spectrostream::SAMPLES_PER_FRAME * 2];
    for threads in [1, 2] {
        let pool = Pool::new(threads);
        let mut st = codec.new_state();
        let mut runs: Vec<Vec<(&str, f64)>> = Vec::new();
        for (i, ids) in frames.iter().take(65).enumerate() {
            let laps = if threads == 1 {
                codec
                    .step_profiled(&mut st, ids, &mut audio, &pool, &thread_cpu_ms)
                    .unwrap()
            } else {
                codec
                    .step_profiled(&mut st, ids, &mut audio, &pool, &wall_ms)
                    .unwrap()
            };
            if i >= 5 {
                runs.push(laps);
            }
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let what = if threads == 1 { "thread CPU" } else { "wall" };
        eprintln!(
            "{threads} thread(s), median {what} ms of {} frames:",
            runs.len()
        );
        let mut sum = 0.0;
        for (k, (name, _)) in runs[0].iter().enumerate() {
            let m = median(runs.iter().map(|r| r[k].1).collect());
            sum += m;
            eprintln!("  {name:<20} {m:7.3}");
        }
        let total = median(runs.iter().map(|r| r.iter().map(|l| l.1).sum()).collect());
        eprintln!(
            "  {:<20} {sum:7.3} (median of totals {total:.3})",
            "sum of medians"
        );
    }
}

/// The token frames of upstream's recording D1.
fn d1_frames() -> Vec<[u32; LEVELS]> {
    let z = rill_testkit::fixture("D1.npz");
    let (_, tokens) = z.i64("tokens").unwrap();
    tokens
        .chunks_exact(LEVELS)
        .map(|c| std::array::from_fn(|k| c[k] as u32))
        .collect()
}

fn wall_ms() -> f64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
        * 1e3
}
