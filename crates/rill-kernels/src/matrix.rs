//! Weight matrices in row-major `[rows = out][cols = in]` layout and their
//! matrix-vector products, split over a [`Pool`] by blocks of rows.
//!
//! Each output row is computed by one thread with a fixed summation order, so
//! results do not depend on the number of threads.

use std::ops::Range;

use crate::isa::{self, Isa};
use crate::pool::Pool;
use crate::{gemv_bf16, gemv_f32};

/// Storage format of a weight matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// IEEE f32.
    F32,
    /// bfloat16 (f32 rounded to nearest even), widened exactly to f32 in the kernel.
    Bf16,
}

impl WeightFormat {
    pub fn name(self) -> &'static str {
        match self {
            WeightFormat::F32 => "f32",
            WeightFormat::Bf16 => "bf16",
        }
    }
}

#[derive(Clone)]
enum Storage {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
}

/// A `[rows][cols]` weight matrix.
#[derive(Clone)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Storage,
}

impl std::fmt::Debug for Matrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Matrix({}x{}, {})", self.rows, self.cols, self.format().name())
    }
}

/// Rows per pool task: small enough to balance two cores, large enough that the
/// per-task claim (one CAS) is negligible.
const ROWS_PER_TASK: usize = 32;

/// Rounds f32 to bf16 bits, nearest-even (as MLX `astype(bfloat16)`).
pub fn f32_to_bf16_bits(v: f32) -> u16 {
    half::bf16::from_f32(v).to_bits()
}

/// Rounds f32 to the nearest bf16 value, kept as f32.
pub fn round_bf16(v: f32) -> f32 {
    half::bf16::from_f32(v).to_f32()
}

/// Transposes a row-major `[rows][cols]` array into `[cols][rows]`.
pub fn transpose(rows: usize, cols: usize, a: &[f32]) -> Vec<f32> {
    assert_eq!(a.len(), rows * cols, "transpose input length");
    let mut t = vec![0f32; rows * cols];
    // Blocked so both sides stay cache-friendly for 1024x4096 kernels.
    const B: usize = 64;
    for r0 in (0..rows).step_by(B) {
        for c0 in (0..cols).step_by(B) {
            for r in r0..(r0 + B).min(rows) {
                let src = &a[r * cols..(r + 1) * cols];
                for c in c0..(c0 + B).min(cols) {
                    t[c * rows + r] = src[c];
                }
            }
        }
    }
    t
}

impl Matrix {
    /// Builds a matrix from row-major f32 values, converting to `format`.
    pub fn from_f32(rows: usize, cols: usize, values: Vec<f32>, format: WeightFormat) -> Matrix {
        assert_eq!(values.len(), rows * cols, "matrix data length");
        let data = match format {
            WeightFormat::F32 => Storage::F32(values),
            WeightFormat::Bf16 => Storage::Bf16(values.iter().map(|&v| f32_to_bf16_bits(v)).collect()),
        };
        Matrix { rows, cols, data }
    }

    /// Builds a matrix from a `[cols][rows]` (input-major, JAX `kernel[in, out]`) array.
    pub fn from_f32_transposed(
        rows: usize,
        cols: usize,
        in_major: &[f32],
        format: WeightFormat,
    ) -> Matrix {
        Matrix::from_f32(rows, cols, transpose(cols, rows, in_major), format)
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn format(&self) -> WeightFormat {
        match self.data {
            Storage::F32(_) => WeightFormat::F32,
            Storage::Bf16(_) => WeightFormat::Bf16,
        }
    }

    /// Bytes of weight data (what one product streams from memory).
    pub fn bytes(&self) -> usize {
        match &self.data {
            Storage::F32(v) => v.len() * 4,
            Storage::Bf16(v) => v.len() * 2,
        }
    }

    /// Row `r` widened to f32 (embedding lookup).
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let c = self.cols;
        match &self.data {
            Storage::F32(v) => out.copy_from_slice(&v[r * c..(r + 1) * c]),
            Storage::Bf16(v) => {
                for (o, &b) in out.iter_mut().zip(&v[r * c..(r + 1) * c]) {
                    *o = gemv_bf16::bf16_to_f32(b);
                }
            }
        }
    }

    /// `y = W·x` over all rows.
    pub fn gemv(&self, x: &[f32], y: &mut [f32], pool: &Pool) {
        self.gemv_rows(x, y, 0..self.rows, pool);
    }

    /// `y[i] = (W·x)[rows.start + i]` for a contiguous range of rows.
    pub fn gemv_rows(&self, x: &[f32], y: &mut [f32], rows: Range<usize>, pool: &Pool) {
        self.gemv_rows_isa(isa::active(), x, y, rows, pool);
    }

    /// Like [`Matrix::gemv_rows`] on an explicit ISA tier (for cross-checking paths).
    pub fn gemv_rows_isa(
        &self,
        isa: Isa,
        x: &[f32],
        y: &mut [f32],
        rows: Range<usize>,
        pool: &Pool,
    ) {
        assert_eq!(x.len(), self.cols, "gemv input length");
        assert_eq!(y.len(), rows.len(), "gemv output length");
        assert!(rows.end <= self.rows, "gemv row range");
        let n = rows.len();
        let tasks = n.div_ceil(ROWS_PER_TASK);
        let out = SendPtr(y.as_mut_ptr());
        let cols = self.cols;
        let run = |t: usize| {
            let lo = t * ROWS_PER_TASK;
            let hi = (lo + ROWS_PER_TASK).min(n);
            // SAFETY: tasks cover disjoint output ranges [lo, hi) of `y`, which
            // outlives `pool.run`.
            let ys = unsafe { std::slice::from_raw_parts_mut(out.get().add(lo), hi - lo) };
            let (r0, r1) = (rows.start + lo, rows.start + hi);
            match &self.data {
                Storage::F32(w) => gemv_f32::rows(isa, &w[r0 * cols..r1 * cols], cols, x, ys),
                Storage::Bf16(w) => gemv_bf16::rows(isa, &w[r0 * cols..r1 * cols], cols, x, ys),
            }
        };
        if tasks <= 1 {
            run(0);
        } else {
            pool.run(tasks, &run);
        }
    }
}

/// A raw pointer that may cross threads; users guarantee disjoint access.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub *mut T);
// SAFETY: only used to hand disjoint sub-slices to pool tasks.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    #[inline]
    pub fn get(self) -> *mut T {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }

    fn reference(w: &[f32], cols: usize, x: &[f32]) -> Vec<f64> {
        w.chunks(cols)
            .map(|r| r.iter().zip(x).map(|(a, b)| *a as f64 * *b as f64).sum())
            .collect()
    }

    #[test]
    fn every_isa_matches_f64_reference() {
        let pool = Pool::new(2);
        let mut seed = 7u64;
        for &(rows, cols) in &[(1, 1), (3, 17), (37, 768), (130, 1024), (64, 33)] {
            let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
            let x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
            for format in [WeightFormat::F32, WeightFormat::Bf16] {
                let m = Matrix::from_f32(rows, cols, w.clone(), format);
                let wq: Vec<f32> = match format {
                    WeightFormat::F32 => w.clone(),
                    WeightFormat::Bf16 => w.iter().map(|&v| round_bf16(v)).collect(),
                };
                let want = reference(&wq, cols, &x);
                for isa in Isa::available() {
                    let mut y = vec![0f32; rows];
                    m.gemv_rows_isa(isa, &x, &mut y, 0..rows, &pool);
                    for (a, b) in y.iter().zip(&want) {
                        let tol = 1e-5 * (cols as f64).sqrt();
                        assert!((*a as f64 - b).abs() < tol, "{isa:?} {format:?} {rows}x{cols}");
                    }
                }
            }
        }
    }

    #[test]
    fn row_range_and_transpose() {
        let pool = Pool::single();
        let (rows, cols) = (10, 6);
        let w: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let mut t = vec![0f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                t[c * rows + r] = w[r * cols + c];
            }
        }
        let m = Matrix::from_f32_transposed(rows, cols, &t, WeightFormat::F32);
        let x = vec![1f32; cols];
        let mut y = vec![0f32; 3];
        m.gemv_rows(&x, &mut y, 4..7, &pool);
        for (i, v) in y.iter().enumerate() {
            let r = 4 + i;
            assert_eq!(*v, (0..cols).map(|c| (r * cols + c) as f32).sum::<f32>());
        }
    }
}
