//! Random-weight checkpoints from the portable recipe (`shared/fixtures/mrt2/README.md` §1).
//!
//! Every value is a pure function of (weights seed, tensor name, flat index, mean, std):
//! `key = fnv1a64("{seed}/{name}")`, `z = splitmix64(key + i)`,
//! `u = (f64(z >> 11) + 0.5)·2⁻⁵³`, `v = mean + (std·√3)·(2u − 1)`, `value = v as f32`.
//! All integer arithmetic wraps, all float arithmetic is plain IEEE f64 (never fused),
//! so the output is bit-identical to the oracle's numpy implementation. The file
//! written here is byte-identical to the oracle's `synth_checkpoint.py` output.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc;

use sha2::{Digest, Sha256};

use crate::error::{CheckpointError, Result};
use crate::layout::TensorSpec;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// √3 as the exact f64 the recipe uses (bits 0x3ffbb67ae8584caa).
const SQRT3: f64 = 1.732_050_807_568_877_2;
const TWO_M53: f64 = 1.0 / 9_007_199_254_740_992.0;

pub fn fnv1a64(data: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The per-tensor key: fnv1a64 of `"{seed}/{name}"`.
pub fn tensor_key(seed: u64, name: &str) -> u64 {
    fnv1a64(format!("{seed}/{name}").as_bytes())
}

/// Fills `out` with the values of flat indices `start..start+out.len()`.
pub fn fill_values(key: u64, start: u64, mean: f64, std: f64, out: &mut [f32]) {
    let a = std * SQRT3;
    for (j, o) in out.iter_mut().enumerate() {
        let z = splitmix64(key.wrapping_add(start + j as u64));
        let u = ((z >> 11) as f64 + 0.5) * TWO_M53;
        // Written as separate operations so the compiler cannot fuse them.
        let w = 2.0 * u - 1.0;
        let v = mean + a * w;
        *o = v as f32;
    }
}

/// One tensor of a synthetic checkpoint: its name, shape and the mean and std of
/// the uniform distribution its values come from (a layout's [`TensorSpec`], or
/// the oracle's manifest entry).
#[derive(Debug, Clone, PartialEq)]
pub struct SynthTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub mean: f64,
    pub std: f64,
}

impl SynthTensor {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

impl From<&TensorSpec> for SynthTensor {
    fn from(spec: &TensorSpec) -> Self {
        let (mean, std) = spec.init.mean_std();
        SynthTensor {
            name: spec.name.clone(),
            shape: spec.shape.clone(),
            mean,
            std,
        }
    }
}

/// All values of one tensor of a synthetic checkpoint.
pub fn tensor_values(seed: u64, t: &SynthTensor) -> Vec<f32> {
    let mut out = vec![0f32; t.numel()];
    fill_values_parallel(tensor_key(seed, &t.name), 0, t.mean, t.std, &mut out);
    out
}

/// Like [`fill_values`], split over the available cores.
pub fn fill_values_parallel(key: u64, start: u64, mean: f64, std: f64, out: &mut [f32]) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || out.len() < (1 << 16) {
        fill_values(key, start, mean, std, out);
        return;
    }
    let chunk = out.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (t, part) in out.chunks_mut(chunk).enumerate() {
            let off = start + (t * chunk) as u64;
            s.spawn(move || fill_values(key, off, mean, std, part));
        }
    });
}

/// Which synthetic file: the model name its header records, the weights seed, and
/// the sha256 of the whole file if the oracle made the same file (then
/// [`write_checkpoint`] checks its output against it). The model crate that owns
/// the layout supplies it (`rill_mrt2::ModelKind::synth_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthFile<'a> {
    pub model: &'a str,
    pub seed: u64,
    pub oracle_sha256: Option<&'a str>,
}

/// The canonical header JSON (compact, space-padded to a multiple of 8), as the
/// oracle's `synth_checkpoint.py` writes it.
pub fn header_json(file: &SynthFile, tensors: &[SynthTensor]) -> Vec<u8> {
    let mut s = String::new();
    s.push_str("{\"__metadata__\":{\"format\":\"magenta-rt mrt2 JAX-layout (params/...) portable-init oracle checkpoint\",");
    s.push_str(&format!(
        "\"model\":\"{}\",\"weights_seed\":\"{}\",",
        file.model, file.seed
    ));
    s.push_str(
        "\"init\":\"portable_init v1 (fnv1a64 + splitmix64 uniform, see portable_init.py)\"}",
    );
    let mut off = 0usize;
    for t in tensors {
        let n = 4 * t.numel();
        let shape = t
            .shape
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",");
        s.push_str(&format!(
            ",\"{}\":{{\"dtype\":\"F32\",\"shape\":[{shape}],\"data_offsets\":[{off},{}]}}",
            t.name,
            off + n
        ));
        off += n;
    }
    s.push('}');
    let mut b = s.into_bytes();
    while !b.len().is_multiple_of(8) {
        b.push(b' ');
    }
    b
}

/// Bytes of the tensor data of a synthetic checkpoint (f32 values).
fn data_bytes(tensors: &[SynthTensor]) -> u64 {
    tensors.iter().map(|t| 4 * t.numel() as u64).sum()
}

/// Size of the whole synthetic checkpoint file: header length, header, data.
pub fn file_len(file: &SynthFile, tensors: &[SynthTensor]) -> u64 {
    8 + header_json(file, tensors).len() as u64 + data_bytes(tensors)
}

/// Summary of a written checkpoint.
#[derive(Debug, Clone)]
pub struct SynthSummary {
    pub tensors: usize,
    pub params: u64,
    pub bytes: u64,
    /// sha256 of the whole file, lowercase hex.
    pub sha256: String,
    /// Whether the oracle made this file too (then `sha256` equals its hash).
    pub oracle_checked: bool,
}

/// Writes the synthetic checkpoint `file` (its `tensors`, in file order) to `path`.
///
/// The data goes to `path` + `.partial` first and is renamed at the end, so an
/// interrupted run never leaves a truncated file under the final name.
/// `progress(done_bytes, total_bytes)` is called after every chunk. For a file
/// the oracle synthesised too (`file.oracle_sha256`) the file must hash to the
/// oracle's sha256; otherwise it is removed and the result is an error.
pub fn write_checkpoint(
    file: &SynthFile,
    tensors: &[SynthTensor],
    path: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SynthSummary> {
    let header = header_json(file, tensors);
    let (seed, oracle) = (file.seed, file.oracle_sha256);
    let total = data_bytes(tensors);
    let io = |source| CheckpointError::Write {
        path: path.to_path_buf(),
        source,
    };
    let (pending, out) = rill_io::AtomicFile::create(path).map_err(io)?;
    let mut sha = Sha256::new();
    let len = (header.len() as u64).to_le_bytes();
    sha.update(len);
    sha.update(&header);
    // The writes (disk-bound: ≈ 60 % of the time when made in turn, timed on
    // mrt2_small) run on their own thread while the next chunk is generated and
    // hashed; two byte buffers go round between the two.
    const CHUNK: usize = 1 << 22;
    let mut buf = vec![0f32; CHUNK];
    let mut spare = vec![vec![0u8; 4 * CHUNK]; 2];
    let (to_writer, filled) = mpsc::sync_channel::<Vec<u8>>(1);
    let (to_filler, empty) = mpsc::channel::<Vec<u8>>();
    let head = [&len[..], &header[..]];
    let written = std::thread::scope(|s| -> std::io::Result<()> {
        let writer = s.spawn(move || -> std::io::Result<()> {
            let mut w = BufWriter::with_capacity(1 << 22, out);
            for part in head {
                w.write_all(part)?;
            }
            for bytes in filled {
                w.write_all(&bytes)?;
                // The filler may have stopped early; nothing to hand back then.
                let _ = to_filler.send(bytes);
            }
            w.flush()
        });
        let mut done = 0u64;
        'tensors: for t in tensors {
            let (mean, std) = (t.mean, t.std);
            let key = tensor_key(seed, &t.name);
            let n = t.numel();
            let mut start = 0usize;
            while start < n {
                let len = CHUNK.min(n - start);
                // A failed write ends the writer, and with it the buffers' return.
                let Some(mut bytes) = spare.pop().or_else(|| empty.recv().ok()) else {
                    break 'tensors;
                };
                fill_values_parallel(key, start as u64, mean, std, &mut buf[..len]);
                bytes.resize(4 * len, 0);
                for (dst, v) in bytes.chunks_exact_mut(4).zip(&buf[..len]) {
                    dst.copy_from_slice(&v.to_le_bytes());
                }
                sha.update(&bytes);
                if to_writer.send(bytes).is_err() {
                    break 'tensors;
                }
                start += len;
                done += 4 * len as u64;
                progress(done, total);
            }
        }
        drop(to_writer);
        writer
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    });
    written.map_err(io)?;
    let sha256: String = sha.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if let Some(want) = oracle.filter(|&want| want != sha256) {
        // Dropping `pending` removes the partial file.
        return Err(CheckpointError::SynthMismatch {
            path: path.to_path_buf(),
            found: sha256,
            expected: want.to_string(),
        });
    }
    pending.commit().map_err(io)?;
    Ok(SynthSummary {
        tensors: tensors.len(),
        params: total / 4,
        bytes: 8 + header.len() as u64 + total,
        sha256,
        oracle_checked: oracle.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_check_values() {
        // From portable_init_test_vectors_seed0.json.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
        assert_eq!(splitmix64(0), 0xe220a8397b1dcdaf);
        assert_eq!(splitmix64(1), 0x910a2dec89025cc1);
        assert_eq!(splitmix64(u64::MAX), 0xe4d971771b652c20);
        assert_eq!(splitmix64(0x123456789abcdef0), 0x161922c645ce50e8);
        assert_eq!(SQRT3.to_bits(), 0x3ffbb67ae8584caa);
    }
}
