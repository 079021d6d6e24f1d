//! The tile transforms of SpectroStream's Winograd convolutions, `F(mt×mf, 3×3)` with
//! `mt, mf ∈ {2, 4}`: the 2-D input and output transforms of the 3×3 convolution
//! and the time-only ones of the transposed convolution's freq stride phases.
//!
//! The transforms use plain f32 multiplies and adds (no FMA contraction) in a fixed
//! order, compiled per SIMD tier; every tier computes the same bits for them. The
//! GEMMs between them are the packed-panel kernels of [`super::gemm`]; the layers
//! that drive the three passes (tiling, scratch, threads) live in the codec crate.
//!
//! Parts: [`transform`] (the `F(m, 3)` matrices), [`tiles`] (the tile transform
//! bodies, generic over the tile size), `tier` (those bodies compiled per SIMD tier,
//! and the dispatch to them).

mod tier;
pub mod tiles;
pub mod transform;

use tier::dispatch;
pub use tiles::{ColArgs, InArgs, OutArgs};
pub use transform::g_matrix;

use super::Epilogue;
use crate::Isa;

/// Lanes per transform vector (channels processed together).
pub const L: usize = 16;

/// Winograd tile sizes supported per axis (outputs per tile).
pub fn supported(m: usize) -> bool {
    m == 2 || m == 4
}

/// Transforms one input tile of `mt × mf` outputs, `V = Bᵀ_t d B_f`, on `isa`'s tier.
///
/// # Safety
/// As [`tiles::input_tile`]; `mt` and `mf` are [`supported`].
pub unsafe fn input_tile(isa: Isa, mt: usize, mf: usize, args: InArgs) {
    // SAFETY: the caller's contract; the tier was detected (`Isa`).
    unsafe { dispatch!(isa, [mt, mf], input_tile(args)) }
}

/// Transforms one output tile of `mt × mf` positions, `Y = Aᵀ_t M A_f`, plus bias and
/// the epilogue (the ELU is left to the caller), on `isa`'s tier.
///
/// # Safety
/// As [`tiles::output_tile`]; `mt` and `mf` are [`supported`].
pub unsafe fn output_tile(isa: Isa, mt: usize, mf: usize, args: &OutArgs) {
    // SAFETY: the caller's contract; the tier was detected (`Isa`).
    unsafe { dispatch!(isa, [mt, mf], output_tile(args)) }
}

/// The time-only input transform of one column (`mt` outputs per tile).
///
/// # Safety
/// As [`tiles::col_in`]; `mt` is [`supported`].
pub unsafe fn col_in(isa: Isa, mt: usize, src: *const f32, dst: *mut f32, args: &ColArgs) {
    // SAFETY: the caller's contract; the tier was detected (`Isa`).
    unsafe { dispatch!(isa, [mt], col_in(src, dst, args)) }
}

/// The time-only output transform of one column, plus bias and the epilogue (the
/// ELU is left to the caller).
///
/// # Safety
/// As [`tiles::col_out`]; `mt` is [`supported`].
pub unsafe fn col_out(
    isa: Isa,
    mt: usize,
    src: *const f32,
    dst: *mut f32,
    args: &ColArgs,
    bias: *const f32,
    epi: Epilogue,
) {
    // SAFETY: the caller's contract; the tier was detected (`Isa`).
    unsafe { dispatch!(isa, [mt], col_out(src, dst, args, bias, epi)) }
}
