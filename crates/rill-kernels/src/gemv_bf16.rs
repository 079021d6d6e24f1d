//! bf16 weights × f32 activations with f32 accumulation (weights widened exactly).

use crate::isa::Isa;

#[inline]
pub(crate) fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// Computes `y[i] = dot(widen(w[i*cols..][..cols]), x)` for every row of the block.
pub(crate) fn rows(isa: Isa, w: &[u16], cols: usize, x: &[f32], y: &mut [f32]) {
    debug_assert_eq!(w.len(), y.len() * cols);
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx512` is only selected when the CPU reports avx512f/bw.
        Isa::Avx512 => unsafe { x86::rows_avx512(w, cols, x, y) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx2` is only selected when the CPU reports avx2 and fma.
        Isa::Avx2 => unsafe { x86::rows_avx2(w, cols, x, y) },
        _ => rows_portable(w, cols, x, y),
    }
}

pub(crate) fn rows_portable(w: &[u16], cols: usize, x: &[f32], y: &mut [f32]) {
    for (r, out) in y.iter_mut().enumerate() {
        let row = &w[r * cols..(r + 1) * cols];
        let mut acc = [0f32; 16];
        let n16 = cols / 16 * 16;
        for (cw, cx) in row[..n16].chunks_exact(16).zip(x[..n16].chunks_exact(16)) {
            for l in 0..16 {
                acc[l] += bf16_to_f32(cw[l]) * cx[l];
            }
        }
        let mut s = 0f32;
        for v in acc {
            s += v;
        }
        for (vw, vx) in row[n16..].iter().zip(&x[n16..]) {
            s += bf16_to_f32(*vw) * vx;
        }
        *out = s;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::bf16_to_f32;
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn widen16(p: *const u16) -> __m512 {
        let h = _mm256_loadu_si256(p as *const __m256i);
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
    }

    /// # Safety
    /// The CPU must support AVX-512F and AVX-512BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn rows_avx512(w: &[u16], cols: usize, x: &[f32], y: &mut [f32]) {
        let n16 = cols / 16 * 16;
        let xp = x.as_ptr();
        let mut r = 0;
        while r + 4 <= y.len() {
            let p = w.as_ptr().add(r * cols);
            let (mut a0, mut a1, mut a2, mut a3) = (
                _mm512_setzero_ps(),
                _mm512_setzero_ps(),
                _mm512_setzero_ps(),
                _mm512_setzero_ps(),
            );
            let mut c = 0;
            while c < n16 {
                let xv = _mm512_loadu_ps(xp.add(c));
                a0 = _mm512_fmadd_ps(widen16(p.add(c)), xv, a0);
                a1 = _mm512_fmadd_ps(widen16(p.add(cols + c)), xv, a1);
                a2 = _mm512_fmadd_ps(widen16(p.add(2 * cols + c)), xv, a2);
                a3 = _mm512_fmadd_ps(widen16(p.add(3 * cols + c)), xv, a3);
                c += 16;
            }
            let mut s = [
                _mm512_reduce_add_ps(a0),
                _mm512_reduce_add_ps(a1),
                _mm512_reduce_add_ps(a2),
                _mm512_reduce_add_ps(a3),
            ];
            for (k, sk) in s.iter_mut().enumerate() {
                for cc in n16..cols {
                    *sk += bf16_to_f32(*p.add(k * cols + cc)) * x[cc];
                }
            }
            y[r..r + 4].copy_from_slice(&s);
            r += 4;
        }
        while r < y.len() {
            let p = w.as_ptr().add(r * cols);
            let mut a = _mm512_setzero_ps();
            let mut c = 0;
            while c < n16 {
                a = _mm512_fmadd_ps(widen16(p.add(c)), _mm512_loadu_ps(xp.add(c)), a);
                c += 16;
            }
            let mut s = _mm512_reduce_add_ps(a);
            for cc in n16..cols {
                s += bf16_to_f32(*p.add(cc)) * x[cc];
            }
            y[r] = s;
            r += 1;
        }
    }

    #[inline(always)]
    unsafe fn widen8(p: *const u16) -> __m256 {
        let h = _mm_loadu_si128(p as *const __m128i);
        _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
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
    pub unsafe fn rows_avx2(w: &[u16], cols: usize, x: &[f32], y: &mut [f32]) {
        let n8 = cols / 8 * 8;
        let xp = x.as_ptr();
        let mut r = 0;
        while r + 4 <= y.len() {
            let p = w.as_ptr().add(r * cols);
            let (mut a0, mut a1, mut a2, mut a3) = (
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
            );
            let mut c = 0;
            while c < n8 {
                let xv = _mm256_loadu_ps(xp.add(c));
                a0 = _mm256_fmadd_ps(widen8(p.add(c)), xv, a0);
                a1 = _mm256_fmadd_ps(widen8(p.add(cols + c)), xv, a1);
                a2 = _mm256_fmadd_ps(widen8(p.add(2 * cols + c)), xv, a2);
                a3 = _mm256_fmadd_ps(widen8(p.add(3 * cols + c)), xv, a3);
                c += 8;
            }
            let mut s = [hsum256(a0), hsum256(a1), hsum256(a2), hsum256(a3)];
            for (k, sk) in s.iter_mut().enumerate() {
                for cc in n8..cols {
                    *sk += bf16_to_f32(*p.add(k * cols + cc)) * x[cc];
                }
            }
            y[r..r + 4].copy_from_slice(&s);
            r += 4;
        }
        while r < y.len() {
            let p = w.as_ptr().add(r * cols);
            let mut a = _mm256_setzero_ps();
            let mut c = 0;
            while c < n8 {
                a = _mm256_fmadd_ps(widen8(p.add(c)), _mm256_loadu_ps(xp.add(c)), a);
                c += 8;
            }
            let mut s = hsum256(a);
            for cc in n8..cols {
                s += bf16_to_f32(*p.add(cc)) * x[cc];
            }
            y[r] = s;
            r += 1;
        }
    }
}
