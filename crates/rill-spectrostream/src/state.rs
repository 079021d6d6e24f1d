//! Per-stream codec state, owned by the host (the [`crate::Codec`] is immutable).
//!
//! The streaming state proper is about 1.03 M floats (19 arrays):
//! * the causal history rows of every convolution input grid (`…/input`,
//!   `[groups, rows, freq, channels]`; transposed convolutions keep input frames,
//!   see `conv.rs`),
//! * the lookahead countdown (`lookahead/countdown`, starts at 5: the first 4 STFT
//!   frames are masked),
//! * the inverse-STFT overlap-add tail (`inverse_stft/overlap_add_tail`, `[480, 2]`).
//!
//! Everything else in a `CodecState` is preallocated scratch for one chunk of codec
//! frames, so [`crate::Codec::step`] allocates nothing.

use rill_checkpoint::state_arrays::match_state_arrays;

use crate::decoder::Buffers;
use crate::istft::{IstftScratch, HOP};
use crate::CodecError;

/// Lookahead of the decoder in STFT frames (`decoder_lookahead · time stride`).
pub(crate) const LOOKAHEAD: i32 = 4;

const COUNTDOWN: &str = "lookahead/countdown";
const OLA_TAIL: &str = "inverse_stft/overlap_add_tail";

/// The state of one decode stream (see the module doc).
#[derive(Clone)]
pub struct CodecState {
    pub(crate) bufs: Buffers,
    /// Lookahead countdown: STFT frames still to be masked, plus one.
    pub(crate) countdown: i32,
    /// `[480][2]` overlap-add tail of the inverse STFT.
    pub(crate) tail: Vec<f32>,
    pub(crate) istft: IstftScratch,
}

impl std::fmt::Debug for CodecState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodecState")
            .field("chunk_frames", &self.bufs.max_frames)
            .field("countdown", &self.countdown)
            .finish_non_exhaustive()
    }
}

/// Equal streaming state (history rows, countdown, overlap-add tail); scratch is ignored.
impl PartialEq for CodecState {
    fn eq(&self, other: &CodecState) -> bool {
        self.export() == other.export()
    }
}

impl CodecState {
    pub(crate) fn new(bufs: Buffers, istft: IstftScratch) -> CodecState {
        CodecState {
            bufs,
            countdown: LOOKAHEAD + 1,
            tail: vec![0.0; HOP * 2],
            istft,
        }
    }

    /// Names and shapes of the state arrays in [`CodecState::export`] order, without
    /// copying the ~1 M values (what [`CodecState::import`] checks against).
    fn layout(&self) -> Vec<(String, Vec<usize>)> {
        let mut v: Vec<_> = self
            .bufs
            .state_grids()
            .into_iter()
            .map(|(name, g, _)| {
                let s = g.shape;
                (name, vec![s.groups, s.hist, s.f, s.c])
            })
            .collect();
        v.push((COUNTDOWN.to_string(), vec![1]));
        v.push((OLA_TAIL.to_string(), vec![HOP, 2]));
        v
    }

    /// Every state array as `(name, shape, values)`, in a stable order. Values are
    /// at native scale whatever the codec's precision (a rescaled grid is multiplied
    /// back, exactly: the scales are powers of two), so a state moves between
    /// precisions.
    pub fn export(&self) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        let mut values: Vec<Vec<f32>> = self
            .bufs
            .state_grids()
            .into_iter()
            .map(|(_, g, scale)| {
                let mut h = g.history();
                h.iter_mut().for_each(|v| *v /= scale);
                h
            })
            .collect();
        values.push(vec![self.countdown as f32]);
        values.push(self.tail.clone());
        self.layout()
            .into_iter()
            .zip(values)
            .map(|((name, shape), v)| (name, shape, v))
            .collect()
    }

    /// Restores arrays written by [`CodecState::export`]. Every array must be present
    /// exactly once with its exact shape and finite values; nothing is changed unless
    /// all of them are valid. Input is untrusted (a session file): errors, never panics.
    pub fn import(&mut self, arrays: &[(String, Vec<usize>, Vec<f32>)]) -> Result<(), CodecError> {
        let found = match_state_arrays(&self.layout(), arrays)?;
        let countdown = found[found.len() - 2][0];
        if !(0.0..=(LOOKAHEAD + 1) as f32).contains(&countdown) || countdown.fract() != 0.0 {
            return Err(CodecError::BadStateArray {
                name: COUNTDOWN.to_string(),
                reason: format!(
                    "countdown must be an integer in 0..={}, found {countdown}",
                    LOOKAHEAD + 1
                ),
            });
        }
        let numerics = self.bufs.numerics;
        for ((_, grid, scale), v) in self.bufs.state_grids_mut().into_iter().zip(&found) {
            let mut v = v.to_vec();
            v.iter_mut().for_each(|x| *x *= scale);
            numerics.round_to_format(&mut v);
            grid.set_history(&v);
        }
        self.countdown = countdown as i32;
        self.tail.copy_from_slice(found[found.len() - 1]);
        Ok(())
    }
}
