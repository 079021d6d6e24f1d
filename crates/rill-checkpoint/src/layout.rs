//! The vocabulary of checkpoint layouts: tensor specs with their synthetic-init
//! rules, and the names several crates share (the RVQ codebook). The layouts
//! themselves, and which model a file holds, are the model crates' (derived from
//! their configs: `rill_mrt2::layout`, `rill_spectrostream::config`).

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

/// Prefix of the codec's tensors.
pub const SOUNDSTREAM: &str = "params/soundstream";
/// The RVQ codebook `[levels, codes, dim]` (64 levels upstream).
pub const RVQ_CODEBOOK: &str = "params/soundstream/quantizer/embedding";
