//! Kernel driver checks: epilogues, thread-count invariance, tier agreement.

use super::*;
#[cfg(target_arch = "aarch64")]
use crate::conv::packed::Narrow;
use crate::conv::packed::{has_narrow_kernel, Layout};
use crate::conv::rand_vec;
use crate::conv::test_data::bits_hash;
#[cfg(target_arch = "aarch64")]
use crate::conv::test_data::snr_db;
use crate::Pool;

/// One job over `w` on `isa` into a fresh output of `len` values.
fn gemm_one(
    isa: Isa,
    w: &Packed,
    rows: RowMap,
    input: &[f32],
    epi: Epilogue,
    len: usize,
    pool: &Pool,
) -> Vec<f32> {
    let mut out = vec![0f32; len];
    gemm(
        isa,
        Blocking::Grid,
        &[Job {
            w,
            rows,
            input,
            epi,
        }],
        &mut out,
        pool,
    );
    out
}

/// `m` rows, row `r` reading input from `r · in_stride` and writing output at `r · out_stride`.
fn consecutive_rows(m: usize, in_stride: usize, out_stride: usize) -> RowMap {
    RowMap {
        dims: [1, m, 1],
        in_strides: [0, in_stride, 0],
        in_base: 0,
        out_strides: [0, out_stride, 0],
        out_base: 0,
    }
}

/// A dense GEMM job `out[m, :] (stride ldo) = epi(x[m, :] · W + b)` plus its f64 reference.
fn dense(m: usize, k: usize, n: usize, ldo: usize) -> (Packed, Vec<f32>, RowMap, Vec<f64>) {
    let w = rand_vec(k * n, 5);
    let b = rand_vec(n, 6);
    let x = rand_vec(m * k, 7);
    let p = Packed::new(&w, vec![0], k, n, &b);
    let rows = consecutive_rows(m, k, ldo);
    let mut want = vec![0f64; m * n];
    for r in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|i| x[r * k + i] as f64 * w[i * n + j] as f64)
                .sum();
            want[r * n + j] = s + b[j] as f64;
        }
    }
    (p, x, rows, want)
}

#[test]
fn epilogues_match_reference() {
    let tiers = crate::isa::tiers_under_test("codec_kernels::epilogues_match_reference");
    let pool = Pool::new(2);
    for &(m, k, n) in &[
        (13, 40, 64),
        (50, 17, 80),
        (7, 33, 2),
        (1, 64, 128),
        (3, 16, 5),
    ] {
        let ldo = n + 3;
        let (p, x, rows, want) = dense(m, k, n, ldo);
        for &isa in &tiers {
            for epi in [Epilogue::Store, Epilogue::Elu, Epilogue::Accumulate] {
                let mut out = vec![0.25f32; m * ldo];
                let job = Job {
                    w: &p,
                    rows,
                    input: &x,
                    epi,
                };
                gemm(isa, Blocking::Grid, &[job], &mut out, &pool);
                for r in 0..m {
                    for j in 0..ldo {
                        let got = out[r * ldo + j] as f64;
                        let exp = if j >= n {
                            0.25 // untouched padding
                        } else {
                            let y = want[r * n + j];
                            match epi {
                                Epilogue::Store => y,
                                Epilogue::Elu => {
                                    if y > 0.0 {
                                        y
                                    } else {
                                        y.exp() - 1.0
                                    }
                                }
                                Epilogue::Accumulate => 0.25 + y,
                                Epilogue::Snake(_) => unreachable!("not among the cases"),
                            }
                        };
                        assert!(
                            (got - exp).abs() <= 1e-5 * (1.0 + exp.abs()),
                            "{isa:?} {epi:?} m{m} k{k} n{n} [{r},{j}]: {got} vs {exp}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn results_do_not_depend_on_threads_and_simd_tiers_agree() {
    let tiers = crate::isa::tiers_under_test(
        "codec_kernels::results_do_not_depend_on_threads_and_simd_tiers_agree",
    );
    let (m, k, n) = (97, 96, 192);
    let (p, x, rows, _) = dense(m, k, n, n);
    let mut by_tier = Vec::new();
    for &isa in &tiers {
        let mut first: Option<Vec<f32>> = None;
        for threads in [1, 2, 3] {
            let pool = Pool::new(threads);
            let out = gemm_one(isa, &p, rows, &x, Epilogue::Elu, m * n, &pool);
            match &first {
                None => first = Some(out),
                Some(f) => assert!(f == &out, "{isa:?}: {threads} threads changed the result"),
            }
        }
        by_tier.push((isa, first.unwrap_or_default()));
    }
    // AVX2 and AVX-512 perform the same FMAs in the same order and the same ELU.
    let simd: Vec<_> = by_tier
        .iter()
        .filter(|(i, _)| *i != Isa::PORTABLE)
        .collect();
    for w in simd.windows(2) {
        assert!(w[0].1 == w[1].1, "{:?} and {:?} differ", w[0].0, w[1].0);
    }
}

/// Narrow outputs (`n < 16`, dot-product kernels): AVX2 and AVX-512 agree bit for
/// bit (same lanes, same reduction), and every tier is close to the f64 reference.
#[test]
fn narrow_kernels_agree_across_tiers() {
    let tiers = crate::isa::tiers_under_test("codec_kernels::narrow_kernels_agree_across_tiers");
    let pool = Pool::new(2);
    for &(m, k, n) in &[(13, 64, 2), (9, 77, 5), (4, 7, 1), (30, 448, 2)] {
        let (p, x, rows, want) = dense(m, k, n, n);
        let mut simd: Option<Vec<f32>> = None;
        for &isa in &tiers {
            let out = gemm_one(isa, &p, rows, &x, Epilogue::Store, m * n, &pool);
            for (o, w) in out.iter().zip(&want) {
                assert!(
                    (*o as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                    "{isa:?}: {o} vs {w}"
                );
            }
            if isa != Isa::PORTABLE {
                match &simd {
                    None => simd = Some(out),
                    Some(s) => assert_eq!(&out, s, "{isa:?} ({m},{k},{n}) differs from AVX2"),
                }
            }
        }
    }
}

#[test]
fn elu_copy_matches_definition() {
    let tiers = crate::isa::tiers_under_test("codec_kernels::elu_copy_matches_definition");
    let mut x: Vec<f32> = rand_vec(1000, 9).iter().map(|v| v * 30.0).collect();
    x.extend_from_slice(&[0.0, -0.0, -87.5, -200.0, 1e-30, -1e-30, 88.0, -1e-7]);
    for &isa in &tiers {
        let mut y = vec![0f32; x.len()];
        elu_copy(isa, &x, &mut y);
        for (a, b) in x.iter().zip(&y) {
            let want = if *a > 0.0 {
                *a as f64
            } else {
                (*a as f64).exp() - 1.0
            };
            assert!(
                (*b as f64 - want).abs() <= 3e-7 * (1.0 + want.abs()),
                "{isa:?} elu({a}) = {b}, want {want}"
            );
        }
        let mut nan = [0f32; 1];
        elu_copy(isa, &[f32::NAN], &mut nan);
        assert!(nan[0].is_nan(), "{isa:?}: elu(NaN) must be NaN");
    }
}

#[test]
fn f16_conversion_round_trips_and_rounds_to_nearest_even() {
    // Every half converts to f32 and back unchanged (NaN payloads aside).
    for h in 0..=u16::MAX {
        let f = f16_to_f32(h);
        if f.is_nan() {
            assert!(f32_to_f16(f) & 0x7c00 == 0x7c00 && f32_to_f16(f) & 0x3ff != 0);
        } else {
            assert_eq!(f32_to_f16(f), h, "half {h:#06x} -> {f}");
        }
    }
    // Ties to even, overflow to inf, underflow to zero, subnormals.
    assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00); // tie → even (down)
    assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02); // tie → even (up)
    assert_eq!(f32_to_f16(65520.0), 0x7c00);
    assert_eq!(f32_to_f16(-1e-9), 0x8000);
    assert_eq!(f16_to_f32(0x0001), f32::powi(2.0, -24));
    assert_eq!(f32_to_f16(f32::powi(2.0, -25) * 1.5), 0x0001);
    // Against the hardware conversion where present.
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("f16c") {
        use std::arch::x86_64::*;
        let v = rand_vec(4096, 9);
        for (i, &x) in v.iter().enumerate() {
            let x = x * f32::powi(2.0, (i % 40) as i32 - 28);
            // SAFETY: F16C is available (checked above).
            let hw = unsafe {
                _mm_extract_epi16::<0>(_mm_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm_set1_ps(x)))
            } as u16;
            assert_eq!(f32_to_f16(x), hw, "{x}");
        }
    }
}

/// f16 panels (AVX-512 widening kernel) compute exactly what f32 panels holding the
/// rounded weights compute on the other tiers.
#[test]
fn f16_panels_match_rounded_f32() {
    let tiers = crate::isa::tiers_under_test("codec_kernels::f16_panels_match_rounded_f32");
    let pool = Pool::new(2);
    for &(m, k, n) in &[(13, 40, 64), (50, 17, 80), (1, 64, 128), (7, 32, 16)] {
        let (p, x, rows, _) = dense(m, k, n, n);
        let mut want = None;
        for &isa in &tiers {
            let mut q = p.clone();
            q.round_to_f16(isa);
            assert_eq!(
                q.narrow.is_some(),
                has_narrow_kernel(isa, EarlyWeights::F16)
            );
            let out = gemm_one(isa, &q, rows, &x, Epilogue::Elu, m * n, &pool);
            if isa != Isa::PORTABLE {
                match &want {
                    None => want = Some(out),
                    Some(w) => assert_eq!(&out, w, "{isa:?} differs from AVX2"),
                }
            }
        }
    }
}

/// int16 panels (widened in the AVX2 / AVX-512 / NEON kernels, each column's sum
/// scaled once) give the same bits on every SIMD tier, stay within f32 rounding of
/// f32 panels holding the dequantised weights (measured ≤ 2.7e-7 × peak), and the
/// quantisation error is that of 16-bit per-column steps.
#[test]
fn i16_panels_match_dequantised_f32() {
    let tiers = crate::isa::tiers_under_test("codec_kernels::i16_panels_match_dequantised_f32");
    let pool = Pool::new(2);
    for &(m, k, n) in &[
        (13, 40, 64),
        (50, 17, 80),
        (1, 64, 128),
        (7, 32, 16),
        (3, 9, 5),
    ] {
        let (p, x, rows, _) = dense(m, k, n, n);
        let run = |w: &Packed, isa: Isa| gemm_one(isa, w, rows, &x, Epilogue::Store, m * n, &pool);
        let exact = run(&p, Isa::PORTABLE);
        let mut want = None;
        for &isa in &tiers {
            let mut q = p.clone();
            q.quantize_i16(isa);
            let wide = p.layout == Layout::Panels && has_narrow_kernel(isa, EarlyWeights::I16);
            assert_eq!(q.narrow.is_some(), wide, "{isa:?}");
            // The dequantised weights' products up to f32 rounding: int16 panels
            // sum `a·q` and scale the sum once, f32 panels round every `a·(q·s)`.
            let mut deq = p.clone();
            deq.quantize_i16(Isa::PORTABLE);
            let out = run(&q, isa);
            let reference = run(&deq, isa);
            if !wide {
                assert_eq!(
                    out, reference,
                    "{isa:?}: f32 panels of the dequantised weights"
                );
            }
            let peak = reference.iter().fold(0f32, |m, v| m.max(v.abs()));
            let worst = out
                .iter()
                .zip(&reference)
                .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            eprintln!(
                "int16 ({m},{k},{n}) {isa}: max |int16 − dequantised| {:.2e} × peak",
                worst / peak
            );
            assert!(
                worst <= 1e-6 * peak,
                "{isa:?} ({m},{k},{n}): int16 panels {worst:e} from the dequantised product (peak {peak})"
            );
            // (Narrow outputs have their own per-tier dot-product kernels.)
            if isa != Isa::PORTABLE && p.layout == Layout::Panels {
                match &want {
                    None => want = Some(out.clone()),
                    Some(w) => assert_eq!(&out, w, "{isa:?} differs from AVX2"),
                }
            }
            // Error of a 16-bit step per column: far below f16's.
            let (mut sig, mut err) = (0f64, 0f64);
            for (a, b) in exact.iter().zip(&out) {
                sig += (*a as f64).powi(2);
                err += ((a - b) as f64).powi(2);
            }
            let snr = 10.0 * (sig / err.max(1e-300)).log10();
            eprintln!("int16 weights ({m},{k},{n}) {isa}: SNR {snr:.1} dB");
            assert!(
                snr > 90.0,
                "{isa:?} ({m},{k},{n}): int16 weights SNR {snr:.1} dB"
            );
        }
    }
}

/// Every SIMD tier (AVX2, AVX-512, NEON) computes the same bits: the same FMAs in
/// the same order and the same ELU polynomial. The expected hashes were produced
/// by the AVX2 and AVX-512 kernels on x86-64, so an ARM run checks NEON against
/// the x86 tiers' results on the same inputs.
#[test]
fn simd_tiers_reproduce_the_x86_bits() {
    let tiers = crate::isa::tiers_under_test("codec_kernels::simd_tiers_reproduce_the_x86_bits");
    let pool = Pool::new(2);
    // (m, k, n) → hashes for the Store and Elu epilogues (n < 16: the narrow kernels).
    let cases: [((usize, usize, usize), [u64; 2]); 4] = [
        ((13, 40, 64), [0xccd829671902d99d, 0xa3f18082572e91dd]),
        ((50, 17, 80), [0x40a40b80990c4b27, 0x58fe4b88f4eb1b10]),
        ((7, 33, 2), [0xb14fe3a7d1014604, 0x6465e6913bebaa40]),
        ((3, 16, 5), [0xed8387298957fc0e, 0x4f11bc5fb40e27f9]),
    ];
    for &((m, k, n), want) in &cases {
        let (p, x, rows, _) = dense(m, k, n, n);
        for &isa in tiers.iter().filter(|i| **i != Isa::PORTABLE) {
            for (e, epi) in [Epilogue::Store, Epilogue::Elu].into_iter().enumerate() {
                let out = gemm_one(isa, &p, rows, &x, epi, m * n, &pool);
                let got = bits_hash(&out);
                assert_eq!(got, want[e], "({m},{k},{n}) {isa} {epi:?}: {got:#018x}");
            }
        }
    }
}

/// Half arithmetic is chosen exactly where the CPU has it (NEON `fp16`); on every
/// other tier the packing, and so the f32 kernels' results, stay as they were.
#[test]
fn half_arithmetic_only_with_fp16() {
    let tiers = crate::isa::tiers_under_test("codec_kernels::half_arithmetic_only_with_fp16");
    let (p, ..) = dense(5, 40, 64, 64);
    for &isa in &tiers {
        let mut q = p.clone();
        q.use_half_arithmetic(isa);
        assert_eq!(q.half_arithmetic(), isa.fp16(), "{isa:?}");
        if !isa.fp16() {
            assert_eq!(q, p, "{isa:?}: packing changed without fp16");
        }
    }
    // Narrow outputs keep their f32 dot-product kernels.
    let (narrow, ..) = dense(5, 40, 2, 2);
    for &isa in &tiers {
        let mut q = narrow.clone();
        q.use_half_arithmetic(isa);
        assert!(!q.half_arithmetic());
    }
}

/// What the fp16 kernel computes, one element at a time: each task's inputs (its
/// [`BLOCK_M`] rows) times `2^s` with `s` from the largest of them
/// ([`half_input_log2`]) rounded to half, half FMAs (the exact `a·w + h` in f64,
/// rounded once to half) over runs of [`HALF_CHUNK`] channels per tap, each partial
/// sum times `2^-(w_log2 + s)` added in f32, then the bias.
#[cfg(target_arch = "aarch64")]
fn half_reference(p: &Packed, x: &[f32], row_base: &[usize]) -> Vec<f32> {
    use half::f16;
    let Some(Narrow::HalfMath { h, w_log2 }) = &p.narrow else {
        panic!("not a half-arithmetic matrix");
    };
    let inputs = |base: usize| {
        p.taps.iter().flat_map(move |&off| {
            let start = (base as isize + off) as usize;
            x[start..start + p.cin].iter().copied()
        })
    };
    let mut out = Vec::new();
    for task in row_base.chunks(BLOCK_M) {
        let largest = task
            .iter()
            .flat_map(|&base| inputs(base))
            .fold(0f32, |m, v| m.max(v.abs()));
        let s = half_input_log2(largest);
        let (in_scale, out_scale) = (2f64.powi(s), 2f64.powi(-s - w_log2));
        for &base in task {
            for j in 0..p.n {
                let (panel, lane) = (j / PANEL, j % PANEL);
                let mut acc = 0f32;
                for (ti, &off) in p.taps.iter().enumerate() {
                    for c0 in (0..p.cin).step_by(HALF_CHUNK) {
                        let mut sum = f16::ZERO;
                        for ci in c0..(c0 + HALF_CHUNK).min(p.cin) {
                            let xi = (base as isize + off) as usize + ci;
                            let a = f16::from_f64(x[xi] as f64 * in_scale);
                            let kk = ti * p.cin + ci;
                            let w = f16::from_bits(h[(panel * p.k + kk) * PANEL + lane]);
                            sum = f16::from_f64(a.to_f64() * w.to_f64() + sum.to_f64());
                        }
                        acc += (sum.to_f64() * out_scale) as f32;
                    }
                }
                out.push(acc + p.bias[j]);
            }
        }
    }
    out
}

/// The NEON fp16 kernel computes exactly [`half_reference`] (tails of fewer than 8
/// channels, several taps, row groups of 1–4, partial panels, two tasks of rows
/// with different input magnitudes, inputs from the random checkpoints' ≈ 1e-5 to
/// the real one's ≈ 1e6, which plain half products would overflow), and stays
/// close to the f32 product.
#[cfg(target_arch = "aarch64")]
#[test]
fn fp16_kernel_matches_the_scalar_half_reference() {
    let isa = Isa::detect();
    if !isa.fp16() {
        eprintln!("fp16_kernel_matches_the_scalar_half_reference: this CPU has no FP16 arithmetic (the f32 kernels run); nothing to test");
        return;
    }
    let pool = Pool::new(2);
    for &(m, cin, taps, n, magnitude) in &[
        (13, 40, 1, 64, 1.0),
        (7, 37, 2, 48, 3e-5),
        (50, 16, 3, 80, 1.0),
        (1, 5, 1, 16, 2e6),
        (6, 100, 2, 24, 1e4),
    ] {
        let tap_offsets: Vec<isize> = (0..taps).map(|t| (t * cin) as isize).collect();
        let k = taps * cin;
        // Weights of mixed magnitudes (so the weight scale is not 1).
        let w: Vec<f32> = rand_vec(k * n, 11).iter().map(|v| v * 0.07).collect();
        let b: Vec<f32> = rand_vec(n, 12).iter().map(|v| v * magnitude).collect();
        // Rows from the second task on (BLOCK_M) 64 times larger.
        let x: Vec<f32> = rand_vec((m + taps) * cin, 13)
            .iter()
            .enumerate()
            .map(|(i, v)| v * magnitude * if i / cin >= BLOCK_M { 64.0 } else { 1.0 })
            .collect();
        let f32_packed = Packed::new(&w, tap_offsets, cin, n, &b);
        let mut p = f32_packed.clone();
        p.use_half_arithmetic(isa);
        assert!(p.half_arithmetic());
        let rows = consecutive_rows(m, cin, n);
        let bases: Vec<usize> = (0..m).map(|r| r * cin).collect();
        let want = half_reference(&p, &x, &bases);
        let run = |w: &Packed, epi| {
            let mut out = vec![0.5f32; m * n];
            let job = Job {
                w,
                rows,
                input: &x,
                epi,
            };
            gemm(isa, Blocking::Grid, &[job], &mut out, &pool);
            out
        };
        let got = run(&p, Epilogue::Store);
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g.to_bits(),
                e.to_bits(),
                "({m},{cin},{taps},{n}) element {i}: {g} vs {e}"
            );
        }
        let acc = run(&p, Epilogue::Accumulate);
        for (a, e) in acc.iter().zip(&want) {
            assert_eq!(a.to_bits(), (0.5 + e).to_bits());
        }
        // Against the f32 product of the same (unrounded) values: half precision.
        let exact = run(&f32_packed, Epilogue::Store);
        let snr = snr_db(&exact, &got);
        eprintln!("fp16 arithmetic ({m},{cin},{taps},{n}) ×{magnitude:e}: SNR {snr:.1} dB vs f32");
        // Measured under qemu `-cpu max`: 65.8–79.6 dB.
        assert!(snr > 62.0, "fp16 arithmetic SNR {snr:.1} dB");
    }
}
