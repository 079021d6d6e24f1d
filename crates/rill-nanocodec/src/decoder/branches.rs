//! The `m`-th convolutions of a stage's residual branches, side by side: the
//! direct ones in one pool dispatch, the Winograd ones in another. Today a
//! stage's branches share their form ([`super::ResConv`] is chosen per stage),
//! but any mix runs, so the choice can be made per convolution.

use rill_kernels::{Isa, Pool};

use super::{Buffers, Decoder, ResConv, Stage};
use crate::kernels::{
    gemm_many, half_snake_rows, winograd_many, Epilogue, Job, Packed, WinogradConv, WinogradJob,
    MAX_CONVS,
};

/// Which convolution of the residual blocks.
#[derive(Clone, Copy)]
enum Conv {
    Input,
    Skip,
}

/// The branches whose conv is direct (`direct`) and Winograd (`winograd`), in order.
struct Split<'a> {
    direct: [Option<(usize, &'a Packed)>; MAX_CONVS],
    winograd: [Option<(usize, &'a WinogradConv)>; MAX_CONVS],
}

fn split(s: &Stage, m: usize, which: Conv) -> Split<'_> {
    let conv = |j: usize| {
        let blk = &s.res[j][m];
        match which {
            Conv::Input => &blk.input_conv,
            Conv::Skip => &blk.skip_conv,
        }
    };
    let mut direct = (0..s.res.len()).filter_map(|j| match conv(j) {
        ResConv::Direct(p) => Some((j, p)),
        ResConv::Winograd(_) => None,
    });
    let mut winograd = (0..s.res.len()).filter_map(|j| match conv(j) {
        ResConv::Winograd(w) => Some((j, &**w)),
        ResConv::Direct(_) => None,
    });
    Split {
        direct: std::array::from_fn(|_| direct.next()),
        winograd: std::array::from_fn(|_| winograd.next()),
    }
}

/// Jobs made by `f` from the `Some` prefix of `items` (at least one), and their
/// count; the array's tail repeats the last job and is not run.
fn jobs<T: Copy, J>(items: &[Option<T>; MAX_CONVS], f: impl Fn(T) -> J) -> ([J; MAX_CONVS], usize) {
    let count = items.iter().flatten().count();
    let last = items.iter().flatten().last().copied();
    let arr = std::array::from_fn(|q| f(items[q].or(last).expect("at least one job")));
    (arr, count)
}

/// Whether branch `j` is in `list`.
fn has<T>(list: &[Option<(usize, T)>; MAX_CONVS], j: usize) -> bool {
    list.iter().flatten().any(|d| d.0 == j)
}

impl Decoder {
    /// `skip_act[j][m] = HalfSnake(input_conv(input_act[j][m]))` for every branch
    /// `j` of stage `i`, over `frames` frames.
    pub(super) fn input_convs(
        &self,
        isa: Isa,
        i: usize,
        m: usize,
        frames: usize,
        b: &mut Buffers,
        pool: &Pool,
    ) {
        let s = &self.stages[i];
        let (c, n) = (s.channels, frames * s.rows_per_frame);
        let sp = split(s, m, Conv::Input);
        if sp.direct[0].is_some() {
            // The HalfSnake is the GEMM's epilogue.
            let (jobs, nd) = jobs(&sp.direct, |(j, w)| Job {
                w,
                input: &b.input_act[i][j][m].data,
                in_base: 0,
                in_stride: c,
                rows: n,
                out_base: b.skip_act[i][j][m].current(0),
                out_stride: c,
                epi: Epilogue::Snake(&s.res[j][m].skip_act),
            });
            let mut it = b.skip_act[i]
                .iter_mut()
                .enumerate()
                .filter(|(j, _)| has(&sp.direct, *j))
                .map(|(_, chain)| &mut chain[m].data[..]);
            let mut outs: [&mut [f32]; MAX_CONVS] =
                std::array::from_fn(|_| it.next().unwrap_or(&mut [][..]));
            gemm_many(isa, &jobs[..nd], &mut outs[..nd], pool);
        }
        if sp.winograd[0].is_some() {
            // Into the branch's scratch rows, then the HalfSnake into its buffer.
            let (jobs, nw) = jobs(&sp.winograd, |(j, w)| WinogradJob {
                w,
                input: &b.input_act[i][j][m].data,
                frames,
                frame_rows: s.rows_per_frame,
                out_base: 0,
                out_stride: c,
                accumulate: false,
            });
            let mut it = b.wino_y.iter_mut().map(|y| &mut y[..]);
            let mut outs: [&mut [f32]; MAX_CONVS] =
                std::array::from_fn(|_| it.next().unwrap_or(&mut [][..]));
            winograd_many(isa, &jobs[..nw], &mut outs[..nw], &mut b.wino, pool);
            for (q, &(j, _)) in sp.winograd.iter().flatten().enumerate() {
                let sk = &mut b.skip_act[i][j][m];
                let so = sk.current(0);
                let act = &s.res[j][m].skip_act;
                half_snake_rows(isa, act, &b.wino_y[q], c, &mut sk.data[so..], c, n, pool);
            }
        }
    }

    /// `branch[j] += skip_conv(skip_act[j][m])` for every branch `j` of stage `i`.
    pub(super) fn skip_convs(
        &self,
        isa: Isa,
        i: usize,
        m: usize,
        frames: usize,
        b: &mut Buffers,
        pool: &Pool,
    ) {
        let s = &self.stages[i];
        let (c, n) = (s.channels, frames * s.rows_per_frame);
        let sp = split(s, m, Conv::Skip);
        if sp.direct[0].is_some() {
            let (jobs, nd) = jobs(&sp.direct, |(j, w)| Job {
                w,
                input: &b.skip_act[i][j][m].data,
                in_base: 0,
                in_stride: c,
                rows: n,
                out_base: 0,
                out_stride: c,
                epi: Epilogue::Accumulate,
            });
            let mut it = b
                .branch
                .iter_mut()
                .enumerate()
                .filter(|(j, _)| has(&sp.direct, *j))
                .map(|(_, br)| &mut br[..]);
            let mut outs: [&mut [f32]; MAX_CONVS] =
                std::array::from_fn(|_| it.next().unwrap_or(&mut [][..]));
            gemm_many(isa, &jobs[..nd], &mut outs[..nd], pool);
        }
        if sp.winograd[0].is_some() {
            let (jobs, nw) = jobs(&sp.winograd, |(j, w)| WinogradJob {
                w,
                input: &b.skip_act[i][j][m].data,
                frames,
                frame_rows: s.rows_per_frame,
                out_base: 0,
                out_stride: c,
                accumulate: true,
            });
            let mut it = b
                .branch
                .iter_mut()
                .enumerate()
                .filter(|(j, _)| has(&sp.winograd, *j))
                .map(|(_, br)| &mut br[..]);
            let mut outs: [&mut [f32]; MAX_CONVS] =
                std::array::from_fn(|_| it.next().unwrap_or(&mut [][..]));
            winograd_many(isa, &jobs[..nw], &mut outs[..nw], &mut b.wino, pool);
        }
    }
}
