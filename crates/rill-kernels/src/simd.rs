//! Small SIMD helpers shared by the kernels of one architecture, and the software
//! prefetch of a weight stream that this crate's and the codec's kernels use.

/// Asks for the cache line `bytes` past `p` (the same weight stream further on);
/// 0 = nothing. A prefetch never faults, so reaching past the weights is harmless.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn prefetch_ahead(p: *const u8, bytes: usize) {
    if bytes > 0 {
        // SAFETY: SSE is part of x86-64, and a prefetch reads nothing the program sees.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                p.wrapping_add(bytes) as *const i8,
            )
        };
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Horizontal sum of 8 f32 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX.
    #[inline(always)]
    pub(crate) unsafe fn hsum256(v: __m256) -> f32 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            let lo = _mm256_castps256_ps128(v);
            let hi = _mm256_extractf128_ps(v, 1);
            let s = _mm_add_ps(lo, hi);
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
            _mm_cvtss_f32(s)
        }
    }
}

#[cfg(target_arch = "aarch64")]
pub(crate) use arm::*;

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;

    /// `acc += a·b` per 4-byte group (`SDOT`, FEAT_DotProd). `vdotq_s32` is not
    /// stable yet, so the instruction is written out.
    ///
    /// # Safety
    /// The CPU must support FEAT_DotProd.
    #[inline]
    #[target_feature(enable = "neon,dotprod")]
    pub(crate) unsafe fn sdot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            let mut acc = acc;
            // SAFETY: register-only arithmetic; the caller guarantees dotprod.
            std::arch::asm!(
                "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
                acc = inout(vreg) acc,
                a = in(vreg) a,
                b = in(vreg) b,
                options(pure, nomem, nostack)
            );
            acc
        }
    }
}
