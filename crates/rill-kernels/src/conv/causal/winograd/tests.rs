use crate::{isa::tiers_under_test, Pool, Tier};

use super::*;
use crate::conv::test_data::values;

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

/// `(cin, n, kernel, dilation, frames, frame_rows)`.
type Shape = (usize, usize, usize, usize, usize, usize);

fn make(shape: Shape) -> WinogradConv {
    let (cin, n, k, d, _, _) = shape;
    WinogradConv::new(&values(n * cin * k, 1), &values(n, 2), n, cin, k, d)
}

/// Runs `shape` through [`winograd_many`] on `isa`, the output rows `n + 3` apart
/// from offset 5, pre-filled (so adding is visible).
fn run(isa: Isa, shape: Shape, accumulate: bool, pool: &Pool) -> Vec<f32> {
    let (cin, n, _, _, frames, frame_rows) = shape;
    let conv = make(shape);
    let rows = frames * frame_rows;
    let input = values((conv.history_rows() + rows) * cin, 3);
    let stride = n + 3;
    let mut out = values(5 + rows * stride, 5);
    let job = WinogradJob {
        w: &conv,
        input: &input,
        frames,
        frame_rows,
        out_base: 5,
        out_stride: stride,
        accumulate,
    };
    let mut scratch = WinogradScratch::new(conv.scratch_len(frame_rows));
    winograd_many(isa, &[job], &mut [&mut out], &mut scratch, pool);
    out
}

/// The same convolution in f64, directly (the zero tap in front reads nothing).
fn reference(shape: Shape, accumulate: bool) -> Vec<f64> {
    let (cin, n, k, d, frames, frame_rows) = shape;
    let rows = frames * frame_rows;
    let (w, b) = (values(n * cin * k, 1), values(n, 2));
    let hist = (k.div_ceil(TILE) * TILE - 1) * d;
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
                    // Tap j of the direct window, which starts d rows after ours.
                    let x = input[(t + d + j * d) * cin + ci];
                    y += f64::from(x) * f64::from(w[(o * cin + ci) * k + j]);
                }
            }
            let v = &mut out[5 + t * stride + o];
            *v = if accumulate { *v + y } else { y };
        }
    }
    out
}

#[test]
fn winograd_convs_match_the_direct_sum_on_every_tier() {
    let pool = Pool::new(2);
    // NanoCodec's kernels and dilations; channel counts that fill, and do not
    // fill, panels; frames whose rows are, and are not, whole blocks; a frame
    // shorter than a block (all rows direct).
    let shapes: [Shape; 7] = [
        (27, 27, 3, 1, 1, 64),
        (54, 40, 7, 3, 2, 64),
        (33, 50, 11, 5, 2, 64),
        (16, 16, 11, 1, 3, 4),
        (24, 20, 3, 5, 1, 8),
        (216, 216, 7, 1, 1, 64),
        (108, 108, 11, 5, 1, 256),
    ];
    for shape in shapes {
        for accumulate in [false, true] {
            let want = reference(shape, accumulate);
            let peak = want.iter().fold(0f64, |m, v| m.max(v.abs()));
            let mut simd: Vec<(Isa, Vec<f32>)> = Vec::new();
            for isa in tiers_under_test("nanocodec winograd") {
                let got = run(isa, shape, accumulate, &pool);
                let err = got
                    .iter()
                    .zip(&want)
                    .map(|(&g, &w)| (f64::from(g) - w).abs())
                    .fold(0f64, f64::max);
                eprintln!("{isa} {shape:?} acc {accumulate}: max |Δ| {err:.2e} of peak {peak:.1}");
                // Measured ≤ 2.7e-6 of the peak (216 channels, k 7, portable).
                assert!(err <= 4e-6 * peak, "{isa} {shape:?}: {err:e} (peak {peak})");
                if isa.tier() != Tier::Portable {
                    simd.push((isa, got));
                }
            }
            // The SIMD tiers run the same FMA order: the same bits.
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
fn one_call_and_one_call_per_frame_give_the_same_bits() {
    // The history rows carry the context, and tiles never cross a frame.
    let pool = Pool::new(2);
    let isa = tiers_under_test("nanocodec winograd frames")[0];
    for (k, d) in [(11, 1), (7, 3), (11, 5)] {
        let (cin, n, frames, frame_rows) = (24, 20, 3, 64);
        let conv = make((cin, n, k, d, frames, frame_rows));
        let hist = conv.history_rows();
        let input = values((hist + frames * frame_rows) * cin, 3);
        let mut scratch = WinogradScratch::new(conv.scratch_len(frame_rows));
        let job = |input, frames, out_base| WinogradJob {
            w: &conv,
            input,
            frames,
            frame_rows,
            out_base,
            out_stride: n,
            accumulate: false,
        };
        let mut whole = vec![0f32; frames * frame_rows * n];
        winograd_many(
            isa,
            &[job(&input, frames, 0)],
            &mut [&mut whole],
            &mut scratch,
            &pool,
        );
        let mut each = vec![0f32; frames * frame_rows * n];
        for f in 0..frames {
            let part = &input[f * frame_rows * cin..(hist + frame_rows * (f + 1)) * cin];
            let j = job(part, 1, f * frame_rows * n);
            winograd_many(isa, &[j], &mut [&mut each], &mut scratch, &pool);
        }
        assert!(whole == each, "k {k} d {d}");
    }
}

/// Direct vs Winograd per NanoCodec conv shape, one thread, weights hot in cache
/// (best of 30; not asserted): `cargo test --release -p rill-nanocodec --lib
/// winograd_speed -- --ignored --nocapture` (`RILL_ISA` picks the tier).
#[test]
#[ignore]
fn winograd_speed() {
    use std::time::Instant;
    let pool = Pool::new(1);
    let isa = crate::isa::active();
    for (c, k, d, rows) in [
        (216, 3, 1, 64),
        (216, 11, 1, 64),
        (216, 11, 5, 64),
        (216, 7, 3, 64),
        (108, 11, 1, 256),
        (108, 11, 5, 256),
        (108, 3, 1, 256),
        (54, 11, 1, 512),
        (54, 7, 3, 512),
        (54, 3, 1, 512),
        (27, 11, 1, 1024),
        (216, 3, 3, 64),
        (108, 7, 1, 256),
        (108, 7, 5, 256),
    ] {
        let w = values(c * c * k, 1);
        let b = values(c, 2);
        let wc = WinogradConv::new(&w, &b, c, c, k, d);
        let p = Packed::conv(&w, &b, c, c, k, d);
        let input = values((wc.history_rows() + rows) * c, 3);
        let mut out = vec![0f32; rows * c];
        let mut scratch = WinogradScratch::new(wc.scratch_len(rows));
        let mut best = [f64::MAX; 2];
        for _ in 0..30 {
            let t = Instant::now();
            let job = Job {
                w: &p,
                input: &input,
                rows: RowMap::strided(rows, d * c, c, 0, c),
                epi: Epilogue::Store,
            };
            crate::conv::gemm(isa, Blocking::Causal, &[job], &mut out, &pool);
            best[0] = best[0].min(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let job = WinogradJob {
                w: &wc,
                input: &input,
                frames: 1,
                frame_rows: rows,
                out_base: 0,
                out_stride: c,
                accumulate: false,
            };
            winograd_many(isa, &[job], &mut [&mut out], &mut scratch, &pool);
            best[1] = best[1].min(t.elapsed().as_secs_f64() * 1e3);
        }
        let gf = 2.0 * (rows * c * c * k) as f64 / 1e6;
        eprintln!("{isa} c {c} k {k} d {d} rows {rows}: direct {:.3} ms ({:.1} GF/s)  winograd {:.3} ms  ratio {:.2}", best[0], gf / best[0], best[1], best[1] / best[0]);
    }
}

#[test]
fn the_input_transform_has_its_exact_zeros() {
    // 34 of Bᵀ's 49 entries are nonzero for these points (15 exact zeros).
    let t = Transform::f44();
    let nonzero = t.bt.iter().flatten().filter(|&&v| v != 0.0).count();
    assert_eq!(nonzero, 34);
}
