//! The language table and the ByT5 (fr, it, vi) and Hindi front ends against NeMo 3.0.0's
//! own code (`testdata/magpie/make_tokenizer_langs.py`): the aggregated v2602 table,
//! the Hindi vocabulary, NeMo's split thresholds and sentence endings, and the ids of
//! ~360 texts per language, token for token. A missing recording fails.

use std::path::PathBuf;

use rill_text::{
    hindi, split_sentences_in, v2602_tokenizers, Language, TextError, TextFrontEnd, TextVocabulary,
    LANGUAGES, V2602_BOS, V2602_EOS,
};
use serde_json::Value;

fn testdata(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/magpie")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (recorded by testdata/magpie/make_tokenizer_langs.py)",
            path.display()
        )
    });
    serde_json::from_str(&text).expect("valid JSON")
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .expect("an id list")
        .iter()
        .map(|x| x.as_u64().expect("an id") as u32)
        .collect()
}

#[test]
fn table_offsets_sizes_and_specials_are_nemos() {
    let t = testdata("tokenizer_langs_table.json");
    let recorded = t["tokenizers"].as_array().unwrap();
    let ours = v2602_tokenizers();
    assert_eq!(recorded.len(), ours.len());
    for (r, o) in recorded.iter().zip(ours) {
        assert_eq!(r["name"], o.name);
        assert_eq!(r["offset"], o.offset, "{}", o.name);
        assert_eq!(r["size"], o.size, "{}", o.name);
    }
    assert_eq!(
        (t["bos"].as_u64(), t["eos"].as_u64()),
        (Some(2360), Some(2361))
    );
    assert_eq!((V2602_BOS, V2602_EOS), (2360, 2361));
    let v = TextVocabulary::v2602();
    assert_eq!((v.bos_id(), v.eos_id(), v.rows()), (2360, 2361, 2362));
    for l in LANGUAGES {
        assert_eq!(
            t["thresholds"][l.code].as_u64(),
            Some(l.split_threshold as u64),
            "{}",
            l.code
        );
        // NeMo's endings minus the default `. ? !` are the ones that need no space.
        let endings: Vec<char> = t["sentence_endings"][l.code]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e.as_str().unwrap().chars().next().unwrap())
            })
            .into_iter()
            .flatten()
            .filter(|c| !matches!(c, '.' | '?' | '!'))
            .collect();
        assert_eq!(endings, l.native_endings, "{}", l.code);
    }
    // ByT5: 384 entries, specials and extra ids where rill puts them.
    let vocab = &t["byt5_vocab"];
    assert_eq!(vocab.as_object().unwrap().len(), 384);
    for (tok, id) in [
        ("<pad>", 0),
        ("</s>", 1),
        ("<unk>", 2),
        ("<extra_id_0>", 259),
    ] {
        assert_eq!(vocab[tok], id, "{tok}");
    }
    assert_eq!(vocab["<extra_id_124>"], 383);
}

#[test]
fn hindi_vocabulary_rebuilt_equals_nemos() {
    let t = testdata("tokenizer_langs_table.json");
    let recorded: Vec<&str> = t["hindi_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(hindi::hindi_tokens(), recorded);
    assert_eq!(recorded.len(), hindi::HINDI_TABLE_SIZE);
    // The dict keeps the second copy of every Devanagari character.
    let token2id = t["hindi_token2id"].as_object().unwrap();
    for c in hindi::HINDI_GRAPHEMES {
        let mut dropped = Vec::new();
        let got = hindi::encode(&c.to_string(), &mut dropped);
        assert_eq!(got[1], token2id[&c.to_string()].as_u64().unwrap() as u32);
        assert!(got[1] >= 74 && got[1] <= 146, "{c}");
    }
}

fn check_language(code: &str) {
    let language: Language = code.parse().unwrap();
    let rec = testdata(&format!("tokenizer_{code}.json"));
    let front = TextFrontEnd::new(TextVocabulary::v2602());
    let eos = rec["eos"].as_u64().unwrap() as u32;
    assert_eq!(eos, 2361);
    assert_eq!(rec["offset"].as_u64(), Some(language.info().offset as u64));
    let rows: Vec<&Value> = rec["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rec["random"].as_array().unwrap())
        .collect();
    assert!(rows.len() >= 350, "{code}: {} texts", rows.len());
    let (mut checked, mut split) = (0, 0);
    for row in rows {
        let text = row["text"].as_str().unwrap();
        let mut dropped = Vec::new();
        let mut got = front.token_ids(text, language, &mut dropped).unwrap();
        got.push(eos);
        assert_eq!(got, ids(&row["ids"]), "{code}: {text:?}");
        let splits = row["split"].as_bool().unwrap();
        assert_eq!(
            rill_text::needs_splitting_in(text, language),
            splits,
            "{code}: {text:?}"
        );
        if splits {
            split += 1;
            let sentences = row["sentences"].as_array().unwrap();
            let ours = split_sentences_in(text, language);
            assert_eq!(ours.len(), sentences.len(), "{code}: {text:?}");
            for (s, r) in ours.iter().zip(sentences) {
                assert_eq!(s, r["text"].as_str().unwrap());
                let mut got = front.token_ids(s, language, &mut dropped).unwrap();
                got.push(eos);
                assert_eq!(got, ids(&r["ids"]), "{code}: {s:?}");
            }
        }
        // The checked path agrees wherever it accepts the text.
        match front.encode_utterances(text, language) {
            Ok(enc) if !splits => assert_eq!(enc.utterances, [ids(&row["ids"])]),
            Ok(_) => {}
            Err(
                TextError::Empty
                | TextError::NothingEncodable { .. }
                | TextError::UtteranceTooLong { .. },
            ) => {}
            Err(e) => panic!("{code}: {text:?}: {e}"),
        }
        checked += 1;
    }
    assert!(split >= 3, "{code}: only {split} long texts");
    eprintln!("{code}: {checked} texts token-exact ({split} split into sentences)");
}

#[test]
fn french_is_nemos() {
    check_language("fr");
}

#[test]
fn italian_is_nemos() {
    check_language("it");
}

#[test]
fn vietnamese_is_nemos() {
    check_language("vi");
}

#[test]
fn hindi_is_nemos() {
    check_language("hi");
}

#[test]
fn checkpoints_know_their_languages_and_refuse_the_rest() {
    let names = rill_text::v2602_tokenizer_names();
    let v = TextVocabulary::from_tokenizer_names(&names, 2362).unwrap();
    assert_eq!(v, TextVocabulary::v2602());
    assert_eq!(v.languages(), Language::ALL);
    let front = TextFrontEnd::new(v);
    let built: Vec<&str> = front.languages().iter().map(|l| l.code()).collect();
    // Spanish's dictionary is embedded unless the feature is off; Mandarin's tables
    // likewise (feature `mandarin`).
    let mut want = vec!["en"];
    if cfg!(feature = "embedded-lexicons") {
        want.push("es");
    }
    if cfg!(feature = "mandarin") {
        want.push("zh");
    }
    want.extend(["fr", "hi", "it", "vi"]);
    assert_eq!(built, want);
    let mut refused = Vec::new();
    if !cfg!(feature = "mandarin") {
        refused.push("zh");
    }
    if !cfg!(feature = "japanese") {
        refused.push("ja");
    }
    for code in refused {
        let err = front.encode("hola", code.parse().unwrap()).unwrap_err();
        assert!(matches!(err, TextError::LanguageNotBuilt { .. }), "{err}");
    }
    // Japanese is built but needs OpenJTalk's dictionary, which rill does not ship.
    if cfg!(feature = "japanese") {
        let err = front.encode("こんにちは", Language::Japanese).unwrap_err();
        assert!(
            matches!(err, TextError::MissingJapaneseDictionary { reason: None }),
            "{err}"
        );
    }
    // German is built but needs the checkpoint's dictionary, which rill cannot ship.
    let err = front.encode("Hallo", Language::German).unwrap_err();
    assert!(
        matches!(
            err,
            TextError::MissingLexicon {
                file: "de_nv230119.dict",
                ..
            }
        ),
        "{err}"
    );
    // A dictionary that cannot be used is reported for German alone.
    let broken = front
        .clone()
        .with_ipa(Language::German, rill_text::IpaFrontEnd::german(b"", b""));
    let err = broken.encode("Hallo", Language::German).unwrap_err();
    assert!(
        matches!(err, TextError::LanguageUnavailable { .. }),
        "{err}"
    );
    assert_eq!(broken.languages(), front.languages());
    // The oracle's English-only model: English exactly as before, nothing else.
    let oracle = TextVocabulary::from_tokenizer_names(&["english_phoneme"], 98).unwrap();
    assert_eq!(
        (oracle.eos_id(), oracle.languages()),
        (97, vec![Language::English])
    );
    let front = TextFrontEnd::new(oracle);
    assert_eq!(
        front
            .encode("Hello world.", Language::English)
            .unwrap()
            .utterances[0]
            .last(),
        Some(&97)
    );
    let err = front.encode("Bonjour", Language::French).unwrap_err();
    assert!(
        matches!(err, TextError::LanguageNotInCheckpoint { .. }),
        "{err}"
    );
    assert_eq!(
        TextVocabulary::from_tokenizer_names::<&str>(&[], 98).unwrap(),
        oracle
    );
    // Another table is refused, not mis-tokenised.
    assert!(TextVocabulary::from_tokenizer_names(&names, 98).is_err());
    assert!(TextVocabulary::from_tokenizer_names(&["french_chartokenizer"], 500).is_err());
}

#[test]
fn dropped_characters_are_reported_once() {
    let front = TextFrontEnd::new(TextVocabulary::v2602());
    let enc = front
        .encode("Thank you 42, नमस्ते 42 ॥", Language::Hindi)
        .unwrap();
    assert_eq!(enc.dropped, ['2', '4', 'T', '॥']);
    assert_eq!(
        rill_text::describe_dropped(&enc.dropped[..1]),
        "'2' (U+0032)"
    );
    let enc = front.encode("a — b 😀 — c", Language::English).unwrap();
    assert_eq!(enc.dropped, ['—', '😀']);
    assert!(front
        .encode("Bonjour — 😀", Language::French)
        .unwrap()
        .dropped
        .is_empty());
    // Text wholly in another script: nothing to speak.
    let err = front.encode("你好，世界。", Language::Hindi).unwrap_err();
    assert!(matches!(err, TextError::NothingEncodable { .. }), "{err}");
    assert!(err.to_string().contains("Hindi"), "{err}");
}

/// With the embedded Spanish dictionary (the default build).
#[cfg(feature = "embedded-lexicons")]
#[test]
fn spanish_goes_through_the_ipa_front_end_at_its_offset() {
    let front = TextFrontEnd::new(TextVocabulary::v2602());
    let text = "¿Dónde está la biblioteca? 42 €";
    let enc = front.encode(text, Language::Spanish).unwrap();
    // The start of spec magpie_languages.md §3's run of NeMo: " ¿dˈonde estˈa lˈa …".
    assert_eq!(
        enc.utterances[0][..9],
        [196, 161, 138, 187, 148, 147, 138, 139, 196]
    );
    let local = rill_text::IpaFrontEnd::spanish()
        .unwrap()
        .encode(text)
        .unwrap();
    let mut want: Vec<u32> = local.ids.iter().map(|id| id + 96).collect();
    want.push(2361);
    assert_eq!(enc.utterances[0], want);
    assert_eq!(enc.dropped, ['2', '4', '€']);
}
