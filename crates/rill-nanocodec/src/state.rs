//! Per-stream codec state, owned by the host (the [`crate::NanoCodec`] is immutable).
//!
//! The streaming state proper is the causal history of every convolution's input
//! (196,320 floats, 0.79 MB): `(k−1)·d` rows of each residual conv's activated input (`k·d`
//! for the Winograd convs of stages 1–3, whose zero tap reads `d` rows more), 6
//! latent rows for `pre_conv`, 2 rows for `post_conv`, and one input row per
//! transposed conv (it carries exactly the information of the reference's
//! `k − stride` overlap-add tail: output phase `p` of row `s` reads input rows `s`
//! and `s − 1`). [`crate::NanoCodec::step`] advances it in place — no copy per
//! frame; a session snapshots it with [`CodecState::export`] and restores it with
//! [`CodecState::import`]. Everything else in a `CodecState` is preallocated
//! scratch, so a step allocates nothing.

use rill_checkpoint::state_arrays::match_state_arrays;

use crate::decoder::Buffers;
use crate::error::CodecError;

/// The state of one decode stream (see the module doc).
#[derive(Clone)]
pub struct CodecState {
    pub(crate) bufs: Buffers,
}

impl std::fmt::Debug for CodecState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodecState")
            .field("chunk_frames", &self.bufs.max_frames)
            .finish_non_exhaustive()
    }
}

/// Equal streaming state (history rows); scratch is ignored.
impl PartialEq for CodecState {
    fn eq(&self, other: &CodecState) -> bool {
        let (a, b) = (self.bufs.named_state(), other.bufs.named_state());
        a.len() == b.len()
            && a.iter()
                .zip(&b)
                .all(|((n, x), (m, y))| n == m && x.history() == y.history())
    }
}

impl CodecState {
    pub(crate) fn new(bufs: Buffers) -> CodecState {
        CodecState { bufs }
    }

    /// Every state array as `(name, shape [rows, channels], values)`, in a stable order.
    pub fn export(&self) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        self.bufs
            .named_state()
            .into_iter()
            .map(|(name, r)| (name, vec![r.hist, r.c], r.history().to_vec()))
            .collect()
    }

    /// Floats of streaming state (the sum of the exported arrays).
    pub fn len(&self) -> usize {
        self.bufs
            .named_state()
            .iter()
            .map(|(_, r)| r.history().len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Restores arrays written by [`CodecState::export`]. Every array must be
    /// present exactly once with its exact shape and finite values; nothing changes
    /// unless all are valid. Input is untrusted (a session file): errors, never panics.
    pub fn import(&mut self, arrays: &[(String, Vec<usize>, Vec<f32>)]) -> Result<(), CodecError> {
        let expected: Vec<(String, Vec<usize>)> = self
            .bufs
            .named_state()
            .into_iter()
            .map(|(n, r)| (n, vec![r.hist, r.c]))
            .collect();
        let found = match_state_arrays(&expected, arrays)?;
        for (rows, v) in self.bufs.state_mut().into_iter().zip(found) {
            rows.history_mut().copy_from_slice(v);
        }
        Ok(())
    }
}
