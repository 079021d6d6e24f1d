use rill_kernels::{isa::tiers_under_test, Pool};

use super::*;
use crate::kernels::tests::values;

#[test]
fn the_transform_computes_the_correlation() {
    let t = Transform::f44();
    let x = values(POINTS, 11);
    let w = values(TILE, 12);
    for q in 0..TILE {
        let direct: f64 = (0..TILE)
            .map(|j| f64::from(w[j]) * f64::from(x[q + j]))
            .sum();
        let wino: f64 = (0..POINTS)
            .map(|k| {
                let u: f64 = (0..TILE).map(|j| t.g[k][j] * f64::from(w[j])).sum();
                let v: f64 = (0..POINTS)
                    .map(|i| f64::from(t.bt[k][i]) * f64::from(x[i]))
                    .sum();
                f64::from(t.at[q][k]) * u * v
            })
            .sum();
        // Only the f32 rounding of Bᵀ and Aᵀ separates the two.
        assert!((direct - wino).abs() < 1e-6, "q {q}: {direct} vs {wino}");
    }
}

/// Runs `(cin, n, kernel, rows)` through [`winograd_many`] on `isa`, the output
/// rows `stride = n + 3` apart from offset 5, pre-filled (so adding is visible).
fn run(isa: Isa, shape: (usize, usize, usize, usize), accumulate: bool, pool: &Pool) -> Vec<f32> {
    let (cin, n, k, rows) = shape;
    let conv = WinogradConv::new(&values(n * cin * k, 1), &values(n, 2), n, cin, k);
    let input = values((conv.history_rows() + rows) * cin, 3);
    let stride = n + 3;
    let mut out = values(5 + rows * stride, 5);
    let job = WinogradJob {
        w: &conv,
        input: &input,
        rows,
        out_base: 5,
        out_stride: stride,
        accumulate,
    };
    let mut scratch = WinogradScratch::new(conv.scratch_len(rows));
    winograd_many(isa, &[job], &mut [&mut out], &mut scratch, pool);
    out
}

/// The same convolution in f64, directly (the zero tap in front reads nothing).
fn reference(shape: (usize, usize, usize, usize), accumulate: bool) -> Vec<f64> {
    let (cin, n, k, rows) = shape;
    let (w, b) = (values(n * cin * k, 1), values(n, 2));
    let hist = k.div_ceil(TILE) * TILE - 1;
    let input = values((hist + rows) * cin, 3);
    let stride = n + 3;
    let mut out: Vec<f64> = values(5 + rows * stride, 5)
        .iter()
        .map(|&v| v.into())
        .collect();
    for t in 0..rows {
        for o in 0..n {
            let mut y = f64::from(b[o]);
            for ci in 0..cin {
                for j in 0..k {
                    // Tap j of the window starting one row after the padded start.
                    let x = input[(t + 1 + (hist - k) + j) * cin + ci];
                    y += f64::from(x) * f64::from(w[(o * cin + ci) * k + j]);
                }
            }
            let d = &mut out[5 + t * stride + o];
            *d = if accumulate { *d + y } else { y };
        }
    }
    out
}

#[test]
fn winograd_convs_match_the_direct_sum_on_every_tier() {
    let pool = Pool::new(2);
    // NanoCodec's kernels; channel counts that fill, and do not fill, panels.
    for shape in [
        (27, 27, 3, 64),
        (54, 40, 7, 36),
        (33, 50, 11, 8),
        (16, 16, 11, 4),
        (216, 216, 7, 64),
    ] {
        for accumulate in [false, true] {
            let want = reference(shape, accumulate);
            let peak = want.iter().fold(0f64, |m, v| m.max(v.abs()));
            let mut by_tier = Vec::new();
            for isa in tiers_under_test("nanocodec winograd") {
                let got = run(isa, shape, accumulate, &pool);
                let err = got
                    .iter()
                    .zip(&want)
                    .map(|(&g, &w)| (f64::from(g) - w).abs())
                    .fold(0f64, f64::max);
                eprintln!(
                    "{isa} {shape:?} acc {accumulate}: max |Δ| {:.2e} of peak {peak:.1}",
                    err
                );
                // Measured ≤ 2.7e-6 of the peak (216 channels, k 7, portable).
                assert!(err <= 4e-6 * peak, "{isa} {shape:?}: {err:e} (peak {peak})");
                by_tier.push((isa, got));
            }
            // The SIMD tiers run the same FMA order: the same bits.
            let simd: Vec<_> = by_tier
                .iter()
                .filter(|(i, _)| i.tier() != rill_kernels::Tier::Portable)
                .collect();
            for pair in simd.windows(2) {
                assert!(
                    pair[0].1 == pair[1].1,
                    "{} and {} differ",
                    pair[0].0,
                    pair[1].0
                );
            }
        }
    }
}

#[test]
fn one_call_and_two_half_calls_give_the_same_bits() {
    // The history rows carry the context, so tiling a call in two changes nothing.
    let pool = Pool::new(2);
    let (cin, n, k) = (24, 20, 11);
    let conv = WinogradConv::new(&values(n * cin * k, 1), &values(n, 2), n, cin, k);
    let hist = conv.history_rows();
    let rows = 16;
    let input = values((hist + rows) * cin, 3);
    let mut scratch = WinogradScratch::new(conv.scratch_len(rows));
    let isa = tiers_under_test("nanocodec winograd split")[0];
    let mut whole = vec![0f32; rows * n];
    let job = WinogradJob {
        w: &conv,
        input: &input,
        rows,
        out_base: 0,
        out_stride: n,
        accumulate: false,
    };
    winograd_many(isa, &[job], &mut [&mut whole], &mut scratch, &pool);
    let mut halves = vec![0f32; rows * n];
    for h in 0..2 {
        let part = &input[h * 8 * cin..(hist + 8 * (h + 1)) * cin];
        let job = WinogradJob {
            w: &conv,
            input: part,
            rows: 8,
            out_base: h * 8 * n,
            out_stride: n,
            accumulate: false,
        };
        winograd_many(isa, &[job], &mut [&mut halves], &mut scratch, &pool);
    }
    assert!(whole == halves);
}
