//! The two-byte early-layer codec modes (`CodecPrecision::F16Weights`,
//! `CodecPrecision::I16Weights`) against the reference recordings: audio SNR and
//! decoder-STFT cosine per fixture (D1, D2, D3, C2; a missing fixture fails), step
//! and batched mode, and step/batched equality.

mod common;

use common::*;
use rill_checkpoint::Checkpoint;
use rill_kernels::Pool;
use rill_spectrostream::{Codec, CodecOptions, CodecPrecision, LEVELS};

/// (min audio SNR dB, min STFT cosine) per mode, just under the lowest measured
/// over D1, D2, D3, C2 on the Xeon (AVX-512) guest: f16 63.5–64.6 dB, 1 − cosine
/// ≤ 2.24e-7 (f16 weights for every layer: ≈ 61 dB); int16 86.3–87.4 dB, 1 − cosine
/// ≤ 9.8e-10.
fn thresholds(p: CodecPrecision) -> (f64, f64) {
    match p {
        CodecPrecision::F16Weights => (63.0, 1.0 - 3e-7),
        CodecPrecision::I16Weights => (86.0, 1.0 - 2e-9),
        CodecPrecision::F32 | CodecPrecision::F16 => {
            unreachable!("f32 and fp16 have their own tests (parity, fp16_rescale)")
        }
    }
}

fn codec(seed: u64, precision: CodecPrecision) -> Codec {
    let path = common::checkpoint(seed);
    let ckpt = Checkpoint::open(&path).expect("opening the synthetic checkpoint");
    let options = CodecOptions {
        precision,
        ..CodecOptions::default()
    };
    Codec::load_with(&ckpt, options).expect("loading the codec")
}

/// Step-mode SNR/cosine against the reference (`keys`: audio, STFT, STFT mask).
fn check(
    precision: CodecPrecision,
    name: &str,
    seed: u64,
    frames: &[[u32; LEVELS]],
    z: &rill_io::Npz,
    keys: [&str; 3],
) {
    let codec = codec(seed, precision);
    assert_eq!(codec.precision(), precision);
    let (min_snr, min_cos) = thresholds(precision);
    let pool = Pool::new(2);
    let mut state = codec.new_state();
    let step = run_steps(&codec, &mut state, frames, &pool);
    let (_, want_audio) = z.f32(keys[0]).unwrap();
    let (_, want_stft) = z.f32(keys[1]).unwrap();
    let (_, mask) = z.bool(keys[2]).unwrap();
    let label = format!("{name} {precision:?}");
    let cos = stft_min_cosine(&format!("{label} step"), &step.stft, &want_stft, &mask);
    let snr = rill_testkit::snr_db(&want_audio, &step.audio);
    eprintln!("{label}: step audio SNR {snr:.1} dB, STFT min cosine {cos:.9}");
    assert!(snr >= min_snr, "{label}: SNR {snr:.1} dB < {min_snr} dB");
    assert!(cos >= min_cos, "{label}: STFT cosine {cos}");
    let batched = codec.decode_batched(frames, &pool).unwrap();
    check_step_vs_batched(&label, &step, &batched);
}

fn d_set(precision: CodecPrecision, name: &str, seed: u64) {
    let z = rill_testkit::fixture(&format!("{name}.npz"));
    let (shape, _) = z.i64("codes").unwrap();
    let (_, tokens) = z.i64("tokens").unwrap();
    let frames: Vec<[u32; LEVELS]> = tokens[..shape[0] * LEVELS]
        .chunks_exact(LEVELS)
        .map(|c| std::array::from_fn(|k| c[k] as u32))
        .collect();
    check(
        precision,
        name,
        seed,
        &frames,
        &z,
        ["audio_float", "decoder_stft", "decoder_stft_mask"],
    );
}

fn c2(precision: CodecPrecision) {
    let z = rill_testkit::fixture("C2.npz");
    let (_, codes) = z.i64("codes").unwrap();
    let frames = ids_from_codes(&codes);
    check(
        precision,
        "C2",
        2,
        &frames,
        &z,
        [
            "step_waveform",
            "step_decoder_stft",
            "step_decoder_stft_mask",
        ],
    );
}

#[test]
fn f16_weights_parity() {
    for (name, seed) in [("D1", 0), ("D2", 1), ("D3", 2)] {
        d_set(CodecPrecision::F16Weights, name, seed);
    }
    c2(CodecPrecision::F16Weights);
}

#[test]
fn i16_weights_parity() {
    for (name, seed) in [("D1", 0), ("D2", 1), ("D3", 2)] {
        d_set(CodecPrecision::I16Weights, name, seed);
    }
    c2(CodecPrecision::I16Weights);
}
