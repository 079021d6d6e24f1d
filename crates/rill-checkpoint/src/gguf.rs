//! GGUF (versions 2 and 3) as written by ggml's `gguf` Python package: header,
//! typed metadata, tensor infos, aligned data, memory-mapped.
//!
//! Every count, length and offset is checked against the bytes present before it
//! is used, so a hostile file gives [`CheckpointError::BadContainer`], never a
//! panic or an allocation larger than the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::bounded::{Bounded, Short};
use crate::error::{CheckpointError, Result};
use crate::raw::{checked_numel, ElemType, RawTensor};
use crate::{map_file, Bytes};

const MAGIC: &[u8; 4] = b"GGUF";
/// ggml's default when `general.alignment` is absent.
const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml's `GGML_MAX_DIMS`.
const MAX_DIMS: u32 = 4;
/// Arrays of arrays deeper than this are refused (ggml writes depth 1).
const MAX_ARRAY_DEPTH: usize = 4;

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    Array(Vec<MetaValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl MetaValue {
    /// Any integer type as i64 (`None` for other types or a u64 past i64).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            MetaValue::U8(v) => Some(v.into()),
            MetaValue::I8(v) => Some(v.into()),
            MetaValue::U16(v) => Some(v.into()),
            MetaValue::I16(v) => Some(v.into()),
            MetaValue::U32(v) => Some(v.into()),
            MetaValue::I32(v) => Some(v.into()),
            MetaValue::U64(v) => i64::try_from(v).ok(),
            MetaValue::I64(v) => Some(v),
            _ => None,
        }
    }

    /// A float or integer as f64.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetaValue::F32(v) => Some(v.into()),
            MetaValue::F64(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            MetaValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[MetaValue]> {
        match self {
            MetaValue::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// Where one tensor lives.
#[derive(Debug, Clone)]
pub struct TensorInfo {
    /// Torch order (slowest first): ggml's `ne` reversed.
    pub shape: Vec<usize>,
    /// The ggml type id (0 F32, 1 F16, 30 BF16, 24..28 integers, others quantised).
    pub ggml_type: u32,
    start: usize,
    end: usize,
}

/// A parsed GGUF file.
pub struct Gguf {
    path: PathBuf,
    bytes: Bytes,
    version: u32,
    alignment: u64,
    metadata: BTreeMap<String, MetaValue>,
    /// Tensor names in file order.
    order: Vec<String>,
    tensors: BTreeMap<String, TensorInfo>,
}

impl std::fmt::Debug for Gguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gguf")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("tensors", &self.order.len())
            .finish()
    }
}

/// The element type of a ggml type id, if rill can read it.
pub fn elem_type(ggml_type: u32) -> Option<ElemType> {
    Some(match ggml_type {
        0 => ElemType::F32,
        1 => ElemType::F16,
        24 => ElemType::I8,
        25 => ElemType::I16,
        26 => ElemType::I32,
        27 => ElemType::I64,
        28 => ElemType::F64,
        30 => ElemType::BF16,
        _ => return None,
    })
}

/// The file's bytes, each read named by `what` in its error.
struct Cursor<'a>(Bounded<'a>);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> std::result::Result<&'a [u8], String> {
        self.0.take(n).map_err(|e| short(e, what))
    }
    fn pos(&self) -> usize {
        self.0.pos()
    }
    fn remaining(&self) -> usize {
        self.0.remaining()
    }
    fn u8(&mut self, what: &str) -> std::result::Result<u8, String> {
        self.0.u8().map_err(|e| short(e, what))
    }
    fn u16(&mut self, what: &str) -> std::result::Result<u16, String> {
        self.0.u16().map_err(|e| short(e, what))
    }
    fn u32(&mut self, what: &str) -> std::result::Result<u32, String> {
        self.0.u32().map_err(|e| short(e, what))
    }
    fn u64(&mut self, what: &str) -> std::result::Result<u64, String> {
        self.0.u64().map_err(|e| short(e, what))
    }
    fn len(&mut self, what: &str) -> std::result::Result<usize, String> {
        let n = self.u64(what)?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or_else(|| {
                format!(
                    "{what} claims {n}, more than the {} bytes left",
                    self.remaining()
                )
            })
    }
    fn string(&mut self, what: &str) -> std::result::Result<String, String> {
        let n = self.len(what)?;
        let s = self.take(n, what)?;
        String::from_utf8(s.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    }
}

/// A read past the end of the file, in GGUF's words.
fn short(e: Short, what: &str) -> String {
    format!(
        "{what} at byte {} needs {} bytes but the file ends at {}",
        e.at, e.needed, e.len
    )
}

/// Smallest encoded size of one value of a metadata type (bounds array counts).
fn min_value_size(ty: u32) -> usize {
    match ty {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 => 8,
        9 => 12,
        _ => 8,
    }
}

fn read_value(
    c: &mut Cursor<'_>,
    ty: u32,
    depth: usize,
    what: &str,
) -> std::result::Result<MetaValue, String> {
    Ok(match ty {
        0 => MetaValue::U8(c.u8(what)?),
        1 => MetaValue::I8(c.u8(what)? as i8),
        2 => MetaValue::U16(c.u16(what)?),
        3 => MetaValue::I16(c.u16(what)? as i16),
        4 => MetaValue::U32(c.u32(what)?),
        5 => MetaValue::I32(c.u32(what)? as i32),
        6 => MetaValue::F32(f32::from_bits(c.u32(what)?)),
        7 => match c.u8(what)? {
            0 => MetaValue::Bool(false),
            1 => MetaValue::Bool(true),
            b => return Err(format!("{what}: bool byte {b} is neither 0 nor 1")),
        },
        8 => MetaValue::Str(c.string(what)?),
        9 => {
            if depth >= MAX_ARRAY_DEPTH {
                return Err(format!(
                    "{what}: arrays nested deeper than {MAX_ARRAY_DEPTH}"
                ));
            }
            let elem = c.u32(what)?;
            let n = c.u64(what)?;
            let max = (c.remaining() / min_value_size(elem)) as u64;
            if n > max {
                return Err(format!(
                    "{what}: array of {n} values cannot fit in the {} bytes left",
                    c.remaining()
                ));
            }
            let mut v = Vec::with_capacity(n as usize);
            for _ in 0..n {
                v.push(read_value(c, elem, depth + 1, what)?);
            }
            MetaValue::Array(v)
        }
        10 => MetaValue::U64(c.u64(what)?),
        11 => MetaValue::I64(c.u64(what)? as i64),
        12 => MetaValue::F64(f64::from_bits(c.u64(what)?)),
        t => return Err(format!("{what}: unknown metadata type {t}")),
    })
}

impl Gguf {
    /// Maps `path` and parses it.
    pub fn open(path: impl AsRef<Path>) -> Result<Gguf> {
        let path = path.as_ref();
        let bytes = map_file(path)?;
        Self::parse(path.to_path_buf(), bytes)
    }

    /// Parses a GGUF file held in memory; `name` labels errors.
    pub fn from_bytes(name: impl AsRef<Path>, bytes: Vec<u8>) -> Result<Gguf> {
        Self::parse(name.as_ref().to_path_buf(), Bytes::Owned(bytes))
    }

    fn parse(path: PathBuf, bytes: Bytes) -> Result<Gguf> {
        match parse_parts(&bytes) {
            Ok((version, alignment, metadata, order, tensors)) => Ok(Gguf {
                path,
                bytes,
                version,
                alignment,
                metadata,
                order,
                tensors,
            }),
            Err(reason) => Err(CheckpointError::BadContainer {
                path,
                format: "GGUF",
                reason,
            }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn version(&self) -> u32 {
        self.version
    }
    pub fn alignment(&self) -> u64 {
        self.alignment
    }
    pub fn metadata(&self) -> &BTreeMap<String, MetaValue> {
        &self.metadata
    }
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.get(key)
    }
    /// Tensor names in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(|s| s.as_str())
    }
    pub fn info(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.get(name)
    }

    /// A view of one tensor (F32/F16/BF16/F64 or an integer type; quantised types are refused).
    pub fn tensor(&self, name: &str) -> Result<RawTensor<'_>> {
        let info = self
            .tensors
            .get(name)
            .ok_or_else(|| CheckpointError::NoSuchTensor {
                path: self.path.clone(),
                name: name.to_string(),
            })?;
        let dtype = elem_type(info.ggml_type).ok_or_else(|| CheckpointError::BadTensor {
            name: name.to_string(),
            reason: format!(
                "ggml type {} is quantised or unknown; rill reads F32, F16, BF16 and integer GGUF tensors (convert with outtype f16 or f32)",
                info.ggml_type
            ),
        })?;
        // In bounds: parse_parts checked start..end against the file.
        RawTensor::contiguous(
            name,
            dtype,
            info.shape.clone(),
            &self.bytes[info.start..info.end],
        )
    }
}

type Parts = (
    u32,
    u64,
    BTreeMap<String, MetaValue>,
    Vec<String>,
    BTreeMap<String, TensorInfo>,
);

fn parse_parts(b: &[u8]) -> std::result::Result<Parts, String> {
    let mut c = Cursor(Bounded::new(b));
    if c.take(4, "magic")? != MAGIC {
        return Err("it does not start with the GGUF magic".into());
    }
    let version = c.u32("version")?;
    if !(2..=3).contains(&version) {
        return Err(format!("GGUF version {version} (rill reads 2 and 3)"));
    }
    let n_tensors = c.u64("tensor count")?;
    let n_kv = c.u64("metadata count")?;
    // A key-value pair takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 4 + 8.
    if n_kv > (c.remaining() / 13) as u64 || n_tensors > (c.remaining() / 24) as u64 {
        return Err(format!(
            "{n_tensors} tensors and {n_kv} metadata entries cannot fit in {} bytes",
            b.len()
        ));
    }
    let mut metadata = BTreeMap::new();
    for i in 0..n_kv {
        let key = c.string(&format!("metadata key {i}"))?;
        let ty = c.u32(&key)?;
        let v = read_value(&mut c, ty, 0, &key)?;
        if metadata.insert(key.clone(), v).is_some() {
            return Err(format!("metadata key {key} appears twice"));
        }
    }
    let alignment = match metadata.get("general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some(MetaValue::U32(a)) if *a > 0 && a.is_power_of_two() => u64::from(*a),
        Some(v) => {
            return Err(format!(
                "general.alignment is {v:?}, not a power of two (u32)"
            ))
        }
    };
    let mut raw = Vec::with_capacity(n_tensors as usize);
    for i in 0..n_tensors {
        let name = c.string(&format!("tensor name {i}"))?;
        let n_dims = c.u32(&name)?;
        if n_dims > MAX_DIMS {
            return Err(format!(
                "tensor {name} has {n_dims} dimensions (at most {MAX_DIMS})"
            ));
        }
        let mut ne = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            let d = c.u64(&name)?;
            ne.push(usize::try_from(d).map_err(|_| format!("tensor {name}: dimension {d}"))?);
        }
        let ty = c.u32(&name)?;
        let offset = c.u64(&name)?;
        raw.push((name, ne, ty, offset));
    }
    let data_start = (c.pos() as u64).div_ceil(alignment) * alignment;
    let mut order = Vec::with_capacity(raw.len());
    let mut tensors = BTreeMap::new();
    for (name, ne, ty, offset) in raw {
        let shape: Vec<usize> = ne.into_iter().rev().collect();
        if offset % alignment != 0 {
            return Err(format!(
                "tensor {name}: offset {offset} is not a multiple of the alignment {alignment}"
            ));
        }
        let bytes = match elem_type(ty) {
            Some(e) => checked_numel(&shape).and_then(|n| n.checked_mul(e.size())),
            // Quantised: the info is kept (listed, refused on read); its size is not needed.
            None => Some(0),
        }
        .ok_or_else(|| format!("tensor {name}: shape {shape:?} overflows"))?;
        let start = data_start.checked_add(offset);
        let end = start.and_then(|s| s.checked_add(bytes as u64));
        let (start, end) = match (start, end) {
            (Some(s), Some(e)) if e <= b.len() as u64 => (s as usize, e as usize),
            _ => {
                return Err(format!(
                    "tensor {name} (shape {shape:?}, type {ty}) at offset {offset} runs past the end of the {}-byte file",
                    b.len()
                ))
            }
        };
        order.push(name.clone());
        let info = TensorInfo {
            shape,
            ggml_type: ty,
            start,
            end,
        };
        if tensors.insert(name.clone(), info).is_some() {
            return Err(format!("tensor {name} appears twice"));
        }
    }
    // ggml writes tensor data back to back; overlapping ranges would let a small file
    // decode to many times its size (every alias read separately).
    let mut ranges: Vec<(usize, usize, &str)> = tensors
        .iter()
        .map(|(n, t)| (t.start, t.end, n.as_str()))
        .filter(|&(s, e, _)| e > s)
        .collect();
    ranges.sort_unstable();
    if let Some(w) = ranges.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(format!(
            "tensors {} and {} share bytes; GGUF tensor data must not overlap",
            w[0].2, w[1].2
        ));
    }
    Ok((version, alignment, metadata, order, tensors))
}
