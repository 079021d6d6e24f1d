//! GEMV throughput per format, hot (cache) and cold (DRAM):
//! `cargo run --release -p rill-kernels --example gemv_speed -- [threads]`.
use std::time::Instant;

use rill_kernels::{GemvScratch, Matrix, Ops, Pool, WeightFormat};

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(2);
    let pool = Pool::new(threads);
    let ops = Ops::active();
    let mut scratch = GemvScratch::new();
    let (rows, cols) = (4096, 1024);
    let mut seed = 1u64;
    let mut rnd = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    let w: Vec<f32> = (0..rows * cols).map(|_| rnd()).collect();
    let x: Vec<f32> = (0..cols).map(|_| rnd()).collect();
    let mut y = vec![0f32; rows];
    for f in [
        WeightFormat::F32,
        WeightFormat::Bf16,
        WeightFormat::Int8,
        WeightFormat::Int4,
        WeightFormat::Lut4,
    ] {
        // Cold: rotate through enough copies to exceed the caches (~600 MB).
        let copies = (600 << 20) / Matrix::from_f32(rows, cols, w.clone(), f).bytes().max(1);
        let ms: Vec<Matrix> = (0..copies.clamp(2, 64))
            .map(|_| Matrix::from_f32(rows, cols, w.clone(), f))
            .collect();
        let bytes = ms[0].bytes() as f64;
        let n = 200;
        let t = Instant::now();
        for _ in 0..n {
            ops.gemv(&ms[0], &x, &mut y, &mut scratch, &pool);
        }
        let hot = t.elapsed().as_secs_f64() / n as f64;
        let t = Instant::now();
        for i in 0..n {
            ops.gemv(&ms[i % ms.len()], &x, &mut y, &mut scratch, &pool);
        }
        let cold = t.elapsed().as_secs_f64() / n as f64;
        println!(
            "{:5} {rows}x{cols}: hot {:7.1} us ({:5.1} GB/s)  cold {:7.1} us ({:5.1} GB/s)",
            f.name(),
            hot * 1e6,
            bytes / hot / 1e9,
            cold * 1e6,
            bytes / cold / 1e9
        );
    }
}
