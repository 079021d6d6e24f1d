//! Parity of the SpectroStream encoder with upstream's unmodified MLX encoder on random
//! weights: `testdata/mrt2/encoder/encoder.npz`, recorded by
//! `testdata/mrt2/encoder/make_encoder_fixture.py` (a missing file fails the test).
//! The encoder weights are synthesised from `manifest_spectrostream_encoder.json` (and
//! checked against the sha256 of the oracle's file), the RVQ codebook from
//! mrt2_small's manifest; both are cached in the test cache, never committed.
//!
//! Tolerances, set just outside what was measured (AMD EPYC, 2 cores):
//! * STFT front end: max |Δ| ≤ 1e-6 · max |X| (measured 2.1e-7 · 71.5: realfft vs
//!   MLX's FFT, both f32);
//! * 256-d frames: max |Δ| ≤ 3e-5 (measured 1.2e-5 on `long`, 7.5e-6 on `odd`; the
//!   frames' rms is ≈ 0.9, max ≈ 3.6);
//! * RVQ codes (all 64 levels recorded): equal, except that a row may first differ
//!   at a level whose recorded greedy margin (f64) is below 1e-5; the rest of such a
//!   row is not compared (the residuals differ from there on).

use std::path::PathBuf;

use rill_checkpoint::layout::RVQ_CODEBOOK;
use rill_checkpoint::synth::SynthFile;
use rill_checkpoint::Checkpoint;
use rill_kernels::Pool;
use rill_spectrostream::encoder::{PrefillWindow, ENCODED_LEVELS};
use rill_spectrostream::{CodecError, Encoder};

const STFT_TOL: f32 = 1e-6;
const FRAME_TOL: f32 = 3e-5;
const NEAR_TIE: f64 = 1e-5;

fn dir() -> PathBuf {
    rill_testkit::repo_root().join("testdata/mrt2/encoder")
}

fn require(name: &str) -> PathBuf {
    let p = dir().join(name);
    assert!(
        p.exists(),
        "fixture testdata/mrt2/encoder/{name} is missing: restore it with git, or re-record \
         it with testdata/mrt2/encoder/make_encoder_fixture.py (see testdata/mrt2/README.md)"
    );
    p
}

fn read_json(name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(require(name)).unwrap()).unwrap()
}

/// `(encoder.safetensors, codebook checkpoint)` of the recording, synthesised once.
fn weights() -> (PathBuf, PathBuf) {
    let settings = read_json("encoder.json");
    let file = "manifest_spectrostream_encoder.json";
    let tensors = rill_testkit::manifest_tensor_list(&read_json(file), file);
    let seed = settings["encoder_weights_seed"].as_u64().unwrap();
    let sha = settings["encoder_safetensors_sha256"].as_str().unwrap();
    let enc = rill_testkit::synthetic_file(
        SynthFile {
            model: "spectrostream_encoder",
            seed,
            oracle_sha256: Some(sha),
        },
        &tensors,
    );
    let cb: Vec<_> = rill_testkit::manifest_tensors("mrt2_small")
        .into_iter()
        .filter(|t| t.name == RVQ_CODEBOOK)
        .collect();
    assert_eq!(cb.len(), 1);
    let codebook = rill_testkit::synthetic_file(
        SynthFile {
            model: "mrt2_small_codebook",
            seed: settings["codec_weights_seed"].as_u64().unwrap(),
            oracle_sha256: None,
        },
        &cb,
    );
    (enc, codebook)
}

fn encoder() -> Encoder {
    let (enc, cb) = weights();
    let (enc, cb) = (
        Checkpoint::open(enc).unwrap(),
        Checkpoint::open(cb).unwrap(),
    );
    Encoder::load(&enc, &cb, rill_kernels::isa::active()).unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

fn max_abs(a: &[f32]) -> f32 {
    a.iter().fold(0f32, |m, x| m.max(x.abs()))
}

/// Compares the codes with the near-tie rule; returns the rows that first differ at a
/// near tie.
fn check_codes(tag: &str, got: &[u16], want: &[i64], margin: &[f64], levels: usize) -> usize {
    assert_eq!(got.len(), want.len());
    let mut near_ties = 0;
    for (row, ((g, w), m)) in got
        .chunks_exact(levels)
        .zip(want.chunks_exact(levels))
        .zip(margin.chunks_exact(levels))
        .enumerate()
    {
        if let Some(k) = (0..levels).find(|&k| g[k] as i64 != w[k]) {
            assert!(
                m[k] < NEAR_TIE,
                "{tag}: frame {row} level {k}: code {} vs upstream {} (margin {:e})",
                g[k],
                w[k],
                m[k]
            );
            near_ties += 1;
        }
    }
    near_ties
}

fn f64s(z: &rill_io::Npz, name: &str) -> Vec<f64> {
    match &z.get(name).unwrap().data {
        rill_io::Data::F64(v) => v.clone(),
        _ => panic!("{name} is not f64"),
    }
}

/// The frames, codes of one recorded signal; returns the frames' max |Δ|.
fn check_signal(enc: &Encoder, z: &rill_io::Npz, tag: &str, pool: &Pool) -> f32 {
    let (shape, wave) = z.f32(&format!("{tag}_waveform")).unwrap();
    assert_eq!(shape[1], 2);
    let t0 = std::time::Instant::now();
    let got = enc.analyze(&wave, pool).unwrap();
    let secs = t0.elapsed().as_secs_f64();
    if let Ok((_, want)) = z.f32(&format!("{tag}_stft")) {
        let d = max_abs_diff(&got.stft, &want);
        let scale = max_abs(&want);
        eprintln!(
            "{tag}: stft max |Δ| {d:e} (max |X| {scale}, ratio {:e})",
            d / scale
        );
        assert!(d <= STFT_TOL * scale, "{tag} stft max |Δ| {d}");
    }
    let (fshape, want) = z.f32(&format!("{tag}_frames")).unwrap();
    let d = max_abs_diff(&got.frames, &want);
    let rms = (want.iter().map(|v| (v * v) as f64).sum::<f64>() / want.len() as f64).sqrt();
    eprintln!(
        "{tag}: {} samples, {} frames in {secs:.2} s; frames max |Δ| {d:e} (rms {rms:.3})",
        shape[0], fshape[0]
    );
    assert!(d <= FRAME_TOL, "{tag} frames max |Δ| {d}");
    let (cshape, codes) = z.i64(&format!("{tag}_codes")).unwrap();
    assert_eq!(cshape, vec![fshape[0], ENCODED_LEVELS]);
    let margin = f64s(z, &format!("{tag}_margin"));
    let got_codes = enc.quantize(&got.frames, ENCODED_LEVELS, pool).unwrap();
    let ties = check_codes(tag, &got_codes, &codes, &margin, ENCODED_LEVELS);
    eprintln!("{tag}: 64-level codes equal except {ties} rows at near ties");
    // `encode` = the first 12 levels of the same.
    let twelve = enc.encode(&wave, pool).unwrap();
    assert_eq!(twelve.len(), fshape[0]);
    for (row, c) in twelve.iter().enumerate() {
        assert_eq!(&c[..], &got_codes[row * ENCODED_LEVELS..][..12]);
    }
    d
}

#[test]
fn encoder_matches_upstream() {
    let z = rill_io::Npz::read(require("encoder.npz")).unwrap();
    let enc = encoder();
    assert_eq!(enc.levels(), ENCODED_LEVELS);
    let pool = Pool::new(2);
    for tag in ["long", "odd"] {
        check_signal(&enc, &z, tag, &pool);
    }
}

#[test]
fn bad_input_is_an_error() {
    let enc = encoder();
    let pool = Pool::new(1);
    for bad in [
        vec![],
        vec![0.0; 3],
        vec![0.0, f32::NAN],
        vec![f32::INFINITY, 0.0],
    ] {
        let e = enc.encode(&bad, &pool).unwrap_err();
        assert!(matches!(e, CodecError::BadInput(_)), "{e}");
    }
    assert!(enc.quantize(&[0.0; 256], 65, &pool).is_err());
    assert!(enc.quantize(&[0.0; 255], 12, &pool).is_err());
    assert!(enc.quantize(&[f32::NAN; 256], 12, &pool).is_err());
    // Huge (finite) audio overflows inside the network: an error, not a panic.
    // The error says how loud the audio is and what to do.
    for loud in [1e30, 1e20] {
        let e = enc.encode(&vec![loud; 2 * 4800], &pool).unwrap_err();
        assert!(matches!(e, CodecError::BadInput(_)), "{e}");
        assert!(e.to_string().contains("far beyond full scale"), "{e}");
        assert!(e.to_string().contains(&format!("{loud:e}")), "{e}");
    }
    // One sample is enough for one frame.
    assert_eq!(enc.encode(&[0.1, -0.1], &pool).unwrap().len(), 1);
}

#[test]
fn wrong_files_are_errors() {
    let (enc, cb) = weights();
    let (enc, cb) = (
        Checkpoint::open(enc).unwrap(),
        Checkpoint::open(cb).unwrap(),
    );
    let isa = rill_kernels::isa::active();
    // Swapped files: each misses the other's tensors.
    let e = Encoder::load(&cb, &enc, isa).unwrap_err();
    assert!(e.to_string().contains("params/encoder/"), "{e}");
    let e = Encoder::load(&enc, &enc, isa).unwrap_err();
    assert!(e.to_string().contains(RVQ_CODEBOOK), "{e}");
    // A mis-shaped kernel is named.
    let name = "params/encoder/base_conv_first/conv/kernel";
    let data = vec![0u8; 4 * 7 * 7 * 4 * 32];
    let view =
        safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![7, 7, 4, 32], &data);
    let path = rill_testkit::cache_dir().join("encoder_bad_shape.safetensors");
    safetensors::tensor::serialize_to_file(vec![(name.to_string(), view.unwrap())], None, &path)
        .unwrap();
    let e = Encoder::load(&Checkpoint::open(&path).unwrap(), &cb, isa).unwrap_err();
    assert!(
        matches!(e, CodecError::TensorShape { name: ref n, .. } if n == name),
        "{e}"
    );
}

#[test]
fn thread_count_does_not_change_bits() {
    let z = rill_io::Npz::read(require("encoder.npz")).unwrap();
    let (_, wave) = z.f32("odd_waveform").unwrap();
    let enc = encoder();
    let one = enc.analyze(&wave, &Pool::new(1)).unwrap();
    let two = enc.analyze(&wave, &Pool::new(2)).unwrap();
    assert_eq!(one, two);
}

#[test]
fn prefill_ignores_padding() {
    let z = rill_io::Npz::read(require("encoder.npz")).unwrap();
    let (_, wave) = z.f32("long_waveform").unwrap();
    let enc = encoder();
    let pool = Pool::new(2);
    // Upstream's engine zero-pads to its traced length: the real audio's frames and
    // codes are the same bits as the audio's alone.
    let alone = enc.analyze(&wave, &pool).unwrap().frames;
    let mut padded = wave.clone();
    padded.resize(wave.len() + 2 * 48_000 * 2, 0.0);
    let long = enc.analyze(&padded, &pool).unwrap().frames;
    assert_eq!(alone[..], long[..alone.len()]);
    let codes = enc.encode(&wave, &pool).unwrap();
    assert_eq!(codes.len(), 75);
    let kept = enc
        .prefill_codes(&padded[..wave.len() + 1000], PrefillWindow::UPSTREAM, &pool)
        .unwrap();
    assert_eq!(kept[..], codes[25..50]);
    let short = PrefillWindow {
        max_frames: 60,
        trim_front: 5,
        trim_back: 3,
    };
    assert_eq!(
        enc.prefill_codes(&wave, short, &pool).unwrap()[..],
        codes[5..57]
    );
    assert!(enc
        .prefill_codes(&wave[..2 * 1920 * 50], PrefillWindow::UPSTREAM, &pool)
        .is_err());
    // The silent frame: the middle frame of the window's silence.
    let w = PrefillWindow {
        max_frames: 120,
        ..PrefillWindow::UPSTREAM
    };
    let silence = enc.encode(&vec![0.0; 120 * 1920 * 2], &pool).unwrap();
    assert_eq!(enc.silent_codes(w, &pool).unwrap(), silence[60]);
    eprintln!("silent codes (window of 120 frames): {:?}", silence[60]);
}

/// Timing of upstream's window length (28 s, the C++ engine's trace):
/// `cargo test --release -p rill-spectrostream --test encoder -- --ignored --nocapture`.
#[test]
#[ignore]
fn encode_28s_timing() {
    let z = rill_io::Npz::read(require("encoder.npz")).unwrap();
    let (_, wave) = z.f32("long_waveform").unwrap();
    let audio: Vec<f32> = wave.iter().copied().cycle().take(28 * 48_000 * 2).collect();
    let enc = encoder();
    for threads in [1, 2] {
        let pool = Pool::new(threads);
        let (t0, cpu0) = (std::time::Instant::now(), rill_testkit::thread_cpu_ms());
        let codes = enc.encode(&audio, &pool).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let cpu = (rill_testkit::thread_cpu_ms() - cpu0) / 1e3;
        assert_eq!(codes.len(), 700);
        eprintln!(
            "28 s of audio, {threads} thread(s): {secs:.2} s wall ({:.3}× real time), \
             calling thread's CPU {cpu:.2} s",
            secs / 28.0
        );
    }
}
