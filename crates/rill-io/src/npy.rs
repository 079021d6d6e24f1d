//! `.npy` parsing with every size checked against the bytes present before anything
//! is allocated.
//!
//! `npyz` trusts the header: a shape whose element count overflows `u64` panics
//! inside it (or wraps, in release builds), and its Python-literal parser backtracks
//! exponentially on deeply nested brackets. So the preamble and the header dict are
//! checked here first, with checked arithmetic, and `npyz` only ever sees headers
//! whose data is really present.

use npyz::{DType, TypeChar, TypeStr};
use py_literal::Value;

use crate::{Array, Data};

/// Longest header accepted: numpy's own default `max_header_size` (larger headers
/// "may not be safe to load securely", numpy says).
pub const MAX_HEADER_LEN: usize = 10_000;
/// Deepest bracket nesting accepted in the header: numpy writes a dict holding a
/// shape tuple. The Python-literal parser backtracks exponentially in the depth (a
/// 200-byte header nesting 8 deep took seconds), and deeper headers only describe
/// structured dtypes, which rill does not read anyway.
const MAX_NESTING: usize = 2;

/// What the header promises, checked against the file length.
struct Header {
    shape: Vec<u64>,
    descr: TypeStr,
}

fn preamble(bytes: &[u8]) -> Result<(usize, usize), String> {
    if !bytes.starts_with(b"\x93NUMPY") {
        return Err("not a .npy array (no \\x93NUMPY magic at the start)".into());
    }
    if bytes.len() < 8 {
        return Err(format!(
            "truncated .npy: {} bytes, no format version",
            bytes.len()
        ));
    }
    let (len_bytes, prefix) = match (bytes[6], bytes[7]) {
        (1, 0) => (2, 10),
        (2, 0) | (3, 0) => (4, 12),
        (a, b) => {
            return Err(format!(
                "unsupported .npy format version {a}.{b} (1.0, 2.0 and 3.0 are)"
            ))
        }
    };
    if bytes.len() < prefix {
        return Err(format!(
            "truncated .npy: {} bytes, the preamble alone is {prefix}",
            bytes.len()
        ));
    }
    let mut n = [0u8; 4];
    n[..len_bytes].copy_from_slice(&bytes[8..prefix]);
    let header_len = u32::from_le_bytes(n) as usize;
    if header_len > MAX_HEADER_LEN {
        return Err(format!(
            "header of {header_len} bytes is longer than numpy's limit of {MAX_HEADER_LEN}; the file is corrupt or not from numpy"
        ));
    }
    let available = bytes.len() - prefix;
    if header_len > available {
        return Err(format!(
            "header claims {header_len} bytes, but only {available} follow (truncated file)"
        ));
    }
    Ok((prefix, header_len))
}

fn header(text: &[u8]) -> Result<Header, String> {
    let text = std::str::from_utf8(text).map_err(|_| "header is not UTF-8 text".to_string())?;
    let mut depth = 0usize;
    for c in text.bytes() {
        match c {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(format!(
                        "header nests brackets deeper than {MAX_NESTING} (a dict holding a shape tuple); structured dtypes are not supported"
                    ));
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let v: Value = text
        .trim_end()
        .parse()
        .map_err(|e| format!("header is not a Python literal: {e}"))?;
    let Value::Dict(entries) = v else {
        return Err("header is not a Python dict".into());
    };
    let get = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| matches!(k, Value::String(s) if s == key))
            .map(|(_, v)| v)
            .ok_or_else(|| format!("header has no '{key}'"))
    };
    let shape = match get("shape")? {
        Value::Tuple(dims) | Value::List(dims) => {
            dims.iter()
                .map(|d| match d {
                    Value::Integer(n) => u64::try_from(n)
                        .map_err(|_| format!("shape dimension {n} is not in 0..2^64")),
                    other => Err(format!("shape dimension {other} is not an integer")),
                })
                .collect::<Result<Vec<u64>, String>>()?
        }
        other => return Err(format!("shape {other} is not a tuple")),
    };
    let descr = match get("descr")? {
        Value::String(s) => s
            .parse::<TypeStr>()
            .map_err(|e| format!("dtype '{s}' is invalid: {e}"))?,
        other => {
            return Err(format!(
                "unsupported dtype {other} (structured arrays are not supported)"
            ))
        }
    };
    Ok(Header { shape, descr })
}

/// Bytes of array data the header asks for, or why it cannot be right.
fn data_len(h: &Header) -> Result<u64, String> {
    // Every partial product of the dimensions (npyz's strides, our C/Fortran
    // reordering) is at most the product of the non-zero ones.
    let overflow = || format!("shape {:?} has more elements than fit in 64 bits", h.shape);
    h.shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d.max(1)))
        .ok_or_else(overflow)?;
    let numel = h.shape.iter().product::<u64>();
    usize::try_from(numel).map_err(|_| overflow())?;
    let item = h.descr.num_bytes().ok_or_else(|| {
        format!(
            "dtype '{}' has no fixed size (object arrays need pickle, which rill does not read)",
            h.descr
        )
    })?;
    numel.checked_mul(item as u64).ok_or_else(overflow)
}

/// Parses a whole `.npy` file held in memory; the error says what is wrong.
pub(crate) fn parse(bytes: &[u8]) -> Result<Array, String> {
    let (prefix, header_len) = preamble(bytes)?;
    let h = header(&bytes[prefix..prefix + header_len])?;
    let need = data_len(&h)?;
    let available = (bytes.len() - prefix - header_len) as u64;
    if need > available {
        return Err(format!(
            "shape {:?} of dtype '{}' needs {need} data bytes, but only {available} follow the header (truncated or corrupt file)",
            h.shape, h.descr
        ));
    }
    let npy = npyz::NpyFile::new(bytes).map_err(|e| format!("not a .npy array: {e}"))?;
    let fortran = npy.order() == npyz::Order::Fortran;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let (tc, size) = match npy.dtype() {
        DType::Plain(ts) => (ts.type_char(), ts.size_field()),
        other => return Err(format!("unsupported dtype {}", other.descr())),
    };
    let e = |e: std::io::Error| format!("array data: {e}");
    let data = match (tc, size) {
        (TypeChar::Float, 4) => Data::F32(npy.into_vec().map_err(e)?),
        (TypeChar::Float, 8) => Data::F64(npy.into_vec().map_err(e)?),
        (TypeChar::Int, 2) => Data::I16(npy.into_vec().map_err(e)?),
        (TypeChar::Int, 4) => Data::I32(npy.into_vec().map_err(e)?),
        (TypeChar::Int, 8) => Data::I64(npy.into_vec().map_err(e)?),
        (TypeChar::Uint, 4) => Data::U32(npy.into_vec().map_err(e)?),
        (TypeChar::Uint, 1) => Data::U8(npy.into_vec().map_err(e)?),
        (TypeChar::Bool, 1) => Data::Bool(npy.into_vec().map_err(e)?),
        (t, s) => return Err(format!("unsupported dtype {t:?}{s}")),
    };
    let data = if fortran {
        fortran_to_c(&shape, data)
    } else {
        data
    };
    Ok(Array { shape, data })
}

/// Reorders column-major (Fortran) element data into row-major (C) order. The
/// caller guarantees `data` holds exactly the product of `shape` elements.
fn fortran_to_c(shape: &[usize], data: Data) -> Data {
    fn reorder<T: Copy>(shape: &[usize], v: Vec<T>) -> Vec<T> {
        if shape.len() < 2 {
            return v;
        }
        let mut out = Vec::with_capacity(v.len());
        let mut idx = vec![0usize; shape.len()];
        for _ in 0..v.len() {
            // Fortran offset of the C-order index `idx`.
            let mut off = 0;
            let mut stride = 1;
            for (i, &d) in idx.iter().zip(shape) {
                off += i * stride;
                stride *= d;
            }
            out.push(v[off]);
            for k in (0..shape.len()).rev() {
                idx[k] += 1;
                if idx[k] < shape[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
        out
    }
    match data {
        Data::F32(v) => Data::F32(reorder(shape, v)),
        Data::F64(v) => Data::F64(reorder(shape, v)),
        Data::I16(v) => Data::I16(reorder(shape, v)),
        Data::I32(v) => Data::I32(reorder(shape, v)),
        Data::I64(v) => Data::I64(reorder(shape, v)),
        Data::U32(v) => Data::U32(reorder(shape, v)),
        Data::U8(v) => Data::U8(reorder(shape, v)),
        Data::Bool(v) => Data::Bool(reorder(shape, v)),
    }
}
