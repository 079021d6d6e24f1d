//! A locale's pronunciation dictionary and heteronym list, parsed as NeMo 3.0.0's
//! `IpaG2p._parse_phoneme_dict` / `_normalize_dict` / `_parse_file_by_lines` do
//! (`nemo/collections/tts/g2p/models/i18n_ipa.py`) for any `grapheme_case` and
//! `grapheme_prefix`: the first pronunciation of every word, and the symbol set NeMo
//! derives the token table from.

use std::collections::{BTreeSet, HashSet};

use crate::lexicon::{line_of_offset, push_without_spaces, python_lines, strip_variant_markers};
use crate::unicode::{is_decimal_digit, is_py_space, nfc, py_str_isupper, py_strip, py_upper};
use crate::word_table::WordTable;
use crate::TextError;

/// How a locale spells graphemes (`IpaG2p(grapheme_case=...)`; `lower` is used by no
/// Magpie language and left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphemeCase {
    /// Words are upper-cased before every look-up, dictionary keys too (Spanish).
    Upper,
    /// Words are kept as written; the dictionary also gets an upper-case copy of every
    /// word that is not all upper case, and a word not found as written is looked up
    /// upper-cased (German).
    Mixed,
}

impl GraphemeCase {
    /// `set_grapheme_case(text, case)`.
    pub(crate) fn apply(self, text: &str) -> std::borrow::Cow<'_, str> {
        match self {
            GraphemeCase::Upper
                if text.is_ascii() && !text.bytes().any(|b| b.is_ascii_lowercase()) =>
            {
                text.into()
            }
            GraphemeCase::Upper => py_upper(text).into(),
            GraphemeCase::Mixed => text.into(),
        }
    }
}

/// `WORD_CHARS_ALL` of `tokenizer_utils.py`: Latin letters and the accented Latin-1
/// letters, the Indic blocks and Hangul (what `_WORDS_RE_ANY_LOCALE` calls a word).
pub fn is_word_char(c: char) -> bool {
    matches!(c, 'A'..='Z' | 'a'..='z' | 'À'..='Ö' | 'Ø'..='ö' | 'ø'..='ÿ')
        || matches!(c as u32,
            0x0900..=0x0963 | 0x0966..=0x097F | 0x0980..=0x09FF | 0x0B80..=0x0BFF
            | 0x0C00..=0x0C7F | 0x0C80..=0x0CFF | 0x0A80..=0x0AFF
            | 0xAC00..=0xD7A3 | 0x1100..=0x11FF | 0x3130..=0x318F)
}

/// `IpaG2p.CHAR_REGEX`: a word character or a decimal digit (`\d`).
pub fn is_word_or_digit(c: char) -> bool {
    is_word_char(c) || is_decimal_digit(c)
}

/// The first character of a dictionary entry line (the same ranges plus `'`; anything
/// else, `;;;` comments included, is skipped).
fn starts_entry(c: char) -> bool {
    is_word_char(c) || c == '\''
}

/// Word → first pronunciation (each `char` one symbol), heteronyms and the symbol set.
pub struct IpaLexicon {
    words: WordTable,
    heteronyms: HashSet<Box<str>>,
    symbols: BTreeSet<String>,
}

impl std::fmt::Debug for IpaLexicon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpaLexicon")
            .field("words", &self.words.len())
            .field("heteronyms", &self.heteronyms.len())
            .field("symbols", &self.symbols.len())
            .finish()
    }
}

/// UTF-8 text of a named file, or an error naming it and the line of the bad byte.
pub(crate) fn utf8<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, TextError> {
    std::str::from_utf8(bytes).map_err(|e| TextError::Dictionary {
        file: file.into(),
        line: Some(line_of_offset(bytes, e.valid_up_to())),
        reason: "is not valid UTF-8".into(),
    })
}

impl IpaLexicon {
    /// Parses a dictionary (NeMo's `WORD  PRON` format: `(n)` variant markers, `;;;`
    /// comments) and an optional heteronym list (one word a line). `dict_file` names the
    /// dictionary in errors.
    pub fn parse(
        dict: &str,
        dict_file: &str,
        heteronyms: Option<&str>,
        case: GraphemeCase,
        prefix: &str,
    ) -> Result<IpaLexicon, TextError> {
        let (first, phonemes, graphemes, all_cased) = parse_entries(dict, dict_file, case)?;
        let too_large = || TextError::Dictionary {
            file: dict_file.into(),
            line: None,
            reason: "makes the dictionary larger than 4 GB".into(),
        };
        // `_normalize_dict`: every word under its cased form, later spellings with the
        // same key overwriting earlier ones; `mixed` adds the upper-case copy. When every
        // word is upper case already (the English and Spanish files), that is `first`.
        let words = if case == GraphemeCase::Upper && all_cased {
            first
        } else {
            recase(&first, case, dict.len()).map_err(|_| too_large())?
        };
        let mut symbols: BTreeSet<String> = phonemes.chars().map(String::from).collect();
        symbols.extend(graphemes.chars().map(|c| format!("{prefix}{c}")));
        // `_parse_file_by_lines` (`rstrip` of every line, empty ones included) and
        // `set_grapheme_case`; heteronyms are not NFC-normalised.
        let heteronyms = heteronyms
            .map(|text| {
                python_lines(text)
                    .map(|l| case.apply(l.trim_end_matches(is_py_space)).into())
                    .collect()
            })
            .unwrap_or_default();
        Ok(IpaLexicon {
            words,
            heteronyms,
            symbols,
        })
    }

    /// Number of distinct keys (mixed case: upper-case copies included).
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True if the dictionary has no word (never for a parsed one).
    pub fn is_empty(&self) -> bool {
        self.words.len() == 0
    }

    /// The first pronunciation of a (cased) word, one symbol per `char`.
    pub fn pronunciation(&self, word: &str) -> Option<&str> {
        self.words.get(word)
    }

    /// True if the (cased) word is a heteronym.
    pub fn is_heteronym(&self, word: &str) -> bool {
        self.heteronyms.contains(word)
    }

    /// `IpaG2p.symbols`: every phoneme of every pronunciation and every grapheme
    /// (prefixed, cased) of every word.
    pub fn symbols(&self) -> &BTreeSet<String> {
        &self.symbols
    }
}

/// `first` under the cased keys (see [`IpaLexicon::parse`]).
fn recase(
    first: &WordTable,
    case: GraphemeCase,
    text_bytes: usize,
) -> Result<WordTable, crate::word_table::TooLarge> {
    let mut words = WordTable::with_capacity(first.len() * 2, text_bytes * 2);
    for (word, pron) in first.iter() {
        words.insert(&case.apply(word), |a| a.push_str(pron))?;
        if case == GraphemeCase::Mixed && !py_str_isupper(word) {
            words.insert(&py_upper(word), |a| a.push_str(pron))?;
        }
    }
    Ok(words)
}

/// A set of characters: a bitmap below U+10000 (dictionaries hold millions of
/// characters, all of a few dozen kinds), a hash set above.
struct CharSet {
    bmp: Vec<u64>,
    astral: HashSet<char>,
}

impl CharSet {
    fn new() -> Self {
        CharSet {
            bmp: vec![0; 0x10000 / 64],
            astral: HashSet::new(),
        }
    }

    fn insert(&mut self, c: char) {
        let cp = c as usize;
        match self.bmp.get_mut(cp / 64) {
            Some(word) => *word |= 1 << (cp % 64),
            None => {
                self.astral.insert(c);
            }
        }
    }

    fn chars(&self) -> impl Iterator<Item = char> + '_ {
        let bmp = (0..0x10000u32)
            .filter(|&cp| self.bmp[cp as usize / 64] & (1 << (cp % 64)) != 0)
            .filter_map(char::from_u32);
        bmp.chain(self.astral.iter().copied())
    }
}

/// First pronunciation of every word as spelt (file order of first appearance), the
/// phoneme characters of all pronunciations and the grapheme characters of all words
/// (cased, without `IpaG2p.PUNCT_REGEX` characters), and whether every word is spelt
/// in its cased form already.
fn parse_entries(
    dict: &str,
    dict_file: &str,
    case: GraphemeCase,
) -> Result<(WordTable, CharSet, CharSet, bool), TextError> {
    let lines = dict.bytes().filter(|&b| b == b'\n').count() + 1;
    let mut first = WordTable::with_capacity(lines, dict.len());
    let mut phonemes = CharSet::new();
    let mut graphemes = CharSet::new();
    let mut all_cased = true;
    let mut pron_buf = String::new();
    for (index, raw) in python_lines(dict).enumerate() {
        let bad = |reason: &str| TextError::Dictionary {
            file: dict_file.into(),
            line: Some(index + 1),
            reason: reason.into(),
        };
        // NeMo normalises every line to NFC before looking at it.
        let line = nfc(raw);
        if !line.chars().next().is_some_and(starts_entry) {
            continue;
        }
        let entry = py_strip(&line);
        let Some(split) = entry.find(is_py_space) else {
            return Err(bad(
                "has a word but no pronunciation (NeMo fails on it too): fix or remove the line",
            ));
        };
        let word = strip_variant_markers(&entry[..split]);
        pron_buf.clear();
        push_without_spaces(&entry[split..], &mut pron_buf);
        pron_buf.chars().for_each(|c| phonemes.insert(c));
        let inserted = first
            .insert_new(&word, |a| a.push_str(&pron_buf))
            .map_err(|_| bad("makes the dictionary larger than 4 GB"))?;
        if inserted {
            let cased = case.apply(&word);
            all_cased &= *cased == *word;
            cased
                .chars()
                .filter(|&c| is_word_or_digit(c))
                .for_each(|c| graphemes.insert(c));
        }
    }
    if first.len() == 0 {
        return Err(TextError::Dictionary {
            file: dict_file.into(),
            line: None,
            reason: "contains no entries: pass a NeMo IPA pronunciation dictionary".into(),
        });
    }
    Ok((first, phonemes, graphemes, all_cased))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_case_copies_and_overwrites() {
        let dict = "Abend  ˈaːbənt\nABEND  x\nöl  ˈøːl\nÖL(1)  y\nÖL  z\n;;; c\nz.B.  t\n";
        let lex =
            IpaLexicon::parse(dict, "d", Some("Abend \n\nx"), GraphemeCase::Mixed, "#").unwrap();
        assert_eq!(lex.pronunciation("Abend"), Some("ˈaːbənt"));
        // "ABEND" got Abend's copy first, then its own entry.
        assert_eq!(lex.pronunciation("ABEND"), Some("x"));
        // "ÖL" was copied from "öl", then overwritten by its own first pronunciation.
        assert_eq!(lex.pronunciation("ÖL"), Some("y"));
        assert_eq!(lex.pronunciation("öl"), Some("ˈøːl"));
        assert!(lex.is_heteronym("Abend") && lex.is_heteronym("") && !lex.is_heteronym("ABEND"));
        let s = lex.symbols();
        assert!(s.contains("#z") && s.contains("#B") && !s.contains("#.") && s.contains("ː"));
        assert!(s.contains("#Ö") && s.contains("y") && s.contains("z"));
    }

    #[test]
    fn upper_case_keys_and_nfd_lines() {
        let dict = "casa  ˈkasa\nCASA  k\nn\u{303}u  ˈɲu\n";
        let lex = IpaLexicon::parse(dict, "d", None, GraphemeCase::Upper, "").unwrap();
        assert_eq!(lex.pronunciation("CASA"), Some("k"));
        assert_eq!(lex.pronunciation("casa"), None);
        assert_eq!(lex.pronunciation("ÑU"), Some("ˈɲu"));
        assert!(lex.symbols().contains("Ñ") && !lex.symbols().contains("ñ"));
    }

    #[test]
    fn bad_dictionaries_are_rejected() {
        let err = |d: &str| {
            IpaLexicon::parse(d, "x.dict", None, GraphemeCase::Upper, "")
                .unwrap_err()
                .to_string()
        };
        assert!(err("A  a\nWORD\n").contains("x.dict, line 2"));
        assert!(err(";;; only\n").contains("no entries"));
        assert!(utf8(b"A  a\n\xff", "y")
            .unwrap_err()
            .to_string()
            .contains("y, line 2"));
    }
}
