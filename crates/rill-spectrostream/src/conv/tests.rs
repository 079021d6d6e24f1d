//! Convolutions against naive layer-mode references, streamed in uneven chunks so
//! the history handling is covered, on every SIMD tier this CPU has.

use super::*;

pub(crate) use rill_kernels::conv::rand_vec;

/// Layer-mode conv: causal time padding `kt−1`, freq padding `((kf−1)/2, rest)`.
/// `x` is `[t][f][cin]`, kernel `[kt][kf][cin][cout]`; f64 accumulation.
fn naive_conv2d(
    x: &[f32],
    t: usize,
    f: usize,
    k: &[f32],
    bias: &[f32],
    [kt, kf, cin, cout]: [usize; 4],
) -> Vec<f32> {
    let pl = (kf - 1) / 2;
    let mut y = vec![0f32; t * f * cout];
    for ti in 0..t {
        for fi in 0..f {
            for co in 0..cout {
                let mut s = 0f64;
                for a in 0..kt {
                    for c in 0..kf {
                        let (xt, xf) = (
                            ti as isize + a as isize - (kt as isize - 1),
                            fi as isize + c as isize - pl as isize,
                        );
                        if xt < 0 || xf < 0 || xf >= f as isize {
                            continue;
                        }
                        for ci in 0..cin {
                            s += x[((xt as usize) * f + xf as usize) * cin + ci] as f64
                                * k[((a * kf + c) * cin + ci) * cout + co] as f64;
                        }
                    }
                }
                y[(ti * f + fi) * cout + co] = (s + bias[co] as f64) as f32;
            }
        }
    }
    y
}

/// Layer-mode transposed conv exactly as spec §4.3 states it: scatter with the
/// flipped kernel, keep `raw[0 : T·st]` (causal) and `raw[L : L+F·sf]` ('same',
/// `L = ⌊(kf−sf)/2⌋`), add the bias after the overlap-add and trim. `x` is
/// `[t][f_in][cin]`; f64 accumulation.
fn naive_conv2d_transpose(x: &[f32], t: usize, w: &TransposeWeights) -> Vec<f32> {
    let ([kt, kf, cin, cout], [st, sf]) = (w.shape, w.stride);
    let (f, k, bias) = (w.f_in, w.kernel, w.bias);
    let (rt, rf) = ((t - 1) * st + kt, (f - 1) * sf + kf);
    let mut raw = vec![0f64; rt * rf * cout];
    for i in 0..t {
        for fi in 0..f {
            for a in 0..kt {
                for b in 0..kf {
                    for ci in 0..cin {
                        let xv = x[(i * f + fi) * cin + ci] as f64;
                        for co in 0..cout {
                            let kv = k[(((kt - 1 - a) * kf + (kf - 1 - b)) * cin + ci) * cout + co]
                                as f64;
                            raw[((i * st + a) * rf + fi * sf + b) * cout + co] += xv * kv;
                        }
                    }
                }
            }
        }
    }
    let l = (kf - sf) / 2;
    let (ot, of) = (t * st, f * sf);
    let mut y = vec![0f32; ot * of * cout];
    for p in 0..ot {
        for q in 0..of {
            for co in 0..cout {
                y[(p * of + q) * cout + co] =
                    (raw[(p * rf + q + l) * cout + co] + bias[co] as f64) as f32;
            }
        }
    }
    y
}

fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-3);
    let err = got
        .iter()
        .zip(want)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        err <= 2e-5 * scale,
        "{what}: max abs err {err} (scale {scale})"
    );
}

/// Streams `x` (`[groups][t][f][cin]`) through a layer (`run`: `st` output rows per
/// input row) chunk by chunk, its output grid (`out_shape`) set to `init` before
/// each chunk (what an accumulating epilogue adds to), and returns
/// `[groups][t·st][f_out][cout]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn stream(
    in_shape: GridShape,
    out_shape: GridShape,
    st: usize,
    x: &[f32],
    t: usize,
    chunks: &[usize],
    init: f32,
    run: &mut dyn FnMut(&Grid, usize, &mut Grid),
) -> Vec<f32> {
    let (g, f, cin) = (in_shape.groups, in_shape.f, in_shape.c);
    let (fo, co) = (out_shape.f, out_shape.c);
    let mut inp = Grid::new(in_shape);
    let mut out = Grid::new(out_shape);
    let mut y = vec![0f32; g * t * st * fo * co];
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
            for ti in 0..n * st {
                let src = out.interior(gi, ti, 0);
                let dst = ((gi * t * st) + t0 * st + ti) * fo * co;
                y[dst..dst + fo * co].copy_from_slice(&out.data[src..src + fo * co]);
            }
        }
        inp.shift_history(n);
        t0 += n;
    }
    assert_eq!(t0, t);
    y
}

#[test]
fn conv2d_matches_naive() {
    let tiers = rill_kernels::isa::tiers_under_test("conv::conv2d_matches_naive");
    let pool = Pool::new(2);
    let t = 6;
    let chunks = [1, 2, 3];
    // (kt, kf, cin, cout, f): the decoder's 3x3 and 7x7 (narrow output), 1x1, odd sizes.
    for &(kt, kf, cin, cout, f) in &[
        (3, 3, 16, 64, 5),
        (3, 3, 20, 80, 4),
        (7, 7, 16, 2, 9),
        (1, 1, 32, 16, 3),
        (3, 3, 8, 24, 7),
    ] {
        let k = rand_vec(kt * kf * cin * cout, 1);
        let b = rand_vec(cout, 2);
        let conv = Conv2d::new(&k, &b, [kt, kf, cin, cout], f);
        let groups = 2;
        let x = rand_vec(groups * t * f * cin, 3);
        for &isa in &tiers {
            let (inp, out) = (
                conv.input_shape(groups, 3),
                GridShape::raw(groups, 3, f, cout),
            );
            let y = stream(inp, out, 1, &x, t, &chunks, 0.0, &mut |i, n, o| {
                conv.run(isa, i, n, o, Epilogue::Store, &pool)
            });
            for g in 0..groups {
                let xs = &x[g * t * f * cin..(g + 1) * t * f * cin];
                let want = naive_conv2d(xs, t, f, &k, &b, [kt, kf, cin, cout]);
                let got = &y[g * t * f * cout..(g + 1) * t * f * cout];
                assert_close(&format!("conv {kt}x{kf} {cin}->{cout} {isa:?}"), got, &want);
            }
        }
    }
}

#[test]
fn conv2d_transpose_matches_naive_scatter() {
    let tiers = rill_kernels::isa::tiers_under_test("conv::conv2d_transpose_matches_naive_scatter");
    let pool = Pool::new(2);
    let t = 5;
    let chunks = [1, 1, 3];
    // Every (kernel, stride) of the decoder: decoder_0, decoder_1, decoder_2/3/5/6, decoder_4.
    for &(kt, kf, st, sf, cin, cout, f) in &[
        (4, 3, 2, 1, 16, 64, 5),
        (4, 4, 2, 2, 16, 32, 5),
        (3, 4, 1, 2, 24, 64, 10),
        (3, 6, 1, 3, 16, 48, 4),
        (3, 4, 1, 2, 16, 16, 3),
    ] {
        let k = rand_vec(kt * kf * cin * cout, 11);
        let b = rand_vec(cout, 12);
        let weights = TransposeWeights {
            kernel: &k,
            bias: &b,
            shape: [kt, kf, cin, cout],
            stride: [st, sf],
            f_in: f,
        };
        let ct = Conv2dTranspose::new(&weights);
        let groups = 2;
        let x = rand_vec(groups * t * f * cin, 13);
        for &isa in &tiers {
            let inp = ct.input_shape(groups, 3);
            let out = GridShape::raw(groups, 3 * st, f * sf, cout);
            let y = stream(inp, out, st, &x, t, &chunks, 0.0, &mut |i, n, o| {
                ct.run(isa, i, n, o, Epilogue::Store, &pool)
            });
            for g in 0..groups {
                let xs = &x[g * t * f * cin..(g + 1) * t * f * cin];
                let want = naive_conv2d_transpose(xs, t, &weights);
                let n = t * st * f * sf * cout;
                let got = &y[g * n..(g + 1) * n];
                assert_close(&format!("convT {kt}x{kf} s{st}x{sf} {isa:?}"), got, &want);
            }
        }
    }
}

/// Throughput of the decoder's heaviest shapes (not asserted): `cargo test --release -p rill-spectrostream -- --ignored kernel_throughput --nocapture`.
#[test]
#[ignore]
fn kernel_throughput() {
    for threads in [1, 2] {
        let pool = Pool::new(threads);
        // (name, cin, cout, f, t): decoder_5 conv3x3, decoder_3 conv3x3, decoder_6 conv3x3.
        for &(name, cin, cout, f, t) in &[
            ("d5 3x3", 128, 128, 240, 4),
            ("d3 3x3", 256, 256, 40, 4),
            ("d6 3x3", 64, 64, 480, 4),
            ("d0 3x3", 1024, 1024, 5, 2),
        ] {
            let k = rand_vec(9 * cin * cout, 1);
            let b = rand_vec(cout, 2);
            let conv = Conv2d::new(&k, &b, [3, 3, cin, cout], f);
            let groups = if cin == 1024 { 1 } else { 2 };
            let mut inp = Grid::new(conv.input_shape(groups, t));
            let r = rand_vec(inp.data.len(), 3);
            inp.data.copy_from_slice(&r);
            let mut out = Grid::new(GridShape::raw(groups, t, f, cout));
            let isa = rill_kernels::isa::active();
            let reps = 20;
            let start = std::time::Instant::now();
            for _ in 0..reps {
                conv.run(isa, &inp, t, &mut out, Epilogue::Elu, &pool);
            }
            let dt = start.elapsed().as_secs_f64() / reps as f64;
            let flops = 2.0 * (groups * t * f * 9 * cin * cout) as f64;
            eprintln!(
                "{name} {threads}T {isa:?}: {:.3} ms, {:.1} GFLOP/s",
                dt * 1e3,
                flops / dt / 1e9
            );
        }
    }
}
