//! Products of one weight matrix with several input rows, `y[i] = W·x[i]`, reading
//! the weights from memory once per call: the prefill's 111 rows (×2 with CFG) and
//! the encoder's text rows. One row goes to [`Matrix::gemv`], the two CFG rows of a
//! step to [`Matrix::gemv2`] (float weights read once for both; widening the weights
//! into a buffer first measured no faster than streaming them twice).
//!
//! Each task widens 4 weight rows at a time into a per-thread buffer
//! ([`Matrix::row_into`]) and dots them with every input row (one input load feeds
//! four FMA chains). Tasks split the output rows by a fixed count, so results do not
//! depend on the number of threads.

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
            let mut sums = [0f32; GROUP];
            for g0 in (r0..r1).step_by(GROUP) {
                let k = GROUP.min(r1 - g0);
                for j in 0..k {
                    m.row_into(g0 + j, &mut buf[j * cols..(j + 1) * cols]);
                }
                for i in 0..n {
                    let xi = &x[i * cols..(i + 1) * cols];
                    dots(isa, &buf[..k * cols], cols, xi, &mut sums[..k]);
                    for (j, &s) in sums[..k].iter().enumerate() {
                        // SAFETY: row g0 + j belongs to this task only, i < n, so the
                        // index is inside `y` and written by no other task.
                        unsafe { *out.get().add(i * rows + g0 + j) = s };
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

/// `y[j] = w[j]·x` for the (up to 4) rows of `w`.
fn dots(isa: Isa, w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of this tier exists only if the CPU has AVX-512F/BW.
        Tier::Avx512 => unsafe { x86::dots_avx512(w, cols, x, y) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of this tier exists only if the CPU has AVX2 and FMA.
        Tier::Avx2 => unsafe { x86::dots_avx2(w, cols, x, y) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: an `Isa` of this tier exists only if the CPU has NEON.
        Tier::Neon => unsafe { arm::dots_neon(w, cols, x, y) },
        _ => dots_portable(w, cols, x, y),
    }
}

fn dots_portable(w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
    for (j, o) in y.iter_mut().enumerate() {
        *o = ops::dot(&w[j * cols..(j + 1) * cols], x);
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;

    /// # Safety
    /// The CPU must support NEON; `w` holds `y.len() ≤ 4` rows of `cols`, `x` `cols`.
    #[target_feature(enable = "neon")]
    pub unsafe fn dots_neon(w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
        let k = y.len();
        debug_assert!(k <= 4 && w.len() >= k * cols && x.len() >= cols);
        let n8 = cols / 8 * 8;
        let (wp, xp) = (w.as_ptr(), x.as_ptr());
        let mut a = [[vdupq_n_f32(0.0); 2]; 4];
        let mut c = 0;
        while c < n8 {
            let (x0, x1) = (vld1q_f32(xp.add(c)), vld1q_f32(xp.add(c + 4)));
            for j in 0..k {
                let p = wp.add(j * cols + c);
                a[j][0] = vfmaq_f32(a[j][0], vld1q_f32(p), x0);
                a[j][1] = vfmaq_f32(a[j][1], vld1q_f32(p.add(4)), x1);
            }
            c += 8;
        }
        for j in 0..k {
            let mut s = vaddvq_f32(vaddq_f32(a[j][0], a[j][1]));
            for c in n8..cols {
                s += w[j * cols + c] * x[c];
            }
            y[j] = s;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support AVX-512F; `w` holds `y.len() ≤ 4` rows of `cols`, `x` `cols`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn dots_avx512(w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
        let k = y.len();
        debug_assert!(k <= 4 && w.len() >= k * cols && x.len() >= cols);
        let n16 = cols / 16 * 16;
        let (wp, xp) = (w.as_ptr(), x.as_ptr());
        let mut a = [_mm512_setzero_ps(); 4];
        let mut c = 0;
        while c < n16 {
            let xv = _mm512_loadu_ps(xp.add(c));
            for j in 0..k {
                a[j] = _mm512_fmadd_ps(_mm512_loadu_ps(wp.add(j * cols + c)), xv, a[j]);
            }
            c += 16;
        }
        for j in 0..k {
            let mut s = _mm512_reduce_add_ps(a[j]);
            for c in n16..cols {
                s += w[j * cols + c] * x[c];
            }
            y[j] = s;
        }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA; shapes as [`dots_avx512`].
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dots_avx2(w: &[f32], cols: usize, x: &[f32], y: &mut [f32]) {
        let k = y.len();
        debug_assert!(k <= 4 && w.len() >= k * cols && x.len() >= cols);
        let n8 = cols / 8 * 8;
        let (wp, xp) = (w.as_ptr(), x.as_ptr());
        let mut a = [_mm256_setzero_ps(); 4];
        let mut c = 0;
        while c < n8 {
            let xv = _mm256_loadu_ps(xp.add(c));
            for j in 0..k {
                a[j] = _mm256_fmadd_ps(_mm256_loadu_ps(wp.add(j * cols + c)), xv, a[j]);
            }
            c += 8;
        }
        for j in 0..k {
            let hi = _mm256_extractf128_ps(a[j], 1);
            let lo = _mm256_castps256_ps128(a[j]);
            let q = _mm_add_ps(hi, lo);
            let q = _mm_add_ps(q, _mm_movehl_ps(q, q));
            let q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
            let mut s = _mm_cvtss_f32(q);
            for c in n8..cols {
                s += w[j * cols + c] * x[c];
            }
            y[j] = s;
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
}
