//! The frame pipeline: language-model step → codec step → int16, written once
//! and used by `generate`, `bench`, `play` and `serve`.
//!
//! Two ways to run it ([`Stages`]):
//! * **sequential**: each frame runs the LM, then the codec, each spread over
//!   all the threads;
//! * **two-stage**: the LM of frame n+1 runs while the codec decodes frame n, each
//!   on its own share of the cores (the LM is bandwidth-bound, the codec
//!   compute-bound, so they overlap well); the stage that finishes first lends
//!   its thread to the other's kernels ([`Pool::assist`]). Audio comes out one frame later (40 ms
//!   more latency) and is bit-identical to the sequential path: every kernel's
//!   result is independent of its thread count and the stages exchange only tokens.
//!
//! The pipeline holds the state; [`StagePools`] holds the threads and is passed in,
//! so one set of pools can serve many streams. The per-frame path allocates nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rill_codec::{Codec, CodecState, SAMPLES_PER_FRAME, STFT_FRAMES_PER_FRAME, STFT_FRAME_LEN};
use rill_kernels::Pool;
use rill_mrt2::{FrameTrace, ModelError, Mrt2, Session, LEVELS};

/// Interleaved stereo int16 samples per frame.
pub const FRAME_PCM: usize = 2 * SAMPLES_PER_FRAME;

/// How the LM and the codec share the cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stages {
    Sequential,
    TwoStage,
}

impl Stages {
    /// Two stages when there are at least two threads (the faster choice on every
    /// CPU measured), else sequential.
    pub fn auto(threads: usize) -> Stages {
        if threads >= 2 {
            Stages::TwoStage
        } else {
            Stages::Sequential
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stages::Sequential => "sequential",
            Stages::TwoStage => "two-stage",
        }
    }

    /// Frames of audio latency the arrangement adds.
    pub fn latency_frames(self) -> usize {
        match self {
            Stages::Sequential => 0,
            Stages::TwoStage => 1,
        }
    }
}

/// The worker threads of a pipeline.
#[derive(Debug)]
pub enum StagePools {
    Sequential(Pool),
    TwoStage {
        /// Two threads: runs the LM task and the codec task of a frame at once.
        join: Pool,
        lm: Pool,
        codec: Pool,
    },
}

impl StagePools {
    /// `threads` in total; for two stages the LM gets ⌊threads/2⌋ (at least 1)
    /// unless `lm_threads` says otherwise, the codec the rest (at least 1).
    pub fn new(stages: Stages, threads: usize, lm_threads: Option<usize>) -> StagePools {
        let threads = threads.max(1);
        match stages {
            Stages::Sequential => StagePools::Sequential(Pool::new(threads)),
            Stages::TwoStage => {
                let lm = lm_threads
                    .unwrap_or(threads / 2)
                    .clamp(1, threads.max(2) - 1);
                let codec = threads.saturating_sub(lm).max(1);
                StagePools::TwoStage {
                    join: Pool::new(2),
                    lm: Pool::open(lm),
                    codec: Pool::open(codec),
                }
            }
        }
    }

    pub fn stages(&self) -> Stages {
        match self {
            StagePools::Sequential(_) => Stages::Sequential,
            StagePools::TwoStage { .. } => Stages::TwoStage,
        }
    }

    /// The pool the LM runs on (also for conditioning changes).
    pub fn lm(&self) -> &Pool {
        match self {
            StagePools::Sequential(p) => p,
            StagePools::TwoStage { lm, .. } => lm,
        }
    }

    /// The pool the codec runs on.
    pub fn codec(&self) -> &Pool {
        match self {
            StagePools::Sequential(p) => p,
            StagePools::TwoStage { codec, .. } => codec,
        }
    }

    /// (LM threads, codec threads).
    pub fn threads(&self) -> (usize, usize) {
        (self.lm().threads(), self.codec().threads())
    }

    pub fn describe(&self) -> String {
        match self {
            StagePools::Sequential(p) => format!("sequential, {} threads", p.threads()),
            StagePools::TwoStage { lm, codec, .. } => format!(
                "two-stage, LM {} + codec {} threads",
                lm.threads(),
                codec.threads()
            ),
        }
    }
}

/// What one [`FramePipeline::step`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// Tokens the LM produced this step.
    pub tokens: [u32; LEVELS],
    /// Whether a frame of audio was decoded (see [`FramePipeline::audio`]); in
    /// two-stage mode the first step decodes nothing.
    pub decoded: bool,
    /// Non-finite codec samples replaced by silence in the decoded frame.
    pub nonfinite: usize,
    pub lm_ms: f64,
    pub codec_ms: f64,
}

/// One stream's LM session and codec state, advanced one frame per step.
pub struct FramePipeline {
    session: Session,
    codec: Option<Arc<Codec>>,
    codec_state: Option<CodecState>,
    /// Tokens produced but not yet decoded (two-stage only).
    pending: Option<[u32; LEVELS]>,
    /// The decoded frame: float audio (before the output gain), int16, STFT.
    audio: Vec<f32>,
    pcm: Vec<i16>,
    stft: Vec<f32>,
    want_stft: bool,
    /// Tokens of the frame in `audio`.
    decoded_tokens: [u32; LEVELS],
}

impl FramePipeline {
    /// A pipeline; `codec: None` generates tokens only.
    pub fn new(lm: Arc<Mrt2>, codec: Option<Arc<Codec>>, seed: u64, pools: &StagePools) -> Self {
        let codec_state = codec.as_ref().map(|c| c.new_state());
        FramePipeline {
            session: Session::new(lm, seed, pools.lm()),
            codec,
            codec_state,
            pending: None,
            audio: vec![0.0; FRAME_PCM],
            pcm: vec![0; FRAME_PCM],
            stft: vec![0.0; STFT_FRAMES_PER_FRAME * STFT_FRAME_LEN],
            want_stft: false,
            decoded_tokens: [0; LEVELS],
        }
    }

    /// Also keep each decoded frame's STFT (for dumps).
    pub fn keep_stft(&mut self, on: bool) {
        self.want_stft = on;
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The LM session (conditioning, sampling, key); changes apply to the next
    /// LM step, which in two-stage mode is one frame ahead of the audio.
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    pub fn codec_state(&self) -> Option<&CodecState> {
        self.codec_state.as_ref()
    }

    /// Tokens computed but not yet decoded.
    pub fn pending(&self) -> Option<[u32; LEVELS]> {
        self.pending
    }

    /// Replaces the codec state and the undecoded tokens (restoring a snapshot).
    pub fn restore_codec(&mut self, state: &CodecState, pending: Option<[u32; LEVELS]>) {
        if let Some(s) = self.codec_state.as_mut() {
            s.clone_from(state);
        }
        self.pending = pending;
    }

    /// Back to a fresh codec state with nothing pending (the LM is reset separately).
    pub fn reset_codec(&mut self) {
        if let (Some(c), Some(s)) = (&self.codec, self.codec_state.as_mut()) {
            *s = c.new_state();
        }
        self.pending = None;
    }

    /// The last decoded frame, interleaved stereo int16.
    pub fn pcm(&self) -> &[i16] {
        &self.pcm
    }

    /// The last decoded frame as float (before the 0.5 output gain).
    pub fn audio(&self) -> &[f32] {
        &self.audio
    }

    /// The last decoded frame's STFT `[4, 480, 4]` (if [`Self::keep_stft`]).
    pub fn stft(&self) -> &[f32] {
        &self.stft
    }

    /// Tokens of the last decoded frame.
    pub fn decoded_tokens(&self) -> [u32; LEVELS] {
        self.decoded_tokens
    }

    /// One LM step (sampling) and (sequential) the codec of the same frame, or
    /// (two-stage) the codec of the previous frame at the same time.
    pub fn step(&mut self, trace: Option<&mut FrameTrace>, pools: &StagePools) -> StepReport {
        let Ok(r) = self.run(
            |s: &mut Session, pool: &Pool| Ok::<_, std::convert::Infallible>(s.step(pool, trace)),
            pools,
        );
        r
    }

    /// As [`Self::step`], teacher-forcing `ids` (the logits are still computed
    /// along that path). A bad id is an error and changes nothing but the
    /// decoding of a pending frame.
    pub fn step_forced(
        &mut self,
        ids: &[u32; LEVELS],
        trace: Option<&mut FrameTrace>,
        pools: &StagePools,
    ) -> Result<StepReport, ModelError> {
        self.run(
            |s: &mut Session, pool: &Pool| s.step_forced(ids, pool, trace),
            pools,
        )
    }

    fn run<E: Send>(
        &mut self,
        lm_step: impl FnOnce(&mut Session, &Pool) -> Result<[u32; LEVELS], E> + Send,
        pools: &StagePools,
    ) -> Result<StepReport, E> {
        let Self {
            session,
            codec,
            codec_state,
            pending,
            audio,
            pcm,
            stft,
            want_stft,
            decoded_tokens,
        } = self;
        let lm_task = |pool: &Pool| {
            let t = Instant::now();
            let tokens = lm_step(session, pool);
            (tokens, ms_since(t))
        };
        let mut decode = |tokens: [u32; LEVELS], pool: &Pool| -> (bool, usize, f64) {
            let (Some(c), Some(st)) = (codec.as_ref(), codec_state.as_mut()) else {
                return (false, 0, 0.0);
            };
            let t = Instant::now();
            let s = want_stft.then_some(&mut stft[..]);
            c.step(st, &tokens, audio, s, pool);
            let nonfinite = rill_codec::float_to_int16(audio, pcm);
            *decoded_tokens = tokens;
            (true, nonfinite, ms_since(t))
        };
        let (tokens, lm_ms, decoded, nonfinite, codec_ms) = match pools {
            StagePools::Sequential(pool) => {
                let (tokens, lm_ms) = lm_task(pool);
                let tokens = tokens?;
                let (decoded, nonfinite, codec_ms) = decode(tokens, pool);
                (tokens, lm_ms, decoded, nonfinite, codec_ms)
            }
            StagePools::TwoStage {
                join,
                lm,
                codec: cp,
            } => {
                let prev = pending.take();
                // The stage that finishes first helps the other with its kernels.
                let (lm_done, codec_started, codec_done) = (
                    AtomicBool::new(false),
                    AtomicBool::new(false),
                    AtomicBool::new(false),
                );
                let ((tokens, lm_ms), (decoded, nonfinite, codec_ms)) = join.join(
                    || {
                        let r = lm_task(lm);
                        lm_done.store(true, Ordering::Release);
                        // Only if the codec task runs elsewhere: when it has not
                        // started, this thread runs it next (no helper was free).
                        if codec_started.load(Ordering::Acquire) {
                            cp.assist(&codec_done);
                        }
                        r
                    },
                    || {
                        codec_started.store(true, Ordering::Release);
                        let r = match prev {
                            Some(t) => decode(t, cp),
                            None => (false, 0, 0.0),
                        };
                        codec_done.store(true, Ordering::Release);
                        lm.assist(&lm_done);
                        r
                    },
                );
                // On an LM error the frame decoded meanwhile stays in `audio`.
                let tokens = tokens?;
                if codec.is_some() {
                    *pending = Some(tokens);
                }
                (tokens, lm_ms, decoded, nonfinite, codec_ms)
            }
        };
        Ok(StepReport {
            tokens,
            decoded,
            nonfinite,
            lm_ms,
            codec_ms,
        })
    }

    /// Decodes the tokens still pending (two-stage), without an LM step.
    /// Returns `None` when nothing was pending.
    pub fn flush(&mut self, pools: &StagePools) -> Option<StepReport> {
        let tokens = self.pending.take()?;
        let (c, st) = (self.codec.as_ref()?, self.codec_state.as_mut()?);
        let t = Instant::now();
        let s = self.want_stft.then_some(&mut self.stft[..]);
        c.step(st, &tokens, &mut self.audio, s, pools.codec());
        let nonfinite = rill_codec::float_to_int16(&self.audio, &mut self.pcm);
        self.decoded_tokens = tokens;
        Some(StepReport {
            tokens,
            decoded: true,
            nonfinite,
            lm_ms: 0.0,
            codec_ms: ms_since(t),
        })
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
