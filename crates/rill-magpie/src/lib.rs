//! NVIDIA Magpie TTS multilingual 357M (v2602 shape) on the CPU, faithful to NeMo 3.0.0
//! (`spec/magpie_spec.md`).
//!
//! Token ids in (the text front end lives elsewhere), codec frames out (8 codes per
//! 46.4 ms frame, for the NanoCodec):
//!
//! * [`config`]: dimensions read from the checkpoint's shapes, inference parameters.
//! * [`synth`]: the oracle's portable random-weight recipe, in memory or as a file.
//! * [`weights`]: tensors by state-dict name, loaded and validated.
//! * [`layers`]: the transformer pieces, named like the checkpoint keys.
//! * [`model`]: encoder, decoder step with a host-owned cache, local transformer.
//! * [`rng`], [`sampler`]: torch's CPU generator and `multinomial`, bit for bit.
//! * [`prior`]: the attention prior that walks the text.
//! * [`session`]: one utterance, frame by frame.

pub mod config;
pub mod error;
pub mod gemm;
pub mod layers;
pub mod model;
pub mod prior;
pub mod rng;
pub mod sampler;
pub mod session;
pub mod synth;
pub mod weights;

pub use config::{Config, InferenceParams};
pub use error::{MagpieError, Result};
pub use model::Model;
pub use session::Session;
pub use weights::Weights;
