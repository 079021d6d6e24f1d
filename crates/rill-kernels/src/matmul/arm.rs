//! The NEON panel transpose of the small GEMM.

use super::{packed_at, PANEL};
use std::arch::aarch64::*;

/// `panel[packed_at(block, c, j)] = rows[j·cols + k0 + c]` for `c < kc` (a multiple
/// of 4) with `block = panel.len() / PANEL` columns in the block, 4 rows × 4
/// columns per register transpose.
///
/// # Safety
/// The CPU must support NEON; `rows.len() ≥ PANEL·cols`, `panel.len()` a multiple
/// of `PANEL` and `≥ PANEL·kc`, `k0 + kc ≤ cols`.
#[target_feature(enable = "neon")]
pub unsafe fn transpose_neon(rows: &[f32], cols: usize, k0: usize, kc: usize, panel: &mut [f32]) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        assert!(rows.len() >= PANEL * cols && panel.len() >= PANEL * kc && k0 + kc <= cols);
        let block = panel.len() / PANEL;
        let (rp, pp) = (rows.as_ptr(), panel.as_mut_ptr());
        let pairs = |a: float32x4_t, b: float32x4_t, high: bool| {
            let (a, b) = (vreinterpretq_f64_f32(a), vreinterpretq_f64_f32(b));
            vreinterpretq_f32_f64(if high {
                vtrn2q_f64(a, b)
            } else {
                vtrn1q_f64(a, b)
            })
        };
        for c0 in (0..kc).step_by(4) {
            for j0 in (0..PANEL).step_by(4) {
                let r: [float32x4_t; 4] =
                    std::array::from_fn(|k| vld1q_f32(rp.add((j0 + k) * cols + k0 + c0)));
                // Even and odd columns of rows 0/1 and 2/3, then their halves paired.
                let (t0, t1) = (vtrn1q_f32(r[0], r[1]), vtrn2q_f32(r[0], r[1]));
                let (t2, t3) = (vtrn1q_f32(r[2], r[3]), vtrn2q_f32(r[2], r[3]));
                let out = [
                    pairs(t0, t2, false),
                    pairs(t1, t3, false),
                    pairs(t0, t2, true),
                    pairs(t1, t3, true),
                ];
                for (k, v) in out.into_iter().enumerate() {
                    vst1q_f32(pp.add(packed_at(block, c0 + k, j0)), v);
                }
            }
        }
    }
}
