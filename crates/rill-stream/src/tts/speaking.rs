//! One speech, cycle by cycle: the state [`crate::tts::Voice::speak`] loops over,
//! and that the [`crate::Engine`]'s scheduler advances between music frames.
//!
//! Per sentence a [`SentenceSetup`] (text encoder and prefill) makes the decoder
//! session; whoever drives the speech runs it where it likes (`speak`: on its setup
//! pool; the engine: on its setup thread, below the music) and hands the session
//! to [`Speaking::begin`]. Each [`Speaking::cycle`] then makes a group of frames
//! and decodes a group ([`Staging`]), until the sentence ends. The audio is the
//! same bits however the cycles are grouped or driven.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rill_kernels::Pool;
use rill_magpie::{InferenceParams, MagpieError, Model, Session, StepTrace, CODEBOOKS};
use rill_nanocodec::{CodecError, CodecState, NanoCodec, SAMPLES_PER_FRAME};

use super::{CycleTimes, SpeakPlan, SpeakSink, SpeakStats, TtsError, Voice, SINGLE_FRAMES};
use crate::pipeline::{StagePools, Stages};
use crate::staging::{FrameModel, Staging, Vocoder};

/// What makes one sentence's decoder session (its text encoder and prefill).
#[derive(Clone)]
pub struct SentenceSetup {
    model: Arc<Model>,
    /// The sentence's token ids without the front end's EOS (the session adds its own).
    tokens: Vec<u32>,
    speaker: usize,
    params: InferenceParams,
    seed: u64,
}

impl SentenceSetup {
    /// Runs the text encoder and the prefill on `pool`.
    pub fn run(&self, pool: &Pool) -> Result<Session, MagpieError> {
        Session::new(
            self.model.clone(),
            &self.tokens,
            self.speaker,
            self.params.clone(),
            self.seed,
            pool,
        )
    }
}

/// One speech in progress (see the module docs).
pub struct Speaking {
    plan: SpeakPlan,
    model: Arc<Model>,
    voicing: Voicing,
    traces: Vec<StepTrace>,
    traced: bool,
    /// Frames made, pending and decoded, cycle by cycle.
    staging: Staging<[u32; CODEBOOKS]>,
    /// The running sentence's session.
    session: Option<Session>,
    /// Sentences begun.
    begun: usize,
    /// Frames made in the whole speech.
    made_total: usize,
    stats: SpeakStats,
}

impl Speaking {
    /// A speech of `plan` with `voice`; `traced`: hand each decoder step's
    /// intermediates to the sink (costly).
    pub fn new(voice: &Voice, plan: SpeakPlan, traced: bool) -> Speaking {
        let k = plan.codec_frames;
        Speaking {
            model: voice.model.clone(),
            voicing: Voicing {
                state: voice.codec.new_stream_state(k),
                codec: voice.codec.clone(),
                audio: vec![0f32; k * SAMPLES_PER_FRAME],
                pcm: [0i16; SAMPLES_PER_FRAME],
                start: Instant::now(),
            },
            traces: (0..k).map(|_| StepTrace::default()).collect(),
            traced,
            staging: Staging::with_capacity(k),
            session: None,
            begun: 0,
            made_total: 0,
            stats: SpeakStats::default(),
            plan,
        }
    }

    /// The plan being spoken.
    pub fn plan(&self) -> &SpeakPlan {
        &self.plan
    }

    /// The setup of the next sentence, when no sentence is running and one is left.
    pub fn next_setup(&self) -> Option<SentenceSetup> {
        if self.session.is_some() {
            return None;
        }
        let ids = self.plan.utterances.get(self.begun)?;
        Some(SentenceSetup {
            model: self.model.clone(),
            tokens: ids[..ids.len() - 1].to_vec(),
            speaker: self.plan.speaker,
            params: self.plan.params.clone(),
            seed: self.plan.seed,
        })
    }

    /// Starts the next sentence with the session its [`SentenceSetup`] made (in
    /// `setup_seconds`).
    pub fn begin(
        &mut self,
        session: Session,
        setup_seconds: f64,
        sink: &mut dyn SpeakSink,
    ) -> Result<(), TtsError> {
        let ids = self
            .plan
            .utterances
            .get(self.begun)
            .ok_or_else(|| TtsError::Invalid("every sentence has been spoken".into()))?;
        sink.utterance(ids)?;
        self.session = Some(session);
        self.begun += 1;
        self.stats.setup_seconds += setup_seconds;
        Ok(())
    }

    /// Whether a sentence is running ([`Speaking::cycle`] has work).
    pub fn in_sentence(&self) -> bool {
        self.session.is_some()
    }

    /// Whether every sentence has been spoken and decoded.
    pub fn finished(&self) -> bool {
        self.session.is_none() && self.begun == self.plan.utterances.len()
    }

    /// Frames already handed to the sink.
    pub fn frames(&self) -> usize {
        self.stats.frames
    }

    /// Timing so far (the wall time up to now).
    pub fn stats(&self) -> SpeakStats {
        SpeakStats {
            wall_seconds: self.voicing.start.elapsed().as_secs_f64(),
            ..self.stats
        }
    }

    /// One cycle of the running sentence (nothing without one): decoder steps and a
    /// codec call, at most `max_group` frames each after the request's first
    /// [`SINGLE_FRAMES`] (which go one per call, the first decoded at once). When
    /// the sentence ends its last frames are decoded too. At most twice the plan's
    /// frames per codec call reach the sink.
    pub fn cycle(
        &mut self,
        pools: &StagePools,
        max_group: usize,
        sink: &mut dyn SpeakSink,
    ) -> Result<(), TtsError> {
        let Speaking {
            plan,
            voicing,
            traces,
            traced,
            staging,
            session,
            made_total,
            stats,
            ..
        } = self;
        let Some(s) = session.as_mut() else {
            return Ok(());
        };
        let t = Instant::now();
        let group = if *made_total < SINGLE_FRAMES {
            1
        } else {
            plan.codec_frames.min(max_group.max(1))
        };
        let mut decoder = DecoderSteps {
            session: s,
            forced: plan.forced.as_deref(),
            traces: &mut traces[..],
            traced: *traced,
        };
        let cycle = staging.step(pools, &mut decoder, group, voicing);
        stats.step_seconds += t.elapsed().as_secs_f64();
        cycle.decoded?;
        sink.cycle(&CycleTimes {
            made: staging.made().len(),
            decoded: staging.decoded().len(),
            decoder: cycle.model_time,
            codec: cycle.vocoder_time,
            wall: t.elapsed(),
        });
        for tr in traces.iter().filter(|tr| *traced && !tr.hidden.is_empty()) {
            sink.step(tr);
        }
        voicing.emit(staging.decoded(), stats, sink)?;
        let finished = cycle.made?;
        *made_total += staging.made().len();
        let two = pools.stages() == Stages::TwoStage;
        if two && stats.first_audio.is_none() && !staging.made().is_empty() {
            // The request's first frame is decoded at once, the decoder stage
            // assisting the codec, instead of during the next step: first audio
            // comes a decoder step sooner, the same bits.
            voicing.decode_pending(staging, pools, stats, sink)?;
        }
        if finished {
            *session = None;
            // The last group of a two-stage sentence is still to decode.
            voicing.decode_pending(staging, pools, stats, sink)?;
        }
        Ok(())
    }
}

/// Magpie's decoder as the speech's [`FrameModel`]: steps of one sentence's
/// session, teacher-forced where `forced` has a frame, each step's intermediates
/// kept in `traces` when `traced`.
struct DecoderSteps<'a> {
    session: &'a mut Session,
    forced: Option<&'a [[u16; CODEBOOKS]]>,
    /// One per frame of the largest group; cleared before each step.
    traces: &'a mut [StepTrace],
    traced: bool,
}

impl FrameModel for DecoderSteps<'_> {
    type Frame = [u32; CODEBOOKS];
    type Error = MagpieError;
    /// Runs decoder steps until `n` frames are in `made` or the session ends (EOS
    /// or its frame cap): whether it ended.
    fn make(
        &mut self,
        pool: &Pool,
        n: usize,
        made: &mut Vec<[u32; CODEBOOKS]>,
    ) -> Result<bool, MagpieError> {
        for tr in self.traces.iter_mut() {
            tr.hidden.clear();
        }
        for tr in self.traces[..n].iter_mut() {
            let force = self.forced.and_then(|f| f.get(self.session.frames()));
            match self
                .session
                .step_with(pool, force, self.traced.then_some(tr))?
            {
                Some(f) => made.push(f.map(u32::from)),
                None => return Ok(true),
            }
        }
        Ok(false)
    }
}

/// The vocoder side of one speech: NanoCodec's stream state, the audio of its
/// last call, and the handing of decoded frames to the sink.
struct Voicing {
    codec: Arc<NanoCodec>,
    state: CodecState,
    /// The last call's audio, one frame after another.
    audio: Vec<f32>,
    pcm: [i16; SAMPLES_PER_FRAME],
    /// When the speech started (for the time to first audio).
    start: Instant,
}

/// NanoCodec as the speech's [`Vocoder`]: a call's audio goes to the front of
/// `audio`, one frame after another.
impl Vocoder for Voicing {
    type Frame = [u32; CODEBOOKS];
    type Error = CodecError;
    fn decode(&mut self, frames: &[[u32; CODEBOOKS]], pool: &Pool) -> Result<(), CodecError> {
        self.codec.step_frames(
            &mut self.state,
            frames,
            &mut self.audio[..frames.len() * SAMPLES_PER_FRAME],
            pool,
        )
    }
}

impl Voicing {
    /// Hands the frames of `codes` (decoded by the last call) to the sink.
    fn emit(
        &mut self,
        codes: &[[u32; CODEBOOKS]],
        stats: &mut SpeakStats,
        sink: &mut dyn SpeakSink,
    ) -> Result<(), TtsError> {
        let (frames, _) = self.audio.as_chunks::<SAMPLES_PER_FRAME>();
        for (c, a) in codes.iter().zip(frames) {
            rill_nanocodec::frame_to_int16(a, &mut self.pcm);
            sink.frame(c, a, &self.pcm)?;
            stats
                .first_audio
                .get_or_insert(self.start.elapsed().as_secs_f64());
            stats.frames += 1;
        }
        Ok(())
    }

    /// Decodes the frames still pending now (the decoder stage lending its
    /// threads) and hands them to the sink; nothing when none are pending.
    fn decode_pending(
        &mut self,
        staging: &mut Staging<[u32; CODEBOOKS]>,
        pools: &StagePools,
        stats: &mut SpeakStats,
        sink: &mut dyn SpeakSink,
    ) -> Result<(), TtsError> {
        let t = Instant::now();
        let Some((decoded, codec_time)) = staging.flush(pools, self) else {
            return Ok(());
        };
        stats.step_seconds += t.elapsed().as_secs_f64();
        decoded?;
        sink.cycle(&CycleTimes {
            made: 0,
            decoded: staging.decoded().len(),
            decoder: Duration::ZERO,
            codec: codec_time,
            wall: t.elapsed(),
        });
        self.emit(staging.decoded(), stats, sink)
    }
}
