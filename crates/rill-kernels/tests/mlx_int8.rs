//! The `mlx-int8` format against MLX itself: `testdata/mlx_int8.npz`, recorded with
//! `mx.quantize` / `mx.quantized_matmul` / `mx.dequantize` on bf16 (mlx 0.32.4, CPU)
//! by `testdata/make_mlx_int8.py`.
//!
//! * quantising the bf16-rounded weights reproduces MLX's values, bf16 scales and
//!   biases bit for bit;
//! * the product equals `mx.quantized_matmul` bit for bit on every tier (MLX's CPU
//!   kernel keeps a bf16 running sum; an f32 dot product misses by ≈ 8 % here);
//! * rows (embedding lookups) equal `mx.dequantize`.

use rill_kernels::{isa, GemvScratch, Matrix, Pool, WeightFormat};

const ROWS: usize = 40;
const COLS: usize = 4096;

fn vectors() -> rill_io::Npz {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/mlx_int8.npz");
    rill_io::Npz::read(path).unwrap_or_else(|e| {
        panic!("{e}: record it with `python testdata/make_mlx_int8.py` (mlx[cpu]==0.32.4)")
    })
}

fn f32s(npz: &rill_io::Npz, key: &str) -> Vec<f32> {
    npz.f32(key).unwrap_or_else(|e| panic!("{key}: {e}")).1
}

#[test]
fn quantiser_product_and_rows_match_mlx() {
    let v = vectors();
    let w = f32s(&v, "w");
    let x = f32s(&v, "x");
    let y_mlx = f32s(&v, "y");
    let deq = f32s(&v, "deq");
    let (_, q) = v.i64("q").unwrap();
    let m = Matrix::from_f32(ROWS, COLS, w.clone(), WeightFormat::MlxInt8);
    assert_eq!(m.format(), WeightFormat::MlxInt8);

    let a = rill_kernels::gemv_mlx8::mlx_quantize(&w, COLS);
    assert!(
        a.q.iter().zip(&q).all(|(&o, &m)| o as i64 == m),
        "quantised values differ from mx.quantize"
    );
    assert_eq!(
        a.scales,
        f32s(&v, "scales"),
        "scales differ from mx.quantize"
    );
    assert_eq!(
        a.biases,
        f32s(&v, "biases"),
        "biases differ from mx.quantize"
    );
    let arrays = m.to_arrays();

    let mut row = vec![0f32; COLS];
    for r in 0..ROWS {
        m.row_into(r, &mut row);
        assert!(
            row == deq[r * COLS..(r + 1) * COLS],
            "row {r} differs from mx.dequantize"
        );
    }

    // An f32 dot product of the same weights is far off, so the test can tell.
    let f32_dot: Vec<f32> = (0..ROWS)
        .map(|r| {
            deq[r * COLS..(r + 1) * COLS]
                .iter()
                .zip(&x)
                .map(|(a, b)| a * b)
                .sum()
        })
        .collect();
    let diff = f32_dot
        .iter()
        .zip(&y_mlx)
        .fold(0f32, |a, (p, q)| a.max((p - q).abs()));
    let rel = diff / y_mlx.iter().fold(0f32, |a, v| a.max(v.abs()));
    assert!(rel > 1e-3, "vectors too easy: f32 dot within {rel:e}");

    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    let tiers = isa::tiers_under_test("mlx-int8 gemv");
    for t in tiers {
        let mut y = vec![0f32; ROWS];
        m.gemv_rows_isa(t, &x, &mut y, 0..ROWS, &mut scratch, &pool);
        for r in 0..ROWS {
            assert_eq!(y[r].to_bits(), y_mlx[r].to_bits(), "{} row {r}", t.name());
        }
        // An unaligned row range (as `to_logits` takes one level's rows).
        let mut part_y = vec![0f32; 21];
        m.gemv_rows_isa(t, &x, &mut part_y, 7..28, &mut scratch, &pool);
        assert_eq!(part_y, y_mlx[7..28], "{} rows 7..28", t.name());
    }

    // Pre-quantised file round trip (the arrays a file stores).
    let back = Matrix::from_arrays(ROWS, COLS, arrays).unwrap();
    let mut y = vec![0f32; ROWS];
    rill_kernels::Ops::active().gemv(&back, &x, &mut y, &mut scratch, &pool);
    assert_eq!(y, y_mlx);
}
