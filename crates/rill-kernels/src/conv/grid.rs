//! SpectroStream's implicit-GEMM convolution kernels: `out[row, n] = epi(bias[n] + Σ_tap Σ_ci in[row_base + tap + ci]·W[tap·cin + ci, n])`.
//!
//! Every convolution of MRT2's SpectroStream decoder (1×1, 3×3, 7×7, and each stride
//! phase of a transposed convolution) is one or more [`Job`]s of this form: a set of
//! output rows given by an affine [`RowMap`] over (group, time, freq), each reading
//! `taps.len()` contiguous runs of `cin` input channels at fixed offsets from the
//! row's base.
//!
//! * Weights are packed once at load time ([`Packed`], shared with the NanoCodec
//!   kernels): for `n ≥ 16` in panels of 16
//!   columns (`[panel][k][16]`, what the SIMD micro-kernels stream); for narrow
//!   outputs (`n < 16`, the 64→2 output conv) as `[n][k]` rows, computed as dot
//!   products so no lanes are wasted on padding.
//! * Work is split into tasks of at most [`BLOCK_M`] rows × [`BLOCK_N`] columns. The
//!   split depends only on the problem size and every output element is summed by
//!   one task in a fixed order (sequential over k, one FMA chain per element), so
//!   results are identical for any thread count and for any number of rows — the
//!   streaming step and the batched decoder produce the same bits.
//! * Micro-kernels: AVX-512 (6 rows × 64 columns, 24 zmm accumulators), AVX2
//!   (6 × 16), NEON (6 × 16), portable (4 × 16, auto-vectorised). The AVX2, AVX-512
//!   and NEON kernels use FMA in the same order and the same ELU polynomial, so they
//!   agree bit for bit; the portable path rounds products separately.
//! * fp16 arithmetic ([`Packed::use_half_arithmetic`], the fp16 codec on ARM CPUs
//!   with FP16): 4 rows × 16 columns of half-precision FMAs (8 lanes each), each
//!   partial sum of [`HALF_CHUNK`] products added into f32 accumulators.

use super::run_jobs;
pub use super::RowMap;
use crate::{DisjointOut, Isa, Pool, Tier};
#[cfg(target_arch = "x86_64")]
use simd::W_F16;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use simd::{W_F32, W_I16};

#[cfg(target_arch = "aarch64")]
mod arm_fp16;
#[cfg(target_arch = "aarch64")]
mod arm_neon;
mod portable;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod simd;
pub mod winograd;
#[cfg(target_arch = "x86_64")]
mod x86_avx2;
#[cfg(target_arch = "x86_64")]
mod x86_avx512;

pub use super::packed::{
    f16_to_f32, f32_to_f16, half_input_log2, EarlyWeights, Packed, HALF_CHUNK,
};
use super::packed::{has_narrow_kernel, Layout, Narrow};
pub use super::PANEL;
/// Columns per task.
pub const BLOCK_N: usize = 64;
/// Rows per task: 8 micro-kernel calls of 6 rows reuse the task's weight block from L2.
pub const BLOCK_M: usize = 48;
/// What happens to `bias + Σ` before it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Epilogue {
    /// `out = y`.
    Store,
    /// `out = elu(y)` (the next layer's pre-activation, fused).
    Elu,
    /// `out = out + y` (residual sum).
    Accumulate,
}

/// One implicit GEMM writing into the output buffer of a [`gemm`] call.
pub struct Job<'a> {
    pub w: &'a Packed,
    pub rows: RowMap,
    pub input: &'a [f32],
    pub epi: Epilogue,
}

impl Job<'_> {
    fn tasks(&self) -> usize {
        if self.rows.dims.contains(&0) {
            return 0;
        }
        self.rows.rows().div_ceil(BLOCK_M) * self.w.n.div_ceil(BLOCK_N)
    }

    /// Panics unless every read and write of the job stays inside its buffers.
    fn check_bounds(&self, out_len: usize) {
        if self.tasks() == 0 {
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
        assert!(
            omax + self.w.n <= out_len,
            "conv job writes outside its output ({out_len} floats)"
        );
    }
}

/// Arguments of one task-sized kernel call.
pub struct Tile<'a> {
    /// Input base pointer of each row.
    pub a: &'a [*const f32],
    /// Output pointer of each row, already offset to the tile's first column.
    pub c: &'a [*mut f32],
    pub taps: &'a [isize],
    pub cin: usize,
    /// Weights: the panel of the tile's first column (panels layout) or its first row (rows layout).
    pub b: *const f32,
    /// As `b` for f16 panels (then `b` is null); `b_stride` counts halves.
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
    /// Bias at the tile's first column, zero-padded to whole panels (so a panel's
    /// 16 values can always be loaded).
    pub bias: *const f32,
    pub epi: Epilogue,
}

/// Runs every job (all writing into `out`) over the pool.
pub fn gemm(isa: Isa, jobs: &[Job<'_>], out: &mut [f32], pool: &Pool) {
    for j in jobs {
        j.check_bounds(out.len());
    }
    assert!(
        jobs.len() <= MAX_JOBS,
        "{} jobs in one gemm call",
        jobs.len()
    );
    let mut tasks = [0usize; MAX_JOBS];
    for (t, j) in tasks.iter_mut().zip(jobs) {
        *t = j.tasks();
    }
    let optr = DisjointOut::new(out);
    run_jobs(pool, &tasks[..jobs.len()], &|ji, task| {
        run_task(isa, &jobs[ji], task, optr)
    });
}

/// Most jobs of one [`gemm`] call (the Winograd 3×3 convolution's 36 positions).
const MAX_JOBS: usize = 64;

fn run_task(isa: Isa, job: &Job<'_>, task: usize, out: DisjointOut<'_>) {
    let w = job.w;
    let nb = w.n.div_ceil(BLOCK_N);
    let (mb, cb) = (task / nb, task % nb);
    let r0 = mb * BLOCK_M;
    let r1 = (r0 + BLOCK_M).min(job.rows.rows());
    let c0 = cb * BLOCK_N;
    let ncols = BLOCK_N.min(w.n - c0);
    let mut a = [std::ptr::null::<f32>(); BLOCK_M];
    let mut c = [std::ptr::null_mut::<f32>(); BLOCK_M];
    let mut i = 0;
    job.rows.for_rows(r0..r1, |io, oo| {
        // In bounds: checked for the extreme rows in `check_bounds`.
        a[i] = job.input[io..].as_ptr();
        // SAFETY: `oo + c0 + ncols <= out.len()` by `check_bounds`; tasks write
        // disjoint (row, column-block) regions of the output: rows of one call map to
        // distinct output positions (each job covers its own rows, the stride phases
        // of a transposed convolution cover disjoint output positions) and column
        // blocks do not overlap.
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
    let panel0 = (c0 / PANEL) * w.k * PANEL;
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
        bias: w.bias[c0..].as_ptr(),
        epi: job.epi,
    };
    // SAFETY: all pointers were derived from bounds-checked buffers above; the ISA
    // tier is only selected when the CPU supports it (`rill_kernels::isa`).
    unsafe {
        match (isa.tier(), &w.layout) {
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, Layout::Panels) => match w.narrow {
                Some(Narrow::F16(_)) => x86_avx512::tile_w::<W_F16>(&tile),
                Some(Narrow::I16 { .. }) => x86_avx512::tile_w::<W_I16>(&tile),
                None => x86_avx512::tile_w::<W_F32>(&tile),
                Some(Narrow::HalfMath { .. }) => unreachable!("half arithmetic is NEON-only"),
            },
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, Layout::Rows) => x86_avx512::narrow(&tile),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, Layout::Rows) => x86_avx2::narrow(&tile),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, Layout::Panels) => match w.narrow {
                Some(Narrow::F16(_)) => x86_avx2::tile_w::<W_F16>(&tile),
                Some(Narrow::I16 { .. }) => x86_avx2::tile_w::<W_I16>(&tile),
                None => x86_avx2::tile_w::<W_F32>(&tile),
                Some(Narrow::HalfMath { .. }) => unreachable!("half arithmetic is NEON-only"),
            },
            #[cfg(target_arch = "aarch64")]
            (Tier::Neon, Layout::Rows) => arm_neon::narrow(&tile),
            #[cfg(target_arch = "aarch64")]
            (Tier::Neon, Layout::Panels) => match w.narrow {
                Some(Narrow::I16 { .. }) => arm_neon::tile_w::<W_I16>(&tile),
                Some(Narrow::HalfMath { .. }) => arm_fp16::tile(&tile),
                _ => arm_neon::tile_w::<W_F32>(&tile),
            },
            (_, Layout::Panels) => portable::tile(&tile),
            (_, Layout::Rows) => portable::narrow(&tile),
        }
    }
}

/// `dst[i] = elu(src[i])` with the same ELU as the fused epilogue of the kernels.
pub fn elu_copy(isa: Isa, src: &[f32], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len());
    // SAFETY: both slices hold `len` floats.
    unsafe { elu_raw(isa, src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

/// `x[i] = elu(x[i])` with the same ELU as the fused epilogue of the kernels.
pub fn elu_in_place(isa: Isa, x: &mut [f32]) {
    let p = x.as_mut_ptr();
    // SAFETY: `x` holds `len` floats; the backends read each element before writing it.
    unsafe { elu_raw(isa, p, p, x.len()) }
}

/// # Safety
/// `src`/`dst` valid for `n` floats (they may be equal).
unsafe fn elu_raw(isa: Isa, src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the tier is only selected when the CPU supports it.
            Tier::Avx512 => x86_avx512::elu_raw(src, dst, n),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Tier::Avx2 => x86_avx2::elu_raw(src, dst, n),
            #[cfg(target_arch = "aarch64")]
            // SAFETY: as above.
            Tier::Neon => arm_neon::elu_raw(src, dst, n),
            _ => portable::elu_raw(src, dst, n),
        }
    }
}

#[cfg(test)]
mod tests;
