//! Element-wise passes between convolutions: the pre-activation ELU copied into the
//! next convolution's input grid, and the nearest-neighbour upsampled shortcut added
//! to a residual block's output. Both split over (group, time row) tasks.

use rill_kernels::{Isa, Pool};

use crate::grid::Grid;
use crate::kernels::elu_copy;
use crate::numerics::elu_scaled_in_place;

/// A raw pointer to a grid's data shared by tasks that write disjoint rows.
#[derive(Clone, Copy)]
struct RowsPtr(*mut f32);
// SAFETY: each task writes only the (group, time row) region it was given, and no
// two tasks are given the same region.
unsafe impl Send for RowsPtr {}
unsafe impl Sync for RowsPtr {}

impl RowsPtr {
    /// Taking `self` makes closures capture the whole (Sync) wrapper, not the raw field.
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// Runs `task(g, row, out_row)` on `pool` for each of the `t` current rows of every
/// group `g` of `dst`, `out_row` being that row of `dst`'s interior (`f · c` values),
/// one task a row.
pub(crate) fn for_each_row(
    dst: &mut Grid,
    t: usize,
    pool: &Pool,
    task: &(dyn Fn(usize, usize, &mut [f32]) + Sync),
) {
    let d = dst.shape;
    let out_len = dst.data.len();
    let out = RowsPtr(dst.data.as_mut_ptr());
    pool.run(d.groups * t, &|i| {
        let (g, row) = (i / t, i % t);
        let o = d.interior(g, row, 0);
        assert!(o + d.f * d.c <= out_len);
        // SAFETY: rows (g, row) are disjoint between tasks; the range is in bounds.
        let out_row = unsafe { std::slice::from_raw_parts_mut(out.get().add(o), d.f * d.c) };
        task(g, row, out_row);
    });
}

/// `dst[g, t, f, :] = elu(src[g, t, f, :])` for the `t` current rows; with an
/// activation scale `s ≠ 1` the scaled ELU `elu(x/s)·s` (see `numerics`).
///
/// If `src` has one group and `dst` several, `src`'s channels are split into
/// contiguous blocks, block `g` → group `g` (ParallelChannels, spec §4.2 row 5).
pub(crate) fn elu_into(isa: Isa, src: &Grid, dst: &mut Grid, t: usize, scale: f32, pool: &Pool) {
    let (s, d) = (src.shape, dst.shape);
    let split = s.groups != d.groups;
    assert!(
        s.f == d.f && t <= s.max_t && t <= d.max_t,
        "elu_into shapes"
    );
    assert!(
        if split {
            s.groups == 1 && s.c == d.c * d.groups
        } else {
            s.c == d.c
        },
        "elu_into channel split"
    );
    for_each_row(dst, t, pool, &|g, row, out_row| {
        let elu = |from: &[f32], to: &mut [f32]| {
            if scale == 1.0 {
                elu_copy(isa, from, to);
            } else {
                to.copy_from_slice(from);
                elu_scaled_in_place(isa, to, scale);
            }
        };
        if split {
            for (f, chunk) in out_row.chunks_exact_mut(d.c).enumerate() {
                let i = src.interior(0, row, f) + g * d.c;
                elu(&src.data[i..i + d.c], chunk);
            }
        } else {
            let i = src.interior(g, row, 0);
            elu(&src.data[i..i + d.f * d.c], out_row);
        }
    });
}

/// `dst[g, t, f, :] += src[g, t / rt, f / rf, :]` for the `t` current rows of `dst`
/// (residual sum with an `Upsample2D` shortcut; `body + shortcut`).
pub(crate) fn upsample_add(
    src: &Grid,
    [rt, rf]: [usize; 2],
    dst: &mut Grid,
    t: usize,
    pool: &Pool,
) {
    let (s, d) = (src.shape, dst.shape);
    assert!(
        s.groups == d.groups
            && s.c == d.c
            && s.f * rf == d.f
            && t.div_ceil(rt) <= s.max_t
            && t <= d.max_t,
        "upsample_add shapes"
    );
    for_each_row(dst, t, pool, &|g, row, out_row| {
        for (f, chunk) in out_row.chunks_exact_mut(d.c).enumerate() {
            let i = src.interior(g, row / rt, f / rf);
            for (y, x) in chunk.iter_mut().zip(&src.data[i..i + d.c]) {
                *y += x;
            }
        }
    });
}
