//! Portable kernels: plain Rust in fixed-size chunks (auto-vectorised), and the
//! scalar definition of the HalfSnake that the SIMD tiers reproduce bit for bit.

use super::{SnakeParams, Tile, PANEL};

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

/// The portable panel kernel (4 rows × 16 columns per inner step).
///
/// # Safety
/// The tile's pointers must be valid (see `Tile`).
pub(super) unsafe fn tile(t: &Tile<'_>) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        // This tier reads f32 panels only (`reads_half_panels`; `run_task` checks).
        debug_assert!(t.b16.is_null());
        let panels = t.ncols.div_ceil(PANEL);
        for p in 0..panels {
            let b = t.b.add(p * t.b_stride);
            let valid = PANEL.min(t.ncols - p * PANEL);
            let mut r = 0;
            while r < t.a.len() {
                let mr = MR.min(t.a.len() - r);
                let mut acc = [[0f32; PANEL]; MR];
                let mut bp = b;
                for &off in t.taps {
                    for ci in 0..t.cin {
                        let w = std::slice::from_raw_parts(bp, PANEL);
                        for m in 0..mr {
                            let a = *t.a[r + m].offset(off).add(ci);
                            for j in 0..PANEL {
                                acc[m][j] += a * w[j];
                            }
                        }
                        bp = bp.add(PANEL);
                    }
                }
                for m in 0..mr {
                    let dst = t.c[r + m].add(p * PANEL);
                    for j in 0..valid {
                        let col = p * PANEL + j;
                        let y = acc[m][j] + *t.bias.add(col);
                        *dst.add(j) = match t.snake {
                            Some((al, inv, half)) => {
                                half_snake(y, *al.add(col), *inv.add(col), col < half)
                            }
                            None if t.accumulate => *dst.add(j) + y,
                            None => y,
                        };
                    }
                }
                r += mr;
            }
        }
    }
}
