//! `.npy` / `.npz` arrays: the exchange format of the reference recordings, of
//! `--dump`, `--force-tokens` and `--tokens-out`; and audio files ([`audio`]:
//! decoding, downmix, resampling).
//!
//! Reading parses with `npyz`; `.npz` is a zip of `.npy` members (crate `zip`).
//! Files are untrusted: every size in a header is checked against the bytes really
//! present before anything is allocated (see `npy.rs` and [`Npz::read`]).

#![deny(unsafe_op_in_unsafe_fn)]

mod atomic;
pub mod audio;
mod npy;
mod resample_stream;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Cursor, Read, Seek, Write};
use std::path::{Path, PathBuf};

use npyz::WriterBuilder;

pub use atomic::{write_atomic, AtomicFile};
pub use audio::{
    decode_bytes, decode_bytes_limited, decode_file, downmix_mono, resample, DecodedAudio,
    ResampleError, FFT_CHUNK, MAX_DECODED_SAMPLES, MAX_RATE_BLOCK, MAX_RESAMPLE_MAGNITUDE,
};
pub use npy::MAX_HEADER_LEN;
pub use resample_stream::StreamResampler;

/// Largest expansion of deflate (RFC 1951): at most 1032 output bytes per input
/// byte, so a member's declared size beyond that is a lie.
const MAX_DEFLATE_RATIO: u64 = 1032;

/// Errors reading or writing arrays; each names the file and what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Format { path: PathBuf, reason: String },
}

pub type Result<T> = std::result::Result<T, IoError>;

/// Element data of an array.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
}

/// An n-dimensional array (C order).
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Data,
}

impl Array {
    pub fn new(shape: Vec<usize>, data: Data) -> Array {
        Array { shape, data }
    }

    /// Element count of `shape`; `usize::MAX` if it overflows (such an array can
    /// only be built by hand and is refused by the writers).
    pub fn numel(&self) -> usize {
        if self.shape.contains(&0) {
            return 0;
        }
        self.shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .unwrap_or(usize::MAX)
    }

    /// Elements `data` holds: [`Array::numel`] for every array this crate reads
    /// or writes (an `Array::new` may disagree, which `write_npy` refuses).
    pub fn data_len(&self) -> usize {
        match &self.data {
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::I16(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::U32(v) => v.len(),
            Data::U8(v) => v.len(),
            Data::Bool(v) => v.len(),
        }
    }

    fn kind(&self) -> &'static str {
        match self.data {
            Data::F32(_) => "float32",
            Data::F64(_) => "float64",
            Data::I16(_) => "int16",
            Data::I32(_) => "int32",
            Data::I64(_) => "int64",
            Data::U32(_) => "uint32",
            Data::U8(_) => "uint8",
            Data::Bool(_) => "bool",
        }
    }

    /// Values as f32 (floats only).
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        match &self.data {
            Data::F32(v) => Some(v.clone()),
            Data::F64(v) => Some(v.iter().map(|&x| x as f32).collect()),
            _ => None,
        }
    }

    /// Values as i64 (integers only).
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        match &self.data {
            Data::I16(v) => Some(v.iter().map(|&x| x as i64).collect()),
            Data::I32(v) => Some(v.iter().map(|&x| x as i64).collect()),
            Data::I64(v) => Some(v.clone()),
            Data::U32(v) => Some(v.iter().map(|&x| x as i64).collect()),
            Data::U8(v) => Some(v.iter().map(|&x| x as i64).collect()),
            _ => None,
        }
    }
}

fn npy_bytes(a: &Array) -> std::io::Result<Vec<u8>> {
    if a.numel() != a.data_len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "array of shape {:?} needs {} elements, but its data has {}",
                a.shape,
                a.numel(),
                a.data_len()
            ),
        ));
    }
    let shape: Vec<u64> = a.shape.iter().map(|&d| d as u64).collect();
    let mut buf = Vec::new();
    macro_rules! write_as {
        ($t:ty, $v:expr) => {{
            let mut w = npyz::WriteOptions::<$t>::new()
                .default_dtype()
                .shape(&shape)
                .writer(Cursor::new(&mut buf))
                .begin_nd()?;
            w.extend($v.iter().copied())?;
            w.finish()?;
        }};
    }
    match &a.data {
        Data::F32(v) => write_as!(f32, v),
        Data::F64(v) => write_as!(f64, v),
        Data::I16(v) => write_as!(i16, v),
        Data::I32(v) => write_as!(i32, v),
        Data::I64(v) => write_as!(i64, v),
        Data::U32(v) => write_as!(u32, v),
        Data::U8(v) => write_as!(u8, v),
        Data::Bool(v) => write_as!(bool, v),
    }
    Ok(buf)
}

/// Reads one `.npy` file.
pub fn read_npy(path: impl AsRef<Path>) -> Result<Array> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    npy_from_bytes(path, &bytes)
}

/// Parses one `.npy` file held in memory; `name` labels errors.
pub fn npy_from_bytes(name: impl AsRef<Path>, bytes: &[u8]) -> Result<Array> {
    npy::parse(bytes).map_err(|reason| IoError::Format {
        path: name.as_ref().to_path_buf(),
        reason,
    })
}

/// Writes one `.npy` file.
/// The bytes of a version-1.0 `.npy` with this header dict, taken as given (not
/// checked), padded as numpy pads it, then `data`: how tests and fuzz seeds make
/// the malformed files a reader must refuse.
pub fn raw_npy(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut h = dict.as_bytes().to_vec();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend_from_slice(&(h.len() as u16).to_le_bytes());
    v.extend_from_slice(&h);
    v.extend_from_slice(data);
    v
}

pub fn write_npy(path: impl AsRef<Path>, a: &Array) -> Result<()> {
    let path = path.as_ref();
    let werr = |source| IoError::Write {
        path: path.to_path_buf(),
        source,
    };
    let bytes = npy_bytes(a).map_err(werr)?;
    write_atomic(path, &bytes).map_err(werr)
}

/// All arrays of an `.npz` file, by name.
#[derive(Debug, Clone, Default)]
pub struct Npz {
    pub path: PathBuf,
    pub arrays: BTreeMap<String, Array>,
    /// Members that are not numeric arrays, with the reason.
    pub unreadable: BTreeMap<String, String>,
}

impl Npz {
    /// Reads every array of an `.npz` file.
    pub fn read(path: impl AsRef<Path>) -> Result<Npz> {
        let path = path.as_ref().to_path_buf();
        let rerr = |source| IoError::Read {
            path: path.clone(),
            source,
        };
        let file = File::open(&path).map_err(rerr)?;
        let len = file.metadata().map_err(rerr)?.len();
        Npz::from_reader(path, BufReader::new(file), len)
    }

    /// Parses an `.npz` archive held in memory; `name` labels errors.
    pub fn from_bytes(name: impl AsRef<Path>, bytes: &[u8]) -> Result<Npz> {
        let name = name.as_ref().to_path_buf();
        Npz::from_reader(name, Cursor::new(bytes), bytes.len() as u64)
    }

    fn from_reader<R: Read + Seek>(path: PathBuf, reader: R, archive_len: u64) -> Result<Npz> {
        let fmt = |reason: String| IoError::Format {
            path: path.clone(),
            reason,
        };
        let mut zip = zip::ZipArchive::new(reader)
            .map_err(|e| fmt(format!("not an .npz (zip) archive: {e}")))?;
        let mut arrays = BTreeMap::new();
        let mut unreadable = BTreeMap::new();
        for i in 0..zip.len() {
            let mut f = zip
                .by_index(i)
                .map_err(|e| fmt(format!("archive member {i}: {e}")))?;
            let member = f
                .name()
                .map_err(|e| fmt(format!("archive member {i}: {e}")))?
                .to_string();
            let Some(name) = member.strip_suffix(".npy").map(str::to_string) else {
                continue;
            };
            let bytes = read_member(&mut f, &name, archive_len).map_err(fmt)?;
            match npy::parse(&bytes) {
                Ok(a) => {
                    arrays.insert(name, a);
                }
                // Kept for the error message if the array is asked for (e.g. a
                // 0-d unicode metadata string, which rill never needs).
                Err(reason) => {
                    unreadable.insert(name, reason);
                }
            }
        }
        Ok(Npz {
            path,
            arrays,
            unreadable,
        })
    }

    pub fn get(&self, name: &str) -> Result<&Array> {
        self.arrays.get(name).ok_or_else(|| IoError::Format {
            path: self.path.clone(),
            reason: match self.unreadable.get(name) {
                Some(why) => format!("array {name} cannot be read: {why}"),
                None => format!("no array named {name}"),
            },
        })
    }

    /// A float array as f32 with its shape.
    pub fn f32(&self, name: &str) -> Result<(Vec<usize>, Vec<f32>)> {
        let a = self.get(name)?;
        let v = a
            .to_f32()
            .ok_or_else(|| self.type_err(name, a, "a float"))?;
        Ok((a.shape.clone(), v))
    }

    /// An integer array as i64 with its shape.
    pub fn i64(&self, name: &str) -> Result<(Vec<usize>, Vec<i64>)> {
        let a = self.get(name)?;
        let v = a
            .to_i64()
            .ok_or_else(|| self.type_err(name, a, "an integer"))?;
        Ok((a.shape.clone(), v))
    }

    /// A bool array with its shape.
    pub fn bool(&self, name: &str) -> Result<(Vec<usize>, Vec<bool>)> {
        let a = self.get(name)?;
        match &a.data {
            Data::Bool(v) => Ok((a.shape.clone(), v.clone())),
            _ => Err(self.type_err(name, a, "a bool")),
        }
    }

    fn type_err(&self, name: &str, a: &Array, want: &str) -> IoError {
        IoError::Format {
            path: self.path.clone(),
            reason: format!("array {name} is {}, expected {want} array", a.kind()),
        }
    }
}

/// The bytes of one archive member, its declared size checked against what the
/// archive can really hold before allocating, and against what it really held after.
fn read_member<R: Read>(
    f: &mut zip::read::ZipFile<'_, R>,
    name: &str,
    archive_len: u64,
) -> std::result::Result<Vec<u8>, String> {
    let declared = f.size();
    let compressed = f.compressed_size();
    if compressed > archive_len {
        return Err(format!(
            "member {name} claims {compressed} compressed bytes, but the archive has only {archive_len} (corrupt or truncated file)"
        ));
    }
    let limit = match f.compression() {
        zip::CompressionMethod::Stored => compressed,
        zip::CompressionMethod::Deflated => compressed.saturating_mul(MAX_DEFLATE_RATIO),
        other => {
            return Err(format!(
                "member {name}: compression {other} is not supported (numpy writes stored or deflated members)"
            ))
        }
    };
    if declared > limit {
        return Err(format!(
            "member {name} claims {declared} bytes, more than its {compressed} stored bytes can hold (corrupt file)"
        ));
    }
    let cap = usize::try_from(declared).map_err(|_| {
        format!("member {name} claims {declared} bytes, more than this machine can address")
    })?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(cap)
        .map_err(|_| format!("member {name}: cannot allocate {declared} bytes"))?;
    f.take(declared.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("member {name}: {e}"))?;
    if bytes.len() as u64 != declared {
        return Err(format!(
            "member {name} holds {} bytes, but its header says {declared} (corrupt file)",
            bytes.len()
        ));
    }
    Ok(bytes)
}

/// Writes named arrays as a deflate-compressed `.npz` (readable by `np.load`).
pub fn write_npz<'a>(
    path: impl AsRef<Path>,
    arrays: impl IntoIterator<Item = (&'a str, &'a Array)>,
) -> Result<()> {
    let path = path.as_ref();
    let werr = |source| IoError::Write {
        path: path.to_path_buf(),
        source,
    };
    let (pending, file) = AtomicFile::create(path).map_err(werr)?;
    let mut zip = zip::ZipWriter::new(BufWriter::new(file));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    for (name, a) in arrays {
        let bytes = npy_bytes(a).map_err(werr)?;
        zip.start_file(format!("{name}.npy"), opts)
            .map_err(|e| werr(std::io::Error::other(e)))?;
        zip.write_all(&bytes).map_err(werr)?;
    }
    let mut w = zip.finish().map_err(|e| werr(std::io::Error::other(e)))?;
    w.flush().map_err(werr)?;
    drop(w);
    pending.commit().map_err(werr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npz_round_trip() {
        let dir = std::env::temp_dir().join(format!("rill-io-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = Array::new(vec![2, 3], Data::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.5]));
        let b = Array::new(vec![4], Data::I32(vec![6, 7, 8, 12293]));
        let c = Array::new(vec![2], Data::Bool(vec![true, false]));
        let p = dir.join("x.npz");
        write_npz(&p, [("a", &a), ("b", &b), ("c", &c)]).unwrap();
        let z = Npz::read(&p).unwrap();
        assert_eq!(z.get("a").unwrap(), &a);
        assert_eq!(z.get("b").unwrap(), &b);
        assert_eq!(z.get("c").unwrap(), &c);
        let q = dir.join("t.npy");
        write_npy(&q, &b).unwrap();
        assert_eq!(read_npy(&q).unwrap(), b);
        std::fs::write(&q, b"garbage").unwrap();
        assert!(matches!(read_npy(&q), Err(IoError::Format { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
