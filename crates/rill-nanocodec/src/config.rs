//! The NanoCodec 22 kHz / 1.89 kbps / 21.5 fps configuration (released
//! `model_config.yaml`, spec §2.3) and the tensor names of its state dict.

use crate::walk::{Layer, ResPart};

/// Output sample rate.
pub const SAMPLE_RATE: u32 = 22_050;
/// Samples per codec frame (46.4 ms): the product of the up-sampling rates.
pub const SAMPLES_PER_FRAME: usize = 1024;
/// Codebooks (FSQ groups) per frame.
pub const CODEBOOKS: usize = 8;
/// FSQ levels of each of the 4 dimensions of a group.
pub const FSQ_LEVELS: [u32; 4] = [8, 7, 6, 6];
/// `dim_base_index` of each group: the mixed-radix weights of [`FSQ_LEVELS`].
pub const FSQ_BASES: [u32; 4] = [1, 8, 56, 336];
/// Valid codes per codebook (`8·7·6·6`); the TTS model's special ids start here.
pub const CODEBOOK_SIZE: u32 = 2016;
/// Latent channels (`CODEBOOKS · 4`).
pub const LATENT_DIM: usize = CODEBOOKS * FSQ_LEVELS.len();

/// Shape of the `CausalHiFiGANDecoder` (only the released values are supported,
/// but the decoder is written against these fields, not literals).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub input_dim: usize,
    pub base_channels: usize,
    pub up_sample_rates: Vec<usize>,
    pub in_kernel: usize,
    pub out_kernel: usize,
    pub resblock_kernels: Vec<usize>,
    pub resblock_dilations: Vec<usize>,
}

impl Default for Config {
    fn default() -> Config {
        Config::nanocodec_22khz()
    }
}

impl Config {
    /// `nvidia/nemo-nano-codec-22khz-1.89kbps-21.5fps`.
    pub fn nanocodec_22khz() -> Config {
        Config {
            input_dim: LATENT_DIM,
            base_channels: 864,
            up_sample_rates: vec![8, 8, 4, 2, 2],
            in_kernel: 7,
            out_kernel: 3,
            resblock_kernels: vec![3, 7, 11],
            resblock_dilations: vec![1, 3, 5],
        }
    }

    /// Input channels of up-sampling stage `i` (`base / 2^i`).
    pub fn stage_in(&self, i: usize) -> usize {
        self.base_channels >> i
    }

    /// Output channels of up-sampling stage `i` (`base / 2^(i+1)`).
    pub fn stage_out(&self, i: usize) -> usize {
        self.base_channels >> (i + 1)
    }

    /// Channels entering the output convolution.
    pub fn final_channels(&self) -> usize {
        self.stage_out(self.up_sample_rates.len() - 1)
    }

    /// Output samples per input frame.
    pub fn samples_per_frame(&self) -> usize {
        self.up_sample_rates.iter().product()
    }
}

/// State-dict key of a weight-normed convolution's parts.
pub(crate) fn conv_keys(stem: &str) -> [String; 3] {
    [
        format!("{stem}.conv.bias"),
        format!("{stem}.conv.parametrizations.weight.original0"),
        format!("{stem}.conv.parametrizations.weight.original1"),
    ]
}

/// State-dict key of a HalfSnake's `alpha`.
pub(crate) fn alpha_key(stem: &str) -> String {
    format!("{stem}.activation.snake_act.alpha")
}

/// Stem of residual block `m` of branch `j` of stage `i`.
pub(crate) fn res_block_stem(i: usize, j: usize, m: usize) -> String {
    format!("audio_decoder.res_layers.{i}.res_blocks.{j}.res_blocks.{m}")
}

/// The state-dict stem of a decoder layer: `audio_decoder.pre_conv`,
/// `….activations.{i}`, `….up_sample_conv_layers.{i}`, a residual block's
/// `….input_activation` etc., `….post_activation`, `….post_conv`.
pub(crate) fn state_dict_stem(at: Layer) -> String {
    match at {
        Layer::PreConv => "audio_decoder.pre_conv".into(),
        Layer::Activation(i) => format!("audio_decoder.activations.{i}"),
        Layer::Up(i) => format!("audio_decoder.up_sample_conv_layers.{i}"),
        Layer::Res(b, part) => {
            let leaf = match part {
                ResPart::InputActivation => "input_activation",
                ResPart::InputConv => "input_conv",
                ResPart::SkipActivation => "skip_activation",
                ResPart::SkipConv => "skip_conv",
            };
            format!("{}.{leaf}", res_block_stem(b.stage, b.branch, b.block))
        }
        Layer::PostActivation => "audio_decoder.post_activation".into(),
        Layer::PostConv => "audio_decoder.post_conv".into(),
    }
}
