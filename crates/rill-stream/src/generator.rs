//! One stream's generator: language-model session, codec state and live note
//! state, producing one 40 ms block of 16-bit stereo audio per step. No threads,
//! no I/O; the per-frame path allocates nothing.

use std::sync::Arc;

use rill_codec::{Codec, CodecState, SAMPLES_PER_FRAME};
use rill_kernels::Pool;
use rill_mrt2::conditioning::{CfgScales, Conditioning};
use rill_mrt2::sampler::{self, SamplingParams};
use rill_mrt2::{LmState, ModelError, Mrt2, Session, LEVELS};

use crate::notes::NoteTracker;

/// Interleaved stereo int16 samples per frame.
pub const FRAME_PCM: usize = 2 * SAMPLES_PER_FRAME;

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

/// Everything needed to continue a stream bit-identically.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub lm: LmState,
    pub codec: CodecState,
    pub style: Option<[u16; 12]>,
    pub drums: Option<bool>,
    pub cfg: CfgScales,
    pub sampling: SamplingParams,
    pub notes: NoteTracker,
}

/// What one step produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    pub tokens: [u32; LEVELS],
    /// Non-finite decoder samples replaced by silence (normally 0).
    pub nonfinite: usize,
}

/// A live stream's generator.
pub struct Generator {
    session: Session,
    codec: Arc<Codec>,
    codec_state: CodecState,
    style: Option<[u16; 12]>,
    drums: Option<bool>,
    cfg: CfgScales,
    notes: NoteTracker,
    cond: Conditioning,
    audio: Vec<f32>,
}

impl Generator {
    pub fn new(lm: Arc<Mrt2>, codec: Arc<Codec>, seed: u64, pool: &Pool) -> Generator {
        let codec_state = codec.new_state();
        Generator {
            session: Session::new(lm, seed, pool),
            codec,
            codec_state,
            style: None,
            drums: None,
            cfg: CfgScales::default(),
            notes: NoteTracker::default(),
            cond: Conditioning::default(),
            audio: vec![0.0; FRAME_PCM],
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn notes(&self) -> &NoteTracker {
        &self.notes
    }

    pub fn notes_mut(&mut self) -> &mut NoteTracker {
        &mut self.notes
    }

    /// Applies a control; it takes effect from the next [`Generator::step`].
    /// Only restoring a snapshot of another model can fail.
    pub fn apply(&mut self, c: Control) -> Result<(), ModelError> {
        let mut p = self.session.sampling();
        match c {
            Control::Style(s) => self.style = s,
            Control::NoteOn(n) => self.notes.note_on(n),
            Control::NoteOff(n) => self.notes.note_off(n),
            Control::HeldNotes(h) => self.notes.set_held(&h),
            Control::Drums(d) => self.drums = d,
            Control::Temperature(t) => p.temperature = t,
            Control::TopK(k) => p.top_k = k,
            Control::CfgMusiccoca(v) => self.cfg.musiccoca = v,
            Control::CfgNotes(v) => self.cfg.notes = v,
            Control::CfgDrums(v) => self.cfg.drums = v,
            Control::Seed(s) => self.session.set_key(sampler::key(s)),
            Control::Reset(s) => {
                self.session.reset(s);
                self.codec_state = self.codec.new_state();
            }
            Control::Restore(snap) => return self.restore(&snap),
        }
        self.session.set_sampling(p);
        Ok(())
    }

    /// Generates one frame into `pcm` (3840 interleaved int16 samples).
    pub fn step(&mut self, pool: &Pool, pcm: &mut [i16]) -> FrameInfo {
        self.cond.style = self.style;
        self.cond.drums = self.drums;
        self.cond.cfg = self.cfg;
        self.cond.notes = self.notes.values();
        self.session.set_conditioning(&self.cond, pool);
        let tokens = self.session.step(pool, None);
        self.codec
            .step(&mut self.codec_state, &tokens, &mut self.audio, None, pool);
        let nonfinite = rill_codec::float_to_int16(&self.audio, pcm);
        self.notes.advance();
        FrameInfo { tokens, nonfinite }
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            lm: self.session.state().clone(),
            codec: self.codec_state.clone(),
            style: self.style,
            drums: self.drums,
            cfg: self.cfg,
            sampling: self.session.sampling(),
            notes: self.notes.clone(),
        }
    }

    pub fn restore(&mut self, s: &Snapshot) -> Result<(), ModelError> {
        self.session.restore_state(s.lm.clone())?;
        self.codec_state.clone_from(&s.codec);
        self.style = s.style;
        self.drums = s.drums;
        self.cfg = s.cfg;
        self.session.set_sampling(s.sampling);
        self.notes = s.notes.clone();
        Ok(())
    }
}
