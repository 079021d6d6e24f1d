//! Speech on the engine: Magpie requests run on the same scheduler thread and the
//! same worker pools as the music streams, priced by what they measured.
//!
//! The policy (written once here, documented in `docs/deployment.md`):
//! * **Music first.** The scheduler serves a speech cycle only when no music
//!   stream has room for a frame: an admitted music stream never waits for
//!   speech longer than one speech cycle, which is shorter than its buffer
//!   (beside music a speech cycle makes one frame, ≈ 30 ms on a 2-core AVX2
//!   machine, against a 200 ms buffer).
//! * **Speech in the leftover.** Alone, a speech runs as fast as the machine
//!   allows (real time when its measured real-time factor is below 1); beside
//!   music it gets what the music leaves: [`Speaker::expected_rtf`] prices it from
//!   both calibrations (speech RTF ÷ the share the open music streams leave).
//! * **Setup below everything.** A sentence's text encoder and prefill
//!   ([`SentenceSetup`]) run on the engine's setup thread in the idle scheduling
//!   class, never on the scheduler thread, so a 0.3–0.5 s prefill cannot delay a
//!   music frame.
//!
//! Which requests may start, and how many may wait, is the host's policy
//! (`rill_server::speech_queue`).

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use rill_kernels::Pool;
use rill_magpie::{Session, CODEBOOKS};
use rill_nanocodec::{SAMPLES_PER_FRAME, SAMPLE_RATE};

use super::{Engine, Shared, StreamError};
use crate::pipeline::StagePools;
use crate::tts::{
    CycleTimes, SentenceSetup, SpeakOptions, SpeakPlan, SpeakSink, SpeakStats, Speaking, TtsError,
    Voice, MAX_CODEC_FRAMES, SINGLE_FRAMES,
};

/// Frames of speech buffered between the scheduler and the reader (≈ 3 s).
pub const SPEECH_RING_FRAMES: usize = 64;
/// Seconds of audio per Magpie frame (1024 samples at 22.05 kHz).
const FRAME_SECONDS: f64 = SAMPLES_PER_FRAME as f64 / SAMPLE_RATE as f64;
/// Most frames one speech cycle hands over: a group, then a group decoded at once.
const MOST_FRAMES_PER_CYCLE: usize = 2 * MAX_CODEC_FRAMES;

type SetupReply = (Result<Session, TtsError>, f64);

struct SetupJob {
    sentence: SentenceSetup,
    reply: Sender<SetupReply>,
}

/// A voice the engine speaks with: what [`Engine::add_voice`] made.
struct VoiceSlot {
    voice: Arc<Voice>,
    /// Real-time factor of one speech alone (0 = not measured).
    rtf: f32,
    setup: Sender<SetupJob>,
}

/// The door to the engine's speech: cloneable, one per voice.
#[derive(Clone)]
pub struct Speaker {
    shared: Arc<Shared>,
    slot: Arc<VoiceSlot>,
}

/// What the scheduler owns per speech.
pub(super) struct SpeechJob {
    speaking: Speaking,
    sink: RingSink,
    cancel: Arc<AtomicBool>,
    done: Sender<Result<SpeakStats, TtsError>>,
    setup: Sender<SetupJob>,
    /// The running sentence setup's answer.
    pending_setup: Option<Receiver<SetupReply>>,
}

/// One speech as seen by its reader: 16-bit mono PCM at 22.05 kHz as it is made.
/// Dropping it stops the speech at its next cycle.
pub struct SpeechHandle {
    audio: rtrb::Consumer<i16>,
    cancel: Arc<AtomicBool>,
    done: Receiver<Result<SpeakStats, TtsError>>,
    ended: Option<Result<SpeakStats, TtsError>>,
}

impl Engine {
    /// Lets the engine speak with `voice`: measures what one speech costs on
    /// pools like the scheduler's (unless calibration is off) and starts the
    /// setup thread. The scheduler then runs speeches between music frames (see
    /// the module docs). An error only if the OS refuses the thread.
    pub fn add_voice(&self, voice: Arc<Voice>) -> std::io::Result<Speaker> {
        let c = &self.shared.config;
        let rtf = if c.calibration_frames > 0 {
            let pools = StagePools::new(c.stages, c.threads, c.lm_threads);
            measure_speech_rtf(&voice, &pools, &Pool::new(c.threads))
        } else {
            0.0
        };
        let setup = start_setup_thread(c.threads)?;
        Ok(Speaker {
            shared: Arc::clone(&self.shared),
            slot: Arc::new(VoiceSlot { voice, rtf, setup }),
        })
    }
}

impl Speaker {
    pub fn voice(&self) -> &Arc<Voice> {
        &self.slot.voice
    }

    /// Real-time factor of one speech alone, measured when the voice was added
    /// (0 if not measured).
    pub fn rtf(&self) -> f32 {
        self.slot.rtf
    }

    /// The real-time factor a speech starting now should run at beside the open
    /// music streams: its own ÷ the share of the machine they leave (`None` when
    /// either was not measured, or the music leaves nothing).
    pub fn expected_rtf(&self) -> Option<f32> {
        self.expected_rtf_beside(self.shared.active.load(Ordering::Acquire))
    }

    /// As [`Speaker::expected_rtf`] beside `streams` music streams.
    pub fn expected_rtf_beside(&self, streams: usize) -> Option<f32> {
        expected_rtf(self.slot.rtf, self.shared.rtf, streams)
    }

    /// Starts speaking `plan` (made by this speaker's [`Speaker::voice`]); its audio
    /// comes through the handle.
    pub fn speak(&self, plan: SpeakPlan) -> Result<SpeechHandle, StreamError> {
        let (audio_tx, audio_rx) = rtrb::RingBuffer::new(SPEECH_RING_FRAMES * SAMPLES_PER_FRAME);
        let (done_tx, done_rx) = bounded(1);
        let cancel = Arc::new(AtomicBool::new(false));
        let job = SpeechJob {
            speaking: Speaking::new(&self.slot.voice, plan, false),
            sink: RingSink { audio: audio_tx },
            cancel: Arc::clone(&cancel),
            done: done_tx,
            setup: self.slot.setup.clone(),
            pending_setup: None,
        };
        self.shared
            .speeches
            .send(job)
            .map_err(|_| StreamError::Stopped)?;
        if let Some(s) = self.shared.scheduler_thread.get() {
            s.unpark();
        }
        Ok(SpeechHandle {
            audio: audio_rx,
            cancel,
            done: done_rx,
            ended: None,
        })
    }
}

/// A speech's real-time factor beside `streams` music streams: its own (`speech`)
/// ÷ the share of the machine they leave (each costs `music`); `None` when a figure
/// is unmeasured (0) where needed or less than 5 % is left.
fn expected_rtf(speech: f32, music: f32, streams: usize) -> Option<f32> {
    if speech <= 0.0 || (streams > 0 && music <= 0.0) {
        return None;
    }
    let left = 1.0 - music * streams as f32;
    (left > 0.05).then(|| speech / left)
}

impl SpeechHandle {
    /// Appends the samples made so far to `out`. When none are ready, waits up to
    /// `wait` for the end of the speech; its outcome (once every sample was read)
    /// is `Some`, after which nothing more comes.
    pub fn next(
        &mut self,
        out: &mut Vec<i16>,
        wait: Duration,
    ) -> Option<Result<SpeakStats, TtsError>> {
        if self.drain(out) > 0 {
            return None;
        }
        if self.ended.is_none() {
            match self.done.recv_timeout(wait) {
                Ok(r) => self.ended = Some(r),
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = Some(Err(TtsError::Stopped("the engine has stopped".into())))
                }
            }
        }
        // Frames written before the outcome was sent.
        if self.drain(out) > 0 {
            return None;
        }
        self.ended.take()
    }

    fn drain(&mut self, out: &mut Vec<i16>) -> usize {
        let n = self.audio.slots();
        if let Ok(chunk) = self.audio.read_chunk(n) {
            let (a, b) = chunk.as_slices();
            out.extend_from_slice(a);
            out.extend_from_slice(b);
            chunk.commit_all();
        }
        n
    }
}

impl Drop for SpeechHandle {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Release);
    }
}

/// Hands each frame's PCM to the handle's ring; the scheduler serves a cycle only
/// when the ring has room for [`MOST_FRAMES_PER_CYCLE`].
struct RingSink {
    audio: rtrb::Producer<i16>,
}

impl SpeakSink for RingSink {
    fn frame(
        &mut self,
        _codes: &[u32; CODEBOOKS],
        _audio: &[f32; SAMPLES_PER_FRAME],
        pcm: &[i16; SAMPLES_PER_FRAME],
    ) -> Result<(), TtsError> {
        let mut chunk = self
            .audio
            .write_chunk(SAMPLES_PER_FRAME)
            .map_err(|_| TtsError::Invalid("internal error: the speech queue overflowed".into()))?;
        let (a, b) = chunk.as_mut_slices();
        let n = a.len();
        a.copy_from_slice(&pcm[..n]);
        b.copy_from_slice(&pcm[n..]);
        chunk.commit_all();
        Ok(())
    }
}

impl SpeechJob {
    fn end(self, outcome: Result<SpeakStats, TtsError>) {
        let _ = self.done.try_send(outcome);
    }
}

/// Serves one cycle of the first speech that is ready (its sentence set up, room
/// for its audio), at most `max_group` frames per codec call after the ramp; ends
/// the finished, failed and abandoned ones. Whether a cycle ran.
pub(super) fn serve_speech(
    jobs: &mut Vec<SpeechJob>,
    pools: &StagePools,
    max_group: usize,
) -> bool {
    let mut i = 0;
    while i < jobs.len() {
        let job = &mut jobs[i];
        if job.cancel.load(Ordering::Acquire) {
            jobs.swap_remove(i)
                .end(Err(TtsError::Stopped("the reader went away".into())));
            continue;
        }
        if job.speaking.finished() {
            let stats = job.speaking.stats();
            jobs.swap_remove(i).end(Ok(stats));
            continue;
        }
        if let Err(e) = setup_next(job) {
            jobs.swap_remove(i).end(Err(e));
            continue;
        }
        if !job.speaking.in_sentence()
            || job.sink.audio.slots() < MOST_FRAMES_PER_CYCLE * SAMPLES_PER_FRAME
        {
            i += 1;
            continue;
        }
        let SpeechJob { speaking, sink, .. } = job;
        let r = panic::catch_unwind(AssertUnwindSafe(|| speaking.cycle(pools, max_group, sink)));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => jobs.swap_remove(i).end(Err(e)),
            Err(_) => jobs.swap_remove(i).end(Err(TtsError::Invalid(
                "internal error (a panic) while speaking; the speech was cut short".into(),
            ))),
        }
        return true;
    }
    false
}

/// Asks the setup thread for the next sentence's session, or begins the sentence
/// with the session it made.
fn setup_next(job: &mut SpeechJob) -> Result<(), TtsError> {
    if job.speaking.in_sentence() {
        return Ok(());
    }
    match &job.pending_setup {
        None => {
            if let Some(sentence) = job.speaking.next_setup() {
                let (reply, rx) = bounded(1);
                job.setup
                    .send(SetupJob { sentence, reply })
                    .map_err(|_| TtsError::Stopped("the setup thread has stopped".into()))?;
                job.pending_setup = Some(rx);
            }
            Ok(())
        }
        Some(rx) => match rx.try_recv() {
            Ok((session, seconds)) => {
                job.pending_setup = None;
                job.speaking.begin(session?, seconds, &mut job.sink)
            }
            Err(crossbeam_channel::TryRecvError::Empty) => Ok(()),
            Err(crossbeam_channel::TryRecvError::Disconnected) => {
                Err(TtsError::Stopped("the setup thread has stopped".into()))
            }
        },
    }
}

/// The thread that sets sentences up, in the idle scheduling class (its pool's
/// workers inherit it): music and speech frames go first.
fn start_setup_thread(threads: usize) -> std::io::Result<Sender<SetupJob>> {
    let (tx, rx) = unbounded::<SetupJob>();
    thread::Builder::new()
        .name("rill-speech-setup".into())
        .spawn(move || {
            rill_kernels::pool::idle_thread_priority();
            let pool = Pool::new(threads);
            for job in rx {
                let t = Instant::now();
                let session =
                    match panic::catch_unwind(AssertUnwindSafe(|| job.sentence.run(&pool))) {
                        Ok(r) => r.map_err(TtsError::from),
                        Err(_) => Err(TtsError::Invalid(
                            "internal error (a panic) while setting a sentence up".into(),
                        )),
                    };
                let _ = job.reply.send((session, t.elapsed().as_secs_f64()));
            }
        })?;
    Ok(tx)
}

/// Real-time factor of one speech on these pools: its frames' time after the ramp
/// of single frames / their audio, teacher-forced so that the count is fixed.
fn measure_speech_rtf(voice: &Voice, pools: &StagePools, setup: &Pool) -> f32 {
    /// Times the cycles after the ramp.
    struct Timer {
        cycles: usize,
        seconds: f64,
        frames: usize,
    }
    impl SpeakSink for Timer {
        fn cycle(&mut self, t: &CycleTimes) {
            self.cycles += 1;
            if self.cycles > SINGLE_FRAMES + 1 {
                self.seconds += t.wall.as_secs_f64();
                self.frames += t.decoded;
            }
        }
    }
    let languages = voice.front.languages();
    let language = if languages.contains(&rill_text::Language::English) {
        rill_text::Language::English
    } else {
        languages.first().copied().unwrap_or_default()
    };
    let options = SpeakOptions {
        language,
        forced: Some(vec![[0u16; CODEBOOKS]; SINGLE_FRAMES + 12]),
        ..SpeakOptions::default()
    };
    let Ok(plan) = voice.plan("Calibration.", &options) else {
        return 0.0;
    };
    let mut timer = Timer {
        cycles: 0,
        seconds: 0.0,
        frames: 0,
    };
    match voice.speak(&plan, pools, setup, &mut timer) {
        Ok(_) if timer.frames > 0 => (timer.seconds / (timer.frames as f64 * FRAME_SECONDS)) as f32,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::expected_rtf;

    #[test]
    fn speech_is_priced_by_the_share_the_music_leaves() {
        assert_eq!(expected_rtf(0.6, 0.64, 0), Some(0.6));
        let beside_one = expected_rtf(0.6, 0.6, 1).unwrap();
        assert!((beside_one - 1.5).abs() < 1e-5, "{beside_one}");
        // Nothing left, or a figure not measured: no price.
        assert_eq!(expected_rtf(0.6, 0.5, 2), None);
        assert_eq!(expected_rtf(0.0, 0.5, 0), None);
        assert_eq!(expected_rtf(0.6, 0.0, 1), None);
        assert_eq!(expected_rtf(0.6, 0.0, 0), Some(0.6));
    }
}
