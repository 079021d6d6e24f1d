//! The three convolution forms of the decoder, all routed to the implicit-GEMM
//! kernels of [`crate::kernels`]:
//!
//! * [`Conv2d`] — stride 1, causal in time (the input grid carries `kt − 1` history
//!   rows), 'same' in freq (`(kf−1)/2` zero columns left, the rest right); spec §4.3.
//! * [`Conv2d::pointwise`] — 1×1 convolutions over an arbitrary row layout
//!   (used where the input is a channel slice of another tensor).
//! * [`Conv2dTranspose`] — causal in time, 'same' in freq, computed by stride-phase
//!   (sub-pixel) decomposition. The reference scatters `x[i,f]·K[kt−1−a, kf−1−b]` into
//!   `raw[i·st+a, f·sf+b]` (checkpoint kernel flipped), keeps `raw[0:T·st]` in time and
//!   `raw[L : L+F·sf]` in freq with `L = ⌊(kf−sf)/2⌋`, then adds the bias. Gathering
//!   instead: output `(p = I·st+pt, q = fo+L = J·sf+pq)` receives
//!   `x[I−ja, J−jb]·K[kt−1−(pt+ja·st), kf−1−(pq+jb·sf)]` — for each phase `(pt, pq)`
//!   an ordinary correlation with a sub-kernel of `⌈kt/st⌉ × ⌈kf/sf⌉` taps, no zero
//!   insertion. Its streaming state is therefore `⌈kt/st⌉ − 1` *input* frames of
//!   history, which carries exactly the information of the reference's `kt − st`
//!   frame overlap-add tail of partial outputs.

use rill_kernels::{Isa, Pool};

use crate::grid::{Grid, GridShape};
use crate::kernels::{gemm, Blocking, EarlyWeights, Epilogue, Job, Packed, RowMap};

/// A convolution over grids: the grid it reads, and the checks of one call.
pub(crate) trait GridConv {
    /// The grid this convolution reads, for `groups` groups of up to `max_t`
    /// current rows.
    fn input_shape(&self, groups: usize, max_t: usize) -> GridShape;

    /// Asserts the grids of one call (`what`): `input` is a grid this convolution
    /// reads, holding `t` current rows, and `out` has `input`'s groups and room for
    /// `[rows, f, c]`, what the call writes.
    fn check_grids(
        &self,
        what: &str,
        input: GridShape,
        t: usize,
        out: GridShape,
        [rows, f, c]: [usize; 3],
    ) {
        let want = self.input_shape(input.groups, input.max_t);
        assert_eq!(input, want, "{what} input grid");
        assert!(
            t <= input.max_t,
            "{what}: {t} rows, input grid of {}",
            input.max_t
        );
        assert!(
            out.groups == input.groups && out.f == f && out.c == c && rows <= out.max_t,
            "{what} output grid"
        );
    }
}

/// A stride-1 convolution, causal in time and 'same' in freq, over a fixed freq size.
#[derive(Debug, Clone)]
pub(crate) struct Conv2d {
    pub kt: usize,
    pub kf: usize,
    pub cin: usize,
    pub cout: usize,
    /// Freq size of input and output.
    pub f: usize,
    w: Packed,
}

impl Conv2d {
    /// `kernel` in checkpoint layout `[kt, kf, cin, cout]`, `bias[cout]`.
    pub(crate) fn new(
        kernel: &[f32],
        bias: &[f32],
        [kt, kf, cin, cout]: [usize; 4],
        f: usize,
    ) -> Conv2d {
        let cols = (f + kf - 1) as isize;
        let taps = (0..kt)
            .flat_map(|a| (0..kf).map(move |c| (a as isize * cols + c as isize) * cin as isize))
            .collect();
        // [kt][kf][cin][cout] is already [tap][cin][n].
        let w = Packed::new(kernel, taps, cin, cout, bias);
        Conv2d {
            kt,
            kf,
            cin,
            cout,
            f,
            w,
        }
    }

    /// Stores the weights in a narrow format (see [`Packed::narrow_to`]).
    pub(crate) fn narrow_to(&mut self, format: EarlyWeights, isa: Isa) {
        self.w.narrow_to(format, isa);
    }

    /// Computes in half precision where `isa` can (see [`Packed::use_half_arithmetic`]).
    pub(crate) fn use_half_arithmetic(&mut self, isa: Isa) {
        self.w.use_half_arithmetic(isa);
    }

    /// Whether the kernels compute this convolution in half precision.
    pub(crate) fn half_arithmetic(&self) -> bool {
        self.w.half_arithmetic()
    }

    /// A 1×1 convolution (`kernel` `[1, 1, cin, cout]`) for [`Conv2d::pointwise`].
    pub(crate) fn new_1x1(kernel: &[f32], bias: &[f32], cin: usize, cout: usize) -> Conv2d {
        Conv2d::new(kernel, bias, [1, 1, cin, cout], 1)
    }

    /// `out[g, t, :, :] = epi(conv(input)[g, t])` for the `t` current rows.
    pub(crate) fn run(
        &self,
        isa: Isa,
        input: &Grid,
        t: usize,
        out: &mut Grid,
        epi: Epilogue,
        pool: &Pool,
    ) {
        let (i, o) = (input.shape, out.shape);
        self.check_grids("conv2d", i, t, o, [t, self.f, self.cout]);
        let rows = RowMap {
            dims: [i.groups, t, self.f],
            // Output row t reads buffer rows t .. t+kt-1 (= hist + t), columns f .. f+kf-1.
            in_strides: [i.group_stride(), i.row_stride(), i.c],
            in_base: input.at(0, 0, 0),
            out_strides: [o.group_stride(), o.row_stride(), o.c],
            out_base: out.interior(0, 0, 0),
        };
        self.pointwise(isa, &input.data, rows, &mut out.data, epi, pool);
    }

    /// Runs the convolution on explicitly mapped rows (bounds-checked by the kernel driver).
    pub(crate) fn pointwise(
        &self,
        isa: Isa,
        input: &[f32],
        rows: RowMap,
        out: &mut [f32],
        epi: Epilogue,
        pool: &Pool,
    ) {
        let job = Job {
            w: &self.w,
            rows,
            input,
            epi,
        };
        gemm(isa, Blocking::Grid, &[job], out, pool);
    }
}

/// `kt − 1` history rows and 'same' padding.
impl GridConv for Conv2d {
    fn input_shape(&self, groups: usize, max_t: usize) -> GridShape {
        let pl = (self.kf - 1) / 2;
        GridShape {
            groups,
            hist: self.kt - 1,
            max_t,
            f: self.f,
            pl,
            pr: self.kf - 1 - pl,
            c: self.cin,
        }
    }
}

/// Most stride phases of any transposed convolution (`st · sf`).
const MAX_PHASES: usize = 6;

/// One stride phase of a transposed convolution.
#[derive(Debug, Clone)]
struct Phase {
    /// Output time phase `p mod st`.
    pt: usize,
    /// First input freq index `J` of the phase and their count.
    j0: usize,
    nj: usize,
    /// Output freq index of `J = j0`.
    fo0: usize,
    w: Packed,
}

/// Per freq phase `pq` of a transposed convolution: `(pq, j0, nj, fo0, max_jb)` —
/// first input freq index `J`, count, output freq of `J = j0`, last freq tap — and
/// the zero padding `(pl, pr)` the taps `J − jb` need.
pub(crate) type PhaseSpec = (usize, usize, usize, usize, usize);

pub(crate) fn phase_specs(kf: usize, sf: usize, f_in: usize) -> (Vec<PhaseSpec>, usize, usize) {
    let l = (kf - sf) / 2; // 'same' left trim of the raw freq output
    let f_out = f_in * sf;
    let mut specs = Vec::new();
    let (mut pl, mut pr) = (0usize, 0usize);
    for pq in 0..sf {
        // fo = J*sf + pq - L in [0, f_out)
        let j0 = (l.saturating_sub(pq)).div_ceil(sf);
        let j1 = (f_out + l - pq - 1) / sf; // inclusive
        let max_jb = (kf - 1 - pq) / sf;
        pl = pl.max(max_jb.saturating_sub(j0));
        pr = pr.max((j1 + 1).saturating_sub(f_in));
        specs.push((pq, j0, j1 + 1 - j0, j0 * sf + pq - l, max_jb));
    }
    (specs, pl, pr)
}

/// A transposed convolution, causal in time and 'same' in freq (see the module doc).
#[derive(Debug, Clone)]
pub(crate) struct Conv2dTranspose {
    pub st: usize,
    pub sf: usize,
    pub cin: usize,
    pub cout: usize,
    /// Input freq size (output is `f_in · sf`).
    pub f_in: usize,
    hist: usize,
    pl: usize,
    pr: usize,
    phases: Vec<Phase>,
}

/// A transposed convolution as the checkpoint gives it: `kernel` in checkpoint (JAX)
/// layout `[kt, kf, cin, cout]` (`shape`), `bias[cout]`, the strides `[st, sf]`, and
/// the input freq size `f_in`; what both of its forms are made from
/// ([`Conv2dTranspose`], [`crate::winograd::WinoConvT`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TransposeWeights<'a> {
    pub kernel: &'a [f32],
    pub bias: &'a [f32],
    pub shape: [usize; 4],
    pub stride: [usize; 2],
    pub f_in: usize,
}

impl Conv2dTranspose {
    pub(crate) fn new(weights: &TransposeWeights) -> Conv2dTranspose {
        let ([kt, kf, cin, cout], [st, sf]) = (weights.shape, weights.stride);
        let (kernel, bias, f_in) = (weights.kernel, weights.bias, weights.f_in);
        assert!(
            kt >= st && kf >= sf,
            "transposed conv kernel smaller than its stride"
        );
        assert!(st * sf <= MAX_PHASES, "too many stride phases");
        let hist = kt.div_ceil(st) - 1;
        let (specs, pl, pr) = phase_specs(kf, sf, f_in);
        let cols = (pl + f_in + pr) as isize;
        let mut phases = Vec::new();
        for pt in 0..st {
            for &(pq, j0, nj, fo0, max_jb) in &specs {
                let mut taps = Vec::new();
                let mut w = Vec::new();
                for ja in 0..=(kt - 1 - pt) / st {
                    for jb in 0..=max_jb {
                        let (a, b) = (kt - 1 - (pt + ja * st), kf - 1 - (pq + jb * sf));
                        taps.push(-(ja as isize * cols + jb as isize) * cin as isize);
                        let src = (a * kf + b) * cin * cout;
                        w.extend_from_slice(&kernel[src..src + cin * cout]);
                    }
                }
                phases.push(Phase {
                    pt,
                    j0,
                    nj,
                    fo0,
                    w: Packed::new(&w, taps, cin, cout, bias),
                });
            }
        }
        Conv2dTranspose {
            st,
            sf,
            cin,
            cout,
            f_in,
            hist,
            pl,
            pr,
            phases,
        }
    }

    /// Stores the weights of every phase in a narrow format (see [`Packed::narrow_to`]).
    pub(crate) fn narrow_to(&mut self, format: EarlyWeights, isa: Isa) {
        for p in &mut self.phases {
            p.w.narrow_to(format, isa);
        }
    }

    /// Computes in half precision where `isa` can (see [`Packed::use_half_arithmetic`]).
    pub(crate) fn use_half_arithmetic(&mut self, isa: Isa) {
        for p in &mut self.phases {
            p.w.use_half_arithmetic(isa);
        }
    }

    /// `t` current input rows → `t·st` output rows written to `out`'s interior.
    pub(crate) fn run(
        &self,
        isa: Isa,
        input: &Grid,
        t: usize,
        out: &mut Grid,
        epi: Epilogue,
        pool: &Pool,
    ) {
        let (i, o) = (input.shape, out.shape);
        let out_rows = [t * self.st, self.f_in * self.sf, self.cout];
        self.check_grids("conv2d_transpose", i, t, o, out_rows);
        // A fixed-size job list: the step path must not allocate.
        let n = self.phases.len();
        let jobs: [Job<'_>; MAX_PHASES] = std::array::from_fn(|k| {
            let ph = &self.phases[k.min(n - 1)];
            Job {
                w: &ph.w,
                rows: RowMap {
                    dims: [i.groups, t, ph.nj],
                    in_strides: [i.group_stride(), i.row_stride(), i.c],
                    in_base: input.at(0, i.hist, i.pl + ph.j0),
                    out_strides: [o.group_stride(), self.st * o.row_stride(), self.sf * o.c],
                    out_base: out.interior(0, ph.pt, ph.fo0),
                },
                input: &input.data,
                epi,
            }
        });
        gemm(isa, Blocking::Grid, &jobs[..n], &mut out.data, pool);
    }
}

/// A history of `⌈kt/st⌉ − 1` input frames.
impl GridConv for Conv2dTranspose {
    fn input_shape(&self, groups: usize, max_t: usize) -> GridShape {
        GridShape {
            groups,
            hist: self.hist,
            max_t,
            f: self.f_in,
            pl: self.pl,
            pr: self.pr,
            c: self.cin,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
