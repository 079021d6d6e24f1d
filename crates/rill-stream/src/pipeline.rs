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
//! The frames between the stages are a [`crate::Staging`] (written once, for Magpie's
//! speech too). The pipeline holds the state; [`StagePools`] holds the threads and is passed in,
//! so one set of pools can serve many streams. The per-frame path allocates nothing.

mod together;
pub use together::MAX_TOGETHER;

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rill_kernels::Pool;
use rill_mrt2::session::{code_ids, prefill_conditioning};
use rill_mrt2::{FrameTrace, ModelError, Mrt2, Session, LEVELS};
use rill_spectrostream::{
    Codec, CodecState, SAMPLES_PER_FRAME, STFT_FRAMES_PER_FRAME, STFT_FRAME_LEN,
};

use crate::generator::Snapshot;
use crate::notes::NoteTracker;
use crate::staging::{FrameModel, Staging, Vocoder};

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

    /// Runs one frame's two stages: `lm` on the LM pool and, at the same time with
    /// two stages, `codec` on the codec pool; the stage that finishes first takes
    /// tasks of the other's kernels ([`Pool::assist`]). Sequentially, `lm` then
    /// `codec` on the one pool. Results never depend on which thread ran a task.
    pub fn overlap<RA, RB>(
        &self,
        lm: impl FnOnce(&Pool) -> RA + Send,
        codec: impl FnOnce(&Pool) -> RB + Send,
    ) -> (RA, RB)
    where
        RA: Send,
        RB: Send,
    {
        match self {
            StagePools::Sequential(pool) => {
                let a = lm(pool);
                (a, codec(pool))
            }
            StagePools::TwoStage {
                join,
                lm: lp,
                codec: cp,
            } => {
                let (lm_done, codec_started, codec_done) = (
                    AtomicBool::new(false),
                    AtomicBool::new(false),
                    AtomicBool::new(false),
                );
                join.join(
                    || {
                        // Set on unwind too, so a panic cannot strand the assistant.
                        let finished = SetOnDrop(&lm_done);
                        let r = lm(lp);
                        drop(finished);
                        // Only if the codec task runs elsewhere: when it has not
                        // started, this thread runs it next (no helper was free).
                        if codec_started.load(Ordering::Acquire) {
                            cp.assist(&codec_done);
                        }
                        r
                    },
                    || {
                        codec_started.store(true, Ordering::Release);
                        let finished = SetOnDrop(&codec_done);
                        let r = codec(cp);
                        drop(finished);
                        lp.assist(&lm_done);
                        r
                    },
                )
            }
        }
    }

    pub fn describe(&self) -> String {
        match self {
            StagePools::Sequential(p) => format!("sequential, {} threads", p.threads()),
            StagePools::TwoStage { join, lm, codec } => format!(
                "two-stage, LM {} + codec {} threads{}",
                lm.threads(),
                codec.threads(),
                if join.threads() < 2 {
                    " (the OS refused a thread: the stages take turns)"
                } else {
                    ""
                }
            ),
        }
    }
}

/// What one [`FramePipeline::step`] did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepReport {
    /// Tokens the LM produced this step.
    pub tokens: [u32; LEVELS],
    /// Whether a frame of audio was decoded (see [`FramePipeline::audio`]); in
    /// two-stage mode the first step decodes nothing.
    pub decoded: bool,
    /// Non-finite codec samples replaced by silence in the decoded frame.
    pub nonfinite: usize,
    /// Time of this step's LM stage and codec stage (they overlap in two-stage mode).
    pub lm_time: Duration,
    pub codec_time: Duration,
}

/// Prefill frames decoded into the codec state, without being emitted, so that the
/// first generated frame continues the prefill's audio instead of starting from a
/// silent decoder. Upstream's engine decodes the prefill only when its caller asks
/// for the reconstruction (`out_audio_L/R`); whether its live decoder state is
/// warmed otherwise is not known, so this is rill's choice: the last frames, enough
/// for the decoder's causal context (its lookahead is one frame).
pub const PREFILL_CODEC_WARM_FRAMES: usize = 8;

/// The codec side of a pipeline: state and the last decoded frame.
struct CodecStage {
    codec: Arc<Codec>,
    state: CodecState,
    /// The decoded frame: float audio (before the output gain), int16, STFT.
    audio: Vec<f32>,
    pcm: Vec<i16>,
    stft: Vec<f32>,
    want_stft: bool,
    /// Tokens of the frame in `audio`.
    tokens: [u32; LEVELS],
    /// Non-finite samples replaced by silence in `pcm`.
    nonfinite: usize,
}

impl CodecStage {
    /// Decodes one frame.
    fn decode_frame(&mut self, tokens: [u32; LEVELS], pool: &Pool) {
        let stft = self.want_stft.then_some(&mut self.stft[..]);
        // The tokens are the LM's samples, or forced / restored ids that were
        // validated on the way in, so every id lies in its level's range.
        self.codec
            .step(&mut self.state, &tokens, &mut self.audio, stft, pool)
            .expect("pipeline tokens are validated before they reach the codec");
        self.nonfinite = rill_spectrostream::float_to_int16(&self.audio, &mut self.pcm);
        self.tokens = tokens;
    }
}

/// SpectroStream as the pipeline's [`Vocoder`]; none: tokens only.
impl Vocoder for Option<CodecStage> {
    type Frame = [u32; LEVELS];
    type Error = Infallible;
    fn decode(&mut self, frames: &[[u32; LEVELS]], pool: &Pool) -> Result<(), Infallible> {
        if let Some(c) = self {
            for &t in frames {
                c.decode_frame(t, pool);
            }
        }
        Ok(())
    }
}

/// One step of MRT2's language model as the pipeline's [`FrameModel`]: `step`
/// samples or teacher-forces the session's next tokens (its error type is the
/// step's: none when sampling).
struct LmStep<'a, F> {
    session: &'a mut Session,
    step: F,
    /// The tokens of the step made.
    tokens: [u32; LEVELS],
}

impl<F, E> FrameModel for LmStep<'_, F>
where
    F: FnMut(&mut Session, &Pool) -> Result<[u32; LEVELS], E> + Send,
    E: Send,
{
    type Frame = [u32; LEVELS];
    type Error = E;
    /// One frame (music never ends).
    fn make(&mut self, pool: &Pool, _n: usize, made: &mut Vec<[u32; LEVELS]>) -> Result<bool, E> {
        self.tokens = (self.step)(self.session, pool)?;
        made.push(self.tokens);
        Ok(false)
    }
}

/// One stream's LM session and codec state, advanced one frame per step.
pub struct FramePipeline {
    session: Session,
    /// `None`: tokens only.
    codec: Option<CodecStage>,
    /// Tokens produced but not yet decoded (two-stage only; at most one frame).
    staging: Staging<[u32; LEVELS]>,
}

impl FramePipeline {
    /// A pipeline; `codec: None` generates tokens only.
    pub fn new(lm: Arc<Mrt2>, codec: Option<Arc<Codec>>, seed: u64, pools: &StagePools) -> Self {
        FramePipeline {
            session: Session::new(lm, seed, pools.lm()),
            codec: codec.map(|codec| CodecStage {
                state: codec.new_state(),
                codec,
                audio: vec![0.0; FRAME_PCM],
                pcm: vec![0; FRAME_PCM],
                stft: vec![0.0; STFT_FRAMES_PER_FRAME * STFT_FRAME_LEN],
                want_stft: false,
                tokens: [0; LEVELS],
                nonfinite: 0,
            }),
            staging: Staging::with_capacity(1),
        }
    }

    /// Also keep each decoded frame's STFT (for dumps).
    pub fn keep_stft(&mut self, on: bool) {
        if let Some(c) = self.codec.as_mut() {
            c.want_stft = on;
        }
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
        self.codec.as_ref().map(|c| &c.state)
    }

    /// Tokens computed but not yet decoded.
    pub fn pending(&self) -> Option<[u32; LEVELS]> {
        self.staging.pending().first().copied()
    }

    /// Replaces the codec state and the undecoded tokens (restoring a snapshot).
    pub fn restore_codec(&mut self, state: &CodecState, pending: Option<[u32; LEVELS]>) {
        if let Some(c) = self.codec.as_mut() {
            c.state.clone_from(state);
        }
        self.staging.set_pending(pending);
    }

    /// A [`Snapshot`] of this pipeline (`None` without a codec): the session's LM
    /// state, sampling, style, drums and CFG, the codec state and the undecoded
    /// tokens. `notes` is the host's note state; its values must be the pianoroll
    /// the session's conditioning uses (a held chord: a tracker with those notes
    /// held, as `rill generate --notes` makes it).
    pub fn snapshot(&self, notes: &NoteTracker) -> Option<Snapshot> {
        let codec = self.codec.as_ref()?.state.clone();
        Some(Snapshot::capture(
            self,
            self.session.conditioning(),
            codec,
            notes.clone(),
        ))
    }

    /// Restores the LM state, sampling, codec state and undecoded tokens of `s`.
    /// The conditioning is left to the caller (`s.conditioning()`, or controls
    /// that override it), as is the note tracker. An invalid snapshot (sampling,
    /// cache sizes) is an error and changes nothing. Tokens left pending by a
    /// two-stage pipeline are decoded by the next two-stage step or by
    /// [`Self::flush`] (which a sequential pipeline must call first).
    pub fn restore(&mut self, s: &Snapshot) -> Result<(), ModelError> {
        s.sampling.validate()?;
        self.session.restore_state(s.lm.clone())?;
        self.session.set_sampling(s.sampling)?;
        self.restore_codec(&s.codec, s.pending);
        Ok(())
    }

    /// Back to a fresh codec state with nothing pending (the LM is reset separately).
    pub fn reset_codec(&mut self) {
        if let Some(c) = self.codec.as_mut() {
            c.state = c.codec.new_state();
        }
        self.staging.clear();
    }

    /// The last decoded frame, interleaved stereo int16 (empty without a codec).
    pub fn pcm(&self) -> &[i16] {
        self.codec.as_ref().map_or(&[], |c| &c.pcm)
    }

    /// The last decoded frame as float (before the 0.5 output gain).
    pub fn audio(&self) -> &[f32] {
        self.codec.as_ref().map_or(&[], |c| &c.audio)
    }

    /// The last decoded frame's STFT `[4, 480, 4]` (if [`Self::keep_stft`]).
    pub fn stft(&self) -> &[f32] {
        self.codec.as_ref().map_or(&[], |c| &c.stft)
    }

    /// Tokens of the last decoded frame.
    pub fn decoded_tokens(&self) -> [u32; LEVELS] {
        self.codec.as_ref().map_or([0; LEVELS], |c| c.tokens)
    }

    /// One LM step (sampling) and (sequential) the codec of the same frame, or
    /// (two-stage) the codec of the previous frame at the same time.
    pub fn step(&mut self, trace: Option<&mut FrameTrace>, pools: &StagePools) -> StepReport {
        let mut trace = trace;
        let Ok(r) = self.run(
            |s: &mut Session, pool: &Pool| Ok::<_, Infallible>(s.step(pool, trace.take())),
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
        let mut trace = trace;
        self.run(
            |s: &mut Session, pool: &Pool| s.step_forced(ids, pool, trace.take()),
            pools,
        )
    }

    fn run<E: Send>(
        &mut self,
        step: impl FnMut(&mut Session, &Pool) -> Result<[u32; LEVELS], E> + Send,
        pools: &StagePools,
    ) -> Result<StepReport, E> {
        let Self {
            session,
            codec,
            staging,
        } = self;
        // Sequentially the frame just made is decoded; with two stages the previous
        // one, at the same time. On an LM error nothing is made (and, with two
        // stages, the frame decoded meanwhile stays in `audio`).
        let mut lm = LmStep {
            session,
            step,
            tokens: [0; LEVELS],
        };
        let cycle = staging.step(pools, &mut lm, 1, codec);
        let Ok(()) = cycle.decoded;
        let decoded = codec.is_some() && !staging.decoded().is_empty();
        if codec.is_none() {
            // Tokens only: nothing waits for a codec.
            staging.clear();
        }
        cycle.made?;
        Ok(StepReport {
            tokens: lm.tokens,
            decoded,
            nonfinite: codec
                .as_ref()
                .filter(|_| decoded)
                .map_or(0, |c| c.nonfinite),
            lm_time: cycle.model_time,
            codec_time: cycle.vocoder_time,
        })
    }

    /// Continuation prefill (spec §3.7): forces `codes` (raw codes per frame, see
    /// [`Session::prefill`]) through the language model without sampling or touching
    /// the sampler key, under [`prefill_conditioning`] of the current conditioning
    /// (style masked, or with `keep_style` — upstream's
    /// `mask_musiccoca_during_prefill = false` — its levels 0–5 kept, as upstream's
    /// engine does), which is set again afterwards. No
    /// audio comes out; the codec state is warmed with the last
    /// [`PREFILL_CODEC_WARM_FRAMES`] frames. No frames, a code > 1023 or a frame
    /// still pending decode ([`Self::flush`] first) is an error and changes nothing.
    pub fn prefill(
        &mut self,
        codes: &[[u16; LEVELS]],
        keep_style: bool,
        pools: &StagePools,
    ) -> Result<(), ModelError> {
        if !self.staging.pending().is_empty() {
            return Err(ModelError::Prefill(
                "a generated frame is still pending decode; flush the pipeline first".into(),
            ));
        }
        let ids = codes.iter().map(code_ids).collect::<Result<Vec<_>, _>>()?;
        if ids.is_empty() {
            return Err(ModelError::Prefill("no frames to prefill".into()));
        }
        let cond = self.session.conditioning().clone();
        self.session
            .set_conditioning(&prefill_conditioning(&cond, keep_style), pools.lm())?;
        // The codec stage has nothing to do: its thread assists the LM's kernels.
        let session = &mut self.session;
        let (r, ()) = pools.overlap(|lp| session.prefill(codes, lp), |_| ());
        self.session.set_conditioning(&cond, pools.lm())?;
        r?;
        if let Some(c) = self.codec.as_mut() {
            for &t in &ids[ids.len().saturating_sub(PREFILL_CODEC_WARM_FRAMES)..] {
                c.decode_frame(t, pools.codec());
            }
        }
        Ok(())
    }

    /// Decodes the tokens still pending (two-stage), without an LM step.
    /// Returns `None` when nothing was pending.
    pub fn flush(&mut self, pools: &StagePools) -> Option<StepReport> {
        if self.codec.is_none() {
            // Tokens only: nothing to decode.
            self.staging.clear();
            return None;
        }
        let (Ok(()), codec_time) = self.staging.flush(pools, &mut self.codec)?;
        let c = self.codec.as_ref()?;
        Some(StepReport {
            tokens: c.tokens,
            decoded: true,
            nonfinite: c.nonfinite,
            lm_time: Duration::ZERO,
            codec_time,
        })
    }
}

/// Sets its flag when dropped, also while unwinding: the other stage's
/// [`Pool::assist`] loop waits for it.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}
