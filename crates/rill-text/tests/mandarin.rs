//! The Mandarin front end against NeMo 3.0.0's own `ChineseG2p` + `ChinesePhonemesTokenizer`
//! (v2602's `mandarin_phoneme` config) on jieba 0.42.1, pypinyin 0.55.0 and pypinyin-dict
//! 0.9.0 (`testdata/magpie/make_tokenizer_zh.py`): the 109-symbol table, pypinyin's Han
//! ranges, and for every recorded text the jieba words, the pinyin of each word, the G2P
//! symbols and the ids, exactly. A missing recording fails.
#![cfg(feature = "mandarin")]

use std::path::PathBuf;

use rill_text::mandarin::{pinyin, MandarinFrontEnd, MANDARIN_TABLE_SIZE};
use rill_text::{Language, TextFrontEnd, TextVocabulary};
use serde_json::Value;

fn recording() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/magpie/tokenizer_zh.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (recorded by testdata/magpie/make_tokenizer_zh.py)",
            path.display()
        )
    });
    serde_json::from_str(&text).expect("valid JSON")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|s| s.as_str().expect("a string").to_string())
        .collect()
}

fn rows(rec: &Value) -> Vec<&Value> {
    let mut rows: Vec<&Value> = Vec::new();
    for key in ["sentences", "random"] {
        rows.extend(rec[key].as_array().expect("rows"));
    }
    rows
}

#[test]
fn table_and_han_ranges_are_nemos() {
    let rec = recording();
    let t = std::time::Instant::now();
    let front = MandarinFrontEnd::embedded();
    eprintln!("tables ready in {:.2} s", t.elapsed().as_secs_f64());
    assert_eq!(front.tokens(), strings(&rec["tokens"]).as_slice());
    assert_eq!(front.tokens().len(), MANDARIN_TABLE_SIZE);
    assert_eq!(rec["offset"], 349);
    assert_eq!(Language::Mandarin.info().offset, 349);
    let t2i = rec["token2id"].as_object().expect("token2id");
    for (t, id) in t2i {
        let pos = front
            .tokens()
            .iter()
            .rposition(|x| x == t)
            .expect("in table");
        assert_eq!(Some(pos as u64), id.as_u64(), "{t}");
    }
    let ranges: Vec<(u32, u32)> = rec["re_hans"]
        .as_array()
        .expect("ranges")
        .iter()
        .map(|r| (r[0].as_u64().unwrap() as u32, r[1].as_u64().unwrap() as u32))
        .collect();
    assert_eq!(ranges, pinyin::RE_HANS_RANGES);
}

#[test]
fn jieba_words_match_python_jieba() {
    let rec = recording();
    let front = MandarinFrontEnd::embedded();
    let (mut n, mut bad) = (0, Vec::new());
    for row in rows(&rec) {
        let text = row["text"].as_str().unwrap();
        n += 1;
        if front.words(text) != strings(&row["words"]) {
            bad.push(text.to_string());
        }
    }
    assert!(n >= 300, "{n} texts");
    assert!(bad.is_empty(), "{} of {n} differ: {bad:?}", bad.len());
}

#[test]
fn pinyin_of_each_word_matches_pypinyin() {
    let rec = recording();
    let front = MandarinFrontEnd::embedded();
    let mut bad = Vec::new();
    for row in rows(&rec) {
        let words = strings(&row["words"]);
        for (w, want) in words.iter().zip(row["pinyin"].as_array().unwrap()) {
            let got = front.lazy_pinyin(w);
            if got != strings(want) {
                bad.push(format!("{w}: {got:?} vs {want}"));
            }
        }
    }
    assert!(bad.is_empty(), "{} words differ: {bad:?}", bad.len());
}

#[test]
fn g2p_and_ids_match_nemo() {
    let rec = recording();
    let front = MandarinFrontEnd::embedded();
    let (mut n, mut bad) = (0, Vec::new());
    for row in rows(&rec) {
        let text = row["text"].as_str().unwrap();
        let want_ids: Vec<u32> = row["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let g2p = front.g2p(text);
        let ids = front.encode(text, &mut Vec::new());
        n += 1;
        if g2p != strings(&row["g2p"]) || ids != want_ids {
            bad.push(text.to_string());
        }
    }
    eprintln!("{} of {n} texts exact", n - bad.len());
    assert!(bad.is_empty(), "{} of {n} differ: {bad:?}", bad.len());
}

#[test]
fn text_front_end_speaks_mandarin_with_offset_and_report() {
    let front = TextFrontEnd::new(TextVocabulary::v2602());
    assert!(front.languages().contains(&Language::Mandarin));
    let got = front.encode("你好，世界。6😀", Language::Mandarin).unwrap();
    let want: Vec<u32> = [0, 13, 7, 43, 27, 3, 43, 73, 36, 7, 44, 22, 8, 4, 44, 74, 0]
        .iter()
        .map(|id| id + 349)
        .chain([2361])
        .collect();
    // The recording's ids of "你好，世界。" (the digit 6 and the emoji are dropped).
    let rec = recording();
    let row = rows(&rec)
        .into_iter()
        .find(|r| r["text"] == "你好，世界。")
        .expect("recorded");
    let rec_ids: Vec<u32> = row["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32 + 349)
        .chain([2361])
        .collect();
    assert_eq!(want, rec_ids);
    assert_eq!(got.utterances, vec![want]);
    assert_eq!(got.dropped, vec!['6', '😀']);
    // Nothing speakable is an error, not an utterance of padding.
    assert!(front.encode("😀", Language::Mandarin).is_err());
    assert!(front.encode("12345", Language::Mandarin).is_err());
}

#[test]
fn any_text_up_to_the_size_limit_encodes_without_panic() {
    let front = MandarinFrontEnd::embedded();
    // Every 97th code point (surrogates skipped), Han runs with and without dictionary
    // words, then a long run only jieba's HMM can cut.
    let mut text: String = (0..0x11_0000u32)
        .step_by(97)
        .filter_map(char::from_u32)
        .collect();
    text.push_str(&"中华人民共和国成立了行长重得AB12.5%\r\n".repeat(200));
    text.extend((0..3000u32).filter_map(|i| char::from_u32(0x4E00 + (i * 7919) % 0x51D6)));
    let t = std::time::Instant::now();
    let mut dropped = Vec::new();
    let ids = front.encode(&text, &mut dropped);
    assert!(ids.len() > 1000 && ids.iter().all(|&id| (id as usize) < MANDARIN_TABLE_SIZE));
    assert!(!dropped.is_empty());
    eprintln!(
        "{} chars in {:.2} s",
        text.chars().count(),
        t.elapsed().as_secs_f64()
    );
    for s in ["", " ", "\r\n", "5", "\u{e815}", "ß", "ǰ", "\u{9fff}"] {
        front.encode(s, &mut dropped);
    }
}

#[test]
fn pinyin_dictionary_is_the_checkpoints() {
    use sha2::{Digest, Sha256};
    let hex: String = Sha256::digest(rill_text::mandarin::IPA_DICT_ZH.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // The v2602 `.nemo` member's sha256 (testdata README, spec magpie_languages.md "zh").
    assert_eq!(
        hex,
        "252e8eaf60dfd891520759913dc8534393eebfa8d57192365f76f9229f294e9e"
    );
    assert_eq!(rill_text::mandarin::IPA_DICT_ZH.len(), 5419);
}

#[test]
fn long_texts_split_into_nemos_sentences() {
    let rec = recording();
    let front = MandarinFrontEnd::embedded();
    let text_front = TextFrontEnd::new(TextVocabulary::v2602());
    let ids = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    let mut split = 0;
    for row in rows(&rec) {
        let text = row["text"].as_str().unwrap();
        let splits = row["split"].as_bool().expect("recorded");
        assert_eq!(
            rill_text::needs_splitting_in(text, Language::Mandarin),
            splits,
            "{text:?}"
        );
        if !splits {
            continue;
        }
        split += 1;
        let sentences = row["sentences"].as_array().unwrap();
        let ours = rill_text::split_sentences_in(text, Language::Mandarin);
        assert_eq!(ours.len(), sentences.len(), "{text:?}");
        for (s, r) in ours.iter().zip(sentences) {
            assert_eq!(s, r["text"].as_str().unwrap());
            assert_eq!(front.encode(s, &mut Vec::new()), ids(&r["ids"]), "{s:?}");
        }
        // The checked path gives those sentences' ids (+ offset, EOS), leaving out the
        // ones with nothing to speak.
        let want: Vec<Vec<u32>> = sentences
            .iter()
            .map(|r| ids(&r["ids"]))
            .filter(|v| v.iter().any(|&id| id != 0))
            .map(|v| v.iter().map(|id| id + 349).chain([2361]).collect())
            .collect();
        let got = text_front
            .encode_utterances(text, Language::Mandarin)
            .unwrap();
        assert_eq!(got.utterances, want, "{text:?}");
    }
    assert!(split >= 10, "only {split} long texts");
}
