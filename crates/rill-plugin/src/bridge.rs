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

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rill_mrt2::conditioning::CfgScales;
use rill_mrt2::Mrt2;
use rill_spectrostream::Codec;
use rill_stream::{Control, Generator, StagePools, Stages, FRAME_PCM};

pub use crate::audio_side::AudioSide;
use crate::output::Output;
use crate::style::{Lookup, PresetCodes, Style};

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
pub(crate) enum Event {
    Note(Note),
    /// The parameters changed (the host's automation, or a knob).
    Settings(Settings),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Timed {
    /// The frame the event reaches.
    pub(crate) frame: u64,
    pub(crate) event: Event,
    /// The stream it belongs to (see [`AudioSide::restart`]).
    pub(crate) epoch: u64,
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
    /// Masked, the 12 MusicCoCa codes, or a preset.
    pub style: Style,
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
            style: Style::Masked,
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

pub(crate) const LOADING: u8 = 0;
pub(crate) const READY: u8 = 1;
const FAILED: u8 = 2;

/// State shared by both sides.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Host samples (per channel) whose notes have all been queued.
    pub(crate) watermark: AtomicU64,
    /// The callback renders offline (it waits for the model): frames follow the
    /// watermark exactly.
    pub(crate) offline: AtomicBool,
    pub(crate) state: AtomicU8,
    /// Why loading failed (read by the host's threads, never the audio thread).
    pub(crate) error: Mutex<String>,
    pub(crate) stop: AtomicBool,
    /// The stream the audio side asks for: bumped by [`AudioSide::restart`].
    pub(crate) epoch: AtomicU64,
    /// The stream the model thread runs (it has reset to it).
    pub(crate) running_epoch: AtomicU64,
    /// Samples the model pushed into the ring before it reset to `running_epoch`:
    /// the audio side drops them.
    pub(crate) stale_until: AtomicU64,
    pub(crate) underruns: AtomicU64,
    pub(crate) frames: AtomicU64,
    pub(crate) dropped_notes: AtomicU64,
    /// Why a style preset could not be had (empty: none failed).
    pub(crate) style_error: Arc<Mutex<String>>,
}

/// What the model thread loads.
pub struct Loaded {
    pub lm: Arc<Mrt2>,
    pub codec: Arc<Codec>,
    /// The checkpoint file, if any: MusicCoCa is looked for beside it.
    pub checkpoint: Option<PathBuf>,
}

/// Loads the model on the model thread.
pub type Loader = Box<dyn FnOnce() -> Result<Loaded, String> + Send>;

/// How the model thread runs.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// The host's timeline ([`Timeline::at`] its rate).
    pub timeline: Timeline,
    /// Worker threads of its pools.
    pub threads: usize,
    /// MusicCoCa's folder for the text presets (`None`: found as `rill` finds it).
    pub musiccoca: Option<PathBuf>,
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

    /// Why a style preset could not be had (MusicCoCa missing or failing).
    pub fn style_error(&self) -> Option<String> {
        let e = self
            .shared
            .style_error
            .lock()
            .map(|e| e.clone())
            .unwrap_or_else(|e| e.into_inner().clone());
        (!e.is_empty()).then_some(e)
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
        AudioSide::new(events_tx, audio_rx, Arc::clone(&shared), t, settings),
        ModelThread {
            shared,
            thread: Some(thread),
            timeline: t,
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
    let Loaded {
        lm,
        codec,
        checkpoint,
    } = match load() {
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
        let applied = Applied {
            settings: Settings {
                seed,
                ..Settings::default()
            },
            style: None,
        };
        (g, applied)
    };
    let (mut generator, mut applied) = fresh(first.seed);
    let mut presets = PresetCodes::new(
        config.musiccoca.clone(),
        checkpoint,
        Arc::clone(&shared.style_error),
    );
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
        // A text preset's codes: offline (a bounce) waited for, in real time as they come.
        let found = if shared.offline.load(Ordering::Acquire) {
            presets.wait(current.style, &shared.stop)
        } else {
            Some(presets.lookup(current.style))
        };
        let style = match found {
            Some(Lookup::Ready(codes)) => Some(codes),
            Some(_) => None, // Pending or failed: the style stays as it is.
            None => break,   // Stopped while MusicCoCa worked.
        };
        apply_settings(&mut generator, &mut applied, current, style);
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

/// What the generator runs with.
struct Applied {
    /// Every setting but the style.
    settings: Settings,
    /// The style's codes (`None`: masked).
    style: Option<[u16; 12]>,
}

/// Applies what changed between `applied` and `now` (each at this frame boundary);
/// `style`: the codes of `now`'s style, `None` to leave the style as it is.
fn apply_settings(
    g: &mut Generator,
    applied: &mut Applied,
    now: Settings,
    style: Option<Option<[u16; 12]>>,
) {
    let was = applied.settings;
    let mut controls = [None, None, None, None, None, None, None, None];
    if now.temperature != was.temperature {
        controls[0] = Some(Control::Temperature(now.temperature));
    }
    if now.top_k != was.top_k {
        controls[1] = Some(Control::TopK(now.top_k));
    }
    if now.cfg.musiccoca != was.cfg.musiccoca {
        controls[2] = Some(Control::CfgMusiccoca(now.cfg.musiccoca));
    }
    if now.cfg.notes != was.cfg.notes {
        controls[3] = Some(Control::CfgNotes(now.cfg.notes));
    }
    if now.cfg.drums != was.cfg.drums {
        controls[4] = Some(Control::CfgDrums(now.cfg.drums));
    }
    if now.drums != was.drums {
        controls[5] = Some(Control::Drums(now.drums));
    }
    if now.seed != was.seed {
        controls[6] = Some(Control::Seed(now.seed));
    }
    if let Some(codes) = style.filter(|c| *c != applied.style) {
        controls[7] = Some(Control::Style(codes));
        applied.style = codes;
    }
    for c in controls.into_iter().flatten() {
        // The parameters' ranges are inside the model's; a refused value changes
        // nothing.
        let _ = g.apply(c);
    }
    applied.settings = now;
}
