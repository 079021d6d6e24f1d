//! The language model's hyper-parameters, written once: which models there are
//! ([`ModelKind`]), the sizes of mrt2_small and mrt2_base ([`Mrt2Config::new`]) and
//! the tables both share. The model is built from them and the checkpoint layout
//! ([`crate::layout`]) is derived from them.

use crate::conditioning::STYLE_LEVELS;

/// Which MRT2 model a checkpoint holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelKind {
    Small,
    Base,
}

impl ModelKind {
    /// Every model.
    pub const ALL: [ModelKind; 2] = [ModelKind::Small, ModelKind::Base];

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
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// MusicCoCa style tokens per level (1024 codes + 6 reserved + 1 dropout).
pub const MULAN_VOCAB: usize = 1031;
/// MusicCoCa style embedding rows: one table for all style levels.
pub const MULAN_ROWS: usize = STYLE_LEVELS * MULAN_VOCAB;
/// MusicCoCa embedding width.
pub const MULAN_DIM: usize = 768;
/// Regular conditioning embedder rows (1526 used, rounded up to a multiple of 128).
pub const REGULAR_ROWS: usize = 1536;

/// Sizes of one transformer stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackDims {
    pub layers: usize,
    pub dim: usize,
    pub ffn: usize,
    pub heads: usize,
    pub head_dim: usize,
}

/// The sizes that tell mrt2_small from mrt2_base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelDims {
    /// Conditioning-encoder output width (cross-attention source).
    pub enc_dim: usize,
    pub temporal: StackDims,
    pub depth: StackDims,
    /// Temporal self/cross attention window (past frames).
    pub window: usize,
}

/// Shapes of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mrt2Config {
    pub kind: ModelKind,
    pub dims: ModelDims,
}

impl Mrt2Config {
    /// The hyper-parameters of `kind`, as upstream configures it.
    pub fn new(kind: ModelKind) -> Self {
        let dims = match kind {
            ModelKind::Small => ModelDims {
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
            ModelKind::Base => ModelDims {
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
        };
        Mrt2Config { kind, dims }
    }

    /// Every model size.
    pub fn all() -> [Mrt2Config; 2] {
        ModelKind::ALL.map(Mrt2Config::new)
    }

    /// Temporal attention width `H·Dh`.
    pub fn temporal_inner(&self) -> usize {
        self.dims.temporal.heads * self.dims.temporal.head_dim
    }

    /// Depth attention width `H·Dh`.
    pub fn depth_inner(&self) -> usize {
        self.dims.depth.heads * self.dims.depth.head_dim
    }
}
