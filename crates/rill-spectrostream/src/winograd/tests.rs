//! Winograd 3×3 convolution against the direct implicit-GEMM convolution and an f64
//! reference, streamed in chunks (history handling), for every tile size and tier.

use rill_kernels::{Isa, Pool};

use super::*;
use crate::conv::tests::{rand_vec, stream};
use crate::conv::{Conv2d, GridConv};
use crate::grid::{Grid, GridShape};
use crate::kernels::Epilogue;

#[test]
fn winograd_matches_direct_conv() {
    let tiers = rill_kernels::isa::tiers_under_test("winograd::winograd_matches_direct_conv");
    let pool = Pool::new(2);
    let t = 12;
    let chunks = [4, 8];
    for &(cin, cout, f) in &[
        (16, 32, 5),
        (32, 16, 10),
        (64, 64, 12),
        (16, 16, 1),
        (48, 32, 7),
    ] {
        let k = rand_vec(9 * cin * cout, 21);
        let b = rand_vec(cout, 22);
        let direct = Conv2d::new(&k, &b, [3, 3, cin, cout], f);
        let groups = 2;
        let x = rand_vec(groups * t * f * cin, 23);
        for &isa in &tiers {
            for epi in [Epilogue::Store, Epilogue::Elu, Epilogue::Accumulate] {
                let (inp, out) = (
                    direct.input_shape(groups, 8),
                    GridShape::raw(groups, 8, f, cout),
                );
                let streamed = |run: &mut dyn FnMut(&Grid, usize, &mut Grid)| {
                    stream(inp, out, 1, &x, t, &chunks, 0.5, run)
                };
                let want = streamed(&mut |i, n, o| direct.run(isa, i, n, o, epi, &pool));
                let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
                for mt in [2, 4] {
                    for mf in [2, 4] {
                        let w = WinoConv3x3::new(&k, &b, cin, cout, f, [mt, mf]);
                        let mut s = w.scratch(groups, 8);
                        let got = streamed(&mut |i, n, o| w.run(isa, i, n, o, epi, &mut s, &pool));
                        let err = got
                            .iter()
                            .zip(&want)
                            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
                        // F(4) transforms amplify rounding by ~10-100x over the direct sum.
                        let tol = if mt == 4 || mf == 4 { 2e-5 } else { 4e-6 };
                        assert!(
                            err <= tol * scale,
                            "F({mt}x{mf}) {cin}->{cout} f={f} {isa:?} {epi:?}: err {err}, scale {scale}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn winograd_chunking_and_threads_do_not_change_bits() {
    let tiers = rill_kernels::isa::tiers_under_test(
        "winograd::winograd_chunking_and_threads_do_not_change_bits",
    );
    let (cin, cout, f, t) = (32, 32, 9, 8);
    let k = rand_vec(9 * cin * cout, 31);
    let b = rand_vec(cout, 32);
    let x = rand_vec(2 * t * f * cin, 33);
    let direct = Conv2d::new(&k, &b, [3, 3, cin, cout], f);
    for &isa in &tiers {
        let w = WinoConv3x3::new(&k, &b, cin, cout, f, [4, 4]);
        let run = |threads: usize, chunks: &[usize]| {
            let pool = Pool::new(threads);
            let mut s = w.scratch(2, 8);
            stream(
                direct.input_shape(2, 8),
                GridShape::raw(2, 8, f, cout),
                1,
                &x,
                t,
                chunks,
                0.0,
                &mut |i, n, o| w.run(isa, i, n, o, Epilogue::Elu, &mut s, &pool),
            )
        };
        let a = run(1, &[4, 4]);
        assert_eq!(a, run(2, &[8]), "{isa:?}");
        assert_eq!(a, run(2, &[4, 4]), "{isa:?}");
    }
}

/// Transform bodies: every tier computes the same bits.
#[test]
fn winograd_tiers_agree() {
    let tiers = rill_kernels::isa::tiers_under_test("winograd::winograd_tiers_agree");
    let (cin, cout, f, t) = (32, 48, 11, 4);
    let k = rand_vec(9 * cin * cout, 41);
    let b = rand_vec(cout, 42);
    let x = rand_vec(2 * t * f * cin, 43);
    let direct = Conv2d::new(&k, &b, [3, 3, cin, cout], f);
    let pool = Pool::new(1);
    let w = WinoConv3x3::new(&k, &b, cin, cout, f, [4, 4]);
    let mut outs = Vec::new();
    for isa in tiers.iter().copied().filter(|&i| i != Isa::PORTABLE) {
        let mut s = w.scratch(2, 4);
        outs.push(stream(
            direct.input_shape(2, 4),
            GridShape::raw(2, 4, f, cout),
            1,
            &x,
            t,
            &[4],
            0.0,
            &mut |i, n, o| w.run(isa, i, n, o, Epilogue::Elu, &mut s, &pool),
        ));
    }
    for o in &outs[1..] {
        assert_eq!(o, &outs[0]);
    }
}

#[test]
fn winograd_convt_matches_direct() {
    let tiers = rill_kernels::isa::tiers_under_test("winograd::winograd_convt_matches_direct");
    use crate::conv::{Conv2dTranspose, TransposeWeights};
    let pool = Pool::new(2);
    let t = 12;
    // The stride-1 decoder shapes: kf 4 / sf 2 (decoder_2/3/5/6), kf 6 / sf 3 (decoder_4).
    for &(kf, sf, cin, cout, f) in &[(4, 2, 32, 16, 10), (6, 3, 16, 32, 4), (4, 2, 16, 48, 3)] {
        let k = rand_vec(3 * kf * cin * cout, 51);
        let b = rand_vec(cout, 52);
        let weights = TransposeWeights {
            kernel: &k,
            bias: &b,
            shape: [3, kf, cin, cout],
            stride: [1, sf],
            f_in: f,
        };
        let direct = Conv2dTranspose::new(&weights);
        let groups = 2;
        let x = rand_vec(groups * t * f * cin, 53);
        for &isa in &tiers {
            for epi in [Epilogue::Store, Epilogue::Elu, Epilogue::Accumulate] {
                let shape = direct.input_shape(groups, 8);
                let out = GridShape::raw(groups, 8, f * sf, cout);
                let want = stream(shape, out, 1, &x, t, &[4, 8], 0.25, &mut |i, n, o| {
                    direct.run(isa, i, n, o, epi, &pool)
                });
                let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
                for mt in [2, 4] {
                    let w = WinoConvT::new(&weights, mt);
                    let mut s = w.scratch(groups, 8);
                    let got = stream(shape, out, 1, &x, t, &[4, 8], 0.25, &mut |i, n, o| {
                        w.run(isa, i, n, o, epi, &mut s, &pool)
                    });
                    let err = got
                        .iter()
                        .zip(&want)
                        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
                    assert!(
                        err <= 1e-5 * scale,
                        "F({mt},3) convT k{kf} s{sf} {isa:?} {epi:?}: err {err}, scale {scale}"
                    );
                }
                // Chunking and thread count do not change the bits.
                let w = WinoConvT::new(&weights, 4);
                let run = |threads: usize, chunks: &[usize]| {
                    let p = Pool::new(threads);
                    let mut s = w.scratch(groups, 8);
                    stream(shape, out, 1, &x, t, chunks, 0.25, &mut |i, n, o| {
                        w.run(isa, i, n, o, epi, &mut s, &p)
                    })
                };
                assert_eq!(run(1, &[4, 4, 4]), run(2, &[8, 4]));
            }
        }
    }
}
