//! Step timing per SIMD tier (not asserted):
//! `cargo test --release -p rill-nanocodec --test bench -- --ignored --nocapture`
//! (`RILL_ISA=avx2|portable` caps the tiers measured).
//!
//! Measured on a 2-vCPU Intel Xeon (Sapphire Rapids, KVM, AVX-512) shared with
//! other jobs (load average 6–8), calling thread's CPU time per one-frame step:
//! AVX-512 25–27 ms (stage 0, 94 MB of weights streamed per frame, ≈ 8 ms; the
//! compute-bound stages ≈ 66 GFMA/s), AVX2 46–48 ms, portable ≈ 520 ms. Wall
//! times with 2 threads were *slower* than 1 thread at that load, for the batch
//! decode too and for `rill-spectrostream`'s step as a control (37.6 → 37.9 ms): the
//! second core was not there to be had. On idle cores expect ≈ half the CPU time
//! (stage 0 then bound by the two cores' memory bandwidth).

mod common;

use common::*;
use rill_kernels::Pool;
use rill_nanocodec::{NanoCodec, SAMPLES_PER_FRAME};
use rill_testkit::thread_cpu_ms;

#[test]
#[ignore]
fn step_ms_per_frame() {
    let frames = frames();
    let cap = rill_kernels::isa::active();
    for isa in rill_kernels::Isa::available()
        .into_iter()
        .filter(|i| *i <= cap)
    {
        let codec = NanoCodec::with_isa(weights(), isa).unwrap();
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            let mut st = codec.new_state();
            let mut audio = [0f32; SAMPLES_PER_FRAME];
            let n = if isa.tier() == rill_kernels::Tier::Portable {
                6
            } else {
                24
            };
            for f in &frames[..2] {
                codec.step(&mut st, f, &mut audio, &pool).unwrap();
            }
            let (mut ms, mut cpu) = (Vec::new(), Vec::new());
            for f in frames.iter().cycle().take(n) {
                let (t, c) = (std::time::Instant::now(), thread_cpu_ms());
                codec.step(&mut st, f, &mut audio, &pool).unwrap();
                cpu.push(thread_cpu_ms() - c);
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            ms.sort_by(f64::total_cmp);
            cpu.sort_by(f64::total_cmp);
            let cpu = if threads == 1 {
                format!(", calling thread's CPU time {:.1} ms median", cpu[n / 2])
            } else {
                String::new()
            };
            let t = std::time::Instant::now();
            let _ = codec.decode(&frames[..16], &pool).unwrap();
            let batch = t.elapsed().as_secs_f64() * 1e3 / 16.0;
            eprintln!("nanocodec batch decode (chunks of 4 frames), {isa}, {threads} thread(s): {batch:.1} ms/frame");
            eprintln!(
                "nanocodec step, {isa}, {threads} thread(s): {:.1} ms/frame median of {n} (min {:.1}, max {:.1}){cpu}; a frame is 46.4 ms of audio",
                ms[n / 2],
                ms[0],
                ms[n - 1]
            );
        }
    }
}

/// Wall time per frame of streaming calls of 1, 2 and 4 frames, one thread,
/// alternated (stage 0 reads its weights once per call):
/// `cargo test --release -p rill-nanocodec --test bench frames_per_call -- --ignored --nocapture`.
#[test]
#[ignore]
fn frames_per_call() {
    let frames = frames();
    let codec = NanoCodec::new(weights()).unwrap();
    let pool = Pool::new(1);
    let n = frames.len().min(16);
    for round in 0..4 {
        for chunk in [1usize, 2, 4] {
            let mut st = codec.new_stream_state(chunk);
            let mut audio = vec![0f32; chunk * SAMPLES_PER_FRAME];
            let t = std::time::Instant::now();
            for part in frames[..n].chunks(chunk) {
                let a = &mut audio[..part.len() * SAMPLES_PER_FRAME];
                codec.step_frames(&mut st, part, a, &pool).unwrap();
            }
            let ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
            eprintln!(
                "{:?}, round {round}: {chunk} frame(s) per call {ms:.2} ms/frame",
                codec.isa()
            );
        }
    }
}

/// CPU time of each stage of a one-frame step on one thread (median over frames):
/// `cargo test --release -p rill-nanocodec --test bench layer_profile -- --ignored --nocapture`.
#[test]
#[ignore]
fn layer_profile() {
    profile(NanoCodec::new(weights()).unwrap());
}

/// [`layer_profile`] with the weights rounded to half, as NVIDIA's F16 GGUF holds
/// them (stage 0 then streams half the bytes; the same bits come out).
#[test]
#[ignore]
fn layer_profile_half_weights() {
    let mut w = weights().clone();
    w.round_to_half();
    let codec = NanoCodec::new(&w).unwrap();
    eprintln!("{} convs streamed as half", codec.half_weight_convs());
    profile(codec);
}

fn profile(codec: NanoCodec) {
    let frames = frames();
    let pool = Pool::new(1);
    let mut laps: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut st = codec.new_state();
    let mut audio = [0f32; SAMPLES_PER_FRAME];
    for (i, f) in frames.iter().enumerate().take(16) {
        let mut last = thread_cpu_ms();
        codec
            .step_probed(&mut st, f, &mut audio, &pool, &mut |name, _, _| {
                // The `rb_*` probes sit inside stage 4's residual layer.
                if name.starts_with("rb_") {
                    return;
                }
                let now = thread_cpu_ms();
                if i >= 2 {
                    laps.entry(name.to_string()).or_default().push(now - last);
                }
                last = now;
            })
            .unwrap();
    }
    let order = [
        "pre_conv",
        "up0",
        "res0",
        "up1",
        "res1",
        "up2",
        "res2",
        "up3",
        "res3",
        "up4",
        "res4",
        "post_conv",
    ];
    let mut total = 0.0;
    for name in order {
        let mut v = laps[name].clone();
        v.sort_by(f64::total_cmp);
        total += v[v.len() / 2];
        eprintln!(
            "{:?}: {name:10} {:6.2} ms (CPU, 1 thread, median)",
            codec.isa(),
            v[v.len() / 2]
        );
    }
    eprintln!("{:?}: total {total:.1} ms", codec.isa());
}
