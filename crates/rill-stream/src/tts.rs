//! Magpie TTS through NanoCodec, frame by frame: text → sentences (`rill_text`) → per
//! sentence a `rill_magpie::Session` (one 8-code frame per 46.4 ms step) → each frame
//! straight into the streaming NanoCodec decoder → 16-bit PCM, handed to a
//! [`SpeakSink`] as soon as it exists. Used by `rill speak` and `rill serve`.
//!
//! Frames reach the codec in groups (default [`DEFAULT_CODEC_FRAMES`] = 2; the
//! request's first [`SINGLE_FRAMES`] one per call, the first at once). With
//! [`Stages::TwoStage`] the codec
//! decodes one group while the decoder makes the next; sequentially each group is
//! decoded right after it is made ([`crate::Staging`], shared with MRT2's pipeline; [`Speaking`] holds one
//! speech's state between cycles). Same audio in every arrangement. Added latency
//! after the first audio: `group − 1` frames, plus one group with two stages (3
//! frames, 139 ms, by default). Sentences follow each other through one codec
//! stream, as NeMo decodes the concatenated codes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rill_kernels::Pool;
use rill_magpie::{InferenceParams, MagpieError, Model, StepTrace, CODEBOOKS};
use rill_nanocodec::{CodecError, NanoCodec, SAMPLES_PER_FRAME};
use rill_text::{Language, TextError, TextFrontEnd};

use crate::pipeline::StagePools;

mod load;
mod speaking;
pub use load::{download_instructions, VoiceSource};
pub use speaking::{SentenceSetup, Speaking};

/// A loaded voice: the model, its vocoder, the text front end and the checkpoint's
/// inference parameters (upstream's defaults where it has none).
pub struct Voice {
    pub model: Arc<Model>,
    pub codec: Arc<NanoCodec>,
    /// Text of every language the checkpoint's text table holds and rill has built.
    pub front: TextFrontEnd,
    pub params: InferenceParams,
    /// Baked speaker names by index, where the file names them (NVIDIA's GGUF).
    pub speaker_names: Vec<String>,
}

/// What a request may change; `None` keeps the checkpoint's value.
#[derive(Debug, Clone, Default)]
pub struct SpeakOptions {
    /// Language of the text (default English).
    pub language: Language,
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
    /// Frames per NanoCodec call after the first, 1..=[`MAX_CODEC_FRAMES`]
    /// (default [`DEFAULT_CODEC_FRAMES`]); see [`Voice::speak`].
    pub codec_frames: Option<usize>,
    /// Read numbers, money, dates, … aloud first ([`rill_text::normalize`], NeMo's
    /// `apply_TN=True`) where the language has a normaliser; `false` (the default
    /// here) tokenises the text as written, NeMo's default.
    pub normalize: bool,
}

/// Frames per NanoCodec call by default: 2 makes the codec ≈ 10 % cheaper per
/// frame than 1 (stage 0 streams its 94 MB of weights once per call) for one
/// frame (46 ms) more latency after the first audio.
pub const DEFAULT_CODEC_FRAMES: usize = 2;
/// Most frames per NanoCodec call (its scratch grows ≈ 9 MB per frame).
pub const MAX_CODEC_FRAMES: usize = 4;
/// A request's first frames go to the codec one per call (the first at once),
/// groups only after them: a cycle of one frame is shorter than the frame, so a
/// listener's buffer fills first, and the first group does not leave a gap after
/// the first audio.
pub const SINGLE_FRAMES: usize = 4;

/// A validated request: the sentences' token ids and the parameters to run them with.
#[derive(Debug, Clone)]
pub struct SpeakPlan {
    /// Token ids per sentence, EOS last (as the front end gives them).
    pub utterances: Vec<Vec<u32>>,
    pub language: Language,
    /// Characters of the text the front end could not encode, each once: the
    /// host reports them (nothing is dropped silently).
    pub dropped: Vec<char>,
    pub params: InferenceParams,
    pub speaker: usize,
    pub seed: u64,
    /// Frames per NanoCodec call after the first.
    pub codec_frames: usize,
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
    /// Weight files not given or not there; the message names them and ends
    /// with [`download_instructions`].
    #[error("{0}")]
    MissingWeights(String),
    /// A weight file that could not be read as such; the message names it.
    #[error("{0}")]
    Weights(String),
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
    /// Timing of one group of decoder steps and the codec call beside it (after it
    /// when sequential); for benchmarks.
    fn cycle(&mut self, _times: &CycleTimes) {}
    /// One decoded frame: its codes, float audio and 16-bit PCM (1024 samples each).
    /// By default dropped: for a sink that only times or counts the cycles.
    fn frame(
        &mut self,
        _codes: &[u32; CODEBOOKS],
        _audio: &[f32; SAMPLES_PER_FRAME],
        _pcm: &[i16; SAMPLES_PER_FRAME],
    ) -> Result<(), TtsError> {
        Ok(())
    }
}

/// One cycle of [`Voice::speak`]: decoder steps and a codec call (either may be
/// empty), overlapped with two stages.
#[derive(Debug, Clone, Copy)]
pub struct CycleTimes {
    /// Frames the decoder made and the codec decoded in this cycle.
    pub made: usize,
    pub decoded: usize,
    /// Time of the decoder stage and of the codec stage, and of the whole cycle.
    pub decoder: Duration,
    pub codec: Duration,
    pub wall: Duration,
}

/// Timing of one [`Voice::speak`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SpeakStats {
    pub frames: usize,
    /// Seconds from the start of the call to the first frame handed to the sink.
    pub first_audio: Option<f64>,
    /// Seconds spent in decoder + codec steps (excludes the per-sentence setup).
    pub step_seconds: f64,
    /// Seconds of the sentences' setup: text encoder and prefill.
    pub setup_seconds: f64,
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
        let codec_frames = o.codec_frames.unwrap_or(DEFAULT_CODEC_FRAMES);
        if !(1..=MAX_CODEC_FRAMES).contains(&codec_frames) {
            return Err(TtsError::Invalid(format!(
                "frames per codec call must be 1 to {MAX_CODEC_FRAMES}, not {codec_frames}"
            )));
        }
        if let Some(f) = &o.forced {
            for (i, frame) in f.iter().enumerate() {
                rill_nanocodec::fsq::check_codes(&frame.map(u32::from))
                    .map_err(|e| TtsError::Invalid(format!("forced frame {i}: {e}")))?;
            }
        }
        let spoken;
        let text = if o.normalize {
            spoken = rill_text::normalize::normalize(text, o.language)
                .map_err(|e| TtsError::Invalid(e.to_string()))?;
            spoken.text.as_str()
        } else {
            text
        };
        let encoded = self.front.encode_utterances(text, o.language)?;
        let (utterances, dropped) = (encoded.utterances, encoded.dropped);
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
            language: o.language,
            dropped,
            params,
            speaker: o.speaker,
            seed: o.seed,
            codec_frames,
            forced: o.forced.clone(),
        })
    }

    /// Speaks a plan: the text encoder and prefill of each sentence on `setup`
    /// (all threads), its frames on `pools`. Stops early if the sink returns an error.
    ///
    /// Frames go to the codec `plan.codec_frames` at a time (one call per group:
    /// stage 0 streams its weights once per call), except a request's first
    /// [`SINGLE_FRAMES`], one per call (the first decoded at once for the earliest
    /// first audio; the others let a listener's buffer fill before the groups
    /// start). With two stages the decoder
    /// makes the next group while the codec decodes the last one. The audio is the
    /// same bits in every arrangement. The [`crate::Engine`] runs the same
    /// [`Speaking`] cycles between its music frames.
    pub fn speak(
        &self,
        plan: &SpeakPlan,
        pools: &StagePools,
        setup: &Pool,
        sink: &mut dyn SpeakSink,
    ) -> Result<SpeakStats, TtsError> {
        let mut speaking = Speaking::new(self, plan.clone(), sink.wants_trace());
        while let Some(sentence) = speaking.next_setup() {
            let t = Instant::now();
            let session = sentence.run(setup)?;
            speaking.begin(session, t.elapsed().as_secs_f64(), sink)?;
            while speaking.in_sentence() {
                speaking.cycle(pools, usize::MAX, sink)?;
            }
        }
        Ok(speaking.stats())
    }
}
