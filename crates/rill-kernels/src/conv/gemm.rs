//! The one implicit-GEMM kernel family of both codecs:
//! `out[row, n] = epi(bias[n] + Σ_tap Σ_ci in[row_base + tap + ci]·W[tap·cin + ci, n])`.
//!
//! A [`Job`] is a set of output rows given by an affine [`RowMap`], each reading
//! `taps.len()` contiguous runs of `cin` input channels at fixed offsets from the
//! row's base, times the weights of a [`Packed`] matrix, plus the bias, then an
//! [`Epilogue`]. [`gemm`] runs jobs writing into one buffer (SpectroStream's stride
//! phases and Winograd positions), [`gemm_many`] jobs writing one buffer each
//! (NanoCodec's branch convolutions).
//!
//! * Work is split into tasks of at most `block_m` rows × one column tile, as the
//!   job's [`Blocking`] says (the tunings the two codecs were measured with). The
//!   split depends only on the problem size and every output element is summed by
//!   one task in a fixed order (sequential over k, one FMA chain per element, then
//!   `+ bias`, then the epilogue; int16 panels multiply the column scale once after
//!   the chain), so results are identical for any thread count and for any number of
//!   rows — a one-frame streaming step and a many-frame batch compute the same bits.
//! * Micro-kernels, one per tier (`Tile` is their argument): AVX-512 (6 rows × 64
//!   columns, 8 × 48 or 12 × 32: 24 zmm accumulators), AVX2 + FMA (6 × 16), NEON
//!   (6 × 16), portable (4 × 16, separate multiply and add, auto-vectorised). The
//!   AVX2, AVX-512 and NEON kernels use FMA in the same order and the same ELU and
//!   HalfSnake operation sequences, so they agree bit for bit; the portable path
//!   rounds products separately. Extra kernels of the family: the dot-product kernel
//!   of narrow outputs (`n < 16`, [`Packed`]'s rows layout) on every tier, and the
//!   fp16-arithmetic kernel of NEON CPUs with FP16 ([`Packed::use_half_arithmetic`]:
//!   4 rows × 16 columns of half FMAs, each partial sum of
//!   [`HALF_CHUNK`](super::packed::HALF_CHUNK) products added into f32 accumulators).
//! * Magpie's [`matmul`](crate::matmul) runs on the panel micro-kernels too, through
//!   `chain_tile`: one-tap tiles over a block of k whose FMA chains start from the
//!   values at the output (the sums of the previous blocks) and are stored without
//!   bias or epilogue (the tile's `chain` flag, a const parameter of the micro-kernels
//!   chosen once per tile, so the codecs' instantiations do not test it), so
//!   each output is still one chain over all of k.

use super::packed::{has_narrow_kernel, EarlyWeights, Layout, Narrow};
use super::{run_jobs, Packed, RowMap, PANEL};
use crate::{AVec, DisjointOut, Isa, Pool, Tier};
#[cfg(target_arch = "x86_64")]
use simd::W_F16;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use simd::{W_F32, W_I16};

#[cfg(target_arch = "aarch64")]
mod arm_fp16;
#[cfg(target_arch = "aarch64")]
pub(super) mod arm_neon;
pub(super) mod portable;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod simd;
#[cfg(target_arch = "x86_64")]
pub(super) mod x86_avx2;
#[cfg(target_arch = "x86_64")]
pub(super) mod x86_avx512;

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

/// What happens to `y = bias + Σ` before it is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Epilogue<'a> {
    /// `out = y`.
    Store,
    /// `out = out + y` (residual sum).
    Accumulate,
    /// `out = elu(y)` (SpectroStream's next pre-activation, fused).
    Elu,
    /// `out = HalfSnake(y)` (NanoCodec's next activation, fused; the parameters'
    /// channel count is the job's `n`).
    Snake(&'a SnakeParams),
}

/// How a job is cut into tasks and micro-kernel calls: the tuning each codec was
/// measured with (the bits do not depend on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Blocking {
    /// SpectroStream: tasks of 48 rows (8 micro-kernel calls of 6 rows reuse the
    /// task's weight block from L2) × 64 columns, row block major; on AVX-512 whole
    /// 64-column tiles run 6 rows × 4 panels, others panel by panel; the x86
    /// kernels prefetch the weights 2 KB ahead.
    Grid = 0,
    /// NanoCodec: tasks of 32 rows × at most 3 panels, the panels spread evenly over
    /// the column tiles (no lone 1-panel tile is left for the narrow stages), column
    /// tile major (the row blocks of one tile run back to back, so its weights are
    /// read from memory once and then from cache); on AVX-512 8 rows × 3 panels,
    /// 12 × 2 or 8 × 1; the x86 kernels prefetch 1024 weights ahead (4 KB of f32).
    Causal = 1,
}

/// Most rows of any blocking's task.
const MAX_BLOCK_M: usize = 48;

impl Blocking {
    /// Rows per task.
    pub const fn block_m(self) -> usize {
        match self {
            Blocking::Grid => 48,
            Blocking::Causal => 32,
        }
    }

    /// Most panels per column tile.
    pub const fn max_panels(self) -> usize {
        match self {
            Blocking::Grid => 4,
            Blocking::Causal => 3,
        }
    }

    /// Column tiles of an `n`-column GEMM.
    fn tiles(self, n: usize) -> usize {
        n.div_ceil(PANEL).div_ceil(self.max_panels())
    }

    /// `(first panel, panels)` of column tile `i` of an `n`-column GEMM.
    fn tile_panels(self, n: usize, i: usize) -> (usize, usize) {
        let np = n.div_ceil(PANEL);
        match self {
            Blocking::Grid => (i * 4, 4.min(np - i * 4)),
            Blocking::Causal => {
                let t = self.tiles(n);
                let (a, b) = (i * np / t, (i + 1) * np / t);
                (a, b - a)
            }
        }
    }
}

/// One implicit GEMM: output row `m` reads input from `rows`' input offset of row
/// `m` (+ taps) and writes `n` values at its output offset ([`RowMap::strided`] for
/// the usual `in_base + m·in_stride`, `out_base + m·out_stride`).
pub struct Job<'a> {
    pub w: &'a Packed,
    pub rows: RowMap,
    pub input: &'a [f32],
    pub epi: Epilogue<'a>,
}

impl Job<'_> {
    fn tasks(&self, blocking: Blocking) -> usize {
        if self.rows.dims.contains(&0) {
            return 0;
        }
        self.rows.rows().div_ceil(blocking.block_m()) * blocking.tiles(self.w.n)
    }

    /// Panics unless every read and write of the job stays inside its buffers and
    /// its rows do not overlap (a bug, not input).
    fn check_bounds(&self, out_len: usize) {
        if self.rows.dims.contains(&0) {
            return;
        }
        let (lo, hi) = self.w.tap_range();
        let (imax, omax) = self.rows.max_offsets();
        assert!(
            self.rows.in_base as isize + lo >= 0
                && imax as isize + hi + self.w.cin as isize <= self.input.len() as isize,
            "conv job reads outside its input ({} floats)",
            self.input.len()
        );
        let n = self.w.n;
        let overlap = (0..3).any(|i| self.rows.dims[i] > 1 && self.rows.out_strides[i] < n);
        assert!(!overlap, "conv job rows overlap");
        assert!(
            omax + n <= out_len,
            "conv job writes outside its output ({out_len} floats)"
        );
        if let Epilogue::Snake(p) = self.epi {
            assert_eq!(p.channels, n, "HalfSnake epilogue channel count");
        }
    }
}

/// Arguments of one task-sized kernel call.
pub(super) struct Tile<'a> {
    /// Input base pointer of each row.
    pub a: &'a [*const f32],
    /// Output pointer of each row, already offset to the tile's first column.
    pub c: &'a [*mut f32],
    pub taps: &'a [isize],
    pub cin: usize,
    /// Weights: the panel of the tile's first column (panels layout) or its first
    /// row (rows layout); null for narrow panels.
    pub b: *const f32,
    /// As `b` for half panels (then `b` is null); `b_stride` counts halves.
    /// (The f16 panels are read by the x86 kernels, the half-arithmetic ones by
    /// the NEON fp16 kernel.)
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub b16: *const u16,
    /// Half arithmetic: the weights' power-of-two scale (0 otherwise).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub w_log2: i32,
    /// As `b` for int16 panels (then `b` is null), with `bscale` the per-column
    /// scales from the tile's first column.
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub bq: *const i16,
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub bscale: *const f32,
    /// Elements between consecutive panels (panels) or weight rows (rows layout).
    pub b_stride: usize,
    /// Valid columns in this tile.
    pub ncols: usize,
    /// The tile's first column (where the epilogue's per-column parameters start).
    pub col0: usize,
    /// Bias at the tile's first column, zero-padded to whole panels (so a panel's
    /// 16 values can always be loaded).
    pub bias: *const f32,
    pub epi: Epilogue<'a>,
    /// A GEMM blocked over k ([`chain_tile`], Magpie's matmul): each output's FMA
    /// chain goes on from the value at `c` (the micro-kernels load it into their
    /// accumulators) and the sum is stored as it is, no bias (null) and no epilogue
    /// (`epi` is `Store`). False for the codecs' convolutions.
    pub chain: bool,
}

impl Tile<'_> {
    /// HalfSnake parameters at tile column `col` (padded: a whole panel readable
    /// from a panel's start), and the snake lanes left from there (saturating).
    #[inline(always)]
    pub fn snake_at(&self, p: &SnakeParams, col: usize) -> (*const f32, *const f32, usize) {
        let c = self.col0 + col;
        (
            p.alpha.as_ptr().wrapping_add(c),
            p.inv.as_ptr().wrapping_add(c),
            p.half.saturating_sub(c),
        )
    }
}

/// Most jobs of one call (the Winograd 3×3 convolution's 36 positions).
pub const MAX_JOBS: usize = 64;

/// Runs every job (all writing into `out`, each into its own rows) over the pool.
pub fn gemm(isa: Isa, blocking: Blocking, jobs: &[Job<'_>], out: &mut [f32], pool: &Pool) {
    for j in jobs {
        j.check_bounds(out.len());
    }
    let out = DisjointOut::new(out);
    run(isa, blocking, jobs, &|_| out, pool);
}

/// Independent GEMMs, job `i` writing `outs[i]`, in one pool dispatch ([`run_jobs`]).
pub fn gemm_many(
    isa: Isa,
    blocking: Blocking,
    jobs: &[Job<'_>],
    outs: &mut [&mut [f32]],
    pool: &Pool,
) {
    assert!(
        jobs.len() == outs.len() && jobs.len() <= MAX_JOBS,
        "gemm_many job count"
    );
    let mut ptrs = [DisjointOut::null(); MAX_JOBS];
    for (i, (job, out)) in jobs.iter().zip(outs.iter_mut()).enumerate() {
        job.check_bounds(out.len());
        ptrs[i] = DisjointOut::new(out);
    }
    run(isa, blocking, jobs, &|i| ptrs[i], pool);
}

/// The tasks of every job in one pool dispatch, job `i` writing through `out(i)`.
fn run<'o>(
    isa: Isa,
    blocking: Blocking,
    jobs: &[Job<'_>],
    out: &(dyn Fn(usize) -> DisjointOut<'o> + Sync),
    pool: &Pool,
) {
    assert!(
        jobs.len() <= MAX_JOBS,
        "{} jobs in one gemm call",
        jobs.len()
    );
    let mut tasks = [0usize; MAX_JOBS];
    for (t, j) in tasks.iter_mut().zip(jobs) {
        *t = j.tasks(blocking);
    }
    run_jobs(pool, &tasks[..jobs.len()], &|ji, task| {
        run_task(isa, blocking, &jobs[ji], task, out(ji))
    });
}

fn run_task(isa: Isa, blocking: Blocking, job: &Job<'_>, task: usize, out: DisjointOut<'_>) {
    let w = job.w;
    let block_m = blocking.block_m();
    let (row_blocks, col_tiles) = (job.rows.rows().div_ceil(block_m), blocking.tiles(w.n));
    let (mb, cb) = match blocking {
        Blocking::Grid => (task / col_tiles, task % col_tiles),
        Blocking::Causal => (task % row_blocks, task / row_blocks),
    };
    let r0 = mb * block_m;
    let r1 = (r0 + block_m).min(job.rows.rows());
    let (p0, np) = blocking.tile_panels(w.n, cb);
    let c0 = p0 * PANEL;
    let ncols = (np * PANEL).min(w.n - c0);
    let mut a = [std::ptr::null::<f32>(); MAX_BLOCK_M];
    let mut c = [std::ptr::null_mut::<f32>(); MAX_BLOCK_M];
    let mut i = 0;
    job.rows.for_rows(r0..r1, |io, oo| {
        // In bounds: checked for the extreme rows in `check_bounds`.
        a[i] = job.input[io..].as_ptr();
        // SAFETY: `oo + c0 + ncols <= out.len()` by `check_bounds`; tasks write
        // disjoint (row, column-block) regions of their output: rows of one job map
        // to offsets at least `n` apart (checked), the jobs of one `gemm` call cover
        // disjoint rows (each job its own; the stride phases of a transposed
        // convolution disjoint output positions), those of one `gemm_many` call have
        // distinct outputs, and column blocks do not overlap.
        c[i] = unsafe { out.at(oo + c0) };
        i += 1;
    });
    let n = r1 - r0;
    assert!(
        match &w.narrow {
            None => true,
            Some(Narrow::F16(_)) => has_narrow_kernel(isa, EarlyWeights::F16),
            Some(Narrow::I16 { .. }) => has_narrow_kernel(isa, EarlyWeights::I16),
            Some(Narrow::HalfMath { .. }) => isa.fp16(),
        },
        "narrow weight panels need a SIMD kernel"
    );
    let null = (
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null(),
    );
    let panel0 = p0 * w.k * PANEL;
    let (b, b16, bq, bscale) = match (&w.layout, &w.narrow) {
        (Layout::Panels, Some(Narrow::F16(h) | Narrow::HalfMath { h, .. })) => {
            (null.0, h[panel0..].as_ptr(), null.2, null.3)
        }
        (Layout::Panels, Some(Narrow::I16 { q, scale })) => {
            (null.0, null.1, q[panel0..].as_ptr(), scale[c0..].as_ptr())
        }
        (Layout::Panels, None) => (w.data[panel0..].as_ptr(), null.1, null.2, null.3),
        (Layout::Rows, _) => (w.data[c0 * w.k..].as_ptr(), null.1, null.2, null.3),
    };
    let b_stride = match w.layout {
        Layout::Panels => w.k * PANEL,
        Layout::Rows => w.k,
    };
    let w_log2 = match w.narrow {
        Some(Narrow::HalfMath { w_log2, .. }) => w_log2,
        _ => 0,
    };
    let tile = Tile {
        a: &a[..n],
        c: &c[..n],
        taps: &w.taps,
        cin: w.cin,
        b,
        b16,
        bq,
        bscale,
        b_stride,
        w_log2,
        ncols,
        col0: c0,
        bias: w.bias[c0..].as_ptr(),
        epi: job.epi,
        chain: false,
    };
    // SAFETY: all pointers were derived from bounds-checked buffers above; the ISA
    // tier is only selected when the CPU supports it (`rill_kernels::isa`).
    unsafe { dispatch(isa, blocking, w, &tile) }
}

/// `c[r][j] += Σ_k a[r][k]·B[k][j]` for the rows `r` of `a` and `c` and the `ncols
/// ≤ 48` columns `j`, each output one FMA chain continued from its value in `c` (a
/// GEMM blocked over k: Magpie's [`matmul`](crate::matmul), whose bits are those of
/// one chain over all of k from zero); `B` is `k = cin` rows of f32 weights packed
/// in panels (`[panel][cin][PANEL]`, zero-padded) at `b`. Runs the tier's one panel
/// micro-kernel with the register shapes of [`Blocking::Causal`] (AVX-512: 12 rows ×
/// 2 panels for a 32-column block).
///
/// # Safety
/// `isa`'s tier is supported by the CPU; `a.len() == c.len() ≤ 48`; every `a[r]`
/// is valid for `cin` reads, every `c[r]` for `ncols` reads and writes (no two
/// overlapping, none overlapping any `a[r]` or `b`); `b` is valid for
/// `ncols.div_ceil(PANEL)·cin·PANEL` reads.
pub(crate) unsafe fn chain_tile(
    isa: Isa,
    a: &[*const f32],
    c: &[*mut f32],
    cin: usize,
    b: *const f32,
    ncols: usize,
) {
    debug_assert!(a.len() == c.len() && a.len() <= MAX_BLOCK_M && ncols <= 3 * PANEL);
    let tile = Tile {
        a,
        c,
        taps: &[0],
        cin,
        b,
        b16: std::ptr::null(),
        w_log2: 0,
        bq: std::ptr::null(),
        bscale: std::ptr::null(),
        b_stride: cin * PANEL,
        ncols,
        col0: 0,
        bias: std::ptr::null(),
        epi: Epilogue::Store,
        chain: true,
    };
    #[cfg(target_arch = "x86_64")]
    const CAUSAL: u8 = Blocking::Causal as u8;
    // SAFETY: the caller upholds this function's `# Safety` contract, which covers
    // the tile's pointers; the tier was checked by whoever built `isa`.
    unsafe {
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            Tier::Avx512 => x86_avx512::tile::<W_F32, CAUSAL>(&tile),
            #[cfg(target_arch = "x86_64")]
            Tier::Avx2 => x86_avx2::tile::<W_F32, CAUSAL>(&tile),
            #[cfg(target_arch = "aarch64")]
            Tier::Neon => arm_neon::tile::<W_F32>(&tile),
            _ => portable::tile(&tile),
        }
    }
}

/// Expands to `$tier::tile::<format, blocking>(t)` for the matrix's weight format
/// and the blocking (the x86 panel kernels' const parameters).
#[cfg(target_arch = "x86_64")]
macro_rules! by_format {
    ($tier:ident, $w:expr, $blocking:expr, $t:expr) => {{
        const G: u8 = Blocking::Grid as u8;
        const C: u8 = Blocking::Causal as u8;
        match (&$w.narrow, $blocking) {
            (None, Blocking::Grid) => $tier::tile::<W_F32, G>($t),
            (None, Blocking::Causal) => $tier::tile::<W_F32, C>($t),
            (Some(Narrow::F16(_)), Blocking::Grid) => $tier::tile::<W_F16, G>($t),
            (Some(Narrow::F16(_)), Blocking::Causal) => $tier::tile::<W_F16, C>($t),
            (Some(Narrow::I16 { .. }), Blocking::Grid) => $tier::tile::<W_I16, G>($t),
            (Some(Narrow::I16 { .. }), Blocking::Causal) => $tier::tile::<W_I16, C>($t),
            (Some(Narrow::HalfMath { .. }), _) => unreachable!("half arithmetic is NEON-only"),
        }
    }};
}

/// Runs the tier's kernel for the matrix's layout and weight format.
///
/// # Safety
/// The tile's pointers are valid for the rows and columns it covers (see [`Tile`]);
/// `isa`'s tier is supported by the CPU.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
unsafe fn dispatch(isa: Isa, blocking: Blocking, w: &Packed, tile: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        match (isa.tier(), &w.layout) {
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, Layout::Panels) => by_format!(x86_avx512, w, blocking, tile),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, Layout::Rows) => x86_avx512::narrow(tile),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, Layout::Panels) => by_format!(x86_avx2, w, blocking, tile),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, Layout::Rows) => x86_avx2::narrow(tile),
            #[cfg(target_arch = "aarch64")]
            (Tier::Neon, Layout::Rows) => arm_neon::narrow(tile),
            #[cfg(target_arch = "aarch64")]
            (Tier::Neon, Layout::Panels) => match w.narrow {
                Some(Narrow::I16 { .. }) => arm_neon::tile::<W_I16>(tile),
                Some(Narrow::HalfMath { .. }) => arm_fp16::tile(tile),
                _ => arm_neon::tile::<W_F32>(tile),
            },
            (_, Layout::Panels) => portable::tile(tile),
            (_, Layout::Rows) => portable::narrow(tile),
        }
    }
}

#[cfg(test)]
mod tile_tests {
    use super::*;

    #[test]
    fn tiles_cover_every_panel_once() {
        for blocking in [Blocking::Grid, Blocking::Causal] {
            for n in 1..500 {
                let mut next = 0;
                for i in 0..blocking.tiles(n) {
                    let (a, k) = blocking.tile_panels(n, i);
                    assert_eq!(a, next, "n {n}");
                    assert!((1..=blocking.max_panels()).contains(&k), "n {n}");
                    next = a + k;
                }
                assert_eq!(next, n.div_ceil(PANEL), "n {n}");
            }
        }
        let causal = Blocking::Causal;
        assert_eq!(causal.tile_panels(108, 0), (0, 2)); // 7 panels → 2, 2, 3
        assert_eq!(causal.tile_panels(54, 1), (2, 2)); // 4 panels → 2, 2
        assert_eq!(Blocking::Grid.tile_panels(80, 1), (4, 1)); // 64 + 16 columns
    }
}
