//! NEON kernels of both codecs: one micro-kernel, 6 rows × 16 columns (24 q-register
//! accumulators, 4 weight vectors, 1 broadcast), whatever the blocking; the ELU and
//! the HalfSnake on 4 lanes; and a dot-product kernel for narrow outputs. Operation
//! for operation the AVX2 / AVX-512 kernels: the same fused multiply-adds in the
//! same order, the same ELU polynomial and the same separately rounded sine, so an
//! ARM CPU computes the same bits as the x86 tiers.
//!
//! Index loops over the fixed-size accumulator arrays are deliberate: with constant
//! bounds they unroll into straight register code (hence the clippy allowances).
#![allow(clippy::needless_range_loop, clippy::manual_memcpy)]

use std::arch::aarch64::*;

use super::portable::{COS, DP1, DP2, DP3, FOPI, LRELU_SLOPE, SIN};
use super::simd::{EXP_LN2_HI, EXP_LN2_LO, EXP_MIN, EXP_POLY, W_F32, W_I16};
use super::{Epilogue, SnakeParams, Tile, PANEL};
use crate::conv::by_row_groups;

/// Lanes per vector.
const H: usize = 4;

/// `exp(min(x, 0))`, operation for operation the AVX2 / AVX-512 `exp_nonpos`.
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn exp_nonpos(x: float32x4_t) -> float32x4_t {
    let x = vmaxq_f32(vdupq_n_f32(EXP_MIN), vminq_f32(vdupq_n_f32(0.0), x));
    // Round to nearest, ties to even (as `_MM_FROUND_TO_NEAREST_INT`).
    let n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(std::f32::consts::LOG2_E)));
    let r = vfmsq_f32(x, n, vdupq_n_f32(EXP_LN2_HI));
    let r = vfmsq_f32(r, n, vdupq_n_f32(EXP_LN2_LO));
    let mut p = vdupq_n_f32(EXP_POLY[0]);
    for &c in &EXP_POLY[1..] {
        p = vfmaq_f32(vdupq_n_f32(c), p, r);
    }
    let y = vfmaq_f32(r, p, vmulq_f32(r, r));
    let y = vaddq_f32(y, vdupq_n_f32(1.0));
    // `n` is integral, so truncation converts it exactly.
    let e = vshlq_n_s32::<23>(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)));
    vmulq_f32(y, vreinterpretq_f32_s32(e))
}

/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn elu(x: float32x4_t) -> float32x4_t {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let pos = vcgtq_f32(x, vdupq_n_f32(0.0));
        let em1 = vsubq_f32(exp_nonpos(x), vdupq_n_f32(1.0));
        vbslq_f32(pos, x, em1)
    }
}

/// `dst[i] = elu(src[i])` for `i < n`; `src` may equal `dst` (in place).
///
/// # Safety
/// NEON must be available; `src`/`dst` valid for `n` floats.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn elu_raw(src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut i = 0;
        while i + 4 <= n {
            vst1q_f32(dst.add(i), elu(vld1q_f32(src.add(i))));
            i += 4;
        }
        if i < n {
            let mut tmp = [0f32; 4];
            std::ptr::copy_nonoverlapping(src.add(i), tmp.as_mut_ptr(), n - i);
            let mut out = [0f32; 4];
            vst1q_f32(out.as_mut_ptr(), elu(vld1q_f32(tmp.as_ptr())));
            std::ptr::copy_nonoverlapping(out.as_ptr(), dst.add(i), n - i);
        }
    }
}

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

/// HalfSnake of 4 lanes whose first `snake_lanes` (saturating) are snake lanes.
///
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
pub(crate) unsafe fn half_snake_run(p: &SnakeParams, src: *const f32, dst: *mut f32) {
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

/// `M` rows × one 16-column panel `p` of the tile.
///
/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn micro<const M: usize, const W: u8, const CHAIN: bool>(
    t: &Tile<'_>,
    a: &[*const f32],
    c: &[*mut f32],
    p: usize,
    nvalid: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut acc = [[vdupq_n_f32(0.0); 4]; M];
        if CHAIN {
            // A GEMM blocked over k: the chains go on from the sums at `c`.
            for m in 0..M {
                let src = c[m].add(p * PANEL);
                let mut cur = [0f32; PANEL];
                let from = if nvalid == PANEL {
                    src
                } else {
                    std::ptr::copy_nonoverlapping(src, cur.as_mut_ptr(), nvalid);
                    cur.as_ptr()
                };
                for h in 0..4 {
                    acc[m][h] = vld1q_f32(from.add(4 * h));
                }
            }
        }
        // Only the pointer of format `W` is non-null; wrapping arithmetic keeps the
        // unused one well-defined.
        let mut bp = t.b.wrapping_add(p * t.b_stride);
        let mut bq = t.bq.wrapping_add(p * t.b_stride);
        let sc = t.bscale.wrapping_add(p * PANEL);
        for &off in t.taps {
            let mut ap = [std::ptr::null::<f32>(); M];
            for m in 0..M {
                ap[m] = a[m].offset(off);
            }
            for ci in 0..t.cin {
                let mut b = [vdupq_n_f32(0.0); 4];
                for h in 0..4 {
                    b[h] = match W {
                        W_I16 => vcvtq_f32_s32(vmovl_s16(vld1_s16(bq.add(4 * h)))),
                        _ => vld1q_f32(bp.add(4 * h)),
                    };
                }
                for m in 0..M {
                    let av = *ap[m].add(ci);
                    for h in 0..4 {
                        acc[m][h] = vfmaq_n_f32(acc[m][h], b[h], av);
                    }
                }
                bp = bp.wrapping_add(PANEL);
                bq = bq.wrapping_add(PANEL);
            }
        }
        let mut res = [[vdupq_n_f32(0.0); 4]; M];
        for m in 0..M {
            res[m] = acc[m];
            if W == W_I16 {
                // The int16 chain summed `a·q`; the column scale applies once.
                for h in 0..4 {
                    res[m][h] = vmulq_f32(res[m][h], vld1q_f32(sc.add(4 * h)));
                }
            }
        }
        epilogue::<M, CHAIN>(t, &res, c, p, nvalid);
    }
}

/// `epi(acc + bias)` for the 4 columns from tile column `col`; `cur` holds the 4
/// values Accumulate adds to.
///
/// # Safety
/// The CPU supports this function's target features; with
/// `Epilogue::Accumulate`, `cur` is valid for the lanes it reads.
#[inline]
#[target_feature(enable = "neon")]
unsafe fn finish(
    t: &Tile<'_>,
    acc: float32x4_t,
    bias: float32x4_t,
    cur: *const f32,
    col: usize,
) -> float32x4_t {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let y = vaddq_f32(acc, bias);
        match t.epi {
            Epilogue::Store => y,
            Epilogue::Elu => elu(y),
            Epilogue::Accumulate => vaddq_f32(vld1q_f32(cur), y),
            Epilogue::Snake(p) => {
                // The parameters are padded to whole panels.
                let (al, inv, half) = t.snake_at(p, col);
                half_snake(y, vld1q_f32(al), vld1q_f32(inv), half)
            }
        }
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline(never)]
#[target_feature(enable = "neon")]
pub(super) unsafe fn epilogue<const M: usize, const CHAIN: bool>(
    t: &Tile<'_>,
    res: &[[float32x4_t; 4]; M],
    c: &[*mut f32],
    p: usize,
    nvalid: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let j = p * PANEL;
        if CHAIN {
            // The sums as they are: no bias, no epilogue.
            for (m, acc) in res.iter().enumerate() {
                let dst = c[m].add(j);
                let mut tmp = [0f32; PANEL];
                let to = if nvalid == PANEL {
                    dst
                } else {
                    tmp.as_mut_ptr()
                };
                for h in 0..4 {
                    vst1q_f32(to.add(4 * h), acc[h]);
                }
                if nvalid < PANEL {
                    std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst, nvalid);
                }
            }
            return;
        }
        let b = t.bias.add(j);
        let bias = [
            vld1q_f32(b),
            vld1q_f32(b.add(4)),
            vld1q_f32(b.add(8)),
            vld1q_f32(b.add(12)),
        ];
        for (m, acc) in res.iter().enumerate() {
            let dst = c[m].add(j);
            if nvalid == PANEL {
                // A whole panel (every column count of SpectroStream's decoder is a multiple of 16):
                // straight to the output, no per-row copy calls.
                for h in 0..4 {
                    let o = finish(t, acc[h], bias[h], dst.add(4 * h), j + 4 * h);
                    vst1q_f32(dst.add(4 * h), o);
                }
                continue;
            }
            let mut cur = [0f32; PANEL];
            if matches!(t.epi, Epilogue::Accumulate) {
                cur[..nvalid].copy_from_slice(std::slice::from_raw_parts(dst, nvalid));
            }
            let mut tmp = [0f32; PANEL];
            for h in 0..4 {
                let o = finish(t, acc[h], bias[h], cur.as_ptr().add(4 * h), j + 4 * h);
                vst1q_f32(tmp.as_mut_ptr().add(4 * h), o);
            }
            std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst, nvalid);
        }
    }
}

/// The panel kernel for weights in format `W` (widened to f32 in registers), for
/// every blocking.
///
/// # Safety
/// NEON must be available and the tile's pointers valid (see `Tile`).
#[target_feature(enable = "neon")]
pub(super) unsafe fn tile<const W: u8>(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        if W == W_F32 && t.chain {
            panels::<W, true>(t)
        } else {
            panels::<W, false>(t)
        }
    }
}

/// [`tile`] with the tile's `chain` flag a constant (`CHAIN`), so the codecs'
/// kernels carry no trace of it.
///
/// # Safety
/// As [`tile`].
#[inline]
#[target_feature(enable = "neon")]
unsafe fn panels<const W: u8, const CHAIN: bool>(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for p in 0..t.ncols.div_ceil(PANEL) {
            let nvalid = PANEL.min(t.ncols - p * PANEL);
            by_row_groups!(t, [6, 5, 4, 3, 2], micro::<_, W, CHAIN>(p, nvalid));
        }
    }
}

/// Narrow outputs (`ncols < 16`): per (row, column) a 16-lane dot product over all
/// taps, as four 4-lane quarters; 4 rows share each weight load. Lane for lane the
/// x86 `narrow` kernels (missing tail lanes are zeros, like their masked loads).
///
/// # Safety
/// NEON must be available and the tile's pointers valid; `t.b` points at `ncols`
/// weight rows of `taps·cin` floats.
#[target_feature(enable = "neon")]
pub(super) unsafe fn narrow(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        const R: usize = 4;
        let rows = t.a.len();
        let full = t.cin / PANEL * PANEL;
        let rest = t.cin - full;
        let mut r0 = 0;
        while r0 < rows {
            let mr = R.min(rows - r0);
            for j in 0..t.ncols {
                let w = t.b.add(j * t.b_stride);
                let mut acc = [[vdupq_n_f32(0.0); 4]; R];
                for (ti, &off) in t.taps.iter().enumerate() {
                    let wt = w.add(ti * t.cin);
                    let mut ci = 0;
                    while ci < full {
                        let mut wv = [vdupq_n_f32(0.0); 4];
                        for h in 0..4 {
                            wv[h] = vld1q_f32(wt.add(ci + 4 * h));
                        }
                        for m in 0..mr {
                            let x = t.a[r0 + m].offset(off).add(ci);
                            for h in 0..4 {
                                acc[m][h] = vfmaq_f32(acc[m][h], vld1q_f32(x.add(4 * h)), wv[h]);
                            }
                        }
                        ci += PANEL;
                    }
                    if rest > 0 {
                        let mut wl = [0f32; PANEL];
                        std::ptr::copy_nonoverlapping(wt.add(full), wl.as_mut_ptr(), rest);
                        for m in 0..mr {
                            let mut xl = [0f32; PANEL];
                            let x = t.a[r0 + m].offset(off).add(full);
                            std::ptr::copy_nonoverlapping(x, xl.as_mut_ptr(), rest);
                            for h in 0..4 {
                                let xv = vld1q_f32(xl.as_ptr().add(4 * h));
                                let wv = vld1q_f32(wl.as_ptr().add(4 * h));
                                acc[m][h] = vfmaq_f32(acc[m][h], xv, wv);
                            }
                        }
                    }
                }
                for m in 0..mr {
                    let mut l = [0f32; PANEL];
                    for h in 0..4 {
                        vst1q_f32(l.as_mut_ptr().add(4 * h), acc[m][h]);
                    }
                    let y = super::portable::reduce16(&l) + *t.bias.add(j);
                    super::portable::finish(t, y, &mut *t.c[r0 + m].add(j), j);
                }
            }
            r0 += mr;
        }
    }
}
