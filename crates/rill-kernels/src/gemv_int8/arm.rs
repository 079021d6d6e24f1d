//! The NEON kernels of the int8 product (SDOT with `dotprod`, widening
//! multiply-accumulate otherwise); the module doc of [`super`] describes the layout.

use super::{Act, BLOCK, GROUP, Q8, QUADS};
use std::arch::aarch64::*;

use crate::simd::sdot;

/// One block at a time with `SDOT` (signed × signed bytes). The weights are
/// stored unsigned, so each is flipped to `q' = q − 128` in the register; with
/// `xq = 256·hi + lo' + 128` the exact integer dot product of a row and group is
/// `Σq·xq = 256·Σq'·hi + Σq'·lo' + 128·(Σxq − 128·64) + 128·Σq`
/// (the last term is `qsum128`, the third is the same for every row).
///
/// # Safety
/// The CPU must support NEON and FEAT_DotProd.
#[target_feature(enable = "neon,dotprod")]
pub unsafe fn blocks_sdot<const A: usize>(
    m: &Q8,
    blocks: &[usize],
    acts: &[&Act<'_>; A],
    out: &mut [[f32; 4 * BLOCK]; A],
) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let groups = m.groups();
        let flip = vdupq_n_u8(0x80);
        for (bi, &b) in blocks.iter().enumerate() {
            let mut acc = [[vdupq_n_f32(0.0); 4]; A];
            for g in 0..groups {
                let mut dh = [[vdupq_n_s32(0); 4]; A];
                let mut dl = [[vdupq_n_s32(0); 4]; A];
                let p = m.q.as_ptr().add((b * groups + g) * QUADS * BLOCK * 4);
                for j in 0..QUADS {
                    let mut h = [vdupq_n_s8(0); A];
                    let mut l = [vdupq_n_s8(0); A];
                    for a in 0..A {
                        let (hp, lp) = (
                            acts[a].hi.as_ptr() as *const i32,
                            acts[a].lo.as_ptr() as *const i32,
                        );
                        h[a] = vreinterpretq_s8_s32(vld1q_dup_s32(hp.add(g * QUADS + j)));
                        l[a] = vreinterpretq_s8_s32(vld1q_dup_s32(lp.add(g * QUADS + j)));
                    }
                    for k in 0..4 {
                        let w = vld1q_u8(p.add((j * 4 + k) * 16));
                        let w = vreinterpretq_s8_u8(veorq_u8(w, flip));
                        for a in 0..A {
                            dh[a][k] = sdot(dh[a][k], w, h[a]);
                            dl[a][k] = sdot(dl[a][k], w, l[a]);
                        }
                    }
                }
                let meta = (b * groups + g) * BLOCK;
                let sb = m.meta.as_ptr().add(Q8::meta_at(b * groups + g));
                for a in 0..A {
                    // |Σxq| < 2^21, so the f32 group sum is an exact integer.
                    let sums = acts[a].sums[g];
                    let shift = vdupq_n_s32(128 * (sums as i32 - 128 * GROUP as i32));
                    let xs = vdupq_n_s32(sums as i32);
                    for k in 0..4 {
                        let c = vld1q_s32(m.qsum128.as_ptr().add(meta + 4 * k));
                        let d = vaddq_s32(vaddq_s32(vshlq_n_s32::<8>(dh[a][k]), dl[a][k]), c);
                        let d = vaddq_s32(d, shift);
                        let d = vmlsq_s32(d, steps(sb.add(BLOCK + k)), xs);
                        let sc = vld1q_f32(sb.add(4 * k) as *const f32);
                        acc[a][k] = vfmaq_f32(acc[a][k], vcvtq_f32_s32(d), sc);
                    }
                }
            }
            for a in 0..A {
                let sx = vdupq_n_f32(acts[a].scale);
                for k in 0..4 {
                    let v = vmulq_f32(sx, acc[a][k]);
                    vst1q_f32(out[a].as_mut_ptr().add(bi * BLOCK + 4 * k), v);
                }
            }
        }
    }
}

/// The four bias steps `n` (bytes) of one metadata slot, widened to i32 lanes.
///
/// # Safety
/// `slot` must be valid for reading one aligned `u32` (a metadata slot).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn steps(slot: *const u32) -> int32x4_t {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let n = vmovl_u8(vcreate_u8(slot.read() as u64));
        vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(n)))
    }
}

/// Without `SDOT`: the weight bytes widen to int16 and multiply the int16
/// activations with a widening multiply-accumulate (`SMLAL`), one i32
/// accumulator per row (lanes = the quad's 4 inputs, |lane| < 16·255·32768).
///
/// # Safety
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
pub unsafe fn blocks_neon(m: &Q8, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let groups = m.groups();
        for (bi, &b) in blocks.iter().enumerate() {
            let mut acc = [vdupq_n_f32(0.0); 4];
            for g in 0..groups {
                let mut d = [vdupq_n_s32(0); BLOCK];
                let p = m.q.as_ptr().add((b * groups + g) * QUADS * BLOCK * 4);
                for j in 0..QUADS {
                    let x4 = vld1_s16(act.xq.as_ptr().add(g * GROUP + 4 * j));
                    let x8 = vcombine_s16(x4, x4);
                    for k in 0..4 {
                        let w = vld1q_u8(p.add((j * 4 + k) * 16));
                        let lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(w)));
                        let hi = vreinterpretq_s16_u16(vmovl_high_u8(w));
                        d[4 * k] = vmlal_s16(d[4 * k], vget_low_s16(lo), x4);
                        d[4 * k + 1] = vmlal_high_s16(d[4 * k + 1], lo, x8);
                        d[4 * k + 2] = vmlal_s16(d[4 * k + 2], vget_low_s16(hi), x4);
                        d[4 * k + 3] = vmlal_high_s16(d[4 * k + 3], hi, x8);
                    }
                }
                // |Σxq| < 2^21, so the f32 group sum is an exact integer.
                let xs = vdupq_n_s32(act.sums[g] as i32);
                let sb = m.meta.as_ptr().add(Q8::meta_at(b * groups + g));
                for k in 0..4 {
                    // Fold each row's four lanes: [r0, r1, r2, r3] of this quarter.
                    let s01 = vpaddq_s32(d[4 * k], d[4 * k + 1]);
                    let s23 = vpaddq_s32(d[4 * k + 2], d[4 * k + 3]);
                    let rows = vpaddq_s32(s01, s23);
                    let rows = vmlsq_s32(rows, steps(sb.add(BLOCK + k)), xs);
                    let sc = vld1q_f32(sb.add(4 * k) as *const f32);
                    acc[k] = vfmaq_f32(acc[k], vcvtq_f32_s32(rows), sc);
                }
            }
            let sx = vdupq_n_f32(act.scale);
            for k in 0..4 {
                let v = vmulq_f32(sx, acc[k]);
                vst1q_f32(out.as_mut_ptr().add(bi * BLOCK + 4 * k), v);
            }
        }
    }
}
