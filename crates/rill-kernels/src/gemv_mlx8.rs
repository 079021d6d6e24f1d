//! MLX's CPU `quantized_matmul` for bf16 inputs, reproduced bit-exactly.
//!
//! Upstream's default deployment (`nn.quantize(group_size=64, bits=8)` on bf16
//! weights) runs every matrix through `mlx/backend/cpu/quantized.cpp` `_qmm_t`.
//! On x86 and other non-Apple CPUs `simd::max_size<bfloat16> == 1`, so MLX takes the
//! scalar loop, in which every operation is a `bfloat16_t` operation (computed in
//! f32, rounded to bf16 to nearest even):
//!
//! ```text
//! sum = 0
//! for k in 0..K:  w = bf(bf(scale·q[k]) + bias);  sum = bf(sum + bf(x[k]·w))
//! ```
//!
//! The running sum is rounded to bf16 after every term, in input order. That makes
//! the result very different from an f32 dot product (≈ 8 % relative at K = 4096),
//! and the difference is deterministic: reproducing upstream's int8 music needs this
//! exact recurrence, not a better one. Verified against `mx.quantized_matmul`
//! (`tests/mlx_int8.rs`).
//!
//! The dequantised weights `bf(bf(scale·q) + bias)` are constants, so they are
//! computed once at load time and stored as bf16 (MLX's `dequantize` and its
//! `QuantizedEmbedding` give exactly these values too); the product then costs one
//! multiply, one add and two roundings per weight.
//!
//! Layout: rows in blocks of [`BLOCK`]; within a block the weights of one input
//! column are contiguous (`w[block][col][lane]`), so one vector of lanes computes
//! 16 independent rows and the recurrence runs along the columns. Rows past the end
//! are padded with zeros.

use crate::isa::Isa;
#[cfg(target_arch = "x86_64")]
use crate::isa::Tier;
use crate::quant;

/// Rows computed together (one AVX-512 register of f32 lanes).
pub const BLOCK: usize = 16;
/// MLX's default group size for 8 bits.
pub const GROUP: usize = 64;

/// A `[rows][cols]` matrix quantised and dequantised as MLX does, in the block
/// layout above.
#[derive(Clone)]
pub struct Mlx8 {
    rows: usize,
    cols: usize,
    /// `[blocks][cols][BLOCK]` bf16 bits of the dequantised weights.
    w: Vec<u16>,
}

/// Rounds to the nearest bf16 (ties to even), kept as f32: MLX's
/// `bfloat16_t(float)` for finite values.
#[inline(always)]
fn rb(v: f32) -> f32 {
    let u = v.to_bits();
    f32::from_bits(u.wrapping_add(0x7FFF + ((u >> 16) & 1)) & 0xFFFF_0000)
}

#[inline(always)]
fn widen(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// `mx.quantize(w.astype(bfloat16), group_size=64, bits=8)` of row-major f32 `w`
/// (rounded to bf16 first, as upstream's loader does before quantising): MLX's
/// quantiser runs in f32 on the bf16 values and stores scales and biases in bf16.
pub fn mlx_quantize(w: &[f32], cols: usize) -> quant::Affine {
    let wb: Vec<f32> = w.iter().map(|&v| rb_exact(v)).collect();
    let mut a = quant::affine(&wb, cols, GROUP, 8);
    a.scales.iter_mut().for_each(|s| *s = rb_exact(*s));
    a.biases.iter_mut().for_each(|b| *b = rb_exact(*b));
    a
}

impl Mlx8 {
    /// [`mlx_quantize`], dequantised and laid out for the product.
    pub fn quantize(rows: usize, cols: usize, w: &[f32]) -> Mlx8 {
        assert_eq!(w.len(), rows * cols, "matrix size");
        assert!(
            cols.is_multiple_of(GROUP),
            "columns must be a multiple of 64"
        );
        let a = mlx_quantize(w, cols);
        let deq: Vec<u16> =
            a.q.iter()
                .enumerate()
                .map(|(i, &q)| {
                    let g = i / GROUP;
                    half::bf16::from_f32(rb(rb(a.scales[g] * q as f32) + a.biases[g])).to_bits()
                })
                .collect();
        Mlx8::from_dequantized(rows, cols, &deq)
    }

    /// Builds the block layout from row-major bf16 bits of dequantised weights.
    pub fn from_dequantized(rows: usize, cols: usize, w: &[u16]) -> Mlx8 {
        assert_eq!(w.len(), rows * cols, "matrix size");
        let blocks = rows.div_ceil(BLOCK);
        let mut bw = vec![0u16; blocks * cols * BLOCK];
        for r in 0..rows {
            let (b, l) = (r / BLOCK, r % BLOCK);
            for c in 0..cols {
                bw[(b * cols + c) * BLOCK + l] = w[r * cols + c];
            }
        }
        Mlx8 { rows, cols, w: bw }
    }

    /// Row-major bf16 bits of the dequantised weights (for pre-quantised files).
    pub fn to_dequantized(&self) -> Vec<u16> {
        let (rows, cols) = (self.rows, self.cols);
        let mut w = vec![0u16; rows * cols];
        for r in 0..rows {
            let (b, l) = (r / BLOCK, r % BLOCK);
            for c in 0..cols {
                w[r * cols + c] = self.w[(b * cols + c) * BLOCK + l];
            }
        }
        w
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn blocks(&self) -> usize {
        self.rows.div_ceil(BLOCK)
    }

    pub fn bytes(&self) -> usize {
        2 * self.rows * self.cols
    }

    /// Row `r` as MLX dequantises it (`bf(bf(scale·q) + bias)`).
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let (b, l) = (r / BLOCK, r % BLOCK);
        for (c, o) in out.iter_mut().enumerate() {
            *o = widen(self.w[(b * self.cols + c) * BLOCK + l]);
        }
    }

    /// Rows `[BLOCK·b, BLOCK·(b+1))` of `W·x` for every block `b` in `blocks`, into
    /// `out` (`BLOCK` values per block, padding rows included). `x` must hold bf16
    /// values (the caller rounds once).
    pub(crate) fn run_blocks(
        &self,
        isa: Isa,
        blocks: std::ops::Range<usize>,
        x: &[f32],
        out: &mut [f32],
    ) {
        debug_assert_eq!(x.len(), self.cols);
        debug_assert_eq!(out.len(), blocks.len() * BLOCK);
        let mut b = blocks.start;
        let mut o = 0;
        while b < blocks.end {
            let n = if blocks.end - b >= 2 { 2 } else { 1 };
            let dst = &mut out[o..o + n * BLOCK];
            match isa.tier() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: an `Isa` of tier AVX-512 comes only from detecting avx512f/bw.
                Tier::Avx512 => unsafe { x86::blocks_avx512(self, b, n, x, dst) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: an `Isa` of tier AVX2 comes only from detecting avx2 and fma.
                Tier::Avx2 => unsafe { x86::blocks_avx2(self, b, n, x, dst) },
                _ => blocks_generic(self, b, n, x, dst),
            }
            b += n;
            o += n * BLOCK;
        }
    }
}

/// Exact round-to-nearest-even to bf16, NaN kept as NaN (for load-time values).
fn rb_exact(v: f32) -> f32 {
    half::bf16::from_f32(v).to_f32()
}

/// One or two blocks (two independent recurrences hide the add latency).
#[inline(always)]
fn blocks_generic(m: &Mlx8, b: usize, n: usize, x: &[f32], out: &mut [f32]) {
    let cols = m.cols;
    let wa = &m.w[b * cols * BLOCK..(b + 1) * cols * BLOCK];
    if n == 1 {
        let mut s = [0f32; BLOCK];
        for (k, &xk) in x.iter().enumerate() {
            let wk: &[u16; BLOCK] = wa[k * BLOCK..][..BLOCK]
                .try_into()
                .expect("a slice of BLOCK elements");
            for l in 0..BLOCK {
                s[l] = rb(s[l] + rb(xk * widen(wk[l])));
            }
        }
        out[..BLOCK].copy_from_slice(&s);
        return;
    }
    let wb = &m.w[(b + 1) * cols * BLOCK..(b + 2) * cols * BLOCK];
    let mut s0 = [0f32; BLOCK];
    let mut s1 = [0f32; BLOCK];
    for (k, &xk) in x.iter().enumerate() {
        let wka: &[u16; BLOCK] = wa[k * BLOCK..][..BLOCK]
            .try_into()
            .expect("a slice of BLOCK elements");
        let wkb: &[u16; BLOCK] = wb[k * BLOCK..][..BLOCK]
            .try_into()
            .expect("a slice of BLOCK elements");
        for l in 0..BLOCK {
            s0[l] = rb(s0[l] + rb(xk * widen(wka[l])));
        }
        for l in 0..BLOCK {
            s1[l] = rb(s1[l] + rb(xk * widen(wkb[l])));
        }
    }
    out[..BLOCK].copy_from_slice(&s0);
    out[BLOCK..2 * BLOCK].copy_from_slice(&s1);
}

/// The same code compiled for each x86 tier (LLVM vectorises the lane loops: one
/// zmm or two ymm per block). Rounding is integer arithmetic, so every tier gives
/// the same bits.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;

    /// # Safety
    /// The CPU must support AVX-512F and AVX-512BW; `b + n` blocks must exist in `m`
    /// and `x`, `out` must be sized as for [`Mlx8::run_blocks`].
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn blocks_avx512(m: &Mlx8, b: usize, n: usize, x: &[f32], out: &mut [f32]) {
        blocks_generic(m, b, n, x, out)
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA; `b + n` blocks must exist in `m` and `x`,
    /// `out` must be sized as for [`Mlx8::run_blocks`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn blocks_avx2(m: &Mlx8, b: usize, n: usize, x: &[f32], out: &mut [f32]) {
        blocks_generic(m, b, n, x, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recurrence written row by row, straight from MLX's `_qmm_t`.
    fn reference(m: &Mlx8, r: usize, x: &[f32]) -> f32 {
        let mut w = vec![0f32; m.cols];
        m.row_into(r, &mut w);
        let mut s = 0f32;
        for (wk, xk) in w.iter().zip(x) {
            s = rb_exact(s + rb_exact(xk * wk));
        }
        s
    }

    #[test]
    fn every_tier_computes_the_row_by_row_recurrence() {
        let (rows, cols) = (37, 192);
        let w: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919 % 1013) as f32 / 1013.0 - 0.5) * 0.3)
            .collect();
        let x: Vec<f32> = (0..cols)
            .map(|i| rb_exact(((i * 104729 % 977) as f32 / 977.0 - 0.5) * 4.0))
            .collect();
        let m = Mlx8::quantize(rows, cols, &w);
        let want: Vec<f32> = (0..rows).map(|r| reference(&m, r, &x)).collect();
        for isa in Isa::available() {
            let mut out = vec![0f32; m.blocks() * BLOCK];
            m.run_blocks(isa, 0..m.blocks(), &x, &mut out);
            for r in 0..rows {
                assert_eq!(
                    out[r].to_bits(),
                    want[r].to_bits(),
                    "{} row {r}",
                    isa.name()
                );
            }
        }
    }

    #[test]
    fn dequantized_round_trip() {
        let (rows, cols) = (19, 128);
        let w: Vec<f32> = (0..rows * cols).map(|i| (i as f32 * 0.37).sin()).collect();
        let m = Mlx8::quantize(rows, cols, &w);
        let m2 = Mlx8::from_dequantized(rows, cols, &m.to_dequantized());
        assert_eq!(m.w, m2.w);
    }
}
