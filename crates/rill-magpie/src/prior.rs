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

#[cfg(test)]
mod tests {
    use super::*;

    fn step(p: &mut AttentionPrior, align: &[f32]) -> usize {
        p.alignment(std::iter::once(align));
        p.update()
    }

    #[test]
    fn window_follows_the_attended_position() {
        let mut p = AttentionPrior::new(20, 0.1, 5);
        assert!(p.row().is_none(), "no prior before the first step");
        let mut a = vec![0.0f32; 20];
        a[0] = 0.9; // position 0 is never chosen: the search starts at last_attended = 1
        a[3] = 0.5;
        assert_eq!(step(&mut p, &a), 3);
        let ones: Vec<usize> = (0..20).filter(|&i| p.row().unwrap()[i] == 1.0).collect();
        assert_eq!(ones, vec![2, 3, 4, 5, 6, 7, 8]);
        // Only the window [last, last + W) is searched, never backwards.
        a.fill(0.0);
        a[1] = 1.0;
        a[12] = 1.0;
        assert_eq!(step(&mut p, &a), 3, "first maximum of an all-equal window");
    }

    #[test]
    fn stuck_positions_are_left_and_suppressed() {
        let mut p = AttentionPrior::new(12, 0.1, 2);
        let a = vec![0.0f32; 12];
        // Zero alignment: the window's first position (= last) wins every time.
        for _ in 0..8 {
            assert_eq!(step(&mut p, &a), 1);
        }
        // Attended 8 times: the search starts one further.
        assert_eq!(step(&mut p, &a), 2);
        for _ in 0..9 {
            step(&mut p, &a);
        }
        // Position 2 reached 8 hits after 7 more steps, so the last two land on 3.
        assert_eq!(p.attended(), 3);
        assert_eq!((p.counter[1], p.counter[2], p.counter[3]), (8, 8, 2));
        // Short texts: the prior is all ones.
        let mut s = AttentionPrior::new(5, 0.1, 5);
        step(&mut s, &[0.0; 5]);
        assert_eq!(s.row().unwrap(), &[1.0; 5]);
        // Near the end the window is empty and the last position is taken.
        let mut e = AttentionPrior::new(6, 0.1, 5);
        e.last = 3;
        assert_eq!(step(&mut e, &[0.0; 6]), 5);
    }

    #[test]
    fn ten_hits_suppress_everything_before() {
        let mut p = AttentionPrior::new(30, 0.1, 3);
        p.last = 4;
        p.counter[4] = 7; // below 8: the search starts at 4
        let mut a = vec![0.0f32; 30];
        a[4] = 1.0;
        assert_eq!(step(&mut p, &a), 4);
        p.counter[4] = 9;
        p.last = 3;
        let mut b = vec![0.0f32; 30];
        b[4] = 1.0;
        assert_eq!(step(&mut p, &b), 4); // counter[4] = 10 now
        let row = p.row().unwrap();
        assert!(row[..=4].iter().all(|&v| v == 0.1), "{row:?}");
        assert!(row[5..=7].iter().all(|&v| v == 1.0));
    }
}
