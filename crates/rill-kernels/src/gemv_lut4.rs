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

#[cfg(target_arch = "x86_64")]
use crate::gemv_int8::prefetch_bytes;
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
                x86::blocks_avx512(self, blocks, act, sums, out, prefetch_bytes())
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
            Tier::Avx2 | Tier::Avx512 => unsafe {
                x86::blocks_avx2(self, blocks, act, out, prefetch_bytes())
            },
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

#[cfg(target_arch = "aarch64")]
mod arm;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests;
