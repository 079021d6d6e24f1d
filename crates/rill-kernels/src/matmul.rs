//! Products of one weight matrix with several input rows (Magpie TTS's linears), `y[i] = W·x[i]`, reading
//! the weights from memory once per call: the prefill's 111 rows and the encoder's
//! text rows. One row goes to [`Matrix::gemv_rows_isa`], the two CFG rows of a step to
//! [`Matrix::gemv2_isa`] (float weights read once for both; widening the weights into a
//! buffer first measured no faster than streaming them twice).
//!
//! Three or more rows run as a small GEMM on the convolution kernels' micro-kernels
//! (one per tier, [`conv::gemm`](mod@crate::conv::gemm)): each task takes a panel
//! of [`PANEL`] weight rows (two 16-column conv panels) and per block of [`KC`]
//! columns packs the block in the conv panel layout (`[panel][col][16]`) from the
//! weights as stored (int8 from its 16-row blocks; f32 and f16 rows in register
//! transposes; other formats widened a row at a time first), then runs the conv
//! micro-kernel over every block of
//! [`INPUTS`] input rows as a one-tap convolution ([`chain_tile`]): the inputs × the
//! panel in registers, one input value broadcast against the panel's column per FMA.
//! The kernel starts every output's chain from its value in `y` (zeroed first) and
//! stores the sum as it is, without bias, so the partial sums live in `y` between
//! column blocks.
//!
//! Every output is one fused multiply-add chain over the columns in order, so its
//! bits do not depend on the input block, the column block, the number of rows or
//! of threads, and the SIMD tiers compute the same chain (AVX-512 and AVX2 agree bit
//! for bit, tested; so does NEON; the portable tier rounds each product).
//! The one-row GEMV sums in lanes instead: a prefill row and the same row as a step
//! agree to ~1e-6 of their scale, not bit for bit (NeMo's batched and stepped torch
//! kernels do not either).

use std::sync::{Mutex, MutexGuard, TryLockError};

use crate::conv::{self, gemm::chain_tile};
use crate::matrix::FloatRows;
use crate::{DisjointOut, GemvScratch, Isa, Matrix, Pool, Tier};

/// Output rows per task: two of the conv kernels' 16-column panels.
const PANEL: usize = 2 * conv::PANEL;
/// Input rows per [`chain_tile`] call (the micro-kernels block them in registers).
const INPUTS: usize = 48;
/// Columns per block (a 96 KB block of the packed panel, in L2): Magpie's 768-wide
/// rows in one block. Against 256 (a 32 KB block, in L1) the 111-row products of
/// its prefill took ~8 % less time on AVX2 (Zen 3, 2 threads, three alternations of
/// `profile_prefill_matmul`; 128 was slower, 512 and 1024 between): fewer passes
/// over the inputs and the partial sums outweigh the L1 misses of the panel.
const KC: usize = 768;
// Int8 panels are packed from the weights' own blocks: 16 rows, 64-column groups
// (whole groups per column block; int8 matrices have whole groups).
const _: () =
    assert!(conv::PANEL == crate::gemv_int8::BLOCK && KC.is_multiple_of(crate::gemv_int8::GROUP));
/// Inputs of at most this many rows use one GEMV per row.
const SINGLE_ROWS_UP_TO: usize = 2;
/// Threads beyond the pool's own that may take its tasks at once: the other
/// pipeline stage's thread, lent by `Pool::assist`.
const ASSISTANTS: usize = 1;

/// Work memory of [`matmul_isa`], owned by the caller (a layer's scratch, a session).
/// The GEMV activations are written by the calling thread before the pool's tasks
/// start; a packed panel is written by the task that packs it, so there is one per
/// thread that may run a task at once, each claimed by one task at a time (a claim
/// never waits: a task that finds none free packs into a buffer of its own).
/// Grown on first use, then reused. It holds no tier: the tier is the caller's
/// ([`crate::Ops::matmul`], resolved once at load).
#[derive(Debug, Default)]
pub struct MatmulScratch {
    gemv: GemvScratch,
    panels: Vec<Mutex<Panel>>,
}

impl MatmulScratch {
    /// An empty scratch (it grows on first use).
    pub fn new() -> MatmulScratch {
        MatmulScratch::default()
    }

    /// The GEMV activations, for single-row products of the same owner.
    pub fn gemv(&mut self) -> &mut GemvScratch {
        &mut self.gemv
    }
}

/// A clone is an empty scratch: the contents never outlive one call.
impl Clone for MatmulScratch {
    fn clone(&self) -> MatmulScratch {
        MatmulScratch::new()
    }
}

/// One task's panel: its weight rows widened and one column block of them packed.
#[derive(Debug, Default)]
struct Panel {
    rows: Vec<f32>,
    panel: Vec<f32>,
}

/// A free panel of `panels`, claimed until the guard drops.
fn claim(panels: &[Mutex<Panel>]) -> Option<MutexGuard<'_, Panel>> {
    panels.iter().find_map(|p| match p.try_lock() {
        Ok(guard) => Some(guard),
        // A task that panicked left only scratch values behind.
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    })
}

/// `y[i·rows + r] = Σ_c W[r][c]·x[i·cols + c]` for every input row `i`, on tier
/// `isa` (a model calls it through its [`crate::Ops`]).
pub fn matmul_isa(
    isa: Isa,
    m: &Matrix,
    x: &[f32],
    y: &mut [f32],
    scratch: &mut MatmulScratch,
    pool: &Pool,
) {
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
        m.gemv2_isa(
            isa,
            [&x[..cols], &x[cols..]],
            [y0, y1],
            &mut scratch.gemv,
            pool,
        );
        return;
    }
    if n <= SINGLE_ROWS_UP_TO {
        for (xi, yi) in x.chunks_exact(cols).zip(y.chunks_exact_mut(rows)) {
            m.gemv_rows_isa(isa, xi, yi, 0..rows, &mut scratch.gemv, pool);
        }
        return;
    }
    let threads = pool.threads() + ASSISTANTS;
    if scratch.panels.len() < threads {
        scratch.panels.resize_with(threads, Mutex::default);
    }
    let panels = &scratch.panels[..];
    let out = DisjointOut::new(y);
    let tasks = rows.div_ceil(PANEL);
    let task = |t: usize| {
        // An empty panel allocates nothing; it grows only if no shared one is free.
        let mut own = Panel::default();
        let mut claimed = claim(panels);
        let panel = claimed.as_deref_mut().unwrap_or(&mut own);
        panel_rows(isa, m, x, t * PANEL, panel, out);
    };
    if tasks <= 1 {
        task(0);
    } else {
        pool.run(tasks, &task);
    }
}

/// Rows `r0 .. r0 + PANEL` (fewer at the end) of every output row of [`matmul_isa`]:
/// zeroes the outputs, widens the weight rows into `s` only where they cannot be
/// packed as stored, then per column block packs
/// the block (in L2: see [`KC`]) and runs the conv micro-kernel over the inputs
/// ([`chain_tile`], continuing every output's chain from its value in `y`). Only
/// this call writes those rows of `y` (through `out`).
fn panel_rows(isa: Isa, m: &Matrix, x: &[f32], r0: usize, s: &mut Panel, out: DisjointOut<'_>) {
    let (rows, cols) = (m.rows(), m.cols());
    let n = x.len() / cols;
    let valid = PANEL.min(rows - r0);
    // Int8 weights are widened straight into the packed block; f32 and f16 rows are
    // transposed from where they are stored (f16 on x86: converted in the
    // transpose); the others, and a last panel of fewer rows, are widened a row at
    // a time first (one copy of the task's rows).
    let direct = m.packs16();
    let stored = m
        .float_rows(r0, PANEL)
        .filter(|rows| matches!(rows, FloatRows::F32(_)) || transposes_half(isa));
    if !direct && stored.is_none() {
        s.rows.resize(cols * PANEL, 0.0);
        widen_rows(m, r0, valid, &mut s.rows);
    }
    let source = stored.unwrap_or(FloatRows::F32(&s.rows));
    for i in 0..n {
        // SAFETY: rows r0..r0 + valid belong to this call only and i < n, so the
        // run is inside `y` (n × rows, alive until `Pool::run` returns) and written
        // by no other task.
        unsafe { std::ptr::write_bytes(out.at(i * rows + r0), 0, valid) };
    }
    for k0 in (0..cols).step_by(KC) {
        let kc = KC.min(cols - k0);
        s.panel.resize(kc * PANEL, 0.0);
        let panel = &mut s.panel[..kc * PANEL];
        if direct {
            for (h, half) in panel.chunks_exact_mut(kc * conv::PANEL).enumerate() {
                m.pack16_into(isa, r0 + h * conv::PANEL, k0, half);
            }
        } else {
            pack_block(isa, source, cols, k0, panel);
        }
        for i0 in (0..n).step_by(INPUTS) {
            let ni = INPUTS.min(n - i0);
            let mut a = [std::ptr::null::<f32>(); INPUTS];
            let mut c = [std::ptr::null_mut::<f32>(); INPUTS];
            for (i, (a, c)) in (i0..i0 + ni).zip(a.iter_mut().zip(&mut c)) {
                *a = x[i * cols + k0..].as_ptr();
                // SAFETY: as above (the zeroing).
                *c = unsafe { out.at(i * rows + r0) };
            }
            // SAFETY: the tier was checked when `isa` was built; each `a[i]` starts
            // `kc` input values of row i, each `c[i]` the `valid` outputs of row i
            // owned by this call (see above; `y` does not overlap `x` or the panel),
            // and the block holds `PANEL / conv::PANEL` whole panels of `kc` rows.
            unsafe { chain_tile(isa, &a[..ni], &c[..ni], kc, s.panel.as_ptr(), valid) };
        }
    }
}

/// `rows[j·cols + c] = W[r0 + j][c]`, zero for `j ≥ valid`.
fn widen_rows(m: &Matrix, r0: usize, valid: usize, rows: &mut [f32]) {
    let cols = m.cols();
    for (j, row) in rows.chunks_exact_mut(cols).enumerate() {
        if j < valid {
            m.row_into(r0 + j, row);
        } else {
            row.fill(0.0);
        }
    }
}

/// Where weight row `j` (`< PANEL`), column `c` of a block of `block` columns goes
/// in the packed block: the conv kernels' panel layout, `[j / 16][c][j % 16]`.
#[inline(always)]
const fn packed_at(block: usize, c: usize, j: usize) -> usize {
    (j / conv::PANEL * block + c) * conv::PANEL + j % conv::PANEL
}

/// Whether tier `isa` transposes f16 rows, widening them as it goes (x86: F16C).
fn transposes_half(isa: Isa) -> bool {
    #[cfg(target_arch = "x86_64")]
    if matches!(isa.tier(), Tier::Avx2 | Tier::Avx512) {
        return true;
    }
    let _ = isa;
    false
}

/// `panel[packed_at(kc, c − k0, j)] = rows[j·cols + c]` for the `kc = panel.len() /
/// PANEL` columns from `k0`: 8 × 8 register transposes (x86), then strips for the
/// rest. A scalar transpose of whole rows took a quarter of a 111-row product.
fn pack_block(isa: Isa, rows: FloatRows<'_>, cols: usize, k0: usize, panel: &mut [f32]) {
    let kc = panel.len() / PANEL;
    assert!(rows.len() >= PANEL * cols && k0 + kc <= cols);
    let done = transpose_simd(isa, rows, cols, k0, panel);
    const STRIP: usize = 16;
    for c0 in (done..kc).step_by(STRIP) {
        let c1 = (c0 + STRIP).min(kc);
        for j in 0..PANEL {
            for c in c0..c1 {
                panel[packed_at(kc, c, j)] = rows.at(j * cols + k0 + c);
            }
        }
    }
}

/// The register-block part of [`pack_block`]: the columns it did.
fn transpose_simd(
    isa: Isa,
    rows: FloatRows<'_>,
    cols: usize,
    k0: usize,
    panel: &mut [f32],
) -> usize {
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        Tier::Avx2 | Tier::Avx512 => {
            let done = panel.len() / PANEL / 8 * 8;
            // SAFETY: both tiers exist only if the CPU has AVX2, FMA and F16C
            // (AVX-512 is detected only beside them); the shapes were checked by the
            // caller.
            unsafe { x86::transpose_avx2(rows, cols, k0, done, panel) };
            done
        }
        #[cfg(target_arch = "aarch64")]
        Tier::Neon => {
            let FloatRows::F32(rows) = rows else { return 0 };
            let done = panel.len() / PANEL / 4 * 4;
            // SAFETY: the tier exists only if the CPU has NEON; the shapes were
            // checked by the caller.
            unsafe { arm::transpose_neon(rows, cols, k0, done, panel) };
            done
        }
        _ => 0,
    }
}

#[cfg(target_arch = "aarch64")]
mod arm;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemv_int8::tests::Rng;
    use crate::{isa, WeightFormat};

    #[test]
    fn every_tier_matches_f64_reference() {
        let tiers = isa::tiers_under_test("matmul");
        let pool = Pool::new(2);
        let mut scratch = MatmulScratch::new();
        let mut rng = Rng(9);
        let mut next = || rng.unit();
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
            let mut worst = 0f64;
            for &isa in &tiers {
                let mut y = vec![0f32; n * rows];
                matmul_isa(isa, &m, &x, &mut y, &mut scratch, &pool);
                for i in 0..n {
                    for r in 0..rows {
                        let terms =
                            (0..cols).map(|c| w[r * cols + c] as f64 * x[i * cols + c] as f64);
                        let want: f64 = terms.clone().sum();
                        let size: f64 = terms.map(f64::abs).sum();
                        let got = y[i * rows + r] as f64;
                        // Error relative to Σ|terms|, in units of f32's ε = 2^-23.
                        let ulps = (got - want).abs() / size.max(1e-30) / f32::EPSILON as f64;
                        worst = worst.max(ulps);
                        assert!(ulps < 2.5, "{isa:?} {rows}x{cols} n {n}: {got} vs {want}");
                    }
                }
            }
            eprintln!("{rows}x{cols}, {n} rows: max error {worst:.2} ε·Σ|terms|");
        }
    }

    /// A claim never waits: with every shared panel taken, a task packs into its own.
    #[test]
    fn panels_are_claimed_one_task_at_a_time() {
        let panels = [Mutex::default(), Mutex::default()];
        let a = claim(&panels).expect("a free panel");
        let b = claim(&panels).expect("a second free panel");
        assert!(claim(&panels).is_none());
        drop(a);
        assert!(claim(&panels).is_some());
        drop(b);
    }

    /// Every output is one FMA chain: the same bits whatever the row count, the
    /// input block or the column block, and on every SIMD tier.
    #[test]
    fn blocking_and_tiers_change_no_bit() {
        let mut rng = Rng(5);
        let mut next = || rng.unit();
        let pool = Pool::new(2);
        let mut scratch = MatmulScratch::new();
        let (rows, cols, n) = (37, 2 * KC + 88, 13);
        let w: Vec<f32> = (0..rows * cols).map(|_| next()).collect();
        let x: Vec<f32> = (0..n * cols).map(|_| next()).collect();
        let m = Matrix::from_f32(rows, cols, w, WeightFormat::F32);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let mut simd: Option<Vec<u32>> = None;
        for isa in isa::tiers_under_test("matmul blocking") {
            let mut all = vec![0f32; n * rows];
            matmul_isa(isa, &m, &x, &mut all, &mut scratch, &pool);
            for i in 0..n - 2 {
                let mut three = vec![0f32; 3 * rows];
                matmul_isa(
                    isa,
                    &m,
                    &x[i * cols..(i + 3) * cols],
                    &mut three,
                    &mut scratch,
                    &pool,
                );
                let want = &all[i * rows..(i + 3) * rows];
                assert_eq!(bits(&three), bits(want), "{isa:?} rows {i}..{}", i + 3);
            }
            if isa.tier() != Tier::Portable {
                match &simd {
                    None => simd = Some(bits(&all)),
                    Some(b) => {
                        assert_eq!(&bits(&all), b, "{isa:?} differs from the other SIMD tiers")
                    }
                }
            }
        }
    }

    /// Panels packed from the weights as stored (int8 blocks; f16 rows converted in
    /// the transpose) give the bits of the same values widened a row at a time (an
    /// f32 matrix of them), on every tier, over a whole panel and a part one, and
    /// more columns than one block.
    #[test]
    fn stored_panels_change_no_bit() {
        let mut rng = Rng(6);
        let mut next = || rng.unit();
        let pool = Pool::new(2);
        let mut scratch = MatmulScratch::new();
        let (rows, cols, n) = (PANEL + 21, 2 * KC + 128, 53);
        let w: Vec<f32> = (0..rows * cols).map(|_| next()).collect();
        let x: Vec<f32> = (0..n * cols).map(|_| next()).collect();
        for format in [WeightFormat::Int8, WeightFormat::F16, WeightFormat::Bf16] {
            let m = Matrix::from_f32(rows, cols, w.clone(), format);
            let mut widened = vec![0f32; rows * cols];
            for (r, row) in widened.chunks_exact_mut(cols).enumerate() {
                m.row_into(r, row);
            }
            let mf = Matrix::from_f32(rows, cols, widened, WeightFormat::F32);
            for isa in isa::tiers_under_test("matmul stored panels") {
                let (mut a, mut b) = (vec![0f32; n * rows], vec![0f32; n * rows]);
                matmul_isa(isa, &m, &x, &mut a, &mut scratch, &pool);
                matmul_isa(isa, &mf, &x, &mut b, &mut scratch, &pool);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&a), bits(&b), "{format:?} {isa:?}");
            }
        }
    }
}
