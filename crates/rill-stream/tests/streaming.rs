//! The streaming core: controls apply at the next frame boundary, snapshot/restore
//! continues bit-identically, the buffer bound holds, admission control refuses
//! streams beyond capacity.

use std::time::{Duration, Instant};

use rill_stream::{
    Control, Engine, EngineConfig, Generator, Stages, StreamConfig, StreamError, StreamHandle,
    FRAME_PCM,
};

mod common;
use common::weights;

fn engine(max: usize) -> Engine {
    let (lm, codec) = weights();
    Engine::start(
        lm,
        codec,
        EngineConfig {
            threads: 2,
            stages: Stages::TwoStage,
            max_sessions: Some(max),
            calibration_frames: 0,
            ..EngineConfig::default()
        },
    )
    .expect("starting the engine")
}

const STYLE: [u16; 12] = [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22];

/// Waits until the stream's buffer is full (generation has stopped) and the
/// frame counter, bumped just after each push, has caught up with it.
fn wait_full(h: &StreamHandle, read_so_far: u64) {
    let start = Instant::now();
    // Every stream here is opened with the default buffer.
    let full = StreamConfig::default().buffer_frames as u64;
    while h.buffered_ms() < h.capacity_ms()
        || h.stats.frames.load(std::sync::atomic::Ordering::Relaxed) < read_so_far + full
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "buffer never filled"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn read(h: &mut StreamHandle, frames: usize) -> Vec<Vec<i16>> {
    let mut out = Vec::new();
    let start = Instant::now();
    while out.len() < frames {
        let mut f = vec![0i16; FRAME_PCM];
        if h.read_frame(&mut f) {
            out.push(f);
        } else {
            assert!(start.elapsed() < Duration::from_secs(60), "stream stalled");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    out
}

/// Frame-by-frame equality that names the first differing frame (a whole
/// `assert_eq!` of PCM prints too much to read in a CI log).
#[track_caller]
fn assert_same_frames(got: &[Vec<i16>], want: &[Vec<i16>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: frame counts");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
        let differ = got[i].iter().zip(&want[i]).filter(|(a, b)| a != b).count();
        let later = got[i..]
            .iter()
            .zip(&want[i..])
            .filter(|(g, w)| g != w)
            .count();
        panic!(
            "{what}: frame {i} of {} differs first ({differ} of {} samples); \
             {later} frames from there differ",
            got.len(),
            got[i].len()
        );
    }
}

/// Frames of a generator run directly: `before` frames, then `control`, then `after`.
fn reference(before: usize, control: Option<Control>, after: usize) -> Vec<Vec<i16>> {
    let (lm, codec) = weights();
    let pool = rill_stream::StagePools::new(rill_stream::Stages::Sequential, 2, None);
    let mut g = Generator::new(lm, codec, 42, &pool);
    g.apply(Control::Style(Some(STYLE))).unwrap();
    let mut out = Vec::new();
    for i in 0..before + after {
        if i == before {
            if let Some(c) = control.clone() {
                g.apply(c).unwrap();
            }
        }
        let mut f = vec![0i16; FRAME_PCM];
        g.step(&pool, &mut f);
        out.push(f);
    }
    out
}

#[test]
fn control_applies_at_the_next_frame_boundary() {
    control_reaches_the_frame_it_made_room_for(false);
}

/// The scheduler preempted between draining the controls and picking the next
/// step (a loaded machine): the control, sent before the read that made room,
/// must still reach that step. It once came a frame late (seen in CI).
#[test]
fn control_applies_at_the_next_frame_boundary_when_the_scheduler_is_preempted() {
    control_reaches_the_frame_it_made_room_for(true);
}

fn control_reaches_the_frame_it_made_room_for(preempted: bool) {
    let e = engine(1);
    if preempted {
        e.inject_preemption_after_drain();
    }
    let mut h = e
        .open(StreamConfig {
            initial: vec![Control::Style(Some(STYLE))],
            ..Default::default()
        })
        .unwrap();
    wait_full(&h, 0);
    let before = h.stats.frames.load(std::sync::atomic::Ordering::Relaxed) as usize;
    assert_eq!(before, 5, "a full 200 ms buffer holds 5 frames");
    let change = Control::Style(Some([
        325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782,
    ]));
    h.send(change.clone()).unwrap();
    // The engine runs two stages: its LM is one frame ahead of the decoded audio,
    // so the control reaches the audio one frame later (the stated extra latency).
    let boundary = before + Stages::TwoStage.latency_frames();
    let got = read(&mut h, before + 6);
    let want = reference(boundary, Some(change), before + 6 - boundary);
    assert_same_frames(&got, &want, "streamed vs reference");
    // Frames before the boundary are untouched; from the boundary on the music changes.
    let unchanged = reference(before + 6, None, 0);
    assert_same_frames(
        &got[..boundary],
        &unchanged[..boundary],
        "before the boundary",
    );
    assert_ne!(got[boundary], unchanged[boundary]);
}

#[test]
fn snapshot_restore_continues_bit_identically() {
    restore_continues_bit_identically(false);
}

/// As above with the scheduler preempted after its control drain: the restore,
/// sent before the reads that make room, still lands before the next step.
#[test]
fn snapshot_restore_continues_bit_identically_when_the_scheduler_is_preempted() {
    restore_continues_bit_identically(true);
}

fn restore_continues_bit_identically(preempted: bool) {
    let e = engine(1);
    if preempted {
        e.inject_preemption_after_drain();
    }
    let mut h = e
        .open(StreamConfig {
            initial: vec![Control::Style(Some(STYLE)), Control::Drums(Some(true))],
            ..Default::default()
        })
        .unwrap();
    read(&mut h, 3);
    wait_full(&h, 3); // 8 frames generated, 3 read
    let snap = h.snapshot(Duration::from_secs(30)).unwrap();
    // Two stages: the LM has run one frame past the decoded audio, whose tokens
    // are pending in the snapshot.
    assert_eq!(snap.lm.frame, 9);
    assert!(snap.pending.is_some());
    let after_snapshot = read(&mut h, 5 + 7); // 5 buffered, then 7 new
    wait_full(&h, 3 + 5 + 7);
    h.send(Control::Restore(Box::new(snap))).unwrap();
    let replay = read(&mut h, 5 + 7); // 5 buffered before the restore, then the replay
    assert_same_frames(&replay[5..], &after_snapshot[5..], "replay vs first run");
}

#[test]
fn buffer_bound_holds_while_consuming_slowly() {
    let e = engine(1);
    let mut h = e.open(StreamConfig::default()).unwrap();
    let mut consumed = 0u64;
    let mut f = vec![0i16; FRAME_PCM];
    for _ in 0..40 {
        let generated = h.stats.frames.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            generated <= consumed + 5,
            "generated {generated}, consumed {consumed}"
        );
        assert!(h.buffered_ms() <= 200.0);
        if h.read_frame(&mut f) {
            consumed += 1;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn admission_control_refuses_beyond_capacity() {
    let e = engine(2);
    let a = e.open(StreamConfig::default()).unwrap();
    let b = e.open(StreamConfig::default()).unwrap();
    assert_eq!(e.active(), 2);
    match e.open(StreamConfig::default()) {
        Err(StreamError::Busy { capacity: 2 }) => {}
        other => panic!("expected Busy, got {:?}", other.map(|_| ())),
    }
    drop(a);
    let c = e.open(StreamConfig::default()).unwrap();
    assert_eq!(e.active(), 2);
    drop((b, c));
    assert_eq!(e.active(), 0);
}

/// Reads frames until `frames` more arrived or the stream failed; returns how
/// many arrived.
fn read_until_failed(h: &mut StreamHandle, frames: usize) -> usize {
    let mut f = vec![0i16; FRAME_PCM];
    let mut got = 0;
    let start = Instant::now();
    while got < frames && !h.failed() {
        if h.read_frame(&mut f) {
            got += 1;
        } else {
            assert!(start.elapsed() < Duration::from_secs(60), "stream stalled");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    got
}

#[test]
fn a_panic_serving_one_stream_fails_that_stream_and_the_others_keep_playing() {
    let e = engine(3);
    let mut a = e.open(StreamConfig::default()).unwrap();
    let mut b = e.open(StreamConfig::default()).unwrap();
    read(&mut a, 3);
    read(&mut b, 3);
    a.inject_panic();
    read_until_failed(&mut a, usize::MAX);
    assert!(a.failed(), "the panicking stream reports it");
    assert!(!b.failed());
    // The other stream plays on, and a new one can be opened and played.
    read(&mut b, 10);
    let mut c = e.open(StreamConfig::default()).unwrap();
    read(&mut c, 5);
    assert!(!b.failed() && !c.failed());
}

#[test]
fn a_panic_inside_a_pool_task_fails_one_stream_and_the_pools_recover() {
    let e = engine(2);
    let mut a = e.open(StreamConfig::default()).unwrap();
    let mut b = e.open(StreamConfig::default()).unwrap();
    read(&mut a, 2);
    read(&mut b, 2);
    e.inject_panic_in_pool();
    // Exactly one of the two streams was being served when the task panicked.
    let start = Instant::now();
    while !a.failed() && !b.failed() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no stream failed"
        );
        let mut f = vec![0i16; FRAME_PCM];
        a.read_frame(&mut f);
        b.read_frame(&mut f);
        std::thread::sleep(Duration::from_millis(2));
    }
    let (failed, mut alive) = if a.failed() { (a, b) } else { (b, a) };
    assert!(failed.failed() && !alive.failed());
    // The pools were left usable: the survivor keeps getting frames.
    assert_eq!(read_until_failed(&mut alive, 20), 20);
    drop(failed);
    let mut c = e.open(StreamConfig::default()).unwrap();
    assert_eq!(read_until_failed(&mut c, 5), 5);
}

#[test]
fn out_of_range_controls_are_rejected_and_change_nothing() {
    let (lm, codec) = weights();
    let pool = rill_stream::StagePools::new(rill_stream::Stages::Sequential, 1, None);
    let mut g = Generator::new(lm, codec, 42, &pool);
    g.apply(Control::HeldNotes(vec![60, 64])).unwrap();
    let sampling = g.session().sampling();
    let notes = g.notes().clone();
    let mut bad_style = STYLE;
    bad_style[11] = 1024;
    for c in [
        Control::NoteOn(128),
        Control::NoteOff(200),
        Control::HeldNotes(vec![60, 128]),
        Control::Style(Some(bad_style)),
        Control::Temperature(f32::NAN),
        Control::Temperature(f32::INFINITY),
        Control::Temperature(-0.5),
        Control::TopK(0),
        Control::TopK(12_295),
        Control::CfgMusiccoca(f64::NAN),
        Control::CfgNotes(f64::INFINITY),
        Control::CfgDrums(f64::NEG_INFINITY),
    ] {
        let what = format!("{c:?}");
        let e = g.apply(c).expect_err(&what);
        assert!(e.to_string().contains("must be"), "{what}: {e}");
    }
    assert_eq!(g.session().sampling(), sampling);
    assert_eq!(g.notes(), &notes);
    // Valid values at the edges are accepted.
    for c in [
        Control::NoteOn(127),
        Control::Temperature(0.0),
        Control::TopK(12_294),
        Control::CfgMusiccoca(-1.0),
    ] {
        g.apply(c).unwrap();
    }
}

/// Speech on the engine ([`rill_stream::Speaker`]): two sentences (the second set
/// up on the engine's setup thread) give the same PCM as `Voice::speak` on pools
/// of its own, alone and while a music stream plays beside it; the music stream's
/// frames are the ones it makes alone.
#[test]
fn the_engine_speaks_the_same_bits_alone_and_beside_music() {
    use rill_stream::tts::{SpeakOptions, SpeakSink, TtsError, Voice, VoiceSource};

    struct Pcm(Vec<i16>);
    impl SpeakSink for Pcm {
        fn frame(
            &mut self,
            _: &[u32; rill_magpie::CODEBOOKS],
            _: &[f32; rill_nanocodec::SAMPLES_PER_FRAME],
            pcm: &[i16; rill_nanocodec::SAMPLES_PER_FRAME],
        ) -> Result<(), TtsError> {
            self.0.extend_from_slice(pcm);
            Ok(())
        }
    }
    const FRAMES: usize = 7;
    let voice = Voice::load(VoiceSource::Random(0), rill_kernels::WeightFormat::F32).unwrap();
    // Over the front end's 45-word threshold: two sentences.
    let text = "The quick brown fox jumps over the lazy dog while the small cat sleeps on \
        the warm mat near the old red door of the house. Then the dog wakes up and runs \
        across the green field to find the ball that the children left behind the big tree.";
    let options = SpeakOptions {
        max_frames: Some(FRAMES),
        ..SpeakOptions::default()
    };
    let plan = voice.plan(text, &options).unwrap();
    assert_eq!(plan.utterances.len(), 2);
    let mut want = Pcm(Vec::new());
    let alone = rill_stream::StagePools::new(Stages::Sequential, 1, None);
    voice
        .speak(&plan, &alone, &rill_kernels::Pool::new(1), &mut want)
        .unwrap();
    assert_eq!(want.0.len(), 2 * FRAMES * rill_nanocodec::SAMPLES_PER_FRAME);

    let engine = engine(1);
    let speaker = engine.add_voice(std::sync::Arc::new(voice)).unwrap();
    // `music` reads the stream's frames while the speech is read: one when its
    // buffer is full (the engine then has no music to make and serves the speech,
    // however slow the machine) and 80 ms have passed since the last (half real
    // time: the engine also idles, and the speech's sentence setup, which runs in
    // the idle class, gets the CPU). A reader faster than the engine would leave
    // speech none.
    let speak = |mut music: Option<&mut StreamHandle>| {
        let mut speech = speaker.speak(plan.clone()).unwrap();
        let (mut pcm, mut frames) = (Vec::new(), Vec::new());
        let start = Instant::now();
        let mut last_read = Instant::now();
        loop {
            assert!(start.elapsed() < Duration::from_secs(120), "speech stalled");
            if let Some(h) = music.as_deref_mut() {
                let mut f = vec![0i16; FRAME_PCM];
                let due = last_read.elapsed() >= Duration::from_millis(80);
                if due && h.buffered_ms() >= h.capacity_ms() && h.read_frame(&mut f) {
                    frames.push(f);
                    last_read = Instant::now();
                }
            }
            if let Some(outcome) = speech.next(&mut pcm, Duration::from_millis(2)) {
                let stats = outcome.unwrap();
                assert_eq!(stats.frames, 2 * FRAMES);
                return (pcm, frames);
            }
        }
    };
    let (pcm, _) = speak(None);
    assert!(
        pcm == want.0,
        "the engine's speech differs from Voice::speak"
    );

    let mut music = engine
        .open(StreamConfig {
            seed: 42,
            initial: vec![Control::Style(Some(STYLE))],
            ..StreamConfig::default()
        })
        .unwrap();
    let (pcm, mut frames) = speak(Some(&mut music));
    assert!(pcm == want.0, "beside music, the speech differs");
    frames.extend(read(&mut music, 3));
    assert_same_frames(
        &frames,
        &reference(frames.len(), None, 0),
        "music beside speech",
    );
}
