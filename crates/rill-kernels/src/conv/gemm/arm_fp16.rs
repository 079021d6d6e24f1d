//! The fp16-arithmetic panel kernel for NEON CPUs with FP16 (ARMv8.2 `FEAT_FP16`):
//! 4 rows × 16 columns, `FMLA Vd.8H, Vn.8H, Vm.H[lane]` — 8 half lanes per fused
//! multiply-add where the f32 kernel has 4 — for matrices packed by
//! [`crate::conv::Packed::use_half_arithmetic`].
//!
//! Per row and 16 columns, two half accumulators sum [`HALF_CHUNK`] products (one
//! rounding to half per FMA); each partial sum is then widened (exact) and added to
//! four f32 accumulators, times a power of two that undoes the weights' and the
//! inputs' scales (exact). The inputs are read as f32, multiplied by the tile's
//! input scale — the power of two that puts its largest input at the top of half's
//! range ([`half_input_log2`]), so no partial sum can overflow whatever the
//! activations' magnitude and small activations are not lost in half's subnormals —
//! and rounded to half (`FCVTN`, round to nearest even), 8 channels per conversion.
//! Per row and 16 input channels this is 32 half FMAs, 8 scaling and conversion
//! operations and 8 widening adds (48 vector operations) where the f32 kernel needs 64
//! FMAs (estimated, unmeasured on hardware); storing activations as half would remove
//! the conversions.
//!
//! Operands of the instructions: 8 half accumulators, 16 f32 accumulators, 2 weight
//! vectors and 4 input vectors — 30 of the 32 vector registers, hence 4 rows (the f32
//! kernels take 6). The by-element operand of a half `FMLA` must be one of
//! `v0`–`v15` (`vreg_low16`).
//!
//! The half-precision instructions are written with `asm!` in the kernel's own body:
//! Rust's fp16 NEON intrinsics are stable only from 1.94 (the workspace builds with
//! 1.89), and the assembler accepts them only inside a function compiled with `fp16`.
//!
//! Index loops over the fixed-size accumulator arrays are deliberate: with constant
//! bounds they unroll into straight register code (hence the clippy allowances).
#![allow(clippy::needless_range_loop)]

use std::arch::aarch64::*;
use std::arch::asm;

use super::arm_neon::epilogue;
use super::{Tile, PANEL};
use crate::conv::packed::{half_input_log2, HALF_CHUNK};

/// Rows per micro-kernel call.
const MR: usize = 4;
/// Half lanes per vector (input channels per conversion).
const LANES: usize = 8;

/// `f32 × 8 → half × 8`: `$lo`, `$hi` (4 lanes each) rounded to nearest even.
macro_rules! to_half {
    ($lo:expr, $hi:expr) => {{
        let d: uint16x8_t;
        // SAFETY (for the caller): register-only instructions of base AdvSIMD.
        asm!(
            "fcvtn {d:v}.4h, {lo:v}.4s",
            "fcvtn2 {d:v}.8h, {hi:v}.4s",
            d = out(vreg_low16) d,
            lo = in(vreg) $lo,
            hi = in(vreg) $hi,
            options(pure, nomem, nostack, preserves_flags)
        );
        d
    }};
}

/// `$acc += $b · $a[$lane]` on 8 half lanes (one rounding per lane).
macro_rules! fmla_lane {
    ($acc:expr, $b:expr, $a:expr, $lane:literal) => {
        asm!(
            "fmla {acc:v}.8h, {b:v}.8h, {a:v}.h[{lane}]",
            acc = inout(vreg) $acc,
            b = in(vreg) $b,
            a = in(vreg_low16) $a,
            lane = const $lane,
            options(pure, nomem, nostack, preserves_flags)
        )
    };
}

/// Input channel `$lane` of the current group of 8 for every row: its weight row (16
/// halves at `$bh + 16·lane`) times each row's input `$av[m][lane]`, into `$h`.
/// Skipped when `$lane ≥ $n` (a tail group).
macro_rules! lane_step {
    ($h:ident, $av:ident, $bh:ident, $n:expr, $lane:literal) => {
        if $lane < $n {
            let w = $bh.add($lane * PANEL);
            let b0 = vld1q_u16(w);
            let b1 = vld1q_u16(w.add(LANES));
            for m in 0..M {
                fmla_lane!($h[m][0], b0, $av[m], $lane);
                fmla_lane!($h[m][1], b1, $av[m], $lane);
            }
        }
    };
}

/// The first `$n` (≤ 8) input channels of the group.
macro_rules! group {
    ($h:ident, $av:ident, $bh:ident, $n:expr) => {
        lane_step!($h, $av, $bh, $n, 0);
        lane_step!($h, $av, $bh, $n, 1);
        lane_step!($h, $av, $bh, $n, 2);
        lane_step!($h, $av, $bh, $n, 3);
        lane_step!($h, $av, $bh, $n, 4);
        lane_step!($h, $av, $bh, $n, 5);
        lane_step!($h, $av, $bh, $n, 6);
        lane_step!($h, $av, $bh, $n, 7);
    };
}

/// The panel kernel for half-arithmetic matrices (`t.b16` their half panels,
/// `t.b_stride` in halves).
///
/// # Safety
/// NEON with FP16 must be available and the tile's pointers valid (see `Tile`).
#[target_feature(enable = "neon,fp16")]
pub(super) unsafe fn tile(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let rows = t.a.len();
        let s = half_input_log2(largest_input(t));
        let scales = Scales {
            input: 2f32.powi(s),
            // Two factors: each is a normal f32 (`s` is bounded; `w_log2` is set at load).
            partial: 2f32.powi(-s) * 2f32.powi(-t.w_log2),
        };
        for p in 0..t.ncols.div_ceil(PANEL) {
            let nvalid = PANEL.min(t.ncols - p * PANEL);
            let mut r = 0;
            while r < rows {
                let mr = MR.min(rows - r);
                let (a, c) = (&t.a[r..r + mr], &t.c[r..r + mr]);
                match mr {
                    4 => micro::<4>(t, scales, a, c, p, nvalid),
                    3 => micro::<3>(t, scales, a, c, p, nvalid),
                    2 => micro::<2>(t, scales, a, c, p, nvalid),
                    _ => micro::<1>(t, scales, a, c, p, nvalid),
                }
                r += mr;
            }
        }
    }
}

/// A tile's power-of-two scales: of its inputs before they are rounded to half, and
/// of a partial sum added to the f32 accumulators (undoing both scales exactly).
#[derive(Clone, Copy)]
struct Scales {
    input: f32,
    partial: f32,
}

/// The largest |input| the tile reads (every row's run of `cin` channels at each
/// tap), NaNs ignored (they propagate through the products as in f32).
///
/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn largest_input(t: &Tile<'_>) -> f32 {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut mx = vdupq_n_f32(0.0);
        let mut tail = 0f32;
        for &a in t.a {
            for &off in t.taps {
                let x = a.offset(off);
                let mut i = 0;
                while i + 4 <= t.cin {
                    // FMAXNM, like `f32::max`, ignores a NaN operand.
                    mx = vmaxnmq_f32(mx, vabsq_f32(vld1q_f32(x.add(i))));
                    i += 4;
                }
                for j in i..t.cin {
                    tail = tail.max((*x.add(j)).abs());
                }
            }
        }
        vmaxnmvq_f32(mx).max(tail)
    }
}

/// `M` rows × one 16-column panel `p` of the tile.
///
/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "neon,fp16")]
unsafe fn micro<const M: usize>(
    t: &Tile<'_>,
    scales: Scales,
    a: &[*const f32],
    c: &[*mut f32],
    p: usize,
    nvalid: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let zero = vdupq_n_f32(0.0);
        let mut acc = [[zero; 4]; M];
        let s_in = vdupq_n_f32(scales.input);
        let s_out = vdupq_n_f32(scales.partial);
        let mut bh = t.b16.add(p * t.b_stride);
        for &off in t.taps {
            let mut ap = [std::ptr::null::<f32>(); M];
            for m in 0..M {
                ap[m] = a[m].offset(off);
            }
            let mut ci = 0;
            while ci < t.cin {
                let n = HALF_CHUNK.min(t.cin - ci);
                let mut h = [[vdupq_n_u16(0); 2]; M];
                let mut j = 0;
                while j + LANES <= n {
                    let mut av = [vdupq_n_u16(0); M];
                    for m in 0..M {
                        let x = ap[m].add(ci + j);
                        let lo = vmulq_f32(vld1q_f32(x), s_in);
                        let hi = vmulq_f32(vld1q_f32(x.add(4)), s_in);
                        av[m] = to_half!(lo, hi);
                    }
                    group!(h, av, bh, LANES);
                    bh = bh.add(LANES * PANEL);
                    j += LANES;
                }
                if j < n {
                    // The channels past the run's end are zeros (never read past it).
                    let rest = n - j;
                    let mut av = [vdupq_n_u16(0); M];
                    for m in 0..M {
                        let mut x = [0f32; LANES];
                        std::ptr::copy_nonoverlapping(ap[m].add(ci + j), x.as_mut_ptr(), rest);
                        let lo = vmulq_f32(vld1q_f32(x.as_ptr()), s_in);
                        let hi = vmulq_f32(vld1q_f32(x.as_ptr().add(4)), s_in);
                        av[m] = to_half!(lo, hi);
                    }
                    group!(h, av, bh, rest);
                    bh = bh.add(rest * PANEL);
                }
                // Widen each partial sum (exact) and add it, rescaled (exact), in f32.
                for m in 0..M {
                    for q in 0..2 {
                        let (lo, hi): (float32x4_t, float32x4_t);
                        asm!(
                            "fcvtl {lo:v}.4s, {h:v}.4h",
                            "fcvtl2 {hi:v}.4s, {h:v}.8h",
                            h = in(vreg) h[m][q],
                            lo = out(vreg) lo,
                            hi = out(vreg) hi,
                            options(pure, nomem, nostack, preserves_flags)
                        );
                        acc[m][2 * q] = vfmaq_f32(acc[m][2 * q], lo, s_out);
                        acc[m][2 * q + 1] = vfmaq_f32(acc[m][2 * q + 1], hi, s_out);
                    }
                }
                ci += n;
            }
        }
        epilogue::<M, false>(t, &acc, c, p, nvalid);
    }
}
