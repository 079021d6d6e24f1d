//! MusicCoCa, the style model of Magenta RealTime 2: a text prompt or an audio clip to a
//! 768-float style embedding and its 12 RVQ style tokens, re-authored from upstream
//! `magenta_rt/musiccoca.py` and DBraun's flax.nnx port, reading the TFLite files of
//! upstream's download directly.

pub mod assets;
mod error;
pub mod synth;
pub mod tflite;
pub mod weights;

pub use assets::{ASSET_FILES, HF_HINT};
pub use error::Error;
pub use weights::{Tensor, Weights};
