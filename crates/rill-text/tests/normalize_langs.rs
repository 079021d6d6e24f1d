//! The Spanish, German, French and Italian normalisers against NeMo's own
//! (`nemo_text_processing` 1.2.0, `Normalizer(input_case='cased', lang=L).normalize(text,
//! verbose=False)`, the call `do_tts(apply_TN=True)` makes) on the corpora
//! `testdata/magpie/normalize_{es,de,fr,it}.txt`, recorded by
//! `testdata/magpie/make_normalize.py --lang L` into `normalize_L.json`. Prints every
//! difference and requires ≥ 95 % exact matches; checks odd input never panics.

use rill_text::normalize::normalize;
use rill_text::Language;
use std::path::PathBuf;

/// The languages built, with their recordings.
const BUILT: &[(Language, &str)] = &[
    (Language::Spanish, "es"),
    (Language::German, "de"),
    (Language::French, "fr"),
    (Language::Italian, "it"),
    (Language::Vietnamese, "vi"),
    (Language::Hindi, "hi"),
    (Language::Mandarin, "zh"),
    (Language::Japanese, "ja"),
];

fn check(language: Language, code: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../testdata/magpie/normalize_{code}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("missing fixture {}: {e}", path.display()));
    let fx: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
    let cases = fx["cases"].as_array().expect("cases");
    assert!(cases.len() >= 200, "corpus has {} sentences", cases.len());
    let mut exact = 0;
    for case in cases {
        let input = case["input"].as_str().unwrap();
        let expected = case["expected"].as_str().unwrap();
        let got = normalize(input, language).unwrap().text;
        if got == expected {
            exact += 1;
        } else {
            println!("DIFF {input:?}\n  nemo: {expected:?}\n  rill: {got:?}");
        }
    }
    let rate = exact as f64 / cases.len() as f64;
    println!(
        "{code}: exact match {exact}/{} = {:.1} % (nemo_text_processing {})",
        cases.len(),
        rate * 100.0,
        fx["nemo_text_processing"].as_str().unwrap_or("?")
    );
    assert!(
        rate >= 0.95,
        "{code}: exact-match rate {:.1} % < 95 %",
        rate * 100.0
    );
}

#[test]
fn spanish_matches_nemo_on_the_corpus() {
    check(Language::Spanish, "es");
}

#[test]
fn german_matches_nemo_on_the_corpus() {
    check(Language::German, "de");
}

#[test]
fn french_matches_nemo_on_the_corpus() {
    check(Language::French, "fr");
}

#[test]
fn italian_matches_nemo_on_the_corpus() {
    check(Language::Italian, "it");
}

#[test]
fn vietnamese_matches_nemo_on_the_corpus() {
    check(Language::Vietnamese, "vi");
}

#[test]
fn hindi_matches_nemo_on_the_corpus() {
    check(Language::Hindi, "hi");
}

#[test]
fn mandarin_matches_nemo_on_the_corpus() {
    check(Language::Mandarin, "zh");
}

#[test]
fn japanese_matches_nemo_on_the_corpus() {
    check(Language::Japanese, "ja");
}

#[test]
fn every_language_reads_numbers_aloud() {
    for language in Language::ALL {
        let n = normalize("5", language).unwrap();
        assert_ne!(n.text, "5", "{language:?}");
        assert!(BUILT.iter().any(|b| b.0 == language) || language == Language::English);
    }
}

#[test]
fn robust_on_odd_input() {
    let huge = "9".repeat(5000);
    let odd = [
        "",
        "  \n\t ",
        "$",
        "€",
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
        "1.000.00",
        "1.",
        ",5",
        "5,,5",
        "5.,5",
        "$-5",
        "-5 €",
        "5 km/",
        "1.º",
        ".º",
        "0.ª",
        "99.º",
        "3.er",
        "٣٤",
        "１２３",
        "e\u{301}",
        "😀 5 😀",
        "\u{0}\u{7f}",
        "May 32",
        "99/99/9999",
        "31/02",
        "2024-13-45",
        "0000",
        "1e10",
        "°",
        "5°",
        "5 °C",
        "1. Januar",
        "32. März",
        "1er",
        "XXI",
        "¿5?",
        "«5»",
        "5 de",
        "5 de enero de",
        "000 000 000",
        "1 000 000 000 000 000 000 000",
        "0,0000000000001",
        "24:00",
        "25:00",
        "10h30",
        "10 h",
        huge.as_str(),
    ];
    for (language, _) in BUILT {
        for o in odd {
            let _ = normalize(o, *language).unwrap();
            let _ = normalize(&format!("a {o} b {o}."), *language).unwrap();
        }
        let n = normalize(&huge, *language).unwrap();
        assert!(!n.text.is_empty());
    }
}

/// Pseudo-random text over digits, signs, units and multi-byte characters: never a panic,
/// spans in order, inside the input, on character boundaries, no stray spaces.
#[test]
fn random_text_keeps_the_invariants() {
    let alphabet: Vec<char> = "0123456789$€,.-/:%°ºª()¿¡«» kmgldeuhCrJanMäréè😀٣\t\n"
        .chars()
        .collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as usize
    };
    for (language, _) in BUILT {
        for _ in 0..10_000 {
            let len = next() % 48;
            let text: String = (0..len)
                .map(|_| alphabet[next() % alphabet.len()])
                .collect();
            let n = normalize(&text, *language).unwrap();
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
}
