//! Weight precision modes and how each weight role is stored under them.

use rill_kernels::WeightFormat;

/// What a weight matrix is used for; precision modes may treat roles differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Temporal transformer projections and FFN (the bulk of the parameters).
    Temporal,
    /// Depth transformer projections, FFN and the depth input adapter.
    Depth,
    /// The `to_logits` head.
    Logits,
    /// Token embedding tables (decoder, MusicCoCa, regular conditioning).
    Embedding,
    /// The conditioning encoder's dense adapter.
    Encoder,
}

/// How the language model's weights are stored and multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// f32 weights and arithmetic: the parity mode.
    #[default]
    F32,
    /// Every depthformer weight rounded to bf16 as upstream's `convert_to_bf16`
    /// (trap T18), f32 activations and accumulation.
    Bf16,
    /// Every matrix affine int8 with groups of 64 (MLX `nn.quantize(bits=8)`, the
    /// upstream default), activations quantised to int16; vectors stay f32.
    Int8,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
        }
    }

    pub fn from_name(s: &str) -> Option<Precision> {
        match s {
            "f32" | "fp32" => Some(Precision::F32),
            "bf16" => Some(Precision::Bf16),
            "int8" => Some(Precision::Int8),
            _ => None,
        }
    }

    /// Storage of a weight matrix of this role.
    pub fn format(self, _role: Role) -> WeightFormat {
        match self {
            Precision::F32 => WeightFormat::F32,
            Precision::Bf16 => WeightFormat::Bf16,
            Precision::Int8 => WeightFormat::Int8,
        }
    }

    /// Whether small vectors (norm scales, biases, sinks, per-dim scales) are
    /// rounded to bf16 values, as upstream's loader does in its shipped mode.
    pub fn rounds_vectors_to_bf16(self) -> bool {
        matches!(self, Precision::Bf16)
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
