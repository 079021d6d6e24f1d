//! Session inputs are validated (errors name the value, nothing panics), and the
//! frame cap ends an utterance.

mod common;

use rill_kernels::Pool;
use rill_magpie::{InferenceParams, Session};

#[test]
fn bad_inputs_are_rejected_with_a_reason() {
    let m = common::oracle_model();
    let pool = Pool::new(1);
    let p = InferenceParams::default;
    let err = |ids: &[u32], speaker: usize, params: InferenceParams| {
        Session::new(m.clone(), ids, speaker, params, 0, &pool)
            .unwrap_err()
            .to_string()
    };
    assert!(err(&[1, 2, 96], 0, p()).contains("text token id is 96"));
    assert!(err(&[1, 2, 500], 0, p()).contains("text token id is 500"));
    assert!(err(&[1, 2], 5, p()).contains("speaker is 5, but must be in 0..5"));
    assert!(err(&vec![3; 2048], 0, p()).contains("text length is 2049"));
    let bad = |f: fn(&mut InferenceParams)| {
        let mut q = p();
        f(&mut q);
        q
    };
    assert!(err(&[1], 0, bad(|q| q.topk = 0)).contains("topk is 0"));
    assert!(err(&[1], 0, bad(|q| q.max_decoder_steps = 2000)).contains("max_decoder_steps is 2000"));
    assert!(err(&[1], 0, bad(|q| q.temperature = f32::NAN)).contains("temperature"));
    assert!(
        err(&[1], 0, bad(|q| q.apply_prior_to_layers = Some(vec![12])))
            .contains("apply_prior_to_layers")
    );
    assert!(err(
        &[1],
        0,
        bad(|q| q.estimate_alignment_from_layers = Some(vec![]))
    )
    .contains("estimate_alignment_from_layers"));
}

#[test]
fn frame_cap_ends_the_utterance() {
    let m = common::oracle_model();
    let pool = Pool::new(2);
    let params = InferenceParams {
        max_decoder_steps: 3,
        temperature: 0.0, // argmax: no sampling noise
        ..InferenceParams::default()
    };
    let mut s = Session::new(m, &[10, 20, 30, 40, 50], 2, params, 0, &pool).unwrap();
    let mut n = 0;
    while let Some(f) = s.step(&pool).unwrap() {
        assert!(f.iter().all(|&c| c < 2016), "{f:?}");
        n += 1;
    }
    assert_eq!(n, 3);
    assert!(s.is_finished());
    assert_eq!(s.step(&pool).unwrap(), None);
    assert_eq!(s.frames(), 3);
}
