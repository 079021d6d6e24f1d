//! The English normaliser against NeMo's own (`nemo_text_processing` 1.2.0,
//! `Normalizer(input_case='cased', lang='en').normalize(text, verbose=False)`, the call
//! `do_tts(apply_TN=True)` makes) on the corpus `testdata/magpie/normalize_en.txt`,
//! recorded by `testdata/magpie/make_normalize.py` into `normalize_en.json`.
//! Prints every difference and requires ≥ 95 % exact matches.

use rill_text::normalize::{has_normalizer, normalize, NormalizeError};
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

#[test]
fn other_languages_say_so() {
    assert!(has_normalizer(Language::English));
    for language in Language::ALL {
        if language == Language::English {
            continue;
        }
        assert!(!has_normalizer(language));
        let err = normalize("5", language).unwrap_err();
        assert!(matches!(err, NormalizeError::NotAvailable { .. }), "{err}");
    }
}
