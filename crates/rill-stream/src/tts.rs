//! Magpie TTS through NanoCodec, frame by frame: text → sentences (`rill_text`) → per
//! sentence a `rill_magpie::Session` (one 8-code frame per 46.4 ms step) → each frame
//! straight into the streaming NanoCodec decoder → 16-bit PCM, handed to a
//! [`SpeakSink`] as soon as it exists. Used by `rill speak` and `rill serve`.
//!
//! With [`Stages::TwoStage`] the codec decodes frame n while the decoder makes frame
//! n+1 (one frame, 46 ms, of added latency); sequentially each frame is decoded
//! right after it is made. Same audio either way. Sentences follow each other
//! through one codec stream, as NeMo decodes the concatenated codes.

use std::sync::Arc;
use std::time::Instant;

use rill_kernels::Pool;
use rill_magpie::{InferenceParams, MagpieError, Model, Session, StepTrace, CODEBOOKS};
use rill_nanocodec::{CodecError, NanoCodec, SAMPLES_PER_FRAME};
use rill_text::{EnglishFrontEnd, TextError};

use crate::pipeline::{StagePools, Stages};

/// A loaded voice: the model, its vocoder, the text front end and the checkpoint's
/// inference parameters (upstream's defaults where it has none).
pub struct Voice {
    pub model: Arc<Model>,
    pub codec: Arc<NanoCodec>,
    pub front: EnglishFrontEnd,
    pub params: InferenceParams,
}

/// What a request may change; `None` keeps the checkpoint's value.
#[derive(Debug, Clone, Default)]
pub struct SpeakOptions {
    /// Baked speaker index (v2602: 0 John, 1 Sofia, 2 Aria, 3 Jason, 4 Leo).
    pub speaker: usize,
    /// Sampler seed (`torch.manual_seed`).
    pub seed: u64,
    pub temperature: Option<f32>,
    pub top_k: Option<usize>,
    pub cfg_scale: Option<f32>,
    pub no_cfg: bool,
    pub no_prior: bool,
    /// Frame cap per sentence.
    pub max_frames: Option<usize>,
    /// Teacher forcing: frame `i` is decoded from `forced[i]` (one sentence only;
    /// exactly `forced.len()` frames are made).
    pub forced: Option<Vec<[u16; CODEBOOKS]>>,
}

/// A validated request: the sentences' token ids and the parameters to run them with.
#[derive(Debug, Clone)]
pub struct SpeakPlan {
    /// Token ids per sentence, EOS last (as the front end gives them).
    pub utterances: Vec<Vec<u32>>,
    pub params: InferenceParams,
    pub speaker: usize,
    pub seed: u64,
    forced: Option<Vec<[u16; CODEBOOKS]>>,
}

impl SpeakPlan {
    /// Most frames the plan can make (its progress bar's length).
    pub fn max_frames(&self) -> usize {
        self.params.max_decoder_steps * self.utterances.len()
    }
}

/// Errors of planning or speaking.
#[derive(Debug, thiserror::Error)]
pub enum TtsError {
    #[error(transparent)]
    Text(#[from] TextError),
    #[error(transparent)]
    Model(#[from] MagpieError),
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("{0}")]
    Invalid(String),
    /// The sink asked to stop (e.g. its listener went away).
    #[error("stopped by the receiver: {0}")]
    Stopped(String),
}

/// Receives a [`Voice::speak`]'s output as it is made.
pub trait SpeakSink {
    /// A sentence starts (its token ids, EOS last).
    fn utterance(&mut self, _tokens: &[u32]) -> Result<(), TtsError> {
        Ok(())
    }
    /// Whether [`SpeakSink::step`] wants each decoder step's intermediates (costly).
    fn wants_trace(&self) -> bool {
        false
    }
    /// One decoder step's intermediates (the EOS step included).
    fn step(&mut self, _trace: &StepTrace) {}
    /// One decoded frame: its codes, float audio and 16-bit PCM (1024 samples each).
    fn frame(
        &mut self,
        codes: &[u32; CODEBOOKS],
        audio: &[f32; SAMPLES_PER_FRAME],
        pcm: &[i16; SAMPLES_PER_FRAME],
    ) -> Result<(), TtsError>;
}

/// Timing of one [`Voice::speak`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SpeakStats {
    pub frames: usize,
    /// Seconds from the start of the call to the first frame handed to the sink.
    pub first_audio: Option<f64>,
    /// Seconds spent in decoder + codec steps (excludes the per-sentence setup).
    pub step_seconds: f64,
    pub wall_seconds: f64,
}

impl Voice {
    /// Checks a request and splits its text into sentences; nothing runs yet.
    pub fn plan(&self, text: &str, o: &SpeakOptions) -> Result<SpeakPlan, TtsError> {
        let base = &self.params;
        let max_frames = match (&o.forced, o.max_frames) {
            (Some(f), Some(m)) if m != f.len() => {
                return Err(TtsError::Invalid(format!(
                    "a frame cap of {m} disagrees with the {} forced frames; leave it out",
                    f.len()
                )))
            }
            (Some(f), _) => f.len(),
            (None, m) => m.unwrap_or(base.max_decoder_steps),
        };
        let params = InferenceParams {
            max_decoder_steps: max_frames,
            temperature: o.temperature.unwrap_or(base.temperature),
            topk: o.top_k.unwrap_or(base.topk),
            use_cfg: base.use_cfg && !o.no_cfg,
            cfg_scale: o.cfg_scale.unwrap_or(base.cfg_scale),
            apply_attention_prior: base.apply_attention_prior && !o.no_prior,
            ..base.clone()
        };
        let c = &self.model.config;
        params.validate(c)?;
        if o.speaker >= c.speakers {
            return Err(TtsError::Invalid(format!(
                "speaker {} is out of range: this checkpoint has speakers 0..{}",
                o.speaker,
                c.speakers - 1
            )));
        }
        if let Some(f) = &o.forced {
            for (i, frame) in f.iter().enumerate() {
                rill_nanocodec::fsq::check_codes(&frame.map(u32::from))
                    .map_err(|e| TtsError::Invalid(format!("forced frame {i}: {e}")))?;
            }
        }
        let utterances = self.front.encode_utterances(text)?;
        if utterances.is_empty() {
            return Err(TtsError::Invalid("the text has nothing to speak".into()));
        }
        if o.forced.is_some() && utterances.len() > 1 {
            return Err(TtsError::Invalid(format!(
                "forced codes are for one sentence; the text splits into {}",
                utterances.len()
            )));
        }
        Ok(SpeakPlan {
            utterances,
            params,
            speaker: o.speaker,
            seed: o.seed,
            forced: o.forced.clone(),
        })
    }

    /// Speaks a plan: the text encoder and prefill of each sentence on `setup`
    /// (all threads), its frames on `pools`. Stops early if the sink returns an error.
    pub fn speak(
        &self,
        plan: &SpeakPlan,
        pools: &StagePools,
        setup: &Pool,
        sink: &mut dyn SpeakSink,
    ) -> Result<SpeakStats, TtsError> {
        let start = Instant::now();
        let mut stats = SpeakStats::default();
        let mut state = self.codec.new_state();
        let mut audio = [0f32; SAMPLES_PER_FRAME];
        let mut pcm = [0i16; SAMPLES_PER_FRAME];
        let mut trace = StepTrace::default();
        let traced = sink.wants_trace();
        let two = pools.stages() == Stages::TwoStage;
        let codec = &*self.codec;
        let mut emit = |codes: &[u32; CODEBOOKS],
                        audio: &[f32; SAMPLES_PER_FRAME],
                        stats: &mut SpeakStats,
                        sink: &mut dyn SpeakSink|
         -> Result<(), TtsError> {
            rill_nanocodec::frame_to_int16(audio, &mut pcm);
            sink.frame(codes, audio, &pcm)?;
            stats
                .first_audio
                .get_or_insert(start.elapsed().as_secs_f64());
            stats.frames += 1;
            Ok(())
        };
        for ids in &plan.utterances {
            sink.utterance(ids)?;
            // The front end appends EOS; the session appends its own.
            let mut session = Session::new(
                self.model.clone(),
                &ids[..ids.len() - 1],
                plan.speaker,
                plan.params.clone(),
                plan.seed,
                setup,
            )?;
            // With two stages: the frame made by the previous step, decoded in this one.
            let mut pending: Option<[u32; CODEBOOKS]> = None;
            loop {
                let t = Instant::now();
                let force = plan.forced.as_ref().and_then(|f| f.get(session.frames()));
                trace.hidden.clear();
                let tr = traced.then_some(&mut trace);
                let (next, decoded) = if two {
                    let prev = pending.take();
                    pools.overlap(
                        |lm| session.step_with(lm, force, tr),
                        |cp| match prev {
                            Some(c) => codec.step(&mut state, &c, &mut audio, cp).map(|_| prev),
                            None => Ok(None),
                        },
                    )
                } else {
                    let next = session.step_with(pools.lm(), force, tr);
                    let decoded = match &next {
                        Ok(Some(f)) => {
                            let c = f.map(u32::from);
                            codec
                                .step(&mut state, &c, &mut audio, pools.codec())
                                .map(|_| Some(c))
                        }
                        _ => Ok(None),
                    };
                    (next, decoded)
                };
                stats.step_seconds += t.elapsed().as_secs_f64();
                if traced && !trace.hidden.is_empty() {
                    sink.step(&trace);
                }
                if let Some(c) = decoded? {
                    emit(&c, &audio, &mut stats, sink)?;
                }
                match next? {
                    Some(f) if two && stats.first_audio.is_none() => {
                        // The request's first frame is decoded at once, the decoder
                        // stage assisting the codec, instead of during the next step:
                        // first audio comes a decoder step sooner, the same bits.
                        let c = f.map(u32::from);
                        let t = Instant::now();
                        let ((), decoded) =
                            pools.overlap(|_| (), |cp| codec.step(&mut state, &c, &mut audio, cp));
                        stats.step_seconds += t.elapsed().as_secs_f64();
                        decoded?;
                        emit(&c, &audio, &mut stats, sink)?;
                    }
                    Some(f) if two => pending = Some(f.map(u32::from)),
                    Some(_) => {}
                    None => break,
                }
            }
            // The last frame of a two-stage sentence is still to decode.
            if let Some(c) = pending.take() {
                codec.step(&mut state, &c, &mut audio, pools.codec())?;
                emit(&c, &audio, &mut stats, sink)?;
            }
        }
        stats.wall_seconds = start.elapsed().as_secs_f64();
        Ok(stats)
    }
}
