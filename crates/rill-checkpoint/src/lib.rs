//! Checkpoints: memory-mapped safetensors files (MRT2's upstream layout, rill's own
//! pre-quantised and state files) and foreign containers.
//!
//! * [`Checkpoint::open`] maps a file and parses its header; a truncated or corrupt
//!   file is an error, never a panic or an out-of-bounds read.
//! * [`Checkpoint::problems`] checks a file against a list of tensor specs
//!   (presence, shape, dtype) and reports all problems at once; the models derive
//!   their specs ([`layout`] holds the vocabulary).
//! * Foreign containers, read with the same care: [`gguf`] (v3, memory-mapped),
//!   [`nemo`] (NeMo's tar archive) holding a [`torch`] zip checkpoint whose
//!   `data.pkl` goes through a code-free [`pickle`] reader.
//! * [`synth`] writes random-weight checkpoints from the portable recipe of
//!   `shared/fixtures/mrt2/README.md`, bit-exact with its test vectors.
//! * [`quantized`]: the pre-quantised file format (`rill quantize`).

#![deny(unsafe_op_in_unsafe_fn)]

mod bounded;
pub mod error;
pub mod gguf;
pub mod layout;
pub mod nemo;
pub mod pickle;
pub mod quantized;
pub mod raw;
pub mod state_arrays;
pub mod synth;
pub mod torch;
pub mod writer;
pub mod yaml;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
pub use safetensors::Dtype;

pub use error::{CheckpointError, Problem, Result};
pub use layout::TensorSpec;

/// Where one tensor lives in the mapped file.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    /// Absolute byte range in the file.
    start: usize,
    end: usize,
}

/// A borrowed view of one tensor's raw little-endian bytes.
#[derive(Debug, Clone, Copy)]
pub struct TensorRef<'a> {
    pub name: &'a str,
    pub dtype: Dtype,
    pub shape: &'a [usize],
    pub bytes: &'a [u8],
}

impl TensorRef<'_> {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The values as f32 (F32 copied, BF16/F16 widened exactly).
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        let mut out = vec![0f32; self.numel()];
        self.read_f32_into(&mut out)?;
        Ok(out)
    }

    /// Writes the values as f32 into `out` (length must equal the element count).
    pub fn read_f32_into(&self, out: &mut [f32]) -> Result<()> {
        if out.len() != self.numel() {
            return Err(CheckpointError::BadTensor {
                name: self.name.to_string(),
                reason: format!(
                    "expected {} elements, caller asked for {}",
                    self.numel(),
                    out.len()
                ),
            });
        }
        match self.dtype {
            Dtype::F32 => {
                for (o, c) in out.iter_mut().zip(self.bytes.chunks_exact(4)) {
                    *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
            }
            Dtype::BF16 => {
                for (o, c) in out.iter_mut().zip(self.bytes.chunks_exact(2)) {
                    *o = half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32();
                }
            }
            Dtype::F16 => {
                for (o, c) in out.iter_mut().zip(self.bytes.chunks_exact(2)) {
                    *o = half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32();
                }
            }
            other => {
                return Err(CheckpointError::BadTensor {
                    name: self.name.to_string(),
                    reason: format!("dtype {other:?} is not a float type (F32, BF16 or F16)"),
                })
            }
        }
        Ok(())
    }
}

/// The file's bytes: mapped from disk, or owned (files parsed from memory, e.g.
/// by the fuzz targets, which must not need the file system).
pub(crate) enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// A memory-mapped safetensors checkpoint.
pub struct Checkpoint {
    path: PathBuf,
    mmap: Bytes,
    entries: BTreeMap<String, Entry>,
    metadata: HashMap<String, String>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("path", &self.path)
            .field("tensors", &self.entries.len())
            .finish()
    }
}

impl Checkpoint {
    /// Maps `path` and parses its safetensors header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let io = |source| CheckpointError::Io {
            path: path.clone(),
            source,
        };
        let file = File::open(&path).map_err(io)?;
        // (Mapping a directory fails with "No such device", which says nothing.)
        if file.metadata().map_err(io)?.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "it is a directory; give the checkpoint file in it",
            )));
        }
        // SAFETY: the map is read-only; rill never writes checkpoint files while
        // they are mapped. A concurrent external truncation could still raise
        // SIGBUS, which is the accepted contract of every mmap-based loader.
        let mmap = unsafe { Mmap::map(&file) }.map_err(io)?;
        Self::parse(path, Bytes::Mapped(mmap))
    }

    /// Parses a safetensors file held in memory; `name` labels errors.
    pub fn from_bytes(name: impl AsRef<Path>, bytes: Vec<u8>) -> Result<Self> {
        Self::parse(name.as_ref().to_path_buf(), Bytes::Owned(bytes))
    }

    fn parse(path: PathBuf, mmap: Bytes) -> Result<Self> {
        let (header_len, meta) = safetensors::SafeTensors::read_metadata(&mmap).map_err(|e| {
            CheckpointError::NotSafetensors {
                path: path.clone(),
                reason: describe_safetensors_error(&e, mmap.len()),
            }
        })?;
        let base = 8 + header_len;
        let mut entries = BTreeMap::new();
        for (name, info) in meta.tensors() {
            let (b, e) = info.data_offsets;
            entries.insert(
                name,
                Entry {
                    dtype: info.dtype,
                    shape: info.shape.clone(),
                    start: base + b,
                    end: base + e,
                },
            );
        }
        let metadata = meta.metadata().clone().unwrap_or_default();
        Ok(Checkpoint {
            path,
            mmap,
            entries,
            metadata,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tensor names in sorted order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(|s| s.as_str())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `__metadata__` map of the header.
    pub fn metadata(&self) -> &HashMap<String, String> {
        &self.metadata
    }

    /// Every tensor copied out, in name order, with the metadata: the parts
    /// [`writer::write`] takes, for rewriting a file with some of them changed.
    pub fn to_parts(
        &self,
    ) -> (
        Vec<(String, writer::Tensor<'static>)>,
        HashMap<String, String>,
    ) {
        let tensors = self
            .entries
            .iter()
            .map(|(name, e)| {
                let t = writer::Tensor {
                    dtype: e.dtype,
                    shape: e.shape.clone(),
                    bytes: self.mmap[e.start..e.end].to_vec().into(),
                };
                (name.clone(), t)
            })
            .collect();
        (tensors, self.metadata.clone())
    }

    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    /// The raw view of a tensor, or an error naming it.
    pub fn tensor(&self, name: &str) -> Result<TensorRef<'_>> {
        let (key, e) =
            self.entries
                .get_key_value(name)
                .ok_or_else(|| CheckpointError::NoSuchTensor {
                    path: self.path.clone(),
                    name: name.to_string(),
                })?;
        Ok(TensorRef {
            name: key,
            dtype: e.dtype,
            shape: &e.shape,
            // In bounds: read_metadata checked that every data range lies inside the buffer.
            bytes: &self.mmap[e.start..e.end],
        })
    }

    /// A tensor's values widened to f32.
    pub fn f32(&self, name: &str) -> Result<Vec<f32>> {
        self.tensor(name)?.to_f32()
    }

    /// Tells the kernel this process no longer needs the pages of `name` (after
    /// copying it into the engine layout), so loading a large file does not keep
    /// the whole mapping resident. Pages are re-read from the page cache if touched
    /// again; a no-op on platforms without `madvise`.
    pub fn release(&self, name: &str) {
        #[cfg(unix)]
        if let (Some(e), Bytes::Mapped(mmap)) = (self.entries.get(name), &self.mmap) {
            // SAFETY: the mapping is private and read-only; dropping its pages only
            // makes later reads fault them in again from the file.
            let _ = unsafe {
                mmap.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    e.start,
                    e.end - e.start,
                )
            };
        }
        #[cfg(not(unix))]
        let _ = name;
    }

    /// Problems of this file against a list of specs.
    pub fn problems(&self, specs: &[TensorSpec]) -> Vec<Problem> {
        let mut problems = Vec::new();
        for spec in specs {
            let Some(e) = self.entries.get(&spec.name) else {
                if self.quantized_format(&spec.name).is_some() {
                    continue; // stored pre-quantised; the loader checks the parts
                }
                problems.push(Problem::Missing {
                    name: spec.name.clone(),
                    expected: spec.shape.clone(),
                });
                continue;
            };
            // The codebook stores 64 levels upstream; rill reads only the first 12.
            let shape_ok = if spec.name == layout::RVQ_CODEBOOK {
                e.shape.len() == 3
                    && e.shape[0] >= layout::RVQ_LEVELS
                    && e.shape[1..] == spec.shape[1..]
            } else {
                e.shape == spec.shape
            };
            if !shape_ok {
                problems.push(Problem::WrongShape {
                    name: spec.name.clone(),
                    expected: spec.shape.clone(),
                    found: e.shape.clone(),
                });
            }
            if !matches!(e.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16) {
                problems.push(Problem::WrongDtype {
                    name: spec.name.clone(),
                    expected: "F32, BF16 or F16",
                    found: format!("{:?}", e.dtype),
                });
            }
        }
        problems
    }
}

fn describe_safetensors_error(e: &safetensors::SafeTensorError, file_len: usize) -> String {
    use safetensors::SafeTensorError as E;
    match e {
        E::HeaderTooSmall => format!("file is only {file_len} bytes, too short for a header"),
        E::InvalidHeaderLength => "header length points past the end of the file".to_string(),
        E::MetadataIncompleteBuffer => format!(
            "the header describes more (or less) tensor data than the {file_len} bytes present"
        ),
        other => other.to_string(),
    }
}

/// Maps `path` read-only (the foreign container readers share this).
pub(crate) fn map_file(path: &Path) -> Result<Bytes> {
    let io = |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    // SAFETY: the map is read-only; rill never writes checkpoint files while they
    // are mapped (a concurrent external truncation could raise SIGBUS, the accepted
    // contract of every mmap-based loader).
    let mmap = unsafe { Mmap::map(&file) }.map_err(io)?;
    Ok(Bytes::Mapped(mmap))
}
