//! The streaming engine: one scheduler thread owns every live stream's
//! [`Generator`] and the worker pools ([`StagePools`]), and keeps each stream's audio queue a bounded
//! distance ahead of its playback.
//!
//! * Each stream has a lock-free audio queue (`rtrb`) of at most `buffer_frames`
//!   frames and a bounded control queue; controls are applied at the next frame
//!   boundary: a control sent before the read that makes room for a frame
//!   reaches that frame's step.
//! * The scheduler always serves the stream with the least audio buffered that has
//!   room (earliest deadline first) and, when every queue is full, waits for room
//!   yielding its core (up to `scheduler::BUSY_WAIT` after the last frame, then in 2 ms sleeps).
//!   When several streams have room, up to [`MAX_TOGETHER`] of them (the least
//!   buffered) make their frames in one cycle: their language models stepped
//!   together, layer by layer across the streams, so each weight matrix is read once
//!   for all of them; each stream's audio is bit for bit what it would be alone.
//! * Admission control: at most `capacity` streams, measured at start-up as how
//!   many the CPU can sustain in real time, one stream's frame time and then up to
//!   [`MAX_TOGETHER`] streams stepped together (or set explicitly); none when one
//!   stream would not keep up, unless stuttering is allowed.
//!
//! Consumers (an audio-device callback, a WebSocket sender pacing at 40 ms) read
//! frames without locks; a read that finds too little audio counts an underrun.
//!
//! A panic while serving one stream (a bug) is caught on the scheduler thread:
//! that stream is dropped and reports [`StreamHandle::failed`], every other
//! stream keeps playing (the worker pools reset themselves, see `Pool::run`).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use rill_mrt2::Mrt2;
use rill_spectrostream::Codec;

use crate::generator::{Control, Generator, Snapshot};
use crate::pipeline::{StagePools, Stages, FRAME_PCM, MAX_TOGETHER};

mod frame_times;
mod scheduler;
mod speech;

pub use frame_times::{FrameTimes, FRAME_SECONDS_BUCKETS};
use scheduler::{measure_rtf, measure_rtf_together, schedule};
pub use speech::{Speaker, SpeechHandle, SPEECH_RING_FRAMES};

/// 40 ms, the duration of one frame.
pub const FRAME_MS: f32 = 40.0;

/// Errors of the streaming engine.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error(
        "server busy: all {capacity} stream(s) this machine can sustain in real time are in use"
    )]
    Busy { capacity: usize },
    #[error(
        "this machine generates one stream at {:.2}× real time (measured real-time factor \
         {rtf:.2}), so it would stutter: no stream is admitted unless stuttering is allowed \
         (--allow-stutter)",
        1.0 / rtf
    )]
    TooSlow { rtf: f32 },
    #[error("the control queue is full; the engine is not keeping up")]
    ControlQueueFull,
    #[error("the engine has stopped")]
    Stopped,
}

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Worker threads for the kernels (the scheduler thread is one of them).
    pub threads: usize,
    /// Sequential or two overlapping stages (one frame more latency).
    pub stages: Stages,
    /// Threads of the LM stage when two-stage (default: half).
    pub lm_threads: Option<usize>,
    /// Upper bound on concurrent streams; `None` = as many as measured real-time capacity.
    pub max_sessions: Option<usize>,
    /// Frames generated to measure the real-time factor at start-up (0 = skip; then
    /// the capacity is `max_sessions` or 1).
    pub calibration_frames: usize,
    /// Admit streams even when the calibration measures a real-time factor above 1
    /// (they will underrun); `false` refuses them with [`StreamError::TooSlow`].
    pub allow_stutter: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        let threads = thread::available_parallelism().map_or(1, |n| n.get());
        EngineConfig {
            threads,
            stages: Stages::auto(threads),
            lm_threads: None,
            max_sessions: None,
            calibration_frames: 8,
            allow_stutter: false,
        }
    }
}

/// Per-stream settings.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    pub seed: u64,
    /// How far generation may run ahead of playback, in 40 ms frames (default 5 = 200 ms).
    pub buffer_frames: usize,
    /// Controls applied before the first frame.
    pub initial: Vec<Control>,
    /// Also tee every frame into a recording queue (see [`StreamHandle::take_recorder`]).
    pub record: bool,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            seed: rill_mrt2::DEFAULT_SEED,
            buffer_frames: 5,
            initial: Vec::new(),
            record: false,
        }
    }
}

/// Live counters of one stream (updated by the scheduler and the consumer).
#[derive(Debug, Default)]
pub struct StreamStats {
    /// Frames generated.
    pub frames: AtomicU64,
    /// Reads that found less audio than asked for.
    pub underruns: AtomicU64,
    /// Recent generation time per frame (ms, f32 bits, moving average).
    gen_ms: AtomicU32,
    /// Non-finite samples replaced by silence.
    pub nonfinite: AtomicU64,
    /// Controls that could not be applied.
    pub errors: AtomicU64,
    /// Frames dropped from the recording queue because the writer fell behind.
    pub record_dropped: AtomicU64,
    /// The engine hit an internal error (a panic) serving this stream and
    /// dropped it; no more audio will come.
    pub failed: AtomicBool,
}

impl StreamStats {
    /// Recent generation time per frame, in ms.
    pub fn gen_ms(&self) -> f32 {
        f32::from_bits(self.gen_ms.load(Ordering::Relaxed))
    }

    /// Generation time / audio time (< 1 keeps up with real time).
    pub fn rtf(&self) -> f32 {
        self.gen_ms() / FRAME_MS
    }

    fn record_gen(&self, ms: f32) {
        let old = self.gen_ms();
        let new = if self.frames.load(Ordering::Relaxed) <= 1 {
            ms
        } else {
            0.9 * old + 0.1 * ms
        };
        self.gen_ms.store(new.to_bits(), Ordering::Relaxed);
    }
}

enum Msg {
    Control(Control),
    Snapshot(Sender<Snapshot>),
    /// Test hook: panic while serving this stream's next frame.
    #[cfg(feature = "fault-injection")]
    InjectPanic,
}

/// What the scheduler owns per stream.
struct Slot {
    generator: Generator,
    msgs: Receiver<Msg>,
    audio: rtrb::Producer<i16>,
    record: Option<rtrb::Producer<i16>>,
    stats: Arc<StreamStats>,
    closed: Arc<AtomicBool>,
    /// Test hook: the next step panics.
    #[cfg(feature = "fault-injection")]
    panic_next: bool,
}

struct Shared {
    lm: Arc<Mrt2>,
    codec: Arc<Codec>,
    config: EngineConfig,
    register: Sender<Slot>,
    /// Speeches for the scheduler ([`Speaker::speak`]).
    speeches: Sender<speech::SpeechJob>,
    /// To wake the scheduler when a speech arrives.
    scheduler_thread: OnceLock<thread::Thread>,
    stop: AtomicBool,
    active: AtomicUsize,
    capacity: usize,
    rtf: f32,
    /// The calibration measured a real-time factor above 1 and stuttering is not
    /// allowed: every stream is refused.
    too_slow: bool,
    /// How long each served frame took.
    frame_times: FrameTimes,
    /// Test hook: the next frame served, of any stream, panics inside a pool task.
    #[cfg(feature = "fault-injection")]
    panic_in_pool: AtomicBool,
    /// Test hook: the scheduler pauses after draining controls, as a preempted
    /// thread would, before it picks the stream to serve.
    #[cfg(feature = "fault-injection")]
    preempt_after_drain: AtomicBool,
}

/// The real-time factor up to which the calibrated streams are admitted (10 %
/// headroom).
const ADMIT_RTF: f32 = 0.9;

/// How many streams to admit after a calibration measured `rtf` (0 = not
/// measured), and whether to refuse all of them as too slow.
fn admission(config: &EngineConfig, rtf: f32) -> (usize, bool) {
    let measured = if rtf > 0.0 {
        ((ADMIT_RTF / rtf).floor() as usize).max(1)
    } else {
        1
    };
    let capacity = match (config.max_sessions, config.calibration_frames) {
        (Some(m), 0) => m.max(1),
        (Some(m), _) => m.max(1).min(measured),
        (None, _) => measured,
    };
    (capacity, rtf > 1.0 && !config.allow_stutter)
}

/// The streaming engine (see the module docs).
pub struct Engine {
    shared: Arc<Shared>,
    scheduler: Option<JoinHandle<()>>,
}

impl Engine {
    /// Starts the scheduler thread; measures the real-time capacity unless disabled.
    /// An error only if the OS refuses the scheduler thread.
    pub fn start(
        lm: Arc<Mrt2>,
        codec: Arc<Codec>,
        config: EngineConfig,
    ) -> std::io::Result<Engine> {
        let pool = StagePools::new(config.stages, config.threads, config.lm_threads);
        let mut rtf = if config.calibration_frames > 0 {
            measure_rtf(&lm, &codec, &pool, config.calibration_frames)
        } else {
            0.0
        };
        if rtf > 1.0 && !config.allow_stutter {
            // Before refusing every stream, measure again over four times as many
            // frames: on a noisy 2-core host one short measurement swings 0.8–1.3
            // (docs/deployment.md), and one unlucky moment should not refuse a
            // machine that keeps up.
            rtf = measure_rtf(&lm, &codec, &pool, 4 * config.calibration_frames);
        }
        let (mut capacity, too_slow) = admission(&config, rtf);
        // Streams that have room at once are stepped together (one weight read for
        // their language models): more may fit than one stream's time says.
        if config.calibration_frames > 0 && !too_slow {
            for k in capacity + 1..=MAX_TOGETHER {
                if config.max_sessions.is_some_and(|m| k > m) {
                    break;
                }
                let rtf_k = measure_rtf_together(&lm, &codec, &pool, k, config.calibration_frames);
                if rtf_k > ADMIT_RTF {
                    break;
                }
                capacity = k;
            }
        }
        let (tx, rx) = bounded(64);
        let (speech_tx, speech_rx) = bounded(64);
        let shared = Arc::new(Shared {
            lm,
            codec,
            config,
            register: tx,
            speeches: speech_tx,
            scheduler_thread: OnceLock::new(),
            stop: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            capacity,
            rtf,
            too_slow,
            frame_times: FrameTimes::default(),
            #[cfg(feature = "fault-injection")]
            panic_in_pool: AtomicBool::new(false),
            #[cfg(feature = "fault-injection")]
            preempt_after_drain: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let scheduler = thread::Builder::new()
            .name("rill-scheduler".into())
            .spawn(move || schedule(&s, &pool, &rx, &speech_rx))?;
        let _ = shared.scheduler_thread.set(scheduler.thread().clone());
        Ok(Engine {
            shared,
            scheduler: Some(scheduler),
        })
    }

    /// Streams this engine admits at once (0 when it refuses every stream as
    /// [`Engine::too_slow`]).
    pub fn capacity(&self) -> usize {
        if self.shared.too_slow {
            0
        } else {
            self.shared.capacity
        }
    }

    /// The measured real-time factor when it is above 1 and stuttering is not
    /// allowed: every [`Engine::open`] is refused with [`StreamError::TooSlow`].
    pub fn too_slow(&self) -> Option<f32> {
        self.shared.too_slow.then_some(self.shared.rtf)
    }

    /// Real-time factor of one stream measured at start-up (0 if not measured).
    pub fn measured_rtf(&self) -> f32 {
        self.shared.rtf
    }

    /// How long each frame served so far took (every stream).
    pub fn frame_times(&self) -> &FrameTimes {
        &self.shared.frame_times
    }

    /// Worker threads of the engine's pools (the scheduler thread is one of them).
    pub fn threads(&self) -> usize {
        self.shared.config.threads.max(1)
    }

    /// Streams currently open.
    pub fn active(&self) -> usize {
        self.shared.active.load(Ordering::Acquire)
    }

    /// Test hook: the next frame the scheduler serves panics inside a worker-pool
    /// task, as a kernel bug would.
    #[cfg(feature = "fault-injection")]
    #[doc(hidden)]
    pub fn inject_panic_in_pool(&self) {
        self.shared.panic_in_pool.store(true, Ordering::Release);
    }

    /// Test hook: from now on the scheduler pauses 3 ms between draining the
    /// control queues and picking the next stream, as if preempted there.
    #[cfg(feature = "fault-injection")]
    #[doc(hidden)]
    pub fn inject_preemption_after_drain(&self) {
        self.shared
            .preempt_after_drain
            .store(true, Ordering::Relaxed);
    }

    /// Opens a stream, or refuses with [`StreamError::Busy`] beyond capacity, or
    /// [`StreamError::TooSlow`] when no stream would keep up.
    pub fn open(&self, config: StreamConfig) -> Result<StreamHandle, StreamError> {
        if let Some(rtf) = self.too_slow() {
            return Err(StreamError::TooSlow { rtf });
        }
        let cap = self.shared.capacity;
        self.shared
            .active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| {
                (a < cap).then_some(a + 1)
            })
            .map_err(|_| StreamError::Busy { capacity: cap })?;
        let pool = StagePools::new(Stages::Sequential, 1, None);
        let mut generator = Generator::new(
            self.shared.lm.clone(),
            self.shared.codec.clone(),
            config.seed,
            &pool,
        );
        for c in config.initial {
            // Initial controls never hold snapshots of another model.
            let _ = generator.apply(c);
        }
        let frames = config.buffer_frames.max(1);
        let (audio_tx, audio_rx) = rtrb::RingBuffer::new(frames * FRAME_PCM);
        let (record_tx, record_rx) = if config.record {
            // The recorder may lag the player by up to ~5 s.
            let (a, b) = rtrb::RingBuffer::new(125 * FRAME_PCM);
            (Some(a), Some(b))
        } else {
            (None, None)
        };
        let (msg_tx, msg_rx) = bounded(256);
        let stats = Arc::new(StreamStats::default());
        let closed = Arc::new(AtomicBool::new(false));
        let slot = Slot {
            generator,
            msgs: msg_rx,
            audio: audio_tx,
            record: record_tx,
            stats: stats.clone(),
            closed: closed.clone(),
            #[cfg(feature = "fault-injection")]
            panic_next: false,
        };
        if self.shared.register.send(slot).is_err() {
            self.shared.active.fetch_sub(1, Ordering::AcqRel);
            return Err(StreamError::Stopped);
        }
        Ok(StreamHandle {
            msgs: msg_tx,
            audio: audio_rx,
            recorder: record_rx,
            stats,
            closed,
            shared: self.shared.clone(),
            capacity_frames: frames,
        })
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(h) = self.scheduler.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// One stream as seen by its consumer.
pub struct StreamHandle {
    msgs: Sender<Msg>,
    audio: rtrb::Consumer<i16>,
    recorder: Option<rtrb::Consumer<i16>>,
    pub stats: Arc<StreamStats>,
    closed: Arc<AtomicBool>,
    shared: Arc<Shared>,
    capacity_frames: usize,
}

/// A cloneable sender of controls for one stream (for MIDI callbacks, UI threads)
/// while the [`StreamHandle`] itself feeds the audio device.
#[derive(Clone)]
pub struct StreamController {
    msgs: Sender<Msg>,
    pub stats: Arc<StreamStats>,
}

impl StreamController {
    /// Queues a control for the next frame boundary.
    pub fn send(&self, c: Control) -> Result<(), StreamError> {
        send(&self.msgs, c)
    }
}

fn send(q: &Sender<Msg>, c: Control) -> Result<(), StreamError> {
    q.try_send(Msg::Control(c)).map_err(|e| match e {
        TrySendError::Full(_) => StreamError::ControlQueueFull,
        TrySendError::Disconnected(_) => StreamError::Stopped,
    })
}

impl StreamHandle {
    /// A control sender usable from other threads.
    pub fn controller(&self) -> StreamController {
        StreamController {
            msgs: self.msgs.clone(),
            stats: self.stats.clone(),
        }
    }

    /// Queues a control for the next frame boundary.
    pub fn send(&self, c: Control) -> Result<(), StreamError> {
        send(&self.msgs, c)
    }

    /// Whether the engine dropped this stream after an internal error; no more
    /// audio will come (tell the listener, then close).
    pub fn failed(&self) -> bool {
        self.stats.failed.load(Ordering::Acquire)
    }

    /// Test hook: this stream's next frame panics on the scheduler thread.
    #[cfg(feature = "fault-injection")]
    #[doc(hidden)]
    pub fn inject_panic(&self) {
        let _ = self.msgs.try_send(Msg::InjectPanic);
    }

    /// The stream's complete state at the next frame boundary (blocks until then).
    pub fn snapshot(&self, timeout: Duration) -> Result<Snapshot, StreamError> {
        let (tx, rx) = bounded(1);
        self.msgs
            .try_send(Msg::Snapshot(tx))
            .map_err(|_| StreamError::ControlQueueFull)?;
        rx.recv_timeout(timeout).map_err(|_| StreamError::Stopped)
    }

    /// Audio buffered ahead of playback, in ms.
    pub fn buffered_ms(&self) -> f32 {
        self.audio.slots() as f32 / FRAME_PCM as f32 * FRAME_MS
    }

    /// The bound on [`StreamHandle::buffered_ms`].
    pub fn capacity_ms(&self) -> f32 {
        self.capacity_frames as f32 * FRAME_MS
    }

    /// Pops one whole frame (3840 interleaved samples) if one is ready; otherwise
    /// counts an underrun and returns false.
    pub fn read_frame(&mut self, out: &mut [i16]) -> bool {
        debug_assert_eq!(out.len(), FRAME_PCM);
        match self.audio.read_chunk(FRAME_PCM) {
            Ok(chunk) => {
                let (a, b) = chunk.as_slices();
                out[..a.len()].copy_from_slice(a);
                out[a.len()..].copy_from_slice(b);
                chunk.commit_all();
                true
            }
            Err(_) => {
                self.stats.underruns.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Fills `out` (interleaved stereo f32) with as much audio as is ready and the
    /// rest with silence, counting an underrun if it ran short. For device callbacks.
    pub fn read_f32(&mut self, out: &mut [f32]) {
        let n = self.audio.slots().min(out.len());
        if let Ok(chunk) = self.audio.read_chunk(n) {
            let (a, b) = chunk.as_slices();
            for (o, &s) in out.iter_mut().zip(a.iter().chain(b)) {
                *o = s as f32 / 32768.0;
            }
            chunk.commit_all();
        }
        if n < out.len() {
            out[n..].fill(0.0);
            self.stats.underruns.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The recording queue (once), if the stream was opened with `record`.
    pub fn take_recorder(&mut self) -> Option<rtrb::Consumer<i16>> {
        self.recorder.take()
    }
}

impl Drop for StreamHandle {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        self.shared.active.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_follows_the_measurement_and_the_stutter_policy() {
        let config = |max_sessions, calibration_frames, allow_stutter| EngineConfig {
            max_sessions,
            calibration_frames,
            allow_stutter,
            ..EngineConfig::default()
        };
        // Not measured: the given capacity, never refused.
        assert_eq!(admission(&config(Some(3), 0, false), 0.0), (3, false));
        assert_eq!(admission(&config(None, 0, false), 0.0), (1, false));
        // Measured: 90 % of the machine, at most the cap.
        assert_eq!(admission(&config(None, 8, false), 0.29), (3, false));
        assert_eq!(admission(&config(Some(2), 8, false), 0.29), (2, false));
        assert_eq!(admission(&config(None, 8, false), 0.95), (1, false));
        // Slower than real time: refused unless stuttering is allowed.
        assert_eq!(admission(&config(None, 8, false), 1.2), (1, true));
        assert_eq!(admission(&config(None, 8, true), 1.2), (1, false));
    }
}
