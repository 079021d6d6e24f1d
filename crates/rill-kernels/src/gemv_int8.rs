//! Affine int8 weights (MLX layout: groups of 64 along the input, per-group scale
//! and bias) × activations quantised to int16 with one scale per vector.
//!
//! `y[r] = sx · Σ_g (scale[r,g] · Σ_{i∈g} q[r,i]·xq[i] + bias[r,g] · Σ_{i∈g} xq[i])`.
//!
//! Storage is blocked for the kernels: rows in blocks of 16, and within a block and
//! group, 16 "quads" of 4 consecutive inputs × 16 rows (64 bytes), so one AVX-512
//! VNNI `vpdpbusd` multiplies a quad for 16 rows at once and the per-group scales
//! apply to 16 rows with one vector FMA. The int16 activations are split into a
//! high and a low signed byte (`xq = 256·hi + lo' + 128`), so two `vpdpbusd` give
//! the exact int16 dot product; the `+128` term is a per-row constant computed at
//! load. Integer sums are exact on every path (AVX-512, AVX2, portable); only the
//! order of the f32 group accumulation differs.
//!
//! Why int16 activations: their error (≈ 1/65534 of the largest entry) stays far
//! below the int8 weight error, so quality matches MLX's float-activation int8.

use crate::isa::Isa;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use crate::isa::Tier;
use crate::quant::Affine;

pub(crate) const GROUP: usize = 64;
/// Rows per block.
pub(crate) const BLOCK: usize = 16;
const QUADS: usize = GROUP / 4;

/// An int8 matrix in the blocked layout.
#[derive(Debug, Clone)]
pub(crate) struct Q8 {
    rows: usize,
    cols: usize,
    /// `[blocks][groups][16 quads][16 rows][4]`, rows padded to a multiple of 16.
    q: Vec<u8>,
    /// `[blocks][groups][16 rows]`.
    scales: Vec<f32>,
    biases: Vec<f32>,
    /// `128·Σ_{i∈g} q[r,i]`: the correction of the shifted low activation byte.
    qsum128: Vec<i32>,
}

impl Q8 {
    fn groups(&self) -> usize {
        self.cols / GROUP
    }

    /// From MLX-layout affine data (`q` row-major `[rows][cols]`, scales/biases `[rows][groups]`).
    pub fn from_affine(a: &Affine, rows: usize, cols: usize) -> Q8 {
        assert_eq!(a.group, GROUP);
        let groups = cols / GROUP;
        let blocks = rows.div_ceil(BLOCK);
        let mut q = vec![0u8; blocks * BLOCK * cols];
        let mut scales = vec![0f32; blocks * groups * BLOCK];
        let mut biases = vec![0f32; blocks * groups * BLOCK];
        let mut qsum128 = vec![0i32; blocks * groups * BLOCK];
        for r in 0..rows {
            let (b, rr) = (r / BLOCK, r % BLOCK);
            for g in 0..groups {
                let meta = (b * groups + g) * BLOCK + rr;
                scales[meta] = a.scales[r * groups + g];
                biases[meta] = a.biases[r * groups + g];
                let mut s = 0i32;
                for j in 0..QUADS {
                    for t in 0..4 {
                        let v = a.q[r * cols + g * GROUP + 4 * j + t];
                        s += v as i32;
                        q[(((b * groups + g) * QUADS + j) * BLOCK + rr) * 4 + t] = v;
                    }
                }
                qsum128[meta] = 128 * s;
            }
        }
        Q8 {
            rows,
            cols,
            q,
            scales,
            biases,
            qsum128,
        }
    }

    /// Back to MLX layout (for pre-quantised files).
    pub fn to_affine(&self) -> Affine {
        let (rows, cols, groups) = (self.rows, self.cols, self.groups());
        let mut a = Affine {
            bits: 8,
            group: GROUP,
            q: vec![0; rows * cols],
            scales: vec![0.0; rows * groups],
            biases: vec![0.0; rows * groups],
        };
        for r in 0..rows {
            for g in 0..groups {
                let meta = ((r / BLOCK) * groups + g) * BLOCK + r % BLOCK;
                a.scales[r * groups + g] = self.scales[meta];
                a.biases[r * groups + g] = self.biases[meta];
            }
            for c in 0..cols {
                a.q[r * cols + c] = self.q[self.index(r, c)];
            }
        }
        a
    }

    #[inline]
    fn index(&self, r: usize, c: usize) -> usize {
        let (b, rr, g, j, t) = (r / BLOCK, r % BLOCK, c / GROUP, (c % GROUP) / 4, c % 4);
        (((b * self.groups() + g) * QUADS + j) * BLOCK + rr) * 4 + t
    }

    /// Stacks matrices with row counts that are multiples of 16 (whole blocks).
    pub fn stack(parts: Vec<Q8>) -> Q8 {
        assert!(
            parts.iter().all(|p| p.rows % BLOCK == 0),
            "int8 stacking needs whole 16-row blocks"
        );
        let cols = parts[0].cols;
        let mut out = Q8 {
            rows: 0,
            cols,
            q: Vec::new(),
            scales: Vec::new(),
            biases: Vec::new(),
            qsum128: Vec::new(),
        };
        for p in parts {
            out.rows += p.rows;
            out.q.extend(p.q);
            out.scales.extend(p.scales);
            out.biases.extend(p.biases);
            out.qsum128.extend(p.qsum128);
        }
        out
    }

    pub fn bytes(&self) -> usize {
        self.q.len() + 4 * (self.scales.len() + self.biases.len())
    }

    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let groups = self.groups();
        let (b, rr) = (r / BLOCK, r % BLOCK);
        // Group by group, a quad (4 inputs) at a time: the layout of `index`.
        for (g, og) in out.chunks_exact_mut(GROUP).enumerate().take(groups) {
            let meta = (b * groups + g) * BLOCK + rr;
            let (scale, bias) = (self.scales[meta], self.biases[meta]);
            for (j, oq) in og.chunks_exact_mut(4).enumerate() {
                let base = (((b * groups + g) * QUADS + j) * BLOCK + rr) * 4;
                for (o, &q) in oq.iter_mut().zip(&self.q[base..base + 4]) {
                    *o = q as f32 * scale + bias;
                }
            }
        }
    }

    /// Computes the rows of `range` that fall in `blocks` (at most 4, typically far
    /// apart: four memory streams) into `y`, indexed relative to `range.start`.
    pub fn run_blocks(
        &self,
        isa: Isa,
        blocks: &[usize],
        range: &std::ops::Range<usize>,
        act: &Act<'_>,
        y: *mut f32,
    ) {
        self.run_blocks_n(isa, blocks, range, [act], [y]);
    }

    /// [`Q8::run_blocks`] for `A` activation vectors at once (`y[a]` gets the rows
    /// of `acts[a]`): each weight is loaded once for all of them (the two CFG rows
    /// of Magpie's decoder), and each output has the bits of its one-vector call.
    pub fn run_blocks_n<const A: usize>(
        &self,
        isa: Isa,
        blocks: &[usize],
        range: &std::ops::Range<usize>,
        acts: [&Act<'_>; A],
        y: [*mut f32; A],
    ) {
        debug_assert!(blocks.len() <= 4);
        let mut out = [[0f32; 4 * BLOCK]; A];
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` with VNNI comes only from detecting avx512f/bw/vnni.
            Tier::Avx512 if isa.vnni() => unsafe {
                x86::blocks_avx512(self, blocks, &acts, &mut out)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
            // One vector at a time: this kernel is bound by its multiplies, not by
            // memory, and a second pass over the (cached) weights measured faster
            // than a two-vector kernel (5.6 vs 6.5 ms for 57 M weights, Zen 5).
            Tier::Avx2 | Tier::Avx512 => {
                for (act, o) in acts.iter().zip(out.iter_mut()) {
                    // SAFETY: as above.
                    unsafe { x86::blocks_avx2(self, blocks, act, o) }
                }
            }
            #[cfg(target_arch = "aarch64")]
            // SAFETY: an `Isa` with dotprod comes only from detecting neon and dotprod.
            Tier::Neon if isa.dotprod() => unsafe {
                arm::blocks_sdot(self, blocks, &acts, &mut out)
            },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: an `Isa` of tier NEON comes only from detecting neon.
            Tier::Neon => {
                for (act, o) in acts.iter().zip(out.iter_mut()) {
                    // SAFETY: as above.
                    unsafe { arm::blocks_neon(self, blocks, act, o) }
                }
            }
            _ => {
                for (act, o) in acts.iter().zip(out.iter_mut()) {
                    blocks_portable(self, blocks, act, o);
                }
            }
        }
        for (o, y) in out.iter().zip(y) {
            scatter(blocks, range, &o[..blocks.len() * BLOCK], y);
        }
    }
}

/// Writes the outputs of `blocks` (16 per block, in `out`) that fall inside `range`
/// to `y[r - range.start]`.
pub(crate) fn scatter(blocks: &[usize], range: &std::ops::Range<usize>, out: &[f32], y: *mut f32) {
    for (k, &b) in blocks.iter().enumerate() {
        for i in 0..BLOCK {
            let r = b * BLOCK + i;
            if range.contains(&r) {
                // SAFETY: callers hand each task a disjoint set of blocks and `y`
                // holds `range.len()` outputs.
                unsafe { *y.add(r - range.start) = out[k * BLOCK + i] };
            }
        }
    }
}

/// An activation vector quantised for the int8 kernels.
pub(crate) struct Act<'a> {
    /// int16 values.
    pub xq: &'a [i16],
    /// High bytes `xq >> 8` (signed).
    pub hi: &'a [i8],
    /// Low bytes minus 128 (signed).
    pub lo: &'a [i8],
    /// Per-group sums of `xq` as f32 (bias terms).
    pub sums: &'a [f32],
    /// `x ≈ xq · scale`.
    pub scale: f32,
}

/// Splits int16 activations into the two signed bytes the VNNI kernel multiplies.
pub(crate) fn split_bytes(xq: &[i16], hi: &mut [i8], lo: &mut [i8]) {
    for ((&v, h), l) in xq.iter().zip(hi.iter_mut()).zip(lo.iter_mut()) {
        *h = (v >> 8) as i8;
        *l = ((v & 0xff) - 128) as i8;
    }
}

/// Per block and group: the 16 quads' 64 bytes (16 rows × 4 inputs) multiply the
/// quad's activations in 64 fixed i32 lanes (element `rr·4 + t`, |sum| ≤
/// 16·255·32767), folded into rows per group; the f32 accumulation per row is in
/// group order: `acc += scale·d`, `bias += bias·Σxq`, then `sx·(acc + bias)`.
fn blocks_portable(m: &Q8, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
    let groups = m.groups();
    for (bi, &b) in blocks.iter().enumerate() {
        let mut acc = [0f32; BLOCK];
        let mut bias = [0f32; BLOCK];
        for g in 0..groups {
            let base = (b * groups + g) * GROUP * BLOCK;
            let q = m.q[base..base + GROUP * BLOCK]
                .as_chunks::<{ BLOCK * 4 }>()
                .0;
            let x = act.xq[g * GROUP..(g + 1) * GROUP].as_chunks::<4>().0;
            let mut lanes = [0i32; BLOCK * 4];
            for (qj, xj) in q.iter().zip(x) {
                let xr = [*xj; BLOCK];
                let xr = xr.as_flattened();
                for e in 0..BLOCK * 4 {
                    lanes[e] += qj[e] as i32 * xr[e] as i32;
                }
            }
            let meta = (b * groups + g) * BLOCK;
            let (sc, bs) = (&m.scales[meta..meta + BLOCK], &m.biases[meta..meta + BLOCK]);
            for rr in 0..BLOCK {
                let l = &lanes[4 * rr..4 * rr + 4];
                let d = l[0] + l[1] + l[2] + l[3];
                acc[rr] += sc[rr] * d as f32;
                bias[rr] += bs[rr] * act.sums[g];
            }
        }
        for rr in 0..BLOCK {
            out[bi * BLOCK + rr] = act.scale * (acc[rr] + bias[rr]);
        }
    }
}

/// The AVX-512 and SDOT kernels take `A` activation vectors: every loaded weight
/// register multiplies each of them, and per vector the operations and their order
/// are those of `A = 1`, so the results do not depend on `A`.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Act, BLOCK, GROUP, Q8, QUADS};
    use std::arch::x86_64::*;

    /// Up to 4 blocks (64 rows, four memory streams) at once.
    ///
    /// # Safety
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512VNNI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn blocks_avx512<const A: usize>(
        m: &Q8,
        blocks: &[usize],
        acts: &[&Act<'_>; A],
        out: &mut [[f32; 4 * BLOCK]; A],
    ) {
        let groups = m.groups();
        let mut acc = [[_mm512_setzero_ps(); 4]; A];
        let mut bias = [[_mm512_setzero_ps(); 4]; A];
        for g in 0..groups {
            let mut dh = [[_mm512_setzero_si512(); 4]; A];
            let mut dl = [[_mm512_setzero_si512(); 4]; A];
            for j in 0..QUADS {
                let mut h = [_mm512_setzero_si512(); A];
                let mut l = [_mm512_setzero_si512(); A];
                for a in 0..A {
                    let (hp, lp) = (
                        acts[a].hi.as_ptr() as *const i32,
                        acts[a].lo.as_ptr() as *const i32,
                    );
                    h[a] = _mm512_set1_epi32(hp.add(g * QUADS + j).read_unaligned());
                    l[a] = _mm512_set1_epi32(lp.add(g * QUADS + j).read_unaligned());
                }
                for k in 0..blocks.len() {
                    let w = _mm512_loadu_si512(
                        m.q.as_ptr()
                            .add((((blocks[k]) * groups + g) * QUADS + j) * BLOCK * 4)
                            as *const _,
                    );
                    for a in 0..A {
                        dh[a][k] = _mm512_dpbusd_epi32(dh[a][k], w, h[a]);
                        dl[a][k] = _mm512_dpbusd_epi32(dl[a][k], w, l[a]);
                    }
                }
            }
            for k in 0..blocks.len() {
                let meta = ((blocks[k]) * groups + g) * BLOCK;
                let c = _mm512_loadu_si512(m.qsum128.as_ptr().add(meta) as *const _);
                let sc = _mm512_loadu_ps(m.scales.as_ptr().add(meta));
                let bi = _mm512_loadu_ps(m.biases.as_ptr().add(meta));
                for a in 0..A {
                    let d = _mm512_add_epi32(
                        _mm512_add_epi32(_mm512_slli_epi32(dh[a][k], 8), dl[a][k]),
                        c,
                    );
                    acc[a][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), sc, acc[a][k]);
                    let xs = _mm512_set1_ps(acts[a].sums[g]);
                    bias[a][k] = _mm512_fmadd_ps(bi, xs, bias[a][k]);
                }
            }
        }
        for a in 0..A {
            let sx = _mm512_set1_ps(acts[a].scale);
            for k in 0..blocks.len() {
                _mm512_storeu_ps(
                    out[a].as_mut_ptr().add(k * BLOCK),
                    _mm512_mul_ps(sx, _mm512_add_ps(acc[a][k], bias[a][k])),
                );
            }
        }
    }

    /// Up to 4 blocks, interleaved group by group (four memory streams in flight,
    /// as the AVX-512 kernel; one block at a time left DRAM idle between
    /// requests). Per block the operations and their order are unchanged.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn blocks_avx2(m: &Q8, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
        let groups = m.groups();
        let nb = blocks.len();
        // Four rows per register: [r0 p0, r0 p1, r1 p0, …] partial sums.
        let mut acc = [[_mm_setzero_ps(); 4]; 4];
        let mut bias = [[_mm_setzero_ps(); 4]; 4];
        for g in 0..groups {
            let xs = _mm_set1_ps(act.sums[g]);
            for k in 0..nb {
                let b = blocks[k];
                let mut d = [_mm256_setzero_si256(); 4];
                for j in 0..QUADS {
                    // The quad's 4 int16 activations, broadcast to every 64-bit lane.
                    let x = _mm256_set1_epi64x(
                        (act.xq.as_ptr().add(g * GROUP + 4 * j) as *const i64).read_unaligned(),
                    );
                    let p = m.q.as_ptr().add(((b * groups + g) * QUADS + j) * BLOCK * 4);
                    for q4 in 0..4 {
                        let w =
                            _mm256_cvtepu8_epi16(_mm_loadu_si128(p.add(16 * q4) as *const __m128i));
                        d[q4] = _mm256_add_epi32(d[q4], _mm256_madd_epi16(w, x));
                    }
                }
                let meta = (b * groups + g) * BLOCK;
                for q4 in 0..4 {
                    // Fold the two partial sums of each row: lanes (0,1)→row 0, …
                    let s = _mm256_hadd_epi32(d[q4], d[q4]);
                    let s = _mm256_permute4x64_epi64(s, 0b1101_1000);
                    let rows = _mm256_castsi256_si128(s);
                    let sc = _mm_loadu_ps(m.scales.as_ptr().add(meta + 4 * q4));
                    acc[k][q4] = _mm_fmadd_ps(_mm_cvtepi32_ps(rows), sc, acc[k][q4]);
                    let bi = _mm_loadu_ps(m.biases.as_ptr().add(meta + 4 * q4));
                    bias[k][q4] = _mm_fmadd_ps(bi, xs, bias[k][q4]);
                }
            }
        }
        let sx = _mm_set1_ps(act.scale);
        for k in 0..nb {
            for q4 in 0..4 {
                let v = _mm_mul_ps(sx, _mm_add_ps(acc[k][q4], bias[k][q4]));
                _mm_storeu_ps(out.as_mut_ptr().add(k * BLOCK + 4 * q4), v);
            }
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
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
        let groups = m.groups();
        let flip = vdupq_n_u8(0x80);
        for (bi, &b) in blocks.iter().enumerate() {
            let mut acc = [[vdupq_n_f32(0.0); 4]; A];
            let mut bias = [[vdupq_n_f32(0.0); 4]; A];
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
                for a in 0..A {
                    // |Σxq| < 2^21, so the f32 group sum is an exact integer.
                    let sums = acts[a].sums[g];
                    let shift = vdupq_n_s32(128 * (sums as i32 - 128 * GROUP as i32));
                    let xs = vdupq_n_f32(sums);
                    for k in 0..4 {
                        let c = vld1q_s32(m.qsum128.as_ptr().add(meta + 4 * k));
                        let d = vaddq_s32(vaddq_s32(vshlq_n_s32::<8>(dh[a][k]), dl[a][k]), c);
                        let d = vaddq_s32(d, shift);
                        let sc = vld1q_f32(m.scales.as_ptr().add(meta + 4 * k));
                        acc[a][k] = vfmaq_f32(acc[a][k], vcvtq_f32_s32(d), sc);
                        let bs = vld1q_f32(m.biases.as_ptr().add(meta + 4 * k));
                        bias[a][k] = vfmaq_f32(bias[a][k], bs, xs);
                    }
                }
            }
            for a in 0..A {
                let sx = vdupq_n_f32(acts[a].scale);
                for k in 0..4 {
                    let v = vmulq_f32(sx, vaddq_f32(acc[a][k], bias[a][k]));
                    vst1q_f32(out[a].as_mut_ptr().add(bi * BLOCK + 4 * k), v);
                }
            }
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
        let groups = m.groups();
        for (bi, &b) in blocks.iter().enumerate() {
            let mut acc = [vdupq_n_f32(0.0); 4];
            let mut bias = [vdupq_n_f32(0.0); 4];
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
                let xs = vdupq_n_f32(act.sums[g]);
                let meta = (b * groups + g) * BLOCK;
                for k in 0..4 {
                    // Fold each row's four lanes: [r0, r1, r2, r3] of this quarter.
                    let s01 = vpaddq_s32(d[4 * k], d[4 * k + 1]);
                    let s23 = vpaddq_s32(d[4 * k + 2], d[4 * k + 3]);
                    let rows = vpaddq_s32(s01, s23);
                    let sc = vld1q_f32(m.scales.as_ptr().add(meta + 4 * k));
                    acc[k] = vfmaq_f32(acc[k], vcvtq_f32_s32(rows), sc);
                    let bs = vld1q_f32(m.biases.as_ptr().add(meta + 4 * k));
                    bias[k] = vfmaq_f32(bias[k], bs, xs);
                }
            }
            let sx = vdupq_n_f32(act.scale);
            for k in 0..4 {
                let v = vmulq_f32(sx, vaddq_f32(acc[k], bias[k]));
                vst1q_f32(out.as_mut_ptr().add(bi * BLOCK + 4 * k), v);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::quant::Affine;

    /// A small LCG (tests only).
    pub(crate) struct Rng(pub u64);

    impl Rng {
        pub fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }

        /// Uniform in `lo..=hi`.
        pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
            lo + (self.next() % (hi - lo + 1) as u64) as i64
        }

        /// ±1 with equal odds.
        pub fn sign(&mut self) -> i64 {
            if self.next() & 1 == 0 {
                1
            } else {
                -1
            }
        }

        /// Uniform in [−0.5, 0.5).
        pub fn unit(&mut self) -> f32 {
            (self.next() >> 7) as f32 / (1u64 << 24) as f32 - 0.5
        }
    }

    /// Owned activation buffers, derived from `xq` as `matrix::with_quantized` does.
    pub(crate) struct OwnedAct {
        xq: Vec<i16>,
        hi: Vec<i8>,
        lo: Vec<i8>,
        sums: Vec<f32>,
        scale: f32,
    }

    impl OwnedAct {
        pub fn new(xq: Vec<i16>, scale: f32) -> OwnedAct {
            let n = xq.len();
            let (mut hi, mut lo) = (vec![0; n], vec![0; n]);
            split_bytes(&xq, &mut hi, &mut lo);
            let sums = xq
                .chunks_exact(GROUP)
                .map(|c| c.iter().map(|&v| v as i32).sum::<i32>() as f32)
                .collect();
            OwnedAct {
                xq,
                hi,
                lo,
                sums,
                scale,
            }
        }

        /// `n` random int16 activations in `[-amp, amp]`, one of them at ±amp (the
        /// quantiser maps the largest |x| to ±32767).
        pub fn random(rng: &mut Rng, n: usize, amp: i64, scale: f32) -> OwnedAct {
            let mut xq: Vec<i16> = (0..n).map(|_| rng.int(-amp, amp) as i16).collect();
            let i = rng.int(0, n as i64 - 1) as usize;
            xq[i] = (rng.sign() * amp) as i16;
            OwnedAct::new(xq, scale)
        }

        pub fn xq(&self) -> &[i16] {
            &self.xq
        }

        pub fn act(&self) -> Act<'_> {
            Act {
                xq: &self.xq,
                hi: &self.hi,
                lo: &self.lo,
                sums: &self.sums,
                scale: self.scale,
            }
        }
    }

    /// Calls `f` with the blocks of each task when `nblocks` blocks are split into
    /// tasks of up to `per` blocks taken far apart (as `matrix::block_tasks` does).
    pub(crate) fn for_block_tasks(nblocks: usize, per: usize, mut f: impl FnMut(&[usize])) {
        let tasks = nblocks.div_ceil(per);
        for t in 0..tasks {
            let b: Vec<usize> = (0..per)
                .map(|q| t + q * tasks)
                .filter(|&i| i < nblocks)
                .collect();
            f(&b);
        }
    }

    /// Shapes `(rows, cols)`: rows a multiple of 16 and not, several widths.
    pub(crate) const SHAPES: [(usize, usize); 8] = [
        (16, 64),
        (37, 64),
        (64, 256),
        (7, 256),
        (48, 1024),
        (130, 1024),
        (32, 4096),
        (21, 4096),
    ];

    fn run(m: &Q8, isa: Isa, act: &Act<'_>, per: usize) -> Vec<f32> {
        let mut y = vec![f32::NAN; m.rows];
        let range = 0..m.rows;
        for_block_tasks(m.rows.div_ceil(BLOCK), per, |b| {
            m.run_blocks(isa, b, &range, act, y.as_mut_ptr())
        });
        y
    }

    /// Exact integer sums `Σ_{i∈g} q[r,i]·xq[i]`, `[rows][groups]`, from row-major data.
    fn group_dots(a: &Affine, rows: usize, cols: usize, xq: &[i16]) -> Vec<i64> {
        let groups = cols / GROUP;
        let mut d = vec![0i64; rows * groups];
        for r in 0..rows {
            for c in 0..cols {
                d[r * groups + c / GROUP] += a.q[r * cols + c] as i64 * xq[c] as i64;
            }
        }
        d
    }

    /// Random affine data; scales and biases of mixed sign and magnitude.
    fn random_affine(rng: &mut Rng, rows: usize, cols: usize) -> Affine {
        let g = rows * cols / GROUP;
        Affine {
            bits: 8,
            group: GROUP,
            q: (0..rows * cols).map(|_| rng.int(0, 255) as u8).collect(),
            scales: (0..g).map(|_| rng.unit() * 1e-2).collect(),
            biases: (0..g).map(|_| rng.unit()).collect(),
        }
    }

    /// The row widening walks the blocked layout quad by quad; it must read what
    /// `index` addresses, element by element.
    #[test]
    fn row_into_reads_the_blocked_layout() {
        let mut rng = Rng(7);
        for &(rows, cols) in &SHAPES {
            let a = random_affine(&mut rng, rows, cols);
            let m = Q8::from_affine(&a, rows, cols);
            let mut row = vec![0f32; cols];
            for r in 0..rows {
                m.row_into(r, &mut row);
                for (c, &got) in row.iter().enumerate() {
                    let meta = ((r / BLOCK) * m.groups() + c / GROUP) * BLOCK + r % BLOCK;
                    let want = m.q[m.index(r, c)] as f32 * m.scales[meta] + m.biases[meta];
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "{rows}x{cols} row {r} col {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn integer_sums_are_exact_on_every_tier() {
        let tiers = crate::isa::tiers_under_test("gemv_int8::integer_sums_are_exact_on_every_tier");
        // Unit scales, zero biases and sx = 1 make the output the plain integer sum;
        // small activations keep every partial sum below 2^24, so the f32 result is
        // the exact integer on every tier whatever its accumulation order.
        let mut rng = Rng(1);
        for &(rows, cols) in &SHAPES {
            let mut a = random_affine(&mut rng, rows, cols);
            a.scales.fill(1.0);
            a.biases.fill(0.0);
            let m = Q8::from_affine(&a, rows, cols);
            let x = OwnedAct::random(&mut rng, cols, 60, 1.0);
            let d = group_dots(&a, rows, cols, x.xq());
            let groups = cols / GROUP;
            for &isa in &tiers {
                for per in 1..=4 {
                    let y = run(&m, isa, &x.act(), per);
                    for r in 0..rows {
                        let row = &d[r * groups..(r + 1) * groups];
                        assert!(row.iter().map(|v| v.abs()).sum::<i64>() < 1 << 24);
                        let want: i64 = row.iter().sum();
                        assert_eq!(y[r], want as f32, "{isa:?} {rows}x{cols} row {r}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_tier_matches_row_major_reference() {
        let tiers =
            crate::isa::tiers_under_test("gemv_int8::every_tier_matches_row_major_reference");
        // The portable kernel keeps the reference's f32 order, so it must agree
        // with it bit for bit. Every tier is also compared with the exact value:
        // measured worst |y − exact| / (sx·Σ_g |scale·d| + |bias·Σxq|) over these
        // shapes: 1.2e-7 on every tier (≈ 2⁻²³, the f32 group accumulation and the
        // final roundings); asserted with ~8× margin.
        const TOL: f64 = 1e-6;
        let mut rng = Rng(2);
        let mut worst = [0f64; 3];
        for &(rows, cols) in &SHAPES {
            let a = random_affine(&mut rng, rows, cols);
            let m = Q8::from_affine(&a, rows, cols);
            let x = OwnedAct::random(&mut rng, cols, 32767, 3.0 / 32767.0);
            let act = x.act();
            let d = group_dots(&a, rows, cols, x.xq());
            let groups = cols / GROUP;
            // Per row: the f32 value in the portable order, the exact value (f64)
            // and the magnitude the error is measured against.
            let mut want = vec![(0f32, 0f64, 0f64); rows];
            for (r, w) in want.iter_mut().enumerate() {
                let (mut acc, mut bias, mut exact, mut mag) = (0f32, 0f32, 0f64, 0f64);
                for g in 0..groups {
                    let (s, b) = (a.scales[r * groups + g], a.biases[r * groups + g]);
                    let (dg, xs) = (d[r * groups + g], act.sums[g]);
                    acc += s * dg as f32;
                    bias += b * xs;
                    let (t0, t1) = (s as f64 * dg as f64, b as f64 * xs as f64);
                    exact += t0 + t1;
                    mag += t0.abs() + t1.abs();
                }
                let sx = act.scale as f64;
                *w = (act.scale * (acc + bias), sx * exact, sx * mag);
            }
            for &isa in &tiers {
                for per in 1..=4 {
                    let y = run(&m, isa, &act, per);
                    for (r, &(w, exact, mag)) in want.iter().enumerate() {
                        if isa == Isa::PORTABLE {
                            assert_eq!(y[r].to_bits(), w.to_bits(), "{rows}x{cols} row {r}");
                        }
                        let e = (y[r] as f64 - exact).abs() / mag;
                        let k = if isa.vnni() {
                            2
                        } else {
                            usize::from(isa != Isa::PORTABLE)
                        };
                        worst[k] = worst[k].max(e);
                        assert!(
                            e <= TOL,
                            "{isa:?} {rows}x{cols} row {r}: {} vs {exact}",
                            y[r]
                        );
                    }
                }
            }
        }
        eprintln!("int8 worst relative error per kernel (portable, avx2, avx512 vnni): {worst:?}");
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let tiers = crate::isa::tiers_under_test("gemv_int8::extreme_values_do_not_overflow");
        // q = 255 and xq = ±32767 everywhere: the largest per-group sums.
        let (rows, cols) = (32, 4096);
        let g = rows * cols / GROUP;
        let a = Affine {
            bits: 8,
            group: GROUP,
            q: vec![255; rows * cols],
            scales: vec![1.0; g],
            biases: vec![0.0; g],
        };
        let m = Q8::from_affine(&a, rows, cols);
        for sign in [1i16, -1] {
            let x = OwnedAct::new(vec![sign * 32767; cols], 1.0);
            let want = sign as f64 * 255.0 * 32767.0 * cols as f64;
            for &isa in &tiers {
                for v in run(&m, isa, &x.act(), 4) {
                    assert!((v as f64 - want).abs() <= 1e-6 * want.abs(), "{isa:?}: {v}");
                }
            }
        }
    }
}
