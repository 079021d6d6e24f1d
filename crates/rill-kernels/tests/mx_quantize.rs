//! The affine quantiser and the int8 / int4 matrices against MLX itself:
//! `testdata/mx_quantize.npz`, recorded with `mx.quantize` / `mx.quantized_matmul`
//! (mlx 0.32.4, CPU) by `testdata/make_mx_quantize.py`.
//!
//! * `quant::affine` must reproduce MLX's packed words, scales and biases bit for bit
//!   (edge cases: zero and constant rows, ranges below the scale floor, |min| = |max|,
//!   grid values, outliers, subnormals, bf16 values);
//! * a `Matrix` built from MLX's own stored values must multiply like an independent
//!   dequantisation of those values written here from MLX's layout, on every tier.

use rill_kernels::isa;
use rill_kernels::quant;
use rill_kernels::{GemvScratch, Matrix, MatrixArrays, Pool};

const ROWS: usize = 16;
const COLS: usize = 128;

struct Vectors {
    npz: rill_io::Npz,
}

/// One `mx.quantize` result in MLX's storage.
struct MlxQuant {
    bits: u32,
    group: usize,
    words: Vec<u32>,
    scales: Vec<f32>,
    biases: Vec<f32>,
    /// `mx.quantized_matmul(x, ...)`.
    y: Vec<f32>,
}

impl Vectors {
    fn load() -> Vectors {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/mx_quantize.npz");
        let npz = rill_io::Npz::read(path).unwrap_or_else(|e| {
            panic!("{e}: record it with `python testdata/make_mx_quantize.py` (mlx[cpu]==0.32.4)")
        });
        Vectors { npz }
    }

    fn f32(&self, key: &str) -> Vec<f32> {
        self.npz.f32(key).unwrap_or_else(|e| panic!("{key}: {e}")).1
    }

    fn quant(&self, bits: u32, group: usize) -> MlxQuant {
        let sfx = format!("_{bits}b{group}");
        let (shape, words) = self.npz.i64(&format!("q{sfx}")).unwrap();
        assert_eq!(shape, [ROWS, COLS * bits as usize / 32], "q{sfx} shape");
        MlxQuant {
            bits,
            group,
            words: words.iter().map(|&w| u32::try_from(w).unwrap()).collect(),
            scales: self.f32(&format!("scales{sfx}")),
            biases: self.f32(&format!("biases{sfx}")),
            y: self.f32(&format!("y{sfx}")),
        }
    }
}

impl MlxQuant {
    /// Quantised value `i` (row-major): MLX packs `32 / bits` values per word, LSB first.
    fn value(&self, i: usize) -> u32 {
        let per = 32 / self.bits as usize;
        (self.words[i / per] >> (self.bits as usize * (i % per))) & ((1 << self.bits) - 1)
    }

    /// The dequantised weights `q·scale + bias`, in f64 (written from MLX's layout,
    /// independently of rill's dequantisers).
    fn dequantized(&self) -> Vec<f64> {
        (0..ROWS * COLS)
            .map(|i| {
                let g = i / self.group;
                self.value(i) as f64 * self.scales[g] as f64 + self.biases[g] as f64
            })
            .collect()
    }
}

/// Words in MLX's packing from one value per byte.
fn mlx_words(q: &[u8], bits: u32) -> Vec<u32> {
    let per = 32 / bits as usize;
    q.chunks_exact(per)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u32, |w, (j, &v)| w | (v as u32) << (bits as usize * j))
        })
        .collect()
}

const CONFIGS: [(u32, usize); 3] = [(8, 64), (4, 64), (4, 32)];

#[test]
fn affine_quantiser_is_bit_exact_with_mx_quantize() {
    let v = Vectors::load();
    let w = v.f32("w");
    for (bits, group) in CONFIGS {
        let mlx = v.quant(bits, group);
        let ours = quant::affine(&w, COLS, group, bits);
        let what = format!("{bits}-bit, group {group}");
        assert_eq!(mlx_words(&ours.q, bits), mlx.words, "{what}: packed words");
        for (g, (a, b)) in ours.scales.iter().zip(&mlx.scales).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "{what}: scale {g}: {a:e} vs {b:e}"
            );
        }
        for (g, (a, b)) in ours.biases.iter().zip(&mlx.biases).enumerate() {
            assert_eq!(a.to_bits(), b.to_bits(), "{what}: bias {g}: {a:e} vs {b:e}");
        }
        eprintln!(
            "{what}: {} words, {} scales, {} biases bit-identical to mx.quantize",
            mlx.words.len(),
            mlx.scales.len(),
            mlx.biases.len()
        );
    }
}

/// The test's own dequantisation agrees with MLX's `quantized_matmul`, so it is a
/// faithful reading of MLX's layout.
#[test]
fn independent_dequantisation_matches_mlx_matmul() {
    let v = Vectors::load();
    let x = v.f32("x");
    for (bits, group) in CONFIGS {
        let mlx = v.quant(bits, group);
        let d = mlx.dequantized();
        let mut worst = 0f64;
        for r in 0..ROWS {
            let row = &d[r * COLS..(r + 1) * COLS];
            let want: f64 = row.iter().zip(&x).map(|(w, x)| w * *x as f64).sum();
            let norm: f64 = row.iter().zip(&x).map(|(w, x)| (w * *x as f64).abs()).sum();
            let err = (mlx.y[r] as f64 - want).abs() / norm.max(f64::MIN_POSITIVE);
            worst = worst.max(err);
        }
        eprintln!("{bits}-bit, group {group}: MLX matmul vs f64 dequantised product: max relative error {worst:.2e}");
        // Measured 2.0e-7 (MLX's f32 accumulation; recorded data, f64 here).
        assert!(worst < 2.5e-7, "{bits}-bit group {group}: {worst:e}");
    }
}

/// rill's stored form of one MLX result (`Matrix::to_arrays` layouts).
fn rill_arrays(mlx: &MlxQuant) -> MatrixArrays {
    let values: Vec<u8> = (0..ROWS * COLS).map(|i| mlx.value(i) as u8).collect();
    let (scales, biases) = (mlx.scales.clone(), mlx.biases.clone());
    match mlx.bits {
        // One value per byte, row-major.
        8 => MatrixArrays::Int8 {
            q: values,
            scales,
            biases,
        },
        // Per run of 32 values: byte j = value j (low nibble) | value j + 16 (high nibble).
        _ => MatrixArrays::Int4 {
            packed: values
                .chunks_exact(32)
                .flat_map(|run| (0..16).map(move |j| run[j] | run[j + 16] << 4))
                .collect(),
            scales,
            biases,
        },
    }
}

fn matrix_from(mlx: &MlxQuant) -> Matrix {
    Matrix::from_arrays(ROWS, COLS, rill_arrays(mlx)).unwrap()
}

/// MLX's int8 (group 64) and int4 (group 32) matrices (MLX's int4 is stored in
/// rill's matrices with group 32 only, `WeightFormat::Int4`), each with its
/// independent dequantisation and its product with `x` on every tier of `tiers`.
#[allow(clippy::type_complexity)]
fn mlx_products(
    v: &Vectors,
    x: &[f32],
    tiers: &[isa::Isa],
) -> Vec<(MlxQuant, Vec<f64>, Vec<(isa::Isa, Vec<f32>)>)> {
    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    [(8, 64), (4, 32)]
        .into_iter()
        .map(|(bits, group)| {
            let mlx = v.quant(bits, group);
            let d = mlx.dequantized();
            let m = matrix_from(&mlx);
            let ys = tiers
                .iter()
                .map(|&tier| {
                    let mut y = vec![0f32; ROWS];
                    m.gemv_rows_isa(tier, x, &mut y, 0..ROWS, &mut scratch, &pool);
                    (tier, y)
                })
                .collect();
            (mlx, d, ys)
        })
        .collect()
}

/// Integer activations with max |x| = 32767 quantise to int16 exactly (scale 1), so
/// the integer sums are exact and only f32 rounding of the group terms remains: a
/// value, scale or bias read from the wrong place shows as an O(1) error.
#[test]
fn gemv_on_mlx_values_matches_independent_dequantisation() {
    let v = Vectors::load();
    let tiers =
        isa::tiers_under_test("mx_quantize::gemv_on_mlx_values_matches_independent_dequantisation");
    let mut x: Vec<f32> = (0..COLS)
        .map(|i| ((i as i64 * 7919 + 13) % 65535 - 32767) as f32)
        .collect();
    x[17] = 32767.0;
    x[90] = -32767.0;
    for (mlx, d, ys) in mlx_products(&v, &x, &tiers) {
        let (bits, group) = (mlx.bits, mlx.group);
        for (tier, y) in ys {
            let mut worst = 0f64;
            for r in 0..ROWS {
                let row = &d[r * COLS..(r + 1) * COLS];
                let want: f64 = row.iter().zip(&x).map(|(w, x)| w * *x as f64).sum();
                let norm: f64 = row.iter().zip(&x).map(|(w, x)| (w * *x as f64).abs()).sum();
                let err = (y[r] as f64 - want).abs() / norm.max(f64::MIN_POSITIVE);
                // Measured ≤ 4.6e-7 (AVX-512 VNNI int4), ≤ 1.1e-7 elsewhere, Xeon guest.
                assert!(
                    err < 1e-6,
                    "{tier} {bits}-bit row {r}: {} vs {want} (relative error {err:e})",
                    y[r]
                );
                worst = worst.max(err);
            }
            eprintln!("{tier} {bits}-bit group {group}: max relative error {worst:.2e}");
        }
        // The same values through rill's own conversion path: identical storage.
        let ours = Matrix::from_f32(ROWS, COLS, v.f32("w"), matrix_from(&mlx).format());
        assert_eq!(ours.to_arrays(), rill_arrays(&mlx), "{bits}-bit arrays");
    }
}

/// Random activations (int16-quantised by rill, float in MLX) against MLX's own
/// `quantized_matmul` on the same stored values.
#[test]
fn gemv_on_mlx_values_matches_mlx_matmul() {
    let v = Vectors::load();
    let x = v.f32("x");
    let xmax = x.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
    let tiers = isa::tiers_under_test("mx_quantize::gemv_on_mlx_values_matches_mlx_matmul");
    for (mlx, d, ys) in mlx_products(&v, &x, &tiers) {
        let bits = mlx.bits;
        for (tier, y) in ys {
            let mut worst = 0f64;
            for r in 0..ROWS {
                // Activation rounding moves each term by ≤ |w|·max|x|/65534.
                let wsum: f64 = d[r * COLS..(r + 1) * COLS].iter().map(|w| w.abs()).sum();
                let scale = wsum * xmax / 65534.0;
                let err = (y[r] as f64 - mlx.y[r] as f64).abs() / scale.max(f64::MIN_POSITIVE);
                worst = worst.max(err);
            }
            eprintln!("{tier} {bits}-bit vs mx.quantized_matmul: max error {worst:.3} × the activation rounding bound");
            // Measured 0.32 (8-bit) / 0.35 (4-bit) on every tier, Xeon (AVX-512) guest;
            // ≥ 1 would mean more than activation rounding.
            assert!(worst < 0.4, "{tier} {bits}-bit: {worst}");
        }
    }
}
