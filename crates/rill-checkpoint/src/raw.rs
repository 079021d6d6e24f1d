//! A tensor view shared by the foreign container readers ([`crate::gguf`],
//! [`crate::torch`]): element type, torch-order shape, element strides and the
//! bytes of its storage, checked to lie inside that storage before any read.

use crate::error::{CheckpointError, Result};

/// Element types the foreign readers can widen (little-endian in every format).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElemType {
    F32,
    F16,
    BF16,
    F64,
    I64,
    I32,
    I16,
    I8,
    U8,
    Bool,
}

impl ElemType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ElemType::F64 | ElemType::I64 => 8,
            ElemType::F32 | ElemType::I32 => 4,
            ElemType::F16 | ElemType::BF16 | ElemType::I16 => 2,
            ElemType::I8 | ElemType::U8 | ElemType::Bool => 1,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            ElemType::F32 | ElemType::F16 | ElemType::BF16 | ElemType::F64
        )
    }
}

/// One tensor inside a mapped file: `shape` in torch order (slowest first),
/// `strides` in elements, `offset` in elements from the start of `storage`.
#[derive(Debug, Clone)]
pub struct RawTensor<'a> {
    pub name: String,
    pub dtype: ElemType,
    pub shape: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
    storage: &'a [u8],
}

/// Appends little-endian halves `bytes` widened to f32 (exact), a block at a time
/// with `half`'s slice conversion (F16C where the CPU has it): NVIDIA's f16 GGUFs
/// are mostly halves, and one call per element was most of their load time.
fn widen_f16(bytes: &[u8], out: &mut Vec<f32>) {
    use half::slice::HalfFloatSliceExt;
    const BLOCK: usize = 4096;
    let mut halves = [half::f16::ZERO; BLOCK];
    let mut wide = [0f32; BLOCK];
    for chunk in bytes.chunks(2 * BLOCK) {
        let n = chunk.len() / 2;
        for (h, b) in halves.iter_mut().zip(chunk.chunks_exact(2)) {
            *h = half::f16::from_bits(u16::from_le_bytes([b[0], b[1]]));
        }
        halves[..n].convert_to_f32_slice(&mut wide[..n]);
        out.extend_from_slice(&wide[..n]);
    }
}

fn bad(name: &str, reason: String) -> CheckpointError {
    CheckpointError::BadTensor {
        name: name.to_string(),
        reason,
    }
}

/// Elements of `shape`, or `None` on overflow.
pub(crate) fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

impl<'a> RawTensor<'a> {
    /// A row-major tensor filling the front of `storage`.
    pub fn contiguous(
        name: &str,
        dtype: ElemType,
        shape: Vec<usize>,
        storage: &'a [u8],
    ) -> Result<Self> {
        let mut strides = vec![1usize; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1].saturating_mul(shape[i + 1]);
        }
        Self::strided(name, dtype, shape, strides, 0, storage)
    }

    /// A strided view; every element it can address must lie inside `storage`.
    pub fn strided(
        name: &str,
        dtype: ElemType,
        shape: Vec<usize>,
        strides: Vec<usize>,
        offset: usize,
        storage: &'a [u8],
    ) -> Result<Self> {
        if strides.len() != shape.len() {
            return Err(bad(
                name,
                format!("{} strides for {} dimensions", strides.len(), shape.len()),
            ));
        }
        let numel =
            checked_numel(&shape).ok_or_else(|| bad(name, format!("shape {shape:?} overflows")))?;
        if numel > 0 {
            // Highest element index addressed, computed without overflow.
            let last = shape
                .iter()
                .zip(&strides)
                .try_fold(offset, |acc, (&d, &s)| {
                    (d - 1).checked_mul(s).and_then(|x| acc.checked_add(x))
                });
            let end = last
                .and_then(|l| l.checked_add(1))
                .and_then(|n| n.checked_mul(dtype.size()));
            match end {
                Some(e) if e <= storage.len() => {}
                _ => {
                    return Err(bad(
                        name,
                        format!(
                            "shape {shape:?} strides {strides:?} offset {offset} reach past its storage of {} bytes; the file is corrupt",
                            storage.len()
                        ),
                    ))
                }
            }
        }
        Ok(RawTensor {
            name: name.to_string(),
            dtype,
            shape,
            strides,
            offset,
            storage,
        })
    }

    pub fn numel(&self) -> usize {
        // Checked in the constructor.
        self.shape.iter().product()
    }

    /// Whether the view is row-major and gap-free (the common case: a plain loop).
    fn is_contiguous(&self) -> bool {
        let mut expect = 1usize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 && s != expect {
                return false;
            }
            expect = expect.saturating_mul(d);
        }
        true
    }

    /// Storage element index of every element in row-major order.
    fn for_each_index(&self, mut f: impl FnMut(usize)) {
        let n = self.numel();
        if n == 0 {
            return;
        }
        if self.is_contiguous() {
            (self.offset..self.offset + n).for_each(f);
            return;
        }
        let rank = self.shape.len();
        let mut idx = vec![0usize; rank];
        let mut pos = self.offset;
        for _ in 0..n {
            f(pos);
            for d in (0..rank).rev() {
                idx[d] += 1;
                pos += self.strides[d];
                if idx[d] < self.shape[d] {
                    break;
                }
                pos -= self.strides[d] * self.shape[d];
                idx[d] = 0;
            }
        }
    }

    fn elem(&self, i: usize) -> &[u8] {
        let s = self.dtype.size();
        &self.storage[i * s..(i + 1) * s]
    }

    /// The values as f32 (floats widened exactly, f64 rounded); error for integer types.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        if !self.dtype.is_float() {
            return Err(bad(
                &self.name,
                format!("dtype {:?} is not a float type", self.dtype),
            ));
        }
        let mut out = Vec::with_capacity(self.numel());
        // A plain run of bytes (the constructor checked that a non-empty view lies
        // inside its storage; an empty one may carry any offset).
        let s = self.dtype.size();
        let run = (self.numel() > 0 && self.is_contiguous())
            .then(|| {
                self.storage
                    .get(self.offset * s..(self.offset + self.numel()) * s)
            })
            .flatten();
        if let Some(bytes) = run {
            match self.dtype {
                ElemType::F32 => {
                    out.extend(
                        bytes
                            .chunks_exact(4)
                            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    );
                    return Ok(out);
                }
                ElemType::F16 => {
                    widen_f16(bytes, &mut out);
                    return Ok(out);
                }
                _ => {}
            }
        }
        self.for_each_index(|i| {
            let b = self.elem(i);
            out.push(match self.dtype {
                ElemType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                ElemType::F16 => half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32(),
                ElemType::BF16 => half::bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32(),
                _ => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32,
            });
        });
        Ok(out)
    }

    /// The values as i64; error for float types.
    pub fn to_i64(&self) -> Result<Vec<i64>> {
        if self.dtype.is_float() {
            return Err(bad(
                &self.name,
                format!("dtype {:?} is not an integer type", self.dtype),
            ));
        }
        let mut out = Vec::with_capacity(self.numel());
        self.for_each_index(|i| {
            let b = self.elem(i);
            out.push(match self.dtype {
                ElemType::I64 => {
                    i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                }
                ElemType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
                ElemType::I16 => i16::from_le_bytes([b[0], b[1]]) as i64,
                ElemType::I8 => b[0] as i8 as i64,
                _ => b[0] as i64,
            });
        });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_views_read_and_out_of_bounds_is_an_error() {
        let bytes: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        // The transpose of a 2x3 row-major matrix.
        let t = RawTensor::strided("t", ElemType::F32, vec![3, 2], vec![1, 3], 0, &bytes).unwrap();
        assert_eq!(t.to_f32().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
        assert!(RawTensor::strided("t", ElemType::F32, vec![3, 2], vec![1, 3], 1, &bytes).is_err());
        assert!(RawTensor::strided(
            "t",
            ElemType::F32,
            vec![usize::MAX, 2],
            vec![1, 1],
            0,
            &bytes
        )
        .is_err());
        assert!(t.to_i64().is_err());
    }

    #[test]
    fn contiguous_halves_widen_to_the_same_bits_as_one_at_a_time() {
        // Every half bit pattern (NaNs, infinities, subnormals, both zeros), at an odd
        // element offset and across more than one block.
        let bits: Vec<u16> = (0..=u16::MAX).chain(0..1000).collect();
        let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        let n = bits.len() - 1;
        let t = RawTensor::strided("h", ElemType::F16, vec![n], vec![1], 1, &bytes).unwrap();
        let got = t.to_f32().unwrap();
        assert_eq!(got.len(), n);
        for (g, &b) in got.iter().zip(&bits[1..]) {
            assert_eq!(
                g.to_bits(),
                half::f16::from_bits(b).to_f32().to_bits(),
                "{b:#06x}"
            );
        }
        // The strided path (a transposed view) gives the same values.
        let square: Vec<u8> = bytes[..2 * 256 * 256].to_vec();
        let tr = RawTensor::strided("t", ElemType::F16, vec![256, 256], vec![1, 256], 0, &square)
            .unwrap();
        let tr = tr.to_f32().unwrap();
        assert_eq!(
            tr[1].to_bits(),
            half::f16::from_bits(256).to_f32().to_bits()
        );
        // An empty view may carry any offset (a corrupt file's): no values, no panic.
        for dtype in [ElemType::F16, ElemType::F32] {
            let empty =
                RawTensor::strided("e", dtype, vec![0, 4], vec![4, 1], usize::MAX / 8, &bytes)
                    .unwrap();
            assert_eq!(empty.to_f32().unwrap(), Vec::<f32>::new());
        }
    }
}
