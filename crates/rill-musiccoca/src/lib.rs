//! MusicCoCa, the style model of Magenta RealTime 2: a text prompt or an audio clip to a
//! 768-float style embedding and its 12 RVQ style tokens, re-authored from upstream
//! `magenta_rt/musiccoca.py` and DBraun's flax.nnx port, reading the TFLite files of
//! upstream's download directly.

pub mod clips;
mod error;
pub mod frontend;
pub mod weights;

pub use clips::{clip_windows, clips_from_audio};
pub use error::Error;
pub use frontend::{patches, Frontend, FrontendScratch};
pub use weights::{Tensor, Weights};
