//! NanoCodec's implicit-GEMM kernels of the causal 1-D convolutions, and the HalfSnake.
//!
//! A convolution over channels-last rows (`[time][channel]`, the causal history
//! rows stored in front of the current ones) is
//! `out[t][n] = epi(bias[n] + Σ_tap Σ_ci in[t·s + tap + ci] · W[tap·cin + ci][n])`,
//! where the tap offsets `j·dilation·cin` address the input rows the tap reads, so
//! no im2col copy is made (the approach of [`super::grid`], in 1-D).
//!
//! * Weights are packed once ([`Packed`]) in panels of 16 output channels
//!   (`[panel][k][16]`, zero-padded), what the micro-kernels stream.
//! * Work is split into tasks of at most [`BLOCK_M`] rows × [`MAX_TILE_PANELS`]
//!   panels (the panels spread evenly over the tiles, so no lone 1-panel tile is
//!   left for the narrow stages), from the problem size only; every output element is one FMA chain over `k` in
//!   a fixed order, whatever the row blocking, so results do not depend on the
//!   thread count or on how many rows a call has — a one-frame streaming step and a
//!   many-frame batch compute the same bits.
//! * Micro-kernels: AVX-512 (8 rows × up to 48 columns, 24 zmm accumulators),
//!   AVX2 + FMA (6 rows × 16 columns), NEON (6 × 16), portable (4 × 16, separate
//!   multiply and add, auto-vectorised). The SIMD tiers use the same FMA order and
//!   agree bit for bit; portable rounds each product.
//! * The epilogue adds the bias and stores, accumulates (residual) or applies a
//!   HalfSnake ([`snake`]: the same operation sequence, no FMA, on every tier, so
//!   the activation is bit-identical across tiers).

use super::packed::Narrow;
pub use super::packed::{reads_half_panels, Packed};
use super::run_jobs;
pub use super::RowMap;
use crate::{AVec, DisjointOut, Isa, Pool, Tier};

#[cfg(target_arch = "aarch64")]
mod arm_neon;
mod portable;
mod winograd;
#[cfg(target_arch = "x86_64")]
mod x86_avx2;
#[cfg(target_arch = "x86_64")]
mod x86_avx512;

pub use winograd::{winograd_many, WinogradConv, WinogradJob, WinogradScratch, MAX_CONVS};

pub use super::PANEL;
/// Most panels per task (the AVX-512 micro-kernel's width).
pub const MAX_TILE_PANELS: usize = 3;

/// Column tiles of an `n`-column GEMM: `(first panel, panels)` of tile `i` of
/// `tiles(n)`, the panels spread as evenly as possible.
fn tile_panels(n: usize, i: usize) -> (usize, usize) {
    let np = n.div_ceil(PANEL);
    let t = np.div_ceil(MAX_TILE_PANELS);
    let (a, b) = (i * np / t, (i + 1) * np / t);
    (a, b - a)
}

fn tiles(n: usize) -> usize {
    n.div_ceil(PANEL).div_ceil(MAX_TILE_PANELS)
}
/// Rows per task.
pub const BLOCK_M: usize = 32;

/// HalfSnake parameters padded to whole panels: lanes `< half` are snake lanes.
#[derive(Debug, Clone, PartialEq)]
pub struct SnakeParams {
    pub channels: usize,
    pub half: usize,
    pub alpha: AVec,
    pub inv: AVec,
}

impl SnakeParams {
    /// Pads a HalfSnake of `channels` channels whose first `channels / 2` are snake
    /// channels with `alpha[c]` and `alpha_inv[c]` (`1 / (alpha + 1e-9)`, as torch
    /// computes it); the rest are LeakyReLU channels.
    pub fn new(channels: usize, alpha: &[f32], alpha_inv: &[f32]) -> SnakeParams {
        let padded = channels.div_ceil(PANEL) * PANEL;
        let half = channels / 2;
        let mut a = AVec::zeros(padded);
        let mut inv = AVec::zeros(padded);
        a[..half].copy_from_slice(&alpha[..half]);
        inv[..half].copy_from_slice(&alpha_inv[..half]);
        SnakeParams {
            channels,
            half,
            alpha: a,
            inv,
        }
    }
}

/// What happens to `bias + Σ` before it is written.
#[derive(Debug, Clone, Copy)]
pub enum Epilogue<'a> {
    /// `out = y`.
    Store,
    /// `out = out + y` (the residual sum `x + conv(…)`).
    Accumulate,
    /// `out = HalfSnake(y)` (the next layer's activation, fused).
    Snake(&'a SnakeParams),
}

/// One GEMM: output row `m` reads input from `rows`' input offset of row `m` (+ taps)
/// and writes `n` values at its output offset ([`RowMap::strided`] for the usual
/// `in_base + m·in_stride`, `out_base + m·out_stride`).
pub struct Job<'a> {
    pub w: &'a Packed,
    pub input: &'a [f32],
    pub rows: RowMap,
    pub epi: Epilogue<'a>,
}

impl Job<'_> {
    fn tasks(&self) -> usize {
        self.rows.rows().div_ceil(BLOCK_M) * tiles(self.w.n)
    }

    /// Panics unless every read and write stays inside the buffers (a bug, not input).
    fn check_bounds(&self, out_len: usize) {
        let rows = self.rows.rows();
        if rows == 0 {
            return;
        }
        let (last_in, last_out) = self.rows.max_offsets();
        let (lo, hi) = self.w.tap_range();
        assert!(
            lo >= 0 && last_in + hi as usize + self.w.cin <= self.input.len(),
            "conv job reads outside its input"
        );
        let [d0, d1, d2] = self.rows.dims;
        let [s0, s1, s2] = self.rows.out_strides;
        assert!(
            rows == 1
                || ((d0 == 1 || s0 >= self.w.n)
                    && (d1 == 1 || s1 >= self.w.n)
                    && (d2 == 1 || s2 >= self.w.n)),
            "conv job rows overlap"
        );
        assert!(
            last_out + self.w.n <= out_len,
            "conv job writes outside its output"
        );
        if let Epilogue::Snake(p) = self.epi {
            assert_eq!(p.channels, self.w.n, "HalfSnake epilogue channel count");
        }
    }
}

/// Arguments of one task-sized micro-kernel call.
pub struct Tile<'a> {
    /// Input base pointer of each row.
    pub a: &'a [*const f32],
    /// Output pointer of each row at the tile's first column.
    pub c: &'a [*mut f32],
    pub taps: &'a [isize],
    pub cin: usize,
    /// The packed panel of the tile's first column (f32 panels).
    pub b: *const f32,
    /// The same in IEEE half bits (half panels; then `b` is null). Only the x86
    /// tiers are given half panels.
    pub b16: *const u16,
    /// Floats between consecutive panels (`k·16`).
    pub b_stride: usize,
    /// Valid columns of this tile (≤ 16·[`MAX_TILE_PANELS`]).
    pub ncols: usize,
    /// Bias at the tile's first column (padded: whole panels readable).
    pub bias: *const f32,
    /// Snake parameters at the tile's first column, and the snake lanes left.
    pub snake: Option<(*const f32, *const f32, usize)>,
    pub accumulate: bool,
}

/// `out = epi(conv(input))` for one job, spread over the pool.
pub fn gemm(isa: Isa, job: &Job<'_>, out: &mut [f32], pool: &Pool) {
    gemm_many(isa, std::slice::from_ref(job), &mut [out], pool);
}

/// Most jobs of one [`gemm_many`] call: the 7 Winograd points and the direct rows
/// of 4 branch convolutions.
pub const MAX_JOBS: usize = 32;

/// Independent GEMMs, job `i` writing `outs[i]`, in one pool dispatch ([`run_jobs`]).
pub fn gemm_many(isa: Isa, jobs: &[Job<'_>], outs: &mut [&mut [f32]], pool: &Pool) {
    assert!(
        jobs.len() == outs.len() && jobs.len() <= MAX_JOBS,
        "gemm_many job count"
    );
    let mut tasks = [0usize; MAX_JOBS];
    let mut ptrs = [DisjointOut::null(); MAX_JOBS];
    for (i, (job, out)) in jobs.iter().zip(outs.iter_mut()).enumerate() {
        job.check_bounds(out.len());
        tasks[i] = job.tasks();
        ptrs[i] = DisjointOut::new(out);
    }
    run_jobs(pool, &tasks[..jobs.len()], &|i, task| {
        run_task(isa, &jobs[i], task, ptrs[i])
    });
}

fn run_task(isa: Isa, job: &Job<'_>, task: usize, out: DisjointOut<'_>) {
    let w = job.w;
    assert!(
        w.layout == super::packed::Layout::Panels,
        "the causal conv kernels read panels"
    );
    assert!(
        match &w.narrow {
            None => true,
            Some(Narrow::F16(_)) => reads_half_panels(isa),
            Some(_) => false,
        },
        "half panels given to a tier that reads f32 panels"
    );
    // Column tile major: the row blocks of one tile run back to back, so its
    // weights (≤ 3 panels) are read from memory once and then from cache.
    let row_blocks = job.rows.rows().div_ceil(BLOCK_M);
    let (mb, cb) = (task % row_blocks, task / row_blocks);
    let r0 = mb * BLOCK_M;
    let r1 = (r0 + BLOCK_M).min(job.rows.rows());
    let (p0, np) = tile_panels(w.n, cb);
    let c0 = p0 * PANEL;
    let ncols = (np * PANEL).min(w.n - c0);
    let mut a = [std::ptr::null::<f32>(); BLOCK_M];
    let mut c = [std::ptr::null_mut::<f32>(); BLOCK_M];
    let mut i = 0;
    job.rows.for_rows(r0..r1, |io, oo| {
        a[i] = job.input[io..].as_ptr();
        // SAFETY: `oo + c0 + ncols ≤ out.len()` by `check_bounds`; the tasks of one
        // call write disjoint (row block, column block) regions of their job's output
        // (distinct rows map to distinct offsets at least `n` apart, checked), and the
        // jobs of one `gemm_many` call have distinct outputs.
        c[i] = unsafe { out.at(oo + c0) };
        i += 1;
    });
    let n = r1 - r0;
    let snake = match job.epi {
        Epilogue::Snake(p) => Some((
            p.alpha[c0..].as_ptr(),
            p.inv[c0..].as_ptr(),
            p.half.saturating_sub(c0),
        )),
        _ => None,
    };
    let tile = Tile {
        a: &a[..n],
        c: &c[..n],
        taps: &w.taps,
        cin: w.cin,
        b: match w.narrow {
            None => w.data[(c0 / PANEL) * w.k * PANEL..].as_ptr(),
            Some(_) => std::ptr::null(),
        },
        b16: match &w.narrow {
            Some(Narrow::F16(h)) => h[(c0 / PANEL) * w.k * PANEL..].as_ptr(),
            _ => std::ptr::null(),
        },
        b_stride: w.k * PANEL,
        ncols,
        bias: w.bias[c0..].as_ptr(),
        snake,
        accumulate: matches!(job.epi, Epilogue::Accumulate),
    };
    // SAFETY: every pointer comes from a bounds-checked buffer (`check_bounds`,
    // padded panels, bias and snake parameters); a tier is only selected when the
    // CPU was detected to support it (`Isa` is a proof of detection).
    unsafe {
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            Tier::Avx512 => x86_avx512::tile(&tile),
            #[cfg(target_arch = "x86_64")]
            Tier::Avx2 => x86_avx2::tile(&tile),
            #[cfg(target_arch = "aarch64")]
            Tier::Neon => arm_neon::tile(&tile),
            _ => portable::tile(&tile),
        }
    }
}

/// Elements of one HalfSnake task (rows are grouped to about this many).
const SNAKE_TASK_ELEMS: usize = 8192;

/// `dst[r·dst_stride + c] = HalfSnake(src[r·src_stride + c])` for `c < channels`,
/// spread over `pool` in groups of rows (element-wise, so the bits do not depend
/// on the split; an assisting pipeline stage can take part, [`Pool::assist`]).
#[allow(clippy::too_many_arguments)]
pub fn half_snake_rows(
    isa: Isa,
    p: &SnakeParams,
    src: &[f32],
    src_stride: usize,
    dst: &mut [f32],
    dst_stride: usize,
    rows: usize,
    pool: &Pool,
) {
    if rows == 0 {
        return;
    }
    let ch = p.channels;
    assert!((rows - 1) * src_stride + ch <= src.len() && (rows - 1) * dst_stride + ch <= dst.len());
    let per_task = (SNAKE_TASK_ELEMS / ch.max(1)).max(1);
    let out = DisjointOut::new(dst);
    pool.run(rows.div_ceil(per_task), &|t| {
        for r in t * per_task..((t + 1) * per_task).min(rows) {
            let s = &src[r * src_stride..r * src_stride + ch];
            // SAFETY: tasks own disjoint row ranges of `dst`, and row `r`'s
            // `channels` floats lie inside it (asserted above).
            let d = unsafe { out.at(r * dst_stride) };
            // SAFETY: both runs hold `channels` floats; the tier was detected.
            unsafe {
                match isa.tier() {
                    #[cfg(target_arch = "x86_64")]
                    Tier::Avx512 => x86_avx512::half_snake_run(p, s.as_ptr(), d),
                    #[cfg(target_arch = "x86_64")]
                    Tier::Avx2 => x86_avx2::half_snake_run(p, s.as_ptr(), d),
                    #[cfg(target_arch = "aarch64")]
                    Tier::Neon => arm_neon::half_snake_run(p, s.as_ptr(), d),
                    _ => portable::half_snake_run(p, s, std::slice::from_raw_parts_mut(d, ch)),
                }
            }
        }
    });
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tile_tests {
    use super::*;

    #[test]
    fn tiles_cover_every_panel_once_with_at_most_three() {
        for n in 1..500 {
            let mut next = 0;
            for i in 0..tiles(n) {
                let (a, k) = tile_panels(n, i);
                assert_eq!(a, next, "n {n}");
                assert!((1..=MAX_TILE_PANELS).contains(&k), "n {n}");
                next = a + k;
            }
            assert_eq!(next, n.div_ceil(PANEL), "n {n}");
        }
        assert_eq!(tile_panels(108, 0), (0, 2)); // 7 panels → 2, 2, 3
        assert_eq!(tile_panels(54, 1), (2, 2)); // 4 panels → 2, 2
    }
}
