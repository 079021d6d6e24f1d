//! Winograd-domain 3×3 convolution, `F(mt×mf, 3×3)` with `mt, mf ∈ {2, 4}`.
//!
//! The stride-1 3×3 convolutions of `decoder_1..6` are compute-bound; in the
//! Winograd domain an output tile of `mt × mf` positions costs `(mt+2)(mf+2)`
//! channel products instead of `9·mt·mf` (`F(4×4)`: 4× fewer). Three passes:
//!
//! 1. input transform `V = Bᵀ_t d B_f` of every `(mt+2) × (mf+2)` input tile
//!    (16 channels at a time), stored tile by tile, `[tiles][ξ][cin]`: a tile's
//!    `α_t·α_f` results land in one contiguous block instead of `α_t·α_f` distant
//!    matrices (whose scattered stores missed the cache: on Zen 3 the two transforms
//!    took ≈ 15–20 % fewer samples this way), and `V[ξ]` is the rows `ξ, ξ + α_t·α_f, …`;
//! 2. one GEMM per transformed position `ξ`: `M[ξ] = V[ξ] · U[ξ]` with the weights
//!    `U = G_t K G_fᵀ` transformed once at load, run by the ordinary packed-panel
//!    kernels (`crate::kernels`) as one multi-job call;
//! 3. output transform `Y = Aᵀ_t M A_f` (`M` tile by tile too), plus bias and the
//!    epilogue, written to the output grid.
//!
//! Tiles are aligned to the chunk's first current row and to freq 0, and time tiles
//! never straddle codec frames (`mt` divides the rows per frame), so the streaming
//! step and the batched decoder compute the same tiles with the same operations and
//! stay bit-identical; nothing depends on the thread count. The input grid is the one
//! the direct convolution reads (2 causal history rows, 1 zero column each side), so
//! the streaming state is unchanged. Freq tiles past the last column read zeros and
//! their outputs are dropped.
//!
//! The transforms use plain f32 multiplies and adds (no FMA contraction) in a fixed
//! order, compiled per SIMD tier; every tier computes the same bits for them.
//!
//! Parts: the tile transforms, per SIMD tier, are `rill_kernels::conv::grid::winograd`;
//! here are [`conv3x3`] and [`conv_t`] (the two convolutions: tiling, weights,
//! scratch and the three passes over the pool).

mod conv3x3;
mod conv_t;

pub(crate) use conv3x3::WinoConv3x3;
pub(crate) use conv_t::WinoConvT;

use crate::grid::AVec;
pub(crate) use crate::kernels::winograd::supported;
use crate::kernels::winograd::L;

/// Transform scratch of one Winograd convolution (owned by the stream's buffers).
#[derive(Clone, PartialEq)]
pub(crate) struct WinoScratch {
    v: AVec,
    m: AVec,
}

#[cfg(test)]
mod tests;
