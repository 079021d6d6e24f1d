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
    let threads = rill_kernels::pool::env_threads()
        .expect("RILL_THREADS")
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

/// Two-row product (weights read once) against two single-row GEMVs over a set of
/// matrices larger than the caches (as in a decoder step), interleaved so that
/// machine load affects both alike.
#[test]
#[ignore]
fn profile_two_rows() {
    use rill_kernels::matmul::MatmulScratch;
    use rill_kernels::{Matrix, WeightFormat};
    let pool = Pool::new(2);
    let mut scratch = MatmulScratch::new();
    let ops = rill_kernels::Ops::active();
    for (rows, cols, count) in [(2304, 768, 40), (768, 3072, 40), (16192, 768, 6)] {
        let ms: Vec<Matrix> = (0..count)
            .map(|i| {
                Matrix::from_f32(
                    rows,
                    cols,
                    vec![0.01 * i as f32; rows * cols],
                    WeightFormat::F32,
                )
            })
            .collect();
        let x = vec![0.5f32; 2 * cols];
        let mut y = vec![0f32; 2 * rows];
        let (mut t_two, mut t_gemv) = (0f64, 0f64);
        for _ in 0..5 {
            let t = Instant::now();
            for m in &ms {
                ops.matmul(m, &x, &mut y, &mut scratch, &pool);
            }
            t_two += t.elapsed().as_secs_f64();
            let t = Instant::now();
            for m in &ms {
                let (y0, y1) = y.split_at_mut(rows);
                ops.gemv(m, &x[..cols], y0, scratch.gemv(), &pool);
                ops.gemv(m, &x[cols..], y1, scratch.gemv(), &pool);
            }
            t_gemv += t.elapsed().as_secs_f64();
        }
        let n = 5.0 * count as f64;
        eprintln!(
            "{rows}x{cols} ({count} matrices, {} MB): two-row matmul {:.3} ms, 2 x gemv {:.3} ms per matrix",
            rows * cols * count * 4 / 1_000_000,
            t_two / n * 1e3,
            t_gemv / n * 1e3
        );
    }
}

/// The prefill's products (111 rows through the decoder's matrices, 38 through the
/// encoder's) in GFLOP/s, per weight format, with the panel packing timed alone
/// (a 3-row product packs every panel for 1 micro-kernel block).
#[test]
#[ignore]
fn profile_prefill_matmul() {
    use rill_kernels::matmul::MatmulScratch;
    use rill_kernels::{Matrix, WeightFormat};
    let threads = rill_kernels::pool::env_threads()
        .expect("RILL_THREADS")
        .unwrap_or(2);
    let pool = Pool::new(threads);
    let mut scratch = MatmulScratch::new();
    let ops = rill_kernels::Ops::active();
    for format in [WeightFormat::F32, WeightFormat::F16, WeightFormat::Int8] {
        for (rows, cols, n) in [
            (2304, 768, 111),
            (3072, 768, 111),
            (768, 3072, 111),
            (3072, 2304, 38),
        ] {
            let w: Vec<f32> = (0..rows * cols)
                .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
                .collect();
            let m = Matrix::from_f32(rows, cols, w, format);
            let x = vec![0.25f32; n * cols];
            let mut y = vec![0f32; n * rows];
            let x3 = vec![0.25f32; 3 * cols];
            let mut y3 = vec![0f32; 3 * rows];
            let (mut full, mut pack) = (Vec::new(), Vec::new());
            for _ in 0..15 {
                let t = Instant::now();
                ops.matmul(&m, &x, &mut y, &mut scratch, &pool);
                full.push(t.elapsed().as_secs_f64());
                let t = Instant::now();
                ops.matmul(&m, &x3, &mut y3, &mut scratch, &pool);
                pack.push(t.elapsed().as_secs_f64());
            }
            full.sort_by(f64::total_cmp);
            pack.sort_by(f64::total_cmp);
            let (f, p) = (full[7], pack[7]);
            eprintln!(
                "{format:?} {rows}x{cols} x {n} rows: {:.2} ms = {:.0} GFLOP/s; a 3-row call {:.3} ms ({threads} threads)",
                f * 1e3,
                2.0 * (rows * cols * n) as f64 / f * 1e-9,
                p * 1e3
            );
        }
    }
}
