//! Parity with the reference recordings `testdata/mrt2/D*.npz` of the full sampler:
//! the first `C` sampled frames (those that produced `codes`) through the codec in
//! step and batched mode: D1 (weights seed 0, 25 frames), D2 (seed 1, 25 frames), D3
//! (seed 2, 12 frames). A missing recording fails the test.

mod common;

use common::*;
use rill_kernels::Pool;
use rill_spectrostream::{LEVELS, SAMPLES_PER_FRAME, STFT_FRAMES_PER_FRAME};

#[test]
fn d1_codec_parity() {
    d_set_parity("D1", 0);
}

#[test]
fn d2_codec_parity() {
    d_set_parity("D2", 1);
}

#[test]
fn d3_codec_parity() {
    d_set_parity("D3", 2);
}

fn d_set_parity(name: &str, weights_seed: u64) {
    let z = rill_testkit::fixture(&format!("{name}.npz"));
    let (shape, codes) = z.i64("codes").unwrap();
    let frames_n = shape[0];
    let (_, tokens) = z.i64("tokens").unwrap();
    let frames: Vec<[u32; LEVELS]> = tokens[..frames_n * LEVELS]
        .chunks_exact(LEVELS)
        .map(|c| std::array::from_fn(|k| c[k] as u32))
        .collect();
    assert_eq!(
        ids_from_codes(&codes),
        frames,
        "fixture codes = (tokens - 6) % 1024"
    );

    let codec = codec(weights_seed);
    let pool = Pool::new(2);

    // RVQ embeddings: same f32 adds in the same order → exact.
    let (_, emb) = z.f32("rvq_embeddings").unwrap();
    check_rvq(name, &codec, &frames, &emb);

    // Step mode.
    let mut state = codec.new_state();
    let step = run_steps(&codec, &mut state, &frames, &pool);
    eprintln!(
        "{name} step mode: {:.1} ms/frame ({} threads, {:?})",
        step.ms_per_frame,
        pool.threads(),
        codec.isa()
    );
    let (_, want_stft) = z.f32("decoder_stft").unwrap();
    let (_, mask) = z.bool("decoder_stft_mask").unwrap();
    assert!(!mask[0] && mask[STFT_FRAMES_PER_FRAME..].iter().all(|&m| m));
    let cos = stft_min_cosine(
        &format!("{name} step decoder_stft"),
        &step.stft,
        &want_stft,
        &mask,
    );
    assert!(cos >= MIN_STFT_COSINE, "step decoder_stft cosine {cos}");
    let (_, want_audio) = z.f32("audio_float").unwrap();
    let (_, want_i16) = z.i64("audio_int16").unwrap();
    assert!(
        step.audio[..SAMPLES_PER_FRAME * 2]
            .iter()
            .all(|&v| v == 0.0),
        "first block must be silence"
    );
    check_audio(
        &format!("{name} step"),
        &step.audio,
        &want_audio,
        Some(&want_i16),
    );

    // Batched (layer) mode.
    let t = std::time::Instant::now();
    let batched = codec.decode_batched(&frames, &pool).unwrap();
    eprintln!(
        "{name} batched: {:.1} ms/frame",
        t.elapsed().as_secs_f64() * 1e3 / frames_n as f64
    );
    let (shape, want_layer_stft) = z.f32("layer_decoder_stft").unwrap();
    assert_eq!(shape, vec![4 * frames_n - 4, 480, 4]);
    let all_valid = vec![true; 4 * frames_n - 4];
    let cos = stft_min_cosine(
        &format!("{name} batched layer_decoder_stft"),
        &batched.stft,
        &want_layer_stft,
        &all_valid,
    );
    assert!(cos >= MIN_STFT_COSINE, "batched decoder_stft cosine {cos}");
    let (_, want_wave) = z.f32("layer_waveform").unwrap();
    check_audio(
        &format!("{name} batched layer_waveform"),
        &batched.audio,
        &want_wave,
        None,
    );

    check_step_vs_batched(name, &step, &batched);
}
