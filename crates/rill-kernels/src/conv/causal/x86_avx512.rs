//! AVX-512 kernels: 8 rows × 3 panels or 12 rows × 2 panels (24 zmm
//! accumulators, the weight vectors, 1 broadcast), and the HalfSnake on 16 lanes.
//! The weights are prefetched a few KB ahead: with few rows (stage 0 of a
//! one-frame step) the kernel streams them from memory.
//!
//! Index loops over the fixed-size accumulator arrays are deliberate: with constant
//! bounds they unroll into straight register code.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

use super::portable::{COS, DP1, DP2, DP3, FOPI, LRELU_SLOPE, SIN};
use super::{SnakeParams, Tile, PANEL};
use crate::conv::{by_row_groups, prefetch_elems};

/// Floats ahead of the current weights to prefetch (4 KB).
const PREFETCH: usize = 1024;

/// [`super::portable::sin`] on 16 lanes, the same operations in the same order.
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn sin(x: __m512) -> __m512 {
    let signbit = _mm512_set1_epi32(i32::MIN);
    let xi = _mm512_castps_si512(x);
    let sign = _mm512_and_si512(xi, signbit);
    let ax = _mm512_castsi512_ps(_mm512_andnot_si512(signbit, xi));
    let j = _mm512_cvttps_epi32(_mm512_mul_ps(ax, _mm512_set1_ps(FOPI)));
    let j = _mm512_and_si512(
        _mm512_add_epi32(j, _mm512_set1_epi32(1)),
        _mm512_set1_epi32(!1),
    );
    let y = _mm512_cvtepi32_ps(j);
    let z = _mm512_sub_ps(ax, _mm512_mul_ps(y, _mm512_set1_ps(DP1)));
    let z = _mm512_sub_ps(z, _mm512_mul_ps(y, _mm512_set1_ps(DP2)));
    let z = _mm512_sub_ps(z, _mm512_mul_ps(y, _mm512_set1_ps(DP3)));
    let zz = _mm512_mul_ps(z, z);
    let mut c = _mm512_add_ps(
        _mm512_mul_ps(_mm512_set1_ps(COS[0]), zz),
        _mm512_set1_ps(COS[1]),
    );
    c = _mm512_add_ps(_mm512_mul_ps(c, zz), _mm512_set1_ps(COS[2]));
    c = _mm512_mul_ps(_mm512_mul_ps(c, zz), zz);
    c = _mm512_sub_ps(c, _mm512_mul_ps(_mm512_set1_ps(0.5), zz));
    c = _mm512_add_ps(c, _mm512_set1_ps(1.0));
    let mut s = _mm512_add_ps(
        _mm512_mul_ps(_mm512_set1_ps(SIN[0]), zz),
        _mm512_set1_ps(SIN[1]),
    );
    s = _mm512_add_ps(_mm512_mul_ps(s, zz), _mm512_set1_ps(SIN[2]));
    s = _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(s, zz), z), z);
    let use_cos = _mm512_test_epi32_mask(j, _mm512_set1_epi32(2));
    let r = _mm512_mask_blend_ps(use_cos, s, c);
    let flip = _mm512_xor_si512(
        sign,
        _mm512_slli_epi32::<29>(_mm512_and_si512(j, _mm512_set1_epi32(4))),
    );
    _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(r), flip))
}

/// HalfSnake of 16 lanes whose first `snake_lanes` (saturating) are snake lanes.
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn half_snake(x: __m512, alpha: __m512, inv: __m512, snake_lanes: usize) -> __m512 {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let pos = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, _mm512_setzero_ps());
        let lrelu = _mm512_mask_blend_ps(pos, _mm512_mul_ps(x, _mm512_set1_ps(LRELU_SLOPE)), x);
        if snake_lanes == 0 {
            // The leaky-ReLU half of the channels: no sine to take.
            return lrelu;
        }
        let s = sin(_mm512_mul_ps(alpha, x));
        let snake = _mm512_add_ps(x, _mm512_mul_ps(inv, _mm512_mul_ps(s, s)));
        _mm512_mask_blend_ps(lane_mask(snake_lanes), lrelu, snake)
    }
}

#[inline]
fn lane_mask(valid: usize) -> __mmask16 {
    if valid >= PANEL {
        0xffff
    } else {
        ((1u32 << valid) - 1) as __mmask16
    }
}

/// HalfSnake of one row of `p.channels` floats.
///
/// # Safety
/// AVX-512F must be available; `src`/`dst` valid for `p.channels` floats.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn half_snake_run(p: &SnakeParams, src: *const f32, dst: *mut f32) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut c = 0;
        while c < p.channels {
            let m = lane_mask(p.channels - c);
            let x = _mm512_maskz_loadu_ps(m, src.add(c));
            // The parameters are padded to whole panels.
            let al = _mm512_loadu_ps(p.alpha.as_ptr().add(c));
            let inv = _mm512_loadu_ps(p.inv.as_ptr().add(c));
            _mm512_mask_storeu_ps(
                dst.add(c),
                m,
                half_snake(x, al, inv, p.half.saturating_sub(c)),
            );
            c += PANEL;
        }
    }
}

/// `M` rows × `NV` panels starting at panel `p0` of the tile.
///
/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn micro<const M: usize, const NV: usize, const HALF: bool>(
    t: &Tile<'_>,
    a: &[*const f32],
    c: &[*mut f32],
    p0: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); NV]; M];
        // Element offset into the panels (f32 in `t.b`, or half bits in `t.b16`).
        let mut bo = p0 * t.b_stride;
        for &off in t.taps {
            let mut ap = [std::ptr::null::<f32>(); M];
            for m in 0..M {
                ap[m] = a[m].offset(off);
            }
            for ci in 0..t.cin {
                let mut bv = [_mm512_setzero_ps(); NV];
                for v in 0..NV {
                    // Prefetching past the panel's end is harmless (no fault, no effect).
                    let o = bo + v * t.b_stride;
                    bv[v] = if HALF {
                        let bp = t.b16.add(o);
                        prefetch_elems(bp, PREFETCH);
                        _mm512_cvtph_ps(_mm256_loadu_si256(bp as *const __m256i))
                    } else {
                        let bp = t.b.add(o);
                        prefetch_elems(bp, PREFETCH);
                        _mm512_loadu_ps(bp)
                    };
                }
                for m in 0..M {
                    let av = _mm512_set1_ps(*ap[m].add(ci));
                    for v in 0..NV {
                        acc[m][v] = _mm512_fmadd_ps(av, bv[v], acc[m][v]);
                    }
                }
                bo += PANEL;
            }
        }
        // Hand the sums over through a copy so the epilogue's loops do not pin `acc`
        // in memory (a store per FMA).
        let mut res = [[_mm512_setzero_ps(); NV]; M];
        for m in 0..M {
            for v in 0..NV {
                res[m][v] = acc[m][v];
            }
        }
        epilogue(t, &res, c, p0);
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline(never)]
#[target_feature(enable = "avx512f")]
unsafe fn epilogue<const M: usize, const NV: usize>(
    t: &Tile<'_>,
    res: &[[__m512; NV]; M],
    c: &[*mut f32],
    p0: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for (m, row) in res.iter().enumerate() {
            for (v, &acc) in row.iter().enumerate() {
                let col = (p0 + v) * PANEL;
                let mask = lane_mask(t.ncols - col);
                let y = _mm512_add_ps(acc, _mm512_loadu_ps(t.bias.add(col)));
                let dst = c[m].add(col);
                let out = match t.snake {
                    Some((al, inv, half)) => half_snake(
                        y,
                        _mm512_loadu_ps(al.add(col)),
                        _mm512_loadu_ps(inv.add(col)),
                        half.saturating_sub(col),
                    ),
                    None if t.accumulate => _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst), y),
                    None => y,
                };
                _mm512_mask_storeu_ps(dst, mask, out);
            }
        }
    }
}

/// The AVX-512 panel kernel.
///
/// # Safety
/// AVX-512F must be available and the tile's pointers valid (see `Tile`).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn tile(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        if t.b16.is_null() {
            tile_of::<false>(t)
        } else {
            tile_of::<true>(t)
        }
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn tile_of<const HALF: bool>(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        match t.ncols.div_ceil(PANEL) {
            3 => by_row_groups!(t, [8, 7, 6, 5, 4, 3, 2], micro::<_, 3, HALF>(0)),
            2 => by_row_groups!(
                t,
                [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2],
                micro::<_, 2, HALF>(0)
            ),
            _ => by_row_groups!(t, [8, 7, 6, 5, 4, 3, 2], micro::<_, 1, HALF>(0)),
        }
    }
}
