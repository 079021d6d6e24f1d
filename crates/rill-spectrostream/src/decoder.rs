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
use crate::config::{
    conv_tensor_names, BlockSpec, INPUT_FIRST, INPUT_SHORTCUT_1, INPUT_SHORTCUT_2, OUTPUT,
    RESIDUAL_A, RESIDUAL_B, SPECTROSTREAM,
};
use crate::conv::{Conv2d, Conv2dTranspose, GridConv, TransposeWeights};
use crate::grid::{Grid, GridShape};
use crate::istft::{BINS, BIN_CHANNELS};
use crate::kernels::{EarlyWeights, Epilogue, RowMap};
use crate::numerics::{elu_rows_scaled, scale_rows, Numerics};
use crate::rvq::{self, Codebook};
use crate::winograd::{WinoConv3x3, WinoConvT, WinoScratch};
use crate::CodecError;

mod blocks;

pub(crate) use blocks::STFT_PER_FRAME;
use blocks::*;

/// Reads a codec tensor (decoder or encoder) and checks its shape.
pub(crate) fn tensor(
    ckpt: &Checkpoint,
    name: &str,
    shape: &[usize],
) -> Result<Vec<f32>, CodecError> {
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

/// What the loader does to the checkpoint's weights: the number format of the
/// kernels and the activation scale of the block (which multiplies its biases).
#[derive(Clone, Copy)]
struct WeightPrep {
    numerics: Numerics,
    scale: f32,
}

/// Kernel and bias of the conv at `path` (`…/conv/kernel`, `…/conv/bias`).
fn conv_weights(
    ckpt: &Checkpoint,
    path: &str,
    shape: [usize; 4],
    prep: WeightPrep,
) -> Result<(Vec<f32>, Vec<f32>), CodecError> {
    let [kernel_name, bias_name] = conv_tensor_names(path);
    let mut k = tensor(ckpt, &kernel_name, &shape)?;
    let mut b = tensor(ckpt, &bias_name, &[shape[3]])?;
    prep.numerics.round_to_format(&mut k);
    b.iter_mut().for_each(|v| *v *= prep.scale);
    Ok((k, b))
}

fn load_conv(
    ckpt: &Checkpoint,
    path: &str,
    shape: [usize; 4],
    f: usize,
    prep: WeightPrep,
) -> Result<Conv2d, CodecError> {
    let (k, b) = conv_weights(ckpt, path, shape, prep)?;
    Ok(Conv2d::new(&k, &b, shape, f))
}

struct Block {
    spec: &'static BlockSpec,
    /// ELU → transposed conv.
    convt: Conv2dTranspose,
    /// The same transposed conv with Winograd along time, where that pays.
    winot: Option<WinoConvT>,
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
    numerics: Numerics,
}

/// The output grid of a decoder stage, given to the `lap` callback of
/// [`Decoder::run_chunk`] (profiling, activation peaks).
pub(crate) struct Stage<'a> {
    pub out: &'a Grid,
    /// Current rows of `out`.
    pub rows: usize,
    /// Activation scale of `out` (native value = stored value / `scale`).
    pub scale: f32,
}

fn stage(out: &Grid, rows: usize, scale: f32) -> Stage<'_> {
    Stage { out, rows, scale }
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
    /// How the grids store activations (state export/import converts to native f32).
    pub numerics: Numerics,
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
    /// Activation scale of the block's grids.
    scale: f32,
}

impl Decoder {
    /// Loads the decoder; `early` stores the weights of the weight-bandwidth-bound
    /// early layers in two bytes (see [`crate::CodecPrecision`]).
    pub(crate) fn load(
        ckpt: &Checkpoint,
        early: Option<EarlyWeights>,
        numerics: Numerics,
        isa: Isa,
    ) -> Result<Decoder, CodecError> {
        let (d, p, c) = (rvq::DIM, INPUT_BINS * INPUT_CHANNELS, INPUT_CHANNELS);
        let prep = |block: usize| WeightPrep {
            numerics,
            scale: numerics.rescale.block_scale(block),
        };
        let il = |path: &str, cin: usize| -> Result<Conv2d, CodecError> {
            let (k, b) = conv_weights(ckpt, path, [1, 1, cin, p], prep(0))?;
            Ok(Conv2d::new_1x1(&k, &b, cin, p))
        };
        let il_first = il(INPUT_FIRST, d)?;
        let il_b1 = il(INPUT_SHORTCUT_1, d)?;
        let il_b2 = il(INPUT_SHORTCUT_2, p)?;
        let ru_a = load_conv(ckpt, RESIDUAL_A, [3, 3, c, c], INPUT_BINS, prep(0))?;
        let ru_b = load_conv(ckpt, RESIDUAL_B, [3, 3, c, c], INPUT_BINS, prep(0))?;
        let mut blocks = Vec::new();
        for (i, spec) in BLOCKS.iter().enumerate() {
            let prep = prep(i);
            let [kt, kf] = spec.convt_kernel();
            let shape = [kt, kf, spec.cin, spec.cout];
            let (k, b) = conv_weights(ckpt, &spec.convt_path(), shape, prep)?;
            let weights = TransposeWeights {
                kernel: &k,
                bias: &b,
                shape,
                stride: spec.stride,
                f_in: spec.f_in,
            };
            let convt = Conv2dTranspose::new(&weights);
            let winot = WINOGRAD_T[blocks.len()].map(|mt| WinoConvT::new(&weights, mt));
            let f_out = spec.f_out();
            let conv_shape = [3, 3, spec.cout, spec.cout];
            let conv = load_conv(ckpt, &spec.conv_path(), conv_shape, f_out, prep)?;
            let shortcut = match spec.shortcut_path() {
                Some(path) => {
                    let (k, b) = conv_weights(ckpt, &path, [1, 1, spec.cin, spec.cout], prep)?;
                    Some(Conv2d::new_1x1(&k, &b, spec.cin, spec.cout))
                }
                None => None,
            };
            let (kk, kb) = conv_weights(ckpt, &spec.conv_path(), conv_shape, prep)?;
            let wino = WINOGRAD[blocks.len()]
                .map(|m| WinoConv3x3::new(&kk, &kb, spec.cout, spec.cout, f_out, m));
            blocks.push(Block {
                spec,
                convt,
                winot,
                conv,
                wino,
                shortcut,
            });
        }
        let out_prep = prep(BLOCKS.len());
        let out = load_conv(ckpt, OUTPUT, SPECTROSTREAM.output_kernel(), BINS, out_prep)?;
        let mut d = Decoder {
            il_first,
            il_b1,
            il_b2,
            ru_a,
            ru_b,
            blocks,
            out,
            numerics,
        };
        if let Some(format) = early {
            d.narrow_early(format, isa);
        }
        if numerics.f16 {
            d.use_half_arithmetic(isa);
        }
        Ok(d)
    }

    /// fp16 arithmetic for every convolution with a half kernel on `isa` (NEON with
    /// FP16; elsewhere the f32 kernels compute the products of the half values).
    /// The output conv (two output channels, dot-product kernels) stays f32.
    fn use_half_arithmetic(&mut self, isa: Isa) {
        for c in self.input_convs() {
            c.use_half_arithmetic(isa);
        }
        for b in &mut self.blocks {
            b.convt.use_half_arithmetic(isa);
            b.conv.use_half_arithmetic(isa);
            if let Some(w) = &mut b.winot {
                w.use_half_arithmetic(isa);
            }
            if let Some(w) = &mut b.wino {
                w.use_half_arithmetic(isa);
            }
            if let Some(s) = &mut b.shortcut {
                s.use_half_arithmetic(isa);
            }
        }
    }

    /// The convolutions before the upsampling blocks: input layer and residual unit.
    fn input_convs(&mut self) -> [&mut Conv2d; 5] {
        [
            &mut self.il_first,
            &mut self.il_b1,
            &mut self.il_b2,
            &mut self.ru_a,
            &mut self.ru_b,
        ]
    }

    /// Whether any convolution computes in half precision.
    pub(crate) fn half_arithmetic(&self) -> bool {
        self.ru_a.half_arithmetic()
    }

    /// f16 weights for the layers that run on few positions per frame in step mode
    /// (their weights are streamed from DRAM every frame): input_layer, the residual
    /// unit, decoder_0 and decoder_1's transposed conv and shortcut.
    fn narrow_early(&mut self, format: EarlyWeights, isa: Isa) {
        for c in self.input_convs() {
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
                convt_path: s.convt_path(),
                conv_path: s.conv_path(),
                input: Grid::new(b.convt.input_shape(s.groups, t_in)),
                mid: Grid::new(b.conv.input_shape(s.groups, t_out)),
                out: Grid::new(raw(s.groups, t_out, f_out, s.cout)),
                shortcut: b
                    .shortcut
                    .as_ref()
                    .map(|_| Grid::new(raw(s.groups, t_in, s.f_in, s.cout))),
                wino: b.wino.as_ref().map(|w| w.scratch(s.groups, t_out)),
                winot: b.winot.as_ref().map(|w| w.scratch(s.groups, t_in)),
                scale: self.numerics.rescale.block_scale(blocks.len()),
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
            numerics: self.numerics,
        }
    }

    /// Runs `frames.len()` codec frames (at most `b.max_frames`) through the decoder;
    /// the result is in `b.stft`, `4·frames.len()` rows of `[480][4]`. `lap` is called
    /// after each stage with its output grid.
    pub(crate) fn run_chunk(
        &self,
        isa: Isa,
        cb: &Codebook,
        frames: &[[u32; rvq::LEVELS]],
        b: &mut Buffers,
        pool: &Pool,
        lap: &mut dyn FnMut(&'static str, Stage<'_>),
    ) {
        let t = frames.len();
        assert!(
            t <= b.max_frames,
            "chunk of {t} frames exceeds the buffers ({})",
            b.max_frames
        );
        let num = self.numerics;
        for (i, ids) in frames.iter().enumerate() {
            let o = b.emb.interior(0, i, 0);
            cb.embed(ids, &mut b.emb.data[o..o + rvq::DIM]);
        }
        num.store(&mut b.emb, t);
        // input_layer: body + shortcut, both 1x1 over the [1, 256] frame.
        let p = INPUT_BINS * INPUT_CHANNELS;
        let rows = |cin: usize| RowMap {
            dims: [1, t, 1],
            in_strides: [0, cin, 0],
            in_base: 0,
            out_strides: [0, p, 0],
            out_base: 0,
        };
        let emb = &b.emb.data;
        let il_h = &mut b.il_h;
        self.il_b1.pointwise(
            isa,
            emb,
            rows(rvq::DIM),
            &mut il_h.data,
            Epilogue::Elu,
            pool,
        );
        num.store(il_h, t);
        let x0 = &mut b.x0;
        self.il_first.pointwise(
            isa,
            emb,
            rows(rvq::DIM),
            &mut x0.data,
            Epilogue::Store,
            pool,
        );
        num.store(x0, t);
        let accumulate = Epilogue::Accumulate;
        self.il_b2
            .pointwise(isa, &il_h.data, rows(p), &mut x0.data, accumulate, pool);
        num.store(x0, t);
        lap("input_layer", stage(x0, t, 1.0));
        // input_layers_residual_unit (identity shortcut), in place on x0.
        elu_into(isa, x0, &mut b.ru_in, t, 1.0, pool);
        num.store(&mut b.ru_in, t);
        self.ru_a
            .run(isa, &b.ru_in, t, &mut b.ru_mid, Epilogue::Elu, pool);
        num.store(&mut b.ru_mid, t);
        self.ru_b.run(isa, &b.ru_mid, t, x0, accumulate, pool);
        num.store(x0, t);
        b.ru_in.shift_history(t);
        b.ru_mid.shift_history(t);
        lap("residual_unit", stage(x0, t, 1.0));
        // Upsampling blocks.
        let mut t_in = t;
        let mut src_scale = 1.0;
        for (i, blk) in self.blocks.iter().enumerate() {
            let (done, rest) = b.blocks.split_at_mut(i);
            let bufs = &mut rest[0];
            let s = bufs.scale;
            let src = if i == 0 {
                &mut b.x0
            } else {
                &mut done[i - 1].out
            };
            // A top-level serial boundary: the only place the scale changes.
            if s != src_scale {
                scale_rows(src, t_in, s / src_scale);
                num.store(src, t_in);
            }
            let src = &*src;
            let t_out = t_in * blk.spec.stride[0];
            let names = &LAP_NAMES[i];
            elu_into(isa, src, &mut bufs.input, t_in, s, pool);
            num.store(&mut bufs.input, t_in);
            // The transposed conv's fused ELU is the plain one; scaled, it is a pass.
            let epi = if s == 1.0 {
                Epilogue::Elu
            } else {
                Epilogue::Store
            };
            match (&blk.winot, &mut bufs.winot) {
                (Some(w), Some(scratch)) => {
                    w.run(isa, &bufs.input, t_in, &mut bufs.mid, epi, scratch, pool)
                }
                _ => blk
                    .convt
                    .run(isa, &bufs.input, t_in, &mut bufs.mid, epi, pool),
            }
            if epi == Epilogue::Store {
                elu_rows_scaled(isa, &mut bufs.mid, t_out, s);
            }
            num.store(&mut bufs.mid, t_out);
            lap(names[0], stage(&bufs.mid, t_out, s));
            let store = Epilogue::Store;
            match (&blk.wino, &mut bufs.wino) {
                (Some(w), Some(scratch)) => {
                    w.run(isa, &bufs.mid, t_out, &mut bufs.out, store, scratch, pool)
                }
                _ => blk
                    .conv
                    .run(isa, &bufs.mid, t_out, &mut bufs.out, store, pool),
            }
            num.store(&mut bufs.out, t_out);
            lap(names[1], stage(&bufs.out, t_out, s));
            match (&blk.shortcut, &mut bufs.shortcut) {
                (Some(conv), Some(sc)) => {
                    let map = shortcut_rows(src, sc, t_in);
                    conv.pointwise(isa, &src.data, map, &mut sc.data, store, pool);
                    num.store(sc, t_in);
                    upsample_add(sc, blk.spec.stride, &mut bufs.out, t_out, pool);
                }
                _ => upsample_add(src, blk.spec.stride, &mut bufs.out, t_out, pool),
            }
            num.store(&mut bufs.out, t_out);
            bufs.input.shift_history(t_in);
            bufs.mid.shift_history(t_out);
            lap(names[2], stage(&bufs.out, t_out, s));
            t_in = t_out;
            src_scale = s;
        }
        // output_layer per group, written into the interleaved [t][480][4] STFT.
        let s = self.numerics.rescale.block_scale(self.blocks.len());
        let last = &mut b.blocks[self.blocks.len() - 1].out;
        if s != src_scale {
            scale_rows(last, t_in, s / src_scale);
            num.store(last, t_in);
        }
        elu_into(isa, last, &mut b.out_in, t_in, s, pool);
        num.store(&mut b.out_in, t_in);
        let i = b.out_in.shape;
        let rows = RowMap {
            dims: [GROUPS, t_in, BINS],
            in_strides: [i.group_stride(), i.row_stride(), i.c],
            in_base: 0,
            out_strides: [2, BINS * BIN_CHANNELS, BIN_CHANNELS],
            out_base: 0,
        };
        let stft = &mut b.stft;
        self.out.pointwise(
            isa,
            &b.out_in.data,
            rows,
            &mut stft.data,
            Epilogue::Store,
            pool,
        );
        // Leave the rescaled region: the STFT (the host iSTFT's f32 input, ≈ 1e4 on
        // the real checkpoint) is at native scale and not rounded to half.
        scale_rows(stft, t_in, 1.0 / s);
        b.out_in.shift_history(t_in);
        lap("output_layer", stage(stft, t_in, 1.0));
    }
}

impl Buffers {
    /// The streaming state arrays (grids with history rows) by stable name, in order,
    /// with the activation scale each is stored at.
    pub(crate) fn state_grids(&self) -> Vec<(String, &Grid, f32)> {
        let mut v = vec![
            (format!("{RESIDUAL_A}/input"), &self.ru_in, 1.0),
            (format!("{RESIDUAL_B}/input"), &self.ru_mid, 1.0),
        ];
        for bb in &self.blocks {
            v.push((format!("{}/input", bb.convt_path), &bb.input, bb.scale));
            v.push((format!("{}/input", bb.conv_path), &bb.mid, bb.scale));
        }
        let s = self.numerics.rescale.block_scale(self.blocks.len());
        v.push((format!("{OUTPUT}/input"), &self.out_in, s));
        v
    }

    /// As [`Buffers::state_grids`], mutable (same order).
    pub(crate) fn state_grids_mut(&mut self) -> Vec<(String, &mut Grid, f32)> {
        let s_out = self.numerics.rescale.block_scale(self.blocks.len());
        let mut v = vec![
            (format!("{RESIDUAL_A}/input"), &mut self.ru_in, 1.0),
            (format!("{RESIDUAL_B}/input"), &mut self.ru_mid, 1.0),
        ];
        for bb in self.blocks.iter_mut() {
            let s = bb.scale;
            v.push((format!("{}/input", bb.convt_path), &mut bb.input, s));
            v.push((format!("{}/input", bb.conv_path), &mut bb.mid, s));
        }
        let out_in = &mut self.out_in;
        v.push((format!("{OUTPUT}/input"), out_in, s_out));
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
