//! Live streaming for rill: the core shared by `rill play` and `rill serve`.
//!
//! * [`FramePipeline`]: LM step → codec step → int16, sequential or in two
//!   overlapping stages ([`Stages`]); the one frame loop every command uses.
//! * [`FrameModel`], [`Vocoder`], [`Staging`]: the staged pipeline every model runs
//!   on (a model stage makes frames of codes, a vocoder stage decodes them, the
//!   frames between them made, pending, decoded), written once for MRT2's pipeline
//!   and Magpie's speech.
//! * [`Generator`]: one stream's language-model session, codec state and live note
//!   state; one call = one 40 ms frame of 16-bit stereo audio.
//! * [`Engine`]: a scheduler thread that owns all generators and the worker pool,
//!   keeps every stream a bounded distance ahead of its playback, applies controls
//!   at frame boundaries and admits only as many streams as the CPU sustains;
//!   Magpie speech ([`Speaker`]) runs on the same threads in the capacity the music
//!   leaves.
//! * [`live`]: the weights live use runs by default (a cached int8 copy).
//! * [`NoteTracker`]: note on/off → pianoroll values (onset/sustain semantics).
//! * [`PacedReader`]: a stream consumed at real-time pace without a device,
//!   counting underruns.
//! * [`Snapshot`]: a stream's whole state, in memory or as a state file
//!   ([`Snapshot::to_bytes`], [`Snapshot::from_bytes`], [`Snapshot::save`], [`Snapshot::load`]).

#![deny(unsafe_op_in_unsafe_fn)]

pub mod encoder_source;
pub mod engine;
pub mod generator;
pub mod live;
pub mod notes;
pub mod paced;
pub mod pipeline;
pub mod process;
pub mod source;
pub mod staging;
mod state;
pub mod tts;

pub use engine::{
    Engine, EngineConfig, Speaker, SpeechHandle, StreamConfig, StreamController, StreamError,
    StreamHandle, StreamStats,
};
pub use generator::{Control, FrameInfo, Generator, Snapshot};
pub use notes::NoteTracker;
pub use paced::PacedReader;
pub use pipeline::{
    FramePipeline, StagePools, Stages, StepReport, FRAME_PCM, PREFILL_CODEC_WARM_FRAMES,
};
pub use staging::{Cycle, FrameModel, Staging, Vocoder};
