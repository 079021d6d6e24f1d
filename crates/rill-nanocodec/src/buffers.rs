//! Activation buffers: channels-last rows `[hist + max_t][c]`, the causal history
//! rows in front of the current ones. The history rows of a convolution's input
//! buffer *are* that convolution's streaming state.

use rill_kernels::AVec;

/// Rows of `c` floats: `hist` history rows, then up to `max_t` current rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rows {
    pub hist: usize,
    pub max_t: usize,
    pub c: usize,
    pub data: AVec,
}

impl Rows {
    pub(crate) fn new(hist: usize, max_t: usize, c: usize) -> Rows {
        Rows {
            hist,
            max_t,
            c,
            data: AVec::zeros((hist + max_t) * c),
        }
    }

    /// Element offset of current row `t` (after the history).
    pub(crate) fn current(&self, t: usize) -> usize {
        (self.hist + t) * self.c
    }

    /// After a chunk of `t` current rows: the last `hist` rows become the history.
    pub(crate) fn shift_history(&mut self, t: usize) {
        if self.hist > 0 && t > 0 {
            let c = self.c;
            self.data.copy_within(t * c..(t + self.hist) * c, 0);
        }
    }

    pub(crate) fn history(&self) -> &[f32] {
        &self.data[..self.hist * self.c]
    }

    pub(crate) fn history_mut(&mut self) -> &mut [f32] {
        let n = self.hist * self.c;
        &mut self.data[..n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_shifts_the_last_rows_to_the_front() {
        let mut r = Rows::new(3, 4, 2);
        for (i, v) in r.data.iter_mut().enumerate() {
            *v = i as f32;
        }
        // 2 current rows: history = old history rows 2 + current rows 0, 1 (= buffer rows 2..5).
        r.shift_history(2);
        assert_eq!(r.history(), &[4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        r.shift_history(4);
        assert_eq!(r.history(), &[8.0, 9.0, 10.0, 11.0, 12.0, 13.0]);
        assert_eq!(r.data.as_ptr() as usize % 64, 0);
    }
}
