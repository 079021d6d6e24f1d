//! Residual-vector-quantiser dequantisation (spec §4.1): the embedding of a frame is
//! the sum of one codebook row per level, `e = Σ_{k<12} CB[k][code_k]`, summed
//! level by level in f32 exactly as the reference (`mx.take` then `+`).

use rill_checkpoint::{layout, Checkpoint, TensorRef};

use crate::config::SPECTROSTREAM;
use crate::CodecError;

/// RVQ levels the decoder uses (the checkpoint stores 64; `truncation_level = 12`).
pub const LEVELS: usize = layout::RVQ_LEVELS;
/// Codes per level.
pub const CODES: usize = SPECTROSTREAM.codes;
/// Embedding width.
pub const DIM: usize = SPECTROSTREAM.embedding_dim;
/// Reserved ids below the first codebook in the language model's unique-id vocabulary.
pub const RESERVED_IDS: u32 = 6;

const NAME: &str = layout::RVQ_CODEBOOK;

/// The first [`LEVELS`] codebooks, `[level][code][dim]`.
#[derive(Clone)]
pub(crate) struct Codebook {
    table: Vec<f32>,
}

impl Codebook {
    pub(crate) fn load(ckpt: &Checkpoint) -> Result<Codebook, CodecError> {
        let t = ckpt.tensor(NAME)?;
        if t.shape.len() != 3 || t.shape[0] < LEVELS || t.shape[1..] != [CODES, DIM] {
            return Err(CodecError::TensorShape {
                name: NAME.to_string(),
                expected: vec![LEVELS, CODES, DIM],
                found: t.shape.to_vec(),
            });
        }
        // Read only the first 12 levels of the (usually 64-level) tensor.
        let n = LEVELS * CODES * DIM;
        let elem = t.bytes.len() / t.numel();
        let shape = [LEVELS, CODES, DIM];
        let head = TensorRef {
            name: t.name,
            dtype: t.dtype,
            shape: &shape,
            bytes: &t.bytes[..n * elem],
        };
        Ok(Codebook {
            table: head.to_f32()?,
        })
    }

    /// Codebook index of level `k`'s unique id: `(id − 6) mod 1024`, wrapping for ids
    /// below 6 like Python's `%` (never panics; range checks are the caller's job).
    pub(crate) fn code(id: u32) -> usize {
        (id.wrapping_sub(RESERVED_IDS) % CODES as u32) as usize
    }

    /// `out[256] = Σ_k CB[k][code(ids[k])]`.
    pub(crate) fn embed(&self, ids: &[u32; LEVELS], out: &mut [f32]) {
        assert_eq!(out.len(), DIM, "rvq embedding buffer");
        for (k, &id) in ids.iter().enumerate() {
            let row = &self.table[(k * CODES + Self::code(id)) * DIM..][..DIM];
            if k == 0 {
                out.copy_from_slice(row);
            } else {
                for (o, r) in out.iter_mut().zip(row) {
                    *o += r;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_wrap_like_python_mod() {
        assert_eq!(Codebook::code(6), 0);
        assert_eq!(Codebook::code(6 + 1024 * 3 + 17), 17);
        assert_eq!(Codebook::code(0), 1018); // (0 - 6) % 1024 in Python
        assert_eq!(Codebook::code(5), 1023);
        assert_eq!(Codebook::code(u32::MAX), ((u32::MAX - 6) % 1024) as usize);
    }
}
