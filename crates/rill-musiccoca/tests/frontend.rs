//! The log-mel frontend, the patches and the clip windowing against the oracle's
//! recordings (`testdata/musiccoca/`, see its README).
//!
//! `gate_seed1.npz` (the gate set: `audio_waveform`, `audio_mel`,
//! `audio_long_waveform`, the frontend constants, `audio_long_clip_embeddings`).

use std::path::Path;

use rill_io::{DecodedAudio, Npz};
use rill_musiccoca::frontend::{CLIP_SAMPLES, NUM_FRAMES, NUM_MEL_BINS, NUM_PATCHES, PATCH_DIM};
use rill_musiccoca::{clip_windows, clips_from_audio, patches, Error, Frontend, Weights};

fn recording(name: &str) -> Npz {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/musiccoca")
        .join(name);
    Npz::read(&p)
        .unwrap_or_else(|e| panic!("{e} (the MusicCoCa recordings: testdata/musiccoca/README.md)"))
}

fn f32s(z: &Npz, key: &str, shape: &[usize]) -> Vec<f32> {
    let (s, v) = z.f32(key).unwrap();
    assert_eq!(s, shape, "{key}");
    v
}

fn frontend(z: &Npz) -> Frontend {
    let mut w = Weights::new();
    w.insert(
        "frontend.window",
        vec![400],
        f32s(z, "frontend_window", &[400]),
    );
    w.insert(
        "frontend.mel_matrix",
        vec![1025, 128],
        f32s(z, "frontend_mel_matrix", &[1025, 128]),
    );
    let f = Frontend::from_weights(&mut w).unwrap();
    assert!(w.is_empty(), "the frontend takes its two tensors");
    f
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn log_mel_matches_the_recording() {
    let z = recording("gate_seed1.npz");
    let f = frontend(&z);
    let wave = f32s(&z, "audio_waveform", &[CLIP_SAMPLES]);
    let want = f32s(&z, "audio_mel", &[NUM_FRAMES, NUM_MEL_BINS]);
    let got = f.log_mel(&wave);
    let err = max_abs(&got, &want);
    let mean = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs() as f64)
        .sum::<f64>()
        / got.len() as f64;
    eprintln!("log-mel vs JAX f32: max {err:.3e}, mean {mean:.3e}");
    // Measured 6.20e-6 (mean 2.1e-7) on this gate clip, 8.58e-6 (mean 2.6e-7) on the
    // oracle's developer clip, with the f64 FFT; an all-f32 pipeline gave
    // 1.05e-5, an all-f64 one 1.0e-5 (the oracle's own numpy-f64 check: 9.9e-6).
    // The tolerance is just outside; DBraun's own is 1e-4.
    assert!(err <= 1.0e-5, "log-mel max abs error {err:e}");
    assert!(mean <= 5e-7, "log-mel mean abs error {mean:e}");

    // The patches of ours and of the recorded mel (the rearrangement itself is
    // checked index by index below).
    assert!(max_abs(&patches(&got), &patches(&want)) <= 1.0e-5);
    assert_eq!(patches(&want).len(), NUM_PATCHES * PATCH_DIM);

    // The allocation-free path gives the same bits.
    let mut s = f.scratch();
    let mut out = vec![f32::NAN; NUM_FRAMES * NUM_MEL_BINS];
    f.log_mel_into(&wave, &mut s, &mut out);
    assert_eq!(out, got);
}

#[test]
fn frontend_constants_and_clip_length() {
    let gate = recording("gate_seed1.npz");
    // The constants are seed-independent: the recording carries the ones the
    // synthetic assets are written with.
    let (_, window) = gate.f32("frontend_window").unwrap();
    assert_eq!(window, rill_musiccoca::synth::hann_window(400));
    let (_, mel) = gate.f32("frontend_mel_matrix").unwrap();
    assert_eq!(mel, rill_musiccoca::synth::mel_matrix());
    let f = frontend(&gate);
    let wave = f32s(&gate, "audio_waveform", &[CLIP_SAMPLES]);
    let mel = f.log_mel(&wave);
    assert!(mel
        .iter()
        .all(|x| x.is_finite() && (-6.91..6.0).contains(x)));

    // Silence is the floor everywhere.
    let floor = 1e-3f32.ln();
    assert!(f.log_mel(&[]).iter().all(|&x| x == floor));
    // Like `_embed_batch_clips`: a short clip is zero-padded, a long one truncated
    // (and only the first 158,960 samples reach the 992 kept frames).
    let short = &wave[..100_000];
    let mut padded = short.to_vec();
    padded.resize(CLIP_SAMPLES, 0.0);
    assert_eq!(f.log_mel(short), f.log_mel(&padded));
    let mut long = wave.clone();
    long.extend_from_slice(&[0.5; 20_000]);
    assert_eq!(f.log_mel(&long), mel);
    let mut tail = wave.clone();
    tail[158_960..].fill(0.9);
    assert_eq!(f.log_mel(&tail), mel);
}

#[test]
fn patches_rearrange_time_and_frequency() {
    // mel[t][m] = t * 1000 + m, exactly representable.
    let mel: Vec<f32> = (0..NUM_FRAMES * NUM_MEL_BINS)
        .map(|i| ((i / NUM_MEL_BINS) * 1000 + i % NUM_MEL_BINS) as f32)
        .collect();
    let p = patches(&mel);
    assert_eq!(p.len(), 496 * 256);
    for (row, patch) in p.chunks_exact(256).enumerate() {
        let (tp, mp) = (row / 8, row % 8);
        for (j, &v) in patch.iter().enumerate() {
            let (ti, mi) = (j / 16, j % 16);
            assert_eq!(v, ((tp * 16 + ti) * 1000 + mp * 16 + mi) as f32);
        }
    }
}

/// Upstream's windows, recomputed from its rule: `MusicCoCaBase.embed_audio` in
/// `magenta_rt/musiccoca.py` (the oracle's `third_party/`, blob 79f5df95),
/// lines 186-200: `hop = clip_len` (hop_length None), then
/// `for i in range(0, total_samples, hop): window = mono[:, i : i + clip_len]`,
/// zero-padded to `clip_len` if shorter (pad_end=True).
fn upstream_windows(mono: &[f32]) -> Vec<Vec<f32>> {
    let (clip_len, hop) = (CLIP_SAMPLES, CLIP_SAMPLES);
    (0..mono.len())
        .step_by(hop)
        .map(|i| {
            let mut w = mono[i..(i + clip_len).min(mono.len())].to_vec();
            w.resize(clip_len, 0.0);
            w
        })
        .collect()
}

#[test]
fn clip_windows_follow_upstream() {
    let (file, seconds) = ("gate_seed1.npz", 17);
    let z = recording(file);
    let (shape, long) = z.f32("audio_long_waveform").unwrap();
    assert_eq!(shape, vec![seconds * 16_000], "{file}");
    let (emb_shape, _) = z.f32("audio_long_clip_embeddings").unwrap();
    let w = emb_shape[0];

    let ours = clip_windows(&long).unwrap();
    assert_eq!(ours.len(), w, "{file}: upstream embedded {w} windows");
    assert_eq!(ours, upstream_windows(&long), "{file}");
    // The same through the decoded-audio path (16 kHz mono: no resampling).
    let audio = DecodedAudio {
        rate: 16_000,
        channels: 1,
        samples: long.clone(),
    };
    assert_eq!(clips_from_audio(&audio).unwrap(), ours, "{file}");
    // The last window: the tail, then zeros.
    let tail = long.len() - (w - 1) * CLIP_SAMPLES;
    let last = &ours[w - 1];
    assert_eq!(&last[..tail], &long[(w - 1) * CLIP_SAMPLES..]);
    assert!(last[tail..].iter().all(|&x| x == 0.0));
    // Edge lengths: exactly one clip, one sample more, one sample, 25 s (the
    // oracle's developer clip: 3 windows).
    for (n, w) in [
        (CLIP_SAMPLES, 1),
        (CLIP_SAMPLES + 1, 2),
        (1, 1),
        (400_000, 3),
    ] {
        let mono = vec![0.25f32; n];
        let c = clip_windows(&mono).unwrap();
        assert_eq!(c.len(), w, "{n}");
        assert_eq!(c, upstream_windows(&mono), "{n}");
    }
    assert!(matches!(clip_windows(&[]), Err(Error::Input(_))));
}

#[test]
fn clips_from_stereo_44k() {
    // 12 s of 44.1 kHz stereo, L = R: two clips of the resampled mono signal.
    let frames = 44_100 * 12;
    let samples: Vec<f32> = (0..frames)
        .flat_map(|i| {
            let v = (2.0 * std::f64::consts::PI * 440.0 * i as f64 / 44_100.0).sin() as f32 * 0.5;
            [v, v]
        })
        .collect();
    let audio = DecodedAudio {
        rate: 44_100,
        channels: 2,
        samples,
    };
    let clips = clips_from_audio(&audio).unwrap();
    assert_eq!(clips.len(), 2);
    assert!(clips.iter().all(|c| c.len() == CLIP_SAMPLES));
    // 12 s at 16 kHz = 192,000 samples: the second clip holds 32,000, then zeros.
    assert!(clips[1][32_000..].iter().all(|&x| x == 0.0));
    let k = 80_000;
    let want = (2.0 * std::f64::consts::PI * 440.0 * k as f64 / 16_000.0).sin() as f32 * 0.5;
    assert!((clips[0][k] - want).abs() < 1e-4);

    let empty = DecodedAudio {
        rate: 48_000,
        channels: 2,
        samples: vec![],
    };
    assert!(matches!(clips_from_audio(&empty), Err(Error::Input(_))));
}
