//! Winograd-domain 3×3 convolution, `F(mt×mf, 3×3)` with `mt, mf ∈ {2, 4}`.
//!
//! The stride-1 3×3 convolutions of `decoder_1..6` are compute-bound; in the
//! Winograd domain an output tile of `mt × mf` positions costs `(mt+2)(mf+2)`
//! channel products instead of `9·mt·mf` (`F(4×4)`: 4× fewer). Three passes:
//!
//! 1. input transform `V = Bᵀ_t d B_f` of every `(mt+2) × (mf+2)` input tile
//!    (16 channels at a time), stored as `α_t·α_f` matrices `[tiles][cin]`;
//! 2. one GEMM per transformed position `ξ`: `M[ξ] = V[ξ] · U[ξ]` with the weights
//!    `U = G_t K G_fᵀ` transformed once at load, run by the ordinary packed-panel
//!    kernels (`crate::kernels`) as one multi-job call;
//! 3. output transform `Y = Aᵀ_t M A_f`, plus bias and the epilogue, written to the
//!    output grid.
//!
//! Tiles are aligned to the chunk's first current row and to freq 0, and time tiles
//! never straddle codec frames (`mt` divides the rows per frame), so the streaming
//! step and the batched decoder compute the same tiles with the same operations and
//! stay bit-identical; nothing depends on the thread count. The input grid is the one
//! the direct convolution reads (2 causal history rows, 1 zero column each side), so
//! the streaming state is unchanged. Freq tiles past the last column read zeros and
//! their outputs are dropped.
//!
//! The transforms use plain f32 multiplies and adds (no FMA contraction) in a fixed
//! order, compiled per SIMD tier; every tier computes the same bits for them.

use std::ops::{Add, Mul, Sub};

#[cfg(target_arch = "x86_64")]
use rill_kernels::Tier;
use rill_kernels::{Isa, Pool};

use crate::grid::{AVec, Grid};
use crate::kernels::{elu_in_place, gemm, Epilogue, Job, Packed, RowMap};

/// Lanes per transform vector (channels processed together).
const L: usize = 16;
/// Most transformed positions (`F(4×4, 3×3)`: 6 × 6).
const MAX_XI: usize = 36;
/// Freq tiles per transform task.
const TILES_PER_TASK: usize = 8;

/// Winograd tile sizes supported per axis (outputs per tile).
pub(crate) fn supported(m: usize) -> bool {
    m == 2 || m == 4
}

/// `G` of `F(m, 3)` (`α × 3`), in f64 for the weight transform.
fn g_matrix(m: usize) -> &'static [[f64; 3]] {
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
struct V([f32; L]);

impl V {
    #[inline(always)]
    fn zero() -> V {
        V([0.0; L])
    }
    /// # Safety
    /// `p` valid for 16 reads.
    #[inline(always)]
    unsafe fn load(p: *const f32) -> V {
        V(std::ptr::read_unaligned(p as *const [f32; L]))
    }
    /// # Safety
    /// `p` valid for 16 writes.
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        std::ptr::write_unaligned(p as *mut [f32; L], self.0)
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
fn bt<const M: usize>(d: &[V], v: &mut [V]) {
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
fn at<const M: usize>(m: &[V], y: &mut [V]) {
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

/// A raw pointer shared by transform tasks that write disjoint tiles.
#[derive(Clone, Copy)]
struct SharedMut(*mut f32);
// SAFETY: every task writes only the tiles it was given (disjoint between tasks).
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}

impl SharedMut {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// Transform scratch of one Winograd convolution (owned by the stream's buffers).
#[derive(Clone, PartialEq)]
pub(crate) struct WinoScratch {
    v: AVec,
    m: AVec,
}

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
        assert!(
            i.hist == 2 && i.pl == 1 && i.pr == 1 && i.f == self.f && i.c == self.cin,
            "winograd input grid"
        );
        assert!(o.groups == i.groups && o.f == self.f && o.c == self.cout);
        assert!(t <= i.max_t && t <= o.max_t);
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
        let nfb = geo.ntf.div_ceil(TILES_PER_TASK);
        let tasks = geo.groups * geo.nti * nfb;

        // 1. Input transform.
        let v = SharedMut(scratch.v.as_mut_ptr());
        let inp = &input.data[..];
        pool.run(tasks, &|task| {
            let (row, fb) = (task / nfb, task % nfb);
            let (g, ti) = (row / geo.nti, row % geo.nti);
            let f0 = fb * TILES_PER_TASK;
            for tf in f0..(f0 + TILES_PER_TASK).min(geo.ntf) {
                let tile = (g * geo.nti + ti) * geo.ntf + tf;
                // SAFETY: the tile reads inside `input` (rows ti·mt .. +α_t of the
                // grid, columns clipped to the grid) and writes only its own slots of
                // V (`nxi·tiles·cin` floats, checked above).
                unsafe {
                    input_tile(
                        isa,
                        self,
                        input,
                        inp.as_ptr(),
                        g,
                        ti,
                        tf,
                        v.get(),
                        tile,
                        tiles,
                    );
                }
            }
        });

        // 2. One GEMM per transformed position.
        let jobs: [Job<'_>; MAX_XI] = std::array::from_fn(|xi| {
            let xi = xi.min(nxi - 1);
            Job {
                w: &self.u[xi],
                rows: RowMap {
                    dims: [1, 1, tiles],
                    in_strides: [0, 0, self.cin],
                    in_base: xi * tiles * self.cin,
                    out_strides: [0, 0, self.cout],
                    out_base: xi * tiles * self.cout,
                },
                input: &scratch.v,
                epi: Epilogue::Store,
            }
        });
        gemm(isa, &jobs[..nxi], &mut scratch.m, pool);

        // 3. Output transform, bias, epilogue.
        let op = SharedMut(out.data.as_mut_ptr());
        let out_len = out.data.len();
        let m = &scratch.m[..];
        pool.run(tasks, &|task| {
            let (row, fb) = (task / nfb, task % nfb);
            let (g, ti) = (row / geo.nti, row % geo.nti);
            let f0 = fb * TILES_PER_TASK;
            for tf in f0..(f0 + TILES_PER_TASK).min(geo.ntf) {
                let tile = (g * geo.nti + ti) * geo.ntf + tf;
                // SAFETY: the tile writes output rows ti·mt .. +mt, columns
                // tf·mf .. min(+mf, f) of group g — inside `out` (asserted in
                // `output_tile`) and disjoint from every other tile.
                unsafe {
                    output_tile(
                        isa,
                        self,
                        o,
                        op.get(),
                        out_len,
                        m.as_ptr(),
                        g,
                        ti,
                        tf,
                        tile,
                        tiles,
                        epi,
                    );
                }
            }
        });
    }
}

/// Per-tier instantiation of the transform bodies (same operations on every tier).
macro_rules! dispatch {
    ($isa:expr, $mt:expr, $mf:expr, $f:ident ( $($arg:expr),* )) => {{
        match ($isa.tier(), $mt, $mf) {
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, 4, 4) => avx512::$f::<4, 4>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, 4, 2) => avx512::$f::<4, 2>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, 2, 4) => avx512::$f::<2, 4>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, _, _) => avx512::$f::<2, 2>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, 4, 4) => avx2::$f::<4, 4>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, 4, 2) => avx2::$f::<4, 2>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, 2, 4) => avx2::$f::<2, 4>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, _, _) => avx2::$f::<2, 2>($($arg),*),
            (_, 4, 4) => generic::$f::<4, 4>($($arg),*),
            (_, 4, 2) => generic::$f::<4, 2>($($arg),*),
            (_, 2, 4) => generic::$f::<2, 4>($($arg),*),
            _ => generic::$f::<2, 2>($($arg),*),
        }
    }};
}

/// # Safety
/// See [`generic::input_tile`].
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
    tiles: usize,
) {
    let s = input.shape;
    let max_col = s.cols();
    assert!((ti * c.mt + c.mt + 2) <= s.rows());
    let base = s.at(g, ti * c.mt, tf * c.mf);
    let args = (
        src.add(base),
        s.row_stride(),
        s.c,
        max_col - tf * c.mf,
        c.cin,
        v,
        tile,
        tiles,
    );
    dispatch!(isa, c.mt, c.mf, input_tile(args))
}

/// # Safety
/// See [`generic::output_tile`].
#[allow(clippy::too_many_arguments)]
unsafe fn output_tile(
    isa: Isa,
    c: &WinoConv3x3,
    o: crate::grid::GridShape,
    out: *mut f32,
    out_len: usize,
    m: *const f32,
    g: usize,
    ti: usize,
    tf: usize,
    tile: usize,
    tiles: usize,
    epi: Epilogue,
) {
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
        tiles,
        bias: c.bias.as_ptr(),
        epi,
    };
    dispatch!(isa, c.mt, c.mf, output_tile(&args));
    if epi == Epilogue::Elu {
        for r in 0..c.mt {
            let seg =
                std::slice::from_raw_parts_mut(out.add(first + r * o.row_stride()), ncols * o.c);
            elu_in_place(isa, seg);
        }
    }
}

/// Arguments of an output-tile transform.
struct OutArgs {
    /// Output position of the tile's first row and column.
    dst: *mut f32,
    row_stride: usize,
    /// Valid freq columns of the tile.
    ncols: usize,
    cout: usize,
    /// `M`, `[ξ][tiles][cout]`.
    m: *const f32,
    tile: usize,
    tiles: usize,
    bias: *const f32,
    epi: Epilogue,
}

/// Input-tile arguments: `(src, row_stride, channel stride, valid columns, cin, V, tile, tiles)`.
type InArgs = (
    *const f32,
    usize,
    usize,
    usize,
    usize,
    *mut f32,
    usize,
    usize,
);

mod generic {
    pub(super) use super::generic_t::{col_in, col_out};
    use super::*;

    /// Transforms one input tile: `src` is the tile's first grid element (row ti·mt,
    /// column tf·mf); columns at or past `valid_cols` read as zero.
    ///
    /// # Safety
    /// `src` valid for the tile's `(MT+2) × min(MF+2, valid_cols)` channel runs of `cin`,
    /// `v` for `α_t·α_f·tiles·cin` floats.
    #[inline(always)]
    pub(super) unsafe fn input_tile<const MT: usize, const MF: usize>(
        (src, row_stride, cstride, valid_cols, cin, v, tile, tiles): InArgs,
    ) {
        let (at, af) = (MT + 2, MF + 2);
        let mut d = [[V::zero(); 6]; 6];
        let mut rowt = [[V::zero(); 6]; 6];
        let mut col = [V::zero(); 6];
        let mut res = [V::zero(); 6];
        for c0 in (0..cin).step_by(L) {
            for a in 0..at {
                for b in 0..af {
                    d[a][b] = if b < valid_cols {
                        V::load(src.add(a * row_stride + b * cstride + c0))
                    } else {
                        V::zero()
                    };
                }
                bt::<MF>(&d[a][..af], &mut rowt[a][..af]);
            }
            for j in 0..af {
                for a in 0..at {
                    col[a] = rowt[a][j];
                }
                bt::<MT>(&col[..at], &mut res[..at]);
                for (i, r) in res[..at].iter().enumerate() {
                    r.store(v.add(((i * af + j) * tiles + tile) * cin + c0));
                }
            }
        }
    }

    /// Transforms one output tile, adds the bias and applies Store/Accumulate (the
    /// ELU is applied afterwards, in place, by the caller).
    ///
    /// # Safety
    /// `a.dst` valid for `MT` rows of `a.ncols·cout` floats, `a.m` for the tile's
    /// `α_t·α_f` rows of `cout`.
    #[inline(always)]
    pub(super) unsafe fn output_tile<const MT: usize, const MF: usize>(a: &OutArgs) {
        let (at, af) = (MT + 2, MF + 2);
        let mut mv = [V::zero(); 6];
        let mut rowt = [[V::zero(); 4]; 6];
        let mut col = [V::zero(); 6];
        let mut y = [V::zero(); 4];
        for c0 in (0..a.cout).step_by(L) {
            let bias = V::load(a.bias.add(c0));
            for i in 0..at {
                for j in 0..af {
                    mv[j] = V::load(a.m.add(((i * af + j) * a.tiles + a.tile) * a.cout + c0));
                }
                at_::<MF>(&mv[..af], &mut rowt[i][..MF]);
            }
            for c in 0..a.ncols {
                for i in 0..at {
                    col[i] = rowt[i][c];
                }
                at_::<MT>(&col[..at], &mut y[..MT]);
                for (r, yv) in y[..MT].iter().enumerate() {
                    let dst = a.dst.add(r * a.row_stride + c * a.cout + c0);
                    let val = *yv + bias;
                    match a.epi {
                        Epilogue::Accumulate => (V::load(dst) + val).store(dst),
                        _ => val.store(dst),
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn at_<const M: usize>(m: &[V], y: &mut [V]) {
        at::<M>(m, y)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::*;

    /// # Safety
    /// AVX-512F available; see [`generic::input_tile`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn input_tile<const MT: usize, const MF: usize>(a: InArgs) {
        generic::input_tile::<MT, MF>(a)
    }

    /// # Safety
    /// AVX-512F available; see [`generic::output_tile`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn output_tile<const MT: usize, const MF: usize>(a: &OutArgs) {
        generic::output_tile::<MT, MF>(a)
    }

    /// # Safety
    /// AVX-512F available; see [`generic::col_in`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn col_in<const MT: usize>(s: *const f32, d: *mut f32, a: &ColArgs) {
        generic::col_in::<MT>(s, d, a)
    }

    /// # Safety
    /// AVX-512F available; see [`generic::col_out`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn col_out<const MT: usize>(
        s: *const f32,
        d: *mut f32,
        a: &ColArgs,
        b: *const f32,
        e: Epilogue,
    ) {
        generic::col_out::<MT>(s, d, a, b, e)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;

    /// # Safety
    /// AVX2 available; see [`generic::input_tile`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn input_tile<const MT: usize, const MF: usize>(a: InArgs) {
        generic::input_tile::<MT, MF>(a)
    }

    /// # Safety
    /// AVX2 available; see [`generic::output_tile`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn output_tile<const MT: usize, const MF: usize>(a: &OutArgs) {
        generic::output_tile::<MT, MF>(a)
    }

    /// # Safety
    /// AVX2 available; see [`generic::col_in`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn col_in<const MT: usize>(s: *const f32, d: *mut f32, a: &ColArgs) {
        generic::col_in::<MT>(s, d, a)
    }

    /// # Safety
    /// AVX2 available; see [`generic::col_out`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn col_out<const MT: usize>(
        s: *const f32,
        d: *mut f32,
        a: &ColArgs,
        b: *const f32,
        e: Epilogue,
    ) {
        generic::col_out::<MT>(s, d, a, b, e)
    }
}

/// Per-tier instantiation of the time-only transform bodies.
macro_rules! dispatch_t {
    ($isa:expr, $mt:expr, $f:ident ( $($arg:expr),* )) => {{
        match ($isa.tier(), $mt) {
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, 4) => avx512::$f::<4>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx512, _) => avx512::$f::<2>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, 4) => avx2::$f::<4>($($arg),*),
            #[cfg(target_arch = "x86_64")]
            (Tier::Avx2, _) => avx2::$f::<2>($($arg),*),
            (_, 4) => generic::$f::<4>($($arg),*),
            _ => generic::$f::<2>($($arg),*),
        }
    }};
}

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
    /// `kernel` in checkpoint layout `[3, kf, cin, cout]`, strides `(1, sf)`.
    pub(crate) fn new(
        kernel: &[f32],
        bias: &[f32],
        [kt, kf, cin, cout]: [usize; 4],
        [st, sf]: [usize; 2],
        f_in: usize,
        mt: usize,
    ) -> WinoConvT {
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
        assert!(
            i.hist == 2
                && i.pl == self.pl
                && i.pr == self.pr
                && i.f == self.f_in
                && i.c == self.cin,
            "winograd convT input grid"
        );
        assert!(o.groups == i.groups && o.f == self.f_in * self.sf && o.c == self.cout);
        assert!(t <= i.max_t && t <= o.max_t);
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
        let v = SharedMut(scratch.v.as_mut_ptr());
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
                unsafe { dispatch_t!(isa, self.mt, col_in(src.as_ptr(), v.get(), &args)) };
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
        gemm(isa, &jobs[..njobs], &mut scratch.m, pool);

        // 3. Output transform along time, bias, epilogue.
        let njb = njm.div_ceil(COLS_PER_TASK);
        let op = SharedMut(out.data.as_mut_ptr());
        let out_len = out.data.len();
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
                    dispatch_t!(
                        isa,
                        self.mt,
                        col_out(m.as_ptr(), op.get(), &args, self.bias.as_ptr(), epi)
                    );
                    if epi == Epilogue::Elu {
                        for r in 0..self.mt {
                            let d = op.get().add(args.dst + r * args.dst_stride);
                            elu_in_place(isa, std::slice::from_raw_parts_mut(d, self.cout));
                        }
                    }
                }
            }
        });
    }
}

/// One column of a time-only transform: `c` channels at `src + k·src_stride` in,
/// at `dst + k·dst_stride` out (element offsets).
struct ColArgs {
    src: usize,
    src_stride: usize,
    dst: usize,
    dst_stride: usize,
    c: usize,
}

mod generic_t {
    use super::*;

    /// `V[ξ] = (Bᵀ d)[ξ]` along time for one column.
    ///
    /// # Safety
    /// `src`/`dst` valid at the offsets `a` describes.
    #[inline(always)]
    pub(crate) unsafe fn col_in<const MT: usize>(src: *const f32, dst: *mut f32, a: &ColArgs) {
        let mut d = [V::zero(); 6];
        let mut v = [V::zero(); 6];
        for c0 in (0..a.c).step_by(L) {
            for (k, dk) in d[..MT + 2].iter_mut().enumerate() {
                *dk = V::load(src.add(a.src + k * a.src_stride + c0));
            }
            bt::<MT>(&d[..MT + 2], &mut v[..MT + 2]);
            for (k, vk) in v[..MT + 2].iter().enumerate() {
                vk.store(dst.add(a.dst + k * a.dst_stride + c0));
            }
        }
    }

    /// `y = Aᵀ M + bias` along time for one output column, Store/Accumulate (the ELU
    /// is applied afterwards by the caller).
    ///
    /// # Safety
    /// `src`/`dst` valid at the offsets `a` describes, `bias` for `a.c` floats.
    #[inline(always)]
    pub(crate) unsafe fn col_out<const MT: usize>(
        src: *const f32,
        dst: *mut f32,
        a: &ColArgs,
        bias: *const f32,
        epi: Epilogue,
    ) {
        let mut mv = [V::zero(); 6];
        let mut y = [V::zero(); 4];
        for c0 in (0..a.c).step_by(L) {
            for (k, mk) in mv[..MT + 2].iter_mut().enumerate() {
                *mk = V::load(src.add(a.src + k * a.src_stride + c0));
            }
            at::<MT>(&mv[..MT + 2], &mut y[..MT]);
            let b = V::load(bias.add(c0));
            for (r, yr) in y[..MT].iter().enumerate() {
                let p = dst.add(a.dst + r * a.dst_stride + c0);
                let val = *yr + b;
                match epi {
                    Epilogue::Accumulate => (V::load(p) + val).store(p),
                    _ => val.store(p),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
