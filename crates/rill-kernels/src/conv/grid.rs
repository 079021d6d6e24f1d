//! SpectroStream's convolutions: every convolution of MRT2's SpectroStream decoder
//! (1×1, 3×3, 7×7, and each stride phase of a transposed convolution) is one or more
//! [`Job`]s of the one kernel family ([`super::gemm`](mod@super::gemm)) run with [`Blocking::Grid`]:
//! a set of output rows given by an affine [`RowMap`] over (group, time, freq), each
//! reading `taps.len()` contiguous runs of `cin` input channels at fixed offsets
//! from the row's base, with the ELU as the fused epilogue.
//!
//! * Weights are packed once at load time ([`Packed`], shared with the NanoCodec
//!   kernels): for `n ≥ 16` in panels of 16 columns (`[panel][k][16]`, what the
//!   SIMD micro-kernels stream), optionally as f16, int16 or (NEON with FP16) half
//!   arithmetic; for narrow outputs (`n < 16`, the 64→2 output conv) as `[n][k]`
//!   rows, computed as dot products so no lanes are wasted on padding.
//! * Here: the ELU on its own ([`elu_copy`], [`elu_in_place`], the same as the fused
//!   epilogue) and the tile transforms of the Winograd convolutions ([`winograd`]).

#[cfg(target_arch = "aarch64")]
use super::gemm::arm_neon;
use super::gemm::portable;
pub use super::gemm::{gemm, Blocking, Epilogue, Job};
#[cfg(target_arch = "x86_64")]
use super::gemm::{x86_avx2, x86_avx512};
pub use super::packed::{
    f16_to_f32, f32_to_f16, half_input_log2, EarlyWeights, Packed, HALF_CHUNK,
};
pub use super::{RowMap, PANEL};
use crate::{Isa, Tier};

pub mod winograd;

/// Rows per task of [`Blocking::Grid`].
pub const BLOCK_M: usize = Blocking::Grid.block_m();
/// Columns per task of [`Blocking::Grid`].
pub const BLOCK_N: usize = Blocking::Grid.max_panels() * PANEL;

/// `dst[i] = elu(src[i])` with the same ELU as the fused epilogue of the kernels.
pub fn elu_copy(isa: Isa, src: &[f32], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len());
    // SAFETY: both slices hold `len` floats.
    unsafe { elu_raw(isa, src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

/// `x[i] = elu(x[i])` with the same ELU as the fused epilogue of the kernels.
pub fn elu_in_place(isa: Isa, x: &mut [f32]) {
    let p = x.as_mut_ptr();
    // SAFETY: `x` holds `len` floats; the backends read each element before writing it.
    unsafe { elu_raw(isa, p, p, x.len()) }
}

/// # Safety
/// `src`/`dst` valid for `n` floats (they may be equal).
unsafe fn elu_raw(isa: Isa, src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the tier is only selected when the CPU supports it.
            Tier::Avx512 => x86_avx512::elu_raw(src, dst, n),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Tier::Avx2 => x86_avx2::elu_raw(src, dst, n),
            #[cfg(target_arch = "aarch64")]
            // SAFETY: as above.
            Tier::Neon => arm_neon::elu_raw(src, dst, n),
            _ => portable::elu_raw(src, dst, n),
        }
    }
}

#[cfg(test)]
mod tests;
