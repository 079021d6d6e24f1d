//! Weight matrices in row-major `[rows = out][cols = in]` layout: their storage
//! formats, construction and rows; the plain arrays they are stored as and rebuilt
//! from are [`MatrixArrays`], the products with vectors in [`products`] (their work
//! memory, [`GemvScratch`], owned by the caller).
//!
//! Each output row is computed by one thread with a fixed summation order, so
//! results do not depend on the number of threads.

use crate::gemv_int8::Q8;
use crate::gemv_lut4::Lut4;
use crate::gemv_mlx8::{self, Mlx8};
use crate::gemv_q4::{self, AFFINE_GROUP, PALETTE_ROWS};
use crate::{gemv_float, gemv_int8, quant};

/// Storage format of a weight matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// IEEE f32.
    F32,
    /// bfloat16 (f32 rounded to nearest even), widened exactly to f32 in the kernel.
    Bf16,
    /// IEEE half (f32 rounded to nearest even; ±∞ past 65504), widened exactly: the
    /// bytes of bf16 with 3 more mantissa bits, and exact for weights that come as
    /// f16 (NVIDIA's F16 GGUF).
    F16,
    /// MLX affine int8, groups of 64 along the input (`nn.quantize(bits=8)`).
    Int8,
    /// MLX affine int4, groups of 32 along the input (`nn.quantize(bits=4, group_size=32)`).
    Int4,
    /// 4-bit palettisation: a 16-level k-means codebook per 16 output rows.
    Lut4,
    /// Upstream's default int8 exactly: bf16 weights, `mx.quantize` (g64, 8 bits)
    /// with bf16 scales and biases, multiplied with MLX's CPU `quantized_matmul`
    /// arithmetic (bf16 activations, bf16 running sum; see `gemv_mlx8`).
    MlxInt8,
}

impl WeightFormat {
    pub fn name(self) -> &'static str {
        match self {
            WeightFormat::F32 => "f32",
            WeightFormat::Bf16 => "bf16",
            WeightFormat::F16 => "f16",
            WeightFormat::Int8 => "int8",
            WeightFormat::Int4 => "int4",
            WeightFormat::Lut4 => "lut4",
            WeightFormat::MlxInt8 => "mlx-int8",
        }
    }
}

/// Consecutive weight rows as stored (see [`Matrix::float_rows`]).
#[derive(Clone, Copy)]
pub(crate) enum FloatRows<'a> {
    F32(&'a [f32]),
    F16(&'a [half::f16]),
}

impl FloatRows<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            FloatRows::F32(v) => v.len(),
            FloatRows::F16(v) => v.len(),
        }
    }

    #[inline(always)]
    pub(crate) fn at(&self, i: usize) -> f32 {
        match self {
            FloatRows::F32(v) => v[i],
            FloatRows::F16(v) => v[i].to_f32(),
        }
    }
}

#[derive(Clone)]
enum Storage {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
    F16(Vec<half::f16>),
    Int8(Q8),
    /// Packed nibbles (see `gemv_q4`), per-group scales and biases.
    Int4 {
        packed: Vec<u8>,
        scales: Vec<f32>,
        biases: Vec<f32>,
    },
    /// Blocked 4-bit indices, int8 levels and a scale per 16 rows.
    Lut4(Lut4),
    Mlx8(Mlx8),
}

/// A `[rows][cols]` weight matrix.
#[derive(Clone)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Storage,
}

impl std::fmt::Debug for Matrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Matrix({}x{}, {})",
            self.rows,
            self.cols,
            self.format().name()
        )
    }
}

/// Palettised matrices need whole runs of 32 columns (two packed 16-byte halves).
const PALETTE_COLUMN_MULTIPLE: usize = 32;

/// Rows per pool task: small enough to balance two cores, large enough that the
/// per-task claim (one CAS) is negligible.
const ROWS_PER_TASK: usize = 32;

/// Rounds f32 to bf16 bits, nearest-even (as MLX `astype(bfloat16)`).
pub fn f32_to_bf16_bits(v: f32) -> u16 {
    half::bf16::from_f32(v).to_bits()
}

/// Whether every value is exactly an IEEE half (weights from an F16 file): stored
/// as half they keep every bit and stream half the bytes.
pub fn all_exact_f16(values: &[f32]) -> bool {
    use half::slice::HalfFloatSliceExt;
    // A block at a time through `half`'s slice conversions (F16C where the CPU has
    // it): the same rounding as `f16::from_f32`, without a call per element.
    const BLOCK: usize = 1024;
    let mut halves = [half::f16::ZERO; BLOCK];
    let mut back = [0f32; BLOCK];
    values.chunks(BLOCK).all(|c| {
        let n = c.len();
        halves[..n].convert_from_f32_slice(c);
        halves[..n].convert_to_f32_slice(&mut back[..n]);
        back[..n]
            .iter()
            .zip(c)
            .all(|(b, v)| b.to_bits() == v.to_bits())
    })
}

/// Rounds f32 to the nearest bf16 value, kept as f32.
pub fn round_bf16(v: f32) -> f32 {
    half::bf16::from_f32(v).to_f32()
}

/// Transposes a row-major `[rows][cols]` array into `[cols][rows]`.
pub fn transpose(rows: usize, cols: usize, a: &[f32]) -> Vec<f32> {
    assert_eq!(a.len(), rows * cols, "transpose input length");
    let mut t = vec![0f32; rows * cols];
    // Blocked so both sides stay cache-friendly for 1024x4096 kernels.
    const B: usize = 64;
    for r0 in (0..rows).step_by(B) {
        for c0 in (0..cols).step_by(B) {
            for r in r0..(r0 + B).min(rows) {
                let src = &a[r * cols..(r + 1) * cols];
                for c in c0..(c0 + B).min(cols) {
                    t[c * rows + r] = src[c];
                }
            }
        }
    }
    t
}

impl Matrix {
    /// Builds a matrix from row-major f32 values, converting to `format`.
    pub fn from_f32(rows: usize, cols: usize, values: Vec<f32>, format: WeightFormat) -> Matrix {
        assert_eq!(values.len(), rows * cols, "matrix data length");
        let data = match format {
            WeightFormat::F32 => Storage::F32(values),
            WeightFormat::Bf16 => {
                Storage::Bf16(values.iter().map(|&v| f32_to_bf16_bits(v)).collect())
            }
            WeightFormat::F16 => {
                use half::slice::HalfFloatSliceExt;
                // One slice conversion (F16C where the CPU has it), the same rounding
                // as `f16::from_f32` without a call per weight.
                let mut h = vec![half::f16::ZERO; values.len()];
                h.convert_from_f32_slice(&values);
                Storage::F16(h)
            }
            WeightFormat::Int8 if cols.is_multiple_of(gemv_int8::GROUP) => {
                let a = quant::affine(&values, cols, gemv_int8::GROUP, 8);
                Storage::Int8(Q8::from_affine(&a, rows, cols))
            }
            WeightFormat::Int4 if cols.is_multiple_of(AFFINE_GROUP) => {
                let a = quant::affine(&values, cols, AFFINE_GROUP, 4);
                Storage::Int4 {
                    packed: gemv_q4::pack(&a.q),
                    scales: a.scales,
                    biases: a.biases,
                }
            }
            WeightFormat::Lut4 if cols.is_multiple_of(PALETTE_COLUMN_MULTIPLE) => {
                let p = quant::palettize(&values, cols, PALETTE_ROWS);
                Storage::Lut4(Lut4::from_palette(&p, rows, cols))
            }
            WeightFormat::MlxInt8 if cols.is_multiple_of(gemv_mlx8::GROUP) => {
                Storage::Mlx8(Mlx8::quantize(rows, cols, &values))
            }
            // Upstream leaves matrices whose input width is not a multiple of the
            // group unquantised (bf16).
            WeightFormat::MlxInt8 => {
                Storage::Bf16(values.iter().map(|&v| f32_to_bf16_bits(v)).collect())
            }
            // Shapes the grouped formats cannot hold stay exact.
            WeightFormat::Int8 | WeightFormat::Int4 | WeightFormat::Lut4 => Storage::F32(values),
        };
        Matrix { rows, cols, data }
    }

    /// Builds a matrix from a `[cols][rows]` (input-major, JAX `kernel[in, out]`) array.
    pub fn from_f32_transposed(
        rows: usize,
        cols: usize,
        in_major: &[f32],
        format: WeightFormat,
    ) -> Matrix {
        Matrix::from_f32(rows, cols, transpose(cols, rows, in_major), format)
    }

    /// Stacks matrices of one format with equal column counts (rows concatenated;
    /// every format here is row-wise, so this equals quantising the stacked matrix
    /// except for palettes, whose 16-row groups must not straddle the parts).
    pub fn stack(parts: Vec<Matrix>) -> Matrix {
        let cols = parts[0].cols;
        let rows = parts.iter().map(|m| m.rows).sum();
        let format = parts[0].format();
        assert!(
            parts.iter().all(|m| m.cols == cols && m.format() == format),
            "stack needs equal formats and widths"
        );
        assert!(
            format != WeightFormat::Lut4 || parts.iter().all(|m| m.rows % PALETTE_ROWS == 0),
            "palette parts must be whole 16-row groups"
        );
        if format == WeightFormat::Lut4 {
            let parts = parts
                .into_iter()
                .map(|m| match m.data {
                    Storage::Lut4(q) => q,
                    _ => unreachable!("formats checked above"),
                })
                .collect();
            return Matrix {
                rows,
                cols,
                data: Storage::Lut4(Lut4::stack(parts)),
            };
        }
        if format == WeightFormat::Int8 {
            let q8 = parts
                .into_iter()
                .map(|m| match m.data {
                    Storage::Int8(q) => q,
                    _ => unreachable!("formats checked above"),
                })
                .collect();
            return Matrix {
                rows,
                cols,
                data: Storage::Int8(Q8::stack(q8)),
            };
        }
        if let Storage::Mlx8(_) = parts[0].data {
            let mut w = Vec::with_capacity(rows * cols);
            for m in &parts {
                let Storage::Mlx8(m) = &m.data else {
                    unreachable!("formats checked above")
                };
                w.extend(m.to_dequantized());
            }
            return Matrix {
                rows,
                cols,
                data: Storage::Mlx8(Mlx8::from_dequantized(rows, cols, &w)),
            };
        }
        let mut it = parts.into_iter();
        let first = it.next().expect("at least one part");
        let mut data = first.data;
        for m in it {
            match (&mut data, m.data) {
                (Storage::F32(a), Storage::F32(b)) => a.extend(b),
                (Storage::Bf16(a), Storage::Bf16(b)) => a.extend(b),
                (Storage::F16(a), Storage::F16(b)) => a.extend(b),
                (
                    Storage::Int4 {
                        packed,
                        scales,
                        biases,
                    },
                    Storage::Int4 {
                        packed: p2,
                        scales: s2,
                        biases: b2,
                    },
                ) => {
                    packed.extend(p2);
                    scales.extend(s2);
                    biases.extend(b2);
                }
                _ => unreachable!("formats checked above"),
            }
        }
        Matrix { rows, cols, data }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn format(&self) -> WeightFormat {
        match self.data {
            Storage::F32(_) => WeightFormat::F32,
            Storage::Bf16(_) => WeightFormat::Bf16,
            Storage::F16(_) => WeightFormat::F16,
            Storage::Int8(_) => WeightFormat::Int8,
            Storage::Int4 { .. } => WeightFormat::Int4,
            Storage::Lut4(_) => WeightFormat::Lut4,
            Storage::Mlx8(_) => WeightFormat::MlxInt8,
        }
    }

    /// Bytes of weight data (what one product streams from memory).
    pub fn bytes(&self) -> usize {
        match &self.data {
            Storage::F32(v) => v.len() * 4,
            Storage::Bf16(v) => v.len() * 2,
            Storage::F16(v) => v.len() * 2,
            Storage::Int8(m) => m.bytes(),
            Storage::Int4 {
                packed,
                scales,
                biases,
            } => packed.len() + 4 * (scales.len() + biases.len()),
            Storage::Lut4(m) => m.bytes(),
            Storage::Mlx8(m) => m.bytes(),
        }
    }

    /// Rows `r0 .. r0 + n` as stored, for a float format the multi-row product
    /// transposes without widening first (f32, f16); `None` for the others or rows
    /// past the end.
    pub(crate) fn float_rows(&self, r0: usize, n: usize) -> Option<FloatRows<'_>> {
        let span = r0 * self.cols..(r0 + n) * self.cols;
        if r0 + n > self.rows {
            return None;
        }
        match &self.data {
            Storage::F32(v) => Some(FloatRows::F32(&v[span])),
            Storage::F16(v) => Some(FloatRows::F16(&v[span])),
            _ => None,
        }
    }

    /// Whether [`Matrix::pack16_into`] reads this format (int8: its blocked layout
    /// makes widening a row at a time slow).
    pub(crate) fn packs16(&self) -> bool {
        matches!(self.data, Storage::Int8(_))
    }

    /// Rows `r0 .. r0 + 16` (zero past the last), columns `k0 .. k0 + out.len() / 16`,
    /// widened into `out` as `[c][16]`, the values of [`Matrix::row_into`]; only for
    /// a format of [`Matrix::packs16`] (`r0` a multiple of 16, `k0` and the width
    /// multiples of 64). False, writing nothing, for the other formats.
    pub(crate) fn pack16_into(
        &self,
        isa: crate::Isa,
        r0: usize,
        k0: usize,
        out: &mut [f32],
    ) -> bool {
        match &self.data {
            Storage::Int8(m) => {
                m.pack16_into(isa, r0, k0, out);
                true
            }
            _ => false,
        }
    }

    /// Row `r` widened to f32 (embedding lookup).
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let c = self.cols;
        match &self.data {
            Storage::F32(v) => out.copy_from_slice(&v[r * c..(r + 1) * c]),
            Storage::Bf16(v) => {
                for (o, &b) in out.iter_mut().zip(&v[r * c..(r + 1) * c]) {
                    *o = gemv_float::bf16_to_f32(b);
                }
            }
            Storage::F16(v) => {
                half::slice::HalfFloatSliceExt::convert_to_f32_slice(&v[r * c..(r + 1) * c], out)
            }
            Storage::Int8(m) => m.row_into(r, out),
            Storage::Int4 {
                packed,
                scales,
                biases,
            } => {
                for (i, o) in out.iter_mut().enumerate() {
                    let gi = (r * c + i) / AFFINE_GROUP;
                    *o = gemv_q4::unpack_at(packed, r * c + i) as f32 * scales[gi] + biases[gi];
                }
            }
            Storage::Lut4(m) => m.row_into(r, out),
            Storage::Mlx8(m) => m.row_into(r, out),
        }
    }
}

mod arrays;
mod products;

pub use arrays::{MatrixArrays, MatrixArraysError};
pub use products::GemvScratch;

#[cfg(test)]
mod tests;
