//! `rill speak` (alias `tts`) end to end against NeMo: text → G2P → tokens → Magpie (CFG, attention
//! prior, local transformer, torch's sampler) → NanoCodec → 16-bit WAV, on the
//! oracle's random weights. The reference is the oracle's recording of NeMo 3.0.0
//! speaking the same sentence with the same speaker and seed (`magpie_cached`, whose
//! 32 frames of codes and audio are in `testdata/magpie/nanocodec_decode.npz`).

use std::path::PathBuf;
use std::process::Command;

fn rill() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rill"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = rill_testkit::repo_root().join("target/rill-test-cache/tts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn tts_speaks_nemos_waveform_for_the_recorded_sentence() {
    let out = scratch("hello.wav");
    let status = rill()
        .args([
            "tts",
            "--random-weights",
            "--max-frames",
            "32",
            "--threads",
            "2",
        ])
        .args(["--text", "Hello world, I read the rill docs.", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let mut wav = hound::WavReader::open(&out).unwrap();
    let spec = wav.spec();
    assert_eq!(
        (spec.channels, spec.sample_rate, spec.bits_per_sample),
        (1, 22_050, 16)
    );
    let got: Vec<i16> = wav.samples::<i16>().map(Result::unwrap).collect();
    let z = rill_io::Npz::read(rill_testkit::require_magpie("nanocodec_decode.npz")).unwrap();
    let (_, audio) = z.f32("audio").unwrap();
    // 32 frames (no EOS within the cap in the recording either).
    assert_eq!(got.len(), audio.len(), "samples");
    // The codec agrees with NeMo to ≤ 1.2e-5 (0.4 LSB), and every frame's codes are
    // NeMo's, so each sample is NeMo's rounded value or its neighbour.
    let mut off = 0usize;
    for (i, (&g, &a)) in got.iter().zip(&audio).enumerate() {
        let want = (a.clamp(-1.0, 1.0) * 32767.0).round() as i32;
        let d = (g as i32 - want).abs();
        assert!(d <= 1, "sample {i}: {g} vs NeMo {want}");
        off += (d != 0) as usize;
    }
    eprintln!(
        "rill tts vs NeMo: {off}/{} samples one LSB off, none more",
        got.len()
    );
}

#[test]
fn tts_without_weights_says_how_to_get_them() {
    let out = rill()
        .args(["tts", "--text", "Hello.", "-o"])
        .arg(scratch("none.wav"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nvidia/magpie_tts_multilingual_357m"), "{err}");
    assert!(err.contains("--random-weights"), "{err}");
}

#[test]
fn tts_rejects_other_languages_and_bad_speakers() {
    for (args, want) in [
        (vec!["--language", "de"], "not supported yet"),
        (vec!["--speaker", "9"], "out of range"),
        (vec!["--temperature", "nan"], "temperature"),
    ] {
        let out = rill()
            .args(["tts", "--random-weights", "--text", "Hello.", "-o"])
            .arg(scratch("bad.wav"))
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// The reduced-precision weight formats run the whole path (their products
/// approximate NeMo's, so sampling parts from the f32 stream; a smoke check of the
/// plumbing, the formats themselves are gated in rill-kernels).
#[test]
fn tts_runs_in_bf16_and_int8() {
    for p in ["bf16", "int8"] {
        let out = scratch(&format!("p-{p}.wav"));
        let o = rill()
            .args([
                "tts",
                "--random-weights",
                "--max-frames",
                "6",
                "--precision",
                p,
            ])
            .args(["--text", "Hello.", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{p}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let wav = hound::WavReader::open(&out).unwrap();
        let n = wav.len() as usize;
        assert!(
            n.is_multiple_of(1024) && (4 * 1024..=6 * 1024).contains(&n),
            "{p}: {n} samples"
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("{p} weights")), "{err}");
    }
}

/// One stage or two (decoder of frame n+1 beside the codec of frame n): the same
/// samples, and every frame of a multi-sentence text is written.
#[test]
fn tts_stages_give_the_same_audio() {
    let text = "Hello world. I read the rill docs! Is it clear?";
    let run = |stages: &str, threads: &str| {
        let out = scratch(&format!("stages-{stages}-{threads}.wav"));
        let o = rill()
            .args([
                "tts",
                "--random-weights",
                "--max-frames",
                "5",
                "--stages",
                stages,
            ])
            .args(["--threads", threads, "--text", text, "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut r = hound::WavReader::open(&out).unwrap();
        r.samples::<i16>().map(Result::unwrap).collect::<Vec<_>>()
    };
    let one = run("one", "2");
    assert!(!one.is_empty() && one.len().is_multiple_of(1024));
    assert_eq!(one, run("two", "2"), "two stages");
    assert_eq!(one, run("two", "3"), "two stages, 3 threads");
}

/// `rill bench --model magpie` runs and reports its figures (no timing asserted).
#[test]
fn bench_magpie_reports_json() {
    let o = rill()
        .args([
            "bench", "--model", "magpie", "--frames", "3", "--warmup", "1", "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["model"], "magpie");
    assert_eq!(v["frames"], 3);
    for k in ["decoder_ms", "codec_ms", "step_ms"] {
        assert!(v[k]["median"].as_f64().unwrap() > 0.0, "{k}");
    }
    assert!(v["first_audio_ms"].as_f64().unwrap() > 0.0);
}
