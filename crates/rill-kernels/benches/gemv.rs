//! Matrix-vector products per weight format and SIMD tier, on the language
//! model's shapes. Only the product is timed (matrices are built outside `iter`).
//! `gemv2_*`: two vectors against one matrix (Magpie's CFG rows, its decoder's
//! shapes), as two calls and as one `gemv2` that reads each weight once.
//! Run: `cargo bench -p rill-kernels` (RILL_THREADS sets the pool size, default 2).

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use rill_kernels::{GemvScratch, Isa, Matrix, Pool, WeightFormat};

/// (rows, cols, what): the temporal FFN up/down projections, a 1024² projection,
/// and one depth step's `to_logits` slice.
const SHAPES: [(usize, usize, &str); 4] = [
    (4096, 1024, "ffn_up"),
    (1024, 4096, "ffn_down"),
    (1024, 1024, "proj"),
    (1024, 768, "logits_level"),
];

/// The pool size from `RILL_THREADS` (default 2).
fn pool() -> Pool {
    let threads = rill_kernels::pool::env_threads()
        .expect("RILL_THREADS")
        .unwrap_or(2);
    Pool::new(threads)
}

/// Uniform values in [-0.5, 0.5) from a seeded LCG.
fn lcg(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }
}

fn gemv(c: &mut Criterion) {
    let pool = pool();
    let mut scratch = GemvScratch::new();
    let mut rnd = lcg(7);
    for (rows, cols, what) in SHAPES {
        let w: Vec<f32> = (0..rows * cols).map(|_| rnd()).collect();
        let x: Vec<f32> = (0..cols).map(|_| rnd()).collect();
        let mut y = vec![0f32; rows];
        let mut group = c.benchmark_group(format!("gemv_{what}_{rows}x{cols}"));
        group.sample_size(30);
        group.measurement_time(std::time::Duration::from_secs(2));
        for format in [
            WeightFormat::F32,
            WeightFormat::Bf16,
            WeightFormat::Int8,
            WeightFormat::Int4,
            WeightFormat::Lut4,
        ] {
            let m = Matrix::from_f32(rows, cols, w.clone(), format);
            group.throughput(Throughput::Bytes(m.bytes() as u64));
            for isa in Isa::available() {
                group.bench_with_input(
                    BenchmarkId::new(format.name(), isa.name()),
                    &isa,
                    |b, &isa| {
                        b.iter(|| m.gemv_rows_isa(isa, &x, &mut y, 0..rows, &mut scratch, &pool))
                    },
                );
            }
        }
        group.finish();
    }
}

/// Magpie decoder shapes: self-attention QKV, FFN up and down.
const CFG_SHAPES: [(usize, usize, &str); 3] = [
    (2304, 768, "qkv"),
    (3072, 768, "ffn_up"),
    (768, 3072, "ffn_down"),
];

fn gemv2(c: &mut Criterion) {
    let pool = pool();
    let mut rnd = lcg(11);
    let formats = [WeightFormat::F32, WeightFormat::F16, WeightFormat::Int8];
    for (rows, cols, what) in CFG_SHAPES {
        let mut group = c.benchmark_group(format!("gemv2_{what}_{rows}x{cols}"));
        group.sample_size(30);
        group.measurement_time(std::time::Duration::from_secs(2));
        time_pairs(&mut group, &pool, &mut rnd, (rows, cols, 1), &formats);
        group.finish();
    }
    // A decoder's worth of FFN matrices (12 × up + down, 57 M weights): the
    // weights come from DRAM, as in a real step, not from the cache.
    let mut group = c.benchmark_group("gemv2_decoder_24x3072x768");
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(3));
    let formats = [WeightFormat::F16, WeightFormat::Int8];
    time_pairs(&mut group, &pool, &mut rnd, (3072, 768, 24), &formats);
    group.finish();
}

/// Times `count` copies of one random `rows × cols` matrix per format and tier
/// against two vectors: two `gemv` calls each, and one `gemv2`.
fn time_pairs(
    group: &mut BenchmarkGroup<'_, WallTime>,
    pool: &Pool,
    rnd: &mut impl FnMut() -> f32,
    (rows, cols, count): (usize, usize, usize),
    formats: &[WeightFormat],
) {
    let w: Vec<f32> = (0..rows * cols).map(|_| rnd()).collect();
    let x: Vec<Vec<f32>> = (0..2).map(|_| (0..cols).map(|_| rnd()).collect()).collect();
    let (mut y0, mut y1) = (vec![0f32; rows], vec![0f32; rows]);
    let mut scratch = GemvScratch::new();
    for &format in formats {
        let ms: Vec<Matrix> = (0..count)
            .map(|_| Matrix::from_f32(rows, cols, w.clone(), format))
            .collect();
        group.throughput(Throughput::Bytes((count * ms[0].bytes()) as u64));
        for isa in Isa::available() {
            let id = |how: &str| BenchmarkId::new(format!("{}_{how}", format.name()), isa.name());
            group.bench_with_input(id("two_calls"), &isa, |b, &isa| {
                b.iter(|| {
                    for m in &ms {
                        m.gemv_rows_isa(isa, &x[0], &mut y0, 0..rows, &mut scratch, pool);
                        m.gemv_rows_isa(isa, &x[1], &mut y1, 0..rows, &mut scratch, pool);
                    }
                })
            });
            group.bench_with_input(id("gemv2"), &isa, |b, &isa| {
                b.iter(|| {
                    for m in &ms {
                        m.gemv2_isa(isa, [&x[0], &x[1]], [&mut y0, &mut y1], &mut scratch, pool);
                    }
                })
            });
        }
    }
}

criterion_group!(benches, gemv, gemv2);
criterion_main!(benches);
