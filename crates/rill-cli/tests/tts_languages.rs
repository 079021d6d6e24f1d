//! `rill speak --language`: every built language end to end on random weights (v2602's
//! full text table), the token ids in `--dump` against NeMo's recorded ones
//! (`testdata/magpie/tokenizer_{fr,hi}.json`, from upstream code), the dropped-character
//! warning, the listings, and bad input refused before anything is written.

use std::path::PathBuf;
use std::process::{Command, Output};

fn rill() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rill"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = rill_testkit::repo_root().join("target/rill-test-cache/tts_languages");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// NeMo's ids for `text` in the recording of `code` (a missing fixture fails).
fn nemo_ids(code: &str, text: &str) -> Vec<i64> {
    let path = rill_testkit::repo_root().join(format!("testdata/magpie/tokenizer_{code}.json"));
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the recording")).unwrap();
    let row = rec["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["text"] == text)
        .unwrap_or_else(|| panic!("{text:?} is not in {}", path.display()));
    row["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn speak(args: &[&str], out: &PathBuf, dump: Option<&PathBuf>) -> Output {
    let _ = std::fs::remove_file(out);
    let mut cmd = rill();
    cmd.args(["speak", "--max-frames", "3", "--threads", "2"])
        .args(args)
        .arg("-o")
        .arg(out);
    if let Some(d) = dump {
        cmd.arg("--dump").arg(d);
    }
    cmd.output().unwrap()
}

#[test]
fn french_and_hindi_speak_nemos_token_ids() {
    for (code, text) in [
        ("fr", "Bonjour, comment allez-vous aujourd'hui ?"),
        ("hi", "नमस्ते, आप कैसे हैं?"),
    ] {
        let out = scratch(&format!("{code}.wav"));
        let dump = scratch(&format!("{code}.npz"));
        let o = speak(
            &["--language", code, "--random-weights", "--text", text],
            &out,
            Some(&dump),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{code}: {err}");
        assert!(err.contains("2362 rows"), "{code}: {err}");
        let wav = hound::WavReader::open(&out).unwrap();
        assert_eq!(wav.len(), 3 * 1024, "{code}");
        let z = rill_io::Npz::read(&dump).unwrap();
        let (_, tokens) = z.i64("text_tokens").unwrap();
        assert_eq!(tokens, nemo_ids(code, text), "{code}");
    }
}

#[test]
fn dropped_characters_are_named_once() {
    let out = scratch("dropped.wav");
    let o = speak(
        &[
            "--language",
            "hi",
            "--random-weights",
            "--text",
            "Thank you 42 धन्यवाद 42 ॥",
        ],
        &out,
        None,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("cannot encode 4 character(s)")
            && err.contains("'T' (U+0054)")
            && err.contains("'॥' (U+0965)"),
        "{err}"
    );
    assert!(out.exists());
}

#[test]
fn listings() {
    let o = rill().args(["speak", "--list-languages"]).output().unwrap();
    assert!(o.status.success());
    let table = String::from_utf8_lossy(&o.stdout);
    for row in [
        "en    English     english_phoneme             0    96  ready",
        "fr    French      french_chartokenizer      633   384  ready",
        "hi    Hindi       hindi_chartokenizer      1017   191  ready",
        "vi    Vietnamese  vietnamese_phoneme       1592   384  ready",
        "BOS 2360, EOS 2361",
    ] {
        assert!(table.contains(row), "{row:?} missing in\n{table}");
    }
    assert!(
        table.contains("es    Spanish") && table.contains("not yet"),
        "{table}"
    );
    let o = rill()
        .args(["speak", "--list-voices", "--random-weights"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 5);
}

#[test]
fn bad_input_is_a_clear_error_and_writes_nothing() {
    let big = scratch("big.txt");
    std::fs::write(&big, "word ".repeat(200_000)).unwrap();
    let latin1 = scratch("latin1.txt");
    std::fs::write(&latin1, b"caf\xe9 au lait").unwrap();
    let (big, latin1) = (big.to_str().unwrap(), latin1.to_str().unwrap());
    for (args, want) in [
        (
            vec!["--language", "xx", "--text", "hi"],
            "valid codes are en, es, de, zh, ja, fr, hi, it, vi",
        ),
        (
            vec!["--language", "hi", "--text", "你好，世界。"],
            "nothing the Hindi tokenizer can encode",
        ),
        (
            vec!["--language", "en", "--text", "你好，世界。"],
            "nothing the English tokenizer",
        ),
        (
            vec!["--language", "zh", "--text", "你好"],
            "not supported yet",
        ),
        (
            vec!["--language", "ja", "--text", "こんにちは"],
            "not supported yet",
        ),
        (
            vec!["--language", "fr", "--text-file", big],
            "send it in parts",
        ),
        (
            vec!["--language", "fr", "--text-file", latin1],
            "not UTF-8 text (invalid bytes at offset 3)",
        ),
        (vec!["--language", "it", "--text", " \t\n "], "empty"),
    ] {
        let out = scratch("bad.wav");
        let mut all = vec!["--random-weights"];
        all.extend(&args);
        let o = speak(&all, &out, None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}: wrote {}", out.display());
    }
}
