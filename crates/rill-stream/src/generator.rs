//! One stream's generator: a [`FramePipeline`] plus the live controls (style,
//! notes, drums, CFG, sampling), producing one 40 ms block of 16-bit stereo
//! audio per step. No threads of its own, no I/O; the per-frame path allocates
//! nothing.

use std::sync::Arc;

use rill_mrt2::conditioning::{check_style, CfgScales, Conditioning};
use rill_mrt2::sampler::{self, SamplingParams};
use rill_mrt2::{LmState, ModelError, Mrt2, LEVELS};
use rill_spectrostream::{Codec, CodecState};

use crate::notes::NoteTracker;
use crate::pipeline::{FramePipeline, StagePools};

/// A change applied at the next frame boundary.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// 12 MusicCoCa codes, or `None` for masked style.
    Style(Option<[u16; 12]>),
    NoteOn(u8),
    NoteOff(u8),
    /// Exactly these pitches sound (new ones start with an onset).
    HeldNotes(Vec<u8>),
    /// Drums on / off / masked.
    Drums(Option<bool>),
    Temperature(f32),
    TopK(usize),
    CfgMusiccoca(f64),
    CfgNotes(f64),
    CfgDrums(f64),
    /// A new sampler key, `key(seed)`; the music continues.
    Seed(u64),
    /// Back to the initial state (silence, empty history) with `key(seed)`.
    Reset(u64),
    /// Restore a snapshot taken earlier.
    Restore(Box<Snapshot>),
}

/// Everything needed to continue a stream bit-identically; persisted as a state
/// file by [`Snapshot::to_bytes`] / [`Snapshot::save`] (see `state.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub lm: LmState,
    pub codec: CodecState,
    /// Tokens the LM produced that the codec has not decoded yet (two-stage).
    pub pending: Option<[u32; LEVELS]>,
    pub style: Option<[u16; 12]>,
    pub drums: Option<bool>,
    pub cfg: CfgScales,
    pub sampling: SamplingParams,
    pub notes: NoteTracker,
}

/// What one step produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// Tokens the LM produced this step.
    pub tokens: [u32; LEVELS],
    /// Whether a frame of audio was written (the first two-stage step writes none).
    pub decoded: bool,
    /// Non-finite decoder samples replaced by silence (normally 0).
    pub nonfinite: usize,
}

/// A live stream's generator.
pub struct Generator {
    pipeline: FramePipeline,
    style: Option<[u16; 12]>,
    drums: Option<bool>,
    cfg: CfgScales,
    notes: NoteTracker,
    cond: Conditioning,
}

impl Generator {
    pub fn new(lm: Arc<Mrt2>, codec: Arc<Codec>, seed: u64, pools: &StagePools) -> Generator {
        Generator {
            pipeline: FramePipeline::new(lm, Some(codec), seed, pools),
            style: None,
            drums: None,
            cfg: CfgScales::default(),
            notes: NoteTracker::default(),
            cond: Conditioning::default(),
        }
    }

    pub fn session(&self) -> &rill_mrt2::Session {
        self.pipeline.session()
    }

    pub fn notes(&self) -> &NoteTracker {
        &self.notes
    }

    pub fn notes_mut(&mut self) -> &mut NoteTracker {
        &mut self.notes
    }

    /// Applies a control; it takes effect from the next [`Generator::step`].
    /// An out-of-range value (pitch, style code, temperature, top-k, non-finite
    /// CFG) or a snapshot of another model is an error and changes nothing.
    pub fn apply(&mut self, c: Control) -> Result<(), ModelError> {
        let session = self.pipeline.session_mut();
        let mut p = session.sampling();
        let mut cfg = self.cfg;
        match c {
            Control::Style(s) => {
                if let Some(codes) = &s {
                    check_style(codes)?;
                }
                self.style = s
            }
            Control::NoteOn(n) => self.notes.note_on(n)?,
            Control::NoteOff(n) => self.notes.note_off(n)?,
            Control::HeldNotes(h) => self.notes.set_held(&h)?,
            Control::Drums(d) => self.drums = d,
            Control::Temperature(t) => p.temperature = t,
            Control::TopK(k) => p.top_k = k,
            Control::CfgMusiccoca(v) => cfg.musiccoca = v,
            Control::CfgNotes(v) => cfg.notes = v,
            Control::CfgDrums(v) => cfg.drums = v,
            Control::Seed(s) => session.set_key(sampler::key(s)),
            Control::Reset(s) => {
                session.reset(s);
                self.pipeline.reset_codec();
            }
            Control::Restore(snap) => return self.restore(&snap),
        }
        cfg.validate()?;
        self.pipeline.session_mut().set_sampling(p)?;
        self.cfg = cfg;
        Ok(())
    }

    /// Runs one LM step with the current controls and writes the decoded frame
    /// (3840 interleaved int16 samples) into `pcm` when there is one: always in
    /// sequential mode, from the second step on in two-stage mode (one frame later).
    pub fn step(&mut self, pools: &StagePools, pcm: &mut [i16]) -> FrameInfo {
        self.cond.style = self.style;
        self.cond.drums = self.drums;
        self.cond.cfg = self.cfg;
        self.cond.notes = self.notes.values();
        self.pipeline
            .session_mut()
            .set_conditioning(&self.cond, pools.lm())
            .expect("controls are validated when applied");
        let r = self.pipeline.step(None, pools);
        if r.decoded {
            pcm.copy_from_slice(self.pipeline.pcm());
        }
        self.notes.advance();
        FrameInfo {
            tokens: r.tokens,
            decoded: r.decoded,
            nonfinite: r.nonfinite,
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            lm: self.pipeline.session().state().clone(),
            codec: self
                .pipeline
                .codec_state()
                .expect("a generator always has a codec")
                .clone(),
            pending: self.pipeline.pending(),
            style: self.style,
            drums: self.drums,
            cfg: self.cfg,
            sampling: self.pipeline.session().sampling(),
            notes: self.notes.clone(),
        }
    }

    pub fn restore(&mut self, s: &Snapshot) -> Result<(), ModelError> {
        s.cfg.validate()?;
        if let Some(codes) = &s.style {
            check_style(codes)?;
        }
        self.pipeline.restore(s)?;
        self.style = s.style;
        self.drums = s.drums;
        self.cfg = s.cfg;
        self.notes = s.notes.clone();
        Ok(())
    }
}
