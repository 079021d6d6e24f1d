//! Winograd F(4,4) for the residual convolutions of the wide stages.
//!
//! A `k`-tap convolution is cut into `G = ⌈k/4⌉` groups of 4 taps, with one zero
//! tap in front (`4G − k = 1` for k = 3, 7, 11), and each group is one F(4,4)
//! product over 7 points. With dilation `d`, a tile is 4 outputs of one phase
//! (`d` rows apart), and for tile `b` of a phase
//!
//! ```text
//! y[b] = bias + Aᵀ · Σ_g U_g ⊙ V[b+g],   V[j] = Bᵀ · x[tile j's 7 rows],   U_g = G · w[4g..4g+4]
//! ```
//!
//! where group `g` reads the transformed input of the phase's tile `g` later, so
//! every input tile is transformed once. For each point the sum over groups is an
//! implicit GEMM with `G` taps — the conv kernels' own [`Packed`] form, run by the
//! same micro-kernels — so 7 products of `(T/4) × G·cin × cout` replace one of
//! `T × k·cin × cout`: `7G/4k` of the multiplications (0.58, 0.50, 0.48 for
//! k = 3, 7, 11), for ≈ 2× the weight bytes.
//!
//! * The zero tap reads `d` rows before the window, so the input keeps `k·d`
//!   history rows (`d` more than the direct conv): real rows in a stream and in a
//!   batch alike, so both compute the same bits.
//! * Tiles never cross a frame: each frame's rows are tiled from its first row in
//!   blocks of `4d` rows (one tile per phase), and the rows after the last whole
//!   block run the direct conv. A stream of one-frame calls and one many-frame
//!   call therefore compute the same bits.
//! * The transforms are plain Rust over channel runs (auto-vectorised, each
//!   element's operations in a fixed order, no FMA), so every tier computes the
//!   same transforms; the GEMMs are the tiers' conv kernels.
//! * Points 0, ±1, ±1/2, −2, ∞: in f32 on random data this F(4,4) is within
//!   ≈ 3e-6 (relative to the output's peak) of the exact sum, against ≈ 2e-7 for
//!   the direct conv — ample for the codec's 2e-4 gate.

use crate::{DisjointOut, Isa, Pool};

use super::{gemm_many, Blocking, Epilogue, Job, Packed, RowMap, MAX_JOBS};
use crate::conv::run_jobs;
use crate::AVec;

/// Output rows per tile, and taps per group.
pub const TILE: usize = 4;
/// Points of the F(4,4) transform (`2·TILE − 1`).
pub const POINTS: usize = 2 * TILE - 1;
/// Most convolutions of one [`winograd_many`] call (one per residual branch).
pub const MAX_CONVS: usize = MAX_JOBS / (POINTS + 1);

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
pub struct Transform {
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
    pub fn f44() -> Transform {
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
                // Exact zeros come out of the inverse as ±1e-17 or so: keep them
                // zero, so the transform skips them.
                let v = l[i][k];
                t.bt[k][i] = if v.abs() < 1e-9 { 0.0 } else { v as f32 };
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

/// A `k`-tap convolution with dilation `d` in F(4,4) form: one packed GEMM per
/// point, and the direct conv for the rows no whole tile covers.
///
/// A tile is 4 outputs of one phase, `d` rows apart; a block of `4d` rows holds
/// one tile of each phase. Tiles never cross a frame (each frame's rows are tiled
/// from its first row: `B = ⌊T/4d⌋` blocks, the last `T − 4dB` rows direct), so a
/// stream of one-frame calls and a many-frame call compute the same bits.
#[derive(Debug, Clone, PartialEq)]
pub struct WinogradConv {
    pub cin: usize,
    pub n: usize,
    /// Tap groups `⌈k/4⌉`.
    pub groups: usize,
    pub dilation: usize,
    /// `U` of each point as a `groups`-tap GEMM (taps one block of tiles apart).
    points: Vec<Packed>,
    /// The direct conv, for the rows after the last whole block of a frame.
    direct: Packed,
    bias: Vec<f32>,
    bt: [[f32; POINTS]; POINTS],
    at: [[f32; POINTS]; TILE],
}

impl WinogradConv {
    /// From a torch-layout weight `[n][cin][kernel]`.
    pub fn new(
        w: &[f32],
        bias: &[f32],
        n: usize,
        cin: usize,
        kernel: usize,
        dilation: usize,
    ) -> Self {
        // The direct conv first: it checks the weight and bias sizes.
        let direct = Packed::conv(w, bias, n, cin, kernel, dilation);
        assert!(dilation >= 1, "dilation");
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
                // Group g reads the tile of its phase g blocks later: `g·d` tiles on.
                Packed::conv(&u, &zero_bias, n, cin, groups, dilation)
            })
            .collect();
        WinogradConv {
            cin,
            n,
            groups,
            dilation,
            points,
            direct,
            bias: bias.to_vec(),
            bt: t.bt,
            at: t.at,
        }
    }

    /// History rows the input keeps (`(4G − 1)·d`: `d` more than the direct conv,
    /// for the zero tap).
    pub fn history_rows(&self) -> usize {
        (self.groups * TILE - 1) * self.dilation
    }

    /// Whole blocks of `4d` rows in a frame of `frame_rows`.
    fn blocks(&self, frame_rows: usize) -> usize {
        frame_rows / (TILE * self.dilation)
    }

    /// Transformed input tiles of one frame: the blocks' and `G − 1` more blocks'.
    fn input_tiles(&self, frame_rows: usize) -> usize {
        let b = self.blocks(frame_rows);
        if b == 0 {
            0
        } else {
            (b + self.groups - 1) * self.dilation
        }
    }

    /// Scratch floats (transformed input, products) one frame of `frame_rows` needs.
    pub fn scratch_len(&self, frame_rows: usize) -> (usize, usize) {
        (
            POINTS * self.input_tiles(frame_rows) * self.cin,
            POINTS * self.blocks(frame_rows) * self.dilation * self.n,
        )
    }
}

/// Scratch of [`winograd_many`], per convolution: transformed input and products.
#[derive(Clone)]
pub struct WinogradScratch {
    v: Vec<AVec>,
    m: Vec<AVec>,
}

impl WinogradScratch {
    /// For [`MAX_CONVS`] convolutions of at most these [`WinogradConv::scratch_len`]s.
    pub fn new((v, m): (usize, usize)) -> WinogradScratch {
        // At least a float per point: a frame without a whole block still splits
        // its (empty) products into 7 runs.
        let m = m.max(POINTS);
        WinogradScratch {
            v: (0..MAX_CONVS).map(|_| AVec::zeros(v)).collect(),
            m: (0..MAX_CONVS).map(|_| AVec::zeros(m)).collect(),
        }
    }
}

/// One convolution: `out[out_base + r·out_stride ..][..n] (=|+=) conv(input)[r]`
/// for `frames · frame_rows` rows, `input` holding `history_rows()` history rows
/// then the current ones, `cin` floats apart.
pub struct WinogradJob<'a> {
    pub w: &'a WinogradConv,
    pub input: &'a [f32],
    pub frames: usize,
    pub frame_rows: usize,
    pub out_base: usize,
    pub out_stride: usize,
    pub accumulate: bool,
}

/// Input tiles per transform task.
const TILES_PER_TASK: usize = 8;

/// Up to [`MAX_CONVS`] independent convolutions of the same frame count, frame by
/// frame: input transforms; the 7 point GEMMs of each and the direct rows; output
/// transforms — three pool dispatches per frame.
pub fn winograd_many(
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
    let Some(frames) = jobs.first().map(|j| j.frames) else {
        return;
    };
    for (i, (job, out)) in jobs.iter().zip(outs.iter()).enumerate() {
        let (w, rows) = (job.w, job.frames * job.frame_rows);
        assert_eq!(
            job.frames, frames,
            "Winograd jobs of one call share the frames"
        );
        assert!(
            (w.history_rows() + rows) * w.cin <= job.input.len(),
            "Winograd job reads outside its input"
        );
        assert!(rows <= 1 || job.out_stride >= w.n, "Winograd rows overlap");
        assert!(
            rows == 0 || job.out_base + (rows - 1) * job.out_stride + w.n <= out.len(),
            "Winograd job writes outside its output"
        );
        let (v, m) = w.scratch_len(job.frame_rows);
        assert!(
            v <= scratch.v[i].len() && m <= scratch.m[i].len(),
            "Winograd scratch too small"
        );
    }
    for f in 0..frames {
        frame(isa, jobs, f, outs, scratch, pool);
    }
}

/// Frame `f` of every job (see [`winograd_many`]).
fn frame(
    isa: Isa,
    jobs: &[WinogradJob<'_>],
    f: usize,
    outs: &mut [&mut [f32]],
    scratch: &mut WinogradScratch,
    pool: &Pool,
) {
    // 1. V = Bᵀ x for every input tile of the frame: tile `j = b·d + p` (block b,
    // phase p) reads rows `4d·b + p + i·d` (i < 7) of the frame's window.
    let mut tasks = [0usize; MAX_CONVS];
    let mut vptr = [DisjointOut::null(); MAX_CONVS];
    for (i, (job, v)) in jobs.iter().zip(scratch.v.iter_mut()).enumerate() {
        vptr[i] = DisjointOut::new(v);
        tasks[i] = job.w.input_tiles(job.frame_rows).div_ceil(TILES_PER_TASK);
    }
    run_jobs(pool, &tasks[..jobs.len()], &|i, task| {
        let (job, w) = (&jobs[i], jobs[i].w);
        let (c, d, nt) = (w.cin, w.dilation, w.input_tiles(job.frame_rows));
        let x = &job.input[f * job.frame_rows * c..];
        let t0 = task * TILES_PER_TASK;
        for j in t0..(t0 + TILES_PER_TASK).min(nt) {
            let first = TILE * d * (j / d) + j % d;
            for (k, coef) in w.bt.iter().enumerate() {
                // SAFETY: tasks own disjoint tiles `j`; point `k`'s run of tile `j`
                // (`(k·nt + j)·c ..` + c) lies inside the scratch (asserted above).
                let dst =
                    unsafe { std::slice::from_raw_parts_mut(vptr[i].at((k * nt + j) * c), c) };
                transforms::combine(isa, coef, x, first, d, c, dst);
            }
        }
    });

    // 2. M_k = V_k · U_k: one GEMM per point and convolution, and the direct rows.
    let nj = jobs.len() * (POINTS + 1);
    let v = &scratch.v;
    let gemms: [Job<'_>; MAX_JOBS] = std::array::from_fn(|q| {
        let (i, k) = ((q / (POINTS + 1)).min(jobs.len() - 1), q % (POINTS + 1));
        let (job, w) = (&jobs[i], jobs[i].w);
        let (c, d) = (w.cin, w.dilation);
        let covered = w.blocks(job.frame_rows) * TILE * d;
        if k == POINTS {
            // The rows after the last block, directly (its window starts `d` rows
            // into ours: the direct conv has no zero tap).
            let r0 = f * job.frame_rows + covered;
            return Job {
                w: &w.direct,
                input: job.input,
                rows: RowMap::strided(
                    job.frame_rows - covered,
                    (r0 + d) * c,
                    c,
                    job.out_base + r0 * job.out_stride,
                    job.out_stride,
                ),
                epi: if job.accumulate {
                    Epilogue::Accumulate
                } else {
                    Epilogue::Store
                },
            };
        }
        let run = w.input_tiles(job.frame_rows) * c;
        Job {
            w: &w.points[k],
            input: &v[i][k * run..(k + 1) * run],
            rows: RowMap::strided(covered / TILE, 0, c, 0, w.n),
            epi: Epilogue::Store,
        }
    });
    let mut runs = scratch
        .m
        .iter_mut()
        .zip(jobs.iter().zip(outs.iter_mut()))
        .flat_map(|(m, (job, out))| {
            let w = job.w;
            let len = (w.blocks(job.frame_rows) * w.dilation * w.n).max(1);
            m[..POINTS * len]
                .chunks_mut(len)
                .chain(std::iter::once(&mut **out))
        });
    let mut gouts: [&mut [f32]; MAX_JOBS] =
        std::array::from_fn(|_| runs.next().unwrap_or(&mut [][..]));
    gemm_many(isa, Blocking::Causal, &gemms[..nj], &mut gouts[..nj], pool);

    // 3. y = bias + Aᵀ M for the tiles, stored or added: tile `j`'s output `q` is
    // row `4d·b + p + q·d`.
    let mut optr = [DisjointOut::null(); MAX_CONVS];
    for (i, (job, out)) in jobs.iter().zip(outs.iter_mut()).enumerate() {
        optr[i] = DisjointOut::new(out);
        tasks[i] = (job.w.blocks(job.frame_rows) * job.w.dilation).div_ceil(TILES_PER_TASK);
    }
    let m = &scratch.m;
    run_jobs(pool, &tasks[..jobs.len()], &|i, task| {
        let (job, w) = (&jobs[i], jobs[i].w);
        let (n, d) = (w.n, w.dilation);
        let nt = w.blocks(job.frame_rows) * d;
        let j0 = task * TILES_PER_TASK;
        for j in j0..(j0 + TILES_PER_TASK).min(nt) {
            let first = f * job.frame_rows + TILE * d * (j / d) + j % d;
            for (q, coef) in w.at.iter().enumerate() {
                let r = first + q * d;
                // SAFETY: tasks own disjoint tiles, so disjoint output rows `r`
                // (`out_stride ≥ n`), inside the output (asserted above).
                let dst = unsafe {
                    std::slice::from_raw_parts_mut(optr[i].at(job.out_base + r * job.out_stride), n)
                };
                let rows = transforms::PointRows {
                    m: &m[i],
                    at: j * n,
                    point_stride: nt * n,
                };
                transforms::output_row(isa, coef, rows, &w.bias, job.accumulate, dst);
            }
        }
    });
}

mod transforms;

#[cfg(test)]
mod tests;
