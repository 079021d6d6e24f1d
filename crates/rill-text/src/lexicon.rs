//! The pronunciation dictionary and heteronym list of NeMo's `IpaG2p`, parsed as
//! `IpaG2p._parse_phoneme_dict` / `_normalize_dict` / `_parse_file_by_lines` do
//! (`nemo/collections/tts/g2p/models/i18n_ipa.py`), keeping only what the
//! deterministic English path reads: the first pronunciation of every word.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::unicode::{is_certainly_nfc, is_py_space, py_strip, py_upper};
use crate::word_table::WordTable;
use crate::TextError;

/// The CMU IPA dictionary NeMo ships and the released Magpie `.nemo` packs (see
/// `data/PROVENANCE.md`).
pub const IPA_DICT_FILE: &str = "ipa_cmudict-0.7b_nv23.01.txt";
/// sha256 of [`IPA_DICT_FILE`].
pub const IPA_DICT_SHA256: &str =
    "dd0927fffc89e8539ea0a26ccbc164a908f4b3de9613d924c90afa5300e00f72";
/// The heteronym list (words always spelt as graphemes).
pub const HETERONYMS_FILE: &str = "heteronyms-052722";
/// sha256 of [`HETERONYMS_FILE`].
pub const HETERONYMS_SHA256: &str =
    "b701909aedf753172eff223950f8859cd4b9b4c80199cf0a6e9ac4a307c8f8ec";

/// The embedded copies of the two files (3 MB; parsed on first use only). Text, so
/// the compiler has checked the UTF-8 already.
pub static EMBEDDED_IPA_DICT: &str = include_str!("../data/ipa_cmudict-0.7b_nv23.01.txt");
/// See [`EMBEDDED_IPA_DICT`].
pub static EMBEDDED_HETERONYMS: &str = include_str!("../data/heteronyms-052722");

/// A dictionary larger than this is not a pronunciation dictionary (the real one is
/// 3.1 MB); reject it before reading it whole.
pub const MAX_DICT_BYTES: u64 = 64 << 20;

/// Word → first pronunciation (each `char` is one G2P symbol), plus the heteronyms.
pub struct Lexicon {
    words: WordTable,
    heteronyms: HashSet<Box<str>>,
}

impl std::fmt::Debug for Lexicon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lexicon")
            .field("words", &self.words.len())
            .field("heteronyms", &self.heteronyms.len())
            .finish()
    }
}

impl Lexicon {
    /// The embedded dictionary and heteronyms, parsed once per process on first use.
    pub fn embedded() -> Arc<Lexicon> {
        static EMBEDDED: OnceLock<Arc<Lexicon>> = OnceLock::new();
        EMBEDDED
            .get_or_init(|| {
                // The embedded files are checked by the tests (hashes and parse), so a
                // failure here is a build defect, not a user error.
                let lexicon = Lexicon::from_text(EMBEDDED_IPA_DICT, EMBEDDED_HETERONYMS)
                    .expect("the embedded dictionary parses (checked by the tests)");
                Arc::new(lexicon)
            })
            .clone()
    }

    /// Parses a dictionary in NeMo's CMUdict-IPA format and a heteronym list (one
    /// word a line), e.g. the members of a `.nemo` archive.
    pub fn from_bytes(dict: &[u8], heteronyms: &[u8]) -> Result<Lexicon, TextError> {
        let dict = std::str::from_utf8(dict).map_err(|e| TextError::Dictionary {
            file: IPA_DICT_FILE.into(),
            line: Some(line_of_offset(dict, e.valid_up_to())),
            reason: "is not valid UTF-8".into(),
        })?;
        let heteronyms = std::str::from_utf8(heteronyms).map_err(|e| TextError::Dictionary {
            file: HETERONYMS_FILE.into(),
            line: Some(line_of_offset(heteronyms, e.valid_up_to())),
            reason: "is not valid UTF-8".into(),
        })?;
        Lexicon::from_text(dict, heteronyms)
    }

    /// [`from_bytes`](Self::from_bytes) for text already known to be UTF-8.
    pub fn from_text(dict: &str, heteronyms: &str) -> Result<Lexicon, TextError> {
        let words = parse_dict(dict)?;
        let heteronyms = python_lines(heteronyms)
            .map(|line| py_upper(line.trim_end_matches(is_py_space)).into_boxed_str())
            .collect();
        Ok(Lexicon { words, heteronyms })
    }

    /// Reads the two files from disk (`dict` and `heteronyms` paths).
    pub fn from_files(dict: &Path, heteronyms: &Path) -> Result<Lexicon, TextError> {
        let read = |path: &Path| -> Result<Vec<u8>, TextError> {
            let io = |source| TextError::Io {
                path: path.to_path_buf(),
                source,
            };
            let len = std::fs::metadata(path).map_err(io)?.len();
            if len > MAX_DICT_BYTES {
                return Err(TextError::Dictionary {
                    file: path.display().to_string(),
                    line: None,
                    reason: format!(
                        "{len} bytes is more than the {MAX_DICT_BYTES} a pronunciation \
                         dictionary or heteronym list can be; pass the right file"
                    ),
                });
            }
            std::fs::read(path).map_err(io)
        };
        Lexicon::from_bytes(&read(dict)?, &read(heteronyms)?)
    }

    /// Number of distinct (upper-case) words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True if the dictionary has no word (never for a parsed one).
    pub fn is_empty(&self) -> bool {
        self.words.len() == 0
    }

    /// The first pronunciation of an upper-case word, one symbol per `char`.
    pub fn pronunciation(&self, word: &str) -> Option<&str> {
        self.words.get(word)
    }

    /// True if the upper-case word is a heteronym.
    pub fn is_heteronym(&self, word: &str) -> bool {
        self.heteronyms.contains(word)
    }
}

/// Lines as Python's text-mode iteration yields them (universal newlines: `\n`, `\r\n`
/// and `\r` end a line), without their terminator.
pub(crate) fn python_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        let line = &rest[..end];
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else {
            usize::from(end < rest.len())
        };
        rest = &rest[end + skip..];
        Some(line)
    })
}

pub(crate) fn line_of_offset(bytes: &[u8], offset: usize) -> usize {
    1 + bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The first character of a dictionary entry line (`i18n_ipa.py` accepts these only).
fn starts_entry(c: char) -> bool {
    c.is_ascii_alphabetic()
        || ('À'..='Ö').contains(&c)
        || ('Ø'..='ö').contains(&c)
        || ('ø'..='ÿ').contains(&c)
        || c == '\''
}

/// `re.sub(r"\([0-9]+\)", "", word)`: drops every variant marker such as `(2)`.
pub(crate) fn strip_variant_markers(word: &str) -> std::borrow::Cow<'_, str> {
    if !word.contains('(') {
        return word.into();
    }
    let bytes = word.as_bytes();
    let mut out = String::with_capacity(word.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'(' {
            let digits = bytes[i + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits > 0 && bytes.get(i + 1 + digits) == Some(&b')') {
                i += digits + 2;
                continue;
            }
        }
        // Copy one whole character (the marker bytes are ASCII, so this stays on a boundary).
        let len = word[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&word[i..i + len]);
        i += len;
    }
    out.into()
}

/// Appends a pronunciation with every (Python) whitespace character removed.
pub(crate) fn push_without_spaces(pron: &str, arena: &mut String) {
    // Fast path: no byte that can start a whitespace character (ASCII controls and
    // space, or the lead bytes of U+0085, U+00A0, U+1680, U+2000.., U+3000).
    let may_have_space = pron
        .bytes()
        .any(|b| matches!(b, 0x09..=0x0D | 0x1C..=0x20 | 0xC2 | 0xE1 | 0xE2 | 0xE3));
    if may_have_space {
        arena.extend(pron.chars().filter(|&c| !is_py_space(c)));
    } else {
        arena.push_str(pron);
    }
}

/// Parses the dictionary. NeMo appends every line's pronunciation to its word (file
/// order, variant markers removed), then stores each word under its upper-case form;
/// two spellings with the same upper case overwrite each other in the order the
/// words first appeared. rill keeps the first pronunciation of the winner.
fn parse_dict(text: &str) -> Result<WordTable, TextError> {
    let too_large = |line| TextError::Dictionary {
        file: IPA_DICT_FILE.into(),
        line,
        reason: "makes the dictionary larger than 4 GB".into(),
    };
    let lines = text.bytes().filter(|&b| b == b'\n').count() + 1;
    let mut first = WordTable::with_capacity(lines, text.len());
    let mut all_upper = true;
    for (index, line) in python_lines(text).enumerate() {
        let Some(c0) = line.chars().next() else {
            continue;
        };
        if !starts_entry(c0) {
            continue;
        }
        let bad = |reason: String| TextError::Dictionary {
            file: IPA_DICT_FILE.into(),
            line: Some(index + 1),
            reason,
        };
        if !is_certainly_nfc(line) {
            return Err(bad(
                "is not in Unicode NFC form (NeMo normalises each line; rill requires the \
                 file normalised): convert the file to NFC"
                    .into(),
            ));
        }
        let entry = py_strip(line);
        let Some(split) = entry.find(is_py_space) else {
            return Err(bad("has a word but no pronunciation".into()));
        };
        let word = strip_variant_markers(&entry[..split]);
        let pron = entry[split..].trim_start_matches(is_py_space);
        let inserted = first
            .insert_new(&word, |arena| push_without_spaces(pron, arena))
            .map_err(|_| too_large(Some(index + 1)))?;
        if inserted && all_upper {
            all_upper = is_upper_case(&word);
        }
    }
    if first.len() == 0 {
        return Err(TextError::Dictionary {
            file: IPA_DICT_FILE.into(),
            line: None,
            reason: "contains no entries".into(),
        });
    }
    if all_upper {
        return Ok(first);
    }
    let mut words = WordTable::with_capacity(first.len(), text.len());
    for (word, pron) in first.iter() {
        words
            .insert(&py_upper(word), |arena| arena.push_str(pron))
            .map_err(|_| too_large(None))?;
    }
    Ok(words)
}

/// `word.upper() == word`.
fn is_upper_case(word: &str) -> bool {
    if word.is_ascii() {
        !word.bytes().any(|b| b.is_ascii_lowercase())
    } else {
        py_upper(word) == word
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_markers() {
        assert_eq!(strip_variant_markers("READ(1)"), "READ");
        assert_eq!(strip_variant_markers("A(12)B(x)(3)"), "AB(x)");
        assert_eq!(strip_variant_markers("É(2"), "É(2");
    }

    #[test]
    fn universal_newlines() {
        let lines: Vec<&str> = python_lines("a\r\nb\rc\n\nd").collect();
        assert_eq!(lines, ["a", "b", "c", "", "d"]);
    }

    #[test]
    fn first_pronunciation_and_case_overwrites() {
        let dict = "A  x\nA(1)  y\nbb  q\nBB  r s\nBB(1)  t\n;;; comment\n";
        let lex = Lexicon::from_bytes(dict.as_bytes(), b"aa\nAbc \n").unwrap();
        assert_eq!(lex.pronunciation("A"), Some("x"));
        // "bb" appeared first, "BB" later: NeMo's later assignment wins; spaces dropped.
        assert_eq!(lex.pronunciation("BB"), Some("rs"));
        assert_eq!(lex.pronunciation("bb"), None);
        assert!(lex.is_heteronym("AA") && lex.is_heteronym("ABC"));
    }

    #[test]
    fn bad_dictionaries_are_rejected() {
        let err = |d: &[u8]| Lexicon::from_bytes(d, b"").unwrap_err().to_string();
        assert!(err(b"WORD\n").contains("line 1"));
        assert!(err(b";;; nothing\n").contains("no entries"));
        assert!(err(b"A  x\n\xff\n").contains("UTF-8"));
        assert!(err("E\u{301}  x\n".as_bytes()).contains("NFC"));
    }
}
