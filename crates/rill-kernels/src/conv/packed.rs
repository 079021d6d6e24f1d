//! The packed weights of one implicit GEMM, one type for both codecs' kernels
//! ([`super::grid`], [`super::causal`]): `k = taps.len()·cin` rows by `n` columns,
//! tap offsets as signed element offsets from an output row's input base, in f32
//! panels of [`PANEL`] columns (or `[n][k]` rows for SpectroStream's narrow output
//! convolution), optionally stored in a two-byte format (IEEE half, int16 with
//! per-column scales, or half arithmetic on NEON with FP16) that the kernels widen
//! in registers.

use super::{pack_panels, pad_to_panels, PANEL};
use crate::{AVec, Isa, Tier};

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

/// Weight layout of a [`Packed`] matrix.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Layout {
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
    pub(super) layout: Layout,
    pub(super) data: AVec,
    /// The panels in a narrow format (same layout as `data`, which is then empty)
    /// on tiers with a kernel that widens it in registers.
    pub(super) narrow: Option<Narrow>,
    /// Bias, zero-padded to a multiple of [`PANEL`].
    pub(super) bias: AVec,
}

/// A two-byte weight format for the early, weight-bandwidth-bound layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlyWeights {
    F16,
    I16,
}

/// Weight panels stored in fewer bytes than f32, widened to f32 in the kernel.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Narrow {
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

    /// Packs a torch-layout 1-D conv weight `[n][cin][kernel]` (NanoCodec; row
    /// stride of the input rows = `cin`, tap `j` reading input row `j·dilation` of
    /// the window) in panels, whatever `n`.
    pub fn conv(
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
        // Row `kk = tap·cin + ci` of the packed matrix.
        let data = pack_panels(k, n, |kk, o| w[(o * cin + kk % cin) * kernel + kk / cin]);
        let taps = (0..kernel).map(|j| (j * dilation * cin) as isize).collect();
        Packed {
            k,
            n,
            cin,
            taps,
            layout: Layout::Panels,
            data,
            narrow: None,
            bias: pad_to_panels(bias),
        }
    }

    /// Stores f32 panels as IEEE half if every weight is exactly representable (as
    /// in NVIDIA's F16 GGUF): the kernels that read half panels
    /// ([`reads_half_panels`]) widen them to the same f32 values, so the results do
    /// not change by a bit, and a bandwidth-bound layer reads half the bytes.
    /// Otherwise nothing changes. Returns whether it converted.
    pub fn store_as_half(&mut self) -> bool {
        let exact = self.layout == Layout::Panels
            && self.narrow.is_none()
            && crate::all_exact_f16(&self.data);
        if exact {
            self.narrow = Some(Narrow::F16(
                self.data.iter().map(|&v| f32_to_f16(v)).collect(),
            ));
            self.data = AVec::zeros(0);
        }
        exact
    }

    /// Whether the panels are stored as IEEE half.
    pub fn is_half(&self) -> bool {
        matches!(self.narrow, Some(Narrow::F16(_)))
    }

    /// Input rows a causal window spans before its output row (`(kernel − 1)·dilation`
    /// for [`Packed::conv`]).
    pub fn history_rows(&self) -> usize {
        self.taps.last().map_or(0, |&t| t.max(0) as usize) / self.cin.max(1)
    }

    /// Whether the kernels compute this matrix in half precision.
    pub fn half_arithmetic(&self) -> bool {
        matches!(self.narrow, Some(Narrow::HalfMath { .. }))
    }

    pub(super) fn tap_range(&self) -> (isize, isize) {
        let lo = self.taps.iter().copied().min().unwrap_or(0);
        let hi = self.taps.iter().copied().max().unwrap_or(0);
        (lo, hi)
    }
}

/// Whether `isa` has a panel kernel that widens `format` in registers (elsewhere
/// the rounded or dequantised weights are kept as f32, which computes the same
/// products).
pub(super) fn has_narrow_kernel(isa: Isa, format: EarlyWeights) -> bool {
    match isa.tier() {
        Tier::Avx2 | Tier::Avx512 => true,
        Tier::Neon => format == EarlyWeights::I16,
        Tier::Portable => false,
    }
}

/// Whether `isa`'s kernels read half panels ([`Packed::store_as_half`]): the x86
/// tiers (F16C / AVX-512F conversions). NEON and portable keep f32 panels.
pub fn reads_half_panels(isa: Isa) -> bool {
    has_narrow_kernel(isa, EarlyWeights::F16)
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
