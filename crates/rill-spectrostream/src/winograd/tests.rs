//! Winograd 3×3 convolution against the direct implicit-GEMM convolution and an f64
//! reference, streamed in chunks (history handling), for every tile size and tier.

use rill_kernels::{Isa, Pool};

use super::*;
use crate::conv::tests::rand_vec;
use crate::conv::Conv2d;
use crate::grid::{Grid, GridShape};
use crate::kernels::Epilogue;

/// Runs `run` over `x` (`[groups][t][f][cin]`) in chunks of rows, its output grid
/// (`out_f` columns) set to `init` before each chunk; returns `[groups][t][out_f][cout]`.
#[allow(clippy::too_many_arguments)]
fn stream_rows(
    in_shape: GridShape,
    out_f: usize,
    cout: usize,
    x: &[f32],
    t: usize,
    chunks: &[usize],
    init: f32,
    run: &mut dyn FnMut(&Grid, usize, &mut Grid),
) -> Vec<f32> {
    let (g, f, cin) = (in_shape.groups, in_shape.f, in_shape.c);
    let mut inp = Grid::new(in_shape);
    let mut out = Grid::new(GridShape::raw(g, in_shape.max_t, out_f, cout));
    let mut y = vec![0f32; g * t * out_f * cout];
    let mut t0 = 0;
    for &n in chunks {
        for gi in 0..g {
            for ti in 0..n {
                let src = ((gi * t + t0 + ti) * f) * cin;
                let dst = inp.interior(gi, ti, 0);
                inp.data[dst..dst + f * cin].copy_from_slice(&x[src..src + f * cin]);
            }
        }
        out.data.iter_mut().for_each(|v| *v = init);
        run(&inp, n, &mut out);
        for gi in 0..g {
            for ti in 0..n {
                let src = out.interior(gi, ti, 0);
                let dst = (gi * t + t0 + ti) * out_f * cout;
                y[dst..dst + out_f * cout].copy_from_slice(&out.data[src..src + out_f * cout]);
            }
        }
        inp.shift_history(n);
        t0 += n;
    }
    y
}

/// Runs `run` over `x` (`[groups][t][f][cin]`) in chunks of rows, returns `[groups][t][f][cout]`.
fn stream(
    in_shape: GridShape,
    cout: usize,
    x: &[f32],
    t: usize,
    chunks: &[usize],
    init: f32,
    run: &mut dyn FnMut(&Grid, usize, &mut Grid),
) -> Vec<f32> {
    let y = stream_rows(in_shape, in_shape.f, cout, x, t, chunks, init, run);
    assert_eq!(chunks.iter().sum::<usize>(), t);
    y
}

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
                let want = stream(
                    direct.input_shape(groups, 8),
                    cout,
                    &x,
                    t,
                    &chunks,
                    0.5,
                    &mut |i, n, o| direct.run(isa, i, n, o, epi, &pool),
                );
                let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
                for mt in [2, 4] {
                    for mf in [2, 4] {
                        let w = WinoConv3x3::new(&k, &b, cin, cout, f, [mt, mf]);
                        let mut s = w.scratch(groups, 8);
                        let got = stream(
                            direct.input_shape(groups, 8),
                            cout,
                            &x,
                            t,
                            &chunks,
                            0.5,
                            &mut |i, n, o| w.run(isa, i, n, o, epi, &mut s, &pool),
                        );
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
                cout,
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
            cout,
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

/// Runs a transposed conv over `x` in chunks of input rows (stride 1 in time).
fn stream_t(
    in_shape: GridShape,
    out_f: usize,
    cout: usize,
    x: &[f32],
    t: usize,
    chunks: &[usize],
    run: &mut dyn FnMut(&Grid, usize, &mut Grid),
) -> Vec<f32> {
    stream_rows(in_shape, out_f, cout, x, t, chunks, 0.25, run)
}

#[test]
fn winograd_convt_matches_direct() {
    let tiers = rill_kernels::isa::tiers_under_test("winograd::winograd_convt_matches_direct");
    use crate::conv::Conv2dTranspose;
    let pool = Pool::new(2);
    let t = 12;
    // The stride-1 decoder shapes: kf 4 / sf 2 (decoder_2/3/5/6), kf 6 / sf 3 (decoder_4).
    for &(kf, sf, cin, cout, f) in &[(4, 2, 32, 16, 10), (6, 3, 16, 32, 4), (4, 2, 16, 48, 3)] {
        let k = rand_vec(3 * kf * cin * cout, 51);
        let b = rand_vec(cout, 52);
        let direct = Conv2dTranspose::new(&k, &b, [3, kf, cin, cout], [1, sf], f);
        let groups = 2;
        let x = rand_vec(groups * t * f * cin, 53);
        for &isa in &tiers {
            for epi in [Epilogue::Store, Epilogue::Elu, Epilogue::Accumulate] {
                let shape = direct.input_shape(groups, 8);
                let want = stream_t(shape, f * sf, cout, &x, t, &[4, 8], &mut |i, n, o| {
                    direct.run(isa, i, n, o, epi, &pool)
                });
                let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
                for mt in [2, 4] {
                    let w = WinoConvT::new(&k, &b, [3, kf, cin, cout], [1, sf], f, mt);
                    let mut s = w.scratch(groups, 8);
                    let got = stream_t(shape, f * sf, cout, &x, t, &[4, 8], &mut |i, n, o| {
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
                let w = WinoConvT::new(&k, &b, [3, kf, cin, cout], [1, sf], f, 4);
                let run = |threads: usize, chunks: &[usize]| {
                    let p = Pool::new(threads);
                    let mut s = w.scratch(groups, 8);
                    stream_t(shape, f * sf, cout, &x, t, chunks, &mut |i, n, o| {
                        w.run(isa, i, n, o, epi, &mut s, &p)
                    })
                };
                assert_eq!(run(1, &[4, 4, 4]), run(2, &[8, 4]));
            }
        }
    }
}
