//! Pre-quantised checkpoints (`rill quantize`): the format, its writer and its reader.
//!
//! Same safetensors container and tensor names as the upstream checkpoint, except
//! that each weight matrix stored in a compact format is replaced by its parts,
//! named `NAME#FORMAT:PART` (for example `…/query_projection/kernel#int8:q`,
//! `…#int8:scales`, `…#int8:biases`), in the engine's `[out][in]` layout. Every
//! other tensor (norms, biases, the codec) is copied unchanged, except that the RVQ
//! codebook keeps only the levels rill reads. The metadata names the format
//! version, the model and the precision mode the file was made for.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use rill_kernels::{Matrix, MatrixArrays, WeightFormat};
use safetensors::Dtype;

use crate::error::{CheckpointError, Result};
use crate::layout::{RVQ_CODEBOOK, RVQ_LEVELS};
use crate::writer::{self, Tensor};
use crate::Checkpoint;

/// Metadata key holding the precision mode of a pre-quantised file.
pub const PRECISION_KEY: &str = "rill.precision";
/// Metadata key holding the model (`mrt2_small` / `mrt2_base`) of a pre-quantised file.
pub const MODEL_KEY: &str = "rill.model";
/// Metadata key holding the file format version.
pub const FORMAT_KEY: &str = "rill.format";
/// Current format version.
pub const FORMAT: &str = "rill-quantized v1";

/// Separates a tensor's name from its storage format in a part name.
const FORMAT_SEPARATOR: char = '#';
/// Separates the storage format from the part in a part name.
const PART_SEPARATOR: char = ':';

/// Name of one part of a pre-quantised tensor: `TENSOR#FORMAT:PART`.
pub fn part_name(tensor: &str, format: &str, part: &str) -> String {
    format!("{tensor}{FORMAT_SEPARATOR}{format}{PART_SEPARATOR}{part}")
}

/// Part names. f16 weights are stored widened to f32 (exactly), so parts come in
/// three element types only: u8, bf16 and f32.
mod part {
    pub const F32: &str = "f32";
    pub const BF16: &str = "bf16";
    pub const F16: &str = "f16";
    /// Quantised values (int8: one per byte; int4 and palette indices: packed nibbles).
    pub const Q: &str = "q";
    pub const SCALES: &str = "scales";
    pub const BIASES: &str = "biases";
    pub const LUT: &str = "lut";
    /// mlx-int8's dequantised bf16 weights.
    pub const W: &str = "w";
}

/// The named tensors that store a matrix's arrays.
fn parts(arrays: MatrixArrays) -> Vec<(&'static str, Tensor<'static>)> {
    let f32s = |v: Vec<f32>| Tensor::f32(vec![v.len()], &v);
    match arrays {
        MatrixArrays::F32(v) => vec![(part::F32, f32s(v))],
        MatrixArrays::Bf16(v) => vec![(part::BF16, Tensor::bf16(&v))],
        MatrixArrays::F16(v) => vec![(
            part::F16,
            f32s(
                v.iter()
                    .map(|&h| half::f16::from_bits(h).to_f32())
                    .collect(),
            ),
        )],
        MatrixArrays::Int8 { q, scales, biases }
        | MatrixArrays::Int4 {
            packed: q,
            scales,
            biases,
        } => vec![
            (part::Q, Tensor::u8(q)),
            (part::SCALES, f32s(scales)),
            (part::BIASES, f32s(biases)),
        ],
        MatrixArrays::Lut4 { packed, lut } => {
            vec![(part::Q, Tensor::u8(packed)), (part::LUT, f32s(lut))]
        }
        MatrixArrays::MlxInt8 { dequantized } => vec![(part::W, Tensor::bf16(&dequantized))],
    }
}

/// Writes a pre-quantised copy of `src` (an upstream-layout checkpoint of the model
/// named `model`) to `path`: each of `matrices` (keyed by the tensor it was loaded
/// from) as its parts, every other tensor copied, the metadata naming `precision`.
pub fn write(
    path: &Path,
    src: &Checkpoint,
    model: &str,
    precision: &str,
    matrices: &[(String, Matrix)],
) -> Result<()> {
    let mut tensors: Vec<(String, Tensor<'_>)> = Vec::new();
    for (name, m) in matrices {
        let format = m.format().name();
        for (part, t) in parts(m.to_arrays()) {
            tensors.push((part_name(name, format, part), t));
        }
    }
    let quantized: HashSet<&str> = matrices.iter().map(|(n, _)| n.as_str()).collect();
    for name in src.names().filter(|n| !quantized.contains(n)) {
        let t = src.tensor(name)?;
        let (shape, bytes) =
            if name == RVQ_CODEBOOK && t.shape.len() == 3 && t.shape[0] > RVQ_LEVELS {
                // Only the first levels of the stored codebook are ever read.
                let level = t.bytes.len() / t.shape[0];
                (
                    vec![RVQ_LEVELS, t.shape[1], t.shape[2]],
                    &t.bytes[..RVQ_LEVELS * level],
                )
            } else {
                (t.shape.to_vec(), t.bytes)
            };
        tensors.push((
            name.to_string(),
            Tensor {
                dtype: t.dtype,
                shape,
                bytes: Cow::Borrowed(bytes),
            },
        ));
    }
    let mut metadata: HashMap<String, String> = src.metadata().clone();
    metadata.insert(FORMAT_KEY.into(), FORMAT.into());
    metadata.insert(PRECISION_KEY.into(), precision.into());
    metadata.insert(MODEL_KEY.into(), model.into());
    writer::write(path, &tensors, metadata)
}

impl Checkpoint {
    /// For a pre-quantised file: the format a tensor was stored in, if its parts
    /// (`NAME#FORMAT:PART`) are present instead of `NAME`.
    pub fn quantized_format(&self, name: &str) -> Option<&str> {
        let prefix = format!("{name}{FORMAT_SEPARATOR}");
        let (k, _) = self.entries.range(prefix.clone()..).next()?;
        let rest = k.strip_prefix(&prefix)?;
        Some(&rest[..rest.find(PART_SEPARATOR).unwrap_or(rest.len())])
    }

    /// The precision a pre-quantised file was written for (`None` for an ordinary checkpoint).
    pub fn quantized_precision(&self) -> Option<&str> {
        self.metadata.get(PRECISION_KEY).map(|s| s.as_str())
    }

    /// The model a pre-quantised file was made from, as recorded (`None` for an
    /// ordinary checkpoint, whose model shows in its shapes).
    pub fn quantized_model(&self) -> Option<&str> {
        self.metadata.get(MODEL_KEY).map(|s| s.as_str())
    }

    /// The `rows × cols` matrix that tensor `name` was stored as in `format` (see
    /// [`Checkpoint::quantized_format`]), rebuilt from its parts; each part's pages
    /// are released once copied.
    pub fn quantized_matrix(
        &self,
        name: &str,
        format: WeightFormat,
        rows: usize,
        cols: usize,
    ) -> Result<Matrix> {
        let parts = PartReader {
            ckpt: self,
            tensor: name,
            format: format.name(),
        };
        // f16 parts hold the half values widened exactly to f32.
        let narrowed = |v: Vec<f32>| -> Vec<u16> {
            v.iter()
                .map(|&x| half::f16::from_f32(x).to_bits())
                .collect()
        };
        let arrays = match format {
            WeightFormat::F32 => MatrixArrays::F32(parts.f32(part::F32)?),
            WeightFormat::Bf16 => MatrixArrays::Bf16(parts.bf16(part::BF16)?),
            WeightFormat::F16 => MatrixArrays::F16(narrowed(parts.f32(part::F16)?)),
            WeightFormat::Int8 => MatrixArrays::Int8 {
                q: parts.u8(part::Q)?,
                scales: parts.f32(part::SCALES)?,
                biases: parts.f32(part::BIASES)?,
            },
            WeightFormat::Int4 => MatrixArrays::Int4 {
                packed: parts.u8(part::Q)?,
                scales: parts.f32(part::SCALES)?,
                biases: parts.f32(part::BIASES)?,
            },
            WeightFormat::Lut4 => MatrixArrays::Lut4 {
                packed: parts.u8(part::Q)?,
                lut: parts.f32(part::LUT)?,
            },
            WeightFormat::MlxInt8 => MatrixArrays::MlxInt8 {
                dequantized: parts.bf16(part::W)?,
            },
        };
        Matrix::from_arrays(rows, cols, arrays).map_err(|problem| CheckpointError::QuantizedShape {
            name: name.to_string(),
            problem,
        })
    }
}

/// Reads the parts of one pre-quantised tensor, checking each one's element type.
struct PartReader<'a> {
    ckpt: &'a Checkpoint,
    tensor: &'a str,
    format: &'static str,
}

impl PartReader<'_> {
    /// The bytes of part `part`, which must have element type `dtype`, converted
    /// by `convert` before the part's pages are released.
    fn read<T>(&self, part: &str, dtype: Dtype, convert: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let name = part_name(self.tensor, self.format, part);
        let t = self
            .ckpt
            .tensor(&name)
            .map_err(|_| CheckpointError::MissingPart {
                path: self.ckpt.path.clone(),
                name: name.clone(),
            })?;
        if t.dtype != dtype {
            return Err(CheckpointError::BadTensor {
                name,
                reason: format!(
                    "a pre-quantised part must have dtype {dtype:?}, found {:?}; quantise the original checkpoint again",
                    t.dtype
                ),
            });
        }
        let value = convert(t.bytes);
        self.ckpt.release(&name);
        Ok(value)
    }

    fn u8(&self, part: &str) -> Result<Vec<u8>> {
        self.read(part, Dtype::U8, <[u8]>::to_vec)
    }

    /// bf16 bit patterns.
    fn bf16(&self, part: &str) -> Result<Vec<u16>> {
        self.read(part, Dtype::BF16, |b| {
            b.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        })
    }

    fn f32(&self, part: &str) -> Result<Vec<f32>> {
        self.read(part, Dtype::F32, |b| {
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests;
