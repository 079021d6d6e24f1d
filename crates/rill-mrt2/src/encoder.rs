//! The conditioning encoder (spec §1.5, traps T5–T7): frame-wise, no transformer.
//!
//! ```text
//! mulan   = W_adapt · Σ_i E_mulan[tok[i] + 1031·i]          (12 style levels, SUM)
//! regular = mean_c E_reg[tok[12 + c] + offset[c]]            (132 channels, one flat table)
//! src     = LayerNorm((mulan + regular) / 2)
//! ```

use rill_kernels::{ops, ops_bf16, GemvScratch, Matrix, Ops, Pool};

use crate::conditioning::{CHANNELS, STYLE_LEVELS};
use crate::config::{MULAN_DIM, MULAN_ROWS, MULAN_VOCAB, REGULAR_ROWS};
use crate::error::ModelError;
use crate::layout::DEPTHFORMER;
use crate::loader::Loader;
use crate::precision::Role;

/// Per-channel vocabularies of the regular channels: 128 pitches (11), drums (9),
/// CFG musiccoca and notes (47 each), CFG drums (15).
fn regular_offsets() -> [usize; CHANNELS - STYLE_LEVELS] {
    let mut offsets = [0usize; CHANNELS - STYLE_LEVELS];
    let mut acc = 0;
    for (c, off) in offsets.iter_mut().enumerate() {
        *off = acc;
        acc += match c {
            0..=127 => 11,
            128 => 9,
            129 | 130 => 47,
            _ => 15,
        };
    }
    offsets
}

/// Encoder weights.
#[derive(Debug, Clone)]
pub struct Encoder {
    mulan_embedding: Matrix,
    mulan_adapter: Matrix,
    regular_embedding: Matrix,
    ln_scale: Vec<f32>,
    ln_bias: Vec<f32>,
    offsets: [usize; CHANNELS - STYLE_LEVELS],
    dim: usize,
    /// Activations rounded as upstream's bf16 compute rounds them.
    bf16: bool,
    ops: Ops,
}

/// Scratch of [`Encoder::encode`].
#[derive(Debug, Clone)]
pub struct EncoderScratch {
    row768: Vec<f32>,
    sum768: Vec<f32>,
    mulan: Vec<f32>,
    row: Vec<f32>,
    regular: Vec<f32>,
    gemv: GemvScratch,
}

impl Encoder {
    pub(crate) fn load(l: &Loader<'_>, dim: usize) -> Result<Self, ModelError> {
        let enc = format!("{DEPTHFORMER}/encoder/body");
        let mulan = format!("{enc}/layers_1/branched_mulan_embedder/mulan_embedder");
        Ok(Encoder {
            mulan_embedding: l.rows(
                &format!("{mulan}/mulan_dequantizer/embedding"),
                MULAN_ROWS,
                MULAN_DIM,
                Role::Embedding,
            )?,
            mulan_adapter: l.dense(
                &format!("{mulan}/depth_input_adapter/kernel"),
                MULAN_DIM,
                dim,
                Role::Encoder,
            )?,
            regular_embedding: l.rows(
                &format!("{enc}/layers_1/branched_regular_embedder/regular_embedder/embedding"),
                REGULAR_ROWS,
                dim,
                Role::RawTable,
            )?,
            ln_scale: l.vector(&format!("{enc}/encoder_ln/scale"), dim)?,
            ln_bias: l.vector(&format!("{enc}/encoder_ln/bias"), dim)?,
            offsets: regular_offsets(),
            dim,
            bf16: l.precision.computes_in_bf16(),
            ops: l.ops,
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn scratch(&self) -> EncoderScratch {
        EncoderScratch {
            row768: vec![0.0; MULAN_DIM],
            sum768: vec![0.0; MULAN_DIM],
            mulan: vec![0.0; self.dim],
            row: vec![0.0; self.dim],
            regular: vec![0.0; self.dim],
            gemv: GemvScratch::new(),
        }
    }

    /// Encodes the 144 conditioning tokens into the cross-attention source `out`.
    /// Token values outside their tables are clamped (they cannot come from
    /// [`crate::conditioning::Conditioning`]).
    pub fn encode(
        &self,
        tokens: &[i32; CHANNELS],
        out: &mut [f32],
        s: &mut EncoderScratch,
        pool: &Pool,
    ) {
        s.sum768.fill(0.0);
        for (i, &t) in tokens[..STYLE_LEVELS].iter().enumerate() {
            let row = (t.max(0) as usize + i * MULAN_VOCAB).min(MULAN_ROWS - 1);
            self.mulan_embedding.row_into(row, &mut s.row768);
            ops::add_in_place(&mut s.sum768, &s.row768);
        }
        // Upstream's `mx.sum` of the bf16 rows: f32 accumulation, one rounding.
        if self.bf16 {
            ops_bf16::round(&mut s.sum768);
        }
        self.ops.gemv(
            &self.mulan_adapter,
            &s.sum768,
            &mut s.mulan,
            &mut s.gemv,
            pool,
        );

        s.regular.fill(0.0);
        for (c, &t) in tokens[STYLE_LEVELS..].iter().enumerate() {
            let row = (t.max(0) as usize + self.offsets[c]).min(REGULAR_ROWS - 1);
            self.regular_embedding.row_into(row, &mut s.row);
            ops::add_in_place(&mut s.regular, &s.row);
        }
        // mx.mean = sum · (1/n), accumulated in f32.
        let inv = 1.0 / (CHANNELS - STYLE_LEVELS) as f32;
        if self.bf16 {
            for (m, r) in s.mulan.iter_mut().zip(&s.regular) {
                *m = ops_bf16::bf(ops_bf16::bf(*m + ops_bf16::bf(r * inv)) / 2.0);
            }
            ops_bf16::layer_norm(&s.mulan, &self.ln_scale, &self.ln_bias, 1e-6, out);
        } else {
            for (m, r) in s.mulan.iter_mut().zip(&s.regular) {
                *m = (*m + r * inv) / 2.0;
            }
            ops::layer_norm(&s.mulan, &self.ln_scale, &self.ln_bias, 1e-6, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_match_spec() {
        let o = regular_offsets();
        assert_eq!(o[0], 0);
        assert_eq!(o[1], 11);
        assert_eq!(o[127], 1397);
        assert_eq!(o[128], 1408);
        assert_eq!(o[129], 1417);
        assert_eq!(o[130], 1464);
        assert_eq!(o[131], 1511);
        // Worked example §1.8: pitch p masked (6) -> row 11p + 6; CFG tokens 27, 17, 9.
        assert_eq!(o[129] + 27, 1444);
        assert_eq!(o[130] + 17, 1481);
        assert_eq!(o[131] + 9, 1520);
    }
}
