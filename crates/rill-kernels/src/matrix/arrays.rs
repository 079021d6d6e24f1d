//! A matrix as plain arrays and back: the kernels' blocked layouts stay inside
//! [`Matrix`]; what leaves it (to be written to a file, say) is row-major arrays
//! that need no knowledge of the kernels to store and that rebuild the same matrix.

use crate::gemv_int8::{self, Q8};
use crate::gemv_lut4::Lut4;
use crate::gemv_mlx8::{self, Mlx8};
use crate::gemv_q4::{self, AFFINE_GROUP, PALETTE_ROWS};
use crate::quant;

use super::{Matrix, Storage, WeightFormat, PALETTE_COLUMN_MULTIPLE};

/// The arrays that hold a matrix, one variant per [`WeightFormat`], every array in
/// row-major order (group `g` of row `r` at `r · groups_per_row + g`).
#[derive(Debug, Clone, PartialEq)]
pub enum MatrixArrays {
    /// `rows · cols` values.
    F32(Vec<f32>),
    /// `rows · cols` bf16 bit patterns.
    Bf16(Vec<u16>),
    /// `rows · cols` IEEE half bit patterns.
    F16(Vec<u16>),
    /// Affine int8 in groups of 64 along a row: one value per byte, a scale and a
    /// bias per group (`w = q · scale + bias`).
    Int8 {
        q: Vec<u8>,
        scales: Vec<f32>,
        biases: Vec<f32>,
    },
    /// Affine int4 in groups of 32 along a row: values packed two per byte (per run
    /// of 32 weights, byte `j` holds weight `j` low and weight `j + 16` high), a
    /// scale and a bias per group.
    Int4 {
        packed: Vec<u8>,
        scales: Vec<f32>,
        biases: Vec<f32>,
    },
    /// 4-bit palettes: row-major indices packed as [`MatrixArrays::Int4`]'s values,
    /// and 16 levels for each group of 16 rows.
    Lut4 { packed: Vec<u8>, lut: Vec<f32> },
    /// MLX int8 as its dequantised bf16 weights (what the product multiplies), bit
    /// patterns.
    MlxInt8 { dequantized: Vec<u16> },
}

impl MatrixArrays {
    /// The storage format these arrays rebuild.
    pub fn format(&self) -> WeightFormat {
        match self {
            MatrixArrays::F32(_) => WeightFormat::F32,
            MatrixArrays::Bf16(_) => WeightFormat::Bf16,
            MatrixArrays::F16(_) => WeightFormat::F16,
            MatrixArrays::Int8 { .. } => WeightFormat::Int8,
            MatrixArrays::Int4 { .. } => WeightFormat::Int4,
            MatrixArrays::Lut4 { .. } => WeightFormat::Lut4,
            MatrixArrays::MlxInt8 { .. } => WeightFormat::MlxInt8,
        }
    }
}

/// Why arrays cannot be a matrix of the asked shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatrixArraysError {
    #[error("a {rows}×{cols} matrix has more elements than memory can address; check the shape")]
    TooLarge { rows: usize, cols: usize },
    #[error(
        "a {} matrix needs a multiple of {multiple} columns, not {cols}; this shape can only be stored in another format",
        .format.name()
    )]
    Columns {
        format: WeightFormat,
        cols: usize,
        multiple: usize,
    },
    #[error(
        "the {array} array of a {rows}×{cols} {} matrix has {found} elements instead of {expected}; the arrays belong to a matrix of another shape or format",
        .format.name()
    )]
    Length {
        format: WeightFormat,
        array: &'static str,
        rows: usize,
        cols: usize,
        found: usize,
        expected: usize,
    },
}

impl Matrix {
    /// The arrays that hold this matrix (a copy), from which
    /// [`Matrix::from_arrays`] rebuilds it exactly.
    pub fn to_arrays(&self) -> MatrixArrays {
        match &self.data {
            Storage::F32(v) => MatrixArrays::F32(v.clone()),
            Storage::Bf16(v) => MatrixArrays::Bf16(v.clone()),
            Storage::F16(v) => MatrixArrays::F16(v.iter().map(|h| h.to_bits()).collect()),
            Storage::Int8(m) => {
                let a = m.to_affine();
                MatrixArrays::Int8 {
                    q: a.q,
                    scales: a.scales,
                    biases: a.biases,
                }
            }
            Storage::Int4 {
                packed,
                scales,
                biases,
            } => MatrixArrays::Int4 {
                packed: packed.clone(),
                scales: scales.clone(),
                biases: biases.clone(),
            },
            Storage::Lut4(m) => MatrixArrays::Lut4 {
                packed: gemv_q4::pack(&m.indices()),
                lut: m.lut(),
            },
            Storage::Mlx8(m) => MatrixArrays::MlxInt8 {
                dequantized: m.to_dequantized(),
            },
        }
    }

    /// Rebuilds a `rows × cols` matrix from its arrays (as [`Matrix::to_arrays`]
    /// gives them), checking the shape and every array length first.
    pub fn from_arrays(
        rows: usize,
        cols: usize,
        arrays: MatrixArrays,
    ) -> Result<Matrix, MatrixArraysError> {
        let format = arrays.format();
        let n = rows
            .checked_mul(cols)
            .ok_or(MatrixArraysError::TooLarge { rows, cols })?;
        let columns = |multiple: usize| {
            if cols.is_multiple_of(multiple) {
                Ok(())
            } else {
                Err(MatrixArraysError::Columns {
                    format,
                    cols,
                    multiple,
                })
            }
        };
        let length = |array: &'static str, found: usize, expected: usize| {
            if found == expected {
                Ok(())
            } else {
                Err(MatrixArraysError::Length {
                    format,
                    array,
                    rows,
                    cols,
                    found,
                    expected,
                })
            }
        };
        let data = match arrays {
            MatrixArrays::F32(v) => {
                length("values", v.len(), n)?;
                Storage::F32(v)
            }
            MatrixArrays::Bf16(v) => {
                length("values", v.len(), n)?;
                Storage::Bf16(v)
            }
            MatrixArrays::F16(v) => {
                length("values", v.len(), n)?;
                Storage::F16(v.into_iter().map(half::f16::from_bits).collect())
            }
            MatrixArrays::Int8 { q, scales, biases } => {
                columns(gemv_int8::GROUP)?;
                let groups = n / gemv_int8::GROUP;
                length("q", q.len(), n)?;
                length("scales", scales.len(), groups)?;
                length("biases", biases.len(), groups)?;
                let a = quant::Affine {
                    bits: 8,
                    group: gemv_int8::GROUP,
                    q,
                    scales,
                    biases,
                };
                Storage::Int8(Q8::from_affine(&a, rows, cols))
            }
            MatrixArrays::Int4 {
                packed,
                scales,
                biases,
            } => {
                columns(AFFINE_GROUP)?;
                let groups = n / AFFINE_GROUP;
                length("packed", packed.len(), n / 2)?;
                length("scales", scales.len(), groups)?;
                length("biases", biases.len(), groups)?;
                Storage::Int4 {
                    packed,
                    scales,
                    biases,
                }
            }
            MatrixArrays::Lut4 { packed, lut } => {
                columns(PALETTE_COLUMN_MULTIPLE)?;
                length("packed", packed.len(), n / 2)?;
                let levels = rows
                    .div_ceil(PALETTE_ROWS)
                    .checked_mul(16)
                    .ok_or(MatrixArraysError::TooLarge { rows, cols })?;
                length("lut", lut.len(), levels)?;
                let idx = (0..n).map(|i| gemv_q4::unpack_at(&packed, i)).collect();
                let p = quant::Palette {
                    rows_per_group: PALETTE_ROWS,
                    lut,
                    idx,
                };
                Storage::Lut4(Lut4::from_palette(&p, rows, cols))
            }
            MatrixArrays::MlxInt8 { dequantized } => {
                columns(gemv_mlx8::GROUP)?;
                length("dequantized", dequantized.len(), n)?;
                Storage::Mlx8(Mlx8::from_dequantized(rows, cols, &dequantized))
            }
        };
        Ok(Matrix { rows, cols, data })
    }
}
