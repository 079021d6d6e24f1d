//! The upstream MRT2 checkpoint layout: every tensor name, its JAX shape and the
//! portable random-init rule used for synthetic checkpoints.
//!
//! Names and shapes follow `shared/spec/mrt2_spec.md` §2.2 (derived from the JAX
//! parameter tree, so they are the safetensors keys of the real
//! `mrt2_small.safetensors` / `mrt2_base.safetensors`). The init rules follow the
//! fixtures' manifest (`make_checkpoint.py` scale rules): a test checks this list
//! against `manifest_mrt2_small.json` bit for bit.

/// Which MRT2 model a checkpoint holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelKind {
    Small,
    Base,
}

impl ModelKind {
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Small => "mrt2_small",
            ModelKind::Base => "mrt2_base",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "mrt2_small" | "small" => Some(ModelKind::Small),
            "mrt2_base" | "base" => Some(ModelKind::Base),
            _ => None,
        }
    }

    pub fn dims(self) -> LayoutDims {
        match self {
            ModelKind::Small => LayoutDims {
                enc_dim: 256,
                temporal: StackDims {
                    layers: 12,
                    dim: 1024,
                    ffn: 4096,
                    heads: 8,
                    head_dim: 128,
                },
                depth: StackDims {
                    layers: 2,
                    dim: 768,
                    ffn: 3072,
                    heads: 6,
                    head_dim: 128,
                },
                window: 41,
            },
            ModelKind::Base => LayoutDims {
                enc_dim: 1024,
                temporal: StackDims {
                    layers: 20,
                    dim: 3072,
                    ffn: 8192,
                    heads: 24,
                    head_dim: 128,
                },
                depth: StackDims {
                    layers: 6,
                    dim: 1024,
                    ffn: 4096,
                    heads: 8,
                    head_dim: 128,
                },
                window: 25,
            },
        }
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Sizes of one transformer stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackDims {
    pub layers: usize,
    pub dim: usize,
    pub ffn: usize,
    pub heads: usize,
    pub head_dim: usize,
}

/// Sizes that determine the checkpoint layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutDims {
    /// Conditioning-encoder output width (cross-attention source).
    pub enc_dim: usize,
    pub temporal: StackDims,
    pub depth: StackDims,
    /// Temporal self/cross attention window (past frames).
    pub window: usize,
}

/// Output vocabulary: 6 reserved ids + 12 RVQ levels of 1024 codes.
pub const VOCAB: usize = 12294;
/// MusicCoCa style embedding rows: 12 levels × 1031 ids.
pub const MULAN_ROWS: usize = 12372;
/// MusicCoCa embedding width.
pub const MULAN_DIM: usize = 768;
/// Regular conditioning embedder rows (1526 used, rounded up to a multiple of 128).
pub const REGULAR_ROWS: usize = 1536;
/// RVQ levels stored in the checkpoint codebook (only the first [`RVQ_LEVELS`] are used).
pub const RVQ_STORED_LEVELS: usize = 64;
/// RVQ levels rill reads (upstream's `truncation_level`): a frame is one token per
/// level for the language model, one codebook row per level for the codec.
pub const RVQ_LEVELS: usize = 12;

/// How a synthetic checkpoint initialises a tensor (mean, std of a uniform).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// mean 0, std gain/sqrt(fan_in)
    Kernel { fan_in: f64, gain: f64 },
    /// mean 0, std 0.02
    Bias,
    /// mean 1, std 0.05 (RMSNorm / LayerNorm scale)
    Scale,
    /// mean 0, std 0.02 (LayerNorm bias)
    LnBias,
    /// mean 0, std 0.1
    PerDimScale,
    /// mean 0, std 0.1
    SinkKey,
    /// mean 0, std 0.5
    SinkValue,
    /// mean 0, std gain
    Embedding { gain: f64 },
    /// mean 0, std 0.5 (RVQ codebook, one std for all levels)
    Rvq,
}

impl Init {
    /// (mean, std) in f64, computed exactly as the reference manifest does.
    pub fn mean_std(self) -> (f64, f64) {
        match self {
            Init::Kernel { fan_in, gain } => (0.0, gain / fan_in.sqrt()),
            Init::Bias | Init::LnBias => (0.0, 0.02),
            Init::Scale => (1.0, 0.05),
            Init::PerDimScale | Init::SinkKey => (0.0, 0.1),
            Init::SinkValue => (0.0, 0.5),
            Init::Embedding { gain } => (0.0, gain),
            Init::Rvq => (0.0, 0.5),
        }
    }

    /// The manifest's name for the rule.
    pub fn kind(self) -> &'static str {
        match self {
            Init::Kernel { .. } => "kernel",
            Init::Bias => "bias",
            Init::Scale => "scale",
            Init::LnBias => "ln_bias",
            Init::PerDimScale => "per_dim_scale",
            Init::SinkKey => "sink_key",
            Init::SinkValue => "sink_value",
            Init::Embedding { .. } => "embedding",
            Init::Rvq => "rvq",
        }
    }
}

/// One checkpoint tensor: key, JAX-layout shape, init rule.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    pub shape: Vec<usize>,
    pub init: Init,
}

impl TensorSpec {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

pub const DEPTHFORMER: &str = "params/depthformer";
pub const SOUNDSTREAM: &str = "params/soundstream";
/// The RVQ codebook `[levels, codes, dim]` (levels: [`RVQ_STORED_LEVELS`] upstream).
pub const RVQ_CODEBOOK: &str = "params/soundstream/quantizer/embedding";

/// Collects specs with short helpers for the recurring shapes.
struct Builder {
    specs: Vec<TensorSpec>,
}

impl Builder {
    fn push(&mut self, name: String, shape: &[usize], init: Init) {
        self.specs.push(TensorSpec {
            name,
            shape: shape.to_vec(),
            init,
        });
    }

    fn kernel(&mut self, name: String, shape: &[usize], fan_in: usize) {
        self.push(
            name,
            shape,
            Init::Kernel {
                fan_in: fan_in as f64,
                gain: 1.0,
            },
        );
    }

    fn transformer(&mut self, prefix: &str, s: StackDims, cross_src: Option<usize>) {
        let (d, h, u) = (s.dim, s.heads, s.head_dim);
        let sinks = cross_src.is_some(); // only the temporal stack has attention sinks
        for l in 0..s.layers {
            let p = format!("{prefix}/x_layers_{l}");
            let attention = |b: &mut Builder, block: &str, kv_in: usize| {
                let a = format!("{p}/{block}/attention");
                b.kernel(format!("{a}/query_projection/kernel"), &[d, h, u], d);
                b.kernel(format!("{a}/key_projection/kernel"), &[kv_in, h, u], kv_in);
                b.kernel(
                    format!("{a}/value_projection/kernel"),
                    &[kv_in, h, u],
                    kv_in,
                );
                b.push(format!("{a}/per_dim_scale"), &[u], Init::PerDimScale);
                if sinks {
                    b.push(
                        format!("{a}/sink_key_embeddings"),
                        &[1, h, u],
                        Init::SinkKey,
                    );
                    b.push(
                        format!("{a}/sink_value_embeddings"),
                        &[1, h, u],
                        Init::SinkValue,
                    );
                }
                b.kernel(
                    format!("{p}/{block}/output_projection/kernel"),
                    &[d, h, u],
                    h * u,
                );
                b.push(format!("{p}/{block}/pre_norm/scale"), &[d], Init::Scale);
                b.push(format!("{p}/{block}/post_norm/scale"), &[d], Init::Scale);
            };
            attention(self, "self_attention", d);
            if let Some(src) = cross_src {
                attention(self, "cross_attention", src);
            }
            let f = format!("{p}/ffn");
            self.kernel(format!("{f}/ffn_layer1/kernel"), &[d, s.ffn], d);
            self.push(format!("{f}/ffn_layer1/bias"), &[s.ffn], Init::Bias);
            self.kernel(format!("{f}/ffn_layer2/kernel"), &[s.ffn, d], s.ffn);
            self.push(format!("{f}/ffn_layer2/bias"), &[d], Init::Bias);
            self.push(format!("{f}/pre_norm/scale"), &[d], Init::Scale);
            self.push(format!("{f}/post_norm/scale"), &[d], Init::Scale);
        }
    }

    /// Conv2D `[kt, kf, cin, cout]` + bias.
    fn conv(&mut self, name: &str, kt: usize, kf: usize, cin: usize, cout: usize) {
        let p = format!("{SOUNDSTREAM}/decoder/{name}/conv");
        self.kernel(format!("{p}/kernel"), &[kt, kf, cin, cout], kt * kf * cin);
        self.push(format!("{p}/bias"), &[cout], Init::Bias);
    }

    /// Conv2DTranspose `[kt, kf, cin, cout]` with strides; fan_in = kt·kf·cin/(st·sf).
    fn conv_t(
        &mut self,
        name: &str,
        k: (usize, usize),
        s: (usize, usize),
        cin: usize,
        cout: usize,
    ) {
        let p = format!("{SOUNDSTREAM}/decoder/{name}/conv");
        let fan_in = (k.0 * k.1 * cin) as f64 / (s.0 * s.1) as f64;
        self.push(
            format!("{p}/kernel"),
            &[k.0, k.1, cin, cout],
            Init::Kernel { fan_in, gain: 1.0 },
        );
        self.push(format!("{p}/bias"), &[cout], Init::Bias);
    }
}

/// Every tensor of the checkpoint for `kind`, sorted by name.
pub fn tensor_specs(kind: ModelKind) -> Vec<TensorSpec> {
    let dims = kind.dims();
    let (t, dp) = (dims.temporal, dims.depth);
    let mut b = Builder { specs: Vec::new() };
    let enc = format!("{DEPTHFORMER}/encoder/body");
    let mulan = format!("{enc}/layers_1/branched_mulan_embedder/mulan_embedder");
    b.push(
        format!("{mulan}/mulan_dequantizer/embedding"),
        &[MULAN_ROWS, MULAN_DIM],
        Init::Embedding { gain: 1.0 },
    );
    b.kernel(
        format!("{mulan}/depth_input_adapter/kernel"),
        &[MULAN_DIM, dims.enc_dim],
        MULAN_DIM,
    );
    b.push(
        format!("{enc}/layers_1/branched_regular_embedder/regular_embedder/embedding"),
        &[REGULAR_ROWS, dims.enc_dim],
        Init::Embedding { gain: 1.0 },
    );
    b.push(
        format!("{enc}/encoder_ln/scale"),
        &[dims.enc_dim],
        Init::Scale,
    );
    b.push(
        format!("{enc}/encoder_ln/bias"),
        &[dims.enc_dim],
        Init::LnBias,
    );

    let dec = format!("{DEPTHFORMER}/decoder");
    b.push(
        format!("{dec}/decoder_embedding/embedding/embedding"),
        &[VOCAB, t.dim],
        Init::Embedding {
            gain: 1.0 / (t.dim as f64).sqrt(),
        },
    );
    b.transformer(
        &format!("{dec}/temporal_body/transformer"),
        t,
        Some(dims.enc_dim),
    );
    b.kernel(
        format!("{dec}/depth_body/depth_input_adapter/kernel"),
        &[t.dim, dp.dim],
        t.dim,
    );
    b.transformer(&format!("{dec}/depth_body/transformer"), dp, None);
    b.push(
        format!("{dec}/depth_body/final_ln/scale"),
        &[dp.dim],
        Init::Scale,
    );
    b.push(
        format!("{dec}/depth_body/final_ln/bias"),
        &[dp.dim],
        Init::LnBias,
    );
    b.push(
        format!("{dec}/depth_body/to_logits/kernel"),
        &[dp.dim, VOCAB],
        Init::Kernel {
            fan_in: dp.dim as f64,
            gain: 8.0,
        },
    );
    b.push(
        format!("{dec}/depth_body/to_logits/bias"),
        &[VOCAB],
        Init::Bias,
    );

    // SpectroStream decoder (identical for small and base), spec §4.2.
    b.push(
        RVQ_CODEBOOK.to_string(),
        &[RVQ_STORED_LEVELS, 1024, 256],
        Init::Rvq,
    );
    b.conv("input_layer/conv1x1_first", 1, 1, 256, 2560);
    b.conv("input_layer/shortcut_layer/conv1x1_b1", 1, 1, 256, 2560);
    b.conv("input_layer/shortcut_layer/conv1x1_b2", 1, 1, 2560, 2560);
    b.conv("input_layers_residual_unit/conv2d_3x3_a", 3, 3, 512, 512);
    b.conv("input_layers_residual_unit/conv2d_3x3", 3, 3, 512, 512);
    b.conv_t("decoder_0/conv2dtranspose_4x3", (4, 3), (2, 1), 512, 1024);
    b.conv("decoder_0/conv2d_3x3", 3, 3, 1024, 1024);
    b.conv("decoder_0/shortcut_layer/conv1x1", 1, 1, 512, 1024);
    b.conv_t("decoder_1/conv2dtranspose_4x4", (4, 4), (2, 2), 512, 256);
    b.conv("decoder_1/conv2d_3x3", 3, 3, 256, 256);
    b.conv("decoder_1/shortcut_layer/conv1x1", 1, 1, 512, 256);
    for n in ["decoder_2", "decoder_3"] {
        b.conv_t(
            &format!("{n}/conv2dtranspose_3x4"),
            (3, 4),
            (1, 2),
            256,
            256,
        );
        b.conv(&format!("{n}/conv2d_3x3"), 3, 3, 256, 256);
    }
    b.conv_t("decoder_4/conv2dtranspose_3x6", (3, 6), (1, 3), 256, 128);
    b.conv("decoder_4/conv2d_3x3", 3, 3, 128, 128);
    b.conv("decoder_4/shortcut_layer/conv1x1", 1, 1, 256, 128);
    b.conv_t("decoder_5/conv2dtranspose_3x4", (3, 4), (1, 2), 128, 128);
    b.conv("decoder_5/conv2d_3x3", 3, 3, 128, 128);
    b.conv_t("decoder_6/conv2dtranspose_3x4", (3, 4), (1, 2), 128, 64);
    b.conv("decoder_6/conv2d_3x3", 3, 3, 64, 64);
    b.conv("decoder_6/shortcut_layer/conv1x1", 1, 1, 128, 64);
    b.conv("output_layer/base_conv_last", 7, 7, 64, 2);

    b.specs.sort_by(|a, b| a.name.cmp(&b.name));
    b.specs
}

/// Name of the decoder embedding, whose width tells small from base.
pub fn decoder_embedding_name() -> String {
    format!("{DEPTHFORMER}/decoder/decoder_embedding/embedding/embedding")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_counts_match_spec() {
        let specs = tensor_specs(ModelKind::Small);
        assert_eq!(specs.len(), 374);
        let depth: usize = specs
            .iter()
            .filter(|s| s.name.starts_with(DEPTHFORMER))
            .map(|s| s.numel())
            .sum();
        assert_eq!(depth, 229_732_614);
        let total: usize = specs.iter().map(|s| s.numel()).sum();
        assert_eq!(total, 282_194_376);
    }

    #[test]
    fn base_counts_match_spec() {
        let specs = tensor_specs(ModelKind::Base);
        let depth: usize = specs
            .iter()
            .filter(|s| s.name.starts_with(DEPTHFORMER))
            .map(|s| s.numel())
            .sum();
        assert_eq!(depth, 2_406_701_830);
    }
}
