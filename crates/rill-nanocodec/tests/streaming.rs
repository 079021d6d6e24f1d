//! Streaming: one-frame steps equal the batch decode, a snapshot of the state
//! continues bit-identically, bad codes and bad state arrays are rejected.

mod common;

use common::*;
use rill_checkpoint::state_arrays::StateArrayError;
use rill_kernels::Pool;
use rill_nanocodec::{frame_to_int16, CodecError, NanoCodec, SAMPLES_PER_FRAME};

fn steps(
    codec: &NanoCodec,
    st: &mut rill_nanocodec::CodecState,
    frames: &[[u32; 8]],
    pool: &Pool,
) -> Vec<f32> {
    let mut out = Vec::new();
    let mut audio = [0f32; SAMPLES_PER_FRAME];
    for f in frames {
        codec.step(st, f, &mut audio, pool).unwrap();
        out.extend_from_slice(&audio);
    }
    out
}

#[test]
fn steps_equal_the_batch_decode_on_every_tier() {
    let all = frames();
    for isa in rill_kernels::isa::tiers_under_test("nanocodec streaming") {
        // The portable tier is ~20× slower: 6 frames of it suffice.
        let frames = if isa.tier() == rill_kernels::Tier::Portable {
            &all[..6]
        } else {
            &all[..]
        };
        let codec = NanoCodec::with_isa(weights(), isa).unwrap();
        let pool = Pool::new(2);
        let batch = codec.decode(frames, &pool).unwrap();
        let mut st = codec.new_state();
        let streamed = steps(&codec, &mut st, frames, &pool);
        // Measured: identical bits (each output is one FMA chain whatever the chunk).
        let (max, _) = max_rms(&streamed, &batch);
        assert_eq!(max, 0.0, "{isa}: streaming differs from batch by {max:e}");
        // And the streamed waveform meets the reference gate by itself.
        let (_, want) = recording().f32("audio").unwrap();
        let (max, rms) = max_rms(&streamed, &want[..streamed.len()]);
        assert!(
            max <= 1.8e-5 && rms <= 3.4e-6,
            "{isa}: max {max:e}, rms {rms:e}"
        );
    }
}

/// Calls of 2, 1, 2, … frames (a live pipeline's pairs and odd tails) give the
/// per-frame steps' bits, on every tier; a state exported between calls is the
/// same whatever the call size, and a wrong count is refused without a change.
#[test]
fn multi_frame_steps_equal_single_steps_on_every_tier() {
    let all = frames();
    for isa in rill_kernels::isa::tiers_under_test("nanocodec multi-frame steps") {
        let n = if isa.tier() == rill_kernels::Tier::Portable {
            5
        } else {
            11
        };
        let frames = &all[..n];
        let codec = NanoCodec::with_isa(weights(), isa).unwrap();
        let pool = Pool::new(2);
        let mut one = codec.new_state();
        let single = steps(&codec, &mut one, frames, &pool);
        let mut st = codec.new_stream_state(2);
        let mut out = Vec::new();
        let mut audio = [0f32; 2 * SAMPLES_PER_FRAME];
        let mut f = 0;
        for size in [2, 1].into_iter().cycle() {
            if f == n {
                break;
            }
            let size = size.min(n - f);
            let a = &mut audio[..size * SAMPLES_PER_FRAME];
            codec
                .step_frames(&mut st, &frames[f..f + size], a, &pool)
                .unwrap();
            out.extend_from_slice(a);
            f += size;
        }
        assert!(
            out == single,
            "{isa}: multi-frame steps differ from single steps"
        );
        assert!(one.export() == st.export(), "{isa}: the states differ");
    }
    let codec = NanoCodec::new(weights()).unwrap();
    let pool = Pool::new(1);
    let mut st = codec.new_stream_state(2);
    let before = st.clone();
    let mut audio = vec![0f32; 3 * SAMPLES_PER_FRAME];
    let e = codec
        .step_frames(&mut st, &all[..3], &mut audio, &pool)
        .unwrap_err();
    assert!(
        matches!(e, CodecError::ChunkSize { given: 3, max: 2 }),
        "{e}"
    );
    assert!(e.to_string().contains("new_stream_state(3)"), "{e}");
    let e = codec
        .step_frames(&mut st, &[], &mut audio[..0], &pool)
        .unwrap_err();
    assert!(matches!(e, CodecError::ChunkSize { given: 0, .. }), "{e}");
    let e = codec
        .step_frames(&mut st, &all[..2], &mut audio[..SAMPLES_PER_FRAME], &pool)
        .unwrap_err();
    assert!(
        matches!(e, CodecError::AudioLength { frames: 2, .. }),
        "{e}"
    );
    let bad = [all[0], [2016; 8]];
    let e = codec
        .step_frames(&mut st, &bad, &mut audio[..2 * SAMPLES_PER_FRAME], &pool)
        .unwrap_err();
    assert!(matches!(e, CodecError::BadCode { .. }), "{e}");
    assert_eq!(st, before, "a refused call must not change the state");
}

#[test]
fn thread_count_does_not_change_the_output() {
    let frames = &frames()[..3];
    let codec = NanoCodec::new(weights()).unwrap();
    let a = codec.decode(frames, &Pool::new(1)).unwrap();
    let b = codec.decode(frames, &Pool::new(2)).unwrap();
    assert!(a == b);
}

#[test]
fn snapshot_restore_continues_bit_identically() {
    let frames = frames();
    let codec = NanoCodec::new(weights()).unwrap();
    let pool = Pool::new(2);
    let mut st = codec.new_state();
    steps(&codec, &mut st, &frames[..5], &pool);
    let snap = st.export();
    assert_eq!(
        snap.iter().map(|(_, _, v)| v.len()).sum::<usize>(),
        st.len()
    );
    let cont = steps(&codec, &mut st, &frames[5..9], &pool);
    let mut fresh = codec.new_state();
    fresh.import(&snap).unwrap();
    let again = steps(&codec, &mut fresh, &frames[5..9], &pool);
    assert!(cont == again, "restored state continued differently");
    assert_eq!(fresh, st);
    // A clone is a snapshot too.
    let mut c = st.clone();
    assert!(
        steps(&codec, &mut c, &frames[9..10], &pool)
            == steps(&codec, &mut st, &frames[9..10], &pool)
    );
}

#[test]
fn bad_codes_and_state_arrays_are_rejected() {
    let codec = NanoCodec::new(weights()).unwrap();
    let pool = Pool::new(1);
    let mut st = codec.new_state();
    let before = st.clone();
    let mut audio = [0f32; SAMPLES_PER_FRAME];
    let e = codec
        .step(&mut st, &[0, 1, 2, 3, 2016, 5, 6, 7], &mut audio, &pool)
        .unwrap_err();
    assert!(
        matches!(
            e,
            CodecError::BadCode {
                codebook: 4,
                code: 2016
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("0..2016"), "{e}");
    assert_eq!(st, before, "a rejected step must not change the state");
    assert!(codec.decode(&[[2017; 8]], &pool).is_err());

    let good = st.export();
    let mut bad = good.clone();
    bad[3].2[0] = f32::NAN;
    assert!(matches!(
        st.import(&bad),
        Err(CodecError::State(StateArrayError::NonFinite { .. }))
    ));
    let mut bad = good.clone();
    bad[0].1 = vec![1, 2];
    assert!(matches!(
        st.import(&bad),
        Err(CodecError::State(StateArrayError::Shape { .. }))
    ));
    let bad: Vec<_> = good[1..].to_vec();
    assert!(matches!(
        st.import(&bad),
        Err(CodecError::State(StateArrayError::Missing { .. }))
    ));
    let mut bad = good.clone();
    bad.push(("nope".into(), vec![1], vec![0.0]));
    assert!(matches!(
        st.import(&bad),
        Err(CodecError::State(StateArrayError::Unknown { .. }))
    ));
    let mut bad = good.clone();
    bad.push(good[0].clone());
    assert!(matches!(
        st.import(&bad),
        Err(CodecError::State(StateArrayError::Duplicate { .. }))
    ));
    assert_eq!(st, before);
}

#[test]
fn int16_output() {
    let mut f = [0f32; SAMPLES_PER_FRAME];
    f[0] = 1.0;
    f[1] = -1.0;
    f[2] = 0.5;
    f[3] = f32::NAN;
    f[4] = 2.0;
    let mut o = [0i16; SAMPLES_PER_FRAME];
    frame_to_int16(&f, &mut o);
    assert_eq!(&o[..6], &[32767, -32767, 16384, 0, 32767, 0]);
}

#[test]
fn decoding_is_causal() {
    // A prefix of n frames decodes to the first 1024·n samples of the whole
    // utterance, exactly (the reference agrees with itself only to 4e-6 here,
    // `prefix_maxabs`, because oneDNN picks length-dependent kernels).
    let frames = &frames()[..12];
    let codec = NanoCodec::new(weights()).unwrap();
    let pool = Pool::new(2);
    let whole = codec.decode(frames, &pool).unwrap();
    for n in [1, 2, 4, 9] {
        let part = codec.decode(&frames[..n], &pool).unwrap();
        assert!(
            part[..] == whole[..n * SAMPLES_PER_FRAME],
            "prefix of {n} frames differs"
        );
    }
    assert!(codec.decode(&[], &pool).unwrap().is_empty());
}
