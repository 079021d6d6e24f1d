//! f32 weights × f32 activations: `y[r] = Σ_c w[r, c]·x[c]`.

use crate::isa::Isa;

/// Computes `y[i] = dot(w[i*cols..][..cols], x)` for every row of the block.
pub(crate) fn rows(isa: Isa, w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
    debug_assert_eq!(w.len(), y.len() * cols);
    debug_assert_eq!(x.len(), cols);
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx512` is only selected when the CPU reports avx512f.
        Isa::Avx512 => unsafe { x86::rows_avx512(w, cols, x, y) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx2` is only selected when the CPU reports avx2 and fma.
        Isa::Avx2 => unsafe { x86::rows_avx2(w, cols, x, y) },
        _ => rows_portable(w, cols, x, y),
    }
}

pub(crate) fn rows_portable(w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
    for (r, out) in y.iter_mut().enumerate() {
        *out = dot_portable(&w[r * cols..(r + 1) * cols], x);
    }
}

/// Dot product with 16 independent lanes (vectorises on any target).
pub(crate) fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let n16 = a.len() / 16 * 16;
    for (ca, cb) in a[..n16].chunks_exact(16).zip(b[..n16].chunks_exact(16)) {
        for l in 0..16 {
            acc[l] += ca[l] * cb[l];
        }
    }
    let mut s = 0f32;
    for v in acc {
        s += v;
    }
    for (va, vb) in a[n16..].iter().zip(&b[n16..]) {
        s += va * vb;
    }
    s
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn rows_avx512(w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
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
                a0 = _mm512_fmadd_ps(_mm512_loadu_ps(p.add(c)), xv, a0);
                a1 = _mm512_fmadd_ps(_mm512_loadu_ps(p.add(cols + c)), xv, a1);
                a2 = _mm512_fmadd_ps(_mm512_loadu_ps(p.add(2 * cols + c)), xv, a2);
                a3 = _mm512_fmadd_ps(_mm512_loadu_ps(p.add(3 * cols + c)), xv, a3);
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
                    *sk += *p.add(k * cols + cc) * x[cc];
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
                a = _mm512_fmadd_ps(_mm512_loadu_ps(p.add(c)), _mm512_loadu_ps(xp.add(c)), a);
                c += 16;
            }
            let mut s = _mm512_reduce_add_ps(a);
            for cc in n16..cols {
                s += *p.add(cc) * x[cc];
            }
            y[r] = s;
            r += 1;
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
    pub unsafe fn rows_avx2(w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
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
                a0 = _mm256_fmadd_ps(_mm256_loadu_ps(p.add(c)), xv, a0);
                a1 = _mm256_fmadd_ps(_mm256_loadu_ps(p.add(cols + c)), xv, a1);
                a2 = _mm256_fmadd_ps(_mm256_loadu_ps(p.add(2 * cols + c)), xv, a2);
                a3 = _mm256_fmadd_ps(_mm256_loadu_ps(p.add(3 * cols + c)), xv, a3);
                c += 8;
            }
            let mut s = [hsum256(a0), hsum256(a1), hsum256(a2), hsum256(a3)];
            for (k, sk) in s.iter_mut().enumerate() {
                for cc in n8..cols {
                    *sk += *p.add(k * cols + cc) * x[cc];
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
                a = _mm256_fmadd_ps(_mm256_loadu_ps(p.add(c)), _mm256_loadu_ps(xp.add(c)), a);
                c += 8;
            }
            let mut s = hsum256(a);
            for cc in n8..cols {
                s += *p.add(cc) * x[cc];
            }
            y[r] = s;
            r += 1;
        }
    }
}
