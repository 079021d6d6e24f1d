//! The tile transform bodies, generic over the tile size and written once: `#[inline(always)]`
//! so that each per-tier entry point in [`super::tier`] compiles them for its own vectors.
//!
//! * [`input_tile`] / [`output_tile`]: the 2-D transforms of the Winograd 3×3
//!   convolution;
//! * [`col_in`] / [`col_out`]: the time-only transforms of the Winograd transposed
//!   convolution (freq stride phases).

use super::transform::{at, bt, V};
use super::L;
use crate::conv::grid::Epilogue;

/// Arguments of an input-tile transform.
pub struct InArgs {
    /// The tile's first grid element (row `ti·mt`, column `tf·mf`).
    pub src: *const f32,
    pub row_stride: usize,
    /// Elements between neighbouring freq columns of the grid.
    pub col_stride: usize,
    /// Columns of the tile inside the grid; those at or past it read as zero.
    pub valid_cols: usize,
    pub cin: usize,
    /// `V`, `[tiles][ξ][cin]`.
    pub v: *mut f32,
    pub tile: usize,
}

/// Arguments of an output-tile transform.
pub struct OutArgs<'a> {
    /// Output position of the tile's first row and column.
    pub dst: *mut f32,
    pub row_stride: usize,
    /// Valid freq columns of the tile.
    pub ncols: usize,
    pub cout: usize,
    /// `M`, `[tiles][ξ][cout]`.
    pub m: *const f32,
    pub tile: usize,
    pub bias: *const f32,
    /// `Accumulate` adds to the output; every other epilogue stores (the caller
    /// applies the ELU afterwards).
    pub epi: Epilogue<'a>,
}

/// One column of a time-only transform: `c` channels at `src + k·src_stride` in,
/// at `dst + k·dst_stride` out (element offsets).
pub struct ColArgs {
    pub src: usize,
    pub src_stride: usize,
    pub dst: usize,
    pub dst_stride: usize,
    pub c: usize,
}

/// Transforms one input tile, `V = Bᵀ_t d B_f`.
///
/// # Safety
/// `src` valid for the tile's `(MT+2) × min(MF+2, valid_cols)` channel runs of `cin`,
/// `v` for `α_t·α_f·tiles·cin` floats.
#[inline(always)]
pub(super) unsafe fn input_tile<const MT: usize, const MF: usize>(
    InArgs {
        src,
        row_stride,
        col_stride,
        valid_cols,
        cin,
        v,
        tile,
    }: InArgs,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let (alpha_t, alpha_f) = (MT + 2, MF + 2);
        let mut d = [[V::zero(); 6]; 6];
        let mut rowt = [[V::zero(); 6]; 6];
        let mut col = [V::zero(); 6];
        let mut res = [V::zero(); 6];
        for c0 in (0..cin).step_by(L) {
            for a in 0..alpha_t {
                for b in 0..alpha_f {
                    d[a][b] = if b < valid_cols {
                        V::load(src.add(a * row_stride + b * col_stride + c0))
                    } else {
                        V::zero()
                    };
                }
                bt::<MF>(&d[a][..alpha_f], &mut rowt[a][..alpha_f]);
            }
            for j in 0..alpha_f {
                for a in 0..alpha_t {
                    col[a] = rowt[a][j];
                }
                bt::<MT>(&col[..alpha_t], &mut res[..alpha_t]);
                for (i, r) in res[..alpha_t].iter().enumerate() {
                    r.store(v.add((tile * alpha_t * alpha_f + i * alpha_f + j) * cin + c0));
                }
            }
        }
    }
}

/// Transforms one output tile, `Y = Aᵀ_t M A_f`, adds the bias and applies
/// Store/Accumulate (the ELU is applied afterwards, in place, by the caller).
///
/// # Safety
/// `a.dst` valid for `MT` rows of `a.ncols·cout` floats, `a.m` for the tile's
/// `α_t·α_f` rows of `cout`.
#[inline(always)]
pub(super) unsafe fn output_tile<const MT: usize, const MF: usize>(a: &OutArgs) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let (alpha_t, alpha_f) = (MT + 2, MF + 2);
        let mut mv = [V::zero(); 6];
        let mut rowt = [[V::zero(); 4]; 6];
        let mut col = [V::zero(); 6];
        let mut y = [V::zero(); 4];
        for c0 in (0..a.cout).step_by(L) {
            let bias = V::load(a.bias.add(c0));
            for i in 0..alpha_t {
                for j in 0..alpha_f {
                    let xi = a.tile * alpha_t * alpha_f + i * alpha_f + j;
                    mv[j] = V::load(a.m.add(xi * a.cout + c0));
                }
                at::<MF>(&mv[..alpha_f], &mut rowt[i][..MF]);
            }
            for c in 0..a.ncols {
                for i in 0..alpha_t {
                    col[i] = rowt[i][c];
                }
                at::<MT>(&col[..alpha_t], &mut y[..MT]);
                for (r, yv) in y[..MT].iter().enumerate() {
                    let dst = a.dst.add(r * a.row_stride + c * a.cout + c0);
                    let val = *yv + bias;
                    match a.epi {
                        Epilogue::Accumulate => (V::load(dst) + val).store(dst),
                        _ => val.store(dst),
                    }
                }
            }
        }
    }
}

/// `V[ξ] = (Bᵀ d)[ξ]` along time for one column.
///
/// # Safety
/// `src`/`dst` valid at the offsets `a` describes.
#[inline(always)]
pub(super) unsafe fn col_in<const MT: usize>(src: *const f32, dst: *mut f32, a: &ColArgs) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut d = [V::zero(); 6];
        let mut v = [V::zero(); 6];
        for c0 in (0..a.c).step_by(L) {
            for (k, dk) in d[..MT + 2].iter_mut().enumerate() {
                *dk = V::load(src.add(a.src + k * a.src_stride + c0));
            }
            bt::<MT>(&d[..MT + 2], &mut v[..MT + 2]);
            for (k, vk) in v[..MT + 2].iter().enumerate() {
                vk.store(dst.add(a.dst + k * a.dst_stride + c0));
            }
        }
    }
}

/// `y = Aᵀ M + bias` along time for one output column, Store/Accumulate (the ELU
/// is applied afterwards by the caller).
///
/// # Safety
/// `src`/`dst` valid at the offsets `a` describes, `bias` for `a.c` floats.
#[inline(always)]
pub(super) unsafe fn col_out<const MT: usize>(
    src: *const f32,
    dst: *mut f32,
    a: &ColArgs,
    bias: *const f32,
    epi: Epilogue<'_>,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let mut mv = [V::zero(); 6];
        let mut y = [V::zero(); 4];
        for c0 in (0..a.c).step_by(L) {
            for (k, mk) in mv[..MT + 2].iter_mut().enumerate() {
                *mk = V::load(src.add(a.src + k * a.src_stride + c0));
            }
            at::<MT>(&mv[..MT + 2], &mut y[..MT]);
            let b = V::load(bias.add(c0));
            for (r, yr) in y[..MT].iter().enumerate() {
                let p = dst.add(a.dst + r * a.dst_stride + c0);
                let val = *yr + b;
                match epi {
                    Epilogue::Accumulate => (V::load(p) + val).store(p),
                    _ => val.store(p),
                }
            }
        }
    }
}
