//! The row blocking every SIMD panel kernel (AVX-512, AVX2, NEON) puts around its
//! micro-kernel, written once. The micro-kernels stay one per tier: their intrinsics
//! and register widths differ.

/// Runs a micro-kernel over the tile's rows in groups of `MR` (the last group
/// smaller), one instantiation per group size:
/// `by_row_groups!(t, [MR, MR − 1, …, 2], micro::<_, G…>(args…))` calls
/// `micro::<rows, G…>(t, a, c, args…)` with `a`, `c` the group's input and output row
/// pointers (a group of 1 row takes the last arm).
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
                $mr => $crate::kernels::simd::by_row_groups!(@call $micro, $mr, $g, $t, a, c, $args),
                $($m => $crate::kernels::simd::by_row_groups!(@call $micro, $m, $g, $t, a, c, $args),)*
                _ => $crate::kernels::simd::by_row_groups!(@call $micro, 1, $g, $t, a, c, $args),
            }
            r += mr;
        }
    }};
    ($t:expr, [$mr:literal $(, $m:literal)*], $micro:ident::<_ $(, $g:tt)*>($($arg:expr),*)) => {
        // The generic arguments after the row count travel as one token group, so
        // that every arm of `@groups` can repeat them.
        $crate::kernels::simd::by_row_groups!(
            @groups $t, [$mr $(, $m)*], $micro, [$(, $g)*], ($($arg),*)
        )
    };
}

pub(super) use by_row_groups;
