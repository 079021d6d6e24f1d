//! Style prompts through the binary: `rill style` prints the gate recording's tokens
//! (random-weight MusicCoCa of seed 1 = the recording's weights, the tiny tokenizer
//! = its tokenizer), `rill generate --prompt P` is `--style-codes $(rill style P)`,
//! and bad input is one clear error with nothing written.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

#[allow(dead_code)]
mod common;
use common::{rill, stderr, tmp};

/// A HOME whose cache holds the random-weight MusicCoCa of seeds 0 and 1 (made once
/// per test run, before the tests that use it run in parallel).
fn home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let h = rill_testkit::cache_dir().join("cli-style-home");
        std::fs::create_dir_all(&h).unwrap();
        for seed in ["0", "1"] {
            let o = rill(&["style", "--random-weights", seed, "warm up"], &h);
            assert!(o.status.success(), "{}", stderr(&o));
        }
        h
    })
}

fn codes(o: &Output) -> Vec<Vec<i64>> {
    assert!(o.status.success(), "{}", stderr(o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect()
}

fn gate_json() -> serde_json::Value {
    let p = rill_testkit::repo_root().join("testdata/musiccoca/gate_seed1.json");
    let text = std::fs::read_to_string(&p)
        .expect("testdata/musiccoca/gate_seed1.json (part of the repository)");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn style_prints_the_recorded_tokens() {
    let g = gate_json();
    let prompt = "Deep House, 124 BPM";
    let want_text: Vec<i64> = serde_json::from_value(g["text_tokens"][prompt].clone()).unwrap();
    let want_mapped: Vec<i64> =
        serde_json::from_value(g["mapper_tokens_seed0"][prompt].clone()).unwrap();
    let o = rill(
        &["style", "--random-weights", "1", "--no-mapper", prompt],
        home(),
    );
    assert_eq!(codes(&o), vec![want_text]);
    // The mapper is on by default (seed 0), as upstream's CLI and engine.
    let o = rill(
        &["style", "--random-weights", "1", prompt, "reggae dub bass"],
        home(),
    );
    let rows = codes(&o);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0], want_mapped);
    // --json: input, tokens and the 768 floats quantised.
    let o = rill(
        &["style", "--random-weights", "1", "--json", prompt],
        home(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["input"], prompt);
    assert_eq!(v[0]["embedding"].as_array().unwrap().len(), 768);
    let t: Vec<i64> = serde_json::from_value(v[0]["tokens"].clone()).unwrap();
    assert_eq!(t, want_mapped);
    // A blend of one prompt is that prompt.
    let o = rill(
        &[
            "style",
            "--random-weights",
            "1",
            "--blend",
            &format!("{prompt}=0.4"),
        ],
        home(),
    );
    assert_eq!(codes(&o), vec![t]);
}

#[test]
fn generate_with_a_prompt_is_generate_with_its_codes() {
    let dir = tmp("style-generate");
    let o = rill(
        &[
            "style",
            "--random-weights",
            "0",
            "--blend",
            "jazz=0.7",
            "techno=0.3",
        ],
        home(),
    );
    let c = codes(&o);
    let line: Vec<String> = c[0].iter().map(|v| v.to_string()).collect();
    let a = dir.join("prompt.wav");
    let b = dir.join("codes.wav");
    let common = [
        "generate",
        "--random-weights",
        "--frames",
        "3",
        "--codec",
        "i16",
    ];
    let o = rill(
        &[
            &common[..],
            &[
                "--prompt",
                "jazz=0.7",
                "--prompt",
                "techno=0.3",
                "-o",
                a.to_str().unwrap(),
            ],
        ]
        .concat(),
        home(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rill(
        &[
            &common[..],
            &["--style-codes", &line.join(","), "-o", b.to_str().unwrap()],
        ]
        .concat(),
        home(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn audio_clips_and_long_prompts_work() {
    let dir = tmp("style-audio");
    let clip = dir.join("clip.wav");
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: 44_100,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(&clip, spec).unwrap();
    for i in 0..44_100 * 3 {
        let v = ((i as f32 * 0.0627).sin() * 8000.0) as i16;
        w.write_sample(v).unwrap();
        w.write_sample(v / 2).unwrap();
    }
    w.finalize().unwrap();
    let o = rill(
        &[
            "style",
            "--random-weights",
            "1",
            "--audio",
            clip.to_str().unwrap(),
        ],
        home(),
    );
    assert_eq!(codes(&o).len(), 1);
    // 10 000 characters: the first 127 pieces are embedded, with a warning.
    let long = "rock ".repeat(2000);
    let o = rill(&["style", "--random-weights", "1", &long], home());
    assert_eq!(codes(&o).len(), 1);
    assert!(stderr(&o).contains("reads the first 127"), "{}", stderr(&o));
}

/// Exit status and one `error:` line containing `needle`; no panic.
fn refused(o: &Output, needle: &str) -> i32 {
    let e = stderr(o);
    let errors: Vec<&str> = e.lines().filter(|l| l.starts_with("error:")).collect();
    assert!(
        !errors.is_empty() && errors[0].contains(needle),
        "expected {needle:?} in {e}"
    );
    assert!(!e.contains("panicked"), "{e}");
    o.status.code().expect("killed by a signal")
}

#[test]
fn bad_style_input_is_one_clear_error_and_writes_nothing() {
    let dir = tmp("style-bad");
    let out = dir.join("never.wav");
    let o_ = out.to_str().unwrap();
    let gen = ["generate", "--random-weights", "--frames", "2", "-o", o_];
    // Usage errors, found before any weights load.
    let o = rill(&[&gen[..], &["--prompt", "  "]].concat(), home());
    assert_eq!(refused(&o, "empty prompt"), 2);
    let o = rill(
        &[&gen[..], &["--prompt", "a=0", "--prompt", "b=-1"]].concat(),
        home(),
    );
    assert_eq!(refused(&o, "sum to"), 2);
    let seven: Vec<&str> = (0..7).flat_map(|_| ["--prompt", "x"]).collect();
    let o = rill(&[&gen[..], &seven[..]].concat(), home());
    assert_eq!(refused(&o, "at most 6"), 2);
    let o = rill(
        &[
            &gen[..],
            &[
                "--prompt",
                "x",
                "--style-codes",
                "1,2,3,4,5,6,7,8,9,10,11,12",
            ],
        ]
        .concat(),
        home(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = rill(&["style", "--random-weights", "1", ""], home());
    assert_eq!(refused(&o, "empty prompt"), 2);
    // A file that is not audio; assets that are not there.
    let text = dir.join("notes.txt");
    std::fs::write(&text, "not audio at all").unwrap();
    let o = rill(
        &[&gen[..], &["--style-audio", text.to_str().unwrap()]].concat(),
        home(),
    );
    assert_eq!(refused(&o, "notes.txt"), 1);
    let o = rill(
        &[
            "style",
            "--musiccoca",
            dir.join("nowhere").to_str().unwrap(),
            "jazz",
        ],
        home(),
    );
    assert_eq!(refused(&o, "nowhere"), 1);
    assert!(
        stderr(&o).contains("google/magenta-realtime-2"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "nothing is written on an error");
}
