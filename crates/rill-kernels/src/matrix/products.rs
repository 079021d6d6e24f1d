//! The products of a [`Matrix`] with vectors, per storage format, split over a
//! [`Pool`] by blocks of rows; each output row is computed by one task with a
//! fixed summation order.

use std::ops::Range;

use super::{round_bf16, Matrix, Storage, ROWS_PER_TASK};
use crate::gemv_int8::Act;
use crate::gemv_mlx8;
use crate::gemv_q4::AFFINE_GROUP;
use crate::isa::Isa;
use crate::pool::Pool;
use crate::{gemv_float, gemv_int8, gemv_lut4, gemv_q4, quant};

/// Work memory of the products: the input vector quantised (int8 and int4
/// weights) or rounded to bf16 (MLX int8), one slot per row of [`Matrix::gemv2_isa`].
/// The calling thread writes it before the pool's tasks start and the tasks only
/// read it, so it belongs to the caller (a model's or session's scratch), not to a
/// thread. Grown on first use, then reused: a warm scratch makes products
/// allocation-free. Float weights never touch it.
#[derive(Debug, Clone, Default)]
pub struct GemvScratch {
    rows: [ActScratch; 2],
}

impl GemvScratch {
    /// An empty scratch (it grows to the widest input on first use).
    pub fn new() -> GemvScratch {
        GemvScratch::default()
    }
}

/// One input vector's activation buffers.
#[derive(Debug, Clone, Default)]
struct ActScratch {
    xq: Vec<i16>,
    hi: Vec<i8>,
    lo: Vec<i8>,
    sums: Vec<i32>,
    sums_f: Vec<f32>,
    /// The activations rounded to bf16 (MLX int8 inputs).
    xb: Vec<f32>,
}

impl Matrix {
    /// `y0 = W·x0` and `y1 = W·x1` on tier `isa` (two rows of a batch, e.g. the
    /// conditional and unconditional rows of classifier-free guidance, or two music
    /// streams). Float, int8 and 4-bit palettised weights are read from memory once
    /// for both; every output has exactly the bits
    /// [`Matrix::gemv_rows_isa`] gives it. Models call it through [`crate::Ops`].
    pub fn gemv2_isa(
        &self,
        isa: Isa,
        x: [&[f32]; 2],
        y: [&mut [f32]; 2],
        scratch: &mut GemvScratch,
        pool: &Pool,
    ) {
        let cols = self.cols;
        for v in 0..2 {
            assert_eq!(x[v].len(), cols, "gemv2 input length");
            assert_eq!(y[v].len(), self.rows, "gemv2 output length");
        }
        let [y0, y1] = y;
        let tasks = self.rows.div_ceil(ROWS_PER_TASK);
        let (o0, o1) = (SendPtr(y0.as_mut_ptr()), SendPtr(y1.as_mut_ptr()));
        let rows = self.rows;
        // SAFETY (both arms): tasks cover disjoint row ranges [lo, hi) of `y0` and
        // `y1`, which outlive `pool.run`.
        let block = |t: usize| {
            let lo = t * ROWS_PER_TASK;
            let hi = (lo + ROWS_PER_TASK).min(rows);
            let a = unsafe { std::slice::from_raw_parts_mut(o0.get().add(lo), hi - lo) };
            let b = unsafe { std::slice::from_raw_parts_mut(o1.get().add(lo), hi - lo) };
            (lo, hi, [a, b])
        };
        // `Pool::run` runs a single task inline.
        let run_all = |f: &(dyn Fn(usize) + Sync)| pool.run(tasks, f);
        match &self.data {
            Storage::F32(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows_n::<_, 2>(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::Bf16(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows_n::<_, 2>(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::F16(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows_n::<_, 2>(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::Int8(m) => {
                let [a0, a1] = scratch.quantize2(isa, x, gemv_int8::GROUP);
                let acts = [&a0, &a1];
                let range = 0..rows;
                let (n, blocks_of) = block_tasks(&range);
                let task = |t: usize| {
                    let (b, k) = blocks_of(t);
                    m.run_blocks_n(isa, &b[..k], &range, acts, [o0.get(), o1.get()]);
                };
                pool.run(n, &task);
            }
            Storage::Lut4(m) => {
                // Each task's blocks for both vectors while they are in cache (one
                // vector at a time, as the one-vector call runs them).
                let [a0, a1] = scratch.quantize2(isa, x, gemv_int8::GROUP);
                let sums = [gemv_lut4::byte_sums(&a0), gemv_lut4::byte_sums(&a1)];
                let range = 0..rows;
                let (n, blocks_of) = block_tasks(&range);
                let task = |t: usize| {
                    let (b, k) = blocks_of(t);
                    m.run_blocks(isa, &b[..k], &range, &a0, sums[0], o0.get());
                    m.run_blocks(isa, &b[..k], &range, &a1, sums[1], o1.get());
                };
                pool.run(n, &task);
            }
            _ => {
                self.gemv_rows_isa(isa, x[0], y0, 0..rows, scratch, pool);
                self.gemv_rows_isa(isa, x[1], y1, 0..rows, scratch, pool);
            }
        }
    }

    /// `y[i] = (W·x)[rows.start + i]` for a contiguous range of rows, on tier
    /// `isa` (models call it through [`crate::Ops`], resolved at load).
    pub fn gemv_rows_isa(
        &self,
        isa: Isa,
        x: &[f32],
        y: &mut [f32],
        rows: Range<usize>,
        scratch: &mut GemvScratch,
        pool: &Pool,
    ) {
        assert_eq!(x.len(), self.cols, "gemv input length");
        assert_eq!(y.len(), rows.len(), "gemv output length");
        assert!(rows.end <= self.rows, "gemv row range");
        let n = rows.len();
        let tasks = n.div_ceil(ROWS_PER_TASK);
        let out = SendPtr(y.as_mut_ptr());
        let cols = self.cols;
        // SAFETY (all arms): tasks cover disjoint output ranges [lo, hi) of `y`,
        // which outlives `pool.run`.
        let block = |t: usize| {
            let lo = t * ROWS_PER_TASK;
            let hi = (lo + ROWS_PER_TASK).min(n);
            let ys = unsafe { std::slice::from_raw_parts_mut(out.get().add(lo), hi - lo) };
            (rows.start + lo, rows.start + hi, ys)
        };
        // `Pool::run` runs a single task inline.
        let run_all = |f: &(dyn Fn(usize) + Sync)| pool.run(tasks, f);
        match &self.data {
            Storage::F32(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::Bf16(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::F16(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::Int8(m) => {
                let act = &scratch.quantize(isa, x, gemv_int8::GROUP);
                let (n, blocks_of) = block_tasks(&rows);
                let task = |t: usize| {
                    let (b, k) = blocks_of(t);
                    m.run_blocks(isa, &b[..k], &rows, act, out.get());
                };
                pool.run(n, &task);
            }
            Storage::Int4 {
                packed,
                scales,
                biases,
            } => {
                let act = scratch.quantize(isa, x, AFFINE_GROUP);
                let (xq, xs, sx) = (act.xq, act.sums, act.scale);
                let groups = cols / AFFINE_GROUP;
                run_all(&|t| {
                    let (r0, r1, ys) = block(t);
                    let (sc, bi) = (
                        &scales[r0 * groups..r1 * groups],
                        &biases[r0 * groups..r1 * groups],
                    );
                    gemv_q4::affine_rows(
                        isa,
                        &packed[r0 * cols / 2..r1 * cols / 2],
                        sc,
                        cols,
                        xq,
                        ys,
                    );
                    finish_affine(isa, ys, bi, groups, xs, sx);
                })
            }
            Storage::Lut4(m) => {
                let act = &scratch.quantize(isa, x, gemv_int8::GROUP);
                let sums = gemv_lut4::byte_sums(act);
                let (n, blocks_of) = block_tasks(&rows);
                let task = |t: usize| {
                    let (b, k) = blocks_of(t);
                    m.run_blocks(isa, &b[..k], &rows, act, sums, out.get());
                };
                pool.run(n, &task);
            }
            Storage::Mlx8(m) => {
                let xb = scratch.round_bf16(x);
                // One task per pair of 16-row blocks; rows outside `rows` are
                // computed and dropped.
                let b0 = rows.start / gemv_mlx8::BLOCK;
                let b1 = rows.end.div_ceil(gemv_mlx8::BLOCK);
                let pairs = (b1 - b0).div_ceil(2);
                let task = |t: usize| {
                    let lo = b0 + 2 * t;
                    let hi = (lo + 2).min(b1);
                    let mut tmp = [0f32; 2 * gemv_mlx8::BLOCK];
                    let tmp = &mut tmp[..(hi - lo) * gemv_mlx8::BLOCK];
                    m.run_blocks(isa, lo..hi, xb, tmp);
                    let r0 = (lo * gemv_mlx8::BLOCK).max(rows.start);
                    let r1 = (hi * gemv_mlx8::BLOCK).min(rows.end);
                    let src = &tmp[r0 - lo * gemv_mlx8::BLOCK..r1 - lo * gemv_mlx8::BLOCK];
                    // SAFETY: tasks cover disjoint row ranges of `y`, which
                    // outlives `pool.run`.
                    let ys = unsafe {
                        std::slice::from_raw_parts_mut(out.get().add(r0 - rows.start), r1 - r0)
                    };
                    ys.copy_from_slice(src);
                };
                pool.run(pairs, &task);
            }
        }
    }
}

/// Splits the 16-row blocks covering `rows` into tasks of up to 4 blocks taken a
/// quarter of the range apart (four long memory streams per task); returns the task
/// count and, per task, its block indices.
fn block_tasks(rows: &Range<usize>) -> (usize, impl Fn(usize) -> ([usize; 4], usize) + Sync + '_) {
    let b_first = rows.start / gemv_int8::BLOCK;
    let nb = rows.end.div_ceil(gemv_int8::BLOCK) - b_first;
    let tasks = nb.div_ceil(4);
    let f = move |t: usize| {
        let mut b = [0usize; 4];
        let mut k = 0;
        for q in 0..4 {
            let i = t + q * tasks;
            if i < nb {
                b[k] = b_first + i;
                k += 1;
            }
        }
        (b, k)
    };
    (tasks, f)
}

impl GemvScratch {
    /// Quantises `x` to int16 (and its byte split) into the first slot.
    fn quantize(&mut self, isa: Isa, x: &[f32], group: usize) -> Act<'_> {
        let s = &mut self.rows[0];
        let scale = s.quantize(isa, x, group);
        s.act(scale)
    }

    /// [`GemvScratch::quantize`] for the two rows of [`Matrix::gemv2_isa`].
    fn quantize2(&mut self, isa: Isa, x: [&[f32]; 2], group: usize) -> [Act<'_>; 2] {
        let [s0, s1] = &mut self.rows;
        let (c0, c1) = (s0.quantize(isa, x[0], group), s1.quantize(isa, x[1], group));
        [s0.act(c0), s1.act(c1)]
    }

    /// `x` rounded to bf16 values (the cast to the compute dtype upstream's
    /// quantised layers make before `quantized_matmul`).
    fn round_bf16(&mut self, x: &[f32]) -> &[f32] {
        let xb = &mut self.rows[0].xb;
        xb.clear();
        xb.extend(x.iter().map(|&v| round_bf16(v)));
        xb
    }
}

impl ActScratch {
    /// Quantises `x` into this scratch (int16, byte halves, group sums); returns the scale.
    fn quantize(&mut self, isa: Isa, x: &[f32], group: usize) -> f32 {
        let groups = x.len() / group;
        self.xq.resize(x.len(), 0);
        self.hi.resize(x.len(), 0);
        self.lo.resize(x.len(), 0);
        self.sums.resize(groups, 0);
        self.sums_f.resize(groups, 0.0);
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
            crate::Tier::Avx2 | crate::Tier::Avx512 => unsafe { x86::fill(self, x, group) },
            _ => self.fill(x, group),
        }
    }

    /// The body of [`ActScratch::quantize`] once the buffers have their sizes
    /// (inlined into each tier's build: the same operations, the same bits).
    #[inline(always)]
    fn fill(&mut self, x: &[f32], group: usize) -> f32 {
        let scale = quant::quantize_activations_i16(x, group, &mut self.xq, &mut self.sums);
        for (f, &i) in self.sums_f.iter_mut().zip(&self.sums) {
            *f = i as f32;
        }
        gemv_int8::split_bytes(&self.xq, &mut self.hi, &mut self.lo);
        scale
    }

    fn act(&self, scale: f32) -> Act<'_> {
        Act {
            xq: &self.xq,
            hi: &self.hi,
            lo: &self.lo,
            sums: &self.sums_f,
            scale,
        }
    }
}

/// Adds the affine bias terms `Σ_g bias[r,g]·xsum[g]` (a small f32 GEMV over the
/// block's `[rows][groups]` biases) and applies the activation scale.
pub(crate) fn finish_affine(
    isa: Isa,
    y: &mut [f32],
    biases: &[f32],
    groups: usize,
    xsum: &[f32],
    sx: f32,
) {
    let mut terms = [0f32; ROWS_PER_TASK];
    for (yc, bc) in y
        .chunks_mut(ROWS_PER_TASK)
        .zip(biases.chunks(ROWS_PER_TASK * groups))
    {
        let t = &mut terms[..yc.len()];
        gemv_float::rows(isa, bc, groups, xsum, t);
        for (o, b) in yc.iter_mut().zip(t.iter()) {
            *o = sx * (*o + b);
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

/// [`ActScratch::fill`] compiled for AVX2: 8-lane registers for the scan, the
/// rounding and the byte split.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::ActScratch;

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn fill(s: &mut ActScratch, x: &[f32], group: usize) -> f32 {
        s.fill(x, group)
    }
}

#[cfg(test)]
mod tests {
    use super::ActScratch;
    use crate::isa::{self, Isa};

    /// Every tier's build of the activation set-up gives the portable bits (odd
    /// lengths, a tail after the 8-lane chunks, signed zeros, a NaN).
    #[test]
    fn activation_quantisation_is_the_same_on_every_tier() {
        let tiers = isa::tiers_under_test("matrix::activation_quantisation");
        for n in [4usize, 12, 132, 1028] {
            let mut x: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.731).sin() * 3.0).collect();
            x[1] = -0.0;
            x[n / 2] = -3.5;
            let mut with_nan = x.clone();
            with_nan[n - 1] = f32::NAN;
            for x in [x, with_nan] {
                let mut want = ActScratch::default();
                let s0 = want.quantize(Isa::PORTABLE, &x, 4);
                for &isa in &tiers {
                    let mut got = ActScratch::default();
                    let s = got.quantize(isa, &x, 4);
                    assert_eq!(s.to_bits(), s0.to_bits(), "{isa:?} n={n}");
                    assert_eq!(got.xq, want.xq, "{isa:?} n={n}");
                    assert_eq!((&got.hi, &got.lo), (&want.hi, &want.lo), "{isa:?} n={n}");
                    assert_eq!(got.sums, want.sums, "{isa:?} n={n}");
                    assert_eq!(got.sums_f, want.sums_f, "{isa:?} n={n}");
                }
            }
        }
    }
}
