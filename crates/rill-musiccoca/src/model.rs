//! MusicCoCa assembled: the towers, the mapper and the quantizer on one SIMD tier.

use rill_kernels::matmul::MatmulScratch;
use rill_kernels::{Isa, Ops, Pool};

use crate::audio_tower::AudioTower;
use crate::mapper::Mapper;
use crate::quantizer::{Quantized, Quantizer};
use crate::text::TextTower;
use crate::tower::{Ctx, DIM};
use crate::{Error, Weights};

/// The style model's networks (the tokenizer and the audio frontend are separate).
pub struct MusicCoCa {
    ops: Ops,
    pub text: TextTower,
    pub audio: AudioTower,
    pub mapper: Mapper,
    pub quantizer: Quantizer,
}

impl MusicCoCa {
    /// Builds every network from `w` (DBraun's keys), running on tier `isa`.
    pub fn from_weights(mut w: Weights, isa: Isa) -> Result<MusicCoCa, Error> {
        Ok(MusicCoCa {
            ops: Ops::new(isa),
            text: TextTower::take(&mut w)?,
            audio: AudioTower::take(&mut w)?,
            mapper: Mapper::take(&mut w)?,
            quantizer: Quantizer::take(&mut w)?,
        })
    }

    /// The kernels' context for `pool`.
    pub fn ctx<'a>(&self, pool: &'a Pool) -> Ctx<'a> {
        Ctx {
            ops: self.ops,
            pool,
        }
    }

    /// The pooled text embedding (not normalised) of `ids` (SOS first, no padding).
    pub fn embed_ids(&self, ids: &[u32], pool: &Pool) -> Result<Vec<f32>, Error> {
        self.text
            .embed(self.ctx(pool), ids, &mut MatmulScratch::new())
    }

    /// The mapper's output for `text` and `noise`, L2-normalised (upstream's
    /// `embed_style(..., use_mapper=True)`).
    pub fn map(&self, text: &[f32], noise: &[f32], pool: &Pool) -> Result<Vec<f32>, Error> {
        check_dim("text embedding", text)?;
        check_dim("mapper noise", noise)?;
        let raw = self
            .mapper
            .run(self.ctx(pool), text, noise, 8, &mut MatmulScratch::new());
        let norm = raw.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            return Err(Error::Input(
                "the mapper's output has no direction (norm 0)".into(),
            ));
        }
        Ok(raw.iter().map(|&v| (v as f64 / norm) as f32).collect())
    }

    /// The audio embedding of one clip's patches (`[496][256]`).
    pub fn embed_patches(&self, patches: &[f32], pool: &Pool) -> Vec<f32> {
        self.audio
            .embed(self.ctx(pool), patches, &mut MatmulScratch::new())
    }

    /// The 12 style tokens of an embedding.
    pub fn quantize(&self, embedding: &[f32], pool: &Pool) -> Result<Quantized, Error> {
        self.quantizer.quantize(self.ops, pool, embedding)
    }
}

fn check_dim(what: &str, v: &[f32]) -> Result<(), Error> {
    if v.len() != DIM {
        return Err(Error::Input(format!(
            "{what}: {} values, expected {DIM}",
            v.len()
        )));
    }
    Ok(())
}
