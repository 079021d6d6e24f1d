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

    /// Codebook index of level `k`'s unique id: `(id − 6) mod 1024`, as the
    /// reference computes it (Python's `%`); [`check_ids`] has already rejected ids
    /// outside their level, so the wrap never happens on the decode paths.
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

/// The unique ids level `k` owns: `6 + 1024k .. 6 + 1024(k + 1)`.
pub fn level_ids(k: usize) -> std::ops::Range<u32> {
    let lo = RESERVED_IDS + (CODES * k) as u32;
    lo..lo + CODES as u32
}

/// Rejects a frame whose id for some level lies outside that level's range (a
/// reserved id, another level's id, or garbage): the reference would wrap it into
/// some code and decode noise without a word.
pub(crate) fn check_ids(ids: &[u32; LEVELS]) -> Result<(), CodecError> {
    for (level, &id) in ids.iter().enumerate() {
        let range = level_ids(level);
        if !range.contains(&id) {
            return Err(CodecError::TokenId { level, id, range });
        }
    }
    Ok(())
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

    #[test]
    fn ids_outside_their_level_are_rejected() {
        let good: [u32; LEVELS] = std::array::from_fn(|k| 6 + 1024 * k as u32 + 17);
        assert!(check_ids(&good).is_ok());
        let edges: [u32; LEVELS] = std::array::from_fn(|k| level_ids(k).end - 1);
        assert!(check_ids(&edges).is_ok());
        for (level, id) in [
            (0, 5),
            (0, 1030),
            (3, 6 + 1024 * 3 - 1),
            (11, u32::MAX),
            (5, 0),
        ] {
            let mut ids = good;
            ids[level] = id;
            match check_ids(&ids) {
                Err(CodecError::TokenId {
                    level: l, id: i, ..
                }) => {
                    assert_eq!((l, i), (level, id))
                }
                other => panic!("level {level} id {id}: {other:?}"),
            }
        }
    }
}
