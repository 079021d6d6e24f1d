//! Magpie's precision: the weight format of its linear layers (norms, embeddings
//! and the codec stay f32).

use rill_kernels::WeightFormat;

/// How Magpie's linear layers are stored and multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// f32 (NeMo's arithmetic). Weights that are halves already, as in NVIDIA's
    /// F16 GGUF, are kept as f16, which computes the same bits with half the bytes.
    #[default]
    F32,
    /// IEEE half: half the bytes per step.
    F16,
    /// bfloat16: the bytes of f16, 3 fewer mantissa bits.
    Bf16,
    /// MLX-style affine int8, groups of 64, int16 activations: a quarter of the bytes.
    Int8,
}

impl Precision {
    /// Every precision, from the most exact.
    pub const ALL: [Precision; 4] = [
        Precision::F32,
        Precision::F16,
        Precision::Bf16,
        Precision::Int8,
    ];

    /// Its name (`f32`, `f16`, `bf16`, `int8`), as `--precision` takes it.
    pub fn name(self) -> &'static str {
        self.format().name()
    }

    /// The precision of a [`Precision::name`].
    pub fn from_name(name: &str) -> Option<Precision> {
        Precision::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The weight format of the linear layers.
    pub fn format(self) -> WeightFormat {
        match self {
            Precision::F32 => WeightFormat::F32,
            Precision::F16 => WeightFormat::F16,
            Precision::Bf16 => WeightFormat::Bf16,
            Precision::Int8 => WeightFormat::Int8,
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
