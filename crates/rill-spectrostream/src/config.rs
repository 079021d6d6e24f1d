//! The SpectroStream decoder's architecture, written once: upstream's
//! hyper-parameters ([`SPECTROSTREAM`]), from which the decoder's block list and
//! every checkpoint tensor the codec reads (names, shapes, init rules) are derived.

use rill_checkpoint::layout::{Init, TensorSpec, RVQ_CODEBOOK, SOUNDSTREAM};

use crate::istft::{BINS, BIN_CHANNELS};

/// Upsampling residual blocks of the decoder (`decoder_0` … `decoder_6`).
pub const BLOCK_COUNT: usize = 7;

/// Checkpoint names of the kernel and bias of the decoder conv at `path` (one of
/// the paths below).
pub(crate) fn conv_tensor_names(path: &str) -> [String; 2] {
    let conv = format!("{SOUNDSTREAM}/decoder/{path}/conv");
    [format!("{conv}/kernel"), format!("{conv}/bias")]
}
/// The input layer's 1×1 convs: the main path, and the shortcut's two.
pub(crate) const INPUT_FIRST: &str = "input_layer/conv1x1_first";
pub(crate) const INPUT_SHORTCUT_1: &str = "input_layer/shortcut_layer/conv1x1_b1";
pub(crate) const INPUT_SHORTCUT_2: &str = "input_layer/shortcut_layer/conv1x1_b2";
/// The residual unit's two 3×3 convs (in order).
pub(crate) const RESIDUAL_A: &str = "input_layers_residual_unit/conv2d_3x3_a";
pub(crate) const RESIDUAL_B: &str = "input_layers_residual_unit/conv2d_3x3";
/// The output layer's conv.
pub(crate) const OUTPUT: &str = "output_layer/base_conv_last";
/// Kernel size of the output conv.
const OUTPUT_KERNEL: usize = 7;
/// Parallel channel groups of SpectroStream (stereo).
const STEREO: usize = 2;

/// SpectroStream's hyper-parameters (the encoder's, which the decoder inverts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecConfig {
    /// RVQ codebook levels stored in the checkpoint (the decoder reads the first
    /// [`crate::LEVELS`]).
    pub stored_levels: usize,
    /// Codes per RVQ level.
    pub codes: usize,
    /// RVQ embedding width: the decoder's input.
    pub embedding_dim: usize,
    /// Channels of the encoder's first stage (and the decoder's last).
    pub base_channels: usize,
    /// The encoder blocks' (time, frequency) strides, first block first.
    pub ratios: [[usize; 2]; BLOCK_COUNT],
    /// The encoder blocks' channel multipliers, first block first.
    pub mults: [usize; BLOCK_COUNT],
    /// The encoder block that runs on both groups' channels together; the blocks
    /// before it run on each group apart (`ParallelChannels`).
    pub recombined_block: usize,
    /// Parallel channel groups (stereo: left, right).
    pub groups: usize,
    /// STFT bins at the decoder output.
    pub stft_bins: usize,
    /// Channels per bin and group at the decoder output (real, imaginary).
    pub output_channels: usize,
}

/// The codec of Magenta RealTime 2 (the same for mrt2_small and mrt2_base).
pub const SPECTROSTREAM: CodecConfig = CodecConfig {
    stored_levels: 64,
    codes: 1024,
    embedding_dim: 256,
    base_channels: 64,
    ratios: [[1, 2], [1, 2], [1, 3], [1, 2], [1, 2], [2, 2], [2, 1]],
    mults: [2, 1, 2, 1, 1, 2, 1],
    recombined_block: BLOCK_COUNT - 1,
    groups: STEREO,
    stft_bins: BINS,
    output_channels: BIN_CHANNELS / STEREO,
};

/// One upsampling residual block `decoder_{index}`: ELU → transposed conv → ELU →
/// 3×3 conv, plus a 1×1 shortcut conv of the input when the channels change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSpec {
    pub index: usize,
    /// Input channels (per group).
    pub cin: usize,
    /// Output channels (per group).
    pub cout: usize,
    /// (time, frequency) upsampling.
    pub stride: [usize; 2],
    /// Frequency bins of the input.
    pub f_in: usize,
    /// Channel groups the block runs on.
    pub groups: usize,
}

impl BlockSpec {
    /// `decoder_{index}`.
    pub fn name(&self) -> String {
        format!("decoder_{}", self.index)
    }

    /// The transposed conv's kernel `[kt, kf]`: twice the stride, at least 3.
    pub const fn convt_kernel(&self) -> [usize; 2] {
        let [st, sf] = self.stride;
        [max(2 * st, 3), max(2 * sf, 3)]
    }

    /// Checkpoint path of the transposed conv (see [`conv_tensor_names`]).
    pub fn convt_path(&self) -> String {
        let [kt, kf] = self.convt_kernel();
        format!("{}/conv2dtranspose_{kt}x{kf}", self.name())
    }

    /// Checkpoint path of the 3×3 conv.
    pub fn conv_path(&self) -> String {
        format!("{}/conv2d_3x3", self.name())
    }

    /// Checkpoint path of the shortcut conv, if the block has one.
    pub fn shortcut_path(&self) -> Option<String> {
        (self.cin != self.cout).then(|| format!("{}/shortcut_layer/conv1x1", self.name()))
    }

    /// Frequency bins of the output.
    pub const fn f_out(&self) -> usize {
        self.f_in * self.stride[1]
    }
}

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

impl CodecConfig {
    /// Channels per group after encoder block `j` (`None`: before the first).
    const fn channels_after(&self, j: Option<usize>) -> usize {
        let mut c = self.base_channels;
        if let Some(j) = j {
            let mut k = 0;
            while k <= j {
                c *= self.mults[k];
                k += 1;
            }
        }
        c
    }

    /// Product of the encoder's strides along axis 0 (time) or 1 (frequency).
    const fn total_stride(&self, axis: usize) -> usize {
        let mut p = 1;
        let mut k = 0;
        while k < BLOCK_COUNT {
            p *= self.ratios[k][axis];
            k += 1;
        }
        p
    }

    /// Frequency bins at the decoder input.
    pub const fn input_bins(&self) -> usize {
        self.stft_bins / self.total_stride(1)
    }

    /// Channels per bin at the decoder input.
    pub const fn input_channels(&self) -> usize {
        self.channels_after(Some(BLOCK_COUNT - 1))
    }

    /// STFT frames per codec frame.
    pub const fn stft_per_frame(&self) -> usize {
        self.total_stride(0)
    }

    /// The decoder's blocks, `decoder_0` first: the encoder's blocks in reverse.
    pub const fn blocks(&self) -> [BlockSpec; BLOCK_COUNT] {
        let empty = BlockSpec {
            index: 0,
            cin: 0,
            cout: 0,
            stride: [0, 0],
            f_in: 0,
            groups: 0,
        };
        let mut blocks = [empty; BLOCK_COUNT];
        let mut f_in = self.input_bins();
        let mut index = 0;
        while index < BLOCK_COUNT {
            let j = BLOCK_COUNT - 1 - index;
            let before = self.channels_after(j.checked_sub(1));
            let (cout, groups) = if j == self.recombined_block {
                (self.groups * before, 1)
            } else {
                (before, self.groups)
            };
            blocks[index] = BlockSpec {
                index,
                cin: self.channels_after(Some(j)),
                cout,
                stride: self.ratios[j],
                f_in,
                groups,
            };
            f_in *= self.ratios[j][1];
            index += 1;
        }
        blocks
    }

    /// Every checkpoint tensor the codec reads, with the synthetic-checkpoint init
    /// rule (names in build order; the checkpoint layout sorts them).
    pub fn tensor_specs(&self) -> Vec<TensorSpec> {
        let mut specs = vec![TensorSpec {
            name: RVQ_CODEBOOK.to_string(),
            shape: vec![self.stored_levels, self.codes, self.embedding_dim],
            init: Init::Rvq,
        }];
        let mut conv = |path: &str, kernel: [usize; 2], stride: [usize; 2], cin, cout| {
            let fan_in = (kernel[0] * kernel[1] * cin) as f64 / (stride[0] * stride[1]) as f64;
            let [kernel_name, bias_name] = conv_tensor_names(path);
            specs.push(TensorSpec {
                name: kernel_name,
                shape: vec![kernel[0], kernel[1], cin, cout],
                init: Init::Kernel { fan_in, gain: 1.0 },
            });
            specs.push(TensorSpec {
                name: bias_name,
                shape: vec![cout],
                init: Init::Bias,
            });
        };
        let (d, c) = (self.embedding_dim, self.input_channels());
        let p = self.input_bins() * c;
        conv(INPUT_FIRST, [1, 1], [1, 1], d, p);
        conv(INPUT_SHORTCUT_1, [1, 1], [1, 1], d, p);
        conv(INPUT_SHORTCUT_2, [1, 1], [1, 1], p, p);
        conv(RESIDUAL_A, [3, 3], [1, 1], c, c);
        conv(RESIDUAL_B, [3, 3], [1, 1], c, c);
        for b in self.blocks() {
            let (kernel, stride) = (b.convt_kernel(), b.stride);
            conv(&b.convt_path(), kernel, stride, b.cin, b.cout);
            conv(&b.conv_path(), [3, 3], [1, 1], b.cout, b.cout);
            if let Some(path) = b.shortcut_path() {
                conv(&path, [1, 1], [1, 1], b.cin, b.cout);
            }
        }
        let k = [OUTPUT_KERNEL; 2];
        conv(OUTPUT, k, [1, 1], self.base_channels, self.output_channels);
        specs
    }

    /// The output conv's kernel shape `[kt, kf, cin, cout]`.
    pub(crate) const fn output_kernel(&self) -> [usize; 4] {
        [
            OUTPUT_KERNEL,
            OUTPUT_KERNEL,
            self.base_channels,
            self.output_channels,
        ]
    }
}

#[cfg(test)]
mod tests;
