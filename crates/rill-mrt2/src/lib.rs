//! Magenta RealTime 2 language model: conditioning encoder, temporal transformer,
//! depth decoder and sampler, driven frame by frame by a host-owned [`Session`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use rill_checkpoint::Checkpoint;
//! use rill_kernels::Pool;
//! use rill_mrt2::{Mrt2, Precision, Session, conditioning::Conditioning};
//!
//! let ckpt = Checkpoint::open("mrt2_small.safetensors")?;
//! let model = Arc::new(Mrt2::load(&ckpt, Precision::F32)?);
//! let pool = Pool::from_env()?;
//! let mut session = Session::new(model, 42, &pool);
//! session.set_conditioning(&Conditioning::default().with_held_notes(&[60, 64, 67])?, &pool)?;
//! let tokens = session.step(&pool, None); // 12 RVQ token ids for 40 ms of audio
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_op_in_unsafe_fn)]

pub mod attention;
pub mod conditioning;
pub mod config;
pub mod encoder;
pub mod error;
pub mod layers;
pub mod layout;
pub mod locate;
pub mod model;
pub mod precision;
pub mod prequantized;
pub mod quality;
pub mod sampler;
pub mod session;
pub mod session_file;

mod loader;

pub use config::{ModelKind, Mrt2Config};
pub use error::{InvalidValue, ModelError};
pub use model::{Mrt2, LEVELS};
pub use precision::Precision;
pub use session::{FrameTrace, LmState, Session, DEFAULT_SEED};
