//! AVX2 + FMA kernels: 6 rows × 16 columns (12 ymm accumulators, 2 weight
//! vectors, 1 broadcast), and the HalfSnake on 8 lanes. Same FMA order as the
//! AVX-512 kernel, so the two agree bit for bit.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

use super::portable::{COS, DP1, DP2, DP3, FOPI, LRELU_SLOPE, SIN};
use super::{SnakeParams, Tile, PANEL};
use crate::conv::{by_row_groups, prefetch_elems};

/// Floats ahead of the current weights to prefetch (4 KB; see the AVX-512 kernel).
const PREFETCH: usize = 1024;
const H: usize = 8;

// Not folded with the AVX-512 twins: 8-lane ymm intrinsics and blendv / maskload
// where AVX-512 has 16-lane zmm and mask registers (only the row blocking is shared).

/// [`super::portable::sin`] on 8 lanes, the same operations in the same order.
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn sin(x: __m256) -> __m256 {
    let signbit = _mm256_set1_epi32(i32::MIN);
    let xi = _mm256_castps_si256(x);
    let sign = _mm256_and_si256(xi, signbit);
    let ax = _mm256_castsi256_ps(_mm256_andnot_si256(signbit, xi));
    let j = _mm256_cvttps_epi32(_mm256_mul_ps(ax, _mm256_set1_ps(FOPI)));
    let j = _mm256_and_si256(
        _mm256_add_epi32(j, _mm256_set1_epi32(1)),
        _mm256_set1_epi32(!1),
    );
    let y = _mm256_cvtepi32_ps(j);
    let z = _mm256_sub_ps(ax, _mm256_mul_ps(y, _mm256_set1_ps(DP1)));
    let z = _mm256_sub_ps(z, _mm256_mul_ps(y, _mm256_set1_ps(DP2)));
    let z = _mm256_sub_ps(z, _mm256_mul_ps(y, _mm256_set1_ps(DP3)));
    let zz = _mm256_mul_ps(z, z);
    let mut c = _mm256_add_ps(
        _mm256_mul_ps(_mm256_set1_ps(COS[0]), zz),
        _mm256_set1_ps(COS[1]),
    );
    c = _mm256_add_ps(_mm256_mul_ps(c, zz), _mm256_set1_ps(COS[2]));
    c = _mm256_mul_ps(_mm256_mul_ps(c, zz), zz);
    c = _mm256_sub_ps(c, _mm256_mul_ps(_mm256_set1_ps(0.5), zz));
    c = _mm256_add_ps(c, _mm256_set1_ps(1.0));
    let mut s = _mm256_add_ps(
        _mm256_mul_ps(_mm256_set1_ps(SIN[0]), zz),
        _mm256_set1_ps(SIN[1]),
    );
    s = _mm256_add_ps(_mm256_mul_ps(s, zz), _mm256_set1_ps(SIN[2]));
    s = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(s, zz), z), z);
    let two = _mm256_set1_epi32(2);
    let use_cos = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(j, two), two));
    let r = _mm256_blendv_ps(s, c, use_cos);
    let flip = _mm256_xor_si256(
        sign,
        _mm256_slli_epi32::<29>(_mm256_and_si256(j, _mm256_set1_epi32(4))),
    );
    _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(r), flip))
}

/// Lanes `< valid` set (all-ones), as a float blend / maskstore mask.
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn lanes_below(valid: usize) -> __m256i {
    let v = valid.min(H) as i32;
    _mm256_cmpgt_epi32(
        _mm256_set1_epi32(v),
        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
    )
}

/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn half_snake(x: __m256, alpha: __m256, inv: __m256, snake_lanes: usize) -> __m256 {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let pos = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_setzero_ps());
        let lrelu = _mm256_blendv_ps(_mm256_mul_ps(x, _mm256_set1_ps(LRELU_SLOPE)), x, pos);
        if snake_lanes == 0 {
            // The leaky-ReLU half of the channels: no sine to take.
            return lrelu;
        }
        let s = sin(_mm256_mul_ps(alpha, x));
        let snake = _mm256_add_ps(x, _mm256_mul_ps(inv, _mm256_mul_ps(s, s)));
        _mm256_blendv_ps(lrelu, snake, _mm256_castsi256_ps(lanes_below(snake_lanes)))
    }
}

/// HalfSnake of one row of `p.channels` floats.
///
/// # Safety
/// AVX2 and FMA must be available; `src`/`dst` valid for `p.channels` floats.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn half_snake_run(p: &SnakeParams, src: *const f32, dst: *mut f32) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut c = 0;
        while c < p.channels {
            let m = lanes_below(p.channels - c);
            let x = _mm256_maskload_ps(src.add(c), m);
            let al = _mm256_loadu_ps(p.alpha.as_ptr().add(c));
            let inv = _mm256_loadu_ps(p.inv.as_ptr().add(c));
            _mm256_maskstore_ps(
                dst.add(c),
                m,
                half_snake(x, al, inv, p.half.saturating_sub(c)),
            );
            c += H;
        }
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn micro<const M: usize, const HALF: bool>(
    t: &Tile<'_>,
    a: &[*const f32],
    c: &[*mut f32],
    p: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; M];
        // Element offset into the panels (f32 in `t.b`, or half bits in `t.b16`).
        let mut bo = p * t.b_stride;
        for &off in t.taps {
            let mut ap = [std::ptr::null::<f32>(); M];
            for m in 0..M {
                ap[m] = a[m].offset(off);
            }
            for ci in 0..t.cin {
                // Prefetching past the panel's end is harmless (no fault, no effect).
                let (b0, b1) = if HALF {
                    let bp = t.b16.add(bo);
                    prefetch_elems(bp, PREFETCH);
                    (
                        _mm256_cvtph_ps(_mm_loadu_si128(bp as *const __m128i)),
                        _mm256_cvtph_ps(_mm_loadu_si128(bp.add(H) as *const __m128i)),
                    )
                } else {
                    let bp = t.b.add(bo);
                    prefetch_elems(bp, PREFETCH);
                    (_mm256_loadu_ps(bp), _mm256_loadu_ps(bp.add(H)))
                };
                for m in 0..M {
                    let av = _mm256_set1_ps(*ap[m].add(ci));
                    acc[m][0] = _mm256_fmadd_ps(av, b0, acc[m][0]);
                    acc[m][1] = _mm256_fmadd_ps(av, b1, acc[m][1]);
                }
                bo += PANEL;
            }
        }
        // A copy, so the epilogue's loops do not pin `acc` in memory.
        let res = acc;
        epilogue(t, &res, c, p);
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline(never)]
#[target_feature(enable = "avx2,fma")]
unsafe fn epilogue<const M: usize>(t: &Tile<'_>, res: &[[__m256; 2]; M], c: &[*mut f32], p: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for (m, row) in res.iter().enumerate() {
            for (h, &acc) in row.iter().enumerate() {
                let col = p * PANEL + h * H;
                if col >= t.ncols {
                    continue;
                }
                let mask = lanes_below(t.ncols - col);
                let y = _mm256_add_ps(acc, _mm256_loadu_ps(t.bias.add(col)));
                let dst = c[m].add(col);
                let out = match t.snake {
                    Some((al, inv, half)) => half_snake(
                        y,
                        _mm256_loadu_ps(al.add(col)),
                        _mm256_loadu_ps(inv.add(col)),
                        half.saturating_sub(col),
                    ),
                    None if t.accumulate => _mm256_add_ps(_mm256_maskload_ps(dst, mask), y),
                    None => y,
                };
                _mm256_maskstore_ps(dst, mask, out);
            }
        }
    }
}

/// The AVX2 panel kernel.
///
/// # Safety
/// AVX2, FMA and F16C must be available and the tile's pointers valid (see `Tile`).
#[target_feature(enable = "avx2,fma,f16c")]
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
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile_of<const HALF: bool>(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for p in 0..t.ncols.div_ceil(PANEL) {
            by_row_groups!(t, [6, 5, 4, 3, 2], micro::<_, HALF>(p));
        }
    }
}
