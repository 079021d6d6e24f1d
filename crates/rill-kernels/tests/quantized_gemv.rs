//! Quantised matrix-vector products against references that do not go through
//! rill's own dequantisers:
//!
//! * 4-bit palettes built from stored parts (indices in the file layout, one f32
//!   codebook per 16 rows) against the product of the codebook values the parts
//!   name, computed here;
//! * every compact format against the f32 product with the unquantised weights
//!   (cosine bound), on every SIMD tier.
//!
//! The int8 / int4 layouts are checked against MLX's own values in `mx_quantize.rs`.

use rill_kernels::isa;
use rill_kernels::{GemvScratch, Matrix, MatrixArrays, Pool, WeightFormat};

/// splitmix64: reproducible test data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        ab += x as f64 * y;
        aa += x as f64 * x as f64;
        bb += y * y;
    }
    ab / (aa.sqrt() * bb.sqrt())
}

/// File layout of 4-bit indices: per run of 32, byte j = index j | index j+16 << 4.
fn pack_nibbles(idx: &[u8]) -> Vec<u8> {
    idx.chunks_exact(32)
        .flat_map(|run| (0..16).map(move |j| run[j] | run[j + 16] << 4))
        .collect()
}

/// Palette parts with codebooks of whole multiples of 2^-8 that include ±127·2^-8,
/// so the kernel's int8 level conversion (`max|level| / 127` per block) is exact, and
/// integer activations with max |x| = 32767, so int16 activation quantisation is exact
/// too: the product must equal the codebook product to f32 rounding. A misread index,
/// nibble or block codebook shows as an O(1) error.
#[test]
fn lut4_from_arrays_matches_the_codebook_product() {
    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    let tiers =
        isa::tiers_under_test("quantized_gemv::lut4_from_arrays_matches_the_codebook_product");
    let mut rng = Rng(5);
    // 40 rows: two whole 16-row blocks and a partial one.
    let (rows, cols) = (40usize, 256usize);
    let blocks = rows.div_ceil(16);
    let mut lut = vec![0f32; blocks * 16];
    for b in 0..blocks {
        for k in 0..16 {
            lut[b * 16 + k] = (rng.below(255) as i32 - 127) as f32 / 256.0;
        }
        lut[b * 16 + (b % 16)] = 127.0 / 256.0;
        lut[b * 16 + ((b + 7) % 16)] = -127.0 / 256.0;
    }
    let idx: Vec<u8> = (0..rows * cols).map(|_| rng.below(16) as u8).collect();
    let arrays = MatrixArrays::Lut4 {
        packed: pack_nibbles(&idx),
        lut: lut.clone(),
    };
    let m = Matrix::from_arrays(rows, cols, arrays).unwrap();
    let mut x: Vec<f32> = (0..cols)
        .map(|_| (rng.below(65535) as i64 - 32767) as f32)
        .collect();
    x[3] = -32767.0;
    for &tier in &tiers {
        let mut y = vec![0f32; rows];
        m.gemv_rows_isa(tier, &x, &mut y, 0..rows, &mut scratch, &pool);
        let mut worst = 0f64;
        for r in 0..rows {
            let terms = (0..cols)
                .map(|c| lut[(r / 16) * 16 + idx[r * cols + c] as usize] as f64 * x[c] as f64);
            let want: f64 = terms.clone().sum();
            let norm: f64 = terms.map(f64::abs).sum();
            let err = (y[r] as f64 - want).abs() / norm;
            // Measured 5.9e-9 on every tier (Xeon guest): integer sums are exact,
            // only the f32 scaling rounds.
            assert!(err < 1e-8, "{tier} row {r}: {} vs {want} ({err:e})", y[r]);
            worst = worst.max(err);
        }
        eprintln!("{tier} lut4 from parts: max relative error {worst:.2e}");
    }
}

/// Every compact format against the f32 product with the weights it was made from.
/// The bounds sit just outside the measured quantisation error (weights ~ N(0, 1/cols),
/// activations ~ N(0, 1) with an outlier, as in the transformer).
#[test]
fn quantized_products_track_the_f32_product() {
    let pool = Pool::new(2);
    let mut scratch = GemvScratch::new();
    let tiers = isa::tiers_under_test("quantized_gemv::quantized_products_track_the_f32_product");
    let mut rng = Rng(11);
    let (rows, cols) = (256usize, 1024usize);
    let sd = 1.0 / (cols as f64).sqrt();
    let w: Vec<f32> = (0..rows * cols)
        .map(|_| (rng.normal() * sd) as f32)
        .collect();
    let mut x: Vec<f32> = (0..cols).map(|_| rng.normal() as f32).collect();
    x[100] = 12.0;
    let exact: Vec<f64> = w
        .chunks_exact(cols)
        .map(|r| r.iter().zip(&x).map(|(a, b)| *a as f64 * *b as f64).sum())
        .collect();
    // (format, minimum cosine). Measured 1 − cosine on the Xeon (AVX-512) guest,
    // equal on every tier: f32 ≤ 2.6e-14, bf16 1.14e-6, f16 1.85e-8, int8 1.33e-5, int4 2.59e-3,
    // lut4 5.56e-3.
    let bounds = [
        (WeightFormat::F32, 1.0 - 1e-13),
        (WeightFormat::Bf16, 1.0 - 2e-6),
        (WeightFormat::F16, 1.0 - 3e-8),
        (WeightFormat::Int8, 1.0 - 2e-5),
        (WeightFormat::Int4, 1.0 - 3.5e-3),
        (WeightFormat::Lut4, 1.0 - 7e-3),
    ];
    for (format, min_cos) in bounds {
        let m = Matrix::from_f32(rows, cols, w.clone(), format);
        assert_eq!(m.format(), format);
        for &tier in &tiers {
            let mut y = vec![0f32; rows];
            m.gemv_rows_isa(tier, &x, &mut y, 0..rows, &mut scratch, &pool);
            let c = cosine(&y, &exact);
            eprintln!(
                "{tier} {}: cosine with the f32 product 1 − {:.2e}",
                format.name(),
                1.0 - c
            );
            assert!(c >= min_cos, "{tier} {}: cosine {c}", format.name());
        }
    }
}
