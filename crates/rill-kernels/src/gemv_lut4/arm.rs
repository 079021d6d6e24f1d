//! NEON: one `TBL` looks 16 levels up at once (signed, no offset needed). The
//! quad's 32 index bytes give four vectors of 16 levels: low nibbles of bytes
//! 0–15 and 16–31 (rows 0–3, 4–7), high nibbles (rows 8–11, 12–15), each 4 rows
//! × the quad's 4 inputs. Integer sums are exact and widened to i64 before the
//! final f32 product, so both kernels give the portable kernel's bits.

use super::{Lut4, CHUNK_QUADS, QUAD_BYTES};
use crate::gemv_int8::{Act, BLOCK};
use std::arch::aarch64::*;

/// The 64 levels of one quad, as `[rows 0–3, 4–7, 8–11, 12–15]`.
///
/// # Safety
/// `p` must be valid for reading the quad's 32 bytes of packed indices (the CPU has
/// NEON, as every AArch64 CPU).
#[inline(always)]
unsafe fn levels(lut: int8x16_t, p: *const u8) -> [int8x16_t; 4] {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let mask = vdupq_n_u8(0x0f);
        let (b0, b1) = (vld1q_u8(p), vld1q_u8(p.add(16)));
        [
            vqtbl1q_s8(lut, vandq_u8(b0, mask)),
            vqtbl1q_s8(lut, vandq_u8(b1, mask)),
            vqtbl1q_s8(lut, vshrq_n_u8::<4>(b0)),
            vqtbl1q_s8(lut, vshrq_n_u8::<4>(b1)),
        ]
    }
}

use crate::simd::sdot;

/// With `SDOT` on the split activation bytes (`xq = 256·hi + lo' + 128`):
/// `Σl·xq = 256·Σl·hi + Σl·lo' + lsum128`. Each byte sum stays below
/// 127·128·cols, so i32 holds it for any practical width.
///
/// # Safety
/// The CPU must support NEON and FEAT_DotProd.
#[target_feature(enable = "neon,dotprod")]
pub unsafe fn blocks_sdot(m: &Lut4, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let quads = m.cols / 4;
        let (hp, lp) = (act.hi.as_ptr() as *const i32, act.lo.as_ptr() as *const i32);
        for (bi, &b) in blocks.iter().enumerate() {
            let lut = vld1q_s8(m.levels.as_ptr().add(b * 16));
            let base = m.packed.as_ptr().add(b * quads * QUAD_BYTES);
            let mut dh = [vdupq_n_s32(0); 4];
            let mut dl = [vdupq_n_s32(0); 4];
            for j in 0..quads {
                let w = levels(lut, base.add(j * QUAD_BYTES));
                let h = vreinterpretq_s8_s32(vld1q_dup_s32(hp.add(j)));
                let l = vreinterpretq_s8_s32(vld1q_dup_s32(lp.add(j)));
                for k in 0..4 {
                    dh[k] = sdot(dh[k], w[k], h);
                    dl[k] = sdot(dl[k], w[k], l);
                }
            }
            let mut hs = [0i32; BLOCK];
            let mut ls = [0i32; BLOCK];
            for k in 0..4 {
                vst1q_s32(hs.as_mut_ptr().add(4 * k), dh[k]);
                vst1q_s32(ls.as_mut_ptr().add(4 * k), dl[k]);
            }
            for rr in 0..BLOCK {
                let total = 256 * hs[rr] as i64 + ls[rr] as i64 + m.lsum128[b * BLOCK + rr] as i64;
                out[bi * BLOCK + rr] = m.scales[b] * act.scale * total as f32;
            }
        }
    }
}

/// Without `SDOT`: levels widened to int16 times the int16 activations
/// (`SMLAL`), one accumulator per row (lanes = the quad's 4 inputs), widened to
/// i64 every [`CHUNK_QUADS`] quads as the portable kernel does.
///
/// # Safety
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
pub unsafe fn blocks_neon(m: &Lut4, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let quads = m.cols / 4;
        for (bi, &b) in blocks.iter().enumerate() {
            let lut = vld1q_s8(m.levels.as_ptr().add(b * 16));
            let base = m.packed.as_ptr().add(b * quads * QUAD_BYTES);
            let mut total = [0i64; BLOCK];
            let mut j0 = 0;
            while j0 < quads {
                let j1 = (j0 + CHUNK_QUADS).min(quads);
                let mut d = [vdupq_n_s32(0); BLOCK];
                for j in j0..j1 {
                    let w = levels(lut, base.add(j * QUAD_BYTES));
                    let x4 = vld1_s16(act.xq.as_ptr().add(4 * j));
                    let x8 = vcombine_s16(x4, x4);
                    for k in 0..4 {
                        let lo = vmovl_s8(vget_low_s8(w[k]));
                        let hi = vmovl_high_s8(w[k]);
                        d[4 * k] = vmlal_s16(d[4 * k], vget_low_s16(lo), x4);
                        d[4 * k + 1] = vmlal_high_s16(d[4 * k + 1], lo, x8);
                        d[4 * k + 2] = vmlal_s16(d[4 * k + 2], vget_low_s16(hi), x4);
                        d[4 * k + 3] = vmlal_high_s16(d[4 * k + 3], hi, x8);
                    }
                }
                for rr in 0..BLOCK {
                    total[rr] += vaddlvq_s32(d[rr]);
                }
                j0 = j1;
            }
            for rr in 0..BLOCK {
                out[bi * BLOCK + rr] = m.scales[b] * act.scale * total[rr] as f32;
            }
        }
    }
}
