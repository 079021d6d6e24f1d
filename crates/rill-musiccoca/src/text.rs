//! The text tower: token ids (SOS first, padding excluded) to the pooled 768-float
//! text embedding, not normalised (DBraun's `TextEncoder`).

use rill_kernels::matmul::MatmulScratch;

use crate::tower::{Ctx, Tower, DIM};
use crate::{Error, Weights};

/// Longest input the tower takes, SOS included (upstream's `MAX_TEXT_LENGTH`).
pub const MAX_TOKENS: usize = 128;

/// Token and position embeddings and the shared tower.
pub struct TextTower {
    token_emb: Vec<f32>,
    vocab: usize,
    pos_emb: Vec<f32>,
    tower: Tower,
}

impl TextTower {
    /// Takes `text.*` from `w`; the vocabulary size is the embedding's row count.
    pub fn take(w: &mut Weights) -> Result<TextTower, Error> {
        let vocab = w
            .shape_of("text.token_emb")
            .and_then(|s| s.first().copied())
            .unwrap_or(0);
        Ok(TextTower {
            token_emb: w.take("text.token_emb", &[vocab, DIM])?,
            vocab,
            pos_emb: w.take("text.pos_emb", &[MAX_TOKENS, DIM])?,
            tower: Tower::take(w, "text")?,
        })
    }

    /// The tower's input rows for `ids` (1 ..= 128 ids, each below the vocabulary).
    pub fn input_rows(&self, ids: &[u32]) -> Result<Vec<f32>, Error> {
        if ids.is_empty() || ids.len() > MAX_TOKENS {
            return Err(Error::Input(format!(
                "the text tower takes 1 to {MAX_TOKENS} tokens, got {}",
                ids.len()
            )));
        }
        let mut x = vec![0.0f32; ids.len() * DIM];
        for (t, (&id, row)) in ids.iter().zip(x.chunks_exact_mut(DIM)).enumerate() {
            let id = id as usize;
            if id >= self.vocab {
                return Err(Error::Input(format!(
                    "token id {id} is outside the text tower's vocabulary of {}",
                    self.vocab
                )));
            }
            let e = &self.token_emb[id * DIM..][..DIM];
            let p = &self.pos_emb[t * DIM..][..DIM];
            for ((o, a), b) in row.iter_mut().zip(e).zip(p) {
                *o = a + b;
            }
        }
        Ok(x)
    }

    /// The pooled text embedding of `ids` (the real positions only).
    pub fn embed(&self, ctx: Ctx, ids: &[u32], s: &mut MatmulScratch) -> Result<Vec<f32>, Error> {
        let x = self.input_rows(ids)?;
        Ok(self.tower.forward(ctx, x, s))
    }

    /// The rows after the first `n` layers (for parity tests).
    pub fn rows_after(
        &self,
        ctx: Ctx,
        ids: &[u32],
        n: usize,
        s: &mut MatmulScratch,
    ) -> Result<Vec<f32>, Error> {
        let mut x = self.input_rows(ids)?;
        self.tower.run_layers(ctx, &mut x, n, s);
        Ok(x)
    }
}
