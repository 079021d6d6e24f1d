//! Session behaviour: save/load continues bit-identically, forced tokens are
//! validated, reset returns to the initial state.

mod common;

use common::{model, pool, Recording};
use rill_mrt2::session_file::{self, ModelId};
use rill_mrt2::{Precision, Session, LEVELS};

#[test]
fn save_load_continues_bit_identically() {
    let rec = Recording::load("D2");
    let pool = pool();
    let m = model(rec.weights_seed(), Precision::F32);
    let mut a = Session::new(m.clone(), rec.sampler_seed(), &pool);
    a.set_conditioning(&rec.conditioning(), &pool).unwrap();
    a.set_sampling(rec.sampling()).unwrap();
    // 45 frames: past the 41-slot ring wrap, so restored ring positions matter.
    for _ in 0..45 {
        a.step(&pool, None);
    }
    let dir = rill_testkit::cache_dir();
    let path = dir.join("session_test.rillsession");
    let extra = vec![(
        "codec/test".to_string(),
        vec![2, 3],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.5],
    )];
    a.save(&path, &extra).unwrap();
    let cont_a: Vec<[u32; LEVELS]> = (0..12).map(|_| a.step(&pool, None)).collect();

    // A different fresh session (other seed, default controls) restored from the file.
    let mut b = Session::new(m, 1, &pool);
    let got_extra = b.load(&path, &pool).unwrap();
    assert_eq!(got_extra, extra);
    assert_eq!(b.conditioning(), &rec.conditioning());
    assert_eq!(b.sampling(), rec.sampling());
    let cont_b: Vec<[u32; LEVELS]> = (0..12).map(|_| b.step(&pool, None)).collect();
    assert_eq!(cont_a, cont_b);
    assert_eq!(a.state(), b.state());
    // The continuation also equals the recording (frames 45..57 of D2).
    assert_eq!(&cont_a[..], &rec.tokens[45..57]);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn load_rejects_other_precision_and_garbage() {
    let pool = pool();
    let m32 = model(0, Precision::F32);
    let s = Session::new(m32, 42, &pool);
    let dir = rill_testkit::cache_dir();
    let path = dir.join("session_precision.rillsession");
    s.save(&path, &[]).unwrap();
    let mut b = Session::new(model(1, Precision::F32), 42, &pool);
    let e = b.load(&path, &pool).unwrap_err().to_string();
    assert!(e.contains("other weights"), "{e}");
    let mut b = Session::new(model(0, Precision::Bf16), 42, &pool);
    let e = b.load(&path, &pool).unwrap_err().to_string();
    assert!(e.contains("precision"), "{e}");
    std::fs::write(&path, b"not a session").unwrap();
    assert!(b.load(&path, &pool).is_err());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn load_rejects_nan_temperature_and_changes_nothing() {
    let pool = pool();
    let m = model(0, Precision::F32);
    let mut a = Session::new(m.clone(), 42, &pool);
    a.step(&pool, None);
    let path = rill_testkit::cache_dir().join("session_nan.rillsession");
    a.save(&path, &[]).unwrap();
    let ckpt = rill_checkpoint::Checkpoint::open(&path).unwrap();
    let mut data = session_file::read(&ckpt, &ModelId::of(&m)).unwrap();
    drop(ckpt);
    // NaN used to load and then sample code 0 at every step.
    data.sampling.temperature = f32::NAN;
    data.write(&path, &ModelId::of(&m)).unwrap();
    let mut b = Session::new(m, 7, &pool);
    let before = (b.state().clone(), b.sampling(), b.conditioning().clone());
    let e = b.load(&path, &pool).unwrap_err().to_string();
    assert!(e.contains("temperature is NaN"), "{e}");
    assert_eq!(
        before,
        (b.state().clone(), b.sampling(), b.conditioning().clone()),
        "a refused file changes nothing"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn forced_tokens_are_validated_and_reset_restarts() {
    let pool = pool();
    let m = model(0, Precision::F32);
    let mut s = Session::new(m, 42, &pool);
    let mut bad = [0u32; LEVELS];
    for (k, t) in bad.iter_mut().enumerate() {
        *t = (6 + 1024 * k) as u32;
    }
    bad[3] = 5; // outside level 3
    let e = s.step_forced(&bad, &pool, None).unwrap_err().to_string();
    assert!(e.contains("depth step 3"), "{e}");
    let first = s.step(&pool, None);
    s.step(&pool, None);
    s.reset(42);
    assert_eq!(s.state().frame, 0);
    assert_eq!(s.step(&pool, None), first);
}

/// Streams stepped together (layer by layer across them, two at a time through
/// each product) give each stream's tokens and state bit for bit as stepped alone,
/// with different seeds, controls and sampling: the live int8 weights past the
/// 41-slot ring wrap; f32, bf16 and 4-bit (their two-vector products or its
/// fallback) for a few frames; two streams and three (a pair and one alone).
#[test]
fn stepping_together_changes_no_bit() {
    let rec = Recording::load("D2");
    let pool = pool();
    for (precision, frames) in [
        (Precision::Int8, 43),
        (Precision::F32, 4),
        (Precision::Bf16, 2),
        (Precision::Lut4, 2),
    ] {
        let m = model(rec.weights_seed(), precision);
        let make = |seed: u64, recorded: bool| {
            let mut s = Session::new(m.clone(), seed, &pool);
            if recorded {
                s.set_conditioning(&rec.conditioning(), &pool).unwrap();
                s.set_sampling(rec.sampling()).unwrap();
            }
            s
        };
        let (mut a, mut b, mut c) = (
            make(rec.sampler_seed(), true),
            make(7, false),
            make(9, true),
        );
        let (mut ta, mut tb, mut tc) = (
            make(rec.sampler_seed(), true),
            make(7, false),
            make(9, true),
        );
        for frame in 0..frames {
            // Three streams, then two (the third alone in between).
            if frame % 2 == 0 {
                let alone = [
                    a.step(&pool, None),
                    b.step(&pool, None),
                    c.step(&pool, None),
                ];
                let mut tokens = [[0u32; LEVELS]; 3];
                Session::step_together(&mut [&mut ta, &mut tb, &mut tc], &pool, &mut tokens);
                assert_eq!(tokens, alone, "{precision:?} frame {frame}, three streams");
            } else {
                let alone = [a.step(&pool, None), b.step(&pool, None)];
                let mut tokens = [[0u32; LEVELS]; 2];
                Session::step_together(&mut [&mut ta, &mut tb], &pool, &mut tokens);
                assert_eq!(tokens, alone, "{precision:?} frame {frame}, two streams");
                assert_eq!(c.step(&pool, None), tc.step(&pool, None));
            }
        }
        assert_eq!(a.state(), ta.state());
        assert_eq!(b.state(), tb.state());
        assert_eq!(c.state(), tc.state());
        assert_ne!(a.state().prev, b.state().prev, "the two streams differ");
    }
}
