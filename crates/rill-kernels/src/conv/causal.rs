//! NanoCodec's causal 1-D convolutions and the HalfSnake.
//!
//! A convolution over channels-last rows (`[time][channel]`, the causal history
//! rows stored in front of the current ones) is
//! `out[t][n] = epi(bias[n] + Σ_tap Σ_ci in[t·s + tap + ci] · W[tap·cin + ci][n])`,
//! where the tap offsets `j·dilation·cin` address the input rows the tap reads, so
//! no im2col copy is made: a [`Job`] of the one kernel family ([`super::gemm`](mod@super::gemm)) run
//! with [`Blocking::Causal`], weights packed once by [`Packed::conv`] (f32 panels,
//! or half panels on the tiers that read them, [`Packed::store_as_half`]).
//!
//! * The epilogue adds the bias and stores, accumulates (residual) or applies a
//!   HalfSnake ([`Epilogue::Snake`]: the same operation sequence, no FMA, on every
//!   tier, so the activation is bit-identical across tiers).
//! * Here: the HalfSnake on its own ([`half_snake_rows`]) and the Winograd F(4,4)
//!   residual convolutions ([`WinogradConv`]).

#[cfg(target_arch = "aarch64")]
use super::gemm::arm_neon;
use super::gemm::portable;
pub use super::gemm::{gemm, gemm_many, Blocking, Epilogue, Job, SnakeParams};
#[cfg(target_arch = "x86_64")]
use super::gemm::{x86_avx2, x86_avx512};
pub use super::packed::{reads_half_panels, Packed};
pub use super::{RowMap, PANEL};
use crate::{DisjointOut, Isa, Pool, Tier};

mod winograd;

pub use winograd::{winograd_many, WinogradConv, WinogradJob, WinogradScratch, MAX_CONVS};

/// Rows per task of [`Blocking::Causal`].
pub const BLOCK_M: usize = Blocking::Causal.block_m();
/// Most panels per task of [`Blocking::Causal`] (the AVX-512 micro-kernel's width).
pub const MAX_TILE_PANELS: usize = Blocking::Causal.max_panels();
/// Most jobs of one [`winograd_many`] call's GEMM dispatch: the 7 Winograd points
/// and the direct rows of 4 branch convolutions.
pub const MAX_JOBS: usize = 32;

/// Elements of one HalfSnake task (rows are grouped to about this many).
const SNAKE_TASK_ELEMS: usize = 8192;

/// `dst[r·dst_stride + c] = HalfSnake(src[r·src_stride + c])` for `c < channels`,
/// spread over `pool` in groups of rows (element-wise, so the bits do not depend
/// on the split; an assisting pipeline stage can take part, [`Pool::assist`]).
#[allow(clippy::too_many_arguments)]
pub fn half_snake_rows(
    isa: Isa,
    p: &SnakeParams,
    src: &[f32],
    src_stride: usize,
    dst: &mut [f32],
    dst_stride: usize,
    rows: usize,
    pool: &Pool,
) {
    if rows == 0 {
        return;
    }
    let ch = p.channels;
    assert!((rows - 1) * src_stride + ch <= src.len() && (rows - 1) * dst_stride + ch <= dst.len());
    let per_task = (SNAKE_TASK_ELEMS / ch.max(1)).max(1);
    let out = DisjointOut::new(dst);
    pool.run(rows.div_ceil(per_task), &|t| {
        for r in t * per_task..((t + 1) * per_task).min(rows) {
            let s = &src[r * src_stride..r * src_stride + ch];
            // SAFETY: tasks own disjoint row ranges of `dst`, and row `r`'s
            // `channels` floats lie inside it (asserted above).
            let d = unsafe { out.at(r * dst_stride) };
            // SAFETY: both runs hold `channels` floats; the tier was detected.
            unsafe {
                match isa.tier() {
                    #[cfg(target_arch = "x86_64")]
                    Tier::Avx512 => x86_avx512::half_snake_run(p, s.as_ptr(), d),
                    #[cfg(target_arch = "x86_64")]
                    Tier::Avx2 => x86_avx2::half_snake_run(p, s.as_ptr(), d),
                    #[cfg(target_arch = "aarch64")]
                    Tier::Neon => arm_neon::half_snake_run(p, s.as_ptr(), d),
                    _ => portable::half_snake_run(p, s, std::slice::from_raw_parts_mut(d, ch)),
                }
            }
        }
    });
}

#[cfg(test)]
mod tests;
