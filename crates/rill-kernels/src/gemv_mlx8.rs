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
//! Layout: rows in blocks of [`BLOCK`]; within a block the weights of one input
//! column are contiguous (`q[block][col][lane]`), and scales/biases are
//! `[block][group][lane]`, so one vector of lanes computes 16 independent rows and
//! the recurrence runs along the columns. Rows past the end are padded with zeros.

use crate::isa::{Isa, Tier};
use crate::quant;

/// Rows computed together (one AVX-512 register of f32 lanes).
pub const BLOCK: usize = 16;
/// MLX's default group size for 8 bits.
pub const GROUP: usize = 64;

/// A `[rows][cols]` matrix quantised as MLX does, in the block layout above.
#[derive(Clone)]
pub struct Mlx8 {
    rows: usize,
    cols: usize,
    /// `[blocks][cols][BLOCK]` quantised values.
    q: Vec<u8>,
    /// `[blocks][groups][BLOCK]` bf16 scale values (as f32).
    scales: Vec<f32>,
    /// `[blocks][groups][BLOCK]` bf16 bias values (as f32).
    biases: Vec<f32>,
}

/// Rounds to the nearest bf16 (ties to even), kept as f32: MLX's
/// `bfloat16_t(float)` for finite values.
#[inline(always)]
fn rb(v: f32) -> f32 {
    let u = v.to_bits();
    f32::from_bits(u.wrapping_add(0x7FFF + ((u >> 16) & 1)) & 0xFFFF_0000)
}

impl Mlx8 {
    /// `mx.quantize(w.astype(bfloat16), group_size=64, bits=8)` of row-major f32
    /// `w` (rounded to bf16 first, as upstream's loader does before quantising).
    pub fn quantize(rows: usize, cols: usize, w: &[f32]) -> Mlx8 {
        assert_eq!(w.len(), rows * cols, "matrix size");
        let wb: Vec<f32> = w.iter().map(|&v| rb_exact(v)).collect();
        let a = quant::affine(&wb, cols, GROUP, 8);
        let scales: Vec<f32> = a.scales.iter().map(|&s| rb_exact(s)).collect();
        let biases: Vec<f32> = a.biases.iter().map(|&b| rb_exact(b)).collect();
        Mlx8::from_row_major(rows, cols, &a.q, &scales, &biases)
    }

    /// Builds the block layout from MLX's row-major `q [rows][cols]` and bf16-valued
    /// `scales`/`biases [rows][cols/64]`.
    pub fn from_row_major(
        rows: usize,
        cols: usize,
        q: &[u8],
        scales: &[f32],
        biases: &[f32],
    ) -> Mlx8 {
        assert!(
            cols.is_multiple_of(GROUP),
            "columns must be a multiple of 64"
        );
        let groups = cols / GROUP;
        assert_eq!(q.len(), rows * cols, "q size");
        assert_eq!(scales.len(), rows * groups, "scales size");
        assert_eq!(biases.len(), rows * groups, "biases size");
        let blocks = rows.div_ceil(BLOCK);
        let mut bq = vec![0u8; blocks * cols * BLOCK];
        let mut bs = vec![0f32; blocks * groups * BLOCK];
        let mut bb = vec![0f32; blocks * groups * BLOCK];
        for r in 0..rows {
            let (b, l) = (r / BLOCK, r % BLOCK);
            for c in 0..cols {
                bq[(b * cols + c) * BLOCK + l] = q[r * cols + c];
            }
            for g in 0..groups {
                bs[(b * groups + g) * BLOCK + l] = scales[r * groups + g];
                bb[(b * groups + g) * BLOCK + l] = biases[r * groups + g];
            }
        }
        Mlx8 {
            rows,
            cols,
            q: bq,
            scales: bs,
            biases: bb,
        }
    }

    /// MLX's row-major `(q, scales, biases)` (for pre-quantised files).
    pub fn to_row_major(&self) -> (Vec<u8>, Vec<f32>, Vec<f32>) {
        let (rows, cols, groups) = (self.rows, self.cols, self.cols / GROUP);
        let mut q = vec![0u8; rows * cols];
        let mut s = vec![0f32; rows * groups];
        let mut b = vec![0f32; rows * groups];
        for r in 0..rows {
            let (bk, l) = (r / BLOCK, r % BLOCK);
            for c in 0..cols {
                q[r * cols + c] = self.q[(bk * cols + c) * BLOCK + l];
            }
            for g in 0..groups {
                s[r * groups + g] = self.scales[(bk * groups + g) * BLOCK + l];
                b[r * groups + g] = self.biases[(bk * groups + g) * BLOCK + l];
            }
        }
        (q, s, b)
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn blocks(&self) -> usize {
        self.rows.div_ceil(BLOCK)
    }

    pub fn bytes(&self) -> usize {
        self.q.len() + 2 * (self.scales.len() + self.biases.len())
    }

    /// The weights as MLX dequantises them (`bf(bf(scale·q) + bias)`), row `r`.
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let (b, l, groups) = (r / BLOCK, r % BLOCK, self.cols / GROUP);
        for (c, o) in out.iter_mut().enumerate() {
            let g = (b * groups + c / GROUP) * BLOCK + l;
            let q = self.q[(b * self.cols + c) * BLOCK + l] as f32;
            *o = rb(rb(self.scales[g] * q) + self.biases[g]);
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
            let pair = blocks.end - b >= 2;
            let n = if pair { 2 } else { 1 };
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
fn blocks_generic(m: &Mlx8, b0: usize, n: usize, x: &[f32], out: &mut [f32]) {
    if n == 2 {
        two_blocks(m, b0, x, out)
    } else {
        one_block(m, b0, x, out)
    }
}

#[inline(always)]
fn one_block(m: &Mlx8, b: usize, x: &[f32], out: &mut [f32]) {
    let (cols, groups) = (m.cols, m.cols / GROUP);
    let q = &m.q[b * cols * BLOCK..(b + 1) * cols * BLOCK];
    let sc = &m.scales[b * groups * BLOCK..(b + 1) * groups * BLOCK];
    let bi = &m.biases[b * groups * BLOCK..(b + 1) * groups * BLOCK];
    let mut s = [0f32; BLOCK];
    for g in 0..groups {
        let scale: &[f32; BLOCK] = sc[g * BLOCK..][..BLOCK].try_into().unwrap();
        let bias: &[f32; BLOCK] = bi[g * BLOCK..][..BLOCK].try_into().unwrap();
        for k in g * GROUP..(g + 1) * GROUP {
            let xk = x[k];
            let qk: &[u8; BLOCK] = q[k * BLOCK..][..BLOCK].try_into().unwrap();
            for l in 0..BLOCK {
                let w = rb(rb(scale[l] * qk[l] as f32) + bias[l]);
                s[l] = rb(s[l] + rb(xk * w));
            }
        }
    }
    out[..BLOCK].copy_from_slice(&s);
}

#[inline(always)]
fn two_blocks(m: &Mlx8, b: usize, x: &[f32], out: &mut [f32]) {
    let (cols, groups) = (m.cols, m.cols / GROUP);
    let qa = &m.q[b * cols * BLOCK..(b + 1) * cols * BLOCK];
    let qb = &m.q[(b + 1) * cols * BLOCK..(b + 2) * cols * BLOCK];
    let gs = groups * BLOCK;
    let (sa, sb) = (
        &m.scales[b * gs..(b + 1) * gs],
        &m.scales[(b + 1) * gs..(b + 2) * gs],
    );
    let (ba, bb) = (
        &m.biases[b * gs..(b + 1) * gs],
        &m.biases[(b + 1) * gs..(b + 2) * gs],
    );
    let mut s0 = [0f32; BLOCK];
    let mut s1 = [0f32; BLOCK];
    for g in 0..groups {
        let sca: &[f32; BLOCK] = sa[g * BLOCK..][..BLOCK].try_into().unwrap();
        let scb: &[f32; BLOCK] = sb[g * BLOCK..][..BLOCK].try_into().unwrap();
        let bia: &[f32; BLOCK] = ba[g * BLOCK..][..BLOCK].try_into().unwrap();
        let bib: &[f32; BLOCK] = bb[g * BLOCK..][..BLOCK].try_into().unwrap();
        for k in g * GROUP..(g + 1) * GROUP {
            let xk = x[k];
            let qka: &[u8; BLOCK] = qa[k * BLOCK..][..BLOCK].try_into().unwrap();
            let qkb: &[u8; BLOCK] = qb[k * BLOCK..][..BLOCK].try_into().unwrap();
            for l in 0..BLOCK {
                let w = rb(rb(sca[l] * qka[l] as f32) + bia[l]);
                s0[l] = rb(s0[l] + rb(xk * w));
            }
            for l in 0..BLOCK {
                let w = rb(rb(scb[l] * qkb[l] as f32) + bib[l]);
                s1[l] = rb(s1[l] + rb(xk * w));
            }
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

    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn blocks_avx512(m: &Mlx8, b: usize, n: usize, x: &[f32], out: &mut [f32]) {
        blocks_generic(m, b, n, x, out)
    }

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
    fn row_major_round_trip() {
        let (rows, cols) = (19, 128);
        let w: Vec<f32> = (0..rows * cols).map(|i| (i as f32 * 0.37).sin()).collect();
        let m = Mlx8::quantize(rows, cols, &w);
        let (q, s, b) = m.to_row_major();
        let m2 = Mlx8::from_row_major(rows, cols, &q, &s, &b);
        assert_eq!(m.q, m2.q);
        assert_eq!(m.scales, m2.scales);
        assert_eq!(m.biases, m2.biases);
    }
}
