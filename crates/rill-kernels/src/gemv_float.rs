//! Float weights × f32 activations with f32 accumulation:
//! `y[r] = Σ_c w[r, c]·x[c]`, for f32 weights and bf16 weights (widened exactly
//! to f32 in registers). One generic kernel per SIMD tier, parameterised by how a
//! weight element loads.

use crate::isa::Isa;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use crate::isa::Tier;

/// A weight element type the float GEMV can widen to f32.
pub(crate) trait FloatWeight: Copy {
    fn to_f32(self) -> f32;
    /// 16 weights as a zmm of f32.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load16(p: *const Self) -> std::arch::x86_64::__m512;
    /// 8 weights as a ymm of f32.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(p: *const Self) -> std::arch::x86_64::__m256;
    /// 4 weights as a NEON vector of f32.
    #[cfg(target_arch = "aarch64")]
    unsafe fn load4(p: *const Self) -> std::arch::aarch64::float32x4_t;
}

impl FloatWeight for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(p: *const f32) -> std::arch::x86_64::__m512 {
        std::arch::x86_64::_mm512_loadu_ps(p)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const f32) -> std::arch::x86_64::__m256 {
        std::arch::x86_64::_mm256_loadu_ps(p)
    }
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn load4(p: *const f32) -> std::arch::aarch64::float32x4_t {
        std::arch::aarch64::vld1q_f32(p)
    }
}

/// bf16 bit patterns (the high half of an f32).
impl FloatWeight for u16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16_to_f32(self)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(p: *const u16) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        let h = _mm256_loadu_si256(p as *const __m256i);
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const u16) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        let h = _mm_loadu_si128(p as *const __m128i);
        _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
    }
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn load4(p: *const u16) -> std::arch::aarch64::float32x4_t {
        use std::arch::aarch64::*;
        vreinterpretq_f32_u32(vshll_n_u16::<16>(vld1_u16(p)))
    }
}

#[inline]
pub(crate) fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// Computes `y[i] = dot(w[i*cols..][..cols], x)` for every row of the block.
pub(crate) fn rows<W: FloatWeight>(isa: Isa, w: &[W], cols: usize, x: &[f32], y: &mut [f32]) {
    debug_assert_eq!(w.len(), y.len() * cols);
    debug_assert_eq!(x.len(), cols);
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of tier AVX-512 comes only from detecting avx512f/bw.
        Tier::Avx512 => unsafe { x86::rows_avx512(w, cols, x, y) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of tier AVX2 comes only from detecting avx2, fma and f16c.
        Tier::Avx2 => unsafe { x86::rows_avx2(w, cols, x, y) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: an `Isa` of tier NEON comes only from detecting neon.
        Tier::Neon => unsafe { arm::rows_neon(w, cols, x, y) },
        _ => rows_portable(w, cols, x, y),
    }
}

/// 16 independent lanes per row (vectorises on any target).
fn rows_portable<W: FloatWeight>(w: &[W], cols: usize, x: &[f32], y: &mut [f32]) {
    for (r, out) in y.iter_mut().enumerate() {
        let row = &w[r * cols..(r + 1) * cols];
        let mut acc = [0f32; 16];
        let n16 = cols / 16 * 16;
        for (cw, cx) in row[..n16].chunks_exact(16).zip(x[..n16].chunks_exact(16)) {
            for l in 0..16 {
                acc[l] += cw[l].to_f32() * cx[l];
            }
        }
        let mut s = 0f32;
        for v in acc {
            s += v;
        }
        for (vw, vx) in row[n16..].iter().zip(&x[n16..]) {
            s += vw.to_f32() * vx;
        }
        *out = s;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::FloatWeight;
    use crate::simd::hsum256;
    use std::arch::x86_64::*;

    /// Four rows at a time (one x load feeds four FMA chains), taken from the four
    /// quarters of the block: four memory streams in different pages keep more DRAM
    /// requests in flight than adjacent rows (measured: cold f32 25 → 34–42 GB/s,
    /// bf16 16 → 31–35 GB/s on 2 threads).
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX-512BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn rows_avx512<W: FloatWeight>(w: &[W], cols: usize, x: &[f32], y: &mut [f32]) {
        let n16 = cols / 16 * 16;
        let xp = x.as_ptr();
        let tail = |p: *const W, s: &mut f32| {
            for c in n16..cols {
                *s += (*p.add(c)).to_f32() * x[c];
            }
        };
        // Rows r, r+s, r+2s, r+3s together: four memory streams in different pages.
        let s = y.len() / 4;
        for r in 0..s {
            let rows = [r, r + s, r + 2 * s, r + 3 * s];
            let mut a = [_mm512_setzero_ps(); 4];
            let mut c = 0;
            while c < n16 {
                let xv = _mm512_loadu_ps(xp.add(c));
                for k in 0..4 {
                    a[k] = _mm512_fmadd_ps(W::load16(w.as_ptr().add(rows[k] * cols + c)), xv, a[k]);
                }
                c += 16;
            }
            for k in 0..4 {
                let mut sum = _mm512_reduce_add_ps(a[k]);
                tail(w.as_ptr().add(rows[k] * cols), &mut sum);
                y[rows[k]] = sum;
            }
        }
        for r in 4 * s..y.len() {
            let p = w.as_ptr().add(r * cols);
            let mut a = _mm512_setzero_ps();
            let mut c = 0;
            while c < n16 {
                a = _mm512_fmadd_ps(W::load16(p.add(c)), _mm512_loadu_ps(xp.add(c)), a);
                c += 16;
            }
            let mut sum = _mm512_reduce_add_ps(a);
            tail(p, &mut sum);
            y[r] = sum;
        }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rows_avx2<W: FloatWeight>(w: &[W], cols: usize, x: &[f32], y: &mut [f32]) {
        let n8 = cols / 8 * 8;
        let xp = x.as_ptr();
        let tail = |p: *const W, s: &mut f32| {
            for c in n8..cols {
                *s += (*p.add(c)).to_f32() * x[c];
            }
        };
        // Four distant rows at a time, as the AVX-512 kernel.
        let s = y.len() / 4;
        for r in 0..s {
            let rows = [r, r + s, r + 2 * s, r + 3 * s];
            let mut a = [_mm256_setzero_ps(); 4];
            let mut c = 0;
            while c < n8 {
                let xv = _mm256_loadu_ps(xp.add(c));
                for k in 0..4 {
                    a[k] = _mm256_fmadd_ps(W::load8(w.as_ptr().add(rows[k] * cols + c)), xv, a[k]);
                }
                c += 8;
            }
            for k in 0..4 {
                let mut sum = hsum256(a[k]);
                tail(w.as_ptr().add(rows[k] * cols), &mut sum);
                y[rows[k]] = sum;
            }
        }
        for r in 4 * s..y.len() {
            let p = w.as_ptr().add(r * cols);
            let mut a = _mm256_setzero_ps();
            let mut c = 0;
            while c < n8 {
                a = _mm256_fmadd_ps(W::load8(p.add(c)), _mm256_loadu_ps(xp.add(c)), a);
                c += 8;
            }
            let mut sum = hsum256(a);
            tail(p, &mut sum);
            y[r] = sum;
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::FloatWeight;
    use std::arch::aarch64::*;

    /// Four distant rows at a time (four memory streams, as the x86 kernels), each
    /// with two accumulators so the FMA latency is hidden.
    ///
    /// # Safety
    /// The CPU must support NEON.
    #[target_feature(enable = "neon")]
    pub unsafe fn rows_neon<W: FloatWeight>(w: &[W], cols: usize, x: &[f32], y: &mut [f32]) {
        let n8 = cols / 8 * 8;
        let xp = x.as_ptr();
        let tail = |p: *const W, s: &mut f32| {
            for c in n8..cols {
                *s += (*p.add(c)).to_f32() * x[c];
            }
        };
        let s = y.len() / 4;
        for r in 0..s {
            let rows = [r, r + s, r + 2 * s, r + 3 * s];
            let mut a = [[vdupq_n_f32(0.0); 2]; 4];
            let mut c = 0;
            while c < n8 {
                let x0 = vld1q_f32(xp.add(c));
                let x1 = vld1q_f32(xp.add(c + 4));
                for k in 0..4 {
                    let p = w.as_ptr().add(rows[k] * cols + c);
                    a[k][0] = vfmaq_f32(a[k][0], W::load4(p), x0);
                    a[k][1] = vfmaq_f32(a[k][1], W::load4(p.add(4)), x1);
                }
                c += 8;
            }
            for k in 0..4 {
                let mut sum = vaddvq_f32(vaddq_f32(a[k][0], a[k][1]));
                tail(w.as_ptr().add(rows[k] * cols), &mut sum);
                y[rows[k]] = sum;
            }
        }
        for r in 4 * s..y.len() {
            let p = w.as_ptr().add(r * cols);
            let mut a = [vdupq_n_f32(0.0); 2];
            let mut c = 0;
            while c < n8 {
                a[0] = vfmaq_f32(a[0], W::load4(p.add(c)), vld1q_f32(xp.add(c)));
                a[1] = vfmaq_f32(a[1], W::load4(p.add(c + 4)), vld1q_f32(xp.add(c + 4)));
                c += 8;
            }
            let mut sum = vaddvq_f32(vaddq_f32(a[0], a[1]));
            tail(p, &mut sum);
            y[r] = sum;
        }
    }
}
