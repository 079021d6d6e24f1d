//! Activation buffers of the decoder: `[group][time][freq][channel]` grids (NHWC per
//! group) with room for causal history rows and zero freq padding.
//!
//! Why this layout: every convolution reads, for one output position and one kernel
//! tap, a contiguous run of input channels. With the history rows stored in front
//! of the current rows and the freq padding stored as real zero columns, a tap is a
//! fixed element offset from the output position's base, so convolutions run as
//! implicit GEMMs without im2col copies (see `rill_kernels::conv::grid`). The history
//! rows *are* the streaming state of the layer that reads the grid.

pub(crate) use rill_kernels::AVec;

/// Shape of a [`Grid`]: `groups × (hist + max_t) × (pl + f + pr) × c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GridShape {
    pub groups: usize,
    /// Causal history rows kept in front of the current rows (the layer's state).
    pub hist: usize,
    /// Current rows the grid can hold (time rows per chunk).
    pub max_t: usize,
    pub f: usize,
    /// Zero freq columns left / right of the `f` interior columns.
    pub pl: usize,
    pub pr: usize,
    pub c: usize,
}

impl GridShape {
    pub(crate) fn raw(groups: usize, max_t: usize, f: usize, c: usize) -> GridShape {
        GridShape {
            groups,
            hist: 0,
            max_t,
            f,
            pl: 0,
            pr: 0,
            c,
        }
    }

    pub(crate) fn cols(&self) -> usize {
        self.pl + self.f + self.pr
    }
    pub(crate) fn rows(&self) -> usize {
        self.hist + self.max_t
    }
    /// Elements between consecutive time rows.
    pub(crate) fn row_stride(&self) -> usize {
        self.cols() * self.c
    }
    /// Elements between groups.
    pub(crate) fn group_stride(&self) -> usize {
        self.rows() * self.row_stride()
    }
    pub(crate) fn len(&self) -> usize {
        self.groups * self.group_stride()
    }

    /// Element offset of (group, buffer row, buffer column); rows count the history.
    pub(crate) fn at(&self, g: usize, row: usize, col: usize) -> usize {
        g * self.group_stride() + row * self.row_stride() + col * self.c
    }

    /// Element offset of current time row `t`, interior freq column `f`.
    pub(crate) fn interior(&self, g: usize, t: usize, f: usize) -> usize {
        self.at(g, self.hist + t, self.pl + f)
    }
}

/// A grid buffer (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grid {
    pub shape: GridShape,
    pub data: AVec,
}

impl Grid {
    pub(crate) fn new(shape: GridShape) -> Grid {
        Grid {
            shape,
            data: AVec::zeros(shape.len()),
        }
    }

    /// Element offset of (group, buffer row, buffer column); rows count the history.
    pub(crate) fn at(&self, g: usize, row: usize, col: usize) -> usize {
        self.shape.at(g, row, col)
    }

    /// Element offset of current time row `t`, interior freq column `f`.
    pub(crate) fn interior(&self, g: usize, t: usize, f: usize) -> usize {
        self.shape.interior(g, t, f)
    }

    /// After a chunk of `t` current rows: the last `hist` rows become the history.
    pub(crate) fn shift_history(&mut self, t: usize) {
        let s = self.shape;
        if s.hist == 0 {
            return;
        }
        let rs = s.row_stride();
        for g in 0..s.groups {
            let base = g * s.group_stride();
            self.data
                .copy_within(base + t * rs..base + (t + s.hist) * rs, base);
        }
    }

    /// The history rows without padding columns, `[groups, hist, f, c]` (for export).
    pub(crate) fn history(&self) -> Vec<f32> {
        let s = self.shape;
        let mut out = Vec::with_capacity(s.groups * s.hist * s.f * s.c);
        for g in 0..s.groups {
            for r in 0..s.hist {
                let o = self.at(g, r, s.pl);
                out.extend_from_slice(&self.data[o..o + s.f * s.c]);
            }
        }
        out
    }

    /// Inverse of [`Grid::history`]; `v` must hold `groups·hist·f·c` values.
    pub(crate) fn set_history(&mut self, v: &[f32]) {
        let s = self.shape;
        let run = s.f * s.c;
        debug_assert_eq!(v.len(), s.groups * s.hist * run);
        let mut src = v.chunks_exact(run);
        for g in 0..s.groups {
            for r in 0..s.hist {
                let o = self.at(g, r, s.pl);
                if let Some(chunk) = src.next() {
                    self.data[o..o + run].copy_from_slice(chunk);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_history_round_trip() {
        let shape = GridShape {
            groups: 2,
            hist: 2,
            max_t: 3,
            f: 4,
            pl: 1,
            pr: 2,
            c: 16,
        };
        let mut g = Grid::new(shape);
        assert_eq!(g.data.as_ptr() as usize % 64, 0);
        for (i, v) in g.data.iter_mut().enumerate() {
            *v = i as f32;
        }
        let last = g.at(1, 4, 1);
        let want = g.data[last];
        g.shift_history(3);
        // Row 4 (= t 2 of 3 current rows) is now history row 1.
        assert_eq!(g.data[g.at(1, 1, 1)], want);
        let h = g.history();
        let mut g2 = Grid::new(shape);
        g2.set_history(&h);
        assert_eq!(g2.history(), h);
        let c = g.clone();
        assert_eq!(c.data.as_ptr() as usize % 64, 0);
        assert_eq!(c, g);
    }
}
