//! The inference attention prior (spec §4.4; `magpietts.py:2649-2768`, first-chunk
//! path): after each step the text position the decoder attends to is estimated from
//! the cross-attention probabilities of the newest row, and the next step's
//! cross-attention is multiplied by a window around it (`eps` elsewhere).

/// Prior state of one utterance (the conditional row; the CFG row needs none).
#[derive(Debug, Clone)]
pub struct AttentionPrior {
    text_len: usize,
    eps: f32,
    lookahead: usize,
    /// Newest attended text position (`last_attended[-1]`, starts at 1).
    last: usize,
    /// Times each text position was attended.
    counter: Vec<u32>,
    /// The prior row for the next step.
    row: Vec<f32>,
    /// Alignment scratch (mean over layers).
    align: Vec<f32>,
    active: bool,
}

impl AttentionPrior {
    pub fn new(text_len: usize, eps: f32, lookahead: usize) -> Self {
        AttentionPrior {
            text_len,
            eps,
            lookahead,
            last: 1,
            counter: vec![0; text_len],
            row: vec![eps; text_len],
            align: vec![0.0; text_len],
            active: false,
        }
    }

    /// The prior row for the next decoder call, once one was computed.
    pub fn row(&self) -> Option<&[f32]> {
        self.active.then_some(&self.row[..])
    }

    /// The last attended text position.
    pub fn attended(&self) -> usize {
        self.last
    }

    /// The mean of `layer_probs` (each `T`), as the alignment scores.
    pub fn alignment<'a>(&mut self, layer_probs: impl Iterator<Item = &'a [f32]>) -> &[f32] {
        self.align.fill(0.0);
        let mut n = 0usize;
        for p in layer_probs {
            for (a, &v) in self.align.iter_mut().zip(p) {
                *a += v;
            }
            n += 1;
        }
        let n = n.max(1) as f32;
        for a in self.align.iter_mut() {
            *a /= n;
        }
        &self.align
    }

    /// Updates from the alignment scores of this step (call [`Self::alignment`] first);
    /// returns the attended position.
    pub fn update(&mut self) -> usize {
        let t_len = self.text_len;
        let mut last = self.last;
        if self.counter.get(last).copied().unwrap_or(0) >= 8 {
            last += 1;
        }
        let end = (last + self.lookahead).min(t_len.saturating_sub(3));
        let t = if last >= end {
            t_len - 1
        } else {
            let w = &self.align[last..end];
            let mut best = 0;
            for (i, &v) in w.iter().enumerate() {
                if v > w[best] {
                    best = i;
                }
            }
            last + best
        };
        self.counter[t] += 1;
        self.last = t;
        let eps = self.eps;
        self.row.fill(eps);
        if t_len <= 5 {
            self.row.fill(1.0);
        } else {
            self.row[t.saturating_sub(1).max(1)] = 1.0;
            self.row[t] = 1.0;
            for d in 1..=self.lookahead {
                self.row[(t + d).min(t_len - 1)] = 1.0;
            }
        }
        for p in 0..t_len {
            if self.counter[p] >= 10 {
                self.row[..=p].fill(eps);
            }
        }
        self.active = true;
        t
    }
}
