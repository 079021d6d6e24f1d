//! The tile bodies of [`super::tiles`] compiled per SIMD tier, and the dispatch to them.
//!
//! Each x86 tier gets a module of `#[target_feature]` entry points around the same
//! generic bodies ([`crate::conv::x86_entry_points`]), so their 16-lane operations become that tier's vector instructions;
//! the operations, and so the bits, are the same on every tier. The other tiers (NEON,
//! portable) call the bodies as compiled for the crate's target, through [`generic`].

/// The tile bodies as compiled for the crate's target (NEON, portable).
pub(super) use super::tiles as generic;

#[cfg(target_arch = "x86_64")]
use super::tiles::{ColArgs, InArgs, OutArgs};
#[cfg(target_arch = "x86_64")]
use crate::conv::grid::Epilogue;

#[cfg(target_arch = "x86_64")]
crate::conv::x86_entry_points!(generic {
    fn input_tile<const MT: usize, const MF: usize>(a: InArgs);
    fn output_tile<const MT: usize, const MF: usize>(a: &OutArgs);
    fn col_in<const MT: usize>(s: *const f32, d: *mut f32, a: &ColArgs);
    fn col_out<const MT: usize>(s: *const f32, d: *mut f32, a: &ColArgs, b: *const f32, e: Epilogue);
});

/// Calls tile body `$f($args…)` for `$isa`'s tier and the tile size: `[mt, mf]` for
/// the 2-D transforms, `[mt]` for the time-only ones (each 2 or 4).
macro_rules! dispatch {
    ($isa:expr, $size:tt, $f:ident $args:tt) => {
        match $isa.tier() {
            #[cfg(target_arch = "x86_64")]
            $crate::Tier::Avx512 => {
                $crate::conv::grid::winograd::tier::by_tile_size!(avx512, $f, $size, $args)
            }
            #[cfg(target_arch = "x86_64")]
            $crate::Tier::Avx2 => {
                $crate::conv::grid::winograd::tier::by_tile_size!(avx2, $f, $size, $args)
            }
            _ => $crate::conv::grid::winograd::tier::by_tile_size!(generic, $f, $size, $args),
        }
    };
}

/// `$tier::$f::<sizes>($args…)`: one instantiation per supported tile size.
macro_rules! by_tile_size {
    ($tier:ident, $f:ident, [$mt:expr, $mf:expr], ($($arg:expr),*)) => {
        match ($mt, $mf) {
            (4, 4) => $crate::conv::grid::winograd::tier::$tier::$f::<4, 4>($($arg),*),
            (4, 2) => $crate::conv::grid::winograd::tier::$tier::$f::<4, 2>($($arg),*),
            (2, 4) => $crate::conv::grid::winograd::tier::$tier::$f::<2, 4>($($arg),*),
            _ => $crate::conv::grid::winograd::tier::$tier::$f::<2, 2>($($arg),*),
        }
    };
    ($tier:ident, $f:ident, [$mt:expr], ($($arg:expr),*)) => {
        match $mt {
            4 => $crate::conv::grid::winograd::tier::$tier::$f::<4>($($arg),*),
            _ => $crate::conv::grid::winograd::tier::$tier::$f::<2>($($arg),*),
        }
    };
}

pub(super) use {by_tile_size, dispatch};
