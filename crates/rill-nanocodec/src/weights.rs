//! Decoder weights in inference form: weight norm folded (`W = g·v/‖v‖`, the norm
//! over every dim but 0, which is `in_channels` for the transposed convolutions)
//! and the snake's `1/(α + 1e-9)` precomputed. A `.nemo` or GGUF reader fills a
//! [`StateDict`] (or these structs directly, e.g. from a GGUF's pre-folded
//! tensors); [`Weights::from_state_dict`] validates and folds.

use crate::config::{alpha_key, conv_keys, res_block_stem, state_dict_stem, Config};
use crate::error::{CodecError, Problem};
use crate::state_dict::{StateDict, Values};
use crate::walk::{read_decoder, Layer, Source, WeightBias};

/// A causal `Conv1d` (stride 1): `weight` `[cout][cin][kernel]` (torch layout).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conv1d {
    pub cout: usize,
    pub cin: usize,
    pub kernel: usize,
    pub dilation: usize,
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

/// A causal grouped `ConvTranspose1d` with `groups = cout`, two input channels per
/// output channel: `weight` `[cin][kernel]` (torch `(cin, 1, kernel)`), `kernel = 2·stride`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvTranspose1d {
    pub cin: usize,
    pub cout: usize,
    pub kernel: usize,
    pub stride: usize,
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

/// HalfSnake over `channels`: snake on the first `channels / 2` (with `alpha`),
/// LeakyReLU(0.01) on the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct HalfSnake {
    pub channels: usize,
    pub alpha: Vec<f32>,
    /// `1 / (alpha + 1e-9)` in f32, as torch computes it.
    pub alpha_inv: Vec<f32>,
}

impl HalfSnake {
    pub fn new(channels: usize, alpha: Vec<f32>) -> HalfSnake {
        let alpha_inv = alpha.iter().map(|&a| 1.0 / (a + 1e-9f32)).collect();
        HalfSnake {
            channels,
            alpha,
            alpha_inv,
        }
    }
}

/// `y = x + skip_conv(skip_activation(input_conv(input_activation(x))))`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResidualBlock {
    pub input_activation: HalfSnake,
    pub input_conv: Conv1d,
    pub skip_activation: HalfSnake,
    pub skip_conv: Conv1d,
}

/// One up-sampling stage: HalfSnake → transposed conv → HiFiGAN residual layer
/// (`res[j]` = the chain of blocks of kernel `j`, `res[j][m]` dilation `m`).
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub activation: HalfSnake,
    pub up: ConvTranspose1d,
    pub res: Vec<Vec<ResidualBlock>>,
}

/// Every decoder weight.
#[derive(Debug, Clone, PartialEq)]
pub struct Weights {
    pub config: Config,
    pub pre_conv: Conv1d,
    pub stages: Vec<Stage>,
    pub post_activation: HalfSnake,
    pub post_conv: Conv1d,
}

fn f32s<'a>(sd: &'a StateDict, name: &str) -> &'a [f32] {
    match sd.get(name) {
        Some((_, Values::F32(v))) => v,
        _ => &[],
    }
}

/// `W[i] = v[i] · (g[i] / ‖v[i]‖₂)` for every dim-0 slice `i` (torch's `_weight_norm`
/// order: the scale first, then the product); the norm is summed in f64.
/// Returns the slice index of a zero-norm `v`, which has no direction.
pub fn fold_weight_norm(g: &[f32], v: &[f32]) -> Result<Vec<f32>, usize> {
    let per = v.len() / g.len().max(1);
    let mut w = Vec::with_capacity(v.len());
    for (i, (&gi, row)) in g.iter().zip(v.chunks_exact(per)).enumerate() {
        let norm = row.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt() as f32;
        if norm == 0.0 || !norm.is_finite() {
            return Err(i);
        }
        let scale = gi / norm;
        w.extend(row.iter().map(|&x| x * scale));
    }
    Ok(w)
}

struct Builder<'a> {
    sd: &'a StateDict,
    problems: Vec<Problem>,
}

impl Builder<'_> {
    fn folded(&mut self, stem: &str) -> WeightBias {
        let [b, g, v] = conv_keys(stem);
        let w = match fold_weight_norm(f32s(self.sd, &g), f32s(self.sd, &v)) {
            Ok(w) => w,
            Err(i) => {
                self.problems.push(Problem::BadValue {
                    name: v,
                    reason: format!("slice {i} has zero norm, so weight norm is undefined"),
                });
                Vec::new()
            }
        };
        (w, f32s(self.sd, &b).to_vec())
    }
}

/// The torch state dict, folded as it is read.
impl Source for Builder<'_> {
    fn stem(&self, at: Layer) -> String {
        state_dict_stem(at)
    }

    fn conv(&mut self, stem: &str, _: [usize; 3]) -> WeightBias {
        self.folded(stem)
    }

    fn up(&mut self, stem: &str, _: [usize; 3]) -> WeightBias {
        self.folded(stem)
    }

    fn snake(&mut self, stem: &str, channels: usize) -> HalfSnake {
        let alpha = f32s(self.sd, &alpha_key(stem)).to_vec();
        if let Some(i) = alpha.iter().position(|&a| a + 1e-9f32 == 0.0) {
            self.problems.push(Problem::BadValue {
                name: alpha_key(stem),
                reason: format!("alpha[{i}] + 1e-9 is zero; the snake divides by it"),
            });
        }
        HalfSnake::new(channels, alpha)
    }
}

impl Weights {
    /// Validates `sd` against `cfg` (every problem at once) and folds it.
    pub fn from_state_dict(sd: &StateDict, cfg: &Config) -> Result<Weights, CodecError> {
        let problems = sd.problems(cfg);
        if !problems.is_empty() {
            return Err(CodecError::Invalid {
                source_name: "the given state dict".into(),
                problems,
            });
        }
        let mut b = Builder {
            sd,
            problems: Vec::new(),
        };
        let w = read_decoder(cfg, &mut b);
        if !b.problems.is_empty() {
            return Err(CodecError::Invalid {
                source_name: "the given state dict".into(),
                problems: b.problems,
            });
        }
        Ok(w)
    }

    /// The oracle's random weights for weights seed `seed`, folded.
    pub fn synthetic(seed: u64) -> Weights {
        let cfg = Config::nanocodec_22khz();
        let sd = crate::state_dict::synthesize(&cfg, seed);
        // The recipe's values are finite, non-zero-norm and of the right shapes.
        Weights::from_state_dict(&sd, &cfg).expect("synthetic NanoCodec weights are valid")
    }

    /// Reads and folds a safetensors file in the torch state-dict layout.
    pub fn load_safetensors(path: &std::path::Path) -> Result<Weights, CodecError> {
        let cfg = Config::nanocodec_22khz();
        let sd = StateDict::read_safetensors(path, &cfg)?;
        Weights::from_state_dict(&sd, &cfg)
    }
}

/// Most residual branches (kernel sizes) the decoder runs side by side.
pub const MAX_BRANCHES: usize = crate::kernels::MAX_CONVS;

fn bad(out: &mut Vec<Problem>, name: &str, reason: String) {
    out.push(Problem::BadValue {
        name: name.to_string(),
        reason,
    });
}

fn check_conv(out: &mut Vec<Problem>, name: &str, c: &Conv1d, [cout, cin, k, d]: [usize; 4]) {
    if (c.cout, c.cin, c.kernel, c.dilation) != (cout, cin, k, d)
        || c.weight.len() != cout * cin * k
        || c.bias.len() != cout
    {
        let found = format!(
            "{}×{}×{} (dilation {}) with {} weights and {} biases",
            c.cout,
            c.cin,
            c.kernel,
            c.dilation,
            c.weight.len(),
            c.bias.len()
        );
        bad(
            out,
            name,
            format!("expected {cout}×{cin}×{k} (dilation {d}) with {cout} biases, found {found}"),
        );
    } else if c.weight.iter().chain(&c.bias).any(|x| !x.is_finite()) {
        bad(out, name, "holds a non-finite value".into());
    }
}

impl Weights {
    /// Rounds every convolution weight and bias to IEEE half (round to nearest
    /// even), as NVIDIA's F16 GGUF stores them: random weights with the value set a
    /// GGUF user's codec runs on (`rill bench --model magpie --codec f16`). The
    /// arithmetic stays f32.
    pub fn round_to_half(&mut self) {
        let round = |v: &mut Vec<f32>| {
            for x in v.iter_mut() {
                *x = half::f16::from_f32(*x).to_f32();
            }
        };
        let conv = |c: &mut Conv1d| {
            round(&mut c.weight);
            round(&mut c.bias);
        };
        conv(&mut self.pre_conv);
        conv(&mut self.post_conv);
        for s in &mut self.stages {
            round(&mut s.up.weight);
            round(&mut s.up.bias);
            for b in s.res.iter_mut().flatten() {
                conv(&mut b.input_conv);
                conv(&mut b.skip_conv);
            }
        }
    }

    /// Every inconsistency of these weights with their config and with what the
    /// decoder supports (counts, lengths, finite values), named after the
    /// state-dict stems. [`crate::NanoCodec::new`] refuses weights with problems, so
    /// a loader that fills `Weights` directly (e.g. from a GGUF) gets errors, not panics.
    pub fn problems(&self) -> Vec<Problem> {
        let cfg = &self.config;
        let mut out = Vec::new();
        let rates = cfg.up_sample_rates.len();
        if rates == 0
            || cfg.samples_per_frame() != crate::SAMPLES_PER_FRAME
            || cfg.input_dim != crate::LATENT_DIM
            || cfg.base_channels >> rates == 0
            || !cfg.base_channels.is_multiple_of(1 << rates)
            || !(1..=MAX_BRANCHES).contains(&cfg.resblock_kernels.len())
            || cfg.resblock_dilations.is_empty()
            || cfg
                .resblock_kernels
                .iter()
                .chain(&cfg.resblock_dilations)
                .any(|&k| k == 0)
            || cfg.in_kernel == 0
            || cfg.out_kernel == 0
        {
            let reason = format!(
                "{cfg:?} is not a supported NanoCodec decoder (1024 samples per frame, \
                 32 latents, 1..={MAX_BRANCHES} residual kernels)"
            );
            bad(&mut out, "config", reason);
            return out;
        }
        let (c0, cf) = (cfg.base_channels, cfg.final_channels());
        check_conv(
            &mut out,
            "audio_decoder.pre_conv",
            &self.pre_conv,
            [c0, cfg.input_dim, cfg.in_kernel, 1],
        );
        check_conv(
            &mut out,
            "audio_decoder.post_conv",
            &self.post_conv,
            [1, cf, cfg.out_kernel, 1],
        );
        let mut snakes: Vec<(String, &HalfSnake, usize)> = vec![(
            "audio_decoder.post_activation".into(),
            &self.post_activation,
            cf,
        )];
        if self.stages.len() != rates {
            let reason = format!(
                "{} up-sampling stages, the config has {rates}",
                self.stages.len()
            );
            bad(&mut out, "audio_decoder", reason);
        }
        for (i, s) in self.stages.iter().enumerate().take(rates) {
            let (cin, c, r) = (cfg.stage_in(i), cfg.stage_out(i), cfg.up_sample_rates[i]);
            snakes.push((format!("audio_decoder.activations.{i}"), &s.activation, cin));
            let u = &s.up;
            let name = format!("audio_decoder.up_sample_conv_layers.{i}");
            if (u.cin, u.cout, u.kernel, u.stride) != (cin, c, 2 * r, r)
                || u.weight.len() != cin * 2 * r
                || u.bias.len() != c
            {
                let reason = format!(
                    "expected a grouped {cin}→{c} transposed conv, kernel {}, stride {r}",
                    2 * r
                );
                bad(&mut out, &name, reason);
            } else if u.weight.iter().chain(&u.bias).any(|x| !x.is_finite()) {
                bad(&mut out, &name, "holds a non-finite value".into());
            }
            let shape_ok = s.res.len() == cfg.resblock_kernels.len()
                && s.res
                    .iter()
                    .all(|chain| chain.len() == cfg.resblock_dilations.len());
            if !shape_ok {
                let reason = "residual blocks do not match the config's kernels × dilations".into();
                bad(&mut out, &format!("audio_decoder.res_layers.{i}"), reason);
                continue;
            }
            for (j, chain) in s.res.iter().enumerate() {
                for (m, b) in chain.iter().enumerate() {
                    let stem = res_block_stem(i, j, m);
                    let (k, d) = (cfg.resblock_kernels[j], cfg.resblock_dilations[m]);
                    check_conv(
                        &mut out,
                        &format!("{stem}.input_conv"),
                        &b.input_conv,
                        [c, c, k, d],
                    );
                    check_conv(
                        &mut out,
                        &format!("{stem}.skip_conv"),
                        &b.skip_conv,
                        [c, c, k, 1],
                    );
                    snakes.push((format!("{stem}.input_activation"), &b.input_activation, c));
                    snakes.push((format!("{stem}.skip_activation"), &b.skip_activation, c));
                }
            }
        }
        for (name, hs, channels) in snakes {
            let half = channels / 2;
            if hs.channels != channels || hs.alpha.len() != half || hs.alpha_inv.len() != half {
                bad(
                    &mut out,
                    &name,
                    format!("expected a HalfSnake over {channels} channels ({half} alphas)"),
                );
            } else if hs.alpha.iter().chain(&hs.alpha_inv).any(|x| !x.is_finite()) {
                bad(
                    &mut out,
                    &name,
                    "holds a non-finite alpha or 1/alpha".into(),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_dict::{specs, synthesize};

    /// A source that notes the tensor names it is asked for, then reads them.
    struct Recording<'a, S>(&'a mut S, Vec<String>);

    impl<S: Source> Source for Recording<'_, S> {
        fn stem(&self, at: Layer) -> String {
            self.0.stem(at)
        }
        fn conv(&mut self, stem: &str, shape: [usize; 3]) -> WeightBias {
            self.1.extend(conv_keys(stem));
            self.0.conv(stem, shape)
        }
        fn up(&mut self, stem: &str, shape: [usize; 3]) -> WeightBias {
            self.1.extend(conv_keys(stem));
            self.0.up(stem, shape)
        }
        fn snake(&mut self, stem: &str, channels: usize) -> HalfSnake {
            self.1.push(alpha_key(stem));
            self.0.snake(stem, channels)
        }
    }

    /// The walk reads every decoder tensor of the state dict exactly once.
    #[test]
    fn the_walk_reads_every_decoder_tensor_once() {
        let cfg = Config::nanocodec_22khz();
        let sd = synthesize(&cfg, 0);
        let mut b = Builder {
            sd: &sd,
            problems: Vec::new(),
        };
        let mut names = Recording(&mut b, Vec::new());
        let w = read_decoder(&cfg, &mut names);
        let mut read = names.1;
        read.sort();
        let mut want: Vec<String> = specs(&cfg)
            .into_iter()
            .map(|s| s.name)
            .filter(|n| n.starts_with("audio_decoder."))
            .collect();
        want.sort();
        assert_eq!(read, want);
        assert!(b.problems.is_empty());
        assert_eq!(w, Weights::synthetic(0));
    }
}
