//! Implicit-GEMM convolution kernels of the two audio codecs: one kernel family
//! ([`gemm`](mod@gemm)) with one source file per SIMD tier, and what is particular to each codec.
//!
//! * [`gemm`](mod@gemm): the one [`Job`] (`out[row, n] = epi(bias[n] + Σ_tap Σ_ci
//!   in[row_base + tap + ci]·W[tap·cin + ci, n])`, weights packed in 16-column
//!   panels, every output element one FMA chain in a fixed order, so the results
//!   depend neither on the thread count nor on the number of rows of a call), the
//!   one [`Epilogue`] (store, accumulate, ELU, HalfSnake), the one tile driver and
//!   one micro-kernel per tier (portable, AVX2, AVX-512, NEON; plus the narrow-output
//!   dot-product kernels and NEON's fp16-arithmetic kernel), with each codec's
//!   measured task and register blocking as a [`Blocking`] of the call. Magpie's
//!   multi-row GEMM ([`crate::matmul`]) runs on the same micro-kernels.
//! * [`grid`]: MRT2's SpectroStream decoder (2-D convolutions over
//!   `[group][time][freq][channel]` grids with [`Blocking::Grid`], the ELU on its
//!   own, and the tile transforms of its Winograd convolutions).
//! * [`causal`]: NanoCodec (causal 1-D convolutions over `[time][channel]` rows with
//!   [`Blocking::Causal`], the HalfSnake on its own, and its Winograd F(4,4)
//!   residual convolutions).
//!
//! Shared here: the packed weights ([`Packed`], one type for both), the row
//! description of a job ([`RowMap`]), the panel width and packing ([`PANEL`],
//! [`pack_panels`], [`pad_to_panels`]), the split of a call's jobs into pool tasks
//! ([`run_jobs`]), the row blocking around the micro-kernels ([`by_row_groups`]) and
//! the `#[target_feature]` entry points of code written once for every x86 tier
//! ([`x86_entry_points`]); the disjoint output pointer of the tasks is
//! [`crate::DisjointOut`].

use crate::{AVec, Pool};

pub use gemm::{gemm, gemm_many, Blocking, Epilogue, Job, SnakeParams};
pub use packed::Packed;

pub mod causal;
pub mod gemm;
pub mod grid;
mod packed;
#[cfg(test)]
mod test_data;

/// Deterministic values in [-1, 1) (xorshift): the test inputs of the conv kernels'
/// tests here and of SpectroStream's (one definition, so both use the same values).
#[doc(hidden)]
pub fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Output columns per packed weight panel (one zmm, two ymm, four NEON registers).
pub const PANEL: usize = 16;

/// The output rows of a job, for both codecs' kernels: row `m` ↔ `(i0, i1, i2)` with `i2` fastest, and
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
    /// `rows` rows in a line, row `m` reading at `in_base + m·in_stride` and writing
    /// at `out_base + m·out_stride` (NanoCodec's 1-D jobs).
    pub fn strided(
        rows: usize,
        in_base: usize,
        in_stride: usize,
        out_base: usize,
        out_stride: usize,
    ) -> RowMap {
        RowMap {
            dims: [1, rows, 1],
            in_strides: [0, in_stride, 0],
            in_base,
            out_strides: [0, out_stride, 0],
            out_base,
        }
    }

    /// Rows of the map.
    pub fn rows(&self) -> usize {
        self.dims.iter().product()
    }

    /// Calls `f(input offset, output offset)` for each row of `rows`, in order; the
    /// row index is split into its three coordinates once, then stepped.
    #[inline]
    pub(crate) fn for_rows(&self, rows: std::ops::Range<usize>, mut f: impl FnMut(usize, usize)) {
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

    /// The input and output offsets of the last row (the largest).
    pub(crate) fn max_offsets(&self) -> (usize, usize) {
        let last = |d: [usize; 3], s: [usize; 3]| (0..3).map(|i| (d[i] - 1) * s[i]).sum::<usize>();
        (
            self.in_base + last(self.dims, self.in_strides),
            self.out_base + last(self.dims, self.out_strides),
        )
    }
}

/// Weights `w(kk, col)` of a `k × n` matrix packed in panels of [`PANEL`] columns,
/// `[n/16 panels][k][16]`, zero-padded: what the SIMD micro-kernels stream.
pub(crate) fn pack_panels(k: usize, n: usize, w: impl Fn(usize, usize) -> f32) -> AVec {
    let np = n.div_ceil(PANEL);
    let mut d = AVec::zeros(np * k * PANEL);
    for p in 0..np {
        for kk in 0..k {
            for j in 0..PANEL.min(n - p * PANEL) {
                d[(p * k + kk) * PANEL + j] = w(kk, p * PANEL + j);
            }
        }
    }
    d
}

/// `v` zero-padded to whole panels (biases, per-column parameters), so a panel's 16
/// values can always be loaded.
pub(crate) fn pad_to_panels(v: &[f32]) -> AVec {
    let mut b = AVec::zeros(v.len().div_ceil(PANEL) * PANEL);
    b[..v.len()].copy_from_slice(v);
    b
}

/// Runs `tasks[i]` tasks of each job `i` in one pool dispatch, as `f(i, task)` with
/// `task < tasks[i]` (jobs without tasks are skipped): fewer synchronisations per
/// frame and more tasks to share between threads. The split depends only on the
/// task counts, never on the thread count.
pub(crate) fn run_jobs(pool: &Pool, tasks: &[usize], f: &(dyn Fn(usize, usize) + Sync)) {
    let total = tasks.iter().sum();
    pool.run(total, &|mut task| {
        let mut i = 0;
        while task >= tasks[i] {
            task -= tasks[i];
            i += 1;
        }
        f(i, task);
    });
}

/// `#[target_feature]` entry points to code written once: modules `avx512`
/// (`avx512f`) and `avx2` (`avx2`) whose functions call the same-named functions of
/// module `$body` (generic, `#[inline(always)]` bodies), so each tier compiles the
/// bodies for its own vectors; the two modules differ only in the feature string.
/// Argument types resolve in the invoking module.
#[cfg(target_arch = "x86_64")]
macro_rules! x86_entry_points {
    ($body:ident { $($fns:tt)* }) => {
        $crate::conv::x86_entry_points!(@tier avx512, "avx512f", $body { $($fns)* });
        $crate::conv::x86_entry_points!(@tier avx2, "avx2", $body { $($fns)* });
    };
    (@tier $tier:ident, $feature:literal, $body:ident {
        $(fn $f:ident $(<$(const $g:ident: usize),+>)? ($($arg:ident: $ty:ty),* $(,)?);)*
    }) => {
        #[doc = concat!("The entry points compiled for `", $feature, "`.")]
        pub(super) mod $tier {
            #[allow(unused_imports)]
            use super::*;
            $(
                /// # Safety
                #[doc = concat!("The CPU supports `", $feature, "`, and the contract of `",
                    stringify!($body), "::", stringify!($f), "` holds.")]
                #[target_feature(enable = $feature)]
                #[allow(unused_unsafe)]
                pub(crate) unsafe fn $f $(<$(const $g: usize),+>)? ($($arg: $ty),*) {
                    // SAFETY: the caller's contract, passed on.
                    unsafe { $body::$f $(::<$($g),+>)? ($($arg),*) }
                }
            )*
        }
    };
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86_entry_points;

/// Runs a micro-kernel over the tile's rows in groups of `MR` (the last group
/// smaller), one instantiation per group size:
/// `by_row_groups!(t, [MR, MR − 1, …, 2], micro::<_, G…>(args…))` calls
/// `micro::<rows, G…>(t, a, c, args…)` with `a`, `c` the group's input and output row
/// pointers (`t.a`, `t.c` sliced; a group of 1 row takes the last arm).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! by_row_groups {
    (@call $micro:ident, $m:literal, [$($g:tt)*], $t:expr, $a:ident, $c:ident, ($($arg:expr),*)) => {
        $micro::<$m $($g)*>($t, $a, $c $(, $arg)*)
    };
    (@groups $t:expr, [$mr:literal $(, $m:literal)*], $micro:ident, $g:tt, $args:tt) => {{
        let rows = $t.a.len();
        let mut r = 0;
        while r < rows {
            let mr = $mr.min(rows - r);
            let (a, c) = (&$t.a[r..r + mr], &$t.c[r..r + mr]);
            match mr {
                $mr => $crate::conv::by_row_groups!(@call $micro, $mr, $g, $t, a, c, $args),
                $($m => $crate::conv::by_row_groups!(@call $micro, $m, $g, $t, a, c, $args),)*
                _ => $crate::conv::by_row_groups!(@call $micro, 1, $g, $t, a, c, $args),
            }
            r += mr;
        }
    }};
    ($t:expr, [$mr:literal $(, $m:literal)*], $micro:ident::<_ $(, $g:tt)*>($($arg:expr),*)) => {
        // The generic arguments after the row count travel as one token group, so
        // that every arm of `@groups` can repeat them.
        $crate::conv::by_row_groups!(
            @groups $t, [$mr $(, $m)*], $micro, [$(, $g)*], ($($arg),*)
        )
    };
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) use by_row_groups;
