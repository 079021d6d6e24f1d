//! SpectroStream's implicit-GEMM convolution kernels: `out[row, n] = epi(bias[n] + Σ_tap Σ_ci in[row_base + tap + ci]·W[tap·cin + ci, n])`.
//!
//! Every convolution of MRT2's SpectroStream decoder (1×1, 3×3, 7×7, and each stride
//! phase of a transposed convolution) is one or more [`Job`]s of this form: a set of
//! output rows given by an affine [`RowMap`] over (group, time, freq), each reading
//! `taps.len()` contiguous runs of `cin` input channels at fixed offsets from the
//! row's base.
//!
//! * Weights are packed once at load time ([`Packed`]): for `n ≥ 16` in panels of 16
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

use super::{pack_panels, pad_to_panels, run_jobs};
use crate::{AVec, DisjointOut, Isa, Pool, Tier};
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

pub use super::PANEL;
/// Columns per task.
pub const BLOCK_N: usize = 64;
/// Rows per task: 8 micro-kernel calls of 6 rows reuse the task's weight block from L2.
pub const BLOCK_M: usize = 48;
/// Products summed in half precision before the partial sum is added, in f32, to
/// the accumulator (fp16 arithmetic). Each half FMA rounds to 11 bits of the partial
/// sum, so the length trades fidelity for operations: on the C2 fixture under qemu
/// `-cpu max` (inputs scaled per task), 8 gave an audio cosine of 1 − 2.0e-5 against
/// the f32 codec and 44.0 dB, 16 gives 1 − 3.2e-5 and 41.9 dB (the bar is
/// 0.9999) with a third fewer vector operations (see `arm_fp16`).
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub const HALF_CHUNK: usize = 16;
/// Half arithmetic: the largest weight of a matrix is scaled into
/// `[2^(E−1), 2^E)` (exact, once at load).
const HALF_WEIGHT_MAX_LOG2: i32 = 3;
/// Half arithmetic: each task's inputs are scaled by a power of two so the largest
/// lies in `[2^(E−1), 2^E)` ([`half_input_log2`]), E chosen so a product stays
/// below 2^(E+3) (weights below 2^3) and a partial sum of [`HALF_CHUNK`] products
/// below 2^15, half of half's largest value (65504), whatever the checkpoint's
/// activations; and every task's inputs use the top of half's range, far from its
/// subnormals.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
const HALF_INPUT_MAX_LOG2: i32 = 15 - HALF_WEIGHT_MAX_LOG2 - HALF_CHUNK.ilog2() as i32;

/// The power of two `s` by which half arithmetic scales a task's inputs before
/// rounding them to half, for the task's largest input magnitude `max_abs`:
/// `max_abs · 2^s ∈ [2^(E−1), 2^E)` ([`HALF_INPUT_MAX_LOG2`]). 0 for zero or
/// non-finite `max_abs` (NaN and ∞ propagate as in f32); `s` is bounded so `2^s`
/// and `2^-s` stay normal f32 values.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub fn half_input_log2(max_abs: f32) -> i32 {
    if !(max_abs > 0.0 && max_abs.is_finite()) {
        return 0;
    }
    (HALF_INPUT_MAX_LOG2 - 1 - max_abs.log2().floor() as i32).clamp(-120, 120)
}

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

/// Weight layout of a [`Packed`] matrix.
#[derive(Debug, Clone, PartialEq)]
enum Layout {
    /// `[n/16 panels][k][16]`, zero-padded columns.
    Panels,
    /// `[n][k]` (narrow outputs).
    Rows,
}

/// The weights of one implicit GEMM, `k = taps.len()·cin` by `n`.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    pub k: usize,
    pub n: usize,
    pub cin: usize,
    /// Element offset of each tap's channel run relative to an output row's input base.
    pub taps: Vec<isize>,
    layout: Layout,
    data: AVec,
    /// The panels in a narrow format (same layout as `data`, which is then empty)
    /// on tiers with a kernel that widens it in registers.
    narrow: Option<Narrow>,
    /// Bias, zero-padded to a multiple of [`PANEL`].
    bias: AVec,
}

/// A two-byte weight format for the early, weight-bandwidth-bound layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlyWeights {
    F16,
    I16,
}

/// Weight panels stored in fewer bytes than f32, widened to f32 in the kernel.
#[derive(Debug, Clone, PartialEq)]
enum Narrow {
    /// IEEE half bits.
    F16(Vec<u16>),
    /// `w = q · scale[column]` with `q` int16 (±32767) and one scale per output
    /// channel; the kernels multiply `q` by the scale in f32 before the FMA, which
    /// gives exactly the dequantised f32 weights.
    I16 { q: Vec<i16>, scale: AVec },
    /// IEEE half bits of `w · 2^w_log2`, multiplied in half precision by the inputs
    /// times `2^s` (`s` from [`half_input_log2`] per task, rounded to half in the
    /// kernel); the f32 accumulator gets each partial sum times `2^-(w_log2 + s)`
    /// (see [`Packed::use_half_arithmetic`]).
    HalfMath { h: Vec<u16>, w_log2: i32 },
}

impl Packed {
    /// Packs `w`, given as `[taps][cin][n]` row-major (tap-major `k`), and `bias[n]`.
    pub fn new(w: &[f32], taps: Vec<isize>, cin: usize, n: usize, bias: &[f32]) -> Packed {
        let k = taps.len() * cin;
        assert_eq!(w.len(), k * n, "packed weight size");
        assert_eq!(bias.len(), n, "bias size");
        let (layout, data) = if n >= PANEL {
            (Layout::Panels, pack_panels(k, n, |kk, col| w[kk * n + col]))
        } else {
            let mut d = AVec::zeros(n * k);
            for kk in 0..k {
                for j in 0..n {
                    d[j * k + kk] = w[kk * n + j];
                }
            }
            (Layout::Rows, d)
        };
        Packed {
            k,
            n,
            cin,
            taps,
            layout,
            data,
            narrow: None,
            bias: pad_to_panels(bias),
        }
    }

    /// Stores the weights as `format` (f16 rounding or int16 quantisation).
    pub fn narrow_to(&mut self, format: EarlyWeights, isa: Isa) {
        match format {
            EarlyWeights::F16 => self.round_to_f16(isa),
            EarlyWeights::I16 => self.quantize_i16(isa),
        }
    }

    /// Rounds the weights to IEEE half precision (the bias stays f32). On tiers with an
    /// f16 panel kernel (AVX-512) the panels are stored as halves and widened in the
    /// kernel, halving the bytes streamed per use; elsewhere the rounded values are
    /// kept as f32, which computes the same products.
    pub fn round_to_f16(&mut self, isa: Isa) {
        for v in self.data.iter_mut() {
            *v = f16_to_f32(f32_to_f16(*v));
        }
        if has_narrow_kernel(isa, EarlyWeights::F16) && self.layout == Layout::Panels {
            self.narrow = Some(Narrow::F16(
                self.data.iter().map(|&v| f32_to_f16(v)).collect(),
            ));
            self.data = AVec::zeros(0);
        }
    }

    /// Quantises the weights to int16 with one scale per output channel
    /// (`max |w| / 32767`; ≈ 88 dB weight SNR for Gaussian weights, against ≈ 66 dB
    /// for f16, at the same two bytes per weight). Panel layouts on SIMD tiers store
    /// the int16 values and scale each column's sum once (the same bits on AVX2,
    /// AVX-512 and NEON); elsewhere the dequantised f32 weights, whose products
    /// round differently (within a few f32 ulps of the sum).
    pub fn quantize_i16(&mut self, isa: Isa) {
        let np = self.n.div_ceil(PANEL);
        let mut scale = AVec::zeros(np * PANEL);
        let col_of = |i: usize| match self.layout {
            Layout::Panels => (i / (self.k * PANEL)) * PANEL + i % PANEL,
            Layout::Rows => i / self.k,
        };
        for (i, &v) in self.data.iter().enumerate() {
            let c = col_of(i);
            scale[c] = scale[c].max(v.abs());
        }
        for s in scale.iter_mut() {
            *s = if *s > 0.0 { *s / 32767.0 } else { 1.0 };
        }
        let mut q = Vec::with_capacity(self.data.len());
        for (i, v) in self.data.iter_mut().enumerate() {
            let s = scale[col_of(i)];
            let qi = (*v / s).round().clamp(-32767.0, 32767.0) as i16;
            q.push(qi);
            *v = qi as f32 * s;
        }
        if has_narrow_kernel(isa, EarlyWeights::I16) && self.layout == Layout::Panels {
            self.narrow = Some(Narrow::I16 { q, scale });
            self.data = AVec::zeros(0);
        }
    }

    /// Computes this matrix in half precision where the CPU has FP16 arithmetic
    /// (NEON with `fp16`; elsewhere nothing changes and the f32 kernels run). The
    /// weights are scaled by a power of two so the largest has magnitude in `[4, 8)`
    /// ([`HALF_WEIGHT_MAX_LOG2`]; exact) and rounded to half; each task scales its
    /// inputs by the power of two its own largest input calls for
    /// ([`half_input_log2`]), so no checkpoint's activations can overflow a partial
    /// sum and small ones keep half's full precision. Both scales are undone exactly
    /// when a partial sum is added to the f32 accumulator.
    pub fn use_half_arithmetic(&mut self, isa: Isa) {
        if !isa.fp16() || self.layout != Layout::Panels || self.narrow.is_some() {
            return;
        }
        let w_max = self.data.iter().fold(0f32, |m, v| m.max(v.abs()));
        // 2^w_log2 · w_max ∈ [2^(E−1), 2^E), E = HALF_WEIGHT_MAX_LOG2.
        let w_log2 = if w_max > 0.0 && w_max.is_finite() {
            HALF_WEIGHT_MAX_LOG2 - (w_max.log2().floor() as i32) - 1
        } else {
            0
        };
        let w_scale = 2f32.powi(w_log2);
        let h = self.data.iter().map(|&v| f32_to_f16(v * w_scale)).collect();
        self.narrow = Some(Narrow::HalfMath { h, w_log2 });
        self.data = AVec::zeros(0);
    }

    /// Whether the kernels compute this matrix in half precision.
    pub fn half_arithmetic(&self) -> bool {
        matches!(self.narrow, Some(Narrow::HalfMath { .. }))
    }

    fn tap_range(&self) -> (isize, isize) {
        let lo = self.taps.iter().copied().min().unwrap_or(0);
        let hi = self.taps.iter().copied().max().unwrap_or(0);
        (lo, hi)
    }
}

/// Whether `isa` has a panel kernel that widens `format` in registers (elsewhere
/// the rounded or dequantised weights are kept as f32, which computes the same
/// products).
fn has_narrow_kernel(isa: Isa, format: EarlyWeights) -> bool {
    match isa.tier() {
        Tier::Avx2 | Tier::Avx512 => true,
        Tier::Neon => format == EarlyWeights::I16,
        Tier::Portable => false,
    }
}

/// Output rows of a job: row `m` ↔ `(i0, i1, i2)` with `i2` fastest, and
/// `input = in_base + Σ i·in_strides`, `output = out_base + Σ i·out_strides` (elements).
#[derive(Debug, Clone, Copy)]
pub struct RowMap {
    pub dims: [usize; 3],
    pub in_strides: [usize; 3],
    pub in_base: usize,
    pub out_strides: [usize; 3],
    pub out_base: usize,
}

impl RowMap {
    fn rows(&self) -> usize {
        self.dims.iter().product()
    }

    /// Calls `f(input offset, output offset)` for each row of `rows`, in order; the
    /// row index is split into its three coordinates once, then stepped.
    #[inline]
    fn for_rows(&self, rows: std::ops::Range<usize>, mut f: impl FnMut(usize, usize)) {
        let [d0, d1, d2] = self.dims;
        let m = rows.start;
        let (mut i0, mut i1, mut i2) = (m / (d2 * d1), (m / d2) % d1, m % d2);
        let [a0, a1, a2] = self.in_strides;
        let [b0, b1, b2] = self.out_strides;
        for _ in rows {
            debug_assert!(i0 < d0);
            f(
                self.in_base + i0 * a0 + i1 * a1 + i2 * a2,
                self.out_base + i0 * b0 + i1 * b1 + i2 * b2,
            );
            i2 += 1;
            if i2 == d2 {
                i2 = 0;
                i1 += 1;
                if i1 == d1 {
                    i1 = 0;
                    i0 += 1;
                }
            }
        }
    }

    fn max_offsets(&self) -> (usize, usize) {
        let last = |d: [usize; 3], s: [usize; 3]| (0..3).map(|i| (d[i] - 1) * s[i]).sum::<usize>();
        (
            self.in_base + last(self.dims, self.in_strides),
            self.out_base + last(self.dims, self.out_strides),
        )
    }
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

/// IEEE half bits of `v`, rounded to nearest even (what `vcvtps2ph` does with
/// round-to-nearest); overflow gives ±inf, NaN stays NaN.
pub fn f32_to_f16(v: f32) -> u16 {
    half::f16::from_f32(v).to_bits()
}

/// The f32 value of IEEE half bits `h` (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    half::f16::from_bits(h).to_f32()
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

#[cfg(test)]
mod tests;
