//! 4-bit palettised weights: per block of 16 output rows, 16 levels stored as int8
//! with one f32 scale (`w = scale · level[idx]`), 4-bit indices.
//!
//! The layout matches the int8 kernel's blocks: per block and quad of 4 inputs,
//! 32 bytes hold the 64 indices of 16 rows × 4 inputs (byte k: element k in the low
//! nibble, element k + 32 in the high nibble). The AVX-512 kernel unpacks a quad,
//! looks the levels up with one `vpshufb` (levels stored offset by +128 as bytes)
//! and multiplies them for 16 rows at once with two `vpdpbusd` on the split int16
//! activation bytes, as in [`crate::gemv_int8`]. The offsets are undone with the
//! activation sums, so every path computes exact integer sums of the same
//! effective weights.
//!
//! The AVX2 kernel looks the levels (+128, as bytes) up with `vpshufb` as well
//! (low nibbles: rows 0–7, high nibbles: rows 8–15), takes the even and odd bytes
//! of each 16-bit lane apart with one `and` / one shift and multiplies them with
//! `vpmaddwd` against the quad's activations `(x0, x2)` and `(x1, x3)`, so each
//! 32-bit lane holds one row and no horizontal fold is needed. The portable kernel
//! walks the same layout with a 256-entry byte → (low, high level) table and
//! fixed-width lanes. Both keep exact i32 partial sums over chunks of quads and
//! widen them (f64 / i64) between chunks (a row's sum, up to 127·32767·cols, does
//! not fit i32 beyond ~500 columns), so their results are bit-identical; the
//! AVX-512 kernel agrees to within a few f32 roundings (it converts two partial
//! sums to f32 separately).

use crate::gemv_int8::{Act, BLOCK};
use crate::isa::Isa;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use crate::isa::Tier;
use crate::quant::Palette;

/// A palettised matrix in the blocked layout.
#[derive(Debug, Clone)]
pub(crate) struct Lut4 {
    rows: usize,
    cols: usize,
    /// `[blocks][cols/4][32]` packed indices.
    packed: Vec<u8>,
    /// `[blocks][16]` levels as int8.
    levels: Vec<i8>,
    /// `[blocks]` level scale.
    scales: Vec<f32>,
    /// `[blocks][16]`: `128·Σ_c level(r, c)`, the correction of the shifted low
    /// activation byte (`xq = 256·hi + lo' + 128`).
    lsum128: Vec<i32>,
}

/// Bytes of one quad (16 rows × 4 inputs, 4 bits each).
const QUAD_BYTES: usize = 32;

/// Quads (4 inputs each) summed in i32 before widening in [`Lut4::blocks_portable`]:
/// a lane gains one product of a level (|l| ≤ 127) and an activation
/// (|xq| ≤ 32767) per quad, so 128 quads stay below 128·127·32767 ≈ 5.3·10⁸.
const CHUNK_QUADS: usize = 128;

impl Lut4 {
    /// From a k-means palette with one codebook per 16 rows: the f32 levels are
    /// rounded to int8 with a per-block scale (`max |level| / 127`), a ≈0.4 %
    /// change far below the 4-bit quantisation error.
    pub fn from_palette(p: &Palette, rows: usize, cols: usize) -> Lut4 {
        assert_eq!(p.rows_per_group, BLOCK);
        let blocks = rows.div_ceil(BLOCK);
        let mut levels = vec![0i8; blocks * 16];
        let mut scales = vec![0f32; blocks];
        for b in 0..blocks {
            let l = &p.lut[b * 16..b * 16 + 16];
            let m = l.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = if m > 0.0 { m / 127.0 } else { 1.0 };
            scales[b] = s;
            for (d, &v) in levels[b * 16..b * 16 + 16].iter_mut().zip(l) {
                *d = (v / s).round().clamp(-127.0, 127.0) as i8;
            }
        }
        let mut packed = vec![0u8; blocks * cols / 4 * QUAD_BYTES];
        for r in 0..rows {
            for c in 0..cols {
                let (pos, high) = Self::position(r, c, cols);
                let idx = p.idx[r * cols + c] & 0x0f;
                packed[pos] |= if high { idx << 4 } else { idx };
            }
        }
        let mut m = Lut4 {
            rows,
            cols,
            packed,
            levels,
            scales,
            lsum128: vec![0; blocks * BLOCK],
        };
        for r in 0..rows {
            let b = r / BLOCK;
            let s: i32 = (0..cols)
                .map(|c| m.levels[b * 16 + m.index(r, c) as usize] as i32)
                .sum();
            m.lsum128[r] = 128 * s;
        }
        m
    }

    /// Byte index and nibble of weight (r, c).
    #[inline]
    fn position(r: usize, c: usize, cols: usize) -> (usize, bool) {
        let (b, rr, j, t) = (r / BLOCK, r % BLOCK, c / 4, c % 4);
        let e = rr * 4 + t;
        ((b * (cols / 4) + j) * QUAD_BYTES + e % 32, e >= 32)
    }

    #[inline]
    fn index(&self, r: usize, c: usize) -> u8 {
        let (pos, high) = Self::position(r, c, self.cols);
        if high {
            self.packed[pos] >> 4
        } else {
            self.packed[pos] & 0x0f
        }
    }

    /// The effective f32 codebook of each block (what files store).
    pub fn lut(&self) -> Vec<f32> {
        self.levels
            .iter()
            .enumerate()
            .map(|(i, &l)| l as f32 * self.scales[i / 16])
            .collect()
    }

    /// Row-major indices (what files store).
    pub fn indices(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.rows * self.cols];
        for r in 0..self.rows {
            for c in 0..self.cols {
                v[r * self.cols + c] = self.index(r, c);
            }
        }
        v
    }

    pub fn stack(parts: Vec<Lut4>) -> Lut4 {
        assert!(
            parts.iter().all(|p| p.rows % BLOCK == 0),
            "palette stacking needs whole 16-row blocks"
        );
        let mut out = Lut4 {
            rows: 0,
            cols: parts[0].cols,
            packed: Vec::new(),
            levels: Vec::new(),
            scales: Vec::new(),
            lsum128: Vec::new(),
        };
        for p in parts {
            out.rows += p.rows;
            out.packed.extend(p.packed);
            out.levels.extend(p.levels);
            out.scales.extend(p.scales);
            out.lsum128.extend(p.lsum128);
        }
        out
    }

    pub fn bytes(&self) -> usize {
        self.packed.len() + self.levels.len() + 4 * self.scales.len()
    }

    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let b = r / BLOCK;
        for (c, o) in out.iter_mut().enumerate() {
            *o = self.levels[b * 16 + self.index(r, c) as usize] as f32 * self.scales[b];
        }
    }

    /// Computes the rows of `range` that fall in `blocks` (at most 4, typically far
    /// apart: four memory streams) into `y`, indexed relative to `range.start`.
    #[allow(clippy::too_many_arguments)]
    pub fn run_blocks(
        &self,
        isa: Isa,
        blocks: &[usize],
        range: &std::ops::Range<usize>,
        act: &Act<'_>,
        sums: (i32, i32),
        y: *mut f32,
    ) {
        debug_assert!(blocks.len() <= 4);
        // Only the VNNI kernel folds the byte sums in itself.
        #[cfg(not(target_arch = "x86_64"))]
        let _ = sums;
        let mut buf = [0f32; 4 * BLOCK];
        let out = &mut buf[..blocks.len() * BLOCK];
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` with VNNI comes only from detecting avx512f/bw/vnni.
            Tier::Avx512 if isa.vnni() => unsafe {
                x86::blocks_avx512(self, blocks, act, sums, out)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
            Tier::Avx2 | Tier::Avx512 => unsafe { x86::blocks_avx2(self, blocks, act, out) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: an `Isa` with dotprod comes only from detecting neon and dotprod.
            Tier::Neon if isa.dotprod() => unsafe { arm::blocks_sdot(self, blocks, act, out) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: an `Isa` of tier NEON comes only from detecting neon.
            Tier::Neon => unsafe { arm::blocks_neon(self, blocks, act, out) },
            _ => self.blocks_portable(blocks, act, out),
        }
        crate::gemv_int8::scatter(blocks, range, out, y);
    }

    /// Walks the blocked layout directly: per block, a 256-entry table maps a packed
    /// byte to its two levels (low nibble → rows 0–7, high nibble → rows 8–15); per
    /// quad the 64 levels multiply the quad's 4 activations in 64 fixed i32 lanes
    /// (lane 2k: element k, lane 2k + 1: element k + 32), folded into rows after
    /// each chunk. Integer sums are exact, so this matches the AVX2 kernel bit for bit.
    fn blocks_portable(&self, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
        let quads = self.cols / 4;
        let xq = &act.xq[..self.cols];
        for (bi, &b) in blocks.iter().enumerate() {
            let lv = &self.levels[b * 16..b * 16 + 16];
            let pair: [[i16; 2]; 256] =
                std::array::from_fn(|v| [lv[v & 15] as i16, lv[v >> 4] as i16]);
            let packed = &self.packed[b * quads * QUAD_BYTES..(b + 1) * quads * QUAD_BYTES];
            let mut total = [0i64; BLOCK];
            for (pc, xc) in packed
                .chunks(CHUNK_QUADS * QUAD_BYTES)
                .zip(xq.chunks(CHUNK_QUADS * 4))
            {
                let mut acc = [0i32; 64];
                for (q, x) in pc
                    .as_chunks::<QUAD_BYTES>()
                    .0
                    .iter()
                    .zip(xc.as_chunks::<4>().0)
                {
                    let w: [[i16; 2]; QUAD_BYTES] = std::array::from_fn(|k| pair[q[k] as usize]);
                    let w = w.as_flattened();
                    let x8 = [x[0], x[0], x[1], x[1], x[2], x[2], x[3], x[3]];
                    let xr = [x8; 8];
                    let xr = xr.as_flattened();
                    for e in 0..64 {
                        acc[e] += w[e] as i32 * xr[e] as i32;
                    }
                }
                // Lane 2k holds element k (row k/4), lane 2k + 1 element k + 32.
                for (rr, a) in acc.as_chunks::<8>().0.iter().enumerate() {
                    total[rr] += (0..4).map(|t| a[2 * t] as i64).sum::<i64>();
                    total[rr + 8] += (0..4).map(|t| a[2 * t + 1] as i64).sum::<i64>();
                }
            }
            for rr in 0..BLOCK {
                out[bi * BLOCK + rr] = self.scales[b] * act.scale * total[rr] as f32;
            }
        }
    }
}

/// Σ of the high and low activation bytes (the level offset correction).
pub(crate) fn byte_sums(act: &Act<'_>) -> (i32, i32) {
    let h = act.hi.iter().map(|&v| v as i32).sum();
    let l = act.lo.iter().map(|&v| v as i32).sum();
    (h, l)
}

/// NEON: one `TBL` looks 16 levels up at once (signed, no offset needed). The
/// quad's 32 index bytes give four vectors of 16 levels: low nibbles of bytes
/// 0–15 and 16–31 (rows 0–3, 4–7), high nibbles (rows 8–11, 12–15), each 4 rows
/// × the quad's 4 inputs. Integer sums are exact and widened to i64 before the
/// final f32 product, so both kernels give the portable kernel's bits.
#[cfg(target_arch = "aarch64")]
mod arm {
    use super::{Lut4, CHUNK_QUADS, QUAD_BYTES};
    use crate::gemv_int8::{Act, BLOCK};
    use std::arch::aarch64::*;

    /// The 64 levels of one quad, as `[rows 0–3, 4–7, 8–11, 12–15]`.
    #[inline(always)]
    unsafe fn levels(lut: int8x16_t, p: *const u8) -> [int8x16_t; 4] {
        let mask = vdupq_n_u8(0x0f);
        let (b0, b1) = (vld1q_u8(p), vld1q_u8(p.add(16)));
        [
            vqtbl1q_s8(lut, vandq_u8(b0, mask)),
            vqtbl1q_s8(lut, vandq_u8(b1, mask)),
            vqtbl1q_s8(lut, vshrq_n_u8::<4>(b0)),
            vqtbl1q_s8(lut, vshrq_n_u8::<4>(b1)),
        ]
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

    /// Without `SDOT`: levels widened to int16 times the int16 activations
    /// (`SMLAL`), one accumulator per row (lanes = the quad's 4 inputs), widened to
    /// i64 every [`CHUNK_QUADS`] quads as the portable kernel does.
    ///
    /// # Safety
    /// The CPU must support NEON.
    #[target_feature(enable = "neon")]
    pub unsafe fn blocks_neon(m: &Lut4, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
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

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Lut4, QUAD_BYTES};
    use crate::gemv_int8::{Act, BLOCK};
    use std::arch::x86_64::*;

    /// Up to 4 blocks (four memory streams) at once.
    ///
    /// # Safety
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512VNNI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn blocks_avx512(
        m: &Lut4,
        blocks: &[usize],
        act: &Act<'_>,
        sums: (i32, i32),
        out: &mut [f32],
    ) {
        let quads = m.cols / 4;
        let mask = _mm256_set1_epi8(0x0f);
        // Each block's levels + 128 as bytes, replicated in the four 128-bit lanes.
        let mut lut = [_mm512_setzero_si512(); 4];
        for k in 0..blocks.len() {
            let mut bytes = [0u8; 16];
            for (d, &l) in bytes
                .iter_mut()
                .zip(&m.levels[(blocks[k]) * 16..(blocks[k]) * 16 + 16])
            {
                *d = (l as i16 + 128) as u8;
            }
            lut[k] = _mm512_broadcast_i32x4(_mm_loadu_si128(bytes.as_ptr() as *const __m128i));
        }
        let (hp, lp) = (act.hi.as_ptr() as *const i32, act.lo.as_ptr() as *const i32);
        let mut dh = [_mm512_setzero_si512(); 4];
        let mut dl = [_mm512_setzero_si512(); 4];
        for j in 0..quads {
            let h = _mm512_set1_epi32(hp.add(j).read_unaligned());
            let l = _mm512_set1_epi32(lp.add(j).read_unaligned());
            for k in 0..blocks.len() {
                let p = m
                    .packed
                    .as_ptr()
                    .add(((blocks[k]) * quads + j) * QUAD_BYTES);
                let b = _mm256_loadu_si256(p as *const __m256i);
                let lo = _mm256_and_si256(b, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
                let idx = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
                let w = _mm512_shuffle_epi8(lut[k], idx);
                dh[k] = _mm512_dpbusd_epi32(dh[k], w, h);
                dl[k] = _mm512_dpbusd_epi32(dl[k], w, l);
            }
        }
        // Undo the +128 level offset exactly, in integers: Σ(L+128)·x = Σ L·x + 128·Σx,
        // and add back the +128 of the shifted low byte: Σ L·xq = 256·Σ L·hi + Σ L·lo' + 128·Σ L.
        let ch = _mm512_set1_epi32(128 * sums.0);
        let cl = _mm512_set1_epi32(128 * sums.1);
        for k in 0..blocks.len() {
            let ls = _mm512_loadu_si512(m.lsum128.as_ptr().add((blocks[k]) * BLOCK) as *const _);
            let fh = _mm512_cvtepi32_ps(_mm512_sub_epi32(dh[k], ch));
            let fl = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_sub_epi32(dl[k], cl), ls));
            let d = _mm512_fmadd_ps(fh, _mm512_set1_ps(256.0), fl);
            let s = _mm512_set1_ps(m.scales[blocks[k]] * act.scale);
            _mm512_storeu_ps(out.as_mut_ptr().add(k * BLOCK), _mm512_mul_ps(d, s));
        }
    }

    /// Quads per exact i32 partial sum in [`blocks_avx2`]: a lane (one row) gains
    /// four products of an offset level (≤ 255) and an activation (|xq| ≤ 32767)
    /// per quad, ≤ 33 422 340; 64 quads ≤ 2 139 029 760 < 2³¹ − 1.
    const AVX2_CHUNK: usize = 64;

    /// Up to 4 blocks (four memory streams) at once.
    ///
    /// Per quad and block: 32 bytes → low/high nibbles → `vpshufb` with the block's
    /// levels + 128 as bytes (rows 0–7 from the low nibbles, rows 8–15 from the
    /// high ones). In each 16-bit lane the even byte (input t = 0 or 2) is
    /// `w & 0xff` and the odd byte (t = 1 or 3) `w >> 8`; `vpmaddwd` with
    /// `(x0, x2)` resp. `(x1, x3)` then leaves one row per 32-bit lane (no
    /// horizontal fold). The i32 sums are exact per chunk of [`AVX2_CHUNK`] quads
    /// and widened to f64 (exact) between chunks; the offset, `128·Σ xq` per row,
    /// is subtracted exactly at the end, so `d` rounds to f32 exactly as the
    /// portable `i64 as f32`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn blocks_avx2(m: &Lut4, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
        match *blocks {
            [a] => blocks_avx2_n(m, [a], act, out),
            [a, b] => blocks_avx2_n(m, [a, b], act, out),
            [a, b, c] => blocks_avx2_n(m, [a, b, c], act, out),
            [a, b, c, d] => blocks_avx2_n(m, [a, b, c, d], act, out),
            _ => {
                for (k, c) in blocks.chunks(4).enumerate() {
                    blocks_avx2(m, c, act, &mut out[4 * k * BLOCK..]);
                }
            }
        }
    }

    /// Offset levels `w` (32 bytes) × the quad's activations, added to `acc`
    /// (one row per 32-bit lane).
    ///
    /// # Safety
    /// The CPU must support AVX2 (only called from the AVX2 kernels, into which it
    /// is inlined).
    #[inline(always)]
    unsafe fn madd_levels(acc: __m256i, w: __m256i, xe: __m256i, xo: __m256i) -> __m256i {
        let even = _mm256_and_si256(w, _mm256_set1_epi16(0xff));
        let odd = _mm256_srli_epi16(w, 8);
        let p = _mm256_add_epi32(_mm256_madd_epi16(even, xe), _mm256_madd_epi16(odd, xo));
        _mm256_add_epi32(acc, p)
    }

    /// Adds 8 exact i32 row sums to two f64×4 totals.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[inline(always)]
    unsafe fn widen(t: &mut [__m256d], s: __m256i) {
        t[0] = _mm256_add_pd(t[0], _mm256_cvtepi32_pd(_mm256_castsi256_si128(s)));
        t[1] = _mm256_add_pd(t[1], _mm256_cvtepi32_pd(_mm256_extracti128_si256(s, 1)));
    }

    /// [`blocks_avx2`] for exactly `N` blocks (accumulators stay in registers).
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn blocks_avx2_n<const N: usize>(
        m: &Lut4,
        blocks: [usize; N],
        act: &Act<'_>,
        out: &mut [f32],
    ) {
        assert!(out.len() >= N * BLOCK && act.xq.len() >= m.cols);
        let quads = m.cols / 4;
        let mask = _mm256_set1_epi8(0x0f);
        // Reorders each quad's (x0, x1, x2, x3) to (x0, x2, x1, x3).
        let pick = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15,
        ));
        let lut: [__m256i; N] = std::array::from_fn(|k| {
            let mut bytes = [0u8; 16];
            for (d, &l) in bytes.iter_mut().zip(&m.levels[blocks[k] * 16..][..16]) {
                *d = (l as i16 + 128) as u8;
            }
            _mm256_broadcastsi128_si256(_mm_loadu_si128(bytes.as_ptr() as *const __m128i))
        });
        // Bounds-checked once here: each block's `quads` quads.
        let base: [*const u8; N] = std::array::from_fn(|k| {
            let len = quads * QUAD_BYTES;
            m.packed[blocks[k] * len..][..len].as_ptr()
        });
        let xp = act.xq.as_ptr();
        // Per block: rows 0–3, 4–7, 8–11, 12–15.
        let mut total = [[_mm256_setzero_pd(); 4]; N];
        let mut j0 = 0;
        while j0 < quads {
            let j1 = (j0 + AVX2_CHUNK).min(quads);
            // The chunk's activations as (x0, x2), (x1, x3) pairs, so the inner loop
            // broadcasts them straight from memory.
            let mut pairs = [0i32; 2 * AVX2_CHUNK];
            let n = j1 - j0;
            let mut j = 0;
            while j + 4 <= n {
                let v = _mm256_loadu_si256(xp.add(4 * (j0 + j)) as *const __m256i);
                let d = pairs.as_mut_ptr().add(2 * j) as *mut __m256i;
                _mm256_storeu_si256(d, _mm256_shuffle_epi8(v, pick));
                j += 4;
            }
            for j in j..n {
                let x = |t: usize| *xp.add(4 * (j0 + j) + t) as u16 as i32;
                pairs[2 * j] = x(0) | x(2) << 16;
                pairs[2 * j + 1] = x(1) | x(3) << 16;
            }
            // Per block: rows 0–7 (low nibbles), rows 8–15 (high nibbles).
            let mut acc = [[_mm256_setzero_si256(); 2]; N];
            for j in j0..j1 {
                let xe = _mm256_set1_epi32(pairs[2 * (j - j0)]);
                let xo = _mm256_set1_epi32(pairs[2 * (j - j0) + 1]);
                for k in 0..N {
                    let b = _mm256_loadu_si256(base[k].add(j * QUAD_BYTES) as *const __m256i);
                    let lo = _mm256_and_si256(b, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
                    acc[k][0] = madd_levels(acc[k][0], _mm256_shuffle_epi8(lut[k], lo), xe, xo);
                    acc[k][1] = madd_levels(acc[k][1], _mm256_shuffle_epi8(lut[k], hi), xe, xo);
                }
            }
            for k in 0..N {
                widen(&mut total[k][..2], acc[k][0]);
                widen(&mut total[k][2..], acc[k][1]);
            }
            j0 = j1;
        }
        // Σ (L + 128)·xq − 128·Σ xq = Σ L·xq, exact in f64.
        let xsum: i64 = act.xq[..m.cols].iter().map(|&v| v as i64).sum();
        let offset = _mm256_set1_pd(128.0 * xsum as f64);
        for k in 0..N {
            let s = _mm256_set1_ps(m.scales[blocks[k]] * act.scale);
            let t = total[k].map(|t| _mm256_cvtpd_ps(_mm256_sub_pd(t, offset)));
            let o = out.as_mut_ptr().add(k * BLOCK);
            _mm256_storeu_ps(o, _mm256_mul_ps(s, _mm256_set_m128(t[1], t[0])));
            _mm256_storeu_ps(o.add(8), _mm256_mul_ps(s, _mm256_set_m128(t[3], t[2])));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemv_int8::tests::{for_block_tasks, OwnedAct, Rng, SHAPES};

    /// Palette shapes: the int8 shapes plus widths that are multiples of 32 only.
    const MORE: [(usize, usize); 3] = [(16, 32), (53, 96), (80, 160)];

    /// A palette whose levels are the integers `levels` (per block, each block with
    /// a ±127 so the int8 conversion keeps them) times a per-block `scale`.
    struct Case {
        rows: usize,
        cols: usize,
        levels: Vec<i64>,
        scales: Vec<f32>,
        idx: Vec<u8>,
    }

    impl Case {
        fn random(rng: &mut Rng, rows: usize, cols: usize, pow2: bool) -> Case {
            let blocks = rows.div_ceil(BLOCK);
            let mut levels: Vec<i64> = (0..blocks * 16).map(|_| rng.int(-127, 127)).collect();
            for b in 0..blocks {
                levels[b * 16 + rng.int(0, 15) as usize] = 127 * rng.sign();
            }
            let scales = (0..blocks)
                .map(|_| {
                    if pow2 {
                        (2f32).powi(rng.int(-12, -4) as i32)
                    } else {
                        (rng.unit() + 0.75) * 1e-3
                    }
                })
                .collect();
            let idx = (0..rows * cols).map(|_| rng.int(0, 15) as u8).collect();
            Case {
                rows,
                cols,
                levels,
                scales,
                idx,
            }
        }

        fn matrix(&self) -> Lut4 {
            let lut = self
                .levels
                .iter()
                .enumerate()
                .map(|(i, &l)| l as f32 * self.scales[i / 16])
                .collect();
            let p = Palette {
                rows_per_group: BLOCK,
                lut,
                idx: self.idx.clone(),
            };
            Lut4::from_palette(&p, self.rows, self.cols)
        }

        /// Exact `Σ_c level(r, c)·xq[c]` per row, from the row-major indices.
        fn dots(&self, xq: &[i16]) -> Vec<i64> {
            (0..self.rows)
                .map(|r| {
                    (0..self.cols)
                        .map(|c| {
                            let i = self.idx[r * self.cols + c] as usize;
                            self.levels[(r / BLOCK) * 16 + i] * xq[c] as i64
                        })
                        .sum()
                })
                .collect()
        }
    }

    fn run(m: &Lut4, isa: Isa, act: &Act<'_>, per: usize) -> Vec<f32> {
        let mut y = vec![f32::NAN; m.rows];
        let range = 0..m.rows;
        let sums = byte_sums(act);
        for_block_tasks(m.rows.div_ceil(BLOCK), per, |b| {
            m.run_blocks(isa, b, &range, act, sums, y.as_mut_ptr())
        });
        y
    }

    fn shapes() -> impl Iterator<Item = (usize, usize)> {
        SHAPES.into_iter().chain(MORE)
    }

    #[test]
    fn integer_sums_are_exact_on_every_tier() {
        let tiers = crate::isa::tiers_under_test("gemv_lut4::integer_sums_are_exact_on_every_tier");
        // Power-of-two scales and sx = 1 make `y / scale` the integer sum itself,
        // and small activations keep it below 2^24 (exact in f32). AVX-512 converts
        // `Σ level·hi` and `Σ level·(xq & 0xff)` to f32 separately; the second is
        // exact only below 2^24, guaranteed for non-negative activations (it is then
        // the sum itself) or when 127·255·cols < 2^24.
        let mut rng = Rng(5);
        for (rows, cols) in shapes() {
            let case = Case::random(&mut rng, rows, cols, true);
            let m = case.matrix();
            assert_eq!(m.scales, case.scales, "test premise: scales kept exactly");
            for signed in [true, false] {
                let x = if signed {
                    OwnedAct::random(&mut rng, cols, 60, 1.0)
                } else {
                    let xq = (0..cols).map(|_| rng.int(0, 120) as i16).collect();
                    OwnedAct::new(xq, 1.0)
                };
                let d = case.dots(x.xq());
                for &isa in &tiers {
                    if isa.vnni() && signed && 127 * 255 * cols >= 1 << 24 {
                        continue;
                    }
                    for per in 1..=4 {
                        let y = run(&m, isa, &x.act(), per);
                        for r in 0..rows {
                            assert!(d[r].abs() < 1 << 24);
                            let got = y[r] / case.scales[r / BLOCK];
                            assert_eq!(got, d[r] as f32, "{isa:?} {rows}x{cols} row {r}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_tier_matches_row_major_reference() {
        let tiers =
            crate::isa::tiers_under_test("gemv_lut4::every_tier_matches_row_major_reference");
        // Portable and AVX2 compute `(scale·sx)·(d as f32)` from the same exact
        // integer d: bit-identical to the reference (with power-of-two scales,
        // which `from_palette` keeps exactly). AVX-512 converts two partial sums
        // separately; against the exact value, measured worst
        // |y − exact| / (scale·sx·Σ_c |level·xq|) over these shapes: 4.0e-8 on
        // every tier (the final f32 roundings dominate); asserted ≤ 5e-7 ≈ 8·2⁻²⁴,
        // which bounds AVX-512's extra conversions.
        const TOL: f64 = 5e-7;
        let mut rng = Rng(6);
        let mut worst = [0f64; 3];
        for (rows, cols) in shapes() {
            for pow2 in [true, false] {
                let case = Case::random(&mut rng, rows, cols, pow2);
                let m = case.matrix();
                let x = OwnedAct::random(&mut rng, cols, 32767, 3.0 / 32767.0);
                let act = x.act();
                let d = case.dots(x.xq());
                for &isa in &tiers {
                    for per in 1..=4 {
                        let y = run(&m, isa, &act, per);
                        for r in 0..rows {
                            let s = case.scales[r / BLOCK];
                            if pow2 && !isa.vnni() {
                                let want = s * act.scale * d[r] as f32;
                                assert_eq!(
                                    y[r].to_bits(),
                                    want.to_bits(),
                                    "{isa:?} {rows}x{cols} row {r}"
                                );
                            }
                            let mag: i64 = (0..cols)
                                .map(|c| {
                                    let i = case.idx[r * cols + c] as usize;
                                    (case.levels[(r / BLOCK) * 16 + i] * x.xq()[c] as i64).abs()
                                })
                                .sum();
                            let k = s as f64 * act.scale as f64;
                            let e = (y[r] as f64 - k * d[r] as f64).abs() / (k * mag as f64);
                            let kernel = if isa.vnni() {
                                2
                            } else {
                                usize::from(isa != Isa::PORTABLE)
                            };
                            worst[kernel] = worst[kernel].max(e);
                            assert!(
                                e <= TOL,
                                "{isa:?} {rows}x{cols} row {r}: {} vs {}",
                                y[r],
                                k * d[r] as f64
                            );
                        }
                    }
                }
            }
        }
        eprintln!("lut4 worst relative error per kernel (portable, avx2, avx512 vnni): {worst:?}");
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let tiers = crate::isa::tiers_under_test("gemv_lut4::extreme_values_do_not_overflow");
        // |level| = 127 and |xq| = 32767 everywhere at 4096 columns: |Σ| ≈ 1.7e10,
        // far beyond i32, which the chunked kernels must not wrap.
        let (rows, cols) = (32, 4096);
        let mut case = Case {
            rows,
            cols,
            levels: (0..32)
                .map(|i| if i % 2 == 0 { 127 } else { -127 })
                .collect(),
            scales: vec![1.0; 2],
            idx: vec![0; rows * cols],
        };
        for r in 0..rows {
            // Even rows all +127, odd rows all −127.
            case.idx[r * cols..(r + 1) * cols].fill((r % 2) as u8);
        }
        let m = case.matrix();
        for sign in [1i16, -1] {
            let x = OwnedAct::new(vec![sign * 32767; cols], 1.0);
            let d = case.dots(x.xq());
            for &isa in &tiers {
                let y = run(&m, isa, &x.act(), 2);
                for r in 0..rows {
                    let want = d[r] as f64;
                    assert_eq!(want.abs(), 127.0 * 32767.0 * cols as f64);
                    assert!(
                        (y[r] as f64 - want).abs() <= 1e-6 * want.abs(),
                        "{isa:?}: {} vs {want}",
                        y[r]
                    );
                    if !isa.vnni() {
                        assert_eq!(y[r], d[r] as f32, "{isa:?}");
                    }
                }
            }
        }
    }
}
