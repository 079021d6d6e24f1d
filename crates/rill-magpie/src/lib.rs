//! NVIDIA Magpie TTS multilingual 357M (v2602 shape) on the CPU, faithful to NeMo 3.0.0
//! (`spec/magpie_spec.md`).
//!
//! Token ids in (the text front end lives elsewhere), codec frames out (8 codes per
//! 46.4 ms frame, for the NanoCodec):
//!
//! * [`config`]: dimensions read from the checkpoint's shapes, inference parameters.
//! * [`synth`]: the oracle's portable random-weight recipe, in memory or as a file.
//! * [`weights`]: tensors by state-dict name, loaded and validated.
//! * [`load`]: the files users have: NVIDIA's GGUF and NeMo's `.nemo`, with the
//!   inference parameters of the model's own config.
//! * [`layers`]: the transformer pieces, named like the checkpoint keys.
//! * [`model`]: encoder, decoder step with a host-owned cache, local transformer.
//! * [`rng`], [`sampler`]: torch's CPU generator and `multinomial`, bit for bit.
//! * [`prior`]: the attention prior that walks the text.
//! * [`session`]: one utterance, frame by frame.
//! * The multi-row products (encoder, prefill) are `rill_kernels::matmul` (weight-once,
//!   the tier resolved once per scratch).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # fn main() -> rill_magpie::Result<()> {
//! let pool = rill_kernels::Pool::new(2);
//! let model = Arc::new(rill_magpie::Model::new(rill_magpie::Weights::load("magpie.safetensors")?)?);
//! let ids = [55, 79, 90]; // from the text front end, without EOS
//! let mut s = rill_magpie::Session::new(model, &ids, 0, Default::default(), 0, &pool)?;
//! while let Some(frame) = s.step(&pool)? {
//!     // 8 codes → NanoCodec
//!     let _ = frame;
//! }
//! # Ok(()) }
//! ```
//!
//! Parity (tests/oracle.rs, against NeMo 3.0.0 on the oracle's random weights): the
//! decoder KV-cached path with CFG, the attention prior and the local transformer
//! reproduces every one of the 32 recorded frames with free-running sampling (torch's
//! generator reproduced bit for bit), as do the no-CFG/no-prior run and the v2607-style
//! prior layer lists; the EOS run stops after the same 13 frames. Hidden states agree
//! to ≤ 5.9e-6, logits to ≤ 1.2e-5. Not covered: multi-chunk long-form text (§4.9),
//! frame stacking (v2607), contexts shorter than 110 frames, EOS detection methods
//! other than `argmax_or_multinomial_any`.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod config;
pub mod error;
pub mod layers;
pub mod load;
pub mod model;
pub mod precision;
pub mod prior;
pub mod rng;
pub mod sampler;
pub mod session;
pub mod synth;
pub mod weights;

pub use config::{Config, InferenceParams};
pub use error::{MagpieError, Result};
pub use load::LoadedModel;
pub use model::Model;
pub use precision::Precision;
pub use session::{Session, StepTrace, CODEBOOKS};
pub use weights::Weights;
