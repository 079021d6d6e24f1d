//! Implicit-GEMM kernels of the causal 1-D convolutions, and the HalfSnake.
//!
//! A convolution over channels-last rows (`[time][channel]`, the causal history
//! rows stored in front of the current ones) is
//! `out[t][n] = epi(bias[n] + Σ_tap Σ_ci in[t·s + tap + ci] · W[tap·cin + ci][n])`,
//! where the tap offsets `j·dilation·cin` address the input rows the tap reads, so
//! no im2col copy is made (the approach of `rill-spectrostream`'s kernels, in 1-D).
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

use std::marker::PhantomData;

use rill_kernels::{Isa, Pool, Tier};

#[cfg(target_arch = "aarch64")]
mod arm_neon;
mod portable;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod simd;
mod winograd;
#[cfg(target_arch = "x86_64")]
mod x86_avx2;
#[cfg(target_arch = "x86_64")]
mod x86_avx512;

pub(crate) use winograd::{winograd_many, WinogradConv, WinogradJob, WinogradScratch, MAX_CONVS};

pub(crate) use rill_kernels::AVec;

/// Output channels per packed weight panel (one zmm).
pub(crate) const PANEL: usize = 16;
/// Most panels per task (the AVX-512 micro-kernel's width).
pub(crate) const MAX_TILE_PANELS: usize = 3;

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
pub(crate) const BLOCK_M: usize = 32;

/// HalfSnake parameters padded to whole panels: lanes `< half` are snake lanes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SnakeParams {
    pub channels: usize,
    pub half: usize,
    pub alpha: AVec,
    pub inv: AVec,
}

impl SnakeParams {
    pub(crate) fn new(hs: &crate::weights::HalfSnake) -> SnakeParams {
        let padded = hs.channels.div_ceil(PANEL) * PANEL;
        let mut alpha = AVec::zeros(padded);
        let mut inv = AVec::zeros(padded);
        let half = hs.channels / 2;
        alpha[..half].copy_from_slice(&hs.alpha[..half]);
        inv[..half].copy_from_slice(&hs.alpha_inv[..half]);
        SnakeParams {
            channels: hs.channels,
            half,
            alpha,
            inv,
        }
    }
}

/// What happens to `bias + Σ` before it is written.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Epilogue<'a> {
    /// `out = y`.
    Store,
    /// `out = out + y` (the residual sum `x + conv(…)`).
    Accumulate,
    /// `out = HalfSnake(y)` (the next layer's activation, fused).
    Snake(&'a SnakeParams),
}

/// The weights of one implicit GEMM, `k = taps.len()·cin` by `n`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Packed {
    pub k: usize,
    pub n: usize,
    pub cin: usize,
    /// Element offset of each tap's channel run from an output row's input base.
    pub taps: Vec<usize>,
    /// `[n/16 panels][k][16]`, zero-padded columns (empty when `half` holds them).
    data: AVec,
    /// The same panels as IEEE half bits, when every weight is exactly a half
    /// ([`Packed::store_as_half`]): half the bytes to stream, the same values.
    half: Option<Vec<u16>>,
    /// Bias, zero-padded to whole panels.
    bias: AVec,
}

impl Packed {
    /// Packs a torch-layout conv weight `[n][cin][taps]` (row stride of the input
    /// rows = `cin`, tap `j` reading input row `j·dilation` of the window).
    pub(crate) fn conv(
        w: &[f32],
        bias: &[f32],
        n: usize,
        cin: usize,
        kernel: usize,
        dilation: usize,
    ) -> Packed {
        assert_eq!(w.len(), n * cin * kernel, "conv weight size");
        assert_eq!(bias.len(), n, "bias size");
        let k = cin * kernel;
        let np = n.div_ceil(PANEL);
        let mut data = AVec::zeros(np * k * PANEL);
        for o in 0..n {
            let (p, j) = (o / PANEL, o % PANEL);
            for ci in 0..cin {
                for tap in 0..kernel {
                    data[(p * k + tap * cin + ci) * PANEL + j] = w[(o * cin + ci) * kernel + tap];
                }
            }
        }
        let mut b = AVec::zeros(np * PANEL);
        b[..n].copy_from_slice(bias);
        let taps = (0..kernel).map(|j| j * dilation * cin).collect();
        Packed {
            k,
            n,
            cin,
            taps,
            data,
            half: None,
            bias: b,
        }
    }

    /// Stores the panels as IEEE half if every weight is exactly representable (as
    /// in NVIDIA's F16 GGUF): the kernels widen them to the same f32 values, so
    /// the results do not change by a bit, and a bandwidth-bound layer reads half
    /// the bytes. Otherwise nothing changes. Returns whether it converted.
    pub(crate) fn store_as_half(&mut self) -> bool {
        let exact = rill_kernels::all_exact_f16(&self.data);
        if exact {
            let bits = self.data.iter().map(|&v| half::f16::from_f32(v).to_bits());
            self.half = Some(bits.collect());
            self.data = AVec::zeros(0);
        }
        exact
    }

    /// Whether the panels are stored as half.
    pub(crate) fn is_half(&self) -> bool {
        self.half.is_some()
    }

    /// Input rows a window spans before its output row (`(kernel − 1)·dilation`).
    pub(crate) fn history_rows(&self) -> usize {
        self.taps.last().copied().unwrap_or(0) / self.cin.max(1)
    }
}

/// Whether `isa`'s kernels read half panels ([`Packed::store_as_half`]): the x86 tiers
/// (F16C / AVX-512F conversions). NEON and portable keep f32 panels.
pub(crate) fn reads_half_panels(isa: Isa) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        matches!(isa.tier(), Tier::Avx2 | Tier::Avx512)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        false
    }
}

/// One GEMM: output row `m` reads input from `in_base + m·in_stride` (+ taps) and
/// writes `out[out_base + m·out_stride ..][..n]`.
pub(crate) struct Job<'a> {
    pub w: &'a Packed,
    pub input: &'a [f32],
    pub in_base: usize,
    pub in_stride: usize,
    pub rows: usize,
    pub out_base: usize,
    pub out_stride: usize,
    pub epi: Epilogue<'a>,
}

impl Job<'_> {
    fn tasks(&self) -> usize {
        self.rows.div_ceil(BLOCK_M) * tiles(self.w.n)
    }

    /// Panics unless every read and write stays inside the buffers (a bug, not input).
    fn check_bounds(&self, out_len: usize) {
        if self.rows == 0 {
            return;
        }
        let last_in = self.in_base + (self.rows - 1) * self.in_stride;
        let max_tap = self.w.taps.iter().copied().max().unwrap_or(0);
        assert!(
            last_in + max_tap + self.w.cin <= self.input.len(),
            "conv job reads outside its input"
        );
        assert!(
            self.rows == 1 || self.out_stride >= self.w.n,
            "conv job rows overlap"
        );
        let last_out = self.out_base + (self.rows - 1) * self.out_stride;
        assert!(
            last_out + self.w.n <= out_len,
            "conv job writes outside its output"
        );
        if let Epilogue::Snake(p) = self.epi {
            assert_eq!(p.channels, self.w.n, "HalfSnake epilogue channel count");
        }
    }
}

/// The output pointer shared by the tasks of one [`gemm`] (or
/// [`half_snake_rows`]) call.
#[derive(Clone, Copy)]
struct OutPtr<'a> {
    ptr: *mut f32,
    _life: PhantomData<&'a mut [f32]>,
}
// SAFETY: the tasks of one call write disjoint (row block, column block) regions
// (or rows, for the HalfSnake) of their job's output (distinct rows map to distinct output offsets:
// `out_stride ≥ n`), and the jobs of one `gemm_many` call have distinct outputs
// (distinct `&mut` slices).
unsafe impl Send for OutPtr<'_> {}
unsafe impl Sync for OutPtr<'_> {}

impl<'a> OutPtr<'a> {
    fn new(out: &'a mut [f32]) -> Self {
        OutPtr {
            ptr: out.as_mut_ptr(),
            _life: PhantomData,
        }
    }

    fn null() -> Self {
        OutPtr {
            ptr: std::ptr::null_mut(),
            _life: PhantomData,
        }
    }

    /// The output element `offset` (a method, so closures capture the whole
    /// `Sync` wrapper rather than its raw-pointer field).
    ///
    /// # Safety
    /// `offset` lies inside the output.
    unsafe fn at(&self, offset: usize) -> *mut f32 {
        self.ptr.add(offset)
    }
}

/// Arguments of one task-sized micro-kernel call.
pub(crate) struct Tile<'a> {
    /// Input base pointer of each row.
    pub a: &'a [*const f32],
    /// Output pointer of each row at the tile's first column.
    pub c: &'a [*mut f32],
    pub taps: &'a [usize],
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
pub(crate) fn gemm(isa: Isa, job: &Job<'_>, out: &mut [f32], pool: &Pool) {
    gemm_many(isa, std::slice::from_ref(job), &mut [out], pool);
}

/// Most jobs of one [`gemm_many`] call: the 7 Winograd points and the direct rows
/// of 4 branch convolutions.
pub(crate) const MAX_JOBS: usize = 32;

/// Independent GEMMs, job `i` writing `outs[i]`, in one pool dispatch: fewer
/// synchronisations per frame and more tasks to share between threads.
pub(crate) fn gemm_many(isa: Isa, jobs: &[Job<'_>], outs: &mut [&mut [f32]], pool: &Pool) {
    assert!(
        jobs.len() == outs.len() && jobs.len() <= MAX_JOBS,
        "gemm_many job count"
    );
    let mut tasks = [0usize; MAX_JOBS];
    let mut ptrs = [OutPtr {
        ptr: std::ptr::null_mut(),
        _life: PhantomData,
    }; MAX_JOBS];
    for (i, (job, out)) in jobs.iter().zip(outs.iter_mut()).enumerate() {
        job.check_bounds(out.len());
        tasks[i] = job.tasks();
        ptrs[i].ptr = out.as_mut_ptr();
    }
    let total = tasks.iter().sum();
    pool.run(total, &|mut task| {
        let mut i = 0;
        while task >= tasks[i] {
            task -= tasks[i];
            i += 1;
        }
        run_task(isa, &jobs[i], task, ptrs[i]);
    });
}

fn run_task(isa: Isa, job: &Job<'_>, task: usize, out: OutPtr<'_>) {
    let w = job.w;
    assert!(
        w.half.is_none() || reads_half_panels(isa),
        "half panels given to a tier that reads f32 panels"
    );
    // Column tile major: the row blocks of one tile run back to back, so its
    // weights (≤ 3 panels) are read from memory once and then from cache.
    let row_blocks = job.rows.div_ceil(BLOCK_M);
    let (mb, cb) = (task % row_blocks, task / row_blocks);
    let r0 = mb * BLOCK_M;
    let r1 = (r0 + BLOCK_M).min(job.rows);
    let (p0, np) = tile_panels(w.n, cb);
    let c0 = p0 * PANEL;
    let ncols = (np * PANEL).min(w.n - c0);
    let mut a = [std::ptr::null::<f32>(); BLOCK_M];
    let mut c = [std::ptr::null_mut::<f32>(); BLOCK_M];
    for (i, m) in (r0..r1).enumerate() {
        a[i] = job.input[job.in_base + m * job.in_stride..].as_ptr();
        // SAFETY: `out_base + m·out_stride + c0 + ncols ≤ out.len()` by `check_bounds`.
        c[i] = unsafe { out.ptr.add(job.out_base + m * job.out_stride + c0) };
    }
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
        b: match w.half {
            None => w.data[(c0 / PANEL) * w.k * PANEL..].as_ptr(),
            Some(_) => std::ptr::null(),
        },
        b16: match &w.half {
            Some(h) => h[(c0 / PANEL) * w.k * PANEL..].as_ptr(),
            None => std::ptr::null(),
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
pub(crate) fn half_snake_rows(
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
    let out = OutPtr {
        ptr: dst.as_mut_ptr(),
        _life: PhantomData,
    };
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
