//! The plugin's two sides, written without any plugin API so that they can be
//! tested on their own:
//!
//! * the **model thread** ([`start`]) loads the checkpoint in the background, then
//!   runs a [`Generator`] one 40 ms frame at a time on its own worker pools and
//!   pushes the audio into a lock-free ring;
//! * the **audio side** ([`AudioSide`], called from the host's audio callback)
//!   queues the block's notes and parameter changes, then reads the ring. It allocates nothing, takes no
//!   lock and does no I/O; in real time a ring that runs dry plays silence and is
//!   counted as an underrun, never waited for; offline (a bounce) it waits for the
//!   model, so a bounce is complete and deterministic.
//!
//! Offline, timing is sample-exact on the host's timeline ([`Timeline`]): a note at
//! host sample `s` reaches the frame starting at the next frame boundary (`⌈s / F⌉`,
//! `F` the host's samples per 40 ms: 1920 at 48 kHz), and the model makes frame `f`
//! only once the audio side has queued every note before its start. In real time the
//! model works up to the latency ahead of the callback (its buffer against a slow
//! frame), and a note reaches the next frame it makes. The audio comes out
//! the timeline's latency later (reported to the host, which compensates), so a
//! stream rendered from the host's start is the same, sample for sample, as `rill
//! generate` with the same notes, seed and settings. At other rates the model's
//! 48 kHz frames are resampled on the model thread (`rill_io::StreamResampler`,
//! rubato's FFT resampler; its lag is added to the latency).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rill_mrt2::conditioning::CfgScales;
use rill_mrt2::Mrt2;
use rill_spectrostream::Codec;
use rill_stream::{Control, Generator, StagePools, Stages, FRAME_PCM};

/// Samples per channel of one 40 ms frame at 48 kHz.
pub const FRAME_SAMPLES: usize = FRAME_PCM / 2;
/// The model's rate.
pub const MODEL_RATE: u32 = 48_000;
/// Frames the audio lags the notes: room for the model to work ahead of the
/// callback (a frame takes ≈ 26 ms of a 2-core machine at int8).
pub const LATENCY_FRAMES: usize = 4;
/// The latency reported to the host at 48 kHz, in samples (160 ms); other rates add
/// the resampler's ([`Timeline::latency`]).
pub const LATENCY_SAMPLES: u32 = (LATENCY_FRAMES * FRAME_SAMPLES) as u32;

/// The host's timeline: its rate, samples per 40 ms frame and the latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeline {
    pub rate: u32,
    /// Host samples per frame (`rate / 25`).
    pub frame: usize,
    /// Host samples the audio lags the notes.
    pub latency: usize,
}

impl Timeline {
    /// The timeline at `rate` Hz: a rate the 40 ms frames divide (a multiple of
    /// 25 Hz: 44.1, 48, 88.2, 96, 192 kHz, …), else the reason.
    pub fn at(rate: u32) -> Result<Timeline, String> {
        if rate == 0 || !rate.is_multiple_of(25) {
            return Err(format!(
                "the host runs at {rate} Hz; rill needs a rate that is a multiple of 25 Hz \
                 (44.1, 48, 88.2 or 96 kHz)"
            ));
        }
        let lag = if rate == MODEL_RATE {
            0
        } else {
            rill_io::StreamResampler::new(MODEL_RATE, rate)
                .map_err(|e| e.to_string())?
                .max_lag()
        };
        let frame = (rate / 25) as usize;
        Ok(Timeline {
            rate,
            frame,
            latency: LATENCY_FRAMES * frame + lag,
        })
    }
}
/// Frames the ring holds.
const RING_FRAMES: usize = 16;
/// Note events queued between the sides.
const EVENT_CAPACITY: usize = 4096;

/// A note event from the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    On(u8),
    Off(u8),
    /// Every note released (a note-off for any key).
    AllOff,
}

/// What the audio side tells the model, for a frame.
#[derive(Debug, Clone, Copy)]
enum Event {
    Note(Note),
    /// The parameters changed (the host's automation, or a knob).
    Settings(Settings),
}

#[derive(Debug, Clone, Copy)]
struct Timed {
    /// The frame the event reaches.
    frame: u64,
    event: Event,
    /// The stream it belongs to (see [`AudioSide::restart`]).
    epoch: u64,
}

/// The values the model takes at each frame boundary (the plugin's parameters).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub temperature: f32,
    pub top_k: usize,
    pub cfg: CfgScales,
    /// Drums on / off / masked.
    pub drums: Option<bool>,
    /// A change gives the sampler a new key (the music continues).
    pub seed: u64,
    /// The 12 MusicCoCa codes, or `None`: style masked.
    pub style: Option<[u16; 12]>,
}

impl Default for Settings {
    /// `rill generate`'s defaults (upstream Python's).
    fn default() -> Self {
        let s = rill_mrt2::sampler::SamplingParams::default();
        Settings {
            temperature: s.temperature,
            top_k: s.top_k,
            cfg: CfgScales::default(),
            drums: None,
            seed: rill_mrt2::DEFAULT_SEED,
            style: None,
        }
    }
}

/// Where the audio side reads the settings at each block (the plugin's parameters,
/// read from atomics; it must not allocate or lock).
pub trait SettingsSource: Send + Sync {
    fn settings(&self) -> Settings;
}

impl SettingsSource for Settings {
    fn settings(&self) -> Settings {
        *self
    }
}

/// What the model thread is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelState {
    Loading,
    Ready,
    /// Loading failed; the plugin plays silence.
    Failed(String),
}

const LOADING: u8 = 0;
const READY: u8 = 1;
const FAILED: u8 = 2;

/// State shared by both sides.
#[derive(Debug, Default)]
struct Shared {
    /// Host samples (per channel) whose notes have all been queued.
    watermark: AtomicU64,
    /// The callback renders offline (it waits for the model): frames follow the
    /// watermark exactly.
    offline: AtomicBool,
    state: AtomicU8,
    /// Why loading failed (read by the host's threads, never the audio thread).
    error: Mutex<String>,
    stop: AtomicBool,
    /// The stream the audio side asks for: bumped by [`AudioSide::restart`].
    epoch: AtomicU64,
    /// The stream the model thread runs (it has reset to it).
    running_epoch: AtomicU64,
    /// Samples the model pushed into the ring before it reset to `running_epoch`:
    /// the audio side drops them.
    stale_until: AtomicU64,
    underruns: AtomicU64,
    frames: AtomicU64,
    dropped_notes: AtomicU64,
}

/// Loads the model on the model thread.
pub type Loader = Box<dyn FnOnce() -> Result<(Arc<Mrt2>, Arc<Codec>), String> + Send>;

/// How the model thread runs.
#[derive(Debug, Clone, Copy)]
pub struct ModelConfig {
    /// The host's timeline ([`Timeline::at`] its rate).
    pub timeline: Timeline,
    /// Worker threads of its pools.
    pub threads: usize,
    /// Test hook: sleep this long per frame, as a machine too slow would be.
    pub slow_frame: Option<Duration>,
}

/// The model thread; dropping it stops the thread and waits for it.
pub struct ModelThread {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    timeline: Timeline,
}

impl ModelThread {
    /// The timeline it runs on (its latency is the host's to compensate).
    pub fn timeline(&self) -> Timeline {
        self.timeline
    }

    pub fn state(&self) -> ModelState {
        state(&self.shared)
    }

    /// Underruns counted by the audio side so far.
    pub fn underruns(&self) -> u64 {
        self.shared.underruns.load(Ordering::Relaxed)
    }

    /// Frames the model has made.
    pub fn frames(&self) -> u64 {
        self.shared.frames.load(Ordering::Relaxed)
    }

    /// Note events the audio side could not queue (more than [`EVENT_CAPACITY`]
    /// ahead of the model).
    pub fn dropped_notes(&self) -> u64 {
        self.shared.dropped_notes.load(Ordering::Relaxed)
    }
}

fn state(shared: &Shared) -> ModelState {
    match shared.state.load(Ordering::Acquire) {
        LOADING => ModelState::Loading,
        READY => ModelState::Ready,
        _ => ModelState::Failed(
            shared
                .error
                .lock()
                .map(|e| e.clone())
                .unwrap_or_else(|e| e.into_inner().clone()),
        ),
    }
}

impl Drop for ModelThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the model thread (loading with `load` first) and returns both sides.
pub fn start(
    load: Loader,
    settings: Arc<dyn SettingsSource>,
    config: ModelConfig,
) -> std::io::Result<(AudioSide, ModelThread)> {
    let shared = Arc::new(Shared::default());
    let (events_tx, events_rx) = rtrb::RingBuffer::new(EVENT_CAPACITY);
    let t = config.timeline;
    let ring = 2 * (RING_FRAMES * t.frame + t.latency);
    let (audio_tx, audio_rx) = rtrb::RingBuffer::new(ring);
    let s = Arc::clone(&shared);
    let first = settings.settings();
    let thread = thread::Builder::new()
        .name("rill-plugin-model".into())
        .spawn(move || run_model(load, first, config, &s, events_rx, audio_tx))?;
    Ok((
        AudioSide {
            events: events_tx,
            audio: audio_rx,
            shared: Arc::clone(&shared),
            timeline: config.timeline,
            settings,
            sent: None,
            pos: 0,
            debt: 0,
            epoch: 0,
            popped: 0,
        },
        ModelThread {
            shared,
            thread: Some(thread),
            timeline: config.timeline,
        },
    ))
}

fn run_model(
    load: Loader,
    first: Settings,
    config: ModelConfig,
    shared: &Shared,
    mut events: rtrb::Consumer<Timed>,
    mut audio: rtrb::Producer<f32>,
) {
    let (lm, codec) = match load() {
        Ok(v) => v,
        Err(e) => {
            if let Ok(mut m) = shared.error.lock() {
                *m = e;
            }
            shared.state.store(FAILED, Ordering::Release);
            return;
        }
    };
    let timeline = config.timeline;
    let mut out = match Output::new(timeline) {
        Ok(o) => o,
        Err(e) => {
            if let Ok(mut m) = shared.error.lock() {
                *m = e;
            }
            shared.state.store(FAILED, Ordering::Release);
            return;
        }
    };
    let threads = config.threads.max(1);
    let pools = StagePools::new(Stages::auto(threads), threads, None);
    // A stream from its start: a fresh generator with the settings' seed.
    let fresh = |seed: u64| {
        let g = Generator::new(lm.clone(), codec.clone(), seed, &pools);
        let applied = Settings {
            seed,
            ..Settings::default()
        };
        (g, applied)
    };
    let (mut generator, mut applied) = fresh(first.seed);
    // The settings as of the last frame's events.
    let mut current = first;
    let mut pcm = vec![0i16; FRAME_PCM];
    let mut held: Option<Timed> = None;
    let mut frame = 0u64;
    let mut epoch = 0u64;
    // Samples pushed into the ring so far.
    let mut pushed = 0u64;
    shared.state.store(READY, Ordering::Release);
    while !shared.stop.load(Ordering::Acquire) {
        let asked = shared.epoch.load(Ordering::Acquire);
        if asked != epoch {
            // The host restarted the stream: from its start, on a new timeline
            // (the audio side reset the watermark before asking).
            (generator, applied) = fresh(current.seed);
            out.reset(timeline);
            epoch = asked;
            frame = 0;
            held = None;
            shared.stale_until.store(pushed, Ordering::Release);
            shared.running_epoch.store(epoch, Ordering::Release);
        }
        // Frame `frame` starts at host sample F·frame. Offline, every note at or
        // before it must be queued first (the watermark is past it): the bounce is
        // exact. In real time the model works up to the latency ahead of the
        // callback (its buffer), and a note reaches the next frame it makes.
        let watermark = shared.watermark.load(Ordering::Acquire);
        let start = frame * timeline.frame as u64;
        let due = if shared.offline.load(Ordering::Acquire) {
            watermark > start
        } else {
            watermark > 0 && start < watermark + timeline.latency as u64
        };
        if !due || audio.slots() < out.most_per_frame() {
            thread::sleep(Duration::from_micros(500));
            continue;
        }
        while let Some(e) = held.take().or_else(|| events.pop().ok()) {
            if e.epoch < epoch {
                continue; // A note of the stream before the restart.
            }
            if e.epoch > epoch || e.frame > frame {
                held = Some(e);
                break;
            }
            let c = match e.event {
                Event::Settings(now) => {
                    current = now;
                    continue;
                }
                Event::Note(Note::On(p)) => Control::NoteOn(p),
                Event::Note(Note::Off(p)) => Control::NoteOff(p),
                Event::Note(Note::AllOff) => Control::HeldNotes(Vec::new()),
            };
            // Pitches outside the pianoroll are refused by the generator and
            // change nothing.
            let _ = generator.apply(c);
        }
        apply_settings(&mut generator, &mut applied, current);
        let info = generator.step(&pools, &mut pcm);
        if let Some(d) = config.slow_frame {
            thread::sleep(d);
        }
        if info.decoded {
            pushed += out.push(&pcm, &mut audio) as u64;
            shared.frames.fetch_add(1, Ordering::Relaxed);
        }
        frame += 1;
    }
}

/// The model's frames on their way to the ring, resampled to the host's rate.
struct Output {
    /// Left and right resamplers (`None` at 48 kHz).
    resamplers: Option<[rill_io::StreamResampler; 2]>,
    /// A frame's channels, and their resampled audio.
    channels: [Vec<f32>; 2],
    resampled: [Vec<f32>; 2],
    most: usize,
}

impl Output {
    fn new(t: Timeline) -> Result<Output, String> {
        let make = || rill_io::StreamResampler::new(MODEL_RATE, t.rate).map_err(|e| e.to_string());
        let resamplers = if t.rate == MODEL_RATE {
            None
        } else {
            Some([make()?, make()?])
        };
        let lag = resamplers.as_ref().map_or(0, |r| r[0].max_lag());
        // Room for the most one frame can release (a frame and the resampler's
        // owed samples), reserved now: the per-frame path allocates nothing.
        let most = t.frame + lag + 1;
        Ok(Output {
            resamplers,
            channels: [
                Vec::with_capacity(FRAME_SAMPLES),
                Vec::with_capacity(FRAME_SAMPLES),
            ],
            resampled: [Vec::with_capacity(most), Vec::with_capacity(most)],
            most: 2 * most,
        })
    }

    /// Ring room one frame may need (interleaved samples).
    fn most_per_frame(&self) -> usize {
        self.most.max(FRAME_PCM)
    }

    /// Back to a stream's start (fresh resamplers).
    fn reset(&mut self, t: Timeline) {
        if let Ok(fresh) = Output::new(t) {
            self.resamplers = fresh.resamplers;
        }
    }

    /// Pushes one decoded frame (interleaved 16-bit at 48 kHz) into the ring at
    /// the host's rate; the samples pushed.
    fn push(&mut self, pcm: &[i16], ring: &mut rtrb::Producer<f32>) -> usize {
        let Some(rs) = self.resamplers.as_mut() else {
            return write(ring, pcm.iter().map(|&s| f32::from(s) / 32768.0), pcm.len());
        };
        for (c, ch) in self.channels.iter_mut().enumerate() {
            ch.clear();
            ch.extend(
                pcm.iter()
                    .skip(c)
                    .step_by(2)
                    .map(|&s| f32::from(s) / 32768.0),
            );
        }
        for ((r, ch), out) in rs.iter_mut().zip(&self.channels).zip(&mut self.resampled) {
            out.clear();
            // The rates were checked when the resampler was made.
            let _ = r.push(ch, out);
        }
        let [l, r] = &self.resampled;
        let n = l.len().min(r.len());
        write(
            ring,
            l[..n].iter().zip(&r[..n]).flat_map(|(&a, &b)| [a, b]),
            2 * n,
        )
    }
}

/// Writes `n` samples into a ring known to have room; the samples written.
fn write(ring: &mut rtrb::Producer<f32>, samples: impl Iterator<Item = f32>, n: usize) -> usize {
    let Ok(mut chunk) = ring.write_chunk(n) else {
        return 0;
    };
    let (a, b) = chunk.as_mut_slices();
    for (o, s) in a.iter_mut().chain(b.iter_mut()).zip(samples) {
        *o = s;
    }
    chunk.commit_all();
    n
}

/// Applies what changed between `applied` and `now` (each at this frame boundary).
fn apply_settings(g: &mut Generator, applied: &mut Settings, now: Settings) {
    if now == *applied {
        return;
    }
    let mut controls = [None, None, None, None, None, None, None, None];
    if now.temperature != applied.temperature {
        controls[0] = Some(Control::Temperature(now.temperature));
    }
    if now.top_k != applied.top_k {
        controls[1] = Some(Control::TopK(now.top_k));
    }
    if now.cfg.musiccoca != applied.cfg.musiccoca {
        controls[2] = Some(Control::CfgMusiccoca(now.cfg.musiccoca));
    }
    if now.cfg.notes != applied.cfg.notes {
        controls[3] = Some(Control::CfgNotes(now.cfg.notes));
    }
    if now.cfg.drums != applied.cfg.drums {
        controls[4] = Some(Control::CfgDrums(now.cfg.drums));
    }
    if now.drums != applied.drums {
        controls[5] = Some(Control::Drums(now.drums));
    }
    if now.seed != applied.seed {
        controls[6] = Some(Control::Seed(now.seed));
    }
    if now.style != applied.style {
        controls[7] = Some(Control::Style(now.style));
    }
    for c in controls.into_iter().flatten() {
        // The parameters' ranges are inside the model's; a refused value changes
        // nothing.
        let _ = g.apply(c);
    }
    *applied = now;
}

/// The audio callback's side (see the module docs).
pub struct AudioSide {
    events: rtrb::Producer<Timed>,
    audio: rtrb::Consumer<f32>,
    shared: Arc<Shared>,
    timeline: Timeline,
    settings: Arc<dyn SettingsSource>,
    /// The settings last queued for this stream.
    sent: Option<Settings>,
    /// Host samples rendered since the model became ready.
    pos: u64,
    /// Samples played as silence in an underrun, to skip when the audio comes
    /// (the stream stays on the host's timeline).
    debt: u64,
    /// The stream this side plays (see [`AudioSide::restart`]).
    epoch: u64,
    /// Ring samples read or dropped so far.
    popped: u64,
}

impl AudioSide {
    /// Queues a note at `offset` samples into the block about to be rendered.
    pub fn note(&mut self, offset: u32, note: Note) {
        let s = self.pos + u64::from(offset);
        let frame = s.div_ceil(self.timeline.frame as u64);
        self.queue(frame, Event::Note(note));
    }

    /// Queues `event` for `frame`; whether there was room.
    fn queue(&mut self, frame: u64, event: Event) -> bool {
        let timed = Timed {
            frame,
            event,
            epoch: self.epoch,
        };
        let queued = self.events.push(timed).is_ok();
        if !queued {
            self.shared.dropped_notes.fetch_add(1, Ordering::Relaxed);
        }
        queued
    }

    /// Starts the stream again from its beginning (the host's transport started,
    /// or it reset the plugin): a fresh generator with the current seed and
    /// settings, the notes queued from now on, the latency's silence first. Bounces
    /// from the host's start are therefore the same each time. Allocates nothing;
    /// the model thread does the work before its next frame.
    pub fn restart(&mut self) {
        // The watermark first: the model reads it after it sees the new epoch.
        self.shared.watermark.store(0, Ordering::Release);
        self.epoch += 1;
        self.shared.epoch.store(self.epoch, Ordering::Release);
        self.pos = 0;
        self.debt = 0;
        self.sent = None;
    }

    /// Whether the model runs this side's stream; drops what it made before.
    fn synced(&mut self, wait: bool) -> bool {
        loop {
            if self.shared.running_epoch.load(Ordering::Acquire) == self.epoch {
                break;
            }
            if !wait || self.shared.stop.load(Ordering::Acquire) {
                return false;
            }
            thread::sleep(Duration::from_micros(100));
        }
        let stale = self.shared.stale_until.load(Ordering::Acquire);
        while self.popped < stale {
            let n = (self.audio.slots() as u64).min(stale - self.popped) as usize;
            if n == 0 {
                break; // Pushed before the reset, so already visible: never here.
            }
            if let Ok(chunk) = self.audio.read_chunk(n) {
                chunk.commit_all();
            }
            self.popped += n as u64;
        }
        true
    }

    /// Renders one block into `left` and `right` (the same length). `wait`: offline,
    /// wait for the model (and for loading) instead of playing silence.
    pub fn render(&mut self, left: &mut [f32], right: &mut [f32], wait: bool) {
        let n = left.len().min(right.len());
        let mut st = self.shared.state.load(Ordering::Acquire);
        while wait && st == LOADING {
            thread::sleep(Duration::from_micros(200));
            st = self.shared.state.load(Ordering::Acquire);
        }
        if st != READY || !self.synced(wait) {
            // Loading or restarting (in real time), or failed: silence, and the
            // timeline waits.
            left.fill(0.0);
            right.fill(0.0);
            return;
        }
        // Parameter changes reach the next frame boundary, as notes do.
        let now = self.settings.settings();
        if self.sent != Some(now) {
            let frame = self.pos.div_ceil(self.timeline.frame as u64);
            if self.queue(frame, Event::Settings(now)) {
                self.sent = Some(now);
            }
        }
        self.shared.offline.store(wait, Ordering::Release);
        self.shared
            .watermark
            .store(self.pos + n as u64, Ordering::Release);
        // Host samples before the latency are silence; the rest come from the ring.
        let first = (self.timeline.latency as u64)
            .saturating_sub(self.pos)
            .min(n as u64) as usize;
        left[..first].fill(0.0);
        right[..first].fill(0.0);
        let want = n - first;
        self.skip_debt();
        if wait {
            while self.debt == 0 && self.audio.slots() < 2 * want {
                if self.shared.stop.load(Ordering::Acquire) {
                    break;
                }
                thread::sleep(Duration::from_micros(100));
            }
        }
        let have = if self.debt > 0 {
            0
        } else {
            (self.audio.slots() / 2).min(want)
        };
        if let Ok(chunk) = self.audio.read_chunk(2 * have) {
            let (a, b) = chunk.as_slices();
            let mut it = a.iter().chain(b);
            for i in first..first + have {
                left[i] = *it.next().unwrap_or(&0.0);
                right[i] = *it.next().unwrap_or(&0.0);
            }
            chunk.commit_all();
            self.popped += 2 * have as u64;
        }
        if have < want {
            left[first + have..n].fill(0.0);
            right[first + have..n].fill(0.0);
            self.debt += (want - have) as u64;
            self.shared.underruns.fetch_add(1, Ordering::Relaxed);
        }
        self.pos += n as u64;
    }

    /// Drops the audio that an underrun already played as silence.
    fn skip_debt(&mut self) {
        if self.debt == 0 {
            return;
        }
        let skip = (self.audio.slots() / 2).min(self.debt as usize);
        if let Ok(chunk) = self.audio.read_chunk(2 * skip) {
            chunk.commit_all();
            self.popped += 2 * skip as u64;
        }
        self.debt -= skip as u64;
    }
}
