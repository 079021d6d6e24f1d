//! The 12-level greedy residual vector quantizer (`pretrained_vector_quantizer.tflite`,
//! DBraun's `EmbeddingQuantizer`): each level takes the codebook entry nearest the
//! residual, then subtracts it.

use rill_kernels::{GemvScratch, Matrix, Ops, Pool, WeightFormat};

use crate::tower::DIM;
use crate::{Error, Weights};

/// Levels (style tokens per embedding).
pub const LEVELS: usize = 12;
/// Entries per codebook.
pub const CODES: usize = 1024;

/// The codebooks and their squared norms.
pub struct Quantizer {
    books: Vec<Matrix>,
    norms: Vec<Vec<f64>>,
    raw: Vec<f32>,
}

/// One quantisation: the tokens and, per level, the gap between the second-best and
/// the best squared distance (a small gap is a near-tie).
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    pub tokens: [u16; LEVELS],
    pub margins: [f64; LEVELS],
}

impl Quantizer {
    /// Takes `quantizer.codebooks` `[12,1024,768]` from `w`.
    pub fn take(w: &mut Weights) -> Result<Quantizer, Error> {
        let raw = w.take("quantizer.codebooks", &[LEVELS, CODES, DIM])?;
        let books = raw
            .chunks_exact(CODES * DIM)
            .map(|c| Matrix::from_f32(CODES, DIM, c.to_vec(), WeightFormat::F32))
            .collect();
        let norms = raw
            .chunks_exact(CODES * DIM)
            .map(|c| {
                c.chunks_exact(DIM)
                    .map(|e| e.iter().map(|&v| v as f64 * v as f64).sum())
                    .collect()
            })
            .collect();
        Ok(Quantizer { books, norms, raw })
    }

    /// Entry `code` of level `level`.
    pub fn entry(&self, level: usize, code: usize) -> &[f32] {
        &self.raw[(level * CODES + code) * DIM..][..DIM]
    }

    /// The greedy tokens of `embedding` (768 floats). Distances `‖c‖² − 2·r·c` are
    /// compared in f64 (the constant `‖r‖²` cannot change the choice); the dot
    /// products are f32 GEMVs.
    pub fn quantize(&self, ops: Ops, pool: &Pool, embedding: &[f32]) -> Result<Quantized, Error> {
        if embedding.len() != DIM || embedding.iter().any(|v| !v.is_finite()) {
            return Err(Error::Input(format!(
                "a style embedding is {DIM} finite floats (got {} values{})",
                embedding.len(),
                if embedding.iter().any(|v| !v.is_finite()) {
                    ", not all finite"
                } else {
                    ""
                }
            )));
        }
        let mut r = embedding.to_vec();
        let mut dots = vec![0.0f32; CODES];
        let mut s = GemvScratch::default();
        let mut q = Quantized {
            tokens: [0; LEVELS],
            margins: [0.0; LEVELS],
        };
        for level in 0..LEVELS {
            ops.gemv(&self.books[level], &r, &mut dots, &mut s, pool);
            let (mut best, mut d1, mut d2) = (0usize, f64::INFINITY, f64::INFINITY);
            for (code, (&dot, &norm)) in dots.iter().zip(&self.norms[level]).enumerate() {
                let d = norm - 2.0 * dot as f64;
                if d < d1 {
                    (best, d2, d1) = (code, d1, d);
                } else if d < d2 {
                    d2 = d;
                }
            }
            q.tokens[level] = best as u16;
            q.margins[level] = d2 - d1;
            for (ri, ci) in r.iter_mut().zip(self.entry(level, best)) {
                *ri -= ci;
            }
        }
        Ok(q)
    }
}
