//! Products of one weight matrix with several input rows, `y[i] = W·x[i]`, reading
//! the weights from memory once per call: the prefill's 111 rows (×2 with CFG) and
//! the encoder's text rows. One row goes to [`Matrix::gemv`], the two CFG rows of a
//! step to [`Matrix::gemv2`] (float weights read once for both; widening the weights
//! into a buffer first measured no faster than streaming them twice).
//!
//! Each task widens 4 weight rows at a time into a per-thread buffer
//! ([`Matrix::row_into`]) and dots them with a few input rows at once (a register
//! block of 4 × up to 4 accumulators: 8 loads feed 16 FMAs on AVX-512, where one
//! input at a time needed 5 loads per 4). Every output is its own accumulator chain,
//! so the block size changes no bit. Tasks split the output rows by a fixed count, so
//! results do not depend on the number of threads either.

use std::cell::RefCell;

use rill_kernels::{isa, ops, Isa, Matrix, Pool, Tier};

/// Output rows per pool task.
const ROWS_PER_TASK: usize = 32;
/// Inputs of at most this many rows use one GEMV per row.
const SINGLE_ROWS_UP_TO: usize = 2;
/// Weight rows widened and dotted together.
const GROUP: usize = 4;

thread_local! {
    static WEIGHTS: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// A raw output pointer shared by tasks that write disjoint elements.
#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: tasks write disjoint indices (their own output rows) and the pointee
// outlives `Pool::run`, which returns only after every task finished.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}
impl SendPtr {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// `y[i·rows + r] = Σ_c W[r][c]·x[i·cols + c]` for every input row `i`.
pub fn matmul(m: &Matrix, x: &[f32], y: &mut [f32], pool: &Pool) {
    matmul_isa(isa::active(), m, x, y, pool);
}

/// [`matmul`] on an explicit tier (for cross-checking the tiers).
pub fn matmul_isa(isa: Isa, m: &Matrix, x: &[f32], y: &mut [f32], pool: &Pool) {
    let (rows, cols) = (m.rows(), m.cols());
    assert!(
        cols > 0 && x.len().is_multiple_of(cols),
        "matmul input length"
    );
    let n = x.len() / cols;
    assert_eq!(y.len(), n * rows, "matmul output length");
    if n == 2 {
        // The two CFG rows: each weight read once for both, same bits as two GEMVs.
        let (y0, y1) = y.split_at_mut(rows);
        m.gemv2_isa(isa, [&x[..cols], &x[cols..]], [y0, y1], pool);
        return;
    }
    if n <= SINGLE_ROWS_UP_TO {
        for (xi, yi) in x.chunks_exact(cols).zip(y.chunks_exact_mut(rows)) {
            m.gemv_rows_isa(isa, xi, yi, 0..rows, pool);
        }
        return;
    }
    let out = SendPtr(y.as_mut_ptr());
    let tasks = rows.div_ceil(ROWS_PER_TASK);
    let task = |t: usize| {
        let r0 = t * ROWS_PER_TASK;
        let r1 = (r0 + ROWS_PER_TASK).min(rows);
        WEIGHTS.with(|buf| {
            let mut buf = buf.borrow_mut();
            if buf.len() < GROUP * cols {
                buf.resize(GROUP * cols, 0.0);
            }
            let mut sums = [[0f32; GROUP]; 4];
            let step = inputs_per_block(isa);
            for g0 in (r0..r1).step_by(GROUP) {
                let k = GROUP.min(r1 - g0);
                for j in 0..k {
                    m.row_into(g0 + j, &mut buf[j * cols..(j + 1) * cols]);
                }
                // Rows k.. of a last, short group hold stale weights: computed, unused.
                for i0 in (0..n).step_by(step) {
                    let ni = step.min(n - i0);
                    dots(
                        isa,
                        &buf,
                        cols,
                        &x[i0 * cols..(i0 + ni) * cols],
                        ni,
                        &mut sums,
                    );
                    for (i, row) in sums[..ni].iter().enumerate() {
                        for (j, &s) in row[..k].iter().enumerate() {
                            // SAFETY: row g0 + j belongs to this task only and
                            // i0 + i < n, so the index is inside `y` and written by
                            // no other task.
                            unsafe { *out.get().add((i0 + i) * rows + g0 + j) = s };
                        }
                    }
                }
            }
        });
    };
    if tasks <= 1 {
        task(0);
    } else {
        pool.run(tasks, &task);
    }
}

/// Input rows dotted together with one group of weight rows, per tier (the register
/// block is `GROUP × INPUTS` accumulators: 4×4 of 32 zmm on AVX-512, 4×2 of 16 ymm on
/// AVX2 and of 32 q-registers on NEON).
fn inputs_per_block(isa: Isa) -> usize {
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        Tier::Avx512 => 4,
        #[cfg(target_arch = "x86_64")]
        Tier::Avx2 => 2,
        #[cfg(target_arch = "aarch64")]
        Tier::Neon => 2,
        _ => 1,
    }
}

/// `y[i][j] = w[j]·x[i]` for the `GROUP` rows of `w` and the `ni ≤ 4` rows of `x`.
/// Every (j, i) pair is its own accumulator chain with the lane order and reduction of
/// a single dot, so the result does not depend on `ni` (nor on the row count).
fn dots(isa: Isa, w: &[f32], cols: usize, x: &[f32], ni: usize, y: &mut [[f32; GROUP]; 4]) {
    debug_assert!(w.len() >= GROUP * cols && x.len() >= ni * cols && ni <= 4);
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of this tier exists only if the CPU has AVX-512F/BW; the
        // shapes were checked above.
        Tier::Avx512 => unsafe {
            match ni {
                4 => x86::dots_avx512::<4>(w, cols, x, y),
                3 => x86::dots_avx512::<3>(w, cols, x, y),
                2 => x86::dots_avx512::<2>(w, cols, x, y),
                _ => x86::dots_avx512::<1>(w, cols, x, y),
            }
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of this tier exists only if the CPU has AVX2 and FMA.
        Tier::Avx2 => unsafe {
            match ni {
                2 => x86::dots_avx2::<2>(w, cols, x, y),
                _ => x86::dots_avx2::<1>(w, cols, x, y),
            }
        },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: an `Isa` of this tier exists only if the CPU has NEON.
        Tier::Neon => unsafe {
            match ni {
                2 => arm::dots_neon::<2>(w, cols, x, y),
                _ => arm::dots_neon::<1>(w, cols, x, y),
            }
        },
        _ => {
            for (i, yi) in y.iter_mut().enumerate().take(ni) {
                for (j, o) in yi.iter_mut().enumerate() {
                    *o = ops::dot(&w[j * cols..(j + 1) * cols], &x[i * cols..(i + 1) * cols]);
                }
            }
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::GROUP;
    use std::arch::aarch64::*;

    /// # Safety
    /// The CPU must support NEON; `w` holds `GROUP` rows of `cols`, `x` `NI` rows.
    #[target_feature(enable = "neon")]
    pub unsafe fn dots_neon<const NI: usize>(
        w: &[f32],
        cols: usize,
        x: &[f32],
        y: &mut [[f32; GROUP]; 4],
    ) {
        let n8 = cols / 8 * 8;
        let (wp, xp) = (w.as_ptr(), x.as_ptr());
        let mut a = [[[vdupq_n_f32(0.0); 2]; GROUP]; NI];
        let mut c = 0;
        while c < n8 {
            let wv: [[float32x4_t; 2]; GROUP] = std::array::from_fn(|j| {
                let p = wp.add(j * cols + c);
                [vld1q_f32(p), vld1q_f32(p.add(4))]
            });
            for i in 0..NI {
                let p = xp.add(i * cols + c);
                let (x0, x1) = (vld1q_f32(p), vld1q_f32(p.add(4)));
                for j in 0..GROUP {
                    a[i][j][0] = vfmaq_f32(a[i][j][0], wv[j][0], x0);
                    a[i][j][1] = vfmaq_f32(a[i][j][1], wv[j][1], x1);
                }
            }
            c += 8;
        }
        for i in 0..NI {
            for j in 0..GROUP {
                let mut s = vaddvq_f32(vaddq_f32(a[i][j][0], a[i][j][1]));
                for c in n8..cols {
                    s += w[j * cols + c] * x[i * cols + c];
                }
                y[i][j] = s;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::GROUP;
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support AVX-512F; `w` holds `GROUP` rows of `cols`, `x` `NI` rows.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn dots_avx512<const NI: usize>(
        w: &[f32],
        cols: usize,
        x: &[f32],
        y: &mut [[f32; GROUP]; 4],
    ) {
        let n16 = cols / 16 * 16;
        let (wp, xp) = (w.as_ptr(), x.as_ptr());
        let mut a = [[_mm512_setzero_ps(); GROUP]; NI];
        let mut c = 0;
        while c < n16 {
            let wv: [__m512; GROUP] =
                std::array::from_fn(|j| _mm512_loadu_ps(wp.add(j * cols + c)));
            for i in 0..NI {
                let xv = _mm512_loadu_ps(xp.add(i * cols + c));
                for j in 0..GROUP {
                    a[i][j] = _mm512_fmadd_ps(wv[j], xv, a[i][j]);
                }
            }
            c += 16;
        }
        for i in 0..NI {
            for j in 0..GROUP {
                let mut s = _mm512_reduce_add_ps(a[i][j]);
                for c in n16..cols {
                    s += w[j * cols + c] * x[i * cols + c];
                }
                y[i][j] = s;
            }
        }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA; shapes as [`dots_avx512`].
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dots_avx2<const NI: usize>(
        w: &[f32],
        cols: usize,
        x: &[f32],
        y: &mut [[f32; GROUP]; 4],
    ) {
        let n8 = cols / 8 * 8;
        let (wp, xp) = (w.as_ptr(), x.as_ptr());
        let mut a = [[_mm256_setzero_ps(); GROUP]; NI];
        let mut c = 0;
        while c < n8 {
            let wv: [__m256; GROUP] =
                std::array::from_fn(|j| _mm256_loadu_ps(wp.add(j * cols + c)));
            for i in 0..NI {
                let xv = _mm256_loadu_ps(xp.add(i * cols + c));
                for j in 0..GROUP {
                    a[i][j] = _mm256_fmadd_ps(wv[j], xv, a[i][j]);
                }
            }
            c += 8;
        }
        for i in 0..NI {
            for j in 0..GROUP {
                let hi = _mm256_extractf128_ps(a[i][j], 1);
                let lo = _mm256_castps256_ps128(a[i][j]);
                let q = _mm_add_ps(hi, lo);
                let q = _mm_add_ps(q, _mm_movehl_ps(q, q));
                let q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
                let mut s = _mm_cvtss_f32(q);
                for c in n8..cols {
                    s += w[j * cols + c] * x[i * cols + c];
                }
                y[i][j] = s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_kernels::WeightFormat;

    #[test]
    fn every_tier_matches_f64_reference() {
        let tiers = isa::tiers_under_test("rill_magpie::gemm");
        let pool = Pool::new(2);
        let mut seed = 9u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        for &(rows, cols, n) in &[
            (1, 1, 2),
            (37, 768, 3),
            (70, 33, 2),
            (130, 100, 5),
            (5, 17, 1),
            (9, 40, 7),
            (4, 16, 6),
        ] {
            let w: Vec<f32> = (0..rows * cols).map(|_| next()).collect();
            let x: Vec<f32> = (0..n * cols).map(|_| next()).collect();
            let m = Matrix::from_f32(rows, cols, w.clone(), WeightFormat::F32);
            for &isa in &tiers {
                let mut y = vec![0f32; n * rows];
                matmul_isa(isa, &m, &x, &mut y, &pool);
                for i in 0..n {
                    for r in 0..rows {
                        let want: f64 = (0..cols)
                            .map(|c| w[r * cols + c] as f64 * x[i * cols + c] as f64)
                            .sum();
                        let got = y[i * rows + r] as f64;
                        assert!(
                            (got - want).abs() < 1e-5 * (cols as f64).sqrt(),
                            "{isa:?} {rows}x{cols} n {n}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_input_block_changes_no_bit() {
        let mut seed = 5u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        for isa in isa::tiers_under_test("rill_magpie::gemm block") {
            for cols in [1, 15, 16, 17, 100, 768] {
                let w: Vec<f32> = (0..GROUP * cols).map(|_| next()).collect();
                let x: Vec<f32> = (0..4 * cols).map(|_| next()).collect();
                for ni in 2..=inputs_per_block(isa) {
                    let mut block = [[0f32; GROUP]; 4];
                    dots(isa, &w, cols, &x[..ni * cols], ni, &mut block);
                    for i in 0..ni {
                        let mut one = [[0f32; GROUP]; 4];
                        dots(isa, &w, cols, &x[i * cols..(i + 1) * cols], 1, &mut one);
                        let (a, b) = (block[i].map(f32::to_bits), one[0].map(f32::to_bits));
                        assert_eq!(a, b, "{isa:?} cols {cols} block {ni} input {i}");
                    }
                }
            }
        }
    }
}
