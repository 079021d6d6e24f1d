//! [`Ops`]: the kernels of a model's hot path on one SIMD tier, resolved once.
//!
//! A model resolves its tier when it is loaded (`Ops::new(isa)` with an explicit
//! [`Isa`], or [`Ops::active`] for the process's tier at that moment) and keeps
//! the `Ops`; every product and attention loop of a step then goes through it, so
//! no step reads the process-wide tier ([`crate::isa::active`]) and two models
//! loaded on different tiers can run side by side in one process (how `rill bench
//! --isa all` compares them). Each method runs the same `_isa` kernel the explicit
//! tier selects, so the bits are those of that tier's kernel.
//!
//! An `Ops` is a small `Copy` value (the [`Isa`] proof): the dispatch is one match
//! on the tier per call, over calls that each stream kilobytes to megabytes, so a
//! table of function pointers would only hide the `#[target_feature]` boundary.

use std::ops::Range;

use crate::isa::{self, Isa};
use crate::matmul::{self, MatmulScratch};
use crate::{ops, GemvScratch, Matrix, Pool};

/// The hot-path kernels on one SIMD tier (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ops {
    isa: Isa,
}

impl Ops {
    /// The kernels of tier `isa`.
    pub const fn new(isa: Isa) -> Ops {
        Ops { isa }
    }

    /// The kernels of the process's tier as of now ([`isa::active`]: detected,
    /// lowered by `RILL_ISA`): for a model's convenience loaders, read once at load.
    pub fn active() -> Ops {
        Ops::new(isa::active())
    }

    /// The tier every method runs on.
    pub fn isa(self) -> Isa {
        self.isa
    }

    /// `y = W·x` over all rows of `m` ([`Matrix::gemv_rows_isa`]).
    #[inline]
    pub fn gemv(self, m: &Matrix, x: &[f32], y: &mut [f32], s: &mut GemvScratch, pool: &Pool) {
        m.gemv_rows_isa(self.isa, x, y, 0..m.rows(), s, pool);
    }

    /// `y[i] = (W·x)[rows.start + i]` for a contiguous range of rows of `m`.
    #[inline]
    pub fn gemv_rows(
        self,
        m: &Matrix,
        x: &[f32],
        y: &mut [f32],
        rows: Range<usize>,
        s: &mut GemvScratch,
        pool: &Pool,
    ) {
        m.gemv_rows_isa(self.isa, x, y, rows, s, pool);
    }

    /// `y0 = W·x0`, `y1 = W·x1` with the weights read once ([`Matrix::gemv2_isa`]).
    #[inline]
    pub fn gemv2(
        self,
        m: &Matrix,
        x: [&[f32]; 2],
        y: [&mut [f32]; 2],
        s: &mut GemvScratch,
        pool: &Pool,
    ) {
        m.gemv2_isa(self.isa, x, y, s, pool);
    }

    /// `y[i] = W·x[i]` for every input row ([`matmul::matmul_isa`] on this tier,
    /// whatever tier `scratch` was made for).
    #[inline]
    pub fn matmul(
        self,
        m: &Matrix,
        x: &[f32],
        y: &mut [f32],
        scratch: &mut MatmulScratch,
        pool: &Pool,
    ) {
        matmul::matmul_isa(self.isa, m, x, y, scratch, pool);
    }

    /// One head's attention scores over a key cache ([`ops::dots_isa`]).
    #[inline]
    pub fn dots(self, x: &[f32], rows: &[f32], stride: usize, offset: usize, out: &mut [f32]) {
        ops::dots_isa(self.isa, x, rows, stride, offset, out);
    }

    /// One head's attention output over a value cache ([`ops::axpys_isa`]).
    #[inline]
    pub fn axpys(self, p: &[f32], rows: &[f32], stride: usize, offset: usize, y: &mut [f32]) {
        ops::axpys_isa(self.isa, p, rows, stride, offset, y);
    }

    /// GELU, tanh form, in place ([`ops::gelu_tanh_isa`]).
    #[inline]
    pub fn gelu_tanh(self, x: &mut [f32]) {
        ops::gelu_tanh_isa(self.isa, x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WeightFormat;

    /// Every method gives the bits of the explicit-tier kernel it names.
    #[test]
    fn ops_give_the_bits_of_their_tier_kernels() {
        let pool = Pool::new(2);
        let (rows, cols) = (40, 64);
        let w: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
            .collect();
        let x: Vec<f32> = (0..2 * cols)
            .map(|i| ((i * 13 % 29) as f32 - 14.0) / 8.0)
            .collect();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for isa in isa::tiers_under_test("ops_table::ops") {
            let o = Ops::new(isa);
            assert_eq!(o.isa(), isa);
            for format in [WeightFormat::F32, WeightFormat::Int8] {
                let m = Matrix::from_f32(rows, cols, w.clone(), format);
                let mut s = GemvScratch::new();
                let (mut a, mut b) = (vec![0f32; rows], vec![0f32; rows]);
                o.gemv(&m, &x[..cols], &mut a, &mut s, &pool);
                m.gemv_rows_isa(isa, &x[..cols], &mut b, 0..rows, &mut s, &pool);
                assert_eq!(bits(&a), bits(&b), "{isa} gemv");
                let mut part = vec![0f32; 7];
                o.gemv_rows(&m, &x[..cols], &mut part, 3..10, &mut s, &pool);
                assert_eq!(bits(&part), bits(&b[3..10]), "{isa} gemv_rows");
                let (mut y0, mut y1) = (vec![0f32; rows], vec![0f32; rows]);
                o.gemv2(
                    &m,
                    [&x[..cols], &x[cols..]],
                    [&mut y0, &mut y1],
                    &mut s,
                    &pool,
                );
                assert_eq!(bits(&y0), bits(&b), "{isa} gemv2");
                let mut all = vec![0f32; 2 * rows];
                o.matmul(&m, &x, &mut all, &mut MatmulScratch::new(), &pool);
                assert_eq!(bits(&all[..rows]), bits(&b), "{isa} matmul");
                assert_eq!(bits(&all[rows..]), bits(&y1), "{isa} matmul");
            }
            let mut g = x.clone();
            let mut want = x.clone();
            o.gelu_tanh(&mut g);
            ops::gelu_tanh_isa(isa, &mut want);
            assert_eq!(bits(&g), bits(&want), "{isa} gelu_tanh");
            let (mut d, mut dw) = (vec![0f32; 3], vec![0f32; 3]);
            o.dots(&x[..16], &w, cols, 8, &mut d);
            ops::dots_isa(isa, &x[..16], &w, cols, 8, &mut dw);
            assert_eq!(bits(&d), bits(&dw), "{isa} dots");
            let (mut y, mut yw) = (vec![0f32; 16], vec![0f32; 16]);
            o.axpys(&x[..3], &w, cols, 8, &mut y);
            ops::axpys_isa(isa, &x[..3], &w, cols, 8, &mut yw);
            assert_eq!(bits(&y), bits(&yw), "{isa} axpys");
        }
    }
}
