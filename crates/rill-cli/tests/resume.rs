//! `rill generate --save-state` / `--resume`: N frames saved, then M resumed, give
//! the tokens and int16 audio of one N+M run (one and two stages, f32 and int8);
//! a bad state file is one error line, a non-zero exit and no output file.

use std::path::{Path, PathBuf};

use rill_checkpoint::writer::{self, Tensor};
use rill_checkpoint::Checkpoint;

mod common;
use common::{ckpt, rill, stderr, tmp};

fn wav_samples(path: &Path) -> Vec<i16> {
    let mut r = hound::WavReader::open(path).unwrap();
    assert_eq!((r.spec().sample_rate, r.spec().channels), (48_000, 2));
    r.samples::<i16>().map(|s| s.unwrap()).collect()
}

fn tokens(path: &Path) -> Vec<i64> {
    let a = rill_io::read_npy(path).unwrap();
    assert_eq!(a.shape[1], 12);
    match a.data {
        rill_io::Data::I32(v) => v.into_iter().map(i64::from).collect(),
        other => panic!("tokens are {other:?}"),
    }
}

const STYLE: &str = "660,1016,295,206,857,841,391,857,619,70,401,22";

/// Runs `generate` with the common controls plus `extra`; (samples, tokens).
fn generate(d: &Path, tag: &str, frames: usize, extra: &[&str]) -> (Vec<i16>, Vec<i64>) {
    let (wav, toks) = (d.join(format!("{tag}.wav")), d.join(format!("{tag}.npy")));
    let ck = ckpt(0);
    let frames = frames.to_string();
    let mut args = vec![
        "generate",
        "--checkpoint",
        &ck,
        "--frames",
        &frames,
        "--threads",
        "2",
        "-o",
        wav.to_str().unwrap(),
        "--tokens-out",
        toks.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = rill(&args, d);
    assert!(o.status.success(), "{tag}: {}", stderr(&o));
    (wav_samples(&wav), tokens(&toks))
}

#[test]
fn save_then_resume_equals_one_longer_run() {
    let d = tmp("resume");
    let (n, m) = (3, 4);
    for (stages, precision) in [
        ("one", "f32"),
        ("two", "f32"),
        ("one", "int8"),
        ("two", "int8"),
    ] {
        let tag = format!("{stages}-{precision}");
        let state = d.join(format!("{tag}.state"));
        let state = state.to_str().unwrap();
        let run = ["--stages", stages, "--precision", precision];
        let controls = [
            "--style-codes",
            STYLE,
            "--notes",
            "48,60",
            "--drums",
            "on",
            "--cfg-notes",
            "2",
        ];
        fn with<'a>(run: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
            [run, more].concat()
        }
        let whole = generate(&d, &format!("{tag}-whole"), n + m, &with(&run, &controls));
        let mut first = generate(
            &d,
            &format!("{tag}-first"),
            n,
            &with(&run, &[&controls[..], &["--save-state", state]].concat()),
        );
        assert!(Path::new(state).exists());
        // The controls come from the state file.
        let rest = generate(
            &d,
            &format!("{tag}-rest"),
            m,
            &with(&run, &["--resume", state]),
        );
        assert_eq!(
            first.0.len(),
            n * 3840,
            "{tag}: every saved frame is written"
        );
        assert_eq!(
            rest.0.len(),
            m * 3840,
            "{tag}: every resumed frame is written"
        );
        first.0.extend(rest.0);
        first.1.extend(rest.1);
        assert!(
            first.0 == whole.0,
            "{tag}: audio differs from the longer run"
        );
        assert_eq!(first.1, whole.1, "{tag}: tokens differ from the longer run");
    }
    // A flag given with --resume replaces the saved value: greedy sampling ignores
    // the key, so a new --seed changes nothing, while the saved T 1.3 differs.
    let state = d.join("one-f32.state");
    let state = state.to_str().unwrap();
    let greedy = ["--resume", state, "--temperature", "0", "--stages", "one"];
    let a = generate(&d, "greedy-a", 3, &greedy);
    let b = generate(&d, "greedy-b", 3, &[&greedy[..], &["--seed", "5"]].concat());
    let saved = generate(&d, "saved", 3, &["--resume", state, "--stages", "one"]);
    assert_eq!(a, b);
    assert_ne!(a.1, saved.1);
    std::fs::remove_dir_all(&d).unwrap();
}

/// Rewrites a state file with one tensor or metadata entry changed.
fn edited(
    src: &Path,
    dst: &Path,
    f: impl FnOnce(&mut Vec<(String, Tensor<'static>)>, &mut std::collections::HashMap<String, String>),
) {
    let c = Checkpoint::open(src).unwrap();
    let (mut tensors, mut meta) = c.to_parts();
    f(&mut tensors, &mut meta);
    writer::write(dst, &tensors, meta).unwrap();
}

fn set_tensor(
    name: &'static str,
    at: usize,
    bytes: [u8; 4],
) -> impl FnOnce(&mut Vec<(String, Tensor<'static>)>, &mut std::collections::HashMap<String, String>)
{
    move |t, _| {
        let (_, x) = t.iter_mut().find(|(n, _)| n == name).unwrap();
        x.bytes.to_mut()[4 * at..4 * at + 4].copy_from_slice(&bytes);
    }
}

#[test]
fn bad_state_files_are_one_error_line_and_write_nothing() {
    let d = tmp("resume-bad");
    let good = d.join("good.state");
    generate(
        &d,
        "saved",
        2,
        &["--save-state", good.to_str().unwrap(), "--stages", "one"],
    );
    let bytes = std::fs::read(&good).unwrap();
    let truncated = d.join("truncated.state");
    std::fs::write(&truncated, &bytes[..bytes.len() - 100]).unwrap();
    let nan = d.join("nan.state");
    edited(
        &good,
        &nan,
        set_tensor("lm/cross_v", 7, f32::NAN.to_le_bytes()),
    );
    let token = d.join("token.state");
    edited(&good, &token, set_tensor("lm/prev", 2, 5u32.to_le_bytes()));
    let codec = d.join("codec.state");
    edited(
        &good,
        &codec,
        set_tensor("codec/lookahead/countdown", 0, 9f32.to_le_bytes()),
    );
    let p = |p: &PathBuf| p.to_str().unwrap().to_string();
    let (ck0, ck1) = (ckpt(0), ckpt(1));
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--resume".into(),
                p(&truncated),
                "--checkpoint".into(),
                ck0.clone(),
            ],
            "truncated",
        ),
        (
            vec!["--resume".into(), p(&good), "--checkpoint".into(), ck1],
            "other weights",
        ),
        (
            vec![
                "--resume".into(),
                p(&good),
                "--checkpoint".into(),
                ck0.clone(),
                "--precision".into(),
                "int8".into(),
            ],
            "--precision f32",
        ),
        (
            vec![
                "--resume".into(),
                p(&nan),
                "--checkpoint".into(),
                ck0.clone(),
            ],
            "lm/cross_v[7] is NaN",
        ),
        (
            vec![
                "--resume".into(),
                p(&token),
                "--checkpoint".into(),
                ck0.clone(),
            ],
            "lm/prev[2] is 5",
        ),
        (
            vec![
                "--resume".into(),
                p(&codec),
                "--checkpoint".into(),
                ck0.clone(),
            ],
            "countdown",
        ),
        (
            vec![
                "--resume".into(),
                p(&d.join("absent.state")),
                "--checkpoint".into(),
                ck0.clone(),
            ],
            "absent.state",
        ),
        (
            vec![
                "--save-state".into(),
                p(&d.join("x.state")),
                "--no-audio".into(),
                "--checkpoint".into(),
                ck0,
            ],
            "--no-audio and --save-state",
        ),
    ];
    let outs = ["out.wav", "out.npy", "out2.state"].map(|f| d.join(f));
    for (args, needle) in cases {
        let mut a = vec!["generate", "--frames", "2"];
        a.extend(args.iter().map(String::as_str));
        a.extend([
            "-o",
            outs[0].to_str().unwrap(),
            "--tokens-out",
            outs[1].to_str().unwrap(),
        ]);
        if !args.iter().any(|x| x == "--save-state") {
            a.extend(["--save-state", outs[2].to_str().unwrap()]);
        }
        let o = rill(&a, &d);
        let e = stderr(&o);
        // Contradicting flags are a usage error; a bad state file is failed work.
        let status = if needle.starts_with("--no-audio") {
            2
        } else {
            1
        };
        assert_eq!(o.status.code(), Some(status), "{needle}: {e}");
        let errors: Vec<&str> = e.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{needle}: {e}");
        assert!(
            errors[0].contains(needle),
            "expected {needle:?} in {:?}",
            errors[0]
        );
        assert!(!e.contains("panicked"), "{e}");
        for f in &outs {
            let mut partial = f.clone().into_os_string();
            partial.push(".partial");
            assert!(
                !f.exists() && !Path::new(&partial).exists(),
                "{needle}: {} written",
                f.display()
            );
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}
