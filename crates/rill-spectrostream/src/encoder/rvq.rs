//! Greedy residual vector quantisation (upstream
//! `ResidualVectorQuantizer.embeddings_to_codes`, `modeling.py:875-899`): per level,
//! `d = (‖r‖² − 2·r·E_kᵀ) + ‖E_k‖²` in f32, the code is the first index of the least
//! `d`, and `r ← r − E_k[code]`. The dot products run on the conv kernels (a 1×1
//! convolution with `n = 1024`).

use rill_checkpoint::{layout, Checkpoint};
use rill_kernels::{Isa, Pool};

use crate::kernels::{gemm, Blocking, Epilogue, Job, Packed, RowMap};
use crate::rvq::{CODES, DIM};
use crate::CodecError;

/// RVQ levels upstream's encoder emits (`encoded_truncation_level = None`: all 64).
pub const ENCODED_LEVELS: usize = 64;

/// The codebooks, their squared norms, and each level packed as a `[256, 1024]` GEMM.
pub(crate) struct Quantizer {
    levels: usize,
    table: Vec<f32>,
    norms: Vec<f32>,
    packed: Vec<Packed>,
}

impl Quantizer {
    /// Every level of `params/soundstream/quantizer/embedding` (`[L ≤ 64, 1024, 256]`).
    pub(crate) fn load(ckpt: &Checkpoint) -> Result<Quantizer, CodecError> {
        let name = layout::RVQ_CODEBOOK;
        let t = ckpt.tensor(name)?;
        let levels = t.shape.first().copied().unwrap_or(0);
        if t.shape.len() != 3
            || !(1..=ENCODED_LEVELS).contains(&levels)
            || t.shape[1..] != [CODES, DIM]
        {
            return Err(CodecError::TensorShape {
                name: name.to_string(),
                expected: vec![ENCODED_LEVELS, CODES, DIM],
                found: t.shape.to_vec(),
            });
        }
        let table = t.to_f32()?;
        let norms = table
            .chunks_exact(DIM)
            .map(|e| e.iter().fold(0f32, |s, v| s + v * v))
            .collect();
        let zero = vec![0f32; CODES];
        let packed = table
            .chunks_exact(CODES * DIM)
            .map(|cb| {
                // [cin = 256][n = 1024]: the transposed codebook.
                let mut w = vec![0f32; DIM * CODES];
                for (code, e) in cb.chunks_exact(DIM).enumerate() {
                    for (d, &v) in e.iter().enumerate() {
                        w[d * CODES + code] = v;
                    }
                }
                Packed::new(&w, vec![0], DIM, CODES, &zero)
            })
            .collect();
        Ok(Quantizer {
            levels,
            table,
            norms,
            packed,
        })
    }

    pub(crate) fn levels(&self) -> usize {
        self.levels
    }

    /// `[n, levels]` codes of `frames` (`[n, 256]`, finite; `levels ≤ self.levels`). A
    /// frame whose squared distances overflow f32 (audio far beyond full scale) is an
    /// error: every code would tie.
    pub(crate) fn quantize(
        &self,
        isa: Isa,
        frames: &[f32],
        levels: usize,
        pool: &Pool,
    ) -> Result<Vec<u16>, CodecError> {
        let n = frames.len() / DIM;
        let mut res = frames.to_vec();
        let mut dots = vec![0f32; n * CODES];
        let mut codes = vec![0u16; n * levels];
        for k in 0..levels {
            let job = Job {
                w: &self.packed[k],
                rows: RowMap::strided(n, 0, DIM, 0, CODES),
                input: &res,
                epi: Epilogue::Store,
            };
            gemm(isa, Blocking::Grid, &[job], &mut dots, pool);
            let cb = &self.table[k * CODES * DIM..][..CODES * DIM];
            let norms = &self.norms[k * CODES..][..CODES];
            for (i, r) in res.chunks_exact_mut(DIM).enumerate() {
                let rr = r.iter().fold(0f32, |s, v| s + v * v);
                if !rr.is_finite() {
                    return Err(CodecError::BadInput(format!(
                        "frame {i}: the encoder output is too large to quantise (|r|² = {rr})"
                    )));
                }
                let mut best = (f32::INFINITY, 0usize);
                for (j, (&dot, &ee)) in dots[i * CODES..][..CODES].iter().zip(norms).enumerate() {
                    let d = (rr - 2.0 * dot) + ee;
                    if d < best.0 {
                        best = (d, j);
                    }
                }
                codes[i * levels + k] = best.1 as u16;
                let e = &cb[best.1 * DIM..][..DIM];
                r.iter_mut().zip(e).for_each(|(x, v)| *x -= v);
            }
        }
        Ok(codes)
    }
}
