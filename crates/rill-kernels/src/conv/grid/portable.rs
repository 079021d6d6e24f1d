//! Portable micro-kernels (4 rows × 16 columns), written so the compiler can
//! auto-vectorise the 16-lane inner loops for any target.

use super::{Epilogue, Tile, PANEL};

const MR: usize = 4;

/// ELU as the reference writes it: `where(x > 0, x, exp(x) − 1)`.
#[inline]
pub(super) fn elu(x: f32) -> f32 {
    if x > 0.0 {
        x
    } else {
        x.exp() - 1.0
    }
}

/// `dst[i] = elu(src[i])` for `i < n`; `src` may equal `dst` (in place).
///
/// # Safety
/// `src`/`dst` valid for `n` floats.
pub(super) unsafe fn elu_raw(src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for i in 0..n {
            *dst.add(i) = elu(*src.add(i));
        }
    }
}

#[inline]
fn finish(y: f32, dst: &mut f32, epi: Epilogue) {
    *dst = match epi {
        Epilogue::Store => y,
        Epilogue::Elu => elu(y),
        Epilogue::Accumulate => *dst + y,
    };
}

/// # Safety
/// Every pointer of `t` must be valid for the reads/writes the tile describes.
pub(super) unsafe fn tile(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let rows = t.a.len();
        for p in 0..t.ncols.div_ceil(PANEL) {
            let nvalid = PANEL.min(t.ncols - p * PANEL);
            let b = t.b.add(p * t.b_stride);
            let bias = t.bias.add(p * PANEL);
            let mut r = 0;
            while r < rows {
                let mr = MR.min(rows - r);
                let mut acc = [[0f32; PANEL]; MR];
                let mut bp = b;
                for &off in t.taps {
                    for ci in 0..t.cin {
                        let bv = std::slice::from_raw_parts(bp, PANEL);
                        for (m, accm) in acc.iter_mut().enumerate().take(mr) {
                            let av = *t.a[r + m].offset(off).add(ci);
                            for l in 0..PANEL {
                                accm[l] += av * bv[l];
                            }
                        }
                        bp = bp.add(PANEL);
                    }
                }
                for (m, accm) in acc.iter().enumerate().take(mr) {
                    let c = t.c[r + m].add(p * PANEL);
                    for (l, &v) in accm.iter().enumerate().take(nvalid) {
                        finish(v + *bias.add(l), &mut *c.add(l), t.epi);
                    }
                }
                r += mr;
            }
        }
    }
}

/// Narrow outputs (`ncols < 16`): one 16-lane dot product per (row, column).
///
/// # Safety
/// As [`tile`]; `t.b` points at `ncols` weight rows of `k` floats.
pub(super) unsafe fn narrow(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for (r, &a) in t.a.iter().enumerate() {
            for j in 0..t.ncols {
                let w = t.b.add(j * t.b_stride);
                let mut acc = [0f32; PANEL];
                let mut tail = 0f32;
                let full = t.cin / PANEL * PANEL;
                for (ti, &off) in t.taps.iter().enumerate() {
                    let x = std::slice::from_raw_parts(a.offset(off), t.cin);
                    let wk = std::slice::from_raw_parts(w.add(ti * t.cin), t.cin);
                    for (xc, wc) in x[..full]
                        .chunks_exact(PANEL)
                        .zip(wk[..full].chunks_exact(PANEL))
                    {
                        for l in 0..PANEL {
                            acc[l] += xc[l] * wc[l];
                        }
                    }
                    for (xv, wv) in x[full..].iter().zip(&wk[full..]) {
                        tail += xv * wv;
                    }
                }
                let y = reduce16(&acc) + tail + *t.bias.add(j);
                finish(y, &mut *t.c[r].add(j), t.epi);
            }
        }
    }
}

/// Pairwise sum of 16 lanes in the order the SIMD kernels reduce them.
#[inline]
pub(super) fn reduce16(v: &[f32; PANEL]) -> f32 {
    let mut s8 = [0f32; 8];
    for l in 0..8 {
        s8[l] = v[l] + v[l + 8];
    }
    let mut s4 = [0f32; 4];
    for l in 0..4 {
        s4[l] = s8[l] + s8[l + 4];
    }
    let s2 = [s4[0] + s4[2], s4[1] + s4[3]];
    s2[0] + s2[1]
}
