//! The `F(m, 3)` Winograd matrices: `G` for the weight transform (in f64, once at
//! load) and `Bᵀ`, `Aᵀ` for the data transforms on 16-lane vectors [`V`] (plain f32
//! multiplies and adds in a fixed order, so every tier computes the same bits).

use std::ops::{Add, Mul, Sub};

use super::L;

/// `G` of `F(m, 3)` (`α × 3`), in f64 for the weight transform.
pub fn g_matrix(m: usize) -> &'static [[f64; 3]] {
    const G2: [[f64; 3]; 4] = [
        [1.0, 0.0, 0.0],
        [0.5, 0.5, 0.5],
        [0.5, -0.5, 0.5],
        [0.0, 0.0, 1.0],
    ];
    const G4: [[f64; 3]; 6] = [
        [0.25, 0.0, 0.0],
        [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
        [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
        [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
        [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
        [0.0, 0.0, 1.0],
    ];
    match m {
        2 => &G2,
        4 => &G4,
        _ => panic!("unsupported Winograd tile {m}"),
    }
}

/// 16 lanes; element-wise ops the compiler vectorises for the enclosing target.
#[derive(Clone, Copy)]
pub(super) struct V([f32; L]);

impl V {
    #[inline(always)]
    pub(super) fn zero() -> V {
        V([0.0; L])
    }
    /// # Safety
    /// `p` valid for 16 reads.
    #[inline(always)]
    pub(super) unsafe fn load(p: *const f32) -> V {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        unsafe { V(std::ptr::read_unaligned(p as *const [f32; L])) }
    }
    /// # Safety
    /// `p` valid for 16 writes.
    #[inline(always)]
    pub(super) unsafe fn store(self, p: *mut f32) {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        unsafe { std::ptr::write_unaligned(p as *mut [f32; L], self.0) }
    }
}

impl Add for V {
    type Output = V;
    #[inline(always)]
    fn add(self, o: V) -> V {
        V(std::array::from_fn(|i| self.0[i] + o.0[i]))
    }
}

impl Sub for V {
    type Output = V;
    #[inline(always)]
    fn sub(self, o: V) -> V {
        V(std::array::from_fn(|i| self.0[i] - o.0[i]))
    }
}

impl Mul<f32> for V {
    type Output = V;
    #[inline(always)]
    fn mul(self, s: f32) -> V {
        V(std::array::from_fn(|i| self.0[i] * s))
    }
}

/// `v = Bᵀ d` for `F(M, 3)` (`α = M + 2` values).
#[inline(always)]
pub(super) fn bt<const M: usize>(d: &[V], v: &mut [V]) {
    match M {
        2 => {
            v[0] = d[0] - d[2];
            v[1] = d[1] + d[2];
            v[2] = d[2] - d[1];
            v[3] = d[1] - d[3];
        }
        4 => {
            v[0] = (d[4] - d[2] * 5.0) + d[0] * 4.0;
            v[1] = (d[3] + d[4]) - (d[1] + d[2]) * 4.0;
            v[2] = (d[4] - d[3]) + (d[1] - d[2]) * 4.0;
            v[3] = (d[4] - d[2]) + (d[3] - d[1]) * 2.0;
            v[4] = (d[4] - d[2]) - (d[3] - d[1]) * 2.0;
            v[5] = (d[5] - d[3] * 5.0) + d[1] * 4.0;
        }
        _ => unreachable!(),
    }
}

/// `y = Aᵀ m` for `F(M, 3)` (`M` outputs of `α = M + 2` values).
#[inline(always)]
pub(super) fn at<const M: usize>(m: &[V], y: &mut [V]) {
    match M {
        2 => {
            y[0] = (m[0] + m[1]) + m[2];
            y[1] = (m[1] - m[2]) - m[3];
        }
        4 => {
            let (s12, d12) = (m[1] + m[2], m[1] - m[2]);
            let (s34, d34) = (m[3] + m[4], m[3] - m[4]);
            y[0] = (m[0] + s12) + s34;
            y[1] = d12 + d34 * 2.0;
            y[2] = s12 + s34 * 4.0;
            y[3] = (d12 + d34 * 8.0) + m[5];
        }
        _ => unreachable!(),
    }
}
