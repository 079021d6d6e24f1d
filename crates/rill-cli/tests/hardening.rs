//! The long-running and hostile-input commands as a user runs them: `rill soak`
//! prints its table and summary, `rill overload` only targets this machine, and
//! absurd sizes are one error line instead of an allocation abort.

use std::process::{Command, Output};

use rill_mrt2::ModelKind;

fn rill(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rill"))
        .args(args)
        .env_remove("RILL_CHECKPOINT")
        .env_remove("RILL_ISA")
        .env_remove("RILL_THREADS")
        .output()
        .expect("running rill")
}

/// A usage error: exit status 2, one `error:` line naming `needle`, no panic.
fn assert_refused(o: &Output, needle: &str) {
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {e}");
    let line = e
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no error line: {e}"));
    assert!(line.contains(needle), "expected {needle:?} in {line:?}");
    assert!(
        !e.contains("panicked") && !e.contains("memory allocation"),
        "{e}"
    );
}

/// `--precision f16` is Magpie's: the music commands do not offer it (a usage
/// error listing what they take), `rill bench` (whose `--model magpie` takes it)
/// does.
#[test]
fn f16_precision_is_offered_only_where_it_is_taken() {
    for cmd in ["quantize", "generate", "play", "serve", "soak"] {
        let help = rill(&[cmd, "--help"]);
        let text = String::from_utf8_lossy(&help.stdout);
        // The option's entry: from its line to the next option's.
        let precision = text
            .split("\n      --precision <PRECISION>")
            .nth(1)
            .and_then(|s| s.split("\n      --").next())
            .and_then(|s| s.split("\n  -").next())
            .unwrap_or_else(|| panic!("{cmd} --help has no --precision: {text}"));
        assert!(precision.contains("int8"), "{cmd}: {precision}");
        let words = precision.split(|c: char| !(c.is_alphanumeric() || c == '-'));
        assert!(
            !words.into_iter().any(|w| w == "f16"),
            "{cmd} offers f16: {precision}"
        );
    }
    let o = rill(&[
        "generate",
        "--random-weights",
        "--precision",
        "f16",
        "--seconds",
        "1",
        "-o",
        "x.wav",
    ]);
    assert_refused(&o, "f16");
    let help = rill(&["bench", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("f16:"),
        "bench --help does not offer f16: {text}"
    );
}

#[test]
fn absurd_sizes_are_one_error_line() {
    let ck = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(0));
    let ck = ck.to_str().unwrap();
    for (cmd, rest, needle) in [
        (
            "generate",
            &["--frames", "18446744073709551615"][..],
            "--frames",
        ),
        ("generate", &["--seconds", "1e300"][..], "--seconds"),
        ("bench", &["--frames", "99999999999"][..], "--frames"),
        ("bench", &["--warmup", "99999999999"][..], "--warmup"),
        ("play", &["--buffer-ms", "4000000000"][..], "--buffer-ms"),
        ("soak", &["--seconds", "1e9"][..], "--seconds"),
        ("soak", &["--streams", "100000"][..], "--streams"),
        (
            "soak",
            &["--seconds", "10", "--interval", "0"][..],
            "--interval",
        ),
        (
            "generate",
            &["--frames", "1", "--threads", "100000"][..],
            "thread",
        ),
    ] {
        let args = [&[cmd, "--checkpoint", ck][..], rest].concat();
        assert_refused(&rill(&args), needle);
    }
}

#[test]
fn overload_refuses_a_server_on_another_machine() {
    assert_refused(&rill(&["overload", "--addr", "192.0.2.1:8080"]), "loopback");
}

#[test]
fn soak_prints_a_row_per_interval_and_a_summary() {
    let ck = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(0));
    let o = rill(&[
        "soak",
        "--checkpoint",
        ck.to_str().unwrap(),
        "--precision",
        "int8",
        "--seconds",
        "2",
        "--interval",
        "1",
        // About the rows, not this machine's speed.
        "--allow-stutter",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].contains("rms dBFS") && lines[0].contains("underruns"),
        "{out}"
    );
    let rows: Vec<&str> = lines[1..lines.len() - 1].to_vec();
    assert_eq!(rows.len(), 2, "one row per second: {out}");
    let mut sounded = false;
    for r in rows {
        let cols: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(cols.len(), 8, "{r}");
        // Random weights still make sound (a machine too slow to play a frame
        // in an interval prints -inf there), and never NaN.
        let rms: f64 = cols[1].parse().unwrap();
        assert!(!rms.is_nan() && rms < 0.0, "{r}");
        sounded |= rms.is_finite();
        assert_eq!(cols[3], "0", "non-finite samples: {r}");
    }
    assert!(sounded, "no interval had audio: {out}");
    let summary = lines[lines.len() - 1];
    assert!(
        summary.starts_with("soak: ") && summary.contains("0 non-finite"),
        "{summary}"
    );
}
