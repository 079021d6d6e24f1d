//! Host-owned state: export/import round trip continues bit-identically, import
//! rejects malformed arrays, results do not depend on the thread count, odd token
//! ids do not panic.

mod common;

use common::*;
use rill_checkpoint::state_arrays::StateArrayError;
use rill_kernels::Pool;
use rill_spectrostream::{CodecError, LEVELS, SAMPLES_PER_FRAME};

fn d1_frames(n: usize) -> Vec<[u32; LEVELS]> {
    let z = rill_testkit::fixture("D1.npz");
    let (_, tokens) = z.i64("tokens").unwrap();
    tokens[..n * LEVELS]
        .chunks_exact(LEVELS)
        .map(|c| std::array::from_fn(|k| c[k] as u32))
        .collect()
}

#[test]
fn export_import_round_trip_continues_bit_identically() {
    let codec = codec(0);
    let pool = Pool::new(2);
    let frames = d1_frames(10);
    let mut a = codec.new_state();
    run_steps(&codec, &mut a, &frames[..5], &pool);
    let saved = a.export();
    let n: usize = saved.iter().map(|(_, _, v)| v.len()).sum();
    eprintln!("codec state: {} arrays, {n} floats", saved.len());

    let mut b = codec.new_state();
    assert!(a != b);
    b.import(&saved).unwrap();
    assert!(a == b, "imported state equals the exported one");
    assert_eq!(b.export(), saved);

    let ra = run_steps(&codec, &mut a, &frames[5..], &pool);
    let rb = run_steps(&codec, &mut b, &frames[5..], &pool);
    assert!(
        ra.audio == rb.audio && ra.stft == rb.stft,
        "restored stream diverged"
    );
    assert!(a == b);
    // A clone is an independent stream with the same state.
    let mut c = a.clone();
    let rc = run_steps(&codec, &mut c, &frames[..2], &pool);
    let ra2 = run_steps(&codec, &mut a, &frames[..2], &pool);
    assert!(rc.audio == ra2.audio);
}

#[test]
fn import_rejects_malformed_state() {
    let codec = codec(0);
    let st = codec.new_state();
    let good = st.export();
    let mut s = codec.new_state();

    let mut bad = good.clone();
    bad[0].1[1] += 1;
    let e = s.import(&bad).unwrap_err();
    eprintln!("{e}");
    assert!(matches!(
        e,
        CodecError::State(StateArrayError::Shape { .. })
    ));

    let mut bad = good.clone();
    bad.remove(3);
    assert!(matches!(
        s.import(&bad).unwrap_err(),
        CodecError::State(StateArrayError::Missing { .. })
    ));

    let mut bad = good.clone();
    bad.push(("decoder_9/whatever".into(), vec![1], vec![0.0]));
    assert!(matches!(
        s.import(&bad).unwrap_err(),
        CodecError::State(StateArrayError::Unknown { .. })
    ));

    let mut bad = good.clone();
    bad[2].2.pop();
    assert!(matches!(
        s.import(&bad).unwrap_err(),
        CodecError::State(StateArrayError::Length { .. })
    ));

    let mut bad = good.clone();
    let i = bad
        .iter()
        .position(|(n, _, _)| n == "lookahead/countdown")
        .unwrap();
    bad[i].2[0] = 2.5;
    let e = s.import(&bad).unwrap_err();
    eprintln!("{e}");
    assert!(matches!(e, CodecError::BadStateArray { .. }));
    for x in [-1.0, 6.0] {
        bad[i].2[0] = x;
        assert!(matches!(
            s.import(&bad).unwrap_err(),
            CodecError::BadStateArray { .. }
        ));
    }
    // −0 is the integer 0 (a fuzz find): accepted, and read back as +0.
    let mut zero = good.clone();
    zero[i].2[0] = -0.0;
    let mut t = s.clone();
    t.import(&zero).unwrap();
    assert_eq!(t.export()[i].2[0].to_bits(), 0.0f32.to_bits());
    for x in [f32::NAN, f32::INFINITY] {
        bad[i].2[0] = x;
        assert!(matches!(
            s.import(&bad).unwrap_err(),
            CodecError::State(StateArrayError::NonFinite { .. })
        ));
    }

    // A non-finite history value would poison every later frame.
    for x in [f32::NAN, f32::NEG_INFINITY] {
        let mut bad = good.clone();
        let last = bad[0].2.len() - 1;
        bad[0].2[last] = x;
        let e = s.import(&bad).unwrap_err();
        eprintln!("{e}");
        assert!(e.to_string().contains(&bad[0].0), "{e}");
        let mut bad = good.clone();
        let j = bad.len() - 1;
        bad[j].2[7] = x;
        assert!(matches!(
            s.import(&bad).unwrap_err(),
            CodecError::State(StateArrayError::NonFinite { .. })
        ));
    }

    // Duplicates, empty input and empty names are errors, not panics.
    let mut bad = good.clone();
    bad.push(bad[0].clone());
    assert!(matches!(
        s.import(&bad).unwrap_err(),
        CodecError::State(StateArrayError::Duplicate { .. })
    ));
    assert!(s.import(&[]).is_err());
    assert!(s
        .import(&[(String::new(), vec![usize::MAX, 2], vec![])])
        .is_err());
    assert!(s == st, "a failed import changes nothing");
}

#[test]
fn thread_count_does_not_change_results() {
    let codec = codec(0);
    let frames = d1_frames(3);
    let r1 = run_steps(&codec, &mut codec.new_state(), &frames, &Pool::new(1));
    let r3 = run_steps(&codec, &mut codec.new_state(), &frames, &Pool::new(3));
    assert!(r1.audio == r3.audio && r1.stft == r3.stft);
}

#[test]
fn ids_outside_their_level_are_rejected_and_change_nothing() {
    let codec = codec(0);
    let pool = Pool::new(2);
    let good = d1_frames(2);
    let mut state = codec.new_state();
    run_steps(&codec, &mut state, &good[..1], &pool);
    let before = state.clone();
    let mut audio = vec![1f32; SAMPLES_PER_FRAME * 2];
    let mut stft = vec![1f32; 4 * 480 * 4];
    // A reserved id, the next level's first id, and garbage: each names its level.
    for (level, id) in [
        (0, 5),
        (3, rill_spectrostream::level_ids(4).start),
        (11, u32::MAX),
    ] {
        let mut ids = good[1];
        ids[level] = id;
        let err = codec
            .step(&mut state, &ids, &mut audio, Some(&mut stft), &pool)
            .unwrap_err();
        assert!(
            matches!(err, CodecError::TokenId { level: l, id: i, .. } if (l, i) == (level, id)),
            "{err}"
        );
        assert!(err.to_string().contains(&format!("level {level}")), "{err}");
        assert!(state == before, "a rejected frame changed the state");
        assert!(
            audio.iter().chain(&stft).all(|&v| v == 1.0),
            "a rejected frame wrote output"
        );
        let mut e = [0f32; 256];
        assert!(codec.rvq_embedding(&ids, &mut e).is_err());
        let batch = [good[0], ids];
        assert!(codec.decode_batched(&batch, &pool).is_err());
        assert!(codec.decode_batched_audio(&batch, &pool).is_err());
        assert!(codec.activation_peaks(&batch, &pool).is_err());
    }
    // Empty and one-frame batches are fine (nothing or only the masked frame).
    let b = codec.decode_batched(&[], &pool).unwrap();
    assert!(b.audio.is_empty() && b.stft.is_empty());
    let b = codec.decode_batched(&good[..1], &pool).unwrap();
    assert!(b.audio.is_empty() && b.stft.is_empty());
}
