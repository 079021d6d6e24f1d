//! The tile bodies of [`super::tiles`] compiled per SIMD tier, and the dispatch to them.
//!
//! Each x86 tier gets a module of `#[target_feature]` entry points around the same
//! generic bodies, so their 16-lane operations become that tier's vector instructions;
//! the operations, and so the bits, are the same on every tier. The other tiers (NEON,
//! portable) call the bodies as compiled for the crate's target, through [`generic`].

/// The tile bodies as compiled for the crate's target (NEON, portable).
pub(super) use super::tiles as generic;

/// A module `$tier` of `#[target_feature(enable = $feature)]` entry points to the tile
/// bodies; the AVX2 and AVX-512 modules differ only in the feature string.
macro_rules! tier_entry_points {
    ($tier:ident, $feature:literal) => {
        #[doc = concat!("The tile bodies compiled for `", $feature, "`.")]
        #[cfg(target_arch = "x86_64")]
        pub(super) mod $tier {
            use super::super::tiles::{self, ColArgs, InArgs, OutArgs};
            use crate::kernels::Epilogue;

            /// # Safety
            #[doc = concat!("The CPU supports `", $feature, "`; see [`tiles::input_tile`].")]
            #[target_feature(enable = $feature)]
            pub(in crate::winograd) unsafe fn input_tile<const MT: usize, const MF: usize>(
                a: InArgs,
            ) {
                tiles::input_tile::<MT, MF>(a)
            }

            /// # Safety
            #[doc = concat!("The CPU supports `", $feature, "`; see [`tiles::output_tile`].")]
            #[target_feature(enable = $feature)]
            pub(in crate::winograd) unsafe fn output_tile<const MT: usize, const MF: usize>(
                a: &OutArgs,
            ) {
                tiles::output_tile::<MT, MF>(a)
            }

            /// # Safety
            #[doc = concat!("The CPU supports `", $feature, "`; see [`tiles::col_in`].")]
            #[target_feature(enable = $feature)]
            pub(in crate::winograd) unsafe fn col_in<const MT: usize>(
                s: *const f32,
                d: *mut f32,
                a: &ColArgs,
            ) {
                tiles::col_in::<MT>(s, d, a)
            }

            /// # Safety
            #[doc = concat!("The CPU supports `", $feature, "`; see [`tiles::col_out`].")]
            #[target_feature(enable = $feature)]
            pub(in crate::winograd) unsafe fn col_out<const MT: usize>(
                s: *const f32,
                d: *mut f32,
                a: &ColArgs,
                b: *const f32,
                e: Epilogue,
            ) {
                tiles::col_out::<MT>(s, d, a, b, e)
            }
        }
    };
}

tier_entry_points!(avx512, "avx512f");
tier_entry_points!(avx2, "avx2");

/// Calls tile body `$f($args…)` for `$isa`'s tier and the tile size: `[mt, mf]` for
/// the 2-D transforms, `[mt]` for the time-only ones (each 2 or 4).
macro_rules! dispatch {
    ($isa:expr, $size:tt, $f:ident $args:tt) => {
        match $isa.tier() {
            #[cfg(target_arch = "x86_64")]
            rill_kernels::Tier::Avx512 => {
                $crate::winograd::tier::by_tile_size!(avx512, $f, $size, $args)
            }
            #[cfg(target_arch = "x86_64")]
            rill_kernels::Tier::Avx2 => {
                $crate::winograd::tier::by_tile_size!(avx2, $f, $size, $args)
            }
            _ => $crate::winograd::tier::by_tile_size!(generic, $f, $size, $args),
        }
    };
}

/// `$tier::$f::<sizes>($args…)`: one instantiation per supported tile size.
macro_rules! by_tile_size {
    ($tier:ident, $f:ident, [$mt:expr, $mf:expr], ($($arg:expr),*)) => {
        match ($mt, $mf) {
            (4, 4) => $crate::winograd::tier::$tier::$f::<4, 4>($($arg),*),
            (4, 2) => $crate::winograd::tier::$tier::$f::<4, 2>($($arg),*),
            (2, 4) => $crate::winograd::tier::$tier::$f::<2, 4>($($arg),*),
            _ => $crate::winograd::tier::$tier::$f::<2, 2>($($arg),*),
        }
    };
    ($tier:ident, $f:ident, [$mt:expr], ($($arg:expr),*)) => {
        match $mt {
            4 => $crate::winograd::tier::$tier::$f::<4>($($arg),*),
            _ => $crate::winograd::tier::$tier::$f::<2>($($arg),*),
        }
    };
}

pub(super) use {by_tile_size, dispatch};
