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

use crate::gemv_int8::{Act, BLOCK};
use crate::isa::{Isa, Tier};
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
        let mut buf = [0f32; 4 * BLOCK];
        let out = &mut buf[..blocks.len() * BLOCK];
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` with VNNI comes only from detecting avx512f/bw/vnni.
            Tier::Avx512 if isa.vnni() => unsafe {
                x86::blocks_avx512(self, blocks, act, sums, out)
            },
            _ => self.blocks_portable(blocks, act, out),
        }
        crate::gemv_int8::scatter(blocks, range, out, y);
    }

    fn blocks_portable(&self, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
        for bi in 0..blocks.len() {
            let b = blocks[bi];
            let l = &self.levels[b * 16..b * 16 + 16];
            for rr in 0..BLOCK {
                let r = b * BLOCK + rr;
                let mut d = 0i64;
                for c in 0..self.cols {
                    d += l[self.index(r, c) as usize] as i64 * act.xq[c] as i64;
                }
                out[bi * BLOCK + rr] = self.scales[b] * act.scale * d as f32;
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
}
