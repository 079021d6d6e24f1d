//! Writing safetensors files (session files, pre-quantised checkpoints).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use safetensors::{Dtype, View};

use crate::error::{CheckpointError, Result};

/// One tensor to write: owned or borrowed little-endian bytes.
#[derive(Debug, Clone)]
pub struct Tensor<'a> {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub bytes: Cow<'a, [u8]>,
}

impl Tensor<'static> {
    /// A tensor of `shape` whose bytes are all zero (test and seed files).
    pub fn zeros(dtype: Dtype, shape: &[usize]) -> Self {
        let n: usize = shape.iter().product();
        Tensor {
            dtype,
            shape: shape.to_vec(),
            bytes: Cow::Owned(vec![0u8; n * dtype.bitsize() / 8]),
        }
    }

    pub fn f32(shape: Vec<usize>, v: &[f32]) -> Self {
        Tensor {
            dtype: Dtype::F32,
            shape,
            bytes: Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        }
    }

    pub fn u32(v: &[u32]) -> Self {
        Tensor {
            dtype: Dtype::U32,
            shape: vec![v.len()],
            bytes: Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        }
    }

    pub fn u64(v: &[u64]) -> Self {
        Tensor {
            dtype: Dtype::U64,
            shape: vec![v.len()],
            bytes: Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        }
    }

    pub fn u8(v: Vec<u8>) -> Self {
        Tensor {
            dtype: Dtype::U8,
            shape: vec![v.len()],
            bytes: Cow::Owned(v),
        }
    }

    /// bf16 bit patterns.
    pub fn bf16(v: &[u16]) -> Self {
        Tensor {
            dtype: Dtype::BF16,
            shape: vec![v.len()],
            bytes: Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        }
    }
}

impl View for &Tensor<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// `tensors` and `metadata` as the bytes of a safetensors file (what [`write`]
/// writes); fails only if a tensor's bytes do not match its dtype and shape.
pub fn serialize(
    tensors: &[(String, Tensor<'_>)],
    metadata: HashMap<String, String>,
) -> std::result::Result<Vec<u8>, safetensors::SafeTensorError> {
    let views: Vec<(String, &Tensor<'_>)> = tensors.iter().map(|(n, t)| (n.clone(), t)).collect();
    safetensors::serialize(views, Some(metadata))
}

/// Writes `bytes` to `path` atomically ([`rill_io::write_atomic`]).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    rill_io::write_atomic(path, bytes).map_err(|source| CheckpointError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `tensors` and `metadata` to `path` atomically ([`rill_io::AtomicFile`]):
/// a failed write never leaves a truncated file under the final name (or
/// clobbers an existing one).
pub fn write(
    path: &Path,
    tensors: &[(String, Tensor<'_>)],
    metadata: HashMap<String, String>,
) -> Result<()> {
    let err = |source| CheckpointError::Write {
        path: path.to_path_buf(),
        source,
    };
    let (pending, file) = rill_io::AtomicFile::create(path).map_err(err)?;
    drop(file);
    let views: Vec<(String, &Tensor<'_>)> = tensors.iter().map(|(n, t)| (n.clone(), t)).collect();
    safetensors::serialize_to_file(views, Some(metadata), pending.partial_path())
        .map_err(|e| err(std::io::Error::other(e)))?;
    pending.commit().map_err(err)
}
