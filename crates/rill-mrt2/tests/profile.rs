//! Speed profile (ignored: tests never assert time). Run with
//! `cargo test --release -p rill-mrt2 --test profile -- --ignored --nocapture`
//! (`RILL_THREADS`, default 2; `RILL_PROFILE_PRECISION`, default int8).

mod common;

use std::time::Instant;

use rill_kernels::Pool;
use rill_mrt2::{Precision, Session, LEVELS};

/// The language model of 2 and 3 music streams per frame, stepped one after another
/// against together ([`Session::step_together`]), alternated frame by frame so
/// that machine load affects both alike; medians over 40 frames after 5.
#[test]
#[ignore]
fn profile_streams_together() {
    let threads = rill_kernels::pool::env_threads()
        .expect("RILL_THREADS")
        .unwrap_or(2);
    let precision = std::env::var("RILL_PROFILE_PRECISION")
        .ok()
        .map(|p| Precision::from_name(&p).expect("RILL_PROFILE_PRECISION"))
        .unwrap_or(Precision::Int8);
    let pool = Pool::new(threads);
    let m = common::model(0, precision);
    for streams in [1usize, 2, 3] {
        let mut apart: Vec<Session> = (0..streams)
            .map(|i| Session::new(m.clone(), i as u64, &pool))
            .collect();
        let mut joint: Vec<Session> = (0..streams)
            .map(|i| Session::new(m.clone(), i as u64, &pool))
            .collect();
        let mut tokens = vec![[0u32; LEVELS]; streams];
        let (mut t_apart, mut t_joint) = (Vec::new(), Vec::new());
        for frame in 0..45 {
            let t = Instant::now();
            for s in &mut apart {
                s.step(&pool, None);
            }
            let a = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            let mut refs: Vec<&mut Session> = joint.iter_mut().collect();
            Session::step_together(&mut refs, &pool, &mut tokens);
            let j = t.elapsed().as_secs_f64() * 1e3;
            if frame >= 5 {
                t_apart.push(a);
                t_joint.push(j);
            }
        }
        t_apart.sort_by(f64::total_cmp);
        t_joint.sort_by(f64::total_cmp);
        let (a, j) = (t_apart[t_apart.len() / 2], t_joint[t_joint.len() / 2]);
        eprintln!(
            "{precision:?}, {streams} stream(s), {threads} threads: one after another {a:.1} ms per frame, together {j:.1} ms (ratio {:.2}; {:.1} ms per stream)",
            j / a,
            j / streams as f64
        );
    }
}
