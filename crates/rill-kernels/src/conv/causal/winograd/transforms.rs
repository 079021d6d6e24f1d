//! The row kernels of the Winograd transforms: elementwise multiply-adds over the
//! channels of a row, compiled for the tier's vector width. Every tier computes the
//! same bits (separate multiplies and adds in the same order: Rust never fuses them
//! into FMAs); built for the baseline x86-64 target they ran 4 lanes wide and took
//! about a tenth of the codec's time on AVX2.

use crate::Isa;

use super::POINTS;

/// The tile's rows of the points' products: point `k`'s row starts at
/// `m[k·point_stride + at]`.
#[derive(Clone, Copy)]
pub(super) struct PointRows<'a> {
    pub m: &'a [f32],
    pub at: usize,
    pub point_stride: usize,
}

/// `dst = Σ_i coef[i]·x[(first + i·d)·c ..][..c]` over the nonzero coefficients,
/// in order.
pub(super) fn combine(
    isa: Isa,
    coef: &[f32; POINTS],
    x: &[f32],
    first: usize,
    d: usize,
    c: usize,
    dst: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    match isa.tier() {
        // SAFETY: an `Isa` of this tier exists only if the CPU has AVX-512F.
        Tier::Avx512 => return unsafe { avx512::combine(coef, x, first, d, c, dst) },
        // SAFETY: an `Isa` of this tier exists only if the CPU has AVX2.
        Tier::Avx2 => return unsafe { avx2::combine(coef, x, first, d, c, dst) },
        _ => {}
    }
    // Elsewhere the baseline (NEON on aarch64) is the tier's width already.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = isa;
    lanes::combine(coef, x, first, d, c, dst)
}

/// One output row: `Σ_k coef[k]·M_k[at ..][..n] + bias`, stored or added.
pub(super) fn output_row(
    isa: Isa,
    coef: &[f32; POINTS],
    rows: PointRows<'_>,
    bias: &[f32],
    accumulate: bool,
    dst: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    match isa.tier() {
        // SAFETY: an `Isa` of this tier exists only if the CPU has AVX-512F.
        Tier::Avx512 => return unsafe { avx512::output_row(coef, rows, bias, accumulate, dst) },
        // SAFETY: an `Isa` of this tier exists only if the CPU has AVX2.
        Tier::Avx2 => return unsafe { avx2::output_row(coef, rows, bias, accumulate, dst) },
        _ => {}
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = isa;
    lanes::output_row(coef, rows, bias, accumulate, dst)
}

#[cfg(target_arch = "x86_64")]
use crate::Tier;

#[cfg(target_arch = "x86_64")]
crate::conv::x86_entry_points!(lanes {
    fn combine(coef: &[f32; POINTS], x: &[f32], first: usize, d: usize, c: usize, dst: &mut [f32]);
    fn output_row(
        coef: &[f32; POINTS],
        rows: PointRows<'_>,
        bias: &[f32],
        accumulate: bool,
        dst: &mut [f32],
    );
});

/// The row kernels, written once (`#[inline(always)]`: each tier's entry point
/// compiles them for its vectors).
mod lanes {
    use super::{PointRows, POINTS};

    /// `dst = Σ_i coef[i]·x[(first + i·d)·c ..][..c]` over the nonzero coefficients,
    /// in order.
    #[inline(always)]
    pub(super) fn combine(
        coef: &[f32; POINTS],
        x: &[f32],
        first: usize,
        d: usize,
        c: usize,
        dst: &mut [f32],
    ) {
        dst.fill(0.0);
        for (i, &a) in coef.iter().enumerate() {
            if a != 0.0 {
                let row = (first + i * d) * c;
                for (d, s) in dst.iter_mut().zip(&x[row..row + c]) {
                    *d += a * *s;
                }
            }
        }
    }

    /// One output row: `Σ_k coef[k]·M_k[at ..][..n] + bias`, stored or added.
    #[inline(always)]
    pub(super) fn output_row(
        coef: &[f32; POINTS],
        rows: PointRows<'_>,
        bias: &[f32],
        accumulate: bool,
        dst: &mut [f32],
    ) {
        let PointRows {
            m,
            at,
            point_stride,
        } = rows;
        let n = dst.len();
        let mut acc = [0f32; 64];
        for c0 in (0..n).step_by(acc.len()) {
            let w = acc.len().min(n - c0);
            let acc = &mut acc[..w];
            acc.fill(0.0);
            for (k, &a) in coef.iter().enumerate() {
                if a != 0.0 {
                    let row = &m[k * point_stride + at + c0..][..w];
                    for (d, s) in acc.iter_mut().zip(row) {
                        *d += a * *s;
                    }
                }
            }
            let (d, b) = (&mut dst[c0..c0 + w], &bias[c0..c0 + w]);
            if accumulate {
                for ((d, y), b) in d.iter_mut().zip(acc.iter()).zip(b) {
                    *d += *y + *b;
                }
            } else {
                for ((d, y), b) in d.iter_mut().zip(acc.iter()).zip(b) {
                    *d = *y + *b;
                }
            }
        }
    }
}
