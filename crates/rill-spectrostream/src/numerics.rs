//! The number formats of the decoder's activations: the fp16-safe two-stage rescale
//! and fp16 storage of every activation grid ([`crate::CodecPrecision::F16`]).
//!
//! **Why a rescale.** The real checkpoint's activations peak at ≈ 1.05e6 in
//! decoder_1..4 and ≈ 1.54e7 in decoder_5..6 (measured by the seed note on real
//! generated codes; random codes understate it by 1.5×), far beyond fp16's 65504.
//! Stored in fp16 as they are, they overflow to infinity mid-stack. The rescale
//! divides the stream by `2^a` from decoder_1 on, by a further `2^b` from decoder_5
//! on, and multiplies back after the output conv, so the stored values stay within
//! fp16's range (`2^a = 1024`, `2^b = 8`: ≈ 1.0e3 and 1.9e3 at those peaks, ≥ 30×
//! headroom). Rules, all exact in binary floating point:
//! * the scale changes only at top-level serial boundaries (block outputs), never
//!   inside a residual branch, so both sides of every residual sum share a scale;
//! * weights are untouched and every bias in a region is multiplied by its scale
//!   (a bias adds at output scale);
//! * ELU does not commute with a scale, so inside a region it is
//!   `elu_S(y) = elu(S·y)/S` — `relu(y) + (1/S)(exp(min(y,0)·S) − 1)` — computed as
//!   a multiply by `S`, the unscaled ELU and a multiply by `1/S`.
//!
//! Powers of two scale every rounded intermediate exactly, so in f32 the rescaled
//! decoder computes the same bits as the plain one (test `rescale_is_exact_in_f32`).
//!
//! **fp16 storage.** With `f16` set every activation grid up to the output conv's
//! input is rounded to IEEE half (round to nearest even, overflow to ±∞) when it is
//! written; the output conv writes the STFT in f32 (the inverse STFT's input, ≈ 1e4
//! on the real checkpoint, would leave only 5× headroom in half). The weights are
//! rounded to half at load; products of halves are exact in f32 and accumulate in
//! f32 — the arithmetic of the ARMv8.2 `FMLAL` (half × half → f32) instructions and
//! of fp16 matrix units.

use half::f16;

use crate::grid::Grid;
use crate::kernels::elu_in_place;
use rill_kernels::Isa;

/// The two-stage rescale: activations are divided by `2^first_log2` from decoder_1
/// and by a further `2^second_log2` from decoder_5, restored after the output conv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rescale {
    pub first_log2: u8,
    pub second_log2: u8,
}

impl Rescale {
    /// No rescale.
    pub const NONE: Rescale = Rescale {
        first_log2: 0,
        second_log2: 0,
    };
    /// The constants for fp16 storage (see the module doc): ÷1024 from decoder_1,
    /// ÷8192 from decoder_5.
    pub const FP16: Rescale = Rescale {
        first_log2: 10,
        second_log2: 3,
    };

    /// Largest accepted exponent: the deepest scale must leave f32 ample range.
    pub const MAX_LOG2: u8 = 24;

    /// The activation scale of block `i` (`decoder_i`; 7 = the output conv).
    pub(crate) fn block_scale(self, block: usize) -> f32 {
        let e = match block {
            0 => 0,
            1..=4 => self.first_log2 as i32,
            _ => (self.first_log2 + self.second_log2) as i32,
        };
        2f32.powi(-e)
    }
}

/// How the decoder stores its activations (fixed at load).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Numerics {
    pub rescale: Rescale,
    /// Round every activation grid (and the weights) to IEEE half.
    pub f16: bool,
}

impl Numerics {
    /// Rounds values (weights, imported state) to half when activations are stored in half.
    pub(crate) fn round_to_format(&self, w: &mut [f32]) {
        if self.f16 {
            round_f16(w);
        }
    }

    /// Rounds the `t` current rows of `g` to half (no-op in f32).
    pub(crate) fn store(&self, g: &mut Grid, t: usize) {
        if self.f16 {
            for_rows(g, t, round_f16);
        }
    }
}

/// `x ← half(x)`, element-wise (round to nearest even; overflow gives ±∞).
pub(crate) fn round_f16(x: &mut [f32]) {
    for v in x {
        *v = f16::from_f32(*v).to_f32();
    }
}

/// `x ← s·x` for the `t` current rows of `g`.
pub(crate) fn scale_rows(g: &mut Grid, t: usize, s: f32) {
    if s != 1.0 {
        for_rows(g, t, |row| row.iter_mut().for_each(|v| *v *= s));
    }
}

/// `y ← elu_S(y) = elu(y/s)·s` in place on the `t` current rows of `g`, where `s` is
/// the activation scale (`s = 1`: the plain ELU).
pub(crate) fn elu_rows_scaled(isa: Isa, g: &mut Grid, t: usize, s: f32) {
    for_rows(g, t, |row| elu_scaled_in_place(isa, row, s));
}

/// `x ← elu(x/s)·s` (see [`elu_rows_scaled`]).
pub(crate) fn elu_scaled_in_place(isa: Isa, x: &mut [f32], s: f32) {
    if s == 1.0 {
        elu_in_place(isa, x);
        return;
    }
    let inv = 1.0 / s;
    x.iter_mut().for_each(|v| *v *= inv);
    elu_in_place(isa, x);
    x.iter_mut().for_each(|v| *v *= s);
}

/// Applies `f` to the interior (unpadded) run of each of the `t` current rows of
/// every group of `g`.
fn for_rows(g: &mut Grid, t: usize, mut f: impl FnMut(&mut [f32])) {
    let s = g.shape;
    let run = s.f * s.c;
    for grp in 0..s.groups {
        for r in 0..t {
            let o = g.interior(grp, r, 0);
            f(&mut g.data[o..o + run]);
        }
    }
}

/// Largest `|x|` over the `t` current rows of `g` (NaN counts as infinite).
pub(crate) fn peak_rows(g: &Grid, t: usize) -> f32 {
    let s = g.shape;
    let run = s.f * s.c;
    let mut m = 0f32;
    for grp in 0..s.groups {
        for r in 0..t {
            let o = g.interior(grp, r, 0);
            for &v in &g.data[o..o + run] {
                m = if v.is_nan() {
                    f32::INFINITY
                } else {
                    m.max(v.abs())
                };
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_elu_is_elu_of_the_unscaled_value() {
        let isa = rill_kernels::isa::active();
        for s in [1.0 / 1024.0, 1.0 / 8192.0] {
            let native: Vec<f32> = (-400..400).map(|i| i as f32 * 0.037).collect();
            let mut want = native.clone();
            elu_in_place(isa, &mut want);
            let mut got: Vec<f32> = native.iter().map(|v| v * s).collect();
            elu_scaled_in_place(isa, &mut got, s);
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.to_bits(), (w * s).to_bits(), "s={s}");
            }
        }
    }

    #[test]
    fn half_rounding_overflows_to_infinity() {
        let mut x = [1.0f32, 65504.0, 65520.0, -1e7, 1e-8, 0.1];
        round_f16(&mut x);
        assert_eq!(x[0], 1.0);
        assert_eq!(x[1], 65504.0);
        assert_eq!(x[2], f32::INFINITY, "65520 rounds past the largest half");
        assert_eq!(x[3], f32::NEG_INFINITY);
        assert_eq!(x[4], 0.0, "below half's smallest subnormal");
        assert_eq!(x[5], f16::from_f32(0.1).to_f32());
        assert_ne!(x[5], 0.1);
    }

    #[test]
    fn block_scales() {
        let r = Rescale::FP16;
        assert_eq!(r.block_scale(0), 1.0);
        assert_eq!(r.block_scale(1), 1.0 / 1024.0);
        assert_eq!(r.block_scale(4), 1.0 / 1024.0);
        assert_eq!(r.block_scale(5), 1.0 / 8192.0);
        assert_eq!(r.block_scale(7), 1.0 / 8192.0);
        assert_eq!(Rescale::NONE.block_scale(7), 1.0);
    }
}
