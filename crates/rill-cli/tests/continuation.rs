//! `rill generate --continue-from`: a generated 3 s WAV is encoded, prefilled and
//! continued with random weights (the encoder synthesised into the cache); a file
//! that is not audio, or a clip too short to keep a frame, is an error with no
//! output file.

use std::path::Path;

mod common;
use common::{rill, stderr, tmp};

/// A scratch home (the random-weight cache is the tests' shared one, whose seed-0
/// checkpoint is the test cache's).
fn home(name: &str) -> std::path::PathBuf {
    tmp(name)
}

/// A mono 44.1 kHz WAV of `seconds` of a chord (resampled and duplicated by rill).
fn write_wav(path: &Path, seconds: f64) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 44_100,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for i in 0..(seconds * 44_100.0) as usize {
        let t = i as f64 / 44_100.0;
        let s: f64 = [220.0, 277.2, 329.6]
            .iter()
            .map(|f| (2.0 * std::f64::consts::PI * f * t).sin())
            .sum();
        w.write_sample((s * 6000.0) as i16).unwrap();
    }
    w.finalize().unwrap();
}

#[test]
fn continues_a_clip_with_random_weights() {
    let d = home("continue");
    let (clip, out) = (d.join("x.wav"), d.join("out.wav"));
    write_wav(&clip, 3.0);
    let o = rill(
        &[
            "generate",
            "--random-weights",
            "--continue-from",
            clip.to_str().unwrap(),
            "--seconds",
            "1",
            "--threads",
            "2",
            "-o",
            out.to_str().unwrap(),
        ],
        &d,
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("frames prefilled"), "{err}");
    let r = hound::WavReader::open(&out).unwrap();
    assert_eq!((r.spec().sample_rate, r.spec().channels), (48_000, 2));
    assert_eq!(r.duration(), 48_000, "one second of new audio");
    assert!(rill_testkit::rill_cache()
        .join("spectrostream_encoder_random_seed0.safetensors")
        .is_file());
}

#[test]
fn bad_clips_are_one_error_and_write_nothing() {
    let d = home("continue-bad");
    let (text, short) = (d.join("notes.wav"), d.join("short.wav"));
    std::fs::write(&text, "not audio at all\n").unwrap();
    write_wav(&short, 1.0);
    for (clip, needle, code) in [
        (&text, "not a readable audio file", 1),
        (&short, "too short", 2),
    ] {
        let out = d.join("out.wav");
        let o = rill(
            &[
                "generate",
                "--random-weights",
                "--continue-from",
                clip.to_str().unwrap(),
                "--seconds",
                "1",
                "-o",
                out.to_str().unwrap(),
            ],
            &d,
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{err}");
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.exists(), "nothing is written");
    }
}
