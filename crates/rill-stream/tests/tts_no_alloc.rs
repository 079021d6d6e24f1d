//! `Voice::speak`'s frame loop (decoder steps, grouped codec calls, int16, the
//! sink) allocates nothing once a sentence runs: a counting global allocator is
//! read at every cycle, and the cycles after the first few must not move it.

use std::sync::Arc;

use rill_stream::tts::{CycleTimes, SpeakOptions, SpeakSink, Voice};
use rill_stream::{StagePools, Stages};

#[global_allocator]
static GLOBAL: rill_testkit::CountingAlloc = rill_testkit::CountingAlloc;

/// Allocation count at the end of every cycle (preallocated: pushing allocates nothing).
struct Counts(Vec<usize>);

impl SpeakSink for Counts {
    fn cycle(&mut self, _: &CycleTimes) {
        if self.0.len() < self.0.capacity() {
            self.0.push(rill_testkit::allocations());
        }
    }
}

#[test]
fn the_speech_frame_loop_does_not_allocate() {
    let w = rill_magpie::synth::build(&rill_magpie::Config::oracle(), 0).unwrap();
    let codec = rill_nanocodec::NanoCodec::new(&rill_nanocodec::Weights::synthetic(0)).unwrap();
    let model = Arc::new(rill_magpie::Model::new(w).unwrap());
    let vocab = rill_text::TextVocabulary::from_embedding_rows(model.config.text_vocab, 0).unwrap();
    let voice = Voice {
        model,
        codec: Arc::new(codec),
        front: rill_text::TextFrontEnd::new(vocab),
        params: rill_magpie::InferenceParams {
            max_decoder_steps: 12,
            min_generated_frames: 12,
            ..rill_magpie::InferenceParams::default()
        },
        speaker_names: Vec::new(),
    };
    let setup = rill_kernels::Pool::new(2);
    for stages in [Stages::Sequential, Stages::TwoStage] {
        let pools = StagePools::new(stages, 2, None);
        let plan = voice
            .plan("Hello world.", &SpeakOptions::default())
            .unwrap();
        let mut counts = Counts(Vec::with_capacity(64));
        voice.speak(&plan, &pools, &setup, &mut counts).unwrap();
        let c = &counts.0;
        assert!(c.len() >= 6, "{stages:?}: only {} cycles", c.len());
        // The first cycles grow the scratch the session and the kernels own.
        let steady = &c[3..];
        assert_eq!(
            steady.last().unwrap() - steady[0],
            0,
            "{stages:?}: allocations per cycle {:?}",
            c.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
        );
    }
}
