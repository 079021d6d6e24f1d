//! [`WinoConvT`]: the transposed convolution with time stride 1 and 3 time taps, with
//! Winograd `F(mt, 3)` along time.

use rill_kernels::{DisjointOut, Isa, Pool};

use super::{supported, WinoScratch, L};
use crate::conv::{GridConv, TransposeWeights};
use crate::grid::{AVec, Grid, GridShape};
use crate::kernels::winograd::{self as tiles, g_matrix, ColArgs};
use crate::kernels::{elu_in_place, gemm, Blocking, Epilogue, Job, Packed, RowMap};

/// A transposed convolution with time stride 1 and 3 time taps (`decoder_2..6`) with
/// Winograd `F(mt, 3)` along time: per stride phase, the 3 time taps become `mt + 2`
/// transformed GEMMs of the phase's freq taps (`mt = 4`: 2× fewer products). Same
/// phase geometry, input grid and state as [`crate::conv::Conv2dTranspose`].
#[derive(Debug, Clone)]
pub(crate) struct WinoConvT {
    pub mt: usize,
    pub sf: usize,
    pub cin: usize,
    pub cout: usize,
    pub f_in: usize,
    pl: usize,
    pr: usize,
    phases: Vec<TPhase>,
    bias: AVec,
}

#[derive(Debug, Clone)]
struct TPhase {
    j0: usize,
    nj: usize,
    fo0: usize,
    /// `U[ξ]`, `[freq taps][cin][cout]` with taps `J − jb`, zero bias.
    u: Vec<Packed>,
}

/// Most jobs of one [`WinoConvT`] GEMM call (6 transformed rows × 3 phases).
const MAX_T_JOBS: usize = 18;
/// Freq positions per transform task.
const COLS_PER_TASK: usize = 16;

impl WinoConvT {
    /// `weights` with kernel `[3, kf, cin, cout]`, strides `(1, sf)`.
    pub(crate) fn new(weights: &TransposeWeights, mt: usize) -> WinoConvT {
        let ([kt, kf, cin, cout], [st, sf]) = (weights.shape, weights.stride);
        let (kernel, bias, f_in) = (weights.kernel, weights.bias, weights.f_in);
        assert!(
            kt == 3 && st == 1 && supported(mt),
            "WinoConvT needs 3 time taps, stride 1"
        );
        assert!(
            cin.is_multiple_of(L) && cout.is_multiple_of(L),
            "channels must be multiples of 16"
        );
        let (specs, pl, pr) = crate::conv::phase_specs(kf, sf, f_in);
        assert!(specs.len() * (mt + 2) <= MAX_T_JOBS);
        let g = g_matrix(mt);
        let zero = vec![0f32; cout];
        let n = cin * cout;
        let phases = specs
            .iter()
            .map(|&(pq, j0, nj, fo0, max_jb)| {
                let cin_i = cin as isize;
                let taps: Vec<isize> = (0..=max_jb).map(|jb| -(jb as isize) * cin_i).collect();
                let u = g
                    .iter()
                    .map(|row| {
                        let mut w = vec![0f32; taps.len() * n];
                        for jb in 0..=max_jb {
                            let b = kf - 1 - (pq + jb * sf);
                            for i in 0..n {
                                // Time tap k reads buffer row I + k = input row I − (2 − k):
                                // kernel row a = kt − 1 − ja = k.
                                let s: f64 = (0..3)
                                    .filter(|&k| row[k] != 0.0)
                                    .map(|k| row[k] * kernel[(k * kf + b) * n + i] as f64)
                                    .sum();
                                w[jb * n + i] = s as f32;
                            }
                        }
                        Packed::new(&w, taps.clone(), cin, cout, &zero)
                    })
                    .collect();
                TPhase { j0, nj, fo0, u }
            })
            .collect();
        WinoConvT {
            mt,
            sf,
            cin,
            cout,
            f_in,
            pl,
            pr,
            phases,
            bias: AVec::from_slice(bias),
        }
    }

    fn cols(&self) -> usize {
        self.pl + self.f_in + self.pr
    }

    fn nj_max(&self) -> usize {
        self.phases.iter().map(|p| p.nj).max().unwrap_or(0)
    }

    /// Computes the transformed products in half precision where `isa` can (see
    /// [`Packed::use_half_arithmetic`]).
    pub(crate) fn use_half_arithmetic(&mut self, isa: Isa) {
        for u in self.phases.iter_mut().flat_map(|p| &mut p.u) {
            u.use_half_arithmetic(isa);
        }
    }

    /// Scratch for `groups` groups of up to `max_t` input rows.
    pub(crate) fn scratch(&self, groups: usize, max_t: usize) -> WinoScratch {
        let a = self.mt + 2;
        let nti = max_t.div_ceil(self.mt);
        WinoScratch {
            v: AVec::zeros(a * groups * nti * self.cols() * self.cin),
            m: AVec::zeros(a * self.phases.len() * groups * nti * self.nj_max() * self.cout),
        }
    }

    /// `t` current input rows → `t` output rows written to `out`'s interior; `input`
    /// is the grid [`crate::conv::Conv2dTranspose`] reads.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &self,
        isa: Isa,
        input: &Grid,
        t: usize,
        out: &mut Grid,
        epi: Epilogue,
        scratch: &mut WinoScratch,
        pool: &Pool,
    ) {
        let (i, o) = (input.shape, out.shape);
        let out_rows = [t, self.f_in * self.sf, self.cout];
        self.check_grids("winograd convT", i, t, o, out_rows);
        assert!(
            t.is_multiple_of(self.mt),
            "{t} rows are not whole Winograd tiles of {}",
            self.mt
        );
        let (groups, nti, cols, a) = (i.groups, t / self.mt, self.cols(), self.mt + 2);
        let (nph, njm) = (self.phases.len(), self.nj_max());
        let vlen = a * groups * nti * cols * self.cin;
        let mlen = a * nph * groups * nti * njm * self.cout;
        assert!(
            vlen <= scratch.v.len() && mlen <= scratch.m.len(),
            "winograd scratch too small"
        );
        if nti == 0 || groups == 0 {
            return;
        }
        let xi_v = groups * nti * cols * self.cin; // V elements per ξ
        let xi_m = groups * nti * njm * self.cout; // M elements per (ξ, phase)

        // 1. Input transform along time, every column (padding columns included).
        let ncb = cols.div_ceil(COLS_PER_TASK);
        // Tasks write disjoint tiles (columns) of V.
        let v = DisjointOut::new(&mut scratch.v);
        let src = &input.data[..];
        pool.run(groups * nti * ncb, &|task| {
            let (gt, cb) = (task / ncb, task % ncb);
            let (g, ti) = (gt / nti, gt % nti);
            let c0 = cb * COLS_PER_TASK;
            for col in c0..(c0 + COLS_PER_TASK).min(cols) {
                let args = ColArgs {
                    src: input.at(g, ti * self.mt, col),
                    src_stride: i.row_stride(),
                    dst: ((g * nti + ti) * cols + col) * self.cin,
                    dst_stride: xi_v,
                    c: self.cin,
                };
                assert!(args.src + (a - 1) * args.src_stride + self.cin <= input.data.len());
                // SAFETY: reads the α rows of one column inside `input` (asserted);
                // writes this column's slots of V (`vlen` floats, checked above),
                // disjoint from every other task's.
                unsafe { tiles::col_in(isa, self.mt, src.as_ptr(), v.at(0), &args) };
            }
        });

        // 2. GEMMs: one per (ξ, phase), the phase's freq taps over V[ξ].
        let njobs = a * nph;
        let jobs: [Job<'_>; MAX_T_JOBS] = std::array::from_fn(|k| {
            let k = k.min(njobs - 1);
            let (xi, p) = (k / nph, k % nph);
            let ph = &self.phases[p];
            Job {
                w: &ph.u[xi],
                rows: RowMap {
                    dims: [groups, nti, ph.nj],
                    in_strides: [nti * cols * self.cin, cols * self.cin, self.cin],
                    in_base: xi * xi_v + (self.pl + ph.j0) * self.cin,
                    out_strides: [nti * njm * self.cout, njm * self.cout, self.cout],
                    out_base: k * xi_m,
                },
                input: &scratch.v,
                epi: Epilogue::Store,
            }
        });
        gemm(isa, Blocking::Grid, &jobs[..njobs], &mut scratch.m, pool);

        // 3. Output transform along time, bias, epilogue.
        let njb = njm.div_ceil(COLS_PER_TASK);
        let out_len = out.data.len();
        // Tasks write disjoint output tiles.
        let op = DisjointOut::new(&mut out.data);
        let m = &scratch.m[..];
        let m_len = m.len();
        pool.run(nph * groups * nti * njb, &|task| {
            let (rest, jb) = (task / njb, task % njb);
            let (p, gt) = (rest / (groups * nti), rest % (groups * nti));
            let (g, ti) = (gt / nti, gt % nti);
            let ph = &self.phases[p];
            let j0 = jb * COLS_PER_TASK;
            for j in j0..(j0 + COLS_PER_TASK).min(ph.nj) {
                let args = ColArgs {
                    src: p * xi_m + ((g * nti + ti) * njm + j) * self.cout,
                    src_stride: nph * xi_m,
                    dst: o.interior(g, ti * self.mt, ph.fo0 + self.sf * j),
                    dst_stride: o.row_stride(),
                    c: self.cout,
                };
                assert!(
                    args.dst + (self.mt - 1) * args.dst_stride + self.cout <= out_len
                        && args.src + (a - 1) * args.src_stride + self.cout <= m_len
                );
                // SAFETY: in bounds (asserted); each (phase, g, row tile, j) output
                // position is written by one task only.
                unsafe {
                    tiles::col_out(
                        isa,
                        self.mt,
                        m.as_ptr(),
                        op.at(0),
                        &args,
                        self.bias.as_ptr(),
                        epi,
                    );
                    if epi == Epilogue::Elu {
                        for r in 0..self.mt {
                            let d = op.at(0).add(args.dst + r * args.dst_stride);
                            elu_in_place(isa, std::slice::from_raw_parts_mut(d, self.cout));
                        }
                    }
                }
            }
        });
    }
}

/// [`crate::conv::Conv2dTranspose`]'s grid.
impl GridConv for WinoConvT {
    fn input_shape(&self, groups: usize, max_t: usize) -> GridShape {
        GridShape {
            groups,
            hist: 2,
            max_t,
            f: self.f_in,
            pl: self.pl,
            pr: self.pr,
            c: self.cin,
        }
    }
}
