//! The encoder's convolution stack (upstream `spectrostream_encoder_config`,
//! `modeling.py:368-574`) on the implicit-GEMM kernels.
//!
//! Every convolution is upstream's `Conv2D` with `time_padding='semicausal'` (pad
//! `kt − st` rows before, `st − 1` after) and freq padding `(p/2, p − p/2)`,
//! `p = kf − sf`; in the [`Grid`] layout the time padding is the grid's history rows
//! (plus `st·T' − T` zero rows at the end) and the freq padding its zero columns, so
//! output `(t, f)` reads input rows `st·t ..` and columns `sf·f ..` of the padded grid
//! at fixed tap offsets: the kernels' [`RowMap`] simply steps by the strides.
//!
//! A residual block (`conv2d_residual_unit`, not transposed) is
//! `body = conv_down(ELU(conv3x3(ELU(x))))` plus the shortcut
//! `[conv1x1](AvgPool(strides)(x))` (no pooling at stride 1, no 1×1 when the channel
//! count stays); `AvgPool` sums its window row-major (zero rows past the end count,
//! as upstream pads them) and divides by the window size.

use rill_checkpoint::Checkpoint;
use rill_kernels::{Isa, Pool};

use crate::act::for_each_row;
use crate::decoder::tensor;
use crate::grid::{Grid, GridShape};
use crate::kernels::{elu_copy, gemm, Blocking, Epilogue, Job, Packed, RowMap};
use crate::CodecError;

const PREFIX: &str = "params/encoder/";
/// Frequency bins of the STFT.
const BINS: usize = crate::BINS;
/// Channels of one ParallelChannels group's input (one stereo channel's re, im).
const GROUP_IN: usize = 2;
/// Freq bins after the last block.
const OUT_BINS: usize = 5;
/// Width of a flattened frame (`5 × 256`).
const FLAT: usize = OUT_BINS * 256;

/// Where a convolution writes: output `(g, t, f)` starts at `base + Σ i·strides`.
#[derive(Debug, Clone, Copy)]
struct View {
    base: usize,
    strides: [usize; 3],
}

impl View {
    /// The interior of `grid`.
    fn of(grid: &Grid) -> View {
        let s = grid.shape;
        View {
            base: s.interior(0, 0, 0),
            strides: [s.group_stride(), s.row_stride(), s.c],
        }
    }
}

/// A strided convolution, semicausal in time (see the module doc).
struct Conv {
    kt: usize,
    st: usize,
    sf: usize,
    cin: usize,
    /// Input freq size (output `f_in / sf`).
    f_in: usize,
    pl: usize,
    pr: usize,
    w: Packed,
}

impl Conv {
    /// `path/conv/{kernel [kt, kf, cin, cout], bias}` of the encoder checkpoint.
    fn load(
        ckpt: &Checkpoint,
        path: &str,
        [kt, kf, cin, cout]: [usize; 4],
        [st, sf]: [usize; 2],
        f_in: usize,
    ) -> Result<Conv, CodecError> {
        let kernel = tensor(
            ckpt,
            &format!("{PREFIX}{path}/conv/kernel"),
            &[kt, kf, cin, cout],
        )?;
        let bias = tensor(ckpt, &format!("{PREFIX}{path}/conv/bias"), &[cout])?;
        let pad = kf - sf;
        let (pl, pr) = (pad / 2, pad - pad / 2);
        let cols = (pl + f_in + pr) as isize;
        let taps = (0..kt)
            .flat_map(|a| (0..kf).map(move |b| (a as isize * cols + b as isize) * cin as isize))
            .collect();
        // [kt][kf][cin][cout] is [tap][cin][n].
        Ok(Conv {
            kt,
            st,
            sf,
            cin,
            f_in,
            pl,
            pr,
            w: Packed::new(&kernel, taps, cin, cout, &bias),
        })
    }

    fn t_out(&self, t: usize) -> usize {
        t.div_ceil(self.st)
    }

    fn f_out(&self) -> usize {
        self.f_in / self.sf
    }

    /// The padded grid this convolution reads for `t` input rows.
    fn input_shape(&self, groups: usize, t: usize) -> GridShape {
        GridShape {
            groups,
            hist: self.kt - self.st,
            max_t: self.st * self.t_out(t),
            f: self.f_in,
            pl: self.pl,
            pr: self.pr,
            c: self.cin,
        }
    }

    /// Writes `epi(conv(input))` for the `⌈t/st⌉` output rows of every group at `view`.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        isa: Isa,
        input: &Grid,
        t: usize,
        out: &mut [f32],
        view: View,
        epi: Epilogue,
        pool: &Pool,
    ) {
        let i = input.shape;
        assert_eq!(i, self.input_shape(i.groups, t), "encoder conv input grid");
        let rows = RowMap {
            dims: [i.groups, self.t_out(t), self.f_out()],
            in_strides: [i.group_stride(), self.st * i.row_stride(), self.sf * i.c],
            in_base: 0,
            out_strides: view.strides,
            out_base: view.base,
        };
        let job = Job {
            w: &self.w,
            rows,
            input: &input.data,
            epi,
        };
        gemm(isa, Blocking::Grid, &[job], out, pool);
    }
}

/// `dst`'s interior rows `0..t` = ELU of `src`'s (same groups, freq size, channels),
/// one pool task per row.
fn elu_into(isa: Isa, src: &Grid, t: usize, dst: &mut Grid, pool: &Pool) {
    let (s, d) = (src.shape, dst.shape);
    assert!(s.groups == d.groups && s.f == d.f && s.c == d.c && t <= s.max_t && t <= d.max_t);
    let run = s.f * s.c;
    for_each_row(dst, t, pool, &|g, r, out_row| {
        let i = s.interior(g, r, 0);
        elu_copy(isa, &src.data[i..i + run], out_row);
    });
}

/// Upstream's `AveragePooling2D(pool = strides, 'semicausal', 'valid')` of the raw
/// grid `x` (`t` rows): window sums in row-major order, zero rows past `t`, then `/ n`;
/// one pool task per output row.
fn avg_pool(x: &Grid, t: usize, [pt, pf]: [usize; 2], pool: &Pool) -> Grid {
    let s = x.shape;
    let (t2, f2, c) = (t.div_ceil(pt), s.f / pf, s.c);
    let mut out = Grid::new(GridShape::raw(s.groups, t2, f2, c));
    let n = (pt * pf) as f32;
    for_each_row(&mut out, t2, pool, &|g, r, out_row| {
        for (f, dst) in out_row.chunks_exact_mut(c).enumerate() {
            let mut first = true;
            for dt in 0..pt {
                let row = r * pt + dt;
                if row >= t {
                    continue; // + 0.0 changes nothing
                }
                for df in 0..pf {
                    let i = s.interior(g, row, f * pf + df);
                    let src = &x.data[i..i + c];
                    if first {
                        dst.copy_from_slice(src);
                    } else {
                        dst.iter_mut().zip(src).for_each(|(y, v)| *y += v);
                    }
                    first = false;
                }
            }
            dst.iter_mut().for_each(|y| *y /= n);
        }
    });
    out
}

/// One residual block of the encoder.
struct Block {
    conv: Conv,
    down: Conv,
    shortcut: Option<Conv>,
    cout: usize,
}

impl Block {
    fn load(
        ckpt: &Checkpoint,
        name: &str,
        [cin, cout]: [usize; 2],
        [kt, kf]: [usize; 2],
        strides: [usize; 2],
        f_in: usize,
    ) -> Result<Block, CodecError> {
        let conv = Conv::load(
            ckpt,
            &format!("{name}/conv2d_3x3"),
            [3, 3, cin, cin],
            [1, 1],
            f_in,
        )?;
        let down_name = format!("{name}/conv2d_{kt}x{kf}_a");
        let down = Conv::load(ckpt, &down_name, [kt, kf, cin, cout], strides, f_in)?;
        let shortcut = if cin != cout {
            let path = format!("{name}/shortcut_layer/conv1x1");
            Some(Conv::load(
                ckpt,
                &path,
                [1, 1, cin, cout],
                [1, 1],
                down.f_out(),
            )?)
        } else {
            None
        };
        Ok(Block {
            conv,
            down,
            shortcut,
            cout,
        })
    }

    /// `x` (a raw grid of `t` rows) → the block output written at `view` of `out`.
    fn run(&self, isa: Isa, x: &Grid, t: usize, out: &mut [f32], view: View, pool: &Pool) {
        let groups = x.shape.groups;
        let mut ex = Grid::new(self.conv.input_shape(groups, t));
        elu_into(isa, x, t, &mut ex, pool);
        let mut eh = Grid::new(self.down.input_shape(groups, t));
        let v = View::of(&eh);
        self.conv
            .run(isa, &ex, t, &mut eh.data, v, Epilogue::Elu, pool);
        drop(ex);
        self.down.run(isa, &eh, t, out, view, Epilogue::Store, pool);
        drop(eh);
        let strides = [self.down.st, self.down.sf];
        let pooled;
        let s = if strides == [1, 1] {
            x
        } else {
            pooled = avg_pool(x, t, strides, pool);
            &pooled
        };
        let t2 = self.down.t_out(t);
        match &self.shortcut {
            Some(c) => c.run(isa, s, t2, out, view, Epilogue::Accumulate, pool),
            None => {
                let sh = s.shape;
                assert_eq!(sh.c, self.cout);
                for g in 0..sh.groups {
                    for r in 0..t2 {
                        for f in 0..sh.f {
                            let i = s.interior(g, r, f);
                            let o = view.base
                                + g * view.strides[0]
                                + r * view.strides[1]
                                + f * view.strides[2];
                            let src = &s.data[i..i + sh.c];
                            out[o..o + sh.c]
                                .iter_mut()
                                .zip(src)
                                .for_each(|(y, v)| *y += v);
                        }
                    }
                }
            }
        }
    }
}

/// The encoder's weights, packed.
pub(crate) struct Net {
    base: Conv,
    /// `encoder_0..6`, `bottleneck`.
    blocks: Vec<Block>,
    last: Conv,
    b1: Conv,
    b2: Conv,
}

/// `(name, [cin, cout], resample kernel, strides)` of the blocks; the first six run
/// per stereo channel (ParallelChannels, shared weights), the rest on the concat.
/// `(name, [cin, cout], [kt, kf], [st, sf])` of one block.
type BlockSpec = (&'static str, [usize; 2], [usize; 2], [usize; 2]);

const BLOCKS: [BlockSpec; 8] = [
    ("encoder_0", [32, 64], [3, 4], [1, 2]),
    ("encoder_1", [64, 64], [3, 4], [1, 2]),
    ("encoder_2", [64, 128], [3, 6], [1, 3]),
    ("encoder_3", [128, 128], [3, 4], [1, 2]),
    ("encoder_4", [128, 128], [3, 4], [1, 2]),
    ("encoder_5", [128, 256], [4, 4], [2, 2]),
    ("encoder_6", [512, 256], [4, 3], [2, 1]),
    ("bottleneck", [256, 256], [3, 3], [1, 1]),
];
/// Blocks inside ParallelChannels (`channel_recombo_block = −2` of 8).
const PARALLEL: usize = 6;

impl Net {
    pub(crate) fn load(ckpt: &Checkpoint) -> Result<Net, CodecError> {
        let base = Conv::load(ckpt, "base_conv_first", [7, 7, GROUP_IN, 32], [1, 1], BINS)?;
        let mut blocks = Vec::new();
        let mut f = BINS;
        for (name, ch, k, s) in BLOCKS {
            let b = Block::load(ckpt, name, ch, k, s, f)?;
            f = b.down.f_out();
            blocks.push(b);
        }
        debug_assert_eq!(f, OUT_BINS);
        let one = |path: &str, cout: usize| {
            Conv::load(
                ckpt,
                &format!("output_convs/{path}"),
                [1, 1, FLAT, cout],
                [1, 1],
                1,
            )
        };
        Ok(Net {
            base,
            blocks,
            last: one("conv1x1_last", 256)?,
            b1: one("shortcut_layer/conv1x1_b1", FLAT)?,
            b2: one("shortcut_layer/conv1x1_b2", 256)?,
        })
    }

    /// `stft` (`[t, 480, 4]`) → `[⌈⌈t/2⌉/2⌉, 256]` frames.
    pub(crate) fn run(&self, isa: Isa, stft: &[f32], t: usize, pool: &Pool) -> Vec<f32> {
        let ch = crate::encoder::STFT_CHANNELS;
        assert_eq!(stft.len(), t * BINS * ch, "stft size");
        // ParallelChannels: group g reads channels 2g, 2g + 1 (its (re, im)) and its
        // last block writes channels g·256 .. (g + 1)·256 of the concat. The groups run
        // one after the other (each convolution spreads over the pool by rows), which
        // halves the peak memory.
        let mut cat: Option<Grid> = None;
        let mut tc = t;
        for g in 0..2 {
            let mut input = Grid::new(self.base.input_shape(1, t));
            for r in 0..t {
                for f in 0..BINS {
                    let i = (r * BINS + f) * ch + GROUP_IN * g;
                    let o = input.interior(0, r, f);
                    input.data[o..o + GROUP_IN].copy_from_slice(&stft[i..i + GROUP_IN]);
                }
            }
            let mut x = Grid::new(GridShape::raw(1, t, BINS, 32));
            let v = View::of(&x);
            self.base
                .run(isa, &input, t, &mut x.data, v, Epilogue::Store, pool);
            drop(input);
            let mut tg = t;
            for (i, b) in self.blocks[..PARALLEL].iter().enumerate() {
                let (t2, f2) = (b.down.t_out(tg), b.down.f_out());
                if i == PARALLEL - 1 {
                    let y =
                        cat.get_or_insert_with(|| Grid::new(GridShape::raw(1, t2, f2, 2 * b.cout)));
                    let s = y.shape;
                    let view = View {
                        base: g * b.cout,
                        strides: [s.group_stride(), s.row_stride(), s.c],
                    };
                    b.run(isa, &x, tg, &mut y.data, view, pool);
                } else {
                    let mut y = Grid::new(GridShape::raw(1, t2, f2, b.cout));
                    let view = View::of(&y);
                    b.run(isa, &x, tg, &mut y.data, view, pool);
                    x = y;
                }
                tg = t2;
            }
            tc = tg;
        }
        let mut x = cat.expect("two groups ran");
        let mut t = tc;
        for b in &self.blocks[PARALLEL..] {
            let t2 = b.down.t_out(t);
            let mut y = Grid::new(GridShape::raw(1, t2, b.down.f_out(), b.cout));
            let view = View::of(&y);
            b.run(isa, &x, t, &mut y.data, view, pool);
            x = y;
            t = t2;
        }
        // Flatten [t, 5, 256] → [t, 1280] (freq outer, channels inner): the same data.
        assert_eq!(x.shape, GridShape::raw(1, t, OUT_BINS, 256));
        let flat = Grid {
            shape: GridShape::raw(1, t, 1, FLAT),
            data: x.data,
        };
        let mut out = Grid::new(GridShape::raw(1, t, 1, 256));
        let vo = View::of(&out);
        self.last
            .run(isa, &flat, t, &mut out.data, vo, Epilogue::Store, pool);
        let mut e1 = Grid::new(flat.shape);
        elu_into(isa, &flat, t, &mut e1, pool);
        let mut h1 = Grid::new(flat.shape);
        let vh = View::of(&h1);
        self.b1
            .run(isa, &e1, t, &mut h1.data, vh, Epilogue::Elu, pool);
        self.b2
            .run(isa, &h1, t, &mut out.data, vo, Epilogue::Accumulate, pool);
        out.data.to_vec()
    }
}
