//! The 4-bit palettised kernels on every tier: exact integer sums, agreement with a
//! row-major reference, no overflow at extreme levels and activations.

use super::*;
use crate::gemv_int8::tests::{for_block_tasks, OwnedAct, Rng, SHAPES};

/// Palette shapes: the int8 shapes plus widths that are multiples of 32 only.
const MORE: [(usize, usize); 3] = [(16, 32), (53, 96), (80, 160)];

/// A palette whose levels are the integers `levels` (per block, each block with
/// a ±127 so the int8 conversion keeps them) times a per-block `scale`.
struct Case {
    rows: usize,
    cols: usize,
    levels: Vec<i64>,
    scales: Vec<f32>,
    idx: Vec<u8>,
}

impl Case {
    fn random(rng: &mut Rng, rows: usize, cols: usize, pow2: bool) -> Case {
        let blocks = rows.div_ceil(BLOCK);
        let mut levels: Vec<i64> = (0..blocks * 16).map(|_| rng.int(-127, 127)).collect();
        for b in 0..blocks {
            levels[b * 16 + rng.int(0, 15) as usize] = 127 * rng.sign();
        }
        let scales = (0..blocks)
            .map(|_| {
                if pow2 {
                    (2f32).powi(rng.int(-12, -4) as i32)
                } else {
                    (rng.unit() + 0.75) * 1e-3
                }
            })
            .collect();
        let idx = (0..rows * cols).map(|_| rng.int(0, 15) as u8).collect();
        Case {
            rows,
            cols,
            levels,
            scales,
            idx,
        }
    }

    fn matrix(&self) -> Lut4 {
        let lut = self
            .levels
            .iter()
            .enumerate()
            .map(|(i, &l)| l as f32 * self.scales[i / 16])
            .collect();
        let p = Palette {
            rows_per_group: BLOCK,
            lut,
            idx: self.idx.clone(),
        };
        Lut4::from_palette(&p, self.rows, self.cols)
    }

    /// Exact `Σ_c level(r, c)·xq[c]` per row, from the row-major indices.
    fn dots(&self, xq: &[i16]) -> Vec<i64> {
        (0..self.rows)
            .map(|r| {
                (0..self.cols)
                    .map(|c| {
                        let i = self.idx[r * self.cols + c] as usize;
                        self.levels[(r / BLOCK) * 16 + i] * xq[c] as i64
                    })
                    .sum()
            })
            .collect()
    }
}

fn run(m: &Lut4, isa: Isa, act: &Act<'_>, per: usize) -> Vec<f32> {
    let mut y = vec![f32::NAN; m.rows];
    let range = 0..m.rows;
    let sums = byte_sums(act);
    for_block_tasks(m.rows.div_ceil(BLOCK), per, |b| {
        m.run_blocks(isa, b, &range, act, sums, y.as_mut_ptr())
    });
    y
}

fn shapes() -> impl Iterator<Item = (usize, usize)> {
    SHAPES.into_iter().chain(MORE)
}

#[test]
fn integer_sums_are_exact_on_every_tier() {
    let tiers = crate::isa::tiers_under_test("gemv_lut4::integer_sums_are_exact_on_every_tier");
    // Power-of-two scales and sx = 1 make `y / scale` the integer sum itself,
    // and small activations keep it below 2^24 (exact in f32). AVX-512 converts
    // `Σ level·hi` and `Σ level·(xq & 0xff)` to f32 separately; the second is
    // exact only below 2^24, guaranteed for non-negative activations (it is then
    // the sum itself) or when 127·255·cols < 2^24.
    let mut rng = Rng(5);
    for (rows, cols) in shapes() {
        let case = Case::random(&mut rng, rows, cols, true);
        let m = case.matrix();
        assert_eq!(m.scales, case.scales, "test premise: scales kept exactly");
        for signed in [true, false] {
            let x = if signed {
                OwnedAct::random(&mut rng, cols, 60, 1.0)
            } else {
                let xq = (0..cols).map(|_| rng.int(0, 120) as i16).collect();
                OwnedAct::new(xq, 1.0)
            };
            let d = case.dots(x.xq());
            for &isa in &tiers {
                if isa.vnni() && signed && 127 * 255 * cols >= 1 << 24 {
                    continue;
                }
                for per in 1..=4 {
                    let y = run(&m, isa, &x.act(), per);
                    for r in 0..rows {
                        assert!(d[r].abs() < 1 << 24);
                        let got = y[r] / case.scales[r / BLOCK];
                        assert_eq!(got, d[r] as f32, "{isa:?} {rows}x{cols} row {r}");
                    }
                }
            }
        }
    }
}

#[test]
fn every_tier_matches_row_major_reference() {
    let tiers = crate::isa::tiers_under_test("gemv_lut4::every_tier_matches_row_major_reference");
    // Portable and AVX2 compute `(scale·sx)·(d as f32)` from the same exact
    // integer d: bit-identical to the reference (with power-of-two scales,
    // which `from_palette` keeps exactly). AVX-512 converts two partial sums
    // separately; against the exact value, measured worst
    // |y − exact| / (scale·sx·Σ_c |level·xq|) over these shapes: 4.0e-8 on
    // every tier (the final f32 roundings dominate); asserted ≤ 5e-7 ≈ 8·2⁻²⁴,
    // which bounds AVX-512's extra conversions.
    const TOL: f64 = 5e-7;
    let mut rng = Rng(6);
    let mut worst = [0f64; 3];
    for (rows, cols) in shapes() {
        for pow2 in [true, false] {
            let case = Case::random(&mut rng, rows, cols, pow2);
            let m = case.matrix();
            let x = OwnedAct::random(&mut rng, cols, 32767, 3.0 / 32767.0);
            let act = x.act();
            let d = case.dots(x.xq());
            for &isa in &tiers {
                for per in 1..=4 {
                    let y = run(&m, isa, &act, per);
                    for r in 0..rows {
                        let s = case.scales[r / BLOCK];
                        if pow2 && !isa.vnni() {
                            let want = s * act.scale * d[r] as f32;
                            assert_eq!(
                                y[r].to_bits(),
                                want.to_bits(),
                                "{isa:?} {rows}x{cols} row {r}"
                            );
                        }
                        let mag: i64 = (0..cols)
                            .map(|c| {
                                let i = case.idx[r * cols + c] as usize;
                                (case.levels[(r / BLOCK) * 16 + i] * x.xq()[c] as i64).abs()
                            })
                            .sum();
                        let k = s as f64 * act.scale as f64;
                        let e = (y[r] as f64 - k * d[r] as f64).abs() / (k * mag as f64);
                        let kernel = if isa.vnni() {
                            2
                        } else {
                            usize::from(isa != Isa::PORTABLE)
                        };
                        worst[kernel] = worst[kernel].max(e);
                        assert!(
                            e <= TOL,
                            "{isa:?} {rows}x{cols} row {r}: {} vs {}",
                            y[r],
                            k * d[r] as f64
                        );
                    }
                }
            }
        }
    }
    eprintln!("lut4 worst relative error per kernel (portable, avx2, avx512 vnni): {worst:?}");
}

#[test]
fn extreme_values_do_not_overflow() {
    let tiers = crate::isa::tiers_under_test("gemv_lut4::extreme_values_do_not_overflow");
    // |level| = 127 and |xq| = 32767 everywhere at 4096 columns: |Σ| ≈ 1.7e10,
    // far beyond i32, which the chunked kernels must not wrap.
    let (rows, cols) = (32, 4096);
    let mut case = Case {
        rows,
        cols,
        levels: (0..32)
            .map(|i| if i % 2 == 0 { 127 } else { -127 })
            .collect(),
        scales: vec![1.0; 2],
        idx: vec![0; rows * cols],
    };
    for r in 0..rows {
        // Even rows all +127, odd rows all −127.
        case.idx[r * cols..(r + 1) * cols].fill((r % 2) as u8);
    }
    let m = case.matrix();
    for sign in [1i16, -1] {
        let x = OwnedAct::new(vec![sign * 32767; cols], 1.0);
        let d = case.dots(x.xq());
        for &isa in &tiers {
            let y = run(&m, isa, &x.act(), 2);
            for r in 0..rows {
                let want = d[r] as f64;
                assert_eq!(want.abs(), 127.0 * 32767.0 * cols as f64);
                assert!(
                    (y[r] as f64 - want).abs() <= 1e-6 * want.abs(),
                    "{isa:?}: {} vs {want}",
                    y[r]
                );
                if !isa.vnni() {
                    assert_eq!(y[r], d[r] as f32, "{isa:?}");
                }
            }
        }
    }
}
