//! Speed profile (ignored: tests never assert time). Run with
//! `cargo test --release -p rill-magpie --test profile -- --ignored --nocapture`.

mod common;

use std::time::Instant;

use rill_kernels::Pool;
use rill_magpie::{InferenceParams, Session};

#[test]
#[ignore]
fn profile_steps() {
    let m = common::oracle_model();
    let threads = std::env::var("RILL_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let pool = Pool::new(threads);
    let z = common::npz("model_cached.npz");
    let (_, t) = common::ints(&z, "text_tokens");
    let tokens: Vec<u32> = t[..t.len() - 1].iter().map(|&v| v as u32).collect();
    for cfg in [true, false] {
        let params = InferenceParams {
            max_decoder_steps: 32,
            use_cfg: cfg,
            ..InferenceParams::default()
        };
        let t0 = Instant::now();
        let mut s = Session::new(m.clone(), &tokens, 0, params, 0, &pool).unwrap();
        let setup = t0.elapsed();
        s.step(&pool).unwrap(); // frame 0 (no decoder call)
        let t1 = Instant::now();
        let mut n = 0;
        while s.step(&pool).unwrap().is_some() {
            n += 1;
        }
        let per = t1.elapsed().as_secs_f64() * 1e3 / n as f64;
        eprintln!(
            "cfg {cfg}: setup (encoder {} tokens + prefill 111 rows) {:.0} ms; {per:.1} ms per step over {n} steps ({threads} threads, f32)",
            tokens.len() + 1,
            setup.as_secs_f64() * 1e3
        );
    }
}
