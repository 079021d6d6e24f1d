//! Parity with `testdata/mrt2/C2.npz` (weights seed 2, 12 random code frames, made by
//! the oracle's `record_codec.py`; a missing file fails the test).
//! `RILL_C2_NPZ=/path/to/codec.npz` points the test at another recording of the same kind.

mod common;

use common::*;
use rill_kernels::Pool;
use rill_spectrostream::{LEVELS, SAMPLES_PER_FRAME};

#[test]
fn c2_codec_parity() {
    // A missing recording fails (`require` says how to get it back).
    let path = std::env::var_os("RILL_C2_NPZ")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| rill_testkit::require("C2.npz"));
    let z = rill_io::Npz::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let (shape, codes) = z.i64("codes").unwrap();
    assert_eq!(shape[1], LEVELS);
    let frames = ids_from_codes(&codes);
    let t = frames.len();
    let codec = codec(2);
    let pool = Pool::new(2);

    let (_, emb) = z.f32("step_rvq_embeddings").unwrap();
    check_rvq("C2", &codec, &frames, &emb);

    let mut state = codec.new_state();
    let step = run_steps(&codec, &mut state, &frames, &pool);
    let (_, want_stft) = z.f32("step_decoder_stft").unwrap();
    let (_, mask) = z.bool("step_decoder_stft_mask").unwrap();
    let cos = stft_min_cosine("C2 step decoder_stft", &step.stft, &want_stft, &mask);
    assert!(cos >= MIN_STFT_COSINE, "step decoder_stft cosine {cos}");
    let (_, want_audio) = z.f32("step_waveform").unwrap();
    let (_, want_i16) = z.i64("step_int16").unwrap();
    assert!(step.audio[..SAMPLES_PER_FRAME * 2]
        .iter()
        .all(|&v| v == 0.0));
    check_audio("C2 step", &step.audio, &want_audio, Some(&want_i16));

    let batched = codec.decode_batched(&frames, &pool).unwrap();
    let (_, want_layer_stft) = z.f32("layer_decoder_stft").unwrap();
    let cos = stft_min_cosine(
        "C2 batched layer_decoder_stft",
        &batched.stft,
        &want_layer_stft,
        &vec![true; 4 * t - 4],
    );
    assert!(cos >= MIN_STFT_COSINE, "batched decoder_stft cosine {cos}");
    let (_, want_wave) = z.f32("layer_waveform").unwrap();
    check_audio(
        "C2 batched layer_waveform",
        &batched.audio,
        &want_wave,
        None,
    );

    check_step_vs_batched("C2", &step, &batched);
}
