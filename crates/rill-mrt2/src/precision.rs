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
    /// Token embedding tables (`nn.Embedding` upstream: decoder, MusicCoCa).
    Embedding,
    /// The regular conditioning table, a raw array upstream (`MultiChannelEmbedding`),
    /// which `nn.quantize` leaves alone.
    RawTable,
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
    /// Every matrix affine int4 with groups of 32 (MLX `nn.quantize(bits=4, group_size=32)`).
    Int4,
    /// Every matrix 4-bit palettised (16 k-means levels per 16 output rows).
    Lut4,
    /// Upstream's default deployment reproduced: bf16 weights, then
    /// `nn.quantize(group_size=64, bits=8)` of every module upstream quantises
    /// (projections, FFNs, adapters, `to_logits`, the decoder and MusicCoCa
    /// embeddings), multiplied with MLX's CPU arithmetic (bf16 activations and
    /// running sums). Gives upstream's int8 music; [`Precision::Int8`] is closer to f32.
    MlxInt8,
    /// Temporal transformer 4-bit palettised; depth decoder, `to_logits`,
    /// embeddings and adapters int8 — the parts that do not tolerate 4 bits.
    /// (Palettes beat affine int4 here on both agreement, 0.914 vs 0.905 on random
    /// weights, and speed, 4.0 vs 4.5 bits per weight.)
    Mixed,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
            Precision::Lut4 => "lut4",
            Precision::Mixed => "mixed",
            Precision::MlxInt8 => "mlx-int8",
        }
    }

    pub fn from_name(s: &str) -> Option<Precision> {
        match s {
            "f32" | "fp32" => Some(Precision::F32),
            "bf16" => Some(Precision::Bf16),
            "int8" => Some(Precision::Int8),
            "int4" => Some(Precision::Int4),
            "lut4" => Some(Precision::Lut4),
            "mixed" => Some(Precision::Mixed),
            "mlx-int8" => Some(Precision::MlxInt8),
            _ => None,
        }
    }

    /// Storage of a weight matrix of this role.
    pub fn format(self, role: Role) -> WeightFormat {
        match (self, role) {
            (Precision::F32, _) => WeightFormat::F32,
            (Precision::Bf16, _) => WeightFormat::Bf16,
            (Precision::Int8, _) => WeightFormat::Int8,
            (Precision::Int4, _) => WeightFormat::Int4,
            (Precision::Lut4, _) => WeightFormat::Lut4,
            (Precision::Mixed, Role::Temporal) => WeightFormat::Lut4,
            (Precision::Mixed, _) => WeightFormat::Int8,
            (Precision::MlxInt8, Role::RawTable) => WeightFormat::Bf16,
            (Precision::MlxInt8, _) => WeightFormat::MlxInt8,
        }
    }

    /// Every mode, in the order of the quality table.
    pub const ALL: [Precision; 7] = [
        Precision::F32,
        Precision::Bf16,
        Precision::MlxInt8,
        Precision::Int8,
        Precision::Mixed,
        Precision::Int4,
        Precision::Lut4,
    ];

    /// Whether activations are rounded to bf16 where upstream's bf16 compute rounds
    /// them (needed where the products accumulate in bf16, as MLX's int8 ones do).
    pub fn computes_in_bf16(self) -> bool {
        matches!(self, Precision::MlxInt8)
    }

    /// Whether small vectors (norm scales, biases, sinks, per-dim scales) are
    /// rounded to bf16 values, as upstream's loader does in its shipped mode.
    pub fn rounds_vectors_to_bf16(self) -> bool {
        matches!(self, Precision::Bf16 | Precision::MlxInt8)
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
