//! The English normaliser against NeMo's own (`nemo_text_processing` 1.2.0,
//! `Normalizer(input_case='cased', lang='en').normalize(text, verbose=False)`, the call
//! `do_tts(apply_TN=True)` makes) on the corpus `testdata/magpie/normalize_en.txt`,
//! recorded by `testdata/magpie/make_normalize.py` into `normalize_en.json`.
//! Prints every difference and requires ≥ 95 % exact matches.

use rill_text::normalize::{normalize, NormalizeError};
use rill_text::{Language, MAX_TEXT_BYTES};
use std::path::PathBuf;

fn fixture() -> serde_json::Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/magpie/normalize_en.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("missing fixture {}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture is JSON")
}

#[test]
fn matches_nemo_on_the_corpus() {
    let fx = fixture();
    let cases = fx["cases"].as_array().expect("cases");
    assert!(cases.len() >= 200, "corpus has {} sentences", cases.len());
    let mut exact = 0;
    for case in cases {
        let input = case["input"].as_str().unwrap();
        let expected = case["expected"].as_str().unwrap();
        let got = normalize(input, Language::English).unwrap().text;
        if got == expected {
            exact += 1;
        } else {
            println!("DIFF {input:?}\n  nemo: {expected:?}\n  rill: {got:?}");
        }
    }
    let rate = exact as f64 / cases.len() as f64;
    println!(
        "exact match: {exact}/{} = {:.1} % (nemo_text_processing {})",
        cases.len(),
        rate * 100.0,
        fx["nemo_text_processing"].as_str().unwrap_or("?")
    );
    assert!(
        rate >= 0.95,
        "exact-match rate {:.1} % < 95 %",
        rate * 100.0
    );
}

#[test]
fn spans_point_at_the_written_forms() {
    let text = "Pay $3.50 on May 1, 2024 at 3:30 pm.";
    let n = normalize(text, Language::English).unwrap();
    let written: Vec<&str> = n.spans.iter().map(|s| &text[s.written.clone()]).collect();
    assert_eq!(written, ["$3.50", "May 1, 2024", "3:30 pm."]);
    for s in &n.spans {
        assert!(n.text.contains(&s.spoken));
    }
}

#[test]
fn robust_on_odd_input() {
    let en = Language::English;
    assert_eq!(normalize("", en).unwrap().text, "");
    assert_eq!(normalize("  \n\t ", en).unwrap().text, "");
    let huge = "9".repeat(5000);
    let n = normalize(&huge, en).unwrap();
    assert!(n.text.starts_with("nine nine"));
    for odd in [
        "$",
        "£.",
        "-",
        "--5",
        "1-",
        "-1-",
        "1/0",
        "0/0",
        "99:99",
        "12:",
        ":30",
        "1,2,3",
        "1,000,00",
        "$-5",
        "5 km/",
        "5 /h",
        "(",
        "()",
        "(123)",
        "1st2nd",
        "3.",
        ".5",
        "5..5",
        "٣٤",
        "１２３",
        "e\u{301}",
        "😀 5 😀",
        "\u{0}\u{7f}",
        "World War",
        "1 St.",
        "May",
        "May 32",
        "99/99/9999",
        "2024-13-45",
        "0000",
        "0s",
        "1e10",
        "¢",
        "°",
        "5°",
        "5 °",
    ] {
        let _ = normalize(odd, en).unwrap();
        let _ = normalize(&format!("a {odd} b {odd}"), en).unwrap();
    }
    let long = "$1,234.56 on 5 Jan 2024 ".repeat(MAX_TEXT_BYTES / 24);
    assert!(normalize(&long, en).is_ok());
    let too_long = "a".repeat(MAX_TEXT_BYTES + 1);
    assert!(matches!(
        normalize(&too_long, en),
        Err(NormalizeError::TooLong { .. })
    ));
}

/// Pseudo-random text over digits, signs, units and multi-byte characters: never a panic,
/// spans in order, inside the input, on character boundaries, no stray spaces.
#[test]
fn random_text_keeps_the_invariants() {
    let alphabet: Vec<char> =
        "0123456789$£€¢,.-/:%#()\"' aApPmMkKgsStTnNdDrRhHJanMyWI°F\u{301}é😀٣\t\n"
            .chars()
            .collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as usize
    };
    for _ in 0..20_000 {
        let len = next() % 48;
        let text: String = (0..len)
            .map(|_| alphabet[next() % alphabet.len()])
            .collect();
        let n = normalize(&text, Language::English).unwrap();
        assert_eq!(n.text.trim(), n.text, "{text:?}");
        assert!(!n.text.contains("  "), "{text:?}");
        let mut end = 0;
        for s in &n.spans {
            assert!(
                end <= s.written.start && s.written.start < s.written.end,
                "{text:?}"
            );
            assert!(text.get(s.written.clone()).is_some(), "{text:?}");
            end = s.written.end;
        }
    }
}

#[test]
fn too_long_a_text_is_refused() {
    let text = "5 ".repeat(rill_text::MAX_TEXT_BYTES / 2 + 1);
    let err = normalize(&text, Language::English).unwrap_err();
    assert!(matches!(err, NormalizeError::TooLong { .. }), "{err}");
}
