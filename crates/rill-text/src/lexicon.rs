//! The English pronunciation dictionary and heteronym list of NeMo's `IpaG2p` (the
//! generic reader of `ipa_lexicon.rs` with upper-case graphemes), and the line-level
//! helpers every dictionary reader shares.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::ipa_lexicon::{utf8, GraphemeCase, IpaLexicon};
use crate::unicode::is_py_space;
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
    inner: IpaLexicon,
}

impl std::fmt::Debug for Lexicon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lexicon")
            .field("words", &self.inner.len())
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
        Lexicon::from_text(
            utf8(dict, IPA_DICT_FILE)?,
            utf8(heteronyms, HETERONYMS_FILE)?,
        )
    }

    /// [`from_bytes`](Self::from_bytes) for text already known to be UTF-8.
    pub fn from_text(dict: &str, heteronyms: &str) -> Result<Lexicon, TextError> {
        let inner = IpaLexicon::parse(
            dict,
            IPA_DICT_FILE,
            Some(heteronyms),
            GraphemeCase::Upper,
            "",
        )?;
        Ok(Lexicon { inner })
    }

    /// Reads the two files from disk (`dict` and `heteronyms` paths).
    pub fn from_files(dict: &Path, heteronyms: &Path) -> Result<Lexicon, TextError> {
        Lexicon::from_bytes(&read_limited(dict)?, &read_limited(heteronyms)?)
    }

    /// Number of distinct (upper-case) words.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True if the dictionary has no word (never for a parsed one).
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The first pronunciation of an upper-case word, one symbol per `char`.
    pub fn pronunciation(&self, word: &str) -> Option<&str> {
        self.inner.pronunciation(word)
    }

    /// True if the upper-case word is a heteronym.
    pub fn is_heteronym(&self, word: &str) -> bool {
        self.inner.is_heteronym(word)
    }
}

/// Reads a dictionary or heteronym file, refusing one too large to be either.
pub(crate) fn read_limited(path: &Path) -> Result<Vec<u8>, TextError> {
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
                "{len} bytes is more than the {MAX_DICT_BYTES} a pronunciation dictionary or \
                 heteronym list can be; pass the right file"
            ),
        });
    }
    std::fs::read(path).map_err(io)
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
        // NeMo normalises every line to NFC, so does rill.
        let lex = Lexicon::from_bytes("E\u{301}  x\n".as_bytes(), b"").unwrap();
        assert_eq!(lex.pronunciation("\u{c9}"), Some("x"));
    }
}
