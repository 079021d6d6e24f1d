//! A reader of TFLite model files (the `TFL3` flatbuffer of
//! `tensorflow/lite/schema/schema.fbs`), as much of it as rill needs to take
//! MusicCoCa's constants out of upstream's `.tflite` files: subgraphs, tensors (name,
//! shape, type, constant data), operators with their builtin codes, and the two
//! look-up rules of DBraun's `convert.py` ([`SubgraphView::find`], [`SubgraphView::arg`]).
//!
//! The input is untrusted: the flatbuffer goes through the `flatbuffers` verifier
//! first, every index and byte range is checked against the bytes present, and any
//! fault is an [`Error::BadAsset`] naming the file, never a panic. Constant data may
//! sit inside the flatbuffer (`Buffer.data`) or after it (`Buffer.offset`/`size`
//! from the start of the file, as TFLite writes models over 2 GB); both are read.
//! [`mod@write`] makes such files.

use std::fs::File;
use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use regex::Regex;

use crate::Error;

mod schema;
pub mod write;

/// The file identifier of TFLite flatbuffers (bytes 4..8 of the file).
pub const FILE_IDENTIFIER: &str = "TFL3";

/// TFLite `TensorType` codes (the ones rill names).
pub mod tensor_type {
    /// `FLOAT32`.
    pub const FLOAT32: i8 = 0;
    /// `INT32`.
    pub const INT32: i8 = 2;
    /// `BOOL`.
    pub const BOOL: i8 = 6;
}

/// TFLite `BuiltinOperator` codes (the ones rill names).
pub mod builtin {
    /// `FULLY_CONNECTED`: inputs (activation, weight `[out, in]`, bias `[out]`).
    pub const FULLY_CONNECTED: i32 = 9;
    /// `GATHER`: inputs (params, indices).
    pub const GATHER: i32 = 36;
    /// `SUB`.
    pub const SUB: i32 = 41;
    /// `ARG_MIN`.
    pub const ARG_MIN: i32 = 79;
    /// `WHILE`.
    pub const WHILE: i32 = 119;
}

/// One `OperatorCode` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorCode {
    /// The old one-byte code field (127 = "see `builtin_code`").
    pub deprecated_builtin_code: i8,
    /// The custom operator's name, for `CUSTOM` ops.
    pub custom_code: Option<String>,
    /// The operator version.
    pub version: i32,
    /// The builtin code field (0 in files written before it existed).
    pub builtin_code: i32,
}

impl OperatorCode {
    /// The effective builtin code: the larger of the two fields, as `convert.py` and
    /// TFLite's own `GetBuiltinCode` take it.
    pub fn code(&self) -> i32 {
        self.builtin_code.max(self.deprecated_builtin_code as i32)
    }
}

/// One `Tensor` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name (often several op names joined by `;`).
    pub name: String,
    /// The shape as stored (TFLite dims are `int32`).
    pub shape: Vec<i32>,
    /// The `TensorType` code ([`tensor_type`]).
    pub dtype: i8,
    /// Index into the model's buffers (0 is the empty sentinel).
    pub buffer: u32,
}

/// One `Operator` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// Index into the model's operator codes.
    pub opcode_index: u32,
    /// Input tensor indices (−1 = optional input absent).
    pub inputs: Vec<i32>,
    /// Output tensor indices.
    pub outputs: Vec<i32>,
}

/// One `SubGraph` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subgraph {
    /// The subgraph's name.
    pub name: String,
    /// Its tensors.
    pub tensors: Vec<TensorInfo>,
    /// Indices of its input tensors.
    pub inputs: Vec<i32>,
    /// Indices of its output tensors.
    pub outputs: Vec<i32>,
    /// Its operators, in execution order.
    pub operators: Vec<Operator>,
}

/// Where a buffer's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BufferData {
    /// The byte range of `Buffer.data` in the file, when present.
    inline: Option<Range<usize>>,
    /// `Buffer.offset` (from the start of the file; 0 or 1 = none).
    offset: u64,
    /// `Buffer.size`.
    size: u64,
}

enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// A TFLite model file: its verified tables and its bytes.
pub struct TfliteModel {
    path: PathBuf,
    bytes: Bytes,
    /// The schema version (`Model.version`, 3 for current files).
    pub version: u32,
    /// `Model.description` (the converter's name).
    pub description: Option<String>,
    /// The operator codes.
    pub operator_codes: Vec<OperatorCode>,
    /// The subgraphs (0 is the main one).
    pub subgraphs: Vec<Subgraph>,
    buffers: Vec<BufferData>,
}

impl std::fmt::Debug for TfliteModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TfliteModel")
            .field("path", &self.path)
            .field("bytes", &self.bytes.len())
            .field("subgraphs", &self.subgraphs.len())
            .field("buffers", &self.buffers.len())
            .finish()
    }
}

impl TfliteModel {
    /// Opens (memory-maps) and verifies the file at `path`. A missing file is
    /// [`Error::MissingAsset`] with `hint`.
    pub fn open(path: &Path, hint: &str) -> Result<TfliteModel, Error> {
        let file = File::open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::MissingAsset {
                    path: path.to_path_buf(),
                    hint: hint.to_string(),
                }
            } else {
                Error::Io {
                    path: path.to_path_buf(),
                    source: e,
                }
            }
        })?;
        // SAFETY: the map is read-only; rill never writes asset files while they are
        // mapped (a concurrent external truncation could raise SIGBUS, the accepted
        // contract of every mmap-based loader, as in rill-checkpoint).
        let mmap = unsafe { Mmap::map(&file) }.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path.to_path_buf(), Bytes::Mapped(mmap))
    }

    /// Verifies a model held in memory; `path` names it in errors.
    pub fn from_bytes(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<TfliteModel, Error> {
        Self::parse(path.into(), Bytes::Owned(bytes))
    }

    fn parse(path: PathBuf, bytes: Bytes) -> Result<TfliteModel, Error> {
        if bytes.len() < 8 || &bytes[4..8] != FILE_IDENTIFIER.as_bytes() {
            return Err(Error::BadAsset {
                path,
                what: format!(
                    "not a TFLite file (no {FILE_IDENTIFIER} identifier at bytes 4..8; {} bytes)",
                    bytes.len()
                ),
            });
        }
        let p = match schema::parse(&bytes) {
            Ok(p) => p,
            Err(what) => return Err(Error::BadAsset { path, what }),
        };
        Ok(TfliteModel {
            path,
            bytes,
            version: p.version,
            description: p.description,
            operator_codes: p.operator_codes,
            subgraphs: p.subgraphs,
            buffers: p.buffers,
        })
    }

    /// The file's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of buffers.
    pub fn num_buffers(&self) -> usize {
        self.buffers.len()
    }

    /// An error about this file.
    pub fn bad(&self, what: impl Into<String>) -> Error {
        Error::BadAsset {
            path: self.path.clone(),
            what: what.into(),
        }
    }

    /// Subgraph `index`.
    pub fn subgraph(&self, index: usize) -> Result<SubgraphView<'_>, Error> {
        let sg = self.subgraphs.get(index).ok_or_else(|| {
            self.bad(format!(
                "no subgraph {index} (the file has {})",
                self.subgraphs.len()
            ))
        })?;
        Ok(SubgraphView {
            model: self,
            index,
            sg,
        })
    }

    /// The bytes of buffer `index`: `Buffer.data` when non-empty, else the
    /// `offset`/`size` range of the file when `offset` > 1 (TFLite's rule), else
    /// `None` (no data: not a constant).
    pub fn buffer_bytes(&self, index: u32) -> Result<Option<&[u8]>, Error> {
        let b = self.buffers.get(index as usize).ok_or_else(|| {
            self.bad(format!(
                "buffer index {index} out of range (the file has {})",
                self.buffers.len()
            ))
        })?;
        if let Some(r) = &b.inline {
            if !r.is_empty() {
                return Ok(self.bytes.get(r.clone()));
            }
        }
        if b.offset > 1 {
            let end = b.offset.checked_add(b.size);
            let range = match end {
                Some(end) if end <= self.bytes.len() as u64 => b.offset as usize..end as usize,
                _ => {
                    return Err(self.bad(format!(
                        "buffer {index}: data at offset {} size {} is past the end of the \
                         file ({} bytes): truncated?",
                        b.offset,
                        b.size,
                        self.bytes.len()
                    )))
                }
            };
            if range.is_empty() {
                return Ok(None);
            }
            return Ok(self.bytes.get(range));
        }
        Ok(None)
    }

    /// The effective builtin code of `op` ([`OperatorCode::code`]).
    pub fn op_code(&self, op: &Operator) -> Result<i32, Error> {
        self.operator_codes
            .get(op.opcode_index as usize)
            .map(OperatorCode::code)
            .ok_or_else(|| {
                self.bad(format!(
                    "operator code index {} out of range (the file has {})",
                    op.opcode_index,
                    self.operator_codes.len()
                ))
            })
    }
}

/// A float32 constant taken out of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct F32Tensor {
    /// The tensor's index in its subgraph.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values, row-major.
    pub data: Vec<f32>,
}

/// One subgraph of a model, with the model's buffers at hand.
#[derive(Debug, Clone, Copy)]
pub struct SubgraphView<'a> {
    /// The model.
    pub model: &'a TfliteModel,
    /// The subgraph's index.
    pub index: usize,
    /// The subgraph.
    pub sg: &'a Subgraph,
}

fn shape_is(shape: &[i32], want: &[usize]) -> bool {
    shape.len() == want.len()
        && shape
            .iter()
            .zip(want)
            .all(|(&d, &w)| usize::try_from(d) == Ok(w))
}

impl<'a> SubgraphView<'a> {
    fn bad(&self, what: String) -> Error {
        self.model.bad(format!("subgraph {}: {what}", self.index))
    }

    /// Tensor `index` of this subgraph.
    pub fn tensor(&self, index: i32) -> Result<&'a TensorInfo, Error> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.sg.tensors.get(i))
            .ok_or_else(|| {
                self.bad(format!(
                    "tensor index {index} out of range ({} tensors)",
                    self.sg.tensors.len()
                ))
            })
    }

    /// The constant bytes of tensor `index`, `None` if it has none.
    pub fn tensor_bytes(&self, index: i32) -> Result<Option<&'a [u8]>, Error> {
        let t = self.tensor(index)?;
        self.model.buffer_bytes(t.buffer)
    }

    /// The values of the float32 constant `index`: an error if it is not a float32
    /// constant or its bytes are not exactly its shape's elements.
    pub fn f32_data(&self, index: i32) -> Result<F32Tensor, Error> {
        let t = self.tensor(index)?;
        let name = &t.name;
        let bytes = self
            .tensor_bytes(index)?
            .ok_or_else(|| self.bad(format!("tensor #{index} ({name}) is not a constant")))?;
        if t.dtype != tensor_type::FLOAT32 {
            return Err(self.bad(format!(
                "tensor #{index} ({name}) has type {}, expected FLOAT32",
                t.dtype
            )));
        }
        let shape: Option<Vec<usize>> = t.shape.iter().map(|&d| usize::try_from(d).ok()).collect();
        let numel = shape
            .as_ref()
            .and_then(|s| s.iter().try_fold(1usize, |n, &d| n.checked_mul(d)));
        let (Some(shape), Some(numel)) = (shape, numel) else {
            return Err(self.bad(format!("tensor #{index} ({name}) has shape {:?}", t.shape)));
        };
        if numel.checked_mul(4) != Some(bytes.len()) {
            return Err(self.bad(format!(
                "tensor #{index} ({name}) of shape {shape:?} has {} data bytes, expected {}",
                bytes.len(),
                numel as u128 * 4
            )));
        }
        let data = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(F32Tensor {
            index: index as usize,
            name: name.clone(),
            shape,
            data,
        })
    }

    /// Whether tensor `t` has constant data.
    fn is_constant(&self, t: &TensorInfo) -> Result<bool, Error> {
        Ok(self.model.buffer_bytes(t.buffer)?.is_some())
    }

    /// `convert.py`'s `find(pattern, shape)`: the unique constant of exactly `shape`
    /// whose name's first `;`-separated segment matches `pattern` (a `regex`-crate
    /// pattern, searched anywhere in the name as Python's `re.search` does); only if
    /// no first segment matches, the unique one whose full name matches.
    pub fn find(&self, pattern: &str, shape: &[usize]) -> Result<F32Tensor, Error> {
        let re =
            Regex::new(pattern).map_err(|e| self.bad(format!("bad pattern {pattern:?}: {e}")))?;
        let (mut first, mut full) = (Vec::new(), Vec::new());
        for (i, t) in self.sg.tensors.iter().enumerate() {
            if !shape_is(&t.shape, shape) || !self.is_constant(t)? {
                continue;
            }
            let head = t.name.split(';').next().unwrap_or_default();
            if re.is_match(head) {
                first.push(i);
            } else if re.is_match(&t.name) {
                full.push(i);
            }
        }
        let matches = if first.is_empty() { &full } else { &first };
        if matches.len() != 1 {
            return Err(self.bad(format!(
                "expected 1 tensor matching {pattern:?} with shape {shape:?}, found {} \
                 first-segment + {} full-name",
                first.len(),
                full.len()
            )));
        }
        self.f32_data(matches[0] as i32)
    }

    /// `convert.py`'s `arg(n)`: the first tensor whose name starts with
    /// `jax2tf_arg_{n}/` (stacked loop weights in a WHILE body).
    pub fn arg(&self, n: usize) -> Result<F32Tensor, Error> {
        let prefix = format!("jax2tf_arg_{n}/");
        let i = self
            .sg
            .tensors
            .iter()
            .position(|t| t.name.starts_with(&prefix))
            .ok_or_else(|| self.bad(format!("jax2tf_arg_{n} not found")))?;
        self.f32_data(i as i32)
    }

    /// [`SubgraphView::arg`], which must have exactly `shape`.
    pub fn arg_shaped(&self, n: usize, shape: &[usize]) -> Result<F32Tensor, Error> {
        let t = self.arg(n)?;
        if t.shape != shape {
            return Err(self.bad(format!(
                "jax2tf_arg_{n} ({}) has shape {:?}, expected {shape:?}",
                t.name, t.shape
            )));
        }
        Ok(t)
    }
}
