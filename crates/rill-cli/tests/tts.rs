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
        (vec!["--language", "ja"], "open-jtalk-mecab-naist-jdic"),
        (vec!["--language", "de"], "--lexicon FILE"),
        (vec!["--speaker", "9"], "out of range"),
        (vec!["--temperature", "nan"], "temperature"),
    ] {
        let out = rill()
            // No OpenJTalk dictionary where the variable points.
            .env("OPEN_JTALK_DICT_DIR", scratch("no-openjtalk-dictionary"))
            .args(["tts", "--random-weights", "--text", "Hello.", "-o"])
            .arg(scratch("bad.wav"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: a usage error");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// The reduced-precision weight formats run the whole path (their products
/// approximate NeMo's, so sampling parts from the f32 stream; a smoke check of the
/// plumbing, the formats themselves are gated in rill-kernels).
#[test]
fn tts_runs_in_f16_bf16_and_int8() {
    for p in ["f16", "bf16", "int8"] {
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
    for (precision, linears) in [(None, "f32"), (Some("f16"), "f16")] {
        let o = rill()
            .args([
                "bench", "--model", "magpie", "--frames", "3", "--warmup", "1", "--json",
            ])
            .args(precision.map(|p| ["--precision", p]).iter().flatten())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["model"], "magpie");
        assert_eq!(v["linears"], linears);
        // Whole cycles of 2 frames (one decoder group beside one codec call).
        assert_eq!(v["codec_frames"], 2);
        assert!((3..=4).contains(&v["frames"].as_u64().unwrap()), "{v}");
        for k in ["decoder_ms", "codec_ms", "step_ms"] {
            assert!(v[k]["median"].as_f64().unwrap() > 0.0, "{k}");
        }
        assert!(v["first_audio_ms"].as_f64().unwrap() > 0.0);
        assert!(v["buffer_ms"].as_f64().unwrap() >= 0.0);
    }
}

/// `--dump` writes the oracle's keys in its shapes, and they agree with NeMo's
/// recording of the same run (`magpie_cached`, free-running, 32 frames).
#[test]
fn tts_dump_matches_the_oracle_recording() {
    let (out, dump) = (scratch("dump.wav"), scratch("dump.npz"));
    let status = rill()
        .args(["speak", "--random-weights", "--max-frames", "32"])
        .args(["--text", "Hello world, I read the rill docs.", "-o"])
        .arg(&out)
        .arg("--dump")
        .arg(&dump)
        .status()
        .unwrap();
    assert!(status.success());
    let got = rill_io::Npz::read(&dump).unwrap();
    let want = rill_io::Npz::read(rill_testkit::require_magpie("model_cached.npz")).unwrap();
    let (ts, tokens) = got.i64("text_tokens").unwrap();
    assert_eq!((ts, tokens), want.i64("text_tokens").unwrap());
    // Measured on the Xeon (AVX-512): encoder 6.9e-6, hidden 4.8e-6, LT logits 1.2e-5;
    // on an AMD EPYC (AVX2): 6.94e-6, 4.89e-6, 1.13e-5. Each bound is about twice that.
    for (key, tol) in [
        ("text_encoder_out", 1.4e-5),
        ("dec_hidden", 1e-5),
        ("lt_logits", 2.4e-5),
    ] {
        let (gs, g) = got.f32(key).unwrap();
        let (ws, w) = want.f32(key).unwrap();
        assert_eq!(gs, ws, "{key} shape");
        let d = rill_testkit::max_abs_diff(&g, &w);
        eprintln!("dump {key}: max |Δ| {d:.2e}");
        assert!(d <= tol, "{key}: max |Δ| {d}");
    }
    for key in ["lt_codes", "argmax_codes", "attended_timestep"] {
        assert_eq!(got.i64(key).unwrap(), want.i64(key).unwrap(), "{key}");
    }
    // The rest against the codec recording of the same 32 frames.
    let codec = rill_io::Npz::read(rill_testkit::require_magpie("nanocodec_decode.npz")).unwrap();
    let (ls, latents) = got.f32("codec_latents").unwrap();
    assert_eq!(ls, vec![1, 32, 32]);
    let (_, want_latents) = codec.f32("latents").unwrap();
    assert_eq!(latents, want_latents, "codec_latents");
    let (_, predicted) = got.i64("predicted_codes").unwrap();
    assert_eq!(predicted, codec.i64("codes").unwrap().1, "predicted_codes");
    let (_, audio) = got.f32("audio").unwrap();
    let (_, want_audio) = codec.f32("audio").unwrap();
    let d = rill_testkit::max_abs_diff(&audio, &want_audio);
    eprintln!("dump audio: max |Δ| {d:.2e}");
    // Measured 1.42e-5 on an AMD EPYC (AVX2); twice that.
    assert!(d <= 2.9e-5, "audio: max |Δ| {d}");
    let (fs, final_logits) = got.f32("final_logits_raw").unwrap();
    assert_eq!(fs, vec![32, 2, 8 * 2024]);
    assert!(final_logits.iter().all(|v| v.is_finite()));
}

/// `--force-codes` decodes the given codes whatever the sampler draws: with another
/// sampler seed, the recording's codes give the recording's decoder states.
#[test]
fn tts_force_codes_teacher_forces_the_decoder() {
    let want = rill_io::Npz::read(rill_testkit::require_magpie("model_cached.npz")).unwrap();
    let (_, codes) = want.i64("lt_codes").unwrap();
    let forced = scratch("forced.npy");
    let arr = rill_io::Array::new(
        vec![32, 8],
        rill_io::Data::I32(codes.iter().map(|&c| c as i32).collect()),
    );
    rill_io::write_npy(&forced, &arr).unwrap();
    let (out, dump) = (scratch("forced.wav"), scratch("forced.npz"));
    let status = rill()
        .args(["speak", "--random-weights", "--seed", "7"])
        .args(["--text", "Hello world, I read the rill docs.", "-o"])
        .arg(&out)
        .arg("--dump")
        .arg(&dump)
        .arg("--force-codes")
        .arg(&forced)
        .status()
        .unwrap();
    assert!(status.success());
    let got = rill_io::Npz::read(&dump).unwrap();
    let (_, predicted) = got.i64("predicted_codes").unwrap();
    let want_predicted: Vec<i64> = (0..8)
        .flat_map(|k| (0..32).map(move |f| (k, f)))
        .map(|(k, f)| codes[f * 8 + k])
        .collect();
    assert_eq!(predicted, want_predicted, "the forced codes are decoded");
    let (_, hidden) = got.f32("dec_hidden").unwrap();
    let (_, want_hidden) = want.f32("dec_hidden").unwrap();
    let d = rill_testkit::max_abs_diff(&hidden, &want_hidden);
    eprintln!("teacher-forced dec_hidden: max |Δ| {d:.2e}");
    // Measured 4.89e-6 on an AMD EPYC (AVX2); twice that.
    assert!(d <= 1e-5, "teacher-forced dec_hidden: max |Δ| {d}");
    let (_, sampled) = got.i64("lt_codes").unwrap();
    assert_ne!(
        sampled, codes,
        "seed 7 should sample other codes than seed 0"
    );

    // Bad code files are refused with the reason.
    for (shape, data, msg) in [
        (vec![4, 7], vec![0i32; 28], "expected [frames, 8]"),
        (
            vec![1, 8],
            vec![0, 0, 0, 2016, 0, 0, 0, 0],
            "codebook 3 has code 2016",
        ),
    ] {
        let bad = scratch("bad_codes.npy");
        rill_io::write_npy(&bad, &rill_io::Array::new(shape, rill_io::Data::I32(data))).unwrap();
        let o = rill()
            .args(["speak", "--random-weights", "--text", "Hello.", "-o"])
            .arg(scratch("bad.wav"))
            .arg("--force-codes")
            .arg(&bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(msg), "{err}");
    }
}
