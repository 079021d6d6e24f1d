//! The embedded dictionary files: their hashes, a line-by-line check of the parsed
//! dictionary against a plain reading of the file, and NeMo's rule that derives the
//! 96-symbol token table from the dictionary.

use std::collections::{BTreeSet, HashSet};

use rill_text::{
    Lexicon, EMBEDDED_HETERONYMS, EMBEDDED_IPA_DICT, ENGLISH_TOKENS, HETERONYMS_SHA256,
    IPA_DICT_SHA256,
};
use sha2::{Digest, Sha256};

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn embedded_files_have_the_released_hashes() {
    assert_eq!(EMBEDDED_IPA_DICT.len(), 3_093_097);
    assert_eq!(sha256_hex(EMBEDDED_IPA_DICT.as_bytes()), IPA_DICT_SHA256);
    assert_eq!(EMBEDDED_HETERONYMS.len(), 1_606);
    assert_eq!(
        sha256_hex(EMBEDDED_HETERONYMS.as_bytes()),
        HETERONYMS_SHA256
    );
}

/// NeMo reads only lines that start with a letter or `'` (so `;;;` comments and the
/// CMUdict punctuation entries such as `!EXCLAMATION-POINT` are skipped).
fn is_entry(line: &str) -> bool {
    line.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '\'' || ('À'..='ÿ').contains(&c))
}

/// The shipped file is simple (upper-case keys, `KEY  PRON`, `KEY(n)` for variants, `;;;`
/// comments), so a plain reading gives each word's first pronunciation independently
/// of the general parser.
#[test]
fn every_word_has_its_first_pronunciation() {
    let text = EMBEDDED_IPA_DICT;
    let lexicon = Lexicon::embedded();
    let mut seen = HashSet::new();
    for line in text.lines().filter(|l| is_entry(l)) {
        let (key, pron) = line
            .split_once("  ")
            .expect("two spaces between word and pronunciation");
        let word = match key.find('(') {
            Some(p) if key.ends_with(')') => &key[..p],
            _ => key,
        };
        if seen.insert(word) {
            assert_eq!(lexicon.pronunciation(word), Some(pron), "{word}");
        }
    }
    assert_eq!(lexicon.len(), seen.len());
    assert!(lexicon.len() > 120_000, "{}", lexicon.len());
    // Spot checks the recordings rely on: a heteronym, a period inside a key.
    assert!(lexicon.is_heteronym("READ") && lexicon.is_heteronym("LIVE"));
    assert_eq!(lexicon.pronunciation("DR."), Some("ˈdɹaɪv"));
}

#[test]
fn every_heteronym_line_is_a_heteronym() {
    let lexicon = Lexicon::embedded();
    let text = EMBEDDED_HETERONYMS;
    assert_eq!(text.lines().count(), 204);
    for word in text.lines() {
        assert!(lexicon.is_heteronym(&word.to_uppercase()), "{word}");
    }
    assert!(!lexicon.is_heteronym("HELLO"));
}

/// `IPATokenizer.__init__`: sorted(dictionary symbols ∪ {'} ∪ default punctuation), then
/// space, `<pad>`, `<oov>`. Dictionary symbols are every pronunciation character and
/// every grapheme of the (upper-case) words with `IpaG2p.PUNCT_REGEX` removed.
#[test]
fn token_table_follows_from_the_dictionary() {
    let text = EMBEDDED_IPA_DICT;
    let mut symbols: BTreeSet<char> = "'".chars().chain(",.!?-:;/\"()[]{}".chars()).collect();
    let is_grapheme = |c: char| {
        c.is_ascii_alphanumeric()
            || ('À'..='Ö').contains(&c)
            || ('Ø'..='ö').contains(&c)
            || ('ø'..='ÿ').contains(&c)
    };
    for line in text.lines().filter(|l| is_entry(l)) {
        let (key, pron) = line.split_once("  ").unwrap();
        let word = key.split('(').next().unwrap();
        symbols.extend(word.chars().filter(|&c| is_grapheme(c)));
        symbols.extend(pron.chars().filter(|c| !c.is_whitespace()));
    }
    let mut derived: Vec<String> = symbols.into_iter().map(String::from).collect();
    derived.extend([" ", "<pad>", "<oov>"].map(String::from));
    assert_eq!(derived, ENGLISH_TOKENS);
}

/// Loading the same files from disk (as a `.nemo` loader would pass them) gives the same
/// dictionary; a missing file is an error naming it.
#[test]
fn files_load_from_paths_too() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let dict = data.join(rill_text::IPA_DICT_FILE);
    let heteronyms = data.join(rill_text::HETERONYMS_FILE);
    let loaded = Lexicon::from_files(&dict, &heteronyms).unwrap();
    let embedded = Lexicon::embedded();
    assert_eq!(loaded.len(), embedded.len());
    for word in ["HELLO", "DR.", "'BOUT", "TTS", "ZYWICKI"] {
        assert_eq!(
            loaded.pronunciation(word),
            embedded.pronunciation(word),
            "{word}"
        );
    }
    assert!(loaded.is_heteronym("READ"));
    let missing = data.join("no-such-file");
    let err = Lexicon::from_files(&missing, &heteronyms).unwrap_err();
    assert!(err.to_string().contains("no-such-file"), "{err}");
}
