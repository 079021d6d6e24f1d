//! The per-frame path (language model + codec + int16, with controls applied)
//! allocates nothing after warm-up, also for streams stepped together: a counting
//! global allocator watches it.

use std::sync::Arc;

use rill_checkpoint::Checkpoint;
use rill_mrt2::{ModelKind, Mrt2, Precision};
use rill_spectrostream::Codec;
use rill_stream::{Control, Generator, StagePools, Stages, FRAME_PCM};

#[global_allocator]
static GLOBAL: rill_testkit::CountingAlloc = rill_testkit::CountingAlloc;

#[test]
fn frame_loop_does_not_allocate() {
    let ck = Checkpoint::open(rill_testkit::synthetic_checkpoint(
        ModelKind::Small.synth_file(0),
    ))
    .unwrap();
    let codec = Arc::new(Codec::load(&ck).unwrap());
    for (precision, stages) in [
        (Precision::F32, Stages::Sequential),
        (Precision::Int8, Stages::TwoStage),
        (Precision::Mixed, Stages::Sequential),
        (Precision::Mixed, Stages::TwoStage),
    ] {
        let lm = Arc::new(Mrt2::load(&ck, precision).unwrap());
        let pool = StagePools::new(stages, 2, None);
        let mut g = Generator::new(lm, codec.clone(), 42, &pool);
        let mut pcm = vec![0i16; FRAME_PCM];
        g.step(&pool, &mut pcm); // warm-up: grows the scratch the session and codec own
        g.step(&pool, &mut pcm);
        let before = rill_testkit::allocations();
        for i in 0..4 {
            // Controls that change the conditioning take the same path as live play.
            g.apply(if i % 2 == 0 {
                Control::NoteOn(60)
            } else {
                Control::NoteOff(60)
            })
            .unwrap();
            g.apply(Control::Drums(Some(i % 2 == 0))).unwrap();
            g.step(&pool, &mut pcm);
        }
        let n = rill_testkit::allocations() - before;
        assert_eq!(
            n,
            0,
            "{precision} {}: the frame loop allocated {n} times",
            stages.name()
        );
    }
    streams_together_do_not_allocate(&ck, &codec);
}

/// Streams stepped together allocate nothing either (the engine's cycle when
/// several have room). Called by the one test: the allocation counter is the
/// process's, so no other test may run beside it.
fn streams_together_do_not_allocate(ck: &Checkpoint, codec: &Arc<Codec>) {
    let lm = Arc::new(Mrt2::load(ck, Precision::Int8).unwrap());
    for stages in [Stages::Sequential, Stages::TwoStage] {
        let pool = StagePools::new(stages, 2, None);
        let mut gens: Vec<Generator> = (0..3)
            .map(|i| Generator::new(lm.clone(), codec.clone(), i, &pool))
            .collect();
        let mut pcm = vec![0i16; 3 * FRAME_PCM];
        let mut infos = [rill_stream::FrameInfo::default(); 3];
        let mut refs: Vec<&mut Generator> = gens.iter_mut().collect();
        let mut outs: Vec<&mut [i16]> = pcm.chunks_exact_mut(FRAME_PCM).collect();
        for _ in 0..2 {
            Generator::step_together(&mut refs, &pool, &mut outs, &mut infos);
        }
        let before = rill_testkit::allocations();
        for i in 0..4 {
            refs[1]
                .apply(if i % 2 == 0 {
                    Control::NoteOn(60)
                } else {
                    Control::NoteOff(60)
                })
                .unwrap();
            Generator::step_together(&mut refs, &pool, &mut outs, &mut infos);
        }
        let n = rill_testkit::allocations() - before;
        assert_eq!(
            n,
            0,
            "{}: stepping together allocated {n} times",
            stages.name()
        );
    }
}
