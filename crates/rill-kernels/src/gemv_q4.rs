//! MLX-style affine int4 weights (groups of 32 along the input) × int16
//! activations: exact integer group sums (`vpdpwssd` / `vpmaddwd` / portable).
//!
//! Packing (also the file format of 4-bit palette indices): per run of 32
//! consecutive weights of a row, byte `j` (0..16) holds weight `j` in its low
//! nibble and weight `j + 16` in its high nibble, so one 16-byte load unpacks into
//! weights 0..15 and 16..31 with a mask and a shift.

use crate::isa::Isa;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use crate::isa::Tier;

pub(crate) const AFFINE_GROUP: usize = 32;
pub(crate) const PALETTE_ROWS: usize = 16;

/// Packs one index/quant value per byte (values < 16) into the nibble layout.
pub(crate) fn pack(values: &[u8]) -> Vec<u8> {
    assert!(
        values.len().is_multiple_of(32),
        "4-bit packing needs runs of 32"
    );
    let mut out = vec![0u8; values.len() / 2];
    for (run, dst) in values.chunks_exact(32).zip(out.chunks_exact_mut(16)) {
        for j in 0..16 {
            dst[j] = (run[j] & 0x0f) | (run[j + 16] << 4);
        }
    }
    out
}

/// The value of weight `i` (flat index within the row-major matrix).
#[inline]
pub(crate) fn unpack_at(packed: &[u8], i: usize) -> u8 {
    let run = i / 32;
    let j = i % 32;
    let b = packed[run * 16 + (j % 16)];
    if j < 16 {
        b & 0x0f
    } else {
        b >> 4
    }
}

/// Affine int4 block: writes `Σ_g scale·Σ q·xq` (bias term and `sx` added by the caller).
pub(crate) fn affine_rows(
    isa: Isa,
    packed: &[u8],
    scales: &[f32],
    cols: usize,
    xq: &[i16],
    y: &mut [f32],
) {
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` with VNNI comes only from detecting avx512f/bw/vnni.
        Tier::Avx512 if isa.vnni() => unsafe { x86::affine_avx512(packed, scales, cols, xq, y) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
        Tier::Avx2 | Tier::Avx512 => unsafe { x86::affine_avx2(packed, scales, cols, xq, y) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: an `Isa` of tier NEON comes only from detecting neon.
        Tier::Neon => unsafe { arm::affine_neon(packed, scales, cols, xq, y) },
        _ => affine_portable(packed, scales, cols, xq, y),
    }
}

fn affine_portable(packed: &[u8], scales: &[f32], cols: usize, xq: &[i16], y: &mut [f32]) {
    let groups = cols / AFFINE_GROUP;
    for (r, out) in y.iter_mut().enumerate() {
        let row = &packed[r * cols / 2..(r + 1) * cols / 2];
        let mut acc = 0f32;
        for g in 0..groups {
            let b = &row[g * 16..g * 16 + 16];
            let xs = &xq[g * 32..g * 32 + 32];
            let mut s = 0i32;
            for j in 0..16 {
                s += (b[j] & 0x0f) as i32 * xs[j] as i32 + (b[j] >> 4) as i32 * xs[j + 16] as i32;
            }
            acc += scales[r * groups + g] * s as f32;
        }
        *out = acc;
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::AFFINE_GROUP;
    use std::arch::aarch64::*;

    /// Nibbles widened to int16 and multiplied with a widening multiply-accumulate
    /// (`SMLAL`): exact integer group sums, and the f32 accumulation in the order of
    /// the portable kernel, so both give the same bits. (`SDOT` would need the
    /// activations split into bytes; this path is bandwidth-bound anyway.)
    ///
    /// # Safety
    /// The CPU must support NEON.
    #[target_feature(enable = "neon")]
    pub unsafe fn affine_neon(
        packed: &[u8],
        scales: &[f32],
        cols: usize,
        xq: &[i16],
        y: &mut [f32],
    ) {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            let groups = cols / AFFINE_GROUP;
            let mask = vdupq_n_u8(0x0f);
            for (r, out) in y.iter_mut().enumerate() {
                let row = packed.as_ptr().add(r * cols / 2);
                let mut acc = 0f32;
                for g in 0..groups {
                    let b = vld1q_u8(row.add(g * 16));
                    let lo = vandq_u8(b, mask);
                    let hi = vshrq_n_u8::<4>(b);
                    let x = xq.as_ptr().add(g * 32);
                    let w = [
                        vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(lo))),
                        vreinterpretq_s16_u16(vmovl_high_u8(lo)),
                        vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(hi))),
                        vreinterpretq_s16_u16(vmovl_high_u8(hi)),
                    ];
                    let mut d0 = vdupq_n_s32(0);
                    let mut d1 = vdupq_n_s32(0);
                    for (k, wk) in w.iter().enumerate() {
                        let xk = vld1q_s16(x.add(8 * k));
                        d0 = vmlal_s16(d0, vget_low_s16(*wk), vget_low_s16(xk));
                        d1 = vmlal_high_s16(d1, *wk, xk);
                    }
                    let s = vaddvq_s32(vaddq_s32(d0, d1));
                    acc += scales[r * groups + g] * s as f32;
                }
                *out = acc;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::AFFINE_GROUP;
    use crate::simd::hsum256;
    use std::arch::x86_64::*;

    /// 32 packed nibbles → 32 bytes, weights 0..15 in the low half, 16..31 high.
    ///
    /// # Safety
    /// `p` must be valid for reading 16 bytes, and the CPU must support AVX2.
    #[inline(always)]
    unsafe fn unpack32(p: *const u8) -> __m256i {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            let b = _mm_loadu_si128(p as *const __m128i);
            let m = _mm_set1_epi8(0x0f);
            let lo = _mm_and_si128(b, m);
            let hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
            _mm256_set_m128i(hi, lo)
        }
    }

    /// # Safety
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512VNNI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn affine_avx512(
        packed: &[u8],
        scales: &[f32],
        cols: usize,
        xq: &[i16],
        y: &mut [f32],
    ) {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            let groups = cols / AFFINE_GROUP;
            let n = y.len();
            let s = n / 4;
            let (pp, xp, sp) = (packed.as_ptr(), xq.as_ptr(), scales.as_ptr());
            let row = |r: usize, acc: __m512, g: usize, xv: __m512i| -> __m512 {
                let q = _mm512_cvtepu8_epi16(unpack32(pp.add(r * cols / 2 + g * 16)));
                let d = _mm512_dpwssd_epi32(_mm512_setzero_si512(), q, xv);
                _mm512_fmadd_ps(
                    _mm512_cvtepi32_ps(d),
                    _mm512_set1_ps(*sp.add(r * groups + g)),
                    acc,
                )
            };
            for r in 0..s {
                let rows = [r, r + s, r + 2 * s, r + 3 * s];
                let mut acc = [_mm512_setzero_ps(); 4];
                for g in 0..groups {
                    let xv = _mm512_loadu_si512(xp.add(g * 32) as *const _);
                    for j in 0..4 {
                        acc[j] = row(rows[j], acc[j], g, xv);
                    }
                }
                for j in 0..4 {
                    y[rows[j]] = _mm512_reduce_add_ps(acc[j]);
                }
            }
            for r in 4 * s..n {
                let mut acc = _mm512_setzero_ps();
                for g in 0..groups {
                    acc = row(r, acc, g, _mm512_loadu_si512(xp.add(g * 32) as *const _));
                }
                y[r] = _mm512_reduce_add_ps(acc);
            }
        }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn affine_avx2(
        packed: &[u8],
        scales: &[f32],
        cols: usize,
        xq: &[i16],
        y: &mut [f32],
    ) {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            let groups = cols / AFFINE_GROUP;
            for (r, out) in y.iter_mut().enumerate() {
                let mut acc = _mm256_setzero_ps();
                for g in 0..groups {
                    let b = unpack32(packed.as_ptr().add(r * cols / 2 + g * 16));
                    let q0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(b));
                    let q1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(b, 1));
                    let x0 = _mm256_loadu_si256(xq.as_ptr().add(g * 32) as *const __m256i);
                    let x1 = _mm256_loadu_si256(xq.as_ptr().add(g * 32 + 16) as *const __m256i);
                    let d = _mm256_add_epi32(_mm256_madd_epi16(q0, x0), _mm256_madd_epi16(q1, x1));
                    let sc = _mm256_set1_ps(*scales.get_unchecked(r * groups + g));
                    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), sc, acc);
                }
                *out = hsum256(acc);
            }
        }
    }
}
