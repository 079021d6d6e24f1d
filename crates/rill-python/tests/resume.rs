//! The core of the Python API without Python: a call split in two, a stream's state
//! with a frame in flight and a serialised state all continue exactly like one
//! uninterrupted call, in both stage arrangements.

use std::sync::Arc;

use rill_mrt2::ModelKind;
use rill_python::{Controls, Generated, LoadOptions, Model, Request, State, Stream};

fn model(threads: usize) -> Arc<Model> {
    let path = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(0));
    Arc::new(
        Model::load(&LoadOptions {
            checkpoint: Some(path),
            threads: Some(threads),
            ..Default::default()
        })
        .unwrap(),
    )
}

fn controls() -> Controls {
    Controls {
        style: Some(vec![
            660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22,
        ]),
        ..Default::default()
    }
}

fn run(m: &Model, frames: usize, state: Option<&State>) -> Generated {
    let r = Request {
        controls: controls(),
        frames,
        seed: 42,
        forced: None,
        audio: true,
        logits: false,
        continue_from: None,
    };
    m.generate(&r, state).unwrap()
}

#[test]
fn split_calls_and_streams_continue_exactly() {
    let two = model(2);
    let one = model(1);
    let whole = run(&two, 5, None);
    assert_eq!(whole.tokens.len(), 5 * 12);
    assert_eq!(whole.audio.len(), 5 * 3840);
    assert_eq!(
        run(&one, 5, None).audio,
        whole.audio,
        "stages change nothing"
    );

    // generate(2) + generate(3), also through bytes.
    let a = run(&two, 2, None);
    let s = a.state.clone().unwrap();
    let bytes = s.to_bytes(two.lm());
    let s2 = State::from_bytes(&bytes, two.lm(), two.codec()).unwrap();
    assert_eq!(s2, s);
    let b = run(&two, 3, Some(&s2));
    assert_eq!([a.audio, b.audio].concat(), whole.audio);
    assert_eq!([a.tokens, b.tokens].concat(), whole.tokens);

    // A two-stage stream's state has a frame in flight; it resumes in a call on
    // either stage arrangement (the sequential one decodes it first).
    let mut st = Stream::new(two.clone(), controls(), 42, None, None).unwrap();
    let head: Vec<f32> = (0..2)
        .flat_map(|_| st.next_frame().unwrap().unwrap().samples)
        .collect();
    let s = st.state();
    assert!(s.snapshot().pending.is_some());
    assert_eq!(s.frame(), 3);
    for m in [&two, &one] {
        let tail = run(m, 3, Some(&s));
        assert_eq!([head.clone(), tail.audio].concat(), whole.audio);
        let mut st = Stream::new((*m).clone(), controls(), 42, Some(&s), Some(3)).unwrap();
        let mut audio = head.clone();
        while let Some(f) = st.next_frame().unwrap() {
            audio.extend(f.samples);
        }
        assert_eq!(audio, whole.audio);
    }

    // Garbage is an error, never a panic.
    for bad in [
        &bytes[..20],
        &bytes[..bytes.len() / 3],
        b"RILLMRT\x01\x00{}".as_slice(),
    ] {
        assert!(State::from_bytes(bad, two.lm(), two.codec()).is_err());
    }
}
