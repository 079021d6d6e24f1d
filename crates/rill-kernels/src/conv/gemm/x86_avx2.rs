//! AVX2 + FMA kernels of both codecs: one micro-kernel, 6 rows × 16 columns (12 ymm
//! accumulators, 2 weight vectors, 1 broadcast), whatever the blocking (which sets
//! only the prefetch distance, [`super::simd::prefetch_bytes`]); the ELU and the
//! HalfSnake on 8 lanes; and a dot-product kernel for narrow outputs. Same FMA
//! order, ELU polynomial and HalfSnake operations as the AVX-512 path, so both
//! tiers produce identical bits.
//!
//! Index loops over the fixed-size accumulator arrays are deliberate: with constant
//! bounds they unroll into straight register code (hence the clippy allowances).
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

use super::portable::{COS, DP1, DP2, DP3, FOPI, LRELU_SLOPE, SIN};
use super::simd::{prefetch_ahead, EXP_LN2_HI, EXP_LN2_LO, EXP_MIN, EXP_POLY, W_F16, W_F32, W_I16};
use super::{Epilogue, SnakeParams, Tile, PANEL};
use crate::conv::by_row_groups;

/// Lanes per vector.
const H: usize = 8;

// Not folded with the AVX-512 twins: 8-lane ymm intrinsics and blendv / maskload
// where AVX-512 has 16-lane zmm and mask registers (only the row blocking is shared).

/// `exp(min(x, 0))`, operation for operation the AVX-512 `exp_nonpos`.
///
/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_nonpos(x: __m256) -> __m256 {
    let x = _mm256_max_ps(
        _mm256_set1_ps(EXP_MIN),
        _mm256_min_ps(_mm256_setzero_ps(), x),
    );
    let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
        x,
        _mm256_set1_ps(std::f32::consts::LOG2_E),
    ));
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_HI), x);
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_LO), r);
    let mut p = _mm256_set1_ps(EXP_POLY[0]);
    for &c in &EXP_POLY[1..] {
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
    }
    let y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    let y = _mm256_add_ps(y, _mm256_set1_ps(1.0));
    let e = _mm256_slli_epi32::<23>(_mm256_add_epi32(
        _mm256_cvtps_epi32(n),
        _mm256_set1_epi32(127),
    ));
    _mm256_mul_ps(y, _mm256_castsi256_ps(e))
}

/// # Safety
/// The CPU supports this function's target features (register arithmetic only).
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn elu(x: __m256) -> __m256 {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let pos = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_setzero_ps());
        let em1 = _mm256_sub_ps(exp_nonpos(x), _mm256_set1_ps(1.0));
        _mm256_blendv_ps(em1, x, pos)
    }
}

/// `dst[i] = elu(src[i])` for `i < n`; `src` may equal `dst` (in place).
///
/// # Safety
/// AVX2 and FMA must be available; `src`/`dst` valid for `n` floats.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn elu_raw(src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut i = 0;
        while i + 8 <= n {
            let v = _mm256_loadu_ps(src.add(i));
            _mm256_storeu_ps(dst.add(i), elu(v));
            i += 8;
        }
        if i < n {
            let mut tmp = [0f32; 8];
            std::ptr::copy_nonoverlapping(src.add(i), tmp.as_mut_ptr(), n - i);
            let mut out = [0f32; 8];
            _mm256_storeu_ps(out.as_mut_ptr(), elu(_mm256_loadu_ps(tmp.as_ptr())));
            std::ptr::copy_nonoverlapping(out.as_ptr(), dst.add(i), n - i);
        }
    }
}

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

/// HalfSnake of 8 lanes whose first `snake_lanes` (saturating) are snake lanes.
///
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
pub(crate) unsafe fn half_snake_run(p: &SnakeParams, src: *const f32, dst: *mut f32) {
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

/// `M` rows × one 16-column panel `p` of the tile, `nvalid` columns of it valid,
/// for weight format `W` and blocking `B` (the prefetch distance).
///
/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn micro<const M: usize, const W: u8, const B: u8, const CHAIN: bool>(
    t: &Tile<'_>,
    a: &[*const f32],
    c: &[*mut f32],
    p: usize,
    nvalid: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; M];
        if CHAIN {
            // A GEMM blocked over k: the chains go on from the sums at `c`.
            for m in 0..M {
                let src = c[m].add(p * PANEL);
                for h in 0..2 {
                    if nvalid >= H * (h + 1) {
                        acc[m][h] = _mm256_loadu_ps(src.add(H * h));
                    } else if nvalid > H * h {
                        acc[m][h] = _mm256_maskload_ps(src.add(H * h), lanes_below(nvalid - H * h));
                    }
                }
            }
        }
        // Only the pointer of format `W` is non-null; wrapping arithmetic keeps the
        // unused ones well-defined.
        let mut bp = t.b.wrapping_add(p * t.b_stride);
        let mut bh = t.b16.wrapping_add(p * t.b_stride);
        let mut bq = t.bq.wrapping_add(p * t.b_stride);
        let sc = t.bscale.wrapping_add(p * PANEL);
        for &off in t.taps {
            let mut ap = [std::ptr::null::<f32>(); M];
            for m in 0..M {
                ap[m] = a[m].offset(off);
            }
            for ci in 0..t.cin {
                let (b0, b1) = match W {
                    W_F16 => (
                        {
                            prefetch_ahead::<W, B, _>(bh);
                            _mm256_cvtph_ps(_mm_loadu_si128(bh as *const __m128i))
                        },
                        _mm256_cvtph_ps(_mm_loadu_si128(bh.add(8) as *const __m128i)),
                    ),
                    W_I16 => {
                        prefetch_ahead::<W, B, _>(bq);
                        let q = _mm256_loadu_si256(bq as *const __m256i);
                        let lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(q));
                        let hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256::<1>(q));
                        (_mm256_cvtepi32_ps(lo), _mm256_cvtepi32_ps(hi))
                    }
                    _ => {
                        prefetch_ahead::<W, B, _>(bp);
                        (_mm256_loadu_ps(bp), _mm256_loadu_ps(bp.add(8)))
                    }
                };
                for m in 0..M {
                    let av = _mm256_broadcast_ss(&*ap[m].add(ci));
                    acc[m][0] = _mm256_fmadd_ps(av, b0, acc[m][0]);
                    acc[m][1] = _mm256_fmadd_ps(av, b1, acc[m][1]);
                }
                bp = bp.wrapping_add(PANEL);
                bh = bh.wrapping_add(PANEL);
                bq = bq.wrapping_add(PANEL);
            }
        }
        // Copy out before the epilogue so `acc` stays in registers (see the AVX-512 kernel).
        let mut res = [[_mm256_setzero_ps(); 2]; M];
        for m in 0..M {
            res[m] = acc[m];
            if W == W_I16 {
                // The int16 chain summed `a·q`; the column scale applies once.
                for h in 0..2 {
                    res[m][h] = _mm256_mul_ps(res[m][h], _mm256_loadu_ps(sc.add(8 * h)));
                }
            }
        }
        epilogue::<M, CHAIN>(t, &res, c, p, nvalid);
    }
}

/// `epi(acc + bias)` for the 8 columns from tile column `col` of the row at `dst`
/// (Accumulate reads them: all 8 if `FULL`, else the lanes of `mask`).
///
/// # Safety
/// The CPU supports this function's target features; with
/// `Epilogue::Accumulate`, `dst` is valid for the lanes it reads.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn finish<const FULL: bool>(
    t: &Tile<'_>,
    acc: __m256,
    bias: __m256,
    dst: *const f32,
    mask: __m256i,
    col: usize,
) -> __m256 {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let y = _mm256_add_ps(acc, bias);
        match t.epi {
            Epilogue::Store => y,
            Epilogue::Elu => elu(y),
            Epilogue::Accumulate if FULL => _mm256_add_ps(_mm256_loadu_ps(dst), y),
            Epilogue::Accumulate => _mm256_add_ps(_mm256_maskload_ps(dst, mask), y),
            Epilogue::Snake(p) => {
                // The parameters are padded to whole panels.
                let (al, inv, half) = t.snake_at(p, col);
                half_snake(y, _mm256_loadu_ps(al), _mm256_loadu_ps(inv), half)
            }
        }
    }
}

/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline(never)]
#[target_feature(enable = "avx2,fma")]
unsafe fn epilogue<const M: usize, const CHAIN: bool>(
    t: &Tile<'_>,
    res: &[[__m256; 2]; M],
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
                for h in 0..2 {
                    if nvalid >= H * (h + 1) {
                        _mm256_storeu_ps(dst.add(H * h), acc[h]);
                    } else if nvalid > H * h {
                        _mm256_maskstore_ps(dst.add(H * h), lanes_below(nvalid - H * h), acc[h]);
                    }
                }
            }
            return;
        }
        // Bias (and snake parameters) are padded to whole panels.
        let bias = [
            _mm256_loadu_ps(t.bias.add(j)),
            _mm256_loadu_ps(t.bias.add(j + H)),
        ];
        let all = _mm256_set1_epi32(-1);
        for (m, acc) in res.iter().enumerate() {
            let dst = c[m].add(j);
            if nvalid == PANEL {
                // A whole panel (every column count of SpectroStream's decoder is a
                // multiple of 16): straight to the output, no masked stores.
                for h in 0..2 {
                    let d = dst.add(H * h);
                    let o = finish::<true>(t, acc[h], bias[h], d, all, j + H * h);
                    _mm256_storeu_ps(d, o);
                }
                continue;
            }
            for h in 0..2 {
                if H * h >= nvalid {
                    break;
                }
                let mask = lanes_below(nvalid - H * h);
                let d = dst.add(H * h);
                let o = finish::<false>(t, acc[h], bias[h], d, mask, j + H * h);
                _mm256_maskstore_ps(d, mask, o);
            }
        }
    }
}

/// The panel kernel for weights in format `W`, widened to f32 in registers (int16:
/// the column scale multiplies each sum once, as on AVX-512 and NEON), with the
/// prefetch distance of blocking `B` (`Blocking as u8`).
///
/// # Safety
/// AVX2, FMA and F16C must be available and the tile's pointers valid (see `Tile`).
#[target_feature(enable = "avx2,fma,f16c")]
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
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn panels<const W: u8, const B: u8, const CHAIN: bool>(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for p in 0..t.ncols.div_ceil(PANEL) {
            let nvalid = PANEL.min(t.ncols - p * PANEL);
            by_row_groups!(t, [6, 5, 4, 3, 2], micro::<_, W, B, CHAIN>(p, nvalid));
        }
    }
}

/// Narrow outputs (`ncols < 16`): per (row, column) a 16-lane dot product over all
/// taps, as two 8-lane halves. Lane for lane the same FMAs and the same final
/// reduction as the AVX-512 `narrow`, so the two tiers agree bit for bit.
///
/// Columns go in pairs over two rows at a time, so each input load feeds two FMAs
/// (8 loads per 8 FMAs: the load ports keep up with the FMA ports; one column over
/// four rows took 10); an odd last column goes over four rows.
///
/// # Safety
/// AVX2 and FMA must be available and the tile's pointers valid; `t.b` points at
/// `ncols` weight rows of `taps·cin` floats.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn narrow(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let rows = t.a.len();
        let rest = t.cin % PANEL;
        // Lanes of the tail chunk that exist (the others load as zero, like a mask).
        let lanes: [i32; PANEL] = std::array::from_fn(|l| if l < rest { -1 } else { 0 });
        let mask = [
            _mm256_loadu_si256(lanes.as_ptr() as *const __m256i),
            _mm256_loadu_si256(lanes.as_ptr().add(8) as *const __m256i),
        ];
        let mut j = 0;
        while j + 2 <= t.ncols {
            let mut r0 = 0;
            while r0 + 2 <= rows {
                narrow_block::<2, 2>(t, r0, j, mask);
                r0 += 2;
            }
            if r0 < rows {
                narrow_block::<1, 2>(t, r0, j, mask);
            }
            j += 2;
        }
        if j < t.ncols {
            let mut r0 = 0;
            while r0 + 4 <= rows {
                narrow_block::<4, 1>(t, r0, j, mask);
                r0 += 4;
            }
            while r0 < rows {
                narrow_block::<1, 1>(t, r0, j, mask);
                r0 += 1;
            }
        }
    }
}

/// Rows `r0..r0 + R` × columns `j0..j0 + C` of [`narrow`]: every weight load feeds
/// `R` FMAs and every input load `C`.
///
/// # Safety
/// The CPU supports this function's target features, and the tile's pointers
/// are valid for the rows and columns it covers (see `Tile`).
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn narrow_block<const R: usize, const C: usize>(
    t: &Tile<'_>,
    r0: usize,
    j0: usize,
    mask: [__m256i; 2],
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let full = t.cin / PANEL * PANEL;
        let mut lo = [[_mm256_setzero_ps(); R]; C];
        let mut hi = [[_mm256_setzero_ps(); R]; C];
        for (ti, &off) in t.taps.iter().enumerate() {
            let w = |c: usize, ci: usize| t.b.add((j0 + c) * t.b_stride + ti * t.cin + ci);
            let mut ci = 0;
            while ci < full {
                let mut w0 = [_mm256_setzero_ps(); C];
                let mut w1 = [_mm256_setzero_ps(); C];
                for c in 0..C {
                    w0[c] = _mm256_loadu_ps(w(c, ci));
                    w1[c] = _mm256_loadu_ps(w(c, ci + 8));
                }
                for m in 0..R {
                    let x = t.a[r0 + m].offset(off).add(ci);
                    let (x0, x1) = (_mm256_loadu_ps(x), _mm256_loadu_ps(x.add(8)));
                    for c in 0..C {
                        lo[c][m] = _mm256_fmadd_ps(x0, w0[c], lo[c][m]);
                        hi[c][m] = _mm256_fmadd_ps(x1, w1[c], hi[c][m]);
                    }
                }
                ci += PANEL;
            }
            if full < t.cin {
                let mut w0 = [_mm256_setzero_ps(); C];
                let mut w1 = [_mm256_setzero_ps(); C];
                for c in 0..C {
                    w0[c] = _mm256_maskload_ps(w(c, full), mask[0]);
                    w1[c] = _mm256_maskload_ps(w(c, full + 8), mask[1]);
                }
                for m in 0..R {
                    let x = t.a[r0 + m].offset(off).add(full);
                    let x0 = _mm256_maskload_ps(x, mask[0]);
                    let x1 = _mm256_maskload_ps(x.add(8), mask[1]);
                    for c in 0..C {
                        lo[c][m] = _mm256_fmadd_ps(x0, w0[c], lo[c][m]);
                        hi[c][m] = _mm256_fmadd_ps(x1, w1[c], hi[c][m]);
                    }
                }
            }
        }
        for c in 0..C {
            let j = j0 + c;
            for m in 0..R {
                let mut l = [0f32; PANEL];
                _mm256_storeu_ps(l.as_mut_ptr(), lo[c][m]);
                _mm256_storeu_ps(l.as_mut_ptr().add(8), hi[c][m]);
                let y = super::portable::reduce16(&l) + *t.bias.add(j);
                super::portable::finish(t, y, &mut *t.c[r0 + m].add(j), j);
            }
        }
    }
}
