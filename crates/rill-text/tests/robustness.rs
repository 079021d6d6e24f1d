//! Hostile input: arbitrary Unicode, control characters, huge words, unbalanced `|`,
//! hyphen storms. Nothing may panic; every result is either ids that the model can take
//! or one of the documented errors.

use rill_text::{
    split_sentences, EnglishFrontEnd, Language, TextError, TextVocabulary, MAX_TEXT_BYTES, SPACE_ID,
};

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A character from a mix of pools: ASCII (letters, punctuation, controls), Latin-1,
    /// combining marks, IPA, typographic quotes, other scripts, anything valid.
    fn char(&mut self) -> char {
        let pools: [(u32, u32); 9] = [
            (0x20, 0x7E),
            (0x00, 0x1F),
            (0xC0, 0xFF),
            (0x300, 0x36F),
            (0x250, 0x2FF),
            (0x2010, 0x2027),
            (0xAC00, 0xD7A3),
            (0x1D15E, 0x1D164),
            (0, 0x10FFFF),
        ];
        loop {
            let (lo, hi) = pools[self.below(pools.len() as u64) as usize];
            if let Some(c) = char::from_u32(lo + self.below((hi - lo + 1) as u64) as u32) {
                return c;
            }
        }
    }
}

fn check(front: &EnglishFrontEnd, text: &str) {
    let eos = front.vocabulary().eos_id();
    match front.encode(text) {
        Ok(ids) => {
            assert_eq!(ids.last(), Some(&eos));
            let body = &ids[..ids.len() - 1];
            assert!(!body.is_empty() && body.iter().all(|&i| i < 96), "{text:?}");
            assert_ne!(
                body.last(),
                Some(&SPACE_ID),
                "trailing space kept for {text:?}"
            );
        }
        Err(TextError::Empty | TextError::Unencodable(_) | TextError::UtteranceTooLong { .. }) => {}
        Err(TextError::TooLong { .. }) => assert!(text.len() > MAX_TEXT_BYTES),
        Err(other) => panic!("unexpected error {other} for {text:?}"),
    }
    match front.encode_utterances(text) {
        Ok(utterances) => {
            assert!(!utterances.is_empty());
            assert!(utterances
                .iter()
                .all(|u| u.len() >= 2 && u.last() == Some(&eos)));
        }
        Err(TextError::Empty | TextError::Unencodable(_) | TextError::UtteranceTooLong { .. }) => {}
        Err(TextError::TooLong { .. }) => assert!(text.len() > MAX_TEXT_BYTES),
        Err(other) => panic!("unexpected error {other} for {text:?}"),
    }
    let _ = split_sentences(text);
}

#[test]
fn random_unicode_never_panics() {
    let front = EnglishFrontEnd::new(TextVocabulary::v2602());
    let mut rng = SplitMix(0x5EED);
    for _ in 0..3000 {
        let len = rng.below(80) as usize;
        let text: String = (0..len).map(|_| rng.char()).collect();
        check(&front, &text);
    }
}

#[test]
fn random_word_salad_never_panics() {
    // Dictionary words, apostrophes, hyphens, pipes and sentence ends in random order.
    let parts = [
        "read",
        "Dr.",
        "it's",
        "jones's",
        "airport's",
        "cats",
        "-",
        "'",
        "|",
        "||",
        "| a b |",
        "<pad>",
        "?",
        "! ",
        ". ",
        "  ",
        "\t",
        "\n",
        "3.50",
        "é",
        "ß",
        "ﬁ",
        "ſ",
        "\u{212A}",
        "—",
        "mixed-case-word",
        "x-",
        "-y",
        "a--b",
        "'s",
        "S'S",
    ];
    let front = EnglishFrontEnd::new(TextVocabulary::v2602());
    let mut rng = SplitMix(7);
    for _ in 0..3000 {
        let n = rng.below(30) as usize;
        let text: String = (0..n)
            .map(|_| parts[rng.below(parts.len() as u64) as usize])
            .collect();
        check(&front, &text);
    }
}

#[test]
fn huge_inputs_are_bounded() {
    let front = EnglishFrontEnd::new(TextVocabulary::v2602());
    // One enormous word, an enormous hyphenated word, a wall of titles, a wall of pipes.
    for unit in ["a", "ab-", "Dr. ", "|", "| ", "-", "é", "\u{0301}", "x'"] {
        let text = unit.repeat(MAX_TEXT_BYTES / unit.len());
        assert!(text.len() <= MAX_TEXT_BYTES);
        check(&front, &text);
    }
    let too_long = "a".repeat(MAX_TEXT_BYTES + 1);
    assert!(matches!(
        front.encode(&too_long),
        Err(TextError::TooLong { .. })
    ));
    assert!(matches!(
        front.encode_utterances(&too_long),
        Err(TextError::TooLong { .. })
    ));
    // A long single utterance is refused with advice to split it.
    let err = front.encode(&"hello ".repeat(1000)).unwrap_err();
    assert!(
        matches!(err, TextError::UtteranceTooLong { max: 2048, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("split"));
    // Split into sentences, the same words go through.
    let utterances = front
        .encode_utterances(&"Hello there. ".repeat(1000))
        .unwrap();
    assert_eq!(utterances.len(), 1000);
}

#[test]
fn empty_and_unencodable_input_are_clear_errors() {
    let front = EnglishFrontEnd::new(TextVocabulary::v2602());
    for blank in ["", "   ", "\n\t", "\u{3000}"] {
        let err = front.encode(blank).unwrap_err();
        assert!(matches!(err, TextError::Empty), "{blank:?}: {err}");
        assert!(err.to_string().contains("empty"));
    }
    for nothing in ["—", "☺☺", "$ _ =", "\u{0301}\u{0302}"] {
        let err = front.encode(nothing).unwrap_err();
        assert!(
            matches!(err, TextError::Unencodable(_)),
            "{nothing:?}: {err}"
        );
    }
}

#[test]
fn language_names_parse_and_unknown_ones_list_the_valid_codes() {
    for name in ["en", "EN", "en-US", "en_us", "English"] {
        assert_eq!(name.parse::<Language>().unwrap(), Language::English);
    }
    for (name, l) in [
        ("de", Language::German),
        ("fr-FR", Language::French),
        ("hindi", Language::Hindi),
    ] {
        assert_eq!(name.parse::<Language>().unwrap(), l);
    }
    for name in ["xx", "pt", ""] {
        let err = name.parse::<Language>().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unknown language {name:?}: valid codes are en, es, de, zh, ja, fr, hi, it, vi"
            )
        );
    }
    let mut refused = Vec::new();
    if !cfg!(feature = "mandarin") {
        refused.push("zh");
    }
    if !cfg!(feature = "japanese") {
        refused.push("ja");
    }
    for name in refused {
        let err = name.parse::<Language>().unwrap().check_built().unwrap_err();
        assert!(err.to_string().contains("not supported yet"), "{err}");
    }
    assert_eq!(
        Language::Mandarin.check_built().is_ok(),
        cfg!(feature = "mandarin")
    );
    assert_eq!(
        Language::Japanese.check_built().is_ok(),
        cfg!(feature = "japanese")
    );
    assert_eq!(Language::English.code(), "en");
}

#[test]
fn front_end_is_shareable_and_parsed_once() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<EnglishFrontEnd>();
    assert!(std::sync::Arc::ptr_eq(
        &rill_text::Lexicon::embedded(),
        &rill_text::Lexicon::embedded()
    ));
    // Threads share one front end and get the same ids.
    let front = EnglishFrontEnd::new(TextVocabulary::v2602());
    let want = front.encode("Hello world, I read the rill docs.").unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                assert_eq!(
                    front.encode("Hello world, I read the rill docs.").unwrap(),
                    want
                )
            });
        }
    });
}
