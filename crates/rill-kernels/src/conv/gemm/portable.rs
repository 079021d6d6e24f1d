//! Portable kernels (4 rows × 16 columns), written so the compiler can
//! auto-vectorise the 16-lane inner loops for any target, and the scalar
//! definitions of the ELU and the HalfSnake (the SIMD tiers reproduce the
//! HalfSnake bit for bit).

use super::{Epilogue, SnakeParams, Tile, PANEL};

/// Cephes `sinf` constants (as published; f32 rounding): 4/π, π/4 split in
/// three, and the sine and cosine polynomials.
#[allow(clippy::excessive_precision)]
pub const FOPI: f32 = 1.27323954473516;
pub const DP1: f32 = 0.78515625;
#[allow(clippy::excessive_precision)]
pub const DP2: f32 = 2.4187564849853515625e-4;
#[allow(clippy::excessive_precision)]
pub const DP3: f32 = 3.77489497744594108e-8;
#[allow(clippy::excessive_precision)]
pub const SIN: [f32; 3] = [-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1];
#[allow(clippy::excessive_precision)]
pub const COS: [f32; 3] = [
    2.443315711809948e-5,
    -1.388731625493765e-3,
    4.166664568298827e-2,
];
/// LeakyReLU slope (torch's default).
pub const LRELU_SLOPE: f32 = 0.01;

/// `sin(x)`, Cephes `sinf` (≤ 2 ulp for |x| < 8192, degrading beyond), with every
/// operation rounded separately (no FMA) so that the SIMD versions, which do the
/// same operations, give the same bits.
#[inline]
pub fn sin(x: f32) -> f32 {
    let sign = x.to_bits() & 0x8000_0000;
    let ax = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    // Truncation like `cvttps2dq`; out-of-range values give i32::MIN there, so
    // map them the same way here (the result is meaningless either way).
    let q = ax * FOPI;
    let j = if q < 2_147_483_648.0 {
        q as i32
    } else {
        i32::MIN
    };
    let j = j.wrapping_add(1) & !1;
    let y = j as f32;
    let z = ((ax - y * DP1) - y * DP2) - y * DP3;
    let zz = z * z;
    let c = ((COS[0] * zz + COS[1]) * zz + COS[2]) * zz * zz - 0.5 * zz + 1.0;
    let s = ((SIN[0] * zz + SIN[1]) * zz + SIN[2]) * zz * z + z;
    let r = if j & 2 != 0 { c } else { s };
    let flip = sign ^ (((j & 4) as u32) << 29);
    f32::from_bits(r.to_bits() ^ flip)
}

/// One HalfSnake lane: `x + inv·sin(α·x)²` for snake lanes, else LeakyReLU(0.01).
#[inline]
pub fn half_snake(x: f32, alpha: f32, inv: f32, snake: bool) -> f32 {
    if snake {
        let s = sin(alpha * x);
        x + inv * (s * s)
    } else if x > 0.0 {
        x
    } else {
        x * LRELU_SLOPE
    }
}

/// HalfSnake of one row of `p.channels` values.
pub fn half_snake_run(p: &SnakeParams, src: &[f32], dst: &mut [f32]) {
    for (c, (d, &x)) in dst.iter_mut().zip(src).enumerate() {
        *d = half_snake(x, p.alpha[c], p.inv[c], c < p.half);
    }
}

const MR: usize = 4;

/// ELU as the reference writes it: `where(x > 0, x, exp(x) − 1)`.
#[inline]
pub(crate) fn elu(x: f32) -> f32 {
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
pub(crate) unsafe fn elu_raw(src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        for i in 0..n {
            *dst.add(i) = elu(*src.add(i));
        }
    }
}

/// Writes `epi(y)` of the tile's column `col` to `dst` (the scalar epilogue of
/// the portable and narrow kernels).
#[inline]
pub(super) fn finish(t: &Tile<'_>, y: f32, dst: &mut f32, col: usize) {
    *dst = match t.epi {
        Epilogue::Store => y,
        Epilogue::Elu => elu(y),
        Epilogue::Accumulate => *dst + y,
        Epilogue::Snake(p) => {
            let c = t.col0 + col;
            half_snake(y, p.alpha[c], p.inv[c], c < p.half)
        }
    };
}

/// The portable panel kernel (f32 panels only: this tier is given no narrow ones,
/// `has_narrow_kernel`).
///
/// # Safety
/// Every pointer of `t` must be valid for the reads/writes the tile describes.
pub(super) unsafe fn tile(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let rows = t.a.len();
        for p in 0..t.ncols.div_ceil(PANEL) {
            let nvalid = PANEL.min(t.ncols - p * PANEL);
            let b = t.b.add(p * t.b_stride);
            // Null for a chain tile (never read then).
            let bias = t.bias.wrapping_add(p * PANEL);
            let mut r = 0;
            while r < rows {
                let mr = MR.min(rows - r);
                let mut acc = [[0f32; PANEL]; MR];
                if t.chain {
                    // A GEMM blocked over k: the chains go on from the sums at `c`.
                    for (m, accm) in acc.iter_mut().enumerate().take(mr) {
                        let c = t.c[r + m].add(p * PANEL);
                        for (l, v) in accm.iter_mut().enumerate().take(nvalid) {
                            *v = *c.add(l);
                        }
                    }
                }
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
                        if t.chain {
                            // The sums as they are: no bias, no epilogue.
                            *c.add(l) = v;
                        } else {
                            finish(t, v + *bias.add(l), &mut *c.add(l), p * PANEL + l);
                        }
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
                finish(t, y, &mut *t.c[r].add(j), j);
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
