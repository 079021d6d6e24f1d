use super::*;
use crate::isa::Isa;
use crate::pool::Pool;
use crate::Ops;

fn lcg(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
}

fn reference(w: &[f32], cols: usize, x: &[f32]) -> Vec<f64> {
    w.chunks(cols)
        .map(|r| r.iter().zip(x).map(|(a, b)| *a as f64 * *b as f64).sum())
        .collect()
}

/// The weights a format actually multiplies with (its dequantised values).
fn effective(m: &Matrix, rows: usize, cols: usize) -> Vec<f32> {
    let mut w = vec![0f32; rows * cols];
    for r in 0..rows {
        m.row_into(r, &mut w[r * cols..(r + 1) * cols]);
    }
    w
}

#[test]
fn every_isa_matches_f64_reference() {
    let tiers = crate::isa::tiers_under_test("matrix::every_isa_matches_f64_reference");
    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    let mut seed = 7u64;
    let shapes = [
        (1, 1),
        (3, 17),
        (37, 768),
        (130, 1024),
        (64, 33),
        (5, 64),
        (67, 192),
    ];
    for &(rows, cols) in &shapes {
        let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
        let mut x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
        x[0] = 3.0; // an outlier, as transformer activations have
        for format in [
            WeightFormat::F32,
            WeightFormat::Bf16,
            WeightFormat::F16,
            WeightFormat::Int8,
            WeightFormat::Int4,
            WeightFormat::Lut4,
        ] {
            let m = Matrix::from_f32(rows, cols, w.clone(), format);
            let want = reference(&effective(&m, rows, cols), cols, &x);
            // int8 also quantises activations to int16 (error ≈ max|x|/65534 per entry).
            let act_err = if matches!(
                m.format(),
                WeightFormat::Int8 | WeightFormat::Int4 | WeightFormat::Lut4
            ) {
                3.0 / 32767.0
            } else {
                0.0
            };
            for &isa in &tiers {
                let mut y = vec![0f32; rows];
                m.gemv_rows_isa(isa, &x, &mut y, 0..rows, &mut scratch, &pool);
                for (a, b) in y.iter().zip(&want) {
                    let tol = 1e-5 * (cols as f64).sqrt() + act_err * 0.5 * cols as f64 * 0.5;
                    assert!(
                        (*a as f64 - b).abs() < tol,
                        "{isa:?} {format:?} {rows}x{cols}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

/// Half-exact weights (an F16 file) stored as F16 give the bits of F32 storage.
#[test]
fn exact_halves_stored_as_f16_change_no_bit() {
    let tiers = crate::isa::tiers_under_test("matrix::exact_halves_stored_as_f16");
    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    let mut seed = 8u64;
    let (rows, cols) = (70, 256);
    let w: Vec<f32> = (0..rows * cols)
        .map(|_| half::f16::from_f32(lcg(&mut seed)).to_f32())
        .collect();
    assert!(all_exact_f16(&w) && !all_exact_f16(&[0.1]));
    let x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
    let a = Matrix::from_f32(rows, cols, w.clone(), WeightFormat::F32);
    let b = Matrix::from_f32(rows, cols, w, WeightFormat::F16);
    for &isa in &tiers {
        let (mut ya, mut yb) = (vec![0f32; rows], vec![0f32; rows]);
        a.gemv_rows_isa(isa, &x, &mut ya, 0..rows, &mut scratch, &pool);
        b.gemv_rows_isa(isa, &x, &mut yb, 0..rows, &mut scratch, &pool);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&ya), bits(&yb), "{isa}");
    }
}

#[test]
fn gemv2_gives_the_bits_of_two_gemvs() {
    let tiers = crate::isa::tiers_under_test("matrix::gemv2_gives_the_bits_of_two_gemvs");
    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    let mut seed = 21u64;
    for &(rows, cols) in &[(1, 1), (37, 768), (130, 1024), (67, 33), (300, 128)] {
        let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
        let x0: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
        let x1: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
        for format in [
            WeightFormat::F32,
            WeightFormat::Bf16,
            WeightFormat::F16,
            WeightFormat::Int8,
            WeightFormat::Lut4,
            WeightFormat::Int4,
            WeightFormat::MlxInt8,
        ] {
            let m = Matrix::from_f32(rows, cols, w.clone(), format);
            for &isa in &tiers {
                let (mut a0, mut a1) = (vec![0f32; rows], vec![0f32; rows]);
                m.gemv_rows_isa(isa, &x0, &mut a0, 0..rows, &mut scratch, &pool);
                m.gemv_rows_isa(isa, &x1, &mut a1, 0..rows, &mut scratch, &pool);
                let (mut b0, mut b1) = (vec![1f32; rows], vec![1f32; rows]);
                m.gemv2_isa(isa, [&x0, &x1], [&mut b0, &mut b1], &mut scratch, &pool);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&a0), bits(&b0), "{isa} {format:?} {rows}x{cols} row 0");
                assert_eq!(bits(&a1), bits(&b1), "{isa} {format:?} {rows}x{cols} row 1");
            }
        }
    }
}

#[test]
fn int8_paths_agree_closely() {
    let tiers = crate::isa::tiers_under_test("matrix::int8_paths_agree_closely");
    // Integer sums are exact on every path; only f32 group accumulation order differs.
    let pool = Pool::single();
    let mut scratch = GemvScratch::new();
    let mut seed = 3u64;
    let (rows, cols) = (96, 1024);
    let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
    let x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
    let m = Matrix::from_f32(rows, cols, w.clone(), WeightFormat::Int8);
    let mut base = vec![0f32; rows];
    m.gemv_rows_isa(Isa::PORTABLE, &x, &mut base, 0..rows, &mut scratch, &pool);
    // The portable path against the f64 product of the unquantised weights (so
    // a CPU with one tier still tests something): int8 weights and activations.
    let mut worst = 0f64;
    for (r, &got) in base.iter().enumerate() {
        let want: f64 = (0..cols)
            .map(|c| w[r * cols + c] as f64 * x[c] as f64)
            .sum();
        worst = worst.max((got as f64 - want).abs());
    }
    eprintln!("int8 gemv vs f64: worst |error| {worst:e}");
    // Measured 2.85e-2 (deterministic inputs); twice that.
    assert!(worst < 5.7e-2, "int8 gemv is {worst:e} off the f64 product");
    for &isa in &tiers {
        let mut y = vec![0f32; rows];
        m.gemv_rows_isa(isa, &x, &mut y, 0..rows, &mut scratch, &pool);
        for (a, b) in y.iter().zip(&base) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "{isa:?}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn unaligned_row_ranges_stacking_and_parts() {
    let tiers = crate::isa::tiers_under_test("matrix::unaligned_row_ranges_stacking_and_parts");
    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    let mut seed = 11u64;
    let (rows, cols) = (300, 128);
    let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
    let x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
    for format in [WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Lut4] {
        let m = Matrix::from_f32(rows, cols, w.clone(), format);
        let mut full = vec![0f32; rows];
        Ops::active().gemv(&m, &x, &mut full, &mut scratch, &pool);
        for &isa in &tiers {
            // A window like one RVQ level of `to_logits` (not block aligned).
            let mut part = vec![0f32; 170];
            m.gemv_rows_isa(isa, &x, &mut part, 6..176, &mut scratch, &pool);
            for (a, b) in part.iter().zip(&full[6..176]) {
                assert!(
                    (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                    "{format:?} {isa:?}: {a} vs {b}"
                );
            }
        }
        // Arrays round-trip exactly; stacking equals converting the stacked matrix.
        let back = Matrix::from_arrays(rows, cols, m.to_arrays()).unwrap();
        let mut y2 = vec![0f32; rows];
        Ops::active().gemv(&back, &x, &mut y2, &mut scratch, &pool);
        assert_eq!(y2, full, "{format:?} arrays");
        let top = Matrix::from_f32(160, cols, w[..160 * cols].to_vec(), format);
        let bottom = Matrix::from_f32(128, cols, w[160 * cols..288 * cols].to_vec(), format);
        let stacked = Matrix::stack(vec![top, bottom]);
        let whole = Matrix::from_f32(288, cols, w[..288 * cols].to_vec(), format);
        let (mut a, mut b) = (vec![0f32; 288], vec![0f32; 288]);
        Ops::active().gemv(&stacked, &x, &mut a, &mut scratch, &pool);
        Ops::active().gemv(&whole, &x, &mut b, &mut scratch, &pool);
        assert_eq!(a, b, "{format:?} stack");
    }
}

#[test]
fn row_range_and_transpose() {
    let pool = Pool::single();
    let mut scratch = GemvScratch::new();
    let (rows, cols) = (10, 6);
    let w: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let mut t = vec![0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = w[r * cols + c];
        }
    }
    let m = Matrix::from_f32_transposed(rows, cols, &t, WeightFormat::F32);
    let x = vec![1f32; cols];
    let mut y = vec![0f32; 3];
    Ops::active().gemv_rows(&m, &x, &mut y, 4..7, &mut scratch, &pool);
    for (i, v) in y.iter().enumerate() {
        let r = 4 + i;
        assert_eq!(*v, (0..cols).map(|c| (r * cols + c) as f32).sum::<f32>());
    }
}

#[test]
fn arrays_that_do_not_fit_the_shape_are_typed_errors() {
    use super::{MatrixArrays, MatrixArraysError};
    let m = Matrix::from_f32(4, 64, vec![0.5; 256], WeightFormat::Int8);
    let e = Matrix::from_arrays(8, 64, m.to_arrays()).unwrap_err();
    assert!(
        matches!(
            e,
            MatrixArraysError::Length {
                array: "q",
                found: 256,
                expected: 512,
                ..
            }
        ),
        "{e}"
    );
    let e = Matrix::from_arrays(8, 32, m.to_arrays()).unwrap_err();
    assert!(
        matches!(e, MatrixArraysError::Columns { multiple: 64, .. }),
        "{e}"
    );
    let e = Matrix::from_arrays(usize::MAX, 2, MatrixArrays::F32(vec![])).unwrap_err();
    assert_eq!(
        e,
        MatrixArraysError::TooLarge {
            rows: usize::MAX,
            cols: 2
        }
    );
}

/// A row range that starts and ends inside 16-row blocks gives, row for row, the
/// bits of the whole product (the blocked formats compute whole blocks and keep
/// only the range's rows).
#[test]
fn misaligned_row_ranges_keep_the_bits_of_whole_products() {
    let tiers = crate::isa::tiers_under_test("matrix::misaligned_row_ranges");
    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    let mut seed = 11u64;
    let (rows, cols) = (200, 256);
    let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
    let x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
    for format in [WeightFormat::Int8, WeightFormat::Lut4, WeightFormat::Int4] {
        let m = Matrix::from_f32(rows, cols, w.clone(), format);
        for &isa in &tiers {
            let mut whole = vec![0f32; rows];
            m.gemv_rows_isa(isa, &x, &mut whole, 0..rows, &mut scratch, &pool);
            for range in [5..61, 16..17, 31..200, 0..3, 190..200] {
                let mut y = vec![f32::NAN; range.len()];
                m.gemv_rows_isa(isa, &x, &mut y, range.clone(), &mut scratch, &pool);
                assert_eq!(y, whole[range.clone()], "{format:?} {isa:?} {range:?}");
            }
        }
    }
}

#[test]
fn all_exact_f16_agrees_with_rounding_one_value_at_a_time() {
    let one = |v: f32| half::f16::from_f32(v).to_f32().to_bits() == v.to_bits();
    // Every half widened is exact; a value between two halves is not, wherever it
    // sits in the blocks of 1024.
    let halves: Vec<f32> = (0..=u16::MAX)
        .map(|b| half::f16::from_bits(b).to_f32())
        .filter(|v| !v.is_nan())
        .collect();
    assert!(all_exact_f16(&halves));
    for at in [0, 1023, 1024, 5000, halves.len() - 1] {
        let mut v = halves.clone();
        v[at] = 1.0 + 1.0 / 4096.0;
        assert!(!one(v[at]));
        assert!(!all_exact_f16(&v), "{at}");
    }
    for v in [0.1f32, 1.0 / 3.0, 65520.0, 1e-8, f32::MAX, 6.0e-8, -0.0] {
        assert_eq!(all_exact_f16(&[v]), one(v), "{v}");
    }
}
