use crate::{isa::tiers_under_test, Isa, Pool, Tier};

use super::*;
use crate::conv::gemm::portable::{self, sin};
use crate::conv::test_data::bits_hash;
use crate::conv::test_data::values;

fn snake_params(channels: usize, seed: u64) -> SnakeParams {
    let alpha = values(channels / 2, seed)
        .iter()
        .map(|v| 1.0 + 0.3 * v)
        .collect();
    let alpha: Vec<f32> = alpha;
    let inv: Vec<f32> = alpha.iter().map(|&a| 1.0 / (a + 1e-9f32)).collect();
    SnakeParams::new(channels, &alpha, &inv)
}

/// How [`conv_with`] stores the weights.
#[derive(Clone, Copy, PartialEq)]
enum Panels {
    /// The random weights, f32 panels.
    F32,
    /// The weights rounded to IEEE half, kept in f32 panels.
    RoundedF32,
    /// The weights rounded to IEEE half, in half panels ([`Packed::store_as_half`]).
    Half,
}

/// Runs one causal conv (`rows` outputs, input rows with `(k−1)·d` history) on `isa`.
fn conv(
    isa: Isa,
    shape: (usize, usize, usize, usize, usize),
    epi_kind: u8,
    pool: &Pool,
) -> Vec<f32> {
    conv_with(isa, shape, epi_kind, pool, Panels::F32)
}

fn conv_with(
    isa: Isa,
    shape: (usize, usize, usize, usize, usize),
    epi_kind: u8,
    pool: &Pool,
    panels: Panels,
) -> Vec<f32> {
    let (cin, n, k, d, rows) = shape;
    let mut w = values(n * cin * k, 1);
    if panels != Panels::F32 {
        for v in &mut w {
            *v = half::f16::from_f32(*v).to_f32();
        }
    }
    let b = values(n, 2);
    let mut p = Packed::conv(&w, &b, n, cin, k, d);
    if panels == Panels::Half {
        assert!(
            p.store_as_half() && p.is_half(),
            "half-exact weights must convert"
        );
    }
    let hist = p.history_rows();
    let input = values((hist + rows) * cin, 3);
    let sp = snake_params(n, 4);
    let epi = match epi_kind {
        0 => Epilogue::Store,
        1 => Epilogue::Accumulate,
        _ => Epilogue::Snake(&sp),
    };
    // Output rows with a stride wider than n and an offset, as in the decoder's buffers.
    let stride = n + 3;
    let mut out = values(5 + rows * stride, 5);
    let job = Job {
        w: &p,
        input: &input,
        rows: RowMap::strided(rows, 0, cin, 5, stride),
        epi,
    };
    gemm(isa, Blocking::Causal, &[job], &mut out, pool);
    out
}

/// Direct f64 reference of the same conv.
fn reference(shape: (usize, usize, usize, usize, usize), epi_kind: u8) -> Vec<f32> {
    let (cin, n, k, d, rows) = shape;
    let w = values(n * cin * k, 1);
    let b = values(n, 2);
    let hist = (k - 1) * d;
    let input = values((hist + rows) * cin, 3);
    let sp = snake_params(n, 4);
    let stride = n + 3;
    let mut out = values(5 + rows * stride, 5);
    for t in 0..rows {
        for o in 0..n {
            let mut y = 0f64;
            for ci in 0..cin {
                for j in 0..k {
                    y += input[(t + j * d) * cin + ci] as f64 * w[(o * cin + ci) * k + j] as f64;
                }
            }
            let y = (y + b[o] as f64) as f32;
            let dst = &mut out[5 + t * stride + o];
            *dst = match epi_kind {
                0 => y,
                1 => *dst + y,
                _ => portable::half_snake(y, sp.alpha[o], sp.inv[o], o < sp.half),
            };
        }
    }
    out
}

const SHAPES: [(usize, usize, usize, usize, usize); 6] = [
    (32, 864, 7, 1, 1),   // pre_conv, one frame
    (27, 27, 11, 5, 70),  // stage 4 shape, ragged rows
    (54, 54, 7, 3, 9),    // stage 3 channels
    (108, 108, 3, 1, 65), // stage 2 channels, 2·BLOCK_M + 1 rows
    (40, 17, 3, 1, 8),    // one column past a panel
    (432, 96, 3, 5, 8),   // stage 0 rows, two column blocks
];

#[test]
fn every_tier_matches_the_reference_and_x86_tiers_agree_bitwise() {
    let pool = Pool::new(2);
    for isa in tiers_under_test("nanocodec conv kernels") {
        for &shape in &SHAPES {
            for epi in 0..3u8 {
                let got = conv(isa, shape, epi, &pool);
                let want = reference(shape, epi);
                let k = (shape.0 * shape.2) as f32;
                let tol = 4e-7 * k.sqrt() * 8.0;
                let max = got
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0f32, f32::max);
                assert!(
                    max <= tol,
                    "{isa} {shape:?} epi {epi}: max |Δ| {max:e} > {tol:e}"
                );
                if isa.tier() == Tier::Avx512
                    && Isa::available().iter().any(|i| i.tier() == Tier::Avx2)
                {
                    let avx2 = Isa::available()
                        .into_iter()
                        .find(|i| i.tier() == Tier::Avx2)
                        .unwrap();
                    assert!(
                        got == conv(avx2, shape, epi, &pool),
                        "{shape:?} epi {epi}: AVX-512 ≠ AVX2"
                    );
                }
            }
        }
    }
}

#[test]
fn results_do_not_depend_on_threads_or_row_count() {
    let shape = (54, 54, 7, 3, 130);
    for isa in Isa::available() {
        let a = conv(isa, shape, 2, &Pool::new(1));
        let b = conv(isa, shape, 2, &Pool::new(2));
        assert!(a == b, "{isa}: thread count changed the output");
        // The first 9 rows of a 130-row call equal a 9-row call (same history).
        let c = conv(isa, (54, 54, 7, 3, 9), 2, &Pool::new(1));
        let stride = 57;
        assert!(
            a[5..5 + 9 * stride - 3] == c[5..5 + 9 * stride - 3],
            "{isa}: row count changed the output"
        );
    }
}

#[test]
fn sin_is_accurate_and_half_snake_is_identical_on_every_tier() {
    // Accuracy of the shared sine against f64 over the range the decoder sees.
    let mut worst = 0f64;
    for i in 0..200_000 {
        let x = (i as f32 - 100_000.0) * 1e-3; // [-100, 100)
        let e = (sin(x) as f64 - (x as f64).sin()).abs();
        worst = worst.max(e);
    }
    // Measured 1.2e-7 (≈ 2 ulp at |sin| near 1).
    assert!(worst <= 2e-7, "sin max error {worst:e}");
    assert_eq!(sin(0.0), 0.0);
    assert!(sin(f32::NAN).is_nan());

    // 300 rows of 864 channels make 34 pool tasks of 9 rows.
    for (channels, rows) in [(27, 5), (54, 5), (864, 5), (13, 5), (864, 300), (27, 700)] {
        let p = snake_params(channels, 9);
        let mut src = values(rows * channels, 10);
        for (i, v) in src.iter_mut().enumerate() {
            *v *= 1.0 + (i % 7) as f32 * 10.0; // up to ±61
        }
        let mut want = vec![0f32; rows * channels];
        for r in 0..rows {
            for c in 0..channels {
                want[r * channels + c] = portable::half_snake(
                    src[r * channels + c],
                    p.alpha[c],
                    p.inv[c],
                    c < channels / 2,
                );
            }
        }
        for isa in tiers_under_test("nanocodec half snake") {
            let mut got = vec![7f32; rows * channels + 1];
            half_snake_rows(
                isa,
                &p,
                &src,
                channels,
                &mut got,
                channels,
                rows,
                &Pool::new(2),
            );
            assert!(
                got[..rows * channels] == want[..],
                "{isa}: HalfSnake({channels}) differs from portable"
            );
            assert_eq!(got[rows * channels], 7.0, "{isa}: wrote past the rows");
        }
    }
}

#[test]
fn lrelu_half_and_odd_split() {
    // C = 27: 13 snake channels, 14 LeakyReLU(0.01) channels (trap T16).
    let p = snake_params(27, 1);
    assert_eq!(p.half, 13);
    let src = vec![-2.0f32; 27];
    let mut dst = vec![0f32; 27];
    half_snake_rows(
        Isa::PORTABLE,
        &p,
        &src,
        27,
        &mut dst,
        27,
        1,
        &Pool::single(),
    );
    assert!(dst[13..].iter().all(|&v| v == -2.0 * 0.01));
    assert!(dst[..13].iter().all(|&v| v != -0.02));
}

/// Every SIMD tier (AVX2, AVX-512, NEON) gives the same bits; the expected hashes
/// were produced by the x86 tiers, so an ARM run checks NEON against them.
#[test]
fn simd_tiers_reproduce_the_x86_bits() {
    // Per shape of SHAPES: hashes for the Store, Accumulate and Snake epilogues.
    const WANT: [[u64; 3]; 6] = [
        [0x2e556b9d9884695c, 0x2d054faf906f72d2, 0xd88d40fbb3af1541],
        [0x998815346a9987ce, 0x5cef268edf0da442, 0xd6008a2e69a93571],
        [0xe6d9b387e54552f7, 0x260ec422a36ab74d, 0x8e2320fecf28d101],
        [0xb0aa975c9ccca7f9, 0x1fb5f81fe8b8b2e3, 0x8cd2af7cae47f4d6],
        [0x76f5a5192b3d424f, 0x33e4712a171e7f5b, 0x68ce12ac3bbbda92],
        [0xccc60bb41e1bf6ff, 0x2a7290a7e17d16d1, 0xc8c4b44955ca38bb],
    ];
    assert_eq!(SHAPES.len(), WANT.len());
    let pool = Pool::new(2);
    for isa in tiers_under_test("nanocodec x86 bits")
        .into_iter()
        .filter(|i| *i != Isa::PORTABLE)
    {
        for (i, &shape) in SHAPES.iter().enumerate() {
            for epi in 0..3u8 {
                let got = bits_hash(&conv(isa, shape, epi, &pool));
                assert_eq!(
                    got, WANT[i][epi as usize],
                    "{isa} {shape:?} epi {epi}: {got:#018x}"
                );
            }
        }
    }
}

/// Half panels hold the same values as f32 panels, so the x86 tiers give the same
/// bits from either; weights that are not exact halves stay f32.
#[test]
fn half_panels_change_no_bit() {
    let pool = Pool::new(2);
    for isa in tiers_under_test("nanocodec half panels") {
        if !reads_half_panels(isa) {
            continue;
        }
        for shape in [(432, 432, 3, 1, 8), (432, 432, 11, 5, 8), (40, 37, 7, 3, 5)] {
            for epi in 0..3 {
                let f = conv_with(isa, shape, epi, &pool, Panels::RoundedF32);
                let h = conv_with(isa, shape, epi, &pool, Panels::Half);
                assert_eq!(
                    bits_hash(&f),
                    bits_hash(&h),
                    "{isa:?} {shape:?} epilogue {epi}"
                );
            }
        }
    }
    let w = values(16 * 16 * 3, 1);
    let mut p = Packed::conv(&w, &values(16, 2), 16, 16, 3, 1);
    assert!(
        !p.store_as_half() && !p.is_half(),
        "inexact weights stay f32"
    );
}
