//! Winograd F(4,4) for the undilated residual convolutions of the wide stages.
//!
//! A `k`-tap convolution is cut into `G = ⌈k/4⌉` groups of 4 taps, with one zero
//! tap in front (`4G − k = 1` for k = 3, 7, 11), and each group is one F(4,4)
//! product over 7 points: for the 4 output rows of tile `b`,
//!
//! ```text
//! y[4b..4b+4] = bias + Aᵀ · Σ_g U_g ⊙ V[b+g],   V[j] = Bᵀ · x[4j..4j+7],   U_g = G · w[4g..4g+4]
//! ```
//!
//! where group `g` of tile `b` reads the transformed input of the tile `g` later,
//! so every input tile is transformed once. For each point the sum over groups is
//! an implicit GEMM with `G` taps one tile apart — the conv kernels' own
//! [`Packed`] form, run by the same micro-kernels — so 7 products of
//! `(T/4) × G·cin × cout` replace one of `T × k·cin × cout`: `7G/4k` of the
//! multiplications (0.58, 0.50, 0.48 for k = 3, 7, 11).
//!
//! * The zero tap reads the row before the window, so the input keeps `4G − 1 = k`
//!   history rows (one more than the direct conv): a real row in a stream and in a
//!   batch alike, so both compute the same bits.
//! * Tiles start at multiples of 4 rows of each call; every call has a multiple of
//!   4 rows (the wide stages have 64 or more per frame), so a stream of one-frame
//!   calls and one many-frame call tile the same rows.
//! * The transforms are plain Rust over channel runs (auto-vectorised, each
//!   element's operations in a fixed order, no FMA), so every tier computes the
//!   same transforms; the GEMMs are the tiers' conv kernels.
//! * Points 0, ±1, ±1/2, −2, ∞: in f32 on random data this F(4,4) is within
//!   ≈ 1.5e-6 (relative to the output's peak) of the exact sum, against ≈ 1.2e-7
//!   for the direct conv — ample for the codec's 2e-4 gate.

use rill_kernels::{Isa, Pool};

use super::{gemm_many, AVec, Epilogue, Job, OutPtr, Packed, MAX_JOBS};

/// Output rows per tile, and taps per group.
pub(crate) const TILE: usize = 4;
/// Points of the F(4,4) transform (`2·TILE − 1`).
pub(crate) const POINTS: usize = 2 * TILE - 1;
/// Most convolutions of one [`winograd_many`] call (one per residual branch).
pub(crate) const MAX_CONVS: usize = MAX_JOBS / POINTS;

/// The interpolation points (`None` = ∞).
const INTERPOLATION: [Option<f64>; POINTS] = [
    Some(0.0),
    Some(1.0),
    Some(-1.0),
    Some(0.5),
    Some(-0.5),
    Some(-2.0),
    None,
];

/// Toom–Cook matrices of F(4,4) for [`INTERPOLATION`].
pub(crate) struct Transform {
    /// Input transform `Bᵀ` (7 × 7).
    pub bt: [[f32; POINTS]; POINTS],
    /// Filter transform `G` (7 × 4), kept in f64: the weights are transformed once.
    pub g: [[f64; TILE]; POINTS],
    /// Output transform `Aᵀ` (4 × 7).
    pub at: [[f32; POINTS]; TILE],
}

impl Transform {
    /// Correlation `y_q = Σ_j w_j x_{q+j}` is the transpose of the polynomial
    /// product: with `V_n` the 7 × n evaluation (Vandermonde) matrices and
    /// `L = V_7⁻¹` the interpolation, `y = V_4ᵀ ((V_4 w) ⊙ (Lᵀ x))`, so
    /// `Bᵀ = Lᵀ`, `G = V_4`, `Aᵀ = V_4ᵀ`. The point at ∞ evaluates the top coefficient.
    pub(crate) fn f44() -> Transform {
        let eval = |p: Option<f64>, i: usize, n: usize| match p {
            Some(x) => x.powi(i as i32),
            None => f64::from(u8::from(i == n - 1)),
        };
        let mut v7 = [[0f64; POINTS]; POINTS];
        for (row, &p) in v7.iter_mut().zip(&INTERPOLATION) {
            for (i, e) in row.iter_mut().enumerate() {
                *e = eval(p, i, POINTS);
            }
        }
        let l = invert(v7);
        let mut t = Transform {
            bt: [[0.0; POINTS]; POINTS],
            g: [[0.0; TILE]; POINTS],
            at: [[0.0; POINTS]; TILE],
        };
        for (k, &p) in INTERPOLATION.iter().enumerate() {
            for i in 0..POINTS {
                t.bt[k][i] = l[i][k] as f32;
            }
            for j in 0..TILE {
                t.g[k][j] = eval(p, j, TILE);
                t.at[j][k] = eval(p, j, TILE) as f32;
            }
        }
        t
    }
}

/// Gauss–Jordan inverse with partial pivoting (the Vandermonde matrix above is
/// well conditioned enough for f64: the transform test checks the identity).
fn invert(mut a: [[f64; POINTS]; POINTS]) -> [[f64; POINTS]; POINTS] {
    let mut inv = [[0f64; POINTS]; POINTS];
    for (i, row) in inv.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for col in 0..POINTS {
        let pivot = (col..POINTS)
            .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let d = a[col][col];
        for j in 0..POINTS {
            a[col][j] /= d;
            inv[col][j] /= d;
        }
        for r in 0..POINTS {
            if r != col {
                let f = a[r][col];
                for j in 0..POINTS {
                    a[r][j] -= f * a[col][j];
                    inv[r][j] -= f * inv[col][j];
                }
            }
        }
    }
    inv
}

/// An undilated `k`-tap convolution in F(4,4) form: one packed GEMM per point.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WinogradConv {
    pub cin: usize,
    pub n: usize,
    /// Tap groups `⌈k/4⌉`.
    pub groups: usize,
    /// `U` of each point as a `groups`-tap GEMM (taps one input tile apart).
    points: Vec<Packed>,
    bias: Vec<f32>,
    bt: [[f32; POINTS]; POINTS],
    at: [[f32; POINTS]; TILE],
}

impl WinogradConv {
    /// From a torch-layout weight `[n][cin][kernel]` (dilation 1).
    pub(crate) fn new(w: &[f32], bias: &[f32], n: usize, cin: usize, kernel: usize) -> Self {
        assert_eq!(w.len(), n * cin * kernel, "conv weight size");
        assert_eq!(bias.len(), n, "bias size");
        let t = Transform::f44();
        let groups = kernel.div_ceil(TILE);
        let pad = groups * TILE - kernel;
        // Padded tap `j` of the groups is weight tap `j − pad` (zero in front).
        let tap = |o: usize, ci: usize, j: usize| -> f64 {
            j.checked_sub(pad)
                .map_or(0.0, |j| f64::from(w[(o * cin + ci) * kernel + j]))
        };
        let zero_bias = vec![0f32; n];
        let points = (0..POINTS)
            .map(|k| {
                let mut u = vec![0f32; n * cin * groups];
                for o in 0..n {
                    for ci in 0..cin {
                        for g in 0..groups {
                            let s: f64 = (0..TILE)
                                .map(|jj| t.g[k][jj] * tap(o, ci, g * TILE + jj))
                                .sum();
                            u[(o * cin + ci) * groups + g] = s as f32;
                        }
                    }
                }
                // Tap g reads the transformed tile g later: `g` rows of `cin`.
                Packed::conv(&u, &zero_bias, n, cin, groups, 1)
            })
            .collect();
        WinogradConv {
            cin,
            n,
            groups,
            points,
            bias: bias.to_vec(),
            bt: t.bt,
            at: t.at,
        }
    }

    /// History rows the input keeps (`4G − 1`: one more than the direct conv).
    pub(crate) fn history_rows(&self) -> usize {
        self.groups * TILE - 1
    }

    /// Transformed input tiles of a call with `rows` output rows.
    fn input_tiles(&self, rows: usize) -> usize {
        rows / TILE + self.groups - 1
    }

    /// Scratch floats one convolution of `rows` output rows needs.
    pub(crate) fn scratch_len(&self, rows: usize) -> (usize, usize) {
        (
            POINTS * self.input_tiles(rows) * self.cin,
            POINTS * (rows / TILE) * self.n,
        )
    }
}

/// Scratch of [`winograd_many`], per convolution: transformed input and products.
#[derive(Clone)]
pub(crate) struct WinogradScratch {
    v: Vec<AVec>,
    m: Vec<AVec>,
}

impl WinogradScratch {
    /// For [`MAX_CONVS`] convolutions of at most these [`WinogradConv::scratch_len`]s.
    pub(crate) fn new((v, m): (usize, usize)) -> WinogradScratch {
        WinogradScratch {
            v: (0..MAX_CONVS).map(|_| AVec::zeros(v)).collect(),
            m: (0..MAX_CONVS).map(|_| AVec::zeros(m)).collect(),
        }
    }
}

/// One convolution: `out[out_base + r·out_stride ..][..n] (=|+=) conv(input)[r]`
/// for `rows` rows, `input` holding `history_rows()` history rows then the
/// current ones, `cin` floats apart.
pub(crate) struct WinogradJob<'a> {
    pub w: &'a WinogradConv,
    pub input: &'a [f32],
    pub rows: usize,
    pub out_base: usize,
    pub out_stride: usize,
    pub accumulate: bool,
}

/// Input tiles per transform task.
const TILES_PER_TASK: usize = 8;

/// Up to [`MAX_CONVS`] independent convolutions: input transforms, the 7 point
/// GEMMs of each, output transforms — three pool dispatches.
pub(crate) fn winograd_many(
    isa: Isa,
    jobs: &[WinogradJob<'_>],
    outs: &mut [&mut [f32]],
    scratch: &mut WinogradScratch,
    pool: &Pool,
) {
    assert!(
        jobs.len() == outs.len() && jobs.len() <= MAX_CONVS,
        "winograd_many job count"
    );
    if jobs.iter().all(|j| j.rows == 0) {
        return;
    }
    for (i, (job, out)) in jobs.iter().zip(outs.iter()).enumerate() {
        let w = job.w;
        assert!(job.rows % TILE == 0, "Winograd rows must be whole tiles");
        assert!(
            (w.history_rows() + job.rows) * w.cin <= job.input.len(),
            "Winograd job reads outside its input"
        );
        assert!(
            job.rows <= 1 || job.out_stride >= w.n,
            "Winograd rows overlap"
        );
        assert!(
            job.rows == 0 || job.out_base + (job.rows - 1) * job.out_stride + w.n <= out.len(),
            "Winograd job writes outside its output"
        );
        let (v, m) = w.scratch_len(job.rows);
        assert!(
            v <= scratch.v[i].len() && m <= scratch.m[i].len(),
            "Winograd scratch too small"
        );
    }

    // 1. V = Bᵀ x for every input tile.
    let mut tasks = [0usize; MAX_CONVS];
    let mut vptr = [OutPtr::null(); MAX_CONVS];
    for (i, (job, v)) in jobs.iter().zip(scratch.v.iter_mut()).enumerate() {
        vptr[i] = OutPtr::new(v);
        tasks[i] = job.w.input_tiles(job.rows).div_ceil(TILES_PER_TASK);
    }
    run_split(pool, &tasks, &|i, task| {
        let (job, w) = (&jobs[i], jobs[i].w);
        let (c, nt) = (w.cin, w.input_tiles(job.rows));
        let t0 = task * TILES_PER_TASK;
        for j in t0..(t0 + TILES_PER_TASK).min(nt) {
            let x = &job.input[j * TILE * c..(j * TILE + POINTS) * c];
            for (k, coef) in w.bt.iter().enumerate() {
                // SAFETY: tasks own disjoint tiles `j`; point `k`'s run of tile `j`
                // (`(k·nt + j)·c ..` + c) lies inside the scratch (asserted above).
                let dst =
                    unsafe { std::slice::from_raw_parts_mut(vptr[i].at((k * nt + j) * c), c) };
                combine(coef, x, c, dst);
            }
        }
    });

    // 2. M_k = V_k · U_k: one GEMM per point and convolution.
    let nj = jobs.len() * POINTS;
    let v = &scratch.v;
    let gemms: [Job<'_>; MAX_JOBS] = std::array::from_fn(|q| {
        let (i, k) = ((q / POINTS).min(jobs.len() - 1), q % POINTS);
        let (job, w) = (&jobs[i], jobs[i].w);
        let run = w.input_tiles(job.rows) * w.cin;
        Job {
            w: &w.points[k],
            input: &v[i][k * run..(k + 1) * run],
            in_base: 0,
            in_stride: w.cin,
            rows: job.rows / TILE,
            out_base: 0,
            out_stride: w.n,
            epi: Epilogue::Store,
        }
    });
    let mut runs = scratch.m.iter_mut().zip(jobs).flat_map(|(m, job)| {
        let len = (job.rows / TILE * job.w.n).max(1);
        m[..POINTS * len].chunks_mut(len)
    });
    let mut mouts: [&mut [f32]; MAX_JOBS] =
        std::array::from_fn(|_| runs.next().unwrap_or(&mut [][..]));
    gemm_many(isa, &gemms[..nj], &mut mouts[..nj], pool);

    // 3. y = bias + Aᵀ M, stored or added.
    let mut optr = [OutPtr::null(); MAX_CONVS];
    for (i, (job, out)) in jobs.iter().zip(outs.iter_mut()).enumerate() {
        optr[i] = OutPtr::new(out);
        tasks[i] = (job.rows / TILE).div_ceil(TILES_PER_TASK);
    }
    let m = &scratch.m;
    run_split(pool, &tasks, &|i, task| {
        let (job, w) = (&jobs[i], jobs[i].w);
        let (n, nb) = (w.n, job.rows / TILE);
        let b0 = task * TILES_PER_TASK;
        for b in b0..(b0 + TILES_PER_TASK).min(nb) {
            for (q, coef) in w.at.iter().enumerate() {
                let r = b * TILE + q;
                // SAFETY: tasks own disjoint tiles, so disjoint output rows `r`
                // (`out_stride ≥ n`), inside the output (asserted above).
                let dst = unsafe {
                    std::slice::from_raw_parts_mut(optr[i].at(job.out_base + r * job.out_stride), n)
                };
                output_row(coef, &m[i], b * n, nb * n, &w.bias, job.accumulate, dst);
            }
        }
    });
}

/// Runs `tasks[i]` tasks of each convolution `i` in one pool dispatch.
fn run_split(pool: &Pool, tasks: &[usize; MAX_CONVS], f: &(dyn Fn(usize, usize) + Sync)) {
    let total = tasks.iter().sum();
    pool.run(total, &|mut task| {
        let mut i = 0;
        while task >= tasks[i] {
            task -= tasks[i];
            i += 1;
        }
        f(i, task);
    });
}

/// `dst = Σ_i coef[i]·x[i·c ..][..c]` over the nonzero coefficients, in order.
fn combine(coef: &[f32; POINTS], x: &[f32], c: usize, dst: &mut [f32]) {
    dst.fill(0.0);
    for (i, &a) in coef.iter().enumerate() {
        if a != 0.0 {
            for (d, s) in dst.iter_mut().zip(&x[i * c..(i + 1) * c]) {
                *d += a * *s;
            }
        }
    }
}

/// One output row: `Σ_k coef[k]·M_k[at ..][..n] + bias`, stored or added.
fn output_row(
    coef: &[f32; POINTS],
    m: &[f32],
    at: usize,
    point_stride: usize,
    bias: &[f32],
    accumulate: bool,
    dst: &mut [f32],
) {
    let n = dst.len();
    let mut acc = [0f32; 64];
    for c0 in (0..n).step_by(acc.len()) {
        let w = acc.len().min(n - c0);
        let acc = &mut acc[..w];
        acc.fill(0.0);
        for (k, &a) in coef.iter().enumerate() {
            if a != 0.0 {
                let row = &m[k * point_stride + at + c0..][..w];
                for (d, s) in acc.iter_mut().zip(row) {
                    *d += a * *s;
                }
            }
        }
        let (d, b) = (&mut dst[c0..c0 + w], &bias[c0..c0 + w]);
        if accumulate {
            for ((d, y), b) in d.iter_mut().zip(acc.iter()).zip(b) {
                *d += *y + *b;
            }
        } else {
            for ((d, y), b) in d.iter_mut().zip(acc.iter()).zip(b) {
                *d = *y + *b;
            }
        }
    }
}

#[cfg(test)]
mod tests;
