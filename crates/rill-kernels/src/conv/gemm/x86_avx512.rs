//! AVX-512 kernels of both codecs: one micro-kernel, `M` rows × `NV` panels, in the
//! shapes of the job's blocking — 6 rows × 64 columns (24 zmm accumulators, 4 weight
//! vectors, 1 broadcast = 29 of 32 registers) and 6 × 16 for column counts that are
//! not multiples of 64 ([`Blocking::Grid`]); 8 rows × 3 panels, 12 × 2 or 8 × 1
//! ([`Blocking::Causal`]) — the ELU and HalfSnake on 16 lanes, and a dot-product
//! kernel for narrow outputs. The weights are prefetched ahead
//! ([`super::simd::prefetch_bytes`]).
//!
//! Index loops over the fixed-size accumulator arrays are deliberate: with constant
//! bounds they unroll into straight register code (hence the clippy allowances).
#![allow(clippy::needless_range_loop, clippy::manual_memcpy)]

use std::arch::x86_64::*;

use super::portable::{COS, DP1, DP2, DP3, FOPI, LRELU_SLOPE, SIN};
use super::simd::{prefetch_ahead, EXP_LN2_HI, EXP_LN2_LO, EXP_MIN, EXP_POLY, W_F16, W_F32, W_I16};
use super::{Blocking, Epilogue, SnakeParams, Tile, PANEL};
use crate::conv::by_row_groups;

/// ELU, `where(x > 0, x, exp(x) − 1)`, with the exp polynomial of [`exp_nonpos`].
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn elu(x: __m512) -> __m512 {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let pos = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, _mm512_setzero_ps());
        let em1 = _mm512_sub_ps(exp_nonpos(x), _mm512_set1_ps(1.0));
        _mm512_mask_blend_ps(pos, em1, x)
    }
}

/// `exp(min(x, 0))` for the ELU: Cephes `expf` (degree-6 polynomial on
/// `[-ln2/2, ln2/2]`, ≤ 2 ulp), inputs clamped to `[-87, 0]` so `2^n` stays a normal
/// number (for x < −87 the ELU is −1 exactly either way). NaN propagates.
/// The AVX2 twin performs the identical sequence of operations.
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn exp_nonpos(x: __m512) -> __m512 {
    // Operand order keeps NaN: MIN/MAX return the second operand if either is NaN.
    let x = _mm512_max_ps(
        _mm512_set1_ps(EXP_MIN),
        _mm512_min_ps(_mm512_setzero_ps(), x),
    );
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
    );
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_HI), x);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_LO), r);
    let mut p = _mm512_set1_ps(EXP_POLY[0]);
    for &c in &EXP_POLY[1..] {
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
    }
    let y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    let y = _mm512_add_ps(y, _mm512_set1_ps(1.0));
    let e = _mm512_slli_epi32::<23>(_mm512_add_epi32(
        _mm512_cvtps_epi32(n),
        _mm512_set1_epi32(127),
    ));
    _mm512_mul_ps(y, _mm512_castsi512_ps(e))
}

/// `dst[i] = elu(src[i])` for `i < n`; `src` may equal `dst` (in place).
///
/// # Safety
/// AVX-512F must be available; `src`/`dst` valid for `n` floats.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn elu_raw(src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut i = 0;
        while i + 16 <= n {
            let v = _mm512_loadu_ps(src.add(i));
            _mm512_storeu_ps(dst.add(i), elu(v));
            i += 16;
        }
        if i < n {
            let m: __mmask16 = ((1u32 << (n - i)) - 1) as __mmask16;
            let v = _mm512_maskz_loadu_ps(m, src.add(i));
            _mm512_mask_storeu_ps(dst.add(i), m, elu(v));
        }
    }
}

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

/// HalfSnake of one row of `p.channels` floats.
///
/// # Safety
/// AVX-512F must be available; `src`/`dst` valid for `p.channels` floats.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn half_snake_run(p: &SnakeParams, src: *const f32, dst: *mut f32) {
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

#[inline]
fn lane_mask(valid: usize) -> __mmask16 {
    if valid >= PANEL {
        0xffff
    } else {
        ((1u32 << valid) - 1) as __mmask16
    }
}

/// `M` rows × `NV`·16 columns starting at column `col` of the tile, `nvalid` of
/// them valid, for weight format `W` and blocking `B` (the prefetch distance).
///
/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn micro<const M: usize, const NV: usize, const W: u8, const B: u8, const CHAIN: bool>(
    t: &Tile<'_>,
    a: &[*const f32],
    c: &[*mut f32],
    col: usize,
    nvalid: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); NV]; M];
        if CHAIN {
            // A GEMM blocked over k: the chains go on from the sums at `c`.
            for m in 0..M {
                for v in 0..NV {
                    let mask = lane_mask(nvalid.saturating_sub(v * PANEL));
                    acc[m][v] = _mm512_maskz_loadu_ps(mask, c[m].add(col + v * PANEL));
                }
            }
        }
        // Only one of the three is non-null (`W`: the weight format); wrapping
        // arithmetic keeps the unused ones well-defined.
        let mut bp = t.b.wrapping_add((col / PANEL) * t.b_stride);
        let mut bh = t.b16.wrapping_add((col / PANEL) * t.b_stride);
        let mut bq = t.bq.wrapping_add((col / PANEL) * t.b_stride);
        for &off in t.taps {
            let mut ap = [std::ptr::null::<f32>(); M];
            for m in 0..M {
                ap[m] = a[m].offset(off);
            }
            for ci in 0..t.cin {
                let mut bv = [_mm512_setzero_ps(); NV];
                for (v, b) in bv.iter_mut().enumerate() {
                    *b = match W {
                        W_F16 => {
                            prefetch_ahead::<W, B, _>(bh.add(v * t.b_stride));
                            _mm512_cvtph_ps(_mm256_loadu_si256(
                                bh.add(v * t.b_stride) as *const __m256i
                            ))
                        }
                        W_I16 => {
                            prefetch_ahead::<W, B, _>(bq.add(v * t.b_stride));
                            _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256(
                                bq.add(v * t.b_stride) as *const __m256i,
                            )))
                        }
                        _ => {
                            prefetch_ahead::<W, B, _>(bp.add(v * t.b_stride));
                            _mm512_loadu_ps(bp.add(v * t.b_stride))
                        }
                    };
                }
                for m in 0..M {
                    let av = _mm512_set1_ps(*ap[m].add(ci));
                    for v in 0..NV {
                        acc[m][v] = _mm512_fmadd_ps(av, bv[v], acc[m][v]);
                    }
                }
                bp = bp.wrapping_add(PANEL);
                bh = bh.wrapping_add(PANEL);
                bq = bq.wrapping_add(PANEL);
            }
        }
        // Hand the sums to the epilogue through a copy: indexing `acc` with the epilogue's
        // (not unrolled) loop counters would pin it in memory and cost a store per FMA.
        let mut res = [[_mm512_setzero_ps(); NV]; M];
        for m in 0..M {
            for v in 0..NV {
                res[m][v] = acc[m][v];
                if W == W_I16 {
                    // The int16 chain summed `a·q`; the column scale applies once.
                    res[m][v] =
                        _mm512_mul_ps(res[m][v], _mm512_loadu_ps(t.bscale.add(col + v * PANEL)));
                }
            }
        }
        epilogue::<M, NV, CHAIN>(t, &res, c, col, nvalid);
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline(never)]
#[target_feature(enable = "avx512f")]
unsafe fn epilogue<const M: usize, const NV: usize, const CHAIN: bool>(
    t: &Tile<'_>,
    res: &[[__m512; NV]; M],
    c: &[*mut f32],
    col: usize,
    nvalid: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for (m, row) in res.iter().enumerate() {
            for (v, &acc) in row.iter().enumerate() {
                let mask = lane_mask(nvalid.saturating_sub(v * PANEL));
                let j = col + v * PANEL;
                let dst = c[m].add(j);
                if CHAIN {
                    // The sums as they are: no bias, no epilogue.
                    _mm512_mask_storeu_ps(dst, mask, acc);
                    continue;
                }
                let y = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mask, t.bias.add(j)));
                let out = match t.epi {
                    Epilogue::Store => y,
                    Epilogue::Elu => elu(y),
                    Epilogue::Accumulate => _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst), y),
                    Epilogue::Snake(p) => {
                        let (al, inv, half) = t.snake_at(p, j);
                        half_snake(y, _mm512_loadu_ps(al), _mm512_loadu_ps(inv), half)
                    }
                };
                _mm512_mask_storeu_ps(dst, mask, out);
            }
        }
    }
}

/// The panel kernel for weights in format `W` ([`W_F32`](super::simd::W_F32);
/// [`W_F16`]: halves widened with `vcvtph2ps`, exact; [`W_I16`]: the int16 values
/// widened exactly, the per-column scale applied once to the sum), all in the same
/// f32 FMA chain, in the micro-kernel shapes of blocking `B` (`Blocking as u8`).
///
/// # Safety
/// AVX-512F must be available and the tile's pointers valid (see `Tile`).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn tile<const W: u8, const B: u8>(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        if W == W_F32 && t.chain {
            panels::<W, B, true>(t)
        } else {
            panels::<W, B, false>(t)
        }
    }
}

/// [`tile`] with the tile's `chain` flag a constant (`CHAIN`), so the codecs'
/// kernels carry no trace of it.
///
/// # Safety
/// As [`tile`].
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn panels<const W: u8, const B: u8, const CHAIN: bool>(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        if B == Blocking::Causal as u8 {
            // A tile of at most 3 panels in one call: 8 rows × 3 panels or 12 × 2
            // (24 accumulators either way).
            match t.ncols.div_ceil(PANEL) {
                3 => by_row_groups!(
                    t,
                    [8, 7, 6, 5, 4, 3, 2],
                    micro::<_, 3, W, B, CHAIN>(0, t.ncols)
                ),
                2 => by_row_groups!(
                    t,
                    [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2],
                    micro::<_, 2, W, B, CHAIN>(0, t.ncols)
                ),
                _ => by_row_groups!(
                    t,
                    [8, 7, 6, 5, 4, 3, 2],
                    micro::<_, 1, W, B, CHAIN>(0, t.ncols)
                ),
            }
        } else if t.ncols == 4 * PANEL {
            by_row_groups!(t, [6, 5, 4, 3, 2], micro::<_, 4, W, B, CHAIN>(0, 4 * PANEL));
        } else {
            for p in 0..t.ncols.div_ceil(PANEL) {
                let nvalid = PANEL.min(t.ncols - p * PANEL);
                by_row_groups!(
                    t,
                    [6, 5, 4, 3, 2],
                    micro::<_, 1, W, B, CHAIN>(p * PANEL, nvalid)
                );
            }
        }
    }
}

/// Horizontal sum, pairing lanes (l, l+8), (l, l+4), (l, l+2), (l, l+1) like
/// the portable `reduce16`.
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn reduce16(v: __m512) -> f32 {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut l = [0f32; PANEL];
        _mm512_storeu_ps(l.as_mut_ptr(), v);
        super::portable::reduce16(&l)
    }
}

/// Narrow outputs: per (row, column) a 16-lane dot product over all taps. Blocks of
/// 6 rows × 2 columns share each weight load over the rows and each input load over
/// the columns (the output layer has 2 columns per group); every (row, column) sum
/// keeps its lane order, so the bits do not depend on the blocking.
///
/// # Safety
/// AVX-512F must be available and the tile's pointers valid; `t.b` points at
/// `ncols` weight rows of `taps·cin` floats.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn narrow(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        const R: usize = 6;
        let rows = t.a.len();
        let mut j = 0;
        while j < t.ncols {
            let paired = j + 2 <= t.ncols;
            let mut r0 = 0;
            while r0 + R <= rows {
                if paired {
                    narrow_block::<R, 2>(t, r0, j);
                } else {
                    narrow_block::<R, 1>(t, r0, j);
                }
                r0 += R;
            }
            while r0 < rows {
                if paired {
                    narrow_block::<1, 2>(t, r0, j);
                } else {
                    narrow_block::<1, 1>(t, r0, j);
                }
                r0 += 1;
            }
            j += if paired { 2 } else { 1 };
        }
    }
}

/// Rows `r0..r0 + R` × columns `j0..j0 + C` of [`narrow`].
///
/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn narrow_block<const R: usize, const C: usize>(t: &Tile<'_>, r0: usize, j0: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let full = t.cin / PANEL * PANEL;
        let tail = lane_mask(t.cin - full);
        let mut acc = [[_mm512_setzero_ps(); R]; C];
        for (ti, &off) in t.taps.iter().enumerate() {
            let w = |c: usize, ci: usize| t.b.add((j0 + c) * t.b_stride + ti * t.cin + ci);
            let mut ci = 0;
            while ci < full {
                let mut wv = [_mm512_setzero_ps(); C];
                for c in 0..C {
                    wv[c] = _mm512_loadu_ps(w(c, ci));
                }
                for m in 0..R {
                    let x = _mm512_loadu_ps(t.a[r0 + m].offset(off).add(ci));
                    for c in 0..C {
                        acc[c][m] = _mm512_fmadd_ps(x, wv[c], acc[c][m]);
                    }
                }
                ci += PANEL;
            }
            if full < t.cin {
                let mut wv = [_mm512_setzero_ps(); C];
                for c in 0..C {
                    wv[c] = _mm512_maskz_loadu_ps(tail, w(c, full));
                }
                for m in 0..R {
                    let x = _mm512_maskz_loadu_ps(tail, t.a[r0 + m].offset(off).add(full));
                    for c in 0..C {
                        acc[c][m] = _mm512_fmadd_ps(x, wv[c], acc[c][m]);
                    }
                }
            }
        }
        for c in 0..C {
            let j = j0 + c;
            for m in 0..R {
                let y = reduce16(acc[c][m]) + *t.bias.add(j);
                super::portable::finish(t, y, &mut *t.c[r0 + m].add(j), j);
            }
        }
    }
}
