//! MusicCoCa, the style model of Magenta RealTime 2: a text prompt or an audio clip to a
//! 768-float style embedding and its 12 RVQ style tokens, re-authored from upstream
//! `magenta_rt/musiccoca.py` and DBraun's flax.nnx port, reading the TFLite files of
//! upstream's download directly.

pub mod assets;
pub mod audio_tower;
pub mod blend;
pub mod clips;
mod error;
pub mod frontend;
pub mod locate;
pub mod mapper;
mod model;
pub mod numpy_rng;
pub mod quantizer;
pub mod spm;
mod style;
pub mod synth;
pub mod text;
pub mod tflite;
pub mod tower;
pub mod weights;

pub use assets::{ASSET_FILES, HF_HINT};
pub use clips::{clip_windows, clips_from_audio};
pub use error::Error;
pub use frontend::{patches, Frontend, FrontendScratch};
pub use model::MusicCoCa;
pub use quantizer::{Quantized, LEVELS};
pub use spm::{python_lower, Spm, TextIds};
pub use style::{Mapper, Prompt, StyleModel};
pub use weights::{Tensor, Weights};
