//! The `m`-th convolutions of a stage's residual branches, side by side: the
//! direct ones in one pool dispatch, the Winograd ones in another. Today a
//! stage's branches share their form ([`super::ResConv`] is chosen per stage),
//! but any mix runs, so the choice can be made per convolution.

use rill_kernels::{Isa, Pool};

use super::{Buffers, Decoder, ResConv, Stage};
use crate::kernels::{
    gemm_many, half_snake_rows, winograd_many, Blocking, Epilogue, Job, Packed, RowMap,
    WinogradConv, WinogradJob, MAX_CONVS,
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

/// The listed convs in one `dispatch` (`gemm_many` or `winograd_many`): branch
/// `j`'s job from `job`, writing the next of `outs` (the listed branches'
/// buffers, in order).
fn run_listed<'o, T: Copy, J>(
    list: &[Option<(usize, T)>; MAX_CONVS],
    job: impl Fn(usize, T) -> J,
    mut outs: impl Iterator<Item = &'o mut [f32]>,
    dispatch: impl FnOnce(&[J], &mut [&mut [f32]]),
) {
    let Some(&last) = list.iter().flatten().last() else {
        return;
    };
    let count = list.iter().flatten().count();
    // The array's tail repeats the last job and is not run.
    let jobs: [J; MAX_CONVS] = std::array::from_fn(|q| {
        let (j, w) = list[q].unwrap_or(last);
        job(j, w)
    });
    let mut outs: [&mut [f32]; MAX_CONVS] =
        std::array::from_fn(|_| outs.next().unwrap_or(&mut [][..]));
    dispatch(&jobs[..count], &mut outs[..count]);
}

/// Whether branch `j` is in `list`.
fn has<T>(list: &[Option<(usize, T)>; MAX_CONVS], j: usize) -> bool {
    list.iter().flatten().any(|d| d.0 == j)
}

impl Decoder {
    /// The two convolutions of residual block `m` of every branch `j` of stage `i`,
    /// over `frames` frames: `skip_act[j][m] = HalfSnake(input_conv(input_act[j][m]))`,
    /// then `branch[j] += skip_conv(skip_act[j][m])`.
    pub(super) fn block_convs(
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
        // The input convs.
        let sp = split(s, m, Conv::Input);
        // Direct: the HalfSnake is the GEMM's epilogue.
        let direct_job = |j: usize, w| Job {
            w,
            input: &b.input_act[i][j][m].data,
            // The skip conv's input: its history rows, then the current ones.
            rows: RowMap::strided(n, 0, c, s.res[j][m].skip_conv.history_rows() * c, c),
            epi: Epilogue::Snake(&s.res[j][m].skip_act),
        };
        let outs = b.skip_act[i]
            .iter_mut()
            .enumerate()
            .filter(|(j, _)| has(&sp.direct, *j))
            .map(|(_, chain)| &mut chain[m].data[..]);
        run_listed(&sp.direct, direct_job, outs, |j, o| {
            gemm_many(isa, Blocking::Causal, j, o, pool)
        });
        // Winograd: into scratch rows, then the HalfSnake into the branch's buffer.
        let winograd_job = |j: usize, w| WinogradJob {
            w,
            input: &b.input_act[i][j][m].data,
            frames,
            frame_rows: s.rows_per_frame,
            out_base: 0,
            out_stride: c,
            accumulate: false,
        };
        let outs = b.wino_y.iter_mut().map(|y| &mut y[..]);
        let wino = &mut b.wino;
        run_listed(&sp.winograd, winograd_job, outs, |j, o| {
            winograd_many(isa, j, o, wino, pool)
        });
        for (q, &(j, _)) in sp.winograd.iter().flatten().enumerate() {
            let sk = &mut b.skip_act[i][j][m];
            let so = sk.current(0);
            let act = &s.res[j][m].skip_act;
            half_snake_rows(isa, act, &b.wino_y[q], c, &mut sk.data[so..], c, n, pool);
        }
        // The skip convs, added to the branches.
        let sp = split(s, m, Conv::Skip);
        let direct_job = |j: usize, w| Job {
            w,
            input: &b.skip_act[i][j][m].data,
            rows: RowMap::strided(n, 0, c, 0, c),
            epi: Epilogue::Accumulate,
        };
        let outs = b.branch.iter_mut().enumerate();
        let outs = outs
            .filter(|(j, _)| has(&sp.direct, *j))
            .map(|(_, br)| &mut br[..]);
        run_listed(&sp.direct, direct_job, outs, |j, o| {
            gemm_many(isa, Blocking::Causal, j, o, pool)
        });
        let winograd_job = |j: usize, w| WinogradJob {
            w,
            input: &b.skip_act[i][j][m].data,
            frames,
            frame_rows: s.rows_per_frame,
            out_base: 0,
            out_stride: c,
            accumulate: true,
        };
        let outs = b.branch.iter_mut().enumerate();
        let outs = outs
            .filter(|(j, _)| has(&sp.winograd, *j))
            .map(|(_, br)| &mut br[..]);
        let wino = &mut b.wino;
        run_listed(&sp.winograd, winograd_job, outs, |j, o| {
            winograd_many(isa, j, o, wino, pool)
        });
    }
}
