//! The plugin's core without a host ([`rill_plugin::bridge`]): a bounce (offline)
//! equals the generator run directly, sample for sample, behind the reported
//! latency, whatever the block sizes; the audio callback allocates nothing and
//! never waits for a model that is too slow (silence, counted underruns); a
//! checkpoint that cannot be loaded plays silence and says why; a style preset
//! (upstream's codes, or a text through MusicCoCa) plays as its codes do.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rill_plugin::bridge::{
    self, AudioSide, ModelConfig, ModelState, ModelThread, Note, Settings, Timeline, FRAME_SAMPLES,
    LATENCY_SAMPLES,
};
use rill_plugin::style::{Source, Style, PRESETS};
use rill_stream::Control;

#[allow(dead_code)]
mod common;
use common::CHORD;

/// Counts the allocations of threads that set [`GUARD`] (the audio callback's).
struct GuardedAlloc;

thread_local! {
    static GUARD: Cell<bool> = const { Cell::new(false) };
}
static GUARDED_ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

fn note_allocation() {
    if GUARD.with(Cell::get) {
        GUARDED_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call to the system allocator; only counts them.
unsafe impl std::alloc::GlobalAlloc for GuardedAlloc {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { std::alloc::System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: GuardedAlloc = GuardedAlloc;

fn start(slow_frame: Option<Duration>) -> (AudioSide, ModelThread) {
    start_at(48_000, slow_frame)
}

fn start_at(rate: u32, slow_frame: Option<Duration>) -> (AudioSide, ModelThread) {
    start_with(rate, slow_frame, Settings::default())
}

fn start_with(rate: u32, slow_frame: Option<Duration>, s: Settings) -> (AudioSide, ModelThread) {
    start_full(rate, slow_frame, s, None)
}

fn start_full(
    rate: u32,
    slow_frame: Option<Duration>,
    s: Settings,
    musiccoca: Option<std::path::PathBuf>,
) -> (AudioSide, ModelThread) {
    bridge::start(
        Box::new(|| Ok(common::loaded())),
        Arc::new(s),
        ModelConfig {
            timeline: Timeline::at(rate).unwrap(),
            threads: 2,
            musiccoca,
            slow_frame,
        },
    )
    .unwrap()
}

/// `frames` frames of the generator run directly with the chord held from the
/// first frame: `rill generate --notes 60,64,67`'s samples, as floats.
fn reference(frames: usize) -> Vec<f32> {
    common::reference_with(frames, &Settings::default())
}

/// Renders `samples` per channel in blocks cycling through `blocks`, the chord
/// held from the first sample; interleaved stereo.
fn render(audio: &mut AudioSide, samples: usize, blocks: &[usize], wait: bool) -> Vec<f32> {
    let (mut l, mut r) = (vec![0f32; 4096], vec![0f32; 4096]);
    let mut out = Vec::with_capacity(2 * samples);
    let mut i = 0;
    while out.len() < 2 * samples {
        let n = blocks[i % blocks.len()].min(samples - out.len() / 2);
        if i == 0 {
            for p in CHORD {
                audio.note(0, Note::On(p));
            }
        }
        audio.render(&mut l[..n], &mut r[..n], wait);
        for k in 0..n {
            out.push(l[k]);
            out.push(r[k]);
        }
        i += 1;
    }
    out
}

#[test]
fn a_bounce_is_the_generators_stream_behind_the_latency() {
    let frames = 30;
    let want = reference(frames);
    let latency = LATENCY_SAMPLES as usize;
    for blocks in [&[512usize][..], &[333, 1920, 7, 4096]] {
        let (mut audio, model) = start(None);
        let got = render(&mut audio, latency + frames * FRAME_SAMPLES, blocks, true);
        assert!(
            got[..2 * latency].iter().all(|&s| s == 0.0),
            "silence for the latency"
        );
        assert!(
            got[2 * latency..] == want[..],
            "blocks {blocks:?}: the bounce differs from the generator"
        );
        assert_eq!(model.underruns(), 0);
        assert_eq!(model.state(), ModelState::Ready);
    }
}

#[test]
fn at_44_1_khz_a_bounce_is_the_generators_stream_resampled() {
    let frames = 20;
    // Resampled whole, with frames to spare: the stream's tail is not flushed.
    let whole = rill_io::resample(&reference(frames + 4), 48_000, 44_100, 2).unwrap();
    let (mut audio, model) = start_at(44_100, None);
    let t = model.timeline();
    assert_eq!(t.frame, 1764);
    assert!(
        t.latency > 4 * 1764,
        "the resampler's lag is part of the latency"
    );
    let got = render(&mut audio, t.latency + frames * t.frame, &[441, 2048], true);
    let first = got.iter().position(|&s| s != 0.0).unwrap_or(got.len()) / 2;
    let want_first = whole.iter().position(|&s| s != 0.0).unwrap_or(whole.len()) / 2;
    assert_eq!(
        first,
        t.latency + want_first,
        "where the sound starts ({t:?}, reference {want_first})"
    );
    let got = &got[2 * t.latency..];
    let worst = got
        .iter()
        .zip(&whole)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    // Streamed and whole resampling are the same arithmetic (rill_io's test): a
    // difference would be a misaligned timeline.
    assert!(worst < 1e-6, "largest difference {worst}");
    assert!(model.underruns() == 0);
    // Rates the 40 ms frames do not divide are refused with the reason.
    let e = Timeline::at(44_101).unwrap_err();
    assert!(e.contains("multiple of 25 Hz"), "{e}");
}

#[test]
fn the_parameters_reach_the_first_frame() {
    let settings = Settings {
        style: Style::Codes([660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]),
        temperature: 0.9,
        top_k: 64,
        drums: Some(true),
        seed: 7,
        cfg: rill_mrt2::conditioning::CfgScales {
            musiccoca: 4.0,
            ..Default::default()
        },
    };
    let frames = 12;
    let want = common::reference_with(frames, &settings);
    assert!(want != reference(frames), "the settings change the stream");
    let (mut audio, _model) = start_with(48_000, None, settings);
    let latency = LATENCY_SAMPLES as usize;
    let got = render(&mut audio, latency + frames * FRAME_SAMPLES, &[512], true);
    assert!(got[2 * latency..] == want[..]);
}

/// Settings a test turns like a knob between blocks.
struct Knobs(std::sync::Mutex<Settings>);

impl bridge::SettingsSource for Knobs {
    fn settings(&self) -> Settings {
        *self.0.lock().unwrap()
    }
}

#[test]
fn a_parameter_change_reaches_the_next_frame_boundary() {
    let knobs = Arc::new(Knobs(std::sync::Mutex::new(Settings::default())));
    let (mut audio, _model) = bridge::start(
        Box::new(|| Ok(common::loaded())),
        knobs.clone(),
        ModelConfig {
            timeline: Timeline::at(48_000).unwrap(),
            threads: 2,
            musiccoca: None,
            slow_frame: None,
        },
    )
    .unwrap();
    let latency = LATENCY_SAMPLES as usize;
    let frames = 14;
    let (mut l, mut r) = (vec![0f32; 700], vec![0f32; 700]);
    let mut got = Vec::new();
    let mut pos = 0;
    let mut changed_at = None;
    while pos < latency + frames * FRAME_SAMPLES {
        if pos == 0 {
            for p in CHORD {
                audio.note(0, Note::On(p));
            }
        }
        if changed_at.is_none() && pos >= 5 * FRAME_SAMPLES {
            // Mid-stream, between two frame boundaries.
            let mut k = knobs.0.lock().unwrap();
            k.style = Style::Codes([660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]);
            k.temperature = 0.8;
            changed_at = Some(pos);
        }
        audio.render(&mut l, &mut r, true);
        for i in 0..700 {
            got.push(l[i]);
            got.push(r[i]);
        }
        pos += 700;
    }
    // The change reaches the frame that starts at or after the block it came with.
    let boundary = changed_at.unwrap().div_ceil(FRAME_SAMPLES);
    let (mut g, pools) = common::chord_generator(&Settings::default());
    let mut want = Vec::new();
    for f in 0..frames {
        if f == boundary {
            g.apply(Control::Style(common::codes(knobs.0.lock().unwrap().style)))
                .unwrap();
            g.apply(Control::Temperature(0.8)).unwrap();
        }
        common::next_frame(&mut g, &pools, &mut want);
    }
    let got = &got[2 * latency..2 * latency + want.len()];
    assert!(
        got == &want[..],
        "the change did not land on frame {boundary}"
    );
    assert!(want != reference(frames), "the change changes the stream");
}

#[test]
fn a_restart_plays_the_stream_from_its_beginning_again() {
    let frames = 12;
    let want = reference(frames);
    let latency = LATENCY_SAMPLES as usize;
    let (mut audio, _model) = start(None);
    let first = render(&mut audio, latency + frames * FRAME_SAMPLES, &[700], true);
    // Mid-stream, with more notes queued for the old stream than it played.
    audio.note(5, Note::On(72));
    audio.restart();
    let second = render(&mut audio, latency + frames * FRAME_SAMPLES, &[512], true);
    assert!(first[2 * latency..] == want[..], "the first bounce");
    assert!(
        second[2 * latency..] == want[..],
        "the bounce after the restart"
    );
}

#[test]
fn the_audio_callback_allocates_nothing_and_never_waits_for_a_slow_model() {
    // A model at 250 ms per 40 ms frame: hopelessly slow.
    let (mut audio, model) = start(Some(Duration::from_millis(250)));
    let (mut l, mut r) = (vec![0f32; 512], vec![0f32; 512]);
    while model.state() == ModelState::Loading {
        std::thread::sleep(Duration::from_millis(10));
    }
    let blocks = 400; // 4.3 s of audio at 512 samples
    let mut sounding = 0;
    GUARD.with(|g| g.set(true));
    for i in 0..blocks {
        if i == 0 {
            for p in CHORD {
                audio.note(0, Note::On(p));
            }
        }
        if i == 200 {
            audio.note(100, Note::AllOff);
        }
        audio.render(&mut l, &mut r, false);
        if l.iter().any(|&s| s != 0.0) {
            sounding += 1;
        }
    }
    GUARD.with(|g| g.set(false));
    assert_eq!(
        GUARDED_ALLOCATIONS.load(Ordering::Relaxed),
        0,
        "the audio callback allocated"
    );
    // The callback ran ahead of the model: it did not wait for it. Made within 4.3 s
    // of callbacks would be 107 frames; the model made a handful.
    let made = model.frames();
    assert!(
        made < (blocks * 512 / FRAME_SAMPLES) as u64 / 2,
        "the model made {made} frames: the callback waited for it"
    );
    assert!(model.underruns() > 0, "the dry ring was not counted");
    assert!(sounding < blocks, "silence where the ring ran dry");
}

#[test]
fn a_checkpoint_that_cannot_load_plays_silence_and_says_why() {
    let missing = std::path::PathBuf::from("/nonexistent/rill/checkpoint.safetensors");
    let (mut audio, model) = bridge::start(
        rill_plugin::load::loader(Some(missing)),
        Arc::new(Settings::default()),
        ModelConfig {
            timeline: Timeline::at(48_000).unwrap(),
            threads: 1,
            musiccoca: None,
            slow_frame: None,
        },
    )
    .unwrap();
    let (mut l, mut r) = (vec![1f32; 256], vec![1f32; 256]);
    // Offline, the callback waits for loading to end, then plays silence.
    audio.note(0, Note::On(60));
    audio.render(&mut l, &mut r, true);
    assert!(l.iter().chain(&r).all(|&s| s == 0.0));
    match model.state() {
        ModelState::Failed(why) => {
            assert!(why.contains("does not exist"), "{why}");
            assert!(why.contains("RILL_CHECKPOINT"), "{why}");
        }
        other => panic!("loading a missing checkpoint: {other:?}"),
    }
}

/// A bounce with `style` equals the generator with `codes`.
fn bounce_equals(style: Style, codes: [u16; 12], musiccoca: Option<std::path::PathBuf>) {
    let frames = 8;
    let settings = Settings {
        style,
        ..Settings::default()
    };
    let want = common::reference_with(
        frames,
        &Settings {
            style: Style::Codes(codes),
            ..settings
        },
    );
    assert!(want != reference(frames), "the style changes the stream");
    let (mut audio, model) = start_full(48_000, None, settings, musiccoca);
    let latency = LATENCY_SAMPLES as usize;
    let got = render(&mut audio, latency + frames * FRAME_SAMPLES, &[512], true);
    assert_eq!(model.style_error(), None);
    assert!(got[2 * latency..] == want[..]);
}

#[test]
fn upstreams_piano_preset_plays_its_codes() {
    let Source::Codes(piano) = PRESETS[0].source else {
        panic!("preset 0 is upstream's piano codes")
    };
    assert_eq!(
        piano,
        [325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]
    );
    bounce_equals(Style::Preset(0), piano, None);
}

#[test]
fn a_text_preset_plays_musiccocas_codes_for_its_text() {
    // Random-weight MusicCoCa (the server's style tests use the same one).
    let dir = rill_musiccoca::synth::random_assets_dir(&rill_testkit::rill_cache(), 1).unwrap();
    let (i, text) = PRESETS
        .iter()
        .enumerate()
        .find_map(|(i, p)| match p.source {
            Source::Text(t) => Some((i, t)),
            Source::Codes(_) => None,
        })
        .unwrap();
    // Upstream's embed_style(text, mapper seed 0) then tokenize_style, as `rill
    // generate --prompt TEXT` does.
    let m = rill_musiccoca::StyleModel::load(&dir, rill_kernels::isa::active()).unwrap();
    let pool = rill_kernels::Pool::new(2);
    let e = m
        .embed_text(text, rill_musiccoca::Mapper::Seed(0), &pool)
        .unwrap();
    let codes = m.tokenize(&e, &pool).unwrap().tokens;
    drop(m);
    // Offline, the first frame waits for MusicCoCa to load and encode the text.
    bounce_equals(Style::Preset(i), codes, Some(dir));
}

#[test]
fn without_musiccoca_a_text_preset_says_why_and_the_music_goes_on() {
    let i = PRESETS
        .iter()
        .position(|p| matches!(p.source, Source::Text(_)))
        .unwrap();
    let settings = Settings {
        style: Style::Preset(i),
        ..Settings::default()
    };
    let missing = std::env::temp_dir().join("rill-plugin-test-no-musiccoca");
    let (mut audio, model) = start_full(48_000, None, settings, Some(missing));
    let frames = 6;
    let latency = LATENCY_SAMPLES as usize;
    let got = render(&mut audio, latency + frames * FRAME_SAMPLES, &[512], true);
    // The style stays masked: the default stream.
    assert!(got[2 * latency..] == reference(frames)[..]);
    let why = model.style_error().expect("the failure is reported");
    assert!(why.contains("MusicCoCa"), "{why}");
}
