//! The music tower: a ViT over the log-mel spectrogram of one 10 s clip (`[992][128]`,
//! 496 patches of 16×16) to the pooled 768-float audio embedding (DBraun's
//! `AudioEncoder`; the patch bias and the position embedding are one constant).

use rill_kernels::matmul::MatmulScratch;

use crate::tower::{Ctx, Linear, Tower, DIM};
use crate::{Error, Weights};

/// Patches per clip: a 62 (time) × 8 (mel) grid.
pub const PATCHES: usize = 496;
/// Values per patch (16 frames × 16 mel bins).
pub const PATCH: usize = 256;

/// Patch projection, position embedding and the shared tower.
pub struct AudioTower {
    patch_proj: Linear,
    pos_emb: Vec<f32>,
    tower: Tower,
}

impl AudioTower {
    /// Takes `audio.*` from `w`.
    pub fn take(w: &mut Weights) -> Result<AudioTower, Error> {
        Ok(AudioTower {
            patch_proj: Linear::in_major(
                DIM,
                PATCH,
                &w.take("audio.patch_proj.kernel", &[PATCH, DIM])?,
                None,
            ),
            pos_emb: w.take("audio.pos_emb", &[PATCHES, DIM])?,
            tower: Tower::take(w, "audio")?,
        })
    }

    /// The tower's input rows for `patches` (`[496][256]`).
    pub fn input_rows(&self, ctx: Ctx, patches: &[f32], s: &mut MatmulScratch) -> Vec<f32> {
        assert_eq!(patches.len(), PATCHES * PATCH, "patches of one clip");
        let mut x = self.patch_proj.apply(ctx, patches, s);
        for (a, b) in x.iter_mut().zip(&self.pos_emb) {
            *a += b;
        }
        x
    }

    /// The pooled embedding of one clip's patches.
    pub fn embed(&self, ctx: Ctx, patches: &[f32], s: &mut MatmulScratch) -> Vec<f32> {
        let x = self.input_rows(ctx, patches, s);
        self.tower.forward(ctx, x, s)
    }

    /// The rows after the first `n` layers (for parity tests).
    pub fn rows_after(
        &self,
        ctx: Ctx,
        patches: &[f32],
        n: usize,
        s: &mut MatmulScratch,
    ) -> Vec<f32> {
        let mut x = self.input_rows(ctx, patches, s);
        self.tower.run_layers(ctx, &mut x, n, s);
        x
    }
}
