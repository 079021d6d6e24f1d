//! `rill speak --language`: every built language end to end on random weights (v2602's
//! full text table), the token ids in `--dump` against NeMo's recorded ones
//! (`testdata/magpie/tokenizer_{fr,hi}.json`; German through `--lexicon` against
//! `tokenizer_es_de.json`; all from upstream code), the dropped-character
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

/// The recording `testdata/magpie/{name}.json` (a missing fixture fails).
fn recording(name: &str) -> serde_json::Value {
    rill_testkit::magpie_json(&format!("{name}.json"))
}

/// A row's ids recorded relative to its language's table (tokenizer_zh/ja.json) as
/// `--dump` writes them: `offset` added, EOS 2361 after.
fn with_offset_and_eos(row: &serde_json::Value, offset: i64) -> Vec<i64> {
    row["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() + offset)
        .chain([2361])
        .collect()
}

/// NeMo's ids for `text` in the recording of `code` (a missing fixture fails).
fn nemo_ids(code: &str, text: &str) -> Vec<i64> {
    let rec = recording(&format!("tokenizer_{code}"));
    let row = rec["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["text"] == text)
        .unwrap_or_else(|| panic!("{text:?} is not in tokenizer_{code}.json"));
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
            // NeMo's recordings are of its raw path (apply_TN=False).
            &[
                "--language",
                code,
                "--random-weights",
                "--no-normalize",
                "--text",
                text,
            ],
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
fn mandarin_speaks_nemos_token_ids() {
    // tokenizer_zh.json records ids relative to the zh table (offset 349), no EOS.
    let rec = recording("tokenizer_zh");
    let offset = rec["offset"].as_i64().unwrap();
    assert_eq!(offset, 349);
    for text in [
        "你吃饭了吗？",
        "北京时间昨晚，中国队以三比一战胜对手，晋级决赛。",
    ] {
        let Some(row) = rec["sentences"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["text"] == text)
        else {
            panic!("{text:?} is not in tokenizer_zh.json");
        };
        let want = with_offset_and_eos(row, offset);
        let tokens = dumped_tokens(
            "zh",
            &["--language", "zh", "--no-normalize", "--text", text],
        );
        assert_eq!(tokens, want, "{text}");
    }
}

#[test]
fn japanese_speaks_nemos_token_ids_with_openjtalks_dictionary() {
    // The machine's OpenJTalk dictionary (CI installs Debian's and sets RILL_JA_TEST=1).
    if rill_text::japanese::JapaneseFrontEnd::default_dir().is_none() {
        assert!(
            std::env::var("RILL_JA_TEST").map_or(true, |v| v != "1"),
            "RILL_JA_TEST=1 but no OpenJTalk dictionary: apt install open-jtalk-mecab-naist-jdic"
        );
        eprintln!("SKIP: no OpenJTalk dictionary (apt install open-jtalk-mecab-naist-jdic)");
        return;
    }
    // tokenizer_ja.json records ids relative to the ja table (offset 458), no EOS.
    let rec = recording("tokenizer_ja");
    let offset = rec["offset"].as_i64().unwrap();
    assert_eq!(offset, 458);
    let rows = rec["sentences"].as_array().unwrap();
    // A short sentence, one with digits and Latin letters, and the longest single
    // utterance of the hand-written ones.
    let picks = [
        rows.iter()
            .find(|r| r["text"].as_str().unwrap().chars().count() < 12),
        rows.iter().find(|r| {
            let t = r["text"].as_str().unwrap();
            t.chars().any(|c| c.is_ascii_digit()) && t.chars().any(|c| c.is_ascii_uppercase())
        }),
        rows.iter()
            .filter(|r| r["words"].as_i64().unwrap() < 80)
            .max_by_key(|r| r["text"].as_str().unwrap().len()),
    ];
    for (i, row) in picks.into_iter().enumerate() {
        let row = row.expect("such a sentence in the recording");
        let text = row["text"].as_str().unwrap();
        let want = with_offset_and_eos(row, offset);
        let tokens = dumped_tokens(
            &format!("ja{i}"),
            &["--language", "ja", "--no-normalize", "--text", text],
        );
        assert_eq!(tokens, want, "{text}");
    }
}

/// `--dump`'s text tokens for `args` (three frames on random weights).
fn dumped_tokens(name: &str, args: &[&str]) -> Vec<i64> {
    let (out, dump) = (
        scratch(&format!("{name}.wav")),
        scratch(&format!("{name}.npz")),
    );
    let mut all = vec!["--random-weights"];
    all.extend_from_slice(args);
    let o = speak(&all, &out, Some(&dump));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let z = rill_io::Npz::read(&dump).unwrap();
    z.i64("text_tokens").unwrap().1
}

#[test]
fn numbers_are_read_aloud_unless_no_normalize() {
    // NeMo's normaliser's output for a corpus sentence (normalize_L.json, recorded
    // with nemo_text_processing): speaking the written text must give the tokens of
    // speaking NeMo's spoken form as written, in every language with a normaliser
    // that rill speaks without a dictionary file.
    for (code, mark) in [("en", "$"), ("vi", "đ"), ("hi", "₹"), ("zh", "元")] {
        let rec = recording(&format!("normalize_{code}"));
        let case = rec["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["input"].as_str().unwrap().contains(mark) && c["input"] != c["expected"])
            .expect("a money sentence in the recording");
        let (written, spoken) = (
            case["input"].as_str().unwrap(),
            case["expected"].as_str().unwrap(),
        );
        let lang = ["--language", code];
        let normalized = dumped_tokens(
            &format!("tn_{code}"),
            &[&lang[..], &["--text", written]].concat(),
        );
        let nemo = dumped_tokens(
            &format!("tn_nemo_{code}"),
            &[&lang[..], &["--no-normalize", "--text", spoken]].concat(),
        );
        assert_eq!(normalized, nemo, "{code}: {written:?} → {spoken:?}");
        let raw = dumped_tokens(
            &format!("tn_raw_{code}"),
            &[&lang[..], &["--no-normalize", "--text", written]].concat(),
        );
        assert_ne!(
            raw, nemo,
            "{code}: --no-normalize reads the text as written"
        );
    }
}

/// NeMo's previous German dictionary (the test stand-in for the checkpoint's, see
/// `testdata/magpie/tokenizer_es_de.README.md`) edited to v2602's 150 symbols as
/// rill-text's German test does: ʏ → ʊ, U+0329 gone, words with Å, å and a `1`.
fn german_test_dictionary() -> PathBuf {
    use std::io::Read;
    let gz = std::fs::read(rill_testkit::repo_root().join("testdata/magpie/de_nv221025.dict.gz"))
        .expect("testdata/magpie/de_nv221025.dict.gz (part of the repository)");
    let mut dict = String::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_string(&mut dict)
        .unwrap();
    let edited = dict.replace('ʏ', "ʊ").replace('\u{329}', "") + "Åland  ˈoːland\nåsa  ˈoːza1\n";
    let path = scratch("de_v2602_symbols.dict");
    std::fs::write(&path, edited).unwrap();
    path
}

#[test]
fn german_speaks_nemos_token_ids_with_a_lexicon() {
    let fixture: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            rill_testkit::repo_root().join("testdata/magpie/tokenizer_es_de.json"),
        )
        .expect("testdata/magpie/tokenizer_es_de.json"),
    )
    .unwrap();
    let de = &fixture["de"];
    let recorded: Vec<&str> = de["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let v2602: Vec<&str> = de["v2602_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let dict = german_test_dictionary();
    let mut cases = Vec::new();
    for row in de["sentences"].as_array().unwrap() {
        let (text, Some(ids)) = (row["text"].as_str().unwrap(), row["ids"].as_array()) else {
            continue;
        };
        // NeMo's ids name symbols of its 149-symbol table; the checkpoint's table has
        // the same symbols at other places: the same text reads the same symbols.
        let symbols: Vec<&str> = ids
            .iter()
            .map(|i| recorded[i.as_u64().unwrap() as usize])
            .collect();
        let pre = row["preprocessed"].as_str().unwrap();
        if text.trim().is_empty()
            || text.split_whitespace().count() >= 50
            || symbols.iter().any(|s| s.contains(['ʏ', '\u{329}']))
            || pre.contains(['Å', 'å'])
        {
            continue;
        }
        let want: Vec<i64> = symbols
            .iter()
            .map(|s| 199 + v2602.iter().position(|t| t == s).unwrap() as i64)
            .chain([2361])
            .collect();
        cases.push((text, want));
    }
    // Six of them, spread over the recording (edge cases first, everyday text later):
    // each run loads random weights, so not all.
    assert!(cases.len() > 60, "{}", cases.len());
    for k in 0..6 {
        let (text, want) = &cases[k * cases.len() / 6];
        let (out, dump) = (scratch("de.wav"), scratch("de.npz"));
        let o = speak(
            &[
                "--language",
                "de",
                "--random-weights",
                "--no-normalize",
                "--lexicon",
                dict.to_str().unwrap(),
                "--text",
                text,
            ],
            &out,
            Some(&dump),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{text:?}: {err}");
        let z = rill_io::Npz::read(&dump).unwrap();
        let (_, tokens) = z.i64("text_tokens").unwrap();
        assert_eq!(&tokens, want, "{text:?}");
    }
}

#[test]
fn german_without_its_dictionary_and_wrong_lexicons_are_refused() {
    let old = scratch("de_nv221025.dict");
    {
        use std::io::Read;
        let gz =
            std::fs::read(rill_testkit::repo_root().join("testdata/magpie/de_nv221025.dict.gz"))
                .unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice())
            .read_to_end(&mut bytes)
            .unwrap();
        std::fs::write(&old, bytes).unwrap();
    }
    let old = old.to_str().unwrap();
    for (args, want) in [
        (
            vec!["--language", "de", "--text", "Guten Tag."],
            "--lexicon FILE",
        ),
        (
            vec!["--language", "de", "--lexicon", old, "--text", "Guten Tag."],
            "not v2602's 150",
        ),
        (
            vec!["--language", "fr", "--lexicon", old, "--text", "Bonjour."],
            "French reads none",
        ),
        (
            vec![
                "--language",
                "de",
                "--lexicon",
                "/nonexistent/de.dict",
                "--text",
                "Hallo.",
            ],
            "/nonexistent/de.dict",
        ),
    ] {
        let out = scratch("de_bad.wav");
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

#[test]
fn dropped_characters_are_named_once() {
    let out = scratch("dropped.wav");
    let o = speak(
        &[
            "--language",
            "hi",
            "--random-weights",
            // The raw path: the normaliser would read the digits and spell "Thank".
            "--no-normalize",
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
        !table.contains("not yet"),
        "every language is built:\n{table}"
    );
    // Japanese is ready where OpenJTalk's dictionary is, and says how to get it elsewhere.
    if rill_text::japanese::JapaneseFrontEnd::default_dir().is_some() {
        assert!(
            table.contains("ja    Japanese    japanese_phoneme          458   175  ready"),
            "{table}"
        );
    }
    let o = rill()
        .env("OPEN_JTALK_DICT_DIR", scratch("no-openjtalk-dictionary"))
        .args(["speak", "--list-languages"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("458   175  needs OpenJTalk's dictionary: --japanese-dictionary DIR"),
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
            vec![
                "--language",
                "ja",
                "--japanese-dictionary",
                "/nonexistent/open_jtalk_dic",
                "--text",
                "こんにちは",
            ],
            "/nonexistent/open_jtalk_dic",
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
