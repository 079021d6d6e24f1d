//! Affine int8 weights (MLX layout, groups of 64 along the input) × activations
//! quantised to int16 with one scale per vector.
//!
//! `y[r] = sx · Σ_g (scale[r,g] · Σ_{i∈g} q[r,i]·xq[i] + bias[r,g] · Σ_{i∈g} xq[i])`.
//! The inner sums are exact integer arithmetic on every ISA (AVX-512 VNNI
//! `vpdpwssd`, AVX2 `vpmaddwd`, portable), so the paths differ only in the order
//! of the f32 group accumulation. int16 activations keep the activation error
//! (≈1/65534 of the largest entry) far below the int8 weight error, so accuracy
//! matches MLX's float-activation int8 matmul.

use crate::isa::Isa;

pub(crate) const GROUP: usize = 64;

/// One block of rows. `q`, `scales`, `biases` hold exactly these rows; `xq` the
/// quantised input, `xsum` its per-group sums, `sx` its scale.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rows(
    isa: Isa,
    q: &[u8],
    scales: &[f32],
    biases: &[f32],
    cols: usize,
    xq: &[i16],
    xsum: &[f32],
    sx: f32,
    y: &mut [f32],
) {
    debug_assert_eq!(q.len(), y.len() * cols);
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx512` is only selected when the CPU reports avx512f/bw/vnni.
        Isa::Avx512 => unsafe { x86::rows_avx512(q, scales, biases, cols, xq, xsum, sx, y) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx2` is only selected when the CPU reports avx2 and fma.
        Isa::Avx2 => {
            unsafe { x86::rows_avx2(q, scales, cols, xq, y) };
            crate::matrix::finish_affine(isa, y, biases, cols / GROUP, xsum, sx);
        }
        _ => {
            rows_portable(q, scales, cols, xq, y);
            crate::matrix::finish_affine(isa, y, biases, cols / GROUP, xsum, sx);
        }
    }
}

/// Writes `Σ_g scale[r,g]·Σ q·xq` (before the bias term and `sx`) into `y`.
fn rows_portable(q: &[u8], scales: &[f32], cols: usize, xq: &[i16], y: &mut [f32]) {
    let groups = cols / GROUP;
    for (r, out) in y.iter_mut().enumerate() {
        let mut acc = 0f32;
        for g in 0..groups {
            let qs = &q[r * cols + g * GROUP..r * cols + (g + 1) * GROUP];
            let xs = &xq[g * GROUP..(g + 1) * GROUP];
            let mut s = 0i32;
            for (&a, &b) in qs.iter().zip(xs) {
                s += a as i32 * b as i32;
            }
            acc += scales[r * groups + g] * s as f32;
        }
        *out = acc;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::GROUP;
    use std::arch::x86_64::*;

    /// One row's `Σ_g scale·Σ q·xq` as a 16-lane f32 accumulator update.
    #[inline(always)]
    unsafe fn group_dot(q: *const u8, xq: *const i16, scale: f32, acc: __m512) -> __m512 {
        let xa = _mm512_loadu_si512(xq as *const _);
        let xb = _mm512_loadu_si512(xq.add(32) as *const _);
        let qa = _mm512_cvtepu8_epi16(_mm256_loadu_si256(q as *const __m256i));
        let qb = _mm512_cvtepu8_epi16(_mm256_loadu_si256(q.add(32) as *const __m256i));
        let d = _mm512_dpwssd_epi32(_mm512_setzero_si512(), qa, xa);
        let d = _mm512_dpwssd_epi32(d, qb, xb);
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_set1_ps(scale), acc)
    }

    /// `sx · (Σ_g bias[r,g]·xsum[g] + acc)` for one row, the bias dot vectorised.
    #[inline(always)]
    unsafe fn finish(acc: __m512, biases: *const f32, xsum: &[f32], sx: f32) -> f32 {
        let groups = xsum.len();
        let mut b = _mm512_setzero_ps();
        let mut g = 0;
        while g + 16 <= groups {
            b = _mm512_fmadd_ps(
                _mm512_loadu_ps(biases.add(g)),
                _mm512_loadu_ps(xsum.as_ptr().add(g)),
                b,
            );
            g += 16;
        }
        let mut tail = 0f32;
        while g < groups {
            tail += *biases.add(g) * xsum[g];
            g += 1;
        }
        sx * (_mm512_reduce_add_ps(acc) + (_mm512_reduce_add_ps(b) + tail))
    }

    /// # Safety
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512VNNI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn rows_avx512(
        q: &[u8],
        scales: &[f32],
        biases: &[f32],
        cols: usize,
        xq: &[i16],
        xsum: &[f32],
        sx: f32,
        y: &mut [f32],
    ) {
        let groups = cols / GROUP;
        let n = y.len();
        let (qp, xp, sp, bp) = (q.as_ptr(), xq.as_ptr(), scales.as_ptr(), biases.as_ptr());
        // Rows r, r+s, r+2s, r+3s together: four memory streams in different pages,
        // which keeps more DRAM requests in flight than four adjacent rows.
        let s = n / 4;
        for r in 0..s {
            let rows = [r, r + s, r + 2 * s, r + 3 * s];
            let mut acc = [_mm512_setzero_ps(); 4];
            for g in 0..groups {
                for j in 0..4 {
                    acc[j] = group_dot(
                        qp.add(rows[j] * cols + g * GROUP),
                        xp.add(g * GROUP),
                        *sp.add(rows[j] * groups + g),
                        acc[j],
                    );
                }
            }
            for j in 0..4 {
                y[rows[j]] = finish(acc[j], bp.add(rows[j] * groups), xsum, sx);
            }
        }
        for r in 4 * s..n {
            let mut acc = _mm512_setzero_ps();
            for g in 0..groups {
                acc = group_dot(
                    qp.add(r * cols + g * GROUP),
                    xp.add(g * GROUP),
                    *sp.add(r * groups + g),
                    acc,
                );
            }
            y[r] = finish(acc, bp.add(r * groups), xsum, sx);
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum256(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps(v, 1);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rows_avx2(q: &[u8], scales: &[f32], cols: usize, xq: &[i16], y: &mut [f32]) {
        let groups = cols / GROUP;
        for (r, out) in y.iter_mut().enumerate() {
            let mut acc = _mm256_setzero_ps();
            for g in 0..groups {
                let mut d = _mm256_setzero_si256();
                for c in 0..4 {
                    let p = q.as_ptr().add(r * cols + g * GROUP + 16 * c);
                    let qv = _mm256_cvtepu8_epi16(_mm_loadu_si128(p as *const __m128i));
                    let xv =
                        _mm256_loadu_si256(xq.as_ptr().add(g * GROUP + 16 * c) as *const __m256i);
                    d = _mm256_add_epi32(d, _mm256_madd_epi16(qv, xv));
                }
                let sc = _mm256_set1_ps(*scales.get_unchecked(r * groups + g));
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), sc, acc);
            }
            *out = hsum256(acc);
        }
    }
}
