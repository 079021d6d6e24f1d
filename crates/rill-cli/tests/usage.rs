//! The CLI's contract with scripts, through the binary: exit status 2 for usage
//! errors and 1 for failed work (`rill --help` says so), `-` for standard input
//! and output, the checks that need no weights made before any load, and one
//! clear line for a directory given as a checkpoint.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn rill() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rill"));
    c.env_remove("RILL_CHECKPOINT")
        .env_remove("RILL_ISA")
        .env_remove("RILL_THREADS");
    c
}

fn run(args: &[&str]) -> Output {
    rill().args(args).output().expect("running rill")
}

fn scratch(name: &str) -> PathBuf {
    let dir = rill_testkit::repo_root().join("target/rill-test-cache/usage");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The exit status and the one `error:` line, which must contain `needle`.
fn refused(o: &Output, needle: &str) -> i32 {
    let e = String::from_utf8_lossy(&o.stderr);
    let errors: Vec<&str> = e.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "one error line: {e}");
    assert!(errors[0].contains(needle), "expected {needle:?} in {e}");
    assert!(!e.contains("panicked"), "{e}");
    o.status.code().expect("killed by a signal")
}

#[test]
fn help_documents_the_exit_statuses_and_dash() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "Exit status",
        "1 when the work fails",
        "2 for a usage error",
        "`-`",
    ] {
        assert!(
            help.contains(needle),
            "{needle:?} missing from rill --help: {help}"
        );
    }
}

#[test]
fn usage_errors_exit_2_and_failed_work_exits_1() {
    // clap's own refusals.
    assert_eq!(run(&["--no-such-flag"]).status.code(), Some(2));
    assert_eq!(
        run(&["speak", "--text", "Hi."]).status.code(),
        Some(2),
        "no -o"
    );
    // rill's checks of the values.
    let out = scratch("x.wav");
    let out = out.to_str().unwrap();
    let speak = |extra: &[&str]| {
        let mut a = vec!["speak", "--random-weights", "-o", out];
        a.extend_from_slice(extra);
        run(&a)
    };
    let o = speak(&[
        "--text",
        "こんにちは。",
        "--language",
        "ja",
        "--japanese-dictionary",
        "/nonexistent/open_jtalk_dic",
    ]);
    assert_eq!(refused(&o, "/nonexistent/open_jtalk_dic"), 2);
    let o = speak(&[
        "--text",
        "Hello.",
        "--japanese-dictionary",
        "/nonexistent/dic",
    ]);
    assert_eq!(refused(&o, "--language ja"), 2);
    let o = speak(&["--text", "Hallo.", "--language", "de"]);
    assert_eq!(refused(&o, "de_nv230119.dict"), 2);
    let o = rill()
        .args(["speak", "--random-weights", "--text", "Hi.", "-o", out])
        .env("RILL_ISA", "avx-512")
        .output()
        .unwrap();
    assert_eq!(refused(&o, "RILL_ISA"), 2);
    let o = run(&[
        "generate",
        "--random-weights",
        "--notes",
        "60,200",
        "-o",
        out,
    ]);
    assert_eq!(refused(&o, "MIDI range"), 2);
    let generate = |extra: &[&str]| {
        let mut a = vec!["generate", "--random-weights", "-o", out];
        a.extend_from_slice(extra);
        run(&a)
    };
    assert_eq!(refused(&generate(&["--frames", "0"]), "--frames"), 2);
    let o = generate(&["--frames", "1", "--no-audio"]);
    assert_eq!(refused(&o, "contradict"), 2);
    // Work that fails: a missing input file.
    let o = speak(&["--text-file", "/no/such/text.txt"]);
    assert_eq!(refused(&o, "/no/such/text.txt"), 1);
}

/// Values rill itself refuses (not clap) in `play`, `soak` and `bench`, and a
/// `serve --max-sessions` of 0, are usage errors too, found before any weights
/// are made or loaded.
#[test]
fn refused_values_of_play_soak_serve_and_bench_exit_2() {
    for (args, needle) in [
        (&["play", "--seconds=0"][..], "--seconds"),
        (&["play", "--seconds", "nan"][..], "--seconds"),
        (&["soak", "--vary-every=-1"][..], "--vary-every"),
        (
            &["soak", "--seconds", "10", "--interval", "20"][..],
            "--interval",
        ),
        (&["serve", "--max-sessions", "0"][..], "--max-sessions"),
        (&["bench", "--precision", "f16"][..], "--model mrt2 takes"),
        (&["bench", "--codec-frames", "2"][..], "--codec-frames"),
        (&["bench", "--isa", "no-such-tier"][..], "--isa"),
        (&["bench", "--streams", "5"][..], "--streams"),
        (
            &["bench", "--model", "magpie", "--streams", "2"][..],
            "--streams",
        ),
        (
            &["bench", "--model", "magpie", "--precision", "int4"][..],
            "--model magpie takes --precision",
        ),
        (
            &["bench", "--model", "magpie", "--codec", "i16"][..],
            "--model magpie takes --codec f32 or f16",
        ),
    ] {
        let t = Instant::now();
        let o = run(args);
        assert_eq!(refused(&o, needle), 2, "{args:?}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{args:?} did work first"
        );
    }
}

/// Mistakes that need no weights are found before any load: an empty text, an
/// unknown speaker, an output that cannot be written. (The random voice takes
/// seconds to synthesise, so finishing well under a second shows that nothing
/// was loaded or synthesised: these paths do no work.)
#[test]
fn cheap_mistakes_fail_before_the_load() {
    let out = scratch("cheap.wav");
    let out = out.to_str().unwrap();
    for (args, needle, status) in [
        (vec!["--text", "", "-o", out], "empty", 2),
        (vec!["--text", "  \n ", "-o", out], "empty", 2),
        (
            vec!["--text", "Hi.", "--speaker", "9", "-o", out],
            "speaker 9",
            2,
        ),
        (
            vec!["--text", "Hi.", "-o", "/no/such/dir/x.wav"],
            "/no/such/dir",
            1,
        ),
    ] {
        let t = Instant::now();
        let o = rill()
            .args(["speak", "--random-weights"])
            .args(&args)
            .output()
            .unwrap();
        let took = t.elapsed();
        assert_eq!(refused(&o, needle), status, "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            !e.contains("synthesising"),
            "{args:?} loaded the voice: {e}"
        );
        assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
    }
}

#[test]
fn a_directory_as_checkpoint_is_one_clear_error() {
    let dir = scratch("");
    let dir = dir.to_str().unwrap();
    let o = run(&[
        "generate",
        "--checkpoint",
        dir,
        "--seconds",
        "1",
        "-o",
        "x.wav",
    ]);
    assert_eq!(refused(&o, "is a directory"), 1);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!e.contains("No such device"), "{e}");
    assert_eq!(e.matches("directory").count(), 1, "said twice: {e}");
}

/// `--text-file -` reads standard input and `-o -` writes the WAV to standard
/// output (messages stay on standard error): the same bytes as the file.
#[test]
fn dash_is_stdin_and_stdout() {
    let file = scratch("dash.wav");
    let common = [
        "speak",
        "--random-weights",
        "--max-frames",
        "4",
        "--threads",
        "2",
    ];
    let o = rill()
        .args(common)
        .args(["--text", "Hello there."])
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty(), "messages went to stdout");
    let mut child = rill()
        .args(common)
        .args(["--text-file", "-", "-o", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"Hello there.\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = std::fs::read(&file).unwrap();
    assert!(want.len() > 44 + 1024 * 2, "{} bytes", want.len());
    assert_eq!(&o.stdout[..4], b"RIFF");
    assert!(o.stdout == want, "stdout's WAV differs from the file's");
    assert!(String::from_utf8_lossy(&o.stderr).contains("wrote"));
    assert!(!std::path::Path::new("-").exists(), "wrote a file named -");
}
