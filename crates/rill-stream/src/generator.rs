//! One stream's generator: a [`FramePipeline`] plus the live controls (style,
//! notes, drums, CFG, sampling), producing one 40 ms block of 16-bit stereo
//! audio per step. No threads of its own, no I/O; the per-frame path allocates
//! nothing.

use std::sync::Arc;

use rill_mrt2::conditioning::{check_style, CfgScales, Conditioning, StyleLevels};
use rill_mrt2::sampler::{self, SamplingParams};
use rill_mrt2::{LmState, ModelError, Mrt2, LEVELS};
use rill_spectrostream::{Codec, CodecState};

use crate::notes::NoteTracker;
use smallvec::SmallVec;

use crate::pipeline::{FramePipeline, StagePools, StepReport, MAX_TOGETHER};

/// A change applied at the next frame boundary.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// 12 MusicCoCa codes, or `None` for masked style.
    Style(Option<[u16; 12]>),
    /// How many of the style's levels are fed (the rest masked): 12 as upstream's
    /// Python, 6 as upstream's C++ engine.
    StyleLevels(StyleLevels),
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
    pub style_levels: StyleLevels,
    pub drums: Option<bool>,
    pub cfg: CfgScales,
    pub sampling: SamplingParams,
    pub notes: NoteTracker,
}

/// What one step produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
    notes: NoteTracker,
    /// The controls (style, drums, CFG; the pianoroll from `notes` at each
    /// step), as applied: the session takes them at the next step. Sampling
    /// lives in the session only.
    cond: Conditioning,
}

impl Generator {
    pub fn new(lm: Arc<Mrt2>, codec: Arc<Codec>, seed: u64, pools: &StagePools) -> Generator {
        Generator {
            pipeline: FramePipeline::new(lm, Some(codec), seed, pools),
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
        let mut cfg = self.cond.cfg;
        match c {
            Control::Style(s) => {
                if let Some(codes) = &s {
                    check_style(codes)?;
                }
                self.cond.style = s
            }
            Control::StyleLevels(l) => self.cond.style_levels = l,
            Control::NoteOn(n) => self.notes.note_on(n)?,
            Control::NoteOff(n) => self.notes.note_off(n)?,
            Control::HeldNotes(h) => self.notes.set_held(&h)?,
            Control::Drums(d) => self.cond.drums = d,
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
        self.cond.cfg = cfg;
        Ok(())
    }

    /// Runs one LM step with the current controls and writes the decoded frame
    /// (3840 interleaved int16 samples) into `pcm` when there is one: always in
    /// sequential mode, from the second step on in two-stage mode (one frame later).
    pub fn step(&mut self, pools: &StagePools, pcm: &mut [i16]) -> FrameInfo {
        self.take_controls(pools);
        let r = self.pipeline.step(None, pools);
        self.finish_step(&r, pcm)
    }

    /// [`Generator::step`] of every generator of `gens` (at most
    /// [`MAX_TOGETHER`](crate::pipeline::MAX_TOGETHER)) in one cycle, their language
    /// models stepped together ([`FramePipeline::step_together`]); generator i's
    /// frame goes to `pcm[i]`, its report to `infos[i]`. Each generator's output is
    /// that of its own `step`. Allocates nothing.
    pub fn step_together(
        gens: &mut [&mut Generator],
        pools: &StagePools,
        pcm: &mut [&mut [i16]],
        infos: &mut [FrameInfo],
    ) {
        let k = gens.len();
        assert!(pcm.len() == k && infos.len() == k, "{k} generators");
        let mut reports = [StepReport::default(); MAX_TOGETHER];
        let reports = &mut reports[..k];
        let mut pipes: SmallVec<[&mut FramePipeline; MAX_TOGETHER]> = SmallVec::new();
        for g in gens.iter_mut() {
            g.take_controls(pools);
            pipes.push(&mut g.pipeline);
        }
        FramePipeline::step_together(&mut pipes, pools, reports);
        drop(pipes);
        for (((g, r), out), info) in gens.iter_mut().zip(reports.iter()).zip(pcm).zip(infos) {
            *info = g.finish_step(r, out);
        }
    }

    /// The controls as applied become the session's for this step.
    fn take_controls(&mut self, pools: &StagePools) {
        self.cond.notes = self.notes.values();
        self.pipeline
            .session_mut()
            .set_conditioning(&self.cond, pools.lm())
            .expect("controls are validated when applied");
    }

    /// After a step: its audio to `pcm`, the notes one frame on.
    fn finish_step(&mut self, r: &StepReport, pcm: &mut [i16]) -> FrameInfo {
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

    /// The stream's whole state, with the controls as applied (taken by the
    /// session at the next step).
    pub fn snapshot(&self) -> Snapshot {
        let codec = self
            .pipeline
            .codec_state()
            .expect("a generator always has a codec");
        Snapshot::capture(
            &self.pipeline,
            &self.cond,
            codec.clone(),
            self.notes.clone(),
        )
    }

    pub fn restore(&mut self, s: &Snapshot) -> Result<(), ModelError> {
        s.cfg.validate()?;
        if let Some(codes) = &s.style {
            check_style(codes)?;
        }
        self.pipeline.restore(s)?;
        self.cond.style = s.style;
        self.cond.style_levels = s.style_levels;
        self.cond.drums = s.drums;
        self.cond.cfg = s.cfg;
        self.notes = s.notes.clone();
        Ok(())
    }
}
