//! What the SIMD panel kernels (AVX-512, AVX2, NEON) share: the weight-format tags of
//! their `tile_w::<W>`, the row blocking around their micro-kernels and the x86
//! kernels' weight prefetch. The kernels themselves stay one per tier: their
//! intrinsics and register widths differ.

/// Weight format of `tile_w::<W>`: f32 panels.
pub(super) const W_F32: u8 = 0;
/// Weight format of `tile_w::<W>`: IEEE half panels, widened with `vcvtph2ps`
/// (exact; x86 only, NEON is given f32 panels).
#[cfg(target_arch = "x86_64")]
pub(super) const W_F16: u8 = 1;
/// Weight format of `tile_w::<W>`: int16 panels, widened exactly to f32 in the
/// FMA chain, each column's sum multiplied once by its scale (one multiply per
/// output instead of one per weight).
pub(super) const W_I16: u8 = 2;

/// How far ahead (bytes) the x86 panel kernels (AVX2, AVX-512: one stream per
/// 16-column panel) prefetch their weights. A task's first row group reads each
/// weight panel from L3 or DRAM (the early layers' two-byte weights
/// stream from DRAM once per frame for a handful of rows; the Winograd products'
/// panels are re-read only by the task's later row groups), and one sequential stream
/// did not keep enough misses in flight on its own. Zen 3, alternated runs: the
/// int16 early layers ≈ 10 % faster, the f32 Winograd layers ≈ 4 %; of 1, 1.5, 2 and
/// 4 KB ahead, 1.5–2 KB did best. Intel Xeon (AVX-512 kernel): the int16 codec on
/// one thread 21.9–22.9 → 20.4–20.5 ms; 1 and 4 KB did as well as 2 KB.
#[cfg(target_arch = "x86_64")]
const PREFETCH_BYTES: usize = 2048;

/// Prefetches the line [`PREFETCH_BYTES`] past `p` ([`rill_kernels::simd::prefetch_ahead`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn prefetch_ahead<T>(p: *const T) {
    rill_kernels::simd::prefetch_ahead(p as *const u8, PREFETCH_BYTES);
}

/// Rows per micro-kernel call on every SIMD tier (the arms of [`by_row_groups`]).
pub(super) const MR: usize = 6;
const _: () = assert!(MR == 6, "by_row_groups has one arm per group size up to 6");

/// Runs a micro-kernel over the tile's rows in groups of [`MR`] (the last group
/// smaller), one instantiation per group size:
/// `by_row_groups!(t, micro::<_, G…>(args…))` calls `micro::<rows, G…>(t, a, c, args…)`
/// with `a`, `c` the group's input and output row pointers.
macro_rules! by_row_groups {
    ($t:expr, $micro:ident::<_ $(, $g:tt)*>($($arg:expr),*)) => {{
        let rows = $t.a.len();
        let mut r = 0;
        while r < rows {
            let mr = $crate::kernels::simd::MR.min(rows - r);
            let (a, c) = (&$t.a[r..r + mr], &$t.c[r..r + mr]);
            match mr {
                6 => $micro::<6 $(, $g)*>($t, a, c $(, $arg)*),
                5 => $micro::<5 $(, $g)*>($t, a, c $(, $arg)*),
                4 => $micro::<4 $(, $g)*>($t, a, c $(, $arg)*),
                3 => $micro::<3 $(, $g)*>($t, a, c $(, $arg)*),
                2 => $micro::<2 $(, $g)*>($t, a, c $(, $arg)*),
                _ => $micro::<1 $(, $g)*>($t, a, c $(, $arg)*),
            }
            r += mr;
        }
    }};
}

pub(super) use by_row_groups;
