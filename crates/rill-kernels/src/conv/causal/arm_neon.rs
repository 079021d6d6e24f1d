//! NEON kernels: 6 rows × 16 columns (24 q-register accumulators, 4 weight
//! vectors, 1 broadcast), and the HalfSnake on 4 lanes. The same FMA order as the
//! x86 kernels and the same separately rounded sine, so an ARM CPU computes the
//! x86 tiers' bits.
#![allow(clippy::needless_range_loop)]

use std::arch::aarch64::*;

use super::portable::{COS, DP1, DP2, DP3, FOPI, LRELU_SLOPE, SIN};
use super::{SnakeParams, Tile, PANEL};
use crate::conv::by_row_groups;

const H: usize = 4;

/// [`super::portable::sin`] on 4 lanes, the same operations in the same order
/// (every product and sum rounded separately).
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn sin(x: float32x4_t) -> float32x4_t {
    let xi = vreinterpretq_u32_f32(x);
    let sign = vandq_u32(xi, vdupq_n_u32(0x8000_0000));
    let ax = vreinterpretq_f32_u32(vandq_u32(xi, vdupq_n_u32(0x7fff_ffff)));
    // Truncation as `cvttps2dq`, including its i32::MIN for out-of-range and NaN.
    let q = vmulq_f32(ax, vdupq_n_f32(FOPI));
    let in_range = vcltq_f32(q, vdupq_n_f32(2_147_483_648.0));
    let j = vbslq_s32(in_range, vcvtq_s32_f32(q), vdupq_n_s32(i32::MIN));
    let j = vandq_s32(vaddq_s32(j, vdupq_n_s32(1)), vdupq_n_s32(!1));
    let y = vcvtq_f32_s32(j);
    let z = vsubq_f32(ax, vmulq_f32(y, vdupq_n_f32(DP1)));
    let z = vsubq_f32(z, vmulq_f32(y, vdupq_n_f32(DP2)));
    let z = vsubq_f32(z, vmulq_f32(y, vdupq_n_f32(DP3)));
    let zz = vmulq_f32(z, z);
    let mut c = vaddq_f32(vmulq_f32(vdupq_n_f32(COS[0]), zz), vdupq_n_f32(COS[1]));
    c = vaddq_f32(vmulq_f32(c, zz), vdupq_n_f32(COS[2]));
    c = vmulq_f32(vmulq_f32(c, zz), zz);
    c = vsubq_f32(c, vmulq_f32(vdupq_n_f32(0.5), zz));
    c = vaddq_f32(c, vdupq_n_f32(1.0));
    let mut s = vaddq_f32(vmulq_f32(vdupq_n_f32(SIN[0]), zz), vdupq_n_f32(SIN[1]));
    s = vaddq_f32(vmulq_f32(s, zz), vdupq_n_f32(SIN[2]));
    s = vaddq_f32(vmulq_f32(vmulq_f32(s, zz), z), z);
    let two = vdupq_n_s32(2);
    let use_cos = vceqq_s32(vandq_s32(j, two), two);
    let r = vbslq_f32(use_cos, c, s);
    let four = vreinterpretq_u32_s32(vandq_s32(j, vdupq_n_s32(4)));
    let flip = veorq_u32(sign, vshlq_n_u32::<29>(four));
    vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(r), flip))
}

/// Lanes `< valid` set (all-ones).
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn lanes_below(valid: usize) -> uint32x4_t {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let idx: [u32; 4] = [0, 1, 2, 3];
        vcltq_u32(vld1q_u32(idx.as_ptr()), vdupq_n_u32(valid.min(H) as u32))
    }
}

/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn half_snake(
    x: float32x4_t,
    alpha: float32x4_t,
    inv: float32x4_t,
    snake_lanes: usize,
) -> float32x4_t {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let pos = vcgtq_f32(x, vdupq_n_f32(0.0));
        let lrelu = vbslq_f32(pos, x, vmulq_f32(x, vdupq_n_f32(LRELU_SLOPE)));
        if snake_lanes == 0 {
            // The leaky-ReLU half of the channels: no sine to take.
            return lrelu;
        }
        let s = sin(vmulq_f32(alpha, x));
        let snake = vaddq_f32(x, vmulq_f32(inv, vmulq_f32(s, s)));
        vbslq_f32(lanes_below(snake_lanes), snake, lrelu)
    }
}

/// Loads `valid.min(4)` floats, zeros elsewhere.
///
/// # Safety
/// The CPU supports NEON; `p` is valid for `valid.min(4)` floats.
#[inline]
#[target_feature(enable = "neon")]
unsafe fn load_part(p: *const f32, valid: usize) -> float32x4_t {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        if valid >= H {
            return vld1q_f32(p);
        }
        let mut t = [0f32; H];
        std::ptr::copy_nonoverlapping(p, t.as_mut_ptr(), valid);
        vld1q_f32(t.as_ptr())
    }
}

/// Stores the first `valid.min(4)` lanes.
///
/// # Safety
/// The CPU supports NEON; `p` is valid for `valid.min(4)` floats.
#[inline]
#[target_feature(enable = "neon")]
unsafe fn store_part(p: *mut f32, v: float32x4_t, valid: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        if valid >= H {
            return vst1q_f32(p, v);
        }
        let mut t = [0f32; H];
        vst1q_f32(t.as_mut_ptr(), v);
        std::ptr::copy_nonoverlapping(t.as_ptr(), p, valid);
    }
}

/// HalfSnake of one row of `p.channels` floats.
///
/// # Safety
/// NEON must be available; `src`/`dst` valid for `p.channels` floats.
#[target_feature(enable = "neon")]
pub(super) unsafe fn half_snake_run(p: &SnakeParams, src: *const f32, dst: *mut f32) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut c = 0;
        while c < p.channels {
            let valid = p.channels - c;
            let x = load_part(src.add(c), valid);
            let al = vld1q_f32(p.alpha.as_ptr().add(c));
            let inv = vld1q_f32(p.inv.as_ptr().add(c));
            let y = half_snake(x, al, inv, p.half.saturating_sub(c));
            store_part(dst.add(c), y, valid);
            c += H;
        }
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn micro<const M: usize>(t: &Tile<'_>, a: &[*const f32], c: &[*mut f32], p: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut acc = [[vdupq_n_f32(0.0); 4]; M];
        let mut bp = t.b.add(p * t.b_stride);
        for &off in t.taps {
            let mut ap = [std::ptr::null::<f32>(); M];
            for m in 0..M {
                ap[m] = a[m].offset(off);
            }
            for ci in 0..t.cin {
                let mut b = [vdupq_n_f32(0.0); 4];
                for h in 0..4 {
                    b[h] = vld1q_f32(bp.add(h * H));
                }
                for m in 0..M {
                    let av = *ap[m].add(ci);
                    for h in 0..4 {
                        acc[m][h] = vfmaq_n_f32(acc[m][h], b[h], av);
                    }
                }
                bp = bp.add(PANEL);
            }
        }
        let res = acc;
        epilogue(t, &res, c, p);
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline(never)]
#[target_feature(enable = "neon")]
unsafe fn epilogue<const M: usize>(
    t: &Tile<'_>,
    res: &[[float32x4_t; 4]; M],
    c: &[*mut f32],
    p: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for (m, row) in res.iter().enumerate() {
            for (h, &acc) in row.iter().enumerate() {
                let col = p * PANEL + h * H;
                if col >= t.ncols {
                    continue;
                }
                let valid = t.ncols - col;
                // Bias and snake parameters are padded to whole panels.
                let y = vaddq_f32(acc, vld1q_f32(t.bias.add(col)));
                let dst = c[m].add(col);
                let out = match t.snake {
                    Some((al, inv, half)) => half_snake(
                        y,
                        vld1q_f32(al.add(col)),
                        vld1q_f32(inv.add(col)),
                        half.saturating_sub(col),
                    ),
                    None if t.accumulate => vaddq_f32(load_part(dst, valid), y),
                    None => y,
                };
                store_part(dst, out, valid);
            }
        }
    }
}

/// The NEON panel kernel.
///
/// # Safety
/// NEON must be available and the tile's pointers valid (see `Tile`).
#[target_feature(enable = "neon")]
pub(super) unsafe fn tile(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        // This tier reads f32 panels only (`reads_half_panels`; `run_task` checks).
        debug_assert!(t.b16.is_null());
        for p in 0..t.ncols.div_ceil(PANEL) {
            by_row_groups!(t, [6, 5, 4, 3, 2], micro::<_>(p));
        }
    }
}
