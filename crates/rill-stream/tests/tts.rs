//! `Voice::speak` in every arrangement (sequential or two stages, 1–3 frames per
//! codec call) hands the sink the same codes and the same PCM, frame by frame,
//! across sentences; the first frames go one per call, then groups; the per-step
//! traces come once per decoder step; a bad group size is refused before anything
//! runs.

use rill_magpie::{StepTrace, CODEBOOKS};
use rill_nanocodec::SAMPLES_PER_FRAME;
use rill_stream::tts::{
    CycleTimes, SpeakOptions, SpeakSink, TtsError, Voice, VoiceSource, SINGLE_FRAMES,
};
use rill_stream::{StagePools, Stages};

/// The oracle's random-weight voice (seed 0, f32 linears), as `rill speak
/// --random-weights` loads it.
fn voice() -> Voice {
    Voice::load(VoiceSource::Random(0), rill_kernels::WeightFormat::F32).unwrap()
}

#[derive(Default)]
struct Record {
    codes: Vec<[u32; CODEBOOKS]>,
    pcm: Vec<i16>,
    utterances: usize,
    steps: usize,
    made: usize,
    decoded: usize,
    /// Frames per codec call, in order.
    calls: Vec<usize>,
    traced: bool,
}

impl SpeakSink for Record {
    fn utterance(&mut self, _: &[u32]) -> Result<(), TtsError> {
        self.utterances += 1;
        Ok(())
    }
    fn wants_trace(&self) -> bool {
        self.traced
    }
    fn step(&mut self, trace: &StepTrace) {
        assert!(!trace.hidden.is_empty());
        self.steps += 1;
    }
    fn cycle(&mut self, t: &CycleTimes) {
        self.made += t.made;
        self.decoded += t.decoded;
        if t.decoded > 0 {
            self.calls.push(t.decoded);
        }
    }
    fn frame(
        &mut self,
        codes: &[u32; CODEBOOKS],
        _: &[f32; SAMPLES_PER_FRAME],
        pcm: &[i16; SAMPLES_PER_FRAME],
    ) -> Result<(), TtsError> {
        self.codes.push(*codes);
        self.pcm.extend_from_slice(pcm);
        Ok(())
    }
}

/// 46 words: over the front end's 45-word threshold, so split into two sentences.
const TWO_SENTENCES: &str = "The quick brown fox jumps over the lazy dog while the \
    small cat sleeps on the warm mat near the old red door of the house. Then the \
    dog wakes up and runs across the green field to find the ball that the children \
    left behind the big tree.";

#[test]
fn every_arrangement_speaks_the_same_frames() {
    let voice = voice();
    let setup = rill_kernels::Pool::new(2);
    // Two sentences of 5 frames at most: odd groups and a sentence boundary.
    let speak = |stages: Stages, codec_frames: usize, traced: bool| {
        let options = SpeakOptions {
            max_frames: Some(5),
            codec_frames: Some(codec_frames),
            normalize: false,
            ..SpeakOptions::default()
        };
        let plan = voice.plan(TWO_SENTENCES, &options).unwrap();
        assert_eq!(plan.utterances.len(), 2);
        let pools = StagePools::new(stages, 2, None);
        let mut rec = Record {
            traced,
            ..Record::default()
        };
        let stats = voice.speak(&plan, &pools, &setup, &mut rec).unwrap();
        assert_eq!(stats.frames, rec.codes.len());
        assert!(stats.first_audio.is_some() && stats.setup_seconds > 0.0);
        assert_eq!(rec.utterances, 2);
        // Every frame made is decoded once; a frame is a decoder step (the EOS
        // step of a sentence that ends before its cap makes none).
        assert_eq!(rec.made, rec.codes.len(), "{stages:?} × {codec_frames}");
        assert_eq!(rec.decoded, rec.codes.len(), "{stages:?} × {codec_frames}");
        if traced {
            assert!(rec.steps >= rec.codes.len() && rec.steps <= rec.codes.len() + 2);
        }
        // The request's first frames one per call, then groups of at most k.
        let mut before = 0;
        for &n in &rec.calls {
            let most = if before < SINGLE_FRAMES {
                1
            } else {
                codec_frames
            };
            assert!(n <= most, "{stages:?} × {codec_frames}: {:?}", rec.calls);
            before += n;
        }
        if codec_frames > 1 {
            assert!(
                rec.calls.contains(&codec_frames),
                "{stages:?} × {codec_frames}: no group in {:?}",
                rec.calls
            );
        }
        rec
    };
    let want = speak(Stages::Sequential, 1, false);
    assert!(want.codes.len() >= 4, "only {} frames", want.codes.len());
    for (stages, k, traced) in [
        (Stages::Sequential, 2, false),
        (Stages::TwoStage, 1, false),
        (Stages::TwoStage, 2, true),
        (Stages::TwoStage, 3, false),
    ] {
        let got = speak(stages, k, traced);
        assert_eq!(got.codes, want.codes, "{stages:?}, {k} frames per call");
        assert!(got.pcm == want.pcm, "{stages:?}, {k} frames per call");
    }
}

#[test]
fn a_bad_codec_group_is_refused() {
    let voice = voice();
    for k in [0, rill_stream::tts::MAX_CODEC_FRAMES + 1] {
        let options = SpeakOptions {
            codec_frames: Some(k),
            normalize: false,
            ..SpeakOptions::default()
        };
        let e = voice.plan("Hello.", &options).unwrap_err();
        assert!(e.to_string().contains("frames per codec call"), "{e}");
    }
}
