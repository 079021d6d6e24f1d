//! The two-stage pipeline is bit-identical to the sequential one (tokens and
//! int16 audio, frame for frame), whatever the thread split; it emits each frame
//! one step later and `flush` decodes the last one.

use std::sync::Arc;

use rill_checkpoint::Checkpoint;
use rill_mrt2::conditioning::Conditioning;
use rill_mrt2::{ModelKind, Mrt2, Precision, LEVELS};
use rill_spectrostream::Codec;
use rill_stream::{FramePipeline, StagePools, Stages, FRAME_PCM};

const FRAMES: usize = 12;

fn conditioning() -> Conditioning {
    Conditioning {
        style: Some([325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]),
        drums: Some(true),
        ..Default::default()
    }
    .with_held_notes(&[60, 64, 67])
    .unwrap()
}

/// Runs `FRAMES` frames and returns (tokens per LM step, decoded frames in order).
fn run(
    lm: &Arc<Mrt2>,
    codec: &Arc<Codec>,
    pools: &StagePools,
    forced: Option<&[[u32; LEVELS]]>,
) -> (Vec<[u32; LEVELS]>, Vec<Vec<i16>>) {
    let mut p = FramePipeline::new(lm.clone(), Some(codec.clone()), 7, pools);
    p.session_mut()
        .set_conditioning(&conditioning(), pools.lm())
        .unwrap();
    let (mut tokens, mut audio) = (Vec::new(), Vec::new());
    let mut decoded_tokens = Vec::new();
    for n in 0..FRAMES {
        let r = match forced {
            Some(f) => p.step_forced(&f[n], None, pools).unwrap(),
            None => p.step(None, pools),
        };
        let lag = pools.stages().latency_frames();
        assert_eq!(r.decoded, n >= lag, "frame {n}");
        tokens.push(r.tokens);
        if r.decoded {
            audio.push(p.pcm().to_vec());
            decoded_tokens.push(p.decoded_tokens());
        }
    }
    match pools.stages() {
        Stages::Sequential => assert!(p.flush(pools).is_none()),
        Stages::TwoStage => {
            let r = p.flush(pools).expect("the last frame is pending");
            assert!(r.decoded);
            audio.push(p.pcm().to_vec());
            decoded_tokens.push(p.decoded_tokens());
            assert!(p.flush(pools).is_none());
        }
    }
    assert_eq!(
        decoded_tokens, tokens,
        "each audio frame decodes its own tokens"
    );
    assert!(audio.iter().all(|f| f.len() == FRAME_PCM));
    (tokens, audio)
}

#[test]
fn two_stage_is_bit_identical_to_sequential() {
    let ck = Checkpoint::open(rill_testkit::synthetic_checkpoint(
        ModelKind::Small.synth_file(0),
    ))
    .unwrap();
    let codec = Arc::new(Codec::load(&ck).unwrap());
    for precision in [Precision::F32, Precision::Int8] {
        let lm = Arc::new(Mrt2::load(&ck, precision).unwrap());
        let reference = run(
            &lm,
            &codec,
            &StagePools::new(Stages::Sequential, 2, None),
            None,
        );
        assert!(
            reference.1.iter().flatten().any(|&s| s != 0),
            "{precision}: the reference is silent"
        );
        for (threads, lm_threads) in [(1, None), (2, None), (3, Some(1)), (3, Some(2))] {
            let pools = StagePools::new(Stages::TwoStage, threads, lm_threads);
            let got = run(&lm, &codec, &pools, None);
            assert_eq!(
                got.0,
                reference.0,
                "{precision} {}: tokens",
                pools.describe()
            );
            assert_eq!(
                got.1,
                reference.1,
                "{precision} {}: audio",
                pools.describe()
            );
        }
        // Teacher forcing takes the same path (and agrees with sampling's tokens).
        let pools = StagePools::new(Stages::TwoStage, 2, None);
        let forced = run(&lm, &codec, &pools, Some(&reference.0));
        assert_eq!(forced, reference, "{precision}: forced two-stage");
    }
}

#[test]
fn a_bad_forced_token_is_an_error_and_keeps_the_decoded_frame() {
    let ck = Checkpoint::open(rill_testkit::synthetic_checkpoint(
        ModelKind::Small.synth_file(0),
    ))
    .unwrap();
    let codec = Arc::new(Codec::load(&ck).unwrap());
    let lm = Arc::new(Mrt2::load(&ck, Precision::Int8).unwrap());
    let pools = StagePools::new(Stages::TwoStage, 2, None);
    let mut p = FramePipeline::new(lm, Some(codec), 7, &pools);
    let first = p.step(None, &pools);
    let err = p.step_forced(&[0; LEVELS], None, &pools).unwrap_err();
    assert!(err.to_string().contains("level"), "{err}");
    // The pending frame was decoded meanwhile; nothing is pending now.
    assert_eq!(p.decoded_tokens(), first.tokens);
    assert!(p.pending().is_none());
}

/// Streams stepped together (the engine's cycle when several have room) give each
/// stream's tokens and audio bit for bit as stepped alone, sequentially and with two
/// stages, also when a stream is sometimes stepped alone in between (the engine
/// serves a lone due stream by itself).
#[test]
fn streams_together_are_bit_identical_to_alone() {
    use rill_stream::{Control, FrameInfo, Generator};
    let ck = Checkpoint::open(rill_testkit::synthetic_checkpoint(
        ModelKind::Small.synth_file(0),
    ))
    .unwrap();
    let codec = Arc::new(Codec::load(&ck).unwrap());
    let lm = Arc::new(Mrt2::load(&ck, Precision::Int8).unwrap());
    for stages in [Stages::Sequential, Stages::TwoStage] {
        let pools = StagePools::new(stages, 2, None);
        let make = || -> Vec<Generator> {
            (0..3u64)
                .map(|i| {
                    let mut g = Generator::new(lm.clone(), codec.clone(), 40 + i, &pools);
                    if i == 1 {
                        g.apply(Control::NoteOn(64)).unwrap();
                    }
                    g
                })
                .collect()
        };
        let (mut alone, mut joint) = (make(), make());
        let mut pcm = vec![0i16; 3 * FRAME_PCM];
        let mut infos = [FrameInfo::default(); 3];
        for frame in 0..8 {
            let mut want = Vec::new();
            for g in &mut alone {
                let mut out = vec![0i16; FRAME_PCM];
                let info = g.step(&pools, &mut out);
                want.push((info, info.decoded.then_some(out)));
            }
            if frame % 3 == 2 {
                for (g, (info, out)) in joint
                    .iter_mut()
                    .zip(infos.iter_mut().zip(pcm.chunks_exact_mut(FRAME_PCM)))
                {
                    *info = g.step(&pools, out);
                }
            } else {
                let mut gens: Vec<&mut Generator> = joint.iter_mut().collect();
                let mut outs: Vec<&mut [i16]> = pcm.chunks_exact_mut(FRAME_PCM).collect();
                Generator::step_together(&mut gens, &pools, &mut outs, &mut infos);
            }
            for (i, ((info, out), (want_info, want_out))) in infos
                .iter()
                .zip(pcm.chunks_exact(FRAME_PCM))
                .zip(&want)
                .enumerate()
            {
                assert_eq!(
                    info,
                    want_info,
                    "{} frame {frame} stream {i}",
                    stages.name()
                );
                if let Some(w) = want_out {
                    assert_eq!(
                        out,
                        &w[..],
                        "{} frame {frame} stream {i}: audio",
                        stages.name()
                    );
                }
            }
        }
        assert!(alone
            .iter()
            .zip(&joint)
            .all(|(a, b)| a.session().state() == b.session().state()));
    }
}
