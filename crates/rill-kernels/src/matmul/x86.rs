//! The x86 panel transpose of the small GEMM (AVX2, also on the AVX-512 tier).

use super::{packed_at, PANEL};
use crate::matrix::FloatRows;
use std::arch::x86_64::*;

/// `panel[packed_at(block, c, j)] = rows[j·cols + k0 + c]` for `c < kc` (a multiple
/// of 8) with `block = panel.len() / PANEL` columns in the block, 8 rows × 8
/// columns per register transpose; f16 rows are widened as they are loaded.
///
/// # Safety
/// The CPU must support AVX2 and F16C; `rows.len() ≥ PANEL·cols`, `panel.len()` a
/// multiple of `PANEL` and `≥ PANEL·kc`, `k0 + kc ≤ cols`.
#[target_feature(enable = "avx2,f16c")]
pub unsafe fn transpose_avx2(
    rows: FloatRows<'_>,
    cols: usize,
    k0: usize,
    kc: usize,
    panel: &mut [f32],
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        match rows {
            FloatRows::F32(v) => {
                transpose::<false>(v.as_ptr().cast(), v.len(), cols, k0, kc, panel)
            }
            FloatRows::F16(v) => transpose::<true>(v.as_ptr().cast(), v.len(), cols, k0, kc, panel),
        }
    }
}

/// [`transpose_avx2`] over `len` values at `src`, f16 if `HALF`, else f32.
///
/// # Safety
/// As [`transpose_avx2`], with `src` valid for `len` values of its type.
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn transpose<const HALF: bool>(
    src: *const u8,
    len: usize,
    cols: usize,
    k0: usize,
    kc: usize,
    panel: &mut [f32],
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        assert!(len >= PANEL * cols && panel.len() >= PANEL * kc && k0 + kc <= cols);
        let block = panel.len() / PANEL;
        let pp = panel.as_mut_ptr();
        // 8 values of row j from column c (inside the rows: c + 8 ≤ k0 + kc ≤ cols).
        let load = |j: usize, c: usize| {
            if HALF {
                let p = src.cast::<u16>().add(j * cols + c);
                _mm256_cvtph_ps(_mm_loadu_si128(p.cast()))
            } else {
                _mm256_loadu_ps(src.cast::<f32>().add(j * cols + c))
            }
        };
        for c0 in (0..kc).step_by(8) {
            for j0 in (0..PANEL).step_by(8) {
                let r: [__m256; 8] = std::array::from_fn(|k| load(j0 + k, k0 + c0));
                let t0 = _mm256_unpacklo_ps(r[0], r[1]);
                let t1 = _mm256_unpackhi_ps(r[0], r[1]);
                let t2 = _mm256_unpacklo_ps(r[2], r[3]);
                let t3 = _mm256_unpackhi_ps(r[2], r[3]);
                let t4 = _mm256_unpacklo_ps(r[4], r[5]);
                let t5 = _mm256_unpackhi_ps(r[4], r[5]);
                let t6 = _mm256_unpacklo_ps(r[6], r[7]);
                let t7 = _mm256_unpackhi_ps(r[6], r[7]);
                let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
                let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
                let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
                let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
                let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
                let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
                let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
                let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
                // Column c0 + k of the 8 rows: low lanes of s, then high lanes.
                let out = [
                    _mm256_permute2f128_ps::<0x20>(s0, s4),
                    _mm256_permute2f128_ps::<0x20>(s1, s5),
                    _mm256_permute2f128_ps::<0x20>(s2, s6),
                    _mm256_permute2f128_ps::<0x20>(s3, s7),
                    _mm256_permute2f128_ps::<0x31>(s0, s4),
                    _mm256_permute2f128_ps::<0x31>(s1, s5),
                    _mm256_permute2f128_ps::<0x31>(s2, s6),
                    _mm256_permute2f128_ps::<0x31>(s3, s7),
                ];
                for (k, v) in out.into_iter().enumerate() {
                    _mm256_storeu_ps(pp.add(packed_at(block, c0 + k, j0)), v);
                }
            }
        }
    }
}
