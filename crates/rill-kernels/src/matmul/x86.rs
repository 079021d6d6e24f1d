//! AVX-512 and AVX2 kernels of the small GEMM: the micro-kernels and the panel
//! transpose.

use super::{INPUTS, PANEL};
use std::arch::x86_64::*;

/// # Safety
/// The CPU must support AVX-512F; `x` holds `NI` rows of `stride` with at least
/// `panel.len() / PANEL` columns each.
#[target_feature(enable = "avx512f")]
pub unsafe fn micro_avx512<const NI: usize>(
    panel: &[f32],
    x: &[f32],
    stride: usize,
    acc: &mut [f32; INPUTS * PANEL],
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let (wp, xp, ap) = (panel.as_ptr(), x.as_ptr(), acc.as_mut_ptr());
        let mut a: [[__m512; 2]; NI] = std::array::from_fn(|i| {
            let p = ap.add(i * PANEL);
            [_mm512_loadu_ps(p), _mm512_loadu_ps(p.add(16))]
        });
        for c in 0..panel.len() / PANEL {
            let w0 = _mm512_loadu_ps(wp.add(c * PANEL));
            let w1 = _mm512_loadu_ps(wp.add(c * PANEL + 16));
            for i in 0..NI {
                let xv = _mm512_set1_ps(*xp.add(i * stride + c));
                a[i][0] = _mm512_fmadd_ps(xv, w0, a[i][0]);
                a[i][1] = _mm512_fmadd_ps(xv, w1, a[i][1]);
            }
        }
        for i in 0..NI {
            let p = ap.add(i * PANEL);
            _mm512_storeu_ps(p, a[i][0]);
            _mm512_storeu_ps(p.add(16), a[i][1]);
        }
    }
}

/// `panel[c·PANEL + j] = rows[j·cols + k0 + c]` for `c < kc` (a multiple of
/// 8), 8 rows × 8 columns per register transpose.
///
/// # Safety
/// The CPU must support AVX2; `rows.len() ≥ PANEL·cols`, `panel.len() ≥
/// PANEL·kc`, `k0 + kc ≤ cols`.
#[target_feature(enable = "avx2")]
pub unsafe fn transpose_avx2(rows: &[f32], cols: usize, k0: usize, kc: usize, panel: &mut [f32]) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        assert!(rows.len() >= PANEL * cols && panel.len() >= PANEL * kc && k0 + kc <= cols);
        let (rp, pp) = (rows.as_ptr(), panel.as_mut_ptr());
        for c0 in (0..kc).step_by(8) {
            for j0 in (0..PANEL).step_by(8) {
                let r: [__m256; 8] =
                    std::array::from_fn(|k| _mm256_loadu_ps(rp.add((j0 + k) * cols + k0 + c0)));
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
                    _mm256_storeu_ps(pp.add((c0 + k) * PANEL + j0), v);
                }
            }
        }
    }
}

/// # Safety
/// The CPU must support AVX2 and FMA; shapes as [`micro_avx512`].
#[target_feature(enable = "avx2,fma")]
pub unsafe fn micro_avx2<const NI: usize>(
    panel: &[f32],
    x: &[f32],
    stride: usize,
    acc: &mut [f32; INPUTS * PANEL],
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        // Half the panel at a time keeps 2 × NI accumulators + 2 weights in 16 ymm.
        let (wp, xp, ap) = (panel.as_ptr(), x.as_ptr(), acc.as_mut_ptr());
        for half in 0..2 {
            let h = half * 16;
            let mut a: [[__m256; 2]; NI] = std::array::from_fn(|i| {
                let p = ap.add(i * PANEL + h);
                [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))]
            });
            for c in 0..panel.len() / PANEL {
                let w0 = _mm256_loadu_ps(wp.add(c * PANEL + h));
                let w1 = _mm256_loadu_ps(wp.add(c * PANEL + h + 8));
                for i in 0..NI {
                    let xv = _mm256_set1_ps(*xp.add(i * stride + c));
                    a[i][0] = _mm256_fmadd_ps(xv, w0, a[i][0]);
                    a[i][1] = _mm256_fmadd_ps(xv, w1, a[i][1]);
                }
            }
            for i in 0..NI {
                let p = ap.add(i * PANEL + h);
                _mm256_storeu_ps(p, a[i][0]);
                _mm256_storeu_ps(p.add(8), a[i][1]);
            }
        }
    }
}
