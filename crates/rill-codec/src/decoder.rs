//! The SpectroStream decoder network (spec §4.2): RVQ embedding `[256]` per codec
//! frame → `[4 STFT frames, 480 bins, 4]` per codec frame.
//!
//! ```text
//! input_layer                 e → conv1x1_first(e) + conv1x1_b2(elu(conv1x1_b1(e)))   [1,2560] = [5 freq, 512] (freq outer)
//! input_layers_residual_unit  x + conv3x3(elu(conv3x3_a(elu(x))))
//! decoder_0                   conv3x3(elu(convT 4x3 s(2,1)(elu(x)))) + up(2,1)(conv1x1(x))      512 → 1024, ×2 time
//! ParallelChannels            channels [0:512] → group 0 (left), [512:1024] → group 1 (right), shared weights
//!   decoder_1 .. decoder_6    same block form (strides, channels in `BLOCKS`)
//!   output_layer              conv7x7(elu(x)) 64 → 2                                          [480, 2] per group
//! concat                      [480, 4] = [g0c0, g0c1, g1c0, g1c1] = [L_re, L_im, R_re, R_im]
//! ```
//!
//! The two ParallelChannels groups are processed together: every grid of the
//! grouped part has a leading group axis, and each convolution runs once over the
//! rows of both groups with the shared weights (twice the GEMM rows, one weight pass).
//! The decoder is processed in chunks of codec frames; the step path is a chunk of one.
//! The 3×3 convs of decoder_1..6 and the transposed convs of decoder_2..6 run in the
//! Winograd domain ([`WINOGRAD`], [`WINOGRAD_T`]; tiles aligned to codec frames, so
//! the step and batched paths stay bit-identical).

use rill_checkpoint::Checkpoint;
use rill_kernels::{Isa, Pool};

use crate::act::{elu_into, upsample_add};
use crate::conv::{Conv2d, Conv2dTranspose};
use crate::grid::{Grid, GridShape};
use crate::istft::{BINS, BIN_CHANNELS};
use crate::kernels::{EarlyWeights, Epilogue, RowMap};
use crate::rvq::{self, Codebook};
use crate::winograd::{WinoConv3x3, WinoConvT, WinoScratch};
use crate::CodecError;

const PREFIX: &str = "params/soundstream/decoder";

/// Freq bins at the decoder input (`480 / Π freq strides`).
const INPUT_BINS: usize = 5;
/// Channels per input bin (`64 · Π mults`).
const INPUT_CHANNELS: usize = 512;
/// STFT frames per codec frame (`Π time strides`).
pub(crate) const STFT_PER_FRAME: usize = 4;
/// ParallelChannels groups (stereo channels).
const GROUPS: usize = 2;

/// One upsampling residual block `decoder_i`.
struct BlockSpec {
    name: &'static str,
    cin: usize,
    cout: usize,
    stride: [usize; 2],
    f_in: usize,
    groups: usize,
}

/// The blocks, derived from `ratios=((1,2),(1,2),(1,3),(1,2),(1,2),(2,2),(2,1))` and
/// `mults=(2,1,2,1,1,2,1)` applied in reverse, channel recombination at block 6.
const BLOCKS: [BlockSpec; 7] = [
    BlockSpec {
        name: "decoder_0",
        cin: 512,
        cout: 1024,
        stride: [2, 1],
        f_in: 5,
        groups: 1,
    },
    BlockSpec {
        name: "decoder_1",
        cin: 512,
        cout: 256,
        stride: [2, 2],
        f_in: 5,
        groups: GROUPS,
    },
    BlockSpec {
        name: "decoder_2",
        cin: 256,
        cout: 256,
        stride: [1, 2],
        f_in: 10,
        groups: GROUPS,
    },
    BlockSpec {
        name: "decoder_3",
        cin: 256,
        cout: 256,
        stride: [1, 2],
        f_in: 20,
        groups: GROUPS,
    },
    BlockSpec {
        name: "decoder_4",
        cin: 256,
        cout: 128,
        stride: [1, 3],
        f_in: 40,
        groups: GROUPS,
    },
    BlockSpec {
        name: "decoder_5",
        cin: 128,
        cout: 128,
        stride: [1, 2],
        f_in: 120,
        groups: GROUPS,
    },
    BlockSpec {
        name: "decoder_6",
        cin: 128,
        cout: 64,
        stride: [1, 2],
        f_in: 240,
        groups: GROUPS,
    },
];

/// Winograd output tile `[rows, bins]` of each block's 3×3 conv, `None` = direct.
/// The tile rows divide the block's rows per codec frame (4 from decoder_1 on).
/// decoder_0 (2 rows per frame, 5 bins, 1024 channels) is weight-bandwidth-bound in
/// step mode, where the 4×–2.7× larger transformed weights would cost more than the
/// products saved; decoder_1 (10 bins) gains most from `F(4×2)`.
const WINOGRAD: [Option<[usize; 2]>; 7] = [
    None,
    Some([4, 2]),
    Some([4, 4]),
    Some([4, 4]),
    Some([4, 4]),
    Some([4, 4]),
    Some([4, 4]),
];

/// Winograd time tile of each block's transposed conv, `None` = direct: the blocks
/// with time stride 1 (3 time taps per phase, 4 rows per codec frame) use `F(4, 3)`.
const WINOGRAD_T: [Option<usize>; 7] = [None, None, Some(4), Some(4), Some(4), Some(4), Some(4)];

/// Blocks whose weights [`crate::CodecPrecision::F16Weights`] rounds to f16 (besides
/// input_layer and the residual unit): decoder_0, and decoder_1 except its 3×3 conv.
const F16_BLOCKS: usize = 2;

/// Reads a decoder tensor and checks its shape.
fn tensor(ckpt: &Checkpoint, name: &str, shape: &[usize]) -> Result<Vec<f32>, CodecError> {
    let t = ckpt.tensor(name)?;
    if t.shape != shape {
        return Err(CodecError::TensorShape {
            name: name.to_string(),
            expected: shape.to_vec(),
            found: t.shape.to_vec(),
        });
    }
    Ok(t.to_f32()?)
}

/// Kernel and bias of the conv at `path` (`…/conv/kernel`, `…/conv/bias`).
fn conv_weights(
    ckpt: &Checkpoint,
    path: &str,
    shape: [usize; 4],
) -> Result<(Vec<f32>, Vec<f32>), CodecError> {
    let k = tensor(ckpt, &format!("{PREFIX}/{path}/conv/kernel"), &shape)?;
    let b = tensor(ckpt, &format!("{PREFIX}/{path}/conv/bias"), &[shape[3]])?;
    Ok((k, b))
}

fn load_conv(
    ckpt: &Checkpoint,
    path: &str,
    shape: [usize; 4],
    f: usize,
) -> Result<Conv2d, CodecError> {
    let (k, b) = conv_weights(ckpt, path, shape)?;
    Ok(Conv2d::new(&k, &b, shape, f))
}

struct Block {
    spec: &'static BlockSpec,
    /// ELU → transposed conv (its checkpoint name is `conv2dtranspose_{kt}x{kf}`).
    convt: Conv2dTranspose,
    /// The same transposed conv with Winograd along time, where that pays.
    winot: Option<WinoConvT>,
    convt_name: String,
    /// ELU → conv3x3.
    conv: Conv2d,
    /// The same conv3x3 in the Winograd domain, where that pays (see [`WINOGRAD`]).
    wino: Option<WinoConv3x3>,
    /// 1×1 conv of the raw block input when channels change.
    shortcut: Option<Conv2d>,
}

/// Decoder weights (immutable).
pub(crate) struct Decoder {
    il_first: Conv2d,
    il_b1: Conv2d,
    il_b2: Conv2d,
    ru_a: Conv2d,
    ru_b: Conv2d,
    blocks: Vec<Block>,
    out: Conv2d,
}

/// Every activation grid of one stream; grids with history rows hold its state.
#[derive(Clone, PartialEq)]
pub(crate) struct Buffers {
    /// Codec frames per chunk these buffers hold.
    pub max_frames: usize,
    emb: Grid,
    il_h: Grid,
    /// input_layer output, then (in place) the residual unit output.
    x0: Grid,
    ru_in: Grid,
    ru_mid: Grid,
    blocks: Vec<BlockBufs>,
    out_in: Grid,
    /// `[t][480][4]` decoder output of the chunk.
    pub stft: Grid,
}

#[derive(Clone, PartialEq)]
struct BlockBufs {
    /// State-array name prefixes: `decoder_i/conv2dtranspose_KxK`, `decoder_i/conv2d_3x3`.
    convt_path: String,
    conv_path: String,
    input: Grid,
    mid: Grid,
    out: Grid,
    shortcut: Option<Grid>,
    wino: Option<WinoScratch>,
    winot: Option<WinoScratch>,
}

impl Decoder {
    /// Loads the decoder; `early` stores the weights of the weight-bandwidth-bound
    /// early layers in two bytes (see [`crate::CodecPrecision`]).
    pub(crate) fn load(
        ckpt: &Checkpoint,
        early: Option<EarlyWeights>,
        isa: Isa,
    ) -> Result<Decoder, CodecError> {
        let (d, p, c) = (rvq::DIM, INPUT_BINS * INPUT_CHANNELS, INPUT_CHANNELS);
        let il = |name: &str, cin: usize| -> Result<Conv2d, CodecError> {
            let (k, b) = conv_weights(ckpt, &format!("input_layer/{name}"), [1, 1, cin, p])?;
            Ok(Conv2d::new_1x1(&k, &b, cin, p))
        };
        let il_first = il("conv1x1_first", d)?;
        let il_b1 = il("shortcut_layer/conv1x1_b1", d)?;
        let il_b2 = il("shortcut_layer/conv1x1_b2", p)?;
        let ru = "input_layers_residual_unit";
        let ru_a = load_conv(
            ckpt,
            &format!("{ru}/conv2d_3x3_a"),
            [3, 3, c, c],
            INPUT_BINS,
        )?;
        let ru_b = load_conv(ckpt, &format!("{ru}/conv2d_3x3"), [3, 3, c, c], INPUT_BINS)?;
        let mut blocks = Vec::new();
        for spec in &BLOCKS {
            let [st, sf] = spec.stride;
            let (kt, kf) = ((2 * st).max(3), (2 * sf).max(3));
            let convt_name = format!("conv2dtranspose_{kt}x{kf}");
            let shape = [kt, kf, spec.cin, spec.cout];
            let (k, b) = conv_weights(ckpt, &format!("{}/{convt_name}", spec.name), shape)?;
            let convt = Conv2dTranspose::new(&k, &b, shape, spec.stride, spec.f_in);
            let winot = WINOGRAD_T[blocks.len()]
                .map(|mt| WinoConvT::new(&k, &b, shape, spec.stride, spec.f_in, mt));
            let f_out = spec.f_in * sf;
            let conv = load_conv(
                ckpt,
                &format!("{}/conv2d_3x3", spec.name),
                [3, 3, spec.cout, spec.cout],
                f_out,
            )?;
            let shortcut = if spec.cin != spec.cout {
                let path = format!("{}/shortcut_layer/conv1x1", spec.name);
                let (k, b) = conv_weights(ckpt, &path, [1, 1, spec.cin, spec.cout])?;
                Some(Conv2d::new_1x1(&k, &b, spec.cin, spec.cout))
            } else {
                None
            };
            let (kk, kb) = conv_weights(
                ckpt,
                &format!("{}/conv2d_3x3", spec.name),
                [3, 3, spec.cout, spec.cout],
            )?;
            let wino = WINOGRAD[blocks.len()]
                .map(|m| WinoConv3x3::new(&kk, &kb, spec.cout, spec.cout, f_out, m));
            blocks.push(Block {
                spec,
                convt,
                winot,
                convt_name,
                conv,
                wino,
                shortcut,
            });
        }
        let out = load_conv(ckpt, "output_layer/base_conv_last", [7, 7, 64, 2], BINS)?;
        let mut d = Decoder {
            il_first,
            il_b1,
            il_b2,
            ru_a,
            ru_b,
            blocks,
            out,
        };
        if let Some(format) = early {
            d.narrow_early(format, isa);
        }
        Ok(d)
    }

    /// f16 weights for the layers that run on few positions per frame in step mode
    /// (their weights are streamed from DRAM every frame): input_layer, the residual
    /// unit, decoder_0 and decoder_1's transposed conv and shortcut.
    fn narrow_early(&mut self, format: EarlyWeights, isa: Isa) {
        for c in [
            &mut self.il_first,
            &mut self.il_b1,
            &mut self.il_b2,
            &mut self.ru_a,
            &mut self.ru_b,
        ] {
            c.narrow_to(format, isa);
        }
        for b in self.blocks.iter_mut().take(F16_BLOCKS) {
            b.convt.narrow_to(format, isa);
            if let Some(s) = &mut b.shortcut {
                s.narrow_to(format, isa);
            }
            if b.wino.is_none() {
                b.conv.narrow_to(format, isa);
            }
        }
    }

    /// Buffers for chunks of up to `max_frames` codec frames, zero state.
    pub(crate) fn buffers(&self, max_frames: usize) -> Buffers {
        let t = max_frames;
        let raw = GridShape::raw;
        let mut blocks = Vec::new();
        let mut t_in = t;
        for b in &self.blocks {
            let s = b.spec;
            let t_out = t_in * s.stride[0];
            let f_out = s.f_in * s.stride[1];
            blocks.push(BlockBufs {
                convt_path: format!("{}/{}", s.name, b.convt_name),
                conv_path: format!("{}/conv2d_3x3", s.name),
                input: Grid::new(b.convt.input_shape(s.groups, t_in)),
                mid: Grid::new(b.conv.input_shape(s.groups, t_out)),
                out: Grid::new(raw(s.groups, t_out, f_out, s.cout)),
                shortcut: b
                    .shortcut
                    .as_ref()
                    .map(|_| Grid::new(raw(s.groups, t_in, s.f_in, s.cout))),
                wino: b.wino.as_ref().map(|w| w.scratch(s.groups, t_out)),
                winot: b.winot.as_ref().map(|w| w.scratch(s.groups, t_in)),
            });
            t_in = t_out;
        }
        Buffers {
            max_frames,
            emb: Grid::new(raw(1, t, 1, rvq::DIM)),
            il_h: Grid::new(raw(1, t, 1, INPUT_BINS * INPUT_CHANNELS)),
            x0: Grid::new(raw(1, t, INPUT_BINS, INPUT_CHANNELS)),
            ru_in: Grid::new(self.ru_a.input_shape(1, t)),
            ru_mid: Grid::new(self.ru_b.input_shape(1, t)),
            blocks,
            out_in: Grid::new(self.out.input_shape(GROUPS, t_in)),
            stft: Grid::new(raw(1, t_in, BINS, BIN_CHANNELS)),
        }
    }

    /// Runs `frames.len()` codec frames (at most `b.max_frames`) through the decoder;
    /// the result is in `b.stft`, `4·frames.len()` rows of `[480][4]`.
    pub(crate) fn run_chunk(
        &self,
        isa: Isa,
        cb: &Codebook,
        frames: &[[u32; rvq::LEVELS]],
        b: &mut Buffers,
        pool: &Pool,
        lap: &mut dyn FnMut(&'static str),
    ) {
        let t = frames.len();
        assert!(
            t <= b.max_frames,
            "chunk of {t} frames exceeds the buffers ({})",
            b.max_frames
        );
        for (i, ids) in frames.iter().enumerate() {
            let o = b.emb.interior(0, i, 0);
            cb.embed(ids, &mut b.emb.data[o..o + rvq::DIM]);
        }
        // input_layer: body + shortcut, both 1x1 over the [1, 256] frame.
        let p = INPUT_BINS * INPUT_CHANNELS;
        let rows = |cin: usize| RowMap {
            dims: [1, t, 1],
            in_strides: [0, cin, 0],
            in_base: 0,
            out_strides: [0, p, 0],
            out_base: 0,
        };
        self.il_b1.pointwise(
            isa,
            &b.emb.data,
            rows(rvq::DIM),
            &mut b.il_h.data,
            Epilogue::Elu,
            pool,
        );
        self.il_first.pointwise(
            isa,
            &b.emb.data,
            rows(rvq::DIM),
            &mut b.x0.data,
            Epilogue::Store,
            pool,
        );
        self.il_b2.pointwise(
            isa,
            &b.il_h.data,
            rows(p),
            &mut b.x0.data,
            Epilogue::Accumulate,
            pool,
        );
        lap("input_layer");
        // input_layers_residual_unit (identity shortcut), in place on x0.
        elu_into(isa, &b.x0, &mut b.ru_in, t, pool);
        self.ru_a
            .run(isa, &b.ru_in, t, &mut b.ru_mid, Epilogue::Elu, pool);
        self.ru_b
            .run(isa, &b.ru_mid, t, &mut b.x0, Epilogue::Accumulate, pool);
        b.ru_in.shift_history(t);
        b.ru_mid.shift_history(t);
        lap("residual_unit");
        // Upsampling blocks.
        let mut t_in = t;
        for (i, blk) in self.blocks.iter().enumerate() {
            let (done, rest) = b.blocks.split_at_mut(i);
            let src = if i == 0 { &b.x0 } else { &done[i - 1].out };
            let bufs = &mut rest[0];
            let t_out = t_in * blk.spec.stride[0];
            let names = &LAP_NAMES[i];
            elu_into(isa, src, &mut bufs.input, t_in, pool);
            match (&blk.winot, &mut bufs.winot) {
                (Some(w), Some(scratch)) => w.run(
                    isa,
                    &bufs.input,
                    t_in,
                    &mut bufs.mid,
                    Epilogue::Elu,
                    scratch,
                    pool,
                ),
                _ => blk
                    .convt
                    .run(isa, &bufs.input, t_in, &mut bufs.mid, Epilogue::Elu, pool),
            }
            lap(names[0]);
            match (&blk.wino, &mut bufs.wino) {
                (Some(w), Some(scratch)) => w.run(
                    isa,
                    &bufs.mid,
                    t_out,
                    &mut bufs.out,
                    Epilogue::Store,
                    scratch,
                    pool,
                ),
                _ => blk
                    .conv
                    .run(isa, &bufs.mid, t_out, &mut bufs.out, Epilogue::Store, pool),
            }
            lap(names[1]);
            match (&blk.shortcut, &mut bufs.shortcut) {
                (Some(conv), Some(sc)) => {
                    conv.pointwise(
                        isa,
                        &src.data,
                        shortcut_rows(src, sc, t_in),
                        &mut sc.data,
                        Epilogue::Store,
                        pool,
                    );
                    upsample_add(sc, blk.spec.stride, &mut bufs.out, t_out, pool);
                }
                _ => upsample_add(src, blk.spec.stride, &mut bufs.out, t_out, pool),
            }
            bufs.input.shift_history(t_in);
            bufs.mid.shift_history(t_out);
            lap(names[2]);
            t_in = t_out;
        }
        // output_layer per group, written into the interleaved [t][480][4] STFT.
        let last = &b.blocks[self.blocks.len() - 1].out;
        elu_into(isa, last, &mut b.out_in, t_in, pool);
        let i = b.out_in.shape;
        let rows = RowMap {
            dims: [GROUPS, t_in, BINS],
            in_strides: [i.group_stride(), i.row_stride(), i.c],
            in_base: 0,
            out_strides: [2, BINS * BIN_CHANNELS, BIN_CHANNELS],
            out_base: 0,
        };
        self.out.pointwise(
            isa,
            &b.out_in.data,
            rows,
            &mut b.stft.data,
            Epilogue::Store,
            pool,
        );
        b.out_in.shift_history(t_in);
        lap("output_layer");
    }
}

/// Profiling lap names of each block: transposed conv (with its input ELU), 3×3
/// conv, shortcut and history shift.
const LAP_NAMES: [[&str; 3]; 7] = [
    ["decoder_0/convT", "decoder_0/conv3x3", "decoder_0/rest"],
    ["decoder_1/convT", "decoder_1/conv3x3", "decoder_1/rest"],
    ["decoder_2/convT", "decoder_2/conv3x3", "decoder_2/rest"],
    ["decoder_3/convT", "decoder_3/conv3x3", "decoder_3/rest"],
    ["decoder_4/convT", "decoder_4/conv3x3", "decoder_4/rest"],
    ["decoder_5/convT", "decoder_5/conv3x3", "decoder_5/rest"],
    ["decoder_6/convT", "decoder_6/conv3x3", "decoder_6/rest"],
];

impl Buffers {
    /// The streaming state arrays (grids with history rows) by stable name, in order.
    pub(crate) fn state_grids(&self) -> Vec<(String, &Grid)> {
        let mut v = vec![
            (
                "input_layers_residual_unit/conv2d_3x3_a/input".to_string(),
                &self.ru_in,
            ),
            (
                "input_layers_residual_unit/conv2d_3x3/input".to_string(),
                &self.ru_mid,
            ),
        ];
        for bb in &self.blocks {
            v.push((format!("{}/input", bb.convt_path), &bb.input));
            v.push((format!("{}/input", bb.conv_path), &bb.mid));
        }
        v.push((
            "output_layer/base_conv_last/input".to_string(),
            &self.out_in,
        ));
        v
    }

    /// As [`Buffers::state_grids`], mutable (same order).
    pub(crate) fn state_grids_mut(&mut self) -> Vec<(String, &mut Grid)> {
        let mut v = vec![
            (
                "input_layers_residual_unit/conv2d_3x3_a/input".to_string(),
                &mut self.ru_in,
            ),
            (
                "input_layers_residual_unit/conv2d_3x3/input".to_string(),
                &mut self.ru_mid,
            ),
        ];
        for bb in self.blocks.iter_mut() {
            v.push((format!("{}/input", bb.convt_path), &mut bb.input));
            v.push((format!("{}/input", bb.conv_path), &mut bb.mid));
        }
        v.push((
            "output_layer/base_conv_last/input".to_string(),
            &mut self.out_in,
        ));
        v
    }
}

/// Rows of a block's 1×1 shortcut conv over its raw input `src` (`t` rows); when
/// `src` has one group and the block two, group `g` reads channel block `g`.
fn shortcut_rows(src: &Grid, sc: &Grid, t: usize) -> RowMap {
    let (s, o) = (src.shape, sc.shape);
    let g_stride = if s.groups == o.groups {
        s.group_stride()
    } else {
        s.c / o.groups
    };
    RowMap {
        dims: [o.groups, t, s.f],
        in_strides: [g_stride, s.row_stride(), s.c],
        in_base: src.interior(0, 0, 0),
        out_strides: [o.group_stride(), o.row_stride(), o.c],
        out_base: sc.interior(0, 0, 0),
    }
}
