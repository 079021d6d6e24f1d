//! The x86 kernels of the 4-bit palettised product: AVX-512 with VNNI (`vpshufb`
//! lookup, `vpdpbusd` on the split activation bytes) and AVX2 (`vpshufb` lookup,
//! `vpmaddwd`); the module doc of [`super`] describes both.

use super::{Lut4, QUAD_BYTES};
use crate::gemv_int8::{Act, BLOCK};
use crate::simd::prefetch_ahead as prefetch;
use std::arch::x86_64::*;

/// Up to 4 blocks (four memory streams) at once.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX-512VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn blocks_avx512(
    m: &Lut4,
    blocks: &[usize],
    act: &Act<'_>,
    sums: (i32, i32),
    out: &mut [f32],
    prefetch_bytes: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let quads = m.cols / 4;
        let mask = _mm256_set1_epi8(0x0f);
        // Each block's levels + 128 as bytes, replicated in the four 128-bit lanes.
        let mut lut = [_mm512_setzero_si512(); 4];
        for k in 0..blocks.len() {
            let mut bytes = [0u8; 16];
            for (d, &l) in bytes
                .iter_mut()
                .zip(&m.levels[(blocks[k]) * 16..(blocks[k]) * 16 + 16])
            {
                *d = (l as i16 + 128) as u8;
            }
            lut[k] = _mm512_broadcast_i32x4(_mm_loadu_si128(bytes.as_ptr() as *const __m128i));
        }
        let (hp, lp) = (act.hi.as_ptr() as *const i32, act.lo.as_ptr() as *const i32);
        let mut dh = [_mm512_setzero_si512(); 4];
        let mut dl = [_mm512_setzero_si512(); 4];
        for j in 0..quads {
            let h = _mm512_set1_epi32(hp.add(j).read_unaligned());
            let l = _mm512_set1_epi32(lp.add(j).read_unaligned());
            for k in 0..blocks.len() {
                let p = m
                    .packed
                    .as_ptr()
                    .add(((blocks[k]) * quads + j) * QUAD_BYTES);
                prefetch(p, prefetch_bytes);
                let b = _mm256_loadu_si256(p as *const __m256i);
                let lo = _mm256_and_si256(b, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
                let idx = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
                let w = _mm512_shuffle_epi8(lut[k], idx);
                dh[k] = _mm512_dpbusd_epi32(dh[k], w, h);
                dl[k] = _mm512_dpbusd_epi32(dl[k], w, l);
            }
        }
        // Undo the +128 level offset exactly, in integers: Σ(L+128)·x = Σ L·x + 128·Σx,
        // and add back the +128 of the shifted low byte: Σ L·xq = 256·Σ L·hi + Σ L·lo' + 128·Σ L.
        let ch = _mm512_set1_epi32(128 * sums.0);
        let cl = _mm512_set1_epi32(128 * sums.1);
        for k in 0..blocks.len() {
            let ls = _mm512_loadu_si512(m.lsum128.as_ptr().add((blocks[k]) * BLOCK) as *const _);
            let fh = _mm512_cvtepi32_ps(_mm512_sub_epi32(dh[k], ch));
            let fl = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_sub_epi32(dl[k], cl), ls));
            let d = _mm512_fmadd_ps(fh, _mm512_set1_ps(256.0), fl);
            let s = _mm512_set1_ps(m.scales[blocks[k]] * act.scale);
            _mm512_storeu_ps(out.as_mut_ptr().add(k * BLOCK), _mm512_mul_ps(d, s));
        }
    }
}

/// Quads per exact i32 partial sum in [`blocks_avx2`]: a lane (one row) gains
/// four products of an offset level (≤ 255) and an activation (|xq| ≤ 32767)
/// per quad, ≤ 33 422 340; 64 quads ≤ 2 139 029 760 < 2³¹ − 1.
const AVX2_CHUNK: usize = 64;

/// Up to 4 blocks (four memory streams) at once.
///
/// Per quad and block: 32 bytes → low/high nibbles → `vpshufb` with the block's
/// levels + 128 as bytes (rows 0–7 from the low nibbles, rows 8–15 from the
/// high ones). In each 16-bit lane the even byte (input t = 0 or 2) is
/// `w & 0xff` and the odd byte (t = 1 or 3) `w >> 8`; `vpmaddwd` with
/// `(x0, x2)` resp. `(x1, x3)` then leaves one row per 32-bit lane (no
/// horizontal fold). The i32 sums are exact per chunk of [`AVX2_CHUNK`] quads
/// and widened to f64 (exact) between chunks; the offset, `128·Σ xq` per row,
/// is subtracted exactly at the end, so `d` rounds to f32 exactly as the
/// portable `i64 as f32`.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn blocks_avx2(
    m: &Lut4,
    blocks: &[usize],
    act: &Act<'_>,
    out: &mut [f32],
    prefetch_bytes: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let pf = prefetch_bytes;
        match *blocks {
            [a] => blocks_avx2_n(m, [a], act, out, pf),
            [a, b] => blocks_avx2_n(m, [a, b], act, out, pf),
            [a, b, c] => blocks_avx2_n(m, [a, b, c], act, out, pf),
            [a, b, c, d] => blocks_avx2_n(m, [a, b, c, d], act, out, pf),
            _ => {
                for (k, c) in blocks.chunks(4).enumerate() {
                    blocks_avx2(m, c, act, &mut out[4 * k * BLOCK..], pf);
                }
            }
        }
    }
}

/// Offset levels `w` (32 bytes) × the quad's activations, added to `acc`
/// (one row per 32-bit lane).
///
/// # Safety
/// The CPU must support AVX2 (only called from the AVX2 kernels, into which it
/// is inlined).
#[inline(always)]
unsafe fn madd_levels(acc: __m256i, w: __m256i, xe: __m256i, xo: __m256i) -> __m256i {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let even = _mm256_and_si256(w, _mm256_set1_epi16(0xff));
        let odd = _mm256_srli_epi16(w, 8);
        let p = _mm256_add_epi32(_mm256_madd_epi16(even, xe), _mm256_madd_epi16(odd, xo));
        _mm256_add_epi32(acc, p)
    }
}

/// Adds 8 exact i32 row sums to two f64×4 totals.
///
/// # Safety
/// The CPU must support AVX2.
#[inline(always)]
unsafe fn widen(t: &mut [__m256d], s: __m256i) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        t[0] = _mm256_add_pd(t[0], _mm256_cvtepi32_pd(_mm256_castsi256_si128(s)));
        t[1] = _mm256_add_pd(t[1], _mm256_cvtepi32_pd(_mm256_extracti128_si256(s, 1)));
    }
}

/// [`blocks_avx2`] for exactly `N` blocks (accumulators stay in registers).
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn blocks_avx2_n<const N: usize>(
    m: &Lut4,
    blocks: [usize; N],
    act: &Act<'_>,
    out: &mut [f32],
    prefetch_bytes: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        assert!(out.len() >= N * BLOCK && act.xq.len() >= m.cols);
        let quads = m.cols / 4;
        let mask = _mm256_set1_epi8(0x0f);
        // Reorders each quad's (x0, x1, x2, x3) to (x0, x2, x1, x3).
        let pick = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15,
        ));
        let lut: [__m256i; N] = std::array::from_fn(|k| {
            let mut bytes = [0u8; 16];
            for (d, &l) in bytes.iter_mut().zip(&m.levels[blocks[k] * 16..][..16]) {
                *d = (l as i16 + 128) as u8;
            }
            _mm256_broadcastsi128_si256(_mm_loadu_si128(bytes.as_ptr() as *const __m128i))
        });
        // Bounds-checked once here: each block's `quads` quads.
        let base: [*const u8; N] = std::array::from_fn(|k| {
            let len = quads * QUAD_BYTES;
            m.packed[blocks[k] * len..][..len].as_ptr()
        });
        let xp = act.xq.as_ptr();
        // Per block: rows 0–3, 4–7, 8–11, 12–15.
        let mut total = [[_mm256_setzero_pd(); 4]; N];
        let mut j0 = 0;
        while j0 < quads {
            let j1 = (j0 + AVX2_CHUNK).min(quads);
            // The chunk's activations as (x0, x2), (x1, x3) pairs, so the inner loop
            // broadcasts them straight from memory.
            let mut pairs = [0i32; 2 * AVX2_CHUNK];
            let n = j1 - j0;
            let mut j = 0;
            while j + 4 <= n {
                let v = _mm256_loadu_si256(xp.add(4 * (j0 + j)) as *const __m256i);
                let d = pairs.as_mut_ptr().add(2 * j) as *mut __m256i;
                _mm256_storeu_si256(d, _mm256_shuffle_epi8(v, pick));
                j += 4;
            }
            for j in j..n {
                let x = |t: usize| *xp.add(4 * (j0 + j) + t) as u16 as i32;
                pairs[2 * j] = x(0) | x(2) << 16;
                pairs[2 * j + 1] = x(1) | x(3) << 16;
            }
            // Per block: rows 0–7 (low nibbles), rows 8–15 (high nibbles).
            let mut acc = [[_mm256_setzero_si256(); 2]; N];
            for j in j0..j1 {
                let xe = _mm256_set1_epi32(pairs[2 * (j - j0)]);
                let xo = _mm256_set1_epi32(pairs[2 * (j - j0) + 1]);
                for k in 0..N {
                    prefetch(base[k].add(j * QUAD_BYTES), prefetch_bytes);
                    let b = _mm256_loadu_si256(base[k].add(j * QUAD_BYTES) as *const __m256i);
                    let lo = _mm256_and_si256(b, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
                    acc[k][0] = madd_levels(acc[k][0], _mm256_shuffle_epi8(lut[k], lo), xe, xo);
                    acc[k][1] = madd_levels(acc[k][1], _mm256_shuffle_epi8(lut[k], hi), xe, xo);
                }
            }
            for k in 0..N {
                widen(&mut total[k][..2], acc[k][0]);
                widen(&mut total[k][2..], acc[k][1]);
            }
            j0 = j1;
        }
        // Σ (L + 128)·xq − 128·Σ xq = Σ L·xq, exact in f64.
        let xsum: i64 = act.xq[..m.cols].iter().map(|&v| v as i64).sum();
        let offset = _mm256_set1_pd(128.0 * xsum as f64);
        for k in 0..N {
            let s = _mm256_set1_ps(m.scales[blocks[k]] * act.scale);
            let t = total[k].map(|t| _mm256_cvtpd_ps(_mm256_sub_pd(t, offset)));
            let o = out.as_mut_ptr().add(k * BLOCK);
            _mm256_storeu_ps(o, _mm256_mul_ps(s, _mm256_set_m128(t[1], t[0])));
            _mm256_storeu_ps(o.add(8), _mm256_mul_ps(s, _mm256_set_m128(t[3], t[2])));
        }
    }
}
