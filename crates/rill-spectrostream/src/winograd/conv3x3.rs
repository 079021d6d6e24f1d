//! [`WinoConv3x3`]: the stride-1 3×3 convolution in the Winograd domain, `F(mt×mf, 3×3)`.

use rill_kernels::{DisjointOut, Isa, Pool};

use super::{supported, WinoScratch, L};
use crate::conv::GridConv;
use crate::grid::{AVec, Grid, GridShape};
use crate::kernels::winograd::{self as tiles, g_matrix, InArgs, OutArgs};
use crate::kernels::{elu_in_place, gemm, Blocking, Epilogue, Job, Packed, RowMap};

/// Most transformed positions (`F(4×4, 3×3)`: 6 × 6).
const MAX_XI: usize = 36;
/// Freq tiles per transform task.
const TILES_PER_TASK: usize = 8;

/// A stride-1 3×3 convolution, causal in time, 'same' in freq, in the Winograd domain.
#[derive(Debug, Clone)]
pub(crate) struct WinoConv3x3 {
    pub mt: usize,
    pub mf: usize,
    pub cin: usize,
    pub cout: usize,
    /// Freq size of input and output.
    pub f: usize,
    /// `U[ξ]`, `ξ = i·α_f + j`, each `cin × cout` with zero bias.
    u: Vec<Packed>,
    bias: AVec,
}

/// Geometry of one run.
#[derive(Clone, Copy)]
struct Geo {
    groups: usize,
    nti: usize,
    ntf: usize,
}

impl Geo {
    fn tiles(&self) -> usize {
        self.groups * self.nti * self.ntf
    }

    /// Transform tasks: each takes up to [`TILES_PER_TASK`] freq tiles of one
    /// (group, row tile).
    fn tasks(&self) -> usize {
        self.groups * self.nti * self.ntf.div_ceil(TILES_PER_TASK)
    }

    /// Calls `f(g, ti, tf, tile)` for each tile of transform task `task`: group `g`,
    /// row tile `ti`, freq tile `tf`, and the tile's index among all `tiles()`.
    #[inline(always)]
    fn for_tiles_of(&self, task: usize, mut f: impl FnMut(usize, usize, usize, usize)) {
        let nfb = self.ntf.div_ceil(TILES_PER_TASK);
        let (row, fb) = (task / nfb, task % nfb);
        let (g, ti) = (row / self.nti, row % self.nti);
        let f0 = fb * TILES_PER_TASK;
        for tf in f0..(f0 + TILES_PER_TASK).min(self.ntf) {
            f(g, ti, tf, (g * self.nti + ti) * self.ntf + tf);
        }
    }
}

impl WinoConv3x3 {
    /// `kernel` in checkpoint layout `[3, 3, cin, cout]`, `bias[cout]`; output tiles of
    /// `mt` rows × `mf` freq bins.
    pub(crate) fn new(
        kernel: &[f32],
        bias: &[f32],
        cin: usize,
        cout: usize,
        f: usize,
        [mt, mf]: [usize; 2],
    ) -> WinoConv3x3 {
        assert!(supported(mt) && supported(mf), "Winograd tile {mt}x{mf}");
        assert!(
            cin.is_multiple_of(L) && cout.is_multiple_of(L),
            "channels must be multiples of 16"
        );
        assert_eq!(kernel.len(), 9 * cin * cout);
        let (gt, gf) = (g_matrix(mt), g_matrix(mf));
        let zero = vec![0f32; cout];
        let mut u = Vec::with_capacity(gt.len() * gf.len());
        let mut w = vec![0f32; cin * cout];
        for rt in gt {
            for rf in gf {
                for (i, wv) in w.iter_mut().enumerate() {
                    let mut s = 0f64;
                    for a in 0..3 {
                        for b in 0..3 {
                            let c = rt[a] * rf[b];
                            if c != 0.0 {
                                s += c * kernel[(a * 3 + b) * cin * cout + i] as f64;
                            }
                        }
                    }
                    *wv = s as f32;
                }
                u.push(Packed::new(&w, vec![0], cin, cout, &zero));
            }
        }
        WinoConv3x3 {
            mt,
            mf,
            cin,
            cout,
            f,
            u,
            bias: AVec::from_slice(bias),
        }
    }

    /// Computes the transformed products in half precision where `isa` can (see
    /// [`Packed::use_half_arithmetic`]).
    pub(crate) fn use_half_arithmetic(&mut self, isa: Isa) {
        for u in &mut self.u {
            u.use_half_arithmetic(isa);
        }
    }

    fn alpha(&self) -> (usize, usize) {
        (self.mt + 2, self.mf + 2)
    }

    fn geo(&self, groups: usize, t: usize) -> Geo {
        assert!(
            t.is_multiple_of(self.mt),
            "{t} rows are not whole Winograd tiles of {}",
            self.mt
        );
        Geo {
            groups,
            nti: t / self.mt,
            ntf: self.f.div_ceil(self.mf),
        }
    }

    /// Scratch for `groups` groups of up to `max_t` rows.
    pub(crate) fn scratch(&self, groups: usize, max_t: usize) -> WinoScratch {
        let (at, af) = self.alpha();
        let tiles = self.geo(groups, max_t.next_multiple_of(self.mt)).tiles();
        WinoScratch {
            v: AVec::zeros(at * af * tiles * self.cin),
            m: AVec::zeros(at * af * tiles * self.cout),
        }
    }

    /// `out[g, t, :, :] = epi(conv(input)[g, t])` for the `t` current rows; `input` is
    /// the grid the direct 3×3 convolution reads.
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
        self.check_grids("winograd", i, t, o, [t, self.f, self.cout]);
        let geo = self.geo(i.groups, t);
        let tiles = geo.tiles();
        let (at, af) = self.alpha();
        let nxi = at * af;
        assert!(
            nxi * tiles * self.cin <= scratch.v.len() && nxi * tiles * self.cout <= scratch.m.len(),
            "winograd scratch too small"
        );
        if tiles == 0 {
            return;
        }

        // 1. Input transform.
        // Tasks write disjoint tiles (columns) of V.
        let v = DisjointOut::new(&mut scratch.v);
        let inp = &input.data[..];
        pool.run(geo.tasks(), &|task| {
            geo.for_tiles_of(task, |g, ti, tf, tile| {
                // SAFETY: the tile reads inside `input` (rows ti·mt .. +α_t of the
                // grid, columns clipped to the grid) and writes only its own slots of
                // V (`nxi·tiles·cin` floats, checked above).
                unsafe {
                    input_tile(isa, self, input, inp.as_ptr(), g, ti, tf, v.at(0), tile);
                }
            })
        });

        // 2. One GEMM per transformed position.
        let jobs: [Job<'_>; MAX_XI] = std::array::from_fn(|xi| {
            let xi = xi.min(nxi - 1);
            Job {
                w: &self.u[xi],
                rows: RowMap {
                    dims: [1, 1, tiles],
                    in_strides: [0, 0, nxi * self.cin],
                    in_base: xi * self.cin,
                    out_strides: [0, 0, nxi * self.cout],
                    out_base: xi * self.cout,
                },
                input: &scratch.v,
                epi: Epilogue::Store,
            }
        });
        gemm(isa, Blocking::Grid, &jobs[..nxi], &mut scratch.m, pool);

        // 3. Output transform, bias, epilogue.
        let out_len = out.data.len();
        // Tasks write disjoint output tiles.
        let op = DisjointOut::new(&mut out.data);
        let m = &scratch.m[..];
        pool.run(geo.tasks(), &|task| {
            geo.for_tiles_of(task, |g, ti, tf, tile| {
                // SAFETY: the tile writes output rows ti·mt .. +mt, columns
                // tf·mf .. min(+mf, f) of group g — inside `out` (asserted in
                // `output_tile`) and disjoint from every other tile.
                unsafe {
                    output_tile(
                        isa,
                        self,
                        o,
                        op.at(0),
                        out_len,
                        m.as_ptr(),
                        g,
                        ti,
                        tf,
                        tile,
                        epi,
                    );
                }
            })
        });
    }
}

/// Transforms input tile `(g, ti, tf)` of `input` into `V` on `isa`'s tier.
///
/// # Safety
/// See `rill_kernels::conv::grid::winograd::input_tile`.
#[allow(clippy::too_many_arguments)]
unsafe fn input_tile(
    isa: Isa,
    c: &WinoConv3x3,
    input: &Grid,
    src: *const f32,
    g: usize,
    ti: usize,
    tf: usize,
    v: *mut f32,
    tile: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let s = input.shape;
        let max_col = s.cols();
        assert!((ti * c.mt + c.mt + 2) <= s.rows());
        let base = s.at(g, ti * c.mt, tf * c.mf);
        let args = InArgs {
            src: src.add(base),
            row_stride: s.row_stride(),
            col_stride: s.c,
            valid_cols: max_col - tf * c.mf,
            cin: c.cin,
            v,
            tile,
        };
        tiles::input_tile(isa, c.mt, c.mf, args)
    }
}

/// Transforms output tile `(g, ti, tf)` from `M` into `out` on `isa`'s tier, then
/// applies the ELU if `epi` asks for it.
///
/// # Safety
/// See `rill_kernels::conv::grid::winograd::output_tile`.
#[allow(clippy::too_many_arguments)]
unsafe fn output_tile(
    isa: Isa,
    c: &WinoConv3x3,
    o: GridShape,
    out: *mut f32,
    out_len: usize,
    m: *const f32,
    g: usize,
    ti: usize,
    tf: usize,
    tile: usize,
    epi: Epilogue,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    unsafe {
        let ncols = c.mf.min(c.f - tf * c.mf);
        let first = o.interior(g, ti * c.mt, tf * c.mf);
        let last = o.interior(g, ti * c.mt + c.mt - 1, tf * c.mf) + ncols * o.c;
        assert!(last <= out_len, "winograd output tile outside the grid");
        let args = OutArgs {
            dst: out.add(first),
            row_stride: o.row_stride(),
            ncols,
            cout: c.cout,
            m,
            tile,
            bias: c.bias.as_ptr(),
            epi,
        };
        tiles::output_tile(isa, c.mt, c.mf, &args);
        if epi == Epilogue::Elu {
            for r in 0..c.mt {
                let seg = std::slice::from_raw_parts_mut(
                    out.add(first + r * o.row_stride()),
                    ncols * o.c,
                );
                elu_in_place(isa, seg);
            }
        }
    }
}

/// The direct 3×3 convolution's grid.
impl GridConv for WinoConv3x3 {
    fn input_shape(&self, groups: usize, max_t: usize) -> GridShape {
        GridShape {
            groups,
            hist: 2,
            max_t,
            f: self.f,
            pl: 1,
            pr: 1,
            c: self.cin,
        }
    }
}
