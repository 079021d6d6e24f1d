//! The opt-in `CodecPrecision::F16Weights` codec against the reference recordings:
//! audio SNR and decoder-STFT cosine per fixture (D1 required; D2, D3, C2 when
//! present), step and batched mode, and step/batched equality.

mod common;

use common::*;
use rill_checkpoint::{Checkpoint, ModelKind};
use rill_codec::{Codec, CodecOptions, CodecPrecision, LEVELS};
use rill_kernels::Pool;

/// Measured on the fixtures: 64–65 dB (f16 weights for every layer: ≈ 61 dB); the
/// threshold leaves a few dB of margin for other weights and inputs.
const MIN_SNR_DB: f64 = 60.0;
const MIN_COSINE: f64 = 0.9999;

fn f16_codec(seed: u64) -> Codec {
    let path = rill_testkit::synthetic_checkpoint(ModelKind::Small, seed);
    let ckpt = Checkpoint::open(&path).expect("opening the synthetic checkpoint");
    let options = CodecOptions {
        precision: CodecPrecision::F16Weights,
        ..CodecOptions::default()
    };
    Codec::load_with(&ckpt, options).expect("loading the codec")
}

/// Step-mode SNR/cosine against the reference (`keys`: audio, STFT, STFT mask).
fn check(name: &str, seed: u64, frames: &[[u32; LEVELS]], z: &rill_io::Npz, keys: [&str; 3]) {
    let codec = f16_codec(seed);
    assert_eq!(codec.precision(), CodecPrecision::F16Weights);
    let pool = Pool::new(2);
    let mut state = codec.new_state();
    let step = run_steps(&codec, &mut state, frames, &pool);
    let (_, want_audio) = z.f32(keys[0]).unwrap();
    let (_, want_stft) = z.f32(keys[1]).unwrap();
    let (_, mask) = z.bool(keys[2]).unwrap();
    let cos = stft_min_cosine(&format!("{name} f16 step"), &step.stft, &want_stft, &mask);
    let snr = rill_testkit::snr_db(&want_audio, &step.audio);
    eprintln!("{name} f16 weights: step audio SNR {snr:.1} dB, STFT min cosine {cos:.9}");
    assert!(
        snr >= MIN_SNR_DB,
        "{name}: f16 SNR {snr:.1} dB < {MIN_SNR_DB} dB"
    );
    assert!(cos >= MIN_COSINE, "{name}: f16 STFT cosine {cos}");
    let batched = codec.decode_batched(frames, &pool);
    check_step_vs_batched(&format!("{name} f16"), &step, &batched);
}

fn d_set(name: &str, seed: u64) {
    let z = rill_testkit::fixture(&format!("{name}.npz"));
    let (shape, _) = z.i64("codes").unwrap();
    let (_, tokens) = z.i64("tokens").unwrap();
    let frames: Vec<[u32; LEVELS]> = tokens[..shape[0] * LEVELS]
        .chunks_exact(LEVELS)
        .map(|c| std::array::from_fn(|k| c[k] as u32))
        .collect();
    check(
        name,
        seed,
        &frames,
        &z,
        ["audio_float", "decoder_stft", "decoder_stft_mask"],
    );
}

#[test]
fn d1_f16_weights_parity() {
    d_set("D1", 0);
}

#[test]
fn d2_d3_c2_f16_weights_parity() {
    for (name, seed) in [("D2", 1), ("D3", 2)] {
        if rill_testkit::testdata(&format!("{name}.npz")).exists() {
            d_set(name, seed);
        } else {
            eprintln!("SKIPPED {name}: testdata/mrt2/{name}.npz does not exist");
        }
    }
    let path = rill_testkit::testdata("C2.npz");
    if path.exists() {
        let z = rill_io::Npz::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let (_, codes) = z.i64("codes").unwrap();
        let frames = ids_from_codes(&codes);
        check(
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
    } else {
        eprintln!("SKIPPED C2: testdata/mrt2/C2.npz does not exist");
    }
}
