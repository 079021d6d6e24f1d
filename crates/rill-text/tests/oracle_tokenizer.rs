//! The English front end against upstream NeMo's own output (`testdata/magpie/
//! tokenizer_en.json`, recorded by the Magpie oracle): every sentence's preprocessed
//! text, G2P symbols, ids and model input, the token table, and the sentence split of
//! the long text. All must match exactly.

use std::path::PathBuf;

use rill_text::{
    english_text_preprocessing, split_sentences, EnglishFrontEnd, TextVocabulary, ENGLISH_TOKENS,
    HETERONYMS_SHA256, IPA_DICT_SHA256,
};
use serde_json::Value;

/// Reads a reference file under `testdata/magpie/`; a missing file fails the test.
fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/magpie")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "reference file testdata/magpie/{name} is missing or unreadable ({e}). It is part of \
             the repository: restore it with `git checkout -- testdata/magpie/{name}`"
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_string())
        .collect()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_u64().expect("id") as u32)
        .collect()
}

fn oracle_front_end(reference: &Value) -> EnglishFrontEnd {
    // The oracle's model has only the English table: 96 symbols + BOS + EOS rows.
    let eos = reference["eos_id_this_vocab"].as_u64().unwrap() as usize;
    let vocabulary = TextVocabulary::from_embedding_rows(eos + 1, 0).unwrap();
    assert_eq!(
        vocabulary.bos_id() as u64,
        reference["bos_id_this_vocab"].as_u64().unwrap()
    );
    EnglishFrontEnd::new(vocabulary)
}

#[test]
fn token_table_and_data_files_are_the_recorded_ones() {
    let reference = fixture("tokenizer_en.json");
    assert_eq!(strings(&reference["tokens"]), ENGLISH_TOKENS);
    assert_eq!(reference["pad_id"], 94);
    assert_eq!(reference["dict_sha256"], IPA_DICT_SHA256);
    assert_eq!(reference["heteronyms_sha256"], HETERONYMS_SHA256);
    let released = &reference["released_v2602"];
    let rows = released["text_vocab"].as_u64().unwrap() as usize;
    let v2602 = TextVocabulary::from_embedding_rows(rows, 0).unwrap();
    assert_eq!(v2602.bos_id() as u64, released["bos_id"].as_u64().unwrap());
    assert_eq!(v2602.eos_id() as u64, released["eos_id"].as_u64().unwrap());
    assert_eq!(v2602, TextVocabulary::v2602());
}

#[test]
fn every_recorded_sentence_matches() {
    let reference = fixture("tokenizer_en.json");
    let front = oracle_front_end(&reference);
    let sentences = reference["sentences"].as_array().unwrap();
    assert_eq!(sentences.len(), 12);
    for s in sentences {
        let text = s["text"].as_str().unwrap();
        assert_eq!(
            english_text_preprocessing(text),
            s["preprocessed"].as_str().unwrap(),
            "{text:?}"
        );
        assert_eq!(
            front.phonemes(text).unwrap(),
            strings(&s["g2p"]),
            "G2P of {text:?}"
        );
        let got = front.token_ids(text).unwrap();
        assert_eq!(got, ids(&s["ids"]), "ids of {text:?}");
        let rendered: String = got.iter().map(|&i| ENGLISH_TOKENS[i as usize]).collect();
        assert_eq!(rendered, s["rendered"].as_str().unwrap());
        let model_input: Vec<Vec<u32>> = s["model_input"]
            .as_array()
            .unwrap()
            .iter()
            .map(ids)
            .collect();
        assert_eq!(s["n_chunks"], 1);
        assert_eq!(
            front.encode_utterances(text).unwrap(),
            model_input,
            "{text:?}"
        );
        assert_eq!(front.encode(text).unwrap(), model_input[0]);
    }
}

#[test]
fn the_long_text_splits_into_the_recorded_sentences() {
    let reference = fixture("tokenizer_en.json");
    let front = oracle_front_end(&reference);
    let long = &reference["long_text"];
    let text = long["text"].as_str().unwrap();
    assert_eq!(
        rill_text::word_count(text) as u64,
        long["words"].as_u64().unwrap()
    );
    assert_eq!(split_sentences(text), strings(&long["chunk_texts"]));
    let model_input: Vec<Vec<u32>> = long["model_input"]
        .as_array()
        .unwrap()
        .iter()
        .map(ids)
        .collect();
    assert_eq!(model_input.len() as u64, long["n_chunks"].as_u64().unwrap());
    assert_eq!(front.encode_utterances(text).unwrap(), model_input);
}

#[test]
fn released_vocabulary_only_changes_eos() {
    let reference = fixture("tokenizer_en.json");
    let oracle = oracle_front_end(&reference);
    let released = EnglishFrontEnd::new(TextVocabulary::v2602());
    for s in reference["sentences"].as_array().unwrap() {
        let text = s["text"].as_str().unwrap();
        let mut want = oracle.encode(text).unwrap();
        *want.last_mut().unwrap() = 2361;
        assert_eq!(released.encode(text).unwrap(), want);
    }
}

/// One case of `tokenizer_en_extra.json`; returns whether NeMo itself failed on it.
fn check_case(front: &EnglishFrontEnd, case: &Value) -> bool {
    let text = case["text"].as_str().unwrap();
    assert_eq!(
        english_text_preprocessing(text),
        case["preprocessed"].as_str().unwrap(),
        "{text:?}"
    );
    assert_eq!(
        front.phonemes(text).unwrap(),
        strings(&case["g2p"]),
        "G2P of {text:?}"
    );
    if case.get("nemo_error").is_some() {
        assert!(front.encode(text).is_err(), "{text:?}");
        return true;
    }
    let want = ids(&case["ids"]);
    assert_eq!(front.token_ids(text).unwrap(), want, "ids of {text:?}");
    if want.is_empty() {
        assert!(front.encode(text).is_err(), "{text:?}");
    } else {
        assert_eq!(front.encode(text).unwrap(), [want, vec![2361]].concat());
    }
    false
}

/// Edge cases run through NeMo's own IpaG2p + IPATokenizer code by
/// `testdata/magpie/make_tokenizer_extra.py` (which first re-checks the 12 recorded
/// sentences). Where NeMo itself fails (text that is only spaces once unknown symbols
/// are dropped: `IndexError`), rill must return an error instead.
#[test]
fn nemo_edge_cases_match() {
    let reference = fixture("tokenizer_en_extra.json");
    let front = EnglishFrontEnd::new(TextVocabulary::v2602());
    let cases = reference["sentences"].as_array().unwrap();
    assert!(cases.len() >= 30);
    let failures = cases.iter().filter(|case| check_case(&front, case)).count();
    assert!(failures >= 1);
}

/// 600 deterministic random texts (dictionary words, heteronyms, suffixes, hyphens,
/// punctuation, odd code points) through the same NeMo code.
#[test]
fn nemo_random_texts_match() {
    let reference = fixture("tokenizer_en_extra.json");
    let front = EnglishFrontEnd::new(TextVocabulary::v2602());
    let cases = reference["random"].as_array().unwrap();
    assert_eq!(cases.len(), 600);
    for case in cases {
        check_case(&front, case);
    }
}
