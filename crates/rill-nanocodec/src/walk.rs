//! The decoder's architecture, walked once for every file format: the pre conv,
//! then per up-sampling stage its activation, transposed conv and residual
//! blocks (kernels × dilations, four layers each), then the post activation and
//! post conv. A [`Source`] names each layer in its file's scheme and reads it,
//! recording a problem instead of stopping, so a file's problems come all at once.

use crate::config::Config;
use crate::weights::{Conv1d, ConvTranspose1d, HalfSnake, ResidualBlock, Stage, Weights};

/// Where a layer sits in the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layer {
    PreConv,
    /// The activation in front of up-sampling stage `i`.
    Activation(usize),
    /// The transposed convolution of up-sampling stage `i`.
    Up(usize),
    /// One layer of a residual block.
    Res(ResBlock, ResPart),
    PostActivation,
    PostConv,
}

/// Residual block `block` (the dilation's index) of branch `branch` (the kernel's
/// index) of up-sampling stage `stage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResBlock {
    pub stage: usize,
    pub branch: usize,
    pub block: usize,
}

/// The four layers of a residual block, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResPart {
    InputActivation,
    InputConv,
    SkipActivation,
    SkipConv,
}

/// A convolution's weight and bias, as a file holds them.
pub(crate) type WeightBias = (Vec<f32>, Vec<f32>);

/// The decoder tensors of one file: how it names a layer, and how it reads one.
pub(crate) trait Source {
    /// The name this file gives the layer at `at`.
    fn stem(&self, at: Layer) -> String;
    /// The causal conv `stem` of shape `[cout, cin, kernel]`: weight
    /// `[cout][cin][kernel]`, bias `[cout]`.
    fn conv(&mut self, stem: &str, shape: [usize; 3]) -> WeightBias;
    /// The grouped transposed conv `stem` of shape `[cin, cout, kernel]` (`cin / cout`
    /// inputs per output): weight `[cin][kernel]`, bias `[cout]`.
    fn up(&mut self, stem: &str, shape: [usize; 3]) -> WeightBias;
    /// The HalfSnake `stem` over `channels`.
    fn snake(&mut self, stem: &str, channels: usize) -> HalfSnake;
}

fn conv(src: &mut impl Source, at: Layer, [cout, cin, kernel, dilation]: [usize; 4]) -> Conv1d {
    let stem = src.stem(at);
    let (weight, bias) = src.conv(&stem, [cout, cin, kernel]);
    Conv1d {
        cout,
        cin,
        kernel,
        dilation,
        weight,
        bias,
    }
}

/// The transposed conv `cin → cout` of stage `i`, up-sampling by `rate`.
fn up(src: &mut impl Source, i: usize, cin: usize, cout: usize, rate: usize) -> ConvTranspose1d {
    let stem = src.stem(Layer::Up(i));
    let kernel = 2 * rate;
    let (weight, bias) = src.up(&stem, [cin, cout, kernel]);
    ConvTranspose1d {
        cin,
        cout,
        kernel,
        stride: rate,
        weight,
        bias,
    }
}

fn snake(src: &mut impl Source, at: Layer, channels: usize) -> HalfSnake {
    let stem = src.stem(at);
    src.snake(&stem, channels)
}

/// Every layer of `cfg`'s decoder read from `src`, in the decoder's order (the
/// order the problems are reported in). `cfg` must have passed the loaders'
/// config check, so nothing is sized by a hostile number.
pub(crate) fn read_decoder(cfg: &Config, src: &mut impl Source) -> Weights {
    let pre_conv = conv(
        src,
        Layer::PreConv,
        [cfg.base_channels, cfg.input_dim, cfg.in_kernel, 1],
    );
    let mut stages = Vec::new();
    for (i, &rate) in cfg.up_sample_rates.iter().enumerate() {
        let (cin, c) = (cfg.stage_in(i), cfg.stage_out(i));
        let activation = snake(src, Layer::Activation(i), cin);
        let up = up(src, i, cin, c, rate);
        let mut res = Vec::new();
        for (j, &k) in cfg.resblock_kernels.iter().enumerate() {
            let mut chain = Vec::new();
            for (m, &d) in cfg.resblock_dilations.iter().enumerate() {
                let block = ResBlock {
                    stage: i,
                    branch: j,
                    block: m,
                };
                let at = |part| Layer::Res(block, part);
                chain.push(ResidualBlock {
                    input_activation: snake(src, at(ResPart::InputActivation), c),
                    input_conv: conv(src, at(ResPart::InputConv), [c, c, k, d]),
                    skip_activation: snake(src, at(ResPart::SkipActivation), c),
                    skip_conv: conv(src, at(ResPart::SkipConv), [c, c, k, 1]),
                });
            }
            res.push(chain);
        }
        stages.push(Stage {
            activation,
            up,
            res,
        });
    }
    let cf = cfg.final_channels();
    let post_activation = snake(src, Layer::PostActivation, cf);
    let post_conv = conv(src, Layer::PostConv, [1, cf, cfg.out_kernel, 1]);
    Weights {
        config: cfg.clone(),
        pre_conv,
        stages,
        post_activation,
        post_conv,
    }
}
