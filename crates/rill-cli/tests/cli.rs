//! The `rill` binary as a user runs it: outputs match the reference recordings,
//! bad input gives one clear line and a non-zero exit, outputs are checked first.

use std::path::Path;
use std::process::Output;

use rill_io::{Array, Data, Npz};
use rill_mrt2::ModelKind;

mod common;
use common::{ckpt, rill, rill_env, stderr, tmp};

/// Runs `rill cmd --checkpoint ck rest…`.
fn rill_ck(cmd: &str, ck: &str, rest: &[&str], home: &Path) -> Output {
    rill(&[&[cmd, "--checkpoint", ck][..], rest].concat(), home)
}

/// Runs `rill decode` of the token file `tokens` into `out`, with `extra` flags.
fn decode(ck: &str, tokens: &str, out: &str, extra: &[&str], home: &Path) -> Output {
    rill_ck(
        "decode",
        ck,
        &[&["--tokens", tokens, "-o", out][..], extra].concat(),
        home,
    )
}

/// Fails with exit status 1 and an error line containing `needle`.
fn assert_user_error(o: &Output, needle: &str) {
    assert_error_status(o, needle, 1);
}

/// As [`assert_user_error`] for a usage error: exit status 2.
fn assert_usage_error(o: &Output, needle: &str) {
    assert_error_status(o, needle, 2);
}

fn assert_error_status(o: &Output, needle: &str, status: i32) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(status), "stderr: {e}");
    let line = e
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no error line: {e}"));
    assert!(line.contains(needle), "expected {needle:?} in {line:?}");
    assert!(!e.contains("panicked"), "{e}");
}

/// The interleaved int16 samples of a 48 kHz stereo WAV (asserting the format).
fn wav_samples(path: &Path) -> Vec<i64> {
    let mut r = hound::WavReader::open(path).unwrap();
    assert_eq!(r.spec().sample_rate, 48_000);
    assert_eq!(r.spec().channels, 2);
    r.samples::<i16>().map(|s| s.unwrap() as i64).collect()
}

const D1_STYLE: &str = "660,1016,295,206,857,841,391,857,619,70,401,22";

#[test]
fn generate_matches_reference_and_decode_matches_generate() {
    let d = tmp("gen");
    let ck = ckpt(0);
    let (wav, toks, dump) = (d.join("a.wav"), d.join("a.npy"), d.join("a.npz"));
    let o = rill_ck(
        "generate",
        &ck,
        &[
            "--frames",
            "6",
            "--style-codes",
            D1_STYLE,
            "-o",
            wav.to_str().unwrap(),
            "--tokens-out",
            toks.to_str().unwrap(),
            "--dump",
            dump.to_str().unwrap(),
            "--threads",
            "2",
        ],
        &d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("real-time factor"));

    // Tokens, logits and audio equal upstream's recording D1 (same settings).
    let reference = rill_testkit::fixture("D1.npz");
    let ours = Npz::read(&dump).unwrap();
    let (_, t) = ours.i64("tokens").unwrap();
    let (_, rt) = reference.i64("tokens").unwrap();
    assert_eq!(t, rt[..6 * 12]);
    let (shape, logits) = ours.f32("logits").unwrap();
    assert_eq!(shape, vec![6, 12, 12294]);
    let (_, rl) = reference.f32("logits_level").unwrap();
    for n in 0..6 {
        for k in 0..12 {
            let lo = (n * 12 + k) * 12294 + 6 + 1024 * k;
            let ref_row = &rl[(n * 12 + k) * 1024..][..1024];
            // As the LM parity tests (measured 1 − 3.0e-12 at worst).
            let c = rill_testkit::cosine(&logits[lo..lo + 1024], ref_row);
            assert!(c >= 1.0 - 1e-11, "frame {n} step {k}: logits cosine {c}");
        }
    }
    let (shape, pcm) = ours.i64("audio_int16").unwrap();
    assert_eq!(shape, vec![6, 1920, 2]);
    let (_, rpcm) = reference.i64("audio_int16").unwrap();
    let worst = pcm
        .iter()
        .zip(&rpcm)
        .map(|(a, b)| (a - b).abs())
        .max()
        .unwrap();
    assert!(worst <= 1, "int16 differs by {worst}");

    // The WAV holds exactly the dumped int16 samples.
    let samples = wav_samples(&wav);
    assert_eq!(samples, pcm);

    // `rill decode` of the written tokens gives the same audio (streaming mode)…
    let wav2 = d.join("b.wav");
    let o = decode(&ck, toks.to_str().unwrap(), wav2.to_str().unwrap(), &[], &d);
    assert!(o.status.success(), "{}", stderr(&o));
    let s2 = wav_samples(&wav2);
    assert_eq!(s2, samples);
    // …and batched mode equals it shifted by one 1920-sample frame.
    let wav3 = d.join("c.wav");
    let o = decode(
        &ck,
        toks.to_str().unwrap(),
        wav3.to_str().unwrap(),
        &["--batched"],
        &d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let s3 = wav_samples(&wav3);
    // Step and batched decoding are bit-identical in f32, so the int16 is too.
    assert_eq!(s3, samples[2 * 1920..]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn force_tokens_reproduces_the_reference_path() {
    let d = tmp("force");
    let reference = rill_testkit::fixture("D2.npz");
    let (_, t) = reference.i64("tokens").unwrap();
    let forced = d.join("forced.npy");
    let a = Array::new(
        vec![4, 12],
        Data::I32(t[..48].iter().map(|&v| v as i32).collect()),
    );
    rill_io::write_npy(&forced, &a).unwrap();
    let dump = d.join("f.npz");
    let ck = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(1));
    let o = rill_ck(
        "generate",
        ck.to_str().unwrap(),
        &[
            "--force-tokens",
            forced.to_str().unwrap(),
            "--style-codes",
            "325,98,979,657,802,453,475,622,729,934,567,782",
            "--notes",
            "48,55,60,64,67",
            "--drums",
            "on",
            "--cfg-musiccoca",
            "5",
            "--cfg-notes",
            "2",
            "--temperature",
            "1.0",
            "--top-k",
            "100",
            "--seed",
            "7",
            "--no-audio",
            "--dump",
            dump.to_str().unwrap(),
        ],
        &d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let ours = Npz::read(&dump).unwrap();
    assert_eq!(ours.i64("tokens").unwrap().1, t[..48]);
    let (_, l) = ours.f32("logits_level").unwrap();
    let (_, rl) = reference.f32("logits_level").unwrap();
    // Per step, as the LM parity tests (measured 1 − 3.0e-12 at worst).
    for (k, (a, b)) in l.chunks(1024).zip(rl.chunks(1024)).enumerate() {
        let c = rill_testkit::cosine(a, b);
        assert!(c >= 1.0 - 1e-11, "step {k}: logits cosine {c}");
    }
    assert_eq!(l.len(), 4 * 12 * 1024);
    let (_, c) = ours.i64("cond_tokens").unwrap();
    assert_eq!(c, reference.i64("cond_tokens").unwrap().1);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_input_gives_one_clear_line() {
    let d = tmp("bad");
    let ck = ckpt(0);
    let out = d.join("x.wav");
    let out = out.to_str().unwrap();
    let base = [
        "generate",
        "--checkpoint",
        ck.as_str(),
        "--frames",
        "1",
        "-o",
        out,
    ];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        rill(&a, &d)
    };
    assert_usage_error(&run(&["--style-codes", "1,2,3"]), "exactly 12");
    assert_usage_error(
        &run(&["--style-codes", "0,0,0,0,0,0,0,0,0,0,0,1024"]),
        "0..1023",
    );
    assert_usage_error(&run(&["--notes", "60,200"]), "MIDI range");
    assert_usage_error(&run(&["--top-k", "0"]), "--top-k");
    assert_usage_error(&run(&["--temperature", "-1"]), "--temperature");
    assert_usage_error(&run(&["--threads", "0"]), "thread count");
    assert_usage_error(&run(&["--threads", "100000"]), "1..=256");
    assert_usage_error(
        &run(&["--stages", "one", "--lm-threads", "1"]),
        "--stages two",
    );
    assert_usage_error(
        &run(&["--threads", "2", "--lm-threads", "2"]),
        "--lm-threads",
    );
    let with_env = |k: &str, v: &str| rill_env(&base, &d, &[(k, v)]);
    assert_usage_error(&with_env("RILL_ISA", "avx-512"), "portable, avx2");
    assert_usage_error(&with_env("RILL_THREADS", "two"), "RILL_THREADS");
    assert_user_error(
        &run(&["--force-tokens", "/nonexistent/t.npy"]),
        "/nonexistent/t.npy",
    );
    let garbage = d.join("garbage.npy");
    std::fs::write(&garbage, b"definitely not numpy").unwrap();
    assert_user_error(
        &run(&["--force-tokens", garbage.to_str().unwrap()]),
        "garbage.npy",
    );
    let wrong = d.join("wrong.npy");
    rill_io::write_npy(&wrong, &Array::new(vec![2, 3], Data::I32(vec![6; 6]))).unwrap();
    assert_user_error(
        &run(&["--force-tokens", wrong.to_str().unwrap()]),
        "[N, 12]",
    );
    let range = d.join("range.npy");
    rill_io::write_npy(&range, &Array::new(vec![1, 12], Data::I32(vec![6; 12]))).unwrap();
    assert_user_error(
        &run(&["--force-tokens", range.to_str().unwrap()]),
        "level 1",
    );
    assert!(
        !Path::new(out).exists(),
        "no output may appear for failed runs"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn one_and_two_stages_write_the_same_audio_and_tokens() {
    let d = tmp("stages");
    let ck = ckpt(0);
    let run = |stages: &str, threads: &str| {
        let (wav, toks) = (
            d.join(format!("{stages}{threads}.wav")),
            d.join(format!("{stages}{threads}.npy")),
        );
        let o = rill_ck(
            "generate",
            &ck,
            &[
                "--frames",
                "8",
                "--notes",
                "60,64,67",
                "--precision",
                "int8",
                "--threads",
                threads,
                "--stages",
                stages,
                "-o",
                wav.to_str().unwrap(),
                "--tokens-out",
                toks.to_str().unwrap(),
            ],
            &d,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains(if stages == "two" {
            "two-stage"
        } else {
            "sequential"
        }));
        (wav_samples(&wav), std::fs::read(&toks).unwrap())
    };
    let one = run("one", "2");
    assert_eq!(one.0.len(), 8 * 1920 * 2, "every frame is written");
    assert_eq!(run("two", "2"), one);
    assert_eq!(run("two", "3"), one);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unwritable_output_fails_before_any_work() {
    let d = tmp("unwritable");
    let ck = ckpt(0);
    let o = rill_ck(
        "generate",
        &ck,
        &["--frames", "50", "-o", "/nonexistent/dir/out.wav"],
        &d,
    );
    assert_user_error(&o, "/nonexistent/dir/out.wav");
    assert!(
        !stderr(&o).contains("loaded"),
        "must fail before loading the model"
    );
    // A valid token file, so the only thing wrong is the output (the tokens used
    // to be a missing file, and the test passed on that error instead).
    let tokens = d.join("t.npy");
    let ids: Vec<i32> = (0..2 * 12).map(|i| 6 + 1024 * (i % 12)).collect();
    rill_io::write_npy(&tokens, &Array::new(vec![2, 12], Data::I32(ids))).unwrap();
    let o = decode(&ck, tokens.to_str().unwrap(), "/nonexistent/y.wav", &[], &d);
    assert_user_error(&o, "/nonexistent/y.wav");
    assert!(
        !stderr(&o).contains("loaded"),
        "must fail before loading the model"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn missing_checkpoint_explains_how_to_get_one() {
    let d = tmp("nockpt");
    let o = rill(&["generate", "--seconds", "1"], &d);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("huggingface-cli download google/magenta-realtime-2"),
        "{e}"
    );
    assert!(e.contains("--random-weights"), "{e}");
    let o = rill_ck(
        "generate",
        "/nonexistent.safetensors",
        &["--frames", "1"],
        &d,
    );
    assert_user_error(&o, "does not exist");
    // A file that is not a checkpoint.
    let bad = d.join("bad.safetensors");
    std::fs::write(&bad, b"\x05\x00\x00\x00\x00\x00\x00\x00{}").unwrap();
    let o = rill_ck(
        "generate",
        bad.to_str().unwrap(),
        &[
            "--frames",
            "1",
            "--no-audio",
            "--tokens-out",
            d.join("t.npy").to_str().unwrap(),
        ],
        &d,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad.safetensors"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn quantize_round_trip_and_synth_errors() {
    let d = tmp("quant");
    let ck = ckpt(0);
    let q = d.join("q8.safetensors");
    let o = rill_ck(
        "quantize",
        &ck,
        &["--precision", "int8", "-o", q.to_str().unwrap()],
        &d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // The pre-quantised file generates the same tokens as quantising at load time.
    let (t1, t2) = (d.join("t1.npy"), d.join("t2.npy"));
    for (c, t, p) in [
        (q.to_str().unwrap(), &t1, None),
        (ck.as_str(), &t2, Some("int8")),
    ] {
        let mut a = vec![
            "generate",
            "--checkpoint",
            c,
            "--frames",
            "3",
            "--no-audio",
            "--tokens-out",
            t.to_str().unwrap(),
        ];
        if let Some(p) = p {
            a.extend(["--precision", p]);
        }
        let o = rill(&a, &d);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(
        rill_io::read_npy(&t1).unwrap(),
        rill_io::read_npy(&t2).unwrap()
    );
    // Asking a pre-quantised file for another precision is a clear error.
    let o = rill_ck(
        "generate",
        q.to_str().unwrap(),
        &[
            "--precision",
            "f32",
            "--frames",
            "1",
            "--no-audio",
            "--tokens-out",
            t1.to_str().unwrap(),
        ],
        &d,
    );
    assert_user_error(&o, "--precision int8");
    let o = rill(
        &["synth-checkpoint", "-o", "/nonexistent/dir/x.safetensors"],
        &d,
    );
    assert_user_error(&o, "/nonexistent/dir/x.safetensors");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn play_without_a_device_records_what_it_played() {
    let d = tmp("play");
    let ck = ckpt(0);
    let wav = d.join("live.wav");
    let o = rill_ck(
        "play",
        &ck,
        &[
            "--precision",
            "int8",
            "--device",
            "null",
            "--seconds",
            "2",
            "--record",
            wav.to_str().unwrap(),
            "--notes",
            "60,64,67",
            "--threads",
            "2",
            // About the recording, not this machine's speed.
            "--allow-stutter",
        ],
        &d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("RTF"), "status line missing: {e}");
    assert!(
        e.contains("first audio ") && e.contains(" ms buffer filled in "),
        "time to first audio missing: {e}"
    );
    // The summary says how much was generated; 2 s = 50 frames were played
    // (however long that took), and the recording holds every generated frame.
    let generated: u32 = e
        .split("frames generated")
        .next()
        .and_then(|s| s.rsplit(' ').nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary line: {e}"));
    let r = hound::WavReader::open(&wav).unwrap();
    assert_eq!((r.spec().sample_rate, r.spec().channels), (48_000, 2));
    let recorded = r.duration();
    assert_eq!(recorded % 1920, 0, "whole frames only");
    let recorded = recorded / 1920;
    assert!(
        (50..=generated).contains(&recorded),
        "recorded {recorded} frames, generated {generated}: {e}"
    );
    // A missing device is a clear error, not a panic.
    let o = rill_ck(
        "play",
        &ck,
        &[
            "--device",
            "no-such-device-xyz",
            "--seconds",
            "1",
            "--allow-stutter",
        ],
        &d,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("error:"), "{}", stderr(&o));
    let e = stderr(&o);
    let error = e.lines().find(|l| l.starts_with("error:")).unwrap_or("");
    assert!(error.contains("device"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// The live commands' default: a full-precision checkpoint plays at int8 from a
/// copy quantised once into the user's cache, and said so.
#[test]
fn play_quantises_once_into_the_cache_then_reuses_the_copy() {
    let d = tmp("live-defaults");
    let cache = d.join("cache");
    let ck = ckpt(0);
    let play = || {
        rill_env(
            &[
                "play",
                "--checkpoint",
                &ck,
                "--device",
                "null",
                "--seconds",
                "1",
                "--threads",
                "2",
                // The test is about the weights, not this machine's speed.
                "--allow-stutter",
            ],
            &d,
            &[("XDG_CACHE_HOME", cache.to_str().unwrap())],
        )
    };
    let first = play();
    let e = stderr(&first);
    assert!(first.status.success(), "{e}");
    assert!(
        e.contains("to int8 once for live use") && e.contains("quantised in "),
        "the copy was not made and said: {e}"
    );
    assert!(e.contains("language model (int8)"), "{e}");
    let live = cache.join("rill/live");
    let copies: Vec<_> = std::fs::read_dir(&live)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert!(copies[0].ends_with(".int8.safetensors"), "{copies:?}");

    let second = play();
    let e = stderr(&second);
    assert!(second.status.success(), "{e}");
    assert!(
        e.contains("using the int8 copy") && !e.contains("quantised in "),
        "the cached copy was not reused: {e}"
    );
    assert!(e.contains(&copies[0]), "{e}");

    // An explicit precision runs the checkpoint as is, without a copy.
    let f32 = rill_env(
        &[
            "play",
            "--checkpoint",
            &ck,
            "--precision",
            "f32",
            "--device",
            "null",
            "--seconds",
            "0.2",
            "--allow-stutter",
        ],
        &d,
        &[("XDG_CACHE_HOME", cache.to_str().unwrap())],
    );
    let e = stderr(&f32);
    assert!(f32.status.success(), "{e}");
    assert!(
        !e.contains("int8 copy") && e.contains("language model (f32)"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
