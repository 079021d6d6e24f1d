//! Python bindings of rill: the `rill-mrt` distribution, imported as `rill_mrt`,
//! a drop-in for users of upstream's `magenta_rt.mlx.system.MagentaRT2System`.
//!
//! The crate has two layers:
//! * a pure-Rust core, always built and tested by `cargo test`: [`Model`] (checkpoint
//!   resolution and loading as the `rill` command does, one generation call over
//!   [`rill_stream::FramePipeline`]), [`Stream`] (frame by frame), [`State`] (a resumable
//!   snapshot, serialised to opaque bytes) and [`controls`] (upstream's raw
//!   conditioning values → [`rill_mrt2::conditioning::Conditioning`]) and [`Style`]
//!   (MusicCoCa: text or audio to style embeddings and codes), and [`Speech`] (Magpie
//!   TTS: text to 22.05 kHz speech, whole or streamed from a thread);
//! * the extension module `rill_mrt._rill` (feature `extension-module`, turned on
//!   only by maturin, see `pyproject.toml`): thin PyO3 classes over the core that
//!   release the GIL while generating, hand out numpy arrays without copies and turn
//!   every error (and any panic) into a Python exception.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod continuation;
pub mod controls;
pub mod error;
pub mod model;
pub mod speech;
pub mod state;
pub mod stream;
pub mod style;

#[cfg(feature = "extension-module")]
mod py;

/// Large blocks (the weights every frame streams) on transparent huge pages; only
/// in the extension module, so that `cargo test` keeps its own allocator choices.
#[cfg(feature = "extension-module")]
#[global_allocator]
static ALLOC: rill_kernels::huge_pages::HugePageAlloc = rill_kernels::huge_pages::HugePageAlloc;

pub use continuation::Continuation;
pub use controls::Controls;
pub use error::Error;
pub use model::{Generated, LoadOptions, Model, Request};
pub use speech::{Speech, SpeechLoad, SpeechRequest, SpeechStream};
pub use state::State;
pub use stream::{Frame, Stream};
pub use style::Style;

/// Audio sample rate (Hz).
pub const SAMPLE_RATE: u32 = 48_000;
/// Stereo sample frames per 40 ms model frame.
pub const FRAME_SAMPLES: usize = rill_spectrostream::SAMPLES_PER_FRAME;
